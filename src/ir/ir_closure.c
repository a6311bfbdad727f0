/*
** ir_closure.c: which function literals compiled code can follow (the
** typer's KIR_CLOSURE; design note for the whole closure work below).
**
** Design (issue 29 item 2, first part). A function literal made inside a
** compiled function becomes a compile-time value (T_CLOSURE: its site, the
** KIR_CLOSURE of one specialization) with no run-time object. Calling it
** compiles its prototype as a callee, one specialization per argument
** types, whose extra parameters (after the declared ones) are its
** upvalues: the caller passes the captured values. So a closure is never a
** Lua object in compiled code; it cannot escape (returned, stored in a
** table, given to a C function: refused, located), until Lua values in
** compiled code (the tables work) can carry one.
**
** Passing upvalues by value is Lua's semantics only when the captured
** local is never assigned after the literal is made: then every closure
** over it and the enclosing function see one value forever (a loop's fresh
** local per iteration is such a local: each iteration's closure sees its
** own). kcl_capture_problem checks exactly that on the bytecode: no
** instruction in the local's scope writes its register after the literal
** is made (other than the literal assigned to it, `local function f`),
** and no function literal
** made in that scope assigns the upvalue (SETUPVAL, directly or from a
** literal nested in it). One later write is allowed, for mutual recursion
** (`local even, odd; function even ... odd(n - 1) end; function odd ...`):
** a single function literal assigned to the local, with nothing between
** that can call the first literal (kcl_late_literal); it then captures
** that literal. Any other such local is kept in a cell (below: one
** variable shared by the function and its closures, compiled or real);
** only a `local function f` that captures itself and is assigned again is
** refused, with the local's name and line and what to write instead.
*/
#include <stdio.h>
#include "ir/ir_closure.h"
#include "ir/ir.h"

/* Does instruction i (at pc) write register reg? (lopcodes.c's A mode,
** as Lua's findsetreg reads it.) */
static int writes_reg(uint32_t i, int reg) {
  int op = KBC_OP(i), a = KBC_A(i);
  switch (op) {
  case KBC_LOADNIL: return a <= reg && reg <= a + KBC_B(i);
  case KBC_TFORCALL: return reg >= a + 2;
  case KBC_CALL: case KBC_TAILCALL: return reg >= a;
  case KBC_JMP:
  case KBC_SETUPVAL: case KBC_SETTABUP: case KBC_SETTABLE: case KBC_SETI: case KBC_SETFIELD:
  case KBC_MMBIN: case KBC_MMBINI: case KBC_MMBINK: case KBC_CLOSE: case KBC_TBC:
  case KBC_EQ: case KBC_LT: case KBC_LE: case KBC_EQK: case KBC_EQI: case KBC_LTI:
  case KBC_LEI: case KBC_GTI: case KBC_GEI: case KBC_TEST: case KBC_RETURN: case KBC_RETURN0:
  case KBC_RETURN1: case KBC_TFORPREP: case KBC_SETLIST: case KBC_EXTRAARG:
    return 0;
  default: return reg == a;
  }
}

/* Does p (or a literal nested in it) assign its upvalue u? */
static int sets_upvalue(const KbcProto *p, int u);
int kcl_sets_upvalue(const KbcProto *p, int u) { return sets_upvalue(p, u); }
static int sets_upvalue(const KbcProto *p, int u) {
  for (int pc = 0; pc < p->ncode; pc++) {
    uint32_t i = p->code[pc];
    if (KBC_OP(i) == KBC_SETUPVAL && KBC_B(i) == u) return 1;
    if (KBC_OP(i) == KBC_CLOSURE) {
      const KbcProto *c = p->p[KBC_BX(i)];
      for (int j = 0; j < c->nup; j++)
        if (!c->up[j].instack && c->up[j].idx == u && sets_upvalue(c, j)) return 1;
    }
  }
  return 0;
}

/* The local variable held in register reg at pc (Lua's rule: the n-th
** active local is register n), or NULL. */
static const KbcLocVar *local_at(const KbcProto *p, int reg, int pc) {
  int n = 0;
  for (int i = 0; i < p->nlocvars; i++) {
    const KbcLocVar *lv = &p->locvars[i];
    if (lv->startpc <= pc && pc < lv->endpc) {
      if (n == reg) return lv;
      n++;
    }
  }
  return NULL;
}

static int line_of(const KbcProto *p, int pc) { return p->lines ? p->lines[pc] : -1; }

/* Nothing between from and to (exclusive) can run Lua code or repeat:
** no call, jump, loop or return (tables and their metamethods are refused
** in compiled code for now). */
static int straight(const KbcProto *p, int from, int to) {
  for (int pc = from + 1; pc < to; pc++)
    switch (KBC_OP(p->code[pc])) {
    case KBC_CALL: case KBC_TAILCALL: case KBC_JMP: case KBC_FORPREP: case KBC_FORLOOP:
    case KBC_TFORPREP: case KBC_TFORCALL: case KBC_TFORLOOP: case KBC_RETURN:
    case KBC_RETURN0: case KBC_RETURN1:
      return 0;
    default: break;
    }
  return 1;
}

