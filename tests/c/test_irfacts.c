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
** Cases of kind "oracle" (the file's second part) hold what the retired
** source-text generator proved of the functions of tests/lua/test_jit_diff_
** {loops,buffers,control,f32}.lua (its hoisting, narrow counters and
** purity, computed over its AST when both pipelines existed): one or more
** "-- args:" lines, the chunk, then the expectations, each a lower bound
** or an equality the facts must meet for every signature:
**   fornum line N: hoisted at least K   (index checks proved before the
**                                        integer for loops of line N)
**   while line N: narrow                (the while loop of line N gets a
**                                        narrow counter)
**   pure: yes|no                        (the function itself)
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
      kfa_mark_pure(&S, 1, NULL, pure);
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

#define MAXCASES 256
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
    if (strcmp(c->kind, "oracle") == 0) {   /* test_oracle's, kept as they are */
      put_case(&all, c->name, c->src, c->kind, c->want);
      continue;
    }
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


/* One oracle expectation against facts F of specialization sp (purity:
** pure[]): returns 1 if it holds. */
static int oracle_line(const char *line, const KfaFacts *F, const KtySpec *sp,
                       const uint8_t *pure, const char *name, const char *sig) {
  int ln, k;
  char word[8];
  int sl = (int)strcspn(sig, "\n");
  if (sscanf(line, "fornum line %d: hoisted at least %d", &ln, &k) == 2) {
    int got = 0, found = 0;
    for (int j = 0; j < F->nloops; j++)
      if (F->loops[j].loop->kind == KIR_LOOP_FORNUM && F->loops[j].isint &&
          F->loops[j].loop->line == ln) {
        got += F->loops[j].nchecks;
        found = 1;
      }
    CHECK(found && got >= k, "%s (%.*s) line %d: %d hoisted%s, the old generator %d",
          name, sl, sig, ln, got, found ? "" : " (no integer loop)", k);
    return found && got >= k;
  }
  if (sscanf(line, "while line %d: %7s", &ln, word) == 2 && strcmp(word, "narrow") == 0) {
    int found = 0, narrow = 0;
    for (int j = 0; j < F->nloops; j++) {
      const KfaLoop *fl = &F->loops[j];
      if (fl->loop->kind == KIR_LOOP_FORNUM || fl->loop->kind == KIR_LOOP_FORIN ||
          fl->loop->line != ln)
        continue;
      found = 1;
      narrow = fl->narrowk != NULL;
    }
    CHECK(found && narrow, "%s (%.*s) line %d: %s, the old generator narrowed it", name,
          sl, sig, ln, found ? "no narrow counter" : "no while loop");
    return found && narrow;
  }
  if (sscanf(line, "pure: %7s", word) == 1) {
    int want = strcmp(word, "yes") == 0;
    CHECK(pure[sp->index] == want, "%s (%.*s): pure %d, the old generator %d", name, sl,
          sig, pure[sp->index], want);
    return pure[sp->index] == want;
  }
  CHECK(0, "%s: bad line '%s'", name, line);
  return 0;
}

static int noracle, noracle_sigs, noracle_checks, noracle_hoist, noracle_narrow, noracle_pure;

/* One "oracle" case: every "-- args:" line is a signature; the chunk
** (the rest) is loaded as it was when the expectations were computed. */
static void oracle_case(const Case *c) {
  const char *chunk = c->src;
  while (strncmp(chunk, "-- args:", 8) == 0 && strchr(chunk, '\n')) chunk = strchr(chunk, '\n') + 1;
  noracle++;
  for (const char *sig = c->src; sig < chunk; sig = strchr(sig, '\n') + 1) {
    Type args[KJIT_MAXARGS];
    int nargs, parallel;
    CHECK(parse_args(sig, args, &nargs, &parallel), "%s: bad -- args: line", c->name);
    int top = lua_gettop(L);
    char name[160];
    snprintf(name, sizeof name, "=%s", c->name);
    int ok = luaL_loadbuffer(L, chunk, strlen(chunk), name) == LUA_OK &&
             lua_pcall(L, 0, 1, 0) == LUA_OK && lua_isfunction(L, -1);
    CHECK(ok, "%s: load: %s", c->name, lua_tostring(L, -1));
    if (!ok) { lua_settop(L, top); continue; }
    Arena A;
    ka_init(&A);
    KtySession S;
    kty_open(&S, L, &A);
    KtySpec *sp = kty_spec(&S, -1, nargs, args);
    KfaFacts *F = sp ? kfa_analyze(&A, sp, 0) : NULL;
    CHECK(F != NULL, "%s: %s", c->name, sp ? "no facts" : S.err);
    for (int i = 0; sp && i < S.nspecs; i++)   /* the callees too: no crash, no failure */
      CHECK(kfa_analyze(&A, S.specs[i], 1) != NULL, "%s: facts of spec %d", c->name, i);
    if (F) {
      noracle_sigs++;
      uint8_t *pure = calloc((size_t)S.nspecs + 1, 1);
      kfa_mark_pure(&S, 1, NULL, pure);
      for (const char *w = c->want; *w; ) {
        size_t n = strcspn(w, "\n");
        char line[128];
        snprintf(line, sizeof line, "%.*s", (int)n, w);
        noracle_checks++;
        noracle_hoist += strncmp(line, "fornum", 6) == 0;
        noracle_narrow += strncmp(line, "while", 5) == 0;
        noracle_pure += strcmp(line, "pure: yes") == 0;
        oracle_line(line, F, sp, pure, c->name, sig);
        w += n + (w[n] == '\n');
      }
      free(pure);
    }
    kty_close(&S);
    ka_free(&A);
    lua_settop(L, top);
  }
}

static void test_oracle(void) {
  for (int i = 0; i < ncases; i++)
    if (strcmp(cases[i].kind, "oracle") == 0) oracle_case(&cases[i]);
  printf("the old generator's facts: %d functions, %d signatures, %d expectations (%d loops "
         "it hoisted in, %d while loops it narrowed, %d pure)\n", noracle, noracle_sigs,
         noracle_checks, noracle_hoist, noracle_narrow, noracle_pure);
  CHECK(noracle >= 120 && noracle_sigs >= 200 && noracle_hoist >= 90 && noracle_narrow >= 3 &&
        noracle_pure >= 30, "the oracle cases are all there (%d functions)", noracle);
}

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

/* The code generator's predicate (kfa_mark_pure's fits) goes into the
** fixpoint: a specialization it rejects is not pure, and neither is any
** caller of it, directly or through another; a function beside them
** stays pure. */
static int not_line_2(KtySession *S, const KtySpec *sp) {
  (void)S;
  return sp->ir->proto->linedefined != 2;
}

static void test_mark_pure_fits(void) {
  const char *src = "local function leaf(n) return n + 1 end\n"     /* line 1 */
                    "local function unfit(n) return n * 2 end\n"    /* line 2: rejected */
                    "local function mid(n) return unfit(n) + 1 end\n"
                    "local function other(n) return leaf(n) end\n"
                    "return function(n) return mid(n) + other(n) end\n";
  int top = lua_gettop(L);
  CHECK(luaL_loadbuffer(L, src, strlen(src), "=fits") == LUA_OK && lua_pcall(L, 0, 1, 0) == LUA_OK,
        "load");
  Arena A;
  ka_init(&A);
  KtySession S;
  kty_open(&S, L, &A);
  Type i64 = { .kind = T_INT };
  KtySpec *sp = kty_spec(&S, -1, 1, &i64);
  CHECK(sp != NULL, "fits: %s", S.err);
  if (sp) {
    uint8_t *all = calloc((size_t)S.nspecs + 1, 1), *some = calloc((size_t)S.nspecs + 1, 1);
    kfa_mark_pure(&S, 1, NULL, all);
    kfa_mark_pure(&S, 1, not_line_2, some);
    int seen = 0;
    for (int i = 0; i < S.nspecs; i++) {
      int line = S.specs[i]->ir->proto->linedefined;
      CHECK(all[i], "fits: spec %d (line %d) pure without a predicate", i, line);
      int want = line == 1 || line == 4;   /* leaf, other: all else reaches unfit */
      CHECK(some[i] == want, "fits: spec %d (line %d) pure %d, want %d", i, line, some[i], want);
      seen |= 1 << line;
    }
    CHECK(seen == 0x3e, "fits: the five functions specialized (%x)", seen);
    free(all);
    free(some);
  }
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
  test_oracle();
  test_stripped();
  test_mark_pure_fits();
  lua_close(L);
  free_cases(cases, ncases);
  return test_results("test_irfacts", argc, argv);
}
