/*
** resolve.c: from a Lua function value to a resolved AST.
**
** Finds the function's source with debug.getinfo, parses the whole chunk,
** picks the function by its line span (and parameter names when several
** share a span), gives every local a Var, and freezes every free name
** (upvalue or global) to the value it has now: numbers become constants,
** functions become callees, tables (math, config tables) become
** compile-time namespaces. The compiled code never looks at Lua state.
*/
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lua.h"
#include "lauxlib.h"
#include "compile.h"
#include "parse.h"
#include "buffer.h"
#include "ir/ir_builtins.h"
#include "frontend/bytecode.h"

/* ---- Session helpers ---------------------------------------------------- */

void ks_error(Session *S, KFunc *f, int line, const char *fmt, ...) {
  char body[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  if (f && line > 0)
    snprintf(S->errmsg, sizeof S->errmsg, "%s:%d: %s", f->chunkname, line, body);
  else
    snprintf(S->errmsg, sizeof S->errmsg, "%s", body);
  longjmp(*S->jb, 1);
}

void *ks_grow(Session *S, void *arr, int n, int *cap, size_t elsize) {
  if (n < *cap) return arr;
  int nc = *cap ? 2 * *cap : 8;
  void *a = ks_alloc(S, (size_t)nc * elsize);
  if (n) memcpy(a, arr, (size_t)n * elsize);
  *cap = nc;
  return a;
}

void *ks_alloc(Session *S, size_t n) {
  void *p = ka_alloc(&S->arena, n);
  if (p == NULL) {
    snprintf(S->errmsg, sizeof S->errmsg, "not enough memory");
    longjmp(*S->jb, 1);
  }
  return p;
}

/* Keeps v (at idx) alive for the session and returns its slot number. */
static int keep_value(Session *S, int idx) {
  idx = lua_absindex(S->L, idx);
  lua_rawgeti(S->L, LUA_REGISTRYINDEX, S->values_ref);
  lua_pushvalue(S->L, idx);
  lua_rawseti(S->L, -2, ++S->nvalues);
  lua_pop(S->L, 1);
  return S->nvalues;
}

/* Identifies a C function as one of the built-ins, or returns -1. */
static int builtin_of(lua_State *L, int idx) {
  static const struct { const char *name; int id; } table[] = {   /* math.* */
#define KB_ROW(id, name) { name, B_##id },
    KJIT_BUILTINS(KB_ROW)
#undef KB_ROW
  };
  lua_CFunction cf = lua_tocfunction(L, idx);
  if (cf == NULL) return -1;
  int host = kir_builtin_of(L, idx);   /* kjit.prange, kjit.cuda.grid ... */
  if (host >= 0) return host;
  lua_getglobal(L, "error");
  if (lua_tocfunction(L, -1) == cf) { lua_pop(L, 1); return B_ERROR; }
  lua_pop(L, 1);
  lua_getglobal(L, "assert");
  if (lua_tocfunction(L, -1) == cf) { lua_pop(L, 1); return B_ASSERT; }
  lua_pop(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, "math");
  if (lua_istable(L, -1)) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
      lua_getfield(L, -1, table[i].name);
      int same = lua_tocfunction(L, -1) == cf;
      lua_pop(L, 1);
      if (same) { lua_pop(L, 2); return table[i].id; }
    }
  }
  lua_pop(L, 2);   /* math, package.loaded */
  return -1;
}

