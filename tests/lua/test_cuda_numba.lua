-- test_cuda_numba.lua: numba-cuda's kernel language in kjit.cuda (issue 25):
-- cuda.jit's eager signatures and options, k:forall, launch configs, casts,
-- intrinsics, print. Without a GPU: every kernel runs in the interpreted
-- simulator (the Lua function itself: the reference, with Lua models of the
-- intrinsics) and in the compiled simulator, results compared, and compiles
-- to PTX that ptxas accepts for sm_75, sm_80 and sm_90 (CUDA 13's ptxas and
-- libNVVM have no sm_70).
local kjit = require "kjit"
local cuda = kjit.cuda
local both = require("simboth").both
local ptxas = require "ptxas"

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
  -- numba's short names and index types (its i8/u8 are kjit's int8/uint8)
  eq(cuda.jit(scale, "void(f4, f8[:])").signatures[1], "(f32, f64[:])")
  eq(cuda.jit(scale, "void(intp, i4[::1])").signatures[1], "(i64, i32[:])")
  for short, long in pairs{ f2 = "f16", i1 = "i8", i2 = "i16", u1 = "u8", u2 = "u16", u4 = "u32", uintp = "u64" } do
    eq(cuda.jit(scale, "void(float64, " .. short .. "[:])").signatures[1], "(f64, " .. long .. "[:])", short)
  end
  raises("bad kernel signature", function() cuda.jit(scale, "void(float33, float32[:])") end)
  raises("signature string expected", function() cuda.jit(scale, {}, {}) end)
end)

test("cuda.jit's decorator form and signature lists, as numba's", function()
  local k = cuda.jit("void(float32[:], float32)")(function(x, a)
    local i = cuda.grid(1)
    if i <= #x then x[i] = x[i] * a end
  end)
  eq(k.signatures[1], "(f32[:], f32)")
  local k2 = cuda.jit(scale, { "void(float32, float32[:])", "void(float64, float64[:])" }, { fastmath = true })
  eq(k2.signatures[1], "(f32, f32[:])")
  eq(k2.signatures[2], "(f64, f64[:])")
  local dev = function(x) return x + 1 end
  eq(cuda.jit({ device = true })(dev), dev)
  eq(cuda.jit("float64(float64)", { device = true })(dev), dev)
  raises("signature 2 of the list is not a string", function() cuda.jit(scale, { "void(f64, f64[:])", 3 }) end)
end)

test("an eager f32 signature binds launches in both simulators", function()
  local k = cuda.jit(scale, "void(float32, float32[:])")
  local x = kjit.full(100, 1.1, "f32")
  local b = both("scale", k, function(kk) return kk[{1, 128}] end, { 1.0 / 3.0, x })
  near(b[2][1], 1.1 / 3.0, 1e-6)
end)

test("k:forall(n) launches enough threads for n elements", function()
  local k = cuda.jit(function(x)
    local i = cuda.grid(1)
    if i <= #x then x[i] = x[i] + i end
  end)
  for _, n in ipairs{ 1, 31, 256, 257, 1000 } do
    local b = both("forall " .. n, k, function(kk) return kk:forall(n) end, { kjit.zeros(n, "i64") })
    for i = 1, n do eq(b[1][i], i) end
  end
  local b = both("forall tpb", k, function(kk) return kk:forall(100, 32) end, { kjit.zeros(100, "i64") })
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
  local b = both("device fn", k, function(kk) return kk:forall(10) end, { kjit.full(10, 3, "f64") })
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
  -- numba-cuda's inlining requests are taken (no effect: the same PTX)
  for _, v in ipairs{ true, false, "always", "never" } do
    eq(cuda.jit(dev, "float64(float64)", { device = true, inline = v }), dev)
    eq(ptx_ok(sq, "void(float32[:])", { inline = v, forceinline = true }), exact, "inline = " .. tostring(v))
  end
  raises([[cuda.jit: unknown inline 'sometimes' (inline must be a boolean, "never" or "always")]],
         function() cuda.jit(dev, { device = true, inline = "sometimes" }) end)
  raises("bad option 'forceinline' to 'cuda.jit' (boolean expected, got number)",
         function() cuda.jit(dev, { device = true, forceinline = 1 }) end)
end)

test("lineinfo: .loc lines name the kernel's Lua lines", function()
  local function dev(a) return a * 2 end
  local line0 = debug.getinfo(1, "l").currentline
  local function k(x)
    local i = cuda.grid(1)
    if i <= #x then
      x[i] = dev(x[i]) + 1               -- line0 + 4
    end
  end
  local ptx = ptx_ok(k, "void(float32[:])", { lineinfo = true })
  truthy(ptx:find('.file\t1 "[^"]*test_cuda_numba.lua"'), ".file names this file")
  local lines = {}
  for l in ptx:gmatch("%.loc%s+1%s+(%d+)") do lines[tonumber(l)] = true end
  truthy(lines[line0 + 2] and lines[line0 + 4], ".loc of the index and of the store")
  truthy(not cuda.jit(k):compile("void(float32[:])"):inspect("ptx"):find(".loc", 1, true), "none without")
  ptx_ok(k, "void(float32[:])", { debug = true })
  -- the simulator ignores it
  both("lineinfo sim", cuda.jit(k, { lineinfo = true }), function(kk) return kk:forall(4) end, { kjit.full(4, 1, "f32") })
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
  -- an integer-or-float argument: each side as Lua computes it
  local mixed = function(n) local x = n > 0 and 1 or -2.5; return math.modf(x) end
  local jm = kjit.jit(mixed)
  for _, n in ipairs({1, 0}) do
    local a, b = jm(n)
    local c, d = mixed(n)
    eq(a, c, "modf of an integer-or-float, integral part")
    eq(math.type(a), math.type(c), "modf of an integer-or-float, integral part's subtype")
    eq(b, d, "modf of an integer-or-float, fraction")
  end
end)

