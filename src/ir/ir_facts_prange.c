/*
** ir_facts_prange.c: kjit.prange loops (legality, reductions, the locals
** they share) and the f:inspect("parallel") note of every loop: the old
** generator's pa_* rules and note texts, restated on SSA (ir_facts.h, 5.).
**
** A local assigned in the body of a loop has a phi at its header; one
** only read has none, so the header phis other than the iteration state
** are exactly the locals the old analysis saw assigned. The statement
** `s = s op e` is an operation whose value is stored into s: the IR
** keeps that name (KirInsn.name), which is how a reduction statement is
** told from a temporary (`s = s * 2 + 1` is not a reduction: its mul is a
** temporary).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir_facts.h"
#include "ir/ir_facts_int.h"

const char *kfa_red_name(KfaRed r) {
  static const char *const names[] = { "", "s + e", "s * e", "math.min(s, e)", "math.max(s, e)",
                                       "math.min(e, s)", "math.max(e, s)" };
  return names[r];
}

int kfa_is_prange_(const KtySpec *sp, const KirLoop *l) {
  if (l->kind != KIR_LOOP_FORIN || l->prep == NULL || l->prep->nargs < 1) return 0;
  KirInsn *it = l->prep->args[0];
  Type t = sp->types[it->id];
  return it->op == KIR_CALL && t.kind == T_BUILTIN && t.ref == B_KJIT_PRANGE && t.sub;
}

static int same_name(const KirInsn *v, const char *name) {
  return v->name && name && strcmp(v->name, name) == 0;
}

/* The reduction a value stored into `name` makes of w (w its s operand),
** and which operand is s; RED_NONE when it is no reduction form. */
static KfaRed red_form(const KtySpec *sp, const KirInsn *v, int *spos) {
  switch (v->op) {
  case KIR_ADD: *spos = -1; return KFA_RED_ADD;   /* -1: either operand */
  case KIR_SUB: *spos = 0; return KFA_RED_ADD;    /* s - e = s + (-e) */
  case KIR_MUL: *spos = -1; return KFA_RED_MUL;
  case KIR_CALL: {
    if (v->nargs != 3 || (v->flags & (KIR_F_OPEN | KIR_F_TFOR))) return KFA_RED_NONE;
    Type ft = sp->types[v->args[0]->id];
    if (ft.kind != T_BUILTIN || (ft.ref != B_MATH_MIN && ft.ref != B_MATH_MAX)) return KFA_RED_NONE;
    *spos = -2;   /* args[1] (s first) or args[2] (e first) */
    return ft.ref == B_MATH_MIN ? KFA_RED_MIN : KFA_RED_MAX;
  }
  default: return KFA_RED_NONE;
  }
}

/* The web of one reduction variable: its values in the loop. */
typedef struct Web {
  KfaCtx *C;
  KirLoop *l;
  KirInsn *phi;
  const char *name;
  uint8_t *state;          /* by id: 0 unseen, 1 a member */
  int *spos;               /* by id: reduction ops, the operand index of s */
  KfaRed *red;             /* by id: reduction ops, their operator */
  KirInsn *fail;           /* the first value breaking the rule */
} Web;

