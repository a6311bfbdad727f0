-- Differential tests: multiple results flowing through calls (Lua 5.4
-- manual §3.4.12): a call as the last argument (or last return value)
-- passes all its results, elsewhere exactly one. Kept in its own file so
-- that a crash here does not hide the rest of the calls corpus.
local D = require "difftest"

local function two(a, b)
  return a // b, a % b
end

local function add2(x, y) return x + y end
local function expand_last_arg(a, b)
  -- a call as the last argument passes all its results
  return add2(two(a, b))
end
local function truncate_middle_arg(a, b)
  -- a call that is not the last argument passes one result
  return add2(two(a, b), 100)
end
local function builtin_expand(a, b)
  return math.max(two(a, b)), math.min(1000, two(a, b))
end
local function swap_ret(a, b) return b, a end
local function nested_multi(a, b)
  return swap_ret(swap_ret(a, b))
end

local jtwo = D.jit(two)
local function jit_callee_multi(a, b)
  local q, r = jtwo(a, b)
  return r, q
end
local function local_multi_trunc(a, b)
  local x, y = two(a, b), 5
  return x, y
end
local function assign_multi(a, b)
  local x, y = 0, 0
  x, y = two(a, b)
  return y, x
end
local function divmod_rec(a, b, depth)
  if depth == 0 then return two(a, b) end
  local q, r = divmod_rec(a, b, depth - 1)
  return q + 1, r
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
test("call as the last argument expands", function()
  D.cases(expand_last_arg, {17, 5}, {-17, 5}, {17.5, 5})
end)

test("call as a middle argument truncates", function()
  D.cases(truncate_middle_arg, {17, 5}, {-17, 5})
end)

test("multiple results into math.max/min", function()
  D.cases(builtin_expand, {17, 5}, {-17, 5}, {5, 17})
end)

test("nested multiple results", function()
  D.cases(nested_multi, {1, 2}, {1.5, -2.5})
end)

test("multiple results from a jit callee", function()
  D.cases(jit_callee_multi, {17, 5}, {-17, 5}, {17.5, 2})
end)

test("call before another expression in a local list truncates", function()
  D.cases(local_multi_trunc, {17, 5}, {-17, 5})
end)

test("multiple assignment from a call", function()
  D.cases(assign_multi, {17, 5}, {-17, 5})
end)

test("multiple results through recursion", function()
  D.cases(divmod_rec, {17, 5, 0}, {17, 5, 3}, {-17.5, 5, 2})
end)
