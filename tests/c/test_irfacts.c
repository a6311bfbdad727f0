/*
** test_irfacts.c: tests of the loop facts (src/ir/ir_facts.c).
**
** Each case of tests/c/irfacts_cases.txt is a chunk returning a function
** and an argument signature; the facts of its specialization (kfa_print)
** and the purity of every specialization of the session are checked
** against the text kept there:
**   === name
**   -- args: f64[:] i64          (first line; "-- parallel args:" analyses
**   <the rest of the chunk>       with parallel = true on the CPU)
**   --- facts
**   <kfa_print's output, then "pure: spec N yes|no" lines>
** KJIT_IRFACTS_UPDATE=1 rewrites the file from what is printed (review the
** diff); KJIT_IRFACTS_VERBOSE=1 also prints the typed IR of a failing case.
** Also: a cross-check with the old generator's hoisting rule (codegen.c's
** consider_index over the AST of src/parse.c + types.c), loop by loop, for
** the functions of tests/lua/test_jit_diff_loops.lua and the cases here.
**
** Usage: test_irfacts [results-file]; writes "passed failed 0" there.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "kjit.h"
#include "ir/ir_facts.h"
#include "session.h"
#include "ast.h"
#include <setjmp.h>
#include "casetest.h"
#include "casetypes.h"

#define CASES "tests/c/irfacts_cases.txt"

static lua_State *L;

/* The argument types of "-- args: a b c" ("-- parallel args:": *parallel). */
static int parse_args(const char *src, Type *args, int *nargs, int *parallel) {
  *nargs = 0;
  *parallel = strncmp(src, "-- parallel args:", 17) == 0;
  if (!*parallel && strncmp(src, "-- args:", 8) != 0) return 0;
  const char *p = src + (*parallel ? 17 : 8), *end = strchr(p, '\n');
  while (end && p < end) {
    while (p < end && *p == ' ') p++;
    if (p >= end) break;
    size_t n = 0;
    while (p + n < end && p[n] != ' ') n++;
    if (*nargs >= KJIT_MAXARGS || !parse_type(p, n, &args[(*nargs)++])) return 0;
    p += n;
  }
  return end != NULL;
}

/* The facts of the function src returns, or "error: ...". */
static void facts_of(const char *src, const char *name, Buf *out, Buf *ir) {
  Type args[KJIT_MAXARGS];
  int nargs, parallel;
  if (!parse_args(src, args, &nargs, &parallel)) { bputs(out, "bad -- args: line\n"); return; }
  int top = lua_gettop(L);
  if (luaL_loadbuffer(L, src, strlen(src), name) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    bputs(out, "load error: ");
    bputs(out, lua_tostring(L, -1));
    bputs(out, "\n");
    lua_settop(L, top);
    return;
  }
  Arena A;
  ka_init(&A);
  KtySession S;
  kty_open(&S, L, &A);
  KtySpec *sp = kty_spec(&S, -1, nargs, args);
  if (sp == NULL) {
    bputs(out, "error: ");
    bputs(out, S.err);
    bputs(out, "\n");
  } else {
    KfaFacts *F = kfa_analyze(&A, sp, parallel);
    CHECK(F != NULL, "%s: facts", name);
    char *s = NULL;
    size_t n = 0, cap = 0;
    if (F) kfa_print(F, &s, &n, &cap);
    if (s) bput(out, s, n);
    free(s);
    uint8_t pure[64] = {0};
    if (S.nspecs <= 64) {
      kfa_mark_pure(&S, 1, pure);
      for (int i = 0; i < S.nspecs; i++) {
        char line[64];
        snprintf(line, sizeof line, "pure: spec %d %s\n", i, pure[i] ? "yes" : "no");
        bputs(out, line);
      }
    }
    if (ir) {
      s = NULL; n = cap = 0;
      kty_print(&S, &s, &n, &cap);
      if (s) bput(ir, s, n);
      free(s);
    }
  }
  kty_close(&S);
  ka_free(&A);
  lua_settop(L, top);
}

#define MAXCASES 128
static Case cases[MAXCASES];
static int ncases;