local MATH1 = { "cbrt", "erf", "erfc", "tanh", "sinh", "cosh", "log2", "log10", "log1p", "expm1",
  "gamma", "lgamma", "trunc", "isnan", "isinf", "isfinite", "asinh", "acosh", "atanh" }
local MATHX = { 0.0, -0.0, 0.5, -0.75, 1, 2, 3.5, 10, -10, 100.25, 1e-8, 1/0, -1/0, 0/0 }

test("kjit.math on the CPU agrees with the interpreter", function()
  for _, name in ipairs(MATH1) do
    local fn = load("local m = ...; return function(x) return m." .. name .. "(x) end")(kjit.math)
    local jf = kjit.jit(fn)
    for _, x in ipairs(MATHX) do eq(jf(x), fn(x), name .. "(" .. tostring(x) .. ")") end
  end
  local f2 = function(x, y)
    return kjit.math.hypot(x, y), kjit.math.copysign(x, y), kjit.math.fma(x, y, 0.25),
      kjit.math.remainder(x, y)
  end
  local jf2 = kjit.jit(f2)
  for _, x in ipairs(MATHX) do
    for _, y in ipairs{ 3, -2.5, 0.0, -0.0 } do
      local a, b, c, d = jf2(x, y)
      local a2, b2, c2, d2 = f2(x, y)
      eq(a, a2, "hypot"); eq(b, b2, "copysign"); eq(c, c2, "fma"); eq(d, d2, "remainder")
    end
  end
  -- against values the C library need not give: numba-cuda's names, defined as C99's
  eq(kjit.math.remainder(7, 2), -1.0, "remainder rounds the quotient to even")
  eq(kjit.math.atanh(0.0), 0.0); eq(kjit.math.acosh(1.0), 0.0); eq(kjit.math.asinh(-0.0), -0.0)
  eq(cuda.erf, kjit.math.erf)
  eq(cuda.fma, kjit.math.fma)
end)

-- every cast and math function in a kernel, both simulators, f64 and f32
local function mathkernel(out, x)
  local i = cuda.grid(1)
  if i <= #x then
    local v = x[i]
    local a, b = math.modf(v)
    local k = (i - 1) * 27
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
    out[k + 25] = kjit.math.asinh(v) + kjit.math.remainder(v, 0.75)
    out[k + 26] = kjit.math.acosh(v + 400); out[k + 27] = cuda.atanh(v / 1e11)
  end
end

