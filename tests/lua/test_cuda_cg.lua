-- test_cuda_cg.lua: cooperative groups in kjit.cuda (issue 25, item 5):
-- cuda.cg.this_grid(), g:sync(), g:thread_rank(), g:size().
--   - every kernel runs in the interpreted simulator (the Lua function,
--     one coroutine per thread: the reference) and in the compiled one,
--     results compared with each other and with a plain-Lua model;
--   - the PTX (a grid barrier on the driver's grid workspace) is checked by
--     ptxas for sm_75, sm_80 and sm_90 (CUDA 13 has no sm_70);
--   - the launch path runs against the mock driver (tests/c/mock_libcuda.c)
--     in child processes: a grid-synchronized kernel goes through
--     cuLaunchCooperativeKernel with the kernel's parameters, the
--     co-residency limit is checked before it, others use cuLaunchKernel.
local kjit = require "kjit"
local cuda = kjit.cuda
local both, errors = require("simboth").both, require("simboth").errors
local ptxas = require "ptxas"

local MODDIR, LUA = arg[1], arg[-1]
local MOCK = MODDIR .. "/libmockcuda.so"




-- ---- numba-cuda's Laplace example (docs: ex_laplace), ported ------------------------

-- numba-cuda's solve_heat_equation with the index change (cuda.grid(1) is
-- 1-based) and Lua syntax only.
local function solve_heat_equation(buf_0, buf_1, timesteps, k)
  local i = cuda.grid(1)
  -- Don't continue if our index is outside the domain
  if i > #buf_0 then return end
  -- Prepare to do a grid-wide synchronization later
  local grid = cuda.cg.this_grid()
  for step = 0, timesteps - 1 do
    -- Select the buffer from the previous timestep
    local data, next_data
    if step % 2 == 0 then
      data = buf_0
      next_data = buf_1
    else
      data = buf_1
      next_data = buf_0
    end
    -- Get the current temperature associated with this point
    local curr_temp = data[i]
    -- Apply formula from finite difference equation
    local next_temp
    if i == 1 then
      -- Left wall is held at T = 0
      next_temp = curr_temp + k * (data[i + 1] - (2 * curr_temp))
    elseif i == #data then
      -- Right wall is held at T = 0
      next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp))
    else
      -- Interior points are a weighted average of their neighbors
      next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp) + data[i + 1])
    end
    -- Write new value to the next buffer
    next_data[i] = next_temp
    -- Wait for every thread to write before moving on
    grid:sync()
  end
end

-- The same computation in plain Lua, one time step after another.
local function heat_model(data, timesteps, k)
  local n = #data
  local b0, b1 = {}, {}
  for i = 1, n do b0[i] = data[i]; b1[i] = 0.0 end
  for step = 0, timesteps - 1 do
    local d, nd = b0, b1
    if step % 2 == 1 then d, nd = b1, b0 end
    for i = 1, n do
      local c = d[i]
      if i == 1 then nd[i] = c + k * (d[i + 1] - (2 * c))
      elseif i == n then nd[i] = c + k * (d[i - 1] - (2 * c))
      else nd[i] = c + k * (d[i - 1] - (2 * c) + d[i + 1]) end
    end
  end
  return b0, b1
end

