-- bench/parallel.lua: kjit.prange on the thread pool against the same loop
-- compiled single-threaded.
--
--   lua5.4 bench/parallel.lua [kjit.so dir (default build)] [--check]
--
-- Each kernel is one Lua function whose loop is `for i in kjit.prange(..)`.
-- It runs compiled three ways: kjit.jit(fn) (a plain loop), kjit.jit(fn,
-- {parallel = true}) with kjit.set_num_threads(1), and the same with every
-- thread of the pool. Then kjit.vectorize and kjit.reduce: target "cpu"
-- (the plain column) against target "parallel" on 1 and on every thread. Times are wall-clock (kjit.clock), the median of
-- RUNS calls after a warm-up call. Every result is checked against the
-- plain loop's (exactly, or within 1e-9 for float sums, whose parallel
-- order differs), so a fast wrong answer cannot win.
-- --check runs tiny sizes once and only checks (the test suite does this).
local dir = arg[1] and not arg[1]:match("^%-%-") and arg[1] or "build"
package.cpath = dir .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local check_only = false
for _, a in ipairs(arg) do if a == "--check" then check_only = true end end
local RUNS = check_only and 1 or 9

local K = {}

-- memory bound: two reads and a write per element
K.saxpy = {
  fn = function(a, x, y, out)
    for i in kjit.prange(1, #x) do out[i] = a * x[i] + y[i] end
  end,
  args = function(n)
    local x, y = kjit.empty(n, "f32"), kjit.empty(n, "f32")
    for i = 1, n do x[i] = i % 1000; y[i] = (i * 7) % 1000 end
    return { 2.5, x, y, kjit.empty(n, "f32") }
  end,
  out = 4, size = 1 << 24, small = 1000, what = "f32, n = 2^24",
}

-- a reduction
K.dot = {
  fn = function(x, y)
    local s = 0.0
    for i in kjit.prange(1, #x) do s = s + x[i] * y[i] end
    return s
  end,
  args = function(n)
    local x, y = kjit.empty(n), kjit.empty(n)
    for i = 1, n do x[i] = 1 / i; y[i] = (i % 10) * 0.5 end
    return { x, y }
  end,
  float = true, size = 1 << 24, small = 1000, what = "f64, n = 2^24",
}

-- compute bound, uneven rows
K.mandelbrot = {
  fn = function(img, maxit)
    local h, w = img.shape[1], img.shape[2]
    for r in kjit.prange(1, h) do
      local row = img[r]
      for c = 1, w do
        local cx, cy = -2.0 + (c - 1) * 3.0 / w, -1.5 + (r - 1) * 3.0 / h
        local x, y, n = 0.0, 0.0, 0
        while n < maxit and x * x + y * y <= 4.0 do
          x, y = x * x - y * y + cx, 2.0 * x * y + cy
          n = n + 1
        end
        row[c] = n
      end
    end
  end,
  args = function(n) return { kjit.zeros({ n, n }, "i32"), 200 } end,
  out = 1, size = 1024, small = 32, what = "1024 x 1024, 200 iterations",
}

-- compute bound, one row of the result per iteration
K.matmul = {
  fn = function(a, b, c)
    local n, m, p = a.shape[1], a.shape[2], b.shape[2]
    for i in kjit.prange(1, n) do
      local ci, ai = c[i], a[i]
      for j = 1, p do ci[j] = 0.0 end
      for k = 1, m do
        local aik, bk = ai[k], b[k]
        for j = 1, p do ci[j] = ci[j] + aik * bk[j] end
      end
    end
  end,
  args = function(n)
    local a, b = kjit.empty({ n, n }), kjit.empty({ n, n })
    for i = 1, n do for j = 1, n do a[i][j] = (i + j) % 7; b[i][j] = (i * j) % 5 end end
    return { a, b, kjit.zeros({ n, n }) }
  end,
  out = 3, size = 512, small = 16, what = "f64, 512 x 512",
}

local order = { "saxpy", "dot", "mandelbrot", "matmul" }

-- The array-programming layer's targets: the same element-wise function
-- and reduction with target "cpu" (the plain column) and "parallel".
local function vsax(a, x, y) return a * x + y end
local function add(a, b) return a + b end
K.vectorize = {
  make = function(target)
    local vf = kjit.vectorize(vsax, "f32(f32, f32, f32)", { target = target })
    return function(a, x, y, out) vf(a, x, y, { out = out }) end
  end,
  args = K.saxpy.args, out = 4, size = 1 << 24, small = 1000, what = "saxpy, f32, n = 2^24",
}
K.reduce = {
  make = function(target)
    local r = kjit.reduce(add, { target = target })
    return function(x) return r(x) end
  end,
  args = function(n) return { K.dot.args(n)[1] } end,
  float = true, size = 1 << 24, small = 100000, what = "sum, f64, n = 2^24",
}
order[#order + 1] = "vectorize"
order[#order + 1] = "reduce"

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function time(f, args)
  f(table.unpack(args))   -- warm-up (and compile)
  local ts, r = {}, nil
  for i = 1, RUNS do
    local t0 = kjit.clock()
    r = f(table.unpack(args))
    ts[i] = kjit.clock() - t0
  end
  return median(ts), r
end

local function same(k, a, b, ra, rb)
  if k.float then
    assert(math.abs(ra - rb) <= 1e-9 * math.abs(ra), "result differs")
  elseif ra ~= nil then
    assert(ra == rb, "result differs")
  end
  if k.out then
    local x, y = a[k.out], b[k.out]
    assert(x.size == y.size)
    local fx, fy = x:reshape(x.size), y:reshape(y.size)
    for i = 1, x.size do assert(fx[i] == fy[i], "element " .. i .. " differs") end
  end
end

local nthreads = kjit.get_num_threads()
if not check_only then
  local cpu = io.open("/proc/cpuinfo") and io.open("/proc/cpuinfo"):read("a"):match("model name%s*:%s*([^\n]+)") or "?"
  print(string.format("kjit.prange: %d threads in the pool (KJIT_NUM_THREADS or the core count); %s", nthreads, cpu))
  print(string.format("median wall time of %d calls after a warm-up", RUNS))
  print(string.format("%-11s %-28s %10s %10s %10s %8s %8s", "kernel", "size", "plain ms", "1 thr ms",
                      nthreads .. " thr ms", "speedup", "vs 1 thr"))
end
for _, name in ipairs(order) do
  local k = K[name]
  local n = check_only and k.small or k.size
  local plain, par
  if k.make then plain, par = k.make("cpu"), k.make("parallel")
  else plain, par = kjit.jit(k.fn), kjit.jit(k.fn, { parallel = true }) end
  local a0, a1, a2 = k.args(n), k.args(n), k.args(n)
  local t0, r0 = time(plain, a0)
  kjit.set_num_threads(1)
  local t1, r1 = time(par, a1)
  kjit.set_num_threads(nthreads)
  local tn, rn = time(par, a2)
  same(k, a0, a1, r0, r1)
  same(k, a0, a2, r0, rn)
  if check_only then
    print(name .. ": same results")
  else
    print(string.format("%-11s %-28s %10.2f %10.2f %10.2f %7.2fx %7.2fx", name, k.what, t0 * 1e3, t1 * 1e3,
                        tn * 1e3, t0 / tn, t1 / tn))
  end
end
