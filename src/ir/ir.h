/*
** ir.h: kjit's SSA IR, built from a function's Lua 5.4 bytecode.
**
** The IR in one screen
** --------------------
** A KirFunc is one Lua prototype: blocks in reverse postorder (blocks[0]
** is the entry), each holding phis, then instructions, then one
** terminator. Every KirInsn is an SSA value (or a side effect): an
** opcode (KIR_OPS below), operand pointers (args), an immediate (k: int,
** float or string; aux: parameter, upvalue, prototype, result count),
** its source line (from lineinfo; -1 in stripped chunks), the bytecode pc
** it came from, and the name of the local variable it was first stored in
** (debug info; NULL when stripped or a temporary), for messages such as
** "(local 'v' is f64)", and its users (once per operand). Ids are dense
** (0..ninsns-1, in printing order, side effects and terminators
** included): a later pass keeps its facts (types, constants, LLVM values)
** in side tables indexed by id, one per specialization, never in the IR,
** which is built once per function and shared. kir_verify checks the
** invariants (operands dominate their uses, use lists, block shapes).
**
** Registers are renamed on the fly (Braun et al., "Simple and Efficient
** Construction of SSA Form", CC 2013): phis only where a register is read
** at a join, trivial phis removed afterwards, so a register reused for an
** integer and then a float becomes two values with a type each. MOVE
** makes no instruction. Parameters are KIR_PARAM in the entry block;
** a register read before any write is KIR_UNDEF.
**
** Lua's operators are kept as Lua defines them (KIR_ADD is Lua's '+' on
** whatever it gets; the typer picks integer, float or f32 per value).
** Constants (LOADI, LOADK, the K of ADDK, the immediates of ADDI and EQI)
** are KIR_INT/FLT/STR/NIL/TRUE/FALSE instructions at their use. Globals
** and upvalues are explicit: `math.floor(x)` is
**     %1 = getupval 0 _ENV;  %2 = getfield %1, "math";
**     %3 = getfield %2, "floor";  %5 = call %3(%4) -> 1
** and the typer freezes getupval into a constant table (any upvalue
** likewise), then folds getfield on it, so built-ins, callees (recursion
** included) and frozen numbers become constants like any other. Calls
** have a result count (aux: n, or -1 for "all", consumed by the next call,
** return or setlist through its last operand: flag KIR_F_OPEN); the k-th
** result (k >= 1) is KIR_RESULT; the call itself stands for its first.
** `error("msg")` is such a call. Arrays: `x[i]` is index, `x[i][j]` two,
** `#x` len, `x.shape` getfield; stores are setindex/setfield.
**
** Branches: KIR_BR tests Lua truthiness (succ[0] when true); comparisons
** are values (eq, lt, le; '>' and '>=' swap their operands). and/or and
** `a < b` as a value become phis of the branches. A numeric for is
**     pre:    %p = forprep %init, %limit, %step -> body, exit
**     body:   %i = phi [%p pre], [%n latch]      (the control variable)
**     latch:  %n = forloop %i, %p -> body, exit
** (forprep's value is the first control value, converted as Lua does;
** forloop's the next one); the iteration count and its checks are the
** code generator's, keyed by %p. A generic for is a call flagged
** KIR_F_TFOR at its loop header (`for i in kjit.prange(a, b)`: its
** function operand is the result of calling the frozen kjit.prange).
**
** Loops (KirLoop) come from dominators: a back edge goes to a block that
** dominates its source; the natural loop of a header unites its back
** edges. kind says fornum (its forprep and control variable recorded),
** forin (its tfor call), while (the header tests the exit), repeat (a
** latch does) or loop (break or goto only). Loops nest (parent, depth);
** each block knows its innermost loop; exits lists the blocks outside
** reached from inside. A value is loop-invariant when its block is
** outside the loop: bounds-check hoisting, loop versioning and narrow
** counters read the control variable, its forprep and the exits from
** here. A cycle that no block dominates (gotos entering it at two
** places) sets irreducible and makes no loop.
**
** Next steps: the typer (a side table of Types by id, a worklist over
** the users: phis join, "number" where int and float meet, weak
** literals, f32 stays f32) and the freezing of getupval (upvalue aux is
** lua_getupvalue's n - 1); then the code generator reads blocks, phis and
** loops instead of the AST (one LLVM block per KirBlock, phis as LLVM
** phis) through one hook table per target.
*/
#ifndef KJIT_IR_H
#define KJIT_IR_H

