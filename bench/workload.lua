-- bench/workload.lua: inputs, reset and checksum for each kernel of
-- bench/kernels.lua, independent of where the arrays come from. Used by
-- bench/run_lua.lua (kjit, Lua 5.4, LuaJIT) and tests/lua/test_bench_kernels.lua.
-- Valid Lua 5.1 too (LuaJIT runs it).
--
-- An adapter A supplies the arrays:
--   A.vector(n, dtype)      1-D, indices 1..n, zero-filled
--   A.matrix(r, c, dtype)   2-D, m[i][j] with 1 <= i <= r, 1 <= j <= c
--   A.prep(fn)              how helper loops run: kjit.jit(fn) for kjit
--                           arrays (filling 16M elements through __newindex
--                           would take seconds), fn itself elsewhere
--   A.tonumber(v)           an element as a Lua number (LuaJIT int64 cdata)
-- dtype is one of "f32", "f64", "i32", "i64".
--
-- Inputs are the same numbers in every language (bench/c/kernels.c and
-- bench/numba_kernels.py compute them the same way): x_i = fmod(i * g, 1)
-- for 1-based i, which is exact arithmetic on doubles everywhere.
local W = {}

local here = (debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "")
local K = dofile(here .. "kernels.lua")
W.kernels = K

local G1, G2 = 0.618033988749895, 0.414213562373095

-- helper loops (plain Lua, run by A.prep)
local function fill_frac(n, x, g, off)
  for i = 1, n do x[i] = math.fmod(i * g, 1.0) + off end
end
local function fill_frac2(r, c, m, g, si, sj)
  for i = 1, r do
    for j = 1, c do m[i][j] = math.fmod((si * i + sj * j) * g, 1.0) end
  end
end
-- s0 is an argument (an f64) rather than a literal 0.0: kjit types float
-- literals weakly, so `local s = 0.0` summing an f32 array would sum in f32
local function sum1(n, x, s0)
  local s = s0
  for i = 1, n do s = s + x[i] end
  return s
end
local function sum2(r, c, m)
  local s = 0.0
  for i = 1, r do
    for j = 1, c do s = s + m[i][j] end
  end
  return s
end
-- the Jacobi grid: top row 1, left column 0.5, the rest 0
local function jacobi_init(n, m)
  for i = 1, n do
    for j = 1, n do
      local v = 0.0
      if i == 1 then v = 1.0 elseif j == 1 then v = 0.5 end
      m[i][j] = v
    end
  end
end

-- The Benchmarks Game's five bodies (Sun, Jupiter, Saturn, Uranus, Neptune)
local PI = 3.141592653589793
local SOLAR_MASS = 4 * PI * PI
local DAYS = 365.24
local BODIES = {
  { 0, 0, 0, 0, 0, 0, SOLAR_MASS },
  { 4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
    1.66007664274403694e-03 * DAYS, 7.69901118419740425e-03 * DAYS,
    -6.90460016972063023e-05 * DAYS, 9.54791938424326609e-04 * SOLAR_MASS },
  { 8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
    -2.76742510726862411e-03 * DAYS, 4.99852801234917238e-03 * DAYS,
    2.30417297573763929e-05 * DAYS, 2.85885980666130812e-04 * SOLAR_MASS },
  { 1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
    2.96460137564761618e-03 * DAYS, 2.37847173959480950e-03 * DAYS,
    -2.96589568540237556e-05 * DAYS, 4.36624404335156298e-05 * SOLAR_MASS },
  { 1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
    2.68067772490389322e-03 * DAYS, 1.62824170038242295e-03 * DAYS,
    -9.51592254519715870e-05 * DAYS, 5.15138902046611451e-05 * SOLAR_MASS },
}
W.BODIES, W.SOLAR_MASS = BODIES, SOLAR_MASS

-- W.spec[name]: params (names, in command-line order), full (the benchmark
-- sizes), small (the sizes tests use), interp (smaller sizes for the Lua 5.4
-- interpreter: its time is scaled by work(full) / work(interp)), and
--   setup(A, p) -> state      allocate and fill (untimed)
--   reset(state)              restore the inputs before each run (untimed)
--   run(f, state) -> ret      one call of the kernel f (timed)
--   check(state, ret) -> num  a checksum compared across implementations
W.order = { "saxpy", "dot", "mandelbrot", "nbody", "matmul", "jacobi",
            "convolve", "histogram", "prefix_sum", "fib" }
