/*
** cg_luaview.c: native views of the kjit arrays that compiled code
** indexes in its loops as Lua values (issue 29: numeric code over tables):
**
**     for i = 1, n do s = s + self.data[i] end      -- data: a kjit array
**     local d = e.pos; for i = 1, #d do d[i] = d[i] + dt * v[i] end
**
** An array read from a table is a Lua value: t[i] on it (cg_lua.c
** cg_lua_index, cg_lua_store) misses the inline path of tables, and its
** helper found the array and read or wrote the element without the
** metamethod call (luavalue.c kjit_lv_geti), but still a call per
** element. A view keeps what an
** access needs: the elements' address and the length of a 1-D kjit array
** of f64 or i64 (runtime/luavalue.c kjit_lv_arrview; anything else has no
** view: the helpers do what the array's metamethods do). Where the inline
** path of tables misses and the value is such an array, the access then
** checks the index against the length and loads or stores the element
** inline (a store with the array's __newindex rules: an integer into f64
** converted, a float into i64 left to the helper, which raises or checks
** as Lua does). Tables' own inline path is unchanged: it comes first, so
** table code pays nothing for this.
**
** When a view is right (design decision): a view is keyed by the value it
** was made for, its userdata's address (read from the value's stack slot,
** host/lua_stack.h, while kls_on), and is made again when an access finds
** another value there. An array's address and length never change, but
** its userdata can be collected and another made at its address, which
** can only happen in a call (an allocation): so every call compiled code
** makes (cg_func.c cg_ccall and a compiled callee's call: every helper,
** every Lua call, the interrupt poll; not the math library: lview_quiet)
** forgets all views (vobj set to 1, no object's address), and the next
** access makes its view again (one call that reads the buffer's header).
** The value itself stays in its slot, so the buffer is alive while
** compiled code indexes it. Views live in the C frame (volatile: see
** vload), read only on the miss path.
**
** Which values get one: a Lua value indexed with an integer key inside a
** loop, where the value is the same on every iteration of the access's
** innermost loop (defined outside it), or is read by a field access
** (`self.data`: the same array each time as a rule). At most CG_MAXVIEWS
** per function. None at all in a process that has not made an f64 or i64
** array before the compile (host/buffer.h kb_viewable_made): then what a
** table holds is no such array as a rule (an array made later still takes
** the helper, which does what its metamethods do), and each view's blocks
** (five an access) cost compile time for nothing: SciMark SOR's kernel,
** over rows of plain tables, compiled in 43 ms with them, 34 without.
*/
#include <stdlib.h>
#include <string.h>
#include "codegen/cg.h"
#include "codegen/kcg.h"
#include "runtime/luavalue.h"
#include "host/lua_stack.h"
#include "host/buffer.h"

#define CG_MAXVIEWS 8

/* The views' loads and stores are volatile: kept in the frame, not in
** registers (mem2reg would carry each view through every block of the
** loop as a phi, and the forgetting after each call with it: sor's inner
** loop took 4% more instructions that way, its views never used). */
static LLVMValueRef vload(CG *G, LLVMTypeRef ty, LLVMValueRef p) {
  LLVMValueRef l = LLVMBuildLoad2(G->B, ty, p, "");
  LLVMSetVolatile(l, 1);
  return l;
}
static void vstore(CG *G, LLVMValueRef v, LLVMValueRef p) { LLVMSetVolatile(LLVMBuildStore(G->B, v, p), 1); }

typedef struct CgLViewSlots {
  LLVMValueRef fn;                     /* the function they belong to */
  LLVMValueRef vobj, akind, adata, alen;   /* allocas */
  LLVMValueRef info;                   /* [2] i64: kjit_lv_arrview's answer */
} CgLViewSlots;

static int viewable(const KtySpec *sp, const KirInsn *v) {
  if (v->op != KIR_INDEX && v->op != KIR_SETINDEX) return 0;
  const KirInsn *o = v->args[0];
  if (sp->types[o->id].kind != T_LUA || sp->types[o->id].sub == KTY_LUA_TABLE ||
      v->block->loop == NULL)
    return 0;
  int k = sp->types[v->args[1]->id].kind;
  if (k != T_INT && k != T_LUA && k != T_NUMBER) return 0;
  if (o->op == KIR_GETFIELD) return 1;
  return !kir_inloop(v->block->loop, o->block);
}

void cg_lview_begin(CG *G, KtySpec *sp) {
  G->nlviews = 0;
  G->lviews = NULL;
  G->lviewof = NULL;
  if (getenv("KJIT_NO_ARRAY_VIEWS")) return;   /* (measuring: the helpers' path) */
  if (!__atomic_load_n(&kb_viewable_made, __ATOMIC_RELAXED)) return;   /* (see "Which values") */
  KirFunc *f = sp->ir;
  for (int b = 0; b < f->nblocks; b++) {
    if (!sp->live[b]) continue;
    KirBlock *blk = f->blocks[b];
    for (int i = 0; i < blk->ninsns && G->nlviews < CG_MAXVIEWS; i++) {
      KirInsn *v = blk->insns[i];
      if (!viewable(sp, v)) continue;
      if (G->lviewof == NULL) {
        G->lviewof = cg_zalloc(G, sizeof(int) * (size_t)f->ninsns);
        for (int j = 0; j < f->ninsns; j++) G->lviewof[j] = -1;
        G->lviews = cg_zalloc(G, sizeof(CgLViewSlots) * CG_MAXVIEWS);
      }
      if (G->lviewof[v->args[0]->id] >= 0) continue;
      CgLViewSlots *s = &((CgLViewSlots *)G->lviews)[G->nlviews];
      G->lviewof[v->args[0]->id] = G->nlviews++;
      s->fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(G->B));
      s->vobj = cg_alloca(G, G->i64, "lvobj");
      s->akind = cg_alloca(G, G->i32, "lvakind");
      s->adata = cg_alloca(G, G->i8p, "lvadata");
      s->alen = cg_alloca(G, G->i64, "lvalen");
      s->info = cg_alloca(G, LLVMArrayType(G->i64, 2), "lvinfo");
      vstore(G, cg_i64(G, 1), s->vobj);   /* (no view yet) */
    }
  }
}

