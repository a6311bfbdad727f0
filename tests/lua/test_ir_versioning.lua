-- Differential tests: loops whose bounds checks are hoisted into one range
-- test before the loop (a fast unchecked copy, a checked copy when the test
-- fails; src/codegen/cg_version.c). Out-of-range accesses at the first and
-- the last iteration, negative and run-time steps, nests, limits near
-- math.maxinteger (the range test must not overflow), arrays reassigned in
-- the loop, float loops, early exits, loops longer than one strip-mined
-- chunk (65536 iterations), values of the loop used after it, while
-- counters near 2^31. Every error message and line, and every array's
-- contents after the error (the writes done before it), must equal the
-- interpreter's.
local D = require "difftest"
local kjit = D.kjit

local MAXI, MINI = math.maxinteger, math.mininteger

local function ramp(n, dt)
  local t = {}
  for i = 1, n do t[i] = i end
  return kjit.array(t, dt)
end

---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------
local function axpy(y, x, a, lo, hi)
  for i = lo, hi do y[i] = y[i] + a * x[i] end
  return y[1]
end

local function sum_range(x, a, b, c)
  local s = 0.0
  for i = a, b, c do s = s + x[i] end
  return s
end

local function down(y, x, n)
  for i = n, 1, -1 do y[i] = x[i] * 2 end
  return y[1]
end

local function shifted(y, x, n, off)
  for i = 2, n do y[i] = x[i + off] + x[i - 1] end
  return y[2]
end

local function invariant_key(y, x, n, k)
  for i = 1, n do y[i] = x[k] + i end
  return y[1]
end

local function stencil(out, x, n, m)
  for i = 2, n - 1 do
    for j = 2, m - 1 do
      out[i][j] = x[i - 1][j] + x[i + 1][j] + x[i][j - 1] + x[i][j + 1] - 4 * x[i][j]
    end
  end
  return out[2][2]
end

local function near_max(x, a, b, off)
  local s = 0.0
  for i = a, b do s = s + x[i - off] end
  return s
end

local function early_exit(x, n)
  local s = 0.0
  for i = 1, MAXI do
    if i > n then break end
    s = s + x[i]
  end
  return s
end

local function reassigned(a, b, n)
  local x = a
  for i = 1, n do
    x[i] = i
    if i == 2 then x = b end
  end
  return a[1], b[1]
end

local function float_loop(x, a, b)
  local s = 0.0
  for i = a, b do s = s + x[i] end
  return s
end

local function last_value(x, n)
  local last, idx = 0.0, 0
  for i = 1, n do
    last = x[i]
    idx = i
  end
  return last, idx
end

local function while_count(x, k, e, off)
  local s = 0.0
  while k < e do
    s = s + x[k - off]
    k = k + 1
  end
  return s, k
end

local function int_array(y, x, n)
  for i = 1, n do y[i] = x[i] // 3 end
  return y[n]
end

---------------------------------------------------------------------------
-- the tests
---------------------------------------------------------------------------
test("versioned loop: in range, first and last iteration out of range", function()
  local x, y = ramp(10), ramp(10)
  D.check(axpy, y, x, 2.0, 1, 10)
  D.check(axpy, y, x, 2.0, 3, 7)
  D.check(axpy, y, x, 2.0, 5, 4)       -- never runs
  D.check_error("out of bounds", axpy, y, x, 2.0, 1, 11)
  D.check_error("out of bounds", axpy, y, x, 2.0, 0, 10)
  D.check_error("out of bounds", axpy, y, ramp(9), 2.0, 1, 10)   -- the other array
  D.check_error("out of bounds", axpy, y, x, 2.0, MINI, 3)
end)

test("negative and run-time steps", function()
  local x = ramp(20)
  D.check(sum_range, x, 20, 1, -1)
  D.check(sum_range, x, 1, 20, 3)
  D.check(sum_range, x, 19, 2, -4)
  D.check_error("out of bounds", sum_range, x, 21, 1, -1)
  D.check_error("out of bounds", sum_range, x, 20, 0, -1)
  D.check_error("out of bounds", sum_range, x, 1, 22, 3)   -- 1, 4, ..., 22
  D.check(sum_range, x, 1, 21, 3)                          -- stops at 19
  D.check_error("'for' step is zero", sum_range, x, 1, 20, 0)
  D.check(down, ramp(8), ramp(8), 8)
  D.check_error("out of bounds", down, ramp(8), ramp(8), 9)
  D.check_error("out of bounds", down, ramp(9), ramp(8), 9)
end)

test("affine keys and invariant keys", function()
  local x, y = ramp(12), ramp(12)
  D.check(shifted, y, x, 10, 2)
  D.check_error("out of bounds", shifted, y, x, 11, 2)    -- x[13] at the last
  D.check_error("out of bounds", shifted, y, x, 10, -2)   -- x[0] at the first
  D.check(invariant_key, y, x, 12, 5)
  D.check_error("out of bounds", invariant_key, y, x, 12, 13)
  D.check_error("out of bounds", invariant_key, y, x, 12, 0)
  D.check(invariant_key, y, x, 0, 99)                      -- never runs: no error
  D.check(int_array, ramp(7, "i32"), ramp(7, "i64"), 7)
  D.check_error("out of bounds", int_array, ramp(7, "i32"), ramp(8, "i64"), 8)
end)

