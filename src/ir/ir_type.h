/*
** ir_type.h: types per SSA value, per specialization (the IR typer).
**
** kty_spec types one Lua function (a KirFunc built from its bytecode) for
** one argument signature: a Type for every value, a compile-time constant
** where one is known, which blocks and edges can run, the return types,
** and the callee specialization of every call of a Lua function. The
** facts live in side tables indexed by instruction id (block id for
** blocks), in the KtySession's arena: the IR itself is shared by all the
** specializations of a function and never written.
**
** How: sparse conditional propagation (Wegman-Zadeck) over the use lists
** to a fixpoint. Values start unknown; a block is typed once an edge into
** it can run; a branch on a value that is always true (a number, an
** array) or always false (nil, the constant false) runs one edge only, so
** `c and x or y` with x a number joins y and x and nothing else; a phi
** joins the values of the edges that run. Freezing: getupval is the
** upvalue's value when the function compiles (lua_getupvalue; _ENV is the
** globals table), getfield of a constant table folds (math.floor is a
** built-in, a number a constant, a Lua function a callee), and arithmetic
** on constants folds as Lua computes it (integers wrap; `1//0` is left to
** run time). A call of a Lua function types its callee's IR for the
** argument types (one specialization per function and signature;
** recursion settles because every fact only rises in a finite lattice;
** a call's result alone may fall while types rise, when a wider argument
** picks a specialization not typed yet, so a loop header's phi joins its
** own previous type: every cycle of values passes through one; t_phi).
** Errors (located "chunk:line: message", naming the construct and the
** types) are found by one more pass once everything has settled: while
** types are still rising, an operand may be narrower than it will be.
** That pass tells apart what compiled code cannot do (a compile error)
** and the type errors Lua raises when the operation runs (arithmetic on
** nil ...): those are recorded (raises[]) and raised at run time, so that
** code that never runs on an input never fails, and what runs before them
** (stores, other errors) happens first, as interpreted.
**
** The lattice (compile.h's Type): unknown < nil, boolean, i64, f64, f32,
** number, false|number, nil|number, arrays, compile-time values < conflict.
** i64 joined with f64 (or f32) is T_NUMBER, Lua's exact rule: the code
** generator keeps the subtype at run time (see DESIGN.md §3).
**
** For the code generator (what it reads here, and what it must do):
**   - a value in a block that is not live never runs (emit nothing, or
**     unreachable); an edge whose bit is clear in edges[] never runs; a
**     value of a live block still unknown is never produced (the result
**     of a call that only raises or recurses forever);
**   - consts[id] (kind != T_UNKNOWN) is the value's compile-time constant:
**     emit it instead of the operation (getupval, getfield, folded
**     arithmetic, math.type); T_TABLE, T_BUILTIN and T_STR values have no
**     run-time representation; T_FUNC only names the callee;
**   - T_NUMBER is a tagged pair, e.g. { i1 isfloat, i64 bits } (the float
**     side's bits, f64 or f32 per fsub, in the same 64 bits): a phi of an
**     integer and a float becomes a phi of pairs (the tag set on each
**     edge); arithmetic on a number branches on the tag, each side by the
**     ordinary rule (the result types above are the join of both sides).
**     In the common case, `local s = 0; for ... s = s + x[i] end` with x
**     f64, the phi at the loop header is number only because of its entry
**     value: peel the first iteration (or version the loop on the tag), so
**     that inside the loop s is a plain double and the pair exists only at
**     the exit phi;
**   - T_MAYBE (sub, fsub, dtype: nil or false) is a pair { i1 isfalsy,
**     number }; used as a number it is checked at run time, failing as Lua;
**   - weak (printed "~") only matters to typing: a weak i64 is still i64;
**   - callees[id] is the KtySpec a call runs (its rets, nret); a CALL
**     whose type is the prange iterator (T_BUILTIN B_KJIT_PRANGE, sub 1)
**     starts a `for i in kjit.prange(a, b [, c])` loop: its operands are
**     a, b, c and the tfor call of the loop header is the control value;
**   - raises[id].msg set: the operation raises that Lua error whenever it
**     runs (a type error the interpreter finds only at run time): emit the
**     error there, at its line, after what ran before it; its value is never
**     produced (unknown), so what uses it never runs either;
**   - cuda.grid(n) and cuda.gridsize(n) give n integer results (RESULT);
**     cuda.threadIdx.x ... are getfields of a T_BUILTIN (B_IS_DIM3).
*/
#ifndef KJIT_IR_TYPE_H
#define KJIT_IR_TYPE_H

