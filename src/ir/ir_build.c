/*
** ir_build.c: bytecode to SSA IR.
**
**   1. leaders: pc 0, every jump target, every instruction after a
**      terminator; a comparison or test and the OP_JMP after it end a
**      block together (one conditional branch);
**   2. blocks and their successors; a TESTSET's jump edge gets a block of
**      its own, where its copy happens;
**   3. reverse postorder from the entry (unreachable blocks are dropped),
**      then the predecessors, in that order;
**   4. each block filled in that order, registers renamed on the fly
**      (Braun et al. 2013: readvar/writevar per block, incomplete phis in
**      blocks not sealed yet, a block sealed once all its predecessors are
**      filled);
**   5. trivial and duplicate phis removed to a fixpoint, operands
**      rewritten, ids renumbered; then loops (ir_loop.c).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ir/ir.h"
#include "ir/ir_closure.h"

int kir_loops(Arena *A, KirFunc *f);   /* ir_loop.c: 0 when out of memory */

/* Per block, while building. */
typedef struct BState {
  KirInsn **defs;         /* current value of each register in the block */
  KirInsn **incomplete;   /* per register: phi waiting for the seal */
  int sealed, nfilled;    /* nfilled: predecessors filled so far */
  int copy_a, copy_b;     /* edge block of TESTSET: R[a] := R[b]; else -1 */
  int entry;              /* the synthetic entry (params only) */
  int scopeentry;         /* makes the cells of a scope for the block it
                             enters (scope_entries) */
  int reached;
  int done;               /* filled */
} BState;

typedef struct Builder {
  Arena *A;
  const KbcProto *p;
  KirFunc *f;
  jmp_buf jb;
  char *err; size_t errsz;
  int nreg;
  KirBlock **all; int nall, capall;   /* every block created */
  BState *bs;                          /* by block id while building */
  KirBlock **at;                       /* by pc: the block starting there */
  KirBlock *cur;
  int pc;
  KirInsn *open; int openbase;         /* last call/vararg giving all results */
  KirInsn **undef;                     /* by register */
  KirInsn **phis; int nphis, capphis;  /* every phi made */
  KirBlock *entry;
  int depth;                           /* of readvar_join's recursion */
  /* cells (ir_closure.c): nbreg bytecode registers; the cell of local
  ** variable i is register nbreg + i; boxed[i]: is local i in a cell
  ** (NULL when none is) */
  int nbreg;
  uint8_t *boxed;
  KirBlock **scopeent; int nscopeent, capscopeent;   /* scope_entries' blocks */
} Builder;

/* Each level takes three small C frames (readvar, readvar_join,
** addphiops), 150 to 250 bytes in all: under 0.5 MB of stack at the
** limit (a host may run Lua on a thread with a small stack). */
#define KIR_MAXJOINS 2000

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3), noreturn))
#endif
static void fail(Builder *B, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(B->err, B->errsz, fmt, ap);
  va_end(ap);
  longjmp(B->jb, 1);
}

static void *alloc(Builder *B, size_t n) {
  void *p = ka_alloc(B->A, n ? n : 1);
  if (p == NULL) fail(B, "not enough memory");
  return p;
}

/* Room for one more element in arr (n used, *cap allocated). */
static void *grow(Builder *B, void *arr, int n, int *cap, size_t el) {
  if (n < *cap) return arr;
  int nc = *cap ? *cap * 2 : 8;
  void *na = alloc(B, (size_t)nc * el);
  if (n) memcpy(na, arr, (size_t)n * el);
  *cap = nc;
  return na;
}

#define BS(b) (&B->bs[(b)->id])
#define CODE(pc) (B->p->code[pc])
#define OPAT(pc) KBC_OP(CODE(pc))

static int is_test(int op) { return op >= KBC_EQ && op <= KBC_TESTSET; }


/*
** {======================================================
** Instructions
** =======================================================
*/

static KirInsn *newinsn(Builder *B, int op, int nargs) {
  KirInsn *v = alloc(B, sizeof *v);
  v->op = (uint8_t)op;
  v->pc = B->pc;
  v->line = kbc_line(B->p, B->pc);
  v->block = B->cur;
  v->nargs = nargs;
  v->args = nargs ? alloc(B, (size_t)nargs * sizeof *v->args) : NULL;
  return v;
}

static KirInsn *append(Builder *B, KirInsn *v) {
  KirBlock *b = v->block;
  b->insns = grow(B, b->insns, b->ninsns, &b->capinsns, sizeof *b->insns);
  b->insns[b->ninsns++] = v;
  return v;
}

static KirInsn *emit(Builder *B, int op, int nargs, ...) {
  KirInsn *v = newinsn(B, op, nargs);
  va_list ap;
  va_start(ap, nargs);
  for (int i = 0; i < nargs; i++) v->args[i] = va_arg(ap, KirInsn *);
  va_end(ap);
  return append(B, v);
}

static KirInsn *kint(Builder *B, lua_Integer i) {
  KirInsn *v = emit(B, KIR_INT, 0);
  v->k.i = i;
  return v;
}

static KirInsn *kflt(Builder *B, lua_Number f) {
  KirInsn *v = emit(B, KIR_FLT, 0);
  v->k.f = f;
  return v;
}

static KirInsn *kconst(Builder *B, int idx) {
  const KbcConst *k = &B->p->k[idx];
  switch (k->kind) {
  case KBC_KNIL: return emit(B, KIR_NIL, 0);
  case KBC_KFALSE: return emit(B, KIR_FALSE, 0);
  case KBC_KTRUE: return emit(B, KIR_TRUE, 0);
  case KBC_KINT: return kint(B, k->u.i);
  case KBC_KFLT: return kflt(B, k->u.f);
  default: {
    KirInsn *v = emit(B, KIR_STR, 0);
    v->k.str.s = k->u.str.s;
    v->k.str.len = k->u.str.len;
    return v;
  }
  }
}

static void setterm(Builder *B, KirInsn *t) {
  B->cur->term = t;
}

/* }====================================================== */


/*
** {======================================================
** SSA construction (Braun et al.)
** =======================================================
*/

static KirInsn *readvar(Builder *B, int reg, KirBlock *b);

static KirInsn *newphi(Builder *B, KirBlock *b, int reg) {
  KirInsn *v = alloc(B, sizeof *v);
  v->op = KIR_PHI;
  v->pc = -1;
  v->line = kbc_line(B->p, b->pc);
  v->block = b;
  v->aux = reg;
  v->name = kbc_localname(B->p, reg, b->pc);
  b->phis = grow(B, b->phis, b->nphis, &b->capphis, sizeof *b->phis);
  b->phis[b->nphis++] = v;
  B->phis = grow(B, B->phis, B->nphis, &B->capphis, sizeof *B->phis);
  B->phis[B->nphis++] = v;
  return v;
}

