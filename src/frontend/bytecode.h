/*
** bytecode.h: a Lua 5.4 function as its own bytecode.
**
** kjit compiles the function that runs, never a source file found by its
** chunk name: kbc_dump asks Lua for the function's binary chunk
** (lua_dump, into memory) and kbc_decode turns the chunk into prototypes
** (instructions, constants, upvalue descriptors, nested prototypes, debug
** information). Every Lua 5.4 release writes the same format (LUAC_VERSION
** 0x54, LUAC_FORMAT 0, the same 83 opcodes; tests/c/test_bytecode.c
** decodes chunks of 5.4.3, 5.4.4 and 5.4.8); any other version, format or
** number size is refused with a message naming what was found. Stripped
** chunks decode: they have no lines and no names.
**
** Everything lives in the caller's Arena, and errors are returned, never
** thrown: the decoder reads hostile or truncated input safely (every read
** is bounded by the buffer, every count by the bytes left, every operand
** checked against its table by kbc_decode before anyone uses it).
*/
#ifndef KJIT_BYTECODE_H
#define KJIT_BYTECODE_H

#include <stddef.h>
#include <stdint.h>
#include "lua.h"
#include "common/arena.h"

/* ---- Instructions --------------------------------------------------------
** 32 bits: op(7) A(8) k(1) B(8) C(8); Bx = the 17 bits above A; sJ = the 25
** bits above op; signed fields are stored in excess-K (lopcodes.h). */
#define KBC_OP(i)   ((int)((i) & 0x7f))
#define KBC_A(i)    ((int)(((i) >> 7) & 0xff))
#define KBC_K(i)    ((int)(((i) >> 15) & 1))
#define KBC_B(i)    ((int)(((i) >> 16) & 0xff))
#define KBC_C(i)    ((int)(((i) >> 24) & 0xff))
#define KBC_SB(i)   (KBC_B(i) - 127)
#define KBC_SC(i)   (KBC_C(i) - 127)
#define KBC_BX(i)   ((int)((i) >> 15))
#define KBC_SBX(i)  (KBC_BX(i) - 65535)
#define KBC_AX(i)   ((int)((i) >> 7))
#define KBC_SJ(i)   (KBC_AX(i) - 16777215)

/* Operand kinds, for the verifier and the listing: */
#define KBC_N 0    /* unused */
#define KBC_R 1    /* register */
#define KBC_KS 2   /* constant, a string */
#define KBC_KN 3   /* constant, a number */
#define KBC_KA 4   /* constant, any */
#define KBC_RK 5   /* register, or constant when k is set */
#define KBC_U 6    /* upvalue */
#define KBC_I 7    /* immediate (signed or count) */
#define KBC_J 8    /* jump offset (Bx of for loops, sJ of OP_JMP) */
#define KBC_P 9    /* nested prototype */

