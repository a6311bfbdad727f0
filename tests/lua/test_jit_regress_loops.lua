-- test_jit_regress_loops.lua: loops after loops (issue 22, items 4 and
-- 5, found by a differential fuzzer): a counter one loop leaves to the
-- next. Every case is differential (interpreted vs compiled) at each opt
-- level; each failed (wrong result or hang) before its fix.
local kjit = require "kjit"
local D = require "difftest"

-- A compiled loop that never ends must fail the test, not hang it: the
-- count hook runs at each poll of compiled code (about every 65536
-- iterations) and stops it after a few; the interpreted runs here are far
-- shorter than one hook period.
local function bounded(fn, ...)
  local polls = 0
  debug.sethook(function()
    polls = polls + 1
    if polls > 20 then error("runaway loop", 0) end
  end, "", 1000000)
  local ok, err = pcall(fn, ...)
  debug.sethook()
  if not ok then error(err, 0) end
end

local function all_opts(fn, ...)
  for opt = 0, 3 do bounded(D.check_opts, {opt = opt}, fn, ...) end
end

-- Item 5: two `while true` loops sharing a counter; the first has a second
-- exit. LLVM 14's loop strength reduction (in the code generator) rewrote
-- the second loop's exit test from the first loop's counter off by one:
-- where the second loop stops at once (n is already past 60) it ran 2^64
-- times. Called once with an argument and once with a constant (inlined,
-- a == 5 folded).
local function two_whiles(a)
  local n = 0
  while true do
    n = n + 1
    if a == 5 then break end
    if n > 60 then break end
  end
  while true do
    n = n + 1
    if n > 60 then break end
  end
  return n
end
local function calls_two_whiles(x) return two_whiles(x) + two_whiles(3) end

local function repeat_then_while(a)
  local steps = 0
  repeat steps = steps + 1 until steps > 300 or a > 1000
  while true do steps = steps + 1 if steps > 300 then break end end
  return steps
end

test("a loop whose counter comes from a loop with two exits stops (item 5)", function()
  for _, a in ipairs{7, 5, 60, 61} do
    all_opts(two_whiles, a)
    all_opts(calls_two_whiles, a)
  end
  for _, a in ipairs{400, 2000, -1} do all_opts(repeat_then_while, a) end
end)

-- Item 4: the same miscompile where the later loop has another exit: the
-- guard `if steps > 300 then break end` of a float for loop never fired
-- and the loop ran all its iterations (6.0 instead of 1e308). The goto
-- loop at the end never runs its body.
local function guard_in_float_for(a, c)
  local steps = 0
  local r = 1e308
  repeat steps = steps + 1 until steps > 301 or a > 1000
  for x = 1.0, c * 6 do
    if steps > 300 then break end
    steps = steps + 1; r = x
  end
  ::top:: if a < 0 then steps = steps + 1; a = a + 1; goto top end
  return r, steps
end
local function guard_after_while(a, c)
  local steps = 0
  local r = 1e308
  while true do steps = steps + 1 if a == 5 then break end if steps > 301 then break end end
  for x = 1.0, c * 6 do
    if steps > 300 then break end
    r = x; steps = steps + 1
  end
  return r, steps
end

test("a loop guard on a counter from an earlier loop holds (item 4)", function()
  for _, a in ipairs{300, 1001, 5, -2} do
    all_opts(guard_in_float_for, a, 1.0)
    all_opts(guard_after_while, a, 1.0)
  end
end)