static KirInsn *undef(Builder *B, int reg) {
  if (B->undef[reg] == NULL) {
    KirBlock *save = B->cur;
    int savepc = B->pc;
    B->cur = B->entry;
    B->pc = -1;
    B->undef[reg] = emit(B, KIR_UNDEF, 0);
    B->undef[reg]->aux = reg;
    B->cur = save;
    B->pc = savepc;
  }
  return B->undef[reg];
}

static void addphiops(Builder *B, int reg, KirInsn *phi) {
  KirBlock *b = phi->block;
  phi->nargs = b->npreds;
  phi->args = alloc(B, (size_t)b->npreds * sizeof *phi->args);
  for (int i = 0; i < b->npreds; i++) phi->args[i] = readvar(B, reg, b->preds[i]);
}

/* b has no value for reg and is not sealed, or has no single predecessor. */
static KirInsn *readvar_join(Builder *B, int reg, KirBlock *b) {
  KirInsn *v;
  if (!BS(b)->sealed) {
    v = newphi(B, b, reg);
    BS(b)->incomplete[reg] = v;
  }
  else if (b->npreds == 0)
    v = undef(B, reg);
  else {
    v = newphi(B, b, reg);
    BS(b)->defs[reg] = v;   /* breaks cycles through loops */
    /* the recursion goes through joins the register crosses untouched:
    ** bounded, so that a huge function fails instead of the C stack */
    if (++B->depth > KIR_MAXJOINS)
      fail(B, "function too large (a value crosses more than %d joins)", KIR_MAXJOINS);
    addphiops(B, reg, v);
    B->depth--;
  }
  BS(b)->defs[reg] = v;
  return v;
}

static KirInsn *readvar(Builder *B, int reg, KirBlock *b) {
  KirInsn *v = BS(b)->defs[reg];
  if (v) return v;
  /* up a chain of single predecessors without recursion (a long function
  ** is a long chain) */
  KirBlock *c = b;
  int steps = 0;
  while (BS(c)->defs[reg] == NULL && BS(c)->sealed && c->npreds == 1) {
    c = c->preds[0];
    if (++steps > B->nall) fail(B, "bad bytecode (a cycle without entry)");
  }
  v = BS(c)->defs[reg] ? BS(c)->defs[reg] : readvar_join(B, reg, c);
  for (KirBlock *d = b; d != c; d = d->preds[0]) BS(d)->defs[reg] = v;
  return v;
}

static void seal(Builder *B, KirBlock *b) {
  BState *s = BS(b);
  for (int r = 0; r < B->nreg; r++)
    if (s->incomplete[r]) addphiops(B, r, s->incomplete[r]);
  s->sealed = 1;
}

/* The local variable in a cell that reg holds at the current pc, or -1. */
static int cellvar(Builder *B, int reg) {
  if (B->boxed == NULL || B->pc < 0) return -1;
  int n = 0;
  for (int i = 0; i < B->p->nlocvars; i++) {
    const KbcLocVar *lv = &B->p->locvars[i];
    if (lv->startpc <= B->pc && B->pc < lv->endpc) {
      if (n == reg) return B->boxed[i] ? i : -1;
      n++;
    }
  }
  return -1;
}

static KirInsn *getcell(Builder *B, KirInsn *cell, const char *name);

static KirInsn *R(Builder *B, int reg) {
  if (reg < 0 || reg >= B->nbreg) fail(B, "bad bytecode (register %d)", reg);
  int lv = cellvar(B, reg);
  if (lv >= 0) return getcell(B, readvar(B, B->nbreg + lv, B->cur), B->p->locvars[lv].name);
  return readvar(B, reg, B->cur);
}

/* The local variable that register reg holds once instruction pc is done
** (and the MMBIN after an arithmetic one: locals start after it). */
static const char *regname(Builder *B, int reg, int pc) {
  int at = pc + 1;
  while (at < B->p->ncode && OPAT(at) >= KBC_MMBIN && OPAT(at) <= KBC_MMBINK) at++;
  return kbc_localname(B->p, reg, at);
}

/* Might instruction pc write register reg? (Conservative: range writers
** count from their A on.) */
static int writes(Builder *B, int pc, int reg) {
  uint32_t i = CODE(pc);
  int a = KBC_A(i);
  switch (KBC_OP(i)) {
  case KBC_CALL: case KBC_TAILCALL: case KBC_LOADNIL: case KBC_VARARG:
  case KBC_TFORCALL: case KBC_FORPREP: case KBC_FORLOOP: case KBC_TFORLOOP:
  case KBC_SELF:
    return a <= reg;
  case KBC_SETTABUP: case KBC_SETTABLE: case KBC_SETI: case KBC_SETFIELD:
  case KBC_SETUPVAL: case KBC_EQ: case KBC_LT: case KBC_LE: case KBC_EQK:
  case KBC_EQI: case KBC_LTI: case KBC_LEI: case KBC_GTI: case KBC_GEI:
  case KBC_TEST: case KBC_RETURN: case KBC_RETURN0: case KBC_RETURN1:
  case KBC_SETLIST: case KBC_TBC: case KBC_CLOSE: case KBC_MMBIN:
  case KBC_MMBINI: case KBC_MMBINK: case KBC_JMP: case KBC_EXTRAARG:
  case KBC_VARARGPREP:
    return 0;
  default:
    return a == reg;
  }
}

/* The local a value stored in reg at pc becomes: the one that holds reg
** right after, or else (`local a, b = 1, 2` starts both locals after
** both stores) the first one to hold it later in the block, unless
** something else is stored there first. */
static const char *localof(Builder *B, int reg, int pc) {
  const char *name = regname(B, reg, pc);
  for (int at = pc + 1; name == NULL && at <= B->cur->lastpc; at++) {
    int op = OPAT(at);
    if (writes(B, at, reg)) break;
    if (kbc_jumpdest(B->p, at) >= 0 || is_test(op) || op == KBC_LFALSESKIP ||
        (op >= KBC_RETURN && op <= KBC_RETURN1) || op == KBC_TAILCALL)
      break;   /* what follows in the code is not what runs next */
    name = kbc_localname(B->p, reg, at + 1);
  }
  return name;
}

static void W(Builder *B, int reg, KirInsn *v) {
  if (reg < 0 || reg >= B->nbreg) fail(B, "bad bytecode (register %d)", reg);
  int lv = cellvar(B, reg);
  if (lv >= 0) {   /* a local in a cell: written through */
    /* FORPREP and FORLOOP write their registers with the terminator
    ** itself, a value that exists only on the block's out-edges: a store
    ** into a cell would come before it. Lua's own chunks never do this
    ** (the loop's state is hidden, its variable's scope starts past
    ** FORPREP and ends before FORLOOP); a damaged chunk that does is
    ** refused. */
    if (KIR_ISTERM(v->op))
      fail(B, "bad bytecode (instruction %d: a loop writes the captured local '%s')",
           B->pc + 1, B->p->locvars[lv].name ? B->p->locvars[lv].name : "?");
    emit(B, KIR_SETCELL, 2, readvar(B, B->nbreg + lv, B->cur), v);
    return;
  }
  BS(B->cur)->defs[reg] = v;
  if (v->name == NULL && B->pc >= 0) v->name = localof(B, reg, B->pc);
}

