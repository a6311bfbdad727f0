-- test_dtype_objects.lua: kjit.i8 ... kjit.f64 and kjit.bool are dtype
-- objects (src/host/dtype.c): accepted wherever a dtype name is, callable as
-- numba's casts (the same as cuda.int8 ... cuda.float64), interpreted and
-- compiled (kjit.jit, and kernels in both simulators) giving the same
-- values, subtypes and errors.
local kjit = require "kjit"
local cuda = kjit.cuda
local both = require("simboth").both

local NAMES = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "bool" }
local CAST = { i8 = "int8", u8 = "uint8", i16 = "int16", u16 = "uint16", i32 = "int32",
  u32 = "uint32", i64 = "int64", u64 = "uint64", f32 = "float32", f64 = "float64" }
local SAMPLES = { 0, 1, -1, 127, 128, 255, 256, 300, -300, 65535, 65536, 2^31, -2^31 - 1,
  0xffffffff, math.maxinteger, math.mininteger, 0.0, -0.0, 0.1, 0.5, -0.5, 3.7, -3.7, 255.9,
  1e10, -1e10, 2^63, -2^63, 1e300, 1/0, -1/0, 0/0, 2^53 + 1.0 }

test("the dtype objects name their dtype (tostring, __name, '..')", function()
  for _, n in ipairs(NAMES) do
    local d = kjit[n]
    eq(type(d), "userdata", n)
    eq(tostring(d), n, n .. " tostring")
    eq("x" .. d, "x" .. n, n .. " concat right")
    eq(d .. "[:]", n .. "[:]", n .. " concat left")
    eq(d .. 1, n .. "1", n .. " concat a number")
    eq(d == n, false, n .. " is not the string")
    eq(kjit.zeros(2, d).dtype, tostring(d), n .. " a.dtype == tostring(kjit." .. n .. ")")
  end
  -- kjit.dtypes stays the list of names
  for i, n in ipairs(NAMES) do eq(kjit.dtypes[i], n, "kjit.dtypes[" .. i .. "]") end
  raises("attempt to perform arithmetic on a f32 value", function() return kjit.f32 + 1 end)
  raises("attempt to concatenate a table value", function() return kjit.f32 .. {} end)
  eq(getmetatable(kjit.f32), false, "the metatable is protected")
end)

test("calling one casts as the cuda cast of its dtype", function()
  eq(kjit.u8(300), 44)
  eq(kjit.i32(2^31), -2147483648)
  eq(kjit.f32(0.1), 0.100000001490116119384765625)
  eq(math.type(kjit.f64(3)), "float")
  eq(kjit.i64(-3.9), -3)
  for n, c in pairs(CAST) do
    for _, x in ipairs(SAMPLES) do
      local a, b = kjit[n](x), cuda[c](x)
      eq(a, b, n .. "(" .. tostring(x) .. ")")
      eq(math.type(a), math.type(b), n .. "(" .. tostring(x) .. ") subtype")
    end
  end
  eq(kjit.i32("12"), 12, "a numeric string, as cuda.int32")
end)

test("casts: compiled agrees with interpreted (values and subtypes)", function()
  for n in pairs(CAST) do
    local fn = load("local kjit = ...; return function(x) return kjit." .. n .. "(x) end")(kjit)
    local jf = kjit.jit(fn)
    for _, x in ipairs(SAMPLES) do
      local a, b = jf(x), fn(x)
      eq(a, b, n .. "(" .. tostring(x) .. ") compiled")
      eq(math.type(a), math.type(b), n .. "(" .. tostring(x) .. ") compiled subtype")
    end
  end
  -- the same built-in as cuda.float32: compiled, the same results
  local fn = function(x) local y = kjit.f32(x); return y * y end
  local fc = function(x) local y = cuda.float32(x); return y * y end
  for _, x in ipairs{ 0.1, 3, 1e20 } do eq(kjit.jit(fn)(x), kjit.jit(fc)(x), "f32 product") end
end)

-- the error of a call with a non-number, located at the call, both ways
local function same_error(fn, want)
  local ok1, e1 = pcall(fn)
  local ok2, e2 = pcall(kjit.jit(fn))
  eq(ok1, false, "interpreted raises"); eq(ok2, false, "compiled raises")
  truthy(e1:find(want, 1, true), "interpreted message: " .. e1)
  truthy(e1:match("^[^:]*test_dtype_objects%.lua:%d+: "), "located at the call: " .. e1)
  eq(e2, e1, "compiled message")
end