static int web_walk(Web *W, KirInsn *v) {
  KtySpec *sp = W->C->sp;
  if (v == W->phi || W->state[v->id] == 1) return 1;
  if (!kfa_inloop_(W->l, v)) goto fail;
  if (v->op == KIR_PHI) {
    W->state[v->id] = 1;   /* cycles through inner loops close here */
    for (int i = 0; i < v->nargs; i++)
      if (!web_walk(W, v->args[i])) { W->state[v->id] = 0; return 0; }
    return 1;
  }
  int spos;
  /* stripped (no names): any reduction form counts as a statement, which
  ** accepts `s = s + a + b` as two sums (the same reduction, still safe) */
  KfaRed r = W->name == NULL || same_name(v, W->name) ? red_form(sp, v, &spos) : KFA_RED_NONE;
  if (r == KFA_RED_NONE) goto fail;
  int cands[2], nc = 0;
  if (spos == -1) { cands[nc++] = 0; cands[nc++] = 1; }
  else if (spos == -2) { cands[nc++] = 1; cands[nc++] = 2; }
  else cands[nc++] = spos;
  for (int i = 0; i < nc; i++) {
    KirInsn *a = v->args[cands[i]];
    if (a != W->phi && !kfa_inloop_(W->l, a)) continue;
    KirInsn *f0 = W->fail;
    W->state[v->id] = 1;
    if (web_walk(W, a)) {
      W->spos[v->id] = cands[i];
      W->red[v->id] = spos == -2 && cands[i] == 2 ? (r == KFA_RED_MIN ? KFA_RED_MIN_EF : KFA_RED_MAX_EF) : r;
      return 1;
    }
    W->state[v->id] = 0;
    W->fail = f0;
  }
fail:
  if (W->fail == NULL) W->fail = v;
  return 0;
}

typedef struct Err { int order, line; char msg[600]; } Err;

static void set_err(Err *e, int order, int line, const char *msg) {
  if (e->msg[0] && e->order <= order) return;
  e->order = order;
  e->line = line;
  snprintf(e->msg, sizeof e->msg, "%s", msg);
}

static char *dup(KfaCtx *C, const char *s) {
  size_t n = strlen(s);
  char *d = kfa_alloc_(C, n + 1);
  memcpy(d, s, n);
  return d;
}

/* Where the body first uses v: the least bytecode pc of a user inside l
** but phis of block skip (INT32_MAX: none). Bytecode order is source
** order, which the old analysis followed; ids follow the block order,
** where an else branch may come before its then branch. */
static int first_use(const KirLoop *l, const KirInsn *v, const KirBlock *skip) {
  int best = INT32_MAX;
  for (int u = 0; u < v->nusers; u++) {
    const KirInsn *x = v->users[u];
    if (!kfa_inloop_(l, x)) continue;
    if (skip && x->op == KIR_PHI && x->block == skip) continue;
    int pc = x->pc >= 0 ? x->pc : INT32_MAX - 1;
    if (pc < best) best = pc;
  }
  return best;
}

/* Does the instruction write R[A] (the ones an assignment to a local ends in)? */
static int writes_a(int op) {
  return (op >= KBC_MOVE && op <= KBC_GETUPVAL) || (op >= KBC_GETTABUP && op <= KBC_GETFIELD) ||
         op == KBC_NEWTABLE || (op >= KBC_ADDI && op <= KBC_SHR) ||
         (op >= KBC_UNM && op <= KBC_CONCAT) || op == KBC_CLOSURE;
}

/* The local variable held by register reg just before pc (Lua's
** luaF_getlocalname, keeping the entry), or NULL. */
static const KbcLocVar *local_at(const KbcProto *p, int reg, int pc) {
  int n = reg + 1;
  for (int i = 0; i < p->nlocvars && p->locvars[i].startpc <= pc; i++)
    if (pc < p->locvars[i].endpc && --n == 0) return &p->locvars[i];
  return NULL;
}