#include <setjmp.h>
#include "lua.h"
#include "common/arena.h"
#include "common/compile.h"
#include "ir/ir_builtins.h"
#include "ir/ir.h"

/* Type.sub of a T_LUA known to be a table (an argument, a constructor). */
#define KTY_LUA_TABLE 1
/* ... known to be a string (a string argument, a string the library or
** '..' made): `s:sub(i, j)` then calls the string library (ir_type.c) */
#define KTY_LUA_STRING 2

/* Type.sub of a T_BUF that is a constant array: a kjit array a kernel reads
** from an upvalue or a global (or cuda.const.array_like of one), whose
** elements are frozen into the module when it compiles (constant memory on
** the GPU), its KtyConst T_BUF with ref the value's slot; read-only. */
#define KTY_BUF_CONST 1
/* Type.sub of a T_BUF that a CPU function reads from an upvalue or a global
** it does not assign: frozen like every such value (the same array on
** every call), its memory and extents compiled in (cg_frozen.c), the
** userdata pinned for the process (runtime/luaarray.c kjit_la_pin);
** writable. Its KtyConst is T_BUF with v.i = dtype | ndim << 8 | 1 << 16. */
#define KTY_BUF_FROZEN 2
/* Pushes the frozen array of slot ref onto the session's Lua stack and
** returns it (NULL, nothing pushed, when it is no longer one). */
struct KBuffer;
struct KtySession;
struct KBuffer *kty_push_host_array(struct KtySession *S, int ref);
/* The constant array of slot ref: its elements (contiguous), their bytes,
** dtype, rank and extents. Returns 0 when the value is no longer such an
** array (a kjit bug). */
struct KtySession;
int kty_const_array(struct KtySession *S, int ref, const char **data, size_t *bytes, int *dtype,
                    int *ndim, int64_t shape[4]);

/* A compile-time constant (a literal, a frozen upvalue or field, a fold). */
typedef struct KtyConst {
  uint8_t kind;           /* T_NIL, T_BOOL, T_INT, T_F64, T_STR, T_TABLE,
                             T_FUNC, T_BUILTIN, T_BUF (KTY_BUF_CONST: v.i is
                             dtype | ndim << 8); T_UNKNOWN: not a constant */
  union { lua_Integer i; lua_Number f; int b; } v;
  const char *str; size_t len;   /* T_STR */
  int ref;                /* T_TABLE, T_FUNC: slot of the Lua value;
                             T_BUILTIN: BuiltinId */
} KtyConst;

/* An operation that raises a Lua error whenever it runs (arithmetic on a
** nil, a boolean or an array, `#` of a nil, comparing a number with nil,
** ...): the interpreter raises it only when that code runs, so compiled
** code does too, at the operation (see "For the code generator" above). */
typedef struct KtyRaise {
  const char *msg;        /* Lua's message without its position, or NULL */
  int argi;               /* the operand Lua names after it (" (local 'x')"),
                             or -1: the generator appends its description */
  int nopos;              /* raised inside a C function that adds no
                             position (math.max's comparisons) */
  const char *falsy;      /* operand argi is a number-or-nil (-false): msg
                             is raised where it holds a number, this where
                             it holds nil (false); else NULL */
} KtyRaise;

typedef struct KtySpec KtySpec;
typedef struct KtyCaller { KtySpec *spec; KirInsn *call; struct KtyCaller *next; } KtyCaller;