test("a cast of a non-number raises Lua's located error", function()
  same_error(function() return kjit.f32(nil) end, "bad argument #1 to 'f32' (number expected, got nil)")
  same_error(function() return kjit.u8(true) end, "bad argument #1 to 'u8' (number expected, got boolean)")
  -- a table: the cast's error, compiled too (a table is a Lua value there,
  -- checked to be a number when the call runs)
  same_error(function() local t = {}; return kjit.i32(t) end, "bad argument #1 to 'i32' (number expected, got table)")
  same_error(function() return kjit.f32("x") end, "bad argument #1 to 'f32' (number expected, got string)")
  raises("bad argument #1 to 'i16' (number expected, got no value)", function() return kjit.i16() end)
end)

test("a cast of a number-or-nil names the dtype object when it is nil", function()
  -- the run-time check of a value that may be nil (seam of dtypes and
  -- luamv): 'u8' as the call names it, not the built-in's 'uint8'
  local fn = function(x) local v = x > 0 and x or nil; return kjit.u8(v) end
  local ff = function(x) local v; if x > 1 then v = x * 0.5 end; return kjit.f32(v) + 1 end
  for _, f in ipairs{ fn, ff } do
    local jf = kjit.jit(f)
    for _, x in ipairs{ 300, 2.5, 0, -7 } do
      local ok1, r1 = pcall(f, x)
      local ok2, r2 = pcall(jf, x)
      eq(ok2, ok1, "raises for " .. x); eq(r2, r1, "result or message for " .. x)
      if ok1 then eq(math.type(r2), math.type(r1), "subtype for " .. x) end
    end
  end
end)