/* Freezes the Lua value at idx into a compile-time constant. */
KConst ks_const_from_value(Session *S, int idx) {
  lua_State *L = S->L;
  KConst k;
  memset(&k, 0, sizeof k);
  switch (lua_type(L, idx)) {
  case LUA_TNIL: k.type = TY(T_NIL); break;
  case LUA_TBOOLEAN: k.type = TY(T_BOOL); k.v.b = lua_toboolean(L, idx); break;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) { k.type = TY(T_INT); k.v.i = lua_tointeger(L, idx); }
    else { k.type = TY(T_F64); k.v.f = lua_tonumber(L, idx); }
    break;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    k.type = TY(T_STR);
    k.str = ka_strndup(&S->arena, s, n);
    break;
  }
  case LUA_TFUNCTION: {
    int b = lua_iscfunction(L, idx) ? builtin_of(L, idx) : -1;
    if (b >= 0) { k.type = TY(T_BUILTIN); k.type.ref = b; }
    else if (lua_iscfunction(L, idx)) { k.type = TY(T_UNKNOWN); k.str = "a C function"; }
    else { k.type = TY(T_FUNC); k.tableref = keep_value(S, idx); }
    break;
  }
  case LUA_TTABLE:
    k.type = TY(T_TABLE); k.tableref = keep_value(S, idx);
    break;
  case LUA_TUSERDATA:
    /* A kjit.jit object stands for its Lua function. */
    if (luaL_testudata(L, idx, "kjit.jit") && lua_getiuservalue(L, idx, 1) == LUA_TFUNCTION) {
      k.type = TY(T_FUNC); k.tableref = keep_value(S, -1);
      lua_pop(L, 1);
      break;
    }
    if (luaL_testudata(L, idx, "kjit.jit")) lua_pop(L, 1);
    if (kir_builtin_of(L, idx) >= 0) {   /* cuda.threadIdx ... */
      k.type = TY(T_BUILTIN); k.type.ref = kir_builtin_of(L, idx);
      break;
    }
    k.type = TY(T_UNKNOWN);
    k.str = kb_test(L, idx) ? "a kjit array (pass arrays as arguments)" : "a userdata";
    break;
  default:
    k.type = TY(T_UNKNOWN); k.str = lua_typename(L, lua_type(L, idx));
    break;
  }
  return k;
}

/* ---- Name resolution ---------------------------------------------------- */

typedef struct Scope {
  Var **vars; int n, cap;
} Scope;

typedef struct Resolver {
  Session *S;
  KFunc *f;
  int fidx;               /* stack index of the Lua function */
  Var **active; int nactive, capactive;   /* visible locals, innermost last */
  Var **all; int nall, capall;
  int depth;              /* expression nesting, see KJIT_MAXEXPRDEPTH */
} Resolver;

static Var *new_var(Resolver *R, const char *name, int line) {
  Var *v = ks_alloc(R->S, sizeof *v);
  v->name = name; v->line = line; v->id = R->nall;
  R->all = ks_grow(R->S, R->all, R->nall, &R->capall, sizeof *R->all);
  R->all[R->nall++] = v;
  return v;
}

static void push_active(Resolver *R, Var *v) {
  R->active = ks_grow(R->S, R->active, R->nactive, &R->capactive, sizeof *R->active);
  R->active[R->nactive++] = v;
}

/* Resolves a free name: an upvalue of the Lua function, else a global. */
/* ---- <const> locals of enclosing functions -------------------------------
** Lua folds `local N <const> = 10` into the functions that use N: there is
** no upvalue to read, so the value comes from the source. */

/* Evaluates a constant expression Lua folds: literals, -x, and + - * on
** numbers (integers wrap). Returns 0 if e is not such a constant. */
static int const_value(Expr *e, KConst *k) {
  memset(k, 0, sizeof *k);
  switch (e->kind) {
  case E_INT: k->type = TY(T_INT); k->v.i = e->u.i; return 1;
  case E_FLT: k->type = TY(T_F64); k->v.f = e->u.f; return 1;
  case E_TRUE: case E_FALSE: k->type = TY(T_BOOL); k->v.b = e->kind == E_TRUE; return 1;
  case E_STR: k->type = TY(T_STR); k->str = e->u.str.s; return 1;
  case E_PAREN: return const_value(e->u.paren, k);
  case E_UNOP: {
    KConst a;
    if (e->u.un.op != OP_NEG || !const_value(e->u.un.a, &a)) return 0;
    if (a.type.kind == T_INT) { k->type = a.type; k->v.i = (int64_t)(0 - (uint64_t)a.v.i); return 1; }
    if (a.type.kind == T_F64) { k->type = a.type; k->v.f = -a.v.f; return 1; }
    return 0;
  }
  case E_BINOP: {
    KConst a, b;
    OpKind op = e->u.bin.op;
    if ((op != OP_ADD && op != OP_SUB && op != OP_MUL) ||
        !const_value(e->u.bin.a, &a) || !const_value(e->u.bin.b, &b)) return 0;
    if (a.type.kind == T_INT && b.type.kind == T_INT) {
      uint64_t x = (uint64_t)a.v.i, y = (uint64_t)b.v.i;
      k->type = TY(T_INT);
      k->v.i = (int64_t)(op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y);
      return 1;
    }
    if ((a.type.kind != T_INT && a.type.kind != T_F64) || (b.type.kind != T_INT && b.type.kind != T_F64))
      return 0;
    double x = a.type.kind == T_INT ? (double)a.v.i : a.v.f;
    double y = b.type.kind == T_INT ? (double)b.v.i : b.v.f;
    k->type = TY(T_F64);
    k->v.f = op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y;
    return 1;
  }
  default: return 0;
  }
}