static int late_literal(const KbcProto *p, int sitepc, int u);

int kcl_late_literal(const KbcProto *p, int sitepc, int u) {
  const KbcProto *c = p->p[KBC_BX(p->code[sitepc])];
  /* (a local in a cell is no compile-time value: the cell is captured) */
  if (c->up[u].instack && c->up[u].idx != KBC_A(p->code[sitepc]) &&
      kcl_boxed_at(p, c->up[u].idx, sitepc) >= 0)
    return -1;
  return late_literal(p, sitepc, u);
}

static int late_literal(const KbcProto *p, int sitepc, int u) {
  const KbcProto *c = p->p[KBC_BX(p->code[sitepc])];
  if (!c->up[u].instack || c->up[u].idx == KBC_A(p->code[sitepc])) return -1;
  int reg = c->up[u].idx;
  const KbcLocVar *lv = local_at(p, reg, sitepc);
  if (lv == NULL) return -1;
  int late = -1, lit = -1;
  for (int pc = sitepc + 1; pc < lv->endpc && pc < p->ncode; pc++)
    if (writes_reg(p->code[pc], reg)) {
      uint32_t i = p->code[pc];
      if (late >= 0) return -1;
      late = pc;
      if (KBC_OP(i) == KBC_CLOSURE) lit = pc;
      /* `function odd(n) ... end` on a declared local: a literal made in a
      ** temporary, then moved */
      else if (KBC_OP(i) == KBC_MOVE && KBC_OP(p->code[pc - 1]) == KBC_CLOSURE &&
               KBC_A(p->code[pc - 1]) == KBC_B(i)) lit = pc - 1;
      else return -1;
    }
  return lit >= 0 && straight(p, sitepc, lit) ? lit : -1;
}

/* Why upvalue u of the literal made at sitepc cannot take its captured
** local by value (that local assigned after the literal is made, or by a
** literal), in buf; NULL when it can. */
static const char *upvalue_problem(const KbcProto *p, int sitepc, int u, char *buf, size_t n) {
  uint32_t si = p->code[sitepc];
  const KbcProto *c = p->p[KBC_BX(si)];
  int reg = c->up[u].idx, self = reg == KBC_A(si);
  const char *name = c->up[u].name ? c->up[u].name : "?";
  /* `local function f`: f's scope starts after the literal */
  const KbcLocVar *lv = local_at(p, reg, self ? sitepc + 1 : sitepc);
  if (lv == NULL) {
    snprintf(buf, n, "cannot compile this function literal: its upvalue '%s' needs debug "
             "information (the chunk is stripped)", name);
    return buf;
  }
  int late = late_literal(p, sitepc, u);
  for (int pc = lv->startpc; pc < lv->endpc && pc < p->ncode; pc++) {
    uint32_t i = p->code[pc];
    /* a write before the literal is made is the value it captures (a
    ** loop cannot carry the literal to a later write: it does not
    ** escape, and a local holding it across iterations does not type) */
    if (pc > sitepc && (late < 0 || (pc != late && pc != late + 1)) && writes_reg(i, reg)) {
      snprintf(buf, n, "cannot compile this function literal: it captures local '%s', which "
               "is assigned again at line %d (a local function that captures itself and is "
               "assigned again is not supported in compiled code: assign another local)",
               name, line_of(p, pc));
      return buf;
    }
    if (KBC_OP(i) == KBC_CLOSURE) {
      const KbcProto *o = p->p[KBC_BX(i)];
      for (int j = 0; j < o->nup; j++)
        if (o->up[j].instack && o->up[j].idx == reg && sets_upvalue(o, j)) {
          snprintf(buf, n, "cannot compile this function literal: it captures local '%s', "
                   "which the function literal at line %d assigns (a local function that "
                   "captures itself and is assigned by a closure is not supported in compiled "
                   "code: assign another local)", name, o->linedefined);
          return buf;
        }
    }
  }
  return NULL;
}

/* ---- Shared, assigned captured locals: cells ------------------------------
**
** A local that a literal captures (other than `local function f` capturing
** f) and that is assigned after the literal is made, or by a literal, is
** one variable shared by the function and its closures. The IR keeps it in
** a cell (KIR_NEWCELL where its scope begins: a fresh cell each time, so a
** loop's local is one variable per iteration; KIR_GETCELL / KIR_SETCELL for
** each read and write in its scope, ir_build.c). The cell is a Lua closure
** whose one upvalue is the variable (runtime/luacell.c), so that a literal
** that becomes a real Lua closure shares it with lua_upvaluejoin, and a
** literal compiled with its caller takes the cell as its captured value and
** reads and writes through it (its upvalue is a "cell upvalue"). */