/* }====================================================== */


/*
** {======================================================
** One instruction
** =======================================================
*/

/* RK(C): a register, or a constant when k is set. */
static KirInsn *RK(Builder *B, uint32_t i) {
  return KBC_K(i) ? kconst(B, KBC_C(i)) : R(B, KBC_C(i));
}

static KirInsn *field(Builder *B, int op, KirInsn *obj, int kidx, int nargs) {
  KirInsn *v = newinsn(B, op, nargs);
  v->args[0] = obj;
  v->k.str.s = B->p->k[kidx].u.str.s;
  v->k.str.len = B->p->k[kidx].u.str.len;
  return v;
}

static KirInsn *getcell(Builder *B, KirInsn *cell, const char *name) {
  KirInsn *v = emit(B, KIR_GETCELL, 1, cell);
  v->name = name;
  return v;
}

/* An upvalue's value; a cell upvalue's (ir_closure.c) is read through. */
static KirInsn *getupval(Builder *B, int idx) {
  KirInsn *v = emit(B, KIR_GETUPVAL, 0);
  v->aux = idx;
  if (kcl_cell_upvalue(B->p, idx)) return getcell(B, v, NULL);
  return v;
}

/* Operands first..first+n-1, n < 0 meaning "up to the open call": then
** the open call is the last operand (KIR_F_OPEN). */
static KirInsn *withargs(Builder *B, int op, int nlead, KirInsn **lead,
                         int first, int n) {
  int open = 0;
  if (n < 0) {
    if (B->open == NULL || B->openbase < first)
      fail(B, "bad bytecode (instruction %d: no multiple results to take)", B->pc + 1);
    n = B->openbase - first;
    open = 1;
  }
  KirInsn *v = newinsn(B, op, nlead + n + open);
  for (int i = 0; i < nlead; i++) v->args[i] = lead[i];
  for (int i = 0; i < n; i++) v->args[nlead + i] = R(B, first + i);
  if (open) {
    v->args[nlead + n] = B->open;
    v->flags |= KIR_F_OPEN;
    B->open = NULL;
  }
  return v;
}

/* Results of a call or vararg v into base.., nres of them (-1: open). */
static void results(Builder *B, KirInsn *v, int base, int nres) {
  v->aux = nres;
  if (nres < 0) { B->open = v; B->openbase = base; return; }
  if (nres >= 1) W(B, base, v);
  for (int k = 1; k < nres; k++) {
    KirInsn *r = emit(B, KIR_RESULT, 1, v);
    r->aux = k;
    W(B, base + k, r);
  }
}

static KirInsn *call(Builder *B, int a, int b, int nres, int flags) {
  KirInsn *fn = R(B, a);
  KirInsn *v = withargs(B, KIR_CALL, 1, &fn, a + 1, b ? b - 1 : -1);
  v->flags |= (uint8_t)flags;
  append(B, v);
  results(B, v, a, nres);
  return v;
}

static const uint8_t arith_op[] = {   /* ORDER OP: ADD..SHR */
  KIR_ADD, KIR_SUB, KIR_MUL, KIR_MOD, KIR_POW, KIR_DIV, KIR_IDIV,
  KIR_BAND, KIR_BOR, KIR_BXOR, KIR_SHL, KIR_SHR
};
static const uint8_t arithk_op[] = {  /* ORDER OP: ADDK..BXORK */
  KIR_ADD, KIR_SUB, KIR_MUL, KIR_MOD, KIR_POW, KIR_DIV, KIR_IDIV,
  KIR_BAND, KIR_BOR, KIR_BXOR
};
static const uint8_t unary_op[] = { KIR_UNM, KIR_BNOT, KIR_NOT, KIR_LEN };

