/*
** cg.h: the bytecode code generator's internal state and helpers.
**
** kcg_emit reads the typed IR (src/ir/ir.h, src/ir/ir_type.h) of every
** specialization in use and emits one internal LLVM function per KtySpec:
**     i32 @kcg_specN(params..., retptrs..., [i64* pollctr,] %KErr* err)
** returning 0, or 1 after filling *err (run-time errors unwind through
** ordinary returns). One LLVM basic block per live KirBlock, KIR phis as
** LLVM phis (one per part of a value), and a side table of values by
** instruction id (CgVal). The entry wrapper (cg_entry.c) has the KEntry
** ABI of compile.h.
**
** Files: cg_func.c (driver: functions, blocks, phis, terminators, for
** loops, calls, returns, interrupt polling), cg_num.c (numbers, T_NUMBER,
** comparisons, conversions), cg_array.c (arrays), cg_builtin.c (math.*,
** error, assert), cg_peel.c (which loops get their first iteration
** emitted apart), cg_entry.c (the KEntry wrapper), target_*.c (targets);
** host/driver.c drives the pipeline into kcg.h.
**
** Values (CgVal) by type:
**   T_INT i64, T_F64 double, T_F32 float, T_BOOL i1;
**   T_NUMBER { v: i64 bits, isf: i1 } (the float side's bits: a double, or
**     for fsub T_F32 a float zero-extended);
**   T_MAYBE { v: the number (as above when sub is T_NUMBER, with isf),
**     flag: i1 "holds a number" };
**   T_BUF { v: element pointer, dims[0..ndim) }; T_SHAPE the same dims;
**   T_NIL, T_STR, T_TABLE, T_FUNC, T_BUILTIN: nothing at run time (k: the
**     compile-time constant, for error messages and math.type);
**   T_LUA (cg_lua.c) { v: i32 stack slot, flag: i8 tag (0: the value is in
**     the slot; 1: an integer, 2: a float, in dims[0]), dims[0]: i64 bits }.
** Parameters and results of the inner functions use the same parts in
** that order (v, isf, flag / v, dims).
*/
#ifndef KJIT_CG_H
#define KJIT_CG_H

#include <llvm-c/Core.h>
#include "common/compile.h"
#include "ir/ir.h"
#include "ir/ir_type.h"
#include "ir/ir_builtins.h"
#include "codegen/target.h"
#include "common/runtime_err.h"

typedef struct CgVal {
  Type t;
  LLVMValueRef v, isf, flag;
  LLVMValueRef dims[KJIT_MAXDIMS];
  const KtyConst *k;        /* compile-time constant (strings) or NULL */
} CgVal;

/* Per specialization: its LLVM function and type. */
typedef struct CgFunc {
  LLVMValueRef fn;
  LLVMTypeRef fnty;
} CgFunc;

/* What a forprep computed, for its forloop. */
typedef struct CgFor {
  int kind;                 /* T_INT, T_F64, or T_NUMBER (decided at run time) */
  LLVMValueRef dyn;         /* T_NUMBER: i1, the loop runs on integers */
  LLVMValueRef rem;         /* integer loop: alloca i64, iterations left */
  LLVMValueRef step;        /* integer step */
  LLVMValueRef fstep, limit, pos;   /* float loop: step, limit, step > 0 */
  LLVMValueRef chunkmax;    /* a strip-mined loop charged for its inner loops
                               (cg_pollcover.c): its chunk's length - 1, made at
                               its chunk head; NULL: KCG_POLL_PERIOD - 1 */
} CgFor;

/* The tables a copy of a loop's code is emitted with (cg_version.c's
** nests, cg_pollfree.c), swapped into CG while it is emitted. */
typedef struct CgTabs {
  LLVMBasicBlockRef *bbs, *chunkbb, *vselbb, *vbbs;
  LLVMValueRef (*phis)[3 + KJIT_MAXDIMS], (*ophis)[3 + KJIT_MAXDIMS];
  LLVMValueRef (*vsphis)[3 + KJIT_MAXDIMS], (*vphis)[3 + KJIT_MAXDIMS];
  struct KirLoop **ver_at, **strip_at;
  LLVMValueRef *chunk;
} CgTabs;

