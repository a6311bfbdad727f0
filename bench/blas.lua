-- bench/blas.lua: kjit.blas.gemm against OpenBLAS called from C, against
-- NumPy's matmul (bench/blas_numpy.py, when python3 has numpy; its own
-- OpenBLAS build) and against a plain C triple loop (and the same loop as a
-- kjit.jit function).
--
--   lua5.4 bench/blas.lua [RUNS [SIZES]]      e.g. lua5.4 bench/blas.lua 7 64,256,512
--
-- C = A B, square n x n, row-major, f32 and f64, on integer-valued data (so
-- every method computes the exact same C: the checksums must agree). Each
-- time is the median of RUNS calls after a warm-up, timed in process as
-- CPU time (os.clock here, CLOCK_PROCESS_CPUTIME_ID in bench/c/blas.c,
-- clang-14 -O3 -march=native, linked to the same OpenBLAS): on a shared
-- machine the CPU time of one thread is steadier than wall time. So
-- OpenBLAS runs with one thread on both sides (OPENBLAS_NUM_THREADS=1 unless
-- set; with more threads the CPU times are sums, not elapsed times).
--
-- With a GPU (kjit.cuda.is_available()), kjit.cuda.blas.gemm is timed too
-- (cuda events around RUNS calls); without one that section says so.
package.cpath = "build/?.so;" .. package.cpath
local kjit = require "kjit"
local cuda = kjit.cuda

