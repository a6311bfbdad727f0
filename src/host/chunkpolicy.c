/*
** host/chunkpolicy.c: main chunks left to the interpreter (issue 29: kjit
** is never slower than the interpreter on a program it runs).
**
** kjit.jit(loadfile(p)) compiles a whole program: its main chunk and the
** local functions compiled with it. Where the main chunk's hot loops spend
** their time in functions that run interpreted either way (the callee
** policy of host/callval.c, and ir_escape.c's literals left to the
** interpreter), compiling the chunk buys nothing: each call from its
** compiled loop into an interpreted function costs more than the
** interpreter's own call (a trampoline and lua_call: about 1,450
** instructions a turn of such a loop against 770 interpreted), and the
** compile costs LLVM's load and code generation (bench/programs/ray.lua's
** main chunk: 373M instructions, 40 to 60 ms; bench/tables/vectors.lua's:
** 31 ms). Such a chunk runs interpreted: its jit object calls the Lua
** function itself, and nothing is compiled.
**
** The rule (kcp_runs_interpreted), on the chunk's bytecode alone, before
** anything is compiled. A file's main chunk (ir_escape.c
** kcl_file_main_chunk: linedefined 0, source "@...": the script,
** loadfile, dofile, require; a chunk load() made from a string may be
** called many times, and its literals compile with it) runs interpreted
** when
**   1. it has loops, and each of its innermost loops of the greatest
**      nesting depth (the hot ones: ray's four nested pixel loops,
**      vectors' two top-level loops) calls a function that runs
**      interpreted anyway:
**        - a local function of the chunk made outside its loops that calls
**          a method and has no loop without one (ir_escape.c
**          kcl_runs_interpreted: such a literal is left to the interpreter
**          when the chunk compiles; ray's ray_trace, vectors' step),
**          called through its local;
**        - a method (`o:m(...)`) whose name the chunk's own code defines
**          only as functions the callee policy leaves interpreted
**          (`function C:m() ... end`, `C.m = f`, `{m = f}` with f a
**          function literal of the chunk: callval.c kcv_policy_compiles;
**          vectors' `vel:length()`). A name defined elsewhere (another
**          module) or by anything else is not known, and keeps the chunk
**          compiled;
**   2. no function of the chunk, at any depth, has a loop that the
**      callee policy compiles (kcv_arith_loop: nbody's advance, SciMark's
**      kernels): such a function runs compiled only when compiled code
**      calls it;
**   3. the callee mode is not "all" (KJIT_CALLEES=all,
**      kjit.testing.callees("all"): everything compiles, for measuring),
**      the rule is on (KJIT_INTERP_CHUNKS=0 in the environment, or
**      kjit.testing.interp_chunks(false), turns it off: measuring, and
**      tests of compiled chunks), and the jit object has no {cache = true}
**      or {parallel = true} (host/jit.c: code asked for).
** Not caught, on purpose: nbody, spectral-norm, fannkuch, mandelbrot,
** nsieve, partialsums, binary-trees, the recursive ones and SciMark (no
** such call in their loops, or no loop in their chunk); perlin (its
** `n:fbm` compiles as a small caller) and array3d (`arr:set`, a small
** leaf). What a chunk so caught gives up: a loop of its own at a smaller
** depth that would compile well (an arithmetic `for` beside the deep
** loops that call methods); kjit.jit a local function holding that loop.
**
** Semantics: the interpreter runs the chunk, so it computes what the
** interpreter computes by definition; the jit object only stands in the
** call (host/jit.c run_interpreted).
*/
#include "host/chunkpolicy.h"
#include <stdlib.h>
#include <string.h>
#include "common/arena.h"
#include "frontend/bytecode.h"
#include "host/callval.h"
#include "ir/ir_closure.h"

/* (atomics: any thread's lua_State may call a jit object; the counter
** and the switch are process-wide, as callval.c's counters are) */
long kcp_chunks_interpreted;
static int rule_on = -1;   /* -1: KJIT_INTERP_CHUNKS not read yet */

static int rule_is_on(void) {
  int on = __atomic_load_n(&rule_on, __ATOMIC_RELAXED);
  if (on < 0) {
    const char *e = getenv("KJIT_INTERP_CHUNKS");
    on = !(e != NULL && strcmp(e, "0") == 0);
    __atomic_store_n(&rule_on, on, __ATOMIC_RELAXED);
  }
  return on;
}

int kcp_l_interp_chunks(lua_State *L) {
  int old = rule_is_on();
  if (!lua_isnoneornil(L, 1)) __atomic_store_n(&rule_on, lua_toboolean(L, 1), __ATOMIC_RELAXED);
  lua_pushboolean(L, old);
  return 1;
}

enum { MAXLOOPS = 256 };   /* loops looked at; a chunk with more compiles */

typedef struct Loop {
  int from, to;   /* the body: instructions [from, to), to the backward jump */
} Loop;

/* The loops of p (a for, or a backward jump: while, repeat), at most max;
** -1 when there are more. */
static int loops_of(const KbcProto *p, Loop *out, int max) {
  int n = 0;
  for (int pc = 0; pc < p->ncode; pc++) {
    int op = KBC_OP(p->code[pc]), to = kbc_jumpdest(p, pc);
    if (!(op == KBC_FORLOOP || op == KBC_TFORLOOP || op == KBC_JMP) || to < 0 || to > pc) continue;
    if (n == max) return -1;
    out[n].from = to;
    out[n].to = pc;
    n++;
  }
  return n;
}

