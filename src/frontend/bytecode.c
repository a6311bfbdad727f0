/*
** bytecode.c: decodes a Lua 5.4 binary chunk (the format of ldump.c and
** lundump.c) into KbcProto trees, and checks every instruction's operands.
**
** Chunk = header, byte nupvalues, function. Function = source (string),
** linedefined, lastlinedefined (varints), numparams, is_vararg, maxstack
** (bytes), code, constants, upvalues, prototypes, debug. A varint is
** big-endian 7-bit groups, the last one marked by bit 7. A string is a
** varint size+1 (0: no string) and its bytes. Integers and floats are 8
** native bytes (the header's LUAC_INT and LUAC_NUM check the byte order).
*/
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "frontend/bytecode.h"

#define OPINFO(name, fmt, a, b, c) \
  { #name, fmt, KBC_##a, KBC_##b, KBC_##c },
const KbcOpInfo kbc_opinfo[KBC_NUMOPS] = { KBC_OPCODES(OPINFO) };
#undef OPINFO

/* Nested function literals deeper than this are refused (Lua's parser
** stops at 200 C levels, so no real chunk comes near). */
#define KBC_MAXDEPTH 250
/* lineinfo value meaning "see abslineinfo" (ldebug.h ABSLINEINFO) */
#define KBC_ABSLINE (-0x80)

typedef struct Reader {
  Arena *A;
  const unsigned char *p, *end, *start;
  jmp_buf jb;
  char *err; size_t errsz;
  int nprotos, depth;
  KbcChunk *chunk;
} Reader;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3), noreturn))
#endif
static void fail(Reader *R, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(R->err, R->errsz, fmt, ap);
  va_end(ap);
  longjmp(R->jb, 1);
}

static void *alloc(Reader *R, size_t n) {
  void *p = ka_alloc(R->A, n ? n : 1);
  if (p == NULL) fail(R, "not enough memory");
  return p;
}

static size_t left(Reader *R) { return (size_t)(R->end - R->p); }

static void need(Reader *R, size_t n, const char *what) {
  if (left(R) < n)
    fail(R, "truncated binary chunk (%s at byte %zu of %zu)", what,
         (size_t)(R->p - R->start), (size_t)(R->end - R->start));
}

static int byte(Reader *R, const char *what) {
  need(R, 1, what);
  return *R->p++;
}

/* A varint no larger than limit (lundump.c loadUnsigned). */
static size_t varint(Reader *R, size_t limit, const char *what) {
  size_t x = 0;
  int b;
  limit >>= 7;
  do {
    b = byte(R, what);
    if (x >= limit) fail(R, "bad binary chunk (%s overflows)", what);
    x = (x << 7) | (size_t)(b & 0x7f);
  } while ((b & 0x80) == 0);
  return x;
}

static int intv(Reader *R, const char *what) {
  return (int)varint(R, 0x7fffffff, what);
}

/* A count of items of at least minsize bytes each: never more than the
** bytes left can hold, so a hostile count cannot ask for a huge array. */
static int count(Reader *R, size_t minsize, const char *what) {
  int n = intv(R, what);
  if ((size_t)n > left(R) / minsize)
    fail(R, "truncated binary chunk (%d %s, %zu bytes left)", n, what, left(R));
  return n;
}

/* A nullable string (NULL when absent), copied NUL-terminated. */
static const char *string(Reader *R, size_t *len, const char *what) {
  size_t size = varint(R, ~(size_t)0, what);
  if (size == 0) { *len = 0; return NULL; }
  size--;
  need(R, size, what);
  char *s = ka_strndup(R->A, (const char *)R->p, size);
  if (s == NULL) fail(R, "not enough memory");
  R->p += size;
  *len = size;
  return s;
}

static void raw(Reader *R, void *dst, size_t n, const char *what) {
  need(R, n, what);
  memcpy(dst, R->p, n);
  R->p += n;
}


/*
** {======================================================
** Header
** =======================================================
*/

