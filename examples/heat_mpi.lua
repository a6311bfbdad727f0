-- examples/heat_mpi.lua: the 2-D heat equation (explicit 5-point stencil)
-- on a grid split by rows among MPI ranks, with a halo exchange of one
-- row each way per step (sendrecv of row views: no copies) and the
-- stencil compiled by kjit.jit. Every cell is computed by the same
-- arithmetic whatever the split, so the result is bit-identical to the
-- one-rank run at every rank count (--check verifies it on rank 0).
--
--   mpirun -np 4 lua5.4 -l kjit.mpi.run examples/heat_mpi.lua [rows cols steps] [--weak] [--check]
--   kjit-mpirun -np 4 examples/heat_mpi.lua 512 512 200 --check
--   ... --gpu: one device per rank (mpi.local_rank()), device arrays and a
--   cuda.jit stencil; the edge rows are packed into small device arrays
--   for the exchange (device arrays have no row views). Without a GPU it
--   runs in the simulator. (A GPU contracts a*b+c into one FMA, so its
--   result is bit-identical to the one-rank GPU run, not to the CPU's.)
--
-- rows is the global number of rows (--weak: rows per rank). Prints, from
-- rank 0, the time of the time loop (the slowest rank's wall time, and the
-- largest CPU time of a rank: os.clock) and a checksum.
local kjit = require "kjit"
local mpi = require "kjit.mpi"
local solve_gpu   -- (defined below)

local rank, size = mpi.rank(), mpi.size()
local nums, weak, check, gpu, profile, overlap = {}, false, false, false, false, false
for _, a in ipairs(arg or {}) do
  if a == "--weak" then weak = true elseif a == "--check" then check = true
  elseif a == "--gpu" then gpu = true elseif a == "--profile" then profile = true
  elseif a == "--overlap" then overlap = true
  else nums[#nums + 1] = assert(math.tointeger(tonumber(a)), "integer arguments expected") end
end
local NX, NY, STEPS = nums[1] or 256, nums[2] or 256, nums[3] or 100
if weak then NX = NX * size end
local ALPHA = 0.2

-- One step on rows ifirst..ilast of u (halo rows around them), into v.
local step = kjit.jit(function(u, v, ifirst, ilast, alpha)
  local cols = #u[1]
  for i = ifirst, ilast do
    for j = 2, cols - 1 do
      local c = u[i][j]
      v[i][j] = c + alpha * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4.0 * c)
    end
  end
end)
step:compile("void(f64[:,:], f64[:,:], i64, i64, f64)")

-- The same on a device: the stencil, and the copies of one row to and
-- from a contiguous device array (for the halo exchange).
local cuda = kjit.cuda
local kstep = cuda.jit(function(u, v, ifirst, ilast, alpha)
  local j, i = cuda.grid(2)
  i = i + ifirst - 1
  if i <= ilast and j > 1 and j < u.shape[2] then
    local c = u[i][j]
    v[i][j] = c + alpha * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4.0 * c)
  end
end)
local kget = cuda.jit(function(u, row, buf)
  local j = cuda.grid(1)
  if j <= #buf then buf[j] = u[row][j] end
end)
local kput = cuda.jit(function(u, row, buf)
  local j = cuda.grid(1)
  if j <= #buf then u[row][j] = buf[j] end
end)
if gpu then
  if cuda.is_available() then cuda.select_device(mpi.local_rank() % #cuda.devices())
  else cuda.simulate(true) end
end

-- The initial temperature of global cell (g, j): a hot top edge, a
-- pattern inside; the edges never change (Dirichlet).
local function initial(g, j)
  if g == 1 then return 1.0 end
  if g == NX or j == 1 or j == NY then return 0.0 end
  return ((g * 31 + j * 17) % 10) / 10
end

-- Rows lo..hi of the global grid belong to rank q (blocks differ by at
-- most one row).
local function block(q, nranks)
  local base, extra = NX // nranks, NX % nranks
  local lo = q * base + math.min(q, extra) + 1
  return lo, lo + base - 1 + (q < extra and 1 or 0)
end

-- The time loop on the device; returns the owned rows, copied back.
solve_gpu = function(comm, hu, hv, n, up, down, ifirst, ilast, lo, hi)
  local u, v = cuda.to_device(hu), cuda.to_device(hv)
  local sendup, senddown = cuda.device_array(NY, "f64"), cuda.device_array(NY, "f64")
  local fromup, fromdown = cuda.device_array(NY, "f64"), cuda.device_array(NY, "f64")
  local rowcfg = { (NY + 127) // 128, 128 }
  local cfg = { { (NY + 15) // 16, (ilast - ifirst + 1 + 15) // 16 }, { 16, 16 } }
  if comm then comm:barrier() end
  local t0, c0 = mpi.wtime(), os.clock()
  for _ = 1, STEPS do
    if comm then
      kget[rowcfg](u, 2, sendup)
      kget[rowcfg](u, n + 1, senddown)
      comm:sendrecv(sendup, up, fromdown, down, 1)
      comm:sendrecv(senddown, down, fromup, up, 2)
      if down ~= mpi.PROC_NULL then kput[rowcfg](u, n + 2, fromdown) end
      if up ~= mpi.PROC_NULL then kput[rowcfg](u, 1, fromup) end
    end
    if ilast >= ifirst then kstep[cfg](u, v, ifirst, ilast, ALPHA) end
    u, v = v, u
  end
  cuda.synchronize()
  local t, c = mpi.wtime() - t0, os.clock() - c0
  return u:copy_to_host():slice(2, n + 1), t, lo, hi, c
end

-- Solves on ranks 0..nranks-1 of comm (nil: alone); returns this rank's
-- owned rows (a view) and the time of the loop.
local function solve(comm, me, nranks)
  local lo, hi = block(me, nranks)
  local n = hi - lo + 1
  -- local rows 2..n+1 are global rows lo..hi; rows 1 and n+2 are halos
  local u, v = kjit.zeros({ n + 2, NY }), kjit.zeros({ n + 2, NY })
  for k = 1, n do
    for j = 1, NY do
      local x = initial(lo + k - 1, j)
      u[k + 1][j] = x
      v[k + 1][j] = x
    end
  end
  local up = me > 0 and me - 1 or mpi.PROC_NULL
  local down = me < nranks - 1 and me + 1 or mpi.PROC_NULL
  -- the global edge rows are not updated
  local ifirst = lo == 1 and 3 or 2
  local ilast = hi == NX and n or n + 1
  if gpu then return solve_gpu(comm, u, v, n, up, down, ifirst, ilast, lo, hi) end
  if comm then comm:barrier() end
  local t0, c0 = mpi.wtime(), os.clock()
  local xc, xw = 0.0, 0.0   -- --profile: CPU and wall time in the exchanges
  -- rows that read no halo row: computed while the halos are on their way
  local inner1, inner2 = math.max(ifirst, 3), math.min(ilast, n)
  for _ = 1, STEPS do
    if comm and overlap then
      local c1, w1
      if profile then c1, w1 = os.clock(), mpi.wtime() end
      local r1, r2 = comm:irecv(u[n + 2], down, 1), comm:irecv(u[1], up, 2)
      local s1, s2 = comm:isend(u[2], up, 1), comm:isend(u[n + 1], down, 2)
      if profile then xc, xw = xc + os.clock() - c1, xw + mpi.wtime() - w1 end
      step(u, v, inner1, inner2, ALPHA)
      if profile then c1, w1 = os.clock(), mpi.wtime() end
      r1:wait(); r2:wait(); s1:wait(); s2:wait()
      if profile then xc, xw = xc + os.clock() - c1, xw + mpi.wtime() - w1 end
      if ifirst <= 2 and 2 <= ilast then step(u, v, 2, 2, ALPHA) end
      if n + 1 > 2 and ifirst <= n + 1 and n + 1 <= ilast then step(u, v, n + 1, n + 1, ALPHA) end
    else
      if comm then
        local c1, w1
        if profile then c1, w1 = os.clock(), mpi.wtime() end
        comm:sendrecv(u[2], up, u[n + 2], down, 1)       -- first row up, bottom halo from below
        comm:sendrecv(u[n + 1], down, u[1], up, 2)       -- last row down, top halo from above
        if profile then xc, xw = xc + os.clock() - c1, xw + mpi.wtime() - w1 end
      end
      step(u, v, ifirst, ilast, ALPHA)
    end
    u, v = v, u
  end
  local t, c = mpi.wtime() - t0, os.clock() - c0
  if profile and comm then
    -- per rank: the loop's CPU time, that of the exchanges (MPI's polling
    -- included), the rest (the stencil); wall time of the exchanges
    local all = comm:gather(("rank %d: cpu %.3f s = exchange %.3f + stencil %.3f; wall %.3f s, exchange %.3f")
                            :format(me, c, xc, c - xc, t, xw), nil, 0)
    if me == 0 then for _, line in ipairs(all) do print("heat_mpi --profile " .. line) end end
  end
  return u:slice(2, n + 1), t, lo, hi, c
end

local mine, t, lo, hi, cpu = solve(mpi.COMM_WORLD, rank, size)
local tmax, cpumax = mpi.allreduce(t, "max"), mpi.allreduce(cpu, "max")

-- Rank 0 collects the rows: each rank sends its block, received straight
-- into a slice of the full grid.
local full
if rank == 0 then
  full = kjit.zeros({ NX, NY })
  for q = 0, size - 1 do
    local qlo, qhi = block(q, size)
    if q == 0 then
      for k = 1, qhi - qlo + 1 do full[qlo + k - 1] = mine[k] end
    else
      mpi.recv(full:slice(qlo, qhi), q, 9)
    end
  end
else
  mpi.send(mine, 0, 9)
end

if rank == 0 then
  local sum = kjit.jit(function(a)
    local s = 0.0
    for i = 1, #a do for j = 1, #a[1] do s = s + a[i][j] end end
    return s
  end)
  print(("heat_mpi%s: %d rank(s), %d x %d grid, %d steps: %.3f s (slowest rank), cpu %.3f s, checksum %.17g")
        :format(gpu and (cuda.simulating() and " (GPU variant, simulator)" or " (GPU variant)") or "", size, NX, NY, STEPS, tmax, cpumax, sum(full)))
  if check then
    local ref = solve(nil, 0, 1)
    local same = kjit.jit(function(a, b)
      for i = 1, #a do for j = 1, #a[1] do if a[i][j] ~= b[i][j] then return i * 1000000 + j end end end
      return 0
    end)
    local diff = same(full, ref)
    if diff ~= 0 then
      error(("heat_mpi: differs from the one-rank run at row %d, column %d"):format(diff // 1000000, diff % 1000000))
    end
    print("heat_mpi: bit-identical to the one-rank run")
  end
end
