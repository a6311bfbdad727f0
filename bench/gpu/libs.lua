-- bench/gpu/libs.lua: kjit.cuda.blas gemm and kjit.cuda.fft on the GPU, the
-- kjit side of bench/gpu/run_libs.sh (peers: bench/gpu/libs_peers.cu, the
-- same cuBLAS and cuFFT calls from CUDA C, and bench/gpu/libs_cupy.py).
-- Prints "name<TAB>ms<TAB>ms" lines: the median over 7 runs (after a
-- warm-up) of CUDA events around REPS calls, divided by REPS. gemm: C = A B,
-- square, row-major, into a kept C; FFTs: forward (no scaling kernel), into
-- a kept output (the out option), the plan from kjit's cache, and again
-- through an explicit plan (p:exec, "_plan" lines). Each result is checked
-- against kjit.blas / kjit.fft on the host (gemm up to n = 1024), printing
-- "# MISMATCH name: ..." when it differs. KJIT_BENCH_SIM=1: tiny sizes in
-- the simulator, to check the script without a GPU
-- (tests/lua/test_bench_gpu.lua).
local kjit = require "kjit"
local cuda = kjit.cuda
local SIM = os.getenv("KJIT_BENCH_SIM") == "1"
if SIM then cuda.simulate(true)
else
  local ok, why = cuda.is_available()
  if not ok then print("# no GPU: " .. tostring(why)); os.exit(0) end
end
local REPS = SIM and 1 or 20

local function median(t) table.sort(t); return t[(#t + 1) // 2] end
local function emit(name, ms) print(string.format("%s\t%.5g\tms", name, ms)) end

local function time(fn)
  fn(); cuda.synchronize()
  local e1, e2, ts = cuda.event(), cuda.event(), {}
  for r = 1, 7 do
    e1:record()
    for _ = 1, REPS do fn() end
    e2:record(); e2:synchronize()
    ts[r] = cuda.event_elapsed_time(e1, e2) / REPS
  end
  return median(ts)
end

-- the largest difference relative to the largest magnitude of want
local function check(name, got, want, tol)
  local g, w = got:reshape({ got.size }), want:reshape({ want.size })
  local err, mag = 0, 0
  for i = 1, w.size do
    mag = math.max(mag, math.abs(w[i]))
    err = math.max(err, math.abs(g[i] - w[i]))
  end
  if got.size ~= want.size or err > tol * math.max(mag, 1e-30) then
    print(string.format("# MISMATCH %s: relative error %.3g (tolerance %.3g)", name, err / mag, tol))
  end
end
local TOL = { f32 = 1e-4, f64 = 1e-10 }

local function filled(shape, dt)
  local a = kjit.empty(shape, dt)
  local f = a:reshape({ a.size })
  for i = 1, a.size do f[i] = ((i - 1) * 7919 % 1000) / 1000 - 0.5 end
  return cuda.to_device(a)
end

print("# kjit.cuda.blas: " .. cuda.blas.backend() .. "; kjit.cuda.fft: " .. cuda.fft.backend())
for _, dt in ipairs { "f32", "f64" } do
  for _, n in ipairs(SIM and { 16 } or { 1024, 2048, 4096 }) do
    local a, b, c = filled({ n, n }, dt), filled({ n, n }, dt), cuda.device_array({ n, n }, dt)
    local name = string.format("gemm_%s_%d", dt, n)
    emit(name, time(function() cuda.blas.gemm(a, b, c) end))
    if n <= 1024 then
      check(name, c:copy_to_host(), kjit.blas.gemm(a:copy_to_host(), b:copy_to_host()), TOL[dt])
    end
  end
end

-- name, call, shape of the input, dtype
local cases = SIM and {
  { "fft_f32_1d_64", "fft", { 64, 2 }, "f32" },
  { "rfft_f32_1d_64", "rfft", { 64 }, "f32" },
  { "rfftn_f32_3d_8", "rfftn", { 8, 8, 8 }, "f32" },
} or {
  { "fft_f32_1d_1M", "fft", { 1 << 20, 2 }, "f32" },
  { "fft_f64_1d_1M", "fft", { 1 << 20, 2 }, "f64" },
  { "fft_f32_batch_1024x1024", "fft", { 1024, 1024, 2 }, "f32" },
  { "fft2_f32_2048x2048", "fft2", { 2048, 2048, 2 }, "f32" },
  { "rfft_f32_1d_4M", "rfft", { 1 << 22 }, "f32" },
  { "rfftn_f32_3d_256", "rfftn", { 256, 256, 256 }, "f32" },
}
for _, c in ipairs(cases) do
  local name, fname, shape, dt = c[1], c[2], c[3], c[4]
  local x = filled(shape, dt)
  local p = cuda.fft.plan(fname, x)
  local out = cuda.device_array(p.out_shape, dt)
  emit(name, time(function() cuda.fft[fname](x, { out = out }) end))
  check(name, out:copy_to_host(), kjit.fft[fname](x:copy_to_host()), TOL[dt])
  emit(name .. "_plan", time(function() p:exec(x, out) end))
end