struct KtySpec {
  int index;              /* in the session's list (0: the first typed) */
  const void *luaptr;     /* the function's identity (lua_topointer) */
  int ref;                /* slot of the function value */
  const char *chunkname;  /* lua_getinfo's short_src, for messages */
  KirFunc *ir;
  int nargs;
  Type args[KJIT_MAXARGS];
  /* by instruction id */
  Type *types;
  KtyConst *consts;
  KtySpec **callees;      /* CALL of a Lua function: its specialization */
  KtyRaise *raises;       /* an operation that always raises when it runs */
  int *liveref;           /* a table upvalue or global this function writes
                             into (t_live in ir_type.c): the registry
                             reference compiled code reads it through, else 0 */
  /* by block id */
  uint8_t *live;          /* some edge into it runs (the entry always) */
  uint8_t *edges;         /* bit s: the edge to succ[s] runs */
  int nret;               /* -1 until a return is reached */
  Type rets[KJIT_MAXRETS];
  struct KtyJoin *retjoin;   /* what the returns gave (ir_type.c) */
  KtyCaller *callers;     /* calls to re-type when rets rise */
  int root;               /* made by kty_spec (not a callee) */
  int used;               /* a root, or called by a used one: checked and
                             printed (see mark_used) */
  /* the worklist */
  KirInsn **work; int nwork; uint8_t *queued;
  /* a function literal's specialization (ir_closure.c): clos is 1 + its
  ** KtyClosure's index (0: a Lua function value), its upvalues are the
  ** parameters after the nparams declared ones (args[nparams + u]) */
  int clos;
  int nparams;
  /* by instruction id: an upvalue compiled code assigns (ir_type.c,
  ** "Functions as values"): a getupval or setupval reaching it at run time
  ** through the registry reference upvref of its closure (else 0), upvalue
  ** upvidx (1-based) */
  int *upvref, *upvidx;
  /* a vararg function (ir_type.c, "Varargs"): specialized on how many
  ** values '...' holds and their types, which are its last nvar
  ** arguments (after the declared parameters and a literal's captures) */
  int vararg, nvar;
  /* by instruction id: a call of select done by compiled code itself
  ** (ir_type.c, "Varargs"): 0 not one, KTY_SELECT_COUNT select('#', ...),
  ** else KTY_SELECT_FROM + s: the values of select's list from the
  ** (0-based) s-th on */
  int *varop;
  /* its returns give different numbers of values (ir_type.c's
  ** ret_open_dyn): nret is the most, and how many a call gave comes back
  ** at run time (the code generator's count out-parameter) */
  int dyncount;
  int nretmin;            /* the fewest values a return gives (one ending
                             in a call whose count varies: those before
                             it), -1 until a return is reached */
  /* by instruction id: a call of a Lua value that is an escaping function
  ** literal, compiled as a direct call of that literal (ir_type.c's
  ** direct_literal) */
  uint8_t *direct;
};
#define KTY_SELECT_COUNT 1
#define KTY_SELECT_FROM 2
#define KTY_SELECT_AT (-1)   /* `local x = select(i, ...)`, i known when it runs */
/* The first argument of sp that is a value of '...'. */
#define KTY_VARBASE(sp) ((sp)->nargs - (sp)->nvar)
/* How many captured upvalues a function literal's specialization takes
** after its parameters. */
#define KTY_NCAPS(sp) ((sp)->nargs - (sp)->nparams - (sp)->nvar)

/* kty_frozen_array (ir_type.c): the numbers of a frozen table indexed by
** a computed key. */
struct KtySession;
/* The run-time name of a library built-in ("math.cos"), NULL for kjit's own. */
const char *kty_builtin_libname(int id);
/* ... or of kjit's own module functions too ("kjit.zeros"): the name
** kjit_lc_setbuiltin finds the function value by. */
const char *kty_builtin_valuename(int id);
/* How many of a call's n arguments built-in id is given where compiled code
** computes it (the rest are evaluated and ignored, as its C function
** ignores them). */
int kty_builtin_reads(int id, int n);
const char *kty_dtype_obj_name(const KtyConst *k);
/* Concatenation v checks every operand when it runs, in the VM's order
** (a number-or-nil the typer cannot place: ir_type.c t_concat). */
int kty_concat_late(const KtySpec *sp, const KirInsn *v);
/* The name call v gives built-in id in its messages: "kjit.f32" where the
** callee is a dtype object (kjit.f32 compiles as cuda.float32), else the
** built-in's own name. */
const char *kty_call_name(const KtySpec *sp, const KirInsn *v, int id);
/* Call v calls a Lua value through lua_call (a function value, or a library
** built-in given Lua values): cg_callvalue.c. */
int kty_calls_value(const KtySpec *sp, const KirInsn *v);
/* v is the select function that only calls done by compiled code itself
** use (sp->varop): never loaded at run time, so its registry reference
** binds nothing to this process (host/cache_key.c). */
int kty_select_only(const KtySpec *sp, const KirInsn *v);
/* Call v of a function value whose values all go to a return (`return
** t.f(x)`, `return 1, table.unpack(t)`): how many values it may pass on
** (the function returns as many as it gave: dyncount), else 0. */
int kty_callvalue_toret(const KtySpec *sp, const KirInsn *v);
int kty_open_dyn(const KtySpec *sp, const KirInsn *v);
int kty_callvalue_tocallee(const KtySpec *sp, const KirInsn *v);
int kty_ctor_deferred(const KtySpec *sp, const KirInsn *v);
int kty_ctor_grows(const KtySpec *sp, const KirInsn *v);
int kty_capture_argarray(const KtySpec *sp, const KirInsn *a);
/* The most items one SETLIST of a Lua table constructor stores: the VM's
** LFIELDS_PER_FLUSH (50) before it, then an open call's or '...''s values. */
#define KTY_CTOR_MAX (50 + KJIT_MAXARGS + KJIT_MAXRETS)
/* How many values v's operands from `from` on are, an open last one
** expanded (as the typer counts them; 0 for one still unknown). */
int kty_noperands(KtySpec *sp, const KirInsn *v, int from);
int kty_frozen_array(struct KtySession *S, int ref, int64_t *n, int64_t **vals, uint8_t **isf,
                     const char **why);