#include <stddef.h>
#include <stdint.h>
#include "lua.h"
#include "common/arena.h"
#include "frontend/bytecode.h"

/* X(NAME, "text"): the opcodes, grouped: values without operands,
** phis, tables and upvalues, arithmetic (binary, then unary),
** comparisons, calls, side effects, terminators. */
#define KIR_OPS(X) \
  X(PARAM, "param") X(UNDEF, "undef") X(NIL, "nil") X(TRUE, "true") \
  X(FALSE, "false") X(INT, "int") X(FLT, "flt") X(STR, "str") \
  X(GETUPVAL, "getupval") X(VARARG, "vararg") X(NEWTABLE, "newtable") \
  X(CLOSURE, "closure") \
  X(PHI, "phi") \
  X(GETFIELD, "getfield") X(INDEX, "index") \
  X(ADD, "add") X(SUB, "sub") X(MUL, "mul") X(MOD, "mod") X(POW, "pow") \
  X(DIV, "div") X(IDIV, "idiv") X(BAND, "band") X(BOR, "bor") \
  X(BXOR, "bxor") X(SHL, "shl") X(SHR, "shr") \
  X(UNM, "unm") X(BNOT, "bnot") X(NOT, "not") X(LEN, "len") \
  X(CONCAT, "concat") \
  X(EQ, "eq") X(LT, "lt") X(LE, "le") \
  X(CALL, "call") X(RESULT, "result") \
  X(NEWCELL, "newcell") X(GETCELL, "getcell") \
  X(SETFIELD, "setfield") X(SETINDEX, "setindex") X(SETUPVAL, "setupval") \
  X(SETCELL, "setcell") \
  X(SETLIST, "setlist") X(TBC, "tbc") \
  X(JMP, "jmp") X(BR, "br") X(RET, "ret") X(FORPREP, "forprep") \
  X(FORLOOP, "forloop")

typedef enum KirOp {
#define KIR_ENUM(name, text) KIR_##name,
  KIR_OPS(KIR_ENUM)
#undef KIR_ENUM
  KIR__COUNT
} KirOp;

#define KIR_ISCONST(op) ((op) >= KIR_NIL && (op) <= KIR_STR)
#define KIR_ISARITH(op) ((op) >= KIR_ADD && (op) <= KIR_SHR)
#define KIR_ISUNARY(op) ((op) >= KIR_UNM && (op) <= KIR_LEN)
#define KIR_ISTERM(op)  ((op) >= KIR_JMP)

extern const char *const kir_opname[KIR__COUNT];

/* KirInsn.flags */
#define KIR_F_OPEN 1    /* last operand is a call/vararg giving all its results */
#define KIR_F_TAIL 2    /* call: `return f(...)` (the ret follows) */
#define KIR_F_TFOR 4    /* call: a generic for's iterator call */

typedef struct KirBlock KirBlock;
typedef struct KirLoop KirLoop;
typedef struct KirInsn KirInsn;

struct KirInsn {
  uint8_t op;             /* KirOp */
  uint8_t flags;          /* KIR_F_* */
  int id;                 /* dense, in printing order */
  int line;               /* source line; -1 when stripped */
  int pc;                 /* bytecode instruction (0-based); -1 for phis */
  KirBlock *block;
  KirInsn **args; int nargs;   /* phi: one per block->preds, in order */
  int aux;                /* PARAM: index; PHI, UNDEF: register;
                             GETUPVAL/SETUPVAL: upvalue;
                             CLOSURE: prototype; CALL/VARARG: results
                             (-1 all); RESULT: k; SETLIST: first index;
                             NEWTABLE: array size (k.i: hash size) */
  union {
    lua_Integer i;        /* INT */
    lua_Number f;         /* FLT */
    struct { const char *s; size_t len; } str;  /* STR, GETFIELD, SETFIELD */
  } k;
  const char *name;       /* local variable (debug info), or NULL */
  KirInsn **users; int nusers;   /* instructions using it, once per operand */
  KirInsn *fwd;           /* builder: the value replacing a removed phi */
};

