-- Differential tests of what the bytecode pipeline (src/frontend ->
-- src/ir -> src/codegen) supports beyond the source-text front end it
-- replaced: values typed per SSA value rather than per variable, Lua's
-- integer/float subtype kept at run time (T_NUMBER), functions whose
-- source cannot be found.
local D = require "difftest"
local kjit = require "kjit"


---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------
-- a register reused: an integer, then a float
local function reuse(n)
  local a = n * 2
  local b = a + 1
  do
    local c = n / 4
    b = b + c
  end
  local x = 1
  x = x + 0.5
  return b, x
end

-- local A; A = f(v); return f(A)
local function half(v) return v / 2 end
local function twice_half(v)
  local A
  A = half(v)
  return half(A)
end

-- a local holding an integer, then a float: '% 0' of the integer raises
local function int_then_float_mod(n, m)
  local x = n
  local r = x % m          -- integers: 'n%%0' when m == 0
  x = x + 0.5
  return r, x % 2
end

-- an integer accumulator meets f64 elements: a number at the loop header
local function sum(x, n)
  local s = 0
  for i = 1, n do s = s + x[i] end
  return s
end

-- loops peeled (src/codegen/cg_peel.c): the first iteration sees the
-- integer, the rest floats
local function peel_idiv(x, n)
  local s, q = 0, 0
  for i = 1, n do
    q = q + (s // 1 == s and 1 or 0) + s // 2   -- s // 0 would differ: int raises
    s = s + x[i]
  end
  return s, q
end

local function peel_mod0(x, n)
  local s = 0
  for i = 1, n do
    local r = s % 0            -- raises in the first iteration only (integer)
    s = s + x[i] + r
  end
  return s
end

local function peel_while_break(x, n)
  local s, i = 0, 1
  while i <= n do
    if s > 5 then break end
    s = s + x[i] * 2
    i = i + 1
  end
  return s, i
end

local function peel_repeat(x, n)
  local s, i = 1, 0
  repeat
    i = i + 1
    s = s * x[i]
  until i >= n
  return s
end

-- long counted loops (strip-mined into chunks when the target polls for
-- interrupts): every iteration runs once, a break stops mid-chunk
local function long_for(a, b, c, stop)
  local s, cnt, last = 0, 0, 0
  for i = a, b, c do
    s = s + i
    cnt = cnt + 1
    last = i
    if cnt == stop then break end
  end
  return s, cnt, last
end

-- nil or a number that is an integer or a float (the KEntry tag 0/1/2)
local function maybe_num(c, a)
  local v = 1
  if a then v = 2.5 end
  return c and v or nil, (not c) and v or false
end

-- the subtype decided at run time, returned as Lua does
local function pick(c, a)
  local v = 1
  if c then v = a end
  return v, v // 1, -v
end

-- a for loop whose start is an integer on one path and a float on another
local function for_number(c, n)
  local start = 1
  if c then start = 0.5 end
  local s, cnt = 0, 0
  for i = start, n do s = s + i; cnt = cnt + 1 end
  return s, cnt
end

-- math.floor of a float beyond the integers is the float, as in Lua
local function floor_any(x) return math.floor(x) end

-- math.floor/ceil results used as keys (cg_builtin.c branches on whether
-- the result fits an integer; cg_array.c converts a key once per block)
local function hist_clamped(n, x, nbins, counts)
  for i = 1, n do
    local b = math.floor(x[i] * nbins) + 1
    if b > nbins then b = nbins end
    counts[b] = counts[b] + 1
  end
end
local function hist_raw(n, x, nbins, counts, up)
  local s = 0
  for i = 1, n do
    local b = up and math.ceil(x[i] * nbins) or math.floor(x[i] * nbins) + 1
    s = s + b
    counts[b] = counts[b] + b
  end
  return s
end
-- one key, two arrays of different extents, a store between the reads
local function two_arrays(a, c, k)
  local key = c and k or k + 0.0
  a[key] = a[key] * 2
  local v = c and a[key] or -a[key]
  return v, key
end
local function round_mix(x, d)
  local f, c = math.floor(x), math.ceil(x)
  return f + d, c - d, f // 2, c % 3, f == c, f < d
end

-- a triangular loop nest with a big inner body (nbody's pair loop) and a
-- small one: src/codegen/cg_peel.c's cg_loop_hints keeps LLVM from
-- runtime-unrolling the first only
local function pairs_big(n, x, y, v)
  for i = 1, n do
    for j = i + 1, n do
      local dx, dy = x[i] - x[j], y[i] - y[j]
      local d2 = dx * dx + dy * dy + 0.5
      local mag = 0.01 / (d2 * math.sqrt(d2))
      v[i] = v[i] - dx * mag * y[j]
      v[j] = v[j] + dx * mag * y[i]
      x[j] = x[j] + dy * mag
      y[j] = y[j] - dy * mag
    end
  end
  return v[1]
end
local function sum_small(n, x)
  local s = 0.0
  for i = 1, n do s = s + x[i] end
  return s
end

-- one-block loops that only add floats (the adds form one chain):
-- src/backend/cpu.c's kc_unroll_hints keeps LLVM from runtime-unrolling
-- them; the sums must stay the interpreter's, in its order
local function fp_chain(x, n)
  local s = 0.0
  for i = 1, n do s = s + x * i end
  return s
end
local function fp_chains2(x, n)
  local s, t = 1.0, 0.0
  for i = 1, n do
    s = s - x / i
    t = t + i * 0.5 - x
  end
  return s, t
end

-- two function literals on one line
local f1, f2 = function(a) return a + 1 end, function(a) return a * 2 end

---------------------------------------------------------------------------
-- the tests
---------------------------------------------------------------------------
test("a register reused for an integer then a float", function()
  D.cases(reuse, {3}, {-7}, {0}, {math.maxinteger})
end)

test("local A; A = f(v); return f(A)", function()
  D.cases(twice_half, {8}, {3}, {2.5}, {-1})
end)

test("an integer-then-float local: '% 0' of the integer raises", function()
  D.cases(int_then_float_mod, {7, 3}, {-7, 3}, {7, -3}, {7.5, 2})
  D.cases_error("attempt to perform 'n", int_then_float_mod, {7, 0}, {0, 0})
  D.cases(int_then_float_mod, {7.0, 0})   -- floats: nan, no error
end)

test("s = 0; for i = 1, n do s = s + x[i] end (f64 x)", function()
  local x = kjit.array({1.5, 2.25, -3, 4}, "f64")
  D.cases(sum, {x, 4}, {x, 0}, {x, 2})
  local xi = kjit.array({1, 2, 3}, "i64")
  D.cases(sum, {xi, 3}, {xi, 0})
  D.cases_error("out of bounds", sum, {x, 5})
end)

test("a subtype decided at run time is Lua's", function()
  D.cases(pick, {true, 2.5}, {false, 2.5}, {true, 3}, {nil, 0.0})
end)

test("a for loop whose start is an integer or a float", function()
  D.cases(for_number, {true, 3}, {false, 3}, {true, 0}, {false, 2.5}, {nil, -1})
end)

test("math.floor of a huge float returns the float", function()
  D.cases(floor_any, {2.5}, {-2.5}, {1e300}, {-1e300}, {2 ^ 63}, {-2 ^ 63}, {1 / 0}, {0 / 0}, {7})
end)

test("math.floor/ceil results as array keys: integers, huge floats, NaN", function()
  local x = kjit.array({0.05, 0.5, 0.999, 0.25, 0.75, 0.0}, "f64")
  local counts = kjit.zeros(4, "i64")
  D.cases(hist_clamped, {6, x, 4, counts}, {0, x, 4, counts})
  local big = kjit.array({0.5, 1.5}, "f64")
  D.cases(hist_clamped, {2, big, 4, counts})        -- 1.5 * 4 clamps to the last bin
  D.cases(hist_raw, {6, x, 4, counts, false}, {5, x, 3, counts, true}, {3, x, 3, counts, nil})
  for _, v in ipairs({ 1e300, -1e300, 2 ^ 63, 1 / 0, -1 / 0, 0 / 0, 4.5, -0.25, 1.25 }) do
    local xs = kjit.array({0.5, v}, "f64")
    D.check(hist_clamped, 2, xs, 4, counts)
    D.check(hist_raw, 2, xs, 1, counts, false)
    D.check(hist_raw, 2, xs, 1, counts, true)
  end
  local xi = kjit.array({0.5, -2 ^ 63}, "f64")        -- floor fits exactly: minint
  D.check(hist_raw, 2, xi, 1, counts, false)
  local xf = kjit.array({0.5, 0.75, 0.1}, "f32")
  D.cases(hist_clamped, {3, xf, 4, counts})
  D.cases(hist_raw, {3, xf, 4, counts, true})
end)

test("one integer-or-float key: read, store, read again", function()
  local a = kjit.array({1.5, 2, 3}, "f64")
  D.cases(two_arrays, {a, true, 2}, {a, false, 2}, {a, false, 3}, {a, true, 1})
  D.cases_error("out of bounds", two_arrays, {a, true, 4}, {a, false, 4}, {a, false, 0})
  D.cases_error("is not an integer", two_arrays, {a, false, 1.5}, {a, true, 0.5})
  D.cases_error("out of bounds", two_arrays, {a, false, 2 ^ 63}, {a, false, -2 ^ 64})
end)

test("math.floor/ceil results meeting integers and floats", function()
  for _, x in ipairs({ 2.5, -2.5, 3.0, 1e300, -1e300, 2 ^ 63, -2 ^ 63, 1 / 0, -1 / 0, 0 / 0, 7, -7 }) do
    for _, d in ipairs({ 1, -1, 0.5, math.maxinteger }) do
      D.check(round_mix, x, d)
    end
  end
end)

test("big loop bodies are not runtime-unrolled, small ones may be", function()
  local function arrays()
    return kjit.array({0.5, 1.5, -2, 3.25, 0.75}, "f64"), kjit.array({1, -1, 2.5, 0.25, 4}, "f64"),
           kjit.zeros(5, "f64")
  end
  for n = 0, 5 do
    local x, y, v = arrays()
    D.check(pairs_big, n, x, y, v)
  end
  local x, y, v = arrays()
  D.cases_error("out of bounds", pairs_big, {6, x, y, v})
  local big, small = kjit.jit(pairs_big), kjit.jit(sum_small)
  big(3, x, y, v)
  small(3, x)
  truthy(big:inspect("llvm"):find("llvm.loop.unroll.runtime.disable", 1, true), "big body: hint")
  truthy(not small:inspect("llvm"):find("llvm.loop.unroll.runtime.disable", 1, true), "small body: none")
end)

test("float-sum loops are not runtime-unrolled and sum as the interpreter does", function()
  for _, n in ipairs({ -3, 0, 1, 2, 7, 8, 9, 15, 16, 17, 1001, 65537, 200003 }) do
    D.cases(fp_chain, {1.5, n}, {0.1, n}, {3, n})
    D.cases(fp_chains2, {1.5, n}, {-0.3, n})
  end
  D.cases(fp_chain, {0.1, 2.5}, {1 / 3, math.mininteger})
  -- not unrolled: the loop carries the hint (a one-block loop), or, as
  -- when it polls each iteration (codegen/cg_func.c, float_recurrence),
  -- its body's float adds and subtracts appear once (fp_chain: 1;
  -- fp_chains2: 3), not once per unrolled copy
  for fn, ops in pairs({ [fp_chain] = 1, [fp_chains2] = 3 }) do
    local f = kjit.jit(fn)
    f(0.5, 3)
    local ir = f:inspect("llvm")
    local n = select(2, ir:gsub("= fadd ", "")) + select(2, ir:gsub("= fsub ", ""))
    truthy(ir:find("llvm.loop.unroll.runtime.disable", 1, true) or n == ops,
           "not unrolled (" .. n .. " float adds):\n" .. ir)
  end
end)

test("two function literals on one line", function()
  D.cases(f1, {1}, {2.5})
  D.cases(f2, {1}, {2.5})
end)

test("functions loaded with load(src, name)", function()
  local src = "return function(a, b) local s = 0 for i = 1, a do s = s + i * b end return s end"
  for _, name in ipairs({ "=name", "name", "@not/on/disk.lua" }) do
    local fn = assert(load(src, name))()
    D.cases(fn, {10, 2}, {3, 0.5}, {0, 1})
  end
  local bad = assert(load("return function(a) return a // 0 end", "@not/on/disk.lua"))()
  D.cases_error("attempt to", bad, {3})
end)

test("peeled loops: the first iteration sees the integer", function()
  local x = kjit.array({1.5, 2.25, -3, 4, 0.5}, "f64")
  local x32 = kjit.array({1.5, 2.25, -3, 4, 0.5}, "f32")
  D.cases(peel_idiv, {x, 5}, {x, 1}, {x, 0}, {x32, 5})
  D.cases_error("attempt to perform 'n", peel_mod0, {x, 3}, {x, 1})
  D.cases(peel_mod0, {x, 0})
  D.cases(peel_while_break, {x, 5}, {x, 0}, {x, 2}, {x32, 5})
  D.cases(peel_repeat, {x, 5}, {x, 1}, {x32, 3})
  D.cases_error("out of bounds", peel_repeat, {x, 6})
end)

test("long counted loops: every iteration once, across chunks", function()
  D.cases(long_for, {1, 200000, 1, -1}, {1, 200000, 3, -1}, {200000, 1, -7, -1},
    {1, 131072, 1, -1}, {1, 131073, 1, -1}, {0, 65535, 1, -1}, {0, 65536, 1, -1},
    {1, 200000, 1, 70000}, {1, 200000, 2, 65536}, {math.maxinteger - 100000, math.maxinteger, 1, -1},
    {math.mininteger, math.mininteger + 100000, 1, -1}, {1, 100000.5, 1, -1}, {5, 1, 1, -1})
end)

test("nil/false or an integer-or-float result", function()
  D.cases(maybe_num, {true, true}, {true, false}, {false, true}, {false, false})
end)

-- Ordering with nil or false: Lua's "attempt to compare ..." with the
-- operands in Lua's order, never the arithmetic message (compared exactly
-- with the interpreter's message, location included).
local function lt_num_maybe(a, b) local t = b > 0 and b or nil return a < t end
local function lt_maybe_num(a, b) local t = b > 0 and b or nil return t < a end
local function le_maybe_maybe(a, b)
  local s, t = a > 0 and a or nil, b > 0 and b or nil
  return s <= t
end
local function gt_false(a, b) local t = b > 0 and b return a > t end
local function lt_false_nil(a, b)
  local s, t = a > 0 and a, b > 0 and b or nil
  return s < t
end
test("comparing with nil or false: the interpreter's message", function()
  local cases = { { lt_num_maybe, 1, 2 }, { lt_num_maybe, 1, -2 }, { lt_maybe_num, 1, -2 },
                  { le_maybe_maybe, 1, -2 }, { le_maybe_maybe, -1, 2 }, { le_maybe_maybe, -1, -2 },
                  { le_maybe_maybe, 1, 2.5 }, { gt_false, 1, -2 }, { gt_false, 3, 2 },
                  { lt_false_nil, -1, -2 }, { lt_false_nil, 1, -2 }, { lt_false_nil, -1, 2 } }
  for _, c in ipairs(cases) do
    local iok, iv = pcall(c[1], c[2], c[3])
    local ok, v = pcall(kjit.jit(c[1]), c[2], c[3])
    eq(ok, iok, "raises")
    eq(v, iv, "result or message")
  end
end)