test("nests: a 2-D stencil", function()
  local n, m = 6, 7
  local x, out = kjit.zeros({n, m}), kjit.zeros({n, m})
  for i = 1, n do for j = 1, m do x[i][j] = i * 10 + j * j end end
  D.check(stencil, out, x, n, m)
  D.check_error("out of bounds", stencil, out, x, n + 1, m)
  D.check_error("out of bounds", stencil, out, x, n, m + 1)
  D.check_error("out of bounds", stencil, kjit.zeros({n, m - 2}), x, n, m)
end)

test("limits near math.maxinteger and math.mininteger", function()
  local x = ramp(5)
  D.check(near_max, x, MAXI - 4, MAXI, MAXI - 5)
  D.check_error("out of bounds", near_max, x, MAXI - 5, MAXI, MAXI - 5)
  D.check_error("out of bounds", near_max, x, MAXI - 1, MAXI, 0)
  D.check(near_max, x, MINI, MINI + 4, MINI - 1)          -- i - off wraps into 1..5
  D.check_error("out of bounds", near_max, x, MINI, MINI + 5, MINI - 1)
  D.check(sum_range, x, MAXI, MAXI - 10, -1 + 0 * MAXI)   -- never runs
  D.check_error("out of bounds", sum_range, x, 1, MAXI, MAXI // 2)   -- 1, then past it
  D.check(sum_range, x, 1, MAXI, MAXI)                     -- one iteration
  D.check(early_exit, x, 5)
  D.check(early_exit, x, 0)
  D.check_error("out of bounds", early_exit, x, 6)
end)

test("an array reassigned in the loop", function()
  D.check(reassigned, ramp(5), ramp(5), 5)
  D.check_error("out of bounds", reassigned, ramp(5), ramp(3), 5)
  D.check_error("out of bounds", reassigned, ramp(1), ramp(5), 5)
end)

test("float loops", function()
  local x = ramp(6)
  D.check(float_loop, x, 1.0, 6)
  D.check(float_loop, x, 1, 6.5)
  D.check_error("out of bounds", float_loop, x, 1.0, 7)
  D.check_error("out of bounds", float_loop, x, 0.0, 3)
end)

test("loops longer than one poll chunk, values used after the loop", function()
  local n = 200003
  local x, y = ramp(n), ramp(n)
  D.check(axpy, y, x, 0.5, 1, n)
  D.check_error("out of bounds", axpy, y, x, 0.5, 1, n + 1)
  D.check_error("out of bounds", axpy, ramp(n - 1), x, 0.5, 1, n)
  D.check(last_value, x, n)
  D.check(last_value, x, 0)
  D.check_error("out of bounds", last_value, x, n + 1)
end)

test("while counters near 2^31", function()
  local x = ramp(10)
  local b = 1 << 31
  D.check(while_count, x, b - 5, b + 5, b - 6)
  D.check(while_count, x, b - 3, b - 3, 0)
  D.check_error("out of bounds", while_count, x, b - 5, b + 6, b - 6)
  D.check_error("out of bounds", while_count, x, b - 6, b + 5, b - 6)
  D.check(while_count, x, MAXI - 9, MAXI, MAXI - 10)
  D.check(while_count, x, -b - 2, -b + 8, -b - 3)
end)

---------------------------------------------------------------------------
-- nests versioned as a whole (cg_version.c): one range test before a
-- rectangular nest, the nest's own blocks without the checks it proves,
-- a checked copy of the whole nest (inner loops versioned in it as on
-- their own) when it fails
---------------------------------------------------------------------------
local function matmul(n, m, p, A, B, C)   -- C (n x p) = A (n x m) * B (m x p)
  for i = 1, n do
    for j = 1, p do
      local s = 0.0
      for k = 1, m do s = s + A[i][k] * B[k][j] end
      C[i][j] = s
    end
  end
  return C[1][1]
end

local function mat(r, c, f)
  local a = kjit.zeros({r, c})
  for i = 1, r do for j = 1, c do a[i][j] = f(i, j) end end
  return a
end

-- the boundary rows read out of range unless guarded: the nest's test
-- fails (x[i - 1] at i = 1), the checked copy runs, without an error
local function guarded(out, x, n, m)
  for i = 1, n do
    for j = 1, m do
      if i > 1 and j > 1 then out[i][j] = x[i - 1][j - 1] + x[i][j] else out[i][j] = -x[i][j] end
    end
  end
  return out[n][m]
end

local function triangular(out, x, n)
  for i = 1, n do
    for j = 1, i do out[i][j] = x[i][j] * 2 + i end
  end
  return out[n][1]
end

local function invariant_row(out, x, n, m, k)
  for i = 1, n do
    for j = 1, m do out[i][j] = x[k][j] + i end
  end
  return n
end

local function reversed(out, x, n, m, di, dj)
  for i = n, 1, -1 do
    for j = m, 1, -2 do out[i][j] = x[i + di][j - dj] end
  end
  return out[1][1]
end

local function float_limit(out, x, n, lim)
  for i = 1, n do
    for j = 1, lim do out[i][j] = x[i][j] + 0.5 end
  end
  return out[1][1]
end

local function runtime_step(out, x, n, m, st)
  for i = 1, n do
    for j = 1, m, st do out[i][j] = x[i][j] end
  end
  return out[1][1]
end

local function nest_break(x, n, m, stop)
  local s = 0.0
  for i = 1, n do
    for j = 1, m do
      if i * j > stop then break end
      s = s + x[i][j]
    end
  end
  return s
end

local function after_nest(x, n, m)
  local last, cnt = 0.0, 0
  for i = 1, n do
    for j = 1, m do last = x[i][j]; cnt = cnt + 1 end
  end
  return last, cnt
end

local function find_first(x, n, m, v)
  for i = 1, n do
    for j = 1, m do
      if x[i][j] == v then return i, j end
    end
  end
  return -1, -1
end

local function goto_out(x, n, m, lim)
  local s = 0.0
  for i = 1, n do
    for j = 1, m do
      s = s + x[i][j]
      if s > lim then goto done end
    end
  end
  ::done::
  return s
end

-- the arrays change between sweeps: the nest test runs before each sweep
-- (the inner two loops); the inner limits are `n - 1`, computed in the body
local function sweeps(n, iters, a, b)
  for _ = 1, iters do
    for i = 2, n - 1 do
      for j = 2, n - 1 do
        b[i][j] = 0.25 * (a[i - 1][j] + a[i + 1][j] + a[i][j - 1] + a[i][j + 1])
      end
    end
    a, b = b, a
  end
  return a[2][2]
end

local function cube(out, x, n, m, p)
  for i = 1, n do
    for j = 1, m do
      for k = 1, p do out[i][j][k] = x[i][j][k] + x[n + 1 - i][j][p + 1 - k] end
    end
  end
  return out[1][1][1]
end

local function near_max_nest(out, x, lo, hi, off, m)
  for i = lo, hi do
    for j = 1, m do out[i - off][j] = x[i - off][j] * 3 end
  end
  return out[1][1]
end

test("nests: matmul, in range and out of range at every level", function()
  local A, B = mat(4, 3, function(i, j) return i + j / 4 end), mat(3, 5, function(i, j) return i * j - 2 end)
  D.check(matmul, 4, 3, 5, A, B, kjit.zeros({4, 5}))
  D.check(matmul, 2, 3, 4, A, B, kjit.zeros({4, 5}))
  D.check(matmul, 0, 3, 5, A, B, kjit.zeros({4, 5}))       -- the nest never runs
  D.check(matmul, 4, 0, 5, A, B, kjit.zeros({4, 5}))       -- the inner loop never runs
  D.check_error("out of bounds", matmul, 5, 3, 5, A, B, kjit.zeros({5, 5}))   -- A's rows, last i
  D.check_error("out of bounds", matmul, 4, 4, 5, A, B, kjit.zeros({4, 5}))   -- A's columns, last k
  D.check_error("out of bounds", matmul, 4, 3, 6, A, B, kjit.zeros({4, 6}))   -- B's columns, last j
  D.check_error("out of bounds", matmul, 4, 3, 5, A, B, kjit.zeros({4, 4}))   -- C's columns (the store)
  D.check_error("out of bounds", matmul, 4, 3, 5, A, B, kjit.zeros({3, 5}))   -- C's rows
end)

test("nests: a failing test without an error (guarded boundary), triangular nests", function()
  local x = mat(5, 6, function(i, j) return i * 7 - j end)
  D.check(guarded, kjit.zeros({5, 6}), x, 5, 6)
  D.check(guarded, kjit.zeros({5, 6}), x, 1, 1)
  D.check_error("out of bounds", guarded, kjit.zeros({5, 6}), x, 6, 6)
  D.check_error("out of bounds", guarded, kjit.zeros({5, 5}), x, 5, 6)
  D.check(triangular, kjit.zeros({5, 6}), x, 5)
  D.check_error("out of bounds", triangular, kjit.zeros({5, 6}), x, 6)
  D.check_error("out of bounds", triangular, kjit.zeros({5, 4}), x, 5)
end)

test("nests: invariant keys, reversed and odd steps, offsets, float limits", function()
  local x = mat(6, 7, function(i, j) return i * 100 + j end)
  D.check(invariant_row, kjit.zeros({4, 7}), x, 4, 7, 6)
  D.check_error("out of bounds", invariant_row, kjit.zeros({4, 7}), x, 4, 7, 7)
  D.check_error("out of bounds", invariant_row, kjit.zeros({4, 7}), x, 4, 7, 0)
  D.check(invariant_row, kjit.zeros({4, 7}), x, 4, 0, 99)   -- the inner loop never runs
  D.check(invariant_row, kjit.zeros({4, 7}), x, 0, 7, 99)
  D.check(reversed, kjit.zeros({5, 7}), x, 5, 7, 1, 0)
  D.check(reversed, kjit.zeros({5, 7}), x, 5, 6, 0, -1)     -- j = 6, 4, 2: x[..][j + 1]
  D.check_error("out of bounds", reversed, kjit.zeros({5, 7}), x, 5, 7, 2, 0)   -- x[7] at i = 5
  D.check_error("out of bounds", reversed, kjit.zeros({5, 7}), x, 5, 7, 0, 1)   -- x[..][0] at j = 1
  D.check_error("out of bounds", reversed, kjit.zeros({5, 7}), x, 5, 7, -1, 0)  -- x[0] at i = 1
  D.check(float_limit, kjit.zeros({6, 7}), x, 6, 7.0)
  D.check(float_limit, kjit.zeros({6, 7}), x, 6, 7.9)
  D.check(float_limit, kjit.zeros({6, 7}), x, 6, -1.5)
  D.check_error("out of bounds", float_limit, kjit.zeros({6, 7}), x, 6, 8.0)
  D.check_error_loose("'for' limit", float_limit, kjit.zeros({6, 7}), x, 6, nil)
  D.check(runtime_step, kjit.zeros({6, 7}), x, 6, 7, 3)
  D.check(runtime_step, kjit.zeros({6, 7}), x, 6, 7, -1)
  D.check_error("out of bounds", runtime_step, kjit.zeros({6, 7}), x, 6, 8, 7)
  D.check_error("'for' step is zero", runtime_step, kjit.zeros({6, 7}), x, 6, 7, 0)
end)

test("nests: early exits, values used after the nest, three levels", function()
  local x = mat(4, 5, function(i, j) return i - j * 0.25 end)
  D.check(nest_break, x, 4, 5, 12)
  D.check(nest_break, x, 9, 5, 4)          -- rows past 4 break before reading
  D.check_error("out of bounds", nest_break, x, 9, 5, 5)
  D.check(after_nest, x, 4, 5)
  D.check(after_nest, x, 0, 5)
  D.check(after_nest, x, 4, 0)
  D.check_error("out of bounds", after_nest, x, 4, 6)
  D.check(find_first, x, 4, 5, x[3][2])
  D.check(find_first, x, 9, 5, x[1][1])   -- returns before a row out of range
  D.check(find_first, x, 4, 5, 1e9)
  D.check_error("out of bounds", find_first, x, 5, 5, 1e9)
  D.check(goto_out, x, 4, 5, 1e9)
  D.check(goto_out, x, 9, 9, 2.0)          -- leaves the nest before it reads out of range
  D.check_error("out of bounds", goto_out, x, 4, 6, 1e9)
  local c = kjit.zeros({3, 4, 5})
  for i = 1, 3 do for j = 1, 4 do for k = 1, 5 do c[i][j][k] = i * 100 + j * 10 + k end end end
  D.check(cube, kjit.zeros({3, 4, 5}), c, 3, 4, 5)
  D.check(cube, kjit.zeros({3, 4, 5}), c, 2, 4, 3)
  D.check_error("out of bounds", cube, kjit.zeros({3, 4, 5}), c, 3, 4, 6)
  D.check_error("out of bounds", cube, kjit.zeros({3, 4, 5}), c, 3, 5, 5)
  D.check_error("out of bounds", cube, kjit.zeros({3, 4, 4}), c, 3, 4, 5)
end)

test("nests: arrays swapped between sweeps, limits computed in the body", function()
  local a = mat(6, 6, function(i, j) return (i * 3 + j * 5) % 7 end)
  D.check(sweeps, 6, 4, a, mat(6, 6, function() return 0 end))
  D.check(sweeps, 6, 0, a, mat(6, 6, function() return 0 end))
  D.check_error("out of bounds", sweeps, 7, 2, a, mat(7, 7, function() return 0 end))   -- a too small
  D.check_error("out of bounds", sweeps, 6, 3, a, mat(5, 6, function() return 0 end))   -- b too small
  D.check_error("out of bounds", sweeps, 6, 3, a, mat(6, 5, function() return 0 end))
end)

test("nests: rows longer than one poll chunk, ranges near math.maxinteger", function()
  local w = 70001
  local x = kjit.zeros({2, w})
  for j = 1, w do x[1][j] = j; x[2][j] = -j end
  D.check(after_nest, x, 2, w)
  D.check_error("out of bounds", after_nest, x, 2, w + 1)
  D.check(matmul, 2, w, 1, x, mat(w, 1, function(i) return i % 3 end), kjit.zeros({2, 1}))
  local y = mat(3, 4, function(i, j) return i + j end)
  D.check(near_max_nest, kjit.zeros({3, 4}), y, MAXI - 2, MAXI, MAXI - 3, 4)
  D.check_error("out of bounds", near_max_nest, kjit.zeros({3, 4}), y, MAXI - 3, MAXI, MAXI - 3, 4)
  D.check(near_max_nest, kjit.zeros({3, 4}), y, MINI, MINI + 2, MINI - 1, 4)
  D.check_error("out of bounds", near_max_nest, kjit.zeros({3, 4}), y, MINI, MINI + 3, MINI - 1, 4)
end)

test("nests: the bytecode pipeline tests the nest once, before it", function()
  local f = kjit.jit(matmul)
  local A, B = mat(3, 3, function(i, j) return i + j end), mat(3, 3, function(i, j) return i - j end)
  f(3, 3, 3, A, B, kjit.zeros({3, 3}))
  local ir = f:inspect("llvm")
  truthy(ir:find("nestsel", 1, true), "a nest test in:\n" .. ir)
  local s = kjit.jit(sweeps)
  s(4, 2, kjit.zeros({4, 4}), kjit.zeros({4, 4}))
  truthy(s:inspect("llvm"):find("nestsel", 1, true), "a nest test for the sweeps' inner nest")
  local g = kjit.jit(triangular)
  g(kjit.zeros({3, 3}), A, 3)
  truthy(not g:inspect("llvm"):find("nestsel", 1, true), "no nest test for a triangular nest")
end)

---------------------------------------------------------------------------
-- general affine keys (ir_facts_affine.c): +v or -v plus any sum of
-- invariants, in any association; the invariant part computed again
-- before the loop (a product `(i - 1) * m` of the body included); integer
-- wrapping in the invariant sum and in the key itself
---------------------------------------------------------------------------
local function shift_sum(y, a, z, i, s, lo, hi)   -- +v + inv + 1, -v + inv + 1
  for j = lo, hi do y[j] = a[j + s + 1] * 2 + z[i - j + 1] end
  return y[lo]
end

local function shift_orders(y, a, z, n, s, i, lo, hi)
  for j = lo, hi do y[j] = a[s + 1 + j] + z[n - j] + z[(i + 1) - j] + a[-j + i] end
  return y[hi]
end

local function shift_down(y, a, n, s, lo, hi)     -- a decreasing loop: -v flips the extremes
  for j = hi, lo, -1 do y[j] = a[n - j + s] - a[j - s] end
  return y[lo]
end

local function shift_step(y, a, s, lo, hi, st)    -- the step's sign known at run time
  for j = lo, hi, st do y[j] = a[s - j] end
  return y[lo]
end

local function two_terms(y, a, s, t, lo, hi)      -- the invariant sum may wrap
  for j = lo, hi do y[j - lo + 1] = a[j + s + t] end
  return y[1]
end

local function neg_wrap(y, a, s, lo, hi)          -- -v of mininteger wraps
  for j = lo, hi do y[j - lo + 1] = a[s - j] end
  return y[1]
end

local function guarded_mid(y, a, s, k, n)         -- fails in the middle only
  for j = 1, n do
    y[j] = j
    if j == k then y[j] = a[j + s + 1] end
  end
  return y[n]
end

-- the convolution of issue 23: a triangular nest, the inner bounds from
-- math.max/math.min of the row
local function convolve(n, m, a, z, out)
  for i = 1, n + m - 1 do
    local s = math.max(i - m, 0)
    local acc = 0.0
    for j = 0, math.min(i, n) - s - 1 do acc = acc + a[j + s + 1] * z[i - j - s] end
    out[i] = acc
  end
  return out[1]
end

-- 2-D forms: a flat row-major grid and a triangular nest of rows (the
-- nest test does not apply: each inner loop is versioned on its own)
local function row_major(y, x, n, m)
  for i = 2, n - 1 do
    for j = 1, m do
      y[(i - 1) * m + j] = x[(i - 2) * m + j] + x[i * m + j] + x[(i - 1) * m + m + 1 - j]
    end
  end
  return y[m + 1]
end

local function stencil_tri(u, v, n)
  for i = 2, n - 1 do
    for j = 2, i do
      v[i][j] = u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][n + 1 - j]
    end
  end
  return v[2][2]
