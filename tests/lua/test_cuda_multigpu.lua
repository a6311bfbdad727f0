-- test_cuda_multigpu.lua: several GPUs (src/host/cudadrv.c, kernel.c):
-- the per-thread current device, cuda.use_device's scope, a kernel's one
-- module per device, arrays that remember their device, peer access and
-- copies between devices.
--
-- The driver path runs in child processes against the fake driver
-- tests/c/mock_libcuda.c with two devices (MOCK_CUDA_DEVICES=2): this file
-- re-runs itself with KJIT_TEST_MGPU_CHILD=<suite>, mirrors each child
-- test here under its own name, and checks the mock's exit report and its
-- call log (MOCK_CUDA_LOG: which device's context each call ran in). The
-- per-thread device with two lua_States on two threads is
-- tests/c/test_multigpu_threads.c. In this process: the simulator's one
-- device.
local kjit = require "kjit"
local cuda = kjit.cuda

local CHILD = os.getenv("KJIT_TEST_MGPU_CHILD")
local MODDIR, HARNESS, THIS, LUA = arg[1], arg[0], arg[2], arg[-1]
local MOCK = MODDIR .. "/libmockcuda.so"

local SUITES = {}

local function kernel_or_skip()
  if not cuda.jit then skip("cuda.jit is not built in") end
  return cuda.jit(function(x, out)
    local i = cuda.grid(1)
    if i <= #x then out[i] = 2 * x[i] end
  end)
end

local function host_same(got, want, what)
  eq(got.size, want.size, what .. " size")
  for i = 1, want.size do eq(got[i], want[i], what .. "[" .. i .. "]") end
end

----------------------------------------------------------------------
-- child suites (driver path, mock driver with two devices)
----------------------------------------------------------------------

SUITES.scope = function()
  test("use_device: the block runs on the device, then the previous one is back", function()
    eq(cuda.current_device(), 0, "a thread starts on device 0")
    do
      local _ <close> = cuda.use_device(1)
      eq(cuda.current_device(), 1, "inside")
      eq(cuda.get_current_device().id, 1, "get_current_device().id")
      eq(cuda.get_current_device().name, "Mock GPU 1", "get_current_device().name")
      eq(cuda.device_array(3).device, 1, "an array made inside is on device 1")
      do
        local _ <close> = cuda.use_device(0)
        eq(cuda.current_device(), 0, "nested")
      end
      eq(cuda.current_device(), 1, "after the nested scope")
    end
    eq(cuda.current_device(), 0, "after the block")
    eq(cuda.device_array(3).device, 0, "an array made after is on device 0")
  end)

  test("use_device: restored on error, return and break", function()
    local ok, m = pcall(function()
      local _ <close> = cuda.use_device(1)
      error("boom")
    end)
    eq(ok, false, "the error goes through")
    truthy(m:find("boom", 1, true), "its message: " .. tostring(m))
    eq(cuda.current_device(), 0, "after an error")
    local function f()
      local _ <close> = cuda.use_device(1)
      return cuda.current_device()
    end
    eq(f(), 1, "the return value is computed on device 1")
    eq(cuda.current_device(), 0, "after a return")
    for _ = 1, 3 do
      local _ <close> = cuda.use_device(1)
      break
    end
    eq(cuda.current_device(), 0, "after a break")
    -- select_device inside a scope: the scope's close still restores
    do
      local _ <close> = cuda.use_device(1)
      cuda.select_device(0)
    end
    eq(cuda.current_device(), 0, "select_device inside")
    cuda.select_device(1)
    do
      local _ <close> = cuda.use_device(0)
      eq(cuda.current_device(), 0, "from device 1 to 0")
    end
    eq(cuda.current_device(), 1, "back on 1")
    cuda.select_device(0)
    local sc = cuda.use_device(1)
    truthy(tostring(sc):find("device 1", 1, true), tostring(sc))
    sc:close(); sc:close()   -- without <close>; twice is harmless
    eq(cuda.current_device(), 0, "sc:close()")
  end)

  test("use_device and select_device: errors leave the device as it was", function()
    raises("use_device: device 2 out of range (2 CUDA devices: 0 to 1)",
      function() local _ <close> = cuda.use_device(2) end)
    raises("device -1 out of range", function() cuda.use_device(-1) end)
    raises("number expected, got no value", function() cuda.use_device() end)
    eq(cuda.current_device(), 0, "unchanged")
  end)

  test("arrays and streams remember their device", function()
    local d0, s0 = cuda.to_device(kjit.array({ 1, 2, 3 }, "i32")), cuda.stream()
    local _ <close> = cuda.use_device(1)
    local m = raises("this device array is on device 0 but the current device is 1 "
      .. "(cuda.use_device(0) or cuda.select_device(0) selects it)", function() d0:copy_to_host() end)
    truthy(m:find("test_cuda_multigpu.lua:%d+:"), "located: " .. m)
    raises("this stream is on device 0", function() cuda.to_device(kjit.zeros(1), s0) end)
  end)
end

SUITES.peer = function()
  test("can_access_peer", function()
    eq(cuda.can_access_peer(0, 1), os.getenv("MOCK_CUDA_PEER") ~= "0", "0 -> 1")
    eq(cuda.can_access_peer(1, 0), os.getenv("MOCK_CUDA_PEER") ~= "0", "1 -> 0")
    eq(cuda.can_access_peer(1, 1), true, "a device and itself")
    raises("can_access_peer: device 2 out of range", function() cuda.can_access_peer(0, 2) end)
  end)

  test("copy_to_device between devices (cuMemcpyPeer), with and without a stream", function()
    local h = kjit.array({ 1.5, -2, 3, 4e10, 0 }, "f64")
    local d0 = cuda.to_device(h)
    local _ <close> = cuda.use_device(1)
    local d1 = cuda.device_array(5, "f64")
    eq(d1:copy_to_device(d0), d1, "returns the receiver")
    eq(d1.device, 1, "d1 stays on device 1")
    host_same(d1:copy_to_host(), h, "device 0 -> 1")
    local s1 = cuda.stream()
    local e1 = cuda.device_array(5, "f64")
    e1:copy_to_device(d1, s1)   -- same device: cuMemcpyDtoDAsync
    s1:synchronize()
    host_same(e1:copy_to_host(), h, "device 1 -> 1 on a stream")
    local back = cuda.device_array(5, "f64")
    back:copy_to_device(d0, s1); s1:synchronize()
    host_same(back:copy_to_host(), h, "device 0 -> 1 on a stream")
    -- views of another device's array
    local v = cuda.device_array(2, "f64")
    v:copy_to_device(d0:slice(2, 3))
    host_same(v:copy_to_host(), kjit.array({ -2, 3 }), "a view of device 0's array")
    raises("a device array of the same dtype and shape expected",
      function() d1:copy_to_device(cuda.to_device(kjit.zeros(4))) end)
    raises("this device array is on device 0", function() d0:copy_to_device(d1) end)
  end)

  test("enable_peer_access", function()
    if os.getenv("MOCK_CUDA_PEER") == "0" then
      raises("cuCtxEnablePeerAccess: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        function() cuda.enable_peer_access(1) end)
      return
    end
    cuda.enable_peer_access(1)
    cuda.enable_peer_access(1)   -- again: no error
    cuda.enable_peer_access(0)   -- the device itself: nothing to do
    raises("enable_peer_access: device 5 out of range", function() cuda.enable_peer_access(5) end)
  end)
end

SUITES.modules = function()
  test("a kernel keeps one module per device: launches alternating devices reload nothing",
    function()
      local k = kernel_or_skip()
      local x0 = cuda.to_device(kjit.array({ 1, 2, 3 }, "f32"))
      local o0 = cuda.device_array_like(x0)
      local x1, o1
      do
        local _ <close> = cuda.use_device(1)
        x1 = cuda.to_device(kjit.array({ 4, 5, 6 }, "f32"))
        o1 = cuda.device_array_like(x1)
      end
      for _ = 1, 3 do
        k[{ 1, 32 }](x0, o0)
        local _ <close> = cuda.use_device(1)
        k[{ 1, 32 }](x1, o1)
      end
      cuda.synchronize()
      do local _ <close> = cuda.use_device(1); cuda.synchronize() end
    end)

  test("a kernel on device 1 refuses an array of device 0 until peer access is enabled",
    function()
      local k = kernel_or_skip()
      local x0 = cuda.to_device(kjit.array({ 1, 2, 3 }, "f32"))
      local _ <close> = cuda.use_device(1)
      local o1 = cuda.device_array(3, "f32")
      local m = raises("argument #1: this device array is on device 0 but the kernel runs on "
        .. "device 1, which has no peer access to it (copy it with d:copy_to_device(src), or "
        .. "call cuda.enable_peer_access(0) with device 1 current)",
        function() k[{ 1, 32 }](x0, o1) end)
      truthy(m:find("test_cuda_multigpu.lua:%d+:"), "located: " .. m)
      cuda.enable_peer_access(0)
      k[{ 1, 32 }](x0, o1)     -- now it may
      cuda.synchronize()
      -- a copy to the host still wants the array's own device
      raises("this device array is on device 0", function() x0:copy_to_host() end)
    end)
end

-- MOCK_CUDA_ERRREC: every launch writes a failed thread into its error
-- record (kind 5, bounds: index 9 of [1, 8], line 12)
SUITES.errrec = function()
  test("kernel errors: each device's record is read at that device's synchronize", function()
    local k = kernel_or_skip()
    local x = cuda.to_device(kjit.array({ 1 }, "f32"))
    k[{ 1, 32 }](x, cuda.device_array_like(x))   -- on device 0
    do
      local _ <close> = cuda.use_device(1)
      cuda.synchronize()   -- device 1 ran nothing: no error here
    end
    raises("index 9 out of bounds [1, 8]", function() cuda.synchronize() end)
    cuda.synchronize()   -- raised once
  end)
end

-- Library handles follow the current device (cuBLAS's: one per thread and
-- device, made with that device's context current; cuFFT's plans: per
-- device)
SUITES.blas = function()
  test("kjit.cuda.blas runs on the current device of the thread", function()
    local a = kjit.array({ { 1, 2 }, { 3, 4 } })
    local want = kjit.blas.gemm(a, a)
    for _, dev in ipairs({ 0, 1, 0, 1 }) do
      local _ <close> = cuda.use_device(dev)
      local c = cuda.blas.gemm(cuda.to_device(a), cuda.to_device(a))
      eq(c.device, dev, "result on device " .. dev)
      local h = c:copy_to_host()
      for i = 1, 2 do for j = 1, 2 do eq(h[i][j], want[i][j], "c[" .. i .. "][" .. j .. "]") end end
    end
    local d0 = cuda.to_device(a)
    local _ <close> = cuda.use_device(1)
    raises("this device array is on device 0", function() cuda.blas.gemm(d0, d0) end)
  end)

  test("kjit.cuda.fft: plans per device; a plan of device 0 is refused on device 1", function()
    local x = kjit.zeros({ 8, 2 })
    for i = 1, 8 do x[i][1] = i; x[i][2] = -i end
    local want = kjit.fft.fft(x)
    local p
    for _, dev in ipairs({ 0, 1, 0, 1 }) do
      local _ <close> = cuda.use_device(dev)
      local X = cuda.fft.fft(cuda.to_device(x)):copy_to_host()
      for i = 1, 8 do
        -- the mock cuFFT is a direct DFT: FFTW's numbers up to rounding
        near(X[i][1], want[i][1], 1e-12, "re " .. i .. " on device " .. dev)
        near(X[i][2], want[i][2], 1e-12, "im " .. i .. " on device " .. dev)
      end
      if dev == 0 then p = cuda.fft.plan("fft", cuda.to_device(x)) end
    end
    local _ <close> = cuda.use_device(1)
    raises("this plan was made for a device and cannot be used on another device",
      function() p:exec(cuda.to_device(x)) end)
  end)
end

----------------------------------------------------------------------
-- child runner
----------------------------------------------------------------------

if CHILD then
  local base = test
  test = function(name, fn)   -- report passes by name for the parent
    base(name, function() fn(); print("PASS " .. name) end)
  end
  local suite = SUITES[CHILD]
  if not suite then error("unknown child suite " .. CHILD) end
  suite()
  -- the harness ends with os.exit (no lua_close): release what the tests
  -- dropped, so the mock's report counts leaks
  test("every block is released after GC and synchronize", function()
    collectgarbage(); collectgarbage()
    for i = 1, 0, -1 do
      cuda.select_device(i)
      cuda.synchronize()
      local fr, total = cuda.mem_info()
      eq(fr, total, "free memory on device " .. i)
    end
  end)
  return
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function file_exists(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

local function read_lines(path)
  local t = {}
  local f = io.open(path)
  if f then
    for l in f:lines() do t[#t + 1] = l end
    f:close()
  end
  return t
end

-- Runs suite in a child with env; mirrors its tests here; checks the
-- mock's report against want (key -> number) and passes its log lines to
-- check_log.
local function child(suite, env, want, check_log)
  local report, log = os.tmpname(), os.tmpname()
  local parts = { "KJIT_TEST_MGPU_CHILD=" .. suite, "MOCK_CUDA_REPORT=" .. q(report),
    "MOCK_CUDA_LOG=" .. q(log), "KJIT_LIBCUDA=" .. q(MOCK), "MOCK_CUDA_DEVICES=2", "KJIT_CUDASIM=" }
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. q(v) end
  local cmd = table.concat(parts, " ") .. " " .. q(LUA) .. " " .. q(HARNESS) .. " "
    .. q(MODDIR) .. " " .. q(THIS) .. " 2>&1"
  local p = io.popen(cmd)
  local out = p:read("a")
  local okexit = p:close()
  local summary
  for line in out:gmatch("[^\n]+") do
    local kind, rest = line:match("^(%u%u%u%u) (.*)$")
    if kind == "PASS" then test(suite .. ": " .. rest, function() end)
    elseif kind == "SKIP" then
      local name, why = rest:match("^(.-): (.*)$")
      test(suite .. ": " .. (name or rest), function() skip(why or "") end)
    elseif kind == "FAIL" then
      test(suite .. ": " .. rest, function() error(rest, 0) end)
    elseif line:match("^test_cuda_multigpu: %d+ passed") then summary = line end
  end
  test(suite .. ": child ran to the end", function()
    truthy(summary and summary:find(" 0 failed", 1, true) and okexit, "child output:\n" .. out)
  end)
  local got = {}
  local f = io.open(report)
  if f then
    for k, v in f:read("a"):gmatch("([%w_]+)=(%d+)") do got[k] = tonumber(v) end
    f:close()
  end
  if want then
    test(suite .. ": mock driver report", function()
      for k, v in pairs(want) do eq(got[k], v, "report " .. k) end
    end)
  end
  if check_log then
    local lines = read_lines(log)
    test(suite .. ": mock driver log", function() check_log(lines, got) end)
  end
  os.remove(report); os.remove(log)
end

-- calls named `name` in the log, by device: { [dev] = count }
local function by_device(lines, name)
  local t = {}
  for _, l in ipairs(lines) do
    local n, d = l:match("^(%S+) dev=(%-?%d+)")
    if n == name then t[tonumber(d)] = (t[tonumber(d)] or 0) + 1 end
  end
  return t
end

local CLEAN = { live_allocs = 0, bad_frees = 0, bad_copies = 0, bad_handles = 0,
  live_streams = 0 }

if not file_exists(MOCK) then
  test("mock driver suites", function() skip("no " .. MOCK .. " (build target mockcuda)") end)
else
  child("scope", {}, CLEAN, function(lines)
    local allocs = by_device(lines, "cuMemAlloc_v2")
    truthy((allocs[1] or 0) >= 1 and (allocs[0] or 0) >= 1, "allocations on both devices")
  end)
  child("peer", {}, { live_allocs = 0, bad_frees = 0, bad_copies = 0, bad_handles = 0,
    peer_copies = 3, peer_enables = 1 }, function(lines)
    local peer = by_device(lines, "cuMemcpyPeer")
    local peerasync = by_device(lines, "cuMemcpyPeerAsync")
    eq(peer[1], 2, "synchronous peer copies, in device 1's context")
    eq(peerasync[1], 1, "a peer copy on device 1's stream")
    eq(by_device(lines, "cuCtxEnablePeerAccess")[0], 2, "enabled from device 0 (twice)")
  end)
  child("peer_off", { MOCK_CUDA_PEER = "0", KJIT_TEST_MGPU_CHILD = "peer" },
    { bad_copies = 0, peer_enables = 0 })
  local launched = cuda.jit and { module_loads = 3, launches = 7, live_modules = 0 } or {}
  for k, v in pairs(CLEAN) do launched[k] = v end
  child("modules", {}, launched, function(lines)
    if not cuda.jit then return end
    local loads = by_device(lines, "cuModuleLoadDataEx")
    -- the first kernel: one module per device (not 6); the second: one
    -- on device 1, loaded by the refused launch and kept
    eq(loads[0], 1, "modules loaded on device 0")
    eq(loads[1], 2, "modules loaded on device 1")
    local launches = by_device(lines, "cuLaunchKernel")
    eq(launches[0], 3, "launches in device 0's context")
    eq(launches[1], 4, "launches in device 1's context")
  end)
  child("errrec", { MOCK_CUDA_ERRREC = "5,12,9,0,8,0,0,3,0,0,1,0,0" })
  child("blas", { KJIT_CUBLAS = MODDIR .. "/libmockcublas.so",
    KJIT_CUFFT = MODDIR .. "/libmockcufft.so" }, CLEAN)
end

----------------------------------------------------------------------
-- this process: the simulator's one device
----------------------------------------------------------------------

test("the simulator: one device, use_device(0) is a scope, peers", function()
  local prev = cuda.simulate(true)
  local ok, err = pcall(function()
    do
      local _ <close> = cuda.use_device(0)
      eq(cuda.current_device(), 0, "device 0")
      eq(cuda.get_current_device().simulator, true, "get_current_device() in the simulator")
    end
    raises("use_device: device 1 out of range (the simulator has one device, 0)",
      function() cuda.use_device(1) end)
    eq(cuda.can_access_peer(0, 0), true, "itself")
    raises("can_access_peer: device 1 out of range (1 device: 0 to 0)",
      function() cuda.can_access_peer(0, 1) end)
    cuda.enable_peer_access(0)
    local a = cuda.to_device(kjit.array({ 1, 2, 3 }))
    local b = cuda.device_array(3)
    b:copy_to_device(a)
    eq(b:copy_to_host()[3], 3.0, "copy_to_device")
  end)
  cuda.simulate(prev)
  if not ok then error(err, 0) end
end)
