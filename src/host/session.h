/*
** session.h: the Lua-side owner of one compile. A compile allocates an
** arena, registry references and LLVM objects, and may end in a Lua error
** at any point (a compile error longjmps to the driver, which raises it):
** everything hangs off a session userdata whose __gc frees it, so an error
** leaks nothing. jit.c (kjit.jit) and kernel.c (cuda.jit) use it.
*/
#ifndef KJIT_SESSION_H
#define KJIT_SESSION_H
#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include "lua.h"
#include "common/compile.h"

typedef struct SessionBox {
  Session S;
  LLVMOrcThreadSafeContextRef ctx;   /* CPU modules (ORC) */
  LLVMContextRef C;                  /* a plain context (NVVM modules) */
  LLVMModuleRef M;
  void *result;                      /* what the compile builds, until the caller owns it */
  void (*free_result)(void *);
  int live;
} SessionBox;

/* Pushes a new session userdata and initializes its Session (arena,
** options). The caller may then set result/free_result: the
** object being built, freed with the session unless the caller takes it
** (sets result to NULL) before releasing the session. */
SessionBox *ks_push_session(lua_State *L, int boundscheck, int fastmath, int opt);

/* The object the compile builds (size zeroed bytes), held by the session
** and freed with free_result unless the caller takes it; out of memory:
** releases the session and raises. */
void *ks_session_result(lua_State *L, SessionBox *sb, size_t size, void (*free_result)(void *));

/* Frees everything the session still holds; safe to call twice. */
void ks_release_session(lua_State *L, SessionBox *sb);

#endif
