-- tests/mpi/test_calls.lua: every kjit.mpi call on every dtype, run under
-- mpirun at 1, 2, 3 and 4 ranks (tests/mpi/tests.cmake) through the
-- launcher (lua5.4 -l kjit.mpi.run): a failed check is an error, which
-- ends the job with the rank and the message. Every expected value is
-- computed here from the formula each rank used, never written down.
local kjit = require "kjit"
local mpi = require "kjit.mpi"
local cuda = kjit.cuda

local r, n = mpi.rank(), mpi.size()
local checks = 0

local function same(got, want, what)
  checks = checks + 1
  if math.type(got) ~= math.type(want) or (got ~= want and not (got ~= got and want ~= want)) then
    error(("%s: got %s (%s), want %s (%s)"):format(what, tostring(got), math.type(got) or type(got),
          tostring(want), math.type(want) or type(want)), 2)
  end
end

local function raises(fn, text, what)
  local ok, err = pcall(fn)
  checks = checks + 1
  if ok then error(what .. ": no error, expected one containing '" .. text .. "'", 2) end
  if not tostring(err):find(text, 1, true) then
    error(what .. ": error '" .. tostring(err) .. "' does not contain '" .. text .. "'", 2)
  end
  return err
end

local DTYPES = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "bool" }

-- The element i (1-based) of rank q's array: small enough for i8 sums and
-- products over 4 ranks, exact in f32.
local function val(dt, q, i)
  if dt == "bool" then return (q + i) % 2 == 0 end
  local v = (q * 7 + i) % 3 + 1
  if dt == "f32" or dt == "f64" then return v + 0.25 * (i % 2) end
  return v
end

-- What an element reads as from an array of dtype dt.
local function as(dt, v)
  if dt == "bool" then return v end
  if dt == "f32" or dt == "f64" then return v + 0.0 end
  return math.tointeger(v)
end

local function filled(dt, q, len, shape)
  local a = kjit.zeros(shape or len, dt)
  local flat = shape and a:reshape(len) or a
  for i = 1, len do flat[i] = val(dt, q, i) end
  return a
end

local function check(a, dt, want, what)
  local len = #a
  for i = 1, len do same(a[i], as(dt, want(i)), what .. "[" .. i .. "]") end
end

local function fold(op, a, b)
  if op == "sum" then return a + b elseif op == "prod" then return a * b
  elseif op == "max" then if type(a) == "boolean" then return a or b end return math.max(a, b)
  else if type(a) == "boolean" then return a and b end return math.min(a, b) end
end

local function reduced(dt, op, i)
  local acc = val(dt, 0, i)
  for q = 1, n - 1 do acc = fold(op, acc, val(dt, q, i)) end
  return acc
end

local L = 5
local right, left = (r + 1) % n, (r - 1) % n

