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

int main(int argc, char **argv) {
  L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 1);
  lua_pop(L, 1);
  test_cases();
  lua_close(L);
  free_cases(cases, ncases);
  return test_results("test_irfacts", argc, argv);
}