static void test_cases(void) {
  ncases = load_case_file(CASES, cases, MAXCASES);
  CHECK(ncases >= 30, "%d cases in %s", ncases, CASES);
  int update = getenv("KJIT_IRFACTS_UPDATE") != NULL;
  int verbose = getenv("KJIT_IRFACTS_VERBOSE") != NULL;
  Buf all = {0};
  for (int i = 0; i < ncases; i++) {
    Case *c = &cases[i];
    Buf out = {0}, ir = {0};
    bputs(&out, "");
    char name[128];
    snprintf(name, sizeof name, "=%s", c->name);
    facts_of(c->src, name, &out, verbose ? &ir : NULL);
    CHECK(strcmp(c->kind, "facts") == 0, "case %s: kind %s", c->name, c->kind);
    CHECK(strncmp(out.s, "error:", 6) != 0 && strncmp(out.s, "load error", 10) != 0 &&
          strncmp(out.s, "bad ", 4) != 0, "case %s: %s", c->name, out.s);
    int same = strcmp(out.s, c->want) == 0;
    CHECK(same || update, "case %s: output differs", c->name);
    if (!same && !update) first_diff(c->want, out.s);
    if (verbose && (!same || update)) printf("---- %s\n%s%s", c->name, ir.s ? ir.s : "", out.s);
    put_case(&all, c->name, c->src, "facts", out.s);
    free(out.s);
    free(ir.s);
  }
  if (update) rewrite_case_file(CASES, &all);
  free(all.s);
}


/*
** {======================================================
** Cross-check with the old generator's hoisting (codegen.c: emit_int_for,
** mark_variant_*, invariant_int, consider_index, collect_*), restated
** here over the old pipeline's AST and types (src/parse.c, resolve.c,
** types.c) as an oracle: for every integer numeric for whose variable is
** never assigned, how many index nodes it would prove before the loop.
** The facts must prove at least those (per loop, matched by line), and
** the same count except where the IR sees more: SSA follows a copy of the
** control variable (`local j = i; x[j]`), which the AST rule did not.
** =======================================================
*/

typedef struct OldLoop { int line, n; } OldLoop;
typedef struct Old {
  KSpec *sp; uint8_t *variant;
  OldLoop loops[64]; int nloops;
  OldLoop whiles[64]; int nwhiles;   /* n: narrowed */
} Old;

static void mark_variant_block(Old *O, Block *b);
static void mark_variant_stmt(Old *O, Stmt *s) {
  switch (s->kind) {
  case S_LOCAL:
    for (int i = 0; i < s->u.local.nnames; i++) O->variant[s->u.local.vars[i]->id] = 1;
    break;
  case S_ASSIGN:
    for (int i = 0; i < s->u.assign.ntargets; i++) {
      Expr *t = s->u.assign.targets[i];
      if (t->kind == E_NAME && t->u.name.var) O->variant[t->u.name.var->id] = 1;
    }
    break;
  case S_DO: mark_variant_block(O, s->u.block); break;
  case S_WHILE: case S_REPEAT: mark_variant_block(O, s->u.loop.body); break;
  case S_IF:
    for (int i = 0; i < s->u.ifs.n; i++) mark_variant_block(O, s->u.ifs.blocks[i]);
    if (s->u.ifs.els) mark_variant_block(O, s->u.ifs.els);
    break;
  case S_FORNUM:
    O->variant[s->u.fornum.var->id] = 1;
    mark_variant_block(O, s->u.fornum.body);
    break;
  default: break;
  }
}
static void mark_variant_block(Old *O, Block *b) {
  for (int i = 0; i < b->n; i++) mark_variant_stmt(O, b->stmts[i]);
}

static int old_invariant(Old *O, Expr *e) {
  if (O->sp->exprtypes[e->id].kind != T_INT) return 0;
  if (e->kind == E_INT) return 1;
  if (e->kind == E_PAREN) return old_invariant(O, e->u.paren);
  if (e->kind == E_NAME)
    return e->u.name.var ? !O->variant[e->u.name.var->id] : O->sp->consts[e->id].type.kind == T_INT;
  return 0;
}

