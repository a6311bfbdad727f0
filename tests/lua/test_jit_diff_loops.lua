-- Differential tests: the numeric for loop (Lua 5.4 manual §3.3.5).
-- Integer loop when start and step are integers (the limit is floored or
-- ceiled and clipped), iteration count fixed before the loop, no
-- wrap-around, step 0 raises, the loop variable is a copy.
local D = require "difftest"

local MAXI, MINI = math.maxinteger, math.mininteger
local HUGE, NAN = math.huge, 0 / 0

---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------
-- integer loops (start and step integers; the limit may be a float)
local function for_int(a, b, c)
  local s, n, first, last = 0, 0, 0, 0
  for i = a, b, c do
    if n == 0 then first = i end
    s = s + i
    n = n + 1
    last = i
  end
  return n, s, first, last
end

local function for_int_default_step(a, b)
  local n, last = 0, 0
  for i = a, b do
    n = n + 1
    last = i
  end
  return n, last
end

-- float loops (start or step is a float)
local function for_float(a, b, c)
  local s, n, last = 0.0, 0, -1.0
  for x = a, b, c do
    s = s + x
    n = n + 1
    last = x
  end
  return n, s, last
end

local function for_step_param(c)
  local n = 0
  for _ = 1, 10, c do n = n + 1 end
  return n
end

local function for_float_step_param(c)
  local n = 0
  for _ = 1.0, 10.0, c do n = n + 1 end
  return n
end

local function loop_var_copy(n)
  local s, iters = 0, 0
  for i = 1, n do
    i = i * 10
    s = s + i
    iters = iters + 1
  end
  return iters, s
end

local function limit_evaluated_once(n)
  local iters = 0
  for _ = 1, n do
    n = n - 1
    iters = iters + 1
  end
  return iters, n
end

local function step_evaluated_once(step)
  local iters = 0
  for _ = 1, 20, step do
    step = step + 1
    iters = iters + 1
  end
  return iters, step
end

local function triangular(n)
  local c = 0
  for i = 1, n do
    for j = i, n do
      c = c + j - i + 1
    end
  end
  return c
end

local function break_at(n, stop)
  local last = 0
  for i = 1, n do
    if i == stop then break end
    last = i
  end
  return last
end

local function break_huge_limit(stop)
  local n = 0
  for i = 1, HUGE do
    n = n + 1
    if i >= stop then break end
  end
  return n
end

local function break_maxint_limit(stop)
  local n = 0
  for i = MAXI - 100, MAXI do
    n = n + 1
    if i >= MAXI - 100 + stop then break end
  end
  return n
end

local function float_accumulation_count(step)
  local n = 0
  for _ = 0.0, 1.0, step do n = n + 1 end
  return n
end

local function countdown(n)
  local s = 0
  for i = n, 1, -1 do s = s * 10 + i end
  return s
end

local function loop_var_float_use(n)
  local acc = 0.0
  for i = 1, n do acc = acc + i * 0.5 end
  return acc
end

local function sum_squares_float(a, b, h)
  local acc = 0.0
  for x = a, b, h do acc = acc + x * x end
  return acc
end

local function nested_dependent(n)
  local s = 0
  for i = 1, n do
    for j = 1, i do
      for k = j, i, 2 do
        s = s + k
      end
    end
  end
  return s
end

local function loop_goto_continue_float(n)
  local acc = 0.0
  for i = 1, n do
    if i % 4 == 0 then goto continue end
    acc = acc + 1.0 / i
    ::continue::
  end
  return acc
end

local function harmonic(n)
  local h = 0.0
  for k = n, 1, -1 do h = h + 1 / k end
  return h
end

local function for_return_inside(n)
  for i = 1, n do
    if i * 7 % 5 == 3 then return i end
  end
  return 0
end

local function empty_body(a, b)
  for _ = a, b do end
  return 1
end

local function big_steps()
  -- several integer loops whose counts are computed without overflow
  local c1, c2, c3, c4 = 0, 0, 0, 0
  for _ = MAXI - 10, MAXI, 7 do c1 = c1 + 1 end
  for _ = MINI + 10, MINI, -7 do c2 = c2 + 1 end
  for _ = MINI, MAXI, MAXI do c3 = c3 + 1 end
  for _ = MAXI, MINI, MINI do c4 = c4 + 1 end
  return c1, c2, c3, c4
end

local function newton_sqrt(x)
  local g = x / 2
  for _ = 1, 50 do
    local nx = (g + x / g) / 2
    if nx == g then break end
    g = nx
  end
  return g
end

local function count_below(n, lim)
  local c = 0
  for i = 1, n do
    if i < lim then c = c + 1 end
  end
  return c
end

local function float_loop_var_compare(n)
  local c = 0
  for x = 0.5, n, 0.5 do
    if x == x // 1 then c = c + 1 end
  end
  return c
end


local function nested_same_name(n)
  local s = 0
  for i = 1, n do
    for i = 1, i do s = s + i end
  end
  return s
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
test("integer for basic", function()
  D.cases(for_int, {1, 10, 1}, {10, 1, -1}, {10, 1, -3}, {1, 10, 3}, {5, 5, 1},
    {-5, 5, 2}, {0, 100, 7})
end)

test("integer for zero iterations", function()
  D.cases(for_int, {1, 0, 1}, {0, 1, -1}, {5, 4, 1}, {MAXI, MINI, 1}, {MINI, MAXI, -1})
end)

