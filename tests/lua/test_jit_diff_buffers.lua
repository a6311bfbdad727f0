-- Differential tests: kjit arrays in compiled code. Reads of every dtype
-- (narrow integers read as Lua integers), the store rules (exact-integer
-- check, C-cast wrap for narrow integers, f32 rounding), 1-D to 4-D
-- indexing, row views, shape queries, bounds errors, and classic kernels.
-- Arrays are built inside each test so that a missing kjit.array skips.
local D = require "difftest"
local K = require "kernels"
local saxpy, dot = K.saxpy, K.dot
local kjit = D.kjit

local MAXI, MINI = math.maxinteger, math.mininteger
local HUGE, NAN = math.huge, 0 / 0

---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------
local function read3(a) return a[1], a[2], a[#a] end

local function store1(a, v)
  a[1] = v
  return a[1]
end

local function store_at(a, i, v)
  a[i] = v
end

local function read_at(a, i) return a[i] end
local function read2d(a, i, j) return a[i][j] end
local function write2d(a, i, j, v) a[i][j] = v end

local function isum(a)
  local s = 0
  for i = 1, #a do s = s + a[i] end
  return s
end

local function fsum(a)
  local s = 0.0
  for i = 1, #a do s = s + a[i] end
  return s
end


local function maxval(a)
  local m = a[1]
  for i = 2, #a do
    if a[i] > m then m = a[i] end
  end
  return m
end

local function argmax(a)
  local best, bi = a[1], 1
  for i = 2, #a do
    if a[i] > best then best, bi = a[i], i end
  end
  return bi
end


local function prefix_sum(a)
  for i = 2, #a do a[i] = a[i] + a[i - 1] end
end

local function histogram(data, bins, lo, hi)
  local nb = #bins
  local outside = 0
  for i = 1, #data do
    local v = data[i]
    if v < lo or v >= hi then
      outside = outside + 1
    else
      local b = (v - lo) * nb // (hi - lo) + 1
      bins[b] = bins[b] + 1
    end
  end
  return outside
end

local function matmul(A, B, C)
  local n, m, p = #A, #B, B.shape[2]
  for i = 1, n do
    for j = 1, p do
      local s = 0.0
      for k = 1, m do s = s + A[i][k] * B[k][j] end
      C[i][j] = s
    end
  end
end

local function stencil2d(u, out)
  local n, m = u.shape[1], u.shape[2]
  for i = 2, n - 1 do
    for j = 2, m - 1 do
      out[i][j] = 0.25 * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1])
    end
  end
end

local function mandelbrot(out, x0, y0, dx, dy, maxit)
  local h, w = out.shape[1], out.shape[2]
  for i = 1, h do
    local ci = y0 + (i - 1) * dy
    for j = 1, w do
      local cr = x0 + (j - 1) * dx
      local zr, zi = 0.0, 0.0
      local k = 0
      while k < maxit and zr * zr + zi * zi <= 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        k = k + 1
      end
      out[i][j] = k
    end
  end
end

local function nbody_step(pos, vel, mass, dt, steps)
  local n = #pos
  for _ = 1, steps do
    for i = 1, n do
      local ax, ay, az = 0.0, 0.0, 0.0
      for j = 1, n do
        if j ~= i then
          local dx = pos[j][1] - pos[i][1]
          local dy = pos[j][2] - pos[i][2]
          local dz = pos[j][3] - pos[i][3]
          local d2 = dx * dx + dy * dy + dz * dz + 0.01
          local inv = mass[j] / (d2 * math.sqrt(d2))
          ax, ay, az = ax + dx * inv, ay + dy * inv, az + dz * inv
        end
      end
      vel[i][1] = vel[i][1] + dt * ax
      vel[i][2] = vel[i][2] + dt * ay
      vel[i][3] = vel[i][3] + dt * az
    end
    for i = 1, n do
      for d = 1, 3 do pos[i][d] = pos[i][d] + dt * vel[i][d] end
    end
  end
