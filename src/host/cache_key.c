/*
** host/cache_key.c: the disk cache's key from the typed IR (cache_key.h).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "lua.h"
#include "host/cache_key.h"
#include "common/krecord.h"
#include "ir/ir_builtins.h"

typedef struct Buf { char *p; size_t n, cap; int oom; } Buf;

static void put(Buf *b, const void *s, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void put_i64(Buf *b, int64_t v) { put(b, &v, sizeof v); }

static void put_type(Buf *b, Type t) {
  uint8_t f[6] = { t.kind, t.weak, t.dtype, t.ndim, t.sub, t.fsub };
  put(b, f, sizeof f);
  if (t.kind == T_BUF && t.dtype == KJIT_RECORD) {
    /* a record's layout by its text (fields, dtypes, offsets, size): the
    ** id in ref is this process's own */
    const KRecord *r = krec_byid(t.ref);
    const char *k = r ? r->key : "?";
    put_i64(b, (int64_t)strlen(k));
    put(b, k, strlen(k));
    return;
  }
  put_i64(b, t.ref);
}

static int writer(lua_State *L, const void *p, size_t n, void *ud) {
  (void)L;
  put(ud, p, n);
  return ((Buf *)ud)->oom;
}

/* A salt for keys of code that compiles in registry references (valid in
** this process only): the same for the whole process, so that such code is
** found again in this process and never in another. */
static int64_t process_salt(lua_State *L) {
  static int64_t salt;
  if (salt == 0)
    salt = ((int64_t)(intptr_t)&salt) ^ (int64_t)(intptr_t)L ^ ((int64_t)getpid() << 32) ^
           (int64_t)time(NULL) ^ 0x75707672;
  return salt ^ ((int64_t)(intptr_t)L * 31);   /* another state has other references */
}

/* The instructions v of sp, block by block: EACH_INSN(sp, v) { ... }. The
** body may continue or return, not break. */
#define EACH_INSN(sp, v)                                                 \
  for (int eb_ = 0; eb_ < (sp)->ir->nblocks; eb_++)                      \
    for (int ei_ = 0; ei_ < (sp)->ir->blocks[eb_]->ninsns; ei_++)        \
      for (KirInsn *v = (sp)->ir->blocks[eb_]->insns[ei_]; v; v = NULL)

static int bakes_layout(const KtySpec *sp, const KirInsn *v);
static int uses_function_value(const KtySpec *sp, const KirInsn *v);

static int select_only(const KtySpec *sp, int id);

