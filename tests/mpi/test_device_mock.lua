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
local total = mpi.allreduce(checks, "sum")
if r == 0 then print(("test_device_mock: %d ranks, %d checks passed"):format(n, total)) end