typedef struct CG {
  KtySession *S;
  /* cuda.jit's lineinfo (cg_debug.c): a DIBuilder, or NULL */
  struct LLVMOpaqueDIBuilder *dib;
  LLVMMetadataRef difile, discope;
  const KcgTarget *target;
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, i8p, errty, errp;
  int boundscheck, fastmath;
  int has_calls;
  CgFunc *funcs;            /* by KtySpec.index */
  /* the function being emitted */
  KtySpec *sp;
  LLVMValueRef fn, err, chunkname;
  LLVMBasicBlockRef allocas;
  LLVMBasicBlockRef *bbs;   /* by KirBlock.id */
  CgVal *vals;              /* by KirInsn.id */
  uint8_t *notrun;          /* by KirInsn.id: never runs (it raises, or an
                               operand is never produced): cg_never_produced */
  CgFor *fors;              /* by forprep id */
  CgVal **results;          /* by call id: what a Lua call gave */
  int *nresults;
  /* kernels: messages by number when the target has no string globals
  ** (err->msg holds the 1-based number), and whether syncthreads ran */
  const char **msgs; int nmsgs, capmsgs;
  int uses_sync;
  int64_t const_bytes;           /* the constant arrays' bytes (cg_frozen.c) */
  /* kernels: bounds checks of array reads waiting for one branch
  ** (cg_defer.c) */
  struct CgDefer { LLVMValueRef ok, index, extent; int line; } defer[16];
  int ndefer;
  LLVMValueRef defer_all;   /* all pending checks passed (i1) */
  LLVMValueRef retptrs[KJIT_MAXRETS][3 + KJIT_MAXDIMS];   /* v, isf, flag / v, dims */
  /* phis: the LLVM phis of each KIR phi, by id (v, isf, flag, dims) */
  LLVMValueRef (*phis)[3 + KJIT_MAXDIMS];
  /* loop peeling (cg_peel.c) */
  Type *phity;              /* by id: a phi's own type (kind 0: the typer's) */
  Type *owntype;            /* by id: the current value's own type (kind 0: the typer's) */
  KirLoop **peel_at;        /* by block id: the loop peeled at this header, or NULL */
  KirLoop *peeling;         /* the loop whose first iteration is being emitted */
  LLVMBasicBlockRef *pbbs;  /* by block id: the peeled copies */
  LLVMValueRef (*pphis)[3 + KJIT_MAXDIMS];
  LLVMValueRef (*spill)[3 + KJIT_MAXDIMS];  /* by id: stack slots of values of a
                                               peeled loop used after it */
  KirBlock *curblock;       /* the block being emitted (a loop's header
                               while code ahead of the loop is: see
                               cg_before_loop) */
  LLVMBasicBlockRef *fusedbb;  /* blocks emitted inside their predecessor
                                  (cg_fuse.c): left unreachable */
  int nfused, capfused;
  unsigned blockgen;        /* counts emit_block calls: what one emission of a block
                               computed dominates the rest of that emission */
  /* cg_array.c: T_NUMBER keys converted to integers in this emission of
  ** the block (x[b] then x[b] = ... converts b once) */
  struct CgIdxMemo { LLVMValueRef v, isf, i; unsigned gen; } idxmemo[4];
  /* polling (target->poll) */
  LLVMValueRef pollctr;     /* i64*: the countdown, or NULL */
  LLVMValueRef pollerr;     /* %KErr* the poll fills, when not err (a prange
                               worker's: the runtime's, so its own stays in
                               registers), or NULL */
  KirLoop **strip_at;       /* by header block id: a strip-mined loop */
  LLVMBasicBlockRef *chunkbb;   /* by header block id: its chunk head */
  LLVMValueRef (*ophis)[3 + KJIT_MAXDIMS];  /* phis of the chunk heads */
  LLVMValueRef *chunk;      /* by forprep id: alloca i64, iterations left in the chunk */
  KirLoop **weigh_at;       /* by header block id: a strip-mined loop with inner
                               loops, charged for their first chunks (cg_pollcover.c) */
  KirLoop **fit_at;         /* by header block id: a strip-mined loop of a prange
                               body with a single-chunk copy (cg_version.c) */
  int plaincopy;            /* emitting that copy (G->versioning: the loop) */
  struct CgFree **free_at;  /* by header block id: a nest with a copy
                               without polls (cg_pollfree.c), or NULL */
  struct CgFree *freecopy;  /* the one whose copy is being emitted */
  KirLoop *freeloop;        /* its loop (edges leaving it use the outer tables) */
  int pollfree;             /* 1: charges nothing (cg_poll_charge) */
  /* chunk-local copies (cg_func.c, chunk_locals): chunkpend, the
  ** strip-mined loop whose chunk head was just emitted; chunklive, the one
  ** whose blocks are being emitted after it, which read the integers of
  ** the loop around (by id, chunkin_id) as chunkin_v */
  KirLoop *chunkpend, *chunklive;
  int nchunkin;
  int chunkin_id[8];
  LLVMValueRef chunkin_v[8];
  /* pure specializations (ir_facts.h 6.): by KtySpec.index; the result
  ** in registers (pure_ret_ty), a failure in err->kind alone, an i32 call depth after
  ** err (LLVM may turn their recursion into loops) */
  uint8_t *pure;
  LLVMValueRef depth;
  /* kjit.prange (cg_prange.c) */
  struct KcgParallel *par;  /* the option and the notes */
  struct CgPrange *pr;      /* the function being emitted: facts, loop states */
  /* loop versioning (cg_version.c) */
  KirLoop **ver_at;         /* by header block id: a versioned loop, or NULL */
  LLVMBasicBlockRef *vselbb;   /* by header block id: its range test */
  LLVMValueRef (*vsphis)[3 + KJIT_MAXDIMS];  /* the header's phis at the test */
  LLVMBasicBlockRef *vbbs;  /* by block id: the checked copy */
  LLVMValueRef (*vphis)[3 + KJIT_MAXDIMS];
  KirLoop *versioning;      /* the loop whose checked copy is being emitted */
  uint8_t *kindsplit;       /* by header block id: a loop of either kind, in
                               two copies (cg_version.c emit_kind_split) */
  const KirInsn *kindint;   /* the forprep whose integer copy is being emitted */
  const struct KfaNarrow *narrowing;   /* kernels: the while loop whose copy with
                                          an i32 counter is being emitted */
  LLVMValueRef narrow_wide;   /* then: the counter's i64 stack slot, or NULL */
  /* nests versioned as a whole (cg_version.c): the checked copy of a nest
  ** has tables of its own (bbs, phis, ... swapped in while it is emitted) */
  /* cg_alloc.c: by instruction id, the stack slot (i8*) of a scratch
  ** site's last array and the function it belongs to, and whether the
  ** site is scratch (1), escapes (2) or is not known yet (0) */
  LLVMValueRef *scratch; LLVMValueRef *scratchfn; uint8_t *scratchkind;
  struct CgNest **nest_at;  /* by header block id: a versioned nest, or NULL */
  struct CgNest *nestcopy;  /* the nest whose checked copy is being emitted */
  KirLoop *nestloop;        /* its loop (edges leaving it use the outer tables) */
  uint8_t *nestoff;         /* by id: a check off in a nest's fast copy */
  /* Lua values (cg_lua.c): the frame of the function being emitted */
  int *lslot;               /* by id: its first stack slot in the frame, or -1
                               (NULL: the function holds no Lua values) */
  int nlslots;              /* slots in the frame, scratch included */
  LLVMValueRef luaL;        /* lua_State* (i8*), from err */
  LLVMValueRef lbase;       /* i32: the frame's first slot (kjit_lv_open) */
  LLVMValueRef *lslotv;     /* by slot: its index (i32), made in the entry block */
  /* live tables read once in the entry block (cg_lua.c live_table): the
  ** table's identity, its slot and its address */
#define CG_MAXLIVE 8
  struct CgLive { const void *id; LLVMValueRef slot, h; } live[CG_MAXLIVE];
  int nlive;
  LLVMBasicBlockRef lentry; /* where the entry code goes on once the frame is
                               open inline (cg_lua_begin), or NULL: the entry block */
  CgVal *upvals;            /* a function literal's specialization: its
                               upvalues, passed after its parameters */
  int prbody;               /* emitting a kjit.prange body's own function
                               (cg_prange.c): the maker's values are not
                               in scope there (cg_closure.c) */
  /* returns of different lengths (ir_type.h's dyncount, cg_vararg.c) */
  LLVMValueRef retcount;    /* i32*: where this function says how many it gave */
  LLVMValueRef *ncount;     /* by id: how many a call of such a callee gave (i32) */
  LLVMValueRef lton;        /* i1: kjit_lt_on, read once in the entry block
                               (cg_lua.c hint), or NULL */
  /* cg_lua.c hint: the hints of tables compiled code holds, each computed
  ** once where its address (and tag) is made: addresses, tags, hints */
  LLVMValueRef hints[3][64];
  int nhints;
  /* cg_lua.c dead slots: by id, the first call whose Lua results die
  ** after this instruction (NULL none), the next such call (a chain), and
  ** by call, how many slots from its first it clears */
  const KirInsn **lkillhead, **lkillnext;
  int *lkilln;
  uint8_t *lhot;            /* by KtySpec.index: may run many times, so its
                               table accesses and frame are inline (cg_lua.c
                               "Where inline paths pay"); NULL until planned */
  /* native views of indexed arrays (cg_luaview.c) */
  void *lviews;             /* CG_MAXVIEWS records of allocas */
  int nlviews;
  int *lviewof;             /* by id: the value's view, or -1 (NULL: none) */
  int lview_quiet;          /* a call that runs no Lua (the views stay) */
  /* chains of arithmetic on Lua values (cg_chain.c) */
  int *chainof;             /* by id: 1 + its chain, or 0; NULL: none */
  void *chains;             /* the chains (CgChain, cg_chain.c's own) */
  uint8_t *chainflt;        /* by id: a Lua value whose tag is the float's
                               wherever the chains' fast paths ran
                               (cg_chain.c floaty_values), or NULL */
} CG;

