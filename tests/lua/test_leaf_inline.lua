-- Small numeric leaves inlined into table code (backend/cpu.c
-- kc_mark_small_leaves): a compiled function whose module takes the
-- Lua-value pipeline (mostly table accesses) calls a small compiled
-- function without loops or calls (spectral-norm's A(i, j)); the leaf is
-- inlined there, where it was a real call. Differential (tablediff: the
-- interpreted run is the specification, results and tables compared key
-- by key, errors compared whole): integer and float paths of the leaf,
-- a leaf that raises (its line and message), a leaf whose paths return
-- an integer and a float, a recursive function (not a leaf: stays a
-- call). The fact (the call is gone from the optimized module) is skipped
-- under KJIT_NO_LEAF_INLINE=1 (lua.test_leaf_inline_off runs the same
-- cases with the calls kept).
local T = require "tablediff"
local kjit = require "kjit"

local off = os.getenv("KJIT_NO_LEAF_INLINE") ~= nil

-- spectral-norm's kernel as its authors wrote it
local function A(i, j)
  local ij = i + j - 1
  return 1.0 / (ij * (ij - 1) * 0.5 + i)
end

local function av(x, y, n)
  for i = 1, n do
    local a = 0
    for j = 1, n do a = a + x[j] * A(i, j) end
    y[i] = a
  end
  return y[1], math.type(y[1]), y[n]
end

test("spectral-norm's A(i, j) called from a loop over a table", function()
  T.check(av, function() return { 1, 1, 1, 1, 1 }, {}, 5 end)
  T.check(av, function() return { 0.5, 1.5, 2.5, 3.5 }, {}, 4 end)
  T.check(av, function() return { 1, 2.5, "3", 4 }, {}, 4 end)
  local M = { __mul = function(a, b) return 7 end }
  T.check(av, function() return { 1, setmetatable({}, M), 3 }, {}, 3 end)
  T.check_error("attempt to perform arithmetic on a nil value (field '?')", av,
                function() return { 1, 2 }, {}, 3 end)
  if off then return end
  local f = kjit.jit(av)
  f({ 1, 1, 1 }, {}, 3)
  local ir = f:inspect("llvm")
  truthy(not ir:find("call double @kjit_f", 1, true), "A inlined into the loop")
  truthy(ir:find("kjit_lv_", 1, true), "the module is table code (the Lua-value pipeline)")
end)

-- A leaf that raises: integer division by zero, at the leaf's line
local function quot(a, b) return a // b end
local function sumq(t, d)
  local s = 0
  for i = 1, #t do s = s + quot(t[i].v, d) end
  return s
end

test("a leaf that raises: the message and line of its operation", function()
  T.check(sumq, function() return { { v = 7 }, { v = 9 } }, 2 end)
  T.check(sumq, function() return { { v = 7.5 }, { v = 9 } }, 2 end)
  T.check(sumq, function() return { { v = 7 }, { v = 9 } }, 0.0 end)
  T.check_error("attempt to divide by zero", sumq, function() return { { v = 7 }, { v = 9 } }, 0 end)
end)

-- A leaf whose paths give an integer and a float, used in float arithmetic
-- (issue 29's item 7 case, called from table code here)
local function pick(x, y) if x > 0 then return x end return y end
local function mix(ps)
  local s = 0.0
  for i = 1, #ps do
    local p = ps[i]
    s = s + pick(i - 2, 0.5) + p.w
  end
  return s, math.type(s)
end

test("a leaf returning an integer on one path, a float on the other", function()
  T.check(mix, function() return { { w = 1 }, { w = 2.5 }, { w = 3 }, { w = -1 } } end)
  T.check(mix, function() return { { w = 1 }, { w = "2" } } end)
end)

-- Recursive: not a leaf, stays a call; the results are the interpreter's
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function fibs(t)
  local s = 0
  for i = 1, #t do s = s + fib(t[i].n) end
  return s
end

test("a recursive callee is not inlined, results unchanged", function()
  T.check(fibs, function() return { { n = 5 }, { n = 10 }, { n = 1 } } end)
  T.check_error("attempt to compare", fibs, function() return { { n = 5 }, { n = {} } } end)
end)

-- A call of a leaf (pure, no loops, no calls) checks no C stack limit, and
-- the caller says before it that no error is pending, so the inlined leaf's
-- test of an earlier error and the caller's test after it fold where the
-- leaf cannot fail (cg_func.c leaf_callee, emit_lua_call). A leaf that
-- fails late in a loop, and a recursion that calls a leaf at every level
-- (its own calls still checked), against the interpreter.
local function sumq2(t)
  local s = 0
  for i = 1, #t do s = s + quot(t[i].v, t[i].d) end
  return s
end

local function deep(t, n)
  if n == 0 then return 0 end
  return A(n, 2) + t.k + deep(t, n - 1)
end

test("a leaf's call: no stack check, no error test where it cannot fail", function()
  T.check(sumq2, function() return { { v = 7, d = 2 }, { v = 9, d = 4 }, { v = 1, d = 3 } } end)
  T.check_error("attempt to divide by zero", sumq2,
                function() return { { v = 7, d = 2 }, { v = 9, d = 4 }, { v = 1, d = 0 }, { v = 5, d = 1 } } end)
  T.check_error("attempt to perform arithmetic on a table value", sumq2,
                function() return { { v = 7, d = 2 }, { v = {}, d = 4 } } end)
  T.check(deep, function() return { k = 0.5 }, 50 end)
  T.check(deep, function() return { k = 1 }, 3000 end)
  -- unbounded: both ways an error that says stack overflow
  local ok1, e1 = pcall(deep, { k = 1 }, 1e7)
  local ok2, e2 = pcall(kjit.jit(deep), { k = 1 }, 1e7)
  eq(ok1, false, "interpreted fails")
  eq(ok2, false, "compiled fails")
  truthy(tostring(e1):find("stack overflow"), "interpreted: " .. tostring(e1))
  truthy(tostring(e2):find("stack overflow"), "compiled: " .. tostring(e2))
  -- the facts, on spectral-norm's loop
  local f = kjit.jit(av)
  f({ 1, 1, 1 }, {}, 3)
  local ir = f:inspect("llvm")
  truthy(not ir:find("%KErr* %2, i64 0, i32 7", 1, true), "no read of the stack limit")
  if off then return end
  truthy(not ir:find("load i32, i32* %[%w.]+, align 4, !alias.scope"), "no test of err->kind")
end)
