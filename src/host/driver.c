/*
** host/driver.c: the bytecode pipeline's one compile driver (driver.h).
** kty_spec runs the front end and the IR builder on every function it
** reaches (kbc_dump, kbc_decode, kir_build) and types it; the target's
** hooks choose the typing rules (kernel) and the code generator's entry
** (kcg_emit_kernel or kcg_emit_par). kjit.jit (jit.c), cuda.jit for the
** GPU and the simulator (kernel.c), the array functions built on them
** (lua/kjit/ufunc.lua, reduce.lua) and the C API (capi.c) all compile here.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include "lua.h"
#include "lauxlib.h"
#include "ir/ir_type.h"
#include "codegen/kcg.h"
#include "host/driver.h"
#include "frontend/bytecode.h"

/* The typer session's slot for the value at idx (kty_keep_value); a
** kjit.jit object is its Lua function. */
static int keep_value(KtySession *T, int idx) {
  lua_State *L = T->L;
  idx = lua_absindex(L, idx);
  if (!luaL_testudata(L, idx, "kjit.jit")) return kty_keep_value(T, idx);
  lua_getiuservalue(L, idx, 1);
  int ref = kty_keep_value(T, -1);
  lua_pop(L, 1);
  return ref;
}

static void sig_text(luaL_Buffer *b, const Type *t, int n) {
  char tb[32];
  luaL_addchar(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) luaL_addstring(b, ", ");
    luaL_addstring(b, kty_name(t[i], tb, sizeof tb));
  }
  luaL_addchar(b, ')');
}

static int same_type(Type a, Type b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.ndim == b.ndim && a.sub == b.sub;
}