static int old_consider(Old *O, Var *lv, Expr *e) {
  int depth = 0;
  Expr *o = e->u.index.obj;
  while (o->kind == E_INDEX) { depth++; o = o->u.index.obj; }
  if (o->kind != E_NAME || o->u.name.var == NULL) return 0;
  Var *base = o->u.name.var;
  Type bt = O->sp->vartypes[base->id];
  if (bt.kind != T_BUF || O->variant[base->id] || depth >= bt.ndim) return 0;
  Expr *k = e->u.index.key;
  while (k->kind == E_PAREN) k = k->u.paren;
  if (O->sp->exprtypes[k->id].kind != T_INT) return 0;
  if (k->kind == E_NAME && k->u.name.var == lv) return 1;
  if (k->kind == E_BINOP && (k->u.bin.op == OP_ADD || k->u.bin.op == OP_SUB)) {
    Expr *a = k->u.bin.a, *b = k->u.bin.b;
    while (a->kind == E_PAREN) a = a->u.paren;
    while (b->kind == E_PAREN) b = b->u.paren;
    if (a->kind == E_NAME && a->u.name.var == lv && old_invariant(O, b)) return 1;
    if (k->u.bin.op == OP_ADD && b->kind == E_NAME && b->u.name.var == lv && old_invariant(O, a))
      return 1;
  }
  return old_invariant(O, k);
}

static int old_expr(Old *O, Var *lv, Expr *e) {
  if (e == NULL) return 0;
  switch (e->kind) {
  case E_INDEX:
    return (O->sp->exprtypes[e->u.index.obj->id].kind == T_BUF ? old_consider(O, lv, e) : 0) +
           old_expr(O, lv, e->u.index.obj) + old_expr(O, lv, e->u.index.key);
  case E_FIELD: return old_expr(O, lv, e->u.field.obj);
  case E_CALL: {
    int n = 0;
    for (int i = 0; i < e->u.call.nargs; i++) n += old_expr(O, lv, e->u.call.args[i]);
    return n;
  }
  case E_BINOP: return old_expr(O, lv, e->u.bin.a) + old_expr(O, lv, e->u.bin.b);
  case E_UNOP: return old_expr(O, lv, e->u.un.a);
  case E_PAREN: return old_expr(O, lv, e->u.paren);
  default: return 0;
  }
}

static int old_exprs(Old *O, Var *lv, Expr **es, int n) {
  int c = 0;
  for (int i = 0; i < n; i++) c += old_expr(O, lv, es[i]);
  return c;
}

static int old_collect(Old *O, Var *lv, Block *b) {
  int n = 0;
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    switch (s->kind) {
    case S_LOCAL: n += old_exprs(O, lv, s->u.local.exprs, s->u.local.nexprs); break;
    case S_ASSIGN:
      n += old_exprs(O, lv, s->u.assign.exprs, s->u.assign.nexprs);
      n += old_exprs(O, lv, s->u.assign.targets, s->u.assign.ntargets);
      break;
    case S_CALL: n += old_expr(O, lv, s->u.call); break;
    case S_DO: n += old_collect(O, lv, s->u.block); break;
    case S_WHILE: case S_REPEAT:
      n += old_expr(O, lv, s->u.loop.cond) + old_collect(O, lv, s->u.loop.body);
      break;
    case S_IF:
      for (int j = 0; j < s->u.ifs.n; j++)
        n += old_expr(O, lv, s->u.ifs.conds[j]) + old_collect(O, lv, s->u.ifs.blocks[j]);
      if (s->u.ifs.els) n += old_collect(O, lv, s->u.ifs.els);
      break;
    case S_FORNUM:
      n += old_expr(O, lv, s->u.fornum.start) + old_expr(O, lv, s->u.fornum.limit) +
           old_expr(O, lv, s->u.fornum.step) + old_collect(O, lv, s->u.fornum.body);
      break;
    case S_RETURN: n += old_exprs(O, lv, s->u.ret.exprs, s->u.ret.n); break;
    default: break;
    }
  }
  return n;
}

