/*
** cg_lib.c: calls into the Lua library on the CPU (print, io.write,
** os.clock, os.time, math.random, math.randomseed) and error()/assert()
** with messages built at run time. Each call becomes one call of
** kjit_rt_lib (src/runtime/runtime_lib.c) with a recipe of i64 words on
** the stack (the format is in runtime_lib.h): the arguments pushed as Lua
** values, then the call.
**
** Strings built at run time (tostring, string.format, '..'; the typer's
** T_STR of sub KTY_STR_BUILT) have no value here: where one is used (an
** argument of print, io.write, error, assert), its IR tree is walked back
** and rebuilt in the recipe, operands first, so the string is made by Lua
** itself (lua_concat, the real tostring and string.format) exactly as the
** interpreter makes it. The operands of that tree dominate the use, so
** their values are those they had where the string was made.
*/
#include <stdio.h>
#include <string.h>
#include "codegen/cg.h"
#include "ir/ir_varinfo.h"
#include "ir/ir_builtins.h"
#include "runtime/runtime_lib.h"

typedef struct Recipe {
  LLVMValueRef *w;
  int n, cap;
  int calls;   /* KRL_CALLs in it (a library function may have side effects) */
} Recipe;

static void put(CG *G, Recipe *R, LLVMValueRef w) {
  if (R->n == R->cap) {
    int cap = R->cap ? 2 * R->cap : 32;
    LLVMValueRef *nw = ka_alloc(G->S->A, sizeof *nw * (size_t)cap);
    if (nw == NULL) cg_error(G, NULL, "not enough memory");
    if (R->n) memcpy(nw, R->w, sizeof *nw * (size_t)R->n);
    R->w = nw;
    R->cap = cap;
  }
  R->w[R->n++] = w;
}

static void putk(CG *G, Recipe *R, int64_t k) { put(G, R, cg_i64(G, k)); }

/* A constant string of len bytes (NULs included) as an i64 address. */
static LLVMValueRef str_addr(CG *G, const char *s, size_t len) {
  LLVMValueRef init = LLVMConstStringInContext(G->C, s, (unsigned)len, 0);   /* NUL added */
  LLVMValueRef g = LLVMAddGlobal(G->M, LLVMTypeOf(init), "kcg.libstr");
  LLVMSetInitializer(g, init);
  LLVMSetGlobalConstant(g, 1);
  LLVMSetLinkage(g, LLVMPrivateLinkage);
  return LLVMConstPtrToInt(g, G->i64);
}

static LLVMValueRef num_bits(CG *G, CgVal x) {   /* a float's f64 bits */
  return LLVMBuildBitCast(G->B, cg_num_to(G, x, T_F64), G->i64, "");
}

/* The op word and payload of a number (integer, float or either). */
static void put_number(CG *G, Recipe *R, CgVal x) {
  switch (x.t.kind) {
  case T_INT: putk(G, R, KRL_INT); put(G, R, x.v); return;
  case T_F64: case T_F32: putk(G, R, KRL_FLT); put(G, R, num_bits(G, x)); return;
  default: {   /* T_NUMBER */
    CgVal i = cg_number_side(G, x, 0), f = cg_number_side(G, x, 1);
    put(G, R, LLVMBuildSelect(G->B, x.isf, cg_i64(G, KRL_FLT), cg_i64(G, KRL_INT), ""));
    put(G, R, LLVMBuildSelect(G->B, x.isf, num_bits(G, f), i.v, ""));
  }
  }
}

