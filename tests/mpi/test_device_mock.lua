-- tests/mpi/test_device_mock.lua: device arrays of the CUDA driver path
-- (not the simulator) through kjit.mpi, with the mock driver
-- (tests/c/mock_libcuda.c, KJIT_LIBCUDA=<build>/libmockcuda.so): a
-- non-CUDA-aware MPI stages them through host memory with the driver's
-- copies. Run under mpirun at 1..4 ranks (tests/mpi/tests.cmake).
local kjit = require "kjit"
local mpi = require "kjit.mpi"
local cuda = kjit.cuda
local r, n = mpi.rank(), mpi.size()
assert(cuda.is_available(), "the mock driver did not load (KJIT_LIBCUDA)")
assert(not cuda.simulating(), "simulator on: this test is for the driver path")
-- NCCL off (KJIT_NCCL=0, tests/mpi/tests.cmake): MPI, staged through
-- page-locked memory of the driver (or ordinary memory when the driver
-- refuses it: MOCK_CUDA_FAIL=cuMemHostAlloc)
local on, why = mpi.nccl()
assert(on == false and why:find("KJIT_NCCL=0", 1, true), tostring(why))
local nopin = (os.getenv("MOCK_CUDA_FAIL") or ""):find("cuMemHostAlloc", 1, true) ~= nil
local right, left = (r + 1) % n, (r - 1) % n
local checks = 0
local function same(a, b, what)
  checks = checks + 1
  if a ~= b or math.type(a) ~= math.type(b) then error(("%s: got %s, want %s"):format(what, a, b), 2) end
end
for _, dt in ipairs({ "i64", "f32", "u16" }) do
  local h = kjit.zeros(6, dt)
  for i = 1, 6 do h[i] = r * 10 + i end
  local d = cuda.to_device(h)
  mpi.allreduce(d, "sum")
  local back = d:copy_to_host()
  for i = 1, 6 do
    local want = 0
    for q = 0, n - 1 do want = want + q * 10 + i end
    same(back[i], h[i] * 0 + want, dt .. " allreduce on the device")
  end
  local got = cuda.device_array(6, dt)
  mpi.sendrecv(cuda.to_device(h), right, got, left)
  local gh = got:copy_to_host()
  for i = 1, 6 do same(gh[i], h[i] * 0 + left * 10 + i, dt .. " sendrecv on the device") end
  local rq = mpi.irecv(cuda.device_array(6, dt), left, 3)
  local sq = mpi.isend(cuda.to_device(h), right, 3)
  collectgarbage("collect")
  sq:wait()
  local rh = rq:wait():copy_to_host()
  for i = 1, 6 do same(rh[i], h[i] * 0 + left * 10 + i, dt .. " irecv on the device") end
end
-- reduce_scatter and bcast, staged
do
  local big = kjit.zeros(2 * n, "f64")
  for i = 1, 2 * n do big[i] = r + i end
  local part = cuda.device_array(2, "f64")
  mpi.reduce_scatter(cuda.to_device(big), part, "sum")
  local ph = part:copy_to_host()
  for k = 1, 2 do same(ph[k], n * (2 * r + k) + n * (n - 1) / 2, "reduce_scatter on the device") end
  local s = cuda.stream()
  local b = cuda.to_device(big)
  mpi.bcast(b, n - 1, s)
  local bh = b:copy_to_host()
  for i = 1, 2 * n do same(bh[i], (n - 1) + i + 0.0, "bcast on a stream") end
end
-- the staging memory: page-locked and reused (or ordinary when refused)
local st = mpi._staging()
if nopin then
  same(st.pinned_allocs, 0, "no page-locked memory given")
  same(st.pageable_allocs > 0, true, "ordinary memory instead")
else
  same(st.pinned_allocs > 0, true, "page-locked staging")
  same(st.pageable_allocs, 0, "no ordinary staging")
end
same(st.reuses > st.pinned_allocs + st.pageable_allocs, true, "staging buffers reused")
local total = mpi.allreduce(checks, "sum")
if r == 0 then print(("test_device_mock: %d ranks, %d checks passed"):format(n, total)) end