/* iterations (or calls) between two kjit_rt_poll calls: the run time's
** interval (runtime_poll.h) */
#define KCG_POLL_PERIOD KRT_POLL_INTERVAL

/* compile errors, located at v (NULL: the function) */
void cg_error(CG *G, const KirInsn *v, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 3, 4), noreturn))
#endif
  ;

/* cg_func.c: helpers */
LLVMValueRef cg_i64(CG *G, int64_t v);
LLVMValueRef cg_i32(CG *G, int32_t v);
LLVMValueRef cg_f64(CG *G, double v);
LLVMValueRef cg_i1(CG *G, int v);
LLVMBasicBlockRef cg_bb(CG *G, const char *name);
LLVMValueRef cg_alloca(CG *G, LLVMTypeRef ty, const char *name);
LLVMValueRef cg_ccall(CG *G, const char *name, LLVMTypeRef ret, LLVMTypeRef *ptys,
                      LLVMValueRef *args, unsigned n);
LLVMValueRef cg_intrinsic(CG *G, const char *name, LLVMTypeRef ty, LLVMValueRef *args,
                          unsigned n);
LLVMValueRef cg_math(CG *G, const char *base, LLVMTypeRef ty, LLVMValueRef *args, unsigned n);
LLVMTypeRef cg_llty(CG *G, Type t);          /* scalar part v of a value of type t */
LLVMTypeRef cg_dtype_llty(CG *G, int dtype);
LLVMTypeRef cg_bufptr_ty(CG *G, Type t);
/* errors raised by compiled code */
void cg_store_err(CG *G, int field, LLVMValueRef v);
/* In a pure function (which runs on after a callee failed): fail at once
** if an error is recorded, so that the first error stays. Every error
** store goes after it (cg_raise does it). */
void cg_pure_keep_first_error(CG *G);
void cg_raise(CG *G, KErrKind kind, int line, LLVMValueRef a, LLVMValueRef b,
              LLVMValueRef c, const char *msg);     /* leaves the builder in a dead block */
void cg_check(CG *G, LLVMValueRef ok, KErrKind kind, int line, LLVMValueRef a,
              LLVMValueRef b, LLVMValueRef c, const char *msg);