static void header(Reader *R) {
  static const char sig[] = "\x1bLua", data[] = "\x19\x93\r\n\x1a\n";
  if (left(R) == 0 || R->p[0] != 0x1b) fail(R, "not a binary chunk");
  need(R, 4, "signature");
  if (memcmp(R->p, sig, 4) != 0) fail(R, "not a binary chunk");
  R->p += 4;
  int v = byte(R, "version");
  if (v != 0x54)
    fail(R, "bytecode of Lua %d.%d (kjit reads Lua 5.4 bytecode)", v >> 4, v & 15);
  int f = byte(R, "format");
  if (f != 0)
    fail(R, "bytecode format %d (kjit reads the official format 0)", f);
  need(R, 6, "header");
  if (memcmp(R->p, data, 6) != 0)
    fail(R, "corrupted binary chunk (bad conversion bytes in the header)");
  R->p += 6;
  int si = byte(R, "header"), sn = byte(R, "header"), sf = byte(R, "header");
  if (si != 4) fail(R, "instruction size %d (kjit reads 4-byte instructions)", si);
  if (sn != (int)sizeof(lua_Integer))
    fail(R, "integer size %d (kjit reads %d-byte integers)", sn, (int)sizeof(lua_Integer));
  if (sf != (int)sizeof(lua_Number))
    fail(R, "float size %d (kjit reads %d-byte floats)", sf, (int)sizeof(lua_Number));
  lua_Integer i;
  lua_Number n;
  raw(R, &i, sizeof i, "header");
  if (i != 0x5678) fail(R, "integer format mismatch (another byte order?)");
  raw(R, &n, sizeof n, "header");
  if (n != 370.5) fail(R, "float format mismatch (another float format?)");
}

/* }====================================================== */


/*
** {======================================================
** Functions
** =======================================================
*/

static KbcProto *function(Reader *R, KbcProto *parent);

static void constants(Reader *R, KbcProto *f) {
  f->nk = count(R, 1, "constants");
  f->k = alloc(R, (size_t)f->nk * sizeof *f->k);
  for (int i = 0; i < f->nk; i++) {
    KbcConst *k = &f->k[i];
    int t = byte(R, "constant");
    switch (t) {   /* type tags: lobject.h makevariant(type, variant) */
    case 0x00: k->kind = KBC_KNIL; break;
    case 0x01: k->kind = KBC_KFALSE; break;
    case 0x11: k->kind = KBC_KTRUE; break;
    case 0x03: k->kind = KBC_KINT; raw(R, &k->u.i, sizeof k->u.i, "constant"); break;
    case 0x13: k->kind = KBC_KFLT; raw(R, &k->u.f, sizeof k->u.f, "constant"); break;
    case 0x04: case 0x14:
      k->kind = KBC_KSTR;
      k->u.str.s = string(R, &k->u.str.len, "constant");
      if (k->u.str.s == NULL) fail(R, "bad binary chunk (constant %d: no string)", i);
      break;
    default: fail(R, "bad binary chunk (constant %d has type tag %d)", i, t);
    }
  }
}

static void upvalues(Reader *R, KbcProto *f) {
  f->nup = count(R, 3, "upvalues");
  if (f->nup > 255) fail(R, "bad binary chunk (%d upvalues)", f->nup);
  f->up = alloc(R, (size_t)f->nup * sizeof *f->up);
  for (int i = 0; i < f->nup; i++) {
    f->up[i].instack = (uint8_t)byte(R, "upvalue");
    f->up[i].idx = (uint8_t)byte(R, "upvalue");
    f->up[i].kind = (uint8_t)byte(R, "upvalue");
  }
}

static void protos(Reader *R, KbcProto *f) {
  f->np = count(R, 12, "prototypes");   /* a prototype takes 12 bytes or more */
  f->p = alloc(R, (size_t)f->np * sizeof *f->p);
  for (int i = 0; i < f->np; i++) f->p[i] = function(R, f);
}

/* Absolute lines: a delta per instruction from linedefined, or ABSLINE
** where the line is in abslineinfo (ldebug.c luaG_getfuncline). */
static void lines(Reader *R, KbcProto *f, const int8_t *rel, int nrel,
                  const int *abspc, const int *absline, int nabs) {
  if (nrel == 0 && nabs == 0) return;   /* stripped */
  if (nrel != f->ncode)
    fail(R, "bad binary chunk (line info for %d of %d instructions)", nrel, f->ncode);
  f->lines = alloc(R, (size_t)f->ncode * sizeof *f->lines);
  long long line = f->linedefined;
  int a = 0;
  for (int pc = 0; pc < f->ncode; pc++) {
    if (rel[pc] == KBC_ABSLINE) {
      if (a >= nabs || abspc[a] != pc)
        fail(R, "bad binary chunk (no absolute line for instruction %d)", pc + 1);
      line = absline[a++];
    }
    else line += rel[pc];
    if (line < 0 || line > 0x7fffffff)
      fail(R, "bad binary chunk (line %lld)", line);
    f->lines[pc] = (int)line;
  }
  if (a != nabs) fail(R, "bad binary chunk (unused absolute line info)");
}