/* A native value. */
static void put_val(CG *G, Recipe *R, CgVal x, const KirInsn *at) {
  if (x.k && x.k->kind == T_STR) {
    putk(G, R, KRL_STR);
    put(G, R, str_addr(G, x.k->str, x.k->len));
    putk(G, R, (int64_t)x.k->len);
    return;
  }
  if (x.t.kind == T_BUILTIN && x.k && kty_dtype_obj_name(x.k)) {   /* kjit.f32, the object */
    char path[32];
    snprintf(path, sizeof path, "kjit.%s", kty_dtype_obj_name(x.k));
    putk(G, R, KRL_LIBVAL);
    put(G, R, str_addr(G, path, strlen(path)));
    return;
  }
  switch (x.t.kind) {
  case T_NIL: putk(G, R, KRL_NIL); return;
  case T_BOOL:
    put(G, R, LLVMBuildSelect(G->B, x.v, cg_i64(G, KRL_TRUE), cg_i64(G, KRL_FALSE), ""));
    return;
  case T_INT: case T_F64: case T_F32: case T_NUMBER: put_number(G, R, x); return;
  case T_LUA: {   /* a value in its slot, or a number kept in registers */
    LLVMValueRef op, word;
    cg_lua_recipe_value(G, x, KRL_SLOT, KRL_INT, KRL_FLT, &op, &word);
    put(G, R, op);
    put(G, R, word);
    return;
  }
  case T_MAYBE: {   /* a number where flag, else nil (dtype 1) or false */
    Type nt = TY(x.t.sub);
    nt.fsub = x.t.fsub;
    CgVal nx = cg_mk(nt, x.v);
    nx.isf = x.isf;
    int at0 = R->n;
    put_number(G, R, nx);
    LLVMValueRef falsy = cg_i64(G, x.t.dtype ? KRL_NIL1 : KRL_FALSE1);
    R->w[at0] = LLVMBuildSelect(G->B, x.flag, R->w[at0], falsy, "");
    return;
  }
  default: {
    char tb[32];
    cg_error(G, at, "internal error: a %s value reached a library call",
             kty_name(x.t, tb, sizeof tb));
  }
  }
}

/* "chunk\nline\npath\nname": a call site (runtime_lib.c's trampolines);
** name: the local or upvalue it is called through, ":m" for a method,
** "[1]" or "[?]" for one read from a table by an integer or computed key. */
static LLVMValueRef site(CG *G, const KirInsn *call, int id) {
  const KirInsn *fn = call->args[0];
  const KbcProto *p = G->sp->ir->proto;
  const char *alias = fn->name;
  if (fn->op == KIR_GETFIELD && (G->sp->types[fn->args[0]->id].kind == T_LUA ||
                                 G->sp->types[fn->args[0]->id].kind == T_STR)) {
    /* s:sub(i, j): called as a method (luaL_argerror counts as the source) */
    alias = cg_strf(G, call, ":%s", fn->k.str.s);
  } else if (alias == NULL && fn->op == KIR_GETUPVAL && fn->aux < p->nup && p->up[fn->aux].name &&
      strcmp(p->up[fn->aux].name, "_ENV") != 0)
    alias = p->up[fn->aux].name;
  const char *path = kir_builtin_name(id);
  const char *last = strrchr(path, '.');
  if (alias && strcmp(alias, last ? last + 1 : path) == 0 && !last) alias = NULL;   /* print */
  KirVarKind how = kir_varinfo(G->sp, call, 0).kind;   /* read from a table by an integer or a computed key: "[1]", "[?]" */
  if (alias == NULL && how == KIR_VAR_INTKEY) alias = "[1]";
  if (alias == NULL && how == KIR_VAR_ANYKEY) alias = "[?]";
  const char *text = cg_strf(G, call, "%s\n%d\n%s\n%s", G->sp->chunkname ? G->sp->chunkname : "?",
                             call->line, path, alias ? alias : "");   /* (whole: a name of any length) */
  return str_addr(G, text, strlen(text));
}

/* "chunk\nline\nop\n": the trampoline site of an operator at v's line
** whose metamethod the run time calls (runtime_lib.c krt_push_trampoline). */
static LLVMValueRef op_site(CG *G, const KirInsn *v, const char *op) {
  char buf[LUA_IDSIZE + 40];
  int len = snprintf(buf, sizeof buf, "%s\n%d\n%s\n", G->sp->chunkname ? G->sp->chunkname : "?",
                     v->line, op);
  if (len < 0 || (size_t)len >= sizeof buf) len = (int)sizeof buf - 1;
  return str_addr(G, buf, (size_t)len);
}

LLVMValueRef cg_lib_site(CG *G, const KirInsn *v, const char *op) {
  return LLVMConstIntToPtr(op_site(G, v, op), G->i8p);
}

