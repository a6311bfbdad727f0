/*
** test_irtype.c: tests of the IR typer (src/ir/ir_type.c).
**
** Each case of tests/c/irtype_cases.txt is a chunk returning a function
** and an argument signature; the typer's output (every specialization's
** typed IR, or the compile error) is checked against the text kept there:
**   === name
**   -- args: f64[:] i64          (the first line of the chunk; Lua sees a
**   <the rest of the chunk>       comment; "-- kernel args:" types a
**                                 cuda.jit kernel)
**   --- typed                    (or: --- error)
**   <kty_print's output, or the message>
** KJIT_IRTYPE_UPDATE=1 rewrites the file from what is printed (review the
** diff). Also: a stripped function's errors read "?:-1:", the stack is
** kept, a session types several functions, and every typed function's
** IR verifies; 22 functions once cross-checked with the retired
** source-text pipeline give the return types or messages recorded then
** (up to numbers, where an integer and a float meet); every function of tests/c/bytecode_cases.txt typed for
** six signatures gives a specialization or a located message; a function
** of 20000 returns types. KJIT_IRTYPE_VERBOSE=1 prints more. Run it under
** ASan too (build-asan).
**
** Usage: test_irtype [results-file]; writes "passed failed 0" there.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "kjit.h"
#include "ir/ir_type.h"
#include "casetest.h"
#include "casetypes.h"

#define CASES "tests/c/irtype_cases.txt"

static lua_State *L;


/* The argument types of "-- args: a b c" at the start of src ("-- kernel
** args:" types a cuda.jit kernel: *kernel set). */
static int parse_args_k(const char *src, Type *args, int *nargs, int *kernel) {
  *nargs = 0;
  *kernel = strncmp(src, "-- kernel args:", 15) == 0;
  if (!*kernel && strncmp(src, "-- args:", 8) != 0) return 1;
  const char *p = src + (*kernel ? 15 : 8), *end = strchr(p, '\n');
  while (p < end) {
    while (p < end && *p == ' ') p++;
    if (p >= end) break;
    size_t n = 0;
    while (p + n < end && p[n] != ' ') n++;
    if (!parse_type(p, n, &args[(*nargs)++])) return 0;
    p += n;
  }
  return 1;
}

static int parse_args(const char *src, Type *args, int *nargs) {
  int kernel;
  return parse_args_k(src, args, nargs, &kernel);
}