LLVMValueRef cg_cold_false(CG *G, LLVMValueRef br);
void cg_fail_ret(CG *G);
/* the value of instruction v (its constant when it has one) */
CgVal cg_val(CG *G, const KirInsn *v);
/* " (local 'x')", " (global 'x')" ... or "": Lua's name for operand argi
** of use, whole, kept as long as the module's messages (the compile's arena) */
const char *cg_varinfo(CG *G, const KirInsn *use, int argi);
/* The name "bad argument #i to 'name'" gives the function call v calls
** (ir_varinfo.c kir_argerror_name; libname where the site names none),
** whole, kept as cg_varinfo's */
const char *cg_argerror_name(CG *G, const KirInsn *v, const char *libname);
/* printf into the compile's arena, whole (messages with names of any length) */
const char *cg_strf(CG *G, const KirInsn *v, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 3, 4)))
#endif
  ;

/* cg_num.c */
CgVal cg_mk(Type t, LLVMValueRef v);
CgVal cg_const(CG *G, Type t, const KtyConst *k);
CgVal cg_convert(CG *G, CgVal x, Type t, int line);  /* to type t (phis, calls, returns) */
CgVal cg_unwrap(CG *G, CgVal x, int line, const KirInsn *use, int argi);  /* T_MAYBE used as a number */
LLVMValueRef cg_truthy(CG *G, CgVal x);
LLVMValueRef cg_num_to(CG *G, CgVal x, int kind);   /* T_INT, T_F64, T_F32 of a concrete number */
LLVMValueRef cg_tofloat(CG *G, CgVal x, int kind);  /* any number (T_NUMBER too) as a float */
LLVMValueRef cg_float_to_int_exact(CG *G, LLVMValueRef x, LLVMValueRef *ok);
LLVMValueRef cg_to_int_checked(CG *G, CgVal x, int line, const KirInsn *use, int argi);
CgVal cg_number_side(CG *G, CgVal n, int isfloat);  /* a T_NUMBER's int or float side */
void cg_func_call(CG *G, const KirInsn *v);   /* a call, as cg_func.c emits it (cg_chain.c: a sqrt alone) */
CgVal cg_arith(CG *G, const KirInsn *v);
CgVal cg_unary(CG *G, const KirInsn *v);
CgVal cg_compare(CG *G, const KirInsn *v);
KirBlock *cg_fuse_next(const CG *G, const KirBlock *b);   /* cg_fuse.c */
LLVMValueRef cg_cmp_num(CG *G, int cmp, CgVal a, CgVal b);   /* concrete numbers */
enum { CG_LT, CG_LE, CG_EQ };
/* Runs fn on concrete operands: every T_NUMBER operand splits into its
** integer and float sides (a branch on its tag); the results, converted
** to rt, meet in phis. T_MAYBE operands are unwrapped first. */
typedef CgVal (*CgConcrete)(CG *G, const KirInsn *v, CgVal *a, int n, Type rt);
CgVal cg_split(CG *G, const KirInsn *v, CgVal *a, int n, Type rt, CgConcrete fn);
/* cg_num.c, for cg_lua.c: v's arithmetic and comparison on numbers */
CgVal cg_arith_on(CG *G, const KirInsn *v, CgVal *a, Type rt);
LLVMValueRef cg_compare_on(CG *G, const KirInsn *v, CgVal a, CgVal b);

/* cg_array.c */
CgVal cg_index(CG *G, const KirInsn *v);
void cg_setindex(CG *G, const KirInsn *v);
CgVal cg_getfield(CG *G, const KirInsn *v);
CgVal cg_len(CG *G, const KirInsn *v);
/* Records (cg_array.c): r.x on a record view (o), r.x = v (KIR_SETFIELD),
** and a copy of size bytes from one record to another. */
CgVal cg_rec_field(CG *G, const KirInsn *v, CgVal o);
void cg_rec_setfield(CG *G, const KirInsn *v);
void cg_rec_copy(CG *G, LLVMValueRef dst, LLVMValueRef src, int64_t size);
/* r1 == r2 on two records of one layout: every field equal as numbers. */
CgVal cg_rec_eq(CG *G, CgVal a, CgVal b);

/* cg_array.c: an element stored with the store rules, or loaded */
void cg_store_value(CG *G, const KirInsn *v, int dtype, LLVMValueRef p, CgVal x);
CgVal cg_load_elem(CG *G, int dtype, LLVMValueRef p);
/* f16 (cg_half.c): bits (i16) -> f64, exact; f64 -> bits, rounded once;
** cuda.float16(x) and cuda.fp16.* (id) on concrete arguments. */
LLVMValueRef cg_half_to_f64(CG *G, LLVMValueRef bits);
LLVMValueRef cg_f64_to_half(CG *G, LLVMValueRef d);
CgVal cg_half_op(CG *G, const KirInsn *v, int id, CgVal *a, int n);

/* cg_alloc.c: arrays made in compiled code and the array methods
** (B_IS_ARRAY built-ins), table constructors of shapes and elements,
** row assignment, the scratch arrays a return frees */
CgVal cg_array_builtin(CG *G, const KirInsn *v, int id, CgVal *a, int n);
void cg_ctor(CG *G, const KirInsn *v);            /* newtable, setlist */
void cg_setrow(CG *G, const KirInsn *v, CgVal o, CgVal k, CgVal x);
void cg_free_scratch(CG *G);                      /* before a return */

/* cg_builtin.c */
/* A kernel's constant array, insn v (cg_frozen.c). */
CgVal cg_const_array(CG *G, const KirInsn *v);
CgVal cg_frozen_index(CG *G, const KirInsn *v);   /* cg_frozen.c */
/* cg_lib.c: calls into the Lua library (runtime_lib.c) */
CgVal cg_lib_call(CG *G, const KirInsn *v, int id, CgVal *a, int n);
int cg_lib_message(CG *G, const CgVal *m);   /* error/assert message not a constant string? */
void cg_lib_error(CG *G, const KirInsn *v, CgVal msg, int level);
void cg_lib_assert(CG *G, const KirInsn *v, CgVal cond, CgVal msg);
CgVal cg_builtin(CG *G, const KirInsn *v, int id, CgVal *a, int n);
CgVal cg_float_to_number(CG *G, LLVMValueRef f);   /* f64 -> integer if it fits, as math.floor */

