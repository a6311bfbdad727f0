-- test_cuda_numba.lua: numba-cuda's kernel language in kjit.cuda (issue 25):
-- cuda.jit's eager signatures and options, k:forall, launch configs, casts,
-- intrinsics, print. Without a GPU: every kernel runs in the interpreted
-- simulator (the Lua function itself: the reference, with Lua models of the
-- intrinsics) and in the compiled simulator, results compared, and compiles
-- to PTX that ptxas accepts for sm_75, sm_80 and sm_90 (CUDA 13's ptxas and
-- libNVVM have no sm_70).
local kjit = require "kjit"
local cuda = kjit.cuda
local ptxas = require "ptxas"

local function copy(b)
  if type(b) ~= "userdata" then return b end
  return b:copy()
end

-- Runs k (a kernel) with launcher maker cfg(k) in both simulators on fresh
-- copies of args; returns the copies of each mode (interpreted first) after
-- checking that every array argument agrees exactly.
local function both(name, k, cfg, args)
  local results = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local a = {}
    for i = 1, #args do a[i] = copy(args[i]) end
    local ok, err = pcall(function() cfg(k)(table.unpack(a, 1, #args)) end)
    cuda.simulate(prev)
    if not ok then error(err, 0) end
    results[#results + 1] = a
  end
  for i = 1, #args do
    if type(args[i]) == "userdata" then
      local g, w = results[2][i], results[1][i]
      g, w = g:reshape(g.size), w:reshape(w.size)
      for j = 1, w.size do eq(g[j], w[j], name .. ": argument " .. i .. "[" .. j .. "]") end
    end
  end
  return results[1], results[2]
end

-- PTX for sig checked by ptxas for sm_75, sm_80 and sm_90; returns sm_90's.
local function ptx_ok(fn, sig, opts)
  local k = cuda.jit(fn, opts)
  local ptx
  for _, cc in ipairs{ 75, 80, 90 } do
    k:compile(sig, cc)
    ptx = k:inspect("ptx")
    ptxas.check(ptx, sig, cc)
  end
  return ptx
end

-- ---- cuda.jit(fn, signature [, opts]), k:forall, launch configs ---------------------------

local function scale(a, x)
  local i = cuda.grid(1)
  if i <= #x then x[i] = a * x[i] end
end

test("cuda.jit with a numba signature compiles eagerly", function()
  local k = cuda.jit(scale, "void(float32, float32[:])")
  eq(k.signatures[1], "(f32, f32[:])")
  local k2 = cuda.jit(scale, "void(double, int32[::1])", { boundscheck = false })
  eq(k2.signatures[1], "(f64, i32[:])")
  for _, t in ipairs{ "int8", "int16", "uint8", "uint16", "uint32", "uint64", "int64", "float64" } do
    local kk = cuda.jit(scale, "void(float64, " .. t .. "[:])")
    truthy(kk.signatures[1]:find("[:]", 1, true), t)
  end
  raises("bad kernel signature", function() cuda.jit(scale, "void(float33, float32[:])") end)
  raises("signature string expected", function() cuda.jit(scale, {}, {}) end)
end)

test("an eager f32 signature binds launches in both simulators", function()
  local k = cuda.jit(scale, "void(float32, float32[:])")
  local x = kjit.full(100, 1.1, "f32")
  local _, b = both("scale", k, function(kk) return kk[{1, 128}] end, { 1.0 / 3.0, x })
  near(b[2][1], 1.1 / 3.0, 1e-6)
end)

test("k:forall(n) launches enough threads for n elements", function()
  local k = cuda.jit(function(x)
    local i = cuda.grid(1)
    if i <= #x then x[i] = x[i] + i end
  end)
  for _, n in ipairs{ 1, 31, 256, 257, 1000 } do
    local _, b = both("forall " .. n, k, function(kk) return kk:forall(n) end, { kjit.zeros(n, "i64") })
    for i = 1, n do eq(b[1][i], i) end
  end
  local _, b = both("forall tpb", k, function(kk) return kk:forall(100, 32) end, { kjit.zeros(100, "i64") })
  eq(b[1][100], 100)
  raises("at least 1 element", function() k:forall(0) end)
  raises("threads per block", function() k:forall(10, 2000) end)
end)

test("launch configs: integers and {x, y, z} read alike", function()
  local k = cuda.jit(scale)
  truthy(k[{4.0, 256}], "a float with an integer value as the grid")
  truthy(k[{{4.0}, 256.0}], "in a table too")
  raises("grid must be an integer or {x, y, z}", function() return k[{4.5, 256}] end)
  raises("(from 1 to 2^31-1), got string", function() return k[{"4", 256}] end)
  raises("grid[1] must be a positive integer (at most 2^31-1), got string", function() return k[{{"4"}, 256}] end)
  raises("grid[1] must be a positive integer (at most 2^31-1), got 4.5", function() return k[{{4.5}, 256}] end)
end)

test("cuda.jit options: device, launch_bounds, max_registers, fastmath, opt", function()
  local function dev(x) return x * 2 end
  eq(cuda.jit(dev, { device = true }), dev)
  eq(cuda.jit(dev, "float32(float32)", { device = true }), dev)
  raises("bad device function signature", function() cuda.jit(dev, "float32(", { device = true }) end)
  local k = cuda.jit(function(x)
    local i = cuda.grid(1)
    if i <= #x then x[i] = dev(x[i]) end
  end)
  local _, b = both("device fn", k, function(kk) return kk:forall(10) end, { kjit.full(10, 3, "f64") })
  eq(b[1][10], 6.0)
  local ptx = ptx_ok(scale, "void(float32, float32[:])", { launch_bounds = 128, max_registers = 40 })
  truthy(ptx:find(".maxntid 128, 1, 1", 1, true), ".maxntid")
  truthy(ptx:find(".maxnreg 40", 1, true), ".maxnreg")
  ptx = ptx_ok(scale, "void(float32, float32[:])", { maxThreadsPerBlock = 64 })
  truthy(ptx:find(".maxntid 64, 1, 1", 1, true), ".maxntid")
  raises("one limit", function() cuda.jit(scale, { launch_bounds = 64, maxThreadsPerBlock = 128 }) end)
  -- fastmath: approximate division and square root, as numba-cuda's
  local sq = function(x) local i = cuda.grid(1) if i <= #x then x[i] = math.sqrt(x[i]) / 3 end end
  local fast = ptx_ok(sq, "void(float32[:])", { fastmath = true })
  local exact = ptx_ok(sq, "void(float32[:])")
  truthy(fast:find("sqrt.approx", 1, true) and not exact:find("sqrt.approx", 1, true), "fastmath sqrt")
  ptx_ok(sq, "void(float32[:])", { opt = 0 })
  ptx_ok(sq, "void(float32[:])", { lineinfo = true, debug = false })
end)

-- ---- Casts, math.modf, kjit.math: compiled (CPU and kernels) against interpreted ----------

local SAMPLES = { 0, 1, -1, 7, 300, -129, 2^31, -2^31 - 1, 2^32 + 5, math.maxinteger, math.mininteger,
  0.0, -0.0, 0.5, -0.5, 3.7, -3.7, 255.9, -255.9, 1e10, -1e10, 2^63, -2^63, 1e300, -1e300,
  1/0, -1/0, 0/0, 2^53 + 1.0, 0.1 }

local CASTS = { "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64" }

test("casts wrap as numba's compiled casts (cuda.uint8(300) is 44)", function()
  eq(cuda.uint8(300), 44)
  eq(cuda.int8(200), -56)
  eq(cuda.int32(2^31), -2147483648)
  eq(cuda.uint32(-1), 0xffffffff)
  eq(cuda.int64(-3.9), -3)            -- truncation, as numba's int()
  eq(cuda.int16(0/0), 0)
  eq(cuda.int64(1e300), math.maxinteger)
  eq(cuda.float32(0.1), 0.100000001490116119384765625)
  eq(math.type(cuda.float64(3)), "float")
  raises("number expected", function() cuda.int32("x") end)
end)

test("casts: kjit.jit on the CPU agrees with the interpreter", function()
  for _, c in ipairs(CASTS) do
    local fn = load("local cuda = ...; return function(x) return cuda." .. c .. "(x) end")(cuda)
    local jf = kjit.jit(fn)
    for _, x in ipairs(SAMPLES) do eq(jf(x), fn(x), c .. "(" .. tostring(x) .. ")") end
  end
end)

test("math.modf compiled agrees with Lua's", function()
  local fn = function(x) return math.modf(x) end
  local jf = kjit.jit(fn)
  for _, x in ipairs(SAMPLES) do
    local a, b = jf(x)
    local c, d = fn(x)
    eq(a, c, "modf(" .. tostring(x) .. ") integral part")
    eq(b, d, "modf(" .. tostring(x) .. ") fraction")
  end
  raises("math.modf of a value that may be an integer or a float", function()
    kjit.jit(function(n) local x = n > 0 and 1 or 2.5; return math.modf(x) end)(1)
  end)
end)

local MATH1 = { "cbrt", "erf", "erfc", "tanh", "sinh", "cosh", "log2", "log10", "log1p", "expm1",
  "gamma", "lgamma", "trunc", "isnan", "isinf", "isfinite" }
local MATHX = { 0.0, -0.0, 0.5, -0.75, 1, 2, 3.5, 10, -10, 100.25, 1e-8, 1/0, -1/0, 0/0 }

test("kjit.math on the CPU agrees with the interpreter", function()
  for _, name in ipairs(MATH1) do
    local fn = load("local m = ...; return function(x) return m." .. name .. "(x) end")(kjit.math)
    local jf = kjit.jit(fn)
    for _, x in ipairs(MATHX) do eq(jf(x), fn(x), name .. "(" .. tostring(x) .. ")") end
  end
  local f2 = function(x, y) return kjit.math.hypot(x, y), kjit.math.copysign(x, y), kjit.math.fma(x, y, 0.25) end
  local jf2 = kjit.jit(f2)
  for _, x in ipairs(MATHX) do
    for _, y in ipairs{ 3, -2.5, 0.0, -0.0 } do
      local a, b, c = jf2(x, y)
      local a2, b2, c2 = f2(x, y)
      eq(a, a2, "hypot"); eq(b, b2, "copysign"); eq(c, c2, "fma")
    end
  end
  eq(cuda.erf, kjit.math.erf)
  eq(cuda.fma, kjit.math.fma)
end)

-- every cast and math function in a kernel, both simulators, f64 and f32
local function mathkernel(out, x)
  local i = cuda.grid(1)
  if i <= #x then
    local v = x[i]
    local a, b = math.modf(v)
    local k = (i - 1) * 24
    out[k + 1] = cuda.int8(v); out[k + 2] = cuda.uint8(v); out[k + 3] = cuda.int16(v)
    out[k + 4] = cuda.uint32(v); out[k + 5] = cuda.int64(v); out[k + 6] = cuda.float32(v)
    out[k + 7] = a; out[k + 8] = b
    out[k + 9] = kjit.math.cbrt(v); out[k + 10] = kjit.math.erf(v); out[k + 11] = kjit.math.erfc(v)
    out[k + 12] = kjit.math.tanh(v); out[k + 13] = kjit.math.log1p(v); out[k + 14] = kjit.math.expm1(v)
    out[k + 15] = cuda.gamma(v); out[k + 16] = kjit.math.lgamma(v); out[k + 17] = kjit.math.trunc(v)
    out[k + 18] = kjit.math.isnan(v) and 1 or 0; out[k + 19] = kjit.math.isinf(v) and 1 or 0
    out[k + 20] = kjit.math.isfinite(v) and 1 or 0
    out[k + 21] = kjit.math.hypot(v, 2); out[k + 22] = kjit.math.copysign(3, v)
    out[k + 23] = cuda.fma(v, 3, 0.5); out[k + 24] = kjit.math.log2(v) + kjit.math.sinh(v) + kjit.math.cosh(v)
  end
end

test("casts, math.modf and kjit.math in kernels: both simulators agree (f64)", function()
  local x = kjit.array{ 0.5, -0.75, 3.7, -3.7, 255.9, 1e10, 2.0, 0.1, 7.0, -300.25 }
  local out = kjit.zeros(24 * #x, "f64")
  both("mathkernel f64", cuda.jit(mathkernel), function(k) return k:forall(#x) end, { out, x })
  ptx_ok(mathkernel, "void(float64[:], float64[:])")
end)

test("casts, math.modf and kjit.math in kernels: f32 stays f32", function()
  local x = kjit.array({ 0.5, -0.75, 3.7, -3.7, 255.9, 2.0, 0.1, 7.0 }, "f32")
  local results = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local out = kjit.zeros(24 * #x, "f32")
    cuda.jit(mathkernel):forall(#x)(out, x)
    cuda.simulate(prev)
    results[#results + 1] = out
  end
  for j = 1, results[1].size do
    local a, b = results[2][j], results[1][j]
    if a ~= a then truthy(b ~= b, "NaN at " .. j) else near(a, b, 1e-6, "f32 out[" .. j .. "]") end
  end
  ptx_ok(mathkernel, "void(float32[:], float32[:])")
end)