/* Every numeric for of b (any depth): what emit_int_for would hoist. */
static void old_loops(Old *O, Block *b, int nvars) {
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    switch (s->kind) {
    case S_DO: old_loops(O, s->u.block, nvars); break;
    case S_WHILE: case S_REPEAT: old_loops(O, s->u.loop.body, nvars); break;
    case S_IF:
      for (int j = 0; j < s->u.ifs.n; j++) old_loops(O, s->u.ifs.blocks[j], nvars);
      if (s->u.ifs.els) old_loops(O, s->u.ifs.els, nvars);
      break;
    case S_FORNUM: {
      Var *lv = s->u.fornum.var;
      if (!s->u.fornum.prange && lv->nassign == 0 && O->sp->vartypes[lv->id].kind == T_INT &&
          O->nloops < 64) {
        memset(O->variant, 0, (size_t)nvars + 1);
        mark_variant_block(O, s->u.fornum.body);
        O->variant[lv->id] = 1;
        int n = old_collect(O, lv, s->u.fornum.body);
        O->loops[O->nloops++] = (OldLoop){ s->line, n < 256 ? n : 256 };
      }
      old_loops(O, s->u.fornum.body, nvars);
      break;
    }
    default: break;
    }
  }
}


/* The old narrow_find (codegen.c: is_step, narrow_scan_*, int_local): does
** `while cond do body end` get a narrow counter? */
typedef struct NScan { Var *k; int steps, other; } NScan;

static int old_is_step(Expr *x, Var *k) {
  if (x == NULL || x->kind != E_BINOP || x->u.bin.op != OP_ADD) return 0;
  Expr *a = x->u.bin.a, *b = x->u.bin.b;
  if (a->kind == E_INT) { Expr *t = a; a = b; b = t; }
  return a->kind == E_NAME && a->u.name.var == k && b->kind == E_INT && b->u.i == 1;
}

static void nscan_block(Block *b, NScan *ns, int inloop);
static void nscan_stmt(Stmt *s, NScan *ns, int inloop) {
  switch (s->kind) {
  case S_ASSIGN:
    for (int i = 0; i < s->u.assign.ntargets; i++) {
      Expr *t = s->u.assign.targets[i];
      if (t->kind != E_NAME || t->u.name.var != ns->k) continue;
      int step = !inloop && s->u.assign.ntargets == 1 && s->u.assign.nexprs == 1 &&
                 old_is_step(s->u.assign.exprs[0], ns->k);
      if (step) ns->steps++; else ns->other++;
    }
    break;
  case S_DO: nscan_block(s->u.block, ns, inloop); break;
  case S_WHILE: case S_REPEAT: nscan_block(s->u.loop.body, ns, 1); break;
  case S_FORNUM:
    if (s->u.fornum.var == ns->k) ns->other++;
    nscan_block(s->u.fornum.body, ns, 1);
    break;
  case S_FORIN: nscan_block(s->u.forin.body, ns, 1); break;
  case S_IF:
    for (int i = 0; i < s->u.ifs.n; i++) nscan_block(s->u.ifs.blocks[i], ns, inloop);
    if (s->u.ifs.els) nscan_block(s->u.ifs.els, ns, inloop);
    break;
  case S_GOTO: case S_LABEL: case S_FUNCTION: case S_LOCALFUNC: ns->other++; break;
  default: break;
  }
}
static void nscan_block(Block *b, NScan *ns, int inloop) {
  for (int i = 0; i < b->n; i++) nscan_stmt(b->stmts[i], ns, inloop);
}

static int old_int_local(KSpec *sp, Expr *e) {
  return e->kind == E_NAME && e->u.name.var && !e->u.name.var->is_loopvar &&
         sp->vartypes[e->u.name.var->id].kind == T_INT;
}