/* inspect("types"): each specialization's signature, then its named
** locals with their types (one line per name and type: a register reused
** for an integer and then a float shows both); for kernels the root is
** the "kernel function", the others "device function"s. malloc'd. */
static char *types_text(KtySession *T, int kernel) {
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
    luaL_addstring(&b, " -> ");
    if (sp->nret <= 0) luaL_addstring(&b, "()");
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
          dup = strcmp(seen_name[k], v->name) == 0 && same_type(seen_type[k], t);
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

/* The length of msg's "chunk:line: " prefix, 0 if it has none. The
** chunk names of the session's functions are tried first (a chunk name
** may itself hold ":12: "); else the first ":<line>: " is the end. */
static size_t loc_len(const KtySession *T, const char *msg) {
  for (int i = -1; i < T->nspecs; i++) {
    const char *cn = i < 0 ? "?" : T->specs[i]->chunkname;
    size_t n = cn ? strlen(cn) : 0;
    if (n == 0 || strncmp(msg, cn, n) != 0 || msg[n] != ':') continue;
    const char *p = msg + n + 1;
    if (*p == '-') p++;
    if (*p < '0' || *p > '9') continue;
    while (*p >= '0' && *p <= '9') p++;
    if (p[0] == ':' && p[1] == ' ') return (size_t)(p + 2 - msg);
  }
  for (const char *p = strchr(msg, ':'); p; p = strchr(p + 1, ':')) {
    const char *q = p + 1;
    if (*q == '-') q++;
    if (*q < '0' || *q > '9') continue;
    while (*q >= '0' && *q <= '9') q++;
    if (q[0] == ':' && q[1] == ' ') return (size_t)(q + 2 - msg);
  }
  return 0;
}

/* Ends a failed compile: the located message, raised, with the words
** "compile error for <argument types>:" after its place, so that the
** reader knows the function was being compiled (and for which types),
** not run: "t.lua:3: compile error for (i64): concatenation ...". */
static void fail(Session *S, KtySession *T, const char *sig, const char *msg) {
  size_t n = loc_len(T, msg);
  snprintf(S->errmsg, sizeof S->errmsg, "%.*scompile error for %s: %s", (int)n, msg, sig,
           msg + n);
  kty_close(T);
  longjmp(*S->jb, 1);
}

/* "(i64, f32[:])": the specialization's argument types, for fail. */
static void args_text(char *out, size_t size, const Type *a, int n) {
  char tb[32];
  size_t k = (size_t)snprintf(out, size, "(");
  for (int i = 0; i < n && k < size; i++)
    k += (size_t)snprintf(out + k, size - k, "%s%s", i ? ", " : "", kty_name(a[i], tb, sizeof tb));
  if (k < size) snprintf(out + k, size - k, ")");
}

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

/* Whether a specialization in use makes arrays (runtime/alloc.c), or
** makes views (m[i], a:slice, a:reshape) and holds Lua values: a view may
** become a Lua value, anchored for the call in its allocation list's
** anchors (runtime/luaarray.c), so that one view boxed twice is one value. */
static int allocates(KtySession *T) {
  for (int i = 0; i < T->nspecs; i++) {
    KtySpec *sp = T->specs[i];
    if (!sp->used) continue;
    KirFunc *f = sp->ir;
    int views = 0, lua = 0;
    for (int b = 0; b < f->nblocks; b++) {
      if (!sp->live[b]) continue;
      for (int j = 0; j < f->blocks[b]->ninsns; j++) {
        KirInsn *v = f->blocks[b]->insns[j];
        lua |= sp->types[v->id].kind == T_LUA;
        views |= v->op == KIR_INDEX && sp->types[v->id].kind == T_BUF;
        if (v->op != KIR_CALL) continue;
        Type ft = sp->types[v->args[0]->id];
        views |= ft.kind == T_BUILTIN && (ft.ref == B_ARR_RESHAPE || ft.ref == B_ARR_SLICE);
        if (ft.kind == T_BUILTIN && B_IS_ARRAY(ft.ref) && ft.ref != B_ARR_FILL &&
            ft.ref != B_ARR_RESHAPE && ft.ref != B_ARR_SLICE && ft.ref != B_IPAIRS)
          return 1;
      }
    }
    if (views && lua) return 1;
  }
  return 0;
}

/* Is x a view made by the function (following a:fill, which returns its
** array)? */
static int made_view(KtySpec *sp, const KirInsn *x) {
  for (int depth = 0; depth < 16; depth++) {
    if (x->op == KIR_INDEX) return sp->types[x->id].kind == T_BUF;
    if (x->op != KIR_CALL || (x->flags & KIR_F_TFOR)) return 0;
    Type ft = sp->types[x->args[0]->id];
    if (ft.kind != T_BUILTIN) return 0;
    if (ft.ref == B_ARR_SLICE || ft.ref == B_ARR_RESHAPE) return 1;
    if (ft.ref != B_ARR_FILL || x->nargs < 2) return 0;
    x = x->args[1];
  }
  return 0;
}

/* rview (KdrvOutput) of the root's results. */
static void result_views(KtySpec *root, uint8_t *rview) {
  KirFunc *f = root->ir;
  for (int r = 0; r < root->nret && r < KJIT_MAXRETS; r++) {
    int all = root->rets[r].kind == T_BUF, any = 0;
    for (int b = 0; b < f->nblocks && all; b++) {
      KirInsn *t = f->blocks[b]->term;
      if (!root->live[b] || t == NULL || t->op != KIR_RET) continue;
      any = 1;
      int fixed = t->nargs - ((t->flags & KIR_F_OPEN) ? 1 : 0);
      /* `return a:slice(i, j)` ends with an open call: its first result */
      all = (r < fixed || (r == fixed && (t->flags & KIR_F_OPEN))) && made_view(root, t->args[r]);
    }
    rview[r] = (uint8_t)(all && any);
  }
}

/* Which argument math.fmod names first when neither is a number
** (ir_builtins.c's kjit_fmod_checks_arg2_first): asked of this process's
** lmathlib once, through the library's own table (a script may have
** replaced the global). */
static void probe_fmod_order(lua_State *L) {
  static int probed;
  if (__atomic_load_n(&probed, __ATOMIC_RELAXED) || !lua_checkstack(L, 4)) return;
  int top = lua_gettop(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "math") == LUA_TTABLE && lua_getfield(L, -1, "fmod") == LUA_TFUNCTION &&
      lua_iscfunction(L, -1)) {
    lua_pushnil(L);
    lua_pushnil(L);
    if (lua_pcall(L, 2, 0, 0) != LUA_OK && lua_type(L, -1) == LUA_TSTRING &&
        strstr(lua_tostring(L, -1), "#2") != NULL)
      __atomic_store_n(&kjit_fmod_checks_arg2_first, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&probed, 1, __ATOMIC_RELAXED);
  }
  lua_settop(L, top);
}

