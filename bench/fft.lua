-- bench/fft.lua: kjit.fft against FFTW called from C (bench/c/fft.c), NumPy
-- (bench/fft_numpy.py, when python3 has numpy) and
-- against a direct DFT compiled by kjit.jit; kjit.cuda.fft against the same
-- transforms when a GPU is there (else it says so).
--
--   lua5.4 bench/fft.lua [build dir, default build]
--
-- Every figure is microseconds per transform: the median of 5 batches of at
-- least 0.2 s of process CPU time each. kjit.fft is timed twice: the one-line call
-- (fft.fft(x): argument checks, a plan-cache lookup and a new result array
-- each time) and a kept plan into a kept array (p:exec(x, out)), which is
-- what the C peer does (fftw_execute on a plan made once with
-- FFTW_ESTIMATE, kjit.fft's default planner flag); then both with
-- FFTW_MEASURE (kjit: planner = "measure"). Run it on an idle machine.
local build = arg[1] or "build"
package.cpath = build .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local fft, cuda = kjit.fft, kjit.cuda

-- process CPU time, as bench/c/fft.c (a shared machine's load would
-- otherwise count); FFTW runs on one thread, so it is the transform's time
local clock = os.clock

local function median_us(fn)
  local t = {}
  for b = 1, 5 do
    local reps, t0, t1 = 0, clock(), nil
    repeat fn(); reps = reps + 1; t1 = clock() until t1 - t0 >= 0.2
    t[b] = (t1 - t0) / reps * 1e6
  end
  table.sort(t)
  return t[3]
end

-- the C peer
local cfile, exe = "bench/c/fft.c", os.tmpname()
local peer, peer_m = {}, {}
local ok = os.execute(string.format("cc -O2 %s -lfftw3 -lfftw3f -lm -o %s 2>/dev/null", cfile, exe))
if ok then
  for _, run in ipairs { { peer, "" }, { peer_m, " measure" } } do
    local p = io.popen(exe .. run[2])
    for line in p:lines() do
      local name, us = line:match("^(.-)\t([%d.]+)$")
      if name then run[1][name] = tonumber(us) end
    end
    p:close()
  end
else
  print("(no C peer: cc with FFTW's headers and libraries failed; install libfftw3-dev)")
end
os.remove(exe)

-- NumPy (numpy.fft; NumPy 2 computes f32 transforms in f32), when python3
-- has it
local numpy = {}
do
  local p = io.popen("python3 bench/fft_numpy.py 2>/dev/null")
  for line in p:lines() do
    local name, us = line:match("^(.-)\t([%d.]+)$")
    if name then numpy[name] = tonumber(us) end
  end
  p:close()
  if not next(numpy) then print("(no NumPy peer: python3 with numpy not found)") end
end

local function signal(shape, dtype)
  local a = kjit.empty(shape, dtype)
  local f = a:reshape({ a.size })
  for i = 1, a.size do f[i] = ((i - 1) * 7919 % 1000) / 1000 end
  return a
end

-- the direct DFT, compiled: what a user writes without a library
local dft = kjit.jit(function(x, y, n)
  for k = 0, n - 1 do
    local re, im = 0.0, 0.0
    for j = 0, n - 1 do
      local a = -2 * math.pi * ((j * k) % n) / n
      local c, s = math.cos(a), math.sin(a)
      local xr, xi = x[2 * j + 1], x[2 * j + 2]
      re = re + xr * c - xi * s
      im = im + xr * s + xi * c
    end
    y[2 * k + 1] = re
    y[2 * k + 2] = im
  end
end)

local cases = {
  { "fft f64 n=64", "fft", { 64, 2 }, "f64", dft = true },
  { "fft f64 n=1024", "fft", { 1024, 2 }, "f64", dft = true },
  { "fft f64 n=65536", "fft", { 65536, 2 }, "f64" },
  { "fft f64 n=1048576", "fft", { 1048576, 2 }, "f64" },
  { "fft f32 n=1024", "fft", { 1024, 2 }, "f32" },
  { "fft f32 n=65536", "fft", { 65536, 2 }, "f32" },
  { "fft2 f64 512x512", "fft2", { 512, 512, 2 }, "f64" },
  { "rfft f64 n=1048576", "rfft", { 1048576 }, "f64" },
  { "rfftn f64 64x64x64", "rfftn", { 64, 64, 64 }, "f64" },   -- no C peer (bench/c/fft.c)
}

print(string.format("kjit %s, %s; FFTW from C: %s", kjit.version, fft.backend(),
  next(peer) and "bench/c/fft.c" or "none"))
print("microseconds per transform (ratios: kjit's time over the peer's)")
print(string.format("%-20s %10s %10s %10s %7s %7s | %10s %10s %7s | %9s %7s | %s", "transform",
  "fft.fft(x)", "p:exec", "C FFTW", "call/C", "exec/C", "exec meas.", "C measure", "ratio",
  "NumPy", "call/np", "direct DFT (kjit.jit)"))
for _, c in ipairs(cases) do
  local name, fname, shape, dt = c[1], c[2], c[3], c[4]
  local x = signal(shape, dt)
  local one = median_us(function() fft[fname](x) end)
  local p = fft.plan(fname, x)
  local out = kjit.empty(p.out_shape, dt)
  local ex = median_us(function() p:exec(x, out) end)
  local cus = peer[name]
  local dtext = ""
  if c.dft then
    local flat, y = x:reshape({ x.size }), kjit.zeros(x.size)
    local n = shape[1]
    dft(flat, y, n)   -- compile first
    local d = median_us(function() dft(flat, y, n) end)
    dtext = string.format("%9.1f (%.0fx)", d, d / ex)
  end
  local pm = fft.plan(fname, x, { planner = "measure" })
  local exm = median_us(function() pm:exec(x, out) end)
  local np, cm = numpy[name], peer_m[name]
  local function r(a, b) return b and string.format("%.2f", a / b) or "-" end
  local function v(a) return a and string.format("%.2f", a) or "-" end
  print(string.format("%-20s %10.2f %10.2f %10s %7s %7s | %10.2f %10s %7s | %9s %7s | %s", name,
    one, ex, v(cus), r(one, cus), r(ex, cus), exm, v(cm), r(exm, cm), v(np), r(one, np), dtext))
end

local gpu, why = cuda.is_available()
if not gpu then
  print("kjit.cuda.fft: not timed, no GPU here (" .. tostring(why) .. ")")
else
  print("kjit.cuda.fft on " .. cuda.devices()[1].name .. ", " .. cuda.fft.backend())
  for _, c in ipairs(cases) do
    local name, fname, shape, dt = c[1], c[2], c[3], c[4]
    local d = cuda.to_device(signal(shape, dt))
    local p = cuda.fft.plan(fname, d)
    local o = cuda.device_array(p.out_shape, dt)
    p:exec(d, o)
    cuda.synchronize()
    local e0, e1 = cuda.event(), cuda.event()
    local reps = 100
    e0:record()
    for _ = 1, reps do p:exec(d, o) end
    e1:record()
    e1:synchronize()
    print(string.format("%-20s %10.2f us per transform (events, %d in a row)", name,
      e0:elapsed_time(e1) * 1000 / reps, reps))
  end
end
