-- Differential tests: calls to plain Lua functions and to other jit
-- functions, recursion, multiple results, frozen upvalue and global
-- constants, error() inside compiled code.
local D = require "difftest"

local MAXI, MINI = math.maxinteger, math.mininteger

-- frozen constants (upvalues and globals holding numbers)
local K = 7
local KF = 0.5
local KBIG = MAXI
local DEBUG = false
KJIT_TEST_SCALE = 3
KJIT_TEST_OFFSET = 0.25

-- local aliases of library functions
local sqrt, floor, abs = math.sqrt, math.floor, math.abs

---------------------------------------------------------------------------
-- callees and the functions under test
---------------------------------------------------------------------------
local function sq(x) return x * x end

local function use_sq(x)
  return sq(x) + sq(x + 1)
end

local function two(a, b)
  return a // b, a % b
end

local function call_adjust(a, b)
  local q = two(a, b)          -- first result only
  local q2, r2 = two(a, b)     -- both
  return q, q2, r2, two(a, b) + 1
end

local function return_all(a, b) return two(a, b) end
local function return_one(a, b) return (two(a, b)) end
local function return_prefix(a, b) return 1, two(a, b) end
local function return_middle(a, b) return two(a, b), 1 end

local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

local function ack(m, n)
  if m == 0 then return n + 1 end
  if n == 0 then return ack(m - 1, 1) end
  return ack(m - 1, ack(m, n - 1))
end

local is_odd
local function is_even(n)
  if n == 0 then return true end
  return is_odd(n - 1)
end
function is_odd(n)
  if n == 0 then return false end
  return is_even(n - 1)
end

local function parity(n)
  return is_even(n), is_odd(n)
end

local function gcd_rec(a, b)
  if b == 0 then return a end
  return gcd_rec(b, a % b)
end

local function fact(n)
  if n <= 1 then return 1 end
  return n * fact(n - 1)
end