/* Finds the `local name <const> = e` visible at `line` in block b (only
** blocks that enclose line are searched); the latest one wins. */
static Stmt *find_const(Block *b, const char *name, int line, int *slot) {
  Stmt *found = NULL;
  if (b == NULL || line < b->line || (b->lastline > 0 && line > b->lastline)) return NULL;
  for (int i = 0; i < b->n; i++) {
    Stmt *s = b->stmts[i];
    if (s->line > line) break;
    Stmt *r = NULL;
    switch (s->kind) {
    case S_LOCAL:
      for (int j = 0; j < s->u.local.nnames; j++)
        if (strcmp(s->u.local.names[j], name) == 0) {
          /* a later plain local of that name hides an earlier constant */
          found = (s->u.local.attribs[j] && strcmp(s->u.local.attribs[j], "const") == 0) ? s : NULL;
          if (found) *slot = j;
        }
      break;
    case S_DO: r = find_const(s->u.block, name, line, slot); break;
    case S_WHILE: case S_REPEAT: r = find_const(s->u.loop.body, name, line, slot); break;
    case S_FORNUM: r = find_const(s->u.fornum.body, name, line, slot); break;
    case S_FORIN: r = find_const(s->u.forin.body, name, line, slot); break;
    case S_IF:
      for (int j = 0; j < s->u.ifs.n && !r; j++) r = find_const(s->u.ifs.blocks[j], name, line, slot);
      if (!r && s->u.ifs.els) r = find_const(s->u.ifs.els, name, line, slot);
      break;
    default: break;
    }
    if (r) return r;   /* the enclosing block's own declaration is the innermost */
  }
  return found;
}

/* The folded value of an enclosing function's <const> local, if any. */
static int outer_const(Resolver *R, const char *name, KConst *k) {
  Func *fn = R->f->ast;
  for (Func *p = fn->parent; p; p = p->parent) {
    int slot = 0;
    Stmt *s = find_const(p->body, name, fn->line, &slot);
    if (s == NULL) continue;
    if (slot >= s->u.local.nexprs || !const_value(s->u.local.exprs[slot], k)) {
      /* not a folded constant: Lua made it an upvalue or nil */
      return 0;
    }
    if (k->type.kind == T_STR) k->str = ka_strndup(&R->S->arena, k->str, strlen(k->str));
    return 1;
  }
  return 0;
}

static void resolve_free(Resolver *R, const char *name) {
  KFunc *f = R->f;
  for (int i = 0; i < f->nfree; i++)
    if (strcmp(f->free[i].name, name) == 0) return;
  lua_State *L = R->S->L;
  const char *what = NULL;
  for (int i = 1; ; i++) {
    const char *up = lua_getupvalue(L, R->fidx, i);
    if (up == NULL) break;
    if (strcmp(up, name) == 0) { what = "upvalue"; break; }
    lua_pop(L, 1);
  }
  KConst folded;
  if (what == NULL && outer_const(R, name, &folded)) {
    FreeName fn = { name, folded, "constant" };
    f->free = ks_grow(R->S, f->free, f->nfree, &f->capfree, sizeof *f->free);
    f->free[f->nfree++] = fn;
    return;
  }
  if (what == NULL) {
    /* A global is _ENV.name, with _ENV this function's upvalue. */
    int found = 0;
    for (int i = 1; ; i++) {
      const char *up = lua_getupvalue(L, R->fidx, i);
      if (up == NULL) break;
      if (strcmp(up, "_ENV") == 0) { found = 1; break; }
      lua_pop(L, 1);
    }
    if (!found) lua_pushglobaltable(L);
    if (lua_istable(L, -1)) lua_getfield(L, -1, name);
    else lua_pushnil(L);
    lua_remove(L, -2);
    what = "global";
  }
  FreeName fn;
  fn.name = name;
  fn.what = what;
  fn.value = ks_const_from_value(R->S, -1);
  lua_pop(L, 1);
  f->free = ks_grow(R->S, f->free, f->nfree, &f->capfree, sizeof *f->free);
  f->free[f->nfree++] = fn;
}

