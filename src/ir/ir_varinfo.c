/*
** ir_varinfo.c: the names Lua's run-time errors give values, as ldebug.c's
** getobjname finds them from the bytecode: " (local 'x')", " (global
** 'g')", " (field 'f')", " (upvalue 'u')" ... in "attempt to ... a nil
** value (local 'x')"; and the name luaL_argerror gives the function a call
** calls ("bad argument #1 to 'f'"). Shared by the typer (errors it finds
** when compiling) and the code generator (errors raised when code runs).
*/
#include <stdio.h>
#include <string.h>
#include "ir/ir_varinfo.h"
#include "ir/ir_builtins.h"
#include "frontend/bytecode.h"

/* Lua's findsetreg (ldebug.c): the instruction before lastpc that last set
** register reg, or -1 (set under a jump: unknown). */
static int findsetreg(const KbcProto *p, int lastpc, int reg) {
  int setreg = -1, jmptarget = 0;
  for (int pc = 0; pc < lastpc; pc++) {
    uint32_t i = p->code[pc];
    int op = KBC_OP(i), a = KBC_A(i), change;
    switch (op) {
    case KBC_LOADNIL: change = a <= reg && reg <= a + KBC_B(i); break;
    case KBC_TFORCALL: change = reg >= a + 2; break;
    case KBC_CALL: case KBC_TAILCALL: change = reg >= a; break;
    case KBC_JMP: {
      int dest = pc + 1 + KBC_SJ(i);
      if (dest <= lastpc && dest > jmptarget) jmptarget = dest;
      change = 0;
      break;
    }
    /* the instructions that do not set register A (lopcodes.c's A mode) */
    case KBC_SETUPVAL: case KBC_SETTABUP: case KBC_SETTABLE: case KBC_SETI: case KBC_SETFIELD:
    case KBC_MMBIN: case KBC_MMBINI: case KBC_MMBINK: case KBC_CLOSE: case KBC_TBC:
    case KBC_EQ: case KBC_LT: case KBC_LE: case KBC_EQK: case KBC_EQI: case KBC_LTI:
    case KBC_LEI: case KBC_GTI: case KBC_GEI: case KBC_TEST: case KBC_RETURN: case KBC_RETURN0:
    case KBC_RETURN1: case KBC_TFORPREP: case KBC_SETLIST: case KBC_EXTRAARG:
      change = 0;
      break;
    default: change = reg == a; break;
    }
    if (change) setreg = pc < jmptarget ? -1 : pc;
  }
  return setreg;
}

/* The local a temporary register was copied from (a MOVE, as Lua's
** getobjname follows it: `x(a)` calls a copy of x), or NULL. */
static const char *moved_local(const KbcProto *p, int pc, int reg) {
  for (int depth = 0; depth < 8; depth++) {
    int at = findsetreg(p, pc, reg);
    if (at < 0 || KBC_OP(p->code[at]) != KBC_MOVE) return NULL;
    int b = KBC_B(p->code[at]);
    if (b >= KBC_A(p->code[at])) return NULL;
    const char *name = kbc_localname(p, b, at);
    if (name) return name;
    pc = at;
    reg = b;
  }
  return NULL;
}

static KirVar var(KirVarKind kind, const char *name) {
  KirVar x = { kind, name };
  return x;
}

