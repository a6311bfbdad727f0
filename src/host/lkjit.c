/*
** lkjit.c: the Lua module. require "kjit" runs luaopen_kjit, which builds
** the module table from each stage's registration function:
**
**   Lua function --lua_dump--> bytecode (frontend/) -> SSA IR (ir/)
**     -> types (ir/ir_type.c) -> LLVM IR (codegen/), driven by
**     host/driver.c -> cpu.c (O3 + ORC LLJIT) -> jit.c (dispatcher, call path)
**   buffer.c: typed buffers, shared by all of the above.
*/
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "kjit.h"
#include "host/buffer.h"
#include "host/record.h"
#include "host/jit.h"
#include "host/kernel.h"
#include "host/cudadrv.h"
#include "host/lua_parts.h"
#include "host/sysinfo.h"
#include "libs/lblas.h"
#include "host/capi_registry.h"
#include "runtime/parallel.h"
#include "backend/llvm_load.h"
#include "common/clock.h"
#include "libs/libs.h"

#ifndef KJIT_VERSION
#define KJIT_VERSION "0.0.0"
#endif
#ifndef KJIT_LLVM_VERSION
#define KJIT_LLVM_VERSION "unknown"
#endif

/* Loaded into Lua 5.1, 5.3 or LuaJIT, the Lua API functions new in 5.4 are
** NULL (CMakeLists.txt makes every Lua API reference weak): refuse with
** a message instead of crashing. lua_pushstring and lua_error have the same
** ABI in every Lua since 5.1, so the message reaches the user's require. */
#pragma weak lua_newuserdatauv
static int not_lua54(lua_State *L) {
  void *(*volatile newud)(lua_State *, size_t, int) = lua_newuserdatauv;
  if (newud) return 0;
  lua_pushstring(L, "kjit needs Lua 5.4: this kjit.so was loaded by another Lua "
                    "(5.1, 5.2, 5.3 or LuaJIT); run your script with lua5.4");
  return 1;
}

/* kjit.load_llvm(): loads the LLVM library now rather than on the first
** compile (backend/llvm_load.h); returns the milliseconds that took, 0
** when it was loaded already (or is linked into kjit). A program may call
** it where a pause does not matter (a loading screen), so that its first
** compile is only the compile. */
static int l_load_llvm(lua_State *L) {
  double t0 = k_now_ms();
  int was = kjit_llvm_loaded();
  const char *err = NULL;
  if (kjit_llvm_load(&err) != 0) return luaL_error(L, "kjit: %s", err);
  lua_pushnumber(L, was ? 0.0 : k_now_ms() - t0);
  return 1;
}

KJIT_API int luaopen_kjit(lua_State *L) {
  if (not_lua54(L)) return lua_error(L);
  luaL_checkversion(L);
  lua_newtable(L);
  kb_open(L);
  krec_open(L);
  kd_open(L);
  kp_open(L);
  lua_newtable(L); kcu_open(L); kk_open(L); lua_setfield(L, -2, "cuda");
  kbl_open(L);   /* kjit.blas, kjit.cuda.blas */
  klib_fft_open(L);    /* kjit.fft, kjit.cuda.fft */
  klib_rand_open(L);   /* kjit.random, kjit.cuda.random */
  lua_pushliteral(L, KJIT_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushliteral(L, KJIT_LLVM_VERSION);
  lua_setfield(L, -2, "llvm_version");
  lua_pushcfunction(L, l_load_llvm);
  lua_setfield(L, -2, "load_llvm");
  ksys_open(L);
  kext_open(L);   /* the C API of extension modules (kjit_ext.h) */
  kpart_open(L);  /* the Lua-written parts, run on first use (kjit.vectorize ...) */
  return 1;
}