static int inside(const Loop *in, const Loop *out) {
  return out->from <= in->from && in->to <= out->to;
}

/* Is instruction pc inside one of the n loops? */
static int in_a_loop(const Loop *l, int n, int pc) {
  for (int i = 0; i < n; i++) if (l[i].from <= pc && pc <= l[i].to) return 1;
  return 0;
}

/* Does the chunk p define a method called name only as functions the
** callee policy leaves interpreted: each field store of that constant name
** (SETFIELD, also a constructor's) storing a function literal of p, made
** by a CLOSURE (directly, or through the local that holds it)? */
static int method_runs_interpreted(const KbcProto *p, const char *name) {
  int found = 0;
  for (int pc = 0; pc < p->ncode; pc++) {
    uint32_t ins = p->code[pc];
    if (KBC_OP(ins) != KBC_SETFIELD) continue;
    const KbcConst *k = &p->k[KBC_B(ins)];
    if (k->kind != KBC_KSTR || strcmp(k->u.str.s, name) != 0) continue;
    if (KBC_K(ins)) return 0;   /* a constant: not a function */
    int s = kbc_setter_of(p, pc, KBC_C(ins));
    if (s >= 0 && KBC_OP(p->code[s]) == KBC_MOVE) s = kbc_setter_of(p, s, KBC_B(p->code[s]));
    if (s < 0 || KBC_OP(p->code[s]) != KBC_CLOSURE) return 0;   /* not known */
    if (kcv_policy_compiles(p->p[KBC_BX(p->code[s])])) return 0;
    found = 1;
  }
  return found;
}

/* Does the CALL or TAILCALL at pc of the chunk p call a function that runs
** interpreted anyway (rule 1)? loops: p's n loops. */
static int calls_interpreted(const KbcProto *p, int pc, const Loop *loops, int n) {
  int s = kbc_setter_of(p, pc, KBC_A(p->code[pc]));
  if (s < 0) return 0;
  uint32_t ins = p->code[s];
  if (KBC_OP(ins) == KBC_SELF) {   /* o:m(...), m a constant name */
    if (!KBC_K(ins)) return 0;
    const KbcConst *k = &p->k[KBC_C(ins)];
    return k->kind == KBC_KSTR && method_runs_interpreted(p, k->u.str.s);
  }
  if (KBC_OP(ins) != KBC_MOVE) return 0;   /* f(...), f a local */
  s = kbc_setter_of(p, s, KBC_B(ins));
  if (s < 0 || KBC_OP(p->code[s]) != KBC_CLOSURE || in_a_loop(loops, n, s)) return 0;
  return kcl_runs_interpreted(p->p[KBC_BX(p->code[s])]);
}

/* Has a function nested in p, at any depth, a loop the callee policy
** compiles (rule 2)? */
static int nested_arith_loop(const KbcProto *p) {
  for (int i = 0; i < p->np; i++)
    if (kcv_arith_loop(p->p[i]) || nested_arith_loop(p->p[i])) return 1;
  return 0;
}

static int chunk_runs_interpreted(const KbcProto *p) {
  Loop loops[MAXLOOPS];
  int n = loops_of(p, loops, MAXLOOPS);
  if (n <= 0 || nested_arith_loop(p)) return 0;
  /* the innermost loops (no loop inside) and their depths */
  int depth[MAXLOOPS], inner[MAXLOOPS], deepest = -1;
  for (int i = 0; i < n; i++) {
    depth[i] = 0;
    inner[i] = 1;
    for (int j = 0; j < n; j++) {
      if (j == i) continue;
      if (inside(&loops[i], &loops[j])) depth[i]++;
      else if (inside(&loops[j], &loops[i])) inner[i] = 0;
    }
    if (inner[i] && depth[i] > deepest) deepest = depth[i];
  }
  for (int i = 0; i < n; i++) {
    if (!inner[i] || depth[i] != deepest) continue;
    int yes = 0;
    for (int pc = loops[i].from; pc < loops[i].to && !yes; pc++) {
      int op = KBC_OP(p->code[pc]);
      if (op == KBC_CALL || op == KBC_TAILCALL) yes = calls_interpreted(p, pc, loops, n);
    }
    if (!yes) return 0;
  }
  return 1;
}

int kcp_runs_interpreted(lua_State *L, int idx) {
  if (kcv_compiles_all() || !rule_is_on()) return 0;
  /* only a file's main chunk: asked of lua_getinfo first, so that other
  ** functions are not dumped and parsed at their first call */
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">S", &ar);
  if (ar.linedefined != 0 || ar.source == NULL || ar.source[0] != '@') return 0;
  Arena A;
  ka_init(&A);
  char err[128];
  KbcChunk *c = kbc_load(L, idx, &A, err, sizeof err);
  int yes = c != NULL && kcl_file_main_chunk(c->main) && chunk_runs_interpreted(c->main);
  ka_free(&A);
  if (yes) __atomic_fetch_add(&kcp_chunks_interpreted, 1, __ATOMIC_RELAXED);
  return yes;
}
