-- Differential tests: arithmetic, comparison and bitwise operators
-- (Lua 5.4 manual §3.4.1-§3.4.4; DESIGN.md §3). Each function runs in the
-- interpreter and compiled; results must be the same values and subtypes.
local D = require "difftest"

local MAXI, MINI = math.maxinteger, math.mininteger
local HUGE, NAN = math.huge, 0 / 0
local P53 = 9007199254740992     -- 2^53 as an integer
local F53 = 2.0 ^ 53             -- 2^53 as a float
local F63 = 2.0 ^ 63             -- 2^63 as a float (just above maxinteger)

---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------
local function add(a, b) return a + b end
local function sub(a, b) return a - b end
local function mul(a, b) return a * b end
local function div(a, b) return a / b end
local function idiv(a, b) return a // b end
local function mod(a, b) return a % b end
local function pow(a, b) return a ^ b end
local function neg(a) return -a end
local function idiv_local(a, b)
  local q = a // b
  return q
end
local function mod_local(a, b)
  local r = a % b
  return r
end
local function divmod(a, b)
  return a // b, a % b
end
local function divmod_identity(a, b)
  -- a == (a // b) * b + a % b for integers (wraps consistently)
  local q, r = a // b, a % b
  return q * b + r == a, q, r
end
local function lt(a, b) return a < b end
local function le(a, b) return a <= b end
local function eqop(a, b) return a == b end
local function cmp_all(a, b)
  return a < b, a <= b, a == b, a ~= b, a > b, a >= b
end
local function cmp_not(a, b)
  return not (a < b), not (a >= b), not (a == b)
end
local function band(a, b) return a & b end
local function bor(a, b) return a | b end
local function bxor(a, b) return a ~ b end
local function bnot(a) return ~a end
local function shl(a, b) return a << b end
local function shr(a, b) return a >> b end
local function bit_temp(a)
  return (a * 0.5) | 0
end
local function bit_mix(a, b)
  return (a & 0xff) | ((b & 0xff) << 8), ~a & b, a ~ ~b, (a >> 4) ~ (b << 4)
end
local function int_to_float(a) return a + 0.0 end
local function mixed_arith(i, x)
  return i + x, i - x, i * x, x - i, i / 2, i // 2, i % 2, x // 1, x % 1
end
local function int_chain(a, b, c)
  return a * b + c - a // c + (b % c) * 3 - (a - b) * (a + c)
end
local function float_chain(x, y, z)
  return (x * y + z) / (x - z) - y ^ 2 + x % z
end
local function literals()
  return 0xff, 0xffffffffffffffff, 0x7fffffffffffffff, 9223372036854775807,
    9223372036854775808, 1e2, 0x1p4, 0xA.8p0, .5, 3., 1E-3, 0X10, 0x1P-1, 1e309
end
local function literal_ops(a)
  return a + 1, a + 1.0, a * 2, a * 2.0, a / 1, a // 1, a // 1.0, a % 1, a ^ 1
end
local function precedence(a, b)
  return 2 ^ 3 ^ 2, -2 ^ 2, -a ^ 2, a + b * 2 ^ 2, a - -b, - -a,
    (a + b) * (a - b), a * b % 5, 1 + a // 2 * 3, ~ ~a, a << 1 + 1, a & 3 | 4 ~ 1
end
local function wrap_ops(a)
  return a + 1, a - 1, a * 2, a * a, -a, a + a, a * -1
end
local function nan_ops(x)
  return x ~= x, x == x, x < 1, x > 1, not (x >= 1), x <= x
end
local function negzero(x)
  return x * -1, -x, x - 0.0, 0.0 - x, x + 0.0, x * 0.0
end
local function popcount(x)
  local c = 0
  while x ~= 0 do
    x = x & (x - 1)
    c = c + 1
  end
  return c
end
local function xorshift(seed, n)
  local x = seed
  for _ = 1, n do
    x = x ~ (x << 13)
    x = x ~ (x >> 7)
    x = x ~ (x << 17)
  end
  return x
end
local function fnv1a(n)
  local h = -3750763034362895579  -- 0xcbf29ce484222325
  for i = 1, n do
    h = (h ~ (i & 0xff)) * 1099511628211
  end
  return h
end
local function lcg_float(seed, n)
  local s = seed
  local acc = 0.0
  for _ = 1, n do
    s = (s * 6364136223846793005 + 1442695040888963407)
    acc = acc + ((s >> 11) * (1.0 / 9007199254740992.0))
  end
  return s, acc
end
local function float_rounding(a, b)
  return a + b - a, (a + b) + b, a + (b + b), a * 3 / 3, 0.1 * 3
end
local function exact_compare_mixed(i, x)
  -- int/float comparison must be exact, in both operand orders
  return i < x, x < i, i <= x, x <= i, i == x, x == i
end
local function sign(x)
  if x > 0 then return 1 elseif x < 0 then return -1 else return 0 end
end
local function abs_diff(a, b)
  if a > b then return a - b end
  return b - a
end
local function avg_int(a, b)
  -- overflow-free midpoint of two integers
  return (a & b) + ((a ~ b) >> 1), (a + b) // 2
end

local function more_literals()
  return -9223372036854775808, 0x8000000000000000, 0x.1, 1e1000, 0x1p-1074, 0xA,
    -0x7fffffffffffffff - 1, math.mininteger == -9223372036854775808, 2^-1074
end
local function const_div0()
  return 1 // 0
end
local function const_mod0()
  return 1 % 0
end
local function const_minint()
  -- constant operands: must not be folded into C undefined behaviour
  return math.mininteger // -1, math.mininteger % -1, -math.mininteger,
    math.mininteger * -1, math.maxinteger + 1, math.mininteger - 1
end
local function const_float_div()
  return 1 // 0.0, -1 % math.huge, 0 / -5, 0.0 / 0.0 ~= 0.0 / 0.0, 5 % -0.0
end
local function many_locals(x)
  local a1, a2, a3, a4, a5 = x + 1, x + 2, x + 3, x + 4, x + 5
  local b1, b2, b3, b4, b5 = a1 * a2, a2 * a3, a3 * a4, a4 * a5, a5 * a1
  local c1, c2, c3, c4, c5 = b1 - b2, b2 - b3, b3 - b4, b4 - b5, b5 - b1
  local d1, d2, d3, d4, d5 = c1 * a1, c2 * a2, c3 * a3, c4 * a4, c5 * a5
  local e1, e2, e3, e4, e5 = d1 + b5, d2 + b4, d3 + b3, d4 + b2, d5 + b1
  return a1 + b2 + c3 + d4 + e5, e1 - e2 + e3 - e4 + e5, d1 * d5 - c2 * c4
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
test("add", function()
  D.cases(add, {1, 2}, {MAXI, 1}, {MINI, -1}, {MAXI, MAXI}, {1, 2.5}, {2.5, 1},
    {1.5, 2.25}, {0.1, 0.2}, {HUGE, -HUGE}, {-0.0, 0.0}, {-0.0, -0.0}, {P53, 1},
    {F53, 1}, {MAXI, 1.0}, {-5, 5})
end)

test("sub", function()
  D.cases(sub, {5, 7}, {MINI, 1}, {MAXI, -1}, {0, MINI}, {1, 0.5}, {0.0, 0.0},
    {-0.0, 0.0}, {0.0, -0.0}, {HUGE, HUGE}, {1e308, -1e308}, {3, 3.0})
end)

test("mul", function()
  D.cases(mul, {6, 7}, {MAXI, 2}, {MINI, -1}, {MAXI, MAXI}, {3, 0.5}, {-0.0, 1},
    {0.0, -5}, {1e308, 10}, {0.0, HUGE}, {-3, -4}, {4294967296, 4294967296},
    {3037000500, 3037000500})
end)

test("div", function()
  D.cases(div, {7, 2}, {4, 2}, {1, 0}, {-1, 0}, {0, 0}, {1, -0.0}, {MAXI, 1},
    {MINI, -1}, {1.0, 3.0}, {-7.5, 2.5}, {HUGE, HUGE}, {1, HUGE}, {-1, HUGE},
    {P53 + 1, 1}, {0, -5}, {-0.0, 5}, {MINI, MAXI})
end)

test("idiv ints floor toward -inf", function()
  D.cases(idiv, {7, 2}, {7, -2}, {-7, 2}, {-7, -2}, {0, 5}, {6, 3}, {-6, 3},
    {6, -3}, {MINI, -1}, {MINI, 1}, {MAXI, -1}, {MINI, 2}, {MAXI, MINI},
    {MINI, MAXI}, {1, MAXI}, {-1, MAXI})
end)

test("idiv floats", function()
  D.cases(idiv, {7.5, 2}, {7.5, -2}, {-7.5, 2}, {-7.5, -2}, {7, 2.0}, {1, 0.0},
    {-1, 0.0}, {0.0, 0.0}, {-0.0, 1}, {0.0, -1}, {5.0, 0}, {1e308, 1e-308},
    {-7, 0.5}, {HUGE, 2}, {3, HUGE}, {-3, HUGE}, {NAN, 1}, {0, -1.0}, {MINI, -1.0},
    {MAXI, 0.5})
end)

test("idiv by integer zero raises", function()
  D.cases_error("attempt to divide by zero", idiv, {1, 0}, {0, 0}, {MINI, 0})
end)

test("idiv by zero through a local", function()
  D.cases(idiv_local, {9, 4}, {-9, 4}, {9.0, 0})
  D.cases_error("attempt to divide by zero", idiv_local, {9, 0})
end)

test("mod ints", function()
  D.cases(mod, {7, 3}, {-7, 3}, {7, -3}, {-7, -3}, {0, 3}, {6, -3}, {-6, 3},
    {MINI, -1}, {MAXI, MINI}, {MINI, MAXI}, {MAXI, 2}, {MINI, 2}, {5, 1}, {-1, MAXI})
end)

test("mod floats", function()
  D.cases(mod, {7.5, 2}, {7.5, -2}, {-7.5, 2}, {-7.5, -2}, {5.5, HUGE},
    {-5.5, HUGE}, {5.5, -HUGE}, {-5.5, -HUGE}, {HUGE, 2}, {1, 0.0}, {-7.0, 7},
    {7.0, -7}, {-0.0, 5}, {5.3, 0.1}, {0.0, -1.0}, {NAN, 2}, {2, NAN}, {1e300, 3.0},
    {5.0, -0.0}, {-HUGE, HUGE}, {MINI, -1.0}, {-1e-300, 1})
end)

test("mod by integer zero raises", function()
  D.cases_error("attempt to perform 'n%0'", mod, {1, 0}, {-5, 0}, {0, 0})
end)

test("mod by zero through a local", function()
  D.cases(mod_local, {10, 4}, {10.5, 0})
  D.cases_error("attempt to perform 'n%0'", mod_local, {10, 0})
end)

test("divmod multiple results", function()
  D.cases(divmod, {17, 5}, {-17, 5}, {17, -5}, {-17, -5}, {17.5, 5}, {-17.5, 5},
    {MINI, -1})
  D.cases_error("attempt to divide by zero", divmod, {1, 0})
end)

test("divmod identity", function()
  D.cases(divmod_identity, {17, 5}, {-17, 5}, {MAXI, 7}, {MINI, 7}, {MINI, -7},
    {MAXI, -MAXI}, {123456789, -1000})
end)

test("pow always float", function()
  D.cases(pow, {2, 3}, {2, 0.5}, {2, -1}, {0, 0}, {-8, 1 / 3}, {2, 1024},
    {-2, 3}, {10, 308}, {HUGE, 0}, {0.0, -1}, {-0.0, -1}, {NAN, 0}, {1, NAN},
    {-1, HUGE}, {2.5, 2})
end)

test("unary minus", function()
  D.cases(neg, {5}, {-5}, {MINI}, {MAXI}, {0}, {0.0}, {-0.0}, {HUGE}, {NAN}, {1.5})
end)

test("comparison lt", function()
  D.cases(lt, {1, 2}, {2, 1}, {1, 1}, {P53 + 1, F53}, {F53, P53 + 1}, {MAXI, F63},
    {F63, MAXI}, {MINI, -F63}, {1, 1.5}, {2, 1.5}, {NAN, 1}, {1, NAN}, {-HUGE, MINI},
    {MAXI, HUGE}, {-0.0, 0.0}, {0.5, 0.25})
end)

test("comparison le", function()
  D.cases(le, {1, 2}, {2, 1}, {1, 1}, {P53 + 1, F53}, {F53, P53 + 1}, {MAXI, F63},
    {F63, MAXI}, {MINI, -F63}, {-F63, MINI}, {NAN, NAN}, {-0.0, 0.0}, {3, 3.0})
end)

test("comparison eq", function()
  D.cases(eqop, {1, 1}, {1, 1.0}, {1.0, 1}, {P53 + 1, F53}, {P53, F53}, {MAXI, F63},
    {MINI, -F63}, {NAN, NAN}, {0.0, -0.0}, {0, -0.0}, {MAXI, MAXI + 0.0}, {true, true},
    {true, false}, {false, false})
end)

test("comparison all six", function()
  D.cases(cmp_all, {1, 2}, {2, 2}, {3, 2}, {2, 2.0}, {P53 + 1, F53}, {MAXI, F63},
    {MINI, -F63}, {NAN, 0}, {0.0, -0.0}, {-HUGE, HUGE}, {MAXI, MINI},
    {9007199254740993, 9007199254740994.0}, {-P53 - 1, -F53})
end)

test("comparison not", function()
  D.cases(cmp_not, {1, 2}, {2, 1}, {NAN, 1}, {1, NAN}, {1, 1.0})
end)

test("exact int/float comparison both orders", function()
  D.cases(exact_compare_mixed, {P53 + 1, F53}, {P53, F53}, {P53 - 1, F53},
    {MAXI, F63}, {MAXI, 9223372036854774784.0}, {MAXI - 1024, 9223372036854774784.0},
    {MINI, -F63}, {MINI + 1, -F63}, {0, -0.0}, {3, 3.5}, {-3, -3.5}, {5, NAN},
    {MAXI, HUGE}, {MINI, -HUGE}, {1, 1e-300})
end)

test("band", function()
  D.cases(band, {12, 10}, {-1, 255}, {MINI, -1}, {3.0, 1}, {F53, -1}, {-2.0, 7},
    {-F63, MAXI}, {0, 0})
end)

test("bor on ints and integral floats", function()
  D.cases(bor, {12, 10}, {3.0, 0}, {F53, 1}, {-1.0, 0}, {-F63, 0}, {0, MINI}, {1e15, 1})
end)

test("bor on non-integral floats raises", function()
  D.cases_error("has no integer representation", bor, {2.5, 0}, {0, 0.5}, {F63, 0}, {NAN, 0}, {HUGE, 1}, {-HUGE, 1})
end)

test("bitwise error on a temporary", function()
  D.cases(bit_temp, {4}, {-4}, {8.0})
  D.cases_error("number has no integer representation", bit_temp, {3}, {-3}, {7.0})
end)

test("bxor", function()
  D.cases(bxor, {12, 10}, {-1, MAXI}, {MINI, MAXI}, {5.0, 3.0}, {0, 0})
end)

test("bnot", function()
  D.cases(bnot, {0}, {-1}, {MAXI}, {MINI}, {5}, {5.0}, {-F63})
end)

test("bnot non-integral raises", function()
  D.cases_error("has no integer representation", bnot, {0.5}, {F63})
end)

test("shift left", function()
  D.cases(shl, {1, 0}, {1, 1}, {1, 62}, {1, 63}, {1, 64}, {1, 100}, {1, -1}, {8, -2},
    {-1, 1}, {-1, 63}, {1, MINI}, {1, MAXI}, {1.0, 3}, {1, 3.0}, {MAXI, 1}, {5, -64},
    {5, -63}, {-8, -1}, {1, 64.0}, {1, -64.0})
end)

test("shift right (logical)", function()
  D.cases(shr, {8, 1}, {-1, 1}, {-1, 63}, {-1, 64}, {-1, 65}, {8, -2}, {1, -63},
    {1, -64}, {MINI, 63}, {MINI, 1}, {1, MINI}, {-1, MAXI}, {16.0, 2}, {-16, 2})
end)

test("shift of non-integral raises", function()
  D.cases_error("has no integer representation", shl, {1.5, 1}, {1, 1.5})
end)

test("bit mix", function()
  D.cases(bit_mix, {0x1234, 0x5678}, {-1, 0}, {MINI, MAXI}, {255.0, 256})
end)

test("int to float conversion", function()
  D.cases(int_to_float, {0}, {MAXI}, {MINI}, {P53 + 1}, {P53 + 3}, {-P53 - 1}, {12345})
end)

test("mixed int/float arithmetic", function()
  D.cases(mixed_arith, {3, 2.5}, {-3, 2.5}, {7, -0.5}, {0, 0.0}, {MAXI, 1.0}, {-7, 7.25})
end)

test("integer expression chain", function()
  D.cases(int_chain, {10, 3, 4}, {-10, 3, 4}, {10, -3, 7}, {MAXI, 2, 3}, {100, 99, -1})
end)

test("integer expression chain zero divisor", function()
  D.cases_error("attempt to divide by zero", int_chain, {10, 3, 0})
end)

test("float expression chain", function()
  D.cases(float_chain, {1.5, 2.5, 3.5}, {-1.5, 0.25, 7.0}, {2.0, 3.0, 2.0},
    {1e10, 1e-10, 3.0})
end)

test("literals", function()
  D.check(literals)
end)

test("literal operand subtypes", function()
  D.cases(literal_ops, {7}, {7.5}, {-7}, {MAXI}, {-0.0})
end)

test("precedence and associativity", function()
  D.cases(precedence, {3, 4}, {-3, 5}, {0, 0}, {100, -7})
end)

test("integer wrap-around", function()
  D.cases(wrap_ops, {MAXI}, {MINI}, {3037000500}, {4611686018427387904}, {0})
end)

test("nan comparisons", function()
  D.cases(nan_ops, {NAN}, {1.0}, {HUGE}, {-HUGE})
end)

test("negative zero", function()
  D.cases(negzero, {0.0}, {-0.0}, {1.0}, {-2.5})
end)

test("popcount loop with wrap", function()
  D.cases(popcount, {0}, {1}, {255}, {-1}, {MINI}, {MAXI}, {0x5555555555555555})
end)

test("xorshift", function()
  D.cases(xorshift, {1, 1}, {88172645463325252, 10}, {-1, 100}, {12345, 1000})
end)

test("fnv1a hash wraps", function()
  D.cases(fnv1a, {0}, {1}, {10}, {1000})
end)

test("lcg with float accumulation", function()
  D.cases(lcg_float, {42, 10}, {0, 1}, {-7, 100})
end)

test("float rounding is double", function()
  D.cases(float_rounding, {0.1, 0.2}, {1e16, 1.0}, {1.0, 1e-16}, {3.0, 7.0})
end)

test("sign", function()
  D.cases(sign, {5}, {-5}, {0}, {2.5}, {-0.0}, {NAN}, {-HUGE})
end)

test("abs diff", function()
  D.cases(abs_diff, {3, 10}, {10, 3}, {MINI, MAXI}, {1.5, -1.5})
end)

test("average without overflow", function()
  D.cases(avg_int, {MAXI, MAXI}, {MAXI, MAXI - 2}, {MINI, MINI}, {-3, 4}, {7, 8})
end)

test("more literals", function()
  D.check(more_literals)
end)

test("constant integer division by zero raises at run time", function()
  D.cases_error("attempt to divide by zero", const_div0, {})
end)

test("constant integer modulo by zero raises at run time", function()
  D.cases_error("attempt to perform 'n%0'", const_mod0, {})
end)

test("constant mininteger corner cases", function()
  D.check(const_minint)
end)

test("constant float division corners", function()
  D.check(const_float_div)
end)

test("many locals", function()
  D.cases(many_locals, {1}, {-7}, {2.5}, {3037000499})
end)

-- issue 22: float '%' of two negative constants (a local, an upvalue) is
-- folded as lvm.c's luai_nummod: fmod, corrected only when m and b have
-- opposite signs
local UPNEG = -3.0
local function const_fmod_neg()
  local x, y = -0.5, -3.0
  return x % -1.0, y % -2.0, UPNEG % -2.0, UPNEG % 2.0, -UPNEG % -2.0, x % 1.0
end

local KT = { a = -3.0, b = -0.5 }
local function const_field_fmod_neg() return KT.a % -2.0, KT.b % -1.0, KT.b % KT.a end

test("constant float modulo of negative operands", function()
  D.check(const_fmod_neg)
  D.check(const_field_fmod_neg)
end)

-- issue 22: math.max/min of constants compare an integer and a float
-- exactly (2^53 + 1 > 2.0^53), keep the first extreme and its subtype
local function const_minmax_exact()
  local a, f = 9007199254740993, 9007199254740992.0
  return math.max(a, f), math.min(a, f), math.min(f, a), math.max(f, a),
         math.max(0, -0.0), math.min(-0.0, 0), math.max(math.maxinteger, 2.0 ^ 63),
         math.min(math.mininteger, -2.0 ^ 63), math.max(-9007199254740993, -2.0 ^ 53)
end
local function minmax_args(a, f) return math.max(a, f), math.min(a, f), math.min(f, a), math.max(f, a) end

test("math.max/min of an integer and a float compare exactly", function()
  D.check(const_minmax_exact)
  D.cases(minmax_args, {9007199254740993, 9007199254740992.0}, {-9007199254740993, -2.0 ^ 53},
          {math.maxinteger, 2.0 ^ 63}, {math.mininteger, -2.0 ^ 63}, {0, -0.0})
end)