static int old_narrow_find(KSpec *sp, Expr *cond, Block *body) {
  while (cond->kind == E_PAREN) cond = cond->u.paren;
  if (cond->kind != E_BINOP) return 0;
  OpKind op = cond->u.bin.op;
  if (op == OP_AND) return old_narrow_find(sp, cond->u.bin.a, body) || old_narrow_find(sp, cond->u.bin.b, body);
  Expr *kx, *ex;
  if (op == OP_LT || op == OP_LE) { kx = cond->u.bin.a; ex = cond->u.bin.b; }
  else if (op == OP_GT || op == OP_GE) { kx = cond->u.bin.b; ex = cond->u.bin.a; }
  else return 0;
  if (!old_int_local(sp, kx)) return 0;
  if (ex->kind == E_INT) {
    if (ex->u.i < INT32_MIN || ex->u.i > INT32_MAX - 1) return 0;
  } else {
    if (!old_int_local(sp, ex) || ex->u.name.var == kx->u.name.var) return 0;
    NScan es = { ex->u.name.var, 0, 0 };
    nscan_block(body, &es, 0);
    if (es.steps || es.other) return 0;
  }
  NScan ns = { kx->u.name.var, 0, 0 };
  nscan_block(body, &ns, 0);
  return ns.steps == 1 && !ns.other;
}

/* Every while loop of b (any depth): (line, narrowed). */
static void old_whiles(Old *O, Block *b) {
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    switch (s->kind) {
    case S_DO: old_whiles(O, s->u.block); break;
    case S_REPEAT: old_whiles(O, s->u.loop.body); break;
    case S_WHILE:
      if (O->nwhiles < 64)
        O->whiles[O->nwhiles++] = (OldLoop){ s->line, old_narrow_find(O->sp, s->u.loop.cond, s->u.loop.body) };
      old_whiles(O, s->u.loop.body);
      break;
    case S_IF:
      for (int j = 0; j < s->u.ifs.n; j++) old_whiles(O, s->u.ifs.blocks[j]);
      if (s->u.ifs.els) old_whiles(O, s->u.ifs.els);
      break;
    case S_FORNUM: old_whiles(O, s->u.fornum.body); break;
    case S_FORIN: old_whiles(O, s->u.forin.body); break;
    default: break;
    }
  }
}

/* The old mark_pure (codegen.c: pure_expr, pure_block), over the AST. */
static int old_pure_expr(KSpec *sp, Expr *e);
static int old_pure_exprs(KSpec *sp, Expr **es, int n) {
  for (int i = 0; i < n; i++) if (!old_pure_expr(sp, es[i])) return 0;
  return 1;
}
static int old_pure_expr(KSpec *sp, Expr *e) {
  if (e == NULL) return 1;
  switch (e->kind) {
  case E_INDEX: return old_pure_expr(sp, e->u.index.obj) && old_pure_expr(sp, e->u.index.key);
  case E_FIELD: return old_pure_expr(sp, e->u.field.obj);
  case E_CALL: {
    Type ft = sp->exprtypes[e->u.call.fn->id];
    if (ft.kind == T_BUILTIN && (ft.ref == B_ERROR || B_IS_CUDA(ft.ref))) return 0;
    if (ft.kind != T_BUILTIN && (sp->calls[e->id] == NULL || !sp->calls[e->id]->pure)) return 0;
    return old_pure_exprs(sp, e->u.call.args, e->u.call.nargs);
  }
  case E_BINOP: return old_pure_expr(sp, e->u.bin.a) && old_pure_expr(sp, e->u.bin.b);
  case E_UNOP: return old_pure_expr(sp, e->u.un.a);
  case E_PAREN: return old_pure_expr(sp, e->u.paren);
  case E_NIL: case E_TRUE: case E_FALSE: case E_INT: case E_FLT: case E_STR: case E_NAME: return 1;
  default: return 0;
  }
}
static int old_pure_block(KSpec *sp, Block *b) {
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    switch (s->kind) {
    case S_LOCAL: if (!old_pure_exprs(sp, s->u.local.exprs, s->u.local.nexprs)) return 0; break;
    case S_ASSIGN:
      for (int t = 0; t < s->u.assign.ntargets; t++)
        if (s->u.assign.targets[t]->kind != E_NAME) return 0;
      if (!old_pure_exprs(sp, s->u.assign.exprs, s->u.assign.nexprs)) return 0;
      break;
    case S_CALL: if (!old_pure_expr(sp, s->u.call)) return 0; break;
    case S_DO: if (!old_pure_block(sp, s->u.block)) return 0; break;
    case S_IF:
      if (!old_pure_exprs(sp, s->u.ifs.conds, s->u.ifs.n)) return 0;
      for (int k = 0; k < s->u.ifs.n; k++) if (!old_pure_block(sp, s->u.ifs.blocks[k])) return 0;
      if (s->u.ifs.els && !old_pure_block(sp, s->u.ifs.els)) return 0;
      break;
    case S_RETURN: if (!old_pure_exprs(sp, s->u.ret.exprs, s->u.ret.n)) return 0; break;
    case S_EMPTY: break;
    default: return 0;
    }
  }
  return 1;
}
static void old_mark_pure(Session *S) {
  for (int i = 0; i < S->nspecs; i++) {
    KSpec *sp = S->specs[i];
    TypeKind k = sp->nret == 1 ? sp->rets[0].kind : T_UNKNOWN;
    sp->pure = k == T_INT || k == T_F64 || k == T_F32 || k == T_BOOL;
  }
  for (int changed = 1; changed; ) {
    changed = 0;
    for (int i = 0; i < S->nspecs; i++) {
      KSpec *sp = S->specs[i];
      if (sp->pure && !old_pure_block(sp, sp->fn->ast->body)) { sp->pure = 0; changed = 1; }
    }
  }
}

