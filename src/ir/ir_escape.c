/*
** ir_escape.c: which function literals escape the compiled code that
** makes them (issue 29 item 2, escaping closures; the rest of the closure
** design is in ir_closure.c).
**
** A literal that only compiled code calls stays a compile-time value
** (T_CLOSURE: no run-time object, its calls compiled). One that escapes
** must be a real Lua closure, made where the literal is made (the typer
** types it T_LUA; runtime/luaclosure.c makes it from its own prototype),
** so that its identity, its upvalues and everything the interpreter can do
** with it are Lua's. "Escapes" is decided on the IR alone, the same for
** every specialization, where the value (through phis) is:
**   - stored into a table (t.f = fn, {f = fn}, {fn}) or a global,
**   - returned, or assigned to an upvalue or to a local kept in a cell
**     (ir_closure.c: a captured local assigned afterwards),
**   - captured by another literal that escapes, or whose code (or a
**     literal nested in it) lets that upvalue escape in these same ways
**     (`local function set() end; local function new() return {set = set} end`).
** Passing a literal to a call does not make it escape here: a compiled
** callee takes it as a compile-time value, and a callee that is a Lua
** value is refused by the typer with a message, as before. A literal left
** to the interpreter (kcl_left_to_interpreter, below) is a real Lua closure
** too, by the typer's choice rather than by where its value goes.
*/
#include "ir/ir.h"
#include "ir/ir_closure.h"

#define MAXDEPTH 8

static int value_escapes(Arena *A, const KirInsn *v, int depth, int steps);

/* Does literal w (a KIR_CLOSURE) let its upvalue u escape? */
static int upvalue_escapes(Arena *A, const KbcProto *p, int u, int depth) {
  if (depth > MAXDEPTH) return 1;   /* (deep nesting: say it escapes) */
  char err[200];
  KirFunc *f = kir_build(A, p, err, sizeof err);
  if (f == NULL) return 1;
  for (int b = 0; b < f->nblocks; b++) {
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns; i++) {
      KirInsn *x = blk->insns[i];
      if (x->op == KIR_GETUPVAL && x->aux == u && value_escapes(A, x, depth + 1, 0)) return 1;
      if (x->op == KIR_CLOSURE) {   /* a nested literal capturing upvalue u */
        const KbcProto *c = p->p[x->aux];
        for (int j = 0; j < c->nup; j++)
          if (!c->up[j].instack && c->up[j].idx == u &&
              (value_escapes(A, x, depth + 1, 0) || upvalue_escapes(A, c, j, depth + 1)))
            return 1;
      }
    }
  }
  return 0;
}

static int value_escapes(Arena *A, const KirInsn *v, int depth, int steps) {
  if (steps > 64) return 1;
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *u = v->users[i];
    switch (u->op) {
    case KIR_SETFIELD: if (u->args[1] == v) return 1; break;
    case KIR_SETINDEX: if (u->args[2] == v) return 1; break;
    case KIR_SETLIST:
      for (int k = 1; k < u->nargs; k++) if (u->args[k] == v) return 1;
      break;
    case KIR_RET: case KIR_SETUPVAL: case KIR_NEWCELL: return 1;
    case KIR_SETCELL: if (u->args[1] == v) return 1; break;   /* a Lua value from then on */
    case KIR_PHI:
      if (u != v && value_escapes(A, u, depth, steps + 1)) return 1;
      break;
    default: break;
    }
  }
  return 0;
}

/* The upvalue indices of literal site w (in maker p) that capture operand
** v: w's instack upvalues take w's operands in order. */
static int captures_escape(Arena *A, const KbcProto *p, const KirInsn *v, int depth) {
  for (int i = 0; i < v->nusers; i++) {
    const KirInsn *w = v->users[i];
    if (w->op == KIR_PHI && w != v) {
      if (captures_escape(A, p, w, depth)) return 1;
      continue;
    }
    if (w->op != KIR_CLOSURE) continue;
    const KbcProto *c = p->p[w->aux];
    for (int u = 0, k = 0; u < c->nup; u++) {
      if (!c->up[u].instack) continue;
      if (w->args[k++] != v) continue;
      if (kcl_literal_escapes(A, p, w) || upvalue_escapes(A, c, u, depth + 1)) return 1;
    }
  }
  return 0;
}

/* Literals left to the interpreter. A literal that calls a method
** (`o:m()`) and has no loop without a method call spends its time in the
** methods it calls, which run as function values either way
** (host/callval.c's policy), and compiled it runs slower than the
** interpreter runs it: each method call from compiled code goes through
** the Lua API, and its compile costs more than a run saves.
** bench/tables/vectors.lua 200 1000, whose step and centre loop over
** method calls, took 0.49 s compiled against 0.19 s interpreted, 0.125 s
** of it LLVM's code generation of those two; bench/programs/ray.lua's
** ray_trace (no loop, two method calls, 147,000 calls) cost 35 ms of
** compile and ran slower compiled. Even a loop-free helper over a method
** that compiles as a small leaf (`local function n2(v) return v:dot(v)
** end`, called 2,000,000 times by a compiled loop of the function that
** made it once) ran in 0.38 s compiled, 0.21 s interpreted through its
** value, 0.10 s wholly interpreted (but see kcl_left_to_interpreter: only
** a main chunk's literals). The typer makes such a literal a real Lua
** closure when it can (ir_type.c left_to_interpreter: every value it
** captures has a Lua form), and its calls go through its value
** (kcl_direct_call says no), so the callee policy runs it: interpreted, as
** has_arith_loop says there of a loop that calls a method. */
int kcl_runs_interpreted(const KbcProto *c) {
  int methods = 0;
  for (int pc = 0; pc < c->ncode; pc++) {
    int op = KBC_OP(c->code[pc]), to = kbc_jumpdest(c, pc);
    methods += op == KBC_SELF;
    if (!(op == KBC_FORLOOP || op == KBC_TFORLOOP || op == KBC_JMP) || to < 0 || to > pc) continue;
    int method = 0;
    for (int i = to; i < pc && !method; i++) method = KBC_OP(c->code[i]) == KBC_SELF;
    if (!method) return 0;   /* a loop of its own work */
  }
  return methods > 0;
}

/* Only a literal that a main chunk of a file makes outside its loops:
** made once a run. A function called again and again would make a closure
** at each call (a maker called 1,000,000 times from Lua making a one-line
** helper over a method: 0.22 s with the helper compiled, 1.9 s with a
** closure made and called through its value each time). A file's main
** chunk (source "@...": the lua command's script, loadfile, dofile,
** require) runs once; a chunk load() made from a string (source "=name" or
** the text itself) is a function like any other, which a program may
** call many times (a template, a generated kernel), so its literals
** compile with it. */
int kcl_file_main_chunk(const KbcProto *p) {
  return p->linedefined == 0 && p->source != NULL && p->source[0] == '@';
}

int kcl_left_to_interpreter(const KbcProto *p, const KirInsn *site) {
  return site->op == KIR_CLOSURE && kcl_file_main_chunk(p) && site->block != NULL &&
         site->block->loop == NULL && site->aux >= 0 && site->aux < p->np &&
         kcl_runs_interpreted(p->p[site->aux]);
}

int kcl_literal_escapes(Arena *A, const KbcProto *p, const KirInsn *site) {
  static int depth;
  if (depth > MAXDEPTH) return 1;
  depth++;
  int r = value_escapes(A, site, 0, 0) || captures_escape(A, p, site, 0);
  depth--;
  return r;
}
