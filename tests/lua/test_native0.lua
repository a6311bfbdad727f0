-- test_native0.lua: specializations that cannot fail (issue 23 item 3).
-- backend/cpu.c kc_entry_noraise reads from the optimized entry whether
-- it can fail (its KErr unused but for err->kind = 0, every return 0); the
-- dispatchers (host/jit.c call_now, native0_run, native_call0, jit_call)
-- then call it without setting up the error record, and one that uses
-- none of its parameters and returns nothing is jumped to with none.
-- Checked here: the fact itself (kjit.testing.noraise) where it is certain
-- (nothing in the code can fail, or a check, a poll, an error call, an
-- allocation, a call remains), and that every such function still gives
-- what the interpreted one gives through f(...), f:native(sig) and the
-- slow routes: values with their subtypes, arrays written, errors with
-- their messages and file:line, interrupts (a count hook) still stopping
-- a loop. ctest runs this file twice, the second time with
-- KJIT_NO_STACK_READS=1 (lua.test_native0_api: the Lua API route).
local kjit = require "kjit"
local T = require "kjit.testing"

local THIS = "test_native0.lua:"
local HUGE = 1 << 30   -- a hook count the interpreted parts never reach

-- fn(...) and ref(...) agree: both succeed with the same results (same_value:
-- subtypes), or both fail with the same message
local function agree(fn, ref, what, ...)
  local r1 = table.pack(pcall(fn, ...))
  local r2 = table.pack(pcall(ref, ...))
  eq(r1[1], r2[1], what .. ": success (" .. tostring(r1[2]) .. " / " .. tostring(r2[2]) .. ")")
  if not r1[1] then
    eq(tostring(r1[2]), tostring(r2[2]), what .. ": error")
    return
  end
  eq(r1.n, r2.n, what .. ": result count")
  for i = 2, r1.n do truthy(same_value(r1[i], r2[i]), what .. ": result " .. (i - 1)) end
end

local buf = kjit.zeros(4)
local ibuf = kjit.zeros(4, "i64")

