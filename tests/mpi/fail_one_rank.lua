-- tests/mpi/fail_one_rank.lua: the last rank raises an error while every
-- other rank waits in a collective it will never finish. Run through the
-- launcher, the job must end at once, naming the rank and the error
-- (tests/mpi/check_failure.lua).
local kjit = require "kjit"
local mpi = require "kjit.mpi"
local r, n = mpi.rank(), mpi.size()
local f = kjit.jit(function(a, i) return a[i] end)
mpi.barrier()
if r == n - 1 then
  print(f(kjit.zeros(3), 4))   -- an error in compiled code (line 8: a[i] out of bounds)
end
mpi.allreduce(1, "sum")   -- the other ranks wait here
print("rank " .. r .. " went past the collective")