static void debug(Reader *R, KbcProto *f) {
  int nrel = count(R, 1, "line info");
  int8_t *rel = alloc(R, (size_t)nrel);
  raw(R, rel, (size_t)nrel, "line info");
  int nabs = count(R, 2, "absolute line info");
  int *abspc = alloc(R, (size_t)nabs * sizeof(int));
  int *absline = alloc(R, (size_t)nabs * sizeof(int));
  for (int i = 0; i < nabs; i++) {
    abspc[i] = intv(R, "absolute line info");
    absline[i] = intv(R, "absolute line info");
  }
  lines(R, f, rel, nrel, abspc, absline, nabs);
  f->nlocvars = count(R, 3, "local variables");
  f->locvars = alloc(R, (size_t)f->nlocvars * sizeof *f->locvars);
  for (int i = 0; i < f->nlocvars; i++) {
    size_t len;
    f->locvars[i].name = string(R, &len, "local variable");
    f->locvars[i].startpc = intv(R, "local variable");
    f->locvars[i].endpc = intv(R, "local variable");
  }
  int n = count(R, 1, "upvalue names");
  if (n != 0 && n != f->nup)
    fail(R, "bad binary chunk (%d upvalue names for %d upvalues)", n, f->nup);
  for (int i = 0; i < n; i++) {
    size_t len;
    f->up[i].name = string(R, &len, "upvalue name");
  }
}

static void verify(Reader *R, KbcProto *f);

static KbcProto *function(Reader *R, KbcProto *parent) {
  if (++R->depth > KBC_MAXDEPTH)
    fail(R, "bad binary chunk (functions nested more than %d deep)", KBC_MAXDEPTH);
  KbcProto *f = alloc(R, sizeof *f);
  f->parent = parent;
  f->id = R->nprotos++;
  f->source = string(R, &f->sourcelen, "source");
  if (f->source == NULL && parent) {   /* same source as its parent */
    f->source = parent->source;
    f->sourcelen = parent->sourcelen;
  }
  f->linedefined = intv(R, "function header");
  f->lastlinedefined = intv(R, "function header");
  f->numparams = (uint8_t)byte(R, "function header");
  f->is_vararg = (uint8_t)byte(R, "function header");
  f->maxstack = (uint8_t)byte(R, "function header");
  f->ncode = count(R, 4, "instructions");
  uint32_t *code = alloc(R, (size_t)f->ncode * 4);
  raw(R, code, (size_t)f->ncode * 4, "instructions");
  f->code = code;
  constants(R, f);
  upvalues(R, f);
  protos(R, f);
  debug(R, f);
  verify(R, f);
  R->depth--;
  return f;
}

/* }====================================================== */


/*
** {======================================================
** Verifier: every operand in range, so that the IR builder can trust the
** code (Lua itself does not check: luai_verifycode is empty)
** =======================================================
*/

int kbc_jumpdest(const KbcProto *p, int pc) {
  uint32_t i = p->code[pc];
  switch (KBC_OP(i)) {
  case KBC_JMP: return pc + 1 + KBC_SJ(i);
  case KBC_FORPREP: return pc + KBC_BX(i) + 2;
  case KBC_TFORPREP: return pc + 1 + KBC_BX(i);
  case KBC_FORLOOP: case KBC_TFORLOOP: return pc + 1 - KBC_BX(i);
  default: return -1;
  }
}

int kbc_setter_of(const KbcProto *p, int pc, int a) {
  for (int i = pc - 1; i >= 0; i--) {
    uint32_t ins = p->code[i];
    int op = KBC_OP(ins);
    if (KBC_A(ins) != a || op == KBC_JMP || op == KBC_TEST || op == KBC_EQ || op == KBC_LT ||
        op == KBC_LE || op == KBC_EQK || op == KBC_EQI || op == KBC_LTI || op == KBC_LEI ||
        op == KBC_GTI || op == KBC_GEI || op == KBC_MMBIN || op == KBC_MMBINI || op == KBC_MMBINK)
      continue;
    return i;
  }
  return -1;
}

static int is_test(int op) {
  return (op >= KBC_EQ && op <= KBC_TESTSET);
}