end

local function bubble_sort(a)
  local n = #a
  local swaps = 0
  for i = 1, n - 1 do
    local swapped = false
    for j = 1, n - i do
      if a[j] > a[j + 1] then
        a[j], a[j + 1] = a[j + 1], a[j]
        swapped = true
        swaps = swaps + 1
      end
    end
    if not swapped then break end
  end
  return swaps
end

local function shape1(a) return #a, a.shape[1], a.size, a.ndim end
local function shape2(a) return #a, a.shape[1], a.shape[2], a.size, a.ndim, #a[1] end
local function shape3(a) return #a, a.shape[2], a.shape[3], a.size, a.ndim, #a[1][1] end
local function shape4(a) return a.shape[1], a.shape[2], a.shape[3], a.shape[4], a.size, a.ndim end

local function fill2d(a)
  for i = 1, #a do
    for j = 1, a.shape[2] do a[i][j] = i * 10 + j end
  end
end

local function fill3d(a)
  for i = 1, a.shape[1] do
    for j = 1, a.shape[2] do
      for k = 1, a.shape[3] do a[i][j][k] = i * 100 + j * 10 + k end
    end
  end
  return a[a.shape[1]][1][a.shape[3]]
end

local function sum3d(a)
  local s = 0
  for i = 1, a.shape[1] do
    for j = 1, a.shape[2] do
      for k = 1, a.shape[3] do s = s + a[i][j][k] * (i - j + k) end
    end
  end
  return s
end

local function fill4d(a)
  local c = 0
  for i = 1, a.shape[1] do
    for j = 1, a.shape[2] do
      for k = 1, a.shape[3] do
        for l = 1, a.shape[4] do
          c = c + 1
          a[i][j][k][l] = c * 0.5
        end
      end
    end
  end
  return a[2][1][2][1]
end

local function row_view(a)
  local s = 0.0
  for i = 1, #a do
    local row = a[i]
    for j = 1, #row do
      row[j] = row[j] + i
      s = s + row[j]
    end
  end
  return s
end

local function rowsum(r)
  local s = 0.0
  for j = 1, #r do s = s + r[j] end
  return s
end
local function sum_rows_via_callee(a)
  local t = 0.0
  for i = 1, #a do t = t + rowsum(a[i]) * i end
  return t
end

local function narrow_no_wrap(a)
  local s = a[1] + a[2]
  a[3] = s
  return s, a[3]
end

local function convert_copy(src, dst)
  for i = 1, #src do dst[i] = src[i] end
end

local function reverse(a)
  local i, j = 1, #a
  while i < j do
    a[i], a[j] = a[j], a[i]
    i, j = i + 1, j - 1
  end
end

local function first_positive(a)
  local i = 1
  while i <= #a and a[i] <= 0 do i = i + 1 end
  return i
end

local function shift_copy(dst, src)
  for i = 2, #dst do dst[i] = src[i - 1] end
end

local function invert_u8(img)
  for i = 1, #img do img[i] = 255 - img[i] end
end

local function brighten_u8(img, delta)
  -- stores wrap (C cast), as the store rules say
  for i = 1, #img do img[i] = img[i] + delta end
end

local function i64_wrap(a, k)
  for i = 1, #a do a[i] = a[i] * k end
end

local function diff(a, out)
  for i = 1, #a - 1 do out[i] = a[i + 1] - a[i] end
end

local function relu(a)
  local c = 0
  for i = 1, #a do
    if a[i] < 0 then
      a[i] = 0
      c = c + 1
    end
  end
  return c
end

local function count_in_range(a, lo, hi)
  local c = 0
  for i = 1, #a do
    local v = a[i]
    if v < lo then goto continue end
    if v > hi then goto continue end
    c = c + 1
    ::continue::
  end
  return c
end