end

local function mirrored(out, x, n, m)             -- a rectangular nest: one test
  for i = 1, n do
    for j = 1, m do out[i][j] = x[n + 1 - i][m - j + 1] + x[i][(m + 1) - j] end
  end
  return out[1][1]
end

test("general affine keys: sums in any order, in range and out of range", function()
  local a, z = ramp(12), ramp(12)
  D.check(shift_sum, ramp(12), a, z, 10, 1, 1, 10)
  D.check(shift_sum, ramp(12), a, z, 10, 1, 4, 6)
  D.check(shift_sum, ramp(12), a, z, 10, 1, 7, 6)                         -- never runs
  D.check_error("out of bounds", shift_sum, ramp(12), a, z, 10, 2, 1, 10)  -- a[13], last
  D.check_error("out of bounds", shift_sum, ramp(12), a, z, 13, 0, 1, 10)  -- z[13] at the first
  D.check_error("out of bounds", shift_sum, ramp(12), a, z, 8, 0, 1, 10)   -- z[-1] at the last
  D.check_error("out of bounds", shift_sum, ramp(12), a, z, 10, -2, 1, 10) -- a[0] at the first
  D.check_error("out of bounds", shift_sum, ramp(9), a, z, 10, 0, 1, 10)   -- y[10], last
  D.check(shift_orders, ramp(12), a, z, 12, 1, 11, 1, 10)
  D.check_error("out of bounds", shift_orders, ramp(12), a, z, 12, 2, 11, 1, 10)
  D.check_error("out of bounds", shift_orders, ramp(12), a, z, 10, 1, 11, 1, 10)  -- z[0] at the last
  D.check_error("out of bounds", shift_orders, ramp(12), a, z, 12, 1, 13, 1, 10)  -- z[13] at the first
  D.check_error("out of bounds", shift_orders, ramp(12), a, z, 12, 1, 9, 1, 10)   -- z[0], a[-1] at the last
end)

