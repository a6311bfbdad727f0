-- Differential tests under kjit.jit options: every optimization level and
-- boundscheck = false must compute exactly what Lua computes (for programs
-- that stay in bounds). Catches semantics that only hold because LLVM's
-- optimizer happened to fold something, and code that relies on the
-- bounds checks. (fastmath is not diffed: it may change float results.)
local D = require "difftest"
local K = require "kernels"
local saxpy, matmul = K.saxpy, K.matmul
local kjit = D.kjit

local MAXI, MINI = math.maxinteger, math.mininteger
local HUGE, NAN = math.huge, 0 / 0

local O0, O1, O2 = { opt = 0 }, { opt = 1 }, { opt = 2 }
local NOBC = { boundscheck = false }

---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------
local function int_ops(a, b)
  return a // b, a % b, a + b, a - b, a * b, a / b, a << b, a >> b, a & b, a | b, a ~ b
end

local function float_ops(x, y)
  return x // y, x % y, x / y, x ^ y, -x, x < y, x == y
end

local function mixed_cmp(i, x)
  return i < x, i <= x, i == x, x < i, x <= i
end

local function for_counts(a, b, c)
  local n, last = 0, 0
  for i = a, b, c do
    n = n + 1
    last = i
  end
  return n, last
end

local function math_ops(x)
  return math.floor(x), math.ceil(x), math.abs(x), math.sqrt(math.abs(x)),
    math.fmod(x, 3), math.tointeger(x) or -1
end



local function stores(a, v)
  for i = 1, #a do a[i] = v * i end
end

local function prefix(a)
  for i = 2, #a do a[i] = a[i] + a[i - 1] end
  return a[#a]
end

local function idiv_zero(a, b)
  local s = 0
  for i = 1, 3 do s = s + a // (b - i) end
  return s
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
local INT_CASES = { {7, 2}, {-7, 2}, {7, -2}, {MINI, -1}, {MAXI, 1}, {1, 64}, {-1, 63},
  {5, -1}, {0, 3}, {MINI, MAXI} }
local FLOAT_CASES = { {7.5, 2.0}, {-7.5, 2.0}, {1.0, 0.0}, {-0.0, 1.0}, {5.5, HUGE},
  {-5.5, HUGE}, {NAN, 1.0}, {2.0, 0.5} }
local MIXED_CASES = { {9007199254740993, 2.0 ^ 53}, {MAXI, 2.0 ^ 63}, {MINI, -2.0 ^ 63},
  {3, 3.5}, {0, -0.0}, {1, NAN} }
local FOR_CASES = { {1, 10, 3}, {MAXI - 5, MAXI, 2}, {MINI + 5, MINI, -2}, {1, 3.5, 1},
  {0, MAXI, MAXI}, {MAXI, MINI, MINI}, {1, 0, 1} }
local MATH_CASES = { {3.7}, {-3.7}, {-0.0}, {7}, {MINI}, {-7.5} }

for _, o in ipairs({ { "opt 0", O0 }, { "opt 1", O1 }, { "opt 2", O2 } }) do
  local name, opts = o[1], o[2]
  test("integer operators at " .. name, function()
    D.cases_opts(opts, int_ops, table.unpack(INT_CASES))
  end)
  test("float operators at " .. name, function()
    D.cases_opts(opts, float_ops, table.unpack(FLOAT_CASES))
  end)
  test("mixed comparisons at " .. name, function()
    D.cases_opts(opts, mixed_cmp, table.unpack(MIXED_CASES))
  end)
  test("for loop counts at " .. name, function()
    D.cases_opts(opts, for_counts, table.unpack(FOR_CASES))
  end)
  test("math functions at " .. name, function()
    D.cases_opts(opts, math_ops, table.unpack(MATH_CASES))
  end)
  test("integer division by zero in a loop at " .. name, function()
    D.cases_opts(opts, idiv_zero, {10, 10}, {10, 2})
  end)
  test("saxpy at " .. name, function()
    local x, y = kjit.zeros(33), kjit.zeros(33)
    for i = 1, 33 do x[i] = i * 0.5; y[i] = 1 / i end
    D.check_opts(opts, saxpy, 1.5, x, y, kjit.zeros(33))
  end)
end

test("saxpy without bounds checks", function()
  local x, y = kjit.zeros(33), kjit.zeros(33)
  for i = 1, 33 do x[i] = i * 0.5; y[i] = 1 / i end
  D.check_opts(NOBC, saxpy, 1.5, x, y, kjit.zeros(33))
end)

test("matmul without bounds checks", function()
  local A, B = kjit.zeros({3, 4}), kjit.zeros({4, 2})
  for i = 1, 3 do for k = 1, 4 do A[i][k] = i - k * 0.5 end end
  for k = 1, 4 do for j = 1, 2 do B[k][j] = k * j + 0.25 end end
  D.check_opts(NOBC, matmul, A, B, kjit.zeros({3, 2}))
end)

test("store rules without bounds checks", function()
  D.check_opts(NOBC, stores, kjit.zeros(5, "u8"), 100)
  D.check_opts(NOBC, stores, kjit.zeros(5, "f32"), 0.1)
  D.check_opts(NOBC, stores, kjit.zeros(5, "i16"), 10000)
end)

test("non-integral store still raises without bounds checks", function()
  D.check_opts(NOBC, stores, kjit.zeros(5, "i32"), 0.5)
end)

test("prefix sum without bounds checks", function()
  D.check_opts(NOBC, prefix, kjit.array({1, 2, 3, 4, 5, 6, 7}, "i64"))
end)