static KSpec *old_types(int idx, int nargs, const Type *args) {
  SessionBox *sb = ks_push_session(L, 1, 0, 2);
  Session *S = &sb->S;
  jmp_buf jb;
  S->jb = &jb;
  KSpec *sp = NULL;
  if (setjmp(jb) == 0) {
    KFunc *f = kr_function(S, idx);
    sp = kt_spec(S, f, nargs, args);
    kt_infer_all(S);
  } else
    sp = NULL;
  return sp;   /* the session stays on the stack (the caller pops it) */
}

static int nsame, nmore, nloops_cmp, nhoisting, nwhile_cmp, nwhile_narrow, nwhile_more, npure_cmp, npure;

/* Compares one function of chunk (its text, returning it) for sig. */
static void cross_one(const char *chunk, const char *name, const char *sig) {
  Type args[KJIT_MAXARGS];
  int nargs, parallel;
  if (!parse_args(sig, args, &nargs, &parallel)) return;
  int top = lua_gettop(L);
  if (luaL_loadbuffer(L, chunk, strlen(chunk), chunk) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK ||
      !lua_isfunction(L, -1)) {
    lua_settop(L, top);
    return;
  }
  int fidx = lua_gettop(L);
  KSpec *old = old_types(fidx, nargs, args);
  Arena A;
  ka_init(&A);
  KtySession S;
  kty_open(&S, L, &A);
  KtySpec *sp = old ? kty_spec(&S, fidx, nargs, args) : NULL;
  KfaFacts *F = sp ? kfa_analyze(&A, sp, 0) : NULL;
  for (int i = 0; sp && i < S.nspecs; i++)   /* the callees too: no crash, no failure */
    CHECK(kfa_analyze(&A, S.specs[i], 1) != NULL, "cross %s: facts of spec %d", name, i);
  if (old && F) {
    Old O;
    memset(&O, 0, sizeof O);
    O.sp = old;
    O.variant = calloc((size_t)old->fn->nvars + 1, 1);
    old_loops(&O, old->fn->ast->body, old->fn->nvars);
    free(O.variant);
    old_whiles(&O, old->fn->ast->body);
    /* purity of the function itself (its specialization in each session) */
    SessionBox *sb = lua_touserdata(L, fidx + 1);
    old_mark_pure(&sb->S);
    uint8_t *pure = calloc((size_t)S.nspecs + 1, 1);
    kfa_mark_pure(&S, 1, pure);
    npure_cmp++;
    npure += old->pure;
    CHECK(pure[sp->index] == old->pure, "cross %s: pure %d, the old generator %d", name,
          pure[sp->index], old->pure);
    free(pure);
    for (int i = 0; i < O.nwhiles; i++) {
      int line = O.whiles[i].line, dup = 0;
      for (int j = 0; j < O.nwhiles; j++) dup |= j != i && O.whiles[j].line == line;
      for (int j = 0; j < F->nloops && !dup; j++) {
        const KfaLoop *fl = &F->loops[j];
        if (fl->loop->kind == KIR_LOOP_FORNUM || fl->loop->kind == KIR_LOOP_FORIN ||
            fl->loop->line != line)
          continue;
        nwhile_cmp++;
        nwhile_narrow += O.whiles[i].n;
        /* the same, or more here: gotos inside the body (a `continue`)
        ** stopped the old rule, while the SSA proof holds with them */
        CHECK(fl->narrowk != NULL || O.whiles[i].n == 0, "cross %s line %d: narrow %d, the old "
              "generator %d", name, line, fl->narrowk != NULL, O.whiles[i].n);
        if (fl->narrowk && !O.whiles[i].n) {
          nwhile_more++;
          if (getenv("KJIT_IRFACTS_VERBOSE")) printf("  narrow here only: %s line %d\n", name, line);
        }
      }
    }
    for (int i = 0; i < O.nloops; i++) {
      int line = O.loops[i].line, want = 0, got = 0, found = 0;
      for (int j = 0; j < O.nloops; j++) want += O.loops[j].line == line ? O.loops[j].n : 0;
      for (int j = 0; j < F->nloops; j++)
        if (F->loops[j].loop->kind == KIR_LOOP_FORNUM && F->loops[j].isint &&
            F->loops[j].loop->line == line) {
          got += F->loops[j].nchecks;
          found = 1;
        }
      if (!found) continue;
      nloops_cmp++;
      nhoisting += want > 0;
      int sl = (int)strcspn(sig, "\n");
      CHECK(got >= want, "cross %s (%.*s) line %d: %d hoisted, the old generator %d", name, sl,
            sig, line, got, want);
      if (got == want) nsame++;
      else if (got > want) {
        nmore++;
        if (getenv("KJIT_IRFACTS_VERBOSE"))
          printf("  more: %s (%.*s) line %d: %d hoisted, the old generator %d\n", name, sl, sig,
                 line, got, want);
      }
    }
  }
  kty_close(&S);
  ka_free(&A);
  lua_settop(L, top);
}