local function fpow(x, n)
  if n == 0 then return 1.0 end
  local h = fpow(x, n // 2)
  if n % 2 == 0 then return h * h end
  return h * h * x
end

local function sum_tail(n, acc)
  if n == 0 then return acc end
  return sum_tail(n - 1, acc + n)
end

local function c3(x) return x + 1 end
local function c2(x) return c3(x) * 2 end
local function c1(x) return c2(x) - c3(x) end
local function chain(x) return c1(x) + c1(x + 1) end

local function two_params(a, b) return a - b end
local function extra_args(x)
  return two_params(x, 1, 2, 3)
end

local function poly(x) return 3 * x * x - 2 * x + 1 end
local function both_types(i, x)
  -- one callee, two specializations (integer and float)
  return poly(i), poly(x)
end

local function upvalue_consts(x)
  return K * x + KF, KBIG - x
end

local function upvalue_bool(x)
  if DEBUG then return -x end
  return x
end

local function global_consts(x)
  return KJIT_TEST_SCALE * x + KJIT_TEST_OFFSET, KJIT_TEST_SCALE * x
end

function kjit_test_cube(x) return x * x * x end
local function uses_global_fn(x)
  return kjit_test_cube(x) + 1
end

local function uses_aliases(x)
  return sqrt(abs(x)), floor(x)
end

local function sq_for_jit(x) return x * x end
local jsq = D.jit(sq_for_jit)
local function calls_jit(x)
  return jsq(x) + 1
end

local function apply(f, x)
  return f(x) + f(x + 1)
end
local function twice(x) return x * 2 end
local jtwice = D.jit(twice)

local function flag_callee(p, x)
  if p then return x, true end
  return -x, false
end
local function bool_through_call(p, x)
  local v, f = flag_callee(p, x)
  local w, g = flag_callee(not p, v)
  return w, f, g
end

local function noresult_callee(x)
  if x > 0 then return end
end
local function calls_noresult(x)
  noresult_callee(x)
  noresult_callee(-x)
  return x
end

local function raise_if_negative(x)
  if x < 0 then error("negative input") end
  return x * 2
end

local function raise_level0(x)
  if x < 0 then error("no position", 0) end
  return x
end

local function check_positive(x)
  if x <= 0 then error("value must be positive") end
end
local function calls_checker(x)
  check_positive(x)
  return x + 1
end

local function check_positive_l2(x)
  if x <= 0 then error("caller passed a bad value", 2) end
end
local function calls_checker_l2(x)
  check_positive_l2(x)
  return x + 1
end

local function raise_in_loop(n)
  local s = 0
  for i = 1, n do
    if i == 5 then error("reached five") end
    s = s + i
  end
  return s
end

local function recursive_error(n)
  if n == 0 then error("bottom") end
  return recursive_error(n - 1) + 1
end

local function sum_range(a, b)
  local s = 0
  for i = a, b do s = s + i end
  return s
end
local function call_in_loop(n)
  local t = 0
  for i = 1, n do t = t + sum_range(i, 2 * i) end
  return t
end

local function callee_float(x) return x / 3 end
local function call_arg_exprs(a, b)
  return callee_float(a + b) + callee_float(a * b) - callee_float(sq(a - b))
end


local function poly_rec(x, n)
  -- called with an integer x, recurses with a float x
  if n == 0 then return x end
  return poly_rec(x * 0.5, n - 1)
end

local function shadow_upvalue(x)
  local K = x * 2
  return K + 1
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
test("call a local function", function()
  D.cases(use_sq, {3}, {-4}, {2.5}, {MAXI})
end)

test("multiple results adjusted", function()
  D.cases(call_adjust, {17, 5}, {-17, 5}, {17.5, 4})
end)

test("return f() passes all results", function()
  D.cases(return_all, {17, 5}, {-17, 5})
end)

test("return (f()) truncates to one", function()
  D.cases(return_one, {17, 5}, {-17, 5})
end)

test("return 1, f() expands the last call", function()
  D.cases(return_prefix, {17, 5}, {17.0, 5})
end)

test("return f(), 1 keeps the first result", function()
  D.cases(return_middle, {17, 5}, {17.0, 5})
end)

test("recursive fib", function()
  D.cases(fib, {0}, {1}, {2}, {10}, {20})
end)

test("ackermann", function()
  D.cases(ack, {0, 0}, {1, 2}, {2, 3}, {3, 3})
end)

test("mutual recursion", function()
  D.cases(parity, {0}, {1}, {10}, {77})
end)

test("recursive gcd", function()
  D.cases(gcd_rec, {12, 18}, {17, 5}, {MAXI, 6})
end)

test("recursive factorial wraps", function()
  D.cases(fact, {0}, {5}, {20}, {21}, {25})
end)

test("recursive float power", function()
  D.cases(fpow, {2.0, 10}, {1.5, 7}, {-1.1, 33}, {0.5, 0})
end)

test("tail recursion", function()
  D.cases(sum_tail, {0, 0}, {10, 0}, {10000, 0})
end)

test("call chain", function()
  D.cases(chain, {1}, {-10}, {2.5})
end)

test("extra arguments are dropped", function()
  D.cases(extra_args, {10}, {1.5})
end)

test("one callee, two specializations", function()
  D.cases(both_types, {3, 3.0}, {-2, 0.5})
end)

test("upvalue numeric constants", function()
  D.cases(upvalue_consts, {1}, {-1}, {2.5})
end)

test("upvalue boolean constant", function()
  D.cases(upvalue_bool, {1}, {2.5})
end)

test("global numeric constants", function()
  D.cases(global_consts, {2}, {2.5})
end)

test("global function callee", function()
  D.cases(uses_global_fn, {3}, {-2}, {1.5})
end)

test("local aliases of math functions", function()
  D.cases(uses_aliases, {16}, {-2.25}, {7.9})
end)

test("call another jit function", function()
  D.cases(calls_jit, {3}, {2.5})
end)

test("jit function as an argument", function()
  D.cases(apply, {jtwice, 3}, {jtwice, 2.5}, {jsq, 4})
end)

test("booleans through calls", function()
  D.cases(bool_through_call, {true, 3}, {false, 3}, {true, 1.5})
end)

test("callee returning nothing", function()
  D.cases(calls_noresult, {1}, {-1}, {0.5})
end)

test("error() with position", function()
  D.cases(raise_if_negative, {1}, {2.5})
  D.cases_error("negative input", raise_if_negative, {-1}, {-0.5})
end)

test("error() with level 0", function()
  D.cases(raise_level0, {1})
  D.cases_error("no position", raise_level0, {-1})
end)

test("error() in a callee", function()
  D.cases(calls_checker, {1}, {0.5})
  D.cases_error("value must be positive", calls_checker, {0}, {-3.5})
end)

test("error() level 2 in a callee points at the caller", function()
  D.cases(calls_checker_l2, {1})
  D.cases_error("caller passed a bad value", calls_checker_l2, {0})
end)

test("error() inside a loop", function()
  D.cases(raise_in_loop, {4})
  D.cases_error("reached five", raise_in_loop, {5}, {100})
end)

test("error() at the bottom of a recursion", function()
  D.cases_error("bottom", recursive_error, {0}, {10})
end)

test("calls inside a loop", function()
  D.cases(call_in_loop, {0}, {10}, {300})
end)

test("calls with expression arguments", function()
  D.cases(call_arg_exprs, {3, 4}, {2.5, -1.5}, {0, 0})
end)

test("recursion that changes an argument's subtype", function()
  -- documented: a result that is an integer on one path and a float on
  -- another is a float (docs/reference/differences.md, #2)
  D.check_float_results(poly_rec, 3, 4)
  D.check_float_results(poly_rec, 3, 0)
  D.cases(poly_rec, {3.0, 0})
end)

test("local shadowing an upvalue constant", function()
  D.cases(shadow_upvalue, {3}, {1.5})
end)

-- difffuzz (session 20, the pcallerr family; found/tail-call-error-level.lua):
-- error(msg, 2) in a function reached by a tail call (`return h(x)`):
-- the interpreter's h replaces its caller's frame, so level 2 names the
-- caller's caller; compiled code named the tail call's own line
local function raise_l2(y)
  if y > 0 then error("level two", 2) end
  return y
end
local function raise_l2_built(y)
  if y > 0 then error("level two " .. y, 2) end
  return y
end
local function raise_l3(y)
  if y > 0 then error("level three", 3) end
  return y
end
local function tail_l2(x)
  return raise_l2(x)
end
local function tail_l2_built(x)
  return raise_l2_built(x)
end
local function tail_of_tail(x)
  return tail_l2(x)
end
local function plain_then_tail(x)
  local r = tail_l2(x)
  return r
end
local function tail_l3(x)
  local r = tail_l2(x) + raise_l3(x)
  return r
end
local function via_caller(f, x)
  local r = f(x)   -- the line level 2 names when f tail-calls
  return r
end

test("error(msg, 2) after a tail call names the caller's caller, as interpreted", function()
  for _, f in ipairs({ tail_l2, tail_l2_built, tail_of_tail, plain_then_tail, tail_l3 }) do
    D.cases(f, {1}, {-1}, {2.5})   -- (called through pcall: level 2 there is no Lua line)
    local ok1, e1 = pcall(via_caller, f, 1)
    local ok2, e2 = pcall(via_caller, D.jit(f), 1)
    assert(not ok1 and not ok2 and e1 == e2, "through a Lua caller: " .. tostring(e1) .. " | " .. tostring(e2))
  end
  local _, e = pcall(via_caller, D.jit(tail_l2), 1)
  assert(e:find("test_jit_diff_calls.lua:%d+: level two$"), e)
end)

-- difffuzz (session 21; found/arith-metamethod-error-level.lua): a table's
-- Lua arithmetic or comparison metamethod raising error(msg, 2) names the
-- line of the operator, as interpreted (the VM calls the metamethod on
-- behalf of the function doing the arithmetic); compiled code called it
-- from C, and the message had no position
local LV = {}
LV.__add = function(a, b) error("add refused", 2) end
LV.__unm = function(a) error("unm refused " .. tostring(a.v), 2) end
LV.__lt = function(a, b) error("lt refused", 2) end
LV.__le = function(a, b) error({ code = 7 }, 2) end   -- (a table: no position either way)
LV.__eq = function(a, b) error("eq refused", 2) end
LV.__mul = function(a, b) error("mul at level 1") end   -- (its own line, both ways)
LV.__sub = function(a, b) return setmetatable({ v = (a.v or a) - (b.v or b) }, LV) end
local function mm_add(t, x)
  local y = x * 2
  return t + y
end
local function mm_unm(t) return -t end
local function mm_lt(t, u) if t < u then return 1 end return 2 end
local function mm_le(t, u) return t <= u end
local function mm_eq(t, u) return t == u end
local function mm_mul(t, x) return x * t end
local function mm_sub_ok(t, x)
  local s = t - x
  s = s - 1
  return s.v
end
local function mm_loop(t, n)   -- the same operator site raising on a later turn
  local s = 0
  for i = 1, n do
    if i == 3 then s = s + (t + i) end
    s = s + i
  end
  return s
end

test("error(msg, 2) in a table's Lua metamethod names the operator's line", function()
  local function obj(v) return setmetatable({ v = v }, LV) end
  for _, c in ipairs({ { mm_add, obj(1), 2 }, { mm_unm, obj(4) }, { mm_lt, obj(1), obj(2) },
                       { mm_le, obj(1), obj(2) }, { mm_eq, obj(1), obj(2) }, { mm_mul, obj(1), 3 },
                       { mm_sub_ok, obj(10), 3 }, { mm_loop, obj(1), 5 } }) do
    local f = table.remove(c, 1)
    local ok1, e1 = pcall(f, table.unpack(c))
    local ok2, e2 = pcall(D.jit(f), table.unpack(c))
    if type(e1) == "table" then e1, e2 = e1.code, type(e2) == "table" and e2.code end
    assert(ok1 == ok2 and e1 == e2, tostring(e1) .. " | " .. tostring(e2))
    if not ok1 and e1 ~= 7 then assert(tostring(e2):find("^.-test_jit_diff_calls.lua:%d+: "), e2) end
  end
end)