/* An instruction that does not end its block. */
static void step(Builder *B, int pc) {
  uint32_t i = CODE(pc);
  int op = KBC_OP(i), a = KBC_A(i), b = KBC_B(i), c = KBC_C(i);
  B->pc = pc;
  switch (op) {
  case KBC_MOVE: W(B, a, R(B, b)); break;
  case KBC_LOADI: W(B, a, kint(B, KBC_SBX(i))); break;
  case KBC_LOADF: W(B, a, kflt(B, (lua_Number)KBC_SBX(i))); break;
  case KBC_LOADK: W(B, a, kconst(B, KBC_BX(i))); break;
  case KBC_LOADKX: W(B, a, kconst(B, KBC_AX(CODE(pc + 1)))); break;
  case KBC_LOADFALSE: case KBC_LFALSESKIP: W(B, a, emit(B, KIR_FALSE, 0)); break;
  case KBC_LOADTRUE: W(B, a, emit(B, KIR_TRUE, 0)); break;
  case KBC_LOADNIL: {
    KirInsn *nil = emit(B, KIR_NIL, 0);
    for (int r = a; r <= a + b; r++) W(B, r, nil);
    break;
  }
  case KBC_GETUPVAL: W(B, a, getupval(B, b)); break;
  case KBC_SETUPVAL:
    if (kcl_cell_upvalue(B->p, b)) {   /* written through its cell */
      KirInsn *u = emit(B, KIR_GETUPVAL, 0);
      u->aux = b;
      emit(B, KIR_SETCELL, 2, u, R(B, a));
    } else emit(B, KIR_SETUPVAL, 1, R(B, a))->aux = b;
    break;
  case KBC_GETTABUP: W(B, a, append(B, field(B, KIR_GETFIELD, getupval(B, b), c, 1))); break;
  case KBC_GETTABLE: {
    KirInsn *o = R(B, b), *k = R(B, c);
    if (k->op == KIR_STR) {   /* `local k = "x"; r[k]` is r.x (a record's field too) */
      KirInsn *f = newinsn(B, KIR_GETFIELD, 1);
      f->args[0] = o;
      f->k.str = k->k.str;
      W(B, a, append(B, f));
      break;
    }
    W(B, a, emit(B, KIR_INDEX, 2, o, k));
    break;
  }
  case KBC_GETI: {
    KirInsn *o = R(B, b);
    W(B, a, emit(B, KIR_INDEX, 2, o, kint(B, c)));
    break;
  }
  case KBC_GETFIELD: W(B, a, append(B, field(B, KIR_GETFIELD, R(B, b), c, 1))); break;
  case KBC_SETTABUP: {
    KirInsn *t = getupval(B, a), *v = RK(B, i);
    KirInsn *s = field(B, KIR_SETFIELD, t, b, 2);
    s->args[1] = v;
    append(B, s);
    break;
  }
  case KBC_SETTABLE: {
    KirInsn *o = R(B, a), *k = R(B, b), *v = RK(B, i);
    if (k->op == KIR_STR) {   /* r[k] = v with k a constant string: r.k = v */
      KirInsn *s = newinsn(B, KIR_SETFIELD, 2);
      s->args[0] = o;
      s->args[1] = v;
      s->k.str = k->k.str;
      append(B, s);
      break;
    }
    emit(B, KIR_SETINDEX, 3, o, k, v);
    break;
  }
  case KBC_SETI: {
    KirInsn *o = R(B, a), *k = kint(B, b), *v = RK(B, i);
    emit(B, KIR_SETINDEX, 3, o, k, v);
    break;
  }
  case KBC_SETFIELD: {
    KirInsn *o = R(B, a), *v = RK(B, i);
    KirInsn *s = field(B, KIR_SETFIELD, o, b, 2);
    s->args[1] = v;
    append(B, s);
    break;
  }
  case KBC_NEWTABLE: {   /* its sizes, as the VM makes it: aux the array
                         ** part's, k.i the hash part's */
    KirInsn *t = emit(B, KIR_NEWTABLE, 0);
    /* sizes only preallocate: a damaged chunk's are capped (1 << 20
    ** elements) rather than shifted or multiplied past their types */
    int64_t narr = c + (KBC_K(i) ? (int64_t)KBC_AX(CODE(pc + 1)) * 256 : 0);
    t->aux = (int)(narr < (1 << 20) ? narr : (1 << 20));
    t->k.i = b > 0 ? (lua_Integer)1 << (b - 1 < 20 ? b - 1 : 20) : 0;
    W(B, a, t);
    break;
  }
  case KBC_SELF: {   /* R[A+1] := R[B]; R[A] := R[B][RK(C)] */
    KirInsn *o = R(B, b), *m;
    if (KBC_K(i) && B->p->k[c].kind == KBC_KSTR)
      m = append(B, field(B, KIR_GETFIELD, o, c, 1));
    else {
      KirInsn *key = RK(B, i);
      m = emit(B, KIR_INDEX, 2, o, key);
    }
    W(B, a + 1, o);
    W(B, a, m);
    break;
  }
  case KBC_ADDI: {
    KirInsn *x = R(B, b);
    W(B, a, emit(B, KIR_ADD, 2, x, kint(B, KBC_SC(i))));
    break;
  }
  case KBC_ADDK: case KBC_SUBK: case KBC_MULK: case KBC_MODK: case KBC_POWK:
  case KBC_DIVK: case KBC_IDIVK: case KBC_BANDK: case KBC_BORK: case KBC_BXORK: {
    KirInsn *x = R(B, b);
    W(B, a, emit(B, arithk_op[op - KBC_ADDK], 2, x, kconst(B, c)));
    break;
  }
  case KBC_SHRI: {   /* x << c is compiled as x >> -c: undone */
    KirInsn *x = R(B, b);
    int sc = KBC_SC(i);
    W(B, a, emit(B, sc < 0 ? KIR_SHL : KIR_SHR, 2, x, kint(B, sc < 0 ? -sc : sc)));
    break;
  }
  case KBC_SHLI: {   /* sC << R[B] */
    KirInsn *x = R(B, b);
    W(B, a, emit(B, KIR_SHL, 2, kint(B, KBC_SC(i)), x));
    break;
  }
  case KBC_ADD: case KBC_SUB: case KBC_MUL: case KBC_MOD: case KBC_POW:
  case KBC_DIV: case KBC_IDIV: case KBC_BAND: case KBC_BOR: case KBC_BXOR:
  case KBC_SHL: case KBC_SHR: {
    KirInsn *x = R(B, b), *y = R(B, c);   /* in this order: phis get made */
    W(B, a, emit(B, arith_op[op - KBC_ADD], 2, x, y));
    break;
  }
  case KBC_UNM: case KBC_BNOT: case KBC_NOT: case KBC_LEN:
    W(B, a, emit(B, unary_op[op - KBC_UNM], 1, R(B, b)));
    break;
  case KBC_CONCAT: {
    KirInsn *v = withargs(B, KIR_CONCAT, 0, NULL, a, b);
    W(B, a, append(B, v));
    break;
  }
  case KBC_TBC: emit(B, KIR_TBC, 1, R(B, a)); break;
  case KBC_CALL: call(B, a, b, c - 1, 0); break;
  case KBC_TFORCALL: {
    KirInsn *fn = R(B, a), *s = R(B, a + 1), *ctl = R(B, a + 2);
    KirInsn *v = emit(B, KIR_CALL, 3, fn, s, ctl);
    v->flags |= KIR_F_TFOR;
    results(B, v, a + 4, c);
    /* the loop variables are locals from the top of the body on */
    if (pc + 1 < B->p->ncode && OPAT(pc + 1) == KBC_TFORLOOP)
      for (int k = 0; k < c; k++) {
        KirInsn *r = BS(B->cur)->defs[a + 4 + k];
        if (r && r->name == NULL)
          r->name = kbc_localname(B->p, a + 4 + k, kbc_jumpdest(B->p, pc + 1));
      }
    break;
  }
  case KBC_SETLIST: {
    KirInsn *t = R(B, a);
    KirInsn *v = withargs(B, KIR_SETLIST, 1, &t, a + 1, b ? b : -1);
    v->aux = c + (KBC_K(i) ? KBC_AX(CODE(pc + 1)) * 256 : 0);
    append(B, v);
    break;
  }
  case KBC_CLOSURE: {
    const KbcProto *np = B->p->p[KBC_BX(i)];
    int n = 0;
    for (int u = 0; u < np->nup; u++) n += np->up[u].instack != 0;
    KirInsn *v = newinsn(B, KIR_CLOSURE, n);
    v->aux = KBC_BX(i);
    for (int u = 0, j = 0; u < np->nup; u++)
      if (np->up[u].instack) {   /* a local in a cell is captured as its cell */
        int lv = cellvar(B, np->up[u].idx);
        v->args[j++] = lv >= 0 ? readvar(B, B->nbreg + lv, B->cur) : R(B, np->up[u].idx);
      }
    W(B, a, append(B, v));
    break;
  }
  case KBC_VARARG: results(B, emit(B, KIR_VARARG, 0), a, c - 1); break;
  /* no value: metamethod fallbacks (run only when the operation before
  ** fails), upvalue closing, and the prologue of vararg functions */
  case KBC_MMBIN: case KBC_MMBINI: case KBC_MMBINK: case KBC_CLOSE:
  case KBC_VARARGPREP: case KBC_EXTRAARG:
    break;
  default:
    fail(B, "bad bytecode (instruction %d: %s inside a block)", pc + 1,
         kbc_opinfo[op].name);
  }
}