/* After a call: every view forgotten (see the head). */
void cg_lview_forget(CG *G) {
  if (G->nlviews == 0 || G->lview_quiet) return;
  LLVMBasicBlockRef here = LLVMGetInsertBlock(G->B);
  CgLViewSlots *s = G->lviews;
  if (here == NULL || LLVMGetBasicBlockParent(here) != s[0].fn) return;
  for (int i = 0; i < G->nlviews; i++) vstore(G, cg_i64(G, 1), s[i].vobj);
}

static LLVMValueRef fld(CG *G, LLVMValueRef base, int off, LLVMTypeRef ty) {
  LLVMValueRef o = cg_i64(G, off);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(G->B, G->i8, base, &o, 1, "");
  return LLVMBuildLoad2(G->B, ty, LLVMBuildPointerCast(G->B, p, LLVMPointerType(ty, 0), ""), "");
}

/* Whether obj has a view here (V->slots set; V->ob given by the caller). */
int cg_lview_find(CG *G, const KirInsn *obj, CgLView *V) {
  if (G->nlviews == 0 || G->lviewof == NULL || G->lviewof[obj->id] < 0) return 0;
  CgLViewSlots *s = &((CgLViewSlots *)G->lviews)[G->lviewof[obj->id]];
  if (LLVMGetBasicBlockParent(LLVMGetInsertBlock(G->B)) != s->fn) return 0;
  V->slots = G->lviewof[obj->id];
  return 1;
}

/* The view of V's value, made first where the one kept is of another
** value; to `none` (the helper) when the value is no kjit array. The
** builder is left where the view's fields (out) are read. The value's
** identity is its userdata's address, read from its slot (host/lua_stack.h:
** only while kls_on, the probe's agreement with the running Lua). */
void cg_lview_at(CG *G, const CgLView *V, CgLView *out, LLVMBasicBlockRef none) {
  CgLViewSlots *s = &((CgLViewSlots *)G->lviews)[V->slots];
  const KltLayout *y = V->y;
  LLVMBasicBlockRef rd = cg_bb(G, "lvread"), ud = cg_bb(G, "lvud"), set = cg_bb(G, "lvset"),
                    use = cg_bb(G, "lview");
  LLVMValueRef kon = LLVMGetNamedGlobal(G->M, "kls_on");
  if (kon == NULL) kon = LLVMAddGlobal(G->M, G->i32, "kls_on");
  LLVMValueRef ok = LLVMBuildICmp(G->B, LLVMIntNE, LLVMBuildLoad2(G->B, G->i32, kon, ""), cg_i32(G, 0), "");
  if (V->tag)   /* a number: no array */
    ok = LLVMBuildAnd(G->B, ok, LLVMBuildICmp(G->B, LLVMIntEQ, V->tag, LLVMConstInt(G->i8, 0, 0), ""), "");
  LLVMBuildCondBr(G->B, ok, rd, none);
  LLVMPositionBuilderAtEnd(G->B, rd);
  LLVMValueRef ci = fld(G, G->luaL, y->s_ci, G->i8p);
  LLVMValueRef fn = fld(G, ci, y->ci_func, G->i8p);
  LLVMValueRef o = LLVMBuildMul(G->B, LLVMBuildSExt(G->B, V->slot, G->i64, ""), cg_i64(G, y->sv_size), "");
  LLVMValueRef sv = LLVMBuildInBoundsGEP2(G->B, G->i8, fn, &o, 1, "");
  LLVMValueRef tt = fld(G, sv, y->tv_tt, G->i8);
  LLVMValueRef gc = fld(G, sv, 0, G->i64);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, tt, LLVMConstInt(G->i8, KLS_UDATA, 0), ""), ud, none);
  LLVMPositionBuilderAtEnd(G->B, ud);
  LLVMValueRef vo = vload(G, G->i64, s->vobj);
  LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, vo, gc, ""), use, set);
  /* the helper reads the buffer's header (no metamethod, no allocation:
  ** nothing to forget) */
  LLVMPositionBuilderAtEnd(G->B, set);
  LLVMValueRef ip = LLVMBuildPointerCast(G->B, s->info, LLVMPointerType(G->i64, 0), "");
  LLVMTypeRef ps[3] = { G->i8p, G->i32, LLVMPointerType(G->i64, 0) };
  LLVMValueRef as[3] = { G->luaL, V->slot, ip };
  G->lview_quiet++;
  LLVMValueRef kind = cg_ccall(G, "kjit_lv_arrview", G->i32, ps, as, 3);
  G->lview_quiet--;
  LLVMValueRef one = cg_i64(G, 1);
  vstore(G, kind, s->akind);
  vstore(G, LLVMBuildIntToPtr(G->B, LLVMBuildLoad2(G->B, G->i64, ip, ""), G->i8p, ""), s->adata);
  vstore(G, LLVMBuildLoad2(G->B, G->i64, LLVMBuildInBoundsGEP2(G->B, G->i64, ip, &one, 1, ""), ""), s->alen);
  vstore(G, gc, s->vobj);
  LLVMBuildBr(G->B, use);
  LLVMPositionBuilderAtEnd(G->B, use);
  *out = *V;
  out->akind = vload(G, G->i32, s->akind);
  out->adata = vload(G, G->i8p, s->adata);
  out->alen = vload(G, G->i64, s->alen);
}
