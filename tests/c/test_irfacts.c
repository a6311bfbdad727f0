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

#define CASES "tests/c/irfacts_cases.txt"

static lua_State *L;

/* "f64[:,:]", "i64", "f32", "boolean", "nil" as a Type; 0 if unknown. */
static int parse_type(const char *s, size_t n, Type *t) {
  memset(t, 0, sizeof *t);
  static const struct { const char *name; int kind; } scalars[] = {
    { "i64", T_INT }, { "f64", T_F64 }, { "f32", T_F32 }, { "boolean", T_BOOL }, { "nil", T_NIL }
  };
  const char *br = memchr(s, '[', n);
  if (br == NULL) {
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
      if (strlen(scalars[i].name) == n && memcmp(scalars[i].name, s, n) == 0) {
        t->kind = (uint8_t)scalars[i].kind;
        return 1;
      }
    return 0;
  }
  for (int d = 0; d < KJIT_NDTYPES; d++) {
    const char *dn = kjit_dtype_name((kjit_dtype)d);
    if (strlen(dn) == (size_t)(br - s) && memcmp(dn, s, (size_t)(br - s)) == 0) {
      t->kind = T_BUF;
      t->dtype = (uint8_t)d;
      t->ndim = 1;
      for (const char *p = br; p < s + n; p++) t->ndim += *p == ',';
      return 1;
    }
  }
  return 0;
}

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
typedef struct Old { KSpec *sp; uint8_t *variant; OldLoop loops[64]; int nloops; } Old;

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

static int nsame, nmore, nloops_cmp, nhoisting;

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
  if (old && F) {
    Old O;
    memset(&O, 0, sizeof O);
    O.sp = old;
    O.variant = calloc((size_t)old->fn->nvars + 1, 1);
    old_loops(&O, old->fn->ast->body, old->fn->nvars);
    free(O.variant);
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
  CHECK(nloops_cmp >= 50 && nhoisting >= 20, "%d loops cross-checked, %d hoisting", nloops_cmp,
        nhoisting);
}

/* }====================================================== */

int main(int argc, char **argv) {
  L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 1);
  lua_pop(L, 1);
  test_cases();
  test_cross_old();
  lua_close(L);
  free_cases(cases, ncases);
  return test_results("test_irfacts", argc, argv);
}