test("general affine keys: decreasing and run-time steps", function()
  local a = ramp(12)
  D.check(shift_down, ramp(12), a, 10, 1, 2, 9)
  D.check_error("out of bounds", shift_down, ramp(12), a, 10, 1, 1, 9)    -- a[0] at the last
  D.check_error("out of bounds", shift_down, ramp(12), a, 14, 1, 2, 9)    -- a[13] at the last
  D.check_error("out of bounds", shift_down, ramp(12), a, 10, -3, 2, 9)   -- a[-2] at the first
  D.check(shift_step, ramp(12), a, 13, 1, 12, 1)
  D.check(shift_step, ramp(12), a, 13, 12, 1, -1)
  D.check(shift_step, ramp(12), a, 13, 12, 1, -5)
  D.check_error("out of bounds", shift_step, ramp(12), a, 13, 0, 12, 3)   -- a[13] at the first
  D.check_error("out of bounds", shift_step, ramp(12), a, 12, 12, 1, -1)  -- a[0] at the first
  D.check_error("out of bounds", shift_step, ramp(12), a, 12, 11, -1, -4) -- a[13] at the last
end)

test("general affine keys: wrapping near maxinteger and mininteger", function()
  local a = ramp(5)
  -- s + t wraps to -2: keys j - 2, in range for j in 3..7
  D.check(two_terms, ramp(5), a, MAXI, MAXI, 3, 7)
  D.check_error("out of bounds", two_terms, ramp(5), a, MAXI, MAXI, 3, 8)
  D.check_error("out of bounds", two_terms, ramp(5), a, MAXI, MAXI, 2, 7)
  -- j + s wraps past maxinteger: the key is negative
  D.check_error("out of bounds", two_terms, ramp(5), a, MAXI, 0, 1, 5)
  D.check_error("out of bounds", two_terms, ramp(5), a, MAXI - 3, 0, 1, 5)
  D.check(two_terms, ramp(5), a, MAXI - 5, 0, MINI + 6, MINI + 10)
  -- j + s wraps past mininteger into 1..5: the exact sum is out of range,
  -- the test fails, the checked copy gives the interpreter's result
  D.check(two_terms, ramp(5), a, MINI + 1, 0, MINI, MINI + 4)
  D.check(two_terms, ramp(5), a, MINI, 1, MINI, MINI + 4)
  D.check_error("out of bounds", two_terms, ramp(5), a, MINI + 1, 0, MINI, MINI + 5)
  -- loops ending at maxinteger / starting at mininteger
  D.check(two_terms, ramp(5), a, MINI + 1, -1, MAXI - 4, MAXI)     -- j - maxinteger in 1..5
  D.check_error("out of bounds", two_terms, ramp(5), a, MINI + 1, -1, MAXI - 5, MAXI)
  -- s - j, -mininteger wraps to mininteger
  D.check(neg_wrap, ramp(5), a, MINI + 5, MINI, MINI + 4)           -- keys 5..1
  D.check_error("out of bounds", neg_wrap, ramp(5), a, MINI + 5, MINI, MINI + 5)
  D.check_error("out of bounds", neg_wrap, ramp(5), a, MINI, MINI + 1, MINI + 1)   -- key -1
  D.check(neg_wrap, ramp(5), a, MAXI, MAXI - 4, MAXI - 1)           -- keys 4..1
  D.check(neg_wrap, ramp(5), a, MINI + 1, MINI, MINI)               -- key 1
  -- 0 - mininteger wraps to mininteger (a -v key can wrap only out of range)
  D.check_error("out of bounds", neg_wrap, ramp(5), a, 0, MINI, MINI + 2)
  D.check_error("out of bounds", neg_wrap, ramp(5), a, -5, MINI, MINI + 2)
end)