/* The comparison or test at pc, and the branch on it. */
static void branch(Builder *B, int pc) {
  uint32_t i = CODE(pc);
  int op = KBC_OP(i), a = KBC_A(i), b = KBC_B(i);
  KirInsn *x, *y, *c;
  B->pc = pc;
  switch (op) {
  case KBC_EQ: case KBC_LT: case KBC_LE:
    x = R(B, a); y = R(B, b);
    c = emit(B, op == KBC_EQ ? KIR_EQ : op == KBC_LT ? KIR_LT : KIR_LE, 2, x, y);
    break;
  case KBC_EQK: x = R(B, a); c = emit(B, KIR_EQ, 2, x, kconst(B, b)); break;
  case KBC_EQI: case KBC_LTI: case KBC_LEI: case KBC_GTI: case KBC_GEI: {
    x = R(B, a);
    /* C says whether the immediate was written as a float */
    y = KBC_C(i) ? kflt(B, (lua_Number)KBC_SB(i)) : kint(B, KBC_SB(i));
    if (op == KBC_EQI) c = emit(B, KIR_EQ, 2, x, y);
    else if (op == KBC_LTI) c = emit(B, KIR_LT, 2, x, y);
    else if (op == KBC_LEI) c = emit(B, KIR_LE, 2, x, y);
    else if (op == KBC_GTI) c = emit(B, KIR_LT, 2, y, x);
    else c = emit(B, KIR_LE, 2, y, x);
    break;
  }
  case KBC_TEST: c = R(B, a); break;
  default: c = R(B, b); break;   /* TESTSET */
  }
  setterm(B, newinsn(B, KIR_BR, 1));
  B->cur->term->args[0] = c;
}

static void jmp(Builder *B) {
  setterm(B, newinsn(B, KIR_JMP, 0));
}

/* The last instruction of the block. */
static void last(Builder *B, int pc) {
  uint32_t i = CODE(pc);
  int op = KBC_OP(i), a = KBC_A(i), b = KBC_B(i);
  B->pc = pc;
  switch (op) {
  case KBC_JMP: case KBC_TFORPREP: jmp(B); break;
  case KBC_LFALSESKIP: step(B, pc); jmp(B); break;
  case KBC_RETURN0: setterm(B, newinsn(B, KIR_RET, 0)); break;
  case KBC_RETURN1: {
    KirInsn *t = newinsn(B, KIR_RET, 1);
    t->args[0] = R(B, a);
    setterm(B, t);
    break;
  }
  case KBC_RETURN: setterm(B, withargs(B, KIR_RET, 0, NULL, a, b ? b - 1 : -1)); break;
  case KBC_TAILCALL: {
    call(B, a, b, -1, KIR_F_TAIL);
    setterm(B, withargs(B, KIR_RET, 0, NULL, a, -1));
    break;
  }
  case KBC_FORPREP: {
    KirInsn *init = R(B, a), *limit = R(B, a + 1), *stp = R(B, a + 2);
    KirInsn *t = newinsn(B, KIR_FORPREP, 3);
    t->args[0] = init; t->args[1] = limit; t->args[2] = stp;
    setterm(B, t);
    W(B, a, t);           /* the internal index */
    W(B, a + 1, t);       /* the loop's state (Lua keeps its count there) */
    W(B, a + 3, t);       /* the control variable, a copy */
    break;
  }
  case KBC_FORLOOP: {
    /* its forprep comes through the renaming (so it dominates): checked
    ** to be one once trivial phis are gone (forloops()) */
    KirInsn *p = R(B, a + 1);
    KirInsn *idx = R(B, a);
    KirInsn *t = newinsn(B, KIR_FORLOOP, 2);
    t->args[0] = idx; t->args[1] = p;
    setterm(B, t);
    /* written in the block: the exit edge never reads them */
    W(B, a, t);
    W(B, a + 3, t);
    break;
  }
  case KBC_TFORLOOP: {   /* if R[A+4] ~= nil then { R[A+2] = R[A+4]; loop } */
    KirInsn *v = R(B, a + 4);
    KirInsn *c = emit(B, KIR_EQ, 2, v, emit(B, KIR_NIL, 0));
    KirInsn *t = newinsn(B, KIR_BR, 1);
    t->args[0] = c;
    setterm(B, t);
    W(B, a + 2, v);
    break;
  }
  default:   /* falls through to the next block */
    step(B, pc);
    jmp(B);
    break;
  }
  (void)b;
}

/* Does block q jump within lv's scope (its last instruction in it)? A
** numeric for's FORLOOP stands at the end of its variables' scope: each
** turn enters the scope anew (Lua's fresh variable per iteration). */
static int inscope(Builder *B, KirBlock *q, const KbcLocVar *lv) {
  if (BS(q)->entry) return 0;
  int at = q->lastpc >= q->pc ? q->lastpc : q->pc;
  return at >= lv->startpc && at < lv->endpc;
}

/* The cells of the locals in cells whose scope begins at pc, each made
** holding the value its register has then (nil for `local function f`,
** whose literal is made at pc and written through the cell). Where pc
** begins a block that a loop inside the scope jumps back to (`local i = 0`
** just before a `repeat` or `while`), the cell is made at the end of each
** block that enters the scope from outside instead: once per entry, not
** per turn. */
static void newcells(Builder *B, KirBlock *b, int pc) {
  const KbcProto *p = B->p;
  for (int i = 0; i < p->nlocvars; i++) {
    const KbcLocVar *lv = &p->locvars[i];
    if (!B->boxed[i] || lv->startpc != pc) continue;
    B->pc = pc;
    int reg = -1;
    for (int r = 0; r < B->nbreg && reg < 0; r++) if (cellvar(B, r) == i) reg = r;
    if (reg < 0) fail(B, "internal error: a local in a cell without its register");
    uint32_t in = CODE(pc);
    int self = KBC_OP(in) == KBC_CLOSURE && KBC_A(in) == reg;
    int back = 0;
    if (pc == b->pc)
      for (int k = 0; k < b->npreds; k++) {
        KirBlock *q = b->preds[k];
        back |= inscope(B, q, lv);
      }
    if (!back) {
      KirInsn *init = self ? emit(B, KIR_NIL, 0) : readvar(B, reg, B->cur);
      KirInsn *c = emit(B, KIR_NEWCELL, 1, init);
      c->name = lv->name;
      BS(B->cur)->defs[B->nbreg + i] = c;
      continue;
    }
    KirBlock *save = B->cur;
    for (int k = 0; k < b->npreds; k++) {
      KirBlock *q = b->preds[k];
      if (inscope(B, q, lv)) continue;
      if (!BS(q)->done) fail(B, "internal error: a cell's scope entered from a later block");
      B->cur = q;
      B->pc = BS(q)->entry ? -1 : q->lastpc >= q->pc ? q->lastpc : q->pc;
      KirInsn *init = self ? emit(B, KIR_NIL, 0) : readvar(B, reg, q);
      KirInsn *c = emit(B, KIR_NEWCELL, 1, init);
      c->name = lv->name;
      BS(q)->defs[B->nbreg + i] = c;
    }
    B->cur = save;
    B->pc = pc;
  }
}

