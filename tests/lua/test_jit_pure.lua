-- test_jit_pure.lua: "pure" functions (one number or boolean result, no
-- loops, no array stores, only pure callees, no error()) return their value
-- in a register and report failures through err->kind alone; a pure caller
-- does not test after each call (ir_facts.c kfa_mark_pure). These tests pin the
-- semantics of that convention against the interpreter: errors are the
-- first one raised, at the right line, and nothing happens after them.
local D = require "difftest"
local kjit = D.kjit

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function risky(n)          -- pure; fails for n == 5 ("attempt to divide by zero")
  return 100 // (n - 5)
end
local function sum_risky(n)      -- pure recursion over a failing callee
  if n <= 0 then return 0 end
  return risky(n) + sum_risky(n - 1)
end
local function first_error(a, b) -- two failing calls: the first one must win
  return 7 // (a - a) + risky(b)
end

local is_odd
local function is_even(n) if n == 0 then return true end return is_odd(n - 1) end
function is_odd(n) if n == 0 then return false end return is_even(n - 1) end

local function halfsum(x, y) return (x + y) * 0.5 end        -- f64
local function clamp(v, lo, hi) if v < lo then return lo elseif v > hi then return hi end return v end

local function reads(a, i)       -- pure: reads an array (bounds errors possible)
  if i <= 0 then return 0.0 end
  return a[i] + reads(a, i - 1)
end

local function impure_caller(a, n)   -- not pure (stores): must stop at the error
  local v = risky(n)
  a[1] = 99
  return v
end

test("fib and friends agree with the interpreter", function()
  for _, n in ipairs{ 0, 1, 2, 10, 25 } do D.check(fib, n) end
  for _, n in ipairs{ 0, 1, 7, 100 } do D.check(is_even, n); D.check(is_odd, n) end
  D.check(halfsum, 1.5, 2); D.check(halfsum, 3, 4)
  D.cases(clamp, {5, 0, 10}, {-1, 0, 10}, {11, 0, 10}, {2.5, 0, 10})
  local a = kjit.arange(10, "f64")
  D.check(reads, a, 10)
end)

test("errors in pure functions: message, line, and the first one wins", function()
  D.check(sum_risky, 4)
  D.check_error("attempt to divide by zero", sum_risky, 8)
  D.check_error("attempt to divide by zero", first_error, 1, 5)
  D.check_error("out of bounds", reads, kjit.arange(3, "f64"), 5)
end)

test("a non-pure caller stops at a pure callee's error (no later store)", function()
  local a = kjit.zeros(2)
  D.check(impure_caller, a, 3)
  D.check_error("attempt to divide by zero", impure_caller, kjit.zeros(2), 5)
end)

-- A pure caller runs on after a pure callee failed (its value garbage); a
-- callee in the ordinary convention (a result that is an integer or a
-- float) neither tests for that error nor keeps it, so the caller must stop
-- before calling one: else the ordinary callee, given the garbage, raised
-- an error of its own over the first (difffuzz 420413:
-- `h1(math.max(h1(1.5), p))`, math.max's "attempt to compare number with
-- nil" over h1's first error).
local function fails_at_5(n)       -- pure (an integer); raises for n == 5
  local none
  if n == 5 then return none + n end
  return n
end
local function ordinary(x)         -- an integer or a float; raises for x <= 0
  local none
  if x <= 0 then return none * x end
  if x > 10 then return x * 0.5 end
  return x
end
local function pure_then_ordinary(n)   -- pure (a boolean)
  local r = fails_at_5(n)
  return ordinary(r) < 100
end
local function h1(p1)              -- the fuzzer's: an f64 and a number specialization
  local z1 = math.tointeger(p1 + 0.5)
  local x2 = math.max(-1.0, z1)
  local z3
  x2 = z3 + p1
  return p1
end
local function h1_twice(p1) local x = h1(math.max(h1(1.5), p1)) return 1 end

test("a pure caller keeps its callee's error before calling an ordinary callee", function()
  D.check(pure_then_ordinary, 3)
  D.check(pure_then_ordinary, 20)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_ordinary, 5)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_ordinary, -1)
  for _, p in ipairs{ 0, 2.5, -3 } do
    D.check_error("attempt to perform arithmetic on a nil value (local 'z3')", h1_twice, p)
  end
end)

test("deep pure recursion is a stack overflow error at the call", function()
  -- (3 * down() + 1 is not an accumulator form: the recursion stays)
  local function down(n) if n == 0 then return 0 end return 3 * down(n - 1) % 1000003 + 1 end
  local f = kjit.jit(down)
  eq(f(1000), down(1000), "shallow")
  local ok, err = pcall(f, 100000000)
  truthy(not ok and err:find("test_jit_pure.lua:%d+: stack overflow"), tostring(err))
  eq(f(10), down(10), "usable after the overflow")
end)

test("an accumulator-recursive pure function runs as a loop, to a depth limit", function()
  local function count(n) if n == 0 then return 0 end return 1 + count(n - 1) end
  local function forever(n) return forever(n + 1) end
  -- LLVM turns these recursions into loops (no C stack growth): a depth
  -- count keeps the limit, so infinite recursion still ends in an error
  -- (1e6 calls deep, about where the interpreter's stack ends)
  local f = kjit.jit(count)
  eq(f(500000), 500000, "count")
  local ok, err = pcall(f, 5000000)
  truthy(not ok and err:find("stack overflow", 1, true), tostring(err))
  ok, err = pcall(kjit.jit(forever), 1)
  truthy(not ok and err:find("stack overflow", 1, true), tostring(err))
end)

test("fib compiles to one recursive call (tail-recursion elimination)", function()
  if not kjit.jit then skip("no kjit.jit") end
  local f = kjit.jit(fib)
  f(3)
  local ir = f:inspect("llvm")
  local name = ir:match("define internal [%w]* ?i64 @(kjit_f%d+_s%d+_[%w_]+)")
  truthy(name, "the specialization in:\n" .. ir)
  local calls = 0
  for _ in ir:gmatch("call [%w ]*i64 @" .. name .. "%(") do calls = calls + 1 end
  eq(calls, 2, "calls to " .. name .. " (the entry's and one recursive call)")
end)