static Var *lookup(Resolver *R, const char *name) {
  for (int i = R->nactive - 1; i >= 0; i--)
    if (strcmp(R->active[i]->name, name) == 0) return R->active[i];
  return NULL;
}

static void res_block(Resolver *R, Block *b);

/* Expression trees deeper than this are refused: every later stage walks
** them recursively on the C stack (Lua itself parses flat chains such as
** x + x + ... iteratively, so the parser accepts them). */
#define KJIT_MAXEXPRDEPTH 400

static void res_expr_(Resolver *R, Expr *e);

static void res_expr(Resolver *R, Expr *e) {
  if (e == NULL) return;
  if (++R->depth > KJIT_MAXEXPRDEPTH)
    ks_error(R->S, R->f, e->line, "expression too complex for compiled code "
             "(nested deeper than %d levels)", KJIT_MAXEXPRDEPTH);
  res_expr_(R, e);
  R->depth--;
}

static void res_expr_(Resolver *R, Expr *e) {
  switch (e->kind) {
  case E_NAME:
    e->u.name.var = lookup(R, e->u.name.name);
    if (e->u.name.var == NULL) resolve_free(R, e->u.name.name);
    break;
  case E_INDEX: res_expr(R, e->u.index.obj); res_expr(R, e->u.index.key); break;
  case E_FIELD: res_expr(R, e->u.field.obj); break;
  case E_CALL:
    res_expr(R, e->u.call.fn);
    for (int i = 0; i < e->u.call.nargs; i++) res_expr(R, e->u.call.args[i]);
    break;
  case E_METHCALL:
    res_expr(R, e->u.meth.obj);
    for (int i = 0; i < e->u.meth.nargs; i++) res_expr(R, e->u.meth.args[i]);
    break;
  case E_BINOP: res_expr(R, e->u.bin.a); res_expr(R, e->u.bin.b); break;
  case E_UNOP: res_expr(R, e->u.un.a); break;
  case E_PAREN: res_expr(R, e->u.paren); break;
  case E_TABLE:
    for (int i = 0; i < e->u.table.n; i++) {
      res_expr(R, e->u.table.items[i].key);
      res_expr(R, e->u.table.items[i].value);
    }
    break;
  default: break;   /* literals; E_FUNC is rejected by types.c */
  }
}

static void mark_assigned(Expr *target) {
  if (target->kind == E_NAME && target->u.name.var) target->u.name.var->nassign++;
}

