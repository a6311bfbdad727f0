/*
** ir_varinfo.h: the names Lua's run-time errors give values and called
** functions (ir_varinfo.c).
*/
#ifndef KJIT_IR_VARINFO_H
#define KJIT_IR_VARINFO_H

#include <stddef.h>
#include "ir/ir_type.h"

/* Where a value came from, as Lua's getobjname (ldebug.c) finds it from
** the bytecode: the kind of name and the name. */
typedef enum KirVarKind {
  KIR_VAR_NONE,      /* a constant, a temporary: no name */
  KIR_VAR_LOCAL,     /* local 'x' */
  KIR_VAR_GLOBAL,    /* global 'g' */
  KIR_VAR_FIELD,     /* field 'f' */
  KIR_VAR_INTKEY,    /* field 'integer index' (t[1]: GETI) */
  KIR_VAR_ANYKEY,    /* field '?' (t[k], a key Lua does not name) */
  KIR_VAR_METHOD,    /* method 'm' */
  KIR_VAR_UPVALUE    /* upvalue 'u' */
} KirVarKind;
typedef struct KirVar {
  KirVarKind kind;
  const char *name;  /* the name Lua's message quotes ("integer index", "?"
                        included), living as long as the IR; NULL for NONE */
} KirVar;

/* Where operand argi of use came from. */
KirVar kir_varinfo(const KtySpec *sp, const KirInsn *use, int argi);
/* Its text in Lua's messages: " (local 'x')", " (field '?')" ..., or ""
** for none, written as snprintf writes; returns its whole length (names
** are never cut: Lua cuts none). */
size_t kir_var_text(KirVar x, char *buf, size_t n);
/* The same, whole, in arena A (NULL: out of memory). */
char *kir_var_text_dup(Arena *A, KirVar x);
/* The name "bad argument #i to 'name'" gives the function call v calls;
** libname ("math.abs") where the call site names none. A pointer to the
** name (the IR's, or into libname). */
const char *kir_argerror_name(const KtySpec *sp, const KirInsn *v, const char *libname);

#endif
