-- Differential tests: values whose number is known only when the code runs
-- (issue 29, "Lua as people write it"), passed on where that number shows:
--   - the last argument of a library function (print(g(x)),
--     string.format("%d %d", g(x)), math.max(g(x))), of a vararg function
--     (sum(g(x))) or of any function given a function value's values
--     (f(table.unpack(t, 1, t.n)));
--   - last in a table constructor ({g(x)}, {a, f(...)}, {table.unpack(t)}),
--     whose array part the VM sizes by that number (`#` and later stores
--     see it);
--   - select('#', pcall(g)) and select(k, g(x)).
-- g's returns give different numbers of values on different paths, or g is
-- a function value (its count is lua_call's). The interpreted function is
-- the specification: results with subtypes and count, tables key by key
-- and by `#`, errors with file:line (tablediff.lua).
local T = require "tablediff"
local kjit = require "kjit"

local check = T.check_args
local function cases(fn, ...)
  for _, a in ipairs({...}) do check(fn, table.unpack(a, 1, a.n or #a)) end
end

-- two values, none, or one (a float on one path)
local function uneven(x)
  if x > 0 then return x, x * 2 elseif x < 0 then return end
  return x + 0.5
end
-- a nil first, then a value: `#` of {holes(x)} depends on the array's size
local function holes(x)
  if x > 0 then return nil, nil, x end
  return nil
end
local XS = { {1}, {-1}, {0}, {2.5} }

test("library functions given such values: the interpreter's results", function()
  local function fmt(x) return string.format(x > 0 and "%d %d" or "%s", uneven(x)) end
  local function mx(x) return math.max(3, uneven(x)) end
  local function sel(x) return select(2, uneven(x)) end
  local function tos(x) return tostring(uneven(x)), type(uneven(x)) end
  cases(fmt, {1}, {0})
  cases(mx, {1}, {0}, {5})
  cases(sel, {1}, {0}, {2.5})
  cases(tos, {1}, {0})
end)

test("their errors are the library's, at the user's line", function()
  local function mx(x) return math.max(uneven(x)) end
  local function fmt(x) return string.format("%d %d", uneven(x)) end
  T.check_error("bad argument #1 to 'max' (value expected)", mx,
                function() return -1 end)
  T.check_error("bad argument #2 to 'format' (no value)", fmt, function() return -1 end)
  T.check_error("number has no integer representation", fmt, function() return 0 end)
  T.check_error("number has no integer representation", fmt, function() return 2.5 end)
end)

-- kjit's own functions given such values are called as the module's
-- function values (kjit.zeros(g(x)): their dtype argument is g's second
-- value where there is one); an array method reading none past g's first
-- value, which every return of g gives, compiles as written (a:fill(g(x)):
-- the fuzzer's last refusal, until 2026-11-28).
local function one_or_two(x)
  if x > 0 then return x, 7 end
  return x - 1
end
local function size_or_dtype(x)
  if x > 1 then return 3, "i32" elseif x < 0 then return 2, 5 end
  return 4
end
test("kjit functions and array methods given them: the interpreter's arrays and errors", function()
  local function fill(x) local t = kjit.zeros(3) t:fill(one_or_two(x)) return t[1], t[3], #t end
  local function fill_int(x) local t = kjit.zeros(2, "i64") return t:fill(one_or_two(x))[2] end
  local function reshape(x) return #kjit.zeros(6):reshape(one_or_two(x)) end
  local function zeros(x) local t = kjit.zeros(size_or_dtype(x)) return #t, t.dtype, t[1] end
  local function full(x) local t = kjit.full(size_or_dtype(x)) return #t, t.dtype, t[2] end
  local function arange(x) local t = kjit.arange(size_or_dtype(x)) return #t, t[#t] end
  cases(fill, {1}, {-1}, {2.5}, {0})
  cases(fill_int, {3}, {-2})
  T.check_error_args("number has no integer representation", fill_int, 2.5)
  cases(reshape, {6}, {-5}, {3})
  T.check_error_args("cannot reshape", reshape, 4)
  cases(zeros, {2}, {0})
  T.check_error_args("bad argument #2 to 'zeros'", zeros, -1)
  cases(full, {0}, {2})
  T.check_error_args("bad argument #2 to 'full'", full, 1)
  cases(arange, {2}, {0}, {-1})
  -- a method reading g's second value too is still refused, with advice
  local function slice(x) return #kjit.zeros(4):slice(size_or_dtype(x)) end
  raises("take them into locals first", kjit.jit(slice), 0)
end)

test("print(g(x)) prints what the interpreter prints", function()
  local out = {}
  local real = print
  print = function(...) out[#out + 1] = table.pack(...) end   -- luacheck: ignore
  local function p(x) print(uneven(x)) print(x, uneven(x)) end
  local ok, err = pcall(function()
    for _, x in ipairs({1, -1, 0}) do p(x) end
    local want = out
    out = {}
    local j = kjit.jit(p)
    for _, x in ipairs({1, -1, 0}) do j(x) end
    eq(#out, #want, "print calls")
    for i = 1, #want do
      eq(out[i].n, want[i].n, "values printed by call " .. i)
      for k = 1, want[i].n do eq(out[i][k], want[i][k], "value " .. k .. " of call " .. i) end
    end
  end)
  print = real   -- luacheck: ignore
  if not ok then error(err, 0) end
end)

test("a vararg function given them sees their count", function()
  local function sum(...)
    local s = 0
    for i = 1, select('#', ...) do s = s + (select(i, ...) or 0) end
    return s, select('#', ...)
  end
  local function f(x) return sum(uneven(x)) end
  local function g(x) return sum(1, 2, uneven(x)) end
  for _, a in ipairs(XS) do check(f, a[1]); check(g, a[1]) end
end)

test("f(table.unpack(t, 1, t.n)) and f(t.g()) with f a function value or a Lua function", function()
  local function count(...) return select('#', ...), ... end
  local function two(a, b) return b, a end
  local function via_value(f, t) return f(table.unpack(t, 1, t.n)) end
  local function via_local(t) return count(table.unpack(t, 1, t.n)) end
  local function fixed(t) return two(table.unpack(t)) end
  local function method(o) return count(o.get()) end
  check(via_value, count, {n = 3, 1, 2})
  check(via_value, count, {n = 0})
  check(via_local, {n = 4, 1, nil, 3.5, nil})
  check(fixed, {7})
  check(fixed, {7, 8, 9})
  check(method, {get = function() return 1, 2, 3 end})
  check(method, {get = function() end})
end)

test("a function literal or local function without '...' given a function value's values", function()
  local function lit(t, x) local h = function(a, b, c) return c, b, a end return h(x, t.f()) end
  local function loc(t)
    local function h(a, b) return (a or 0) + (b or 0) end
    return h(t.f())
  end
  local function none(t) local h = function() return 7 end return h(t.f()) end
  local vals = { function() end, function() return 1 end, function() return 1, 2.5 end,
                 function() return 1, 2, 3, 4 end }
  for _, f in ipairs(vals) do
    T.check(lit, function() return { f = f }, 9 end)
    T.check(loc, function() return { f = f } end)
    T.check(none, function() return { f = f } end)
  end
  local bad = function() return 1, {} end
  T.check_error("attempt to perform arithmetic on a table value", loc,
                function() return { f = bad } end)
end)

test("select('#', pcall(g)) counts what pcall gave", function()
  local function ok3(x) return x, x + 1 end
  local function bad() error("boom") end
  local function f(x) return select('#', pcall(ok3, x)), select('#', pcall(bad)) end
  local function g(x) local n = select('#', pcall(ok3, x)) return n * 10 end
  check(f, 1)
  check(g, 2)
end)

test("{g(x)}: the interpreter's table, its length and array size", function()
  local function c1(x) local t = {uneven(x)} return t, #t end
  local function c2(x) local t = {5, uneven(x)} return t, #t end
  local function c3(x) local t = {holes(x)} return t, #t end
  local function grow(x)   -- later stores go where the VM put them
    local t = {holes(x)}
    t[#t + 1] = 9
    t[2] = 8
    return t, #t
  end
  local function loop(n)   -- one table per turn
    local all = {}
    for i = -1, n do all[#all + 1] = {uneven(i)} end
    return all, #all[1], #all[#all]
  end
  for _, a in ipairs(XS) do check(c1, a[1]); check(c2, a[1]); check(c3, a[1]); check(grow, a[1]) end
  check(loop, 3)
end)

test("{...}-style constructors ending in a function value's values", function()
  local function un(t) local c = {table.unpack(t)} return c, #c end
  local function un2(t) local c = {0, table.unpack(t, 1, t.n)} return c, #c end
  local function m(o, x) local c = {o:get(x)} return c, #c end
  local obj = { get = function(self, x) if x > 0 then return x, self, "s" end return nil end }
  check(un, {})
  check(un, {1, 2.5, "x"})
  local big = {}
  for i = 1, 40 do big[i] = i * 1.5 end
  check(un, big)   -- more values than any fixed cap
  check(un2, {n = 3, nil, nil, 3})
  check(un2, {n = 2, 1, nil})
  check(m, obj, 1)
  check(m, obj, -1)
  local function fwd(f, ...) local t = {f(...)} return #t, t end   -- t = {f(...)}
  local function two(a, b) return b, a end
  check(fwd, two, 1, 2)
  check(fwd, two)
  check(fwd, table.pack, 1, nil, 3)
  T.check_error("attempt to call a nil value (method 'get')", m, function() return {}, 1 end)
end)

test("such constructors built in a loop survive a collection at every step", function()
  local function strs(i) return "s" .. i, { i }, i end
  local function dyn(i) if i % 2 == 0 then return { i }, "e" .. i end return {} end
  local function build(n)
    local all = {}
    for i = 1, n do
      all[#all + 1] = { table.unpack({ strs(i) }) }   -- a function value's, strings and tables
      all[#all + 1] = { i, dyn(i) }
    end
    return all
  end
  collectgarbage("incremental", 0, 1000, 0)   -- no pause, the smallest steps
  local ok, err = pcall(check, build, 60)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  if not ok then error(err, 0) end
end)

test("vararg literals and constructors with fields given such values compile (test_refuse29.lua)", function()
  local function lit_dyn(x) local h = function(...) return select('#', ...) end return h(uneven(x)) end
  local function lit_val(t) local h = function(...) return select('#', ...) end return h(t.f(t.x)) end
  local function fields(x) local r = {n = 1, uneven(x)} return #r, r end
  local function fields_val(t) local r = {n = 1, t.f(t.x)} return #r, r end
  for _, x in ipairs({ -1, 0, 1 }) do
    check(lit_dyn, x); check(fields, x)
    T.check(lit_val, function() return { f = uneven, x = x } end)
    T.check(fields_val, function() return { f = uneven, x = x } end)
  end
end)