static void res_stmt(Resolver *R, Stmt *s) {
  switch (s->kind) {
  case S_LOCAL: {
    for (int i = 0; i < s->u.local.nexprs; i++) res_expr(R, s->u.local.exprs[i]);
    s->u.local.vars = ks_alloc(R->S, (s->u.local.nnames + 1) * sizeof(Var *));
    for (int i = 0; i < s->u.local.nnames; i++) {
      Var *v = new_var(R, s->u.local.names[i], s->line);
      s->u.local.vars[i] = v;
    }
    for (int i = 0; i < s->u.local.nnames; i++) push_active(R, s->u.local.vars[i]);
    break;
  }
  case S_ASSIGN:
    for (int i = 0; i < s->u.assign.nexprs; i++) res_expr(R, s->u.assign.exprs[i]);
    for (int i = 0; i < s->u.assign.ntargets; i++) {
      res_expr(R, s->u.assign.targets[i]);
      mark_assigned(s->u.assign.targets[i]);
    }
    break;
  case S_CALL: res_expr(R, s->u.call); break;
  case S_DO: res_block(R, s->u.block); break;
  case S_WHILE:
    res_expr(R, s->u.loop.cond);
    res_block(R, s->u.loop.body);
    break;
  case S_REPEAT: {
    /* the condition sees the body's locals */
    int mark = R->nactive;
    Block *b = s->u.loop.body;
    for (int i = 0; i < b->n; i++) res_stmt(R, b->stmts[i]);
    res_expr(R, s->u.loop.cond);
    R->nactive = mark;
    break;
  }
  case S_IF:
    for (int i = 0; i < s->u.ifs.n; i++) {
      res_expr(R, s->u.ifs.conds[i]);
      res_block(R, s->u.ifs.blocks[i]);
    }
    if (s->u.ifs.els) res_block(R, s->u.ifs.els);
    break;
  case S_FORNUM: {
    res_expr(R, s->u.fornum.start);
    res_expr(R, s->u.fornum.limit);
    res_expr(R, s->u.fornum.step);
    int mark = R->nactive;
    Var *v = new_var(R, s->u.fornum.name, s->line);
    v->is_loopvar = 1;
    s->u.fornum.var = v;
    push_active(R, v);
    res_block(R, s->u.fornum.body);
    R->nactive = mark;
    break;
  }
  case S_FORIN: {
    for (int i = 0; i < s->u.forin.nexprs; i++) res_expr(R, s->u.forin.exprs[i]);
    int mark = R->nactive;
    s->u.forin.vars = ks_alloc(R->S, (s->u.forin.nnames + 1) * sizeof(Var *));
    for (int i = 0; i < s->u.forin.nnames; i++) {
      s->u.forin.vars[i] = new_var(R, s->u.forin.names[i], s->line);
      push_active(R, s->u.forin.vars[i]);
    }
    res_block(R, s->u.forin.body);
    R->nactive = mark;
    break;
  }
  case S_LOCALFUNC: {
    Var *v = new_var(R, s->u.localfunc.name, s->line);
    s->u.localfunc.var = v;
    push_active(R, v);
    break;
  }
  case S_FUNCTION:
    res_expr(R, s->u.function.target);
    break;
  case S_RETURN:
    for (int i = 0; i < s->u.ret.n; i++) res_expr(R, s->u.ret.exprs[i]);
    break;
  default: break;
  }
}

static void res_block(Resolver *R, Block *b) {
  int mark = R->nactive;
  for (int i = 0; i < b->n; i++) res_stmt(R, b->stmts[i]);
  R->nactive = mark;
}

/* ---- From a Lua function to a KFunc ------------------------------------- */

/* Source files larger than this are refused (a chunk name can name any
** file: /dev/zero must not be read until memory runs out). */
#define KJIT_MAX_SOURCE_BYTES ((size_t)64 << 20)

/* Reads the file `path` (a regular file only, at most
** KJIT_MAX_SOURCE_BYTES) into the arena. Opened non-blocking, so that a
** FIFO or a terminal named by a chunk name cannot hang the compile. */
static const char *read_source_file(Session *S, const char *path, size_t *len,
                                    const char *shortsrc) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    ks_error(S, NULL, 0, "%s: cannot compile: cannot open source file '%s'", shortsrc, path);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    ks_error(S, NULL, 0, "%s: cannot compile: the source '%s' is not a regular file",
             shortsrc, path);
  }
  if ((uint64_t)st.st_size > KJIT_MAX_SOURCE_BYTES) {
    close(fd);
    ks_error(S, NULL, 0, "%s: cannot compile: the source file '%s' is larger than %d MiB",
             shortsrc, path, (int)(KJIT_MAX_SOURCE_BYTES >> 20));
  }
  size_t cap = (size_t)st.st_size + 1, n = 0;
  char *buf = ka_alloc(&S->arena, cap + 1);
  if (buf == NULL) { close(fd); ks_error(S, NULL, 0, "not enough memory"); }
  /* reads at most the size fstat gave (+1 to see a file that grew) */
  for (;;) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (n == cap) break;
  }
  close(fd);
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* Reads the whole source of the function at idx into the arena. */
static const char *function_source(Session *S, int idx, size_t *len,
                                   char *shortsrc, size_t nshort) {
  lua_State *L = S->L;
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">S", &ar);
  snprintf(shortsrc, nshort, "%s", ar.short_src);
  const char *src = ar.source;
  if (src[0] == '@') return read_source_file(S, src + 1, len, shortsrc);
  if (src[0] == '=')
    ks_error(S, NULL, 0, "%s: cannot compile: the source of this function is not "
             "available (chunk loaded as '%s')", shortsrc, src);
  *len = strlen(src);
  return src;   /* the chunk string; kept alive by the function's proto */
}

