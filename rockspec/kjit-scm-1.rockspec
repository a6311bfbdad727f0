-- kjit: Numba for Lua 5.4. Build and install from a checkout with
--   luarocks --lua-version 5.4 make rockspec/kjit-scm-1.rockspec
-- (always with --lua-version 5.4: LuaRocks' default Lua may be 5.1 or 5.3,
-- and then it fails with "Failed finding Lua header files" or builds for it)
-- Needs CMake (3.21 or later), a C11 compiler, the headers of a Lua 5.4
-- (LuaRocks' LUA_INCDIR) and LLVM 14 (llvm-config-14; Debian: llvm-14-dev).
rockspec_format = "3.0"
package = "kjit"
version = "scm-1"
-- The address the project is to be published at (not public yet): until
-- then, build from a checkout with `luarocks make` as above.
source = {
   url = "git+https://github.com/kjit-lua/kjit.git",
}
description = {
   summary = "Numba for Lua 5.4: numeric Lua functions compiled to native code and GPU kernels",
   detailed = [[
kjit specializes plain numeric Lua 5.4 functions on the types they are
called with and compiles them through LLVM to native code for the host CPU
(kjit.jit), with typed, 1-based buffers (kjit.zeros, kjit.array, ...) to
hold the data. kjit.cuda compiles Lua kernels to PTX with libNVVM and
launches them on NVIDIA GPUs through the CUDA driver (both loaded at run
time: CUDA is not needed to build), or runs them in a simulator on the
CPU. kjit.vectorize, kjit.guvectorize, kjit.reduce and kjit.prange bring
Numba's array programming and parallel loops. Errors are Lua errors at the
user's file:line. kjit is written in C and is also a library (libkjit.so,
kjit.h) for C programs that embed Lua.]],
   homepage = "https://github.com/kjit-lua/kjit",
   license = "MIT",
   labels = { "jit", "llvm", "cuda", "gpu", "numeric", "compiler" },
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "Release",
      CMAKE_INSTALL_PREFIX = "$(PREFIX)",
      -- the Lua LuaRocks builds for, whatever pkg-config knows (the module
      -- links no Lua library: the interpreter provides the Lua API)
      LUA_INCLUDE_DIR = "$(LUA_INCDIR)",
      LUA_EXECUTABLE = "$(LUA)",
      -- only the Lua module, into the tree's C module directory
      KJIT_INSTALL_CMODDIR = "$(LIBDIR)",
      KJIT_INSTALL_DEV = "OFF",
      KJIT_TESTS = "OFF",
      KJIT_EXAMPLES = "OFF",
   },
}
