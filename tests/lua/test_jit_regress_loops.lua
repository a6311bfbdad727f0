-- test_jit_regress_loops.lua: loops after loops (issue 22, items 4, 5
-- and 7b, found by a differential fuzzer): a counter one loop leaves to
-- the next, and values of a loop emitted in two copies (peeled,
-- versioned) read after it. Every case is differential (interpreted vs
-- compiled) at each opt level; each test failed (wrong result, hang or
-- invalid LLVM module) before its fix.
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

-- Item 7b: a value made in a loop emitted in two copies (the peeled first
-- iteration and the loop proper; a versioned loop's fast and checked
-- copies) and used after it lives in a stack slot both copies write. Code
-- emitted ahead of a later loop (a peeled loop's entry values, a
-- versioned loop's range test, a prange loop's environment) read one
-- copy's instruction instead: "Instruction does not dominate all uses".
-- Here `until n >= ONE` folds to true through the upvalue, x and y change
-- type (peeled loops) and n is shared.
local ONE = 1
local function repeat_then_goto(a)
  local n = 0
  local x = 1
  repeat n = n + 1; x = x * 0.5 until n >= ONE
  local y = a
  ::top::
  n = n + 1; y = y + 0.5
  if n < a then goto top end
  return x, y, n
end
-- k from a peeled repeat loop (s: an integer, then floats) as the offset
-- or the limit of a versioned loop's accesses
local function offset_from_peeled(x, n)
  local s, k = 0, 0
  repeat k = k + 1; s = s + x[k] until k >= 2
  local acc = 0.0
  for i = 1, n do acc = acc + x[i + k] end
  return s, acc
end
local function limit_from_peeled(x, n)
  local s, k = 0, 0
  repeat k = k + 1; s = s + x[k] until k >= n
  local acc = 0.0
  for i = 1, 3 do acc = acc + x[i + k] end
  for i = 1, k do acc = acc + x[i] end
  return s, acc
end
local function goto_after_peeled_while(x, n)
  local s, k = 0, 0
  while true do k = k + 1; s = s + x[k]; if k >= n then break end end
  local acc = 0
  local j = k
  ::top:: j = j - 1; acc = acc + x[j + 1]; if j > 0 then goto top end
  return s, acc
end

test("values of a peeled loop read ahead of the next loop (item 7b)", function()
  for _, a in ipairs{7, 1, 0} do all_opts(repeat_then_goto, a) end
  local x = kjit.array({1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5}, "f64")
  for _, n in ipairs{3, 1, 6, 7} do
    all_opts(offset_from_peeled, x, n)
    all_opts(limit_from_peeled, x, n)
    all_opts(goto_after_peeled_while, x, n)
  end
end)

-- A loop entered straight from another loop's exit (no code between):
-- the entry block is emitted in each copy of that loop, so the later
-- loop is not peeled (its peeled header has no phis to join them).
local function while_into_goto(x, n)
  local s, k, y = 0, 0, 0
  while k < n do k = k + 1; s = s + x[k] end
  ::top::
  y = y + x[k]; k = k - 1
  if k > 0 then goto top end
  return s, y
end
local function repeat_into_goto(x, n)
  local s, k, y = 0, 0, 0
  repeat k = k + 1; s = s + x[k] until k >= n
  ::top::
  y = y + x[k]; k = k - 1
  if k > 0 then goto top end
  return s, y
end
local function while_into_while(x, n)
  local s, k, y = 0, 0, 0
  while k < n do k = k + 1; s = s + x[k] end
  while k > 0 do y = y + x[k]; k = k - 1 end
  return s, y
end
local function for_into_goto(x, n)   -- x i64: the for loop is versioned
  local s = 0
  for i = 1, n do s = s + x[i] end
  ::top::
  s = s + 0.5; n = n - 1
  if n > 0 then goto top end
  return s
end

test("a loop straight after another loop's exit", function()
  local x = kjit.array({1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5}, "f64")
  local xi = kjit.array({1, 2, 3, 4, 5, 6, 7, 8}, "i64")
  for _, n in ipairs{3, 1, 8} do
    all_opts(while_into_goto, x, n)
    all_opts(repeat_into_goto, x, n)
    all_opts(while_into_while, x, n)
    all_opts(for_into_goto, xi, n)
  end
  all_opts(while_into_while, x, 0)
end)

-- A kjit.prange loop's environment (and its worker) reading k, made in a
-- peeled loop before it.
local function prange_after_peeled(x, n, out)
  local s, k = 0, 0
  repeat k = k + 1; s = s + x[k] until k >= n
  for i in kjit.prange(1, n) do out[i] = x[i] * k end
  local t = 0
  for i in kjit.prange(1, k) do t = t + x[i] end
  return s, t
end

test("a prange loop after a peeled loop", function()
  local x = kjit.array({1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5}, "f64")
  for _, par in ipairs{false, true} do
    for _, n in ipairs{3, 8} do
      bounded(D.check_opts, {parallel = par}, prange_after_peeled, x, n, kjit.zeros(8))
    end
  end
end)

