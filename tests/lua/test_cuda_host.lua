-- test_cuda_host.lua: the host side of kjit.cuda (src/host/cudadrv.c): device
-- arrays, copies, streams, events, devices, simulator mode and errors.
--
-- In this process: the machine's real driver state (none on CI) and the
-- simulator. The driver path runs in child processes against a fake driver,
-- tests/c/mock_libcuda.c (KJIT_LIBCUDA=<build>/libmockcuda.so): the harness
-- re-runs this file with KJIT_TEST_CUDA_CHILD=<suite>; each child test is
-- reported here under its own name, and the mock's exit report (live
-- allocations, bad frees, bad copies, leaked streams/events) is checked.
local kjit = require "kjit"
local cuda = kjit.cuda

local CHILD = os.getenv("KJIT_TEST_CUDA_CHILD")
local MODDIR, HARNESS, THIS, LUA = arg[1], arg[0], arg[2], arg[-1]
local MOCK = MODDIR .. "/libmockcuda.so"
local STUB = "/usr/local/cuda/lib/stubs/libcuda.so"
local MiB = 1 << 20

local ALL = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64" }
local INTVALS = { 0, 1, -1, 127, -128, 255, 256, 32767, -32768, 65535, 0x7fffffff,
  -0x80000000, 0xffffffff, math.maxinteger, math.mininteger, 12345678901, -7 }
local FLTVALS = { 0.0, -0.0, 1.5, -2.25, 1 / 0, -1 / 0, 0 / 0, 1e-310, math.pi,
  3.4e38, 1e300, -1e-45, 2.0 ^ 53 + 2, 0.1 }
local SIZEOF = { i8 = 1, u8 = 1, i16 = 2, u16 = 2, i32 = 4, u32 = 4, i64 = 8, u64 = 8,
  f32 = 4, f64 = 8 }
local SHAPES = { { 7 }, { 3, 4 }, { 2, 3, 4 }, { 2, 1, 3, 2 }, { 0 }, { 3, 0 }, { 1 } }

