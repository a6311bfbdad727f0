local kjit = require "kjit"

-- test_buffer.lua: typed buffers (kjit.array), DESIGN.md section 2.

local NUMERIC = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64" }
local ALL = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "bool", "f16" }   -- (bool: test_bool.lua)
local INTS = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64" }

local function f32(x) return (string.unpack("f", string.pack("f", x))) end

-- Compares a (nested) Lua table with exact values and subtypes.
local function same_table(got, want, what)
  what = what or "table"
  eq(type(got), "table", what .. " type")
  eq(#got, #want, what .. " length")
  for i = 1, #want do
    if type(want[i]) == "table" then same_table(got[i], want[i], what .. "[" .. i .. "]")
    else eq(got[i], want[i], what .. "[" .. i .. "]") end
  end
end

----------------------------------------------------------------------
-- dtypes and module fields
----------------------------------------------------------------------

test("dtype objects print as their names (test_dtype_objects.lua)", function()
  for _, t in ipairs(ALL) do
    eq(tostring(kjit[t]), t, "kjit." .. t)
    eq(kjit[t] == t, false, "kjit." .. t .. " is not the string")
  end
end)

test("kjit.dtypes lists every dtype in order", function()
  same_table(kjit.dtypes, ALL, "kjit.dtypes")
end)

test("every dtype constructs and reports its dtype", function()
  for _, t in ipairs(NUMERIC) do
    local a = kjit.zeros(3, t)
    eq(a.dtype, t, "dtype")
    eq(a[1], t:sub(1, 1) == "f" and 0.0 or 0, t .. " zero")
  end
end)

test("kjit.isarray", function()
  eq(kjit.isarray(kjit.zeros(1)), true, "array")
  eq(kjit.isarray({}), false, "table")
  eq(kjit.isarray(1), false, "number")
  eq(kjit.isarray(nil), false, "nil")
  eq(kjit.isarray(io.stdout), false, "other userdata")
end)

----------------------------------------------------------------------
-- constructors
----------------------------------------------------------------------

test("zeros: default f64, integer shape", function()
  local a = kjit.zeros(5)
  eq(a.dtype, "f64", "dtype"); eq(#a, 5, "#a"); eq(a.ndim, 1, "ndim"); eq(a.size, 5, "size")
  for i = 1, 5 do eq(a[i], 0.0, "a[i]") end
end)

test("zeros: table shapes of 1 to 4 dims", function()
  same_table(kjit.zeros({7}).shape, {7})
  same_table(kjit.zeros({2, 3}).shape, {2, 3})
  same_table(kjit.zeros({2, 3, 4}).shape, {2, 3, 4})
  local a = kjit.zeros({2, 3, 4, 5}, "i32")
  same_table(a.shape, {2, 3, 4, 5}); eq(a.ndim, 4, "ndim"); eq(a.size, 120, "size")
  eq(a[2][3][4][5], 0, "last element")
end)

test("zeros: float extents with integer values are accepted", function()
  same_table(kjit.zeros(3.0).shape, {3})
  same_table(kjit.zeros({2.0, 2}).shape, {2, 2})
end)

test("empty: right shape, readable", function()
  local a = kjit.empty({3, 2}, "u16")
  same_table(a.shape, {3, 2}); eq(a.dtype, "u16", "dtype")
  for i = 1, 3 do for j = 1, 2 do eq(math.type(a[i][j]), "integer", "readable") end end
end)

test("full: value converted to dtype", function()
  local a = kjit.full(4, 2.5)
  for i = 1, 4 do eq(a[i], 2.5, "f64") end
  local b = kjit.full({2, 2}, 7, "i8")
  eq(b[2][2], 7, "i8"); eq(b.size, 4, "size")
  local c = kjit.full(3, 300, "u8")
  eq(c[3], 44, "wrap in full")
  local d = kjit.full(5, 1, "f32")
  eq(d[5], 1.0, "int into f32")
end)

test("full: value is checked even for size 0", function()
  raises("number has no integer representation", kjit.full, 0, 1.5, "i32")
  raises("number expected, got string", kjit.full, 3, "1")
  raises("number expected, got no value", kjit.full, 3)
end)

test("array: flat table, default f64 even for integers", function()
  local a = kjit.array({1, 2, 3})
  eq(a.dtype, "f64", "dtype"); eq(a[1], 1.0, "float"); eq(a[3], 3.0, "a[3]")
  eq(tostring(a), "kjit.array(f64, {3}) [1.0, 2.0, 3.0]", "tostring")
end)

test("array: nested 2-D, 3-D and 4-D tables", function()
  local a = kjit.array({{1, 2, 3}, {4, 5, 6}}, "i32")
  same_table(a.shape, {2, 3}); eq(a[2][1], 4, "a[2][1]"); eq(a[1][3], 3, "a[1][3]")
  local b = kjit.array({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})
  same_table(b.shape, {2, 2, 2}); eq(b[2][1][2], 6.0, "b[2][1][2]")
  local c = kjit.array({{{{1}, {2}}}}, "u8")
  same_table(c.shape, {1, 1, 2, 1}); eq(c[1][1][2][1], 2, "4-D")
end)

test("array: empty tables give zero-size dims", function()
  local a = kjit.array({})
  same_table(a.shape, {0}); eq(#a, 0, "#a"); eq(a.size, 0, "size")
  local b = kjit.array({{}, {}})
  same_table(b.shape, {2, 0}); eq(b.size, 0, "size")
end)

test("array: copies a kjit array (no sharing), with optional dtype", function()
  local a = kjit.array({1.5, 2.5, 3})
  local b = kjit.array(a)
  eq(b.dtype, "f64", "dtype kept"); b[1] = 9; eq(a[1], 1.5, "not shared")
  local c = kjit.array(kjit.array({1, 2, 300}), "u8")
  eq(c.dtype, "u8", "dtype"); eq(c[3], 44, "converted with wrap")
  raises("number has no integer representation", kjit.array, a, "i32")
  local d = kjit.array(kjit.array({{1, 2}, {3, 4}}, "i16"), "f32")
  eq(d[2][2], 4.0, "2-D convert")
end)

test("array: nested table of kjit arrays", function()
  local r1, r2 = kjit.array({1, 2}), kjit.array({3, 4}, "i32")
  local a = kjit.array({r1, r2}, "i64")
  same_table(a.shape, {2, 2}); eq(a[2][1], 3, "a[2][1]")
  raises("ragged", kjit.array, {r1, kjit.array({1, 2, 3})})
end)

test("array: non-numbers, ragged tables and depth errors", function()
  raises("number expected, got string at [2]", kjit.array, {1, "2", 3})
  raises("number expected, got boolean at [1][2]", kjit.array, {{1, true}})
  raises("ragged nested table ([2] has 1 elements, expected 2)", kjit.array, {{1, 2}, {3}})
  raises("ragged nested table (number at [2] where a table of length 2", kjit.array, {{1, 2}, 3})
  raises("ragged nested table (table at [2] where a number", kjit.array, {1, {2}})
  raises("too many dimensions", kjit.array, {{{{{1}}}}})
  raises("number expected, got nil at [2]", kjit.array, {1, nil, 3})
  raises("table or kjit.array expected, got number", kjit.array, 5)
end)

test("arange(n): 0..n-1, i64", function()
  local a = kjit.arange(5)
  eq(a.dtype, "i64", "dtype"); eq(#a, 5, "#a")
  same_table(a:totable(), {0, 1, 2, 3, 4})
  eq(#kjit.arange(0), 0, "empty"); eq(#kjit.arange(-3), 0, "negative stop")
end)

test("arange(start, stop [, step]) like NumPy", function()
  same_table(kjit.arange(2, 6):totable(), {2, 3, 4, 5})
  same_table(kjit.arange(1, 10, 3):totable(), {1, 4, 7})
  same_table(kjit.arange(10, 0, -3):totable(), {10, 7, 4, 1})
  same_table(kjit.arange(5, 1):totable(), {})
end)

test("arange: float arguments give f64", function()
  local a = kjit.arange(0, 1, 0.25)
  eq(a.dtype, "f64", "dtype"); same_table(a:totable(), {0.0, 0.25, 0.5, 0.75})
  same_table(kjit.arange(2.5):totable(), {0.0, 1.0, 2.0})
  same_table(kjit.arange(1, 2, 0.5):totable(), {1.0, 1.5})
end)

test("arange: dtype as the last argument", function()
  local a = kjit.arange(4, "f32")
  eq(a.dtype, "f32", "dtype"); eq(a[4], 3.0, "float value")
  eq(kjit.arange(1, 4, "u8")[3], 3, "u8")
  eq(kjit.arange(0, 10, 5, kjit.i16).dtype, "i16", "constant dtype")
  eq(kjit.arange(250, 260, "u8")[7], 0, "wraps like a store")
  raises("number has no integer representation", kjit.arange, 0, 1, 0.5, "i32")
end)

test("arange: extreme integer ranges do not overflow", function()
  local a = kjit.arange(math.maxinteger - 2, math.maxinteger)
  same_table(a:totable(), {math.maxinteger - 2, math.maxinteger - 1})
  local b = kjit.arange(math.mininteger, math.mininteger + 3, 2)
  same_table(b:totable(), {math.mininteger, math.mininteger + 2})
  raises("array too large", kjit.arange, math.mininteger, math.maxinteger)
end)

test("arange: errors", function()
  raises("step must not be zero", kjit.arange, 0, 5, 0)
  raises("step must not be zero", kjit.arange, 0.0, 5, 0.0)
  raises("number expected, got no value", kjit.arange)
  raises("number expected, got string", kjit.arange, "5")
  raises("unknown dtype 'x'", kjit.arange, 5, "x")
  raises("too many arguments", kjit.arange, 1, 5, 1, "f64", 7)
  raises("must be finite", kjit.arange, 0, math.huge, 1.0)
end)

test("linspace: endpoints, count, default f64", function()
  local a = kjit.linspace(0, 1, 5)
  eq(a.dtype, "f64", "dtype")
  same_table(a:totable(), {0.0, 0.25, 0.5, 0.75, 1.0})
  local b = kjit.linspace(-1, 0.3, 7)
  eq(b[1], -1.0, "first exact"); eq(b[7], 0.3, "last exact")
  same_table(kjit.linspace(3, 9, 1):totable(), {3.0})
  eq(#kjit.linspace(0, 1, 0), 0, "n = 0")
  same_table(kjit.linspace(5, 1, 3):totable(), {5.0, 3.0, 1.0})
end)

test("linspace: dtype and errors", function()
  local a = kjit.linspace(0, 10, 11, "i32")
  eq(a[11], 10, "integer dtype"); eq(math.type(a[4]), "integer", "subtype")
  eq(kjit.linspace(0, 1, 3, "f32")[2], 0.5, "f32")
  raises("number has no integer representation", kjit.linspace, 0, 1, 3, "i64")
  raises("must not be negative", kjit.linspace, 0, 1, -1)
  raises("number has no integer representation", kjit.linspace, 0, 1, 2.5)
  raises("number expected, got string", kjit.linspace, "0", 1, 2)
end)

test("linspace: huge range stays finite", function()
  local a = kjit.linspace(-1e308, 1e308, 3)
  eq(a[1], -1e308, "first"); eq(a[2], 0.0, "middle"); eq(a[3], 1e308, "last")
end)

----------------------------------------------------------------------
-- shapes and constructor errors
----------------------------------------------------------------------

test("bad shapes", function()
  raises("negative dimension -1", kjit.zeros, -1)
  raises("negative dimension -2", kjit.zeros, {3, -2})
  raises("too many dimensions", kjit.zeros, {1, 1, 1, 1, 1})
  raises("shape table is empty", kjit.zeros, {})
  raises("shape dimension 2 is 2.5, not an integer", kjit.zeros, {3, 2.5})
  raises("shape dimension 1 must be an integer, got string", kjit.zeros, {"3"})
  raises("shape (an integer or a table of integers) expected, got string", kjit.zeros, "3")
  raises("shape (an integer or a table of integers) expected, got no value", kjit.zeros)
  raises("is 1.5, not an integer", kjit.full, 1.5, 0)
end)

test("unknown dtype names the valid ones", function()
  raises("unknown dtype 'c64' (expected one of i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, bool, f16)",
         kjit.zeros, 3, "c64")
  raises("unknown dtype 'F32'", kjit.empty, 3, "F32")
  raises("dtype string expected, got number", kjit.zeros, 3, 32)
  raises("unknown dtype 'float'", kjit.array, {1}, "float")
end)

test("zero-size dims are allowed everywhere", function()
  local a = kjit.zeros(0)
  eq(#a, 0, "#a"); eq(a.size, 0, "size"); same_table(a:totable(), {})
  local b = kjit.zeros({3, 0, 2}, "i8")
  eq(#b, 3, "#b"); eq(b.size, 0, "size"); eq(#b[2], 0, "row length")
  same_table(b:totable(), {{}, {}, {}})
  eq(#a:copy(), 0, "copy"); a:fill(1)
end)

test("size overflow is a clean error", function()
  raises("array too large", kjit.zeros, {1 << 40, 1 << 40})
  raises("array too large", kjit.zeros, math.maxinteger)
  raises("array too large", kjit.zeros, {1 << 30, 1 << 30, 1 << 30, 1 << 30})
  raises("array too large", kjit.zeros, (1 << 46) + 1, "f64")
  raises("array too large", kjit.zeros, {0, 1 << 40, 1 << 40})
end)

test("allocation failure is a Lua memory error", function()
  if os.getenv("ASAN_OPTIONS") then skip("ASan aborts on huge allocations") end
  -- 2^47 bytes: under the size limit, more than any address space allows
  local ok, err = pcall(kjit.zeros, 1 << 44, "f64")
  eq(ok, false, "failed"); truthy(tostring(err):find("not enough memory", 1, true), "memory error: " .. tostring(err))
end)

----------------------------------------------------------------------
-- fields
----------------------------------------------------------------------

test("fields: shape is a fresh table", function()
  local a = kjit.zeros({2, 3})
  local s = a.shape
  s[1] = 99
  same_table(a.shape, {2, 3}, "shape unchanged")
  truthy(a.shape ~= a.shape, "fresh each time")
end)

test("fields: dtype, ndim, size, #", function()
  local a = kjit.zeros({4, 5, 6}, "u32")
  eq(a.dtype, "u32", "dtype"); eq(a.ndim, 3, "ndim"); eq(a.size, 120, "size"); eq(#a, 4, "#a")
  eq(math.type(a.size), "integer", "size subtype")
end)

test("unknown fields error, fields are read-only", function()
  local a = kjit.zeros(3)
  raises("kjit.array has no field 'foo'", function() return a.foo end)
  raises("kjit.array has no field 'bar'", function() a.bar = 1 end)
  raises("cannot assign to field 'shape'", function() a.shape = {3} end)
  raises("cannot assign to field 'fill'", function() a.fill = print end)
  raises("kjit.array has no field 'foo'", function() a:foo() end)
end)

test("getmetatable is protected", function()
  eq(getmetatable(kjit.zeros(1)), "kjit.array", "getmetatable")
  eq(getmetatable(kjit.zeros({2, 2})[1]), "kjit.array", "views too")
end)

----------------------------------------------------------------------
-- indexing
----------------------------------------------------------------------

test("1-based read and write on 1-D", function()
  local a = kjit.zeros(10)
  for i = 1, 10 do a[i] = i * 1.5 end
  for i = 1, 10 do eq(a[i], i * 1.5, "a[i]") end
  eq(a[#a], 15.0, "a[#a]")
end)

test("float indices with integer values work", function()
  local a = kjit.array({10, 20, 30})
  eq(a[2.0], 20.0, "read"); a[3.0] = 5; eq(a[3], 5.0, "write")
end)

test("out-of-bounds reads name the index and bounds", function()
  local a = kjit.zeros(10)
  raises("index 11 out of bounds [1, 10]", function() return a[11] end)
  raises("index 0 out of bounds [1, 10]", function() return a[0] end)
  raises("index -1 out of bounds [1, 10]", function() return a[-1] end)
  raises("index 1 out of bounds [1, 0]", function() return kjit.zeros(0)[1] end)
  raises("index 9223372036854775807 out of bounds", function() return a[math.maxinteger] end)
end)

test("out-of-bounds writes name the index and bounds", function()
  local a = kjit.zeros(10, "i32")
  raises("index 11 out of bounds [1, 10]", function() a[11] = 1 end)
  raises("index 0 out of bounds [1, 10]", function() a[0] = 1 end)
end)

test("errors carry the caller's location", function()
  local a = kjit.zeros(10)
  local msg = raises("out of bounds", function() return a[11] end)
  truthy(msg:find("test_buffer.lua:%d+:"), "location in " .. msg)
end)

test("non-integer indices", function()
  local a = kjit.zeros(10)
  raises("index 1.5 is not an integer", function() return a[1.5] end)
  raises("index 1.5 is not an integer", function() a[1.5] = 0 end)
  raises("is not an integer", function() return a[0 / 0] end)
  raises("index 1e+100 out of bounds [1, 10]", function() return a[1e100] end)
  raises("cannot be indexed with a boolean", function() return a[true] end)
  raises("cannot be indexed with a table", function() a[{}] = 1 end)
  raises("kjit.array has no field '1'", function() return a["1"] end)
end)

test("2-D: a[i][j], bounds in each dimension", function()
  local a = kjit.zeros({3, 4}, "i32")
  for i = 1, 3 do for j = 1, 4 do a[i][j] = i * 10 + j end end
  eq(a[3][4], 34, "a[3][4]"); eq(a[1][1], 11, "a[1][1]")
  raises("index 4 out of bounds [1, 3]", function() return a[4] end)
  raises("index 5 out of bounds [1, 4]", function() return a[1][5] end)
  raises("index 5 out of bounds [1, 4]", function() a[2][5] = 1 end)
end)

test("2-D: assigning a number to a whole row is an error", function()
  local a = kjit.zeros({3, 4})
  raises("index all 2 dimensions", function() a[1] = 5 end)
  raises("index all 3 dimensions", function() kjit.zeros({2, 2, 2})[1] = 5 end)
  raises("index all 2 dimensions", function() kjit.zeros({2, 2, 2})[1][1] = 5 end)
end)

test("n-D: m[i] = row copies a kjit array of the row's shape", function()
  local m = kjit.zeros({2, 3})
  m[2] = kjit.arange(3.0)
  eq(m[2][3], 2.0, "copied"); eq(m[1][3], 0.0, "row 1 untouched")
  m[1] = kjit.arange(3)   -- converted to the dtype
  eq(m[1][2], 1.0, "converted")
  raises("extent 4 to a row of extent 3", function() m[1] = kjit.zeros(4) end)
  raises("cannot assign a 2-D kjit.array to a row", function() m[1] = kjit.zeros({1, 3}) end)
  raises("index 3 out of bounds", function() m[3] = kjit.zeros(3) end)
end)

test("n-D: a[i] is an (n-1)-D view", function()
  local a = kjit.zeros({2, 3, 4, 5}, "i16")
  local r = a[2]
  eq(r.ndim, 3, "ndim"); same_table(r.shape, {3, 4, 5}); eq(r.dtype, "i16", "dtype")
  eq(a[2][3].ndim, 2, "2-D"); eq(a[2][3][4].ndim, 1, "1-D"); eq(#a[2][3][4], 5, "#")
  a[2][3][4][5] = 77
  eq(a:totable()[2][3][4][5], 77, "through totable")
  eq(a:reshape(120)[120], 77, "last flat element")
end)

test("row views share memory both ways", function()
  local a = kjit.zeros({3, 4})
  local row = a[2]
  row[3] = 7.5
  eq(a[2][3], 7.5, "base sees view write")
  a[2][1] = -1
  eq(row[1], -1.0, "view sees base write")
  eq(a[1][3], 0.0, "other rows untouched"); eq(a[3][3], 0.0, "other rows untouched")
end)

test("#a on views is the length of their first dim", function()
  local a = kjit.zeros({3, 4, 5})
  eq(#a, 3, "#a"); eq(#a[1], 4, "#a[1]"); eq(#a[1][1], 5, "#a[1][1]")
end)

----------------------------------------------------------------------
-- store rules
----------------------------------------------------------------------

test("u8: wrap like a C cast", function()
  local a = kjit.zeros(4, "u8")
  a[1] = 300; a[2] = -1; a[3] = 256; a[4] = 255
  eq(a[1], 44, "300"); eq(a[2], 255, "-1"); eq(a[3], 0, "256"); eq(a[4], 255, "255")
end)

test("i8: wrap like a C cast", function()
  local a = kjit.zeros(4, "i8")
  a[1] = 200; a[2] = 128; a[3] = -129; a[4] = 127
  eq(a[1], -56, "200"); eq(a[2], -128, "128"); eq(a[3], 127, "-129"); eq(a[4], 127, "127")
end)

test("i16 and u16 wrap", function()
  local a, b = kjit.zeros(2, "i16"), kjit.zeros(2, "u16")
  a[1] = 40000; a[2] = -32769
  eq(a[1], -25536, "i16 40000"); eq(a[2], 32767, "i16 -32769")
  b[1] = 70000; b[2] = -1
  eq(b[1], 4464, "u16 70000"); eq(b[2], 65535, "u16 -1")
end)

test("i32 and u32 wrap", function()
  local a, b = kjit.zeros(2, "i32"), kjit.zeros(2, "u32")
  a[1] = 2147483648; a[2] = 1 << 40 | 5
  eq(a[1], -2147483648, "i32 2^31"); eq(a[2], 5, "i32 high bits dropped")
  b[1] = -1; b[2] = 1 << 32
  eq(b[1], 4294967295, "u32 -1"); eq(b[2], 0, "u32 2^32")
end)

test("i64 and u64 keep all 64 bits", function()
  local a, b = kjit.zeros(2, "i64"), kjit.zeros(2, "u64")
  a[1] = math.mininteger; a[2] = math.maxinteger
  eq(a[1], math.mininteger, "minint"); eq(a[2], math.maxinteger, "maxint")
  b[1] = -1; b[2] = math.mininteger
  eq(b[1], -1, "u64 max reads back as -1 (Lua wrap)"); eq(b[2], math.mininteger, "2^63")
end)

test("integer buffers read Lua integers", function()
  for _, t in ipairs(INTS) do
    local a = kjit.full(2, 5, t)
    eq(a[1], 5, t); eq(math.type(a[2]), "integer", t .. " subtype")
  end
end)

test("float buffers read Lua floats", function()
  eq(kjit.full(1, 3, "f32")[1], 3.0, "f32"); eq(kjit.full(1, 3, "f64")[1], 3.0, "f64")
  local a = kjit.zeros(1, "f64"); a[1] = 7
  eq(math.type(a[1]), "float", "int stored into f64 reads float")
end)

test("floats with integer values store into integer buffers", function()
  for _, t in ipairs(INTS) do
    local a = kjit.zeros(1, t); a[1] = 3.0
    eq(a[1], 3, t)
  end
  local b = kjit.zeros(1, "u8"); b[1] = 300.0; eq(b[1], 44, "exact then wrap")
  local c = kjit.zeros(1, "i64"); c[1] = 2.0 ^ 53; eq(c[1], 1 << 53, "2^53")
  c[1] = -2.0 ^ 63; eq(c[1], math.mininteger, "-2^63")
end)

test("floats without an exact integer value are Lua's error", function()
  for _, t in ipairs(INTS) do
    local a = kjit.zeros(1, t)
    raises("number has no integer representation", function() a[1] = 1.5 end)
    raises("number has no integer representation", function() a[1] = 0 / 0 end)
    raises("number has no integer representation", function() a[1] = math.huge end)
  end
end)

test("i64/u64: floats must be in i64 range", function()
  local a, b = kjit.zeros(1, "i64"), kjit.zeros(1, "u64")
  raises("number has no integer representation", function() a[1] = 2.0 ^ 63 end)
  raises("number has no integer representation", function() b[1] = 2.0 ^ 63 end)
  raises("number has no integer representation", function() b[1] = 2.0 ^ 64 end)
  -- same message as Lua itself
  local _, lua_msg = pcall(function() return (2.0 ^ 63) | 0 end)
  truthy(lua_msg:find("number has no integer representation", 1, true), "Lua's own message")
end)

test("f32: rounds to nearest like a C cast", function()
  local a = kjit.zeros(4, "f32")
  a[1] = 0.1; a[2] = 1 / 3; a[3] = 16777217; a[4] = 1e300
  eq(a[1], f32(0.1), "0.1"); eq(a[2], f32(1 / 3), "1/3")
  eq(a[3], 16777216.0, "2^24 + 1 rounds to even"); eq(a[4], math.huge, "overflow to inf")
  truthy(a[1] ~= 0.1, "f32 0.1 is not f64 0.1")
  a[1] = -0.0; eq(a[1], -0.0, "negative zero kept")
  a[2] = 0 / 0; truthy(a[2] ~= a[2], "NaN stored")
end)

test("f64: exact, integers convert like Lua", function()
  local a = kjit.zeros(3)
  a[1] = 0.1; a[2] = math.maxinteger; a[3] = -0.0
  eq(a[1], 0.1, "0.1 exact"); eq(a[2], math.maxinteger + 0.0, "int -> float as Lua"); eq(a[3], -0.0, "-0.0")
end)

test("strings and booleans are rejected", function()
  local a, b = kjit.zeros(1), kjit.zeros(1, "i32")
  raises("number expected, got string", function() a[1] = "1" end)
  raises("number expected, got string", function() b[1] = "10" end)
  raises("number expected, got boolean", function() a[1] = true end)
  raises("number expected, got nil", function() a[1] = nil end)
  raises("number expected, got table", function() a[1] = {} end)
  raises("number expected, got kjit.array", function() a[1] = kjit.zeros(1) end)
  eq(a[1], 0.0, "unchanged after errors")
end)

----------------------------------------------------------------------
-- methods
----------------------------------------------------------------------

test("totable: 1-D and n-D round trip", function()
  local t1 = {1.5, -2, 3}
  same_table(kjit.array(t1):totable(), {1.5, -2.0, 3.0})
  local t2 = {{1, 2, 3}, {4, 5, 6}}
  same_table(kjit.array(t2, "i64"):totable(), t2)
  local t3 = {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}
  same_table(kjit.array(kjit.array(t3, "u16"):totable(), "u16"):totable(), t3)
end)

test("totable gives a copy", function()
  local a = kjit.array({1, 2})
  local t = a:totable(); t[1] = 100
  eq(a[1], 1.0, "buffer unchanged")
end)

test("fill: converts once, returns the array", function()
  local a = kjit.zeros({3, 5}, "u8")
  eq(a:fill(300), a, "returns self")
  for i = 1, 3 do for j = 1, 5 do eq(a[i][j], 44, "filled") end end
  local b = kjit.empty(7):fill(0.25)
  for i = 1, 7 do eq(b[i], 0.25, "f64 fill") end
  raises("number has no integer representation", a.fill, a, 0.5)
  raises("number expected, got string", a.fill, a, "1")
  eq(a[1][1], 44, "unchanged after failed fill")
end)

test("fill on a row view fills only that row", function()
  local a = kjit.zeros({3, 3}, "i32")
  a[2]:fill(9)
  same_table(a:totable(), {{0, 0, 0}, {9, 9, 9}, {0, 0, 0}})
end)

test("copy: independent, same dtype and shape", function()
  local a = kjit.array({{1, 2}, {3, 4}}, "i16")
  local b = a:copy()
  eq(b.dtype, "i16", "dtype"); same_table(b.shape, {2, 2})
  b[1][1] = 100
  eq(a[1][1], 1, "original untouched"); eq(b[1][1], 100, "copy changed")
  local r = a[2]:copy(); a[2][1] = 0; eq(r[1], 3, "copy of a view is owned")
end)

test("reshape: shares memory, int or table shape", function()
  local a = kjit.arange(12)
  local b = a:reshape({3, 4})
  same_table(b.shape, {3, 4}); eq(b[2][1], 4, "row-major")
  b[3][4] = 100; eq(a[12], 100, "shared")
  local c = b:reshape(12); same_table(c.shape, {12}); eq(c[12], 100, "back to 1-D")
  local d = a:reshape({2, 3, 2}); eq(d[2][3][2], 100, "3-D")
end)

test("reshape: errors", function()
  local a = kjit.arange(12)
  raises("cannot reshape a kjit.array of size 12 into a shape of size 10", a.reshape, a, {2, 5})
  raises("negative dimension", a.reshape, a, {-1, 12})
  raises("too many dimensions", a.reshape, a, {1, 1, 1, 1, 12})
  raises("shape (an integer or a table of integers) expected", a.reshape, a)
  eq(#kjit.zeros(0):reshape({0, 5}), 0, "empty reshape")
end)

test("slice: a view of first..last along dim 1", function()
  local a = kjit.arange(10)
  local s = a:slice(3, 5)
  same_table(s:totable(), {2, 3, 4}); eq(#s, 3, "#s")
  s[1] = -1; eq(a[3], -1, "shared")
  same_table(a:slice(8):totable(), {7, 8, 9}, "last defaults to #a")
  eq(#a:slice(4, 3), 0, "empty slice")
  same_table(a:slice(1, 10):totable(), a:totable(), "whole")
end)

test("slice: 2-D takes rows", function()
  local a = kjit.arange(12, "i32"):reshape({4, 3})
  local s = a:slice(2, 3)
  same_table(s.shape, {2, 3}); same_table(s:totable(), {{3, 4, 5}, {6, 7, 8}})
  s[2][3] = 99; eq(a[3][3], 99, "shared")
  local ss = s:slice(2); same_table(ss.shape, {1, 3}); eq(ss[1][3], 99, "slice of slice")
end)

test("slice: bad ranges", function()
  local a = kjit.zeros(10)
  raises("slice 0..3 out of bounds [1, 10]", a.slice, a, 0, 3)
  raises("slice 2..11 out of bounds [1, 10]", a.slice, a, 2, 11)
  raises("slice 5..2 out of bounds [1, 10] (first > last + 1)", a.slice, a, 5, 2)
  raises("slice 12..10 out of bounds", a.slice, a, 12)
  raises("number has no integer representation", a.slice, a, 1.5)
  raises("integer expected, got no value", a.slice, a)
end)

test("methods check their receiver", function()
  local a = kjit.zeros(3)
  raises("kjit.array expected, got table", a.fill, {}, 1)
  raises("kjit.array expected, got no value", a.copy)
  raises("kjit.array expected, got number", a.totable, 5)
end)

----------------------------------------------------------------------
-- lifetime
----------------------------------------------------------------------

test("views keep their base alive", function()
  local a = kjit.arange(20, "f64"):reshape({4, 5})
  local row = a[3]
  a = nil
  collectgarbage(); collectgarbage()
  eq(row[5], 14.0, "row alive after base dropped")
  local s = kjit.arange(10):slice(4, 6)
  local r = kjit.arange(6, "i8"):reshape({2, 3})[2]
  collectgarbage(); collectgarbage()
  eq(s[3], 5, "slice"); eq(r[3], 5, "reshape then row")
end)

test("views of views keep the memory alive", function()
  local v
  do
    local base = kjit.zeros({2, 3, 4})
    base[2][3][4] = 42
    v = base[2]:slice(2, 3)[2]
  end
  collectgarbage(); collectgarbage()
  eq(v[4], 42.0, "deep view")
  local w = v:reshape({2, 2}); collectgarbage(); eq(w[2][2], 42.0, "reshape of deep view")
end)

test("many temporaries are collected", function()
  local before = collectgarbage("count")
  for _ = 1, 200 do local t = kjit.zeros(10000) t[1] = 1 end
  collectgarbage(); collectgarbage()
  truthy(collectgarbage("count") - before < 20000, "memory returned to the GC")
end)

----------------------------------------------------------------------
-- tostring
----------------------------------------------------------------------

test("tostring: small buffers in full", function()
  eq(tostring(kjit.array({1, 2, 3}, "f32")), "kjit.array(f32, {3}) [1.0, 2.0, 3.0]", "f32")
  eq(tostring(kjit.array({1, -2, 3}, "i32")), "kjit.array(i32, {3}) [1, -2, 3]", "i32")
  eq(tostring(kjit.array({0.1}, "f32")), "kjit.array(f32, {1}) [0.1]", "f32 0.1 short")
  eq(tostring(kjit.array({0.5, 1e100})), "kjit.array(f64, {2}) [0.5, 1e+100]", "f64")
  eq(tostring(kjit.array({{1, 2}, {3, 4}}, "u8")), "kjit.array(u8, {2, 2}) [[1, 2], [3, 4]]", "2-D")
  eq(tostring(kjit.full(1, -1, "u64")), "kjit.array(u64, {1}) [18446744073709551615]", "u64 unsigned")
end)

test("tostring: empty and special values", function()
  eq(tostring(kjit.zeros(0)), "kjit.array(f64, {0}) []", "empty")
  eq(tostring(kjit.zeros({2, 0}, "i8")), "kjit.array(i8, {2, 0}) [[], []]", "2x0")
  local a = kjit.array({math.huge, -math.huge})
  eq(tostring(a), "kjit.array(f64, {2}) [inf, -inf]", "inf")
end)

test("tostring: large buffers elide the middle", function()
  eq(tostring(kjit.arange(1, 101, "f64")),
     "kjit.array(f64, {100}) [1.0, 2.0, 3.0, ..., 98.0, 99.0, 100.0]", "1-D")
  eq(tostring(kjit.arange(11)), "kjit.array(i64, {11}) [0, 1, 2, ..., 8, 9, 10]", "11 elements")
  eq(tostring(kjit.arange(10)), "kjit.array(i64, {10}) [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "10 in full")
  local s = tostring(kjit.zeros({1000, 1000}, "u8"))
  truthy(#s < 200, "2-D output is short (" .. #s .. ")")
  eq(s, "kjit.array(u8, {1000, 1000}) [[0, 0, 0, ..., 0, 0, 0], [0, 0, 0, ..., 0, 0, 0], "
     .. "[0, 0, 0, ..., 0, 0, 0], ..., [0, 0, 0, ..., 0, 0, 0], [0, 0, 0, ..., 0, 0, 0], "
     .. "[0, 0, 0, ..., 0, 0, 0]]", "2-D elided")
  truthy(#tostring(kjit.zeros(1 << 24, "u8")) < 100, "16M elements print quickly")
end)

test("tostring of views", function()
  local a = kjit.arange(6, "i16"):reshape({2, 3})
  eq(tostring(a[2]), "kjit.array(i16, {3}) [3, 4, 5]", "row view")
  eq(tostring(a:slice(1, 1)), "kjit.array(i16, {1, 3}) [[0, 1, 2]]", "slice")
end)

----------------------------------------------------------------------
-- odds and ends
----------------------------------------------------------------------

test("ipairs-free iteration with # works on every dtype", function()
  for _, t in ipairs(NUMERIC) do
    local a = kjit.arange(1, 6, t)
    local sum = 0
    for i = 1, #a do sum = sum + a[i] end
    eq(sum == 15, true, t .. " sum")
  end
end)

test("4-D buffer: every element addressable and row-major", function()
  local a = kjit.zeros({2, 3, 4, 5}, "i32")
  local n = 0
  for i = 1, 2 do for j = 1, 3 do for k = 1, 4 do for l = 1, 5 do
    a[i][j][k][l] = n; n = n + 1
  end end end end
  local flat = a:reshape(120)
  for m = 1, 120 do eq(flat[m], m - 1, "flat") end
end)

test("large 1-D buffer round trip", function()
  local n = 100000
  local a = kjit.empty(n, "f32")
  for i = 1, n do a[i] = i end
  local s = 0
  for i = 1, n do s = s + a[i] end
  eq(s, n * (n + 1) / 2, "sum")
end)
