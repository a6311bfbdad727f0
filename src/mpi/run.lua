-- kjit.mpi.run: runs a script on every rank so that an uncaught error on
-- one rank ends the whole job (in the style of python -m mpi4py):
--
--   mpirun -np 4 lua5.4 -l kjit.mpi.run script.lua [args]
--   kjit-mpirun -np 4 script.lua [args]          (the same)
--
-- lua5.4 makes `arg` before it loads -l modules, so this module runs the
-- script itself (with its arguments), then exits: lua5.4 never gets to run
-- it a second time. On an error it prints "kjit.mpi: rank R of N: message"
-- and the traceback to stderr and calls MPI_Abort, which ends every rank
-- (one rank left in a collective would otherwise wait forever). On success
-- it finalizes MPI and exits with status 0.
local mpi = require "kjit.mpi"
local script = arg and arg[0]
if script == nil or script == "" or script:match("^%-") then
  io.stderr:write("kjit.mpi.run: usage: mpirun -np N lua5.4 -l kjit.mpi.run script.lua [args]\n")
  mpi.abort(2)
end
local function fail(msg)
  io.stderr:write(("kjit.mpi: rank %d of %d: %s\n"):format(mpi.rank(), mpi.size(), msg))
  io.stderr:flush()
  io.stdout:flush()
  mpi.abort(1)
end
local chunk, err = loadfile(script)
if not chunk then fail(err) end
local ok, e = xpcall(chunk, function(m)
  return debug.traceback(type(m) == "string" and m or tostring(m), 2)
end, table.unpack(arg, 1, #arg))
if not ok then fail(e) end
io.stdout:flush()
mpi.finalize()
os.exit(0, true)