/* ---- Is the file's text the text the function was loaded from? ----------
** The source read from disk may have been edited since the function was
** loaded (a hot reload). Compiling it would silently run other code, so
** the text is loaded again and the running function's binary chunk must
** appear in the new chunk's, byte for byte: code, constants, upvalue
** descriptors and the debug information (lines, local and upvalue names,
** which the resolver binds free names by), everything but the source
** name. Lua compiles the same text to the same bytes, and a nested
** function is dumped the same way alone as inside its chunk, except that
** alone it carries the source name (inside, an empty string: 0x80). */

/* A Lua 5.4 binary chunk: a 31-byte header and the main function's
** upvalue count come before the main function, which starts with its
** source name: a size (7-bit groups, most significant first, the last
** one flagged 0x80; 0 for none, else length + 1), then the bytes. */
#define CHUNK_PROLOGUE 32

/* Offset of what follows the main function's source name, or 0. */
static size_t after_source_name(const char *d, size_t n) {
  size_t i = CHUNK_PROLOGUE, size = 0;
  for (;;) {
    if (i >= n || size > (SIZE_MAX >> 7)) return 0;
    unsigned char b = (unsigned char)d[i++];
    size = (size << 7) | (b & 0x7f);
    if (b & 0x80) break;
  }
  if (size > 0 && size - 1 > n - i) return 0;
  return size > 0 ? i + size - 1 : i;
}

static void check_source_unchanged(Session *S, KFunc *f, int idx, const char *src,
                                   size_t len, const char *chunkname, int line) {
  lua_State *L = S->L;
  char err[128];
  /* as luaL_loadfile: skip a UTF-8 BOM and a first line starting with
  ** '#' (keeping its line break, so that the lines stay the same) */
  if (chunkname[0] == '@' && len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) { src += 3; len -= 3; }
  if (chunkname[0] == '@' && len > 0 && src[0] == '#') {
    size_t i = 0;
    while (i < len && src[i] != '\n') i++;
    src += i; len -= i;
  }
  size_t fn_n = 0, chunk_n = 0;
  const char *fn = kbc_dump(L, idx, 0, &S->arena, &fn_n, err, sizeof err);
  if (fn == NULL) ks_error(S, NULL, 0, "not enough memory");
  int st = luaL_loadbufferx(L, src, len, chunkname, "t");
  const char *chunk = NULL;
  if (st == LUA_OK) chunk = kbc_dump(L, -1, 0, &S->arena, &chunk_n, err, sizeof err);
  lua_pop(L, 1);   /* the new chunk, or the load's message */
  if (st == LUA_ERRMEM || (st == LUA_OK && chunk == NULL)) ks_error(S, NULL, 0, "not enough memory");
  size_t body = after_source_name(fn, fn_n);
  int same = 0;
  if (st == LUA_OK && body > 0) {
    if (fn_n == chunk_n && memcmp(fn, chunk, fn_n) == 0) {
      same = 1;   /* the chunk's main function itself */
    } else if (body > CHUNK_PROLOGUE) {
      /* nested: an empty source name (0x80), then the same bytes */
      const char *at = chunk + CHUNK_PROLOGUE, *end = chunk + chunk_n;
      size_t need = fn_n - body;
      while (!same && at < end && (size_t)(end - at) > need &&
             (at = memchr(at, 0x80, (size_t)(end - at) - need)) != NULL) {
        same = memcmp(at + 1, fn + body, need) == 0;
        at++;
      }
    }
  }
  if (!same && chunkname[0] == '@')
    ks_error(S, f, line, "cannot compile: the source file changed since this "
             "function was loaded (load it again to compile the new code)");
  if (!same)
    ks_error(S, f, line, "cannot compile: the chunk name is not the text this function "
             "was loaded from (kjit reads a string chunk's source from its name: "
             "load(text) without a name)");
}