char *kck_key(KtySession *T, const char *head, size_t *len, int *local) {
  lua_State *L = T->L;
  Buf b = { NULL, 0, 0, 0 };
  *local = 0;
  put(&b, head, strlen(head));
  /* whether numbers have a metatable (debug.setmetatable(0, mt)): indexing
  ** or calling a number compiles to Lua's error without one, to its
  ** __index or __call with one (ir_type.c index_raises, differences.md
  ** item 13), which the typed IR below does not always show */
  lua_pushinteger(L, 0);
  int nummeta = lua_getmetatable(L, -1);
  lua_pop(L, nummeta ? 2 : 1);
  const char *nums = nummeta ? "\nnumbers: metatable" : "\nnumbers: none";
  put(&b, nums, strlen(nums));
  put(&b, "\ntyped ir\n", 10);
  for (int i = 0; i < T->nspecs; i++) {
    KtySpec *sp = T->specs[i];
    put_i64(&b, sp->index);
    put_i64(&b, sp->used);
    put_i64(&b, sp->ref);
    put_i64(&b, sp->root);
    put_i64(&b, sp->nargs);
    put_i64(&b, sp->ir->proto->id);   /* a function literal's prototype */
    put_i64(&b, sp->clos);
    for (int a = 0; a < sp->nargs; a++) put_type(&b, sp->args[a]);
    /* the function's bytecode (its own prototype and the ones nested in it) */
    lua_rawgeti(L, LUA_REGISTRYINDEX, T->values_ref);
    lua_rawgeti(L, -1, sp->ref);
    size_t before = b.n;
    put_i64(&b, 0);   /* the dump's length, below */
    if (lua_type(L, -1) != LUA_TFUNCTION || lua_dump(L, writer, &b, 0) != 0) b.oom = 1;
    lua_pop(L, 2);
    if (b.oom) break;
    int64_t dl = (int64_t)(b.n - before - sizeof(int64_t));
    memcpy(b.p + before, &dl, sizeof dl);
    /* the values frozen into each instruction, and the callees */
    int n = sp->ir->ninsns;
    put_i64(&b, n);
    for (int id = 0; id < n; id++) {
      const KtyConst *k = &sp->consts[id];
      if (k->kind != T_UNKNOWN) {
        put_i64(&b, id);
        put_i64(&b, k->kind);
        switch (k->kind) {
        case T_BOOL: put_i64(&b, k->v.b); break;
        case T_INT: put_i64(&b, (int64_t)k->v.i); break;
        case T_F64: put(&b, &k->v.f, sizeof k->v.f); break;   /* bit for bit */
        case T_STR: put_i64(&b, (int64_t)k->len); put(&b, k->str, k->len); break;
        case T_LAYOUT: {   /* a kjit.struct: by its text (ids are this process's) */
          const KRecord *r = krec_byid(k->ref);
          const char *t = r ? r->key : "?";
          put_i64(&b, (int64_t)strlen(t));
          put(&b, t, strlen(t));
          break;
        }
        case T_BUILTIN: put_i64(&b, k->ref); put_i64(&b, (int64_t)k->v.i); break;   /* v.i: kjit.f32 */
        case T_BUF:
          put_i64(&b, k->ref);
          if ((k->v.i >> 16) & 1) {   /* a frozen array's address compiled in (cg_frozen.c) */
            put_i64(&b, process_salt(L));
            *local = 1;
          }
          break;
        default: put_i64(&b, k->ref); break;   /* T_TABLE, T_FUNC, T_NIL */
        }
      }
      if (sp->callees[id]) {
        put_i64(&b, -1 - id);
        put_i64(&b, sp->callees[id]->index);
      }
      if (sp->liveref && sp->liveref[id]) {
        /* a registry reference compiled in (a table the code writes into):
        ** valid in this process only, so the key is this process's */
        static int64_t salt;
        if (salt == 0)
          salt = ((int64_t)(intptr_t)&salt) ^ (int64_t)(intptr_t)L ^ ((int64_t)getpid() << 32) ^
                 (int64_t)time(NULL) ^ 0x6c697665;
        put_i64(&b, INT64_MIN + 1);
        put_i64(&b, sp->liveref[id]);
        put_i64(&b, salt);
        *local = 1;
      }
      if (sp->upvref && sp->upvref[id] && !select_only(sp, id)) {
        /* an upvalue compiled code assigns: its closure's registry
        ** reference, valid in this process only (as liveref above) */
        put_i64(&b, INT64_MIN + 2);
        put_i64(&b, sp->upvref[id]);
        put_i64(&b, sp->upvidx[id]);
        put_i64(&b, process_salt(L));
        *local = 1;
      }
    }
    EACH_INSN(sp, v) {
      if (bakes_layout(sp, v)) {   /* the code holds the layout's id (below): the */
        put_i64(&b, INT64_MIN + 4);  /* same layout under another id must miss */
        put_i64(&b, sp->types[v->id].ref);
      }
      /* a Lua function known here used as a value other than by a call
      ** (stored, passed to a function value, compared): cg_callvalue.c
      ** compiles in a registry reference to it, valid in this process only */
      if (uses_function_value(sp, v)) {
        put_i64(&b, INT64_MIN + 3);
        put_i64(&b, process_salt(L));
        *local = 1;
      }
      /* the numbers of a frozen table indexed by a computed key (cg_frozen.c) */
      if (v->op == KIR_INDEX && sp->types[v->args[0]->id].kind == T_TABLE &&
          sp->consts[v->id].kind == T_UNKNOWN) {
        int64_t fn, *vals;
        uint8_t *isf;
        const char *why;
        put_i64(&b, INT64_MIN + 1);
        put_i64(&b, v->id);
        if (kty_frozen_array(T, sp->types[v->args[0]->id].ref, &fn, &vals, &isf, &why)) {
          put_i64(&b, fn);
          put(&b, vals, sizeof *vals * (size_t)fn);
          put(&b, isf, (size_t)fn);
        }
      }
    }
    put_i64(&b, INT64_MIN);   /* end of the specialization */
  }
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.n;
  return b.p;
}