/* cg_kernel.c: the value err->msg gets for msg (a string, or its number) */
LLVMValueRef cg_msg(CG *G, const char *msg);

/* cg_array.c: the element pointer of o[k] (o 1-D; bounds checked) */
LLVMValueRef cg_elem_ptr(CG *G, const KirInsn *v, CgVal o, CgVal k);

/* cg_cuda.c: the kjit.cuda built-ins (call v of built-in id), and
** cuda.threadIdx.x ... (getfield v of a dim3 built-in) */
CgVal cg_cuda(CG *G, const KirInsn *v, int id, CgVal *a, int n);
CgVal cg_cuda_dim3(CG *G, const KirInsn *v, int id);
void cg_cuda_extern_call(CG *G, KirInsn *v);   /* cuda.declare_device functions */
/* cg_cuda_intrin.c: numba-cuda's intrinsics (the INTRIN rows) */
CgVal cg_cuda_intrin(CG *G, const KirInsn *v, int id, CgVal *a, int n);
/* cg_debug.c: Lua lines as debug locations (lineinfo); no-ops without */
void cg_debug_begin(CG *G);
void cg_debug_function(CG *G, KtySpec *sp, int line);
void cg_debug_line(CG *G, int line);
void cg_debug_end_function(CG *G);
void cg_debug_end(CG *G);
void cg_debug_dispose(CG *G);   /* a compile error unwinds */
/* cg_print.c: print(...) in kernels */
CgVal cg_print(CG *G, const KirInsn *v, CgVal *a, int n);
/* cg_kmath.c: casts, kjit.math.*, math.modf (arguments unwrapped) */
CgVal cg_kmath(CG *G, const KirInsn *v, int id, CgVal *a, int n);

/* cg_defer.c: deferred bounds checks of array reads in kernels. v reads
** o[...] (v an INDEX): cg_defer_check records the check (returns 1) when
** v's array may defer, else returns 0 (the caller checks now);
** cg_defer_ptr makes the element pointer of a read safe while checks are
** pending; cg_defer_flush emits their one branch. */
int cg_defer_check(CG *G, const KirInsn *v, LLVMValueRef ok, int line, LLVMValueRef index,
                   LLVMValueRef extent);
LLVMValueRef cg_defer_ptr(CG *G, const KirInsn *v, LLVMValueRef elem, LLVMTypeRef ety);
void cg_defer_flush(CG *G);
int cg_defer_straight(CG *G, const KirInsn *v);   /* v may run with checks pending */

/* cg_kernel.c: the device kernel entry (target->kernel_entry) */
void cg_emit_kernel_entry(CG *G, KtySpec *sp, const char *name);

/* cg_func.c: operands of v from `from` on, an open last call expanded */
/* v's value never exists: typed unknown (a call that never returns), or
** v never runs (the typer's raises[], an operand never produced) */
int cg_never_produced(CG *G, const KirInsn *v);
int cg_operands(CG *G, const KirInsn *v, int from, CgVal *out, int max);

/* cg_peel.c: which loops to peel (fills phity, peel_at, pbbs, pphis) */
void cg_peel_plan(CG *G);
void cg_make_spill(CG *G, const KirInsn *v, Type t);   /* cg_func.c */
void cg_before_loop(CG *G, KirLoop *L);                 /* cg_func.c */
void *cg_zalloc(CG *G, size_t n);

/* cg_entry.c */
void cg_emit_entry(CG *G, KtySpec *sp, const char *name);

/* cg_func.c: is sp pure (see CG.pure)? */
int cg_is_pure(CG *G, const KtySpec *sp);
int cg_poll_in_err(CG *G, const KtySpec *sp);   /* its countdown: KErr.poll_left */
/* A pure call's result r (of type t) as t's parts (cg_parts): how many */
int cg_pure_ret_parts(CG *G, Type t, LLVMValueRef r, LLVMValueRef *out);
#define CG_PURE_MAXDEPTH 1000000   /* pure calls nested (as KJIT_PURE_MAXDEPTH) */

/* cg_func.c: the driver's pieces, for cg_prange.c */
int cg_parts(CG *G, Type t, LLVMTypeRef *tys);     /* run-time parts of a type t */
int cg_pack(CgVal x, LLVMValueRef *out);
CgVal cg_unpack(Type t, LLVMValueRef *p);
/* cg_closure.c: a function literal's environment where it is made (KIR_CLOSURE);
** upvalue u of the literal that call v runs (callee: its specialization) */
void cg_closure_make(CG *G, KirInsn *v);
/* A function literal that escapes (ir_escape.c): a real Lua closure made
** into v's slot by its maker (runtime/luaclosure.c). */
void cg_closure_box(CG *G, KirInsn *v);
void cg_cell(CG *G, KirInsn *v);   /* newcell, getcell, setcell (cg_closure.c) */
CgVal cg_clos_upval(CG *G, const KirInsn *v, const KtySpec *callee, int u);
void cg_make_phis(CG *G, KirBlock *b);
/* phi operands, from here; returns where the edge lands */
LLVMBasicBlockRef cg_add_edge(CG *G, KirBlock *from, KirBlock *to);
void cg_branch(CG *G, KirBlock *b, LLVMValueRef c);      /* b's two-way branch on c */
void cg_emit_block(CG *G, KirBlock *b);                  /* at G->bbs[b->id] */
LLVMValueRef cg_int_count(CG *G, LLVMValueRef init, CgVal l, LLVMValueRef step,
                          LLVMValueRef *skip);           /* iterations - 1, and none */