LLVMValueRef cg_lib_callsite(CG *G, const KirInsn *v, int id) {
  return LLVMConstIntToPtr(site(G, v, id), G->i8p);
}

static void put_insn(CG *G, Recipe *R, const KirInsn *x);

/* A string built at run time (no constant)? */
static int built(const CgVal *x) { return x->t.kind == T_STR && !(x->k && x->k->kind == T_STR); }

/* Pushes the arguments of call v (from operand 1), a[] their values. */
static int put_args(CG *G, Recipe *R, const KirInsn *v, CgVal *a, int n) {
  for (int i = 0; i < n; i++) {
    if (built(&a[i]) && i + 1 < v->nargs) put_insn(G, R, v->args[i + 1]);
    else put_val(G, R, a[i], v);
  }
  return n;
}

static void put_call(CG *G, Recipe *R, const KirInsn *v, int id, int nargs, int nres) {
  put(G, R, cg_i64(G, KRL_CALL | (int64_t)nargs << 8 | (int64_t)nres << 16));
  put(G, R, site(G, v, id));
  R->calls++;
}

/* Value x, a string built at run time rebuilt from its IR tree. */
static void put_insn(CG *G, Recipe *R, const KirInsn *x) {
  Type t = G->sp->types[x->id];
  const KtyConst *k = &G->sp->consts[x->id];
  if (t.kind == T_STR && k->kind != T_STR && x->op == KIR_CONCAT) {
    for (int i = 0; i < x->nargs; i++) put_insn(G, R, x->args[i]);
    putk(G, R, KRL_CONCAT | (int64_t)x->nargs << 8);
    return;
  }
  if (t.kind == T_STR && k->kind != T_STR && x->op == KIR_CALL) {
    CgVal a[KJIT_MAXARGS];
    int n = cg_operands(G, x, 1, a, KJIT_MAXARGS);
    put_args(G, R, x, a, n);
    put_call(G, R, x, G->sp->types[x->args[0]->id].ref, n, 1);
    return;
  }
  CgVal c = k->kind != T_UNKNOWN ? cg_mk(t, NULL) : cg_val(G, x);
  if (k->kind != T_UNKNOWN) c.k = k;
  if (k->kind == T_INT) c.v = cg_i64(G, k->v.i);
  else if (k->kind == T_F64) c.v = LLVMConstReal(t.kind == T_F32 ? G->f32 : G->f64, k->v.f);
  else if (k->kind == T_BOOL) c.v = cg_i1(G, k->v.b);
  if (built(&c)) cg_error(G, x, "internal error: a string without a recipe");
  put_val(G, R, c, x);
}

