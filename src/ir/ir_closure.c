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
** that literal. Otherwise the literal is refused with the local's
** name and line and what to write instead; shared mutable cells are the
** next step (they need the cell to live where both frames can reach it).
*/
#include <stdio.h>
#include "ir/ir_closure.h"

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

int kcl_late_literal(const KbcProto *p, int sitepc, int u) {
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

const char *kcl_capture_problem(const KbcProto *p, int sitepc, char *buf, size_t n) {
  uint32_t si = p->code[sitepc];
  const KbcProto *c = p->p[KBC_BX(si)];
  int dest = KBC_A(si);
  for (int u = 0; u < c->nup; u++) {
    if (!c->up[u].instack) continue;
    int reg = c->up[u].idx, self = reg == dest;
    const char *name = c->up[u].name ? c->up[u].name : "?";
    /* `local function f`: f's scope starts after the literal */
    const KbcLocVar *lv = local_at(p, reg, self ? sitepc + 1 : sitepc);
    if (lv == NULL) {
      snprintf(buf, n, "cannot compile this function literal: its upvalue '%s' needs debug "
               "information (the chunk is stripped)", name);
      return buf;
    }
    int late = kcl_late_literal(p, sitepc, u);
    for (int pc = lv->startpc; pc < lv->endpc && pc < p->ncode; pc++) {
      uint32_t i = p->code[pc];
      /* a write before the literal is made is the value it captures (a
      ** loop cannot carry the literal to a later write: it does not
      ** escape, and a local holding it across iterations does not type) */
      if (pc > sitepc && (late < 0 || (pc != late && pc != late + 1)) && writes_reg(i, reg)) {
        snprintf(buf, n, "cannot compile this function literal: it captures local '%s', which "
                 "is assigned again at line %d (compiled closures capture locals that keep "
                 "one value: copy it into a new local before the function, or pass it as an "
                 "argument)", name, line_of(p, pc));
        return buf;
      }
      if (KBC_OP(i) == KBC_CLOSURE) {
        const KbcProto *o = p->p[KBC_BX(i)];
        for (int j = 0; j < o->nup; j++)
          if (o->up[j].instack && o->up[j].idx == reg && sets_upvalue(o, j)) {
            snprintf(buf, n, "cannot compile this function literal: it captures local '%s', "
                     "which the function literal at line %d assigns (shared, assigned "
                     "upvalues are not supported yet in compiled closures: return the new "
                     "value instead)", name, o->linedefined);
            return buf;
          }
      }
    }
  }
  return NULL;
}