/* An assignment in the body to a local of the enclosing function whose
** value nothing reads afterwards makes no phi (SSA drops it), yet the old
** analysis refused it as a race, as the user wrote one: found in the
** bytecode of the body. */
static void dead_assignments(KfaCtx *C, KirLoop *l, Err *err) {
  const KbcProto *p = C->f->proto;
  if (p->locvars == NULL) return;
  int start = INT32_MAX;
  for (int i = 0; i < l->nblocks; i++)
    if (l->blocks[i]->lastpc >= l->blocks[i]->pc && l->blocks[i]->pc < start) start = l->blocks[i]->pc;
  for (int i = 0; i < l->nblocks; i++) {
    KirBlock *b = l->blocks[i];
    if (!C->sp->live[b->id]) continue;
    for (int pc = b->pc; pc <= b->lastpc && pc < p->ncode; pc++) {
      int op = KBC_OP(p->code[pc]);
      if (!writes_a(op)) continue;
      const KbcLocVar *v = local_at(p, KBC_A(p->code[pc]), pc);
      if (v == NULL || v->name == NULL || v->name[0] == '(' || v->startpc >= start) continue;
      int phi = 0;
      for (int j = 0; j < l->header->nphis; j++) phi |= same_name(l->header->phis[j], v->name);
      if (phi) continue;   /* analysed as a reduction candidate */
      char msg[600];
      const char *name = v->name;
      snprintf(msg, sizeof msg, "kjit.prange loop (line %d): local '%s' is assigned in the loop but "
               "not as a reduction ('%s = %s + e', '%s - e', '%s * e', 'math.min(%s, e)' or "
               "'math.max(%s, e)'): the iterations would race for it", l->line, name, name, name,
               name, name, name, name);
      set_err(err, pc, kbc_line(p, pc), msg);
    }
  }
}

/* Calls into the Lua library (runtime_lib.c: print, io.write, math.random,
** strings built for error/assert ...) need the Lua state, which the pool's
** threads must not touch: refused in the body (the lead's value model,
** point 4). Callees that make them fail when they run in the job. */
static void lua_calls(KfaCtx *C, KirLoop *l, Err *err) {
  KtySpec *sp = C->sp;
  char msg[400];
  for (int i = 0; i < l->nblocks; i++) {
    KirBlock *b = l->blocks[i];
    if (!sp->live[b->id]) continue;
    for (int j = 0; j < b->ninsns; j++) {
      KirInsn *v = b->insns[j];
      const char *what = NULL;
      if (v->op == KIR_CONCAT && sp->consts[v->id].kind != T_STR) what = "'..' (a string built at run time)";
      if (v->op == KIR_CALL && !(v->flags & KIR_F_TFOR)) {
        Type ft = sp->types[v->args[0]->id];
        if (ft.kind == T_BUILTIN && B_NEEDS_L(ft.ref)) what = kir_builtin_name(ft.ref);
        int m = ft.kind == T_BUILTIN && ft.ref == B_ERROR ? 1
              : ft.kind == T_BUILTIN && ft.ref == B_ASSERT ? 2 : 0;
        if (m && v->nargs > m && sp->consts[v->args[m]->id].kind != T_STR)
          what = m == 1 ? "error() of a value built at run time"
                        : "assert() with a message built at run time";
      }
      if (what == NULL) continue;
      snprintf(msg, sizeof msg, "%s cannot run inside a kjit.prange loop (line %d): its "
               "iterations run on threads that cannot call Lua. Hoist it out of the loop (call "
               "it before or after the loop, keeping what it gives, or what it should print, in "
               "a local or a kjit array), or make it a plain for loop (or compile without "
               "parallel = true)", what, l->line);
      set_err(err, v->pc, v->line, msg);
    }
  }
}