/* The functions of a test_jit_diff file (each with the local functions
** before it), each for a few signatures mixing arrays and integers. */
static int cross_file(const char *path) {
  char *text = read_file(path, NULL);
  if (text == NULL) return 0;
  static const char *const sigs[][4] = {
    { "i64", "i64", "i64", "i64" }, { "f64[:]", "i64", "i64", "i64" },
    { "f64[:]", "f64[:]", "i64", "i64" }, { "f64[:]", "f64[:]", "f64[:]", "i64" },
    { "f64[:,:]", "i64", "i64", "i64" }, { "f64[:,:]", "f64[:]", "i64", "i64" },
    { "i64[:]", "i64", "i64", "i64" }, { "f32[:]", "f32[:]", "i64", "i64" },
  };
  Buf prefix = {0};
  bputs(&prefix, "");
  for (char *p = text; *p; ) {
    char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) + 1 : strlen(p);
    if (strncmp(p, "local function ", 15) == 0) {
      char *end = strstr(p, "\nend\n");
      if (end == NULL) break;
      size_t fl = (size_t)(end - p) + 5;
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)strcspn(p + 15, "( "), p + 15);
      bput(&prefix, p, fl);
      Buf chunk = {0};
      bputs(&chunk, prefix.s);
      bputs(&chunk, "return ");
      bputs(&chunk, name);
      bputs(&chunk, "\n");
      int nparams = 0;
      const char *lp = strchr(p, '('), *rp = lp ? strchr(lp, ')') : NULL;
      if (lp && rp && rp > lp + 1) {
        nparams = 1;
        for (const char *c = lp; c < rp; c++) nparams += *c == ',';
      }
      for (size_t si = 0; si < sizeof sigs / sizeof sigs[0] && nparams <= 4; si++) {
        char sig[128] = "-- args:";
        for (int a = 0; a < nparams; a++) { strcat(sig, " "); strcat(sig, sigs[si][a]); }
        strcat(sig, "\n");
        cross_one(chunk.s, name, sig);
      }
      free(chunk.s);
      p += fl;
      continue;
    }
    p += n;
  }
  free(prefix.s);
  free(text);
  return 1;
}

