-- bench/gpu/bench_gpu.lua: kjit.cuda on the GPU (run by bench/gpu/run_gpu.sh).
-- Prints "name<TAB>value<TAB>unit" lines: launch overheads, saxpy bandwidth,
-- mandelbrot time, first compile time. Kernel times come from CUDA events
-- (median of several runs after a warm-up); launch overheads are host CPU
-- time per launch over many asynchronous launches.
local kjit = require "kjit"
local cuda = kjit.cuda
local ok, why = cuda.is_available()
-- KJIT_BENCH_SIM=1: a tiny run in the simulator, to check this script without a GPU
local SIM = os.getenv("KJIT_BENCH_SIM") == "1"
if SIM then cuda.simulate(true) elseif not ok then print("# no GPU: " .. tostring(why)); os.exit(0) end

local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function emit(name, v, unit) print(string.format("%s\t%.4g\t%s", name, v, unit)) end

local function time_events(fn, runs)
  local e1, e2, ts = cuda.event(), cuda.event(), {}
  fn()
  cuda.synchronize()
  for r = 1, runs do
    e1:record(); fn(); e2:record(); e2:synchronize()
    ts[r] = cuda.event_elapsed_time(e1, e2)
  end
  return median(ts)
end

-- first compile (PTX + module load happen on the first launch)
local t0 = os.clock()
local empty = cuda.jit(function() end)
local l0 = empty[{1, 1}]
l0()
cuda.synchronize()
emit("first_launch_incl_compile", (os.clock() - t0) * 1e3, "ms")
emit("first_compile", empty.compile_ms, "ms")

-- launch overhead
local N = SIM and 20 or 20000
local function launches(l, ...)
  for _ = 1, SIM and 10 or 1000 do l(...) end
  cuda.synchronize()
  local c = os.clock()
  for _ = 1, N do l(...) end
  local dt = os.clock() - c
  cuda.synchronize()
  return dt / N * 1e6
end
emit("launch_empty", launches(l0), "us")
local four = cuda.jit(function(a, b, s, n) end)
local da, db = cuda.device_array(1024, "f32"), cuda.device_array(1024, "f32")
emit("launch_4args", launches(four[{1, 1}], da, db, 1.5, 3), "us")

-- saxpy on 2^28 f32
local n = SIM and 1024 or 1 << 28
local saxpy = cuda.jit(function(a, x, y, out)
  local i = cuda.grid(1)
  if i <= #x then out[i] = a * x[i] + y[i] end
end)
local x, y, out = cuda.device_array(n, "f32"), cuda.device_array(n, "f32"), cuda.device_array(n, "f32")
local ls = saxpy[{(n + 255) // 256, 256}]
local ms = time_events(function() ls(2.0, x, y, out) end, 20)
emit("saxpy_2^28_f32", ms, "ms")
emit("saxpy_bandwidth", 3 * 4 * n / (ms * 1e-3) / 1e12, "TB/s")

-- mandelbrot 4096x4096, 256 iterations, f32
local W = SIM and 64 or 4096
local mandel = cuda.jit(function(img, xmin, ymin, dx, dy, maxit)
  local r, c = cuda.grid(2)
  if r <= img.shape[1] and c <= img.shape[2] then
    local cx, cy = xmin + (c - 1) * dx, ymin + (r - 1) * dy
    local zx, zy, k = 0.0, 0.0, 0
    while k < maxit and zx * zx + zy * zy <= 4.0 do
      zx, zy = zx * zx - zy * zy + cx, 2.0 * zx * zy + cy
      k = k + 1
    end
    img[r][c] = k
  end
end)
mandel:compile("void(f32[:,:], f32, f32, f32, f32, i64)")
local img = cuda.device_array({W, W}, "f32")
local lm = mandel[{{W // 16, W // 16}, {16, 16}}]
emit("mandelbrot_4096_f32", time_events(function() lm(img, -2.0, -1.5, 3.0 / W, 3.0 / W, 256) end, 10), "ms")

-- kjit.cuda.reduce: the sum of 2^26 and 2^28 f32/f64 elements of a device
-- array, reported as GB/s read (elements x size / time). A call is timed
-- whole, as a user gets it: both kernels and the copy of the result to the
-- host. run_gpu.sh prints it as a share of the device copy bandwidth.
local fill = cuda.jit(function(x, v)
  local i = cuda.grid(1)
  if i <= #x then x[i] = v end
end)
local rsum = cuda.reduce(function(a, b) return a + b end)
for _, t in ipairs{ "f32", "f64" } do
  for _, lg in ipairs{ 26, 28 } do
    local nr = SIM and 3000 or 1 << lg
    local d = cuda.device_array(nr, t)
    fill[{ (nr + 255) // 256, 256 }](d, 1.0)
    local got = rsum(d)
    -- ones: every partial sum is an integer; f32 may round above 2^24
    if math.abs(got - nr) > nr * 1e-6 then
      print(string.format("# reduce_sum_2^%d_%s: got %s, want %d", lg, t, tostring(got), nr))
    end
    local rms = time_events(function() rsum(d) end, 20)
    emit(string.format("reduce_sum_2^%d_%s", lg, t), nr * (t == "f32" and 4 or 8) / (rms * 1e-3) / 1e9, "GB/s")
    d = nil
    collectgarbage()
  end
end

-- kjit.vectorize(..., {target = "cuda"}): saxpy as a ufunc on the 2^28 f32
-- device arrays above, written in place (out =), against the same
-- element-wise kernel in CUDA C and numba-cuda's @vectorize.
if not kjit.vectorize then
  print("# vectorize_saxpy: skipped (kjit.vectorize is missing)")
else
  local vok, verr = pcall(function()
    local vsaxpy = kjit.vectorize(function(a, xv, yv) return a * xv + yv end,
      { "f32(f32, f32, f32)" }, { target = "cuda" })
    local opt = { out = out }
    local vms = time_events(function() vsaxpy(2.0, x, y, opt) end, 20)
    emit("vectorize_saxpy_2^28_f32", vms, "ms")
    emit("vectorize_saxpy_bandwidth", 3 * 4 * n / (vms * 1e-3) / 1e12, "TB/s")
  end)
  if not vok then print("# vectorize_saxpy: skipped (" .. tostring(verr):gsub("\n.*", "") .. ")") end
end
