-- bench/poll_cost_par.lua: one kernel of bench/parallel.lua, compiled with
-- {parallel = true} (or kjit.vectorize / kjit.reduce with target
-- "parallel") and run on one thread of the pool: a warm-up call (it
-- compiles), then CALLS calls. bench/poll_cost.sh runs it under callgrind
-- with two CALLS, so that start-up and the compile cancel out.
--   lua5.4 bench/poll_cost_par.lua <kernel> <size> <calls> [kjit.so dir]
-- Kernels: saxpy, dot (size n), mandelbrot, matmul (size n: n x n),
-- vectorize, reduce (size n). The loops are bench/parallel.lua's; the
-- inputs are constant arrays (no Lua loop fills them: its instructions
-- would swamp the kernel's).
local name, n, calls = arg[1], tonumber(arg[2]), tonumber(arg[3])
package.cpath = (arg[4] or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
if not (name and n and calls) then
  io.stderr:write("usage: poll_cost_par.lua <kernel> <size> <calls> [kjit.so dir]\n")
  os.exit(2)
end
local K = {}
K.saxpy = {
  fn = function(a, x, y, out) for i in kjit.prange(1, #x) do out[i] = a * x[i] + y[i] end end,
  args = function() return { 2.5, kjit.full(n, 1.5, "f32"), kjit.full(n, 2.5, "f32"), kjit.empty(n, "f32") } end,
}
K.dot = {
  fn = function(x, y)
    local s = 0.0
    for i in kjit.prange(1, #x) do s = s + x[i] * y[i] end
    return s
  end,
  args = function() return { kjit.full(n, 0.5), kjit.full(n, 1.5) } end,
}
K.mandelbrot = {
  fn = function(img, maxit)
    local h, w = img.shape[1], img.shape[2]
    for r in kjit.prange(1, h) do
      local row = img[r]
      for c = 1, w do
        local cx, cy = -2.0 + (c - 1) * 3.0 / w, -1.5 + (r - 1) * 3.0 / h
        local x, y, k = 0.0, 0.0, 0
        while k < maxit and x * x + y * y <= 4.0 do
          x, y = x * x - y * y + cx, 2.0 * x * y + cy
          k = k + 1
        end
        row[c] = k
      end
    end
  end,
  args = function() return { kjit.zeros({ n, n }, "i32"), 200 } end,
}
K.matmul = {
  fn = function(a, b, c)
    local rows, m, p = a.shape[1], a.shape[2], b.shape[2]
    for i in kjit.prange(1, rows) do
      local ci, ai = c[i], a[i]
      for j = 1, p do ci[j] = 0.0 end
      for k = 1, m do
        local aik, bk = ai[k], b[k]
        for j = 1, p do ci[j] = ci[j] + aik * bk[j] end
      end
    end
  end,
  args = function() return { kjit.full({ n, n }, 1.5), kjit.full({ n, n }, 0.5), kjit.zeros({ n, n }) } end,
}
local f
if name == "vectorize" then
  local vf = kjit.vectorize(function(a, x, y) return a * x + y end, "f32(f32, f32, f32)", { target = "parallel" })
  f = function(a, x, y, out) vf(a, x, y, { out = out }) end
  K.vectorize = { args = K.saxpy.args }
elseif name == "reduce" then
  local r = kjit.reduce(function(a, b) return a + b end, { target = "parallel" })
  f = function(x) return r(x) end
  K.reduce = { args = function() return { kjit.full(n, 0.5) } end }
elseif K[name] then
  f = kjit.jit(K[name].fn, { parallel = true })
else
  io.stderr:write("poll_cost_par.lua: no kernel " .. name .. "\n")
  os.exit(2)
end
kjit.set_num_threads(1)
local a = K[name].args()
f(table.unpack(a))
for _ = 1, calls do f(table.unpack(a)) end