static void fill(Builder *B, KirBlock *b) {
  BState *s = BS(b);
  B->cur = b;
  B->open = NULL;
  s->done = 1;   /* (newcells: a block filled, or being filled, before those it enters) */
  if (b == B->entry) {   /* parameters */
    B->pc = -1;
    for (int r = 0; r < B->p->numparams; r++) {
      KirInsn *v = emit(B, KIR_PARAM, 0);
      v->aux = r;
      v->line = B->p->linedefined;
      v->name = kbc_localname(B->p, r, 0);
      BS(b)->defs[r] = v;
    }
  }
  if (s->entry) { B->pc = -1; jmp(B); return; }
  if (s->scopeentry) {   /* the cells of the scope it enters, then on */
    newcells(B, b, b->pc);
    B->pc = b->pc;
    jmp(B);
    return;
  }
  if (s->copy_a >= 0) {   /* edge block of a TESTSET */
    B->pc = b->pc;
    W(B, s->copy_a, R(B, s->copy_b));
    jmp(B);
    return;
  }
  int end = b->lastpc, test = -1;
  if (is_test(OPAT(end))) test = end;
  else if (OPAT(end) == KBC_JMP && end - 1 >= b->pc && is_test(OPAT(end - 1)))
    test = end - 1;
  for (int pc = b->pc; pc <= end; pc++) {
    if (B->boxed) newcells(B, b, pc);
    if (pc == test) { branch(B, pc); break; }
    if (pc == end) last(B, pc);
    else step(B, pc);
  }
  if (B->open)
    fail(B, "bad bytecode (multiple results unused at the end of a block)");
}

/* }====================================================== */


/*
** {======================================================
** Control flow graph
** =======================================================
*/

static KirBlock *newblock(Builder *B, int pc, int lastpc) {
  KirBlock *b = alloc(B, sizeof *b);
  b->pc = pc;
  b->lastpc = lastpc;
  b->id = B->nall;
  B->all = grow(B, B->all, B->nall, &B->capall, sizeof *B->all);
  B->all[B->nall++] = b;
  return b;
}

static KirBlock *blockat(Builder *B, int pc, int from) {
  if (pc < 0 || pc >= B->p->ncode || B->at[pc] == NULL)
    fail(B, "bad bytecode (instruction %d goes to %d)", from + 1, pc + 1);
  return B->at[pc];
}

static void mark(uint8_t *leader, int pc, int n) {
  if (pc >= 0 && pc < n) leader[pc] = 1;
}

static void cfg(Builder *B) {
  const KbcProto *p = B->p;
  int n = p->ncode;
  uint8_t *leader = alloc(B, (size_t)n);
  leader[0] = 1;
  for (int pc = 0; pc < n; pc++) {
    int op = OPAT(pc), d = kbc_jumpdest(p, pc);
    if (d >= 0) mark(leader, d, n);
    if (is_test(op)) { mark(leader, pc + 2, n); continue; }
    switch (op) {
    case KBC_JMP: case KBC_FORPREP: case KBC_FORLOOP: case KBC_TFORPREP:
    case KBC_TFORLOOP: case KBC_RETURN: case KBC_RETURN0: case KBC_RETURN1:
    case KBC_TAILCALL:
      mark(leader, pc + 1, n);
      break;
    case KBC_LFALSESKIP:
      mark(leader, pc + 1, n);
      mark(leader, pc + 2, n);
      break;
    default: break;
    }
  }
  /* a test's own jump is never a leader unless something else jumps
  ** there: then the test ends its block alone */
  for (int pc = 0; pc < n; pc++) {
    if (!leader[pc]) continue;
    int end = pc;
    while (end + 1 < n && !leader[end + 1]) end++;
    B->at[pc] = newblock(B, pc, end);
  }
  int nblocks = B->nall;
  for (int bi = 0; bi < nblocks; bi++) {
    KirBlock *b = B->all[bi];
    int end = b->lastpc, op = OPAT(end);
    int test = is_test(op) ? end
             : (op == KBC_JMP && end - 1 >= b->pc && is_test(OPAT(end - 1))) ? end - 1
             : -1;
    if (test >= 0) {
      uint32_t i = CODE(test);
      KirBlock *taken = test == end ? blockat(B, test + 1, test)
                                    : blockat(B, kbc_jumpdest(p, test + 1), test + 1);
      KirBlock *skip = blockat(B, test + 2, test);
      if (KBC_OP(i) == KBC_TESTSET) {   /* the copy happens on the jump */
        KirBlock *e = newblock(B, test, test - 1);
        e->succ[0] = taken; e->nsucc = 1;
        taken = e;
      }
      b->nsucc = 2;
      b->succ[0] = KBC_K(i) ? taken : skip;
      b->succ[1] = KBC_K(i) ? skip : taken;
      continue;
    }
    int d = kbc_jumpdest(p, end);
    switch (op) {
    case KBC_JMP: case KBC_TFORPREP:
      b->nsucc = 1; b->succ[0] = blockat(B, d, end);
      break;
    case KBC_LFALSESKIP:
      b->nsucc = 1; b->succ[0] = blockat(B, end + 2, end);
      break;
    case KBC_FORPREP:
      b->nsucc = 2; b->succ[0] = blockat(B, end + 1, end); b->succ[1] = blockat(B, d, end);
      break;
    case KBC_FORLOOP:
      b->nsucc = 2; b->succ[0] = blockat(B, d, end); b->succ[1] = blockat(B, end + 1, end);
      break;
    case KBC_TFORLOOP:   /* br (R[A+4] == nil): exit, loop */
      b->nsucc = 2; b->succ[0] = blockat(B, end + 1, end); b->succ[1] = blockat(B, d, end);
      break;
    case KBC_RETURN: case KBC_RETURN0: case KBC_RETURN1: case KBC_TAILCALL:
      break;
    default:
      b->nsucc = 1; b->succ[0] = blockat(B, end + 1, end);
      break;
    }
  }
}

/* Is q's last instruction within lv's scope (inscope, before the block
** states exist)? */
static int ends_inscope(const KirBlock *q, const KbcLocVar *lv) {
  int at = q->lastpc >= q->pc ? q->lastpc : q->pc;
  return at >= lv->startpc && at < lv->endpc;
}

