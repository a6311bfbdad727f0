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
-- callee in the ordinary convention (Lua values, a result count that
-- varies; until session 19 also an integer-or-float result) neither tests
-- for that error nor keeps it: given the garbage, it raised an error of
-- its own over the first (difffuzz 420413: `h1(math.max(h1(1.5), p))`,
-- math.max's "attempt to compare number with nil" over h1's first error).
-- Now a caller of an ordinary callee is not pure itself (cg_func.c
-- pure_convention_fits, in kfa_mark_pure's fixpoint): it stops at the
-- first error like any ordinary function; and an integer-or-float result
-- is pure (ordinary and h1 below are).
local function fails_at_5(n)       -- pure (an integer); raises for n == 5
  local none
  if n == 5 then return none + n end
  return n
end
local function ordinary(x)         -- an integer or a float (ordinary before); raises for x <= 0
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

test("a pure caller keeps its callee's error before calling a number-valued callee", function()
  D.check(pure_then_ordinary, 3)
  D.check(pure_then_ordinary, 20)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_ordinary, 5)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_ordinary, -1)
  for _, p in ipairs{ 0, 2.5, -3 } do
    D.check_error("attempt to perform arithmetic on a nil value (local 'z3')", h1_twice, p)
  end
end)

test("an integer-or-float result is pure too: value and flag in two registers", function()
  -- (opt 0: the specializations stay apart; a pure one returns its value
  -- and takes a call depth, an ordinary one returns an i32 status)
  local f = kjit.jit(pure_then_ordinary, { opt = 0 })
  f(3)
  local ir = f:inspect("llvm")
  local function ret_of(fn)
    local line = debug.getinfo(fn, "S").linedefined
    return ir:match("define internal ([%w{}, ]-) @kjit_f%d+_s%d+_[%w_]-_" .. line .. "%(")
  end
  eq(ret_of(ordinary), "{ i64, i1 }", "ordinary (an integer or a float):\n" .. ir)
  eq(ret_of(pure_then_ordinary), "i1", "pure_then_ordinary (pure: its callees are)")
  eq(ret_of(fails_at_5), "i64", "fails_at_5")
end)

-- The other kinds of callee the pure convention cannot carry, each called
-- after a pure callee that may fail: one holding Lua values (it reads a
-- Lua table: frames), one whose result count varies; and their own errors.
local ENTRIES = { 10, 20, 30, "forty", {} }   -- (mixed: read as Lua values)
local function entry_or_fail(i)    -- Lua values (ENTRIES[i]); raises for a missing entry
  local v = ENTRIES[i]
  if v == nil then local none return none + i end
  if v > 15 then return 1 end
  return 0
end
local function pure_then_frames(n)   -- a boolean; no Lua values of its own
  local r = fails_at_5(n)
  return entry_or_fail(r) > 0
end
local function one_or_none(x)      -- returns one value or none; raises for x < 0
  local none
  if x < 0 then return none // x end
  if x > 2 then return x end
end
local function pure_then_dyncount(n)
  local r = fails_at_5(n)
  local y = one_or_none(r)
  return y == nil
end

-- A callee holding Lua values has frames: neither it nor its caller is
-- pure (uses_deep). Its caller is ordinary, with its IR, and in a chain
-- calls of pure callees stay pure.
local function fact_frames()
  local f = kjit.jit(pure_then_frames, { opt = 0 })
  f(1)
  local ir = f:inspect("llvm")
  local function ret_of(fn)
    local line = debug.getinfo(fn, "S").linedefined
    return ir:match("define internal ([%w{}, ]-) @kjit_f%d+_s%d+_[%w_]-_" .. line .. "%(")
  end
  eq(ret_of(pure_then_frames), "i32", "pure_then_frames (calls one with frames):\n" .. ir)
  eq(ret_of(entry_or_fail), "i32", "entry_or_fail (Lua values)")
  eq(ret_of(fails_at_5), "i64", "fails_at_5")
end

test("a pure-looking caller of a callee with frames or a varying result count", function()
  fact_frames()
  D.cases(pure_then_frames, {1}, {2}, {3})
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_frames, 5)
  D.check_error("attempt to compare", pure_then_frames, 4)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_frames, 6)
  D.cases(pure_then_dyncount, {1}, {3}, {0})
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_dyncount, 5)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", pure_then_dyncount, -2)
end)

-- A pure caller that runs on after a callee failed still charges the poll
-- countdown at its calls; a poll there called the count hook (or took a
-- kjit_interrupt request) and recorded its error over the first one. Here
-- the error comes at the bottom of a 500-deep recursion, and each level,
-- running on, makes 200 more calls: some 100000 charges after the error
-- (a poll every 65536), a few hundred before it (none). The hook raises
-- at its first call; with a huge count it never fires in the interpreter.
local HUGE = 1 << 30
local climb = load("local fails_at_5 = ...\n" .. [[
local climb
function climb(n)
  if n == 0 then return fails_at_5(5) end
  local a = climb(n - 1)
  if a == 1 then a = 2 end
  return a]] .. string.rep(" + climb(0)", 200) .. "\nend\nreturn climb\n", "=climb")(fails_at_5)

test("a pure caller running on after an error does not poll over it", function()
  local calls = 0
  local ok, err = pcall(function()
    debug.sethook(function() calls = calls + 1; debug.sethook(); error("the hook ran", 0) end, "", HUGE)
    D.check_error("attempt to perform arithmetic on a nil value (local 'none')", climb, 500)
  end)
  debug.sethook()
  truthy(ok, tostring(err))
  eq(calls, 0, "hook calls")
end)

-- Pure functions whose result is an integer or a float (value and flag
-- in two registers): subtypes kept, errors the first one, at their line.
local function mix(n)              -- an integer or a float, by n
  if n <= 0 then return 0 end
  local r = mix(n - 1)
  if n == 13 then local none return none * r end
  if n % 3 == 0 then return r + 0.5 end
  return r + 1
end
local function mix_twice(a, b)     -- two failing calls: the first error wins
  return mix(a) + mix(b) * 2
end
local function mix_half(x)         -- x or x / 2: an integer or a float
  if x > 100 then return x / 2 end
  return x
end
local function mix_chain(n)        -- a boolean over number-valued pure callees
  return mix_half(mix(n)) < mix_half(n * 30)
end

test("pure functions with an integer-or-float result", function()
  D.cases(mix, {0}, {1}, {2}, {3}, {12})
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", mix, 13)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", mix, 20)
  D.cases(mix_twice, {2, 3}, {5, 12})
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", mix_twice, 14, 2)
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", mix_twice, 2, 15)
  D.cases(mix_half, {3}, {300}, {2.5})
  D.cases(mix_chain, {2}, {5}, {12})
  D.check_error("attempt to perform arithmetic on a nil value (local 'none')", mix_chain, 13)
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