test("numba-cuda's Laplace example with a grid sync: both simulators agree with a Lua model", function()
  local size, niter = 1001, 60
  local data = kjit.zeros(size)
  data[501] = 10000
  local k = cuda.jit(solve_heat_equation)
  local out = both("laplace", k, function(kk) return kk:forall(size) end,
                   { data:copy(), kjit.zeros(size), niter, 0.25 })
  local m0, m1 = heat_model(data, niter, 0.25)
  for i = 1, size do
    eq(out[1][i], m0[i], "buf_0[" .. i .. "]")
    eq(out[2][i], m1[i], "buf_1[" .. i .. "]")
  end
  truthy(out[2][501] < 10000 and out[2][500] > 0, "the heat spread")
  -- the example's own flow: device arrays, forall, copy_to_host
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local buf_0 = cuda.to_device(data)
    local buf_1 = cuda.device_array_like(buf_0)
    k:forall(#data)(buf_0, buf_1, niter, 0.25)
    local results = buf_1:copy_to_host()
    cuda.simulate(prev)
    for i = 1, size do eq(results[i], m1[i], "device arrays: buf_1[" .. i .. "]") end
  end
end)

-- ---- the barrier itself ----------------------------------------------------------------

test("g:sync() waits for every thread of the grid: counts seen after each sync", function()
  -- each step every thread adds 1 to a counter, syncs, and reads it: every
  -- thread must see all the grid's additions, never more (a second sync
  -- keeps the next step's additions out of the reads)
  local k = cuda.jit(function(counter, seen, steps)
    local g = cuda.cg.this_grid()
    local i = g:thread_rank() + 1
    for s = 1, steps do
      cuda.atomic.add(counter, 1, 1)
      g:sync()
      seen[(i - 1) * steps + s] = counter[1]
      g:sync()
    end
  end)
  for _, cfg in ipairs{ { 4, 64 }, { 3, 33 }, { { 2, 3 }, { 8, 4 } }, { 1, 1 }, { 7, 32 } } do
    local nb = type(cfg[1]) == "table" and cfg[1][1] * cfg[1][2] or cfg[1]
    local nt = type(cfg[2]) == "table" and cfg[2][1] * cfg[2][2] or cfg[2]
    local n, steps = nb * nt, 3
    local out = both("counter", k, function(kk) return kk[cfg] end,
                     { kjit.zeros(1, "i64"), kjit.zeros(n * steps, "i64"), steps })
    for t = 1, n do
      for s = 1, steps do eq(out[2][(t - 1) * steps + s], s * n, "thread " .. t .. " step " .. s) end
    end
  end
end)

test("g:thread_rank() and g:size() count as CUDA's grid_group (0-based rank)", function()
  local k = cuda.jit(function(rank, size)
    local g = cuda.cg.this_grid()
    local r = g:thread_rank()
    rank[r + 1] = r
    size[r + 1] = g:size()
  end)
  local cfg = { { 2, 3 }, { 4, 2, 2 } }
  local n = 2 * 3 * 4 * 2 * 2
  local out = both("rank", k, function(kk) return kk[cfg] end, { kjit.full(n, -1, "i64"), kjit.zeros(n, "i64") })
  for r = 1, n do eq(out[1][r], r - 1, "rank"); eq(out[2][r], n, "size") end
  -- the model: blocks x fastest, then the threads of the block, x fastest
  local m = cuda.jit(function(rank)
    local g = cuda.cg.this_grid()
    local bx, by, tx, ty, tz = cuda.blockIdx.x, cuda.blockIdx.y, cuda.threadIdx.x, cuda.threadIdx.y, cuda.threadIdx.z
    local blk = by * cuda.gridDim.x + bx
    local t = (tz * cuda.blockDim.y + ty) * cuda.blockDim.x + tx
    rank[blk * 16 + t + 1] = g:thread_rank() - (blk * 16 + t)
  end)
  local o = both("rank model", m, function(kk) return kk[cfg] end, { kjit.full(n, -1, "i64") })
  for r = 1, n do eq(o[1][r], 0, "rank " .. r) end
end)

test("threads that return before g:sync() count as arrived; warps meet around it", function()
  local k = cuda.jit(function(x, out)
    local i = cuda.grid(1)
    if i > #x then return end
    local g = cuda.cg.this_grid()
    x[i] = i
    g:sync()
    local v = x[#x - i + 1]
    -- a warp reduction after the sync: the lanes that returned take no part
    local off = 16
    while off > 0 do
      v = v + cuda.shfl_down_sync(cuda.activemask(), v, off)
      off = off // 2
    end
    out[i] = v
    g:sync()
    if cuda.laneid() == 0 then out[i] = out[i] + 1000000 end
  end)
  local out = both("early", k, function(kk) return kk[{ 3, 64 }] end, { kjit.zeros(150, "i64"), kjit.zeros(150, "i64") })
  for i = 1, 150 do eq(out[1][i], i) end
  truthy(out[2][1] > 1000000, "lane 0 after the second sync")
end)

-- ---- errors ------------------------------------------------------------------------------

test("an error after a grid sync names its thread in both simulators", function()
  local k = cuda.jit(function(x)
    local i = cuda.grid(1)
    local g = cuda.cg.this_grid()
    x[i] = i
    g:sync()
    if i == 77 then x[i] = x[1000] end
  end)
  local a, b = errors(k, function(kk) return kk[{ 2, 64 }] end, { kjit.zeros(128, "i64") })
  truthy(a:find("index 1000 out of bounds [1, 128] (in thread (12,0,0) of block (1,0,0))", 1, true), a)
  eq(b, a)
end)

test("a grid too large for the simulator and a deadlock are errors in both simulators", function()
  local k = cuda.jit(function(x)
    local g = cuda.cg.this_grid()
    g:sync()
    x[cuda.grid(1)] = 1
  end)
  local a, b = errors(k, function(kk) return kk[{ 65, 256 }] end, { kjit.zeros(65 * 256, "u8") })
  truthy(a:find("simboth.lua:%d+: kjit.cuda simulator: a kernel that syncs the grid %(cuda.cg%) "
     .. "runs all its blocks at once, and the simulator runs at most 16384 threads at once$"), a)
  eq(b, a)
  -- at the limit it runs
  local out = both("limit", k, function(kk) return kk[{ 64, 256 }] end, { kjit.zeros(64 * 256, "u8") })
  eq(out[1][64 * 256], 1)
  -- a kernel without a grid sync has no such limit
  local plain = cuda.jit(function(x) x[cuda.grid(1)] = 1 end)
  out = both("no limit", plain, function(kk) return kk[{ 65, 256 }] end, { kjit.zeros(65 * 256, "u8") })
  eq(out[1][65 * 256], 1)
  local dl = cuda.jit(function(x)
    local g = cuda.cg.this_grid()
    if cuda.threadIdx.x == 0 then g:sync() else cuda.syncthreads() end
    x[cuda.grid(1)] = 1
  end)
  a, b = errors(dl, function(kk) return kk[{ 2, 32 }] end, { kjit.zeros(64, "u8") })
  truthy(a:find("simboth.lua:%d+: kjit.cuda simulator: kernel deadlock: threads wait at "
     .. "cuda.syncthreads or a warp collective while others of their block wait at the grid "
     .. "barrier %(cuda.cg.this_grid%(%):sync%(%)%)$"), a)
  eq(b, a)
end)

test("grid groups: what the typer refuses, and outside kernels", function()
  raises("a grid group (cuda.cg.this_grid()) has no field 'wait' (sync, thread_rank, size)", function()
    cuda.jit(function(x) local g = cuda.cg.this_grid(); g:wait() end):compile("void(float64[:])")
  end)
  raises("cannot pass a grid group to a compiled function", function()
    local function f(g) g:sync() end
    cuda.jit(function(x) f(cuda.cg.this_grid()) end):compile("void(float64[:])")
  end)
  raises("cuda.cg.this_grid can only be used in a kernel compiled by cuda.jit", function()
    kjit.jit(function(x) local g = cuda.cg.this_grid(); return x end)(1)
  end)
  raises("cuda.cg.this_grid can only be called inside a kernel", function() cuda.cg.this_grid() end)
  -- a value that is not the group, as self
  local prev = cuda.simulate("interpret")
  local ok, err = pcall(cuda.jit(function(x) local g = cuda.cg.this_grid(); g.sync(x) end)[{ 1, 1 }],
                        kjit.zeros(1))
  cuda.simulate(prev)
  eq(ok, false)
  truthy(err:find("bad argument #1 to 'sync' (a grid group expected", 1, true), err)
  raises("bad argument #1 to 'sync' (a grid group", function()
    cuda.jit(function(x) local g = cuda.cg.this_grid(); g.sync(x) end):compile("void(float64[:])")
  end)
end)

test("numba-cuda's spelling g.sync() (no colon) works alike", function()
  local k = cuda.jit(function(x, out)
    local g = cuda.cg.this_grid()
    local i = g.thread_rank() + 1
    x[i] = i
    g.sync()
    out[i] = x[g.size() - i + 1]
  end)
  local out = both("g.sync()", k, function(kk) return kk[{ 3, 32 }] end, { kjit.zeros(96, "i64"), kjit.zeros(96, "i64") })
  for i = 1, 96 do eq(out[2][i], 97 - i) end
end)

test("k:max_cooperative_grid_blocks in the simulator: its thread limit", function()
  local k = cuda.jit(solve_heat_equation)
  local prev = cuda.simulate(true)
  eq(k:max_cooperative_grid_blocks(256), 64)
  eq(k:max_cooperative_grid_blocks({ 16, 16 }), 64)
  eq(k:max_cooperative_grid_blocks(1000), 16)
  cuda.simulate(prev)
end)

-- ---- PTX --------------------------------------------------------------------------------

test("PTX: the grid barrier on the grid workspace, accepted by ptxas (sm_75, sm_80, sm_90)", function()
  local k = cuda.jit(solve_heat_equation)
  local sig = "void(float64[:], float64[:], int64, float64)"
  local ptx
  for _, cc in ipairs{ 75, 80, 90 } do
    k:compile(sig, cc)
    ptx = k:inspect("ptx")
    ptxas.check(ptx, sig, cc)
  end
  truthy(ptx:find("%envreg1", 1, true) and ptx:find("%envreg2", 1, true), "the workspace address")
  truthy(ptx:find("atom.add.u32", 1, true), "the arrival")
  truthy(ptx:find("ld.volatile.u32", 1, true), "the wait")
  truthy(ptx:find("membar.gl", 1, true), "the fences")
  local plain = cuda.jit(function(x) x[cuda.grid(1)] = 1 end)
  plain:compile("void(float64[:])", 90)
  truthy(not plain:inspect("ptx"):find("envreg", 1, true), "no workspace without a grid sync")
end)

-- ---- the driver path, against the mock driver ------------------------------------------------

-- Runs code in a child lua with the mock driver; returns its report, output, success.
local function run_mock(code, env)
  local e = { KJIT_LIBCUDA = MOCK }
  for k, v in pairs(env or {}) do e[k] = tostring(v) end
  return require("mockcuda").run_script(MODDIR, LUA, code, e)
end

local GRID_KERNEL = [[
  local k = cuda.jit(function(x, out)
    local i = cuda.grid(1)
    local g = cuda.cg.this_grid()
    x[i] = i
    g:sync()
    out[i] = x[#x - i + 1]
  end)
  local plain = cuda.jit(function(x) x[cuda.grid(1)] = 1 end)
  local dx, dout = cuda.device_array(1 << 20, "i64"), cuda.device_array(1 << 20, "i64")
]]

local function mock_or_skip()
  local f = io.open(MOCK)
  if not f then skip("no " .. MOCK .. " (build target mockcuda)") end
  f:close()
  if cuda.ptx_backend() ~= "libNVVM" then skip("no libNVVM: kernels do not compile for the mock") end
end

test("mock driver: a grid-synchronized kernel is launched cooperatively, others are not", function()
  mock_or_skip()
  local got, out, ok = run_mock(GRID_KERNEL .. [[
    k[{ 4, 64 }](dx, dout)
    k[{ 132 * 8, 256 }](dx, dout)       -- 8 blocks of 256 per SM: at the limit
    plain[{ 10, 64 }](dx)
    cuda.synchronize()
    print("max", k:max_cooperative_grid_blocks(256), k:max_cooperative_grid_blocks({ 32, 32 }))
  ]])
  truthy(ok, out)
  eq(got.coop_launches, 2, "cooperative launches")
  eq(got.coop_blocks, 4 + 132 * 8, "their blocks")
  eq(got.launches, 1, "plain launches")
  eq(got.bad_handles, 0, "bad handles")
  truthy(out:find("max\t1056\t264", 1, true), out)
end)

test("mock driver: the co-residency limit is checked before the launch, with its numbers", function()
  mock_or_skip()
  local got, out = run_mock(GRID_KERNEL .. [[
    print(pcall(k[{ 132 * 8 + 1, 256 }], dx, dout))
    print(pcall(k[{ 133, { 16, 16 } }], dx, dout))
  ]], { MOCK_CUDA_OCCUPANCY = "1" })
  truthy(out:find("kernel launch: a kernel that syncs the grid (cuda.cg) needs all its blocks on "
    .. "the GPU at once: 1057 blocks of 256 threads, but at most 132 fit (1 per SM x 132 SMs; "
    .. "k:max_cooperative_grid_blocks(256) tells)", 1, true), out)
  truthy(out:find("133 blocks of 256 threads, but at most 132 fit", 1, true), out)
  eq(got.coop_launches, 0, "nothing launched")
end)

test("mock driver: the cooperative launch passes the kernel's parameters (its error record)", function()
  mock_or_skip()
  -- MOCK_CUDA_ERRREC: the mock writes a failure into the next-to-last
  -- parameter, the kernel's error record, as a failing thread would
  local _, out = run_mock(GRID_KERNEL .. [[
    k[{ 2, 32 }](dx, dout)
    print(pcall(cuda.synchronize))
  ]], { MOCK_CUDA_ERRREC = "5,12,9,0,8,0,0,3,0,0,1,0,0" })
  truthy(out:find("index 9 out of bounds [1, 8] (in thread (3,0,0) of block (1,0,0))", 1, true), out)
end)

test("mock driver: a failed cooperative launch is a Lua error naming the call", function()
  mock_or_skip()
  local _, out = run_mock(GRID_KERNEL .. [[
    print(pcall(k[{ 2, 32 }], dx, dout))
  ]], { MOCK_CUDA_FAIL = "cuLaunchCooperativeKernel=701" })
  truthy(out:find("cuLaunchCooperativeKernel: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", 1, true), out)
end)
