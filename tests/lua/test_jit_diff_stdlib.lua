-- Differential tests for the standard library called from compiled code
-- (print, io.write, os.*, math.random, type/tostring/tonumber, error and
-- assert with built messages) and issue 29's item 7 fixes. Output is
-- captured by swapping io.stdout's write through a temporary file (see
-- capture below) so interpreted and compiled runs are compared byte for byte.
local D = require "difftest"
local kjit = D.real_kjit

---------------------------------------------------------------------------
-- issue 29, item 7
---------------------------------------------------------------------------
local function pick(x, y) if x > 0 then return x end return y end
local function pick_plus_half(x, y) return pick(x, y) + 0.5 end
local function pick_in_loop(x, y)
  local s = 0.0
  for i = 1, 3 do s = s + pick(x, y) * 2.0 + i end
  return s, pick(y, x)
end

test("a loop-free callee returning an integer or a float, in float arithmetic", function()
  D.cases(pick_plus_half, {1.5, 0}, {0, 1.5}, {-1, 2}, {1, 2.5}, {2, 3})
  D.cases(pick_in_loop, {1.5, 0}, {0, 1.5}, {-1, 2}, {1, 2.5})
  for o = 0, 3 do D.check_opts({opt = o}, pick_plus_half, 1.5, 0) end
end)

local P = {151, 160, 137, 91, 90, 15, 131, 13}
local E = {}
local function len_upvalue() return #P end
local function len_in_loop(n)
  local s = 0
  for i = 1, n do s = s + i % #P + #E end
  return s
end
local LEN = setmetatable({}, {__len = function() return 42 end})
local function len_meta() return #LEN end

test("#t of a frozen (upvalue) table is its length", function()
  D.cases(len_upvalue, {})
  D.cases(len_in_loop, {0}, {10}, {100})
  D.cases(len_meta, {})   -- its __len, called (refused until 2026-11-28)
end)

local T = {}
function T:m(x) return x + 1 end
function T.f(a, b) return b end
local function method_call(x) return T:m(x) end
local function method_str(x) return T.f(x, "s" .. x) end   -- (a built string is a value)
local function plain_call(x) return T.f(T, x) end
local function method_table_arg(x) return T:m(x, T) end
function T:n(s) return 1 end
local function method_shape(a) return T:n(a.shape) end

test("method call refusals count the arguments as the source shows them", function()
  -- a frozen table as the self is the table itself, as any argument
  -- (refused until 2026-11-28: "... its self")
  eq(kjit.jit(method_call)(3), method_call(3))
  eq(kjit.jit(method_table_arg)(3), method_table_arg(3))
  local ok, err = pcall(kjit.jit(method_shape), kjit.zeros(3))
  truthy(not ok, "refused")
  eq(err:match(":%d+: compile error for %b(): (.*)$"), "cannot pass a shape(1) to a compiled function " ..
     "(argument #1 of the method call, after its self): pass the array itself, or its extents " ..
     "(a.shape[1], #a)")
  -- a frozen table passed as a plain argument is the table itself (a Lua
  -- value in the callee: test_table_arrays)
  eq(kjit.jit(plain_call)(3), plain_call(3))
  -- a built string is a value now: passed and returned
  eq(kjit.jit(method_str)(3), method_str(3))
end)