void kdrv_compile(Session *S, const KdrvInput *in, KdrvOutput *out) {
  lua_State *L = S->L;
  const KcgTarget *t = in->target;
  probe_fmod_order(L);
  int fidx = lua_absindex(L, in->fidx);
  memset(out, 0, sizeof *out);
  KtySession T;
  kty_open(&T, L, &S->arena);
  T.kernel = t->kernel;
  T.siteopts = KTY_SITEOPTS(S->boundscheck, S->fastmath, S->opt);   /* (callval.c) */
  T.gpu = t->kernel_entry;   /* NVPTX: external device functions are called as such */

  /* types: the parameters from the arguments, a function argument a
  ** constant of this specialization */
  int nargs = in->nargs < KJIT_MAXARGS ? in->nargs : KJIT_MAXARGS;
  Type a[KJIT_MAXARGS];
  char sig[400];
  args_text(sig, sizeof sig, in->args, nargs);
  for (int i = 0; i < nargs; i++) {
    a[i] = in->args[i];
    if (a[i].kind != T_FUNC) continue;
    if (in->argbase == 0) fail(S, &T, sig, "function arguments cannot be given in a signature");
    a[i].ref = keep_value(&T, in->argbase + i);
  }
  KtySpec *root = kty_spec(&T, fidx, nargs, a);
  if (root == NULL) fail(S, &T, sig, T.err);
  const char *chunk = root->chunkname ? root->chunkname : "?";
  if (t->kernel && root->nret > 0) {
    char msg[sizeof S->errmsg];
    snprintf(msg, sizeof msg, "%s:%d: a kernel cannot return values (write the results into an array)",
             chunk, root->ir->proto->linedefined);
    fail(S, &T, sig, msg);
  }

  /* the caller's look at the typed IR (the disk cache) */
  LLVMContextRef C = in->C;
  LLVMModuleRef M = in->M;
  int have_code = 0;
  if (in->typed) {
    have_code = in->typed(in->typed_ud, &T, &C, &M);
    if (have_code < 0) fail(S, &T, sig, T.err);
  }

  /* target lowering: code generator errors longjmp here */
  jmp_buf jb;
  T.jb = &jb;
  if (setjmp(jb)) fail(S, &T, sig, T.err);
  KcgKernelInfo info;
  memset(&info, 0, sizeof info);
  if (have_code) {
    /* nothing to generate */
  } else if (t->kernel) {
    kcg_emit_kernel(&T, C, M, root, in->entry_name, t, S->boundscheck, S->fastmath,
                    &info);
  } else {
    KcgParallel par = { S->parallel, S->parnotes, (int)sizeof S->parnotes, &S->nparnotes };
    /* KJIT_BENCH_NOPOLL=1 compiles without interrupt polls: a developer's
    ** measurement knob (what polling costs, bench/), not a user option and
    ** not documented for users: kjit_interrupt and count hooks then do not
    ** stop compiled code, and the disk cache's key does not see it */
    KcgTarget nopoll = *t;
    if (getenv("KJIT_BENCH_NOPOLL") != NULL) nopoll.poll = 0;
    kcg_emit_par(&T, C, M, root, in->entry_name, &nopoll, S->boundscheck, S->fastmath,
                 &out->calls, &par);
  }

  /* the tables this code folds: retired with them should compiled code
  ** write into one later (ir_live.c). Before anything is allocated for the
  ** caller: this uses the Lua API, whose memory error unwinds past the
  ** caller's KdrvOutput (test_alloc_fail) */
  /* the marks of tables and globals this compile writes, now that it is
  ** not refused (ir_type.c mark_live): code that read them frozen retired.
  ** (An internal error of the LLVM back end after this keeps them: a
  ** cost, later compiles read those tables live.) */
  kty_live_commit(&T);
  if (in->owner != 0 && !t->kernel) kty_note_frozen_reads(&T, in->owner);

  /* what the callers keep */
  out->nargs = root->nargs;
  memcpy(out->args, root->args, sizeof(Type) * (size_t)root->nargs);
  out->nret = root->nret < 0 ? 0 : root->nret;
  out->dyncount = root->dyncount;
  for (int r = 0; r < out->nret; r++) {
    out->rets[r] = root->rets[r];
    if (out->rets[r].kind == T_UNKNOWN) out->rets[r] = TY(T_NIL);   /* never produced */
  }
  out->uses_sync = info.uses_sync;
  out->allocates = allocates(&T);
  result_views(root, out->rview);
  out->lua = kcg_uses_lua(&T, root);
  snprintf(out->chunkname, sizeof out->chunkname, "%s", chunk);
  /* a kernel's references released before the first allocation for the
  ** caller, for the same reason (kty_close calls the Lua API for them;
  ** called again below, it has nothing left to do) */
  if (t->kernel) kty_close(&T);
  out->types = types_text(&T, t->kernel);
  if (info.nmsgs > 0) {
    out->msgs = calloc((size_t)info.nmsgs, sizeof *out->msgs);
    if (out->msgs) {
      out->nmsgs = info.nmsgs;
      for (int i = 0; i < info.nmsgs; i++) out->msgs[i] = dup(info.msgs[i]);
    }
  }
  if (!t->kernel) out->refs = kty_take_refs(&T, &out->nrefs);   /* (else released now) */
  kty_close(&T);
}