test("general affine keys: an access failing in the middle, a convolution", function()
  local a = ramp(10)
  D.check(guarded_mid, ramp(6), a, 3, 4, 6)
  D.check_error("out of bounds", guarded_mid, ramp(6), a, 7, 4, 6)         -- a[12] at j = 4
  local n, m = 9, 4
  local x, w = kjit.zeros(n), kjit.zeros(m)
  for i = 1, n do x[i] = i * 0.5 - 1 end
  for i = 1, m do w[i] = 3 - i * i end
  D.check(convolve, n, m, x, w, kjit.zeros(n + m - 1))
  D.check(convolve, 1, 1, x, w, kjit.zeros(1))
  D.check(convolve, n, 1, x, w, kjit.zeros(n))
  D.check_error("out of bounds", convolve, n, m, x, w, kjit.zeros(n + m - 2))       -- out, last row
  D.check_error("out of bounds", convolve, n + 1, m, x, w, kjit.zeros(n + m))       -- a, a middle row
  D.check_error("out of bounds", convolve, n, m + 1, x, w, kjit.zeros(n + m))       -- z, a middle row
end)

test("general affine keys: row-major grids and 2-D stencils", function()
  local n, m = 5, 4
  local x = kjit.zeros(n * m)
  for k = 1, n * m do x[k] = k * k % 7 end
  D.check(row_major, kjit.zeros(n * m), x, n, m)
  D.check(row_major, kjit.zeros(n * m), x, 2, m)                             -- never runs
  D.check_error("out of bounds", row_major, kjit.zeros(n * m), x, n + 1, m)   -- x past the end, last row
  D.check_error("out of bounds", row_major, kjit.zeros((n - 1) * m - 1), x, n, m)   -- y, the last store
  D.check_error("out of bounds", row_major, kjit.zeros(n * m), x, n, m + 1)   -- x, the last row
  local u = mat(6, 6, function(i, j) return i * 10 + j end)
  D.check(stencil_tri, u, kjit.zeros({6, 6}), 6)
  D.check_error("out of bounds", stencil_tri, u, kjit.zeros({6, 6}), 7)
  D.check_error("out of bounds", stencil_tri, u, kjit.zeros({6, 4}), 6)      -- v's columns, row 5
  D.check(mirrored, kjit.zeros({5, 6}), u, 5, 6)
  D.check_error("out of bounds", mirrored, kjit.zeros({5, 6}), u, 7, 6)      -- x[0] at i = 7
  D.check_error("out of bounds", mirrored, kjit.zeros({5, 6}), u, 5, 7)
  D.check_error("out of bounds", mirrored, kjit.zeros({5, 5}), u, 5, 6)
end)