local function mean_var(a)
  local n = #a
  local s = 0.0
  for i = 1, n do s = s + a[i] end
  local mean = s / n
  local v = 0.0
  for i = 1, n do
    local d = a[i] - mean
    v = v + d * d
  end
  return mean, v / n
end

local function transpose(a, out)
  for i = 1, a.shape[1] do
    for j = 1, a.shape[2] do out[j][i] = a[i][j] end
  end
end

local function any_negative(a)
  for i = 1, #a do
    if a[i] < 0 then return true end
  end
  return false
end

local function circular(a, shift)
  local n = #a
  local s = 0
  for i = 1, n do s = s + i * a[(i - 1 + shift) % n + 1] end
  return s
end

local function square_i16(a, out)
  for i = 1, #a do out[i] = a[i] * a[i] end
end

local function mixed_dtypes(ai, xf, out)
  for i = 1, #ai do out[i] = ai[i] * xf[i] + ai[i] // 2 end
end

local function u32_big(a)
  return a[1] + 1, a[1] * 2, a[1] + a[2]
end

local function store_int_to_f64(a)
  for i = 1, #a do a[i] = i * 3 end
  return a[1], a[#a]
end

local function store_float_exact_to_int(a)
  for i = 1, #a do a[i] = i * 2.0 end
  return a[#a]
end

local function slice_sum(s)
  local t = 0.0
  for i = 1, #s do
    s[i] = s[i] * 2
    t = t + s[i]
  end
  return t, #s
end

local function insertion_sort_f64(a)
  for i = 2, #a do
    local v = a[i]
    local j = i - 1
    while j >= 1 and a[j] > v do
      a[j + 1] = a[j]
      j = j - 1
    end
    a[j + 1] = v
  end
end

local function cumulative_2d(a)
  for i = 1, a.shape[1] do
    for j = 1, a.shape[2] do
      local up = 0
      local left = 0
      if i > 1 then up = a[i - 1][j] end
      if j > 1 then left = a[i][j - 1] end
      local diag = 0
      if i > 1 and j > 1 then diag = a[i - 1][j - 1] end
      a[i][j] = a[i][j] + up + left - diag
    end
  end
end

local function multi_assign_index(a, i)
  -- Lua 5.4 manual §3.3.3: in i, a[i] = i+1, 20 the i in a[i] is evaluated
  -- before the assignment
  i, a[i] = i + 1, 20
  return i
end

local function multi_assign_index2(a, i)
  a[i], i = 30, i + 1
  a[i] = 40
  return i
end

local function swap_same(a, i, j)
  a[i], a[j] = a[j], a[i]
end

local function read_float_index(a, x)
  return a[x]
end


local function gather(a, idx)
  local s = 0.0
  for i = 1, #idx do s = s + a[idx[i]] end
  return s
end

local function set_elem(a, i, v) a[i] = v end
local function fill_via_callee(a)
  for i = 1, #a do set_elem(a, i, i * i) end
end

local function set_elem_j(a, i, v) a[i] = v end
local jset = D.jit(set_elem_j)
local function fill_via_jit_callee(a)
  for i = 1, #a do jset(a, i, -i) end
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
test("read every dtype", function()
  D.check(read3, kjit.array({-128, 127, 5}, "i8"))
  D.check(read3, kjit.array({0, 255, 7}, "u8"))
  D.check(read3, kjit.array({-32768, 32767, 1}, "i16"))
  D.check(read3, kjit.array({0, 65535, 2}, "u16"))
  D.check(read3, kjit.array({-2147483648, 2147483647, 3}, "i32"))
  D.check(read3, kjit.array({0, 4294967295, 4}, "u32"))
  D.check(read3, kjit.array({MINI, MAXI, 5}, "i64"))
  D.check(read3, kjit.array({0, 1, 6}, "u64"))
  D.check(read3, kjit.array({0.5, -1.25, 0.1}, "f32"))
  D.check(read3, kjit.array({0.1, -0.0, 1e300}, "f64"))
  D.check(read3, kjit.array({1, 2, 3}))
end)

test("store rules: signed narrow integers wrap", function()
  local a = kjit.zeros(2, "i8")
  D.cases(store1, {a, 5}, {a, -128}, {a, 127}, {a, 128}, {a, 200}, {a, 3.0}, {a, -1.0},
    {a, 2.0 ^ 40}, {a, -129})
  local b = kjit.zeros(2, "i16")
  D.cases(store1, {b, 40000}, {b, -32769}, {b, 32767.0})
  local c = kjit.zeros(2, "i32")
  D.cases(store1, {c, 2147483648}, {c, 4294967301}, {c, 2.0 ^ 31}, {c, -1}, {c, MINI},
    {c, MAXI})
end)

test("store rules: unsigned narrow integers wrap", function()
  local a = kjit.zeros(2, "u8")
  D.cases(store1, {a, 300}, {a, -1}, {a, 256}, {a, 255.0}, {a, 44})
  local b = kjit.zeros(2, "u16")
  D.cases(store1, {b, 70000}, {b, -1}, {b, 65535})
  local c = kjit.zeros(2, "u32")
  D.cases(store1, {c, -1}, {c, 4294967296}, {c, 4294967295.0})
end)

test("store rules: 64-bit integers", function()
  local a = kjit.zeros(2, "i64")
  D.cases(store1, {a, MAXI}, {a, MINI}, {a, -2.0 ^ 63}, {a, 2.0 ^ 53}, {a, -0.0})
  local b = kjit.zeros(2, "u64")
  D.cases(store1, {b, 5}, {b, 0}, {b, MAXI}, {b, 7.0})
end)

test("store rules: u64 above maxinteger reads back as Lua does", function()
  local b = kjit.zeros(2, "u64")
  D.cases(store1, {b, -1}, {b, MINI})
end)

test("store rules: floats", function()
  local a = kjit.zeros(2, "f32")
  D.cases(store1, {a, 0.1}, {a, 16777217}, {a, 1e40}, {a, -1e40}, {a, -0.0}, {a, NAN},
    {a, 1e-46}, {a, MAXI}, {a, 3}, {a, 1.0000001}, {a, HUGE})
  local b = kjit.zeros(2, "f64")
  D.cases(store1, {b, 1}, {b, MAXI}, {b, -0.0}, {b, NAN}, {b, 0.1}, {b, MINI})
end)

test("store of a non-integral float into an integer buffer raises", function()
  D.cases_error("has no integer representation", store1,
    {kjit.zeros(2, "i32"), 2.5}, {kjit.zeros(2, "i64"), 2.0 ^ 63},
    {kjit.zeros(2, "u8"), HUGE}, {kjit.zeros(2, "i16"), NAN},
    {kjit.zeros(2, "u32"), -0.5}, {kjit.zeros(2, "i8"), 1e-300})
end)

test("integer sums over narrow dtypes do not wrap", function()
  D.check(isum, kjit.array({2147483647, 2147483647, 2147483647}, "i32"))
  D.check(isum, kjit.array({255, 255, 255, 1}, "u8"))
  D.check(isum, kjit.array({-128, -128, 127}, "i8"))
  D.check(isum, kjit.array({4294967295, 4294967295}, "u32"))
  D.check(isum, kjit.array({MAXI, 1, 1}, "i64"))
  D.check(isum, kjit.zeros(0 + 1, "i16"))
end)

test("float sum", function()
  D.check(fsum, kjit.array({0.1, 0.2, 0.3, 0.4}))
  D.check(fsum, kjit.array({1e16, 1.0, -1e16, 1.0}))
  D.check(fsum, kjit.array({-0.0}))
end)

test("dot product", function()
  D.check(dot, kjit.array({1, 2, 3}), kjit.array({4, 5, 6}))
  D.check(dot, kjit.array({0.1, -0.7, 1e10, 3.3}), kjit.array({1e-10, 0.3, 2.5, -1.1}))
end)

test("max value", function()
  D.check(maxval, kjit.array({3, -1, 7, 7, 2}, "i32"))
  D.check(maxval, kjit.array({-3.5, -1.25, -7.0}))
  D.check(maxval, kjit.array({5}, "u8"))
end)

test("argmax", function()
  D.check(argmax, kjit.array({3, -1, 7, 7, 2}, "i32"))
  D.check(argmax, kjit.array({-3.5, -1.25, -7.0}))
  D.check(argmax, kjit.array({1.0, 0 / 0, 2.0}))
end)

test("saxpy f64", function()
  local n = 100
  local x, y = kjit.zeros(n), kjit.zeros(n)
  for i = 1, n do x[i] = i * 0.37; y[i] = 1.0 / i end
  D.check(saxpy, 2.5, x, y, kjit.zeros(n))
  D.check(saxpy, -1, x, y, kjit.zeros(n))
end)

test("prefix sum in place", function()
  D.check(prefix_sum, kjit.array({1, 2, 3, 4, 5}, "i64"))
  D.check(prefix_sum, kjit.array({0.5, 0.25, 0.125, 1e-20}))
  D.check(prefix_sum, kjit.array({100, 100, 100}, "u8"))
end)

test("histogram with integer bins", function()
  local data = kjit.zeros(200, "i32")
  for i = 1, 200 do data[i] = (i * 7919) % 131 - 10 end
  D.check(histogram, data, kjit.zeros(10, "i32"), 0, 100)
  D.check(histogram, data, kjit.zeros(7, "i64"), -10, 121)
end)

test("matmul naive", function()
  local A = kjit.array({{1, 2, 3}, {4, 5, 6}})
  local B = kjit.array({{7, 8}, {9, 10}, {11, 12}})
  D.check(matmul, A, B, kjit.zeros({2, 2}))
  local n = 8
  local X, Y = kjit.zeros({n, n}), kjit.zeros({n, n})
  for i = 1, n do
    for j = 1, n do X[i][j] = (i - j) * 0.1; Y[i][j] = 1.0 / (i + j) end
  end
  D.check(matmul, X, Y, kjit.zeros({n, n}))
end)

test("2-D stencil", function()
  local n = 12
  local u = kjit.zeros({n, n})
  for i = 1, n do
    for j = 1, n do u[i][j] = math.sin(i * 0.3) * math.cos(j * 0.7) end
  end
  D.check(stencil2d, u, kjit.zeros({n, n}))
end)

test("mandelbrot escape counts", function()
  D.check(mandelbrot, kjit.zeros({24, 32}, "i32"), -2.0, -1.2, 2.6 / 32, 2.4 / 24, 50)
  D.check(mandelbrot, kjit.zeros({8, 8}, "i32"), -0.75, 0.1, 0.001, 0.001, 200)
end)

test("n-body steps", function()
  local n = 5
  local pos, vel, mass = kjit.zeros({n, 3}), kjit.zeros({n, 3}), kjit.zeros(n)
  for i = 1, n do
    mass[i] = 1.0 + i * 0.1
    for d = 1, 3 do
      pos[i][d] = math.sin(i * 1.7 + d)
      vel[i][d] = 0.1 * math.cos(i + d * 0.3)
    end
  end
  D.check(nbody_step, pos, vel, mass, 0.01, 10)
end)

test("bubble sort i32", function()
  D.check(bubble_sort, kjit.array({5, 3, 9, -1, 0, 3, 2147483647, -2147483648}, "i32"))
  D.check(bubble_sort, kjit.array({1, 2, 3}, "i32"))
  D.check(bubble_sort, kjit.array({1}, "i32"))
end)

test("insertion sort f64", function()
  D.check(insertion_sort_f64, kjit.array({3.5, -1.0, 2.25, 1e300, -0.0, 0.0, -1e300}))
end)

test("shape queries 1-D", function()
  D.check(shape1, kjit.zeros(7))
  D.check(shape1, kjit.zeros(1, "u8"))
end)

test("shape queries 2-D", function()
  D.check(shape2, kjit.zeros({3, 4}))
  D.check(shape2, kjit.zeros({1, 9}, "i32"))
end)

test("shape queries 3-D", function()
  D.check(shape3, kjit.zeros({2, 3, 4}, "f32"))
end)

test("shape queries 4-D", function()
  D.check(shape4, kjit.zeros({2, 3, 4, 5}, "i16"))
end)

-- a.shape is a table: a key it does not have (nil, a non-integral float,
-- 0, past ndim) reads nil, never an error
local function shape_key_maybe_nil(a, c, k) local z; if c then z = k end; return a.shape[z] end
local function shape_key_or(a, k) return a.shape[k] or -1 end
test("shape indexed by a key it may not have", function()
  local a = kjit.zeros({2, 3})
  D.cases(shape_key_maybe_nil, {a, false, 1}, {a, true, 1}, {a, true, 2}, {a, true, 3},
          {a, true, 2.0}, {a, true, 1.5}, {a, false, 1.5})
  D.cases(shape_key_or, {a, 1}, {a, 2.0}, {a, 2.5}, {a, 0}, {a, -0.0}, {a, 3}, {a, 0 / 0},
          {a, 2 ^ 70}, {a, math.mininteger})
end)

test("2-D writes", function()
  D.check(fill2d, kjit.zeros({3, 4}))
  D.check(fill2d, kjit.zeros({5, 2}, "i32"))
end)

test("2-D reads and writes at an index", function()
  local a = kjit.array({{1, 2, 3}, {4, 5, 6}})
  D.cases(read2d, {a, 1, 1}, {a, 2, 3}, {a, 1, 3})
  D.cases(write2d, {a, 2, 2, 9.5}, {a, 1, 3, -1})
end)

test("3-D fill and read", function()
  D.check(fill3d, kjit.zeros({2, 3, 4}, "i32"))
  D.check(fill3d, kjit.zeros({3, 2, 2}))
end)

test("3-D weighted sum", function()
  local a = kjit.zeros({3, 4, 5}, "i64")
  for i = 1, 3 do for j = 1, 4 do for k = 1, 5 do a[i][j][k] = i * j - k end end end
  D.check(sum3d, a)
end)

test("4-D fill", function()
  D.check(fill4d, kjit.zeros({2, 3, 2, 2}))
end)

test("row view local", function()
  D.check(row_view, kjit.array({{1, 2}, {3, 4}, {5, 6}}))
end)

test("row views passed to a callee", function()
  D.check(sum_rows_via_callee, kjit.array({{1, 2}, {3, 4}, {5, 6.5}}))
end)

test("out-of-bounds reads raise", function()
  local a = kjit.array({1, 2, 3})
  D.cases(read_at, {a, 1}, {a, 3})
  D.cases_error("out of bounds", read_at, {a, 0}, {a, 4}, {a, -1}, {a, MINI}, {a, MAXI})
end)

test("out-of-bounds writes raise", function()
  local a = kjit.zeros(3, "i32")
  D.cases(store_at, {a, 1, 5}, {a, 3, 7})
  D.cases_error("out of bounds", store_at, {a, 0, 1}, {a, 4, 1}, {a, -100, 1})
end)

test("2-D out-of-bounds reads raise", function()
  local a = kjit.zeros({2, 3})
  D.cases_error("out of bounds", read2d, {a, 3, 1}, {a, 1, 4}, {a, 0, 1}, {a, 1, 0})
end)

test("2-D out-of-bounds writes raise", function()
  local a = kjit.zeros({2, 3}, "i32")
  D.cases_error("out of bounds", write2d, {a, 3, 1, 1}, {a, 2, 4, 1})
end)

test("narrow reads are 64-bit, narrow stores wrap", function()
  D.check(narrow_no_wrap, kjit.array({2147483647, 2147483647, 0}, "i32"))
  D.check(narrow_no_wrap, kjit.array({200, 100, 0}, "u8"))
  D.check(narrow_no_wrap, kjit.array({-32768, -32768, 0}, "i16"))
end)

test("copy f64 into i32", function()
  D.check(convert_copy, kjit.array({1, -2, 3e9, 4}), kjit.zeros(4, "i32"))
end)

test("copy f64 into i32 stops at the first non-integral value", function()
  D.check_error("has no integer representation", convert_copy,
    kjit.array({1, 2, 2.5, 4}), kjit.zeros(4, "i32"))
end)

test("copy between dtypes", function()
  D.check(convert_copy, kjit.array({1, 2, 300, -1}, "i32"), kjit.zeros(4, "u8"))
  D.check(convert_copy, kjit.array({0.1, 1e40, -2.5}, "f64"), kjit.zeros(3, "f32"))
  D.check(convert_copy, kjit.array({0.5, -1.5}, "f32"), kjit.zeros(2, "f64"))
  D.check(convert_copy, kjit.array({65535, 1}, "u16"), kjit.zeros(2, "i16"))
end)

test("reverse in place", function()
  D.check(reverse, kjit.array({1, 2, 3, 4, 5}, "i32"))
  D.check(reverse, kjit.array({1.5, 2.5}))
  D.check(reverse, kjit.array({7}, "u8"))
end)

test("short-circuit guards the index", function()
  D.check(first_positive, kjit.array({-1, 0, -3}))
  D.check(first_positive, kjit.array({-1, 2, -3}, "i32"))
end)

test("aliased arguments", function()
  local a = kjit.array({1, 2, 3, 4, 5})
  D.check(shift_copy, a, a)
  D.check(shift_copy, a, kjit.array({9, 8, 7, 6, 5}))
end)

test("u8 image invert", function()
  D.check(invert_u8, kjit.array({0, 1, 128, 255}, "u8"))
end)

test("u8 brighten wraps", function()
  D.check(brighten_u8, kjit.array({0, 100, 200, 255}, "u8"), 100)
  D.check(brighten_u8, kjit.array({0, 100, 200, 255}, "u8"), -101)
end)

test("u8 brighten by a non-integral amount raises", function()
  D.check_error("has no integer representation", brighten_u8,
    kjit.array({0, 100}, "u8"), 0.5)
end)

test("i64 buffer multiply wraps", function()
  D.check(i64_wrap, kjit.array({1, 3037000500, -3037000500, MAXI}, "i64"), 3037000500)
end)

test("diff", function()
  D.check(diff, kjit.array({1, 4, 9, 16, 25}), kjit.zeros(4))
  D.check(diff, kjit.array({1, 4, 9, 16, 25}, "i32"), kjit.zeros(4, "i32"))
end)

test("relu in place", function()
  D.check(relu, kjit.array({-1.5, 2, -0.0, 0, -3}))
  D.check(relu, kjit.array({-1, 2, 0, -3}, "i8"))
end)

test("count in range with goto continue", function()
  local a = kjit.array({1, 5, 10, -3, 7, 7.5, 20})
  D.cases(count_in_range, {a, 0, 7}, {a, 7.5, 100}, {a, 100, 0})
end)

test("mean and variance", function()
  D.check(mean_var, kjit.array({2, 4, 4, 4, 5, 5, 7, 9}))
  D.check(mean_var, kjit.array({1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16}))
  D.check(mean_var, kjit.array({1, 2, 3}, "i32"))
end)

test("transpose", function()
  D.check(transpose, kjit.array({{1, 2, 3}, {4, 5, 6}}), kjit.zeros({3, 2}))
  D.check(transpose, kjit.array({{1, 2}, {3, 4}}, "u16"), kjit.zeros({2, 2}, "u16"))
end)

test("boolean result from a buffer", function()
  D.check(any_negative, kjit.array({1, 2, 3}))
  D.check(any_negative, kjit.array({1, -2, 3}, "i32"))
end)

test("circular indexing with %", function()
  local a = kjit.array({1, 2, 3, 4, 5, 6, 7}, "i32")
  D.cases(circular, {a, 0}, {a, 3}, {a, -1}, {a, -15}, {a, MAXI})
end)

test("i16 square stores wrap", function()
  D.check(square_i16, kjit.array({100, 200, 300, -256}, "i16"), kjit.zeros(4, "i16"))
end)

test("mixed dtypes in one expression", function()
  D.check(mixed_dtypes, kjit.array({1, -7, 9}, "i32"), kjit.array({0.5, 0.25, -2.0}),
    kjit.zeros(3))
end)

test("u32 reads are integers", function()
  D.check(u32_big, kjit.array({4294967295, 4294967295}, "u32"))
end)

test("integer stores into f64 read back as floats", function()
  D.check(store_int_to_f64, kjit.zeros(4))
  D.check(store_int_to_f64, kjit.zeros(3, "f32"))
end)

test("exact float stores into integer buffers", function()
  D.check(store_float_exact_to_int, kjit.zeros(4, "i32"))
  D.check(store_float_exact_to_int, kjit.zeros(4, "u8"))
end)

test("slice view as an argument", function()
  -- the slice must alias its base: compare the base arrays afterwards
  D.check_fresh(function()
    local base = kjit.array({1, 2, 3, 4, 5, 6})
    return table.pack(base:slice(2, 5)), { base }
  end, slice_sum)
end)

test("2-D cumulative sum in place", function()
  D.check(cumulative_2d, kjit.array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, "i64"))
  D.check(cumulative_2d, kjit.array({{0.5, 0.25}, {0.125, 1}}))
end)

test("multiple assignment evaluates the index first", function()
  D.cases(multi_assign_index, {kjit.zeros(5), 3}, {kjit.zeros(5, "i32"), 1})
end)

test("multiple assignment index then variable", function()
  D.cases(multi_assign_index2, {kjit.zeros(5), 3}, {kjit.zeros(5, "i32"), 1})
end)

test("swap an element with itself", function()
  local a = kjit.array({1, 2, 3}, "i32")
  D.cases(swap_same, {a, 2, 2}, {a, 1, 3})
end)

test("integral float indices", function()
  local a = kjit.array({1, 2, 3})
  D.cases(read_float_index, {a, 2.0}, {a, 3.0})
  D.cases_error("is not an integer", read_float_index, {a, 2.5})
end)

test("gather with index buffers", function()
  local a = kjit.array({10, 20, 30, 40})
  D.check(gather, a, kjit.array({4, 1, 1, 3}, "i32"))
  D.check(gather, a, kjit.array({2.0, 3.0}))
  D.check(gather, a, kjit.array({4, 2}, "u8"))
end)

test("gather with a bad index", function()
  local a = kjit.array({10, 20, 30, 40})
  D.check_error("is not an integer", gather, a, kjit.array({2.0, 3.5}))
  D.check_error("out of bounds", gather, a, kjit.array({1, 5}, "i32"))
end)

test("writes through a plain callee", function()
  D.check(fill_via_callee, kjit.zeros(6, "i32"))
  D.check(fill_via_callee, kjit.zeros(6))
  D.check(fill_via_callee, kjit.zeros(20, "u8"))
end)

test("writes through a jit callee", function()
  D.check(fill_via_jit_callee, kjit.zeros(6, "i32"))
  D.check(fill_via_jit_callee, kjit.zeros(6))
end)
