-- test_jit_regress_calls.lua: calls whose results past the first change
-- type late in type inference, and pure callers of callees that are not
-- pure (issue 22, items 6, 7a, 7c, found by a differential fuzzer). Each
-- case crashed the compiler or made an invalid LLVM module once; every one
-- is checked against the interpreter.
local kjit = require "kjit"
local D = require "difftest"

-- Item 6: g's second result comes from a callee (h2), so it is typed after
-- g's first return: the call in f kept its type (the first result, an
-- integer) and f never saw q rise, never typed g(q + 0.5), and the code
-- generator called a specialization it had not emitted (a segfault).
local function h2(x) return x * 2 end
local function g3(x) return 1, h2(x), 3 end
local function second_into_call(a)
  local p, q, r = g3(a)
  local s, t, u = g3(q + 0.5)
  return p + q + r + s + t + u, t
end
local function second_into_call_direct(a)
  local _, q = g3(a)
  local _, t = g3(q)
  return t
end

test("a call's later results typed late reach their users (item 6)", function()
  D.cases(second_into_call, {3}, {-2}, {0})
  D.cases(second_into_call, {2.5})
  D.cases(second_into_call_direct, {3}, {1.5})
end)

-- Item 7c: the same, with the results expanded into math.max/min: the
-- built-in kept a type computed without its last operand ("PHI node
-- operands are not the same type", a select of double and i64).
local function h3(x) return x * 1.5 end
local function h2b(a) return a * 0.5, h3(a + 0.5), a * 0.5 end
local function h1b(a) return a * 0.5, math.max(1, h2b(a)), a + 1 end
local function min_of_all(a) return math.min(0.5, h1b(a)) end
local function h2c(a)
  if a > 1 then return 1, h3(a + 0.5) end
  return a + 1, -a
end
local function h1c(a) return a // 1, a + 1, math.max(h2c(a)) end
local function max_of_all(a) return math.max(a, h1c(a)) end

test("all results of a callee in math.max inside a callee in math.max (item 7c)", function()
  D.cases(min_of_all, {3}, {-3}, {0.25})
  D.cases(max_of_all, {3}, {1}, {-2}, {2.5})
end)

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