/* A block where a local in a cell begins its scope, entered both from
** within the scope (a goto back to the top of a for loop's body) and
** from outside it by a loop's own edge (FORPREP, FORLOOP, TFORLOOP, or a
** jump from later code): the cell must be made on each entry from
** outside but not on the others, and newcells cannot make it at the end
** of those blocks (a later block, or a terminator that writes the local's
** register). Their edges go to a block of its own instead, at the same
** pc, which makes the cells and goes on: the block it enters then has
** only entries from within the scope. */
static void scope_entries(Builder *B) {
  const KbcProto *p = B->p;
  int nblocks = B->nall;
  for (int i = 0; i < p->nlocvars; i++) {
    const KbcLocVar *lv = &p->locvars[i];
    int pc = lv->startpc;
    if (!B->boxed[i] || pc <= 0 || pc >= p->ncode || B->at[pc] == NULL) continue;
    KirBlock *t = B->at[pc];
    int within = 0, loopedge = 0;
    for (int j = 0; j < nblocks; j++) {
      KirBlock *q = B->all[j];
      for (int k = 0; k < q->nsucc; k++) {
        if (q->succ[k] != t) continue;
        if (ends_inscope(q, lv)) { within = 1; continue; }
        int op = q->lastpc >= q->pc ? OPAT(q->lastpc) : -1;
        loopedge |= op == KBC_FORPREP || op == KBC_FORLOOP || op == KBC_TFORLOOP ||
                    q->lastpc >= pc;
      }
    }
    if (!within || !loopedge) continue;
    KirBlock *e = NULL;   /* one for all the locals beginning at pc */
    for (int j = 0; j < B->nscopeent && !e; j++)
      if (B->scopeent[j]->succ[0] == t) e = B->scopeent[j];
    if (e) continue;
    e = newblock(B, pc, pc - 1);
    e->nsucc = 1;
    e->succ[0] = t;
    B->scopeent = grow(B, B->scopeent, B->nscopeent, &B->capscopeent, sizeof *B->scopeent);
    B->scopeent[B->nscopeent++] = e;
    for (int j = 0; j < nblocks; j++) {
      KirBlock *q = B->all[j];
      for (int k = 0; k < q->nsucc; k++)
        if (q->succ[k] == t && !ends_inscope(q, lv)) q->succ[k] = e;
    }
  }
}

static void addpred(Builder *B, KirBlock *s, KirBlock *b) {
  s->preds = grow(B, s->preds, s->npreds, &s->cappreds, sizeof *s->preds);
  s->preds[s->npreds++] = b;
}

/* Reverse postorder from the entry (an explicit stack: a function may
** have many blocks); predecessors in that order. */
static void order(Builder *B, KirBlock *entry) {
  int n = B->nall, top = 0, npost = 0;
  KirBlock **stack = alloc(B, (size_t)n * sizeof *stack);
  int *next = alloc(B, (size_t)n * sizeof *next);
  KirBlock **post = alloc(B, (size_t)n * sizeof *post);
  stack[top++] = entry;
  BS(entry)->reached = 1;
  while (top > 0) {
    KirBlock *b = stack[top - 1];
    int *k = &next[b->id];
    if (*k < b->nsucc) {
      KirBlock *s = b->succ[(*k)++];
      if (!BS(s)->reached) { BS(s)->reached = 1; stack[top++] = s; }
    }
    else { post[npost++] = b; top--; }
  }
  KirFunc *f = B->f;
  f->nblocks = npost;
  f->blocks = alloc(B, (size_t)npost * sizeof *f->blocks);
  for (int j = 0; j < npost; j++) f->blocks[j] = post[npost - 1 - j];
  for (int j = 0; j < npost; j++) {
    KirBlock *b = f->blocks[j];
    for (int s = 0; s < b->nsucc; s++) addpred(B, b->succ[s], b);
  }
}

/* }====================================================== */


/*
** {======================================================
** Clean-up: trivial phis (all operands the same value or the phi itself)
** and duplicate phis go, to a fixpoint
** =======================================================
*/

static KirInsn *find(KirInsn *v) {
  KirInsn *r = v;
  while (r->fwd) r = r->fwd;
  while (v->fwd) { KirInsn *n = v->fwd; v->fwd = r; v = n; }
  return r;
}

static int same_args(KirInsn *x, KirInsn *y) {
  if (x->nargs != y->nargs) return 0;
  for (int i = 0; i < x->nargs; i++)
    if (find(x->args[i]) != find(y->args[i])) return 0;
  return 1;
}

/* The use lists: counted, then filled. */
static void users(Builder *B) {
  KirFunc *f = B->f;
  for (int pass = 0; pass < 2; pass++)
    for (int j = 0; j < f->nblocks; j++) {
      KirBlock *b = f->blocks[j];
      for (int x = 0; x <= b->nphis + b->ninsns; x++) {
        KirInsn *u = x < b->nphis ? b->phis[x]
                   : x < b->nphis + b->ninsns ? b->insns[x - b->nphis] : b->term;
        for (int a = 0; u && a < u->nargs; a++) {
          KirInsn *d = u->args[a];
          if (pass == 0) d->nusers++;
          else {
            if (d->users == NULL) {
              d->users = alloc(B, (size_t)d->nusers * sizeof *d->users);
              d->nusers = 0;
            }
            d->users[d->nusers++] = u;
          }
        }
      }
    }
}

