-- Differential tests: the math library inside compiled code (DESIGN.md §3:
-- floor, ceil, tointeger, fmod, abs, max, min, type, huge, pi, maxinteger,
-- mininteger behave as in Lua; plus sqrt, trig, exp, log, ult).
local D = require "difftest"

local MAXI, MINI = math.maxinteger, math.mininteger
local HUGE, NAN = math.huge, 0 / 0
local PI = math.pi

---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------
local function floor(x) return math.floor(x) end
local function ceil(x) return math.ceil(x) end
local function floor_ceil_int(x)
  -- results used as integers
  local f, c = math.floor(x), math.ceil(x)
  return f, c, c - f, f // 2, f % 3
end
local function floor_vs_idiv(a, b)
  return math.floor(a / b), a // b
end
local function tointeger_or(x)
  return math.tointeger(x) or -1
end
local function tointeger_branch(x)
  local t = math.tointeger(x)
  if t then return t + 1 end
  return 0
end
local function fmod(a, b) return math.fmod(a, b) end
local function fmod_local(a, b)
  local r = math.fmod(a, b)
  return r
end
local function abs(x) return math.abs(x) end
local function max2(a, b) return math.max(a, b) end
local function min2(a, b) return math.min(a, b) end
local function max_min_n(a, b, c, d)
  return math.max(a, b, c, d), math.min(a, b, c, d), math.max(a), math.min(d)
end
local function mathtype(x)
  return math.type(x) == "integer", math.type(x) == "float"
end
local function constants()
  return math.huge, -math.huge, math.pi, math.maxinteger, math.mininteger,
    math.maxinteger + 1 == math.mininteger
end
local function sqrt(x) return math.sqrt(x) end
local function trig(x)
  return math.sin(x), math.cos(x), math.tan(x)
end
local function inverse_trig(x)
  return math.asin(x), math.acos(x), math.atan(x)
end
local function atan2(y, x) return math.atan(y, x) end
local function exp_log(x)
  return math.exp(x), math.log(x)