-- #x of an array from outside the loop is an invariant (its first extent):
-- reversed indices, and nests whose limits are lengths
local function reverse_into(y, x, n)
  for i = 1, n do y[i] = x[#x - i + 1] + x[#y + 1 - i] end
  return y[1]
end

local function len_nest(m, x, y)
  local s = 0.0
  for i = 1, #x do
    for j = 1, #y do s = s + m[i][j] * y[#y + 1 - j] * x[#x - i + 1] end
  end
  return s
end

test("lengths as invariants: reversed indices, nests over #x", function()
  D.check(reverse_into, ramp(6), ramp(6), 6)
  D.check(reverse_into, ramp(6), ramp(8), 6)
  D.check_error("out of bounds", reverse_into, ramp(6), ramp(5), 6)      -- x[0] at the last
  D.check_error("out of bounds", reverse_into, ramp(6), ramp(6), 7)      -- x[0], then y[7]
  D.check_error("out of bounds", reverse_into, ramp(7), ramp(6), 6)      -- x[7] at the first
  local m = mat(4, 5, function(i, j) return i * 3 - j end)
  D.check(len_nest, m, ramp(4), ramp(5))
  D.check(len_nest, m, ramp(3), ramp(2))
  D.check(len_nest, m, kjit.zeros(0), ramp(5))
  D.check_error("out of bounds", len_nest, m, ramp(5), ramp(5))          -- m's rows, the last i
  D.check_error("out of bounds", len_nest, m, ramp(4), ramp(6))          -- m's columns
end)

-- nest checks in several variables, products scaled by invariants
-- (KfaCheck.vterms): one test before the nest, over the box of the loops'
-- ranges, exact in 128 bits
local function scaled_pos(y, x, ilo, ihi, c, off, m)
  local k = 0
  for i = ilo, ihi do
    for j = 1, m do
      k = k + 1
      y[k] = x[i * c + j + off]
    end
  end
  return k
end

local function scaled_neg(y, x, ilo, ihi, c, off, m)
  local k = 0
  for i = ilo, ihi do
    for j = 1, m do
      k = k + 1
      y[k] = x[off - (i - 1) * c - j]
    end
  end
  return k
end

local function diagonal(x, n, m)
  local s = 0.0
  for i = 1, n do
    for j = 1, m do s = s + x[i + j] * 2 + x[j - i + n] end
  end
  return s
end

local function anti(x, n, m, off)
  local s = 0.0
  for i = 1, n do
    for j = 1, m do s = s + x[off - i + j] end
  end
  return s
end

local function flat_stencil(y, x, n, m, rs)     -- rs: the row stride
  for i = 2, n - 1 do
    for j = 2, m - 1 do
      y[(i - 1) * rs + j] = 0.25 * (x[(i - 2) * rs + j] + x[i * rs + j] + x[(i - 1) * rs + j - 1] +
                                    x[(i - 1) * rs + j + 1])
    end
  end
  return y[rs + 2]
end

test("nest checks in several variables: scaled rows, in and out of range", function()
  local x = ramp(12)
  D.check(scaled_pos, ramp(20), x, 1, 3, 4, -4, 4)
  D.check(scaled_pos, ramp(20), x, 0, 2, 4, 0, 4)
  D.check(scaled_pos, ramp(20), x, 3, 2, 4, 99, 4)                        -- never runs
  D.check(scaled_pos, ramp(20), x, 1, 3, 4, 99, 0)                        -- the inner loop never runs
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 1, 4, 4, -4, 4) -- the last row's first
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 1, 3, 4, -4, 5) -- the very last
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 0, 3, 4, -5, 4) -- the very first
  D.check(scaled_pos, ramp(20), x, 1, 3, -4, 12, 4)                       -- a negative scale
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 1, 3, -4, 11, 4)
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 0, 3, -4, 12, 4)
  D.check_error("out of bounds", scaled_pos, ramp(8), x, 1, 3, 4, -4, 4)  -- y (checked in the loop)
  D.check(scaled_neg, ramp(20), x, 1, 3, 4, 13, 4)
  D.check(scaled_neg, ramp(20), x, 1, 3, -4, 5, 4)
  D.check_error("out of bounds", scaled_neg, ramp(20), x, 1, 3, 4, 12, 4)
  D.check_error("out of bounds", scaled_neg, ramp(20), x, 1, 3, 4, 14, 4)
  D.check_error("out of bounds", scaled_neg, ramp(20), x, 1, 3, 4, 5, 4)   -- a middle row's first
  D.check(anti, x, 5, 3, 5)
  D.check_error("out of bounds", anti, x, 5, 3, 2)                        -- x[0] in row 3
  D.check_error("out of bounds", anti, x, 5, 3, 11)                       -- x[13] in row 1
  D.check(diagonal, x, 6, 6)
  D.check(diagonal, x, 5, 7)
  D.check_error("out of bounds", diagonal, x, 6, 7)
  D.check_error("out of bounds", diagonal, x, 7, 6)