static void cleanup(Builder *B) {
  KirFunc *f = B->f;
  int changed = 1;
  while (changed) {
    changed = 0;
    for (int j = 0; j < B->nphis; j++) {
      KirInsn *phi = B->phis[j], *same = NULL;
      if (phi->fwd) continue;
      int trivial = 1;
      for (int i = 0; i < phi->nargs && trivial; i++) {
        KirInsn *a = find(phi->args[i]);
        if (a == phi || a == same) continue;
        if (same) trivial = 0;
        else same = a;
      }
      if (!trivial) continue;
      phi->fwd = same ? same : undef(B, phi->aux);
      changed = 1;
    }
    for (int j = 0; j < f->nblocks; j++) {
      KirBlock *b = f->blocks[j];
      for (int x = 0; x < b->nphis; x++) {
        if (b->phis[x]->fwd) continue;
        for (int y = x + 1; y < b->nphis; y++)
          if (!b->phis[y]->fwd && same_args(b->phis[x], b->phis[y])) {
            b->phis[y]->fwd = b->phis[x];
            changed = 1;
          }
      }
    }
  }
  int id = 0;
  for (int j = 0; j < f->nblocks; j++) {
    KirBlock *b = f->blocks[j];
    int n = 0;
    for (int x = 0; x < b->nphis; x++)
      if (!b->phis[x]->fwd) b->phis[n++] = b->phis[x];
    b->nphis = n;
    b->id = j;
    for (int x = 0; x < b->nphis; x++) b->phis[x]->id = id++;
    for (int x = 0; x < b->ninsns; x++) b->insns[x]->id = id++;
    if (b->term) b->term->id = id++;
  }
  f->ninsns = id;
  for (int j = 0; j < f->nblocks; j++) {
    KirBlock *b = f->blocks[j];
    for (int x = 0; x < b->nphis; x++)
      for (int a = 0; a < b->phis[x]->nargs; a++)
        b->phis[x]->args[a] = find(b->phis[x]->args[a]);
    for (int x = 0; x <= b->ninsns; x++) {
      KirInsn *v = x < b->ninsns ? b->insns[x] : b->term;
      for (int a = 0; v && a < v->nargs; a++) v->args[a] = find(v->args[a]);
    }
  }
  for (int j = 0; j < f->nblocks; j++) {
    KirInsn *t = f->blocks[j]->term;
    if (t == NULL || t->op != KIR_FORLOOP) continue;
    KirInsn *prep = t->args[1], *idx = t->args[0];
    if (prep->op != KIR_FORPREP)
      fail(B, "bad bytecode (instruction %d: FORLOOP without its FORPREP)", t->pc + 1);
    /* its index (R[A]) is only ever FORPREP's and its own (Lua's hidden
    ** local): a damaged chunk that writes it in the body, or a FORLOOP
    ** whose A is not its FORPREP's, gives code generation a value it
    ** cannot step */
    int own = idx == prep || idx->op == KIR_PHI;
    for (int a = 0; own && idx->op == KIR_PHI && a < idx->nargs; a++)
      own = idx->args[a] == prep || idx->args[a] == t;
    if (!own)
      fail(B, "bad bytecode (instruction %d: FORLOOP's index is not its loop's)", t->pc + 1);
  }
  users(B);
}

/* }====================================================== */


int kir_arith_mm(const KbcProto *p, const KirInsn *v, int *event, int *flip, lua_Integer *imm) {
  if (v->pc < 0 || v->pc + 1 >= p->ncode) return 0;
  uint32_t i = p->code[v->pc], mm = p->code[v->pc + 1];
  int op = KBC_OP(i), mop = KBC_OP(mm);
  /* (ADDI and the K forms only: SHRI's and SHLI's IR is their call already) */
  if (!(op == KBC_ADDI && mop == KBC_MMBINI) &&
      !(op >= KBC_ADDK && op <= KBC_BXORK && mop == KBC_MMBINK))
    return 0;
  int tm = KBC_C(mm) - 6;   /* ltm.h: TM_ADD (6) ... TM_SHR (17), ORDER OP */
  if (tm < 0 || tm >= (int)sizeof arith_op) return 0;
  int ev = arith_op[tm], fl = KBC_K(mm);
  if (ev == v->op && !fl) return 0;
  *event = ev;
  *flip = fl;
  if (mop == KBC_MMBINI) *imm = KBC_SB(mm);
  return 1;
}

KirFunc *kir_build(Arena *A, const KbcProto *p, char *err, size_t errsz) {
  Builder B;
  memset(&B, 0, sizeof B);
  B.A = A;
  B.p = p;
  B.err = err; B.errsz = errsz;
  if (errsz) err[0] = '\0';
  if (setjmp(B.jb)) return NULL;
  if (p->ncode <= 0) fail(&B, "bad bytecode (no instructions)");
  B.nreg = B.nbreg = p->maxstack;
  for (int i = 0; i < p->nlocvars; i++)
    if (kcl_boxed_local(p, i)) {
      if (B.boxed == NULL) B.boxed = alloc(&B, (size_t)p->nlocvars);
      B.boxed[i] = 1;
    }
  if (B.boxed) B.nreg = p->maxstack + p->nlocvars;
  B.f = alloc(&B, sizeof *B.f);
  B.f->proto = p;
  B.at = alloc(&B, (size_t)p->ncode * sizeof *B.at);
  B.undef = alloc(&B, ((size_t)B.nreg + 1) * sizeof *B.undef);
  cfg(&B);
  if (B.boxed) scope_entries(&B);
  /* a jump back to the first instruction: the parameters need a block
  ** of their own, the entry, which nothing jumps to */
  KirBlock *first = B.at[0], *entry = first;
  for (int j = 0; j < B.nall && entry == first; j++)
    for (int s = 0; s < B.all[j]->nsucc; s++)
      if (B.all[j]->succ[s] == first) {
        entry = newblock(&B, 0, -1);
        entry->nsucc = 1;
        entry->succ[0] = first;
        break;
      }
  B.bs = alloc(&B, (size_t)B.nall * sizeof *B.bs);
  for (int j = 0; j < B.nall; j++) {
    B.bs[j].copy_a = B.bs[j].copy_b = -1;
    B.bs[j].defs = alloc(&B, ((size_t)B.nreg + 1) * sizeof(KirInsn *));
    B.bs[j].incomplete = alloc(&B, ((size_t)B.nreg + 1) * sizeof(KirInsn *));
    KirBlock *b = B.all[j];
    int scopeentry = 0;
    for (int k = 0; k < B.nscopeent; k++) scopeentry |= B.scopeent[k] == b;
    if (b->lastpc < b->pc) {   /* edge block: TESTSET's copy, the entry, a scope's entry */
      if (b == entry) B.bs[j].entry = 1;
      else if (scopeentry) B.bs[j].scopeentry = 1;
      else {
        uint32_t i = p->code[b->pc];
        B.bs[j].copy_a = KBC_A(i);
        B.bs[j].copy_b = KBC_B(i);
      }
    }
  }
  B.entry = entry;
  order(&B, entry);
  KirFunc *f = B.f;
  for (int j = 0; j < f->nblocks; j++) {
    KirBlock *b = f->blocks[j];
    if (b->npreds == 0) seal(&B, b);
    fill(&B, b);
    for (int s = 0; s < b->nsucc; s++) {
      KirBlock *t = b->succ[s];
      if (++B.bs[t->id].nfilled == t->npreds) seal(&B, t);
    }
  }
  cleanup(&B);
  if (!kir_loops(A, f)) fail(&B, "not enough memory");
  /* The builder's own check. A chunk it mishandles (a builder bug, met
  ** on a damaged chunk no Lua compiler writes: the fuzz target aborts on
  ** this message) is refused here, never compiled into code that uses a
  ** value before it is made. */
  char verr[200];
  if (!kir_verify(f, verr, sizeof verr)) {
    if (strcmp(verr, "not enough memory") == 0) fail(&B, "not enough memory");
    fail(&B, "internal error: " KIR_INVALID " (%s)", verr);
  }
  return f;
}

const char *const kir_opname[KIR__COUNT] = {
#define KIR_NAME(name, text) text,
  KIR_OPS(KIR_NAME)
#undef KIR_NAME
};