test("casts, math.modf and kjit.math in kernels: both simulators agree (f64)", function()
  local x = kjit.array{ 0.5, -0.75, 3.7, -3.7, 255.9, 1e10, 2.0, 0.1, 7.0, -300.25 }
  local out = kjit.zeros(27 * #x, "f64")
  both("mathkernel f64", cuda.jit(mathkernel), function(k) return k:forall(#x) end, { out, x })
  ptx_ok(mathkernel, "void(float64[:], float64[:])")
end)

test("casts, math.modf and kjit.math in kernels: f32 stays f32", function()
  local x = kjit.array({ 0.5, -0.75, 3.7, -3.7, 255.9, 2.0, 0.1, 7.0 }, "f32")
  local results = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local out = kjit.zeros(27 * #x, "f32")
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

-- ---- Intrinsics: both simulators against plain-Lua models, and PTX ----------------------------
--
-- Warps are 32 consecutive threads of a block. The models below compute
-- each thread's expected output from the inputs alone.

local FULL = 0xffffffff

-- Launches fn over nblocks blocks of bs threads in both simulators on
-- out (n outputs per thread, f64) and x; checks every output against
-- model(t, x, bs) (t: the 0-based global thread, returns n values); then
-- checks fn's PTX.
local function check_model(name, fn, bs, nblocks, n, model, x, sig)
  test(name, function()
    x = x or kjit.arange(bs * nblocks, "f64")
    local out = kjit.zeros(bs * nblocks * n, "f64")
    local b = both(name, cuda.jit(fn), function(k) return k[{nblocks, bs}] end, { out, x })
    local res = b[1]
    for t = 0, bs * nblocks - 1 do
      local want = { model(t, x, bs) }
      for j = 1, n do eq(res[t * n + j], want[j] + 0.0, name .. ": thread " .. t .. " output " .. j) end
    end
    ptx_ok(fn, sig or "void(float64[:], float64[:])")
  end)
end

-- lane, warp base (0-based global index of lane 0) and block bounds of thread t
local function where(t, bs)
  local tb = t % bs
  local lane = tb % 32
  local base = t - lane
  local blockend = t - tb + bs - 1
  return lane, base, blockend
end

check_model("laneid, lanemask_lt, warpsize", function(out, x)
  local i = cuda.grid(1)
  out[3 * i - 2] = cuda.laneid()
  out[3 * i - 1] = cuda.lanemask_lt()
  out[3 * i] = cuda.warpsize
end, 48, 2, 3, function(t, x, bs)
  local lane = where(t, bs)
  return lane, (1 << lane) - 1, 32
end)

check_model("shfl_sync, shfl_up_sync, shfl_down_sync, shfl_xor_sync", function(out, x)
  local i = cuda.grid(1)
  local v = x[i]
  out[4 * i - 3] = cuda.shfl_sync(FULL, v, 5)
  out[4 * i - 2] = cuda.shfl_up_sync(FULL, v, 3)
  out[4 * i - 1] = cuda.shfl_down_sync(FULL, v, 2)
  out[4 * i] = cuda.shfl_xor_sync(FULL, v, 17)
end, 48, 2, 4, function(t, x, bs)
  local lane, base, blockend = where(t, bs)
  local function at(src)   -- a lane beyond the warp or the block: the own value
    if src < 0 or src > 31 or base + src > blockend then return x[t + 1] end
    return x[base + src + 1]
  end
  return at(5), at(lane - 3), at(lane + 2), at(lane ~ 17)
end, kjit.linspace(1, 2, 96, "f64"))

-- a butterfly sum per warp (integers and f32, as numba-cuda's reduction examples)
local function warpsum(out, x)
  local i = cuda.grid(1)
  local v = x[i]
  local s = v
  local off = 16
  while off > 0 do
    s = s + cuda.shfl_xor_sync(FULL, s, off)
    off = off // 2
  end
  out[i] = s
end
check_model("a butterfly reduction with shfl_xor_sync (i64)", warpsum, 64, 2, 1, function(t, x, bs)
  local lane, base = where(t, bs)
  local s = 0
  for l = 0, 31 do s = s + x[base + l + 1] end
  return s
end, kjit.arange(128, "i64"), "void(float64[:], int64[:])")

test("shfl_sync keeps f32 and integer subtypes", function()
  local function k(out, x)
    local i = cuda.grid(1)
    out[i] = cuda.shfl_down_sync(FULL, x[i], 1) * 3
  end
  local x = kjit.linspace(0.1, 0.9, 32, "f32")
  local b = both("shfl f32", cuda.jit(k), function(kk) return kk[{1, 32}] end, { kjit.zeros(32, "f32"), x })
  eq(b[1][1], kjit.array({ x[2] * 3 }, "f32")[1])
  ptx_ok(k, "void(float32[:], float32[:])")
  ptx_ok(k, "void(int64[:], int64[:])")
end)

check_model("all_sync, any_sync, eq_sync, ballot_sync (booleans and numbers)", function(out, x)
  local i = cuda.grid(1)
  local v = x[i]
  out[5 * i - 4] = cuda.all_sync(FULL, v > 2) and 1 or 0
  out[5 * i - 3] = cuda.any_sync(FULL, v > 40) and 1 or 0
  out[5 * i - 2] = cuda.eq_sync(FULL, v >= 32) and 1 or 0
  out[5 * i - 1] = cuda.ballot_sync(FULL, v % 3 == 0)
  out[5 * i] = 0
  if cuda.laneid() < 16 then   -- only the lanes of the mask
    out[5 * i] = cuda.ballot_sync(0x0000ffff, v % 2)     -- a number: non-zero is true
  end
end, 64, 1, 5, function(t, x, bs)
  local lane, base = where(t, bs)
  local all, any, n32, ball, ball2 = true, false, 0, 0, 0
  for l = 0, 31 do
    local v = x[base + l + 1]
    all = all and v > 2; any = any or v > 40
    if v >= 32 then n32 = n32 + 1 end
    if v % 3 == 0 then ball = ball | (1 << l) end
    if l < 16 and v % 2 ~= 0 then ball2 = ball2 | (1 << l) end
  end
  return all and 1 or 0, any and 1 or 0, (n32 == 0 or n32 == 32) and 1 or 0, ball,
         lane < 16 and ball2 or 0
end)

check_model("match_any_sync, match_all_sync", function(out, x)
  local i = cuda.grid(1)
  local v = x[i]
  out[3 * i - 2] = cuda.match_any_sync(FULL, v // 8)
  local m, same = cuda.match_all_sync(FULL, v // 64)
  out[3 * i - 1] = m
  out[3 * i] = same and 1 or 0
end, 64, 2, 3, function(t, x, bs)
  local lane, base = where(t, bs)
  local mine, any = x[t + 1] // 8, 0
  for l = 0, 31 do if x[base + l + 1] // 8 == mine then any = any | (1 << l) end end
  local first, all = x[base + 1] // 64, true
  for l = 0, 31 do all = all and x[base + l + 1] // 64 == first end
  return any, all and FULL or 0, all and 1 or 0
end, kjit.array({}, "f64") and kjit.arange(0, 256, 2, "f64"))

check_model("syncthreads_count, syncthreads_and, syncthreads_or", function(out, x)
  local i = cuda.grid(1)
  local v = x[i]
  out[3 * i - 2] = cuda.syncthreads_count(v % 5 == 0)
  out[3 * i - 1] = cuda.syncthreads_and(v >= 0) and 1 or 0
  out[3 * i] = cuda.syncthreads_or(v > 100) and 1 or 0
end, 96, 2, 3, function(t, x, bs)
  local b0 = t - t % bs
  local c, all, any = 0, true, false
  for j = b0, b0 + bs - 1 do
    local v = x[j + 1]
    if v % 5 == 0 then c = c + 1 end
    all = all and v >= 0; any = any or v > 100
  end
  return c, all and 1 or 0, any and 1 or 0
end)

-- divergence: lanes that left the kernel take no part; activemask is who met
check_model("activemask, syncwarp and shuffles after lanes returned", function(out, x)
  local i = cuda.grid(1)
  out[3 * i - 2] = -1; out[3 * i - 1] = -1; out[3 * i] = -1
  if cuda.laneid() % 4 == 3 then return end
  cuda.syncwarp()
  out[3 * i - 2] = cuda.activemask()
  out[3 * i - 1] = cuda.shfl_down_sync(cuda.activemask(), x[i], 1)
  out[3 * i] = cuda.ballot_sync(FULL, true)
end, 64, 1, 3, function(t, x, bs)
  local lane, base = where(t, bs)
  if lane % 4 == 3 then return -1, -1, -1 end
  local m = 0
  for l = 0, 31 do if l % 4 ~= 3 then m = m | (1 << l) end end
  local src = lane + 1
  local sv = (src % 4 ~= 3) and x[base + src + 1] or x[t + 1]
  return m, sv, m
end)

check_model("popc, clz, ffs, brev, selp (64-bit Lua integers)", function(out, x)
  local i = cuda.grid(1)
  local v = cuda.int64(x[i]) * 2654435761 - 7
  out[5 * i - 4] = cuda.popc(v)
  out[5 * i - 3] = cuda.clz(v)
  out[5 * i - 2] = cuda.ffs(v)
  out[5 * i - 1] = cuda.brev(v) & 0xffff
  out[5 * i] = cuda.selp(v > 0, 1.5, -2.5)
end, 64, 1, 5, function(t, x, bs)
  local v = math.tointeger(x[t + 1]) * 2654435761 - 7
  local pop, clz, ffs, rev = 0, 64, 0, 0
  for b = 0, 63 do
    if (v >> b) & 1 == 1 then
      pop = pop + 1
      clz = 63 - b
      if ffs == 0 then ffs = b + 1 end
    end
    rev = rev | (((v >> b) & 1) << (63 - b))
  end
  return pop, clz, ffs, rev & 0xffff, v > 0 and 1.5 or -2.5
end, kjit.arange(-32, 32, "f64"))

test("threadfence_block, threadfence_system, nanosleep run in kernels", function()
  local function k(out, x)
    local i = cuda.grid(1)
    out[i] = x[i]
    cuda.threadfence_block()
    cuda.threadfence_system()
    cuda.nanosleep(100)
  end
  both("fences", cuda.jit(k), function(kk) return kk[{1, 8}] end, { kjit.zeros(8), kjit.arange(8, "f64") })
  local ptx = ptx_ok(k, "void(float64[:], float64[:])")
  truthy(ptx:find("membar.cta", 1, true) and ptx:find("membar.sys", 1, true), "membar")
  truthy(ptx:find("nanosleep.u32", 1, true), "nanosleep")
end)

-- the atomics: order-independent results on global and shared arrays
local function atomics(acc, u, f, x)
  local i = cuda.grid(1)
  local sh = cuda.shared.array(4, "u32")
  if i > #x then return end
  local v = math.tointeger(x[i])
  cuda.atomic.and_(acc, 1, ~(1 << (v % 40)))
  cuda.atomic.or_(acc, 2, 1 << (v % 50))
  cuda.atomic.xor(acc, 3, v * 7919)
  cuda.atomic.nanmax(acc, 4, v * 3 - 50)
  cuda.atomic.nanmin(acc, 5, v * 3 - 50)
  cuda.atomic.inc(u, 1, 9)            -- wraps to 0 after 9
  cuda.atomic.dec(u, 2, 6)            -- from 0: 6, 5, ... 0, 6 ...
  cuda.atomic.inc(sh, 1, 1000)
  cuda.atomic.nanmax(f, 1, (v == 3) and 0 / 0 or v + 0.5)   -- a NaN is a missing value
  cuda.atomic.nanmin(f, 2, (v == 5) and 0 / 0 or v + 0.5)
  cuda.syncthreads()
  if cuda.threadIdx.x == 0 then cuda.atomic.add(u, 3, sh[1]) end
end

test("atomic and_, or_, xor, nanmax, nanmin, inc, dec on global and shared arrays", function()
  local n, bs = 200, 64
  local acc = kjit.array({ -1, 0, 12345, math.mininteger, math.maxinteger }, "i64")
  local u = kjit.zeros(3, "u32")
  local f = kjit.array({ 0 / 0, 0 / 0 }, "f64")
  local x = kjit.arange(n, "f64")
  local b = both("atomics", cuda.jit(atomics), function(k) return k[{(n + bs - 1) // bs, bs}] end,
                    { acc, u, f, x })
  -- the model
  local a1, a2, a3, mx, mn = -1, 0, 12345, math.mininteger, math.maxinteger
  local total = (n + bs - 1) // bs * bs
  for t = 0, total - 1 do
    local v = t < n and t or nil
    if v then   -- threads past n read beyond x: there are none here (x is long enough)
      a1 = a1 & ~(1 << (v % 40)); a2 = a2 | (1 << (v % 50)); a3 = a3 ~ (v * 7919)
      mx = math.max(mx, v * 3 - 50); mn = math.min(mn, v * 3 - 50)
    end
  end
  eq(b[1][1], a1); eq(b[1][2], a2); eq(b[1][3], a3); eq(b[1][4], mx); eq(b[1][5], mn)
  eq(b[2][1], n % 10)
  local d = 0
  for _ = 1, n do d = (d == 0 or d > 6) and 6 or d - 1 end
  eq(b[2][2], d)
  eq(b[2][3], n)
  eq(b[3][1], n - 1 + 0.5); eq(b[3][2], 0.5)
  ptx_ok(atomics, "void(int64[:], uint32[:], float64[:], float64[:])")
end)

test("atomic.compare_and_swap: exactly one thread wins; cas types checked", function()
  local function k(lock, won)
    local i = cuda.grid(1)
    if cuda.atomic.compare_and_swap(lock, 0, i) == 0 then cuda.atomic.add(won, 1, 1) end
  end
  local b = both("cas", cuda.jit(k), function(kk) return kk[{2, 64}] end,
                    { kjit.zeros(1, "i32"), kjit.zeros(1, "i64") })
  eq(b[2][1], 1)
  truthy(b[1][1] >= 1 and b[1][1] <= 128)
  ptx_ok(k, "void(int32[:], int64[:])")
  raises("works on u32 and u64 arrays, not i32", function()
    cuda.jit(function(a) cuda.atomic.inc(a, 1, 3) end):compile("void(int32[:])")
  end)
  raises("works on i32, u32, i64 and u64 arrays, not f64", function()
    cuda.jit(function(a) cuda.atomic.xor(a, 1, 3) end):compile("void(float64[:])")
  end)
  raises("bad argument #2 to 'cuda.shfl_sync' (an integer, f32 or f64 value expected, got boolean)", function()
    cuda.jit(function(a) a[1] = cuda.shfl_sync(FULL, true, 0) end):compile("void(float64[:])")
  end)
  raises("cuda.laneid can only be used in a kernel compiled by cuda.jit", function()
    kjit.jit(function() return cuda.laneid() end)()
  end)
  raises("cuda.laneid can only be called inside a kernel", function() cuda.laneid() end)
end)

-- the same atomics on shared arrays (each block its own), then compare_and_swap
-- and inc/dec there; thread 0 of each block copies its block's results out
local function shared_atomics(out, x)
  local i = cuda.grid(1)
  local sh = cuda.shared.array(5, "i64")
  local su = cuda.shared.array(2, "u32")
  local sf = cuda.shared.array(2, "f64")
  local lock = cuda.shared.array(1, "i32")
  local won = cuda.shared.array(1, "i32")
  local t = cuda.threadIdx.x
  if t == 0 then
    sh[1] = -1; sh[2] = 0; sh[3] = 12345; sh[4] = math.mininteger; sh[5] = math.maxinteger
    su[1] = 0; su[2] = 0; sf[1] = 0 / 0; sf[2] = 0 / 0; lock[1] = 0; won[1] = 0
  end
  cuda.syncthreads()
  local v = math.tointeger(x[i])
  cuda.atomic.and_(sh, 1, ~(1 << (v % 40)))
  cuda.atomic.or_(sh, 2, 1 << (v % 50))
  cuda.atomic.xor(sh, 3, v * 7919)
  cuda.atomic.nanmax(sh, 4, v * 3 - 50)
  cuda.atomic.nanmin(sh, 5, v * 3 - 50)
  cuda.atomic.inc(su, 1, 9)
  cuda.atomic.dec(su, 2, 6)
  cuda.atomic.nanmax(sf, 1, (v % 7 == 3) and 0 / 0 or v + 0.5)
  cuda.atomic.nanmin(sf, 2, (v % 7 == 5) and 0 / 0 or v + 0.5)
  if cuda.atomic.compare_and_swap(lock, 0, t + 1) == 0 then cuda.atomic.add(won, 1, 1) end
  cuda.syncthreads()
  if t == 0 then
    local o = cuda.blockIdx.x * 11
    for k = 1, 5 do out[o + k] = sh[k] end
    out[o + 6] = su[1]; out[o + 7] = su[2]; out[o + 8] = sf[1]; out[o + 9] = sf[2]
    out[o + 10] = won[1]; out[o + 11] = lock[1] >= 1 and lock[1] <= cuda.blockDim.x and 1 or 0
  end
end

test("atomics on shared arrays: and_, or_, xor, nanmax, nanmin, inc, dec, compare_and_swap", function()
  local bs, nb = 64, 3
  local x = kjit.arange(bs * nb, "f64")
  local b = both("shared atomics", cuda.jit(shared_atomics), function(k) return k[{nb, bs}] end,
                 { kjit.zeros(11 * nb, "f64"), x })
  for blk = 0, nb - 1 do
    local a1, a2, a3, mx, mn, fmx, fmn = -1, 0, 12345, math.mininteger, math.maxinteger, -1 / 0, 1 / 0
    local inc, dec = 0, 0
    for t = 0, bs - 1 do
      local v = blk * bs + t
      a1 = a1 & ~(1 << (v % 40)); a2 = a2 | (1 << (v % 50)); a3 = a3 ~ (v * 7919)
      mx = math.max(mx, v * 3 - 50); mn = math.min(mn, v * 3 - 50)
      inc = inc >= 9 and 0 or inc + 1
      dec = (dec == 0 or dec > 6) and 6 or dec - 1
      if v % 7 ~= 3 then fmx = math.max(fmx, v + 0.5) end
      if v % 7 ~= 5 then fmn = math.min(fmn, v + 0.5) end
    end
    local want = { a1, a2, a3, mx, mn, inc, dec, fmx, fmn, 1, 1 }
    for k = 1, 11 do eq(b[1][blk * 11 + k], want[k] + 0.0, "block " .. blk .. " result " .. k) end
  end
  ptx_ok(shared_atomics, "void(float64[:], float64[:])")
end)

-- numba's cuda.atomic.add(a, (i, j), v) on an n-D array: a[i] is a row
-- view (1-D), so it ports as cuda.atomic.add(a[i], j, v), global and shared
local function atomic_rows(h, x)
  local i = cuda.grid(1)
  local s = cuda.shared.array({ 3, 4 }, "i32")
  local v = math.tointeger(x[i])
  cuda.atomic.add(h[v % 3 + 1], v % 4 + 1, v)
  cuda.atomic.max(s[v % 3 + 1], v % 4 + 1, v)
  cuda.syncthreads()
  if cuda.threadIdx.x < 12 then
    local r, c = cuda.threadIdx.x // 4 + 1, cuda.threadIdx.x % 4 + 1
    cuda.atomic.add(h[r + 3], c, s[r][c])
  end
end

test("atomics on rows of n-D arrays (numba's tuple index), global and shared", function()
  local x = kjit.arange(0, 64 * 2, "f64")
  local b = both("atomic rows", cuda.jit(atomic_rows), function(k) return k[{2, 64}] end,
                 { kjit.zeros({ 6, 4 }, "i64"), x })
  local want = kjit.zeros({ 6, 4 }, "i64")
  for blk = 0, 1 do
    local mx = kjit.zeros({ 3, 4 }, "i64")
    for t = 0, 63 do
      local v = blk * 64 + t
      want[v % 3 + 1][v % 4 + 1] = want[v % 3 + 1][v % 4 + 1] + v
      mx[v % 3 + 1][v % 4 + 1] = math.max(mx[v % 3 + 1][v % 4 + 1], v)
    end
    for r = 1, 3 do for c = 1, 4 do want[r + 3][c] = want[r + 3][c] + mx[r][c] end end
  end
  for r = 1, 6 do for c = 1, 4 do eq(b[1][r][c], want[r][c], "h[" .. r .. "][" .. c .. "]") end end
  ptx_ok(atomic_rows, "void(int64[:, :], float64[:])")
end)

-- ---- print in kernels --------------------------------------------------------------------

local MODDIR, LUA = arg[1], arg[-1]

-- Runs the kernel source in a child process (print writes to the process's
-- output) in simulator mode `mode`; returns its output lines, sorted
-- (threads print in any order, as on the GPU).
local function printed(mode, src, launch, argsrc)
  local script = os.tmpname()
  write_file(script, string.format([[
package.cpath = %q .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local cuda = kjit.cuda
cuda.simulate(%s)
local k = cuda.jit(%s)
k%s(%s)
]], MODDIR, mode, src, launch, argsrc))
  local p = io.popen(string.format("%q %q 2>&1", LUA, script))
  local out = p:read("a")
  p:close()
  os.remove(script)
  local lines = {}
  for l in out:gmatch("[^\n]*\n") do lines[#lines + 1] = l end
  table.sort(lines)
  return table.concat(lines)
end

local PRINTK = [[function(x, y, n)
  local i = cuda.grid(1)
  if i <= #x then
    print("item", i, x[i], y[i], x[i] > 1, nil, "100%", -0.0, 1 / 0, 2 ^ 60, 1e14, 0.1, n, x[i] * 1e15)
  end
end]]

test("print in kernels: the compiled simulator prints as the interpreted one (Lua's print)", function()
  local args = 'kjit.array{0.5, 1, 2.25, 3, -7}, kjit.array({1.5, 2, 3, 4, 5}, "f32"), 42'
  local want = printed('"interpret"', PRINTK, "[{2, 4}]", args)
  local got = printed("true", PRINTK, "[{2, 4}]", args)
  truthy(#want > 0 and select(2, want:gsub("\n", "")) == 5, "five lines printed: " .. want)
  truthy(want:find("item\t3\t2.25\t3.0\ttrue\tnil\t100%\t-0.0\tinf\t1.1529215046068e+18\t1e+14\t0.1\t42\t2.25e+15\n", 1, true),
         "the third line: " .. want)
  eq(got, want)
end)

test("print in kernels compiles to vprintf that ptxas accepts", function()
  local fn = load("local cuda = ...; return " .. PRINTK)(cuda)
  local ptx = ptx_ok(fn, "void(float64[:], float32[:], int64)")
  truthy(ptx:find("vprintf", 1, true), "vprintf")
  -- the format's bytes: "%.14g%s" for a float, "%%" for a percent sign
  truthy(ptx:find("37, 46, 49, 52, 103, 37, 115", 1, true), "a float's format")
  truthy(ptx:find("48, 48, 37, 37, 9", 1, true), "100%% escaped")
  raises("print in a kernel takes numbers, booleans, nil and constant strings", function()
    cuda.jit(function(a) print(a) end):compile("void(float64[:])")
  end)
end)

-- ---- n-D shared and local arrays (issue 25, item 3) ------------------------------------

-- numba-cuda's fast_matmul example (its shared-memory tiling), ported with
-- the index change only: sA = cuda.shared.array(shape=(TPB, TPB)) is
-- cuda.shared.array({TPB, TPB}, "f32") indexed sA[ty][tx]
local TPB = 8
local function fast_matmul(A, B, C)
  local sA = cuda.shared.array({ TPB, TPB }, "f32")
  local sB = cuda.shared.array({ TPB, TPB }, "f32")
  local x, y = cuda.grid(2)
  local tx, ty = cuda.threadIdx.x + 1, cuda.threadIdx.y + 1
  local bpg = cuda.gridDim.x
  local tmp = cuda.float32(0.0)
  for i = 0, bpg - 1 do
    sA[ty][tx] = 0
    sB[ty][tx] = 0
    if y <= A.shape[1] and tx + i * TPB <= A.shape[2] then sA[ty][tx] = A[y][tx + i * TPB] end
    if x <= B.shape[2] and ty + i * TPB <= B.shape[1] then sB[ty][tx] = B[ty + i * TPB][x] end
    cuda.syncthreads()
    for j = 1, TPB do tmp = tmp + sA[ty][j] * sB[j][tx] end
    cuda.syncthreads()
  end
  if y <= C.shape[1] and x <= C.shape[2] then C[y][x] = tmp end
end

test("2-D shared arrays: numba-cuda's fast_matmul in both simulators, against a Lua model", function()
  local n = 20
  local A, B = kjit.zeros({ n, n }, "f32"), kjit.zeros({ n, n }, "f32")
  for i = 1, n do for j = 1, n do A[i][j] = (i * 3 + j) % 7 - 3; B[i][j] = (i + 2 * j) % 5 - 2 end end
  local k = cuda.jit(fast_matmul)
  local bpg = (n + TPB - 1) // TPB
  local got = both("fast_matmul", k, function(kk) return kk[{ { bpg, bpg }, { TPB, TPB } }] end,
                      { A, B, kjit.zeros({ n, n }, "f32") })
  for i = 1, n do
    for j = 1, n do
      local s = 0
      for m = 1, n do s = s + A[i][m] * B[m][j] end   -- small integers: exact in f32
      eq(got[3][i][j], s, "C[" .. i .. "][" .. j .. "]")
    end
  end
  local ptx = ptx_ok(fast_matmul, "void(float32[:, :], float32[:, :], float32[:, :])")
  truthy(ptx:find(".shared", 1, true), "shared memory in the PTX")
end)

local function nd_arrays(out)
  local i = cuda.grid(1)
  local t = cuda.threadIdx.x
  local s = cuda.shared.array({ 2, 3, 4 }, "i32")
  local l = cuda.local_array({ 3, 2 }, "f64")
  s[t // 12 + 1][t // 4 % 3 + 1][t % 4 + 1] = t
  cuda.syncthreads()
  for a = 1, 3 do for b = 1, 2 do l[a][b] = a * 10 + b + t end end
  local r = 23 - t
  out[i] = s[r // 12 + 1][r // 4 % 3 + 1][r % 4 + 1] * 1000 + l[3][2] + #s * 100 + #s[1][1] * 1000000
    + l.size * 100000000
end

test("3-D shared and 2-D local arrays agree in both simulators; PTX for ptxas", function()
  local k = cuda.jit(nd_arrays)
  local got = both("nd arrays", k, function(kk) return kk[{ 1, 24 }] end, { kjit.zeros(24, "i64") })
  eq(got[1][1], 23 * 1000 + 32 + 200 + 4000000 + 600000000)
  ptx_ok(nd_arrays, "void(int64[:])")
  raises("a shape of 1 to 4 constant extents", function()
    cuda.jit(function(out, n) local s = cuda.shared.array({ 2, n }, "f32"); out[1] = s[1][1] end)
      :compile("void(float32[:], int64)")
  end)
  raises("a shape of 1 to 4 constant extents", function()
    cuda.jit(function(out) local s = cuda.local_array({ 2, 0 }, "f32"); out[1] = s[1][1] end)
      :compile("void(float32[:])")
  end)
  raises("above the limit of 49152 bytes", function()
    cuda.jit(function(out) local s = cuda.shared.array({ 128, 128 }, "f64"); out[1] = s[1][1] end)
      :compile("void(float64[:])")
  end)
end)

-- dynamic shared memory: every cuda.shared.array(0, dtype) of a block views
-- the same bytes, whatever its dtype (numba-cuda: they start at the same
-- address), and slices place several arrays in it
local function dynamic_shared(out, n)
  local t = cuda.threadIdx.x + 1
  local a = cuda.shared.array(0, "f32"):slice(1, n)
  local b = cuda.shared.array(0, "f32"):slice(n + 1, 2 * n)
  local d = cuda.shared.array(0, "f64"):slice(n + 1, 2 * n)   -- after a and b
  local c = cuda.shared.array(0, "i32")                     -- aliases a
  a[t] = t * 0.5
  b[t] = t * 2
  d[t] = t / 3
  cuda.syncthreads()
  local o = 4 * (cuda.blockIdx.x * n + t - 1)
  out[o + 1] = a[n - t + 1]
  out[o + 2] = b[n - t + 1]
  out[o + 3] = c[t]
  out[o + 4] = d[n - t + 1]
end

test("dynamic shared arrays of any dtype alias one block of bytes; slices place them", function()
  local n, nb = 16, 2
  local g = both("dynamic shared", cuda.jit(dynamic_shared),
                 function(k) return k[{ nb, n, 0, 2 * n * 4 + n * 8 }] end, { kjit.zeros(4 * n * nb), n })
  for blk = 0, nb - 1 do
    for t = 1, n do
      local o = 4 * (blk * n + t - 1)
      eq(g[1][o + 1], (n - t + 1) * 0.5, "a"); eq(g[1][o + 2], (n - t + 1) * 2.0, "b")
      eq(g[1][o + 3], string.unpack("<i4", string.pack("<f", t * 0.5)) + 0.0, "c: the bits of a[t]")
      eq(g[1][o + 4], (n - t + 1) / 3, "d")
    end
  end
  ptx_ok(dynamic_shared, "void(float64[:], int64)")
end)

-- ---- slices in kernels (issue 25, item 3): a:slice is a view, no allocation ------------

local function slices(a, m, out)
  local i = cuda.grid(1)
  local s = cuda.shared.array(64, "f64")
  s[i] = i
  cuda.syncthreads()
  local v = a:slice(3, 6)          -- numba: a[2:6]
  local w = s:slice(10)            -- s[9:]
  local rows = m:slice(2)          -- rows 2.. of a 2-D array
  local r = m[2]:slice(2, 3)       -- a slice of a row view
  if i <= #v then out[i] = v[i] * 100 + w[i] + #w * 10000 + rows[1][i % 3 + 1] * 1000000 + r[2] end
end

test("a:slice in kernels: views in both simulators, bounds errors alike, PTX for ptxas", function()
  local a = kjit.arange(1, 11, "f64")
  local m = kjit.zeros({ 3, 3 }, "f64")
  for i = 1, 3 do for j = 1, 3 do m[i][j] = i * 10 + j end end
  local k = cuda.jit(slices)
  local got = both("slices", k, function(kk) return kk[{ 1, 64 }] end, { a, m, kjit.zeros(64, "f64") })
  for i = 1, 4 do
    eq(got[3][i], 1.0 * ((i + 2) * 100 + (i + 9) + 55 * 10000 + (20 + i % 3 + 1) * 1000000 + 23), "out[" .. i .. "]")
  end
  eq(got[3][5], 0.0)
  ptx_ok(slices, "void(float64[:], float64[:, :], float64[:])")
  local bad = cuda.jit(function(x, out)
    local i = cuda.grid(1)
    local v = x:slice(5, 20)
    out[i] = v[1]
  end)
  local msgs = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local ok, err = pcall(bad[{ 1, 2 }], a, kjit.zeros(2, "f64"))
    cuda.simulate(prev)
    eq(ok, false)
    msgs[#msgs + 1] = err
  end
  truthy(msgs[1]:find("slice 5..20 out of bounds [1, 10]", 1, true), msgs[1])
  eq(msgs[2], msgs[1])
  raises("a:copy cannot be used in a kernel", function()
    cuda.jit(function(x) local y = x:copy(); y[1] = 0 end):compile("void(float64[:])")
  end)
end)