end)

test("nest checks in several variables: wrapping products, ranges near the limits", function()
  local x = ramp(12)
  -- i * 2^62 wraps to 0 for i = 4 and -4: the keys are j, in range; the
  -- exact product is not, the test fails and the checked copy runs
  D.check(scaled_pos, ramp(20), x, 4, 4, 1 << 62, 0, 4)
  D.check(scaled_pos, ramp(20), x, -4, -4, 1 << 62, 0, 4)
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 4, 4, 1 << 62, -1, 4)
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 1, 2, MAXI, 0, 3)
  D.check_error("out of bounds", scaled_pos, ramp(20), x, 1, 2, MINI, 0, 3)
  D.check(scaled_pos, ramp(20), x, MAXI - 1, MAXI, 1, -(MAXI - 2), 3)
  D.check(scaled_pos, ramp(20), x, MINI, MINI + 1, -1, MINI + 3, 3)     -- -i overflows for mininteger
  D.check_error("out of bounds", scaled_pos, ramp(20), x, MAXI - 1, MAXI, 1, -(MAXI - 10), 3)
  -- i - 1 below mininteger: the factor does not fit an i64, the test fails
  D.check(scaled_neg, ramp(20), x, MINI, MINI, 0, 5, 4)
  D.check(scaled_neg, ramp(20), x, MINI, MINI + 1, 1 << 62, 5, 4)