/* cg_prange.c: kjit.prange loops (serial, or outlined to the thread pool) */
void cg_prange_begin(CG *G, KtySpec *sp);           /* facts, errors, notes of sp */
int cg_prange_block(CG *G, KirBlock *b);            /* 1: emitted (or skipped) here */
int cg_prange_owns(CG *G, const KirBlock *b);       /* b is in a loop outlined to workers */
void cg_prange_setup(CG *G, KirInsn *v);            /* the kjit.prange(a, b [, c]) call */
void cg_prange_tfor(CG *G, KirInsn *v);             /* the loop header's tfor call */
int cg_prange_br(CG *G, KirBlock *b, KirInsn *v);   /* 1: the header's test, emitted */

/* cg_func.c: more of the driver's pieces, for cg_version.c */
Type cg_phi_type(CG *G, const KirInsn *p);
void cg_make_phis_at(CG *G, KirBlock *b, LLVMBasicBlockRef bb, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]);
void cg_use_phis(CG *G, KirBlock *b, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]);
void cg_emit_block_at(CG *G, KirBlock *b, LLVMBasicBlockRef bb);
/* cg_peel.c: values of L used after it go through stack slots */
void cg_peel_spills(CG *G, KirLoop *L);
int cg_peel_used_outside(CG *G, KirLoop *L);   /* a value of L used after it, not by an exit phi */
/* cg_peel.c: loop metadata on latch_br, the back edge of L (no runtime
** unrolling of big bodies) */
void cg_loop_hints(CG *G, KirLoop *L, LLVMValueRef latch_br);
/* cg_prange.c: the loop facts of the function being emitted */
struct KfaFacts *cg_prange_facts(CG *G);

/* cg_version.c: loop versioning (bounds checks hoisted into one test) */
void cg_version_plan(CG *G);                  /* which loops (after the strip plan) */
void cg_version_emit(CG *G, KirLoop *L);      /* L's test and checked copy */
int cg_version_unchecked(CG *G, const KirInsn *v);   /* v's check is off here */
int cg_version_narrow_insn(CG *G, const KirInsn *v); /* 1: v emitted in 32 bits (G->narrowing) */
LLVMValueRef cg_version_i32(CG *G, LLVMValueRef x);  /* an i64 that fits, as an i32 */
void cg_version_narrow_exit(CG *G);           /* leaving the i32 copy: the counter back */
void cg_version_swap(CG *G);                  /* the nest copy's tables <-> the outer ones */
void cg_tabs_swap(CG *G, CgTabs *t);          /* t <-> G's tables */
void cg_version_plan_copy(CG *G, KirLoop *L); /* innermost L versioned in the current tables too */
/* the nest test at a prange worker's start, O's variable in [lo, hi]
** (i128); *off: the checks it proves, by id (NULL, and no test: none) */
LLVMValueRef cg_version_worker_test(CG *G, KirLoop *O, LLVMValueRef lo, LLVMValueRef hi, uint8_t **off);
void cg_fit_begin(CG *G, KirLoop *L);         /* L's single-chunk copy: blocks, here */
void cg_fit_emit(CG *G, KirLoop *L);          /* its test (count fits a chunk) and copy */
/* v (kfa_nest_invariant in O) computed before O */
CgVal cg_version_nest_val(CG *G, const KirLoop *O, const KirInsn *v);
/* cg_func.c: the chunk head of a strip-mined loop, for cg_version.c */
void cg_emit_chunk_head(CG *G, KirLoop *L);
/* cg_func.c: polls and strip-mining, for cg_prange.c */
void cg_poll_charge(CG *G, LLVMValueRef amount);   /* the countdown loses amount (> 0 or 0) */
void cg_strip_tables(CG *G);                       /* G->strip_at and co., allocated */
void cg_strip_begin(CG *G, KirLoop *L);            /* L's chunk head and counter, here */
int cg_fit_version(CG *G, const KirLoop *L);       /* 1: versioned L charged whole at its test */
int cg_loop_stores(const KirLoop *L);              /* 1: L stores to an array element */
/* cg_countloop.c: while loops counted by an integer, in chunks of its values */
KirInsn *cg_count_var(CG *G, const KirLoop *L);    /* its counter's phi, or NULL: not one */
void cg_count_head(CG *G, KirLoop *L);             /* its chunk head's charge */
int cg_count_br(CG *G, KirBlock *b);               /* 1: b's test, emitted (a header) */
int cg_count_covers(CG *G, const KirLoop *P);      /* 1: each P iteration enters one */
LLVMValueRef cg_count_first_charge(CG *G, LLVMValueRef k0, LLVMValueRef e);   /* its entry's
                                                      charge (k0 NULL: the most) */
/* cg_pollfree.c: a nest run without polls where it fits a poll period */
void cg_pollfree_plan(CG *G);                       /* which (after the version plan) */
void cg_pollfree_begin(CG *G, KirLoop *P);          /* P's test and copy: blocks, here */
void cg_pollfree_emit(CG *G, KirLoop *P);           /* the test and the copy */
LLVMBasicBlockRef cg_pollfree_entry(CG *G, KirBlock *h,   /* the test, where h has one */
                                    LLVMValueRef (**table)[3 + KJIT_MAXDIMS]);