for _, dt in ipairs(DTYPES) do
  -- sendrecv around the ring (also at one rank: to itself)
  local s, got = filled(dt, r, L), kjit.zeros(L, dt)
  local buf, src, tag = mpi.sendrecv(s, right, got, left, 7)
  same(buf == got, true, "sendrecv returns the array")
  same(src, left, "sendrecv source")
  same(tag, 7, "sendrecv tag")
  check(got, dt, function(i) return val(dt, left, i) end, dt .. " sendrecv")

  -- send/recv in pairs (0->1, 2->3)
  if n >= 2 and r < n - n % 2 then
    if r % 2 == 0 then mpi.send(filled(dt, r, L), r + 1, 3)
    else
      local a = kjit.zeros(L, dt)
      local _, from = mpi.recv(a, r - 1, 3)
      same(from, r - 1, "recv source")
      check(a, dt, function(i) return val(dt, r - 1, i) end, dt .. " recv")
    end
  end

  -- isend/irecv, with a full collection while they are active: the
  -- arrays exist only inside the requests
  do
    local rq = mpi.irecv(kjit.zeros(L, dt), left, 11)
    local sq = mpi.isend(filled(dt, r, L), right, 11)
    collectgarbage("collect")
    collectgarbage("collect")
    local a, from, t = rq:wait()
    same(from, left, "irecv source")
    same(t, 11, "irecv tag")
    check(a, dt, function(i) return val(dt, left, i) end, dt .. " irecv after GC")
    same(sq:wait(), true, "isend wait")
    raises(function() sq:wait() end, "already completed", "second wait")
  end

  -- row views and slices, in place: row 2 of a 3 x L matrix goes to row 3
  -- of the neighbour's; a slice of a 1-D array to a slice
  do
    local m = filled(dt, r, 3 * L, { 3, L })
    local before = m[1][1]
    mpi.sendrecv(m[2], right, m[3], left)
    for j = 1, L do same(m[3][j], as(dt, val(dt, left, L + j)), dt .. " row view") end
    same(m[1][1], before, "row 1 untouched")
    local v = filled(dt, r, 10)
    mpi.sendrecv(v:slice(1, 3), right, v:slice(6, 8), left)
    for j = 1, 3 do same(v[5 + j], as(dt, val(dt, left, j)), dt .. " slice") end
    same(v[9], as(dt, val(dt, r, 9)), "outside the slice")
  end

  -- bcast in place from the last rank
  do
    local a = filled(dt, r, L)
    same(mpi.bcast(a, n - 1), a, "bcast returns the array")
    check(a, dt, function(i) return val(dt, n - 1, i) end, dt .. " bcast")
  end

  -- allreduce and reduce, every op the dtype takes
  local ops = dt == "bool" and { "max", "min" } or { "sum", "max", "min", "prod" }
  for _, op in ipairs(ops) do
    local a = filled(dt, r, L)
    mpi.allreduce(a, op)
    check(a, dt, function(i) return reduced(dt, op, i) end, dt .. " allreduce " .. op)
    local out = kjit.zeros(L, dt)
    mpi.allreduce(filled(dt, r, L), op, out)
    check(out, dt, function(i) return reduced(dt, op, i) end, dt .. " allreduce into " .. op)
    local root = n > 1 and 1 or 0
    local b = filled(dt, r, L)
    local res = mpi.reduce(b, op, root)
    if r == root then
      same(res, b, "reduce returns the array on the root")
      check(b, dt, function(i) return reduced(dt, op, i) end, dt .. " reduce " .. op)
    else
      same(res, nil, "reduce on other ranks")
      check(b, dt, function(i) return val(dt, r, i) end, dt .. " reduce leaves non-roots")
    end
  end
  if dt == "bool" then
    raises(function() mpi.allreduce(filled(dt, r, L), "sum") end, "use \"max\" (or)", "bool sum")
  end

  -- gather / allgather / scatter / alltoall
  do
    local root = n - 1
    local all = r == root and kjit.zeros(n * L, dt) or nil
    local res = mpi.gather(filled(dt, r, L), all, root)
    if r == root then
      same(res, all, "gather returns the array")
      check(all, dt, function(i) return val(dt, (i - 1) // L, (i - 1) % L + 1) end, dt .. " gather")
    else
      same(res, nil, "gather elsewhere")
    end
    local ag = kjit.zeros({ n, L }, dt)
    mpi.allgather(filled(dt, r, L), ag)
    for q = 1, n do for i = 1, L do same(ag[q][i], as(dt, val(dt, q - 1, i)), dt .. " allgather") end end
    local mine = kjit.zeros(L, dt)
    mpi.scatter(r == 0 and filled(dt, 0, n * L) or nil, mine, 0)
    check(mine, dt, function(i) return val(dt, 0, r * L + i) end, dt .. " scatter")
    local out = kjit.zeros(n * 2, dt)
    mpi.alltoall(filled(dt, r, n * 2), out)
    -- block q of out is block r of rank q's array
    check(out, dt, function(i)
      local q, k = (i - 1) // 2, (i - 1) % 2 + 1
      return val(dt, q, r * 2 + k)
    end, dt .. " alltoall")
    -- reduce_scatter: rank r gets block r of every rank's array, reduced
    local op = dt == "bool" and "max" or "sum"
    local part = kjit.zeros(2, dt)
    same(mpi.reduce_scatter(filled(dt, r, n * 2), part, op), part, "reduce_scatter returns the array")
    check(part, dt, function(k)
      local acc = val(dt, 0, r * 2 + k)
      for q = 1, n - 1 do acc = fold(op, acc, val(dt, q, r * 2 + k)) end
      return acc
    end, dt .. " reduce_scatter")
    raises(function() mpi.reduce_scatter(filled(dt, r, n * 2 + 1), part, op) end,
           "elements", dt .. " reduce_scatter size mismatch")
  end
end

-- Arrays of records travel as their bytes; they cannot be reduced
do
  local P = kjit.struct{ { "x", "f64" }, { "n", "i32" } }
  local a, got = kjit.zeros(3, P), kjit.zeros(3, P)
  for i = 1, 3 do a[i].x = r + i / 4; a[i].n = r * 10 + i end
  mpi.sendrecv(a, right, got, left)
  for i = 1, 3 do
    same(got[i].x, left + i / 4, "record field x")
    same(got[i].n, left * 10 + i, "record field n")
  end
  local all = kjit.zeros(3 * n, P)
  mpi.allgather(a, all)
  same(all[3 * n].n, (n - 1) * 10 + 3, "allgather of records")
  raises(function() mpi.allreduce(a, "sum") end, "arrays of records cannot be reduced", "record reduce")
end

-- Integers stay exact (never through doubles): 2^53 + 1 + rank
do
  local big = (1 << 53) + 1
  local a = kjit.zeros(2, "i64")
  a[1], a[2] = big + r, -(big + r)
  mpi.allreduce(a, "sum")
  local want = 0
  for q = 0, n - 1 do want = want + big + q end
  same(a[1], want, "i64 sum exact")
  same(a[2], -want, "i64 negative sum exact")
  local u = kjit.zeros(1, "u64")
  u[1] = big
  mpi.allreduce(u, "max")
  same(u[1], big, "u64 exact")
  same(mpi.allreduce(big + r, "sum"), want, "integer allreduce exact")
  same(mpi.allreduce(big + r, "max"), big + n - 1, "integer max")
  same(mpi.allreduce(0.5 * r, "sum"), 0.5 * (n * (n - 1) // 2), "float allreduce")
  same(mpi.reduce(r + 1, "prod", 0), r == 0 and (function() local p = 1 for q = 1, n do p = p * q end return p end)() or nil, "integer reduce")
  -- every rank raises the same error on mixed subtypes (checked collectively)
  if n > 1 then
    raises(function() mpi.allreduce(r == 0 and 1 or 1.0, "sum") end,
           "some ranks passed an integer and others a float", "mixed subtypes")
  end
end

-- Lua values: numbers keep their subtype, strings their bytes, tables nest
do
  local function value(q) return { q, q + 0.5, "r" .. q .. "\0z", { deep = q % 2 == 0 }, [q + 10] = -q } end
  local function same_value(got, q, what)
    same(got[1], q, what .. " int"); same(got[2], q + 0.5, what .. " float")
    same(got[3], "r" .. q .. "\0z", what .. " string"); same(got[4].deep, q % 2 == 0, what .. " nested")
    same(got[q + 10], -q, what .. " hash key")
  end
  local got, src = mpi.sendrecv(value(r), right, nil, left, 4)
  same_value(got, left, "sendrecv value")
  same(src, left, "sendrecv value source")
  same(mpi.sendrecv(math.maxinteger - r, right, nil, left), math.maxinteger - left, "integer message")
  same(mpi.sendrecv(-0.0, right, nil, left), -0.0, "float message")
  same(1 / mpi.sendrecv(-0.0, right, nil, left), -math.huge, "minus zero kept")
  if n >= 2 then
    if r == 0 then mpi.send("hello", 1, 9) elseif r == 1 then
      local v, from, t = mpi.recv(nil, mpi.ANY_SOURCE, mpi.ANY_TAG)
      same(v, "hello", "recv string"); same(from, 0, "ANY_SOURCE"); same(t, 9, "ANY_TAG")
    end
  end
  local b = mpi.bcast(r == 0 and value(0) or nil, 0)
  same_value(b, 0, "bcast value")
  local g = mpi.gather(value(r), nil, 0)
  if r == 0 then for q = 0, n - 1 do same_value(g[q + 1], q, "gather value") end else same(g, nil, "gather value elsewhere") end
  local ag = mpi.allgather(r * 3)
  for q = 0, n - 1 do same(ag[q + 1], q * 3, "allgather number") end
  local sc
  if r == 0 then local t = {} for q = 0, n - 1 do t[q + 1] = value(q) end sc = mpi.scatter(t, nil, 0)
  else sc = mpi.scatter(nil, nil, 0) end
  same_value(sc, r, "scatter value")
  local sendt = {}
  for q = 0, n - 1 do sendt[q + 1] = ("%d->%d"):format(r, q) end
  local at = mpi.alltoall(sendt)
  for q = 0, n - 1 do same(at[q + 1], ("%d->%d"):format(q, r), "alltoall value") end
  raises(function() mpi.send(function() end, right) end, "expected, got function", "send a function")
  raises(function() mpi.send({ kjit.zeros(2) }, right) end, "send the array itself", "array in a table")
end

-- errors are Lua errors, with the user's line: a truncated receive
do
  if n >= 2 and r < 2 then
    if r == 0 then mpi.send(kjit.zeros(8, "f64"), 1, 21)
    else
      local err = raises(function() mpi.recv(kjit.zeros(2, "f64"), 0, 21) end, "kjit.mpi: recv:", "truncated")
      same(err:match("^[^:]+test_calls%.lua:%d+:") ~= nil, true, "error located: " .. err)
    end
  end
  raises(function() mpi.allreduce(kjit.zeros(2), "avg") end, "invalid option 'avg'", "bad op")
  raises(function() mpi.allreduce(kjit.zeros(2), "sum", kjit.zeros(3)) end, "3 elements, 2 expected", "size mismatch")
  raises(function() mpi.irecv("x", 0) end, "or nil to receive a Lua value", "irecv of a string buffer")
  raises(function() mpi.bcast(kjit.zeros(1), n) end, "root is not a rank", "bad root")
end

-- irecv of Lua values: strings, numbers (both subtypes), tables, through a
-- full collection, with wait and with test, on COMM_WORLD and a communicator
do
  local values = { "str" .. r, r * 10, r + 0.5, { r, "t", { deep = r }, [2.5] = true } }
  local reqs = {}
  for k = 1, #values do reqs[k] = mpi.irecv(nil, left, 50 + k) end
  collectgarbage("collect")
  for k = 1, #values do mpi.send(values[k], right, 50 + k) end
  collectgarbage("collect")
  local function want(k, q)
    if k == 1 then return "str" .. q elseif k == 2 then return q * 10 else return q + 0.5 end
  end
  for k = 1, 3 do
    local v, from, t = reqs[k]:wait()
    same(v, want(k, left), "irecv value " .. k)
    same(from, left, "irecv value source")
    same(t, 50 + k, "irecv value tag")
  end
  local done, v, from = false, nil, nil
  repeat done, v, from = reqs[4]:test() until done
  same(v[1], left, "irecv table [1]"); same(v[2], "t", "irecv table [2]")
  same(v[3].deep, left, "irecv nested table"); same(v[2.5], true, "irecv float key")
  same(from, left, "test() source")
  raises(function() reqs[4]:wait() end, "already completed", "value request waited twice")
  same(tostring(reqs[1]):find("irecv of a Lua value", 1, true) ~= nil, true, "tostring")
  -- ANY_SOURCE, PROC_NULL, and a communicator of its own
  local q = mpi.irecv(nil, mpi.ANY_SOURCE, 60)
  mpi.send(r, right, 60)
  local v2, from2 = q:wait()
  same(v2, left, "irecv ANY_SOURCE value"); same(from2, left, "ANY_SOURCE source")
  local pn, ps = mpi.irecv(nil, mpi.PROC_NULL):wait()
  same(pn, nil, "PROC_NULL value"); same(ps, mpi.PROC_NULL, "PROC_NULL source")
  local sub = mpi.comm_split(0, r)
  local sq = sub:irecv(nil, left, 61)
  sub:send({ from = r }, right, 61)
  same(sq:wait().from, left, "irecv value on a communicator")
  local dead = sub:irecv(nil, left, 62)
  sub:free()
  raises(function() dead:wait() end, "communicator was freed", "irecv after comm:free")
  -- a value request dropped unmatched: its message stays for a later recv
  mpi.irecv(nil, left, 63)
  collectgarbage("collect")
  mpi.send("kept", right, 63)
  same((mpi.recv(nil, left, 63)), "kept", "message of a dropped value request")
end

-- a request dropped while active: its buffers stay alive until it completes
do
  local a = kjit.zeros(1000, "f64")
  for i = 1, 1000 do a[i] = r * 1000 + i end
  mpi.isend(a, right, 31)   -- the request is garbage at once
  a = nil
  collectgarbage("collect")
  local got = kjit.zeros(1000, "f64")
  mpi.recv(got, left, 31)
  for i = 1, 1000, 111 do same(got[i], left * 1000 + i + 0.0, "dropped request's data") end
  -- test() polls
  local q = mpi.irecv(kjit.zeros(1, "i32"), left, 32)
  mpi.send(kjit.array({ r }, "i32"), right, 32)
  local done, arr
  repeat done, arr = q:test() until done
  same(arr[1], left, "test() completes")
end

-- communicators
do
  local sub = mpi.comm_split(r % 2, r)
  same(sub:size(), (n - r % 2 + 1) // 2, "split size")
  same(sub:rank(), r // 2, "split rank")
  same(sub:allreduce(r, "sum"), (function() local s = 0 for q = r % 2, n - 1, 2 do s = s + q end return s end)(), "split allreduce")
  local d = mpi.COMM_WORLD:dup()
  same(d:rank(), r, "dup rank")
  local a = kjit.zeros(1, "i32")
  a[1] = r
  d:bcast(a, 0)
  same(a[1], 0, "dup bcast")
  same(mpi.comm_split(nil, 0), nil, "MPI_UNDEFINED color")
  sub:free()
  raises(function() sub:rank() end, "after comm:free()", "freed communicator")
  same(mpi.local_rank(), r, "one node: local rank is the rank")
  local t0 = mpi.wtime()
  mpi.barrier()
  same(mpi.wtime() >= t0, true, "wtime")
end

-- device arrays: the simulator (staged through host memory)
do
  cuda.simulate(true)
  same(mpi.cuda_aware(), false, "cuda_aware here")
  for _, dt in ipairs({ "i32", "f64", "u8" }) do
    local d = cuda.to_device(filled(dt, r, L))
    mpi.allreduce(d, "sum")
    check(d:copy_to_host(), dt, function(i) return reduced(dt, "sum", i) end, dt .. " device allreduce")
    local got = cuda.to_device(kjit.zeros(L, dt))
    mpi.sendrecv(cuda.to_device(filled(dt, r, L)), right, got, left)
    check(got:copy_to_host(), dt, function(i) return val(dt, left, i) end, dt .. " device sendrecv")
    local rq = mpi.irecv(cuda.to_device(kjit.zeros(L, dt)), left, 41)
    local sq = mpi.isend(cuda.to_device(filled(dt, r, L)), right, 41)
    collectgarbage("collect")
    sq:wait()
    check(rq:wait():copy_to_host(), dt, function(i) return val(dt, left, i) end, dt .. " device irecv")
    local b = cuda.to_device(filled(dt, r, L))
    mpi.bcast(b, 0)
    check(b:copy_to_host(), dt, function(i) return val(dt, 0, i) end, dt .. " device bcast")
  end
  cuda.simulate(false)
end

-- the pool: results in item order on every rank; an error raised everywhere
do
  local items = {}
  for i = 1, 10 do items[i] = i * i end
  local res = mpi.pool():map(function(x) return x + mpi.rank() * 0 + 1 end, r == 0 and items or nil)
  same(res.n, 10, "pool count")
  for i = 1, 10 do same(res[i], i * i + 1, "pool result " .. i) end
  local jf = kjit.jit(function(x) return x * 2.5 end)
  local res2 = mpi.pool():map(jf, items)
  for i = 1, 10 do same(res2[i], i * i * 2.5, "pool jit result") end
  raises(function()
    mpi.pool():map(function(x) if x == 3 then error("three!") end return x end, { 1, 2, 3, 4 })
  end, "item 3 failed on rank " .. (2 % n), "pool error")
end

-- compile_once: rank 0 compiles into the (shared) disk cache, the others
-- only load; a function without the cache is an error on every rank
do
  local dir = os.getenv("KJIT_TEST_MPI_CACHE")
  if dir then
    kjit.cache_dir(dir)
    -- a fresh function text per run, so that nothing is in the cache yet
    local stamp = mpi.bcast(r == 0 and ("%d-%d-%.9f"):format(os.time(), n, mpi.wtime()) or nil, 0)
    local f = kjit.jit(load("return function(a, k) local s = 0.0 for i = 1, #a do s = s + a[i] * k end return s -- "
                            .. stamp .. "\nend")(), { cache = true })
    local before = kjit.cache_stats()
    mpi.compile_once(f, "f64(f64[:], f64)")
    local after = kjit.cache_stats()
    if r == 0 then same(after.stores - before.stores, 1, "rank 0 stored the code")
    else
      same(after.hits - before.hits, 1, "rank " .. r .. " loaded the code")
      same(after.misses - before.misses, 0, "rank " .. r .. " compiled nothing")
    end
    same(f(kjit.array({ 1, 2, 3 }, "f64"), 2.0), 12.0, "compiled function runs")
    local g = kjit.jit(function(x) return x + 1 end)   -- no cache
    if n > 1 then
      raises(function() mpi.compile_once(g, "i64(i64)") end, "without {cache = true}",
             "compile_once without the cache")
    end
  end
end

mpi.barrier()
local total = mpi.allreduce(checks, "sum")
if r == 0 then print(("test_calls: %d ranks, %d checks passed"):format(n, total)) end