/* Types the function src returns (its last result) for args: the typed
** IR, or "error: message". */
static void type_source(const char *src, const char *name, Buf *out) {
  Type args[KJIT_MAXARGS];
  int nargs, kernel;
  if (!parse_args_k(src, args, &nargs, &kernel)) { bputs(out, "bad -- args: line\n"); return; }
  int top = lua_gettop(L);
  if (luaL_loadbuffer(L, src, strlen(src), name) != LUA_OK ||
      lua_pcall(L, 0, 1, 0) != LUA_OK) {
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
  S.kernel = kernel;
  KtySpec *sp = kty_spec(&S, -1, nargs, args);
  CHECK(lua_gettop(L) == top + 1, "%s: stack kept (%d, %d)", name, lua_gettop(L), top + 1);
  if (sp == NULL) {
    bputs(out, S.err);
    bputs(out, "\n");
  } else {
    char *s = NULL;
    size_t n = 0, cap = 0;
    kty_print(&S, &s, &n, &cap);
    bput(out, s, n);
    free(s);
    for (int i = 0; i < S.nspecs; i++) {
      char verr[256];
      CHECK(kir_verify(S.specs[i]->ir, verr, sizeof verr), "%s: IR verifies: %s", name, verr);
    }
  }
  kty_close(&S);
  ka_free(&A);
  lua_settop(L, top);
}

/*
** {======================================================
** The corpus
** =======================================================
*/

#define MAXCASES 128
static Case cases[MAXCASES];
static int ncases;

static void test_cases(void) {
  ncases = load_case_file(CASES, cases, MAXCASES);
  CHECK(ncases >= 30, "%d cases in %s", ncases, CASES);
  int update = getenv("KJIT_IRTYPE_UPDATE") != NULL;
  Buf all = {0};
  for (int i = 0; i < ncases; i++) {
    Case *c = &cases[i];
    Buf out = {0};
    char name[128];
    snprintf(name, sizeof name, "=%s", c->name);
    type_source(c->src, name, &out);
    int iserr = strncmp(out.s, c->name, strlen(c->name)) == 0 &&
                out.s[strlen(c->name)] == ':';
    const char *kind = iserr ? "error" : "typed";
    CHECK(update || strcmp(kind, c->kind) == 0, "case %s: expected %s, got %s:\n%s", c->name,
          c->kind, kind, out.s);
    int same = strcmp(out.s, c->want) == 0;
    CHECK(same || update, "case %s: output differs", c->name);
    if (!same && !update) {
      first_diff(c->want, out.s);
      if (getenv("KJIT_IRTYPE_VERBOSE")) printf("%s", out.s);
    }
    put_case(&all, c->name, c->src, kind, out.s);
    free(out.s);
  }
  if (update) rewrite_case_file(CASES, &all);
  free(all.s);
}

/* }====================================================== */

static int writer(lua_State *l, const void *p, size_t sz, void *ud) {
  (void)l;
  bput(ud, p, sz);
  return 0;
}

/* A stripped function (lua_dump's strip, loaded back as binary): errors
** have no line, like the interpreter's "?:-1:". (An array passed to
** error is a compile error; a number compiles. The error() is on a live
** path: behind `v ~= v`, false for an array, it is dead code.) */
static void test_stripped(void) {
  const char *src = "return function(v) local s = 0.0 if v ~= 1 then error(v) end "
                    "for i = 1, 3 do s = s + v end return s end";
  int top = lua_gettop(L);
  CHECK(luaL_loadbuffer(L, src, strlen(src), "=strip") == LUA_OK &&
        lua_pcall(L, 0, 1, 0) == LUA_OK, "load");
  Buf bin = {0};
  lua_dump(L, writer, &bin, 1);
  CHECK(luaL_loadbufferx(L, bin.s, bin.n, "=stripped", "b") == LUA_OK, "load stripped");
  free(bin.s);
  Arena A;
  ka_init(&A);
  KtySession S;
  kty_open(&S, L, &A);
  Type buf = { .kind = T_BUF, .dtype = KJIT_F64, .ndim = 1 };
  const char *want = "?:-1: cannot pass a f64[:] to error";
  CHECK(kty_spec(&S, -1, 1, &buf) == NULL && strncmp(S.err, want, strlen(want)) == 0,
        "stripped: '%s'", S.err);
  /* a session types several functions; an error leaves it usable */
  Type f = { .kind = T_F64 };
  KtySpec *sp = kty_spec(&S, -1, 1, &f);
  CHECK(sp != NULL && sp->nret == 1 && sp->rets[0].kind == T_F64,
        "stripped, number argument: %s", S.err);
  CHECK(kty_spec(&S, -1, 1, &f) == sp, "the same signature, the same specialization");
  kty_close(&S);
  ka_free(&A);
  lua_settop(L, top);
}


/*
** {======================================================
** Functions the retired source-text pipeline (src/types.c) was checked
** against when both existed: it gave the same return types, except where
** an integer and a float meet (a float there, a number here: 6, 7, 8),
** and the same messages for the refused ones. Their results now.
** =======================================================
*/

typedef struct Cross { const char *sig, *src, *want; } Cross;

static const Cross crosses[] = {   /* from tests/lua/test_jit_diff_*.lua */
  { "i64 i64 i64", "return function(a, b, c)\n  local s, n, first, last = 0, 0, 0, 0\n"
    "  for i = a, b, c do\n    if n == 0 then first = i end\n    s = s + i\n    n = n + 1\n"
    "    last = i\n  end\n  return n, s, first, last\nend\n",
    "i64, i64, i64, i64" },
  { "f64 f64 f64", "return function(a, b, c)\n  local s, n, last = 0.0, 0, -1.0\n"
    "  for x = a, b, c do\n    s = s + x\n    n = n + 1\n    last = x\n  end\n"
    "  return n, s, last\nend\n",
    "i64, f64, f64" },
  { "f32[:]", "return function(x)\n  local s = 0.0\n  for i = 1, #x do s = s + x[i] end\n"
    "  return s\nend\n",
    "f32" },
  { "f64[:] f64[:] f64[:] i64", "return function(xs, ys, out, maxit)\n"
    "  for i = 1, #ys do\n    local ci = ys[i]\n    for j = 1, #xs do\n      local cr = xs[j]\n"
    "      local zr, zi = 0.0, 0.0\n      local k = 0\n"
    "      while k < maxit and zr * zr + zi * zi <= 4.0 do\n"
    "        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci\n        k = k + 1\n"
    "      end\n      out[(i - 1) * #xs + j] = k\n    end\n  end\nend\n",
    "" },
  { "i64 i64", "return function(a, b)\n  return a // b, a % b, a / b, a ^ b, a & b, a | b, "
    "a ~ b, a << b, a >> b, -a, ~a\nend\n",
    "i64, i64, f64, f64, i64, i64, i64, i64, i64, i64, i64" },
  { "f64 f64", "return function(a, b)\n  return a // b, a % b, a / b, a ^ b, -a\nend\n",
    "f64, f64, f64, f64, f64" },
  { "f64 i64", "return function(x, n)\n  return math.floor(x), math.ceil(x), math.abs(n), "
    "math.sqrt(x), math.max(x, n), math.fmod(n, 3), math.tointeger(x)\nend\n",
    "number, number, i64, f64, number, i64, nil|i64" },
  { "f64[:] i64", "return function(x, n)\n  local s = 0\n  for i = 1, n do s = s + x[i] end\n"
    "  return s\nend\n",
    "number" },
  { "boolean i64 f64", "return function(c, x, y)\n  return c and x or y\nend\n",
    "number" },
  { "i64", "local function fib(n)\n  if n < 2 then return n end\n"
    "  return fib(n - 1) + fib(n - 2)\nend\nreturn fib\n",
    "i64" },
  { "f64 i64", "local function sq(v) return v * v end\nreturn function(a, b)\n"
    "  return sq(a) + sq(b), sq(b)\nend\n",
    "f64, i64" },
  { "i64 i64", "local function divmod(a, b) return a // b, a % b end\n"
    "return function(a, b)\n  local q, r = divmod(a, b)\n  return q + r, divmod(b, a)\nend\n",
    "i64, i64, i64" },
  { "f64[:,:] i64 i64", "return function(a, n, m)\n  local s = 0.0\n  for i = 1, n do\n"
    "    for j = 1, m do s = s + a[i][j] end\n  end\n  return s, #a, a.shape[2]\nend\n",
    "f64, i64, i64" },
  { "f32[:] f32", "return function(x, a)\n  return x[1] * 2.5 + a, x[2] / 2, a * 0.5\nend\n",
    "f32, f32, f32" },
  { "f64[:] i64", "return function(x, n)\n  local best\n  for i = 1, n do\n"
    "    if best == nil or x[i] > best then best = x[i] end\n  end\n  return best\nend\n",
    "nil|f64" },
  { "i64", "local TPB = 16\nreturn function(n)\n  return TPB * TPB + n, TPB / 2\nend\n",
    "i64, f64" },
  /* refused, with the message */
  { "f64", "return function(v)\n  return v[1], math\nend\n",
    "error: [string \"return function(v)...\"]:2: cannot return a table from compiled code" },
  { "i64", "return function(a)\n  return a .. 'x'\nend\n", "string" },   /* a Lua value (issue 29) */
  { "boolean", "return function(c)\n  local x = 1\n  if c then x = true end\n  return x\nend\n",
    "value" },   /* a number or a boolean: a Lua value (issue 29) */
  { "f64[:]", "return function(x)\n  local s = 0\n  for _, v in pairs(x) do s = s + v end\n"
    "  return s\nend\n",
    "value" },   /* (pairs called on the array, its userdata: it raises as interpreted) */
  { "", "return function()\n  local t = {math.floor(1.5)}\n  return #t\nend\n", "value" },   /* issue 29 item 4 */
  { "f64[:]", "return function(x)\n  error(x)\nend\n",
    "error: [string \"return function(x)...\"]:2: cannot pass a f64[:] to error in compiled code (argument #1): only numbers, booleans, nil and strings" },
};

static void test_crosscheck(void) {
  for (size_t c = 0; c < sizeof crosses / sizeof crosses[0]; c++) {
    const Cross *x = &crosses[c];
    char sig[160];
    snprintf(sig, sizeof sig, "-- args: %s\n", x->sig);
    Type args[KJIT_MAXARGS];
    int nargs;
    CHECK(parse_args(sig, args, &nargs), "cross %d: signature", (int)c);
    int top = lua_gettop(L);
    /* the chunk's name is its text (the messages quote its start) */
    if (luaL_loadbuffer(L, x->src, strlen(x->src), x->src) != LUA_OK ||
        lua_pcall(L, 0, 1, 0) != LUA_OK) {
      CHECK(0, "cross %d: %s", (int)c, lua_tostring(L, -1));
      lua_settop(L, top);
      continue;
    }
    Arena A;
    ka_init(&A);
    KtySession S;
    kty_open(&S, L, &A);
    KtySpec *sp = kty_spec(&S, lua_gettop(L), nargs, args);
    char got[600] = "";
    size_t n = 0;
    if (sp == NULL) snprintf(got, sizeof got, "error: %s", S.err);
    for (int r = 0; sp && r < sp->nret && n < sizeof got; r++) {
      char b[32];
      n += (size_t)snprintf(got + n, sizeof got - n, "%s%s", r ? ", " : "",
                            kty_name(sp->rets[r], b, sizeof b));
    }
    CHECK(strcmp(got, x->want) == 0, "cross %d: %s\n  want: %s", (int)c, got, x->want);
    kty_close(&S);
    ka_free(&A);
    lua_settop(L, top);
  }
}

/* }====================================================== */

/* Every function of the IR corpus (tests/c/bytecode_cases.txt), typed for
** a few signatures: a specialization or a located message, never a crash
** (run under ASan). */
static void test_robust(void) {
  char *text = read_file("tests/c/bytecode_cases.txt", NULL);
  CHECK(text != NULL, "cannot read tests/c/bytecode_cases.txt");
  if (text == NULL) return;
  static const char *const sigs[] = { "i64", "f64", "f64[:]", "f32[:,:]", "boolean", "nil" };
  int typed = 0, refused = 0;
  for (char *p = text; (p = strstr(p, "=== ")) != NULL; ) {
    char *eol = strchr(p, '\n'), *sep = eol ? strstr(eol, "--- ir\n") : NULL;
    if (sep == NULL) break;
    char name[96];
    snprintf(name, sizeof name, "=%.*s", (int)(eol - p - 4), p + 4);
    char *src = dupn(eol + 1, (size_t)(sep - eol - 1));
    p = sep;
    int top = lua_gettop(L);
    if (luaL_loadbuffer(L, src, strlen(src), name) != LUA_OK ||
        lua_pcall(L, 0, LUA_MULTRET, 0) != LUA_OK) {
      lua_settop(L, top);
      free(src);
      continue;
    }
    for (int f = top + 1; f <= lua_gettop(L); f++) {
      if (!lua_isfunction(L, f)) continue;
      for (size_t s = 0; s < sizeof sigs / sizeof sigs[0]; s++) {
        Type args[4];
        char sig[64];
        snprintf(sig, sizeof sig, "-- args: %s %s %s %s\n", sigs[s], sigs[s], sigs[s], sigs[s]);
        int nargs;
        parse_args(sig, args, &nargs);
        Arena A;
        ka_init(&A);
        KtySession S;
        kty_open(&S, L, &A);
        int before = lua_gettop(L);
        KtySpec *sp = kty_spec(&S, f, nargs, args);
        CHECK(lua_gettop(L) == before, "%s: stack kept", name);
        if (sp) {
          typed++;
          char *out = NULL;
          size_t n = 0, cap = 0;
          kty_print(&S, &out, &n, &cap);
          CHECK(out && strstr(out, "spec 0 ("), "%s: printed", name);
          free(out);
        } else {
          refused++;
          if (getenv("KJIT_IRTYPE_VERBOSE")) printf("  %s\n", S.err);
          CHECK(strncmp(S.err, name + 1, strlen(name + 1)) == 0 &&
                S.err[strlen(name + 1)] == ':', "%s: located message: %s", name, S.err);
        }
        kty_close(&S);
        ka_free(&A);
      }
    }
    lua_settop(L, top);
    free(src);
  }
  free(text);
  printf("robustness: %d specializations typed, %d refused with a message\n", typed, refused);
  /* both outcomes reached (18 refused since ipairs of a number compiles
  ** to the library's ipairs, session 20; 20 or more before) */
  CHECK(typed > 20 && refused > 10, "robustness: %d typed, %d refused", typed, refused);
}

/* A function of 20000 ifs, each with its return: typed in time linear in
** its size (returns join as they come; the exact join runs once). */
static void test_large(void) {
  int N = 20000;
  Buf src = {0};
  bputs(&src, "return function(x)\n  local s = 0\n");
  char line[128];
  for (int i = 0; i < N; i++) {
    snprintf(line, sizeof line, "  if x == %d then return s + %d end\n  s = s + x * 0.5\n", i, i);
    bputs(&src, line);
  }
  bputs(&src, "  return s\nend\n");
  int top = lua_gettop(L);
  CHECK(luaL_loadbuffer(L, src.s, src.n, "=large") == LUA_OK && lua_pcall(L, 0, 1, 0) == LUA_OK,
        "large: load");
  free(src.s);
  Arena A;
  ka_init(&A);
  KtySession S;
  kty_open(&S, L, &A);
  Type i64 = { .kind = T_INT };
  KtySpec *sp = kty_spec(&S, -1, 1, &i64);
  CHECK(sp && sp->nret == 1 && sp->rets[0].kind == T_NUMBER, "large: %s", sp ? "wrong type" : S.err);
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
  test_stripped();
  test_crosscheck();
  test_robust();
  test_large();
  lua_close(L);
  free_cases(cases, ncases);
  return test_results("test_irtype", argc, argv);
}