local function prod(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- A host array of dtype t and shape filled with edge values (stored with
-- kjit's store rules: wrapped for narrow ints, rounded for f32).
local function sample(t, shape)
  local vals = t:sub(1, 1) == "f" and FLTVALS or INTVALS
  local flat = kjit.empty(prod(shape), t)
  for i = 1, #flat do flat[i] = vals[(i - 1) % #vals + 1] end
  return flat:reshape(shape)
end

local function flat(a) return a:reshape({ a.size }) end

-- Same dtype, same shape, every element the same value (NaN, -0.0 exact).
local function same_array(got, want, what)
  what = what or "array"
  eq(kjit.isarray(got), true, what .. " is a kjit.array")
  eq(got.dtype, want.dtype, what .. " dtype")
  eq(got.ndim, want.ndim, what .. " ndim")
  for k = 1, want.ndim do eq(got.shape[k], want.shape[k], what .. " shape[" .. k .. "]") end
  local g, w = flat(got), flat(want)
  for i = 1, #w do eq(g[i], w[i], what .. "[" .. i .. "]") end
end

local function same_shape(got, want, what)
  eq(#got, #want, what .. " ndim")
  for k = 1, #want do eq(got[k], want[k], what .. "[" .. k .. "]") end
end

-- Every dtype and shape goes to the device and back unchanged.
local function roundtrip_all(stream)
  for _, t in ipairs(ALL) do
    for _, shape in ipairs(SHAPES) do
      local h = sample(t, shape)
      local d = cuda.to_device(h, stream)
      eq(d.dtype, t, "dtype")
      same_shape(d.shape, shape, "shape")
      eq(#d, shape[1], "#d")
      eq(d.size, prod(shape), "size")
      eq(d.nbytes, prod(shape) * SIZEOF[t], "nbytes")
      if stream then stream:synchronize() end
      same_array(d:copy_to_host(nil, stream), h, t .. " round trip")
      -- into an existing array: same object back, every element overwritten
      local into = kjit.zeros(shape, t)
      eq(d:copy_to_host(into, stream), into, "copy_to_host returns its argument")
      same_array(into, h, t .. " into")
    end
  end
end

-- device_array and device_array_like are zero-filled in every dtype.
local function zeros_all()
  for _, t in ipairs(ALL) do
    local d = cuda.device_array({ 5, 3 }, t)
    same_array(d:copy_to_host(), kjit.zeros({ 5, 3 }, t), t .. " zeros")
    local like = cuda.device_array_like(sample(t, { 2, 2 }))
    same_array(like:copy_to_host(), kjit.zeros({ 2, 2 }, t), t .. " like host")
    local like2 = cuda.device_array_like(cuda.to_device(sample(t, { 4 })))
    same_array(like2:copy_to_host(), kjit.zeros(4, t), t .. " like device")
  end
  eq(cuda.device_array(3).dtype, "f64", "default dtype")
end

-- Errors every mode reports the same way, located at the caller's line.
local function common_errors()
  local here = "test_cuda_host.lua:"
  local d = cuda.to_device(kjit.array({ 1, 2, 3 }, "f32"))
  raises("dtype mismatch: device array is f32, host array is f64",
    function() d:copy_to_host(kjit.zeros(3)) end)
  local m = raises("shape mismatch: device array {3}, host array {1, 3}",
    function() d:copy_to_host(kjit.zeros({ 1, 3 }, "f32")) end)
  truthy(m:find(here, 1, true), "location in: " .. m)
  raises("shape mismatch", function() d:copy_to_device(kjit.zeros(4, "f32")) end)
  raises("kjit.array expected, got number", function() cuda.to_device(42) end)
  raises("kjit.array expected, got table", function() cuda.to_device({ 1, 2 }) end)
  raises("kjit.array expected, got string", function() d:copy_to_host("x") end)
  raises("kjit.array or device array expected", function() cuda.device_array_like(7) end)
  raises("kjit.cuda stream expected, got table",
    function() cuda.to_device(kjit.zeros(2), {}) end)
  raises("kjit.cuda stream expected", function() d:copy_to_host(nil, cuda.event()) end)
  raises("negative dimension", function() cuda.device_array(-1) end)
  raises("too many dimensions", function() cuda.device_array({ 1, 1, 1, 1, 1 }) end)
  raises("unknown dtype 'c64'", function() cuda.device_array(3, "c64") end)
  m = raises("index 4 out of bounds [1, 3]", function() return d[4] end)
  truthy(m:find(here, 1, true), "location in: " .. m)
  raises("index 1.5 is not an integer", function() return d[1.5] end)
  raises("cannot be indexed with a boolean value", function() return d[true] end)
  raises("cannot assign to field 'shape' of a device array", function() d.shape = 2 end)
  raises("cannot assign a number to a row of a 2-D device array",
    function() cuda.device_array({ 2, 2 })[1] = 5 end)
  raises("cannot reshape a device array of size 3 into a shape of size 4",
    function() d:reshape({ 2, 2 }) end)
  raises("slice(2, 5) out of bounds for a device array of length 3", function() d:slice(2, 5) end)
  raises("works on 1-D device arrays only", function() cuda.device_array({ 2, 2 }):split(1) end)
  raises("a device array of the same dtype and shape expected",
    function() d:copy_to_device(cuda.device_array(4, "f32")) end)
  raises("device array has no field 'foo'", function() return d.foo end)
  raises("event #2 was never recorded", function()
    local e1 = cuda.event():record()
    return cuda.event_elapsed_time(e1, cuda.event())
  end)
  raises("kjit.cuda.event expected", function() cuda.event_elapsed_time(1, 2) end)
end

-- Device arrays, streams and events used after their __gc: a Lua error,
-- never a copy from or to released memory or a destroyed driver handle.
local function after_gc()
  local RELEASED = "array used after its memory was released"
  local d, d2, s, e = resurrected(function()
    return cuda.to_device(kjit.array({ 1, 2, 3 }, "f64")), cuda.device_array({ 2, 2 }, "i32"),
      cuda.stream(), cuda.event()
  end)
  local m = raises(RELEASED, function() return d:copy_to_host() end)
  truthy(m:find("test_cuda_host.lua:%d+:"), "location in: " .. m)
  raises(RELEASED, function() return d:copy_to_host(kjit.zeros(3)) end)
  raises(RELEASED, function() return d:copy_to_device(kjit.zeros(3)) end)
  raises(RELEASED, function() return d2:copy_to_host() end)
  eq(d.size, 3, "fields stay readable")
  raises("stream used after it was finalized", function() s:synchronize() end)
  raises("stream used after it was finalized", function() cuda.to_device(kjit.zeros(1), s) end)
  raises("event used after it was finalized", function() e:record() end)
  raises("event used after it was finalized", function() e:synchronize() end)
  raises("event used after it was finalized", function() return e:query() end)
  raises("event used after it was finalized", function()
    return cuda.event_elapsed_time(cuda.event():record(), e)
  end)
  if cuda.jit then
    local k, dk = resurrected(function()
      return cuda.jit(function(x) local i = cuda.grid(1) if i <= #x then x[i] = i end end),
        cuda.device_array(4, "f64")
    end)
    raises("kernel used after it was finalized", function() k[{ 1, 4 }](kjit.zeros(4)) end)
    raises("kernel used after it was finalized", function() k:compile("void(f64[:])") end)
    local live = cuda.jit(function(x) local i = cuda.grid(1) if i <= #x then x[i] = i end end)
    raises(RELEASED, function() live[{ 1, 4 }](dk) end)
  end
  cuda.synchronize()
end

local function fields_and_tostring(where)
  local d = cuda.device_array({ 3, 4 }, "f32")
  same_shape(d.shape, { 3, 4 }, "shape")
  eq(d.dtype, "f32", "dtype"); eq(d.ndim, 2, "ndim"); eq(d.size, 12, "size")
  eq(d.nbytes, 48, "nbytes"); eq(#d, 3, "#d"); eq(d.device, cuda.current_device(), "device")
  eq(tostring(d), "kjit.devarray(f32, {3, 4}) " .. where, "tostring")
  eq(cuda.is_device_array(d), true, "is_device_array")
  eq(cuda.is_device_array(kjit.zeros(1)), false, "host array is not")
  eq(cuda.is_device_array(nil), false, "nil is not")
  eq(getmetatable(d), "kjit.devarray", "metatable hidden")
  local z = cuda.device_array({ 3, 0 }, "i8")
  eq(#z, 3, "#z"); eq(z.size, 0, "z.size")
  same_array(z:copy_to_host(), kjit.zeros({ 3, 0 }, "i8"), "zero-size")
end

-- Views (rows, reshapes) are contiguous: they copy like any array, and a
-- copy into a row view writes into its base.
local function views_copy()
  local m = sample("i32", { 3, 4 })
  local d = cuda.to_device(m[2])
  same_array(d:copy_to_host(), m[2], "row")
  local into = kjit.zeros({ 2, 4 }, "i32")
  d:copy_to_host(into[2])
  same_array(into[2], m[2], "into a row view")
  same_array(into[1], kjit.zeros(4, "i32"), "other row untouched")
  same_array(cuda.to_device(m:reshape({ 12 })):copy_to_host(), m:reshape({ 12 }), "reshape")
end

-- Device arrays on the host as numba-cuda's (issue 25, item 8): each
-- d[i] read or write copies one element; row views, slices, reshape,
-- ravel and split are views (writes through them reach the array);
-- copy_to_device from a device array; ipairs. The model: the same
-- operations on a kjit array.
local function host_indexing()
  local h = sample("i32", { 3, 4 })
  local d = cuda.to_device(h)
  for i = 1, 3 do for j = 1, 4 do eq(d[i][j], h[i][j], "d[" .. i .. "][" .. j .. "]") end end
  d[2][3] = 300; h[2][3] = 300
  d[3] = kjit.array({ 7, 8, 9, 10 }, "i32"); h[3] = kjit.array({ 7, 8, 9, 10 }, "i32")
  same_array(d:copy_to_host(), h, "after element and row writes")
  d[1] = cuda.to_device(kjit.array({ -1, -2, -3, -4 }, "i32")); h[1] = kjit.array({ -1, -2, -3, -4 }, "i32")
  same_array(d:copy_to_host(), h, "a row from a device array")
  local r = d:ravel()
  eq(r.ndim, 1); eq(#r, 12)
  local hr = h:reshape({ 12 })
  local seen = {}
  for i, v in ipairs(r) do seen[i] = v end
  eq(#seen, 12, "ipairs ends after #r")
  for i = 1, 12 do eq(seen[i], hr[i], "ipairs value " .. i) end
  local v = d:reshape({ 4, 3 })
  same_array(v:copy_to_host(), h:reshape({ 4, 3 }), "reshape")
  v[4][3] = 55; hr[12] = 55
  local s = d:slice(2, 3)
  same_array(s:copy_to_host(), h:slice(2, 3), "slice")
  eq(#d:slice(2, 1), 0, "an empty slice")
  s[1][1] = 66; h[2][1] = 66
  same_array(d:copy_to_host(), h, "writes through views")
  local parts = r:split(5)
  eq(#parts, 3); eq(#parts[1], 5); eq(#parts[3], 2)
  same_array(parts[3]:copy_to_host(), hr:slice(11, 12), "split's last part")
  -- elements follow the store rules of kjit arrays
  local u = cuda.device_array(2, "u8")
  u[1] = 300; eq(u[1], 44)
  local f = cuda.device_array(1, "f32")
  f[1] = 0.1; eq(f[1], kjit.array({ 0.1 }, "f32")[1])
  raises("number has no integer representation", function() u[2] = 1.5 end)
  -- a view outlives its array's variable
  local keep = cuda.to_device(kjit.arange(1, 11, "f64")):slice(9)
  collectgarbage(); collectgarbage()
  eq(keep[2], 10.0, "view of a collected variable")
  -- device to device
  local e = cuda.device_array_like(d)
  eq(e:copy_to_device(d), e, "returns self")
  same_array(e:copy_to_host(), h, "copy_to_device(device array)")
  local st = cuda.stream()
  e:copy_to_device(cuda.device_array_like(d), st); st:synchronize()
  same_array(e:copy_to_host(), kjit.zeros({ 3, 4 }, "i32"), "on a stream")
  -- the default stream, and profiling calls that do nothing harmful
  local ds = cuda.default_stream()
  d:copy_to_host(nil, ds); ds:synchronize()
  cuda.profile_start(); cuda.profile_stop()
  truthy(#cuda.list_devices() >= 1, "list_devices")
  eq(#cuda.gpus, #cuda.list_devices(), "#cuda.gpus")
  eq(cuda.gpus[0].id, 0, "cuda.gpus[0] is device 0")
  eq(cuda.gpus.current.id, cuda.current_device(), "cuda.gpus.current")
  raises("no such device", function() return cuda.gpus[#cuda.gpus] end)
  raises("cuda.gpus is read-only", function() cuda.gpus[0] = 1 end)
end

-- cuda.close(): numba-cuda's semantics. Every object made before it is
-- dead (its memory or handle went with the context): using it raises,
-- and its __gc calls nothing (the mock counts a free or destroy of a dead
-- handle); the next call makes a fresh context. The model of the kernel's
-- results is plain Lua on a copy.
local function close_semantics()
  local h = kjit.arange(1, 9, "f64")
  local d = cuda.to_device(h)
  local row = d:reshape({ 2, 4 })[2]
  local s, e = cuda.stream(), cuda.event()
  local twice = cuda.jit and cuda.jit(function(a)
    local i = cuda.grid(1)
    if i <= #a then a[i] = 2 * a[i] end
  end)
  local want = kjit.zeros(8)
  for i = 1, 8 do want[i] = 2 * h[i] end
  -- (the mock driver runs no kernel: results are checked in the simulators)
  local runs = twice and cuda.simulating()
  if twice then twice[{ 1, 8 }](d) end
  if runs then same_array(d:copy_to_host(), want, "before close") end
  local pinned, managed = cuda.pinned_array(4), cuda.managed_array(4, "f32")
  local mapped = cuda.mapped_array(4)
  local reg = cuda.pinned(kjit.zeros(8))
  pinned[1] = 5
  cuda.close()
  local dead = "was made before cuda.close(), which released it with the device's context"
  local m = raises("device array " .. dead, function() return d:copy_to_host() end)
  truthy(m:find("test_cuda_host.lua:%d+:"), "located: " .. m)
  raises(dead, function() return d[1] end)
  raises(dead, function() d[1] = 1 end)
  raises(dead, function() return row[1] end)
  raises(dead, function() return d:reshape({ 4, 2 }) end)
  raises(dead, function() d:copy_to_device(h) end)
  raises("stream " .. dead, function() s:synchronize() end)
  raises("event " .. dead, function() e:record() end)
  raises(dead, function() cuda.device_array(8):copy_to_device(d) end)
  if twice then raises("argument #1: this device array " .. dead, function() twice[{ 1, 8 }](d) end) end
  if not cuda.simulating() then   -- the simulator's are plain kjit arrays
    for _, a in ipairs({ pinned, managed, mapped }) do
      raises("array used after its memory was released", function() return a[1] end)
    end
  end
  reg:close()
  -- a fresh context: the same kernel on new arrays, the default stream
  local d2 = cuda.to_device(h)
  if twice then twice[{ 1, 8 }](d2) end
  if runs then same_array(d2:copy_to_host(), want, "after close") end
  local s2 = cuda.stream()
  d2:copy_to_host(nil, s2); s2:synchronize()
  d2:copy_to_host(nil, cuda.default_stream())
  cuda.close(); cuda.close()      -- twice, then collect the dead objects
  d, row, s, e, pinned, managed, mapped, reg, d2, s2 = nil
  collectgarbage(); collectgarbage()
  local d3 = cuda.to_device(h)
  same_array(d3:copy_to_host(), h, "a third context")
end

-- pinned, mapped and managed arrays are kjit arrays (the model: kjit.zeros
-- used the same way); cuda.pinned registers a host array until closed
local function host_memory()
  for _, make in ipairs{ cuda.pinned_array, cuda.mapped_array, cuda.managed_array } do
    local a = make({ 2, 3 }, "f32")
    truthy(kjit.isarray(a), "a kjit array")
    same_shape(a.shape, { 2, 3 }, "shape"); eq(a.dtype, "f32")
    same_array(a, kjit.zeros({ 2, 3 }, "f32"), "zeroed")
    a[2][3] = 0.1
    eq(a[2][3], kjit.array({ 0.1 }, "f32")[1], "store rules")
    local d = cuda.to_device(a)
    same_array(d:copy_to_host(), a, "copies")
  end
  eq(#cuda.pinned_array(5), 5); eq(cuda.pinned_array(5).dtype, "f64")
  raises("negative dimension", function() cuda.mapped_array(-1) end)
  local h = kjit.arange(10)
  do
    local p <close> = cuda.pinned(h)
    local d = cuda.to_device(h)
    same_array(d:copy_to_host(), h, "copy of pinned memory")
  end
  local p = cuda.pinned(h); p:close(); p:close()   -- closing twice is harmless
  raises("kjit.array expected", function() cuda.pinned(42) end)
end

local function copy_to_device_works()
  local d = cuda.device_array(4, "i16")
  eq(d:copy_to_device(kjit.array({ 1, -2, 3, -4 }, "i16")), d, "returns self")
  same_array(d:copy_to_host(), kjit.array({ 1, -2, 3, -4 }, "i16"), "copied")
end

local function streams_and_events()
  local s = cuda.stream()
  truthy(tostring(s):find("kjit.cuda.stream", 1, true), "stream tostring")
  local e1, e2 = cuda.event(), cuda.event()
  eq(e1:record(s), e1, "record returns the event")
  local d = cuda.to_device(sample("f64", { 100 }), s)
  local h = d:copy_to_host(nil, s)
  local t0 = os.clock()
  while os.clock() - t0 < 0.002 do end
  e2:record(s)
  s:synchronize()
  e2:synchronize()
  eq(e2:query(), true, "query after synchronize")
  local ms = cuda.event_elapsed_time(e1, e2)
  eq(math.type(ms), "float", "elapsed is a float")
  truthy(ms >= 0 and ms < 60000, "elapsed " .. ms .. " ms in range")
  eq(e1:elapsed_time(e2), ms, "method form")
  same_array(h, sample("f64", { 100 }), "async round trip")
  cuda.to_device(kjit.zeros(3), 0)    -- 0 is the default stream, as in Numba
  cuda.event():record()               -- default stream
  cuda.synchronize()
end

-- Runs fn with the simulator mode set, restoring the previous one.
local function with_sim(mode, fn)
  local prev = cuda.simulate(mode)
  local ok, err = pcall(fn)
  cuda.simulate(prev)
  if not ok then error(err, 0) end
end

local function sim_test(name, fn)
  test(name, function() with_sim(true, fn) end)
end

local SUITES = {}

----------------------------------------------------------------------
-- child suites (run with the mock driver or a broken one)
----------------------------------------------------------------------

SUITES.main = function()
  test("driver available", function()
    eq(cuda.is_available(), true, "is_available")
    eq(cuda.simulating(), false, "not simulating")
  end)

  test("detect and devices", function()
    local ok, text = cuda.detect()
    eq(ok, true, "detect")
    truthy(text:find("2 CUDA devices, driver 13.0", 1, true), text)
    truthy(text:find("id 1  Mock GPU 1  compute capability 9.0  132 SMs", 1, true), text)
    local devs = cuda.devices()
    eq(#devs, 2, "#devices")
    eq(devs[2].id, 1, "id"); eq(devs[2].name, "Mock GPU 1", "name")
    same_shape(devs[1].compute_capability, { 9, 0 }, "cc")
    eq(devs[1].multiprocessors, 132, "SMs"); eq(devs[1].total_memory, 256 * MiB, "memory")
    eq(devs[1].simulator, false, "not simulated")
  end)

  test("round trip of every dtype and shape", function() roundtrip_all() end)
  test("round trip on a stream", function() roundtrip_all(cuda.stream()) end)
  test("device_array is zero-filled (the mock fills new memory with 0xA5)", zeros_all)
  test("fields and tostring", function() fields_and_tostring("on device 0") end)
  test("copy_to_device", copy_to_device_works)
  test("device arrays indexed and viewed on the host", host_indexing)
  test("cuda.close() releases the context; a later call makes a new one", close_semantics)
  test("pinned, mapped and managed arrays", function()
    host_memory()
    collectgarbage(); collectgarbage(); cuda.synchronize()
  end)
  test("external_stream wraps a handle made elsewhere, never destroys it", function()
    local s = cuda.stream()
    local xs = cuda.external_stream(s:handle())
    local d = cuda.to_device(kjit.arange(4), xs)
    xs:synchronize()
    same_array(d:copy_to_host(), kjit.arange(4), "copied on it")
    xs = nil; collectgarbage()   -- the mock counts a second destroy as a bad handle
    s:synchronize()
    raises("a non-null CUstream handle expected", function() cuda.external_stream(0) end)
  end)
  test("views copy like arrays", views_copy)
  test("errors", common_errors)
  test("streams and events", streams_and_events)
  test("device arrays, streams, events and kernels used after __gc: errors", after_gc)

  test("empty arrays allocate nothing", function()
    local free0 = cuda.mem_info()
    local z = cuda.device_array(0, "f64")
    local z2 = cuda.to_device(kjit.zeros({ 2, 0 }, "u8"))
    eq(cuda.mem_info(), free0, "free memory")
    same_array(z2:copy_to_host(), kjit.zeros({ 2, 0 }, "u8"), "copy")
    eq(#z, 0, "#z")
  end)

  test("memory is freed after GC, deferred until synchronize", function()
    collectgarbage(); cuda.synchronize()
    local free0, total = cuda.mem_info()
    eq(free0, total, "nothing allocated at start")
    local keep = {}
    for i = 1, 10 do keep[i] = cuda.device_array(MiB, "u8") end
    eq(cuda.mem_info(), total - 10 * MiB, "10 MiB in use")
    keep = nil
    collectgarbage()
    eq(cuda.mem_info(), total - 10 * MiB, "collected but deferred")
    cuda.synchronize()
    eq(cuda.mem_info(), total, "freed at synchronize")
  end)

  test("the deferred queue stays bounded without synchronize", function()
    collectgarbage(); cuda.synchronize()
    local _, total = cuda.mem_info()
    for _ = 1, 300 do
      local d = cuda.device_array(1024, "u8")
      d = nil
      collectgarbage()
    end
    local used = total - cuda.mem_info()
    truthy(used <= 66 * 1024, "at most 65 blocks pending, got " .. used .. " bytes")
    cuda.synchronize()
    eq(cuda.mem_info(), total, "all freed")
  end)

  test("out of memory: a full GC and the deferred queue are tried first", function()
    collectgarbage(); cuda.synchronize()
    collectgarbage("stop")   -- only kjit's retry can free the dead arrays
    local ok, err = pcall(function()
      for _ = 1, 12 do cuda.device_array(64 * MiB, "u8") end   -- 768 MiB on 256
    end)
    collectgarbage("restart")
    if not ok then error(err, 0) end
  end)

  test("out of memory: the driver's error, located", function()
    local m = raises("kjit.cuda: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY: out of memory "
      .. "(allocating 1099511627776 bytes on device 0)",
      function() cuda.device_array(1 << 40, "u8") end)
    truthy(m:find("^[^:]*test_cuda_host.lua:%d+: "), "location in: " .. m)
  end)

  test("select_device: arrays, streams and events remember their device", function()
    local d0 = cuda.to_device(kjit.array({ 1, 2, 3 }, "i32"))
    local s0, e0 = cuda.stream(), cuda.event()
    eq(cuda.select_device(1), 0, "returns the previous device")
    eq(cuda.current_device(), 1, "current")
    local msg = "this device array is on device 0 but the current device is 1 " ..
      "(cuda.use_device(0) or cuda.select_device(0) selects it)"
    local m = raises(msg, function() d0:copy_to_host() end)
    truthy(m:find("test_cuda_host.lua:", 1, true), "location in: " .. m)
    raises(msg, function() d0:copy_to_device(kjit.zeros(3, "i32")) end)
    raises("this stream is on device 0", function() cuda.to_device(kjit.zeros(1), s0) end)
    raises("this stream is on device 0", function() s0:synchronize() end)
    raises("this event is on device 0", function() e0:record() end)
    local d1 = cuda.to_device(kjit.array({ 4, 5 }, "u16"))
    eq(d1.device, 1, "new array on device 1")
    eq(tostring(d1), "kjit.devarray(u16, {2}) on device 1", "tostring")
    same_array(d1:copy_to_host(), kjit.array({ 4, 5 }, "u16"), "device 1 round trip")
    local s1 = cuda.stream()
    raises("this stream is on device 1", function()
      cuda.select_device(0); d0:copy_to_host(nil, s1)
    end)
    eq(cuda.select_device(0), 0, "back on 0")
    same_array(d0:copy_to_host(nil, s0), kjit.array({ 1, 2, 3 }, "i32"), "device 0 again")
    raises("this device array is on device 1", function() d1:copy_to_host() end)
  end)

  test("select_device: out of range and bad arguments", function()
    raises("select_device: device 2 out of range (2 CUDA devices: 0 to 1)",
      function() cuda.select_device(2) end)
    raises("device -1 out of range", function() cuda.select_device(-1) end)
    raises("number has no integer representation", function() cuda.select_device(1.5) end)
    raises("number expected, got no value", function() cuda.select_device() end)
    eq(cuda.current_device(), 0, "unchanged")
  end)

  test("driver objects are refused in simulator mode", function()
    local d, s, e = cuda.device_array(2), cuda.stream(), cuda.event()
    with_sim(true, function()
      raises("this device array lives on a GPU and cannot be used in simulator mode",
        function() d:copy_to_host() end)
      raises("this stream lives on a GPU", function() s:synchronize() end)
      raises("this event lives on a GPU", function() e:record() end)
      -- simulator arrays are host memory, not driver allocations
      local sd = cuda.to_device(kjit.array({ 9 }, "u8"))
      eq(tostring(sd), "kjit.devarray(u8, {1}) in the simulator", "sim array")
    end)
  end)

  test("mem_info", function()
    local fr, total = cuda.mem_info()
    eq(total, 256 * MiB, "total"); truthy(fr <= total, "free <= total")
  end)
end

-- Every allocation fails: the driver's message, no leak, no crash.
SUITES.allocfail = function()
  test("OOM error names the driver error and the size", function()
    local m = raises("kjit.cuda: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY: out of memory " ..
      "(allocating 80 bytes on device 0)", function() cuda.device_array(10) end)
    truthy(m:find("test_cuda_host.lua:%d+:"), "location in: " .. m)
    raises("CUDA_ERROR_OUT_OF_MEMORY", function() cuda.to_device(kjit.zeros(3)) end)
    raises("CUDA_ERROR_OUT_OF_MEMORY", function() cuda.device_array_like(kjit.zeros(3)) end)
  end)
  test("empty arrays need no allocation", function()
    eq(cuda.device_array(0).size, 0, "size")
  end)
end

-- A failure after the allocation: the block must still be freed.
SUITES.memsetfail = function()
  test("memset failure is raised and the block is released", function()
    collectgarbage(); cuda.synchronize()
    local _, total = cuda.mem_info()
    raises("kjit.cuda: cuMemsetD8: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory " ..
      "access was encountered", function() cuda.device_array(1000, "f32") end)
    collectgarbage(); cuda.synchronize()
    eq(cuda.mem_info(), total, "freed")
  end)
end

SUITES.copyfail = function()
  test("copy failures are raised", function()
    raises("kjit.cuda: cuMemcpyHtoD: CUDA_ERROR_INVALID_VALUE: invalid argument",
      function() cuda.to_device(kjit.zeros(3)) end)
    raises("cuMemcpyHtoDAsync: CUDA_ERROR_UNKNOWN",
      function() cuda.to_device(kjit.zeros(3), cuda.stream()) end)
    local d = cuda.device_array(3)
    raises("cuMemcpyDtoH: CUDA_ERROR_INVALID_VALUE", function() d:copy_to_host() end)
  end)
end

SUITES.syncfail = function()
  test("synchronize raises the driver's error", function()
    raises("kjit.cuda: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS",
      function() cuda.synchronize() end)
    raises("kjit.cuda: cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS",
      function() cuda.stream():synchronize() end)
    raises("kjit.cuda: cuEventCreate: CUDA_ERROR_OUT_OF_MEMORY", function() cuda.event() end)
  end)
end

-- The launch path of kernel.c reaches the driver through kcu_module_load,
-- kcu_get_function and kcu_launch (the mock runs nothing: only the calls,
-- their errors and the cleanup are checked here).
local function kernel_or_skip()
  if not cuda.jit then skip("cuda.jit is not built in") end
  return cuda.jit(function(x, out)
    local i = cuda.grid(1)
    if i <= #x then out[i] = 2 * x[i] end
  end)
end

-- kernel.c passes mapped and managed arrays by their device address:
-- a launch allocates no temporary device arrays for them, where host
-- arrays are copied through some (the differential)
SUITES.inplace = function()
  test("kernels take mapped and managed arrays in place", function()
    local k = kernel_or_skip()
    for _, make in ipairs{ cuda.mapped_array, cuda.managed_array } do
      local x, out = make(3, "f32"), make(3, "f32")
      k[{ 1, 32 }](x, out)
      collectgarbage(); cuda.synchronize()
      local free0 = cuda.mem_info()
      k[{ 1, 32 }](x, out)
      eq(cuda.mem_info(), free0, "no temporary device arrays")
    end
    local hx, hout = kjit.zeros(3, "f32"), kjit.zeros(3, "f32")
    k[{ 1, 32 }](hx, hout)
    collectgarbage(); cuda.synchronize()
    local free0 = cuda.mem_info()
    k[{ 1, 32 }](hx, hout)
    truthy(cuda.mem_info() < free0, "host arrays go through device arrays")
  end)
end

local function launch_once(k)
  local dx = cuda.to_device(kjit.array({ 1, 2, 3 }, "f32"))
  k[{ 1, 32 }](dx, cuda.device_array_like(dx))
  cuda.synchronize()
end

SUITES.launch = function()
  test("a kernel launch loads a module and launches it", function()
    local k = kernel_or_skip()
    launch_once(k)
    launch_once(k)
  end)
  test("host buffers are copied to the device and back around a launch", function()
    local k = kernel_or_skip()
    local x, out = kjit.array({ 1, 2, 3 }, "f32"), kjit.array({ 7, 8, 9 }, "f32")
    k[{ 1, 32 }](x, out)
    -- the mock runs no kernel: out comes back as it went (copied both ways)
    eq(out[1], 7.0, "out[1]"); eq(out[3], 9.0, "out[3]")
    eq(x[2], 2.0, "x[2]")
  end)
end

-- MOCK_CUDA_ERRREC makes the mock fill the kernel's error record as a
-- failing thread would: kind 5 (bounds), line 12, index 9, upper bound 8,
-- thread (3,0,0), block (1,0,0).
SUITES.errrec = function()
  test("a kernel's recorded error is raised at the next synchronize", function()
    local k = kernel_or_skip()
    local dx = cuda.to_device(kjit.array({ 1, 2, 3 }, "f32"))
    k[{ 1, 32 }](dx, cuda.device_array_like(dx))
    local m = raises("index 9 out of bounds [1, 8] (in thread (3,0,0) of block (1,0,0))",
      function() cuda.synchronize() end)
    truthy(m:find("test_cuda_host.lua:12: ", 1, true), m)
    cuda.synchronize()   -- raised once, then the record is clean again
  end)
  test("... and by a launch that copies host buffers back", function()
    local k = kernel_or_skip()
    raises("index 9 out of bounds [1, 8]", function()
      k[{ 1, 32 }](kjit.array({ 1, 2, 3 }, "f32"), kjit.zeros(3, "f32"))
    end)
  end)
end

SUITES.modfail = function()
  test("module load failure carries the JIT log", function()
    local k = kernel_or_skip()
    local m = raises("kjit.cuda: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX: a PTX JIT " ..
      "compilation failed\nptxas application ptx input, line 1; error   : mock syntax error",
      function() launch_once(k) end)
    truthy(m:find("test_cuda_host.lua:%d+:"), "location in: " .. m)
  end)
end

SUITES.funcfail = function()
  test("cuModuleGetFunction failure names the kernel", function()
    local k = kernel_or_skip()
    local m = raises("kjit.cuda: cuModuleGetFunction('", function() launch_once(k) end)
    truthy(m:find("'): CUDA_ERROR_NOT_FOUND: named symbol not found", 1, true), m)
  end)
  test("a second launch after a failed cuModuleGetFunction fails the same way", function()
    local k = kernel_or_skip()
    pcall(launch_once, k)
    local ok, m = pcall(launch_once, k)
    -- a half-prepared spec is prepared again (never a launch with a NULL function)
    truthy(not ok and m:find("cuModuleGetFunction('", 1, true), tostring(m))
  end)
end

SUITES.launchfail = function()
  test("launch failure: the driver's error and the configuration", function()
    local k = kernel_or_skip()
    raises("kjit.cuda: cuLaunchKernel: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many " ..
      "resources requested for launch (grid {1, 1, 1}, block {32, 1, 1}, 0 shared bytes)",
      function() launch_once(k) end)
  end)
end

-- The driver loads but is unusable: is_available says why, calls raise it.
local function unusable(reason, prefix)
  return function()
    test("is_available is false with the reason", function()
      local ok, why = cuda.is_available()
      eq(ok, false, "available")
      truthy(why:find(reason, 1, true), "reason: " .. tostring(why))
    end)
    test("host calls raise a clear error", function()
      local want = prefix .. " (" .. reason
      for name, fn in pairs({
        to_device = function() cuda.to_device(kjit.zeros(2)) end,
        device_array = function() cuda.device_array(2) end,
        device_array_like = function() cuda.device_array_like(kjit.zeros(2)) end,
        stream = function() cuda.stream() end,
        event = function() cuda.event() end,
        synchronize = function() cuda.synchronize() end,
        mem_info = function() cuda.mem_info() end,
        select_device = function() cuda.select_device(0) end,
      }) do
        local m = raises(want, fn)
        truthy(m:find("KJIT_CUDASIM=1 or call cuda.simulate(true)", 1, true), name .. ": " .. m)
        truthy(m:find("test_cuda_host.lua:%d+:"), name .. " location: " .. m)
      end
    end)
    test("detect returns false and the reason; devices is empty", function()
      local ok, why = cuda.detect()
      eq(ok, false, "detect"); truthy(why:find(reason, 1, true), why)
      eq(#cuda.devices(), 0, "#devices")
    end)
    test("the simulator still works", function()
      with_sim(true, function()
        same_array(cuda.to_device(kjit.array({ 1, 2 }, "i8")):copy_to_host(),
          kjit.array({ 1, 2 }, "i8"), "round trip")
      end)
    end)
  end
end

SUITES.initfail = unusable("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
  "kjit.cuda: CUDA is not usable")
SUITES.nodevice = SUITES.initfail
SUITES.stub = unusable("CUDA_ERROR_STUB_LIBRARY: CUDA driver is a stub library",
  "kjit.cuda: CUDA is not usable")
SUITES.badpath = unusable("KJIT_LIBCUDA=/nonexistent/libcuda.so.1 could not be loaded",
  "kjit.cuda: no CUDA driver")

-- KJIT_CUDASIM read at first use.
for value, want in pairs({ ["1"] = true, interpret = "interpret", ["0"] = false }) do
  SUITES["env_" .. value] = function()
    test("KJIT_CUDASIM=" .. value .. " sets the mode", function()
      eq(cuda.simulating(), want, "simulating")
      eq(cuda.simulate(false), want, "simulate returns the previous mode")
    end)
  end
end

-- The simulator with a driver present uses no driver memory (checked in
-- the report: allocs=0).
SUITES.simdriver = function()
  test("simulator arrays with a driver loaded", function()
    eq(cuda.is_available(), true, "real driver state")
    eq(cuda.simulating(), true, "simulating")
    roundtrip_all()
    streams_and_events()
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
  -- The harness ends with os.exit, which skips lua_close: release what the
  -- tests dropped so the mock's exit report can count leaks.
  if cuda.is_available() and not cuda.simulating() and CHILD ~= "syncfail" then
    test("every block is released after GC and synchronize", function()
      collectgarbage(); collectgarbage()
      for i = #cuda.devices() - 1, 0, -1 do
        cuda.select_device(i)
        cuda.synchronize()
        local fr, total = cuda.mem_info()
        eq(fr, total, "free memory on device " .. i)
      end
    end)
  end
  return
end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function file_exists(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

-- Runs suite in a child with env (a table); mirrors its tests here and
-- checks the mock's report against want_report (key -> value).
local function child(suite, env, want_report)
  local report = os.tmpname()
  local parts = { "KJIT_TEST_CUDA_CHILD=" .. suite, "MOCK_CUDA_REPORT=" .. q(report),
    "KJIT_CUDASIM=" .. q(env.KJIT_CUDASIM or "") }
  for k, v in pairs(env) do
    if k ~= "KJIT_CUDASIM" then parts[#parts + 1] = k .. "=" .. q(v) end
  end
  local cmd = table.concat(parts, " ") .. " " .. q(LUA) .. " " .. q(HARNESS) .. " "
    .. q(MODDIR) .. " " .. q(THIS) .. " 2>&1"
  local p = io.popen(cmd)
  local out = p:read("a")
  local okexit = p:close()
  -- mirror: PASS lines, FAIL blocks (with their tracebacks), SKIP lines
  local entries, cur, summary = {}, nil, nil
  for line in out:gmatch("[^\n]+") do
    local kind, rest = line:match("^(%u%u%u%u) (.*)$")
    if kind == "PASS" or kind == "FAIL" or kind == "SKIP" then
      cur = { kind = kind, text = rest }
      entries[#entries + 1] = cur
    elseif line:match("^test_cuda_host: %d+ passed") then
      summary = line
    elseif cur and cur.kind == "FAIL" then
      cur.text = cur.text .. "\n" .. line
    end
  end
  for _, e in ipairs(entries) do
    if e.kind == "PASS" then
      test(suite .. ": " .. e.text, function() end)
    elseif e.kind == "SKIP" then
      local name, why = e.text:match("^(.-): (.*)$")
      test(suite .. ": " .. (name or e.text), function() skip(why or "") end)
    else
      local name, msg = e.text:match("^(.-): (.*)$")
      test(suite .. ": " .. (name or e.text), function() error(msg or e.text, 0) end)
    end
  end
  test(suite .. ": child ran to the end", function()
    truthy(summary and summary:find(" 0 failed", 1, true) and okexit,
      "child output:\n" .. out)
  end)
  if want_report then
    test(suite .. ": mock driver report", function()
      local f = io.open(report)
      truthy(f, "no report from the mock (output:\n" .. out .. ")")
      local got = {}
      for k, v in f:read("a"):gmatch("([%w_]+)=(%d+)") do got[k] = tonumber(v) end
      f:close()
      for k, v in pairs(want_report) do eq(got[k], v, "report " .. k) end
    end)
  end
  os.remove(report)
end

-- Runs a plain script (no harness, so lua.c closes the state at the end)
-- against the mock and returns the mock's report as a table.
local function run_script(code, env) return require("mockcuda").run_script(MODDIR, LUA, code, env) end

----------------------------------------------------------------------
-- this process: the real driver state, and the simulator
----------------------------------------------------------------------

test("kjit.cuda has the host API", function()
  for _, f in ipairs({ "is_available", "detect", "devices", "select_device",
    "current_device", "to_device", "device_array", "device_array_like",
    "is_device_array", "synchronize", "stream", "event", "event_elapsed_time",
    "mem_info", "simulate", "simulating" }) do
    eq(type(cuda[f]), "function", "cuda." .. f)
  end
end)

test("is_available: a boolean, and a reason when false", function()
  local ok, why = cuda.is_available()
  eq(type(ok), "boolean", "result")
  if not ok then eq(type(why), "string", "reason"); truthy(#why > 0, "reason") end
end)

test("no driver on this machine: clear errors", function()
  local ok = cuda.is_available()
  if ok then skip("a CUDA driver is present") end
  if cuda.simulating() then skip("KJIT_CUDASIM is set") end
  local _, why = cuda.is_available()
  local m = raises("kjit.cuda: ", function() cuda.to_device(kjit.zeros(2)) end)
  truthy(m:find(why, 1, true), "reason in: " .. m)
  truthy(m:find("set KJIT_CUDASIM=1 or call cuda.simulate(true) to run on the CPU", 1, true), m)
  truthy(m:find("test_cuda_host.lua:%d+:"), "location in: " .. m)
  if why == "libcuda.so.1 not found" then
    raises("kjit.cuda: no CUDA driver (libcuda.so.1 not found)", function() cuda.stream() end)
  end
end)

test("simulate and simulating", function()
  local start = cuda.simulating()
  eq(cuda.simulate(true), start, "returns the previous mode")
  eq(cuda.simulating(), true, "on")
  eq(cuda.simulate("interpret"), true, "previous")
  eq(cuda.simulating(), "interpret", "interpret")
  eq(cuda.simulate(false), "interpret", "previous")
  eq(cuda.simulating(), false, "off")
  raises('expected true, false or "interpret"', function() cuda.simulate("fast") end)
  raises('expected true, false or "interpret"', function() cuda.simulate() end)
  cuda.simulate(start)
end)

sim_test("simulator: round trip of every dtype and shape", function() roundtrip_all() end)
sim_test("simulator: round trip on a stream", function() roundtrip_all(cuda.stream()) end)
sim_test("simulator: device_array is zero-filled", zeros_all)
sim_test("simulator: fields and tostring", function() fields_and_tostring("in the simulator") end)
sim_test("simulator: copy_to_device", copy_to_device_works)
sim_test("simulator: device arrays indexed and viewed on the host", host_indexing)
sim_test("simulator: cuda.close()", close_semantics)
test("interpreted simulator: cuda.close()", function() with_sim("interpret", close_semantics) end)
sim_test("simulator: pinned, mapped and managed arrays", host_memory)
sim_test("simulator: views copy like arrays", views_copy)
sim_test("simulator: errors", common_errors)
sim_test("simulator: streams and events", streams_and_events)
sim_test("simulator: interpret mode uses the same arrays", function()
  cuda.simulate("interpret")
  same_array(cuda.to_device(sample("u64", { 9 })):copy_to_host(), sample("u64", { 9 }), "u64")
end)

sim_test("simulator: device arrays, streams, events and kernels used after __gc: errors", after_gc)
sim_test("interpreted simulator: an array a kernel keeps outlives the launch safely", function()
  cuda.simulate("interpret")
  if not cuda.jit then skip("cuda.jit is not built in") end
  local kept = {}
  local k = cuda.jit(function(x) kept[1] = x end)
  k[{ 1, 1 }](cuda.to_device(kjit.array({ 7, 8, 9 }, "i32")))
  collectgarbage(); collectgarbage()
  -- the view keeps the device array's memory: no use after free (ASan)
  for _ = 1, 3 do cuda.device_array(3, "i32") end
  eq(kept[1][1], 7, "kept[1]"); eq(kept[1][3], 9, "kept[3]")
end)

sim_test("simulator: one device", function()
  eq(cuda.select_device(0), 0, "select 0")
  raises("select_device: device 1 out of range (the simulator has one device, 0)",
    function() cuda.select_device(1) end)
  eq(cuda.current_device(), 0, "current")
  local devs = cuda.devices()
  eq(#devs, 1, "#devices"); eq(devs[1].simulator, true, "simulator")
  local ok, text = cuda.detect()
  eq(ok, true, "detect"); truthy(text:find("simulator mode", 1, true), text)
  raises("mem_info is not available in simulator mode", function() cuda.mem_info() end)
end)

sim_test("simulator: memory is collected by Lua's GC", function()
  collectgarbage()
  local before = collectgarbage("count")
  for _ = 1, 100 do cuda.device_array(MiB, "f32") end   -- 400 MiB in all
  truthy(collectgarbage("count") - before < 300 * 1024, "GC kept up")
end)

test("simulator objects are refused with the simulator off", function()
  local d, s, e
  with_sim(true, function() d, s, e = cuda.device_array(2), cuda.stream(), cuda.event() end)
  with_sim(false, function()
    local m = raises("this device array was made in simulator mode and cannot be used "
      .. "with the simulator off", function() d:copy_to_host() end)
    truthy(m:find("test_cuda_host.lua:%d+:"), "location in: " .. m)
    raises("this device array was made in simulator mode",
      function() d:copy_to_device(kjit.zeros(2)) end)
    raises("this stream was made in simulator mode", function() s:synchronize() end)
    raises("this event was made in simulator mode", function() e:record() end)
    raises("this event was made in simulator mode", function()
      cuda.event_elapsed_time(e, e)
    end)
  end)
end)

----------------------------------------------------------------------
-- child processes: the driver path against the mock
----------------------------------------------------------------------

local CLEAN = { live_allocs = 0, bad_frees = 0, bad_copies = 0, bad_handles = 0,
  live_streams = 0, live_events = 0, registered = 0, dead_handles = 0, dead_ctx_calls = 0 }

if not file_exists(MOCK) then
  test("mock driver tests", function() skip("no " .. MOCK .. " (build target mockcuda)") end)
else
  child("main", { KJIT_LIBCUDA = MOCK }, CLEAN)
  child("inplace", { KJIT_LIBCUDA = MOCK }, CLEAN)
  child("allocfail", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_FAIL = "cuMemAlloc_v2" },
    { live_allocs = 0, allocs = 0, bad_copies = 0 })
  child("memsetfail", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_FAIL = "cuMemsetD8_v2=700" }, CLEAN)
  child("copyfail", { KJIT_LIBCUDA = MOCK,
    MOCK_CUDA_FAIL = "cuMemcpyHtoD_v2,cuMemcpyHtoDAsync_v2=999,cuMemcpyDtoH_v2" }, CLEAN)
  child("syncfail", { KJIT_LIBCUDA = MOCK,
    MOCK_CUDA_FAIL = "cuCtxSynchronize=700,cuStreamSynchronize=700,cuEventCreate=2" },
    { live_streams = 0, live_events = 0 })
  local CLEANMOD = { live_modules = 0 }
  for k, v in pairs(CLEAN) do CLEANMOD[k] = v end
  local LAUNCHED = { launches = cuda.jit and 3 or 0 }
  for k, v in pairs(CLEANMOD) do LAUNCHED[k] = v end
  child("launch", { KJIT_LIBCUDA = MOCK }, LAUNCHED)
  child("errrec", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_ERRREC = "5,12,9,0,8,0,0,3,0,0,1,0,0" })
  child("modfail", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_FAIL = "cuModuleLoadDataEx" }, CLEANMOD)
  -- bad_handles not checked: see the known kernel.c bug the suite skips on
  child("funcfail", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_FAIL = "cuModuleGetFunction" },
    { live_allocs = 0, live_modules = 0, bad_frees = 0, bad_copies = 0 })
  child("launchfail", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_FAIL = "cuLaunchKernel=701" }, CLEANMOD)
  child("initfail", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_FAIL = "cuInit" })
  child("nodevice", { KJIT_LIBCUDA = MOCK, MOCK_CUDA_DEVICES = "0" })
  child("simdriver", { KJIT_LIBCUDA = MOCK, KJIT_CUDASIM = "1" }, { allocs = 0 })
end
if file_exists(MOCK) then
  -- the driver's log of cuda.close(): everything kjit holds is freed once in
  -- the context, the context is released (and, retained by nobody else,
  -- destroyed), nothing dead is touched afterwards, and a new context serves
  test("cuda.close() against the mock driver: freed once, destroyed, re-made", function()
    local log = os.tmpname()
    local got, out, ok = run_script([[
      local a, b = cuda.device_array(10), cuda.device_array(3, "i32")
      local s, e = cuda.stream(), cuda.event()
      local p, m = cuda.pinned_array(4), cuda.managed_array(4)
      local reg = cuda.pinned(kjit.zeros(8))
      local k = cuda.jit(function(x) local i = cuda.grid(1); if i <= #x then x[i] = i end end)
      k[{1, 32}](a)
      cuda.device_array(7)                  -- garbage, collected before the close
      collectgarbage(); collectgarbage()
      cuda.close()
      print(pcall(k[{1, 32}], a))
      local c = cuda.device_array(5)        -- a new context
      k[{1, 32}](c)
      a, b, s, e, p, m, reg = nil
      collectgarbage(); collectgarbage()    -- the dead objects' __gc: no driver call
      print("done")
    ]], { KJIT_LIBCUDA = MOCK, MOCK_CUDA_LOG = log })
    truthy(ok and out:find("done"), out)
    truthy(out:find("was made before cuda.close()", 1, true), out)
    local calls = {}
    for line in io.lines(log) do calls[#calls + 1] = line:match("^(%S+)") end
    os.remove(log)
    local first_release
    for i, c in ipairs(calls) do
      if c == "cuDevicePrimaryCtxRelease_v2" then first_release = first_release or i end
    end
    truthy(first_release, "cuDevicePrimaryCtxRelease_v2 called")
    -- before the release: a synchronize, the pinned and managed memory freed
    local seen = {}
    for i = 1, first_release - 1 do seen[calls[i]] = (seen[calls[i]] or 0) + 1 end
    truthy(seen.cuCtxSynchronize, "synchronized first")
    eq(seen.cuMemFreeHost, 1, "the pinned array's memory, before the release")
    -- after it: a fresh retain before any other call needing a context
    local after = {}
    for i = first_release + 1, #calls do after[#after + 1] = calls[i] end
    local retain
    for i, c in ipairs(after) do if c == "cuDevicePrimaryCtxRetain" then retain = i; break end end
    truthy(retain, "the context is retained again")
    for i = 1, retain - 1 do
      truthy(after[i] ~= "cuMemFree_v2" and after[i] ~= "cuStreamDestroy_v2" and
        after[i] ~= "cuEventDestroy_v2" and after[i] ~= "cuModuleUnload", after[i] .. " after close")
    end
    eq(got.ctx_destroys, 1, "destroyed at the close (the second lives to the exit)")
    eq(got.ctx_releases, 1, "released once")
    for k, v in pairs(CLEAN) do eq(got[k], v, "report " .. k) end
    eq(got.live_modules, 0, "modules")
    eq(got.frees + got.ctx_freed, got.allocs, "every block freed once")
  end)

  -- library handles: cuBLAS's and cuFFT's, made in the first context, are
  -- not used or destroyed in the second (the mock cuBLAS counts a handle of
  -- a destroyed context as a bad context); the results are the same
  local MOCK_CUBLAS, MOCK_CUFFT = MODDIR .. "/libmockcublas.so", MODDIR .. "/libmockcufft.so"
  test("cuda.close() with cuBLAS handles and cuFFT plans alive", function()
    if not (file_exists(MOCK_CUBLAS) and file_exists(MOCK_CUFFT)) then skip("no mock cuBLAS/cuFFT") end
    local creport = os.tmpname()
    local got, out, ok = run_script([[
      local function run()
        local A = cuda.to_device(kjit.array({ { 1, 2 }, { 3, 4 } }, "f32"))
        local C = cuda.blas.gemm(A, A):copy_to_host()
        local x = cuda.to_device(kjit.array({ 1, 2, 3, 4 }))
        local X = cuda.fft.rfft(x):copy_to_host()
        return C[2][2], X[1][1]
      end
      local plan = cuda.fft.plan("rfft", cuda.to_device(kjit.zeros(4)))
      local before = table.pack(run())
      cuda.close()
      local after = table.pack(run())
      print("same", before[1] == after[1], before[2] == after[2], before[1], before[2])
      local y = plan:exec(cuda.to_device(kjit.array({ 1, 2, 3, 4 }))):copy_to_host()
      print("plan", y[1][1])
      plan = nil; collectgarbage()
      cuda.close()
      print("done")
    ]], { KJIT_LIBCUDA = MOCK, KJIT_CUBLAS = MOCK_CUBLAS, KJIT_CUFFT = MOCK_CUFFT,
          MOCK_CUBLAS_REPORT = creport })
    truthy(ok and out:find("done"), out)
    truthy(out:find("same\ttrue\ttrue\t22.0\t10.0"), out)
    truthy(out:find("plan\t10.0"), out)
    for k, v in pairs(CLEAN) do eq(got[k], v, "report " .. k) end
    eq(got.ctx_destroys, 2, "two closes")
    local f = io.open(creport)
    local cb = {}
    for k, v in f:read("a"):gmatch("([%w_]+)=(%d+)") do cb[k] = tonumber(v) end
    f:close(); os.remove(creport)
    eq(cb.bad_contexts, 0, "cuBLAS: no handle of a dead context used or destroyed")
    eq(cb.bad_handles, 0, "cuBLAS: bad handles")
    eq(cb.live_handles, 0, "cuBLAS: each handle destroyed before its context")
  end)

  test("closing the Lua state frees device memory, streams and events", function()
    local got, out, ok = run_script([[
      keep = { cuda.device_array(10), cuda.to_device(kjit.zeros({ 2, 3 }, "u8")) }
      cuda.select_device(1)
      keep[3], keep[4], keep[5] = cuda.device_array(5, "i8"), cuda.stream(), cuda.event()
      cuda.device_array(7)                    -- garbage, not yet collected
      print("done")
    ]], { KJIT_LIBCUDA = MOCK })
    truthy(ok and out:find("done", 1, true), "script output: " .. out)
    eq(got.allocs, 4, "allocations"); eq(got.frees, 4, "frees")
    eq(got.live_allocs, 0, "live"); eq(got.bad_frees, 0, "bad frees")
    eq(got.live_streams, 0, "streams"); eq(got.live_events, 0, "events")
  end)
end
child("badpath", { KJIT_LIBCUDA = "/nonexistent/libcuda.so.1" })
for _, v in ipairs({ "1", "interpret", "0" }) do
  child("env_" .. v, { KJIT_LIBCUDA = "/nonexistent/libcuda.so.1", KJIT_CUDASIM = v })
end
if file_exists(STUB) then
  child("stub", { KJIT_LIBCUDA = STUB })
else
  test("stub driver", function() skip("no " .. STUB) end)
end
