/*
** ir_fold.h: constant folding as Lua 5.4 computes it (ir_fold.c), for the
** typer.
*/
#ifndef KJIT_IR_FOLD_H
#define KJIT_IR_FOLD_H

#include "lua.h"
#include "ir/ir_type.h"
#include "ir/ir_builtins.h"

/* f as an integer when it has an exact integer value (lvm.c's F2Ieq). */
int kty_float_to_int(lua_Number f, lua_Integer *out);
/* a op b (a KIR arithmetic or bitwise op) into r; 0 when it raises or an
** operand is not a number constant. */
int kty_fold_arith(int op, KtyConst a, KtyConst b, KtyConst *r);
/* The built-in id (typing rule rule) of n constants into r; 0 when it
** raises or is not folded. */
int kty_fold_builtin(KtyRule rule, int id, const KtyConst *a, int n, KtyConst *r);
/* The cast built-in id (cuda.int32 ... cuda.float64, kjit.i32 ...) of the
** float x into r, as the interpreter casts a float. */
void kty_fold_cast(int id, lua_Number x, KtyConst *r);
/* A float truncated toward zero into [-2^63, 2^63 - 1], NaN 0. */
lua_Integer kty_sat_trunc(lua_Number x);
/* The integer cast id (cuda.int8 ... cuda.uint64) of i, wrapped to its width. */
lua_Integer kty_cast_int(int id, lua_Integer i);

#endif