/* Registers first..first+n-1 exist. */
static void regs(Reader *R, KbcProto *f, int pc, int first, int n) {
  if (n < 0 || first + n > f->maxstack)
    fail(R, "bad bytecode (instruction %d uses registers %d..%d of %d)",
         pc + 1, first, first + n - 1, f->maxstack);
}

static void operand(Reader *R, KbcProto *f, int pc, int kind, int v, int isk) {
  switch (kind) {
  case KBC_R: regs(R, f, pc, v, 1); break;
  case KBC_RK:
    if (isk) { if (v >= f->nk) goto badk; }
    else regs(R, f, pc, v, 1);
    break;
  case KBC_KA: case KBC_KS: case KBC_KN:
    if (v >= f->nk) goto badk;
    if (kind == KBC_KS && f->k[v].kind != KBC_KSTR)
      fail(R, "bad bytecode (instruction %d: constant %d is not a string)", pc + 1, v);
    if (kind == KBC_KN && f->k[v].kind != KBC_KINT && f->k[v].kind != KBC_KFLT)
      fail(R, "bad bytecode (instruction %d: constant %d is not a number)", pc + 1, v);
    break;
  case KBC_U:
    if (v >= f->nup)
      fail(R, "bad bytecode (instruction %d: upvalue %d of %d)", pc + 1, v, f->nup);
    break;
  case KBC_P:
    if (v >= f->np)
      fail(R, "bad bytecode (instruction %d: function %d of %d)", pc + 1, v, f->np);
    break;
  default: break;
  }
  return;
badk:
  fail(R, "bad bytecode (instruction %d: constant %d of %d)", pc + 1, v, f->nk);
}

static void verify(Reader *R, KbcProto *f) {
  if (f->numparams > f->maxstack)
    fail(R, "bad bytecode (%d parameters, %d registers)", f->numparams, f->maxstack);
  if (f->ncode == 0) fail(R, "bad bytecode (no instructions)");
  for (int pc = 0; pc < f->ncode; pc++) {
    uint32_t i = f->code[pc];
    int op = KBC_OP(i);
    if (op >= KBC_NUMOPS)
      fail(R, "bad bytecode (instruction %d: opcode %d)", pc + 1, op);
    const KbcOpInfo *oi = &kbc_opinfo[op];
    int a = KBC_A(i), k = KBC_K(i);
    int b = oi->fmt == KBC_iABC ? KBC_B(i) : KBC_BX(i);
    /* RETURN's A may be the first free register (A == maxstack) when it
    ** returns nothing: a function that closes upvalues ends in RETURN A 1 k;
    ** its case below checks the registers it returns */
    if (oi->fmt != KBC_iAx && oi->fmt != KBC_isJ && op != KBC_RETURN)
      operand(R, f, pc, oi->a, a, 0);
    if (oi->fmt == KBC_iABC || oi->fmt == KBC_iABx)
      operand(R, f, pc, oi->b, b, 0);
    if (oi->fmt == KBC_iABC) operand(R, f, pc, oi->c, KBC_C(i), k);
    int next = pc + 1 < f->ncode ? KBC_OP(f->code[pc + 1]) : -1;
    switch (op) {   /* what the table cannot say */
    case KBC_LOADKX:
      if (next != KBC_EXTRAARG || KBC_AX(f->code[pc + 1]) >= f->nk)
        fail(R, "bad bytecode (instruction %d: LOADKX without its constant)", pc + 1);
      break;
    case KBC_NEWTABLE:
      if (next != KBC_EXTRAARG)
        fail(R, "bad bytecode (instruction %d: NEWTABLE without EXTRAARG)", pc + 1);
      break;
    case KBC_SETLIST:
      if (k && next != KBC_EXTRAARG)
        fail(R, "bad bytecode (instruction %d: SETLIST without EXTRAARG)", pc + 1);
      regs(R, f, pc, a, KBC_B(i) + 1);
      break;
    case KBC_LOADNIL: regs(R, f, pc, a, KBC_B(i) + 1); break;
    case KBC_SELF: regs(R, f, pc, a, 2); break;
    case KBC_CONCAT: regs(R, f, pc, a, KBC_B(i)); break;
    case KBC_CALL: case KBC_TAILCALL:
      regs(R, f, pc, a, KBC_B(i) ? KBC_B(i) : 1);
      if (op == KBC_CALL && KBC_C(i) > 1) regs(R, f, pc, a, KBC_C(i) - 1);
      break;
    case KBC_RETURN: regs(R, f, pc, a, KBC_B(i) > 1 ? KBC_B(i) - 1 : 0); break;
    case KBC_FORPREP: case KBC_FORLOOP: regs(R, f, pc, a, 4); break;
    case KBC_TFORPREP: case KBC_TFORLOOP: regs(R, f, pc, a, 5); break;
    case KBC_TFORCALL: regs(R, f, pc, a, 4 + (KBC_C(i) > 0 ? KBC_C(i) : 1)); break;
    case KBC_VARARG: if (KBC_C(i) > 1) regs(R, f, pc, a, KBC_C(i) - 1); break;
    case KBC_EXTRAARG: {
      int prev = pc > 0 ? KBC_OP(f->code[pc - 1]) : -1;
      if (prev != KBC_LOADKX && prev != KBC_NEWTABLE && prev != KBC_SETLIST)
        fail(R, "bad bytecode (instruction %d: stray EXTRAARG)", pc + 1);
      break;
    }
    default: break;
    }
    if (is_test(op) && next != KBC_JMP)
      fail(R, "bad bytecode (instruction %d: a test not followed by a jump)", pc + 1);
    int d = kbc_jumpdest(f, pc);
    if (kbc_opinfo[op].b == KBC_J && (d < 0 || d >= f->ncode))
      fail(R, "bad bytecode (instruction %d jumps to %d, outside 1..%d)", pc + 1,
           d + 1, f->ncode);
  }
  /* no way to fall off the end (lcode.c always ends a function with a
  ** return) */
  int last = KBC_OP(f->code[f->ncode - 1]);
  if (last != KBC_RETURN && last != KBC_RETURN0 && last != KBC_RETURN1 &&
      last != KBC_JMP)
    fail(R, "bad bytecode (the last instruction is %s)", kbc_opinfo[last].name);
}