/* Does the body of fn mention `name` (as a name expression)? Used to tell
** apart functions on the same lines by the upvalues they capture. */
static int mentions_block(Block *b, const char *name);
static int mentions_expr(Expr *e, const char *name) {
  if (e == NULL) return 0;
  switch (e->kind) {
  case E_NAME: return strcmp(e->u.name.name, name) == 0;
  case E_INDEX: return mentions_expr(e->u.index.obj, name) || mentions_expr(e->u.index.key, name);
  case E_FIELD: return mentions_expr(e->u.field.obj, name);
  case E_CALL:
    if (mentions_expr(e->u.call.fn, name)) return 1;
    for (int i = 0; i < e->u.call.nargs; i++) if (mentions_expr(e->u.call.args[i], name)) return 1;
    return 0;
  case E_METHCALL:
    if (mentions_expr(e->u.meth.obj, name)) return 1;
    for (int i = 0; i < e->u.meth.nargs; i++) if (mentions_expr(e->u.meth.args[i], name)) return 1;
    return 0;
  case E_BINOP: return mentions_expr(e->u.bin.a, name) || mentions_expr(e->u.bin.b, name);
  case E_UNOP: return mentions_expr(e->u.un.a, name);
  case E_PAREN: return mentions_expr(e->u.paren, name);
  case E_FUNC: return mentions_block(e->u.func->body, name);
  case E_TABLE:
    for (int i = 0; i < e->u.table.n; i++)
      if (mentions_expr(e->u.table.items[i].key, name) || mentions_expr(e->u.table.items[i].value, name))
        return 1;
    return 0;
  default: return 0;
  }
}

static int mentions_list(Expr **es, int n, const char *name) {
  for (int i = 0; i < n; i++) if (mentions_expr(es[i], name)) return 1;
  return 0;
}

static int mentions_block(Block *b, const char *name) {
  for (int i = 0; b && i < b->n; i++) {
    Stmt *s = b->stmts[i];
    int m = 0;
    switch (s->kind) {
    case S_LOCAL: m = mentions_list(s->u.local.exprs, s->u.local.nexprs, name); break;
    case S_ASSIGN:
      m = mentions_list(s->u.assign.exprs, s->u.assign.nexprs, name) ||
          mentions_list(s->u.assign.targets, s->u.assign.ntargets, name);
      break;
    case S_CALL: m = mentions_expr(s->u.call, name); break;
    case S_DO: m = mentions_block(s->u.block, name); break;
    case S_WHILE: case S_REPEAT:
      m = mentions_expr(s->u.loop.cond, name) || mentions_block(s->u.loop.body, name);
      break;
    case S_IF:
      for (int j = 0; j < s->u.ifs.n && !m; j++)
        m = mentions_expr(s->u.ifs.conds[j], name) || mentions_block(s->u.ifs.blocks[j], name);
      if (!m && s->u.ifs.els) m = mentions_block(s->u.ifs.els, name);
      break;
    case S_FORNUM:
      m = mentions_expr(s->u.fornum.start, name) || mentions_expr(s->u.fornum.limit, name) ||
          mentions_expr(s->u.fornum.step, name) || mentions_block(s->u.fornum.body, name);
      break;
    case S_FORIN:
      m = mentions_list(s->u.forin.exprs, s->u.forin.nexprs, name) || mentions_block(s->u.forin.body, name);
      break;
    case S_FUNCTION: m = mentions_expr(s->u.function.target, name) || mentions_block(s->u.function.func->body, name); break;
    case S_LOCALFUNC: m = mentions_block(s->u.localfunc.func->body, name); break;
    case S_RETURN: m = mentions_list(s->u.ret.exprs, s->u.ret.n, name); break;
    default: break;
    }
    if (m) return 1;
  }
  return 0;
}

/* Several functions share the span and parameters: keep the one whose
** body mentions every upvalue the Lua function captured (_ENV aside). */
static Func *by_upvalues(Session *S, Chunk *c, int fidx, int line, int lastline,
                         int np, const char *const *params) {
  Func *found = NULL;
  for (int i = 0; i < c->nfuncs; i++) {
    Func *fn = c->funcs[i];
    if (fn->line != line || fn->lastline != lastline || fn->nparams != np) continue;
    int ok = 1;
    for (int p = 0; p < np && ok; p++) ok = strcmp(fn->params[p], params[p]) == 0;
    for (int u = 1; ok; u++) {
      const char *up = lua_getupvalue(S->L, fidx, u);
      if (up == NULL) break;
      lua_pop(S->L, 1);
      if (strcmp(up, "_ENV") != 0 && !mentions_block(fn->body, up)) ok = 0;
    }
    if (!ok) continue;
    if (found) return NULL;   /* still ambiguous */
    found = fn;
  }
  return found;
}