test("casts of values read from tables, of number-or-boolean locals, in closures", function()
  -- (dtype objects meet Lua values: a cast of a value read from a table
  -- was refused; it converts as luaL_checknumber does, strings included,
  -- and raises the cast's own error at the call)
  local T = require "tablediff"
  local VALUES = { 3, 2.5, 0.1, -1.5, 300, 2^40, 1e300, -0.0, 0/0, math.maxinteger, math.mininteger,
    "12", "0x10", "1e3", " 5 ", "9007199254740993", "abc", true, false, {}, kjit.zeros(1) }
  for _, n in ipairs{ "i8", "u8", "i16", "u32", "i64", "u64", "f32", "f64" } do
    local env = { kjit = kjit }
    local fns = {
      load("return function(t) return kjit." .. n .. "(t.x) end", "=casts", "t", env)(),
      load("return function(t) local r = 0; local h = function() r = kjit." .. n .. "(t.x) end; h(); return r end",
           "=casts", "t", env)(),
      load("return function(t) t.y = kjit." .. n .. "(t.x); return t.y end", "=casts", "t", env)(),
    }
    for i = 1, #VALUES do
      for _, f in ipairs(fns) do T.check(f, function() return { x = VALUES[i] } end) end
    end
    local mixed = load("return function(x) local v = x > 0 and x or (x < -5); return kjit." .. n .. "(v) end",
                       "=casts", "t", env)()
    for _, x in ipairs{ 3, 2.5, -7, 0 } do T.check(mixed, function() return x end) end
  end
end)

test("casts of constant strings: compiled converts them as interpreted; kernels refuse", function()
  -- kjit.i32("12") written in the function (a literal, an upvalue): was
  -- refused when compiling; it converts as luaL_checknumber does (to a
  -- float first, so "9007199254740993" is 2^53), and a string that is not
  -- a number raises the cast's own error when the call runs
  local T = require "tablediff"
  local STRINGS = { "12", "300", "-3.9", "0x10", "1e3", " 5 ", "9007199254740993", "1e300",
    "-0", "inf", "nan", "abc", "", "1\0", "1.3", "65519", "70000", "0.1" }
  -- (f16: the seam of the string casts and the half dtype, where the
  -- compiled cast of "1.3" folded to the integer 1)
  for _, n in ipairs{ "i8", "u8", "i16", "u32", "i64", "u64", "f32", "f64", "f16" } do
    for _, str in ipairs(STRINGS) do
      local lit = string.format("%q", str)
      local env = { kjit = kjit, cuda = cuda }
      local lit_fn = load("return function() return kjit." .. n .. "(" .. lit .. ") end",
                          "=casts", "t", env)()
      local up_fn = load("local s = " .. lit .. "; return function(x) return kjit." .. n ..
                         "(s), cuda." .. (CAST[n] or "float16") .. "(s) + x end", "=casts", "t", env)()
      T.check_args(lit_fn)
      T.check_args(up_fn, 1)
    end
  end
  -- the error, located at the call, compiled as interpreted
  same_error(function() return kjit.u8("x1") end, "bad argument #1 to 'u8' (number expected, got string)")
  same_error(function() return cuda.float32("1.5.") end,
             "bad argument #1 to 'float32' (number expected, got string)")
  -- kernels are typed: a string is refused when the kernel compiles, at its line
  local line = debug.getinfo(1, "l").currentline + 2
  local k = cuda.jit(function(x)
    x[1] = cuda.float32("1.5")
  end)
  local ok, err = pcall(k.compile, k, "void(float32[:])")
  eq(ok, false)
  truthy(err:find("test_dtype_objects.lua:" .. line .. ": compile error", 1, true), err)
  truthy(err:find("bad argument #1 to 'cuda.float32' (number expected, got string): a kernel " ..
                  "converts no strings", 1, true), err)
  local k2 = cuda.jit(function(x) x[1] = kjit.i32("12") end)
  raises("bad argument #1 to 'kjit.i32' (number expected, got string)", function()
    k2:compile("void(int32[:])")
  end)
end)

test("a dtype object passed as an argument: compiled for it (refuse3)", function()
  -- (was refused: "argument #1 is the dtype kjit.f32"; test_refuse3.lua has more)
  local f = kjit.jit(function(d, n) return kjit.zeros(n, d).dtype end)
  eq(f.lua(kjit.f32, 2), "f32")   -- interpreted
  eq(f(kjit.f32, 2), "f32")
  eq(f(kjit.bool, 1), "bool")
  local D = kjit.u16   -- an upvalue holding it: read when compiling
  eq(kjit.jit(function(n) return kjit.zeros(n, D).dtype end)(2), "u16")
end)

test("dtype objects as values: tostring, .., ==, stored, returned, captured", function()
  -- (each was a refusal naming kjit.f32 (cuda.float32); more in test_refuse29.lua)
  local T = require "tablediff"
  local fns = {
    function(x) return tostring(kjit.f32) .. x end,
    function(x) local t = { d = kjit.u8 }; return t.d == kjit.u8, t.d == kjit.i8 end,
    function(x) local D = kjit.i16; local h = function(y) return D(y) end; D = kjit.u8; return h(x) end,
  }
  for _, f in ipairs(fns) do
    for _, x in ipairs{ 1, 300, 2.5 } do T.check_args(f, x) end
  end
end)

test("kjit.bool is a dtype, not a cast (both ways)", function()
  same_error(function() return kjit.bool(1) end, "kjit.bool is a dtype, not a cast")
  eq(kjit.zeros(2, kjit.bool)[1], false)
end)

test("every constructor takes a dtype object (interpreted)", function()
  local prev = cuda.simulate(true)   -- device arrays without a GPU
  for _, n in ipairs(NAMES) do
    local d = kjit[n]
    eq(kjit.zeros({ 2, 2 }, d).dtype, n, "zeros " .. n)
    eq(kjit.empty(3, d).dtype, n, "empty " .. n)
    eq(kjit.full(3, n == "bool" and true or 1, d).dtype, n, "full " .. n)
    eq(kjit.array(n == "bool" and { true } or { 1, 2 }, d).dtype, n, "array " .. n)
    eq(kjit.zeros(2):copy(d) and true, true)
    if n ~= "bool" then
      eq(kjit.arange(3, d).dtype, n, "arange " .. n)
      eq(kjit.linspace(0, 2, 3, d).dtype, n ~= "bool" and n, "linspace " .. n)
    end
    eq(cuda.device_array(3, d).dtype, n, "device_array " .. n)
    eq(cuda.pinned_array({ 2 }, d).dtype, n, "pinned_array " .. n)
    eq(cuda.mapped_array(2, d).dtype, n, "mapped_array " .. n)
    eq(cuda.managed_array(2, d).dtype, n, "managed_array " .. n)
  end
  local P = kjit.struct{ { "x", kjit.f32 }, { "n", kjit.i32, 2 } }
  local a = kjit.zeros(2, P)
  a[1].x = 0.1; a[1].n[2] = 2^31
  eq(a[1].x, kjit.f32(0.1), "struct field f32"); eq(a[1].n[2], -2147483648, "struct field i32")
  eq(P == kjit.struct{ { "x", "f32" }, { "n", "i32", 2 } }, true, "the same layout as with names")
  local d = cuda.to_device(kjit.arange(6, kjit.f32))
  local w = cuda.from_device_ptr(d:device_ptr(), { 2, 3 }, kjit.f32, { owner = d })
  eq(w.dtype, "f32", "from_device_ptr")
  cuda.simulate(prev)
  raises("unknown dtype 'f33'", function() kjit.zeros(2, "f33") end)
end)

test("compiled code takes dtype objects as constant dtypes", function()
  local function mk(n)
    local a = kjit.zeros(n, kjit.u16)
    local b = kjit.full(n, 0.1, kjit.f32)
    local c = kjit.empty(n, kjit.i8)
    local r = kjit.arange(n, kjit.i32)
    local z = kjit.zeros({ n, 2 }, kjit.bool)
    for i = 1, n do a[i] = 70000 + i; c[i] = 300 end
    return a[1], b[2], c[1], r[n], a.dtype, b.dtype, z.dtype, z[1][1]
  end
  local jmk = kjit.jit(mk)
  local g, w = { jmk(3) }, { mk(3) }
  for i = 1, 8 do eq(g[i], w[i], "value " .. i); eq(math.type(g[i]), math.type(w[i]), "subtype " .. i) end
  local P = kjit.struct{ { "x", kjit.f64 } }
  local mkrec = function(n) local r = kjit.zeros(n, P); r[n].x = 2.5; return r[n].x end
  eq(kjit.jit(mkrec)(4), mkrec(4), "a struct made with a dtype object")
end)

-- kernels: the casts and shared/local arrays by dtype object, both simulators
local function castkernel(out, x)
  local i = cuda.grid(1)
  local s = cuda.shared.array(32, kjit.f32)
  local l = cuda.local_array({ 2, 2 }, kjit.i16)
  if i <= #x then
    local v = x[i]
    s[cuda.threadIdx.x + 1] = v
    l[1][2] = kjit.i32(v)
    local k = (i - 1) * 8
    out[k + 1] = kjit.i8(v); out[k + 2] = kjit.u8(v); out[k + 3] = kjit.u16(v)
    out[k + 4] = kjit.i32(v); out[k + 5] = kjit.u64(v); out[k + 6] = kjit.f32(v)
    out[k + 7] = s[cuda.threadIdx.x + 1]; out[k + 8] = l[1][2]
  end
end

test("casts and shared/local arrays by dtype object in kernels: both simulators agree", function()
  local x = kjit.array{ 0.5, -0.75, 3.7, -3.7, 255.9, 300, 0.1, 7.0, -300.25, 1e5 }
  local out = kjit.zeros(8 * #x, "f64")
  local g = both("castkernel", cuda.jit(castkernel), function(k) return k[{ 1, 32 }] end, { out, x })
  eq(g[1][2], 0.0, "u8(0.5)"); eq(g[1][6 * 8 + 6], kjit.f32(0.1), "f32(0.1)")
  eq(g[1][5 * 8 + 2], 44.0, "u8(300)"); eq(g[1][9 * 8 + 8], kjit.i16(1e5) + 0.0, "i16 local store wraps")
end)

-- numba's float32 is a type and a cast: `from numba import int32` ported as
-- `local int32 = cuda.int32` names the dtype too (numba-cuda's reduction
-- example: cuda.shared.array(nelem, int32))
local function numbacast(out, x)
  local i = cuda.grid(1)
  local s = cuda.shared.array(32, cuda.int32)
  local l = cuda.local_array({ 2, 2 }, cuda.float32)
  if i <= #x then
    s[cuda.threadIdx.x + 1] = x[i]   -- an i32 element: wraps
    l[2][1] = x[i] / 10              -- an f32 element: rounds
    out[2 * i - 1] = s[cuda.threadIdx.x + 1]
    out[2 * i] = l[2][1]
  end
end

test("numba's casts name their dtype too: cuda.int32 as a dtype, in kernels and on the host", function()
  local x = kjit.array{ 3, 2^31 + 3, -2^31 - 2, 1, 1e10 }
  local g = both("numbacast", cuda.jit(numbacast), function(k) return k[{ 1, 32 }] end,
                 { kjit.zeros(2 * #x), x })
  for i = 1, #x do
    eq(g[1][2 * i - 1], kjit.i32(kjit.i64(x[i])) + 0.0, "i32 element " .. i)
    eq(g[1][2 * i], kjit.f32(x[i] / 10), "f32 element " .. i)
  end
  local names = { int8 = "i8", uint8 = "u8", int16 = "i16", uint16 = "u16", int32 = "i32",
                  uint32 = "u32", int64 = "i64", uint64 = "u64", float32 = "f32", float64 = "f64" }
  for c, d in pairs(names) do
    eq(kjit.zeros(2, cuda[c]).dtype, d, "kjit.zeros(2, cuda." .. c .. ")")
    eq(kjit.jit(function() return kjit.zeros(2, cuda[c]).dtype end)(), d, "compiled, cuda." .. c)
  end
  -- still casts, named as called
  eq(cuda.int32(2^31), -2147483648)
  raises("bad argument #1 to 'int32' (number expected, got nil)", function() return cuda.int32(nil) end)
  raises("bad argument #2 to 'zeros' (dtype string expected, got function)",
         function() return kjit.zeros(2, math.floor) end)
end)

test("reduce's r:kernel takes a dtype object", function()
  local ok, reduce = pcall(function() return cuda.reduce(function(a, b) return a + b end) end)
  if not ok then skip("cuda.reduce: " .. tostring(reduce)) end
  eq(reduce:kernel(kjit.f32), reduce:kernel("f32"), "the same kernel")
end)