int cg_charged_call(CG *G, const KirInsn *v);       /* cg_func.c: 1: v charges the countdown */
void cg_pollfree_swap(CG *G);                       /* the copy's tables <-> the outer ones */
void cg_pollfree_header(CG *G, const KirBlock *blk); /* blk, a header in the copy: its charge */
/* cg_pollcover.c: a loop charged for its inner loops' first chunks */
void cg_cover_plan(CG *G);                          /* which (after the strip plan) */
int cg_poll_weighed(CG *G, const KirLoop *P);       /* 1: P, strip-mined here, so charged */
int cg_poll_covered(CG *G, const KirLoop *L);       /* 1: L's first chunk charged by its parent */
LLVMValueRef cg_cover_weight(CG *G, KirLoop *P);    /* what an iteration of P charges (>= 1) */
void cg_reenter_header(CG *G, KirBlock *h);        /* cg_func.c: to h again, its phis as they are */
LLVMBasicBlockRef cg_edge_target(CG *G, KirBlock *from, KirBlock *to,
                                 LLVMValueRef (**table)[3 + KJIT_MAXDIMS]);

/* cg_lua.c: Lua values (T_LUA) in stack slots; see its head */
int cg_lua_spec_uses(const KtySpec *sp);        /* sp holds Lua values */
int cg_lua_spec_uses_deep(KtySession *S, const KtySpec *sp);   /* it or a callee */
int cg_lua_insn_uses(KtySession *S, const KtySpec *sp, const KirInsn *v);
void cg_lua_begin(CG *G, KtySpec *sp);          /* the frame, at the entry */
void cg_lua_end(CG *G);                         /* closes it (a return) */
void cg_lua_kill_after(CG *G, const KirInsn *u);   /* dead call results' slots cleared */
LLVMValueRef cg_lua_slot(CG *G, const KirInsn *v);
LLVMValueRef cg_lua_open_at(CG *G, LLVMValueRef L, int n);   /* an entry wrapper's frame */
LLVMValueRef cg_lua_table_at(CG *G, LLVMValueRef L, LLVMValueRef k);   /* slot k's table, or 0 */
LLVMValueRef cg_lua_result_slot(CG *G, const KirInsn *call, int r);
LLVMValueRef cg_lua_arg_slot(CG *G, const KirInsn *call, int i);   /* a frozen table passed on */
void cg_lua_box(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at);
CgVal cg_lua_index(CG *G, const KirInsn *v);    /* INDEX, GETFIELD */
void cg_lua_store(CG *G, const KirInsn *v);     /* SETINDEX, SETFIELD */
CgVal cg_lua_newtable(CG *G, const KirInsn *v);
/* setmetatable(t, mt) done here (ir_type.c t_lib): its value t in v's slot. */
CgVal cg_lua_setmetatable(CG *G, const KirInsn *v, CgVal *a);
CgVal cg_lua_live(CG *G, const KirInsn *v);    /* a table upvalue/global written here */
void cg_lua_setlist(CG *G, const KirInsn *v);
CgVal cg_lua_arith(CG *G, const KirInsn *v);    /* binary and unary */
CgVal cg_lua_len(CG *G, const KirInsn *v);
CgVal cg_lua_compare(CG *G, const KirInsn *v);
int cg_lua_eq_ident(const KtySpec *sp, const KirInsn *v);   /* array == array: boxed */
LLVMValueRef cg_lua_truthy(CG *G, CgVal x);
CgVal cg_lua_tonumber(CG *G, CgVal x, const KirInsn *use, int argi);
const char *cg_lua_tonumber_pre(CG *G, const KirInsn *use, int argi);   /* its "bad argument" words */
/* a Lua value stored into a kjit array's element or a record field, with
** the array's __newindex rules and words (cg_lua.c) */
CgVal cg_lua_store_number(CG *G, CgVal x, const KirInsn *use);
LLVMValueRef cg_lua_store_bool(CG *G, CgVal x, const KirInsn *use);
CgVal cg_lua_array_key(CG *G, CgVal k, const KirInsn *use, int store);
/* strings as Lua values (cg_lua.c, for cg_lib.c) */
CgVal cg_lua_inslot(CG *G, const KirInsn *v);
void cg_lua_recipe_value(CG *G, CgVal x, int64_t kslot, int64_t kint, int64_t kflt,
                         LLVMValueRef *op, LLVMValueRef *word);
void cg_lua_concat_check(CG *G, CgVal x, const KirInsn *v, int argi);
void cg_lua_concat_check2(CG *G, CgVal x, const CgVal *partner, const KirInsn *v, int argi);
void cg_lua_concat_dtype(CG *G, CgVal x, const KirInsn *v);
void cg_lua_concat_dtype_left(CG *G, CgVal x, const KirInsn *v);   /* `t.x .. kjit.f32` */
void cg_lua_concat_nilpair(CG *G, int isnil, CgVal partner, const KirInsn *v, int argi);
CgVal cg_lib_concat(CG *G, const KirInsn *v);   /* a .. b as a Lua value (cg_lib.c) */
/* "chunk\nline\nop\n" (i8*): the site of operator op ("#") at v's line, whose
** metamethod the run time calls from a trampoline there (cg_lib.c) */
LLVMValueRef cg_lib_site(CG *G, const KirInsn *v, const char *op);
/* The trampoline site of library call v of built-in id ("chunk\nline\npath\nalias"). */
LLVMValueRef cg_lib_callsite(CG *G, const KirInsn *v, int id);
int cg_lua_has_phis(CG *G, const KirBlock *to);
void cg_lua_edge(CG *G, KirBlock *from, KirBlock *to, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]);
CgVal cg_lua_phi(CG *G, const KirInsn *p, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]);
void cg_lua_make_phi(CG *G, const KirInsn *p, LLVMValueRef (*table)[3 + KJIT_MAXDIMS]);
CgVal cg_lua_to(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at);   /* a Lua value in dst */
int cg_lua_loop_uses(CG *G, const KirLoop *L);  /* L's blocks hold Lua values */
void cg_lua_triple(CG *G, CgVal x, int i, const KirInsn *at, LLVMValueRef *tag, LLVMValueRef *bits,
                   LLVMValueRef *slot);
