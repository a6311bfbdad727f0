/*
** host/front.c: the front half of a compile (front.h).
*/
#include "lua.h"
#include "front.h"

KSpec *kh_specialize(Session *S, int objidx, const Type *args, int nargs, int argbase) {
  lua_getiuservalue(S->L, objidx, 1);
  KFunc *f = kr_function(S, -1);
  lua_pop(S->L, 1);
  int np = f->ast->nparams;
  if (np > KJIT_MAXARGS) ks_error(S, f, f->ast->line, "too many parameters (at most %d)", KJIT_MAXARGS);
  Type pargs[KJIT_MAXARGS];
  for (int i = 0; i < np; i++) {
    pargs[i] = i < nargs ? args[i] : TY(T_NIL);
    if (pargs[i].kind == T_FUNC) {
      /* a function argument is a compile-time constant of this specialization */
      if (argbase == 0) ks_error(S, f, f->ast->line, "function arguments cannot be given in a signature");
      KConst k = ks_const_from_value(S, argbase + i);
      pargs[i] = TY(T_FUNC);
      pargs[i].ref = k.tableref;
    }
  }
  KSpec *root = kt_spec(S, f, np, pargs);
  kt_infer_all(S);
  return root;
}
