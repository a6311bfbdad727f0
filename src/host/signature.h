/*
** host/signature.h: the one signature grammar of kjit's host APIs.
**
**   f:compile("f64(f32[:], i64)")          kjit.jit        (KSIG_JIT)
**   k:compile("void(f32, f32[:, ::1])")    cuda.jit        (KSIG_KERNEL)
**   kjit.vectorize(fn, "f64(f64, f64)")    the ufuncs      (KSIG_UFUNC)
**   kjit.guvectorize(fn, sig, "(n),(n)->()")  its layout   (ksig_parse_layout)
**
** Grammar (blanks allowed between tokens):
**   signature := [name] '(' [type {',' type}] ')'
**              | type {',' type}        (kernels only: no result, no parentheses)
**   type      := name ['[' dim {',' dim} ']']
**   dim       := ':' | '::1'            ('::1' marks the contiguous dimension:
**                                        last = C layout, first = F layout)
**   name      := letter {letter | digit | '_'}
**
** A name is a dtype (i8 ... f64, bool: kjit.dtypes), one of its aliases
** (int32, int64, float32, float64; boolean, b1 for bool), or a scalar word
** (int, float, double, bool, boolean, b1, void, none). What each API accepts where is decided by
** ksig_types / ksig_ufunc_check: the parser only reads.
**
** Every error is one line: "cannot read argument #2: 'f16' is not a type
** (...)", "missing ')' at column 9" ... The APIs put their own prefix in
** front ("bad signature '...': ", "bad kernel signature '...': ",
** "malformed signature '...': ").
*/
#ifndef KJIT_HOST_SIGNATURE_H
#define KJIT_HOST_SIGNATURE_H
#include <stddef.h>
#include "common/compile.h"

#define KSIG_NAMELEN 16
/* numba-cuda's xoroshiro128p_type as read (the name is longer than others) */
#define KSIG_XORO "xoroshiro128p"

typedef struct KSigItem {
  char name[KSIG_NAMELEN];  /* as written, e.g. "float32" ("" if absent) */
  int dtype;                /* kjit_dtype of name or its alias; -1 if none */
  int ndim;                 /* 0: a scalar (no brackets); else 1..KJIT_MAXDIMS */
  char layout;              /* arrays: 'A' (any), 'C' or 'F' (a '::1' dim) */
  int column;               /* 1-based column of the name, for messages */
} KSigItem;

typedef struct KSig {
  int has_ret;              /* a result name was written before '(' */
  KSigItem ret;
  int nargs;
  KSigItem args[KJIT_MAXARGS];
} KSig;

/* Which API's rules apply. */
typedef enum KSigApi { KSIG_JIT, KSIG_KERNEL, KSIG_UFUNC } KSigApi;

/* Reads text into out. Returns 0, or -1 with a message in err (no prefix).
** Kernels (api KSIG_KERNEL) may leave out the parentheses: "f32, f32[:]". */
int ksig_parse(const char *text, KSigApi api, KSig *out, char *err, size_t errlen);

/* The argument types of a parsed signature for kjit.jit or cuda.jit:
**   kjit.jit:  i64/int64/int, f64/float64/float/double, bool/boolean/b1
**              (the Lua values a call passes), arrays of any dtype
**   cuda.jit:  also f32/float32 scalars, and every integer dtype (a Lua
**              integer); arrays of any dtype
** Fills args[0..nargs) and, when the result is a type, *ret (ret->kind =
** T_NIL for none: "void", "none" or no name) and *has_ret_type. Returns
** 0 or -1 with err. Kernels must return nothing. */
int ksig_types(const KSig *s, KSigApi api, Type *args, Type *ret, int *has_ret_type,
               char *err, size_t errlen);

/* ufunc signatures: every argument and the result (if any, other than
** "void") is a dtype; aliases are read as their dtype. Returns 0 or -1. */
int ksig_ufunc_check(const KSig *s, char *err, size_t errlen);

/* ---- guvectorize layouts: "(n),()->(n)" ------------------------------------------- */

#define KSIG_MAXGROUPS KJIT_MAXARGS
#define KSIG_MAXCORE KJIT_MAXDIMS

typedef struct KSigGroup {
  int n;                                 /* core dimensions */
  char names[KSIG_MAXCORE][KSIG_NAMELEN];
} KSigGroup;

typedef struct KSigLayout {
  int nins, nouts;
  KSigGroup ins[KSIG_MAXGROUPS], outs[KSIG_MAXGROUPS];
} KSigLayout;

/* Reads a layout. Returns 0, or -1 with the whole message in err
** ("malformed layout '(n)': no '->'" ...). */
int ksig_parse_layout(const char *text, KSigLayout *out, char *err, size_t errlen);

/* The canonical dtype name of a dtype name or alias ("float32" -> "f32"),
** or NULL. */
const char *ksig_dtype_name(const char *name);

/* Pushes std.signature and std.layout, the Lua side's readers (lkjit.c
** puts them in the private table the Lua parts get):
**   signature(text) -> {text =, ret =, args = {{dtype =, dims =}, ...}}
**                      (ufunc rules: ksig_ufunc_check; ret: the dtype, or
**                      the name as written, "" if none)
**   layout(text) -> {text =, ins = {{"n"}, {}}, outs = {{"n"}}}
** each returning nil and the message on a malformed text. */
void ksig_push_lua(lua_State *L, int table_idx);

#endif