/* The register of local variable lvi (Lua's rule: the n-th active local is
** register n). */
static int reg_of(const KbcProto *p, int lvi) {
  const KbcLocVar *lv = &p->locvars[lvi];
  int n = 0;
  for (int i = 0; i < lvi; i++)
    if (p->locvars[i].startpc <= lv->startpc && lv->startpc < p->locvars[i].endpc) n++;
  return n;
}

int kcl_boxed_local(const KbcProto *p, int lvi) {
  if (lvi < 0 || lvi >= p->nlocvars) return 0;
  const KbcLocVar *lv = &p->locvars[lvi];
  int reg = reg_of(p, lvi);
  char buf[300];
  for (int pc = lv->startpc; pc < lv->endpc && pc < p->ncode; pc++) {
    uint32_t i = p->code[pc];
    if (KBC_OP(i) != KBC_CLOSURE) continue;
    const KbcProto *c = p->p[KBC_BX(i)];
    if (KBC_A(i) == reg) continue;   /* `f = function` on f itself (`local function f`) */
    for (int u = 0; u < c->nup; u++)
      if (c->up[u].instack && c->up[u].idx == reg && upvalue_problem(p, pc, u, buf, sizeof buf))
        return 1;
  }
  return 0;
}

int kcl_boxed_at(const KbcProto *p, int reg, int pc) {
  int n = 0;
  for (int i = 0; i < p->nlocvars; i++) {
    const KbcLocVar *lv = &p->locvars[i];
    if (lv->startpc <= pc && pc < lv->endpc) {
      if (n == reg) return kcl_boxed_local(p, i) ? i : -1;
      n++;
    }
  }
  return -1;
}

int kcl_cell_upvalue(const KbcProto *p, int u) {
  for (int depth = 0; p->parent != NULL && depth < 200; depth++) {
    const KbcProto *q = p->parent;
    if (u < 0 || u >= p->nup) return 0;
    int idx = -1;
    for (int k = 0; k < q->np; k++) if (q->p[k] == p) idx = k;
    int site = -1;
    for (int pc = 0; pc < q->ncode && site < 0; pc++)
      if (KBC_OP(q->code[pc]) == KBC_CLOSURE && KBC_BX(q->code[pc]) == idx) site = pc;
    if (site < 0) return 0;
    if (p->up[u].instack)
      return p->up[u].idx != KBC_A(q->code[site]) && kcl_boxed_at(q, p->up[u].idx, site) >= 0;
    u = p->up[u].idx;   /* the maker's own upvalue: a cell if it is one */
    p = q;
  }
  return 0;
}

const char *kcl_capture_problem(const KbcProto *p, int sitepc, char *buf, size_t n) {
  uint32_t si = p->code[sitepc];
  const KbcProto *c = p->p[KBC_BX(si)];
  for (int u = 0; u < c->nup; u++) {
    if (!c->up[u].instack) continue;
    int reg = c->up[u].idx;
    if (reg != KBC_A(si) && kcl_boxed_at(p, reg, sitepc) >= 0) continue;   /* a cell */
    const char *why = upvalue_problem(p, sitepc, u, buf, n);
    if (why) return why;
  }
  return NULL;
}

/* ---- Calls of escaping literals where they are made ---------------------
**
** A literal that escapes is a real Lua closure (ir_escape.c), but where the
** call's callee is the literal itself (`local function f` stored in a
** table and also called by the function that made it), the closure's
** upvalues are exactly what compiled code would pass it: locals that keep
** one value, cells, and the root function's own upvalues (joined). So the
** call goes to its compiled code directly, as a literal that does not
** escape, with those values; not through lua_call. Left out: a literal
** that captures itself or a literal made after it (those are passed as
** compile-time values, which an escaping literal has no form for), a
** generic for's iterator, and a literal left to the interpreter
** (kcl_left_to_interpreter: called through its value, so that the callee
** policy runs it). */
int kcl_direct_call(const KbcProto *p, const struct KirInsn *call) {
  const KirInsn *fn = call->args[0];
  if (fn->op != KIR_CLOSURE || (call->flags & KIR_F_TFOR) || fn->pc < 0 || fn->pc >= p->ncode)
    return 0;
  const KbcProto *c = p->p[fn->aux];
  if (kcl_left_to_interpreter(p, fn)) return 0;   /* through its value: the callee policy */
  for (int u = 0; u < c->nup; u++)
    if (c->up[u].instack && (c->up[u].idx == KBC_A(p->code[fn->pc]) ||
                             kcl_late_literal(p, fn->pc, u) >= 0))
      return 0;
  return 1;
}
