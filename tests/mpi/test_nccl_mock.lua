-- tests/mpi/test_nccl_mock.lua: NCCL collectives on device arrays of the
-- driver path, with the mock driver (KJIT_LIBCUDA=libmockcuda.so) and the
-- mock NCCL (KJIT_NCCL=libmocknccl.so, tests/c/mock_libnccl.c: it checks
-- contexts, streams and buffer ranges, computes on the mock driver's host
-- memory, and logs each call to $MOCK_NCCL_LOG.<rank>). Every result is
-- checked against the value computed here; the log proves which path ran
-- (NCCL, or MPI staged through page-locked memory). Run under mpirun at
-- 2 and 3 ranks (tests/mpi/tests.cmake).
local kjit = require "kjit"
local mpi = require "kjit.mpi"
local cuda = kjit.cuda
local r, n = mpi.rank(), mpi.size()
assert(cuda.is_available() and not cuda.simulating(), "the mock driver did not load")
local on, why = mpi.nccl()
assert(on == true, "NCCL not on: " .. tostring(why))
assert(why:find("libmocknccl", 1, true), why)

local logname = os.getenv("MOCK_NCCL_LOG") .. "." .. r

-- MOCK_NCCL_FAIL=ncclCommInitRank (tests/mpi/tests.cmake): NCCL loads but
-- no communicator can be made: every rank falls back to MPI for it (and
-- says why); a collective that NCCL fails is a Lua error at its line
if os.getenv("MOCK_NCCL_FAIL") then
  local d = cuda.to_device(kjit.array({ 1, 2, 3 }, "i64"))
  mpi.allreduce(d, "sum")
  local h = d:copy_to_host()
  for i = 1, 3 do assert(h[i] == i * n, "fallback allreduce") end
  local on2, why2 = mpi.nccl()
  assert(on2 == true, "still on for other communicators")
  assert(why2:find("NCCL could not make a communicator", 1, true), tostring(why2))
  local sub = mpi.comm_split(0, r)
  sub:allreduce(d, "max")   -- a new communicator: its init fails too, MPI again
  h = d:copy_to_host()
  for i = 1, 3 do assert(h[i] == i * n, "fallback allreduce on a communicator") end
  for line in io.lines(logname) do
    assert(not line:find("^ncclAllReduce"), "no NCCL collective ran: " .. line)
  end
  if r == 0 then print("test_nccl_mock (ncclCommInitRank failing): fallback to MPI, " .. n .. " ranks") end
  return