static void analyze_prange(KfaCtx *C, KfaLoop *fl, Err *err) {
  KtySpec *sp = C->sp;
  KirLoop *l = fl->loop;
  KfaPrange *P = fl->prange;
  KirInsn *tfor = l->prep;
  int ln = l->line;
  char msg[600];
  int n = C->f->ninsns;
  /* leaving the body: return, break, goto */
  KirBlock *normal = NULL;
  KirBlock *h = l->header;
  if (h->term && h->term->op == KIR_BR && h->nsucc == 2)
    for (int s = 0; s < 2; s++) if (!kir_inloop(l, h->succ[s])) normal = h->succ[s];
  for (int i = 0; i < l->nblocks; i++) {
    KirBlock *b = l->blocks[i];
    if (!sp->live[b->id]) continue;
    for (int s = 0; s < b->nsucc; s++) {
      KirBlock *e = b->succ[s];
      if (kir_inloop(l, e) || (b == h && e == normal)) continue;
      if (!(sp->edges[b->id] >> s & 1)) continue;
      int line = b->term ? b->term->line : ln;
      if (e->term && e->term->op == KIR_RET && e->npreds == 1) {   /* a return of the body */
        line = e->term->line;
        snprintf(msg, sizeof msg, "cannot return from inside a kjit.prange loop (line %d): its "
                 "iterations run in parallel", ln);
      } else if (e == normal)   /* a break goes where the loop ends */
        snprintf(msg, sizeof msg, "cannot break out of a kjit.prange loop (line %d): its iterations "
                 "run in parallel", ln);
      else {
        snprintf(msg, sizeof msg, "cannot goto out of a kjit.prange loop (line %d): its iterations "
                 "run in parallel", ln);
        /* the old analysis checked gotos after the whole body */
        set_err(err, C->f->proto->ncode + 1 + b->term->pc, line, msg);
        continue;
      }
      set_err(err, b->term ? b->term->pc : 0, line, msg);
    }
  }
  lua_calls(C, l, err);
  dead_assignments(C, l, err);
  /* the locals assigned in the body: header phis but the iteration state */
  Web W;
  memset(&W, 0, sizeof W);
  W.C = C; W.l = l;
  W.state = kfa_alloc_(C, (size_t)n);
  W.spos = kfa_alloc_(C, (size_t)n * sizeof *W.spos);
  W.red = kfa_alloc_(C, (size_t)n * sizeof *W.red);
  P->reds = kfa_alloc_(C, (size_t)(h->nphis + 1) * sizeof *P->reds);
  int *order = kfa_alloc_(C, (size_t)(h->nphis + 1) * sizeof *order);
  for (int i = 0; i < h->nphis; i++) {
    KirInsn *phi = h->phis[i];
    int state = 0;
    for (int a = 1; a < tfor->nargs; a++) state |= tfor->args[a] == phi;
    if (state) continue;
    const char *name = phi->name ? phi->name : "?";
    memset(W.state, 0, (size_t)n);
    W.phi = phi; W.name = phi->name; W.fail = NULL;
    int ok = 1;
    for (int p = 0; p < h->npreds && ok; p++)
      if (kir_inloop(l, h->preds[p])) ok = web_walk(&W, phi->args[p]);
    if (!ok) {
      KirInsn *f = W.fail ? W.fail : phi;
      snprintf(msg, sizeof msg, "kjit.prange loop (line %d): local '%s' is assigned in the loop but "
               "not as a reduction ('%s = %s + e', '%s - e', '%s * e', 'math.min(%s, e)' or "
               "'math.max(%s, e)'): the iterations would race for it", ln, name, name, name, name,
               name, name, name);
      set_err(err, f->pc >= 0 ? f->pc : 0, f->line, msg);
      continue;
    }
    KfaRedVar *rv = &P->reds[P->nreds];
    rv->phi = phi; rv->name = name;
    int nops = 0;
    for (int v = 0; v < n; v++) nops += W.state[v] == 1 && W.red[v] != KFA_RED_NONE;
    rv->ops = kfa_alloc_(C, (size_t)(nops ? nops : 1) * sizeof *rv->ops);
    KirInsn *firstop = NULL;
    /* members in id order: the first reduction decides, a different one errs */
    for (int bi = 0; bi < l->nblocks; bi++)
      for (int j = 0; j < l->blocks[bi]->ninsns; j++) {
        KirInsn *v = l->blocks[bi]->insns[j];
        if (W.state[v->id] != 1 || W.red[v->id] == KFA_RED_NONE) continue;
        rv->ops[rv->nops++] = v;
      }
    for (int a = 0; a < rv->nops; a++)
      for (int b = a + 1; b < rv->nops; b++)
        if (rv->ops[b]->pc < rv->ops[a]->pc) { KirInsn *t = rv->ops[a]; rv->ops[a] = rv->ops[b]; rv->ops[b] = t; }
    for (int a = 0; a < rv->nops; a++) {
      KirInsn *v = rv->ops[a];
      if (firstop == NULL) { firstop = v; rv->red = W.red[v->id]; continue; }
      if (W.red[v->id] != rv->red) {
        snprintf(msg, sizeof msg, "kjit.prange loop (line %d): local '%s' is reduced as both %s "
                 "and %s", ln, name, kfa_red_name(rv->red), kfa_red_name(W.red[v->id]));
        set_err(err, v->pc, v->line, msg);
        break;
      }
    }
    switch (rv->red) {
    case KFA_RED_MUL: rv->id = KFA_ID_ONE; break;
    case KFA_RED_MIN: case KFA_RED_MAX: rv->id = KFA_ID_VALUE; break;
    case KFA_RED_MIN_EF: rv->id = KFA_ID_MAXVAL; break;
    case KFA_RED_MAX_EF: rv->id = KFA_ID_MINVAL; break;
    default: rv->id = KFA_ID_ZERO; break;
    }
    /* checked after the body (the old order): type, argument order, reads */
    Type t = sp->types[phi->id];
    char tb[32];
    int late = 2 * C->f->proto->ncode + 2 + P->nreds;
    /* a number (the old typer made `local s = 0` a float from its
    ** declaration; here s is an integer until the first float meets it):
    ** accepted, the code generator keeps tagged partials, or float ones
    ** when the phi is a number only by its entry value (peelable, + or *:
    ** chunk 0's first s + e converts the entry value as Lua does) */
    if (t.kind == T_NUMBER)
      rv->number = C->F->peel[phi->id] && (rv->red == KFA_RED_ADD || rv->red == KFA_RED_MUL) ? 2 : 1;
    if (t.kind == T_LUA) {   /* (kty_name says "value": name what it reads instead) */
      snprintf(msg, sizeof msg, "kjit.prange loop (line %d): the reduction variable '%s' must be a "
               "number, but it takes Lua values (read from a table, or results of a function "
               "value), which the loop's iterations cannot read on other threads. Hoist the "
               "reads out of the loop (`local x = t.x` before it, or copy a table's numbers into "
               "a kjit array), or make it a plain for loop (or compile without parallel = true)",
               ln, name);
      set_err(err, late, ln, msg);
    } else if (t.kind != T_INT && t.kind != T_F64 && t.kind != T_F32 && t.kind != T_NUMBER) {
      snprintf(msg, sizeof msg, "kjit.prange loop (line %d): the reduction variable '%s' must be a "
               "number (it is %s)", ln, name, kty_name(t, tb, sizeof tb));
      set_err(err, late, ln, msg);
    } else if ((rv->red == KFA_RED_MIN_EF || rv->red == KFA_RED_MAX_EF) && t.kind != T_INT) {
      const char *fn = rv->red == KFA_RED_MIN_EF ? "math.min" : "math.max";
      snprintf(msg, sizeof msg, "kjit.prange loop (line %d): write the float reduction of '%s' as "
               "'%s = %s(%s, e)', not '%s(e, %s)': in that order a NaN element restarts the "
               "reduction, which the parallel chunks cannot reproduce", ln, name, name, fn, name,
               fn, name);
      set_err(err, late, ln, msg);
    } else {
      /* every use of a member in the loop: a member phi, or s of a member op */
      int bad = 0;
      for (int bi = -1; bi < l->nblocks && !bad; bi++) {
        KirBlock *b = bi < 0 ? NULL : l->blocks[bi];
        int cnt = b ? b->nphis + b->ninsns : 1;
        for (int j = 0; j < cnt && !bad; j++) {
          KirInsn *m = b == NULL ? phi : j < b->nphis ? b->phis[j] : b->insns[j - b->nphis];
          if (b && (m == phi || W.state[m->id] != 1)) continue;
          for (int u = 0; u < m->nusers && !bad; u++) {
            KirInsn *x = m->users[u];
            if (!kfa_inloop_(l, x)) continue;
            if (x->op == KIR_PHI && (x == phi || W.state[x->id] == 1)) continue;
            if (W.state[x->id] == 1 && W.red[x->id] != KFA_RED_NONE) {
              int uses = 0;
              for (int a = x->op == KIR_CALL ? 1 : 0; a < x->nargs; a++) uses += x->args[a] == m;
              if (uses == 1 && x->args[W.spos[x->id]] == m) continue;
            }
            bad = 1;
          }
        }
      }
      if (bad) {
        snprintf(msg, sizeof msg, "kjit.prange loop (line %d): local '%s' is a reduction (%s = %s) "
                 "and may appear in the loop only in its reduction statements, where e does not "
                 "mention it", ln, name, name, kfa_red_name(rv->red));
        set_err(err, late, ln, msg);
      }
    }
    order[P->nreds] = first_use(l, phi, NULL);
    P->nreds++;
  }
  /* reductions in the order the body first mentions them */
  for (int a = 0; a < P->nreds; a++)
    for (int b = a + 1; b < P->nreds; b++)
      if (order[b] < order[a]) {
        KfaRedVar t = P->reds[a]; P->reds[a] = P->reds[b]; P->reds[b] = t;
        int o = order[a]; order[a] = order[b]; order[b] = o;
      }
  /* shared, read only: named values from outside read in the body */
  int cap = 16;
  P->shared = kfa_alloc_(C, (size_t)cap * sizeof *P->shared);
  int *sorder = kfa_alloc_(C, (size_t)cap * sizeof *sorder);
  for (int j = 0; j < C->f->nblocks; j++) {
    KirBlock *b = C->f->blocks[j];
    if (kir_inloop(l, b)) continue;
    for (int k = -b->nphis; k < b->ninsns; k++) {
      KirInsn *v = k < 0 ? b->phis[k + b->nphis] : b->insns[k];
      if (v->name == NULL || v->name[0] == '(') continue;
      int o = first_use(l, v, h);
      if (o == INT32_MAX) continue;
      if (P->nshared == cap) {
        KirInsn **ns = kfa_alloc_(C, (size_t)cap * 2 * sizeof *ns);
        int *no = kfa_alloc_(C, (size_t)cap * 2 * sizeof *no);
        memcpy(ns, P->shared, (size_t)cap * sizeof *ns);
        memcpy(no, sorder, (size_t)cap * sizeof *no);
        P->shared = ns; sorder = no; cap *= 2;
      }
      P->shared[P->nshared] = v;
      sorder[P->nshared++] = o;
    }
  }
  for (int a = 0; a < P->nshared; a++)
    for (int b = a + 1; b < P->nshared; b++)
      if (sorder[b] < sorder[a]) {
        KirInsn *t = P->shared[a]; P->shared[a] = P->shared[b]; P->shared[b] = t;
        int o = sorder[a]; sorder[a] = sorder[b]; sorder[b] = o;
      }
}