/* The bytecode listing of every function a compile reaches, as luac -l
** shows instructions (kbc_disasm), each with its pc and source line. */
static void bytecode_text(KtySession *T, luaL_Buffer *b) {
  lua_State *L = T->L;
  char ib[128];
  for (int i = 0; i < T->nspecs; i++) {
    KtySpec *sp = T->specs[i];
    if (!sp->used) continue;
    int dup = 0;   /* a function specialized twice is listed once */
    for (int j = 0; j < i && !dup; j++) dup = T->specs[j]->used && T->specs[j]->ir->proto == sp->ir->proto;
    if (dup) continue;
    const KbcProto *p = sp->ir->proto;
    lua_pushfstring(L, "function %s:%d (%d instructions, %d params, %d slots)\n",
                    sp->chunkname ? sp->chunkname : "?", p->linedefined, p->ncode,
                    (int)p->numparams, (int)p->maxstack);
    luaL_addvalue(b);
    for (int pc = 0; pc < p->ncode; pc++) {
      kbc_disasm(p, pc, ib, sizeof ib);
      int line = kbc_line(p, pc);
      if (line >= 0) lua_pushfstring(L, "  %d\t[%d]\t%s\n", pc + 1, line, ib);
      else lua_pushfstring(L, "  %d\t[-]\t%s\n", pc + 1, ib);
      luaL_addvalue(b);
    }
  }
}

void kdrv_text(lua_State *L, int fidx, int nargs, const Type *args, int argbase, int kernel,
               int what) {
  fidx = lua_absindex(L, fidx);
  Arena A;
  ka_init(&A);
  KtySession T;
  kty_open(&T, L, &A);
  T.kernel = kernel;
  Type a[KJIT_MAXARGS];
  if (nargs > KJIT_MAXARGS) nargs = KJIT_MAXARGS;
  for (int i = 0; i < nargs; i++) {
    a[i] = args[i];
    if (a[i].kind == T_FUNC) a[i].ref = keep_value(&T, argbase + i);
  }
  KtySpec *root = kty_spec(&T, fidx, nargs, a);
  if (root == NULL) {
    lua_pushstring(L, T.err);
    kty_close(&T);
    ka_free(&A);
    lua_error(L);
  }
  if (what == 0) {
    char *s = NULL;
    size_t n = 0, cap = 0;
    kty_print(&T, &s, &n, &cap);
    kty_close(&T);
    ka_free(&A);
    lua_pushlstring(L, s ? s : "", s ? n : 0);   /* (out of memory there leaks s) */
    free(s);
    return;
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  bytecode_text(&T, &b);
  luaL_pushresult(&b);
  kty_close(&T);
  ka_free(&A);
}