/* Does v make or reshape an array of records? cg_alloc.c then compiles in
** the layout's id (runtime/alloc.c's kal_record_dtype), a number of this
** process's interning (krecord.c): another process may have no layout of
** that id, or another one. */
static int bakes_layout(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_CALL || v->nargs < 1) return 0;
  Type ft = sp->types[v->args[0]->id], rt = sp->types[v->id];
  if (ft.kind != T_BUILTIN || rt.kind != T_BUF || rt.dtype != KJIT_RECORD) return 0;
  switch (ft.ref) {
  case B_KJIT_ZEROS: case B_KJIT_EMPTY: case B_KJIT_FULL: case B_KJIT_ARRAY:
  case B_ARR_COPY: case B_ARR_RESHAPE: return 1;
  default: return 0;
  }
}

/* Does v use a Lua function known here as a value other than by a call
** (stored, passed to a function value, compared)? cg_callvalue.c compiles
** in a registry reference to it. */
static int uses_function_value(const KtySpec *sp, const KirInsn *v) {
  /* a frozen table made a value (cg_callvalue.c cg_fn_boxconst): any
  ** operand but the indexed table of a read and the called function
  ** (a conservative test: a miss costs only the disk cache) */
  if (v->op != KIR_GETFIELD && v->op != KIR_INDEX && v->op != KIR_LEN)
    for (int a = v->op == KIR_CALL ? 1 : 0; a < v->nargs; a++)
      if (sp->types[v->args[a]->id].kind == T_TABLE) return 1;
  if ((v->op == KIR_CALL && sp->callees[v->id]) || v->op == KIR_PHI) return 0;   /* compiled directly */
  for (int a = 0; a < v->nargs; a++)
    if (sp->types[v->args[a]->id].kind == T_FUNC && !(v->op == KIR_CALL && a == 0)) return 1;
  return 0;
}

int kck_layouts(KtySession *T, int32_t *ids, int max) {
  int n = 0;
  for (int i = 0; i < T->nspecs; i++) {
    KtySpec *sp = T->specs[i];
    if (!sp->used) continue;
    EACH_INSN(sp, v) {
      if (!bakes_layout(sp, v)) continue;
      int32_t id = sp->types[v->id].ref, seen = 0;
      for (int q = 0; q < n && q < max; q++) seen |= ids[q] == id;
      if (!seen) {
        if (n < max) ids[n] = id;
        n++;
      }
    }
  }
  return n;
}

/* Is instruction id of sp the select function that only calls compiled
** code does itself use (ir_type.h kty_select_only)? Its registry
** reference is never read at run time. (Asked only of the rare values
** with a reference: a scan.) */
static int select_only(const KtySpec *sp, int id) {
  EACH_INSN(sp, v)
    if (v->id == id) return kty_select_only(sp, v);
  return 0;
}

int kck_process_bound(KtySession *T, const char **chunk, int *line, int *ref) {
  for (int i = 0; i < T->nspecs; i++) {
    KtySpec *sp = T->specs[i];
    if (!sp->used) continue;
    EACH_INSN(sp, v) {
      int why = 0;
      if (sp->liveref && sp->liveref[v->id]) why = KCK_LIVE_TABLE;
      else if (sp->upvref && sp->upvref[v->id] && !kty_select_only(sp, v))   /* ir_type.c's uses of upvref */
        why = v->op == KIR_CLOSURE ? KCK_CLOSURE          /* a literal that escapes: its
                                                          ** upvidx is its root closure's
                                                          ** reference, not an upvalue */
            : sp->upvidx[v->id] > 0 ? KCK_UPVALUE         /* an upvalue assigned */
            : v->op == KIR_CALL ? KCK_CALLVALUE          /* a call's trampoline */
            : sp->upvidx[v->id] == 0 ? KCK_CFUNCTION     /* a C function called */
            : KCK_FROZEN_TABLE;                          /* t[k], k computed */
      /* (an array of records made here: exported with its layout, kck_layouts) */
      else if (uses_function_value(sp, v)) why = KCK_FUNCTION;   /* kck_key's INT64_MIN + 3 */
      else if (sp->consts[v->id].kind == T_BUF && ((sp->consts[v->id].v.i >> 16) & 1))
        why = KCK_FROZEN_ARRAY;   /* its address compiled in (cg_frozen.c) */
      if (why) {
        *chunk = sp->chunkname;
        *line = v->line;
        *ref = why == KCK_CFUNCTION ? sp->upvref[v->id] : 0;
        return why;
      }
    }
  }
  return 0;
}