W.spec = {}
local S = W.spec

S.saxpy = {
  params = { "n" }, full = { 16777216 }, small = { 1000 }, interp = { 2097152 },
  work = function(p) return p[1] end,
  setup = function(A, p)
    local n = p[1]
    local st = { n = n, x = A.vector(n, "f32"), y = A.vector(n, "f32"), out = A.vector(n, "f32"),
                 sum = A.prep(sum1) }
    local fill = A.prep(fill_frac)
    fill(n, st.x, G1, 0.0)
    fill(n, st.y, G2, 0.0)
    return st
  end,
  reset = function() end,
  run = function(f, st) return f(st.n, 2.0, st.x, st.y, st.out) end,
  check = function(st) return st.sum(st.n, st.out, 0.0) end,
}

S.dot = {
  params = { "n" }, full = { 16777216 }, small = { 1000 }, interp = { 2097152 },
  work = function(p) return p[1] end,
  setup = function(A, p)
    local n = p[1]
    local st = { n = n, x = A.vector(n, "f64"), y = A.vector(n, "f64") }
    local fill = A.prep(fill_frac)
    fill(n, st.x, G1, 0.0)
    fill(n, st.y, G2, 0.0)
    return st
  end,
  reset = function() end,
  run = function(f, st) return f(st.n, st.x, st.y) end,
  check = function(_, ret) return ret end,
}

S.mandelbrot = {
  params = { "w", "h", "maxiter" },
  full = { 1200, 800, 256 }, small = { 60, 40, 64 }, interp = { 300, 200, 256 },
  -- the interpreter's smaller image shows the same view at a quarter of the
  -- resolution, so a pixel costs the same on average
  work = function(p) return p[1] * p[2] end,
  setup = function(A, p)
    return { w = p[1], h = p[2], maxiter = p[3], img = A.matrix(p[2], p[1], "i32"),
             sum = A.prep(sum2) }
  end,
  reset = function() end,
  run = function(f, st) return f(st.w, st.h, st.maxiter, st.img) end,
  check = function(st) return st.sum(st.h, st.w, st.img) end,
}

S.nbody = {
  params = { "steps" }, full = { 1000000 }, small = { 100 }, interp = { 50000 },
  work = function(p) return p[1] end,
  setup = function(A, p)
    local nb = #BODIES
    local st = { nb = nb, steps = p[1], dt = 0.01 }
    for _, k in ipairs({ "x", "y", "z", "vx", "vy", "vz", "m" }) do st[k] = A.vector(nb, "f64") end
    return st
  end,
  reset = function(st)
    local keys = { "x", "y", "z", "vx", "vy", "vz", "m" }
    for i = 1, st.nb do
      for k = 1, 7 do st[keys[k]][i] = BODIES[i][k] end
    end
    -- offset the Sun's momentum so the system's total momentum is zero
    local px, py, pz = 0.0, 0.0, 0.0
    for i = 1, st.nb do
      local b = BODIES[i]
      px, py, pz = px + b[4] * b[7], py + b[5] * b[7], pz + b[6] * b[7]
    end
    st.vx[1], st.vy[1], st.vz[1] = -px / SOLAR_MASS, -py / SOLAR_MASS, -pz / SOLAR_MASS
  end,
  run = function(f, st)
    return f(st.nb, st.steps, st.dt, st.x, st.y, st.z, st.vx, st.vy, st.vz, st.m)
  end,
  check = function(_, ret) return ret end,
}