/* Emits the call of kjit_rt_lib on R (ended here); out: 2 words for a
** result, or NULL. Fails (returns from the function) when it fails. */
static void run(CG *G, Recipe *R, LLVMValueRef out) {
  putk(G, R, KRL_END);
  LLVMTypeRef at = LLVMArrayType(G->i64, (unsigned)R->n);
  LLVMValueRef arr = cg_alloca(G, at, "librecipe");
  for (int i = 0; i < R->n; i++) {
    LLVMValueRef idx[2] = { cg_i64(G, 0), cg_i64(G, i) };
    LLVMBuildStore(G->B, R->w[i], LLVMBuildGEP2(G->B, at, arr, idx, 2, ""));
  }
  LLVMTypeRef i64p = LLVMPointerType(G->i64, 0);
  LLVMTypeRef pt[3] = { G->i8p, i64p, i64p };
  LLVMValueRef av[3] = {
    LLVMBuildBitCast(G->B, G->err, G->i8p, ""),
    LLVMBuildBitCast(G->B, arr, i64p, ""),
    out ? out : LLVMConstNull(i64p),
  };
  cg_defer_flush(G);   /* a pending bounds error comes first */
  LLVMValueRef st = cg_ccall(G, "kjit_rt_lib", G->i32, pt, av, 3);
  LLVMBasicBlockRef fail = cg_bb(G, "libfail"), ok = cg_bb(G, "libok");
  cg_cold_false(G, LLVMBuildCondBr(G->B, LLVMBuildICmp(G->B, LLVMIntEQ, st, cg_i32(G, 0), ""), ok, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  cg_fail_ret(G);
  LLVMPositionBuilderAtEnd(G->B, ok);
}

static LLVMValueRef chunk_word(CG *G) {
  return LLVMBuildPtrToInt(G->B, G->chunkname, G->i64, "");
}

/* The recipe's end for a result that is a Lua value: into v's slot. */
static CgVal slot_result(CG *G, Recipe *R, const KirInsn *v) {
  CgVal r = cg_lua_inslot(G, v);
  putk(G, R, KRL_RESULT | (int64_t)KRL_K_SLOT << 8);
  put(G, R, LLVMBuildSExt(G->B, r.v, G->i64, ""));
  run(G, R, NULL);
  return r;
}

CgVal cg_lib_call(CG *G, const KirInsn *v, int id, CgVal *a, int n) {
  Type rt = G->sp->types[v->id];
  if (rt.kind == T_STR && (id == B_TOSTRING || id == B_STRING_FORMAT))
    return cg_mk(rt, NULL);   /* built where used (no longer typed so: ir_type.c) */
  Recipe R;
  memset(&R, 0, sizeof R);
  put_args(G, &R, v, a, n);
  if (rt.kind == T_LUA) {   /* a string (or any value) made by the library */
    put_call(G, &R, v, id, n, 1);
    return slot_result(G, &R, v);
  }
  int nres = rt.kind == T_INT || rt.kind == T_F64;
  put_call(G, &R, v, id, n, nres);
  if (!nres) {
    run(G, &R, NULL);
    return cg_mk(TY(T_NIL), NULL);
  }
  putk(G, &R, KRL_RESULT | (int64_t)(rt.kind == T_INT ? KRL_K_INT : KRL_K_FLT) << 8);
  put(G, &R, site(G, v, id));
  LLVMValueRef out = cg_alloca(G, LLVMArrayType(G->i64, 2), "libout");
  LLVMValueRef outp = LLVMBuildBitCast(G->B, out, LLVMPointerType(G->i64, 0), "");
  run(G, &R, outp);
  LLVMValueRef w = LLVMBuildLoad2(G->B, G->i64, outp, "");
  return cg_mk(rt, rt.kind == T_INT ? w : LLVMBuildBitCast(G->B, w, G->f64, ""));
}

/* a .. b .. c with a number-or-nil the typer cannot place (ir_type.c
** kty_concat_late): the values a[0..n-1] and KRL_CONCATN, which runs Lua's
** steps and raises the VM's error naming the operand's register (each
** operand's " (local 'x')", NUL-separated, as cg_varinfo words it). */
static CgVal concat_late(CG *G, const KirInsn *v, CgVal *a, int n) {
  if (n != v->nargs) cg_error(G, v, "too many operands of '..' (at most %d)", KJIT_MAXARGS);
  const char *each[KJIT_MAXARGS];
  size_t cap = 0, len = 0;
  for (int i = 0; i < n; i++) cap += strlen(each[i] = cg_varinfo(G, v, i)) + 1;
  char *names = ka_alloc(G->S->A, cap ? cap : 1);
  if (names == NULL) cg_error(G, v, "not enough memory");
  for (int i = 0; i < n; i++) {
    size_t m = strlen(each[i]) + 1;
    memcpy(names + len, each[i], m);
    len += m;
  }
  Recipe R;
  memset(&R, 0, sizeof R);
  for (int i = 0; i < n; i++) {
    if (built(&a[i])) put_insn(G, &R, v->args[i]);
    else put_val(G, &R, a[i], v);
  }
  putk(G, &R, KRL_CONCATN | (int64_t)n << 8);
  put(G, &R, chunk_word(G));
  putk(G, &R, v->line);
  put(G, &R, op_site(G, v, ".."));
  put(G, &R, str_addr(G, names, len - 1));   /* (str_addr ends it with a NUL) */
  return slot_result(G, &R, v);
}

/* a .. b .. c with a Lua value among the operands, or operands known only
** when it runs: Lua's own concatenation (lua_concat) into v's slot; a Lua
** operand that cannot be concatenated raises the VM's error first, in
** the VM's order (the last two operands, then leftwards). */
CgVal cg_lib_concat(CG *G, const KirInsn *v) {
  CgVal a[KJIT_MAXARGS];
  int n = v->nargs < KJIT_MAXARGS ? v->nargs : KJIT_MAXARGS;
  for (int i = 0; i < n; i++) {
    const KtyConst *k = &G->sp->consts[v->args[i]->id];
    Type t = G->sp->types[v->args[i]->id];
    const char *dn = kty_dtype_obj_name(k);
    if (dn) {   /* a dtype object: its name (the typer's t_concat) */
      KtyConst *sk = ka_alloc(G->S->A, sizeof *sk);
      if (sk == NULL) cg_error(G, v, "not enough memory");
      memset(sk, 0, sizeof *sk);
      sk->kind = T_STR; sk->str = dn; sk->len = strlen(dn);
      a[i] = cg_mk(TY(T_STR), NULL);
      a[i].k = sk;
    } else if (k->kind == T_STR || k->kind == T_INT || k->kind == T_F64) {
      a[i] = cg_mk(t, NULL);
      a[i].k = k;
      if (k->kind == T_INT) { a[i] = cg_mk(TY(T_INT), cg_i64(G, k->v.i)); }
      else if (k->kind == T_F64) { a[i] = cg_mk(TY(T_F64), LLVMConstReal(G->f64, k->v.f)); }
    } else {
      a[i] = cg_val(G, v->args[i]);
    }
  }
  if (kty_concat_late(G->sp, v)) return concat_late(G, v, a, n);
  for (int j = 0; j < n; j++) {   /* the order: n-2, n-1, n-3, n-4 ... 0 */
    int i = j == 0 ? n - 2 : j == 1 ? n - 1 : n - 1 - j;
    /* the last pair: either operand's __concat serves (the VM's rule) */
    if (a[i].t.kind == T_LUA && j < 2 && n >= 2 &&
        kty_dtype_obj_name(&G->sp->consts[v->args[j == 0 ? n - 1 : n - 2]->id])) {
      if (j == 0) cg_lua_concat_dtype_left(G, a[i], v);   /* `t.x .. kjit.f32`: below */
      else cg_lua_concat_dtype(G, a[i], v);   /* beside a dtype object: its __concat's rule */
    }
    else if (a[i].t.kind == T_LUA && j < 2 && n >= 2)
      cg_lua_concat_check2(G, a[i], &a[j == 0 ? n - 1 : n - 2], v, i);
    else if (a[i].t.kind == T_LUA) cg_lua_concat_check(G, a[i], v, i);
    else if ((a[i].t.kind == T_NIL || a[i].t.kind == T_BOOL) && j < 2 && n >= 2)
      /* `nil .. t`: only t's __concat takes it (the typer's pairlua) */
      cg_lua_concat_nilpair(G, a[i].t.kind == T_NIL, a[j == 0 ? n - 1 : n - 2], v, i);
    else if (a[i].t.kind == T_MAYBE && j < 2 && n >= 2 && a[j == 0 ? n - 1 : n - 2].t.kind == T_LUA) {
      /* `v .. t` with v a number-or-nil: where it is nil (or false), as `nil .. t` */
      LLVMBasicBlockRef nb = cg_bb(G, "catmaybe"), done = cg_bb(G, "catmaybeok");
      LLVMBuildCondBr(G->B, a[i].flag, done, nb);
      LLVMPositionBuilderAtEnd(G->B, nb);
      cg_lua_concat_nilpair(G, a[i].t.dtype, a[j == 0 ? n - 1 : n - 2], v, i);
      LLVMBuildBr(G->B, done);
      LLVMPositionBuilderAtEnd(G->B, done);
    } else if (a[i].t.kind == T_MAYBE) {   /* a number-or-nil: the VM's error where it is nil */
      const char *info = cg_varinfo(G, v, i);
      /* beside a dtype object in the last pair, its __concat raises it
      ** (host/dtype.c dt_concat): no variable named (ir_type.c t_concat) */
      if (j < 2 && n >= 2 && kty_dtype_obj_name(&G->sp->consts[v->args[j == 0 ? n - 1 : n - 2]->id]))
        info = "";
      const char *msg = cg_strf(G, v, "attempt to concatenate a %s value%s",
                                a[i].t.dtype ? "nil" : "boolean", info);
      cg_check(G, a[i].flag, KE_TYPEERR, v->line, cg_i64(G, 0), NULL, NULL, msg);
    }
  }
  /* `t.x .. kjit.f32`: the object itself, for t.x's __concat to get it
  ** (where t.x is a string or a number, its __concat gives what its name
  ** gives) */
  if (n >= 2 && a[n - 2].t.kind == T_LUA && kty_dtype_obj_name(&G->sp->consts[v->args[n - 1]->id])) {
    a[n - 1] = cg_mk(G->sp->types[v->args[n - 1]->id], NULL);
    a[n - 1].k = &G->sp->consts[v->args[n - 1]->id];
  }
  Recipe R;
  memset(&R, 0, sizeof R);
  for (int i = 0; i < n; i++) put_val(G, &R, a[i], v);
  putk(G, &R, KRL_CONCAT | (int64_t)n << 8);
  return slot_result(G, &R, v);
}

int cg_lib_message(CG *G, const CgVal *m) {
  (void)G;
  return !(m->k && m->k->kind == T_STR);
}

void cg_lib_error(CG *G, const KirInsn *v, CgVal msg, int level) {
  Recipe R;
  memset(&R, 0, sizeof R);
  if (built(&msg)) put_insn(G, &R, v->args[1]);
  else put_val(G, &R, msg, v);
  putk(G, &R, KRL_ERROR | (int64_t)level << 8);
  put(G, &R, chunk_word(G));
  putk(G, &R, v->line);
  run(G, &R, NULL);
  cg_fail_ret(G);   /* (run returned on its failure edge; this edge never runs) */
  LLVMPositionBuilderAtEnd(G->B, cg_bb(G, "dead"));
}

/* Does the tree of a built string call a library function (which may
** have side effects or raise: then it is built whether or not it is
** needed, as the interpreter evaluates assert's arguments)? */
static int has_call(CG *G, const KirInsn *x) {
  Type t = G->sp->types[x->id];
  if (t.kind != T_STR || G->sp->consts[x->id].kind == T_STR) return 0;
  if (x->op == KIR_CALL) return 1;
  if (x->op == KIR_CONCAT)
    for (int i = 0; i < x->nargs; i++) if (has_call(G, x->args[i])) return 1;
  return 0;
}

void cg_lib_assert(CG *G, const KirInsn *v, CgVal cond, CgVal msg) {
  LLVMValueRef ok = cg_truthy(G, cond);
  int isbuilt = built(&msg);
  if (isbuilt && has_call(G, v->args[2])) {   /* eager: built, then tested */
    Recipe R;
    memset(&R, 0, sizeof R);
    put(G, &R, LLVMBuildSelect(G->B, ok, cg_i64(G, KRL_TRUE), cg_i64(G, KRL_FALSE), ""));
    put_insn(G, &R, v->args[2]);
    putk(G, &R, KRL_ASSERT);
    put(G, &R, chunk_word(G));
    putk(G, &R, v->line);
    run(G, &R, NULL);
    return;
  }
  if (LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok) == 1) return;
  LLVMBasicBlockRef fail = cg_bb(G, "assertfail"), cont = cg_bb(G, "assertok");
  cg_cold_false(G, LLVMBuildCondBr(G->B, ok, cont, fail));
  LLVMPositionBuilderAtEnd(G->B, fail);
  Recipe R;
  memset(&R, 0, sizeof R);
  if (isbuilt) put_insn(G, &R, v->args[2]);
  else put_val(G, &R, msg, v);
  putk(G, &R, KRL_ERROR | 1 << 8);
  put(G, &R, chunk_word(G));
  putk(G, &R, v->line);
  run(G, &R, NULL);
  LLVMBuildUnreachable(G->B);
  LLVMPositionBuilderAtEnd(G->B, cont);
}
