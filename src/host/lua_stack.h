/*
** lua_stack.h: the call path's direct reads of a C function's arguments
** from the Lua stack, without the Lua C API (which costs 2-3 ns a call).
**
** EVERY assumption about Lua's private layout lives in this file and
** lua_stack.c, checked against lstate.h and lobject.h of Lua 5.4.0, 5.4.4,
** 5.4.6 and 5.4.8 (github.com/lua/lua tags; unchanged between them where
** used here, except that lua_State.top and CallInfo.func became StkIdRel,
** a pointer-sized union whose pointer is valid while no stack reallocation
** is in progress, i.e. whenever a C function runs):
**   - struct lua_State starts with CommonHeader (GCObject *next; lu_byte
**     tt, marked), lu_byte status, allowhook; unsigned short nci; then
**     top, l_G, ci (pointer-sized each);
**   - struct CallInfo starts with func, then top (the last slot the
**     running function may use: lua_checkstack raises it); a C function's
**     argument i is func + i, and there are top - (func + 1) of them;
**   - a stack slot (StackValue) is 16 bytes: a TValue {Value value_ (8
**     bytes); lu_byte tt_} (5.4.3+ add a union member of the same size);
**   - tags: LUA_VNIL 0x00 (and its variants 0x10, 0x20: low nibble 0),
**     LUA_VFALSE 0x01, LUA_VTRUE 0x11, LUA_VNUMINT 0x03, LUA_VNUMFLT 0x13,
**     full userdata ctb(LUA_VUSERDATA) 0x47, C closure ctb(LUA_VCCL) 0x66,
**     Lua closure ctb(LUA_VLCL) 0x46 (host/callval.c), table
**     ctb(LUA_VTABLE) 0x45 (host/callval.c);
**   - struct Udata: CommonHeader; unsigned short nuvalue; size_t len;
**     Table *metatable; GCObject *gclist; UValue uv[]; its memory block at
**     udatamemoffset(nuvalue): offsetof(Udata0, bindata) when nuvalue is
**     0, else offsetof(Udata, uv) + nuvalue * sizeof(UValue), UValue being
**     a TValue unioned with LUAI_MAXALIGN (from luaconf.h: used as is);
**   - struct CClosure: CommonHeader; lu_byte nupvalues; GCObject *gclist;
**     lua_CFunction f; TValue upvalue[].
** The mirrors below are declared the way Lua declares them, so the
** compiler lays them out as it lays out Lua's own.
**
** Believed only after a probe at require time (kls_probe, lua_stack.c)
** reads known arguments both ways and finds every one equal; otherwise,
** for a Lua whose lua_version is not 504, or with KJIT_NO_STACK_READS=1,
** kls_on stays 0 and the call path uses the API. Apart from kls_open,
** kls_close, kls_copy and kls_replace, nothing here writes to the stack; runtime/luatable.c (copy_to_slot) writes compiled code's own
** frame slots (indices of the running C function, below top) through
** these mirrors when kls_on, and compiled code's frames are opened and
** closed here (kls_open, kls_close: runtime/luavalue.c kjit_lv_open) by
** moving top, as lua_settop does.
*/
#ifndef KJIT_LUA_STACK_H
#define KJIT_LUA_STACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lua.h"

/* 1 when the probe agreed (see above); read by the call path. */
extern int kls_on;
/* "on", or why not ("off: ..."): kjit.stack_reads. */
extern const char *kls_status;

/* Runs the probe once per process (the first require); sets kls_on. */
void kls_probe(lua_State *L);

/* ---- Mirrors of Lua 5.4's private structures ---- */
typedef union KlsValue {
  void *gc; void *p; lua_CFunction f; lua_Integer i; lua_Number n; unsigned char ub;
} KlsValue;
typedef struct KlsTValue { KlsValue value_; unsigned char tt_; } KlsTValue;
typedef union KlsStackValue {
  KlsTValue val;
  struct { KlsValue value_; unsigned char tt_; unsigned short delta; } tbclist;
} KlsStackValue;
#define KLS_COMMONHEADER void *next; unsigned char tt; unsigned char marked
typedef struct KlsState {
  KLS_COMMONHEADER;
  unsigned char status, allowhook;
  unsigned short nci;
  KlsStackValue *top;
  void *l_G;
  struct KlsCallInfo *ci;
} KlsState;
typedef struct KlsCallInfo { KlsStackValue *func; KlsStackValue *top; } KlsCallInfo;
typedef union KlsUValue { KlsTValue uv; LUAI_MAXALIGN; } KlsUValue;
typedef struct KlsUdata {
  KLS_COMMONHEADER;
  unsigned short nuvalue;
  size_t len;
  void *metatable;
  void *gclist;
  KlsUValue uv[1];
} KlsUdata;
typedef struct KlsUdata0 {
  KLS_COMMONHEADER;
  unsigned short nuvalue;
  size_t len;
  void *metatable;
  union { LUAI_MAXALIGN; } bindata;
} KlsUdata0;
typedef struct KlsCClosure {
  KLS_COMMONHEADER; unsigned char nupvalues; void *gclist;
  lua_CFunction f;
  KlsTValue upvalue[1];
} KlsCClosure;