/* A function literal made by one specialization (T_CLOSURE's ref): its
** KIR_CLOSURE site there, and the IR of its prototype. */
typedef struct KtyClosure {
  KtySpec *parent;        /* T_CLOSURE's sub: 1 when it captures values with
                             run-time parts; its run-time value is then the
                             address of those values in the maker's frame
                             (cg_func.c, "environment") */
  const KirInsn *site;
  KirFunc *ir;
} KtyClosure;

typedef struct KtySession {
  lua_State *L;
  Arena *A;
  int values_ref;         /* registry: the Lua values constants refer to */
  int nvalues;
  KtySpec **specs; int nspecs, capspecs;
  int strict;             /* the error pass */
  int kernel;             /* typing a cuda.jit kernel: the kjit.cuda
                             built-ins, and an integer operand of an f32
                             operation computes in f32 (as CUDA C) */
  int gpu;                /* ...for the GPU: a cuda.declare_device function
                             is called as itself (T_EXTERN); elsewhere it
                             is its sim implementation (a Lua function) */
  jmp_buf *jb;
  char err[512];
  int64_t shared_bytes;   /* the error pass: static shared memory of the
                             kernel's cuda.shared.array sites so far */
  KtyClosure *clos; int nclos, capclos;   /* function literals (T_CLOSURE) */
  KtyConst *strs; int nstrs, capstrs;     /* constant strings passed to Lua
                                             functions (T_STR's ref - 1) */
  int siteopts;           /* the compile's options (KTY_SITEOPTS), recorded
                             for each call site's trampoline, for the Lua
                             functions called there to compile with them
                             (host/callval.c); 0: not recorded */
  const struct KirInsn **kept; int nkept, capkept;   /* literal sites a main chunk
                                             would leave to the interpreter that
                                             compile with it after all: one of
                                             their calls passes a value with no
                                             Lua form (ir_type.c keep_literal) */
  int *refs; int nrefs, caprefs;          /* registry references the compile's
                                             code uses (kty_ref): released by
                                             kty_close unless taken */
} KtySession;

/* The value on top, popped into a registry reference that the compiled
** code uses (a trampoline, a live upvalue's closure, a live table, a C
** function): recorded, so that it is released with the code (the driver
** takes them: kty_take_refs) or with a failed compile (kty_close). */
int kty_ref(KtySession *S);
/* ref, made elsewhere for the code (runtime/luaclosure.c's maker), recorded so. */
void kty_keep_ref(KtySession *S, int ref);
/* The recorded references, malloc'd, which the caller now owns; *n their
** count (NULL, 0 where none; out of memory: forgotten, kept as long as the
** state). */
int *kty_take_refs(KtySession *S, int *n);

/* ---- Tables compiled code writes into (ir_live.c) ----------------------------
** Per Lua state, across compiles: a table compiled code writes into by
** its name is live (read when the code runs) in every later compile; the
** jit objects whose code read it frozen before are retired through the
** hook (host/jit.c), and compile anew at their next call. */
/* registry[key] pushed, a table weak in its keys made there where missing
** (ir_live.c's sets, callval.c's per-state cache): returns 1 where made. */
int kty_push_weak_set(lua_State *L, const char *key);
/* Is the table at idx live? */
int kty_live_has(lua_State *L, int idx);
/* Marks the table at idx live; 1 when it was not (the hook has then run
** for the code that read it frozen, if any). */
int kty_live_mark(lua_State *L, int idx);
/* Owner (a jit object, at stack index owner) has code that reads fields of
** the table at tidx frozen. */
void kty_live_note_reader(lua_State *L, int tidx, int owner);
/* Does one of the Lua functions the table at tidx holds (its methods,
** a module's functions) write into it by the name of an upvalue? Those
** tables are live too, written compiled or interpreted. */
int kty_live_own_writer(lua_State *L, int tidx);
/* The same for globals, by name: is `name` assigned by compiled code;
** mark it so (1 when new: the hook has run for its frozen readers); owner
** reads it frozen. */
int kty_live_global_has(lua_State *L, const char *name, size_t len);
int kty_live_global_mark(lua_State *L, const char *name, size_t len);
void kty_live_note_global_reader(lua_State *L, const char *name, size_t len, int owner);
/* Called with the table of owners (owner -> true, at stack index readers)
** whose code read a table frozen that has just become live. */
typedef void (*KtyLiveHook)(lua_State *L, int readers);
void kty_set_live_hook(KtyLiveHook h);
/* After a compile that succeeded: the tables and globals it found
** compiled code writing take effect for later compiles (ir_live.c:
** kty_live_mark, kty_live_global_mark, which retire code that read them
** frozen). Until then they are the session's own (ir_type.c mark_live). */
void kty_live_commit(KtySession *S);
/* After a compile: notes S's frozen reads of tables (fields and elements of
** a frozen table that the used specializations fold) for the jit object at
** stack index owner. */
void kty_note_frozen_reads(KtySession *S, int owner);

