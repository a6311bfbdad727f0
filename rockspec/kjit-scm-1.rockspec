-- kjit: Numba for Lua 5.4. Build and install from a checkout with
--   luarocks --lua-version 5.4 make            (or: make rockspec/kjit-scm-1.rockspec)
-- Needs CMake, pkg-config, Lua 5.4 headers and LLVM 14 (Debian: llvm-14-dev).
rockspec_format = "3.0"
package = "kjit"
version = "scm-1"
source = {
   url = "git+https://example.invalid/kjit.git",
}
description = {
   summary = "Numba for Lua 5.4: compile numeric Lua functions over typed buffers with LLVM",
   detailed = [[
kjit specializes plain numeric Lua functions on the types they are called
with and compiles them through LLVM to native code (a GPU path through
libNVVM is planned). Typed, 1-based buffers (kjit.zeros, kjit.array, ...)
hold the data.]],
   labels = { "jit", "llvm", "cuda", "numeric" },
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "Release",
      CMAKE_INSTALL_PREFIX = "$(PREFIX)",
      KJIT_TESTS = "OFF",
      KJIT_INSTALL_LIBDIR = "$(LIBDIR)",
   },
}
