-- Differential tests: varargs and multiple values in compiled code (issue
-- 29 item 4): '...' in compiled functions and in the Lua functions they
-- call, select('#', ...) and select(i, ...) (negative i, its errors),
-- table.pack and {...}, passing all values on (f(...), return ...), and
-- functions whose returns give values of different kinds. The interpreted
-- function is the specification: results with their subtypes and their
-- count, tables key by key, errors with file:line (tablediff.lua).
local T = require "tablediff"
local kjit = require "kjit"

-- check(fn, ...): fn(...) interpreted and compiled, every result and its
-- count compared (tables key by key).
local check = T.check_args
local check_error = T.check_error_args
-- cases(fn, {args}, ...): check on each argument list (its n when given).
local function cases(fn, ...)
  for _, a in ipairs({...}) do check(fn, table.unpack(a, 1, a.n or #a)) end
end

---------------------------------------------------------------------------
-- '...' in the compiled function itself (an entry point called with any
-- number of arguments)
---------------------------------------------------------------------------
local function count(...) return select('#', ...) end
local function firsts(...) local a, b, c = ... return c, b, a end
local function all(...) return ... end
local function after(x, ...) return x, ... end
local function pack(...) local t = table.pack(...) return t, t.n end
local function ctor(...) local t = {...} return #t, t end
local function ctor_mixed(a, ...) return {a, ..., n = select('#', ...)}, {..., a} end

test("select('#', ...) counts every value, trailing nils included", function()
  cases(count, {}, {1}, {1, 2.5, true}, {n = 2, 1, nil}, {n = 3, nil, nil, nil}, {n = 1})
end)

test("local a, b, c = ... (missing values are nil)", function()
  cases(firsts, {}, {1}, {1, 2}, {1, 2.5, false, 4}, {n = 2, nil, 7})
end)

test("return ... gives every value, with subtypes", function()
  cases(all, {}, {1}, {1, 2.0, -0.0}, {n = 3, 1, nil, nil}, {true, false, "s"})
  cases(after, {}, {1}, {1, 2, 3}, {n = 3, 1, nil, nil})
end)

test("{...} and {a, nil, c} have the interpreter's length (array part sized as the VM does)", function()
  local function f(...) local t = {...} return #t, t end
  local function g(a, b, c) local t = {a, b, c} return #t end
  local function h(a, ...) local t = {a, x = 1, ...} return #t end
  cases(f, {n = 3, 1, nil, 3}, {n = 4, nil, nil, 3, nil}, {n = 2, 1, nil})
  cases(g, {n = 3, 1, nil, 3}, {n = 3, nil, 2, 3})
  cases(h, {n = 4, 1, nil, nil, 4}, {n = 2, nil, 2})
end)

test("table.pack(...) and {...}", function()
  cases(pack, {}, {1, 2.5}, {n = 3, 1, nil, 3})
  cases(ctor, {}, {1, 2, 3}, {4.5, true, "x"})
  cases(ctor_mixed, {1}, {1, 2, 3}, {n = 3, 1, nil, 3.5})
end)

test("'...' holding tables, strings, arrays and functions", function()
  local function f(...)
    local t, s = ...
    t.k = s
    return select('#', ...), ...
  end
  T.check(f, function() return {1, 2}, "str", 3.5 end)
  local g = function(...) local a, b = ... return #a + b, a[1] end
  local a = kjit.array({1.5, 2})
  local n1, x1 = g(a, 3)
  local n2, x2 = kjit.jit(g)(a, 3)
  eq(n2, n1, "#a + b"); eq(x2, x1, "a[1]")
end)

---------------------------------------------------------------------------
-- select
---------------------------------------------------------------------------
local function sel1(...) return select(1, ...) end
local function sel2(...) return select(2, ...) end
local function selneg(...) return select(-1, ...) end
local function selneg2(...) return select(-2, ...) end
local function selpast(...) return select(5, ...) end
local function selone(...) local x = select(2, ...) return x end
local function selconst(a, b) return select(2, a, b, a + b), select('#', a, b) end
local function selzero(...) return select(0, ...) end
local function selneg_far(...) return select(-3, ...) end
local function selstr(...) return select("2", ...) end
local function selbad(...) return select("x", ...) end
local function seldyn(i, ...) local x, y = select(i, ...) return x, y end

test("select(i, ...) with constant i, negative i, past the end", function()
  cases(sel1, {}, {1}, {1, 2, 3})
  cases(sel2, {}, {1}, {1, 2.5, 3}, {n = 3, 1, nil, nil})
  cases(selneg, {1}, {1, 2, 3.5})
  cases(selneg2, {1, 2}, {1, 2, 3})
  cases(selpast, {}, {1, 2}, {1, 2, 3, 4, 5, 6})
  cases(selone, {1}, {1, 2}, {1, true, 3})
  cases(selconst, {1, 2}, {1.5, 2})
end)

test("select's errors at the caller's line", function()
  check_error("index out of range", selzero, 1, 2)
  check_error("index out of range", selneg_far, 1, 2)
  check_error("index out of range", selneg)
  cases(selneg, {n = 1, nil})
  check_error("number expected, got string", selbad, 1, 2)
  cases(selstr, {1, 2, 3})
end)

local function selat(i, ...) local x = select(i, ...) return x end
local function selat_mixed(i, ...) return (select(i, ...)) end

test("local x = select(i, ...) with i known when it runs (compiled in place)", function()
  for _, i in ipairs({1, 2, 3, 4, 9, -1, -3}) do
    check(selat, i, 10, 20.5, 30)
    check(selat_mixed, i, 1, 2.5, nil)
  end
  check_error("index out of range", selat, 0, 1)
  check_error("index out of range", selat, -4, 1, 2, 3)
  check_error("index out of range", selat_mixed, -2, 1)
  check(selat, 1)
end)

test("select(i, ...) with i known when it runs", function()
  cases(seldyn, {1, 10, 20}, {2, 10, 20}, {3, 10, 20}, {-1, 10, 20.5})
  check_error("index out of range", seldyn, 0, 1)
end)

---------------------------------------------------------------------------
-- vararg callees (specialized on how many values and their types)
---------------------------------------------------------------------------
local function vsum(...)
  local s = 0
  for i = 1, select('#', ...) do s = s + (select(i, ...)) end
  return s
end
local function vmax(first, ...)
  local m = first
  local t = {...}
  for i = 1, #t do if t[i] > m then m = t[i] end end
  return m, #t
end
local function fwd(...) return vsum(...), vmax(...) end
local function fwd2(a, ...) return count(a, ...), count(...), count(..., a) end
local function chain(...) return all(all(...)) end
local function tail(...) return after(1, ...) end

test("vararg callees with any number of values", function()
  cases(fwd, {1}, {1, 2, 3}, {1.5, 2, 3}, {3, 2, 1, 4.5, 0})
  cases(fwd2, {1}, {1, 2}, {n = 3, 1, nil, nil})
  cases(chain, {}, {1, 2.5}, {n = 2, nil, 1})
  cases(tail, {}, {2, 3})
end)

test("a vararg callee called with a different count at each call", function()
  local function f(x)
    return count(), count(x), count(x, x), vsum(x, x, x), vsum(x, 1.5)
  end
  cases(f, {1}, {2.5})
end)

test("a vararg function literal in compiled code", function()
  local function f(a, b)
    local function g(...) return select('#', ...) + a, ... end
    return g(b, b * 2)
  end
  cases(f, {1, 2}, {1.5, 2})
end)

test("a vararg callee's error is located in the callee", function()
  local function bad(...) local a = ... return a + 1 end
  local function f(...) return bad(...) end
  check_error("attempt to perform arithmetic on a nil value", f)
  check_error("attempt to perform arithmetic on a nil value", f, nil, 2)
end)

---------------------------------------------------------------------------
-- open calls pass on every value
---------------------------------------------------------------------------
local function two(a, b) return b, a end
local function opencalls(a, b)
  return {two(a, b)}, count(two(a, b)), count(two(a, b), 5), select('#', two(a, b))
end

test("{f()}, count(f()), select('#', f()) pass every result", function()
  cases(opencalls, {1, 2}, {1.5, true})
end)

test("select with a float or string index reads it as luaL_checkinteger does", function()
  local function f(...) return select(2.0, ...) end
  local function g(...) return select(" 3 ", ...) end
  local function h(...) return select(1.5, ...) end
  local function k(...) return select("1.5", ...) end
  local function c(...) return select("#x", ...) end
  cases(f, {1, 2, 3}); cases(g, {1, 2, 3, 4}); cases(c, {1, 2})
  check_error("number has no integer representation", h, 1, 2)
  check_error("number has no integer representation", k, 1, 2)
end)

---------------------------------------------------------------------------
-- results of different kinds on different paths: Lua values
---------------------------------------------------------------------------
local function tri(x)
  if x > 0 then return true elseif x < 0 then return nil end
  return x
end
local function kinds(x)
  if x > 1 then return "big" end
  if x > 0 then return false end
  if x < -1 then return {x} end
  return x * 2
end
local function uses(x)
  local a = tri(x)
  local b = kinds(x)
  if a then return a, b, tri(x) end
  return tri(x), b, a == nil
end

test("a result that is nil, a boolean, a number, a string or a table by path", function()
  cases(tri, {1}, {-1}, {0}, {0.0}, {2.5})
  cases(kinds, {2}, {1}, {-2}, {0}, {-0.5}, {0.5})
  cases(uses, {2}, {1}, {-2}, {0}, {-0.5}, {0.5})
end)

test("a mixed result used as a number checks it when it runs", function()
  local function f(x) return kinds(x) + 1 end
  cases(f, {0}, {-0.5})
  check_error("attempt to perform arithmetic on a boolean value", f, 0.5)
end)

---------------------------------------------------------------------------
-- returns of different lengths on different paths
---------------------------------------------------------------------------
local function uneven(x)
  if x > 0 then return x, x * 2 elseif x < 0 then return end
  return x
end
local function maybe(x) if x > 0 then return x end end
local function pass_on(x) return uneven(x) end
local function pass_after(x) return 1, uneven(x) end
local function take(x) local a, b = uneven(x) return b, a end
local function add2(a, b) return (a or 0) + (b or 0) end
local function into_callee(x) return add2(uneven(x)) end
local function into_value(t, x) return t.count(uneven(x)) end

test("a function whose returns give different numbers of values", function()
  local xs = {{1}, {-1}, {0}, {2.5}, {-0.0}}
  cases(uneven, table.unpack(xs))
  cases(maybe, {1}, {-1}, {0.5})
  cases(pass_on, table.unpack(xs))
  cases(pass_after, table.unpack(xs))
  cases(take, table.unpack(xs))
  cases(into_callee, table.unpack(xs))
  local function cnt(...) return select('#', ...) end
  for _, x in ipairs({1, -1, 0}) do T.check(into_value, function() return { count = cnt }, x end) end
end)

test("a recursive function returning nothing at its base case", function()
  local function walk(n, acc)
    if n == 0 then return end
    if n == 1 then return acc end
    return walk(n - 1, acc + n)
  end
  cases(walk, {0, 0}, {1, 5}, {10, 0}, {10, 0.5})
end)

test("values of such a call where their count shows compile (test_varargs_counts.lua)", function()
  local function sum(...) return select('#', ...) end
  local function f(x) return sum(uneven(x)) end
  local function t(x) local r = {uneven(x)} return r, #r end
  for _, x in ipairs({1, -1, 0}) do check(f, x); check(t, x) end
end)

test("select('#', f(x)) counts what f gave when it ran", function()
  local function g(x) return select('#', uneven(x)), select('#', 1, uneven(x)) end
  cases(g, {1}, {-1}, {0})
end)

---------------------------------------------------------------------------
-- return t.f(x), return table.unpack(t): every value a function value gives
---------------------------------------------------------------------------
local Obj = {}
Obj.__index = Obj
function Obj.get(self, x)
  if x > 0 then return x, self.name, true end
  if x < 0 then return nil, "neg" end
end
local obj = setmetatable({ name = "o" }, Obj)

test("return obj:method(x) passes on every value it gives", function()
  local function f(o, x) return o:get(x) end
  local function g(o, x) return x, o:get(x) end
  for _, x in ipairs({1, -1, 0, 2.5}) do
    T.check(f, function() return obj, x end)
    T.check(g, function() return obj, x end)
  end
end)

test("return table.unpack(t [, i [, j]])", function()
  local function f(t) return table.unpack(t) end
  local function g(t, i, j) return table.unpack(t, i, j) end
  T.check(f, function() return {} end)
  T.check(f, function() return {1, 2.5, "x", true} end)
  T.check(f, function() return {1, nil, 3} end)
  T.check(g, function() return {1, 2, 3, 4}, 2, 3 end)
  T.check(g, function() return {1, 2}, 1, 5 end)
  T.check(g, function() return {1, 2}, 3, 1 end)
end)

test("a compiled function returning a function value's values, called by compiled code", function()
  local function inner(t) return table.unpack(t) end
  local function f(t) local a, b = inner(t) return b, a, inner(t) end
  T.check(f, function() return {5, 6, 7} end)
  T.check(f, function() return {} end)
end)

test("more values than compiled code passes on: a located error saying what to do", function()
  local function f(t) return table.unpack(t) end
  local big = {}
  for i = 1, 20 do big[i] = i end
  local ok, err = pcall(kjit.jit(f), big)
  truthy(not ok and err:find("test_varargs.lua:%d+: .*returned more than %d+ values.*into locals"),
         "located error: " .. tostring(err))
  eq(select('#', f(big)), 20, "interpreted")
end)

test("'...' and kjit.prange: read before a parallel loop, refused inside it (located)", function()
  local function f(out, ...)
    local a, b = ...
    local n = select('#', ...)
    for i in kjit.prange(1, #out) do out[i] = i * n + a * b end
    return out[#out]
  end
  local o1, o2 = kjit.zeros(8), kjit.zeros(8)
  eq(kjit.jit(f, { parallel = true })(o1, 10, 2.5), f(o2, 10, 2.5), "result")
  for i = 1, 8 do eq(o1[i], o2[i], "out[" .. i .. "]") end
  local function g(out, ...)
    for i in kjit.prange(1, #out) do out[i] = i + select(1, ...) end
  end
  local ok, err = pcall(kjit.jit(g, { parallel = true }), kjit.zeros(4), 1)
  truthy(not ok and err:find("test_varargs.lua:%d+: .*a parallel kjit.prange loop cannot read '...'"),
         "located refusal: " .. tostring(err))
  -- serially (no parallel option) the same loop compiles and runs
  local o3, o4 = kjit.zeros(4), kjit.zeros(4)
  kjit.jit(g)(o3, 1.5); g(o4, 1.5)
  for i = 1, 4 do eq(o3[i], o4[i], "serial out[" .. i .. "]") end
end)

test("select on '...' compiles to code that exports and caches like any other", function()
  local f = kjit.jit(function(...) return select('#', ...), select(2, ...) end)
  local g = kjit.load(f:export("(i64, f64, i64)"))
  local a = table.pack(g(1, 2.5, 3))
  eq(a.n, 3, "count"); eq(a[1], 3, "select('#')"); eq(a[2], 2.5, "select(2)"); eq(a[3], 3, "third")
  local function uneven(x) if x > 0 then return x, x * 2 elseif x < 0 then return end return x end
  local h = kjit.load(kjit.jit(function(x) return uneven(x) end):export("(i64)"))
  eq(select('#', h(1)), 2, "two"); eq(select('#', h(-1)), 0, "none"); eq(select('#', h(0)), 1, "one")
end)

-- difffuzz (session 19, the dynamic family): select(i, ...) over constant
-- strings (or known functions) gave a string that was no constant: refused
-- ("cannot return a string from compiled code", "the length of a string
-- that is not a constant"); the value selected keeps its constant
test("select(i, ...) of constant strings and known functions: returned, measured, called", function()
  local function g(x) return x + 1 end
  for _, n in ipairs({ 0, 2.5 }) do
    check(function(n) return select(2, "a", "b") end, n)
    check(function(n) return select(2, "a", "b", n) end, n)
    check(function(n) return select(-1, "a", "bb") end, n)
    check(function(n) local x, y = select(1, "a", "bcd"); return y, #y, #x end, n)
    check(function(n) local s = select(2, n, "xyz"); return #s .. s end, n)
    check(function(n) return (select(2, "a", "b")) end, n)
    check(function(n) return select(2, n, g)(n) end, n)
    check(function(n) return select(3, "a", "b") end, n)
  end
end)

-- difffuzz (session 20, fuzzC's list; found/select-vararg-helper-string.lua):
-- the same through a vararg helper given constant strings (its '...'):
-- select(2, ...) was refused ("cannot return a string from compiled
-- code"), `return ...`, {...}, table.pack(...) and select(k, ...) with k
-- known when it runs were internal errors ("cannot make a Lua value of a
-- string"), and `select(2, ...) == "bb"` was false
local function sel2(...) return select(2, ...) end
local function selneg(...) return select(-1, ...) end
local function selk(k, ...) local x = select(k, ...) return x end
local function all(...) return ... end
local function ctor(...) local t = {...} return #t, t[2] end
local function packed(...) local t = table.pack(...) return t.n, t[2], t[3] end
local function via(...) return sel2("x", ...) end
local function is_bb(...) local x = select(2, ...) return x == "bb", x ~= "a" end
local function joined(...) local a, b = ... return a .. b end
test("select(i, ...) of constant strings through a vararg helper", function()
  for _, n in ipairs({ 1, 2, 3, 4, 2.5 }) do
    check(function(n) local s = sel2("a", "bb") return s, #s end, n)
    check(function(n) local s, u = sel2(n, "bb", n) return s, #s, u end, n)
    check(function(n) local s = selneg("a", "bb", "ccc") return s, #s end, n)
    check(function(n) return selk(n // 1, "a", "bb", "ccc") end, n)
    check(function(n) return all("bb", n, "c") end, n)
    check(function(n) return ctor("a", "bb") end, n)
    check(function(n) return packed("a", nil, "c") end, n)
    check(function(n) return via("y", "zz") end, n)
    check(function(n) return is_bb("a", "bb") end, n)
    check(function(n) return is_bb("a", "a") end, n)
    check(function(n) return joined("a", "bb") end, n)
  end
  check_error("bad argument #1 to 'select' (index out of range)", function(n) return selk(n, "a") end, 0)
end)
