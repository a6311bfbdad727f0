/*
** host/callval.h: Lua functions called through values from compiled code
** run compiled (callval.c says how).
*/
#ifndef KJIT_HOST_CALLVAL_H
#define KJIT_HOST_CALLVAL_H
/* Installs the hook of runtime/luacall.c (once per process; idempotent). */
void kcv_init(void);
/* kjit.testing.callees([mode]): "none", "loops" (the default) or "all":
** which Lua callees of function values compile; returns the old mode,
** how many callee specializations this process has made, how many native
** calls it has made, how many field reads compiled code left to the
** helper (luavalue.c kjit_lv_sgetfield), how many chains' checks failed,
** how many main chunks ran interpreted (host/chunkpolicy.c) and how many
** specializations were retired (a table they read frozen became live:
** jit.c). */
#include "lua.h"
int kcv_l_callees(lua_State *L);

/* The callee policy on a prototype alone (no closure, no upvalues), under
** the present mode: whether a Lua function with this code would compile
** when compiled code calls it through its value (a mostly arithmetic
** loop, or a small leaf or caller: callval.c's rules). host/chunkpolicy.c
** asks it of the methods a main chunk defines. */
struct KbcProto;
int kcv_policy_compiles(const struct KbcProto *p);
/* Does prototype p have a loop the policy compiles (kcv_arith_loop)? */
int kcv_arith_loop(const struct KbcProto *p);
/* Is prototype p a small leaf or small caller (callval.c is_small_leaf)? */
int kcv_small_leaf(const struct KbcProto *p);
/* Is the mode "all" (every callee compiles: no rule leaves code interpreted)? */
int kcv_compiles_all(void);

/* Registry references refs[0..n) of freed code are about to be released
** (host/jit.c release_refs): those that were trampolines forget their
** call sites' options and this thread's inline-cache entries, so that a
** reference made anew with the same number starts empty (other threads'
** entries check their site's options at their next hit: callval.c
** kcv_sites_gen). */
void kcv_refs_freed(lua_State *L, const int *refs, int n);

/* Compiled code of this state was retired (jit.c kd_retire_readers: a
** table it read frozen became live): the call-value caches forget the
** native functions they hold (inline entries, filled call sites, the
** per-state caches' records), so that the next call of each callee finds
** its specialization again, compiling the retired ones anew. */
void kcv_forget_natives(lua_State *L);
#endif