static void test_cross_old(void) {
  static const char *const files[] = {
    "tests/lua/test_jit_diff_loops.lua", "tests/lua/test_jit_diff_buffers.lua",
    "tests/lua/test_jit_diff_control.lua", "tests/lua/test_jit_diff_f32.lua",
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    CHECK(cross_file(files[i]), "cannot read %s", files[i]);
  /* and the cases here (their own signature) */
  for (int i = 0; i < ncases; i++) {
    const char *nl = strchr(cases[i].src, '\n');
    if (nl == NULL || strncmp(cases[i].src, "-- args:", 8) != 0) continue;
    char sig[256];
    snprintf(sig, sizeof sig, "%.*s", (int)(nl - cases[i].src + 1), cases[i].src);
    cross_one(cases[i].src, cases[i].name, sig);
  }
  printf("cross-check with the old generator's hoisting: %d loops (%d where it hoisted), "
         "%d the same, %d more here\n", nloops_cmp, nhoisting, nsame, nmore);
  printf("cross-check with the old mark_pure: %d functions (%d pure), the same\n", npure_cmp, npure);
  CHECK(npure_cmp >= 50 && npure >= 5, "%d functions' purity cross-checked", npure_cmp);
  printf("cross-check with the old narrow_find: %d while loops (%d narrowed), the same but %d "
         "narrowed here only\n", nwhile_cmp, nwhile_narrow, nwhile_more);
  CHECK(nwhile_cmp >= 10 && nwhile_narrow >= 3, "%d while loops cross-checked", nwhile_cmp);
  CHECK(nloops_cmp >= 50 && nhoisting >= 20, "%d loops cross-checked, %d hoisting", nloops_cmp,
        nhoisting);
}

/* }====================================================== */

static int writer(lua_State *l, const void *p, size_t sz, void *ud) {
  (void)l;
  bput(ud, p, sz);
  return 0;
}

/* A stripped function has no names: its reductions are still found (and
** the note names them "?"). */
static void test_stripped(void) {
  const char *src = "return function(x)\n  local s = 0.0\n"
                    "  for i in kjit.prange(1, #x) do s = s + x[i] + 1 end\n  return s\nend\n";
  int top = lua_gettop(L);
  CHECK(luaL_loadbuffer(L, src, strlen(src), "=strip") == LUA_OK && lua_pcall(L, 0, 1, 0) == LUA_OK,
        "load");
  Buf bin = {0};
  lua_dump(L, writer, &bin, 1);
  CHECK(luaL_loadbufferx(L, bin.s, bin.n, "=stripped", "b") == LUA_OK, "load stripped");
  free(bin.s);
  Arena A;
  ka_init(&A);
  KtySession S;
  kty_open(&S, L, &A);
  Type buf = { .kind = T_BUF, .dtype = KJIT_F64, .ndim = 1 };
  KtySpec *sp = kty_spec(&S, -1, 1, &buf);
  KfaFacts *F = sp ? kfa_analyze(&A, sp, 1) : NULL;
  KfaPrange *P = F && F->nloops == 1 ? F->loops[0].prange : NULL;
  CHECK(P && P->parallel && P->nreds == 1 && P->reds[0].red == KFA_RED_ADD && P->reds[0].nops == 2,
        "stripped: %s", P && P->errmsg ? P->errmsg : sp ? "no prange facts" : S.err);
  kty_close(&S);
  ka_free(&A);
  lua_settop(L, top);
}

int main(int argc, char **argv) {
  L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 1);
  lua_pop(L, 1);
  test_cases();
  test_cross_old();
  test_stripped();
  lua_close(L);
  free_cases(cases, ncases);
  return test_results("test_irfacts", argc, argv);
}
