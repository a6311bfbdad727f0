/*
** lmpi_lua.c: the parts of kjit.mpi written in Lua over its C functions:
**
** mpi.compile_once(f, signature [, comm]): rank 0 compiles f for the
**   signature (into the disk cache: f must be made with {cache = true} and
**   every rank must see the same cache directory); the broadcast of its
**   outcome is the barrier after which the other ranks load the code in
**   load-only mode (kjit_ext.h's cache_load_only): they never compile, and
**   a miss is an error on every rank, not a silent compile.
**
** mpi.pool([comm]):map(f, items): the items of rank 0 (a sequence) are
**   shared out cyclically (item i to rank (i-1) % size: no master rank
**   spinning in MPI while it waits, which matters on oversubscribed cores)
**   and the results come back to every rank in item order. An error in f
**   on any rank is raised on every rank (naming the item and the rank), so
**   no rank is left waiting for the others.
*/
#include "lmpi.h"

static const char lua_part[] =
"local M = ...\n"
"local function errs_of(comm, mine)\n"
"  local all = comm:allgather(mine or false)\n"
"  for r = 1, #all do if all[r] then return r - 1, all[r] end end\n"
"end\n"
"function M.compile_once(f, sig, comm)\n"
"  comm = comm or M.COMM_WORLD\n"
"  local rank = comm:rank()\n"
"  local ok, err = true, nil\n"
"  if rank == 0 then ok, err = pcall(f.compile, f, sig) end\n"
"  local e0 = comm:bcast(ok and '' or tostring(err), 0)\n"
"  if e0 ~= '' then error('compile_once: rank 0 could not compile: ' .. e0, 2) end\n"
"  if rank ~= 0 then\n"
"    local was = M._load_only(true)\n"
"    ok, err = pcall(f.compile, f, sig)\n"
"    M._load_only(was)\n"
"  end\n"
"  local r, e = errs_of(comm, not ok and tostring(err))\n"
"  if r then error(('compile_once: rank %d: %s'):format(r, e), 2) end\n"
"  return f\n"
"end\n"
"local Pool = {}\n"
"Pool.__index = Pool\n"
"function M.pool(comm)\n"
"  return setmetatable({ comm = comm or M.COMM_WORLD }, Pool)\n"
"end\n"
"function Pool:map(f, items)\n"
"  local comm = self.comm\n"
"  local rank, size = comm:rank(), comm:size()\n"
"  if rank == 0 and type(items) ~= 'table' then\n"
"    error('pool:map: items must be a table (a sequence) on rank 0', 2)\n"
"  end\n"
"  items = comm:bcast(rank == 0 and items or false, 0)\n"
"  local n = #items\n"
"  local mine, err = { n = 0 }, false\n"
"  for i = rank + 1, n, size do\n"
"    local ok, r = pcall(f, items[i])\n"
"    if not ok then err = ('item %d failed on rank %d: %s'):format(i, rank, tostring(r)); break end\n"
"    mine.n = mine.n + 1\n"
"    mine[mine.n] = r\n"
"  end\n"
"  local all = comm:allgather({ mine, err })\n"
"  for r = 1, size do\n"
"    if all[r][2] then error('pool:map: ' .. all[r][2], 2) end\n"
"  end\n"
"  local out = { n = n }\n"
"  for r = 1, size do\n"
"    local part = all[r][1]\n"
"    for k = 1, part.n do out[(r - 1) + (k - 1) * size + 1] = part[k] end\n"
"  end\n"
"  return out\n"
"end\n";

void lm_open_lua(lua_State *L, int modidx) {
  if (luaL_loadbufferx(L, lua_part, sizeof lua_part - 1, "=kjit/mpi.lua", "t") != LUA_OK)
    lua_error(L);
  lua_pushvalue(L, modidx);
  lua_call(L, 1, 0);
}