-- A for loop whose bound is made from an operation that always raises
-- (`B[#g]`, g a nil global): the typer gives the bound a type (an
-- element's), the code generator knows it never runs, so the loop's
-- blocks are live for the one and unreachable for the other. Compiling
-- crashed (a null LLVM value in the forloop or a loop copy) before the
-- fix (found by fuzz_compile in CI, seed 966688002). Each bound place,
-- each loop kind, inside and around other loops (poll-free nests,
-- versioned and peeled copies, chunks), and behind a test that runs the
-- loops before the raise.
local dead_for = {
  function(B, a, n)   -- integer loop, the step
    local c = 0
    for i = n, 3, B[#dead_for_g] do c = c + i end
    for i = a, 0, 1e15 do c = c + 1 end
    return c
  end,
  function(B, a, n)   -- float loop, the limit
    local c = 0
    for i = 1.5, B[#dead_for_g], 0.5 do c = c + i end
    return c
  end,
  function(B, a, n)   -- a loop of either kind (a number-or-integer start)
    local c = 0
    for i = (n > 2 and a or n), B[#dead_for_g] do c = c + i end
    return c
  end,
  function(B, a, n)   -- the inner loop of a nest, after iterations that run
    local c = 0
    for i = 1, n do
      for j = 1, 4 do c = c + B[j] end
      if i > 2 then
        for j = 1, B[#dead_for_g] do c = c + j end
      end
    end
    return c
  end,
  function(B, a, n)   -- the outer loop of a nest
    local c = 0
    for i = 1, B[#dead_for_g] do
      for j = 1, n do c = c + B[j] end
      local k = 0
      while k < n do k = k + 1 end
      c = c + k
    end
    return c
  end,
  function(B, a, n)   -- inside a while loop, and a loop after it
    local c, k = 0, 0
    while k < n do
      k = k + 1
      c = c + B[k]
      if k == n then for j = B[#dead_for_g], 1, -1 do c = c + j end end
    end
    for j = 1, n do c = c + j end
    return c
  end,
}

test("a for loop whose bound's operand always raises compiles and raises as Lua does", function()
  local B = kjit.array({1, 2, 3, 4, 5, 6, 7, 8}, "i32")
  for _, fn in ipairs(dead_for) do
    for _, n in ipairs{0, 3, 8} do
      all_opts(fn, B, 1.5, n)
      all_opts(fn, B, 2, n)
    end
  end
end)

-- The same class in other places: an operation whose operand never comes
-- (`B[#g]`, g a nil global: the key raises) was typed as if it ran (an
-- array read as its element, a comparison as a boolean, a call as its
-- result), while the code generator knew it never runs. What depended on
-- it was live to the typer and unreachable to the generator: a kjit.prange
-- loop bounded by it inside a loop (the nest test read its bound: a crash
-- in LLVM, every tier), a branch on it, a loop behind it. Found by probing
-- each position with such an operand (session 22, branch fuzzF); the first
-- two crashed at every opt level before the fix (ir_type.c t_index,
-- t_compare, t_call).
local dead_op = {
  function(B, a, n)   -- a prange bound inside a for loop (the crash)
    for j = 1, n do
      for i in kjit.prange(1, B[#dead_op_g]) do B[i] = j end
    end
    return 0
  end,
  function(B, a, n)   -- a prange start inside a for loop
    for j = 1, n do
      for i in kjit.prange(B[#dead_op_g], 3) do B[i] = j end
    end
    return 0
  end,
  function(B, a, n)   -- a while test, after turns that run
    local c = 0
    while c < n or B[#dead_op_g] > 0 do c = c + 1; if c > 50 then break end end
    return c
  end,
  function(B, a, n)   -- a branch, a loop behind it
    local c = 0
    if n > 1 and B[#dead_op_g] == 1 then for i = 1, n do c = c + B[i] end end
    for i = 1, n do c = c + i end
    return c
  end,
  function(B, a, n)   -- a while loop counted up to it, in a loop
    local c = 0
    for i = 1, n do
      local k = 0
      while k < B[#dead_op_g] do k = k + 1; c = c + B[k % 8 + 1] end
      c = c + k
    end
    return c
  end,
  function(B, a, n)   -- a call's argument, its result a bound
    local c = 0
    if n > 2 then for i = 1, math.max(1, B[#dead_op_g]) do c = c + i end end
    return c
  end,
  function(B, a, n)   -- a key read from an array keyed by it, then a nest
    local c = 0
    for i = 1, n do
      for j = 1, #B do c = c + B[j] end
      for j = 1, B[B[#dead_op_g]] do c = c + j end
    end
    return c
  end,
  function(B, a, n)   -- a local table keyed by it
    local t = { 1, 2, 3 }
    local c = 0
    for i = 1, n do c = c + t[B[#dead_op_g]] end
    return c
  end,
  function(B, a, n)   -- an equality with it, one arm of a choice
    local c = 0
    for i = 1, n do c = c + ((i > 2 and B[#dead_op_g] == 1) and 1 or 0) end
    return c
  end,
}

test("an operand that always raises, in each place, compiles and raises as Lua does", function()
  local B = kjit.array({1, 2, 3, 4, 5, 6, 7, 8}, "i32")
  for _, fn in ipairs(dead_op) do
    for _, n in ipairs{0, 1, 3} do
      all_opts(fn, B, 1.5, n)
    end
  end
end)