/*
** The Lua 5.4 opcodes, in their numbering (grep "ORDER OP" in lopcodes.h):
** X(name, format, A, B, C). Format: 0 iABC, 1 iABx, 2 iAsBx, 3 iAx, 4 isJ;
** for the Bx formats, B describes Bx.
*/
#define KBC_OPCODES(X) \
  X(MOVE, 0, R, R, N)        X(LOADI, 2, R, I, N)       X(LOADF, 2, R, I, N) \
  X(LOADK, 1, R, KA, N)      X(LOADKX, 0, R, N, N)      X(LOADFALSE, 0, R, N, N) \
  X(LFALSESKIP, 0, R, N, N)  X(LOADTRUE, 0, R, N, N)    X(LOADNIL, 0, R, I, N) \
  X(GETUPVAL, 0, R, U, N)    X(SETUPVAL, 0, R, U, N) \
  X(GETTABUP, 0, R, U, KS)   X(GETTABLE, 0, R, R, R)    X(GETI, 0, R, R, I) \
  X(GETFIELD, 0, R, R, KS) \
  X(SETTABUP, 0, U, KS, RK)  X(SETTABLE, 0, R, R, RK)   X(SETI, 0, R, I, RK) \
  X(SETFIELD, 0, R, KS, RK) \
  X(NEWTABLE, 0, R, I, I)    X(SELF, 0, R, R, RK)       X(ADDI, 0, R, R, I) \
  X(ADDK, 0, R, R, KN)       X(SUBK, 0, R, R, KN)       X(MULK, 0, R, R, KN) \
  X(MODK, 0, R, R, KN)       X(POWK, 0, R, R, KN)       X(DIVK, 0, R, R, KN) \
  X(IDIVK, 0, R, R, KN)      X(BANDK, 0, R, R, KN)      X(BORK, 0, R, R, KN) \
  X(BXORK, 0, R, R, KN)      X(SHRI, 0, R, R, I)        X(SHLI, 0, R, R, I) \
  X(ADD, 0, R, R, R)         X(SUB, 0, R, R, R)         X(MUL, 0, R, R, R) \
  X(MOD, 0, R, R, R)         X(POW, 0, R, R, R)         X(DIV, 0, R, R, R) \
  X(IDIV, 0, R, R, R)        X(BAND, 0, R, R, R)        X(BOR, 0, R, R, R) \
  X(BXOR, 0, R, R, R)        X(SHL, 0, R, R, R)         X(SHR, 0, R, R, R) \
  X(MMBIN, 0, R, R, I)       X(MMBINI, 0, R, I, I)      X(MMBINK, 0, R, KA, I) \
  X(UNM, 0, R, R, N)         X(BNOT, 0, R, R, N)        X(NOT, 0, R, R, N) \
  X(LEN, 0, R, R, N)         X(CONCAT, 0, R, I, N)      X(CLOSE, 0, R, N, N) \
  X(TBC, 0, R, N, N)         X(JMP, 4, N, J, N)         X(EQ, 0, R, R, N) \
  X(LT, 0, R, R, N)          X(LE, 0, R, R, N)          X(EQK, 0, R, KA, N) \
  X(EQI, 0, R, I, I)         X(LTI, 0, R, I, I)         X(LEI, 0, R, I, I) \
  X(GTI, 0, R, I, I)         X(GEI, 0, R, I, I)         X(TEST, 0, R, N, N) \
  X(TESTSET, 0, R, R, N)     X(CALL, 0, R, I, I)        X(TAILCALL, 0, R, I, I) \
  X(RETURN, 0, R, I, I)      X(RETURN0, 0, N, N, N)     X(RETURN1, 0, R, N, N) \
  X(FORLOOP, 1, R, J, N)     X(FORPREP, 1, R, J, N)     X(TFORPREP, 1, R, J, N) \
  X(TFORCALL, 0, R, N, I)    X(TFORLOOP, 1, R, J, N)    X(SETLIST, 0, R, I, I) \
  X(CLOSURE, 1, R, P, N)     X(VARARG, 0, R, N, I)      X(VARARGPREP, 0, I, N, N) \
  X(EXTRAARG, 3, N, N, N)

typedef enum KbcOp {
#define KBC_ENUM(name, fmt, a, b, c) KBC_##name,
  KBC_OPCODES(KBC_ENUM)
#undef KBC_ENUM
  KBC_NUMOPS
} KbcOp;

enum { KBC_iABC, KBC_iABx, KBC_iAsBx, KBC_iAx, KBC_isJ };

typedef struct KbcOpInfo {
  const char *name;       /* "MOVE", as luac -l lists it */
  uint8_t fmt, a, b, c;   /* format and operand kinds (KBC_R ...) */
} KbcOpInfo;
extern const KbcOpInfo kbc_opinfo[KBC_NUMOPS];

/* ---- Prototypes ------------------------------------------------------ */

typedef enum KbcConstKind {
  KBC_KNIL, KBC_KFALSE, KBC_KTRUE, KBC_KINT, KBC_KFLT, KBC_KSTR
} KbcConstKind;

typedef struct KbcConst {
  uint8_t kind;           /* KbcConstKind */
  union {
    lua_Integer i;
    lua_Number f;
    struct { const char *s; size_t len; } str;   /* NUL-terminated copy */
  } u;
} KbcConst;

