-- demo/mandelbrot.lua: the Mandelbrot set in plain Lua, interpreted and
-- compiled by kjit. Run from the repository root with `bash demo/run.sh`.
local kjit = require "kjit"

local W, H, MAXITER = 1200, 800, 256

-- Plain Lua over a typed 2-D buffer: img[y][x], 1-based, u8 grey levels.
-- The view is x in [-2, 1], y in [-1, 1]; the set is black, and points
-- outside are brighter the longer they take to escape.
local function mandel(img, maxiter)
  local h, w = #img, #img[1]
  local scale = 3.0 / w
  for y = 1, h do
    local ci = (y - 1) * scale - 1.0
    for x = 1, w do
      local cr = (x - 1) * scale - 2.0
      local zr, zi, n = 0.0, 0.0, 0
      while n < maxiter and zr * zr + zi * zi <= 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n = n + 1
      end
      local grey = 0                            -- in the set: black
      if n < maxiter then grey = 255 * n // (n + 16) end
      img[y][x] = grey
    end
  end
end

local function timed(f, img)
  local t0 = os.clock()
  f(img, MAXITER)
  return os.clock() - t0
end

-- The image as a binary PGM file (P5): header, then one byte per pixel.
local function pgm(img)
  local rows = { string.format("P5\n%d %d\n255\n", W, H) }
  for y = 1, H do
    local row = {}
    for x = 1, W do row[x] = string.char(img[y][x]) end
    rows[#rows + 1] = table.concat(row)
  end
  return table.concat(rows)
end

print(string.format("Mandelbrot %dx%d, %d iterations max", W, H, MAXITER))
local slow = kjit.zeros({H, W}, "u8")
local t_lua = timed(mandel, slow)
print(string.format("  Lua 5.4 interpreter: %8.3f s", t_lua))
local image = pgm(slow)

if type(kjit.jit) ~= "function" then
  print("  kjit.jit is not available in this build yet: interpreted run only.")
else
  local fast = kjit.jit(mandel)
  local img = kjit.zeros({H, W}, "u8")
  local t_first = timed(fast, img)          -- compiles, then runs
  local t_jit = timed(fast, img)            -- runs the cached native code
  print(string.format("  kjit, first call:    %8.3f s (includes compiling)", t_first))
  print(string.format("  kjit:                %8.3f s  -> %.0fx faster", t_jit,
                      t_lua / math.max(t_jit, 1e-9)))
  assert(pgm(img) == image, "the compiled and interpreted images differ")
  print("  images identical: yes")
end

-- The same picture as a GPU kernel: one thread per pixel. Without a GPU it
-- runs in kjit's simulator (compiled for the CPU, block by block).
if kjit.cuda then
  local cuda = kjit.cuda
  local function mandel_kernel(img, maxiter)
    local y, x = cuda.grid(2)
    local h, w = img.shape[1], img.shape[2]
    if y <= h and x <= w then
      local scale = 3.0 / w
      local ci, cr = (y - 1) * scale - 1.0, (x - 1) * scale - 2.0
      local zr, zi, n = 0.0, 0.0, 0
      while n < maxiter and zr * zr + zi * zi <= 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n = n + 1
      end
      local grey = 0
      if n < maxiter then grey = 255 * n // (n + 16) end
      img[y][x] = grey
    end
  end
  local gpu, why = cuda.is_available()
  local prev = cuda.simulate(not gpu)
  local k = cuda.jit(mandel_kernel, { fma = false })   -- every rounding as in Lua
  local d = cuda.device_array({H, W}, "u8")
  local launch = k[{{(H + 15) // 16, (W + 15) // 16}, {16, 16}}]
  local t0 = os.clock()
  launch(d, MAXITER)
  cuda.synchronize()
  local t_first = os.clock() - t0
  t0 = os.clock()
  launch(d, MAXITER)
  cuda.synchronize()
  local t_gpu = os.clock() - t0
  local where = gpu and "GPU" or "simulator, no GPU (" .. tostring(why) .. ")"
  print(string.format("  kjit.cuda, first:    %8.3f s (includes compiling; %s)", t_first, where))
  print(string.format("  kjit.cuda:           %8.3f s", t_gpu))
  assert(pgm(d:copy_to_host()) == image, "the kernel's and the interpreter's images differ")
  print("  images identical: yes")
  cuda.simulate(prev)
end

local path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/mandelbrot.pgm"
local f = assert(io.open(path, "wb"))
f:write(image)
f:close()
print("  wrote " .. path)