test("integer for near maxinteger does not wrap", function()
  D.cases(for_int, {MAXI - 2, MAXI, 1}, {MAXI - 5, MAXI, 2}, {MAXI, MAXI, 1},
    {MAXI, MAXI, MAXI}, {MAXI - 10, MAXI, 7}, {1, MAXI, MAXI // 2}, {0, MAXI, MAXI},
    {MAXI - 1, MAXI, 1})
end)

test("integer for near mininteger does not wrap", function()
  D.cases(for_int, {MINI, MINI + 2, 1}, {MINI + 2, MINI, -1}, {MINI, MINI, -1},
    {MINI + 10, MINI, -7}, {0, MINI, MINI}, {-1, MINI, MINI}, {MINI, MAXI, MAXI},
    {MAXI, MINI, MINI}, {-1, MINI, MINI // 2})
end)

test("integer for with float limit", function()
  D.cases(for_int, {1, 3.5, 1}, {1, -0.5, 1}, {3, 2.5, -1}, {10, 0.5, -2},
    {1, HUGE, MAXI // 4}, {1, -HUGE, 1}, {-1, -HUGE, MINI // 4}, {1, NAN, 1},
    {1, 3.0, 1}, {1, 2 ^ 53, 4503599627370496}, {0, 1e100, MAXI}, {0, -1e100, MINI},
    {-3, -0.5, 1}, {3, 0.5, -1}, {1, 1e-300, 1})
end)

test("integer for default step", function()
  D.cases(for_int_default_step, {1, 10}, {1, 0}, {MAXI - 3, MAXI}, {MINI, MINI + 3},
    {1, 2.9}, {-3, -3.5})
end)

test("float for loops", function()
  D.cases(for_float, {0.0, 1.0, 0.25}, {1, 2, 0.5}, {1.0, 3, 1}, {0.5, 3, 1},
    {1.0, 0.0, -0.25}, {2.5, 1, -0.5}, {0.0, -1.0, 0.5}, {1, 0, 0.5},
    {1e15, 1e15 + 4, 1.0}, {-1.5, 1.5, 0.75}, {0.0, NAN, 1.0}, {NAN, 1.0, 1.0},
    {0.0, 1.0, HUGE}, {0.0, -1.0, -HUGE}, {-0.0, 0.0, 1.0})
end)

test("float for with limit overflowing integers", function()
  D.cases(for_float, {0.0, 1e300, 1e299}, {9.2e18, 9.3e18, 2e16})
end)

test("for step zero raises", function()
  D.cases(for_step_param, {1}, {3}, {-1})
  D.cases_error("'for' step is zero", for_step_param, {0})
end)

test("float for step zero raises", function()
  D.cases(for_float_step_param, {1.0}, {2.5}, {-1.0})
  D.cases_error("'for' step is zero", for_float_step_param, {0.0}, {-0.0})
end)

test("loop variable is a copy", function()
  D.cases(loop_var_copy, {0}, {1}, {5}, {100})
end)

test("limit evaluated once", function()
  D.cases(limit_evaluated_once, {0}, {5}, {17})
end)

test("step evaluated once", function()
  D.cases(step_evaluated_once, {1}, {3}, {25})
end)

test("triangular nested loops", function()
  D.cases(triangular, {0}, {1}, {10}, {50})
end)

test("break at a value", function()
  D.cases(break_at, {10, 5}, {10, 20}, {0, 1}, {10, 1})
end)

test("infinite float limit with break", function()
  D.cases(break_huge_limit, {1}, {10}, {1000})
end)

test("maxinteger limit with break", function()
  D.cases(break_maxint_limit, {0}, {50}, {100}, {1000})
end)

test("float loop counts with rounding", function()
  D.cases(float_accumulation_count, {0.1}, {0.25}, {1 / 3}, {0.3}, {0.7}, {2.0})
end)

test("countdown", function()
  D.cases(countdown, {0}, {1}, {9})
end)

test("integer loop variable in float arithmetic", function()
  D.cases(loop_var_float_use, {0}, {10}, {1001})
end)

test("sum of squares float loop", function()
  D.cases(sum_squares_float, {0.0, 1.0, 0.1}, {-1.0, 1.0, 0.125}, {1.0, 0.0, -0.1},
    {0.0, 0.0, 1.0})
end)

test("nested dependent loops with step", function()
  D.cases(nested_dependent, {0}, {1}, {7}, {20})
end)

test("goto continue with float accumulator", function()
  D.cases(loop_goto_continue_float, {0}, {10}, {1000})
end)

test("harmonic backwards", function()
  D.cases(harmonic, {1}, {10}, {10000})
end)

test("return inside for", function()
  D.cases(for_return_inside, {0}, {1}, {3}, {10})
end)

test("empty loop body", function()
  D.cases(empty_body, {1, 1000}, {MAXI - 5, MAXI}, {1, 0})
end)

test("big steps without overflow", function()
  D.check(big_steps)
end)

test("newton sqrt with break", function()
  D.cases(newton_sqrt, {2.0}, {100.0}, {1e-10}, {1e300})
end)

test("integer loop variable compared with a float limit", function()
  D.cases(count_below, {10, 5.5}, {10, -1.0}, {10, 2 ^ 53}, {10, NAN}, {10, 3})
end)

test("float loop variable compared with its floor", function()
  D.cases(float_loop_var_compare, {0}, {5}, {7.5})
end)

test("nested loops with the same variable name", function()
  D.cases(nested_same_name, {0}, {5}, {20})
end)
