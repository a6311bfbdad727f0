-- test_jit_regress_calls.lua: calls whose results past the first change
-- type late in type inference, and pure callers of callees that are not
-- pure (issue 22, items 6, 7a, 7c, found by a differential fuzzer). Each
-- case crashed the compiler or made an invalid LLVM module once; every one
-- is checked against the interpreter.
local kjit = require "kjit"
local D = require "difftest"

-- Item 7a: a pure function (one float result, no loops) calling one whose
-- result is an integer on one path and a float on another (that one keeps
-- the ordinary calling convention): its failure path returned the callee's
-- i32 status from a function returning a double.
local rec
rec = function(a, b)
  if a <= 0 then return b end
  return rec(a - 1, b / 2) + 1
end
local function float_of_rec(a) return rec(a, 7) * 2.0 end
local function int_or_float(a)
  if a > 0 then return 1 end
  return 2.5
end
local function float_of_mixed(a) return int_or_float(a) * 1.5 + int_or_float(-a) end
local function half_plus(a) return int_or_float(a) + 0.5 end
local function idiv_or_half(a, b)
  if a > 0 then return a // b end
  return 0.5
end
local function pure_caller_of_failing(a, b) return idiv_or_half(a, b) * 2.0 end

test("a pure caller of a callee returning an integer or a float (item 7a)", function()
  D.cases(float_of_rec, {3}, {0}, {-1})
  D.cases(float_of_mixed, {3}, {-3}, {0})
  D.cases(half_plus, {3}, {-3})
  -- the callee fails: the pure caller passes the error on
  D.cases(pure_caller_of_failing, {3, 2}, {-1, 0})
  D.check_error("divide by zero", pure_caller_of_failing, 3, 0)
end)