/* The array stores of the body, and which of them write per-iteration
** disjoint places: the outermost key (the row) is the control variable
** plus an invariant, on an array defined outside the loop. (Two array
** arguments may still be the same array: the user's promise, as before.) */
static void prange_writes(KfaCtx *C, KfaLoop *fl) {
  KtySpec *sp = C->sp;
  KirLoop *l = fl->loop;
  KfaPrange *P = fl->prange;
  int n = 0;
  for (int i = 0; i < l->nblocks; i++)
    for (int j = 0; j < l->blocks[i]->ninsns; j++) n += l->blocks[i]->insns[j]->op == KIR_SETINDEX;
  P->writes = kfa_alloc_(C, (size_t)(n ? n : 1) * sizeof *P->writes);
  P->disjoint = kfa_alloc_(C, (size_t)(n ? n : 1));
  for (int i = 0; i < l->nblocks; i++) {
    KirBlock *b = l->blocks[i];
    if (!sp->live[b->id]) continue;
    for (int j = 0; j < b->ninsns; j++) {
      KirInsn *v = b->insns[j];
      if (v->op != KIR_SETINDEX || v->nargs != 3) continue;
      KirInsn *obj = v->args[0], *row = v->args[1];
      while (obj->op == KIR_INDEX && kfa_inloop_(l, obj)) { row = obj->args[1]; obj = obj->args[0]; }
      KfaCheck h;
      memset(&h, 0, sizeof h);
      int ok = sp->types[obj->id].kind == T_BUF && !kfa_inloop_(l, obj) &&
               sp->types[row->id].kind == T_INT && kfa_affine_(sp, l, l, row, &h);
      P->disjoint[P->nwrites] = (uint8_t)ok;
      P->writes[P->nwrites++] = v;
    }
  }
}