KFunc *kr_function(Session *S, int idx) {
  lua_State *L = S->L;
  idx = lua_absindex(L, idx);
  const void *p = lua_topointer(L, idx);
  for (int i = 0; i < S->nfuncs; i++)
    if (S->funcs[i]->luaptr == p) return S->funcs[i];
  if (lua_iscfunction(L, idx))
    ks_error(S, NULL, 0, "cannot compile a C function");

  KFunc *f = ks_alloc(S, sizeof *f);
  f->luaptr = p;
  keep_value(S, idx);   /* the function stays alive while the compile runs */
  f->boundscheck = S->boundscheck;
  f->fastmath = S->fastmath;

  char shortsrc[LUA_IDSIZE + 8];
  size_t len;
  const char *src = function_source(S, idx, &len, shortsrc, sizeof shortsrc);
  f->chunkname = ka_strndup(&S->arena, shortsrc, strlen(shortsrc));
  char perr[512];
  f->chunk = kp_parse(&S->arena, src, len, f->chunkname, perr, sizeof perr);
  if (f->chunk == NULL) ks_error(S, NULL, 0, "%s", perr);
  {
    lua_Debug sar;
    lua_pushvalue(L, idx);
    lua_getinfo(L, ">S", &sar);
    if (sar.source[0] == '@')
      check_source_unchanged(S, f, idx, src, len, sar.source, sar.linedefined);
    else   /* load(text, name): the name, read as source, must be the text */
      check_source_unchanged(S, f, idx, src, len, "=?", sar.linedefined);
  }

  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">Su", &ar);
  const char *params[256];
  int np = ar.nparams;
  lua_pushvalue(L, idx);   /* lua_getlocal(L, NULL, n) reads the function on top */
  for (int i = 0; i < np && i < 256; i++) params[i] = lua_getlocal(L, NULL, i + 1);
  lua_pop(L, 1);
  int ambiguous = 0;
  f->ast = kp_find_func(f->chunk, ar.linedefined, ar.lastlinedefined, np,
                        params, &ambiguous);
  if (f->ast == NULL && ambiguous)
    f->ast = by_upvalues(S, f->chunk, idx, ar.linedefined, ar.lastlinedefined, np, params);
  if (f->ast == NULL) {
    if (ambiguous)
      ks_error(S, f, ar.linedefined, "cannot compile: several functions with the "
               "same parameters and upvalues share lines %d-%d; put them on separate lines",
               ar.linedefined, ar.lastlinedefined);
    ks_error(S, f, ar.linedefined, "cannot compile: function source not found "
             "(was the file changed since it was loaded?)");
  }
  if (f->ast->is_vararg)
    ks_error(S, f, f->ast->line, "varargs ('...') are not supported in compiled code");

  Resolver R;
  memset(&R, 0, sizeof R);
  R.S = S; R.f = f; R.fidx = idx;
  f->ast->paramvars = ks_alloc(S, (f->ast->nparams + 1) * sizeof(Var *));
  for (int i = 0; i < f->ast->nparams; i++) {
    Var *v = new_var(&R, f->ast->params[i], f->ast->line);
    f->ast->paramvars[i] = v;
    push_active(&R, v);
  }
  res_block(&R, f->ast->body);
  f->vars = R.all;
  f->nvars = R.nall;
  /* registered only now: a compile error above may be caught by a
  ** non-strict inference pass (types.c), and a later lookup must not find
  ** a half-built function (it failed again instead, with its message) */
  S->funcs = ks_grow(S, S->funcs, S->nfuncs, &S->capfuncs, sizeof *S->funcs);
  f->index = S->nfuncs;
  S->funcs[S->nfuncs++] = f;
  return f;
}

void ks_push_value(Session *S, int ref) {
  lua_rawgeti(S->L, LUA_REGISTRYINDEX, S->values_ref);
  lua_rawgeti(S->L, -1, ref);
  lua_remove(S->L, -2);
}