local RUNS = tonumber(arg[1]) or 7
local SIZES = {}
for s in (arg[2] or "16,64,256,512,1024"):gmatch("%d+") do SIZES[#SIZES + 1] = tonumber(s) end
local NAIVE_MAX = 512   -- the triple loops above this size take too long here

local threads = os.getenv("OPENBLAS_NUM_THREADS")
if not threads then
  -- OpenBLAS reads it when loaded (at kjit.blas's first call): set it in the
  -- environment of this process by re-running ourselves
  local cmd = ("OPENBLAS_NUM_THREADS=1 %q %q %s %q"):format(arg[-1], arg[0], RUNS, table.concat(SIZES, ","))
  os.exit(os.execute(cmd) and 0 or 1)
end

local backend, config = kjit.blas.backend()
assert(backend, config)

-- the C side
local exe = os.tmpname()
local inc = "/usr/include/x86_64-linux-gnu/openblas-pthread"
assert(os.execute(("clang-14 -O3 -march=native -I%s bench/c/blas.c -lopenblas -o %s"):format(inc, exe)),
  "clang-14 failed (bench/c/blas.c needs libopenblas-dev)")

-- NumPy, when python3 has it: "dtype n ms checksum" lines
local numpy = {}
do
  local p = io.popen(("python3 bench/blas_numpy.py %d %s 2>/dev/null"):format(RUNS, table.concat(SIZES, ",")))
  for line in p:lines() do
    local dt, n, ms, sum = line:match("^(%S+) (%d+) (%S+) (%S+)$")
    if dt then numpy[dt .. n] = { ms = tonumber(ms), sum = tonumber(sum) } end
  end
  p:close()
end

local function now() return os.clock() * 1e3 end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

local function fill(n, dt)
  local a, b = kjit.empty({ n, n }, dt), kjit.empty({ n, n }, dt)
  local fa, fb = a:reshape({ n * n }), b:reshape({ n * n })
  for i = 0, n * n - 1 do
    fa[i + 1] = (i * 7) % 11 - 5
    fb[i + 1] = (i * 5) % 13 - 6
  end
  return a, b
end

local function checksum(c)
  local f, s = c:reshape({ c.size }), 0
  for i = 1, c.size do s = s + f[i] end
  return s
end

-- the same triple loop as bench/c/blas.c, as a kjit function
local loop = kjit.jit(function(n, a, b, c)
  for i = 1, n do
    local ci = c[i]
    for j = 1, n do ci[j] = 0 end
    local ai = a[i]
    for k = 1, n do
      local aik, bk = ai[k], b[k]
      for j = 1, n do ci[j] = ci[j] + aik * bk[j] end
    end
  end
end)

local function time(runs, f)
  f()
  local t = {}
  for r = 1, runs do
    local t0 = now()
    f()
    t[r] = now() - t0
  end
  return median(t)
end

print(("kjit.blas: %s (%s), OPENBLAS_NUM_THREADS=%s, median of %d runs"):format(backend, config or "",
  threads, RUNS))
print("times in ms; ratios: the other / kjit.blas (> 1: kjit.blas is faster)")
if not next(numpy) then print("(no NumPy peer: python3 with numpy not found)") end
print(("%-4s %5s %10s %10s %7s %10s %7s %10s %7s %10s %7s %8s"):format("type", "n", "kjit.blas",
  "C+OpenBLAS", "ratio", "NumPy", "ratio", "C loop", "ratio", "kjit loop", "ratio", "GFLOP/s"))
for _, dt in ipairs({ "f64", "f32" }) do
  for _, n in ipairs(SIZES) do
    local a, b = fill(n, dt)
    local c = kjit.zeros({ n, n }, dt)
    -- small sizes: time batches so the clock's resolution does not matter
    local reps = math.max(1, math.floor(2e7 / (n * n * n)))   -- as bench/c/blas.c
    local tk = time(RUNS, function() for _ = 1, reps do kjit.blas.gemm(a, b, c) end end) / reps
    local sum = checksum(c)
    local naive = n <= NAIVE_MAX
    local p = io.popen(("%s %d %s %d %s"):format(exe, n, dt, RUNS, naive and "naive" or ""))
    local out = p:read("a")
    p:close()
    local tb, tn, csum = out:match("blas_ms=(%S+) naive_ms=(%S+) checksum=(%S+)")
    assert(tb, "bench/c/blas.c: " .. out)
    tb, tn = tonumber(tb), tonumber(tn)
    assert(tonumber(csum) == sum, ("checksums differ: C %s, kjit.blas %s"):format(csum, sum))
    local tl = -1
    if naive then
      local c2 = kjit.zeros({ n, n }, dt)
      tl = time(RUNS, function() for _ = 1, reps do loop(n, a, b, c2) end end) / reps
      assert(checksum(c2) == sum, "the kjit loop's checksum differs")
    end
    local np = numpy[dt .. n]
    if np then assert(np.sum == sum, ("checksums differ: NumPy %s, kjit.blas %s"):format(np.sum, sum)) end
    local tnp = np and np.ms or -1
    local function r(x) return x > 0 and ("%7.2f"):format(x / tk) or "      -" end
    local function ms(x) return x > 0 and ("%10.4f"):format(x) or "         -" end
    print(("%-4s %5d %10.4f %s %s %s %s %s %s %s %s %8.1f"):format(dt, n, tk, ms(tb), r(tb), ms(tnp),
      r(tnp), ms(tn), r(tn), ms(tl), r(tl), 2 * n ^ 3 / tk / 1e6))
  end
end
os.remove(exe)

if cuda.is_available() then
  print(("\nkjit.cuda.blas: %s on %s"):format(cuda.blas.backend(), cuda.devices()[1].name or "device 0"))
  print(("%-4s %5s %12s %8s"):format("type", "n", "gemm ms", "GFLOP/s"))
  for _, dt in ipairs({ "f64", "f32" }) do
    for _, n in ipairs({ 1024, 2048, 4096 }) do
      local a, b = fill(n, dt)
      local da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array({ n, n }, dt)
      cuda.blas.gemm(da, db, dc)
      cuda.synchronize()
      local e0, e1 = cuda.event(), cuda.event()
      e0:record()
      for _ = 1, RUNS do cuda.blas.gemm(da, db, dc) end
      e1:record()
      e1:synchronize()
      local t = cuda.event_elapsed_time(e0, e1) / RUNS
      print(("%-4s %5d %12.3f %8.1f"):format(dt, n, t, 2 * n ^ 3 / t / 1e6))
    end
  end
else
  local _, why = cuda.is_available()
  print("\nkjit.cuda.blas: no GPU here (" .. tostring(why) .. "): no device numbers")
end