end
local function log_base(x, b) return math.log(x, b) end
local function log2_10(x) return math.log(x, 2), math.log(x, 10) end
local function ult(a, b) return math.ult(a, b) end
-- a second argument that is nil unless c: Lua checks argument 1 (its
-- integer representation) before it looks at argument 2
local function ult_maybe_nil(a, c) local z; if c then z = 2 end; return math.ult(a, z) end
local function ult_maybe_nil_first(a, c) local z; if c then z = 2.0 end; return math.ult(z, a) end
-- neither argument a number: lmathlib checks both inside one C call, so
-- which one a given Lua names depends on how it was compiled (Debian's
-- names #2); compiled code names the one the running interpreter names
local function fmod_maybe_nil(c) local z; if c then z = 2 end; return math.fmod(z, z) end
local function hypot(x, y) return math.sqrt(x * x + y * y) end
local function clamp(x, lo, hi) return math.max(lo, math.min(hi, x)) end
local function circle(r) return math.pi * r * r, 2 * math.pi * r end
local function huge_compare(x) return x < math.huge, x > -math.huge, x == math.huge end
local function pow_vs_sqrt(x) return x ^ 0.5, math.sqrt(x), x ^ 0.5 == math.sqrt(x) end
local function deg_rad(d)
  local r = d * math.pi / 180
  return r, r * 180 / math.pi
end
local function sigmoid(x) return 1 / (1 + math.exp(-x)) end
local function softplus(x) return math.log(1 + math.exp(x)) end
local function round_half_away(x)
  if x >= 0 then return math.floor(x + 0.5) end
  return -math.floor(-x + 0.5)
end
local function int_pow(b, e)
  -- exponentiation by squaring on integers (wraps)
  local r = 1
  while e > 0 do
    if e & 1 == 1 then r = r * b end
    b = b * b
    e = e >> 1
  end
  return r
end
local function gauss_sum(n)
  -- math.floor of a float expression used as an integer loop bound
  local m = math.floor(n * 1.0)
  local s = 0
  for i = 1, m do s = s + i end
  return s
end
local function max_loop(n)
  local m = math.mininteger
  for i = 1, n do m = math.max(m, (i * 7919) % 1009) end
  return m
end
local function min_loop_float(n)
  local m = math.huge
  for i = 1, n do m = math.min(m, math.sin(i)) end
  return m
end
local function abs_sum(n)
  local s = 0
  for i = -n, n do s = s + math.abs(i) end
  return s
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
test("math.floor returns integers when they fit", function()
  D.cases(floor, {3.7}, {-3.7}, {3}, {-3}, {MAXI}, {MINI}, {-0.0}, {0.5}, {2 ^ 62},
    {-2 ^ 63}, {1e15 + 0.5}, {-0.5})
end)

test("math.floor of a float beyond the integers is that float, as in Lua", function()
  -- Lua returns the float when it does not fit an integer; so does
  -- compiled code (a number: integer or float, Lua's subtype kept)
  if not D.jit_available() then skip("kjit.jit not available yet") end
  for _, x in ipairs({ 1e300, 2 ^ 63, -1e300, HUGE, -HUGE, NAN }) do
    eq(math.type(floor(x)), "float")
    -- the bytecode pipeline returns Lua's float (T_NUMBER)
    D.check(floor, x)
  end
end)

test("math.ceil returns integers when they fit", function()
  D.cases(ceil, {3.2}, {-3.2}, {3}, {-0.5}, {-0.0}, {2 ^ 62 + 0.0}, {MINI})
end)

test("math.ceil of a float beyond the integers is that float, as in Lua", function()
  if not D.jit_available() then skip("kjit.jit not available yet") end
  for _, x in ipairs({ 1e300, -2 ^ 63 - 1025, HUGE, NAN }) do
    eq(math.type(ceil(x)), "float")
    D.check(ceil, x)
  end
end)

test("floor/ceil results as integers", function()
  D.cases(floor_ceil_int, {3.7}, {-3.7}, {4.0}, {-0.25}, {7}, {1e10 + 0.5})
end)

test("math.floor(a / b) vs a // b", function()
  D.cases(floor_vs_idiv, {7, 2}, {-7, 2}, {7.0, -2.0})
end)

test("math.tointeger", function()
  D.cases(tointeger_or, {3}, {3.0}, {3.5}, {-0.0}, {2 ^ 63}, {-2 ^ 63}, {NAN}, {HUGE},
    {MAXI}, {1e15})
end)

test("math.tointeger in a condition", function()
  D.cases(tointeger_branch, {7}, {7.0}, {7.25}, {MAXI})
end)

test("math.fmod integers", function()
  D.cases(fmod, {7, 3}, {-7, 3}, {7, -3}, {-7, -3}, {MINI, -1}, {MINI, MAXI},
    {5, MINI}, {-5, MAXI}, {0, 5}, {MAXI, 1}, {MINI, 1})
end)

test("math.fmod floats", function()
  D.cases(fmod, {7.5, 2}, {-7.5, 2}, {7.5, -2}, {5.5, 0}, {1, HUGE}, {HUGE, 1},
    {-6.0, 3}, {3, -0.0}, {5.5, 0.0}, {-0.0, 1}, {1e300, 7.0}, {NAN, 1})
end)

test("math.fmod by integer zero raises", function()
  D.cases_error("bad argument #2 to 'fmod' (zero)", fmod_local, {1, 0}, {MINI, 0})
end)

test("math.abs", function()
  D.cases(abs, {5}, {-5}, {0}, {MINI}, {MAXI}, {-0.0}, {-HUGE}, {NAN}, {-2.5}, {2.5})
end)

test("math.max/min same subtypes", function()
  D.cases(max2, {1, 2}, {2, 1}, {-1.5, 1.5}, {NAN, 1.0}, {1.0, NAN}, {-0.0, 0.0},
    {0.0, -0.0}, {MINI, MAXI})
  D.cases(min2, {1, 2}, {2, 1}, {-1.5, 1.5}, {NAN, 1.0}, {1.0, NAN}, {-0.0, 0.0},
    {0.0, -0.0}, {MINI, MAXI})
end)

test("math.max/min mixed subtypes give the winner's value as a float", function()
  -- Lua returns the winning argument itself: max(3, 2.5) is the integer 3;
  -- compiled code returns 3.0 (documented: docs/reference/differences.md, #4)
  for _, args in ipairs({ {3, 2.5}, {1, 2.5}, {2, 2.0}, {2.0, 2} }) do
    D.check_float_results(max2, args[1], args[2])
    D.check_float_results(min2, args[1], args[2])
  end
end)

test("math.max/min several arguments", function()
  D.cases(max_min_n, {1, 5, 3, 2}, {-1, -5, -3, -2}, {1.5, 0.5, 2.5, -0.5}, {4, 4, 4, 4})
end)

test("math.type", function()
  D.cases(mathtype, {1}, {1.0}, {MAXI}, {NAN})
end)

-- math.type of a value that is an integer on one path and a float on
-- another: decided at run time, compared with constant strings
local function mathtype_number(n)
  local s = 0
  if n > 5 then s = 0.5 end
  return math.type(s) == "integer", math.type(s) == "float", "float" == math.type(s),
         math.type(s) ~= "integer", math.type(s) == "number", math.type(s) == nil,
         math.type(s) == 3
end
local function mathtype_loop(n)
  local s, ints = 0, 0
  for i = 1, n do
    if i % 3 == 0 then s = s + 0.5 else s = s + 1 end
    if math.type(s) == "integer" then ints = ints + 1 end
  end
  return ints, s
end
-- math.type of what is not a number is nil (Lua's fail), not an error
local function mathtype_other(b) return math.type(b) == nil, math.type(b) end

-- in loops whose first iteration is peeled (s still an integer there)
local function mathtype_peeled(n)
  local s, c = 0, 0
  for i = 1, n do
    if math.type(s) == "integer" then c = c + 1 end
    s = s + 0.5
  end
  return c, s
end
local function mathtype_while(n)
  local s, c = n, 0
  while s > 1 do
    if math.type(s) == "float" then c = c + 1 end
    s = s / 2
  end
  return c, s
end
local function mathtype_sum(x)
  local s, c = 0, 0
  for i = 1, #x do
    s = s + x[i]
    if math.type(s) == "float" then c = c + 1 end
  end
  return c, s
end

test("math.type of an integer-or-float, and of non-numbers", function()
  D.cases(mathtype_peeled, {0}, {1}, {5})
  D.cases(mathtype_while, {1}, {8}, {100})
  D.check(mathtype_sum, D.kjit.array({1.5, 2, 3}))
  D.cases(mathtype_number, {1}, {7})
  D.cases(mathtype_loop, {0}, {2}, {3}, {10})
  D.cases(mathtype_other, {true}, {false}, {nil})
end)

test("math constants", function()
  D.check(constants)
end)

test("math.sqrt", function()
  D.cases(sqrt, {4}, {2}, {2.0}, {-1}, {0.0}, {-0.0}, {HUGE}, {1e-300}, {MAXI})
end)

test("sin cos tan", function()
  D.cases(trig, {0}, {1}, {0.5}, {-2.5}, {PI}, {PI / 2}, {100.0}, {-0.0}, {1e6})
end)

test("asin acos atan", function()
  D.cases(inverse_trig, {0}, {1}, {-1}, {0.5}, {2.0}, {-0.0})
end)

test("math.atan with two arguments", function()
  D.cases(atan2, {1, 1}, {1, -1}, {-1, -1}, {0, -1}, {-0.0, -1}, {0, 0}, {-0.0, 0},
    {1.5, 0}, {HUGE, HUGE}, {3, 4.0})
end)

test("exp and log", function()
  D.cases(exp_log, {0}, {1}, {-1}, {0.5}, {710}, {-1000}, {0.0}, {HUGE})
end)

test("log of zero and negatives", function()
  D.cases(exp_log, {-1}, {-0.0}, {NAN})
end)

test("math.log with a base", function()
  D.cases(log_base, {8, 2}, {1000, 10}, {27, 3}, {2, 2.0}, {8, 4}, {100.0, 10.0},
    {1024, 2.0}, {0, 2}, {-1, 10}, {1e300, 10}, {7, 0.5})
end)

test("math.log base 2 and 10 are exact", function()
  D.cases(log2_10, {1}, {8}, {1000}, {1e15}, {2 ^ 60}, {0.001}, {3})
end)

test("math.ult", function()
  D.cases(ult, {1, 2}, {2, 1}, {1, -1}, {-1, 1}, {MINI, MAXI}, {0, MINI}, {-2, -1})
end)

test("math.ult checks its arguments in Lua's order", function()
  D.cases_error("bad argument #1 to 'ult' (number has no integer representation)",
                ult_maybe_nil, {2.5, false}, {2.5, true})
  D.cases_error("bad argument #2 to 'ult' (number expected, got nil)", ult_maybe_nil, {3, false})
  D.cases(ult_maybe_nil, {3, true}, {1.0, true})
  D.cases_error("bad argument #1 to 'ult' (number expected, got nil)",
                ult_maybe_nil_first, {2.5, false}, {3, false})
  D.cases_error("bad argument #2 to 'ult' (number has no integer representation)",
                ult_maybe_nil_first, {2.5, true})
  D.cases(ult_maybe_nil_first, {3, true})
end)

test("math.fmod names the argument the running Lua names", function()
  D.cases_error("to 'fmod' (number expected, got nil)", fmod_maybe_nil, {false})
  D.cases(fmod_maybe_nil, {true})
end)

-- The math functions with several arguments, called directly, through a
-- local and through a table, given nil and non-numbers (fuzzB: the
-- neighbours of difffuzz 420413). Lua names the function as the call site
-- does ('f', 'integer index'), checks the arguments in its own order, and
-- reads a nil base of math.log or x of math.atan as none.
local MF = { math.floor, math.fmod, math.ult, math.log, math.atan, math.max }
local function log_opt(x, b) return math.log(x, b) end
local function atan_opt(y, x) return math.atan(y, x) end
local function log_maybe(x, c) local b = math.tointeger(c); return math.log(x, b) end
local function atan_maybe(y, c) local x = math.tointeger(c); return MF[5](y, x) end
local function log_field(x, t) return math.log(x, t.b) end
local function fmod_nils(x) local a, b; if x > 100 then a, b = 1, 2 end return math.fmod(a, b) end
local function fmod_bool_nil(x) local b; return math.fmod(x > 0, b) end
local function ult_flt_nil(x) local n; return math.ult(x, n) end
local function log_str_false(t) return math.log(t.s, false) end
local function floor_local(x) local f = math.floor; return f(x) end
local function floor_table(x) return MF[1](x) end
local function fmod_table(x, y) return MF[2](x, y) end
local function fmod_local(x, y) local mod = math.fmod; return mod(x, y) end
local function ult_table(x, y) return MF[3](x, y) end
local function ult_maybe_table(x, c) local y = math.tointeger(c); return MF[3](x, y) end
local function max_table_maybe(c) local z = math.tointeger(c); return MF[6](-1.0, z) end
local function fmod_key(x, k) local r = MF[k](x, 2) return r end   -- a key known when it runs
local function apply_param(f, x) return f(x) end
local function floor_param(x) return apply_param(math.floor, x) end
local SF = { string.rep }
local function rep_table(s) return SF[1](s, 2) end                 -- a library call's trampoline

test("math functions given nil or non-numbers, called directly, through a local or a table", function()
  D.cases(log_opt, {8, nil}, {8, 2}, {-1, nil})
  D.cases(atan_opt, {1, nil}, {1, -1})
  D.cases(log_maybe, {8, 1.5}, {8, 2.0}, {100, 10.0})
  D.cases(atan_maybe, {1, 1.5}, {1, -1.0})
  D.cases(log_field, {8, {}}, {8, { b = 2 }}, {8, { b = "10" }}, {8, { b = true }})
  D.cases_error("to 'fmod' (number expected, got", fmod_nils, {1})
  D.cases_error("to 'fmod' (number expected, got", fmod_bool_nil, {1})
  D.cases_error("to 'ult'", ult_flt_nil, {2.5}, {3})
  D.cases_error("to 'log' (number expected, got", log_str_false, {{ s = "abc" }}, {{ s = "10" }},
                {{ s = {} }})
  D.cases_error("bad argument #1 to 'f' (number expected, got nil)", floor_local, {nil})
  D.cases_error("bad argument #1 to 'integer index' (number expected, got", floor_table,
                {nil}, {false})
  D.cases(floor_table, {2.5})
  D.cases_error("bad argument #", fmod_table, {nil, 1}, {1, nil}, {1, 0}, {true, 2})
  D.cases_error("bad argument #2 to 'mod' (zero)", fmod_local, {1, 0})
  D.cases_error("to 'integer index'", ult_table, {2.5, 1}, {1, 2.5}, {nil, 1})
  D.cases_error("to 'integer index'", ult_maybe_table, {2.5, 1.5}, {1, 1.5})
  D.cases(ult_maybe_table, {1, 2.0})
  D.cases_error("attempt to compare number with nil", max_table_maybe, {1.5})
  D.cases(max_table_maybe, {2.0})
  -- (a function read by a key known only when the call runs is named 'f',
  -- not '?': docs/reference/differences.md 7)
  D.cases(fmod_key, {7, 2})
  D.cases_error("bad argument #1 to 'f' (number expected, got nil)", floor_param, {nil})
  D.cases_error("bad argument #1 to 'integer index' (string expected, got nil)", rep_table, {nil})
  D.cases(rep_table, {"ab"})
end)

test("hypot", function()
  D.cases(hypot, {3, 4}, {3.0, 4.0}, {1e200, 1e200}, {-5, 12}, {0, 0})
end)

test("clamp with max/min", function()
  D.cases(clamp, {5, 0, 10}, {-5, 0, 10}, {15, 0, 10}, {0.5, 0.0, 1.0}, {1.5, 0.0, 1.0})
end)

test("circle with math.pi", function()
  D.cases(circle, {1}, {2.5}, {0}, {1e10})
end)

test("math.huge comparisons", function()
  D.cases(huge_compare, {1}, {1.0}, {HUGE}, {-HUGE}, {NAN}, {MAXI})
end)

test("x ^ 0.5 vs math.sqrt", function()
  D.cases(pow_vs_sqrt, {2}, {16.0}, {0.0}, {1e-10})
end)

test("degrees and radians", function()
  D.cases(deg_rad, {0}, {90}, {180.0}, {-45.5}, {360})
end)

test("sigmoid", function()
  D.cases(sigmoid, {0}, {1.0}, {-1.0}, {40.0}, {-800.0})
end)

test("softplus", function()
  D.cases(softplus, {0}, {1.0}, {-30.0}, {30.0})
end)

test("round half away from zero", function()
  D.cases(round_half_away, {2.5}, {-2.5}, {0.49999999999999994}, {-0.5}, {3.0}, {1e15 + 0.5})
end)

test("integer power by squaring", function()
  D.cases(int_pow, {2, 10}, {3, 40}, {3, 41}, {-2, 63}, {2, 64}, {7, 0}, {10, 19}, {10, 20})
end)

test("math.floor result as a loop bound", function()
  D.cases(gauss_sum, {0}, {10}, {1000})
end)

test("math.max in a loop", function()
  D.cases(max_loop, {0}, {1}, {100})
end)

test("math.min of sines in a loop", function()
  D.cases(min_loop_float, {0}, {1}, {1000})
end)

test("math.abs in a loop", function()
  D.cases(abs_sum, {0}, {10}, {1000})
end)

-- issue 22: '^' is C's pow, bit for bit, also where LLVM would rewrite it
-- (a constant base 2^n or 2^-n into exp2, exponent 0.5 into sqrt, -1 into
-- a reciprocal); exponent 2 is x * x, as lvm.c computes it
local function pow_consts(x) return 2 ^ x, 8 ^ x, 0.5 ^ x, 0.125 ^ x, x ^ 0.5, x ^ -1, x ^ 2, x ^ 3, x ^ -0.5 end
local function pow_args(a, b) return a ^ b end

test("'^' with constant operands LLVM would rewrite is C's pow, bit for bit", function()
  if not D.jit_available() then skip("kjit.jit not available yet") end
  local f, bad, first = D.jit(pow_consts), 0, nil
  for i = 1, 20000 do
    local x = (i - 10000) * 0.000731 + 0.0001
    local want, got = table.pack(pow_consts(x)), table.pack(f(x))
    for k = 1, want.n do
      if not same_value(want[k], got[k]) then
        bad = bad + 1
        first = first or string.format("result #%d for x = %a: %a, compiled %a", k, x, want[k], got[k])
      end
    end
  end
  eq(bad, 0, "results that differ (" .. tostring(first) .. ")")
  D.cases(pow_args, {2, 0.3}, {8.0, -1.7}, {0.5, 3.3}, {2.7, 0.5}, {2.7, -1}, {-8.0, 1 / 3},
          {0.0, -1}, {-0.0, -1}, {-0.0, 0.5}, {-1 / 0, 0.5}, {0 / 0, 0}, {1, 0 / 0}, {3, 2})
end)