struct KirBlock {
  int id;                 /* index in KirFunc.blocks (reverse postorder) */
  int pc, lastpc;         /* its instructions; an edge block (a copy made
                             on one edge, for TESTSET) has lastpc < pc */
  KirInsn **phis; int nphis, capphis;
  KirInsn **insns; int ninsns, capinsns;
  KirInsn *term;          /* JMP, BR, RET, FORPREP or FORLOOP */
  KirBlock *succ[2]; int nsucc;
  KirBlock **preds; int npreds, cappreds;
  KirBlock *idom;         /* immediate dominator (NULL for the entry) */
  KirLoop *loop;          /* innermost loop containing it, or NULL */
};

typedef enum KirLoopKind {
  KIR_LOOP_FORNUM, KIR_LOOP_FORIN, KIR_LOOP_WHILE, KIR_LOOP_REPEAT,
  KIR_LOOP_LOOP
} KirLoopKind;

struct KirLoop {
  uint8_t kind;           /* KirLoopKind */
  int id;                 /* outer loops first (by header) */
  int line;               /* line of the loop's first instruction or its for */
  KirBlock *header;       /* dominates the loop; target of its back edges */
  KirBlock *entry;        /* the one predecessor from outside, or NULL */
  KirBlock **blocks; int nblocks;    /* header first, then in block order */
  KirBlock **latches; int nlatches;  /* sources of the back edges */
  KirBlock **exits; int nexits;      /* outside blocks with a pred inside */
  KirLoop *parent; int depth;        /* depth 1: outermost */
  KirInsn *prep;          /* FORNUM: its forprep; FORIN: its tfor call */
  KirInsn *var;           /* FORNUM: the control variable's phi (the
                             value forloop advances), or NULL */
};

typedef struct KirFunc {
  const KbcProto *proto;
  KirBlock **blocks; int nblocks;    /* reverse postorder; [0] the entry */
  KirLoop **loops; int nloops;
  int ninsns;
  int irreducible;        /* a cycle entered other than at one header */
} KirFunc;

/* Builds the SSA IR of prototype p (from kbc_decode) in A. Returns NULL
** with a message in err when the bytecode is malformed (what kbc_decode's
** checks do not cover: a test at the end, a forloop without its forprep,
** a multiple-result consumer without a producer). Every valid Lua 5.4
** function builds: unsupported constructs are the typer's to refuse. */
KirFunc *kir_build(Arena *A, const KbcProto *p, char *err, size_t errsz);

/* In kir_build's message when the IR it built failed kir_verify (it
** verifies every function; a bug of the builder, which the tests and the
** fuzz target look for in refusals). */
#define KIR_INVALID "the IR builder made invalid IR"

/* The metamethod call of arithmetic instruction v (built from p) where the
** IR differs from it (lcode.c's forms, read from v's MMBINI/MMBINK): `x -
** 1` is ADDI x -1 (IR x + -1), whose event is SUB over x and 1 (*event
** KIR_SUB, *imm 1); `1 + x` and `2.5 * x` keep x first in the IR, where
** the metamethod gets (1, x) (*flip 1). Returns 0 where v's op over its
** operands in order is the call (*event, *flip, *imm untouched). */
int kir_arith_mm(const KbcProto *p, const KirInsn *v, int *event, int *flip, lua_Integer *imm);

/* Appends the textual form of f to *buf (realloc'd; *len and *cap track
** it), for tests and f:inspect("ir"). */
void kir_print(const KirFunc *f, char **buf, size_t *len, size_t *cap);

/* kir_print with notes (the typer's types): note(ud, NULL, v) is written
** after each value's id ("%3:i64 = ..."), note(ud, b, NULL) at the end of
** each block's label line; NULL writes nothing. */
typedef const char *(*KirNote)(void *ud, const KirBlock *b, const KirInsn *v);
void kir_print_noted(const KirFunc *f, KirNote note, void *ud, char **buf,
                     size_t *len, size_t *cap);

/* Does loop l contain block b? */
int kir_inloop(const KirLoop *l, const KirBlock *b);

/* Does block a dominate block b (a == b included)? */
int kir_dominates(const KirBlock *a, const KirBlock *b);

/* Checks that f is well-formed SSA (ir_verify.c): block shapes, operands
** dominating their uses, use lists. Returns 0 with a message in err. */
int kir_verify(const KirFunc *f, char *err, size_t errsz);

#endif
