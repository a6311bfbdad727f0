-- test_f16.lua: the f16 dtype (IEEE binary16) and cuda.fp16.
-- A plain-Lua model of rounding to half (nearest, ties to even;
-- subnormals, overflow to inf, NaN) checks the interpreter's arrays and
-- kjit.f16 casts; compiled CPU code is checked against the interpreter
-- bit for bit (D.check); kernels run in both simulators against the model;
-- their PTX goes through ptxas for sm_75, sm_80 and sm_90. tests.cmake runs
-- this file twice: as is, and with KJIT_TEST_NO_F16C=1 (compiled code
-- then converts through runtime/halfrt.c's routines, not F16C).
local D = require "difftest"
local kjit = require "kjit"
local cuda = kjit.cuda
local ptxas = require "ptxas"

---------------------------------------------------------------------------
-- the model
---------------------------------------------------------------------------

local INF = math.huge

-- x rounded to the nearest half, ties to even, as a Lua float.
local function R(x)
  if math.type(x) == "integer" then x = x + 0.0 end
  if x ~= x then return x end
  local ax = math.abs(x)
  if ax == INF then return x end
  if ax == 0 then return x end
  -- the exponent of ax: 2^e <= ax < 2^(e+1)
  local e = math.floor(math.log(ax, 2))
  while 2.0 ^ e > ax do e = e - 1 end
  while 2.0 ^ (e + 1) <= ax do e = e + 1 end
  if e < -14 then e = -14 end        -- subnormals: a fixed quantum 2^-24
  local q = 2.0 ^ (e - 10)
  local r = ax / q                    -- exact: a power of two
  local f = math.floor(r)
  local d = r - f
  if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
  local v = f * q
  if v >= 65520 then v = INF end      -- past 65504 + half an ulp: the encoding's inf
  if v > 65504 then v = INF end
  return x < 0 and -v or v
end

-- CUDA's __hmax / __hmin: a NaN gives the other operand, +0 > -0
local function mm(x, y, max)
  if x ~= x and y ~= y then return 0 / 0 end
  if x ~= x then return y end
  if y ~= y then return x end
  if x == y and x == 0 then
    if max then return (1 / x > 0 or 1 / y > 0) and 0.0 or -0.0 end
    return (1 / x < 0 or 1 / y < 0) and -0.0 or 0.0
  end
  if max then return x > y and x or y end
  return x < y and x or y
end

-- the same value, subtype and sign (NaN matches NaN)
local function same(a, b, what)
  if a ~= a and b ~= b then return end
  eq(math.type(a), math.type(b), what .. " subtype")
  eq(a, b, what)
  if a == 0 then eq(1 / a, 1 / b, what .. " sign of zero") end
end

-- values that exercise every rounding case
local VALUES = { 0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 2 / 3, 65504, 65519.99, 65520, -65520, 1e6,
  2 ^ -14, 2 ^ -24, 2 ^ -25, 2 ^ -25 * 1.0000001, 2 ^ -26, 3 * 2 ^ -25, 2 ^ -24 * 1.5,
  1 + 2 ^ -11, 1 + 3 * 2 ^ -11, 1 + 2 ^ -11 + 2 ^ -40, 2049, 2051, 4097, 0.3, -7.77, 1e-5,
  6.1e-5, 6.09e-5, INF, -INF, 3, -5, 2 ^ 53 + 1, 12345, 0.5 + 2 ^ -12 }
do
  local seed = 12345
  local function rnd() seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 end
  for _ = 1, 400 do
    local e = math.floor(rnd() * 44) - 28
    VALUES[#VALUES + 1] = (rnd() < 0.5 and -1 or 1) * (1 + rnd()) * 2.0 ^ e
  end
end

test("the model's own cases", function()
  eq(R(0.1), 0.0999755859375); eq(R(65504), 65504.0); eq(R(65519.99), 65504.0)
  eq(R(65520), INF); eq(R(2 ^ -25), 0.0); eq(R(2 ^ -25 * 1.0000001), 2 ^ -24)
  eq(R(3 * 2 ^ -25), 2 ^ -23); eq(R(1 + 2 ^ -11), 1.0); eq(R(1 + 3 * 2 ^ -11), 1 + 2 ^ -9)
  eq(R(2049), 2048.0); eq(R(2051), 2052.0)
end)

---------------------------------------------------------------------------
-- the interpreter's arrays and kjit.f16
---------------------------------------------------------------------------

test("f16 is a dtype: name, size, lists", function()
  eq(kjit.dtypes[12], "f16")
  eq(tostring(kjit.f16), "f16")
  local a = kjit.zeros(3, "f16")
  eq(a.dtype, "f16"); eq(#a, 3); eq(a[1], 0.0)
  eq(kjit.zeros(2, kjit.f16).dtype, "f16")
  eq(tostring(kjit.array({0.1, 65504, 1 / 0, 2 ^ -24}, "f16")),
     "kjit.array(f16, {4}) [0.1, 65504.0, inf, 6e-08]")
end)

test("kjit.f16 and stores round to nearest even, reads are exact", function()
  local a = kjit.zeros(#VALUES, "f16")
  for i, x in ipairs(VALUES) do
    same(kjit.f16(x), R(x), "kjit.f16(" .. x .. ")")
    a[i] = x
  end
  for i, x in ipairs(VALUES) do same(a[i], R(x), "a[i] = " .. x) end
  local n = kjit.f16(0 / 0)
  truthy(n ~= n, "NaN stays NaN")
  same(kjit.f16(3), 3.0, "an integer gives a float")
  same(cuda.float16(0.1), R(0.1), "cuda.float16")
end)

test("conversions, copies, views and fills", function()
  local src = kjit.array(VALUES, "f64")
  local h = kjit.array(src, "f16")
  for i, x in ipairs(VALUES) do same(h[i], R(x), "f64 -> f16 [" .. i .. "]") end
  local back = kjit.array(h, "f64")
  for i = 1, #VALUES do same(back[i], h[i], "f16 -> f64") end
  local f = kjit.array(h, "f32")
  for i = 1, #VALUES do same(f[i], h[i], "f16 -> f32 (exact)") end
  local c = h:copy()
  for i = 1, #VALUES do same(c[i], h[i], "copy") end
  local s = h:slice(2, 4)
  eq(#s, 3); same(s[1], h[2], "slice"); s[1] = 1 / 3; same(h[2], R(1 / 3), "a slice is a view")
  local z = kjit.full(5, 0.1, "f16")
  same(z[5], R(0.1), "full")
  z:fill(65519.99); same(z[1], 65504.0, "fill")
  local m = kjit.zeros({2, 3}, "f16")
  m[2][3] = 2 / 3; same(m[2][3], R(2 / 3), "2-D")
  same(kjit.arange(3, "f16")[3], 2.0, "arange")
  same(kjit.linspace(0, 1, 4, "f16")[2], R(1 / 3), "linspace")
end)

test("f16 stores refuse non-numbers", function()
  local a = kjit.zeros(2, "f16")
  raises("number expected, got string", function() a[1] = "x" end)
  raises("number expected, got boolean", function() a[1] = true end)
  raises("bad argument #1 to 'f16' (number expected, got table)", function() return kjit.f16({}) end)
  raises("number expected", function() return cuda.fp16.hadd({}, 1) end)
end)

test("device arrays of f16 (simulator) and the array interface", function()
  local prev = cuda.simulate(true)
  local h = kjit.array({0.1, 2, 3}, "f16")
  local d = cuda.to_device(h)
  eq(d.dtype, "f16")
  eq(d:cuda_array_interface().typestr, "<f2")
  local back = d:copy_to_host()
  for i = 1, 3 do same(back[i], h[i], "round trip") end
  cuda.simulate(prev)
end)

---------------------------------------------------------------------------
-- compiled code against the interpreter (D.check: bit for bit)
---------------------------------------------------------------------------

local function filled(vals, dt)
  local a = kjit.zeros(#vals, dt or "f16")
  for i, x in ipairs(vals) do a[i] = x end
  return a
end

test("compiled reads and stores match the interpreter", function()
  local x = filled(VALUES)
  local function axpy(x, y, f64s)
    for i = 1, #x do
      y[i] = x[i] * 3 + 0.1          -- f64 arithmetic, one rounding at the store
      f64s[i] = x[i]                 -- exact widening
    end
    return x[1], x[2] + 0
  end
  D.check(axpy, x, kjit.zeros(#VALUES, "f16"), kjit.zeros(#VALUES, "f64"))
  -- every source kind: integers, f32 values, f64 values, mixed
  local function kinds(out, f, n)
    for i = 1, n do
      out[4 * i - 3] = i * 4099               -- integer
      out[4 * i - 2] = f[i]                   -- f32 element (exact in f64)
      out[4 * i - 1] = f[i] / 3               -- f32 arithmetic
      out[4 * i] = kjit.f16(f[i] * 1.001)     -- a cast, stored
    end
  end
  local f = filled(VALUES, "f32")
  D.check(kinds, kjit.zeros(4 * #VALUES, "f16"), f, #VALUES)
  local function sum(x) local s = 0.0 for i = 1, #x do s = s + x[i] end return s end
  D.check(sum, filled({0.1, 0.2, 0.3, 1e4, -1e4}))
  local function errs(a, v) a[1] = v end
  D.check_error("number expected, got string", errs, kjit.zeros(1, "f16"), "x")
  D.check_error("number expected, got boolean", errs, kjit.zeros(1, "f16"), true)
end)

test("the conversions compiled: F16C, or our routines without it", function()
  local f = kjit.jit(function(x, y) for i = 1, #x do y[i] = x[i] * 3 + 0.1 end end)
  f(kjit.zeros(4, "f16"), kjit.zeros(4, "f16"))
  local asm = f:inspect("asm")
  truthy(not asm:find("__truncdfhf2", 1, true), "f64 -> f16 inline (cg_half.c), not LLVM's call")
  if os.getenv("KJIT_TEST_NO_F16C") then
    truthy(not asm:find("vcvtph2ps", 1, true), "no F16C instruction")
    truthy(asm:find("__gnu_h2f_ieee", 1, true) or asm:find("__extendhf", 1, true), "the widening routine")
  end
end)

test("compiled kjit.f16 and cuda.fp16 match the interpreter and the model", function()
  local fp = cuda.fp16
  local function ops1(a, b, c)   -- (compiled functions return at most 16 values)
    return fp.hadd(a, b), fp.hsub(a, b), fp.hmul(a, b), fp.hdiv(a, b), fp.hneg(a), fp.habs(a),
           fp.hfma(a, b, c), fp.hsqrt(a), fp.hmax(a, b), fp.hmin(a, b)
  end
  local function ops2(a, b)
    return fp.heq(a, b), fp.hne(a, b), fp.hgt(a, b), fp.hge(a, b), fp.hlt(a, b), fp.hle(a, b),
           kjit.f16(a), cuda.float16(b)
  end
  local function model(a, b, c)
    a, b, c = R(a), R(b), R(c)
    return R(a + b), R(a - b), R(a * b), R(a / b), -a, math.abs(a), R(a * b + c),
           R(math.sqrt(a)), mm(a, b, true), mm(a, b, false),
           a == b, a < b or a > b, a > b, a >= b, a < b, a <= b, a, b
  end
  local picks = { 0.1, 1 / 3, -2.5, 65504, 2 ^ -24, 3 * 2 ^ -25, 1e5, 0.0, -0.0, 7, 1 + 2 ^ -11,
                  0 / 0, INF, -INF, 2 ^ -14, 1000.3, -0.75 }
  for i, a in ipairs(picks) do
    for j = 1, #picks, 3 do
      local b, c = picks[(i + j) % #picks + 1], picks[j]
      local got = { D.check(ops1, a, b, c) }
      for _, v in ipairs({ D.check(ops2, a, b) }) do got[#got + 1] = v end
      local want = { model(a, b, c) }
      for k = 1, #want do
        if type(want[k]) == "boolean" then eq(got[k], want[k], "op " .. k .. " of " .. a .. ", " .. b)
        else same(got[k], want[k], "op " .. k .. " of " .. a .. ", " .. b .. ", " .. c) end
      end
    end
  end
  -- exp, log, sin, cos: f32 routines rounded to half: the interpreter
  -- and compiled code agree exactly; the model within one half ulp
  local function tr(a)
    return fp.hexp(a), fp.hlog(a), fp.hsin(a), fp.hcos(a), fp.hexp2(a), fp.hexp10(a), fp.hlog2(a),
           fp.hlog10(a), fp.hrsqrt(a)
  end
  for _, a in ipairs({ 0.1, 0.5, 1, 2.5, 3, 7.25, 10, 0.001 }) do
    local got = { D.check(tr, a) }
    local h = R(a)
    local want = { math.exp(h), math.log(h), math.sin(h), math.cos(h), 2 ^ h, 10 ^ h, math.log(h, 2),
                   math.log(h, 10), 1 / math.sqrt(h) }
    for k = 1, #want do
      local w = R(want[k])
      -- at most one half ulp away: 2^-10 relative (2^-24 absolute for subnormals)
      truthy(got[k] == w or math.abs(got[k] - w) <= 2 ^ -10 * math.abs(w) + 2 ^ -24,
             "transcendental " .. k .. " of " .. a .. ": got " .. got[k] .. ", want " .. w)
      eq(R(got[k]), got[k], "a half")
    end
  end
end)

test("cuda.fp16 rounding functions and the reciprocal, exact", function()
  local fp = cuda.fp16
  local function rf(a) return fp.hceil(a), fp.hfloor(a), fp.hrint(a), fp.htrunc(a), fp.hrcp(a) end
  local function rint(x)   -- nearest integer, ties to even
    if x ~= x or math.abs(x) == INF then return x end
    local f = math.floor(x)
    local d = x - f
    if d > 0.5 or (d == 0.5 and f % 2 == 1) then f = f + 1 end
    return f
  end
  local function signed(r, x)   -- C's zero keeps the argument's sign
    r = r + 0.0
    if r == 0 then return (x < 0 or 1 / x < 0) and -0.0 or 0.0 end
    return r
  end
  for _, a in ipairs({ 0.3, -0.3, 2.5, 3.5, -2.5, 1000.7, -0.0, 65504, 0.5, -1.5, 1 / 3, INF, 0 / 0,
                       2 ^ -24, 7 }) do
    local h = R(a)
    local got = { D.check(rf, a) }
    local want = { signed(math.ceil(h), h), signed(math.floor(h), h), signed(rint(h), h),
                   signed(h < 0 and math.ceil(h) or math.floor(h), h), R(1 / h) }
    for k = 1, #want do same(got[k], want[k], "rounding op " .. k .. " of " .. a) end
  end
end)

test("records with f16 fields, compiled and interpreted", function()
  local P = kjit.struct{ {"h", "f16"}, {"w", "f32"}, {"v", "f16", 2} }
  eq(P.size, 12); eq(P.offset.w, 4); eq(P.offset.v, 8)
  local a = kjit.zeros(3, P)
  for i = 1, 3 do a[i].h = VALUES[i + 5]; a[i].v[2] = VALUES[i + 20] end
  for i = 1, 3 do same(a[i].h, R(VALUES[i + 5]), "field store") end
  local function f(a)
    for i = 1, #a do a[i].v[1] = a[i].h * 7 + a[i].v[2] end
    return a[1].v[1]
  end
  D.check(f, a)
end)

test("vectorize and cuda.reduce over f16 arrays", function()
  local xs = { 0.1, 0.2, 0.3, 1000.3, -7.5, 65504, 2 ^ -24 }
  local x = filled(xs)
  local v = kjit.vectorize(function(a, b) return a * b + 0.1 end, "f16(f16, f16)")
  local r = v(x, x)
  eq(r.dtype, "f16")
  for i, a in ipairs(xs) do same(r[i], R(R(a) * R(a) + 0.1), "vectorize [" .. i .. "]") end
  local r2 = v(x, 2.5)
  for i, a in ipairs(xs) do same(r2[i], R(R(a) * 2.5 + 0.1), "vectorize, a scalar [" .. i .. "]") end
  local s = 0.0
  for i = 1, #xs do s = s + R(xs[i]) end
  local prev = cuda.simulate(true)
  local red = cuda.reduce(function(a, b) return a + b end)
  same(red(x), s, "reduce (f64 accumulator)")
  same(red(cuda.to_device(x)), s, "reduce on the device array")
  cuda.simulate(prev)
end)

test("export and load of an f16 function", function()
  local f = kjit.jit(function(x, y) for i = 1, #x do y[i] = x[i] / 3 end end)
  local g = kjit.load(f:export("(f16[:], f16[:])"))
  local x, y = filled(VALUES), kjit.zeros(#VALUES, "f16")
  g(x, y)
  for i = 1, #VALUES do same(y[i], R(x[i] / 3), "loaded [" .. i .. "]") end
end)

---------------------------------------------------------------------------
-- kernels: both simulators against the model; PTX through ptxas
---------------------------------------------------------------------------

local function kfp16(x, y, out, flags)
  local i = cuda.grid(1)
  local n = #x
  if i <= n then
    local s = cuda.shared.array(64, "f16")
    local l = cuda.local_array(2, kjit.f16)
    local t = cuda.threadIdx.x + 1
    s[t] = x[i]
    l[1] = y[i]
    cuda.syncthreads()
    local a, b = s[t], l[1]
    out[i] = cuda.fp16.hadd(a, b)
    out[n + i] = cuda.fp16.hmul(a, b)
    out[2 * n + i] = cuda.fp16.hfma(a, b, cuda.float16(0.1))
    out[3 * n + i] = cuda.fp16.hdiv(a, b)
    out[4 * n + i] = cuda.fp16.hsqrt(cuda.fp16.habs(a))
    out[5 * n + i] = cuda.fp16.hmax(cuda.fp16.hneg(a), cuda.fp16.hsub(b, a))
    out[6 * n + i] = a * 0.3 + b      -- f64 arithmetic, rounded at the store
    flags[i] = cuda.fp16.hlt(a, b)
  end
end
local KSIG = "void(f16[:], float16[:], f16[:], bool[:])"

local function kmodel(xs, ys)
  local n, out, fl = #xs, {}, {}
  for i = 1, n do
    local a, b = R(xs[i]), R(ys[i])
    out[i] = R(a + b); out[n + i] = R(a * b); out[2 * n + i] = R(a * b + R(0.1))
    out[3 * n + i] = R(a / b); out[4 * n + i] = R(math.sqrt(math.abs(a)))
    local p, q = -a, R(b - a)
    out[5 * n + i] = mm(p, q, true)
    out[6 * n + i] = R(a * 0.3 + b)
    fl[i] = a < b
  end
  return out, fl
end

for _, mode in ipairs({ "compiled", "interpret" }) do
  test("kernels with f16 arrays and cuda.fp16, simulator " .. mode, function()
    local prev = cuda.simulate(mode == "interpret" and "interpret" or true)
    local k = cuda.jit(kfp16, KSIG)
    local xs, ys = {}, {}
    for i = 1, 50 do xs[i] = VALUES[i + 3]; ys[i] = VALUES[#VALUES - i] end
    xs[7], ys[7] = 0.0, -0.0
    local n = #xs
    local dx, dy = cuda.to_device(filled(xs)), cuda.to_device(filled(ys))
    local dout, dfl = cuda.device_array(7 * n, "f16"), cuda.device_array(n, "bool")
    k[{2, 32}](dx, dy, dout, dfl)
    local out, fl = dout:copy_to_host(), dfl:copy_to_host()
    local wout, wfl = kmodel(xs, ys)
    for i = 1, 7 * n do same(out[i], wout[i], mode .. " out[" .. i .. "]") end
    for i = 1, n do eq(fl[i], wfl[i], mode .. " flags[" .. i .. "]") end
    cuda.simulate(prev)
  end)
end

test("kernel errors: f16 scalars, atomics", function()
  local prev = cuda.simulate(true)
  raises("f16 is an array dtype only", cuda.jit, function(x) end, "void(f16)")
  raises("atomics work on i32, u32, i64, u64, f32 and f64 arrays, not f16", cuda.jit,
         function(a) cuda.atomic.add(a, 1, 1) end, "void(f16[:])")
  cuda.simulate(prev)
end)

test("f16 kernels through ptxas: sm_75, sm_80, sm_90", function()
  for _, sm in ipairs({ 75, 80, 90 }) do
    local ptx = cuda.compile_ptx(kfp16, KSIG, sm)
    truthy(ptx:find("ld.global.b16", 1, true) or ptx:find("ld.global.u16", 1, true), "16-bit loads")
    truthy(ptx:find("fma.rn.f16", 1, true), "half fma")
    ptxas.check(ptx, "kfp16", sm)
  end
  local function tr(x)
    local i, fp = cuda.grid(1), cuda.fp16
    local v = x[i]
    x[i] = fp.hexp(v) + fp.hsin(v) + fp.hcos(v) + fp.hlog(v) + fp.hexp2(v) + fp.hexp10(v)
           + fp.hlog2(v) + fp.hlog10(v) + fp.hrcp(v) + fp.hrsqrt(v) + fp.hceil(v) + fp.hfloor(v)
           + fp.hrint(v) + fp.htrunc(v)
  end
  for _, sm in ipairs({ 75, 90 }) do
    ptxas.check(cuda.compile_ptx(tr, "void(f16[:])", sm), "transcendental", sm)
  end
  local prev = cuda.simulate(true)
  local k = cuda.jit(tr, "void(f16[:])")
  local d = cuda.to_device(kjit.array({ 0.5, 2.25 }, "f16"))
  k[{1, 2}](d)
  local h = d:copy_to_host()
  cuda.simulate("interpret")
  local k2 = cuda.jit(tr, "void(f16[:])")
  local d2 = cuda.to_device(kjit.array({ 0.5, 2.25 }, "f16"))
  k2[{1, 2}](d2)
  local h2 = d2:copy_to_host()
  for i = 1, 2 do same(h[i], h2[i], "both simulators") end
  cuda.simulate(prev)
end)