enum { KLS_NIL = 0x00, KLS_FALSE = 0x01, KLS_TRUE = 0x11, KLS_INT = 0x03,
       KLS_FLT = 0x13, KLS_UDATA = 0x47, KLS_CCL = 0x66, KLS_LCL = 0x46,
       KLS_LCF = 0x16, KLS_TABLE = 0x45 };

#define KLS_INLINE static inline __attribute__((always_inline))

/* The running C function's arguments: the first (argument 1) is returned,
** their number stored in *n. */
KLS_INLINE const KlsStackValue *kls_args(lua_State *L, int *n) {
  const KlsState *s = (const KlsState *)(void *)L;
  const KlsStackValue *base = s->ci->func + 1;
  *n = (int)(s->top - base);
  return base;
}

/* A full userdata's memory block (lua_touserdata) and its size (lua_rawlen);
** v must carry KLS_UDATA. */
KLS_INLINE void *kls_udata(const KlsTValue *v, size_t *len) {
  const KlsUdata *u = (const KlsUdata *)v->value_.gc;
  *len = u->len;
  /* kjit's arrays, jit objects and native boxes have one user value: a
  ** constant offset, so that the block's address does not wait for the
  ** load of nuvalue (the branch is predicted) */
  if (__builtin_expect(u->nuvalue == 1, 1))
    return (char *)(uintptr_t)u + offsetof(KlsUdata, uv) + sizeof(KlsUValue);
  size_t off = u->nuvalue == 0 ? offsetof(KlsUdata0, bindata)
                               : offsetof(KlsUdata, uv) + sizeof(KlsUValue) * u->nuvalue;
  return (char *)(uintptr_t)u + off;
}

/* The running C closure's first upvalue if it is a full userdata of at
** least min bytes, else NULL (lua_touserdata(L, lua_upvalueindex(1))). */
KLS_INLINE void *kls_upvalue1_udata(lua_State *L, size_t min) {
  const KlsState *s = (const KlsState *)(void *)L;
  const KlsTValue *fn = &s->ci->func->val;
  if (fn->tt_ != KLS_CCL) return NULL;
  const KlsCClosure *c = (const KlsCClosure *)fn->value_.gc;
  if (c->nupvalues < 1 || c->upvalue[0].tt_ != KLS_UDATA) return NULL;
  size_t len;
  void *p = kls_udata(&c->upvalue[0], &len);
  return len >= min ? p : NULL;
}

/* kls_upvalue1_udata for a function known to be a C closure with at least
** one upvalue (made by lua_pushcclosure with n >= 1 and never pushed as a
** light C function: the running function's slot holds that closure, and
** no API changes a closure's number of upvalues), without those checks. */
KLS_INLINE void *kls_closure_upvalue1_udata(lua_State *L, size_t min) {
  const KlsState *s = (const KlsState *)(void *)L;
  const KlsCClosure *c = (const KlsCClosure *)s->ci->func->val.value_.gc;
  if (c->upvalue[0].tt_ != KLS_UDATA) return NULL;
  size_t len;
  void *p = kls_udata(&c->upvalue[0], &len);
  return len >= min ? p : NULL;
}

