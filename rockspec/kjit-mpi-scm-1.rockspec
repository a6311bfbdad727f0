-- kjit-mpi: MPI for kjit arrays (require "kjit.mpi"). Build and install
-- from a checkout, after kjit itself:
--   luarocks --lua-version 5.4 make rockspec/kjit-mpi-scm-1.rockspec
-- Needs CMake (3.21 or later), a C compiler and an MPI with its compiler
-- wrapper (Debian: openmpi-bin libopenmpi-dev; or MPICH): CMake's
-- FindMPI asks the wrapper (mpicc) for the flags, so the module is built
-- for the MPI whose mpicc comes first on PATH. At run time it needs kjit,
-- which it finds through the Lua registry (kjit_ext.h), not by linking.
rockspec_format = "3.0"
package = "kjit-mpi"
version = "scm-1"
source = {
   url = "git+https://github.com/kjit-lua/kjit.git",
}
description = {
   summary = "MPI for kjit: arrays and device arrays sent without copies, compiled code shipped once",
   detailed = [[
kjit.mpi binds MPI for kjit (Numba for Lua 5.4): point to point and
collective calls on kjit arrays, their row views and slices (passed to MPI
in place), device arrays, and Lua values; communicators; non-blocking
requests that keep their buffers alive; mpi.compile_once to compile on
rank 0 into the shared disk cache and load everywhere else; a task pool;
and a launcher (lua5.4 -l kjit.mpi.run, kjit-mpirun) with which an error
on one rank ends the whole job.]],
   homepage = "https://github.com/kjit-lua/kjit",
   license = "MIT",
   labels = { "mpi", "hpc", "jit", "numeric" },
}
dependencies = {
   "lua >= 5.4, < 5.5",
   "kjit",
}
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "Release",
      CMAKE_INSTALL_PREFIX = "$(PREFIX)",
      LUA_INCLUDE_DIR = "$(LUA_INCDIR)",
      LUA_EXECUTABLE = "$(LUA)",
      -- only kjit.mpi: no LLVM needed for this rock
      KJIT_MPI_ONLY = "ON",
      KJIT_INSTALL_CMODDIR = "$(LIBDIR)",
      KJIT_INSTALL_LMODDIR = "$(LUADIR)",
   },
}