end)

test("nest checks in several variables: a row-major stencil", function()
  local n, m = 6, 7
  local x = kjit.zeros(n * m)
  for k = 1, n * m do x[k] = (k * 5) % 11 end
  D.check(flat_stencil, kjit.zeros(n * m), x, n, m, m)
  D.check(flat_stencil, kjit.zeros(n * m), x, n, m - 1, m)              -- narrower rows
  D.check_error("out of bounds", flat_stencil, kjit.zeros(n * m), x, n + 1, m, m)
  D.check_error("out of bounds", flat_stencil, kjit.zeros(n * m - 9), x, n, m, m)   -- y, the last store
  D.check_error("out of bounds", flat_stencil, kjit.zeros(n * m), x, n, m, m + 2)
  D.check_error("out of bounds", flat_stencil, kjit.zeros(n * m), x, n, m, -m)
end)

-- The fast copy has no bounds check: the convolution's inner loop is
-- unrolled (several fmuls in one block, which a check between iterations
-- would split), the row-major stencil's is vectorized.
test("general affine keys: the fast loops hold no check", function()
  local function blocks_with(ir, pat, k)
    local n = 0
    for body in (ir .. "\n\n"):gmatch("(.-)\n\n") do   -- blocks are separated by empty lines
      local _, c = body:gsub(pat, "")
      if c >= k and not body:find("call ", 1, true) then n = n + 1 end
    end
    return n
  end
  local f = kjit.jit(convolve)
  f(100, 20, ramp(100, "f64"), ramp(20, "f64"), kjit.zeros(119))
  local ir = f:inspect("llvm")
  truthy(ir:find("vsel", 1, true), "the inner loop is versioned:\n" .. ir)
  -- (unrolled 4x where LLVM tunes for a known CPU, 2x for one it tunes
  -- as generic, such as Zen 5 under LLVM 14: a check would leave one each)
  truthy(blocks_with(ir, "fmul double", 2) >= 1, "an unrolled inner loop without checks:\n" .. ir)
  local h = kjit.jit(row_major)
  h(kjit.zeros(40), kjit.zeros(40), 8, 5)
  local hir = h:inspect("llvm")
  truthy(hir:find("fadd <%d+ x double>"), "the row-major stencil vectorizes:\n" .. hir)
  local k = kjit.jit(flat_stencil)
  k(kjit.zeros(42), kjit.zeros(42), 6, 7, 7)
  local kir = k:inspect("llvm")
  truthy(kir:find("nestsel", 1, true) and not kir:find("vsel", 1, true),
         "the row-major stencil is tested once, before the nest:\n" .. kir)
  truthy(kir:find("fadd <%d+ x double>"), "and vectorizes:\n" .. kir)
end)
