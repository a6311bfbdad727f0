-- tests/mpi/check_failure.lua <build dir> <np> <launcher> [mpirun options...]
-- Runs tests/mpi/fail_one_rank.lua under MPI through the launcher
-- ("run": mpirun lua5.4 -l kjit.mpi.run; "script": build/kjit-mpirun) or
-- without it ("plain": mpirun lua5.4 script) and checks that the job ends
-- (well before its time limit), fails, and says what failed, at the
-- script's line (and, through the launcher, which rank).
local build, np, how = arg[1], tonumber(arg[2]), arg[3]
local opts = table.concat(arg, " ", 4)
local lua = "lua5.4"
local cmd
if how == "script" then
  cmd = ("%s/kjit-mpirun %s -np %d tests/mpi/fail_one_rank.lua"):format(build, opts, np)
elseif how == "plain" then
  cmd = ("mpirun %s -np %d %s tests/mpi/fail_one_rank.lua"):format(opts, np, lua)
else
  cmd = ("mpirun %s -np %d %s -l kjit.mpi.run tests/mpi/fail_one_rank.lua"):format(opts, np, lua)
end
local t0 = os.time()
local p = io.popen("timeout 100 " .. cmd .. " 2>&1; echo \"exit=$?\"")
local out = p:read("a")
p:close()
local elapsed = os.time() - t0
local rc = tonumber(out:match("exit=(%d+)%s*$"))
local function fail(msg)
  io.stderr:write(out, "\n")
  error(msg, 0)
end
if rc == 124 then fail("the job hung (killed by timeout after 100 s)") end
if rc == 0 then fail("the job succeeded: it should have failed") end
local bad = np - 1
local want = ("kjit.mpi: rank %d of %d: tests/mpi/fail_one_rank.lua:8: index 4 out of bounds [1, 3]"):format(bad, np)
if how == "plain" then want = "tests/mpi/fail_one_rank.lua:8: index 4 out of bounds [1, 3]" end
if not out:find(want, 1, true) then fail("no line '" .. want .. "' in the output") end
if out:find("went past the collective", 1, true) then fail("a rank went on after the failure") end
print(("check_failure: %d ranks (%s): exit %d after %d s, message found"):format(np, how, rc, elapsed))