S.matmul = {
  params = { "n" }, full = { 300 }, small = { 12 }, interp = { 120 },
  work = function(p) return p[1] * p[1] * p[1] end,
  setup = function(A, p)
    local n = p[1]
    local st = { n = n, A = A.matrix(n, n, "f64"), B = A.matrix(n, n, "f64"),
                 C = A.matrix(n, n, "f64"), sum = A.prep(sum2) }
    local fill = A.prep(fill_frac2)
    fill(n, n, st.A, G1, 1, 2)
    fill(n, n, st.B, G2, 2, 1)
    return st
  end,
  reset = function() end,
  run = function(f, st) return f(st.n, st.A, st.B, st.C) end,
  check = function(st) return st.sum(st.n, st.n, st.C) end,
}

S.jacobi = {
  params = { "n", "iters" }, full = { 500, 200 }, small = { 10, 4 }, interp = { 500, 20 },
  work = function(p) return (p[1] - 2) * (p[1] - 2) * p[2] end,
  setup = function(A, p)
    local n = p[1]
    assert(p[2] % 2 == 0, "jacobi: iters must be even")
    return { n = n, iters = p[2], A = A.matrix(n, n, "f64"), B = A.matrix(n, n, "f64"),
             init = A.prep(jacobi_init), sum = A.prep(sum2) }
  end,
  reset = function(st) st.init(st.n, st.A) st.init(st.n, st.B) end,
  run = function(f, st) return f(st.n, st.iters, st.A, st.B) end,
  check = function(st) return st.sum(st.n, st.n, st.A) end,
}

S.convolve = {
  params = { "n", "m" }, full = { 1000000, 64 }, small = { 50, 7 }, interp = { 100000, 64 },
  work = function(p) return p[1] * p[2] end,
  setup = function(A, p)
    local n, m = p[1], p[2]
    local st = { n = n, m = m, a = A.vector(n, "f64"), z = A.vector(m, "f64"),
                 out = A.vector(n + m - 1, "f64"), sum = A.prep(sum1) }
    local fill = A.prep(fill_frac)
    fill(n, st.a, G1, 0.0)
    fill(m, st.z, G2, -0.5)
    return st
  end,
  reset = function() end,
  run = function(f, st) return f(st.n, st.m, st.a, st.z, st.out) end,
  check = function(st) return st.sum(st.n + st.m - 1, st.out, 0.0) end,
}

S.histogram = {
  params = { "n", "nbins" }, full = { 16777216, 256 }, small = { 1000, 16 }, interp = { 2097152, 256 },
  work = function(p) return p[1] end,
  setup = function(A, p)
    local n = p[1]
    local st = { n = n, nbins = p[2], x = A.vector(n, "f64"), counts = A.vector(p[2], "i64"),
                 tonumber = A.tonumber }
    A.prep(fill_frac)(n, st.x, G1, 0.0)
    return st
  end,
  reset = function(st) for b = 1, st.nbins do st.counts[b] = 0 end end,
  run = function(f, st) return f(st.n, st.x, st.nbins, st.counts) end,
  -- sum of b * counts[b]: exact in doubles at these sizes
  check = function(st)
    local s = 0
    for b = 1, st.nbins do s = s + b * st.tonumber(st.counts[b]) end
    return s
  end,
}

S.prefix_sum = {
  params = { "n" }, full = { 16777216 }, small = { 1000 }, interp = { 2097152 },
  work = function(p) return p[1] end,
  setup = function(A, p)
    local n = p[1]
    local st = { n = n, x = A.vector(n, "f64"), out = A.vector(n, "f64"), sum = A.prep(sum1) }
    A.prep(fill_frac)(n, st.x, G1, -0.5)
    return st
  end,
  reset = function() end,
  run = function(f, st) return f(st.n, st.x, st.out) end,
  check = function(st) return st.sum(st.n, st.out, 0.0) end,
}

-- the number of calls fib(n) makes, for scaling the interpreter's time
local function fib_calls(n)
  local a, b = 1, 1          -- calls(0), calls(1)
  for _ = 2, n do a, b = b, a + b + 1 end
  return n < 1 and a or b
end

S.fib = {
  params = { "n" }, full = { 32 }, small = { 15 }, interp = { 30 },
  work = function(p) return fib_calls(p[1]) end,
  setup = function(_, p) return { n = p[1] } end,
  reset = function() end,
  run = function(f, st) return f(st.n) end,
  check = function(_, ret) return ret end,
}

return W
