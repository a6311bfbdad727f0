/*
** compile_ir.c: the bytecode pipeline for kjit.jit, behind the switch
** KJIT_PIPELINE=bytecode (read at each compile): the function's own
** bytecode (kbc_dump, kbc_decode) -> SSA IR (kir_build) -> types (kty_spec)
** -> LLVM IR (kcg_emit, the CPU target). jit.c calls kcg_compile_cpu in
** place of the source-text front end and codegen.c, and keeps the rest of
** its compile (module, ORC, cache) as it is.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include "lua.h"
#include "lauxlib.h"
#include "codegen/kcg.h"

int kcg_bytecode_pipeline(void) {
  const char *e = getenv("KJIT_PIPELINE");
  return e != NULL && strcmp(e, "bytecode") == 0;
}

/* The typer session's slot for the value at idx (the same scheme as
** ir_type.c's keep_value: values table maps slot -> value and back). */
static int keep_value(KtySession *T, int idx) {
  lua_State *L = T->L;
  idx = lua_absindex(L, idx);
  if (luaL_testudata(L, idx, "kjit.jit")) {   /* a kjit.jit object: its function */
    lua_getiuservalue(L, idx, 1);
    int ref = keep_value(T, -1);
    lua_pop(L, 1);
    return ref;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, T->values_ref);
  lua_pushvalue(L, idx);
  lua_rawget(L, -2);
  if (lua_isinteger(L, -1)) {
    int ref = (int)lua_tointeger(L, -1);
    lua_pop(L, 2);
    return ref;
  }
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_rawseti(L, -2, ++T->nvalues);
  lua_pushvalue(L, idx);
  lua_pushinteger(L, T->nvalues);
  lua_rawset(L, -3);
  lua_pop(L, 1);
  return T->nvalues;
}

static void addf(luaL_Buffer *b, const char *s) { luaL_addstring(b, s); }

static void sig_text(luaL_Buffer *b, const Type *t, int n) {
  char tb[32];
  luaL_addchar(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) addf(b, ", ");
    addf(b, kty_name(t[i], tb, sizeof tb));
  }
  luaL_addchar(b, ')');
}

/* f:inspect("types"): each specialization's signature, then its named
** locals with their types (one line per name and type: a register reused
** for an integer and then a float shows both). */
char *kcg_types_text(KtySession *T, int kernel) {
  lua_State *L = T->L;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  char tb[32];
  for (int i = 0; i < T->nspecs; i++) {
    KtySpec *sp = T->specs[i];
    if (!sp->used) continue;
    lua_pushfstring(L, "%s:%d: %sfunction", sp->chunkname, sp->ir->proto->linedefined,
                    !kernel ? "" : sp->root ? "kernel " : "device ");
    luaL_addvalue(&b);
    sig_text(&b, sp->args, sp->nargs);
    addf(&b, " -> ");
    if (sp->nret <= 0) addf(&b, "()");
    else sig_text(&b, sp->rets, sp->nret);
    luaL_addchar(&b, '\n');
    KirFunc *f = sp->ir;
    const char *seen_name[256];
    Type seen_type[256];
    int nseen = 0;
    for (int bi = 0; bi < f->nblocks; bi++) {
      if (!sp->live[bi]) continue;
      KirBlock *blk = f->blocks[bi];
      for (int j = 0; j < blk->nphis + blk->ninsns; j++) {
        KirInsn *v = j < blk->nphis ? blk->phis[j] : blk->insns[j - blk->nphis];
        Type t = sp->types[v->id];
        if (v->name == NULL || t.kind == T_UNKNOWN) continue;
        int dup = 0;
        for (int k = 0; k < nseen && !dup; k++)
          dup = strcmp(seen_name[k], v->name) == 0 && seen_type[k].kind == t.kind &&
                seen_type[k].dtype == t.dtype && seen_type[k].ndim == t.ndim &&
                seen_type[k].sub == t.sub;
        if (dup) continue;
        if (nseen < 256) { seen_name[nseen] = v->name; seen_type[nseen] = t; nseen++; }
        lua_pushfstring(L, "  local %s: %s\n", v->name, kty_name(t, tb, sizeof tb));
        luaL_addvalue(&b);
      }
    }
  }
  luaL_pushresult(&b);
  size_t n;
  const char *s = lua_tolstring(L, -1, &n);
  char *r = malloc(n + 1);
  if (r) memcpy(r, s, n + 1);
  lua_pop(L, 1);
  return r;
}

int kcg_compile_cpu(Session *S, int fidx, int nargs, const Type *args, int argbase,
                    LLVMContextRef C, LLVMModuleRef M, const char *entry_name,
                    KcgCompiled *out) {
  lua_State *L = S->L;
  fidx = lua_absindex(L, fidx);
  memset(out, 0, sizeof *out);
  KtySession T;
  kty_open(&T, L, &S->arena);
  Type a[KJIT_MAXARGS];
  for (int i = 0; i < nargs && i < KJIT_MAXARGS; i++) {
    a[i] = args[i];
    if (a[i].kind != T_FUNC) continue;
    if (argbase == 0) {
      snprintf(S->errmsg, sizeof S->errmsg, "function arguments cannot be given in a signature");
      kty_close(&T);
      return -1;
    }
    a[i].ref = keep_value(&T, argbase + i);
  }
  KtySpec *root = kty_spec(&T, fidx, nargs, a);
  if (root == NULL) {
    snprintf(S->errmsg, sizeof S->errmsg, "%s", T.err);
    kty_close(&T);
    return -1;
  }
  jmp_buf jb;
  T.jb = &jb;
  if (setjmp(jb)) {
    snprintf(S->errmsg, sizeof S->errmsg, "%s", T.err);
    kty_close(&T);
    return -1;
  }
  int calls = 0;
  KcgParallel par = { S->parallel, S->parnotes, (int)sizeof S->parnotes, &S->nparnotes };
  /* KJIT_BENCH_NOPOLL=1 compiles without interrupt polls: a measurement
  ** knob only (bench/: the cost of polling), never for use; kjit.interrupt
  ** and count hooks then do not stop compiled code, and the disk cache's
  ** key does not see it */
  KcgTarget tgt = kcg_target_cpu;
  if (getenv("KJIT_BENCH_NOPOLL") != NULL) tgt.poll = 0;
  kcg_emit_par(&T, C, M, root, entry_name, &tgt, S->boundscheck, S->fastmath, &calls, &par);
  out->nargs = root->nargs;
  out->nret = root->nret < 0 ? 0 : root->nret;
  for (int r = 0; r < out->nret; r++) {
    out->rets[r] = root->rets[r];
    if (out->rets[r].kind == T_UNKNOWN) out->rets[r] = TY(T_NIL);   /* never produced */
  }
  out->calls = calls;
  out->types = kcg_types_text(&T, 0);
  snprintf(out->chunkname, sizeof out->chunkname, "%s", root->chunkname ? root->chunkname : "?");
  kty_close(&T);
  return 0;
}