/* registry[KTY_SITEOPTS_KEY][trampoline ref] = KTY_SITEOPTS(...) of the
** compile that made the trampoline (refuse3). */
#define KTY_SITEOPTS_KEY "kjit.callval.siteopts"
#define KTY_SITEOPTS(boundscheck, fastmath, opt) \
  (1 | ((boundscheck) ? 2 : 0) | ((fastmath) ? 4 : 0) | (((opt) & 0xf) << 3))
/* The entries of registry references refs[0..n) dropped from that table,
** before the references are released (their numbers are reused): with a
** failed compile (kty_close) or with the code (host/callval.c
** kcv_refs_freed). How many there were (the trampolines among them). */
int kty_forget_sites(lua_State *L, const int *refs, int n);

/* Upvalue u of a function literal's specialization: the root function's
** upvalue it is (frozen, >= 0), or -1 when it is passed as a parameter. */
int kty_clos_frozen_upval(KtySession *S, const KtySpec *sp, int u);
/* How a function literal that escapes (site v of sp) gets upvalue u
** (ir_type.c t_closure_boxed, runtime/luaclosure.c's how). */
int kty_box_how(KtySession *S, const KtySpec *sp, const KirInsn *v, int u);
/* Is upvalue u of function literal di the literal itself (`local function
** f` calling f)? */
int kty_clos_self(const KtySession *S, int di, int u);
/* The types of what function literal di captures, by upvalue (its
** specializations' parameters after their own); its count, or -1. */
int kty_clos_captures(KtySession *S, int di, Type *caps);

/* A session typing functions of L; everything in A. kty_close releases
** the values it kept. */
void kty_open(KtySession *S, lua_State *L, Arena *A);
void kty_close(KtySession *S);
/* The slot of the value at idx (a table or a function) in the session's
** values table, the same slot for the same value (constants refer to it). */
int kty_keep_value(KtySession *S, int idx);

/* Types the Lua function at stack index fidx for nargs argument types
** (missing ones are nil), and every callee it reaches. Returns its
** specialization, or NULL with the message in S->err. The stack is kept. */
KtySpec *kty_spec(KtySession *S, int fidx, int nargs, const Type *args);

/* Every specialization of the session in use as typed IR (kir_print with types:
** "%3:i64 = ...", "~" marking a weak literal, "=K" a constant; blocks
** that never run are marked "dead"), each headed by its signature. */
void kty_print(KtySession *S, char **buf, size_t *len, size_t *cap);

/* "i64", "f32[:,:]", "number", "nil|f64" ... */
const char *kty_name(Type t, char *buf, size_t n);

/* What a is known to be on the edge into `to` from its i-th predecessor:
** true (1) or false (0) when that edge leaves a branch on a itself (`c and
** x`: c is false where it reaches the join), else -1. The typer types the
** phi with a narrowed there; the code generator converts it so. */
int kty_edge_truth(const KirInsn *a, const KirBlock *to, int i);

/* The items of a table constructor typed as a shape (T_SHAPE, sub 1: the
** newtable of `kjit.zeros({n, m})` or `kjit.array({1, 2})`), in order,
** nested constructors not expanded: their count (max + 1 when more), or -1. */
int kty_ctor_items(const KirInsn *v, const KirInsn **out, int max);

/* The declaration a T_EXTERN's ref names (valid while the session keeps
** its userdata: the whole compile). */
struct KExtern;
const struct KExtern *kty_extern(KtySession *S, int ref);

#endif
