/*
** cg_print.c: print(...) in kernels (numba-cuda's print), for every target
** through its print hook: the GPU's vprintf, the simulator's buffered
** lines (cudasim.c). Items: integers, floats (f32 printed as its f64
** value), booleans, nil and constant strings, as Lua's print writes them.
*/
#include "codegen/cg.h"
#include "ir/ir_builtins.h"

CgVal cg_print(CG *G, const KirInsn *v, CgVal *a, int n) {
  if (G->target->print == NULL)
    cg_error(G, v, "internal error: print without the target's print hook");
  int *kinds = ka_alloc(G->S->A, sizeof(int) * (size_t)(n + 1));
  LLVMValueRef *vals = ka_alloc(G->S->A, sizeof(LLVMValueRef) * (size_t)(n + 1));
  const char **strs = ka_alloc(G->S->A, sizeof(char *) * (size_t)(n + 1));
  if (kinds == NULL || vals == NULL || strs == NULL) cg_error(G, v, "not enough memory");
  for (int i = 0; i < n; i++) {
    strs[i] = NULL;
    vals[i] = NULL;
    switch (a[i].t.kind) {
    case T_INT: kinds[i] = KP_INT; vals[i] = a[i].v; break;
    case T_F32: kinds[i] = KP_NUM; vals[i] = LLVMBuildFPExt(G->B, a[i].v, G->f64, ""); break;
    case T_F64: kinds[i] = KP_NUM; vals[i] = a[i].v; break;
    case T_BOOL:
      if (a[i].v == NULL) { kinds[i] = KP_STR; strs[i] = a[i].k && a[i].k->v.b ? "true" : "false"; }
      else { kinds[i] = KP_BOOL; vals[i] = a[i].v; }
      break;
    case T_STR: kinds[i] = KP_STR; strs[i] = a[i].k ? a[i].k->str : ""; break;
    default: kinds[i] = KP_STR; strs[i] = "nil"; break;
    }
  }
  G->target->print(G, n, kinds, vals, strs);
  return cg_mk(TY(T_NIL), NULL);
}
