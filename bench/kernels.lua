-- bench/kernels.lua: the CPU benchmark kernels, each written once, in plain
-- Lua, the way a user would write it. The same text runs
--   * compiled by kjit (kjit.jit(K.name)) over kjit arrays,
--   * in the Lua 5.4 interpreter over Lua tables,
--   * in LuaJIT 2.1 over FFI arrays (bench/run_lua.lua allocates one extra
--     leading element in each dimension, so the 1-based indices address
--     the same elements; element 0 is never touched).
-- So it must stay valid Lua 5.1 as well as 5.4: no `//`, no `<<`, no
-- math.type. Sizes are passed as arguments (an FFI array has no `#`).
-- bench/c/kernels.c and bench/numba_kernels.py hold the same loops in C and
-- Python (0-based there, as those languages index).
local K = {}

-- out = a * x + y, on f32 arrays
function K.saxpy(n, a, x, y, out)
  for i = 1, n do out[i] = a * x[i] + y[i] end
end

-- the dot product of two f64 arrays (a sequential reduction: no reordering)
function K.dot(n, x, y)
  local s = 0.0
  for i = 1, n do s = s + x[i] * y[i] end
  return s
end

-- escape counts of the Mandelbrot set into the h x w 2-D i32 array img
-- (the loop of demo/mandelbrot.lua); square pixels from (-2, -1), so a
-- 3:2 image shows [-2, 1] x [-1, 1]
function K.mandelbrot(w, h, maxiter, img)
  local scale = 3.0 / w
  for y = 1, h do
    local ci = (y - 1) * scale - 1.0
    for x = 1, w do
      local cr = (x - 1) * scale - 2.0
      local zr, zi, n = 0.0, 0.0, 0
      while n < maxiter and zr * zr + zi * zi <= 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n = n + 1
      end
      img[y][x] = n
    end
  end
end

-- `steps` time steps of nb gravitating bodies (structure of arrays, as in
-- the Benchmarks Game program); returns the total energy afterwards
function K.nbody(nb, steps, dt, x, y, z, vx, vy, vz, m)
  for _ = 1, steps do
    for i = 1, nb do
      for j = i + 1, nb do
        local dx, dy, dz = x[i] - x[j], y[i] - y[j], z[i] - z[j]
        local d2 = dx * dx + dy * dy + dz * dz
        local mag = dt / (d2 * math.sqrt(d2))
        local mi, mj = m[i] * mag, m[j] * mag
        vx[i] = vx[i] - dx * mj
        vy[i] = vy[i] - dy * mj
        vz[i] = vz[i] - dz * mj
        vx[j] = vx[j] + dx * mi
        vy[j] = vy[j] + dy * mi
        vz[j] = vz[j] + dz * mi
      end
    end
    for i = 1, nb do
      x[i] = x[i] + dt * vx[i]
      y[i] = y[i] + dt * vy[i]
      z[i] = z[i] + dt * vz[i]
    end
  end
  local e = 0.0
  for i = 1, nb do
    e = e + 0.5 * m[i] * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i])
    for j = i + 1, nb do
      local dx, dy, dz = x[i] - x[j], y[i] - y[j], z[i] - z[j]
      e = e - m[i] * m[j] / math.sqrt(dx * dx + dy * dy + dz * dz)
    end
  end
  return e
end

-- C = A * B for n x n f64 matrices, the naive i-j-k loop
function K.matmul(n, A, B, C)
  for i = 1, n do
    for j = 1, n do
      local s = 0.0
      for k = 1, n do s = s + A[i][k] * B[k][j] end
      C[i][j] = s
    end
  end
end

-- `iters` Jacobi sweeps of the 5-point Laplace stencil on an n x n grid
-- whose border stays fixed; A and B swap roles each sweep, so with an even
-- `iters` the result is in the caller's A
function K.jacobi(n, iters, A, B)
  for _ = 1, iters do
    for i = 2, n - 1 do
      for j = 2, n - 1 do
        B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1])
      end
    end
    A, B = B, A
  end
end

-- the full discrete convolution out = a * z (a: n, z: m, out: n + m - 1):
-- out[i] = sum over k of a[k] * z[i - k + 1], the k where both exist, summed
-- in increasing k; the inner loop's bounds follow the row (a triangular
-- nest at both ends), its keys are affine with invariant sums: k = j + s +
-- 1 and i - j - s
function K.convolve(n, m, a, z, out)
  for i = 1, n + m - 1 do
    local s = math.max(i - m, 0)
    local acc = 0.0
    for j = 0, math.min(i, n) - s - 1 do acc = acc + a[j + s + 1] * z[i - j - s] end
    out[i] = acc
  end
end

-- counts[b] += 1 for the bin b of each x[i] in [0, 1); counts is i64
function K.histogram(n, x, nbins, counts)
  for i = 1, n do
    local b = math.floor(x[i] * nbins) + 1
    if b > nbins then b = nbins end
    counts[b] = counts[b] + 1
  end
end

-- inclusive prefix sum (a scan: each step needs the previous one)
function K.prefix_sum(n, x, out)
  local s = 0.0
  for i = 1, n do
    s = s + x[i]
    out[i] = s
  end
end

-- naive doubly recursive Fibonacci on integers: a test of call cost
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
K.fib = fib

return K