---------------------------------------------------------------------------
-- Output: each script runs in a child process twice, its function
-- interpreted, then compiled (MODE), and what it writes to stdout is
-- compared byte for byte (print and io.write share Lua's stdout buffer).
---------------------------------------------------------------------------
local MODDIR = arg and arg[1] or "build"
local TMP = os.tmpname()

local function run_child(src, mode)
  write_file(TMP, "package.cpath = '" .. MODDIR .. "/?.so;' .. package.cpath\n" ..
             "local kjit = require 'kjit'\nlocal MODE = ...\n" ..
             "local function J(f, o) if MODE == 'jit' then return kjit.jit(f, o) end return f end\n" ..
             src)
  local p = assert(io.popen("lua5.4 " .. TMP .. " " .. mode .. " 2>&1", "r"))
  local out = p:read("a")
  local ok, how, code = p:close()
  return out, ok and how == "exit" and code == 0
end

-- The script's output compiled must equal its output interpreted; returns it.
local function same_output(src)
  local want, ok1 = run_child(src, "interp")
  local got, ok2 = run_child(src, "jit")
  truthy(#want > 0, "the interpreted run wrote something")
  if want ~= got or ok1 ~= ok2 then
    error(("output differs\n--- interpreted:\n%s\n--- compiled:\n%s"):format(want, got), 2)
  end
  return want
end

test("print and io.write of numbers, booleans, nil and strings", function()
  local out = same_output [[
local A = kjit.array({1.5, -2.25, 3}, "f32")
local f = J(function(i, x, b, a)
  print(i, x, b, nil, "text", i * 2, x * 2, i / 2, -0.0, 1 / 0, -1 / 0, 2^63, 1e15, 1e100)
  print(math.floor(x), math.tointeger(x), math.tointeger(i), a[1], a[2] * 2, math.maxinteger)
  print()
  io.write(i, " ", x, " ", 2.0, " ", 1e15, " ", -0.0, " ", math.mininteger, "\n")
  io.write("no newline", ";")
  io.write()
  print(type(i), type(x), type(b), type(nil), type(a), type("s"))
  print(tonumber(i), tonumber(x), tonumber("0x10"), tonumber("  7.5 "), tonumber("z"), tonumber(nil))
  return i
end)
print(f(3, 4.0, true, A))
print(f(-7, 0.1, false, A))
print(f(math.mininteger, 2^53, true, A))
]]
  truthy(out:find("no newline;", 1, true), out)
end)

test("strings built at run time: '..', tostring and string.format", function()
  same_output [[
local f = J(function(i, x)
  print("i=" .. i .. " x=" .. x .. " half=" .. i / 2)
  print(tostring(i) .. "|" .. tostring(x) .. "|" .. tostring(x > 1) .. "|" .. tostring(nil))
  io.write(string.format("%5d|%-8.3f|%g|%x|%s|%q\n", i, x, x, i, x, i))
  print(string.format("%s and %s", i, tostring(x)), string.format("%.14g", x))
  local s = "loop "
  for k = 1, 3 do print(s .. k .. " " .. k * x) end
  return i + x
end)
print(f(3, 2.5))
print(f(10, 3.0))
print(f(-1, 1e300))
]]
end)

test("print of many values (the Lua stack grows)", function()
  same_output [[
local f = J(function(x)
  print(x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x)
  print(x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, "s" .. x)
  return x
end)
f(1) f(2.5)
]]
end)

test("output interleaves with the interpreter's", function()
  same_output [[
local g = J(function(i)
  io.write("<", i, ">")
  print("c", i)
  return i
end)
for i = 1, 5 do
  io.write("[", i, "]")
  g(i)
  print("i", i)
end
io.write("end\n")
]]
end)

test("a redefinition of print or io.write is called as Lua calls it", function()
  same_output [[
local f = J(function(x) print("x", x) io.write(x, "\n") return x end)
f(1)
f(0.5)   -- (both specializations compile now: frozen values are read then)
local real = print
print = function(...) real("mine:", select("#", ...), ...) end
f(2)
io.write = function(...) real("w:", ...) end
f(3.5)
print = nil
real(pcall(f, 4))
]]
end)

test("math.random draws the interpreter's sequence, interleaved any way", function()
  same_output [[
local draw = J(function(n, m)
  local s = 0
  for i = 1, n do s = s + math.random(m) end
  return s, math.random(), math.random(5, 9), math.random(0) ~= nil
end)
local seed = J(function(a, b) math.randomseed(a, b) return a end)
for round = 1, 3 do
  seed(42 + round, round)
  print(draw(10, 100))
  print(math.random(1000), draw(3, 6))
  math.randomseed(7)
  print(draw(1, 2), math.random())
end
print(pcall(draw, 1, 0))
print(pcall(function() return J(function(a, b) return math.random(a, b) end)(3, 1) end))
print(pcall(function() return J(function(a) return math.random(a) end)(2.5) end))
]]
end)

test("os.clock and os.time", function()
  local f = kjit.jit(function(n)
    local t0 = os.clock()
    local s = 0
    for i = 1, n do s = s + i end
    return os.clock() - t0, os.time(), s
  end)
  local dt, t, s = f(1000)
  eq(math.type(dt), "float")
  truthy(dt >= 0, "clock goes forward")
  eq(math.type(t), "integer")
  truthy(math.abs(t - os.time()) <= 1, "os.time agrees")
  eq(s, 500500)
end)

---------------------------------------------------------------------------
-- error() and assert() with values built at run time
---------------------------------------------------------------------------
local function check_index(i, n)
  if i > n then error("index " .. i .. " past " .. n) end
  return i
end
local function check_x(x) assert(x > 0, "bad x: " .. x) return x * 2 end
local function fmt_error(x, n) error(string.format("got %d items (%.2f)", n, x)) end
local function fmt_bad(x) error(string.format("%d", x)) end
local function raise_value(x) error(x) end
local function raise_value0(x) error(x * 2, 0) end
local function raise_nil(x) if x > 0 then error() end return x end
local function assert_number(x) assert(x < 0, x) return x end
local function assert_format(x) assert(x < 10, string.format("%g is too big", x)) return x end
local function level2(x) error("level two: " .. x, 2) end
local function calls_level2(x) level2(x) return x end
local function level0(x) error("no position " .. x, 0) end
local function concat_nil(x) local y = nil return "a" .. x .. y end

local function same_raise(fn, ...)
  local ok1, e1 = pcall(fn, ...)
  local ok2, e2 = pcall(kjit.jit(fn), ...)
  eq(ok2, ok1, "status")
  if not ok1 then
    eq(type(e2), type(e1), "error value type")
    eq(math.type(e2), math.type(e1), "error value subtype")
  end
  eq(e2, e1)
  return e1
end

test("error and assert with messages built from strings and numbers", function()
  D.cases(check_index, {1, 3}, {3, 3})
  D.cases_error("past", check_index, {4, 3}, {7, -1})
  D.cases(check_x, {1.5}, {2})
  D.cases_error("bad x", check_x, {-1.5}, {0}, {math.mininteger}, {-2^63})
  D.cases_error("got", fmt_error, {1.5, 3}, {-0.125, 100})
  D.cases_error("number has no integer representation", fmt_bad, {1.5})
  D.cases_error("is too big", assert_format, {11}, {1e20})
  D.cases(assert_format, {1}, {9.5})
  D.cases_error("level two", calls_level2, {3})
  D.cases_error("no position", level0, {2.5})
  D.cases_error("attempt to concatenate a nil value", concat_nil, {1})
end)

test("error values that are numbers, nil; assert with a number message", function()
  eq(same_raise(raise_value, 42), 42)
  eq(same_raise(raise_value, 4.5), 4.5)
  eq(same_raise(raise_value, true), true)
  eq(same_raise(raise_value0, 21), 42)
  eq(same_raise(raise_nil, 1), nil)
  same_raise(raise_nil, -1)
  eq(same_raise(assert_number, 3), 3)
  eq(same_raise(assert_number, 2.0), 2.0)
  same_raise(assert_number, -1)
end)

test("error(msg, 2) from the top compiled function names its Lua caller", function()
  local j = kjit.jit(level2)
  -- (both callers on one line: the position is theirs)
  local function caller_i(x) level2(x) end local function caller_j(x) j(x) end
  local ok1, e1 = pcall(caller_i, 5)
  local ok2, e2 = pcall(caller_j, 5)
  eq(ok2, ok1)
  truthy(e1:find("level two: 5", 1, true), e1)
  eq(e2, e1)
end)

test("library calls are refused in kjit.prange bodies and kernels", function()
  local f = kjit.jit(function(a)
    for i in kjit.prange(1, #a) do a[i] = math.random() end
  end, {parallel = true})
  local ok, err = pcall(f, kjit.zeros(8))
  truthy(not ok and err:find("math.random cannot run inside a kjit.prange loop", 1, true),
         tostring(err))
  local g = kjit.jit(function(a)
    for i in kjit.prange(1, #a) do if a[i] < 0 then error("negative at " .. i) end end
  end, {parallel = true})
  ok, err = pcall(g, kjit.zeros(8))
  truthy(not ok and err:find("cannot run inside a kjit.prange loop", 1, true), tostring(err))
  -- a function the body calls fails where it calls the library, when it runs
  local function noisy(x) if x > 1e9 then print("big", x) end return x * 2 end
  local p = kjit.jit(function(a)
    for i in kjit.prange(1, #a) do a[i] = noisy(a[i]) end
  end, {parallel = true})
  local big = kjit.full(50000, 1.0)
  p(big)
  eq(big[1], 2.0)
  big[77] = 2e9
  ok, err = pcall(p, big)
  truthy(not ok and err:find(":" .. debug.getinfo(noisy, "S").linedefined .. ": a function " ..
                             "called in a kjit.prange loop calls the Lua library", 1, true),
         tostring(err))
  -- without parallel = true the loop runs serially and may call Lua
  local h = kjit.jit(function(a)
    for i in kjit.prange(1, #a) do a[i] = math.random(1, 6) end
  end)
  local a, b = kjit.zeros(8), kjit.zeros(8)
  math.randomseed(5); h(a)
  math.randomseed(5); for i = 1, #b do b[i] = math.random(1, 6) end
  for i = 1, #a do eq(a[i], b[i]) end
  local cuda = kjit.cuda
  if cuda and cuda.simulate then
    cuda.simulate(true)
    -- (print itself runs in kernels: numba-cuda's print, cg_print.c)
    local k = cuda.jit(function(a) local i = cuda.grid(1) a[i] = math.random() end)
    ok, err = pcall(function() k[{1, 1}](kjit.zeros(1)) end)
    truthy(not ok and err:find("math.random cannot be called in a kernel", 1, true), tostring(err))
    cuda.simulate(false)
  end
end)

---------------------------------------------------------------------------
-- A frozen table indexed by a computed key (issue 29, item 1's last point)
---------------------------------------------------------------------------
local PERM = {151, 160, 137, 91, 90, 15, 131, 13, 201, 95}
local FL = {0.5, 1.5, 2.25}
local MIX = {1, 2.5, 3, -0.0}
local EMPTY = {}
local HOLES = {1, 2, nil, 4}
local NAMED = {1, 2, x = 3}
local BOOLS = {1, true}
local function perm_hash(i) return PERM[(i * 7) % #PERM + 1] end
local function pick2(i) return FL[i], MIX[i], EMPTY[i] end
local function perm_plus(i) return PERM[i] + 1 end
local function perm_loop(n)
  local s = 0
  for i = 1, n do s = s + PERM[(i * 7) % #PERM + 1] * MIX[i % #MIX + 1] end
  return s
end
local function perm_nil_test(i) if PERM[i] then return 1 end return 0 end

test("a frozen table indexed by a computed integer key", function()
  D.cases(perm_hash, {0}, {3}, {-5}, {math.maxinteger}, {math.mininteger})
  D.cases(pick2, {0}, {1}, {2}, {3}, {4}, {-1}, {math.mininteger})
  D.cases(perm_plus, {1}, {10})
  D.cases_error("attempt to perform arithmetic on a nil value", perm_plus, {11}, {0})
  D.cases(perm_loop, {0}, {1}, {1000})
  D.cases(perm_nil_test, {1}, {11})
  -- a table that is not an array of numbers is read when the code runs
  -- (a Lua value: issue 29 item 2, test_lang_functions.lua)
  for _, t in ipairs{HOLES, NAMED, BOOLS} do
    D.cases(function(i) local v = t[i]; return v end, {1}, {2}, {3}, {0})
  end
end)

test("a frozen table's numbers are part of the disk cache's key", function()
  local dir = os.tmpname()
  os.remove(dir)
  local src = [[
local P = {tonumber(MODE), 2, 3}
local f = kjit.jit(function(i) return P[i] end, {cache = true})
io.write(f(1), " ", f(2))
]]
  local env = "KJIT_CACHE_DIR=" .. dir .. " "
  local function child(v)
    write_file(TMP, "package.cpath = '" .. MODDIR .. "/?.so;' .. package.cpath\n" ..
               "local kjit = require 'kjit'\nlocal MODE = ...\n" .. src)
    local p = assert(io.popen(env .. "lua5.4 " .. TMP .. " " .. v .. " 2>&1", "r"))
    local out = p:read("a")
    p:close()
    return out
  end
  eq(child("7"), "7 2")
  eq(child("8"), "8 2")
  eq(child("7"), "7 2")
  local p = assert(io.popen("ls '" .. dir .. "' | wc -l"))
  truthy(tonumber(p:read("a")) >= 2, "two cache entries")
  p:close()
  os.execute("rm -rf '" .. dir .. "'")
end)

---------------------------------------------------------------------------
-- math functions that were missing: modf, deg, rad
---------------------------------------------------------------------------
local function modf2(x) local i, r = math.modf(x) return i, r end
local function modf_ret(x) return math.modf(x) end
local function modf_first(x) return (math.modf(x)) + 1 end
local function modf_number(x, c) local y = c and x or math.floor(x) return math.modf(y) end
local function degrad(x) return math.deg(x), math.rad(x), math.rad(math.deg(x)) end

test("math.modf, math.deg, math.rad", function()
  local xs = {3.7, -3.7, 5, -5, 0, 1/0, -1/0, -0.0, 0/0, 2^63, -2^63, 0.5, -0.5, 1e300,
              math.maxinteger, math.mininteger}
  for _, x in ipairs(xs) do
    D.cases(modf2, {x})
    D.cases(modf_ret, {x})
    D.cases(modf_first, {x})
    D.cases(modf_number, {x, true}, {x, false})
    D.cases(degrad, {x})
  end
end)

test("library errors in a stripped chunk carry no position, as interpreted", function()
  local src = "return function(a) return math.random(a) end, " ..
              "function(x) error('bad ' .. x) end, function(x) return math.random(x, 1) end"
  local f, g, h = load(string.dump(load(src), true))()
  same_raise(f, -1)
  same_raise(g, 2)
  same_raise(h, 5)
  local ok, e = pcall(kjit.jit(f), -1)
  eq(e, "bad argument #1 to 'random' (interval is empty)")
end)

-- A kjit array given to string.format, tostring, string.rep, print or
-- io.write: the library's own function is called with the array itself,
-- which formats it (its __tostring) or raises what it raises interpreted;
-- string.format with an array as its format or argument was a compile
-- error (session 21, found/format-array-refused.lua)
local function fmt_array_format(v) return string.format(v, 7) end
local function fmt_s_array(x, a) return string.format("%d %s", x, a) .. "|" .. tostring(a) end
local function fmt_d_array(x, a) return string.format("%d %d", x, a) end
local function fmt_method(x, a) return ("%s|%5.1f"):format(a, x) end
local function rep_array(a) return string.rep(a, 2) end
local function fmt_in_loop(a, n)
  local s = 0
  for i = 1, n do s = s + #string.format("%s%d", a, i) + a[1] end
  return s
end

test("string.format, tostring and string.rep given a kjit array: the library's, called", function()
  D.check_error("bad argument #1 to 'format' (string expected, got kjit.array)", fmt_array_format,
                kjit.array({7, 8}))
  D.check(fmt_s_array, 1, kjit.array({1.5, 2}))
  D.check_error("bad argument #3 to 'format' (number expected, got kjit.array)", fmt_d_array, 1,
                kjit.array({1, 2}))
  D.check(fmt_method, 2.25, kjit.zeros({2, 2}, "i32"))
  D.check_error("bad argument #1 to 'rep' (string expected, got kjit.array)", rep_array,
                kjit.array({1}))
  D.cases(fmt_in_loop, {kjit.array({1, 2}), 3}, {kjit.array({0.5}, "f32"), 0})
end)

test("print and io.write of a kjit array", function()
  local out = same_output [[
local A = kjit.array({1.5, -2, 3})
local f = J(function(a, x)
  print("p", a, x)
  io.write(string.format("%s;", a), x, "\n")
  local ok, e = pcall(io.write, a)   -- (io.write's own error: no position)
  print(ok, e)
  io.write(a)
  return x
end)
print(pcall(f, A, 2))
]]
  truthy(out:find("kjit.array(f64, {3}) [1.5, -2.0, 3.0]", 1, true), out)
end)