-- each: name, function, signature for native, arguments, the noraise
-- level known for certain (nil: not asserted, the optimizer decides)
local CASES = {
  { "empty", function() end, "()", {}, 2 },
  { "constant", function() return 42 end, "()", {}, 1 },
  { "float constant", function() return 0.5 end, "()", {}, 1 },
  { "two results", function() return 1, 2.0 end, "()", {}, 1 },
  { "mul", function(a, b) return a * b + 1 end, "(i64, i64)", { 3, 4 }, 1 },
  { "float mul", function(a, b) return a * b + 1 end, "(f64, f64)", { 3.0, 0.25 }, 1 },
  { "compare", function(a, b) return a < b end, "(i64, f64)", { 3, 2.5 }, nil },
  { "four ignored", function(a, b, c, d) end, "(i64, f64, i64, f64)", { 1, 2.5, 3, 4.5 }, 2 },
  { "frozen store", function() ibuf[1] = ibuf[1] + 1 end, "()", {}, nil },
  -- these can fail: a check, a division, an error call, a poll, an allocation
  { "index", function(x, i) return x[i] end, "(f64[:], i64)", { buf, 2 }, 0 },
  { "index out", function(x, i) return x[i] end, "(f64[:], i64)", { buf, 5 }, 0 },
  { "frozen out", function() ibuf[5] = 1 end, "()", {}, 0 },
  { "idiv", function(a, b) return a // b end, "(i64, i64)", { 7, 0 }, 0 },
  { "error", function() error("boom") end, "()", {}, 0 },
  { "loop", function(n) local s = 0 for i = 1, n do s = s + i * i end return s end, "(i64)", { 10 }, 0 },
  { "alloc", function() local a = kjit.zeros(3) a[1] = 2 return a[1] end, "()", {}, nil },
  { "bad alloc", function(n) local a = kjit.zeros(n) return #a end, "(i64)", { -1 }, 0 },
}

test("noraise: the fact, where it is certain", function()
  for _, c in ipairs(CASES) do
    local f = kjit.jit(c[2])
    pcall(f, table.unpack(c[4]))
    local level = T.noraise(f)
    truthy(level == 0 or level == 1 or level == 2, c[1] .. ": a level")
    if c[5] then eq(level, c[5], c[1] .. ": noraise level") end
  end
  -- an entry that can fail is never marked: an error call, a bounds check
  -- and a poll each keep the record
  eq(T.noraise(kjit.jit(function() end)), nil, "no specialization yet: nil")
end)

test("noraise: f(...), f:native and the interpreter agree", function()
  for _, c in ipairs(CASES) do
    local f = kjit.jit(c[2])
    local n = f:native(c[3])
    local args = c[4]
    for round = 1, 3 do   -- the first call compiles; then the short paths
      ibuf:fill(0)
      agree(f, c[2], c[1] .. " f() round " .. round, table.unpack(args))
      local after_f = ibuf[1]
      ibuf:fill(0)
      agree(n, c[2], c[1] .. " native round " .. round, table.unpack(args))
      eq(ibuf[1], after_f, c[1] .. ": the frozen array written alike")
    end
    -- other arguments: f's route (a specialization of their types, or its error)
    agree(n, f, c[1] .. " native, an extra argument", 1, table.unpack(args))
  end
end)

test("noraise: errors keep the function's file:line on every route", function()
  local function boom() error("boom") end
  local function oob() ibuf[5] = 1 end
  for _, fn in ipairs({ boom, oob }) do
    local f = kjit.jit(fn)
    local n = f:native("()")
    for _, h in ipairs({ f, n, f, n }) do
      local ok1, m1 = pcall(h)
      local ok2, m2 = pcall(fn)
      truthy(not ok1 and not ok2, "both raise")
      eq(m1, m2, "the same message")
      truthy(tostring(m1):find(THIS, 1, true), "the function's line: " .. tostring(m1))
    end
  end
end)

test("noraise: a no-argument loop still reacts to a count hook", function()
  local function spin() local s = 0 while s >= 0 do s = (s + 3) % 1000 end return s end
  local f = kjit.jit(spin)
  local n = f:native("()")
  eq(T.noraise(f), 0, "a loop polls: it can fail")
  for _, h in ipairs({ f, n }) do
    debug.sethook(function() debug.sethook(); error("stopped", 0) end, "", HUGE)
    local ok, e = pcall(h)
    debug.sethook()
    truthy(not ok and e == "stopped", "the hook stops it: " .. tostring(e))
  end
end)

test("noraise: the jumped-to entry and its neighbours", function()
  -- no arguments, no results, nothing that fails: the shortest route; the
  -- same object then called with arguments (another specialization)
  local count = 0
  local function nothing(a) if a then count = count + 0 end end
  local f = kjit.jit(function() end)
  local n = f:native("()")
  for _ = 1, 100 do eq(select("#", f()), 0, "no results"); eq(select("#", n()), 0, "no results") end
  eq(select("#", f(1)), 0, "an argument: another specialization")
  eq(select("#", f()), 0, "back")
  eq(select("#", n(1, 2)), 0, "native with arguments: f's route")
  nothing(1)
  -- a function returning nothing after a frozen store: the array changes
  ibuf:fill(0)
  local inc = kjit.jit(function() ibuf[2] = ibuf[2] + 1 end):native("()")
  for _ = 1, 1000 do inc() end
  eq(ibuf[2], 1000, "each call stored")
  -- a coroutine calling them
  local co = coroutine.wrap(function() for _ = 1, 10 do inc(); coroutine.yield(n()) end return "done" end)
  for _ = 1, 10 do co() end
  eq(co(), "done")
  eq(ibuf[2], 1010, "stored from the coroutine")
end)
