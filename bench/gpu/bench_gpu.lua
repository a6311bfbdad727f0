-- bench/gpu/bench_gpu.lua: kjit.cuda on the GPU (run by bench/gpu/run_gpu.sh).
-- Prints "name<TAB>value<TAB>unit" lines: first compile, launch overheads,
-- saxpy, mandelbrot, a 2-D stencil, a shared-memory block reduction,
-- cuda.reduce and a vectorize call. Kernel times come from CUDA events
-- (median of several runs after a warm-up); launch overheads are host
-- wall-clock time (kjit.clock, as the peers' steady_clock and perf_counter)
-- per launch over many asynchronous launches.
local kjit = require "kjit"
local cuda = kjit.cuda
local ok, why = cuda.is_available()
-- KJIT_BENCH_SIM=1: a tiny run in the simulator, to check this script without a GPU
local SIM = os.getenv("KJIT_BENCH_SIM") == "1"
if SIM then cuda.simulate(true) elseif not ok then print("# no GPU: " .. tostring(why)); os.exit(0) end

-- KJIT_PTX_REPORT=dir (bench/gpu/ptx_report.sh): every kernel this script
-- makes is recorded, and its PTX written to dir at the end, named by the
-- line of its Lua function, so that a code generator change can be compared
-- kernel by kernel (instructions, registers) without a GPU.
local PTX_DIR, made = os.getenv("KJIT_PTX_REPORT"), {}
if PTX_DIR then
  local jit = cuda.jit
  cuda.jit = function(fn, opts)
    local k = jit(fn, opts)
    local info = debug.getinfo(fn, "S")
    made[#made + 1] = { k = k, where = (info.short_src:match("[^/]*$") .. "_" .. info.linedefined):gsub("[^%w_.]+", "_"),
                        nocheck = type(opts) == "table" and opts.boundscheck == false }
    return k
  end
end

local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function emit(name, v, unit) print(string.format("%s\t%.4g\t%s", name, v, unit)) end
-- a kernel whose result is wrong prints "# MISMATCH ...": run_gpu.sh shows
-- it, and test_bench_gpu.lua (the simulator run) fails on it
local function check(name, ok, detail)
  if not ok then print(string.format("# MISMATCH %s: %s", name, detail)) end
end

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
local t0 = kjit.clock()
local empty = cuda.jit(function() end)
local l0 = empty[{1, 1}]
l0()
cuda.synchronize()
emit("first_launch_incl_compile", (kjit.clock() - t0) * 1e3, "ms")
emit("first_compile", empty.compile_ms, "ms")

-- launch overhead: the host time of a launch, in batches of 100 launches
-- (well under the driver's queue depth, so no launch waits for the GPU),
-- the median batch of 100 after a warm-up, each batch after a synchronize
local BATCH, BATCHES = SIM and 5 or 100, SIM and 3 or 100
local function launches(l, ...)
  for _ = 1, SIM and 10 or 1000 do l(...) end
  cuda.synchronize()
  local per = {}
  for b = 1, BATCHES do
    local c = kjit.clock()
    for _ = 1, BATCH do l(...) end
    per[b] = (kjit.clock() - c) / BATCH * 1e6
    cuda.synchronize()
  end
  return median(per)
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
local fill = cuda.jit(function(a, v)
  local i = cuda.grid(1)
  if i <= #a then a[i] = v + i % 7 end
end)
fill[{(n + 255) // 256, 256}](x, 1.0)
fill[{(n + 255) // 256, 256}](y, 0.5)
local ms = time_events(function() ls(2.0, x, y, out) end, 20)
do
  local h = out:copy_to_host()
  for _, i in ipairs{ 1, 2, 7, n // 2, n } do
    local xi, yi = 1.0 + i % 7, 0.5 + i % 7
    check("saxpy", h[i] == 2.0 * xi + yi, string.format("out[%d] = %s, want %s", i, h[i], 2.0 * xi + yi))
  end
end
emit("saxpy_2^28_f32", ms, "ms")
emit("saxpy_bandwidth", 3 * 4 * n / (ms * 1e-3) / 1e12, "TB/s")

-- mandelbrot 4096x4096, 256 iterations, f32
local W = SIM and 64 or 4096
-- x, the fastest-varying thread index, walks the contiguous last dimension
-- (coalesced stores), as in the CUDA C peer
local function mandel_fn(img, xmin, ymin, dx, dy, maxit)
  local c, r = cuda.grid(2)
  if r <= img.shape[1] and c <= img.shape[2] then
    local cx, cy = xmin + (c - 1) * dx, ymin + (r - 1) * dy
    local zx, zy, k = 0.0, 0.0, 0
    while k < maxit and zx * zx + zy * zy <= 4.0 do
      zx, zy = zx * zx - zy * zy + cx, 2.0 * zx * zy + cy
      k = k + 1
    end
    img[r][c] = k
  end
end
local mandel = cuda.jit(mandel_fn)
mandel:compile("void(f32[:,:], f32, f32, f32, f32, i64)")
local img = cuda.device_array({W, W}, "f32")
local lm = mandel[{{W // 16, W // 16}, {16, 16}}]
emit("mandelbrot_4096_f32", time_events(function() lm(img, -2.0, -1.5, 3.0 / W, 3.0 / W, 256) end, 10), "ms")
-- the cost of kjit's bounds checks: the same kernels with boundscheck = false
local function unchecked(fn, sig, cfg, ...)
  local k = cuda.jit(fn, { boundscheck = false })
  if sig then k:compile(sig) end
  local l, args = k[cfg], table.pack(...)
  return time_events(function() l(table.unpack(args, 1, args.n)) end, 10)
end
emit("mandelbrot_4096_f32_nocheck", unchecked(mandel_fn, "void(f32[:,:], f32, f32, f32, f32, i64)",
  {{W // 16, W // 16}, {16, 16}}, img, -2.0, -1.5, 3.0 / W, 3.0 / W, 256), "ms")
do -- pixels well inside the set (256) and the corner, which escapes at once (1)
  local h = img:copy_to_host()
  for _, p in ipairs{ { W // 2, W // 2, 256 }, { W // 2, W // 3, 256 }, { 1, 1, 1 } } do
    local r, c, want = p[1], p[2], p[3]
    check("mandelbrot", h[r][c] == want, string.format("img[%d][%d] = %s, want %s", r, c, h[r][c], want))
  end
end

-- 2-D Jacobi stencil, one sweep of an 8192x8192 f32 grid (a -> b), reported
-- as time and as bandwidth (each element read once and written once)
local SW = SIM and 64 or 8192
local function jacobi_fn(a, b)
  local j, i = cuda.grid(2)          -- x along the contiguous rows
  if i > 1 and i < a.shape[1] and j > 1 and j < a.shape[2] then
    b[i][j] = 0.25 * (a[i - 1][j] + a[i + 1][j] + a[i][j - 1] + a[i][j + 1])
  end
end
local jacobi = cuda.jit(jacobi_fn)
do
  local ga = cuda.device_array({SW, SW}, "f32")
  local gb = cuda.device_array({SW, SW}, "f32")
  local init = cuda.jit(function(a)
    local j, i = cuda.grid(2)
    if i <= a.shape[1] and j <= a.shape[2] then a[i][j] = (i * 3 + j * 5) % 17 end
  end)
  local cfg = {{SW // 32, SW // 8}, {32, 8}}
  init[cfg](ga)
  local lj = jacobi[cfg]
  local sms = time_events(function() lj(ga, gb) end, 20)
  emit("stencil_8192_f32", sms, "ms")
  emit("stencil_bandwidth", 2 * 4 * SW * SW / (sms * 1e-3) / 1e12, "TB/s")
  emit("stencil_8192_f32_nocheck", unchecked(jacobi_fn, nil, cfg, ga, gb), "ms")
  local hb = gb:copy_to_host()
  local function av(i, j) return (i * 3 + j * 5) % 17 end
  for _, p in ipairs{ { 2, 2 }, { SW // 2, SW // 3 }, { SW - 1, SW - 1 } } do
    local i, j = p[1], p[2]
    local want = 0.25 * (av(i - 1, j) + av(i + 1, j) + av(i, j - 1) + av(i, j + 1))
    check("stencil", hb[i][j] == want, string.format("b[%d][%d] = %s, want %s", i, j, hb[i][j], want))
  end
end

-- a shared-memory block reduction written as a kernel (the tree of the CUDA
-- samples): each block of 256 threads sums its 256 f32 elements of 2^26
local BN = SIM and 1024 or 1 << 26
local function block_sum_fn(x, out)
  local s = cuda.shared.array(256, "f32")
  local t = cuda.threadIdx.x + 1
  local i = cuda.grid(1)
  s[t] = i <= #x and x[i] or 0.0
  cuda.syncthreads()
  local step = cuda.blockDim.x // 2
  while step > 0 do
    if t <= step then s[t] = s[t] + s[t + step] end
    cuda.syncthreads()
    step = step // 2
  end
  if t == 1 then out[cuda.blockIdx.x + 1] = s[1] end
end
local block_sum = cuda.jit(block_sum_fn)
do
  local bx = cuda.device_array(BN, "f32")
  local bout = cuda.device_array(BN // 256, "f32")
  fill[{BN // 256, 256}](bx, 0.0)          -- x[i] = i % 7
  local lb = block_sum[{BN // 256, 256}]
  local bms = time_events(function() lb(bx, bout) end, 20)
  emit("block_reduce_2^26_f32", bms, "ms")
  emit("block_reduce_bandwidth", 4 * BN / (bms * 1e-3) / 1e12, "TB/s")
  emit("block_reduce_2^26_f32_nocheck", unchecked(block_sum_fn, nil, {BN // 256, 256}, bx, bout), "ms")
  local h = bout:copy_to_host()
  for _, b in ipairs{ 1, BN // 512, BN // 256 } do
    local want = 0
    for i = (b - 1) * 256 + 1, b * 256 do want = want + i % 7 end
    check("block_reduce", h[b] == want, string.format("out[%d] = %s, want %s", b, h[b], want))
  end
end

-- kjit.cuda.reduce: the sum of 2^26 and 2^28 f32/f64 elements of a device
-- array, reported as GB/s read (elements x size / time). A call is timed
-- whole, as a user gets it: both kernels and the copy of the result to the
-- host. run_gpu.sh prints it as a share of the device copy bandwidth.
local ones = cuda.jit(function(a, v)
  local i = cuda.grid(1)
  if i <= #a then a[i] = v end
end)
local rsum = cuda.reduce(function(a, b) return a + b end)
for _, t in ipairs{ "f32", "f64" } do
  for _, lg in ipairs{ 26, 28 } do
    local nr = SIM and 3000 or 1 << lg
    local d = cuda.device_array(nr, t)
    ones[{ (nr + 255) // 256, 256 }](d, 1.0)
    local got = rsum(d)
    -- ones: every partial sum is an integer; f32 may round above 2^24
    check(string.format("reduce_sum_2^%d_%s", lg, t), math.abs(got - nr) <= nr * 1e-6,
      string.format("got %s, want %d", tostring(got), nr))
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

if PTX_DIR then
  for _, m in ipairs(made) do
    for j, sig in ipairs(m.k.signatures) do
      local path = string.format("%s/%s%s_%d.ptx", PTX_DIR, m.where, m.nocheck and "_nocheck" or "", j)
      local f = assert(io.open(path, "w"))
      f:write(m.k:inspect("ptx", "void" .. sig))
      f:close()
    end
  end
end