LLVMValueRef cg_lua_operand(CG *G, CgVal x, int i, const KirInsn *at);
int cg_lua_opcode(int kop);                     /* LUA_OPADD ... of KIR_ADD ... */
LLVMValueRef cg_lua_text(CG *G, const char *s); /* a constant C string */
int cg_lua_numcapable(CgVal x);                 /* may be a number when it runs */
CgVal cg_lua_asnum(CG *G, CgVal x);             /* a Lua value's number (its tag says so) */
int cg_lua_flat_arith(CG *G, const KirInsn *v, CgVal *a, LLVMValueRef *tag, LLVMValueRef *bits);
CgVal cg_lua_mk(CG *G, LLVMValueRef slot, LLVMValueRef tag, LLVMValueRef bits);
/* a field access inline in a chain (cg_lua.c, for cg_chain.c) */
typedef struct CgLField {
  LLVMValueRef site, h;   /* its site (KlvSite*), the table's hint (i8*) */
  LLVMValueRef tv, tt;    /* the node or element looked at (i8*), its value's tag at the check */
  LLVMValueRef at;        /* where the chain reads and writes it (i8*: valid where the check holds) */
  int isnode;             /* a field's node, else an element of the array part */
  LLVMValueRef keytt;     /* a field: its node's key is a short string (i1), which
                             the probe's hit leaves out; else NULL */
} CgLField;
int cg_lua_field_inline(CG *G, const KirInsn *v);
int cg_lua_hot_at(CG *G, const KirInsn *v);   /* v in a loop or a hot function */
void cg_lua_field_probe(CG *G, const KirInsn *v, CgVal ox, CgLField *f, LLVMValueRef *hit);
LLVMValueRef cg_lua_field_site(CG *G, const KirInsn *v);
void cg_lua_field_tag(CG *G, CgLField *f);
LLVMValueRef cg_lua_field_isnum(CG *G, LLVMValueRef tt, int want);
LLVMValueRef cg_lua_field_writable(CG *G, const CgLField *f);
LLVMValueRef cg_lua_field_readable(CG *G, const CgLField *f, int want);
int cg_lua_has_view(CG *G, const KirInsn *v, CgVal ox);
void cg_lua_field_read(CG *G, const CgLField *f, LLVMValueRef *tag, LLVMValueRef *bits);
void cg_lua_field_write(CG *G, const CgLField *f, LLVMValueRef tag, LLVMValueRef bits);
void cg_lua_objof(CG *G, CgVal ox, const KirInsn *v, LLVMValueRef *otag, LLVMValueRef *obits,
                  LLVMValueRef *t);
void cg_lua_numtag(CG *G, CgVal x, LLVMValueRef *tag, LLVMValueRef *bits);
/* cg_chain.c: arithmetic on Lua values checked once per chain (its head) */
void cg_chain_plan(CG *G, KtySpec *sp);         /* at cg_lua_begin */
int cg_chain_take(CG *G, const KirInsn *v);     /* 1: v is a chain's (emitted at its last) */
void cg_chain_notrun(CG *G, const KirInsn *v);  /* v never runs: nor does its chain */
/* cg_luaview.c: the native view of a kjit array indexed as a Lua value,
** kept while no call can change what it sees (see its head) */
typedef struct CgLView {
  LLVMValueRef slot;          /* the indexed value's slot (i32) */
  LLVMValueRef tag;           /* its tag (i8: a number when not 0), or NULL: in its slot */
  const struct KltLayout *y;  /* the running Lua's layout (cg_lua.c) */
  int slots;                  /* its view's allocas (cg_luaview.c) */
  LLVMValueRef akind, adata, alen;   /* the view (cg_lview_at) */
} CgLView;
struct KltLayout;
void cg_lview_begin(CG *G, KtySpec *sp);
void cg_lview_forget(CG *G);                    /* after every call */
int cg_lview_find(CG *G, const KirInsn *obj, CgLView *V);
void cg_lview_at(CG *G, const CgLView *V, CgLView *out, LLVMBasicBlockRef none);
/* cg_callvalue.c: upvalues compiled code assigns, calls of function values */
CgVal cg_fn_getupval(CG *G, const KirInsn *v);
void cg_fn_setupval(CG *G, const KirInsn *v);
void cg_fn_call(CG *G, const KirInsn *v);
LLVMValueRef cg_fn_ctor_spread(CG *G, const KirInsn *setlist, LLVMValueRef dst);   /* {f(x)} */
void cg_fn_boxconst(CG *G, CgVal x, LLVMValueRef dst, const KirInsn *at);   /* a function constant */
/* cg_vararg.c: select(i, ...) done by compiled code (the typer's sp->varop) */
void cg_select(CG *G, const KirInsn *v);
/* ... and how many values a return gives, stored for the caller */
void cg_store_retcount(CG *G, const KirInsn *v, int n);
/* v is the select function that only calls done here use: not loaded */
int cg_select_only(CG *G, const KirInsn *v);
/* a parallel prange loop l reading '...' is refused (its worker sees no
** parameters of the function): a located compile error */
void cg_vararg_prange_check(CG *G, const KirLoop *l);
/* how many of v's n operands there are when it runs */
LLVMValueRef cg_open_count(CG *G, const KirInsn *v, int n);

/* The public entry (codegen/kcg.h) */
#endif