/* ---- A Lua closure's upvalues (host/callval.c's guard) ----
** struct LClosure: CommonHeader; lu_byte nupvalues; GCObject *gclist;
** struct Proto *p; UpVal *upvals[]. struct UpVal: CommonHeader (5.4.0-2:
** then lu_byte tbc, in the padding); then the pointer to its value (a
** stack slot while open, its own u.value once closed; 5.4.3+ make it a
** union with an offset used only while the stack is being reallocated,
** never while a C function runs). Believed only after kls_upvalues_probe
** (lua_stack.c) read known upvalues, open and closed, both ways. */
typedef struct KlsUpVal { KLS_COMMONHEADER; const KlsTValue *v; } KlsUpVal;
typedef struct KlsLClosure {
  KLS_COMMONHEADER; unsigned char nupvalues; void *gclist;
  void *p;
  const KlsUpVal *upvals[1];
} KlsLClosure;
/* 1 when the probe agreed (with kls_on); run once per process, the
** first time a caller asks. */
int kls_upvalues_on(lua_State *L);
/* Upvalue n (0-based, below nupvalues) of Lua closure c. */
KLS_INLINE const KlsTValue *kls_upvalue(const void *c, int n) {
  return ((const KlsLClosure *)c)->upvals[n]->v;
}
/* Sets upvalue n of Lua closure c to a number (tt KLS_INT or KLS_FLT, its
** bits): lua_setupvalue's setobj, with no GC barrier since a number is not
** collectable. Under kls_upvalues_on only. */
KLS_INLINE void kls_upvalue_set_number(const void *c, int n, unsigned char tt, int64_t bits) {
  KlsTValue *v = (KlsTValue *)(void *)((const KlsLClosure *)c)->upvals[n]->v;
  memcpy(&v->value_, &bits, sizeof bits);
  v->tt_ = tt;
}

/* Whether the running C function was called with no arguments. */
KLS_INLINE int kls_noargs(lua_State *L) {
  const KlsState *s = (const KlsState *)(void *)L;
  return s->top == s->ci->func + 1;
}

/* Opens a frame of n slots above the running C function's top, each set
** to nil (the collector may scan them before compiled code writes them),
** when its reserved stack (ci->top, which lua_checkstack raises) has room
** for them and `extra` more: lua_settop(L, gettop + n) after
** luaL_checkstack(L, n + extra) when that would not grow anything.
** Returns the frame's first stack index, or 0 when there is no room (the
** caller then takes the API path, which grows the stack). */
KLS_INLINE int kls_open(lua_State *L, int n, int extra) {
  KlsState *s = (KlsState *)(void *)L;
  KlsStackValue *top = s->top;
  if (s->ci->top - top < (ptrdiff_t)n + extra) return 0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {   /* (unrolled: frames have a dozen slots) */
    top[i].val.tt_ = KLS_NIL; top[i + 1].val.tt_ = KLS_NIL;
    top[i + 2].val.tt_ = KLS_NIL; top[i + 3].val.tt_ = KLS_NIL;
  }
  for (; i < n; i++) top[i].val.tt_ = KLS_NIL;
  s->top = top + n;
  return (int)(top - s->ci->func);
}

/* lua_copy(L, from, to) between stack indices of the running C function
** (setobj: a stack slot needs no GC barrier). */
KLS_INLINE void kls_copy(lua_State *L, int from, int to) {
  KlsStackValue *f = ((KlsState *)(void *)L)->ci->func;
  f[to].val.value_ = f[from].val.value_;
  f[to].val.tt_ = f[from].val.tt_;
}

/* lua_replace(L, to): the value on top moved to index to, and popped;
** the moved value is returned (its object's address in value_.gc). */
KLS_INLINE KlsTValue kls_replace(lua_State *L, int to) {
  KlsState *s = (KlsState *)(void *)L;
  KlsTValue v = (--s->top)->val;
  s->ci->func[to].val.value_ = v.value_;
  s->ci->func[to].val.tt_ = v.tt_;
  return v;
}

/* lua_toboolean(L, idx) for a stack index of the running C function:
** false for nil (any variant) and false. */
KLS_INLINE int kls_truthy(lua_State *L, int idx) {
  unsigned char tt = ((KlsState *)(void *)L)->ci->func[idx].val.tt_;
  return (tt & 0x0f) != KLS_NIL && tt != KLS_FALSE;
}

/* Closes the frame whose first index is first: lua_settop(L, first - 1)
** for a frame holding no to-be-closed variable (kjit never makes one). */
KLS_INLINE void kls_close(lua_State *L, int first) {
  KlsState *s = (KlsState *)(void *)L;
  s->top = s->ci->func + first;
}

/* The offsets compiled code opens and closes its frames with, inline, as
** kls_open and kls_close do (codegen/cg_lua.c), for the mirrors above;
** NULL when the probe did not agree. Compiled code tests kls_on again
** when it runs (code from the disk cache may run in another process). */
typedef struct KlsFrameLayout {
  int state_top, state_ci, ci_func, ci_top, slot_size, slot_tt, minstack;
} KlsFrameLayout;
const KlsFrameLayout *kls_frame_layout(void);

#endif
