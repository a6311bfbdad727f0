/*
** ir_varinfo.h: the names Lua's run-time errors give values and called
** functions (ir_varinfo.c).
*/
#ifndef KJIT_IR_VARINFO_H
#define KJIT_IR_VARINFO_H

#include <stddef.h>
#include "ir/ir_type.h"

/* Lua's description of operand argi of use, where it came from: " (local
** 'x')", " (global 'g')", " (field 'f')", " (method 'm')", " (upvalue
** 'u')", or "" (a constant, a temporary). Written into buf as snprintf
** writes; returns its whole length (names are never cut: Lua cuts none). */
size_t kir_varinfo(const KtySpec *sp, const KirInsn *use, int argi, char *buf, size_t n);
/* The name "bad argument #i to 'name'" gives the function call v calls;
** libname ("math.abs") where the call site names none. As kir_varinfo
** writes and returns. */
size_t kir_argerror_name(const KtySpec *sp, const KirInsn *v, const char *libname, char *buf,
                         size_t n);
/* Both, whole, in arena A (NULL: out of memory). */
char *kir_varinfo_dup(Arena *A, const KtySpec *sp, const KirInsn *use, int argi);
char *kir_argerror_name_dup(Arena *A, const KtySpec *sp, const KirInsn *v, const char *libname);

#endif