typedef struct KbcUpval {
  uint8_t instack;        /* 1: a register of the enclosing function */
  uint8_t idx;            /* that register, or the enclosing upvalue */
  uint8_t kind;           /* VDKREG, RDKCONST, RDKTOCLOSE, RDKCTC */
  const char *name;       /* NULL when stripped */
} KbcUpval;

typedef struct KbcLocVar {
  const char *name;       /* "(for state)" and such for hidden ones */
  int startpc, endpc;     /* active in [startpc, endpc) */
} KbcLocVar;

typedef struct KbcProto KbcProto;
struct KbcProto {
  const char *source;     /* "@file.lua", "=name" or the chunk text; NULL
                             when stripped */
  size_t sourcelen;
  int linedefined, lastlinedefined;   /* 0, 0 for a main chunk */
  uint8_t numparams, is_vararg, maxstack;
  const uint32_t *code; int ncode;
  KbcConst *k; int nk;
  KbcUpval *up; int nup;
  KbcProto **p; int np;
  int *lines;             /* absolute source line of each instruction;
                             NULL when stripped */
  KbcLocVar *locvars; int nlocvars;
  KbcProto *parent;       /* NULL for the dumped function */
  int id;                 /* pre-order number, 0 for the dumped function */
};

typedef struct KbcChunk {
  KbcProto *main;         /* the dumped function */
  int nupvalues;          /* of the main closure (header byte) */
  int nprotos;            /* main and every nested prototype */
  int stripped;           /* no debug information at all */
} KbcChunk;

/* ---- API ------------------------------------------------------------- */

/* The binary chunk of the Lua function at stack index idx, in A (never a
** file: lua_dump writes into memory). strip drops the debug information.
** Returns NULL with a message in err for a C function, a non-function or
** no memory. The stack is left as it was. */
const char *kbc_dump(lua_State *L, int idx, int strip, Arena *A, size_t *len,
                     char *err, size_t errsz);

/* kbc_dump then kbc_decode: the prototypes of the Lua function at idx,
** with whatever debug information it has. NULL (and a message) also for
** a closure with another count of upvalues than its prototype (loaded
** from a damaged chunk: reading its upvalues would crash). */
KbcChunk *kbc_load(lua_State *L, int idx, Arena *A, char *err, size_t errsz);

/* Decodes a binary chunk of len bytes, checks every instruction's operands
** (registers below maxstack, constants, upvalues, prototypes and jump
** targets in range, EXTRAARG where one is needed), and computes the
** absolute line of every instruction. Returns NULL with a message in err
** on any other format or on a malformed chunk. */
KbcChunk *kbc_decode(Arena *A, const char *buf, size_t len, char *err,
                     size_t errsz);

/* The name of the local variable held by register reg just before
** instruction pc runs (as Lua's luaF_getlocalname): NULL when none, when
** stripped, or for the hidden ones ("(for state)"). */
const char *kbc_localname(const KbcProto *p, int reg, int pc);

/* Line of instruction pc, or -1 when stripped. */
int kbc_line(const KbcProto *p, int pc);

/* Where the jump of instruction pc goes: OP_JMP's target, FORPREP's and
** TFORPREP's forward target, FORLOOP's and TFORLOOP's backward target;
** -1 for other instructions. kbc_decode checks that it is in range. */
int kbc_jumpdest(const KbcProto *p, int pc);

/* The instruction that last set register a before pc, walking back in
** code order, as its index, or -1. Tests, jumps and metamethod fallbacks
** (which name registers they do not set) are skipped; control flow is
** not followed: a cost estimate's walk back, not a proof (host/callval.c,
** host/chunkpolicy.c). */
int kbc_setter_of(const KbcProto *p, int pc, int a);

/* One instruction as text ("GETTABUP 1 0 2"), as `luac -l` shows it. */
void kbc_disasm(const KbcProto *p, int pc, char *buf, size_t n);

#endif