/* }====================================================== */


KbcChunk *kbc_decode(Arena *A, const char *buf, size_t len, char *err,
                     size_t errsz) {
  Reader R;
  memset(&R, 0, sizeof R);
  R.A = A;
  R.start = R.p = (const unsigned char *)buf;
  R.end = R.p + len;
  R.err = err; R.errsz = errsz;
  if (errsz) err[0] = '\0';
  if (setjmp(R.jb)) return NULL;
  header(&R);
  KbcChunk *c = alloc(&R, sizeof *c);
  c->nupvalues = byte(&R, "header");
  c->main = function(&R, NULL);
  if (c->nupvalues != c->main->nup)
    fail(&R, "bad binary chunk (%d upvalues in the header, %d in the function)",
         c->nupvalues, c->main->nup);
  if (left(&R) != 0)
    fail(&R, "bad binary chunk (%zu bytes after its end)", left(&R));
  c->nprotos = R.nprotos;
  c->stripped = c->main->lines == NULL;
  return c;
}

const char *kbc_localname(const KbcProto *p, int reg, int pc) {
  int n = reg;
  for (int i = 0; i < p->nlocvars && p->locvars[i].startpc <= pc; i++) {
    if (pc < p->locvars[i].endpc) {   /* active? */
      if (n-- == 0) {
        const char *s = p->locvars[i].name;
        return (s && s[0] != '(') ? s : NULL;
      }
    }
  }
  return NULL;
}

int kbc_line(const KbcProto *p, int pc) {
  return (p->lines && pc >= 0 && pc < p->ncode) ? p->lines[pc] : -1;
}

void kbc_disasm(const KbcProto *p, int pc, char *buf, size_t n) {
  uint32_t i = p->code[pc];
  const KbcOpInfo *oi = &kbc_opinfo[KBC_OP(i)];
  switch (oi->fmt) {
  case KBC_iABC:
    snprintf(buf, n, "%s %d %d %d%s", oi->name, KBC_A(i), KBC_B(i), KBC_C(i),
             KBC_K(i) ? "k" : "");
    break;
  case KBC_iABx: snprintf(buf, n, "%s %d %d", oi->name, KBC_A(i), KBC_BX(i)); break;
  case KBC_iAsBx: snprintf(buf, n, "%s %d %d", oi->name, KBC_A(i), KBC_SBX(i)); break;
  case KBC_iAx: snprintf(buf, n, "%s %d", oi->name, KBC_AX(i)); break;
  default: snprintf(buf, n, "%s %d", oi->name, KBC_SJ(i)); break;
  }
}