/* Lua's description of where a value came from: a local's name (debug
** info), a global or an upvalue. */
KirVar kir_varinfo(const KtySpec *sp, const KirInsn *use, int argi) {
  KirVar none = var(KIR_VAR_NONE, NULL);
  if (use == NULL || argi >= use->nargs) return none;
  const KirInsn *v = use->args[argi];
  const KbcProto *p = sp->ir->proto;
  /* the register the instruction reads it from, a local there? (Lua's
  ** getobjname: the local's name first, then what loaded the register;
  ** a local holding a constant is named, a constant operand is not) */
  if (use->pc >= 0 && use->pc < p->ncode) {
    uint32_t i = p->code[use->pc];
    const KbcOpInfo *oi = &kbc_opinfo[KBC_OP(i)];
    int reg = -1;
    if (oi->b == KBC_R && oi->c == KBC_R) reg = argi == 0 ? KBC_B(i) : KBC_C(i);
    else if (oi->b == KBC_R) reg = KBC_B(i);
    /* a constant v (a local holding one) was read from register reg unless
    ** it is the instruction's constant or immediate operand: ADDK's or
    ** SHRI's second, SHLI's first (sC << R[B]) */
    if (KIR_ISCONST(v->op) && oi->c != KBC_R && (argi == 0) == (KBC_OP(i) == KBC_SHLI) &&
        KBC_OP(i) != KBC_CONCAT) return none;
    if (KBC_OP(i) == KBC_CONCAT) reg = KBC_A(i) + argi;   /* its operands R[A] .. R[A+n-1] */
    /* the function a call calls, the table a store writes: register A */
    int op = KBC_OP(i);
    if (op == KBC_CALL || op == KBC_TAILCALL || op == KBC_SETTABLE || op == KBC_SETI ||
        op == KBC_SETFIELD)
      reg = argi == 0 ? KBC_A(i) : -1;
    const char *name = reg >= 0 ? kbc_localname(p, reg, use->pc) : NULL;
    if (name == NULL && reg >= 0) name = moved_local(p, use->pc, reg);
    if (name) return var(KIR_VAR_LOCAL, name);
    if (KIR_ISCONST(v->op)) return none;
    if (reg >= 0 && v->op != KIR_GETFIELD && v->op != KIR_INDEX && v->op != KIR_GETUPVAL &&
        !(v->op == KIR_GETCELL && v->args[0]->op == KIR_GETUPVAL))
      return none;
  } else if (KIR_ISCONST(v->op)) {
    return none;
  } else if (v->name) {
    return var(KIR_VAR_LOCAL, v->name);
  }
  switch (v->op) {
  case KIR_GETFIELD:
    if (v->args[0]->op == KIR_GETUPVAL && v->args[0]->aux < p->nup && p->up[v->args[0]->aux].name &&
        strcmp(p->up[v->args[0]->aux].name, "_ENV") == 0)
      return var(KIR_VAR_GLOBAL, v->k.str.s);
    if (v->pc >= 0 && v->pc < p->ncode && KBC_OP(p->code[v->pc]) == KBC_GETTABLE &&
        kbc_localname(p, KBC_C(p->code[v->pc]), v->pc))
      return var(KIR_VAR_ANYKEY, "?");   /* `local k = "x"; t[k]`: Lua names no key */
    if (v->pc >= 0 && v->pc < p->ncode && KBC_OP(p->code[v->pc]) == KBC_SELF)
      return var(KIR_VAR_METHOD, v->k.str.s);   /* o:m(): getobjname's OP_SELF */
    return var(KIR_VAR_FIELD, v->k.str.s);
  case KIR_INDEX:
    /* Lua names x[k] by its opcode: GETI for small constant keys */
    if (v->pc >= 0 && v->pc < p->ncode && (p->code[v->pc] & 0x7F) == KBC_GETI)
      return var(KIR_VAR_INTKEY, "integer index");
    return var(KIR_VAR_ANYKEY, "?");
  case KIR_GETCELL:   /* a cell upvalue's variable (ir_closure.c) */
    if (v->args[0]->op != KIR_GETUPVAL) break;
    v = v->args[0];
    /* fall through */
  case KIR_GETUPVAL:
    if (v->aux < p->nup && p->up[v->aux].name) return var(KIR_VAR_UPVALUE, p->up[v->aux].name);
    break;
  default: break;
  }
  return none;
}

/* The one formatter: Lua's words for each kind (ldebug.c varinfo). */
size_t kir_var_text(KirVar x, char *buf, size_t n) {
  static const char *const words[] = { NULL, "local", "global", "field", "field", "field",
                                       "method", "upvalue" };
  if (x.kind == KIR_VAR_NONE || x.name == NULL) {
    if (n > 0) buf[0] = '\0';
    return 0;
  }
  return (size_t)snprintf(buf, n, " (%s '%s')", words[x.kind], x.name);
}

char *kir_var_text_dup(Arena *A, KirVar x) {
  size_t len = kir_var_text(x, NULL, 0);
  char *s = ka_alloc(A, len + 1);
  if (s) kir_var_text(x, s, len + 1);
  return s;
}

/* The name luaL_argerror gives the function call v calls, built-in id, in
** "bad argument #1 to 'name'": the name the call site gives it (getobjname
** on the called register: 'abs' for math.abs(x), 'f' for a local f,
** 'integer index' for t[1](x), '?' for t[k](x)); where it has none (a
** function a call returned), the library's global name, as lauxlib.c's
** pushglobalfuncname gives it ('math.abs'). */
const char *kir_argerror_name(const KtySpec *sp, const KirInsn *v, const char *libname) {
  KirVar x = kir_varinfo(sp, v, 0);
  if (x.kind == KIR_VAR_METHOD) {   /* (a:fill(v): the method's own words) */
    const char *dot = strrchr(libname, '.');
    return dot ? dot + 1 : libname;
  }
  return x.kind != KIR_VAR_NONE ? x.name : libname;
}