/* f:inspect("parallel")'s line for a loop (par_note, note_loop, note_prange). */
static const char *note_of(KfaCtx *C, KfaLoop *fl) {
  char buf[1000];
  int ln = fl->loop->line;
  KfaPrange *P = fl->prange;
  switch (fl->loop->kind) {
  case KIR_LOOP_FORNUM:
    snprintf(buf, sizeof buf, "line %d: for loop: sequential (only kjit.prange loops run in parallel)", ln);
    break;
  case KIR_LOOP_WHILE: case KIR_LOOP_LOOP:
    snprintf(buf, sizeof buf, "line %d: while loop: sequential (only kjit.prange loops run in parallel)", ln);
    break;
  case KIR_LOOP_REPEAT:
    snprintf(buf, sizeof buf, "line %d: repeat loop: sequential (only kjit.prange loops run in parallel)", ln);
    break;
  default:
    if (P == NULL) return NULL;
    if (!C->parallel)
      snprintf(buf, sizeof buf, "line %d: kjit.prange loop: sequential (the function does not have "
               "parallel = true)", ln);
    else if (P->nested)
      snprintf(buf, sizeof buf, "line %d: kjit.prange loop: sequential, inside each iteration of the "
               "enclosing parallel loop (nested prange loops do not run in parallel)", ln);
    else if (P->errmsg)
      return NULL;   /* a compile error, no note */
    else {
      char red[400] = "", rd[400] = "";
      size_t nr = 0, nd = 0;
      for (int i = 0; i < P->nreds; i++) {
        nr += (size_t)snprintf(red + nr, nr < sizeof red ? sizeof red - nr : 0, "%s%s (%s)",
                               nr ? ", " : "", P->reds[i].name, kfa_red_name(P->reds[i].red));
        if (nr >= sizeof red) nr = sizeof red - 1;
      }
      for (int i = 0; i < P->nshared; i++) {
        nd += (size_t)snprintf(rd + nd, nd < sizeof rd ? sizeof rd - nd : 0, "%s%s",
                               nd ? ", " : "", P->shared[i]->name);
        if (nd >= sizeof rd) nd = sizeof rd - 1;
      }
      snprintf(buf, sizeof buf, "line %d: kjit.prange loop: parallel, its iterations split in "
               "chunks over the thread pool; reductions: %s; shared, read only: %s", ln,
               nr ? red : "none", nd ? rd : "none");
    }
  }
  return dup(C, buf);
}

void kfa_prange_facts_(KfaCtx *C) {
  KtySpec *sp = C->sp;
  KfaFacts *F = C->F;
  for (int i = 0; i < F->nloops; i++) {   /* outer loops first */
    KfaLoop *fl = &F->loops[i];
    KirLoop *l = fl->loop;
    if (!sp->live[l->header->id]) continue;
    if (kfa_is_prange_(sp, l)) {
      KfaPrange *P = fl->prange = kfa_alloc_(C, sizeof *P);
      P->call = l->prep->args[0];
      for (KirLoop *m = l->parent; m; m = m->parent) P->nested |= F->loops[m->id].prange != NULL;
      Err err;
      memset(&err, 0, sizeof err);
      analyze_prange(C, fl, &err);
      prange_writes(C, fl);
      if (err.msg[0]) { P->errmsg = dup(C, err.msg); P->errline = err.line; }
      P->parallel = C->parallel && !P->nested && P->errmsg == NULL;
    }
    fl->note = note_of(C, fl);
  }
}
