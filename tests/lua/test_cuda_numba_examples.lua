-- test_cuda_numba_examples.lua: public numba-cuda programs ported to kjit
-- with the index change (cuda.grid counts from 1; hardware ids such as
-- cuda.threadIdx stay 0-based) and Lua syntax only (issue 25, "Tests").
-- numba-cuda's documentation examples: vecadd, matmul, the shared-memory
-- fast matmul (square and non-square), the shared-memory reduction,
-- Monte Carlo integration, CPU/GPU compatibility and the 3-D grid random
-- example; numba-cuda's Black-Scholes test; the n-body of numba's CUDA
-- benchmarks; the histogram of numba's CUDA tutorial. (The Laplace example
-- with a grid sync is in test_cuda_cg.lua, compute_pi in
-- test_cuda_random.lua.) Without a GPU each program runs as written (device
-- arrays, streams, launches) in the interpreted simulator (the Lua function
-- itself: the reference) and in the compiled one, results compared with
-- each other and with a plain-Lua model of what the program computes; each
-- kernel compiles to PTX that ptxas accepts for sm_75, sm_80 and sm_90
-- (CUDA 13's ptxas and libNVVM have no sm_70). The sizes are smaller than
-- the originals where the interpreted simulator would take long.
local kjit = require "kjit"
local cuda = kjit.cuda
local ptxas = require "ptxas"

-- the values of an array (any shape) as a flat Lua list
local function flat(a)
  if cuda.is_device_array(a) then a = a:copy_to_host() end
  local f, t = a:reshape({ a.size }), {}
  for i = 1, a.size do t[i] = f[i] end
  return t
end

-- Runs program() in the interpreted simulator, then in the compiled one;
-- the values it returns (arrays as lists) must agree exactly, unless tol is
-- given (a relative tolerance, for f32 arithmetic: the interpreted
-- simulator computes in Lua's floats). Returns the compiled run's values.
local function in_both(name, program, tol)
  local runs = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local ok, r = pcall(function()
      local r = table.pack(program())
      for i = 1, r.n do if type(r[i]) == "userdata" then r[i] = flat(r[i]) end end
      return r
    end)
    cuda.simulate(prev)
    if not ok then error(name .. " (simulator " .. tostring(mode) .. "): " .. tostring(r), 0) end
    runs[#runs + 1] = r
  end
  local w, g = runs[1], runs[2]
  for i = 1, w.n do
    if type(w[i]) == "table" then
      eq(#g[i], #w[i], name .. ": result " .. i .. " size")
      for j = 1, #w[i] do
        if tol then near(g[i][j], w[i][j], tol, name .. ": result " .. i .. "[" .. j .. "]")
        elseif g[i][j] ~= w[i][j] then eq(g[i][j], w[i][j], name .. ": result " .. i .. "[" .. j .. "]") end
      end
    elseif tol then near(g[i], w[i], tol, name .. ": result " .. i)
    else eq(g[i], w[i], name .. ": result " .. i) end
  end
  return table.unpack(g, 1, g.n)
end

-- fn's PTX for sig, checked by ptxas for sm_75, sm_80 and sm_90
local function ptx_ok(fn, sig, ...)
  local k = cuda.jit(fn)
  for _, cc in ipairs{ 75, 80, 90 } do
    if select("#", ...) > 0 then k:compile(sig, ..., cc) else k:compile(sig, cc) end
    ptxas.check(k:inspect("ptx"), sig, cc)
  end
end

-- a reproducible f64 array in [lo, hi) (numpy's random.random in the originals)
local function randoms(n, seed, lo, hi)
  local a = kjit.random.generator { seed = seed, backend = "kjit" }:uniform(kjit.zeros(n))
  for i = 1, n do a[i] = lo + (hi - lo) * a[i] end
  return a
end

-- ---- vecadd (docs: ex_vecadd) ---------------------------------------------------------

local function f(a, b, c)
  -- like threadIdx.x + (blockIdx.x * blockDim.x)
  local tid = cuda.grid(1)
  local size = #c

  if tid <= size then
    c[tid] = a[tid] + b[tid]
  end
end

test("numba-cuda's vecadd example", function()
  local N = 20000
  local ha, hb = randoms(N, 1, 0, 1), randoms(N, 2, 0, 1)
  local c1, c2 = in_both("vecadd", function()
    local fk = cuda.jit(f)
    local a = cuda.to_device(ha)
    local b = cuda.to_device(hb)
    local c = cuda.device_array(a.shape)
    fk:forall(#a)(a, b, c)
    local first = c:copy_to_host()
    -- Enough threads per block for several warps per block
    local nthreads = 256
    -- Enough blocks to cover the entire vector depending on its length
    local nblocks = (#a // nthreads) + 1
    c = cuda.device_array(a.shape)
    fk[{ nblocks, nthreads }](a, b, c)
    return first, c
  end)
  for i = 1, N do
    if c1[i] ~= ha[i] + hb[i] or c2[i] ~= c1[i] then eq(c1[i], ha[i] + hb[i], "c[" .. i .. "]"); eq(c2[i], c1[i]) end
  end
  ptx_ok(f, "void(float64[:], float64[:], float64[:])")
end)

-- ---- matmul and fast_matmul (docs: ex_matmul, ex_fast_matmul) ----------------------------

local function matmul(A, B, C)
  -- Perform square matrix multiplication of C = A * B.
  local i, j = cuda.grid(2)
  if i <= C.shape[1] and j <= C.shape[2] then
    local tmp = 0.0
    for k = 1, A.shape[2] do
      tmp = tmp + A[i][k] * B[k][j]
    end
    C[i][j] = tmp
  end
end

-- Controls threads per block and shared memory usage.
-- The computation will be done on blocks of TPBxTPB elements.
-- TPB should not be larger than 32 in this example
local TPB = 16
local float32 = cuda.float32   -- from numba.cuda import float32

local function fast_matmul(A, B, C)
  -- Define an array in the shared memory
  -- The size and type of the arrays must be known at compile time
  local sA = cuda.shared.array({ TPB, TPB }, float32)
  local sB = cuda.shared.array({ TPB, TPB }, float32)

  local x, y = cuda.grid(2)

  local tx = cuda.threadIdx.x
  local ty = cuda.threadIdx.y
  local bpg = cuda.gridDim.x   -- blocks per grid

  -- Each thread computes one element in the result matrix.
  -- The dot product is chunked into dot products of TPB-long vectors.
  local tmp = float32(0.0)
  for i = 0, bpg - 1 do
    -- Preload data into shared memory
    sA[ty + 1][tx + 1] = 0
    sB[ty + 1][tx + 1] = 0
    if y <= A.shape[1] and (tx + i * TPB) < A.shape[2] then
      sA[ty + 1][tx + 1] = A[y][tx + i * TPB + 1]
    end
    if x <= B.shape[2] and (ty + i * TPB) < B.shape[1] then
      sB[ty + 1][tx + 1] = B[ty + i * TPB + 1][x]
    end

    -- Wait until all threads finish preloading
    cuda.syncthreads()

    -- Computes partial product on the shared memory
    for j = 1, TPB do
      tmp = tmp + sA[ty + 1][j] * sB[j][tx + 1]
    end

    -- Wait until all threads finish computing
    cuda.syncthreads()
  end
  if y <= C.shape[1] and x <= C.shape[2] then
    C[y][x] = tmp
  end
end

-- x_h @ y_h, plainly
local function model_matmul(x, y)
  local n, m, p = x.shape[1], x.shape[2], y.shape[2]
  local z = {}
  for i = 1, n do
    for j = 1, p do
      local s = 0
      for k = 1, m do s = s + x[i][k] * y[k][j] end
      z[(i - 1) * p + j] = s
    end
  end
  return z
end

test("numba-cuda's matmul example", function()
  local x_h = kjit.arange(16):reshape({ 4, 4 })
  local y_h = kjit.full({ 4, 4 }, 1.0)
  local z = in_both("matmul", function()
    local z_h = kjit.zeros({ 4, 4 })
    local x_d, y_d, z_d = cuda.to_device(x_h), cuda.to_device(y_h), cuda.to_device(z_h)
    local threadsperblock = { 16, 16 }
    local blockspergrid_x = math.ceil(z_h.shape[1] / threadsperblock[1])
    local blockspergrid_y = math.ceil(z_h.shape[2] / threadsperblock[2])
    local blockspergrid = { blockspergrid_x, blockspergrid_y }
    cuda.jit(matmul)[{ blockspergrid, threadsperblock }](x_d, y_d, z_d)
    return z_d:copy_to_host()
  end)
  local want = model_matmul(x_h, y_h)
  for i = 1, 16 do eq(z[i], want[i] + 0.0, "z[" .. i .. "]") end
  ptx_ok(matmul, "void(int64[:, :], float64[:, :], float64[:, :])")
end)

test("numba-cuda's fast_matmul example, square and non-square", function()
  local k = cuda.jit(fast_matmul)
  local function run(x_h, y_h, z_h, square)
    local x_d, y_d, z_d = cuda.to_device(x_h), cuda.to_device(y_h), cuda.to_device(z_h)
    local threadsperblock = { TPB, TPB }
    local blockspergrid_x, blockspergrid_y
    if square then
      blockspergrid_x = math.ceil(z_h.shape[1] / threadsperblock[1])
      blockspergrid_y = math.ceil(z_h.shape[2] / threadsperblock[2])
    else
      local grid_y_max = math.max(x_h.shape[1], y_h.shape[1])
      local grid_x_max = math.max(x_h.shape[2], y_h.shape[2])
      blockspergrid_x = math.ceil(grid_x_max / threadsperblock[1])
      blockspergrid_y = math.ceil(grid_y_max / threadsperblock[2])
    end
    local blockspergrid = { blockspergrid_x, blockspergrid_y }
    k[{ blockspergrid, threadsperblock }](x_d, y_d, z_d)
    return z_d:copy_to_host()
  end
  local sq_x, sq_y = kjit.arange(16):reshape({ 4, 4 }), kjit.full({ 4, 4 }, 1.0)
  local ns_x, ns_y = kjit.arange(115):reshape({ 5, 23 }), kjit.full({ 23, 7 }, 1.0)
  local sq, ns = in_both("fast_matmul", function()
    return run(sq_x, sq_y, kjit.zeros({ 4, 4 }), true), run(ns_x, ns_y, kjit.zeros({ 5, 7 }), false)
  end)
  local want = model_matmul(sq_x, sq_y)
  for i = 1, 16 do eq(sq[i], want[i] + 0.0, "square z[" .. i .. "]") end
  want = model_matmul(ns_x, ns_y)
  for i = 1, 35 do eq(ns[i], want[i] + 0.0, "non-square z[" .. i .. "]") end
  ptx_ok(fast_matmul, "void(int64[:, :], float64[:, :], float64[:, :])")
end)

-- ---- reduction (docs: ex_reduction) --------------------------------------------------

test("numba-cuda's shared-memory reduction example", function()
  local int32 = cuda.int32   -- from numba.cuda.types import int32
  local got = in_both("reduction", function()
    -- generate data
    local a = cuda.to_device(kjit.arange(1024))
    local nelem = #a

    local array_sum = cuda.jit(function(data)
      local tid = cuda.threadIdx.x
      local size = #data
      if tid < size then
        local i = cuda.grid(1)

        -- Declare an array in shared memory
        local shr = cuda.shared.array(nelem, int32)
        shr[tid + 1] = data[i]

        -- Ensure writes to shared memory are visible
        -- to all threads before reducing
        cuda.syncthreads()

        local s = 1
        while s < cuda.blockDim.x do
          if tid % (2 * s) == 0 then
            -- Stride by `s` and add
            shr[tid + 1] = shr[tid + 1] + shr[tid + 1 + s]
          end
          s = s * 2
          cuda.syncthreads()
        end

        -- After the loop, the zeroth  element contains the sum
        if tid == 0 then
          data[tid + 1] = shr[tid + 1]
        end
      end
    end)

    array_sum[{ 1, nelem }](a)
    return a:copy_to_host()[1]
  end)
  local s = 0
  for i = 0, 1023 do s = s + i end
  eq(got, s)
  eq(got, 523776)
end)

-- ---- Monte Carlo integration (docs: ex_montecarlo) ----------------------------------

local R = cuda.random
local xoroshiro128p_uniform_float32 = R.xoroshiro128p_uniform_float32
local func   -- defined below, as in the original (a global read when the kernel compiles)

local function mc_integrator_kernel(out, rng_states, lower_lim, upper_lim)
  -- kernel to draw random samples and evaluate the function to
  -- be integrated at those sample values
  local size = #out

  local gid = cuda.grid(1)
  if gid <= size then
    -- draw a sample between 0 and 1 on this thread
    local samp = xoroshiro128p_uniform_float32(rng_states, gid)

    -- normalize this sample to the limit range
    samp = samp * (upper_lim - lower_lim) + lower_lim

    -- evaluate the function to be
    -- integrated at the normalized
    -- value of the sample
    local y = func(samp)
    out[gid] = y
  end
end

test("numba-cuda's Monte Carlo integration example", function()
  local nsamps = 20000   -- 1000000 in the original
  local function mc_integrate(lower_lim, upper_lim, nsamps)
    -- approximate the definite integral of `func` from
    -- `lower_lim` to `upper_lim`
    local sum_reduce = cuda.reduce(function(a, b) return a + b end)
    local out = cuda.to_device(kjit.zeros(nsamps, "f32"))
    local rng_states = R.create_xoroshiro128p_states(nsamps, 42)
    cuda.jit(mc_integrator_kernel):forall(nsamps)(out, rng_states, lower_lim, upper_lim)
    -- normalization factor to convert
    -- to the average: (b - a)/(N - 1)
    local factor = (upper_lim - lower_lim) / (nsamps - 1)
    return sum_reduce(out) * factor, out
  end
  -- define a function to integrate
  func = kjit.jit(function(x) return 1.0 / x end)
  -- the kernel computes the sample in f32 (as numba-cuda's float32), the
  -- interpreted simulator in Lua's floats: the same to f32 rounding
  local i12, out12, i23 = in_both("montecarlo", function()
    local a, out = mc_integrate(1, 2, nsamps)
    return a, out, (mc_integrate(2, 3, nsamps))
  end, 1e-6)
  -- the values computed independently (the original's check: 1e-3 for a
  -- million samples; 5 standard errors for these)
  near(i12, 0.69315, 0.005)
  near(i23, 0.4055, 0.0025)
  -- each sample is 1/x of numba-cuda's uniform draw for its state
  local model = kjit.zeros(nsamps, R.xoroshiro128p_dtype)
  R.init_xoroshiro128p_states(model, 42)
  for gid = 1, nsamps, 97 do
    local samp = xoroshiro128p_uniform_float32(model, gid) * (2 - 1) + 1
    near(out12[gid], kjit.f32(1.0 / samp), 1e-6, "out[" .. gid .. "]")
  end
  ptx_ok(mc_integrator_kernel, "void(float32[:], xoroshiro128p_type[:], int64, int64)")
end)

-- ---- CPU/GPU compatibility (docs: ex_cpu_gpu_compat) ---------------------------------

local pi = math.pi
local business_logic = kjit.jit(function(x, y, z)
  return 4 * z * (2 * x - (4 * y) / 2 * pi)
end)

local function compat_f(res, xarr, yarr, zarr)
  local tid = cuda.grid(1)
  if tid <= #xarr then
    -- The function decorated with kjit.jit may be directly reused
    res[tid] = business_logic(xarr[tid], yarr[tid], zarr[tid])
  end
end

test("numba-cuda's CPU/GPU compatibility example", function()
  eq(business_logic(1, 2, 3), -126.79644737231007)   -- its printed value
  local X = kjit.array({ 1, 10, 234 }, "i64")
  local Y = kjit.array({ 2, 2, 4014 }, "i64")
  local Z = kjit.array({ 3, 14, 2211 }, "i64")
  local results = in_both("cpu_gpu_compat", function()
    local Xd, Yd, Zd = cuda.to_device(X), cuda.to_device(Y), cuda.to_device(Z)
    local r = cuda.to_device(kjit.array({ 0.0, 0.0, 0.0 }))
    cuda.jit(compat_f):forall(#Xd)(r, Xd, Yd, Zd)
    return r
  end)
  -- [-126.79644737231007, 416.28324559588634, -218912930.2987788], and
  -- the same as the function on the CPU, compiled and interpreted
  local printed = { -126.79644737231007, 416.28324559588634, -218912930.2987788 }
  for i = 1, 3 do
    eq(results[i], business_logic(X[i], Y[i], Z[i]), "results[" .. i .. "]")
    eq(results[i], business_logic.lua(X[i], Y[i], Z[i]), "interpreted " .. i)
    eq(string.format("%.17g", results[i]), string.format("%.17g", printed[i]), "printed " .. i)
  end
  ptx_ok(compat_f, "void(float64[:], int64[:], int64[:], int64[:])")
end)

-- ---- the 3-D grid random example (docs: ex_3d_grid) ------------------------------------

local function random_3d(arr, rng_states)
  -- Per-dimension thread indices and strides
  local startx, starty, startz = cuda.grid(3)
  local stridex, stridey, stridez = cuda.gridsize(3)

  -- Linearized thread index (1-based, as cuda.grid and the states count)
  local tid = ((startz - 1) * stridey * stridex) + ((starty - 1) * stridex) + startx

  -- Use strided loops over the array to assign a random value to each entry
  for i = startz, arr.shape[1], stridez do
    for j = starty, arr.shape[2], stridey do
      for k = startx, arr.shape[3], stridex do
        arr[i][j][k] = xoroshiro128p_uniform_float32(rng_states, tid)
      end
    end
  end
end

test("numba-cuda's random example on a 3-D grid", function()
  -- Array dimensions (701, 900, 719 in the original)
  local X, Y, Z = 7, 9, 11
  -- Block and grid dimensions (8 and 16 in the original)
  local bx, by, bz = 2, 2, 2
  local gx, gy, gz = 2, 2, 2
  -- Total number of threads
  local nthreads = bx * by * bz * gx * gy * gz
  local arr = in_both("random_3d", function()
    -- Initialize a state for each thread
    local rng_states = R.create_xoroshiro128p_states(nthreads, 1)
    -- Generate random numbers
    local a = kjit.zeros({ X, Y, Z }, "f32")
    cuda.jit(random_3d)[{ { gx, gy, gz }, { bx, by, bz } }](a, rng_states)
    return a
  end)
  -- the model: each thread's strided loop, drawing from its state
  local model = kjit.zeros(nthreads, R.xoroshiro128p_dtype)
  R.init_xoroshiro128p_states(model, 1)
  local sx, sy, sz = bx * gx, by * gy, bz * gz
  local mean = 0
  for tz = 1, sz do
    for ty = 1, sy do
      for tx = 1, sx do
        local tid = (tz - 1) * sy * sx + (ty - 1) * sx + tx
        for i = tz, X, sz do
          for j = ty, Y, sy do
            for k = tx, Z, sx do
              local v = xoroshiro128p_uniform_float32(model, tid)
              eq(arr[((i - 1) * Y + (j - 1)) * Z + k], v, "arr[" .. i .. "][" .. j .. "][" .. k .. "]")
              mean = mean + v
            end
          end
        end
      end
    end
  end
  mean = mean / (X * Y * Z)
  truthy(mean > 0.45 and mean < 0.55, "mean " .. mean)
  ptx_ok(random_3d, "void(float32[:, :, :], xoroshiro128p_type[:])")
end)

-- ---- Black-Scholes (numba-cuda's tests/cudapy/test_blackscholes.py) --------------------

local RISKFREE = 0.02
local VOLATILITY = 0.30

local A1 = 0.31938153
local A2 = -0.356563782
local A3 = 1.781477937
local A4 = -1.821255978
local A5 = 1.330274429
local RSQRT2PI = 0.39894228040143267793994605993438

-- the NumPy reference, element by element
local function cnd(d)
  local K = 1.0 / (1.0 + 0.2316419 * math.abs(d))
  local ret_val = RSQRT2PI * math.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
  if d > 0 then return 1.0 - ret_val end
  return ret_val
end

local function black_scholes(callResult, putResult, S, X, T, R, V)
  for i = 1, #S do
    local sqrtT = math.sqrt(T[i])
    local d1 = (math.log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrtT)
    local d2 = d1 - V * sqrtT
    local cndd1, cndd2 = cnd(d1), cnd(d2)
    local expRT = math.exp(-R * T[i])
    callResult[i] = S[i] * cndd1 - X[i] * expRT * cndd2
    putResult[i] = X[i] * expRT * (1.0 - cndd2) - S[i] * (1.0 - cndd1)
  end
end

local cnd_cuda = cuda.jit("float64(float64)", { device = true, inline = "always" })(function(d)
  local K = 1.0 / (1.0 + 0.2316419 * math.abs(d))
  local ret_val = (
    RSQRT2PI
    * math.exp(-0.5 * d * d)
    * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
  )
  if d > 0 then
    ret_val = 1.0 - ret_val
  end
  return ret_val
end)

local function black_scholes_cuda(callResult, putResult, S, X, T, R, V)
  local i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x + 1
  if i > S.shape[1] then
    return
  end
  local sqrtT = math.sqrt(T[i])
  local d1 = (math.log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (
    V * sqrtT
  )
  local d2 = d1 - V * sqrtT
  local cndd1 = cnd_cuda(d1)
  local cndd2 = cnd_cuda(d2)

  local expRT = math.exp((-1.0 * R) * T[i])
  callResult[i] = S[i] * cndd1 - X[i] * expRT * cndd2
  putResult[i] = X[i] * expRT * (1.0 - cndd2) - S[i] * (1.0 - cndd1)
end

local BS_SIG = "void(double[:], double[:], double[:], double[:], double[:], double, double)"

test("numba-cuda's Black-Scholes test", function()
  local OPT_N = 400
  local iterations = 2

  local stockPrice = randoms(OPT_N, 11, 5.0, 30.0)
  local optionStrike = randoms(OPT_N, 12, 1.0, 100.0)
  local optionYears = randoms(OPT_N, 13, 0.25, 10.0)

  local callResultNumpy = kjit.zeros(OPT_N)
  local putResultNumpy = kjit.full(OPT_N, -1.0)
  for _ = 1, iterations do
    black_scholes(callResultNumpy, putResultNumpy, stockPrice, optionStrike, optionYears,
                  RISKFREE, VOLATILITY)
  end

  local callResultNumba, putResultNumba = in_both("blackscholes", function()
    local k = cuda.jit(black_scholes_cuda, BS_SIG)
    local blockdim = { 512, 1 }
    local griddim = { math.ceil(OPT_N / blockdim[1]), 1 }
    local stream = cuda.stream()
    local d_callResult = cuda.to_device(kjit.zeros(OPT_N), stream)
    local d_putResult = cuda.to_device(kjit.full(OPT_N, -1.0), stream)
    local d_stockPrice = cuda.to_device(stockPrice, stream)
    local d_optionStrike = cuda.to_device(optionStrike, stream)
    local d_optionYears = cuda.to_device(optionYears, stream)
    for _ = 1, iterations do
      k[{ griddim, blockdim, stream }](d_callResult, d_putResult, d_stockPrice, d_optionStrike,
                                      d_optionYears, RISKFREE, VOLATILITY)
    end
    local c, p = d_callResult:copy_to_host(nil, stream), d_putResult:copy_to_host(nil, stream)
    stream:synchronize()
    return c, p
  end)

  local delta, norm, max_abs_err = 0, 0, 0
  for i = 1, OPT_N do
    local d = math.abs(callResultNumpy[i] - callResultNumba[i])
    delta, norm, max_abs_err = delta + d, norm + math.abs(callResultNumpy[i]), math.max(max_abs_err, d)
    near(putResultNumba[i], putResultNumpy[i], 1e-12, "put " .. i)
  end
  truthy(delta / norm < 1e-13, "L1 norm " .. delta / norm)
  truthy(max_abs_err < 1e-13, "max abs err " .. max_abs_err)
  ptx_ok(black_scholes_cuda, BS_SIG)
end)

-- ---- histogram (numba's CUDA tutorial, "Writing CUDA kernels") -------------------------

local function cuda_histogram(x, xmin, xmax, histogram_out)
  -- Increment bin counts in histogram_out, given histogram range [xmin, xmax).
  local nbins = histogram_out.shape[1]
  local bin_width = (xmax - xmin) / nbins

  -- This is a very slow way to do this with NumPy, but looks similar to what you would do in CUDA
  local start = cuda.grid(1)
  local stride = cuda.gridsize(1)

  for i = start, x.shape[1], stride do
    -- np.int32(...): the cast, truncating toward zero
    local bin_number = cuda.int32((x[i] - xmin) / bin_width)

    if bin_number >= 0 and bin_number < histogram_out.shape[1] then
      cuda.atomic.add(histogram_out, bin_number + 1, 1)
    end
  end
end

test("the histogram of numba's CUDA tutorial (atomics, a grid-stride loop)", function()
  local n = 10000
  local g = kjit.random.generator { seed = 3, backend = "kjit" }
  local x = g:normal(kjit.zeros(n, "f32"))
  local xmin, xmax = cuda.float32(-4.0), cuda.float32(4.0)
  local hist = in_both("histogram", function()
    local histogram_out = kjit.zeros(10, "i32")
    cuda.jit(cuda_histogram)[{ 64, 64 }](x, xmin, xmax, histogram_out)
    return histogram_out
  end)
  local want, inside = {}, 0
  for b = 1, 10 do want[b] = 0 end
  local bin_width = (xmax - xmin) / 10
  for i = 1, n do
    local b = kjit.i32((x[i] - xmin) / bin_width)
    if b >= 0 and b < 10 then want[b + 1] = want[b + 1] + 1; inside = inside + 1 end
  end
  for b = 1, 10 do eq(hist[b], want[b], "bin " .. b) end
  truthy(inside > n * 0.99, "almost every sample inside [-4, 4)")
  ptx_ok(cuda_histogram, "void(float32[:], float32, float32, int32[:])")
end)

-- ---- n-body (numba's CUDA benchmarks, bench_cuda.py; after GPU Gems 3, ch. 31) ---------

local eps_2 = cuda.float32(1e-6)
local zero = cuda.float32(0.0)
local one = cuda.float32(1.0)

local body_body_interaction = cuda.jit({ device = true, inline = true })(function(xi, yi, xj, yj, wj, axi, ayi)
  -- Compute the influence of body j on the acceleration of body i.
  local rx = xj - xi
  local ry = yj - yi
  local sqr_dist = rx * rx + ry * ry + eps_2
  local sixth_dist = sqr_dist * sqr_dist * sqr_dist
  local inv_dist_cube = one / math.sqrt(sixth_dist)
  local s = wj * inv_dist_cube
  axi = axi + rx * s
  ayi = ayi + ry * s
  return axi, ayi
end)

local tile_size = 128

local function tile_calculation(xi, yi, axi, ayi, positions, weights)
  -- Compute the contribution of this block's tile to the acceleration
  -- of body i.
  for j = 1, cuda.blockDim.x do
    local xj = positions[j][1]
    local yj = positions[j][2]
    local wj = weights[j]
    axi, ayi = body_body_interaction(xi, yi, xj, yj, wj, axi, ayi)
  end
  return axi, ayi
end

local function calculate_forces(positions, weights, accelerations)
  -- Calculate accelerations produced on all bodies by mutual gravitational
  -- forces.
  local sh_positions = cuda.shared.array({ tile_size, 2 }, float32)
  local sh_weights = cuda.shared.array(tile_size, float32)
  local i = cuda.grid(1)
  local axi = 0.0
  local ayi = 0.0
  local xi = positions[i][1]
  local yi = positions[i][2]
  for j = 0, #weights - 1, tile_size do
    local index = (j // tile_size) * cuda.blockDim.x + cuda.threadIdx.x + 1
    local sh_index = cuda.threadIdx.x + 1
    sh_positions[sh_index][1] = positions[index][1]
    sh_positions[sh_index][2] = positions[index][2]
    sh_weights[sh_index] = weights[index]
    cuda.syncthreads()
    axi, ayi = tile_calculation(xi, yi, axi, ayi, sh_positions, sh_weights)
    cuda.syncthreads()
  end
  accelerations[i][1] = axi
  accelerations[i][2] = ayi
end

test("the n-body of numba's CUDA benchmarks (2-D shared tiles, device functions)", function()
  local n_bodies = tile_size * 2   -- the benchmark's own check
  local positions = kjit.zeros({ n_bodies, 2 }, "f32")
  local p = randoms(2 * n_bodies, 21, -1.0, 1.0)
  for b = 1, n_bodies do positions[b][1] = p[2 * b - 1]; positions[b][2] = p[2 * b] end
  local weights = kjit.array(flat(randoms(n_bodies, 22, 1.0, 2.0)), "f32")
  local acc = in_both("nbody", function()
    local stream = cuda.stream()
    local d_pos = cuda.to_device(positions, stream)
    local d_wei = cuda.to_device(weights, stream)
    local d_acc = cuda.to_device(kjit.zeros({ n_bodies, 2 }, "f32"), stream)
    stream:synchronize()
    local k = cuda.jit(calculate_forces, "void(float32[:, :], float32[:], float32[:, :])")
    local blockdim = tile_size
    local griddim = math.ceil(n_bodies / blockdim)
    k[{ griddim, blockdim, stream }](d_pos, d_wei, d_acc)
    stream:synchronize()
    return d_acc
  end, 1e-5)
  -- run_cpu_nbody: the influence of each body j on every body, in f64
  for b = 1, n_bodies do
    local ax, ay = 0, 0
    for j = 1, n_bodies do
      local rx, ry = positions[j][1] - positions[b][1], positions[j][2] - positions[b][2]
      local sqr_dist = rx * rx + ry * ry + eps_2
      local s = weights[j] * (1 / math.sqrt(sqr_dist * sqr_dist * sqr_dist))
      ax, ay = ax + rx * s, ay + ry * s
    end
    -- np.allclose(cuda_res, cpu_res, 1e-4)
    truthy(math.abs(acc[2 * b - 1] - ax) <= 1e-8 + 1e-4 * math.abs(ax), "ax of body " .. b .. ": " .. acc[2 * b - 1] .. " vs " .. ax)
    truthy(math.abs(acc[2 * b] - ay) <= 1e-8 + 1e-4 * math.abs(ay), "ay of body " .. b)
  end
  ptx_ok(calculate_forces, "void(float32[:, :], float32[:], float32[:, :])")
end)