end
local function calls(name)      -- lines of the mock's log that start with name
  local k = 0
  for line in io.lines(logname) do
    if line:sub(1, #name + 1) == name .. " " then k = k + 1 end
  end
  return k
end
local function lastcall()
  local last
  for line in io.lines(logname) do last = line end
  return last
end

local checks = 0
local function same(a, b, what)
  checks = checks + 1
  if a ~= b or math.type(a) ~= math.type(b) then
    error(("rank %d: %s: got %s (%s), want %s (%s)"):format(r, what, tostring(a), math.type(a),
          tostring(b), math.type(b)), 2)
  end
end
local function host(dt, len, f)
  local h = kjit.zeros(len, dt)
  for i = 1, len do h[i] = f(i) end
  return h
end
local function check_dev(d, want, what)
  local got = d:copy_to_host()
  for i = 1, #want do same(got[i], want[i], what .. " [" .. i .. "]") end
end

-- every dtype NCCL has, through every collective
local m = 5
for _, dt in ipairs({ "i8", "u8", "i32", "u32", "i64", "u64", "f32", "f64" }) do
  local mine = host(dt, m, function(i) return (r + 1) * i % 7 end)
  local ar0 = calls("ncclAllReduce")
  -- allreduce in place, sum
  local d = cuda.to_device(mine)
  mpi.allreduce(d, "sum")
  check_dev(d, host(dt, m, function(i)
    local s = 0
    for q = 0, n - 1 do s = s + (q + 1) * i % 7 end
    return s
  end), dt .. " allreduce sum")
  -- allreduce into an out array, max and min
  local out = cuda.device_array(m, dt)
  mpi.allreduce(cuda.to_device(mine), "max", out)
  check_dev(out, host(dt, m, function(i)
    local s = 0
    for q = 0, n - 1 do s = math.max(s, (q + 1) * i % 7) end
    return s
  end), dt .. " allreduce max")
  mpi.allreduce(cuda.to_device(mine), "min", out)
  check_dev(out, host(dt, m, function(i)
    local s = 99
    for q = 0, n - 1 do s = math.min(s, (q + 1) * i % 7) end
    return s
  end), dt .. " allreduce min")
  same(calls("ncclAllReduce") - ar0, 3, dt .. " allreduce went through NCCL")
  -- reduce to the last rank, prod (small values: no wrap-around)
  local small = host(dt, m, function(i) return (r + i) % 3 + 1 end)
  local root = n - 1
  local res = mpi.reduce(cuda.to_device(small), "prod", root, r == root and cuda.device_array(m, dt) or nil)
  if r == root then
    check_dev(res, host(dt, m, function(i)
      local p = 1
      for q = 0, n - 1 do p = p * ((q + i) % 3 + 1) end
      return p
    end), dt .. " reduce prod")
  else
    same(res, nil, dt .. " reduce returns nil off the root")
  end
  -- bcast from rank 0, in place
  local b = cuda.to_device(host(dt, m, function(i) return r == 0 and i + 1 or 0 end))
  mpi.bcast(b, 0)
  check_dev(b, host(dt, m, function(i) return i + 1 end), dt .. " bcast")
  -- allgather
  local g = cuda.device_array(m * n, dt)
  mpi.allgather(cuda.to_device(mine), g)
  check_dev(g, host(dt, m * n, function(i)
    local q, k = (i - 1) // m, (i - 1) % m + 1
    return (q + 1) * k % 7
  end), dt .. " allgather")
  -- reduce_scatter: block q of every rank's array, summed, to rank q
  local big = host(dt, 2 * n, function(i) return (r + i) % 5 end)
  local part = cuda.device_array(2, dt)
  mpi.reduce_scatter(cuda.to_device(big), part, "sum")
  check_dev(part, host(dt, 2, function(k)
    local s = 0
    for q = 0, n - 1 do s = s + (q + 2 * r + k) % 5 end
    return s
  end), dt .. " reduce_scatter")
end
same(calls("ncclReduce") , 8, "reduce went through NCCL")
same(calls("ncclBroadcast"), 8, "bcast went through NCCL")
same(calls("ncclAllGather"), 8, "allgather went through NCCL")
same(calls("ncclReduceScatter"), 8, "reduce_scatter went through NCCL")
same(calls("ncclCommInitRank"), 1, "one NCCL communicator for COMM_WORLD")

-- records: bcast and allgather move their bytes
do
  local Pt = kjit.struct{ { "x", "f64" }, { "k", "i16" } }
  local h = kjit.zeros(2, Pt)
  for i = 1, 2 do h[i].x = r * 10 + i + 0.5; h[i].k = -r - i end
  local d = cuda.to_device(h)
  local b0 = calls("ncclBroadcast")
  mpi.bcast(d, n - 1)
  local got = d:copy_to_host()
  for i = 1, 2 do
    same(got[i].x, (n - 1) * 10 + i + 0.5, "record bcast x")
    same(got[i].k, -(n - 1) - i, "record bcast k")
  end
  same(calls("ncclBroadcast"), b0 + 1, "record bcast went through NCCL")
  local all = cuda.device_array(2 * n, Pt)
  mpi.allgather(cuda.to_device(h), all)
  local ah = all:copy_to_host()
  for q = 0, n - 1 do
    for i = 1, 2 do same(ah[q * 2 + i].x, q * 10 + i + 0.5, "record allgather") end
  end
end

-- a collective NCCL fails (the mock: MOCK_NCCL_FAIL_COUNT elements): a Lua
-- error at the calling line, on every rank (each rank's NCCL fails)
do
  local k = tonumber(os.getenv("MOCK_NCCL_FAIL_COUNT"))
  local d = cuda.to_device(kjit.zeros(k, "f64"))
  local ok, e = pcall(function() mpi.allreduce(d, "sum") end)
  same(ok, false, "NCCL's failure raised")
  same(e:find("kjit.mpi: allreduce: NCCL: internal error (mock: injected)", 1, true) ~= nil, true,
       "NCCL's message: " .. e)
  same(e:find("test_nccl_mock.lua:%d+:") ~= nil, true, "at the calling line: " .. e)
  mpi.allreduce(cuda.to_device(kjit.zeros(k + 1, "f64")), "sum")   -- and the next one runs
end

-- bool: max is "or", min is "and"
do
  local bb = kjit.zeros(4, "bool")
  for i = 1, 4 do bb[i] = (i + r) % 2 == 0 end
  local d = cuda.to_device(bb)
  mpi.allreduce(d, "max")
  check_dev(d, { true, true, true, true }, "bool allreduce max")   -- n >= 2
end

-- i16: NCCL has no 16-bit integers: MPI, staged through page-locked memory
do
  local before, st0 = calls("ncclAllReduce"), mpi._staging()
  local d = cuda.to_device(host("i16", 3, function(i) return -i * (r + 1) end))
  mpi.allreduce(d, "sum")
  check_dev(d, host("i16", 3, function(i) return -i * (n * (n + 1) // 2) end), "i16 allreduce")
  same(calls("ncclAllReduce"), before, "i16 did not go through NCCL")
  local st = mpi._staging()
  same(st.pinned_allocs + st.reuses > st0.pinned_allocs + st0.reuses, true, "i16 staged, pinned")
end

-- a stream: the collective is queued on it and the call returns; the
-- mock checks that the stream is a live one of the current device
do
  local s = cuda.stream()
  local d = cuda.to_device(host("f64", 4, function(i) return i * 0.5 + r end))
  mpi.allreduce(d, "sum", nil, s)
  s:synchronize()
  check_dev(d, host("f64", 4, function(i) return n * i * 0.5 + n * (n - 1) / 2 end), "stream allreduce")
  same(lastcall():match("stream=(%a+)"), "stream", "NCCL got the stream")
  local b = cuda.to_device(host("i32", 4, function(i) return r == 1 and i * 3 or 0 end))
  mpi.bcast(b, 1, s)
  s:synchronize()
  check_dev(b, host("i32", 4, function(i) return i * 3 end), "stream bcast")
  same(lastcall():match("stream=(%a+)"), "stream", "NCCL got the stream (bcast)")
end

-- mixed: rank 0 passes a host array, the others device arrays: every rank
-- takes the MPI path (they agree first), and the results are the same
do
  local before = calls("ncclAllReduce")
  local h = host("i64", 3, function(i) return i + r end)
  local x = r == 0 and h or cuda.to_device(h)
  mpi.allreduce(x, "sum")
  local got = r == 0 and x or x:copy_to_host()
  for i = 1, 3 do same(got[i], n * i + n * (n - 1) // 2, "mixed allreduce") end
  same(calls("ncclAllReduce"), before, "mixed: no NCCL call")
end

-- a communicator of its own: its own NCCL communicator
do
  local sub = mpi.comm_split(r % 2, r)
  local d = cuda.to_device(host("i32", 2, function(i) return i * 10 + r end))
  sub:allreduce(d, "sum")
  local want, cnt = 0, 0
  for q = r % 2, n - 1, 2 do want = want + q; cnt = cnt + 1 end
  check_dev(d, host("i32", 2, function(i) return cnt * i * 10 + want end), "sub-communicator allreduce")
  same(calls("ncclCommInitRank"), 2, "a second NCCL communicator")
  sub:free()
  same(calls("ncclCommDestroy"), 1, "freed with its communicator")
end

-- another device: the communicator is made again, on the new device
do
  cuda.select_device(1)
  local d = cuda.to_device(host("f32", 3, function(i) return i + r end))
  mpi.allreduce(d, "sum")
  check_dev(d, host("f32", 3, function(i) return n * i + n * (n - 1) // 2 end), "device 1 allreduce")
  same(calls("ncclCommInitRank"), 3, "remade on device 1")
  same(lastcall():match("dev=(%d+)"), "1", "on device 1")
  cuda.select_device(0)
end

-- mpi.nccl(false): MPI from then on (staged), mpi.nccl(true): NCCL again
do
  local before = calls("ncclAllReduce")
  same(mpi.nccl(false), false, "switched off")
  local d = cuda.to_device(host("u32", 3, function(i) return i * (r + 1) end))
  mpi.allreduce(d, "sum")
  check_dev(d, host("u32", 3, function(i) return i * (n * (n + 1) // 2) end), "NCCL off: allreduce")
  same(calls("ncclAllReduce"), before, "NCCL off: no call")
  same(mpi.nccl(true), true, "switched back on")
  mpi.allreduce(d, "max")
  same(calls("ncclAllReduce"), before + 1, "NCCL on again")
end

-- staging memory is reused: many staged calls, few page-locked allocations
do
  local st0 = mpi._staging()
  for _ = 1, 20 do
    local d = cuda.to_device(host("i16", 100, function(i) return i end))
    mpi.allreduce(d, "sum")
  end
  local st = mpi._staging()
  same(st.pinned_allocs - st0.pinned_allocs <= 1, true, "one page-locked buffer at most")
  same(st.reuses - st0.reuses >= 19, true, "reused")
  same(st.pageable_allocs, 0, "no pageable staging with the driver")
end

-- cuda.close() on every rank: the NCCL communicator and the page-locked
-- staging memory went with the context; both are made again (the old
-- communicator is never destroyed: its context is gone)
do
  local inits, destroys = calls("ncclCommInitRank"), calls("ncclCommDestroy")
  local st0 = mpi._staging()
  cuda.close()
  local d = cuda.to_device(host("i64", 4, function(i) return i + r end))
  mpi.allreduce(d, "sum")
  check_dev(d, host("i64", 4, function(i) return n * i + n * (n - 1) // 2 end), "allreduce after cuda.close()")
  same(calls("ncclCommInitRank"), inits + 1, "a new communicator after cuda.close()")
  same(calls("ncclCommDestroy"), destroys, "the dead one is not destroyed")
  mpi.nccl(false)
  local e = cuda.to_device(host("i16", 100, function(i) return i end))
  mpi.allreduce(e, "sum")   -- staged through new page-locked memory
  check_dev(e, host("i16", 100, function(i) return n * i end), "staged after cuda.close()")
  same(mpi._staging().pinned_allocs, st0.pinned_allocs + 1, "the old staging block forgotten")
  mpi.nccl(true)
end

local total = mpi.allreduce(checks, "sum")
if r == 0 then print(("test_nccl_mock: %d ranks, %d checks passed"):format(n, total)) end
