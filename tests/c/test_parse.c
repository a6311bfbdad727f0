/*
** test_parse.c: tests of the lexer and parser (lex.c, parse.c).
**
** Tree shapes are checked through an s-expression printer. Wherever Lua
** has an answer it is asked at run time through the C API: error messages
** (luaL_loadbuffer), literal values (running "return <literal>"), and the
** linedefined/lastlinedefined/numparams/is_vararg of every function, read
** from the chunk's binary dump (whose functions come in the same pre-order
** as Chunk.funcs). Real Lua files found on the system, random programs and
** random mutations of sources are checked the same way.
**
** Usage: test_parse [results-file]; writes "passed failed 0" there.
*/
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "parse.h"

static int npass, nfail;
static Arena A;
static char err[2048];
static lua_State *L;

static void check_(int ok, int line, const char *fmt, ...) {
  if (ok) { npass++; return; }
  nfail++;
  printf("FAIL (test_parse.c:%d): ", line);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}
#define CHECK(c, ...) check_((c) != 0, __LINE__, __VA_ARGS__)

/* Parses src (NUL-terminated) as "chunk"; the tree lives until the next
** call. */
static Chunk *parsen(const char *src, size_t len) {
  ka_free(&A);
  ka_init(&A);
  return kp_parse(&A, src, len, "chunk", err, sizeof err);
}
static Chunk *parse(const char *src) { return parsen(src, strlen(src)); }


/*
** {======================================================
** S-expressions
** =======================================================
*/

typedef struct Buf { char *s; size_t n, cap; } Buf;

static void bput(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (b->n + (size_t)k + 1 > b->cap) {
    b->cap = (b->n + (size_t)k + 1) * 2;
    b->s = realloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

static void pexpr(Buf *b, const Expr *e);
static void pblock(Buf *b, const Block *bl);
static void pstmt(Buf *b, const Stmt *s);

static void pflt(Buf *b, double f) {
  char t[64];
  if (isinf(f)) { bput(b, f > 0 ? "inf" : "-inf"); return; }
  if (isnan(f)) { bput(b, "nan"); return; }
  snprintf(t, sizeof t, "%.14g", f);
  bput(b, "%s%s", t, strpbrk(t, ".en") ? "" : ".0");
}

static void pstr(Buf *b, const char *s, size_t len) {
  bput(b, "\"");
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\n') bput(b, "\\n");
    else if (c == '"' || c == '\\') bput(b, "\\%c", c);
    else if (c < 32 || c >= 127) bput(b, "\\%d", c);
    else bput(b, "%c", c);
  }
  bput(b, "\"");
}

static void pexprs(Buf *b, Expr **es, int n) {
  for (int i = 0; i < n; i++) { bput(b, " "); pexpr(b, es[i]); }
}

static void pfunc(Buf *b, const Func *f) {
  bput(b, "(function (");
  for (int i = 0; i < f->nparams; i++)
    bput(b, "%s%s", i ? " " : "", f->params[i]);
  if (f->is_vararg) bput(b, "%s...", f->nparams ? " " : "");
  bput(b, ")");
  for (int i = 0; i < f->body->n; i++) {
    bput(b, " ");
    pstmt(b, f->body->stmts[i]);
  }
  bput(b, ")");
}

static void pexpr(Buf *b, const Expr *e) {
  switch (e->kind) {
    case E_NIL: bput(b, "nil"); break;
    case E_TRUE: bput(b, "true"); break;
    case E_FALSE: bput(b, "false"); break;
    case E_INT: bput(b, "%lld", (long long)e->u.i); break;
    case E_FLT: pflt(b, e->u.f); break;
    case E_STR: pstr(b, e->u.str.s, e->u.str.len); break;
    case E_VARARG: bput(b, "..."); break;
    case E_FUNC: pfunc(b, e->u.func); break;
    case E_NAME: bput(b, "%s", e->u.name.name); break;
    case E_INDEX:
      bput(b, "(index "); pexpr(b, e->u.index.obj);
      bput(b, " "); pexpr(b, e->u.index.key); bput(b, ")");
      break;
    case E_FIELD:
      bput(b, "(. "); pexpr(b, e->u.field.obj);
      bput(b, " %s)", e->u.field.name);
      break;
    case E_CALL:
      bput(b, "(call "); pexpr(b, e->u.call.fn);
      pexprs(b, e->u.call.args, e->u.call.nargs); bput(b, ")");
      break;
    case E_METHCALL:
      bput(b, "(: "); pexpr(b, e->u.meth.obj); bput(b, " %s", e->u.meth.name);
      pexprs(b, e->u.meth.args, e->u.meth.nargs); bput(b, ")");
      break;
    case E_BINOP:
      bput(b, "(%s ", kp_opname(e->u.bin.op)); pexpr(b, e->u.bin.a);
      bput(b, " "); pexpr(b, e->u.bin.b); bput(b, ")");
      break;
    case E_UNOP:
      bput(b, "(%s ", e->u.un.op == OP_NEG ? "neg"
                     : e->u.un.op == OP_BNOT ? "bnot" : kp_opname(e->u.un.op));
      pexpr(b, e->u.un.a); bput(b, ")");
      break;
    case E_TABLE:
      bput(b, "{");
      for (int i = 0; i < e->u.table.n; i++) {
        const TableItem *it = &e->u.table.items[i];
        if (i) bput(b, " ");
        if (it->kind == TI_NAMED) bput(b, "%s=", it->name);
        else if (it->kind == TI_KEYED) {
          bput(b, "["); pexpr(b, it->key); bput(b, "]=");
        }
        pexpr(b, it->value);
      }
      bput(b, "}");
      break;
    case E_PAREN:
      bput(b, "(paren "); pexpr(b, e->u.paren); bput(b, ")");
      break;
  }
}

static void pblock(Buf *b, const Block *bl) {
  bput(b, "(");
  for (int i = 0; i < bl->n; i++) {
    if (i) bput(b, " ");
    pstmt(b, bl->stmts[i]);
  }
  bput(b, ")");
}

static void pstmt(Buf *b, const Stmt *s) {
  switch (s->kind) {
    case S_LOCAL:
      bput(b, "(local (");
      for (int i = 0; i < s->u.local.nnames; i++)
        bput(b, "%s%s%s%s%s", i ? " " : "", s->u.local.names[i],
             s->u.local.attribs[i] ? "<" : "",
             s->u.local.attribs[i] ? s->u.local.attribs[i] : "",
             s->u.local.attribs[i] ? ">" : "");
      bput(b, ")");
      pexprs(b, s->u.local.exprs, s->u.local.nexprs);
      bput(b, ")");
      break;
    case S_ASSIGN:
      bput(b, "(= (");
      for (int i = 0; i < s->u.assign.ntargets; i++) {
        if (i) bput(b, " ");
        pexpr(b, s->u.assign.targets[i]);
      }
      bput(b, ")");
      pexprs(b, s->u.assign.exprs, s->u.assign.nexprs);
      bput(b, ")");
      break;
    case S_CALL: pexpr(b, s->u.call); break;
    case S_DO: bput(b, "(do "); pblock(b, s->u.block); bput(b, ")"); break;
    case S_WHILE:
      bput(b, "(while "); pexpr(b, s->u.loop.cond); bput(b, " ");
      pblock(b, s->u.loop.body); bput(b, ")");
      break;
    case S_REPEAT:
      bput(b, "(repeat "); pblock(b, s->u.loop.body); bput(b, " ");
      pexpr(b, s->u.loop.cond); bput(b, ")");
      break;
    case S_IF:
      bput(b, "(if");
      for (int i = 0; i < s->u.ifs.n; i++) {
        bput(b, " "); pexpr(b, s->u.ifs.conds[i]);
        bput(b, " "); pblock(b, s->u.ifs.blocks[i]);
      }
      if (s->u.ifs.els) { bput(b, " else "); pblock(b, s->u.ifs.els); }
      bput(b, ")");
      break;
    case S_FORNUM:
      bput(b, "(for %s ", s->u.fornum.name); pexpr(b, s->u.fornum.start);
      bput(b, " "); pexpr(b, s->u.fornum.limit);
      if (s->u.fornum.step) { bput(b, " "); pexpr(b, s->u.fornum.step); }
      bput(b, " "); pblock(b, s->u.fornum.body); bput(b, ")");
      break;
    case S_FORIN:
      bput(b, "(forin (");
      for (int i = 0; i < s->u.forin.nnames; i++)
        bput(b, "%s%s", i ? " " : "", s->u.forin.names[i]);
      bput(b, ") (");
      for (int i = 0; i < s->u.forin.nexprs; i++) {
        if (i) bput(b, " ");
        pexpr(b, s->u.forin.exprs[i]);
      }
      bput(b, ") "); pblock(b, s->u.forin.body); bput(b, ")");
      break;
    case S_FUNCTION:
      bput(b, "(fstat%s ", s->u.function.is_method ? ":" : "");
      pexpr(b, s->u.function.target); bput(b, " ");
      pfunc(b, s->u.function.func); bput(b, ")");
      break;
    case S_LOCALFUNC:
      bput(b, "(localfunc %s ", s->u.localfunc.name);
      pfunc(b, s->u.localfunc.func); bput(b, ")");
      break;
    case S_RETURN:
      bput(b, "(return"); pexprs(b, s->u.ret.exprs, s->u.ret.n); bput(b, ")");
      break;
    case S_BREAK: bput(b, "break"); break;
    case S_GOTO: bput(b, "(goto %s)", s->u.label); break;
    case S_LABEL: bput(b, "(label %s)", s->u.label); break;
    case S_EMPTY: bput(b, ";"); break;
  }
}

/* The main body of a chunk as s-expressions, or "ERROR: msg". */
static char *sexpr_chunk(const char *src) {
  static Buf b;
  b.n = 0;
  bput(&b, "");
  Chunk *c = parse(src);
  if (c == NULL) { bput(&b, "ERROR: %s", err); return b.s; }
  for (int i = 0; i < c->main->body->n; i++) {
    if (i) bput(&b, " ");
    pstmt(&b, c->main->body->stmts[i]);
  }
  return b.s;
}

/* The expression of "return <src>". */
static char *sexpr_expr(const char *src) {
  static Buf b;
  char *s = malloc(strlen(src) + 8);
  sprintf(s, "return %s", src);
  b.n = 0;
  bput(&b, "");
  Chunk *c = parse(s);
  free(s);
  if (c == NULL) { bput(&b, "ERROR: %s", err); return b.s; }
  Stmt *r = c->main->body->stmts[0];
  for (int i = 0; i < r->u.ret.n; i++) {
    if (i) bput(&b, " ");
    pexpr(&b, r->u.ret.exprs[i]);
  }
  return b.s;
}

/* }====================================================== */


/*
** {======================================================
** Walking the tree: ids, parents
** =======================================================
*/

typedef struct Walk {
  unsigned char *seen;   /* per expression id */
  int n, bad;
  int nexprs;
  int want;              /* an ExprKind to look for, or -1 */
  Expr *found;           /* the first one, in pre-order */
} Walk;

static void wblock(Walk *w, const Block *bl);

static void wexpr(Walk *w, const Expr *e) {
  if (e == NULL) { w->bad++; return; }
  if (w->want >= 0 && w->found == NULL && (int)e->kind == w->want)
    w->found = (Expr *)e;
  if (e->id < 0 || e->id >= w->nexprs || w->seen[e->id]) w->bad++;
  else w->seen[e->id] = 1;
  w->n++;
  switch (e->kind) {
    case E_FUNC: wblock(w, e->u.func->body); break;
    case E_INDEX: wexpr(w, e->u.index.obj); wexpr(w, e->u.index.key); break;
    case E_FIELD: wexpr(w, e->u.field.obj); break;
    case E_CALL:
      wexpr(w, e->u.call.fn);
      for (int i = 0; i < e->u.call.nargs; i++) wexpr(w, e->u.call.args[i]);
      break;
    case E_METHCALL:
      wexpr(w, e->u.meth.obj);
      for (int i = 0; i < e->u.meth.nargs; i++) wexpr(w, e->u.meth.args[i]);
      break;
    case E_BINOP: wexpr(w, e->u.bin.a); wexpr(w, e->u.bin.b); break;
    case E_UNOP: wexpr(w, e->u.un.a); break;
    case E_TABLE:
      for (int i = 0; i < e->u.table.n; i++) {
        if (e->u.table.items[i].kind == TI_KEYED)
          wexpr(w, e->u.table.items[i].key);
        wexpr(w, e->u.table.items[i].value);
      }
      break;
    case E_PAREN: wexpr(w, e->u.paren); break;
    default: break;
  }
}

static void wexprs(Walk *w, Expr **es, int n) {
  for (int i = 0; i < n; i++) wexpr(w, es[i]);
}

static void wstmt(Walk *w, const Stmt *s) {
  switch (s->kind) {
    case S_LOCAL: wexprs(w, s->u.local.exprs, s->u.local.nexprs); break;
    case S_ASSIGN:
      wexprs(w, s->u.assign.targets, s->u.assign.ntargets);
      wexprs(w, s->u.assign.exprs, s->u.assign.nexprs);
      break;
    case S_CALL: wexpr(w, s->u.call); break;
    case S_DO: wblock(w, s->u.block); break;
    case S_WHILE: case S_REPEAT:
      wexpr(w, s->u.loop.cond); wblock(w, s->u.loop.body); break;
    case S_IF:
      for (int i = 0; i < s->u.ifs.n; i++) {
        wexpr(w, s->u.ifs.conds[i]); wblock(w, s->u.ifs.blocks[i]);
      }
      if (s->u.ifs.els) wblock(w, s->u.ifs.els);
      break;
    case S_FORNUM:
      wexpr(w, s->u.fornum.start); wexpr(w, s->u.fornum.limit);
      if (s->u.fornum.step) wexpr(w, s->u.fornum.step);
      wblock(w, s->u.fornum.body);
      break;
    case S_FORIN:
      wexprs(w, s->u.forin.exprs, s->u.forin.nexprs);
      wblock(w, s->u.forin.body);
      break;
    case S_FUNCTION:
      wexpr(w, s->u.function.target); wblock(w, s->u.function.func->body);
      break;
    case S_LOCALFUNC: wblock(w, s->u.localfunc.func->body); break;
    case S_RETURN: wexprs(w, s->u.ret.exprs, s->u.ret.n); break;
    default: break;
  }
}

static void wblock(Walk *w, const Block *bl) {
  if (bl == NULL) { w->bad++; return; }
  for (int i = 0; i < bl->n; i++) wstmt(w, bl->stmts[i]);
}

/* Every expression reachable once, ids 0..nexprs-1 all used; funcs[i]->id
** == i, parents precede children. Returns 1 if all is well. */
static int check_tree(const Chunk *c) {
  Walk w = {calloc((size_t)c->nexprs + 1, 1), 0, 0, c->nexprs, -1, NULL};
  wblock(&w, c->main->body);
  free(w.seen);
  if (w.bad || w.n != c->nexprs) return 0;
  if (c->nfuncs < 1 || c->funcs[0] != c->main || c->main->parent) return 0;
  for (int i = 0; i < c->nfuncs; i++) {
    Func *f = c->funcs[i];
    if (f->id != i || f->body == NULL) return 0;
    if (i > 0 && (f->parent == NULL || f->parent->id >= i)) return 0;
  }
  return 1;
}

/* The first expression of a kind in the chunk, in pre-order. */
static Expr *find_expr(const Chunk *c, ExprKind k) {
  Walk w = {calloc((size_t)c->nexprs + 1, 1), 0, 0, c->nexprs, (int)k, NULL};
  wblock(&w, c->main->body);
  free(w.seen);
  return w.found;
}

/* }====================================================== */


/*
** {======================================================
** Asking Lua
** =======================================================
*/

typedef struct FInfo { long line, lastline; int nparams, vararg; } FInfo;
typedef struct FList { FInfo *a; int n, cap; } FList;

typedef struct Rd { const unsigned char *p, *end; int ok; } Rd;

static size_t rdsize(Rd *r) {
  size_t x = 0;
  int b;
  do {
    if (r->p >= r->end) { r->ok = 0; return 0; }
    b = *r->p++;
    x = (x << 7) | (size_t)(b & 0x7f);
  } while (!(b & 0x80));
  return x;
}
static void rdskip(Rd *r, size_t n) {
  if ((size_t)(r->end - r->p) < n) { r->ok = 0; r->p = r->end; }
  else r->p += n;
}
static int rdbyte(Rd *r) {
  if (r->p >= r->end) { r->ok = 0; return 0; }
  return *r->p++;
}
static void rdstring(Rd *r) { size_t n = rdsize(r); if (n) rdskip(r, n - 1); }

/* Reads one function of a Lua 5.4 dump (ldump.c), in pre-order. */
static void rdfunc(Rd *r, FList *out, int depth) {
  if (!r->ok || depth > 300) { r->ok = 0; return; }
  rdstring(r);  /* source */
  FInfo fi;
  fi.line = (long)rdsize(r);
  fi.lastline = (long)rdsize(r);
  fi.nparams = rdbyte(r);
  fi.vararg = rdbyte(r);
  rdbyte(r);  /* maxstacksize */
  if (out->n == out->cap) {
    out->cap = out->cap ? out->cap * 2 : 16;
    out->a = realloc(out->a, (size_t)out->cap * sizeof(FInfo));
  }
  out->a[out->n++] = fi;
  rdskip(r, rdsize(r) * 4);  /* code */
  for (size_t n = rdsize(r), i = 0; i < n && r->ok; i++) {  /* constants */
    int tt = rdbyte(r);
    if (tt == 0x03 || tt == 0x13) rdskip(r, 8);
    else if (tt == 0x04 || tt == 0x14) rdstring(r);
  }
  rdskip(r, rdsize(r) * 3);  /* upvalues */
  for (size_t n = rdsize(r), i = 0; i < n && r->ok; i++)
    rdfunc(r, out, depth + 1);
  rdskip(r, rdsize(r));  /* lineinfo */
  for (size_t n = rdsize(r), i = 0; i < n && r->ok; i++) {
    rdsize(r); rdsize(r);
  }
  for (size_t n = rdsize(r), i = 0; i < n && r->ok; i++) {
    rdstring(r); rdsize(r); rdsize(r);
  }
  for (size_t n = rdsize(r), i = 0; i < n && r->ok; i++) rdstring(r);
}

static int writer(lua_State *l, const void *p, size_t sz, void *ud) {
  (void)l;
  Buf *b = ud;
  if (b->n + sz > b->cap) {
    b->cap = (b->n + sz) * 2;
    b->s = realloc(b->s, b->cap);
  }
  memcpy(b->s + b->n, p, sz);
  b->n += sz;
  return 0;
}

/* Functions of the chunk loaded on top of L's stack (popped). */
static int lua_funcs(FList *out) {
  static Buf b;
  b.n = 0;
  out->n = 0;
  lua_dump(L, writer, &b, 1);
  lua_pop(L, 1);
  Rd r = {(const unsigned char *)b.s, (const unsigned char *)b.s + b.n, 1};
  if (b.n < 32 || memcmp(b.s, "\x1bLua\x54", 5) != 0) return 0;
  rdskip(&r, 31 + 1);  /* header, number of upvalues */
  rdfunc(&r, out, 0);
  return r.ok;
}

/* Lua's message for src, or NULL if it loads (then left on the stack). */
static const char *lua_load_msg(const char *src, size_t len) {
  if (luaL_loadbufferx(L, src, len, "=chunk", "t") == LUA_OK) return NULL;
  static char msg[sizeof err];
  snprintf(msg, sizeof msg, "%s", lua_tostring(L, -1));
  lua_pop(L, 1);
  return msg;
}

/* Compares our functions with Lua's (lines, parameters, vararg). */
static int same_funcs(const Chunk *c, FList *fl, const char *what,
                      int verbose) {
  if (fl->n != c->nfuncs) {
    if (verbose) printf("  %s: %d functions, Lua has %d\n", what, c->nfuncs,
                        fl->n);
    return 0;
  }
  for (int i = 0; i < fl->n; i++) {
    Func *f = c->funcs[i];
    FInfo *g = &fl->a[i];
    if (f->line != g->line || f->lastline != g->lastline ||
        f->nparams != g->nparams || (f->is_vararg != 0) != (g->vararg != 0)) {
      if (verbose)
        printf("  %s: function %d: ours %d-%d (%d params%s), Lua %ld-%ld "
               "(%d%s)\n", what, i, f->line, f->lastline, f->nparams,
               f->is_vararg ? ", vararg" : "", g->line, g->lastline,
               g->nparams, g->vararg ? ", vararg" : "");
      return 0;
    }
  }
  return 1;
}

/* Known differences with Lua: limits kjit's parser does not model
** (registers, upvalues) and the nesting limit's message. */
static int known_difference(const char *lmsg, const char *ours) {
  if (lmsg == NULL) return 0;
  if (strstr(lmsg, "C stack overflow"))
    return ours == NULL || strstr(ours, "too many syntax levels") != NULL;
  return strstr(lmsg, "registers") || strstr(lmsg, "upvalues") ||
         strstr(lmsg, "control structure too long");
}

typedef enum { DIFF_SAME, DIFF_KNOWN, DIFF_BAD } DiffResult;

/* Parses src with kp_parse and with Lua and compares everything: the
** outcome, the message, the functions' lines. */
static DiffResult diff_lua(const char *src, size_t len, const char *what,
                           int verbose) {
  static FList fl;
  const char *lmsg = lua_load_msg(src, len);
  Chunk *c = parsen(src, len);
  if (lmsg == NULL) lua_funcs(&fl);  /* pops the function */
  if (known_difference(lmsg, c ? NULL : err)) return DIFF_KNOWN;
  if (lmsg && c) {
    if (verbose) printf("  %s: Lua fails (%s), kp_parse succeeds\n", what,
                        lmsg);
    return DIFF_BAD;
  }
  if (!lmsg && !c) {
    if (verbose) printf("  %s: Lua succeeds, kp_parse fails (%s)\n", what,
                        err);
    return DIFF_BAD;
  }
  if (lmsg) {
    if (strcmp(lmsg, err) != 0) {
      if (verbose) printf("  %s: messages differ:\n    Lua:  %s\n    ours: %s\n",
                          what, lmsg, err);
      return DIFF_BAD;
    }
    return DIFF_SAME;
  }
  if (!check_tree(c)) {
    if (verbose) printf("  %s: bad tree (ids or funcs)\n", what);
    return DIFF_BAD;
  }
  return same_funcs(c, &fl, what, verbose) ? DIFF_SAME : DIFF_BAD;
}

/* }====================================================== */


/*
** {======================================================
** Tree shapes
** =======================================================
*/

static void expect_expr(int line, const char *src, const char *want) {
  const char *got = sexpr_expr(src);
  check_(strcmp(got, want) == 0, line, "expr %s\n   want %s\n   got  %s",
         src, want, got);
}
#define EXPR(src, want) expect_expr(__LINE__, src, want)

static void expect_chunk(int line, const char *src, const char *want) {
  const char *got = sexpr_chunk(src);
  check_(strcmp(got, want) == 0, line, "chunk %s\n   want %s\n   got  %s",
         src, want, got);
}
#define CHUNK(src, want) expect_chunk(__LINE__, src, want)

static void test_precedence(void) {
  EXPR("1 + 2 * 3", "(+ 1 (* 2 3))");
  EXPR("1 * 2 + 3", "(+ (* 1 2) 3)");
  EXPR("1 - 2 - 3", "(- (- 1 2) 3)");
  EXPR("a / b // c % d * e", "(* (% (// (/ a b) c) d) e)");
  EXPR("a .. b .. c", "(.. a (.. b c))");
  EXPR("2 ^ 3 ^ 2", "(^ 2 (^ 3 2))");
  EXPR("-x ^ 2", "(neg (^ x 2))");
  EXPR("-2 ^ -2", "(neg (^ 2 (neg 2)))");
  EXPR("2 ^ -3", "(^ 2 (neg 3))");
  EXPR("x ^ y ^ -z", "(^ x (^ y (neg z)))");
  EXPR("not a == b", "(== (not a) b)");
  EXPR("not not x", "(not (not x))");
  EXPR("- - x", "(neg (neg x))");
  EXPR("#t + 1", "(+ (# t) 1)");
  EXPR("#t ^ 2", "(# (^ t 2))");
  EXPR("~a ~ b", "(~ (bnot a) b)");
  EXPR("~~a", "(bnot (bnot a))");
  EXPR("a or b and c", "(or a (and b c))");
  EXPR("a and b or c and d", "(or (and a b) (and c d))");
  EXPR("a or b or c", "(or (or a b) c)");
  EXPR("a < b == c", "(== (< a b) c)");
  EXPR("a >= b ~= c", "(~= (>= a b) c)");
  EXPR("a > b <= c", "(<= (> a b) c)");
  EXPR("a == b and c ~= d", "(and (== a b) (~= c d))");
  EXPR("a | b ~ c & d << e .. f + g * h ^ i",
       "(| a (~ b (& c (<< d (.. e (+ f (* g (^ h i))))))))");
  EXPR("a ^ b * c + d .. e << f & g ~ h | i",
       "(| (~ (& (<< (.. (+ (* (^ a b) c) d) e) f) g) h) i)");
  EXPR("a << b >> c", "(>> (<< a b) c)");
  EXPR("a | b | c", "(| (| a b) c)");
  EXPR("a & b & c", "(& (& a b) c)");
  EXPR("a ~ b ~ c", "(~ (~ a b) c)");
  EXPR("a .. b == c", "(== (.. a b) c)");
  EXPR("1 .. 2 + 3", "(.. 1 (+ 2 3))");
  EXPR("a + b .. c + d", "(.. (+ a b) (+ c d))");
  EXPR("a .. b < c .. d", "(< (.. a b) (.. c d))");
  EXPR("-a .. b", "(.. (neg a) b)");
  EXPR("not a .. b", "(.. (not a) b)");
  EXPR("(a + b) * c", "(* (paren (+ a b)) c)");
  EXPR("((a))", "(paren (paren a))");
  EXPR("a + -b * c", "(+ a (* (neg b) c))");
  EXPR("1 < 2 < 3", "(< (< 1 2) 3)");
}

static void test_exprs(void) {
  EXPR("nil, true, false", "nil true false");
  EXPR("1, 2.5, 'x', ...", "1 2.5 \"x\" ...");
  EXPR("(...)", "(paren ...)");
  EXPR("a.b.c", "(. (. a b) c)");
  EXPR("a[b][c + 1]", "(index (index a b) (+ c 1))");
  EXPR("a.b[c].d", "(. (index (. a b) c) d)");
  EXPR("f(a)(b)", "(call (call f a) b)");
  EXPR("f()", "(call f)");
  EXPR("f(1, 2, ...)", "(call f 1 2 ...)");
  EXPR("a:b(c)", "(: a b c)");
  EXPR("a:b()", "(: a b)");
  EXPR("a:b'x'", "(: a b \"x\")");
  EXPR("a:b{1}", "(: a b {1})");
  EXPR("f{1}", "(call f {1})");
  EXPR("f'x' 'y'", "(call (call f \"x\") \"y\")");
  EXPR("f\"s\"", "(call f \"s\")");
  EXPR("f[[s]]", "(call f \"s\")");
  EXPR("f{}.x", "(. (call f {}) x)");
  EXPR("a.b:c(1, 2).d", "(. (: (. a b) c 1 2) d)");
  EXPR("(f)()", "(call (paren f))");
  EXPR("(f or g)(1)[2]", "(index (call (paren (or f g)) 1) 2)");
  EXPR("{}", "{}");
  EXPR("{1, 2; x = 3, [4] = 5, }", "{1 2 x=3 [4]=5}");
  EXPR("{x}", "{x}");
  EXPR("{x = x}", "{x=x}");
  EXPR("{x == y}", "{(== x y)}");
  EXPR("{x.y, x:y(), x[1]}", "{(. x y) (: x y) (index x 1)}");
  EXPR("{[x] = y; z}", "{[x]=y z}");
  EXPR("{f(), ...}", "{(call f) ...}");
  EXPR("{{}, {{}}}", "{{} {{}}}");
  EXPR("{'a', \"b\", [[c]]; }", "{\"a\" \"b\" \"c\"}");
  EXPR("function() end", "(function ())");
  EXPR("function(a, b, ...) return ... end",
       "(function (a b ...) (return ...))");
  EXPR("function(...) local t = {...} end",
       "(function (...) (local (t) {...}))");
  EXPR("function(a) return function(b) return a + b end end",
       "(function (a) (return (function (b) (return (+ a b)))))");
}

static void test_stmts(void) {
  CHUNK("local a", "(local (a))");
  CHUNK("local a, b <const>, c <close> = 1, 2",
        "(local (a b<const> c<close>) 1 2)");
  CHUNK("local a <const> = 1", "(local (a<const>) 1)");
  CHUNK("a = 1", "(= (a) 1)");
  CHUNK("a, b.c, d[1] = 1, 2, 3", "(= (a (. b c) (index d 1)) 1 2 3)");
  CHUNK("a.b.c = f()", "(= ((. (. a b) c)) (call f))");
  CHUNK("(a).b = 1", "(= ((. (paren a) b)) 1)");
  CHUNK("f()", "(call f)");
  CHUNK("a:b()", "(: a b)");
  CHUNK("a.b.c:d 'x'", "(: (. (. a b) c) d \"x\")");
  CHUNK("f{}", "(call f {})");
  CHUNK("(f)()", "(call (paren f))");
  CHUNK("f()() g()", "(call (call f)) (call g)");
  CHUNK("do end", "(do ())");
  CHUNK("do local x end", "(do ((local (x))))");
  CHUNK("while x do break end", "(while x (break))");
  CHUNK("while true do end", "(while true ())");
  CHUNK("repeat local y until y", "(repeat ((local (y))) y)");
  CHUNK("repeat until false", "(repeat () false)");
  CHUNK("if a then b() elseif c then d() else e() end",
        "(if a ((call b)) c ((call d)) else ((call e)))");
  CHUNK("if a then end", "(if a ())");
  CHUNK("if a then else end", "(if a () else ())");
  CHUNK("if a then elseif b then elseif c then end",
        "(if a () b () c ())");
  CHUNK("if x then break end", "ERROR: chunk:1: break outside loop at line 1");
  CHUNK("while x do if y then break end end",
        "(while x ((if y (break))))");
  CHUNK("for i = 1, 10 do end", "(for i 1 10 ())");
  CHUNK("for i = 1, 10, 2 do f(i) end", "(for i 1 10 2 ((call f i)))");
  CHUNK("for k, v in pairs(t) do end", "(forin (k v) ((call pairs t)) ())");
  CHUNK("for k in next, t, nil do end", "(forin (k) (next t nil) ())");
  CHUNK("function f() end", "(fstat f (function ()))");
  CHUNK("function f(a, ...) return a end",
        "(fstat f (function (a ...) (return a)))");
  CHUNK("function a.b.c() end", "(fstat (. (. a b) c) (function ()))");
  CHUNK("function a.b.c:m(x) end",
        "(fstat: (. (. (. a b) c) m) (function (self x)))");
  CHUNK("function a:m(...) end", "(fstat: (. a m) (function (self ...)))");
  CHUNK("local function g(...) return g end",
        "(localfunc g (function (...) (return g)))");
  CHUNK("return", "(return)");
  CHUNK("return;", "(return)");
  CHUNK("return 1, 2;", "(return 1 2)");
  CHUNK("return f()", "(return (call f))");
  CHUNK("do return end f()", "(do ((return))) (call f)");
  CHUNK("goto l ::l::", "(goto l) (label l)");
  CHUNK("::top:: goto top", "(label top) (goto top)");
  CHUNK("do goto l end ::l::", "(do ((goto l))) (label l)");
  CHUNK(";;", "; ;");
  CHUNK("::a:: ; ::b::", "(label a) ; (label b)");
  CHUNK("local x = 1; x = x + 1;", "(local (x) 1) ; (= (x) (+ x 1)) ;");
  CHUNK("for i = 1, 2 do local x goto continue local y ::continue:: end",
        "(for i 1 2 ((local (x)) (goto continue) (local (y)) "
        "(label continue)))");
  CHUNK("x = function(a) end",
        "(= (x) (function (a)))");
  CHUNK("local t = {f = function(self) return self end}",
        "(local (t) {f=(function (self) (return self))})");
  CHUNK("", "");
  CHUNK("-- only a comment", "");
  CHUNK("--[==[ long\ncomment ]==] f()", "(call f)");
  CHUNK("a.b['c'].d = 1 --[[ x ]] f()",
        "(= ((. (index (. a b) \"c\") d)) 1) (call f)");
  CHUNK("#!/usr/bin/lua\nf()", "(call f)");
  CHUNK("\xEF\xBB\xBF#!shebang\nf()", "(call f)");
  CHUNK("a=1 b=2", "(= (a) 1) (= (b) 2)");
  CHUNK("a=1b=2", "ERROR: chunk:1: malformed number near '1b'");
  CHUNK("a=b.c;d=e", "(= (a) (. b c)) ; (= (d) e)");
  CHUNK("f()\n(g)()", "(call (call (call f) g))");  /* Lua's own reading */
  CHUNK("local x <const>, y <close> = 1",
        "(local (x<const> y<close>) 1)");
  CHUNK("goto continue; ::continue::", "(goto continue) ; (label continue)");
}

/* }====================================================== */


/*
** {======================================================
** Literals, checked against the values Lua computes
** =======================================================
*/

/* Parses "return LIT" and compares the literal with what Lua returns. */
static void expect_literal(int line, const char *lit, size_t litlen) {
  char *src = malloc(litlen + 8);
  memcpy(src, "return ", 7);
  memcpy(src + 7, lit, litlen);
  size_t len = litlen + 7;
  Chunk *c = parsen(src, len);
  int ok = c != NULL && c->main->body->n == 1 &&
           c->main->body->stmts[0]->u.ret.n == 1;
  check_(ok, line, "literal %s: %s", lit, ok ? "" : err);
  if (!ok) { free(src); return; }
  Expr *e = c->main->body->stmts[0]->u.ret.exprs[0];
  int st = luaL_loadbuffer(L, src, len, "=lit");
  free(src);
  if (st != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    check_(0, line, "literal %s: Lua fails: %s", lit, lua_tostring(L, -1));
    lua_pop(L, 1);
    return;
  }
  switch (e->kind) {
    case E_INT: {
      int ok = lua_isinteger(L, -1) && lua_tointeger(L, -1) == e->u.i;
      check_(ok, line, "literal %s: ours %lld, Lua %s", lit,
             (long long)e->u.i, luaL_tolstring(L, -1, NULL));
      break;
    }
    case E_FLT: {
      double d = lua_tonumber(L, -1);
      int ok = lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1) &&
               (memcmp(&d, &e->u.f, sizeof d) == 0 ||
                (isnan(d) && isnan(e->u.f)));
      check_(ok, line, "literal %s: ours %.17g, Lua %s", lit, e->u.f,
             luaL_tolstring(L, -1, NULL));
      break;
    }
    case E_STR: {
      size_t n;
      const char *s = lua_tolstring(L, -1, &n);
      check_(lua_type(L, -1) == LUA_TSTRING && n == e->u.str.len &&
             memcmp(s, e->u.str.s, n) == 0 && e->u.str.s[n] == '\0', line,
             "literal %s: strings differ (ours %zu bytes, Lua %zu)", lit,
             e->u.str.len, n);
      break;
    }
    default:
      check_(0, line, "literal %s: not a literal (kind %d)", lit, e->kind);
  }
  lua_settop(L, 0);
}
#define LIT(s) expect_literal(__LINE__, s, sizeof(s) - 1)

static void test_literals(void) {
  /* integers, hex wrap-around, decimal overflow to float */
  LIT("0"); LIT("42"); LIT("0xff"); LIT("0XfF"); LIT("0xA");
  LIT("9223372036854775807"); LIT("9223372036854775808");
  LIT("18446744073709551615"); LIT("99999999999999999999999");
  LIT("0x7fffffffffffffff"); LIT("0x8000000000000000");
  LIT("0xffffffffffffffff"); LIT("0x10000000000000000");
  LIT("0x123456789abcdef0123"); LIT("007");
  /* floats */
  LIT("1.0"); LIT("3."); LIT(".5"); LIT("1e2"); LIT("1E+2"); LIT("1e-2");
  LIT("3.14159265358979"); LIT("2.5e10"); LIT("1e400"); LIT("0.1");
  LIT("0x1p4"); LIT("0x.8"); LIT("0xA.8p1"); LIT("0X1P-2"); LIT("0x1.8");
  LIT("0x.1p4"); LIT("0xfp+0"); LIT("0x1P+1023"); LIT("4.9e-324");
  /* strings and escapes */
  LIT("'abc'"); LIT("\"abc\""); LIT("''");
  LIT("'\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\\''");
  LIT("'\\x41\\x4a\\xff\\x00'"); LIT("'\\65\\066\\0067\\0\\255'");
  LIT("'\\u{48}\\u{e9}\\u{20AC}\\u{10FFFF}\\u{7FFFFFFF}\\u{0}'");
  LIT("'\\u{0000000041}'");
  LIT("'a\\z   \n \t b'"); LIT("'a\\z'"); LIT("'a\\\nb'");
  LIT("'a\\\r\nb'"); LIT("'a\\\n\rb'"); LIT("'a\\\rb'");
  LIT("'a\0b'"); LIT("\"it's\""); LIT("'say \"hi\"'");
  LIT("[[abc]]"); LIT("[[\nabc]]"); LIT("[[\r\nabc]]"); LIT("[[\n\nabc]]");
  LIT("[==[\na]]b]=]c]==]"); LIT("[[\r\nx\r\ny\n\rz\rw]]"); LIT("[[]]");
  LIT("[=[]]]=]"); LIT("[[a\0b]]");

  /* exact values, independently of Lua */
  Chunk *c = parse("return 0xffffffffffffffff, 9223372036854775808, 0x1p4");
  Expr **e = c->main->body->stmts[0]->u.ret.exprs;
  CHECK(e[0]->kind == E_INT && e[0]->u.i == -1, "hex wraps to -1");
  CHECK(e[1]->kind == E_FLT && e[1]->u.f == 9223372036854775808.0,
        "2^63 is a float");
  CHECK(e[2]->kind == E_FLT && e[2]->u.f == 16.0, "0x1p4 is 16.0");
  c = parse("return '\\u{20AC}\\z \n  x', [[\nab]]");
  e = c->main->body->stmts[0]->u.ret.exprs;
  CHECK(e[0]->u.str.len == 4 && memcmp(e[0]->u.str.s, "\xE2\x82\xAC" "x", 4) == 0,
        "utf8 escape and \\z");
  CHECK(e[1]->u.str.len == 2 && strcmp(e[1]->u.str.s, "ab") == 0,
        "long string skips its first newline");
}

/* }====================================================== */


/*
** {======================================================
** Lines
** =======================================================
*/

static void test_lines(void) {
  Chunk *c = parse("local x = a\n  +\n  b\nf\n(\n 1\n)\ndo\n  g()\nend\n"
                   "local function h()\nend\nif x then\nelseif y then\n"
                   "else\nend\n");
  CHECK(c != NULL, "lines source: %s", err);
  if (c == NULL) return;
  Stmt **s = c->main->body->stmts;
  CHECK(c->main->body->n == 5, "5 statements");
  CHECK(s[0]->line == 1, "local at line 1");
  Expr *bin = s[0]->u.local.exprs[0];
  CHECK(bin->kind == E_BINOP && bin->line == 2, "binop at its operator");
  CHECK(bin->u.bin.a->line == 1 && bin->u.bin.b->line == 3, "operands");
  CHECK(s[1]->kind == S_CALL && s[1]->line == 4 && s[1]->u.call->line == 4,
        "call at the line it starts");
  CHECK(s[1]->u.call->u.call.args[0]->line == 6, "argument line");
  CHECK(s[2]->kind == S_DO && s[2]->line == 8 && s[2]->u.block->line == 9 &&
        s[2]->u.block->lastline == 10, "do block lines %d-%d",
        s[2]->u.block->line, s[2]->u.block->lastline);
  Func *h = s[3]->u.localfunc.func;
  CHECK(s[3]->line == 11 && h->line == 11 && h->lastline == 12,
        "local function lines");
  CHECK(h->body->line == 12 && h->body->lastline == 12, "empty body lines");
  CHECK(s[4]->line == 13 && s[4]->u.ifs.blocks[0]->line == 14 &&
        s[4]->u.ifs.blocks[0]->lastline == 14 &&
        s[4]->u.ifs.blocks[1]->line == 15 && s[4]->u.ifs.els->line == 16 &&
        s[4]->u.ifs.els->lastline == 16, "if blocks lines");
  CHECK(c->main->body->line == 1 && c->main->body->lastline == 17,
        "main block lines %d-%d", c->main->body->line,
        c->main->body->lastline);
  CHECK(c->main->line == 0 && c->main->lastline == 0 && c->main->is_vararg &&
        c->main->parent == NULL && c->main->id == 0 && c->funcs[0] == c->main,
        "main function");

  /* line breaks: \n, \r, \r\n and \n\r are one line each; "\r\r" two */
  c = parse("a()\r\nb()\n\rc()\rd()\r\re()\n\nf()");
  int want[] = {1, 2, 3, 4, 6, 8};
  for (int i = 0; c && i < 6; i++)
    CHECK(c->main->body->stmts[i]->line == want[i], "line break kind %d", i);
  /* lines inside tokens and comments */
  c = parse("x = [[\n\n]] y = 'a\\\nb\\z\n\n c' --[[\n]] f()");
  CHECK(c && c->main->body->stmts[1]->line == 3 &&
        c->main->body->stmts[2]->line == 7, "lines in long tokens");

  /* the lines Lua gives to errors of calls, operators and indexing */
  static const struct { const char *src; ExprKind k; } rt[] = {
    {"local t = {}\nreturn t\n.x\n(1)", E_CALL},
    {"f\n(\n)", E_CALL},
    {"local t = { f\n(\n1) }", E_CALL},
    {"local t = { x = 1, f\n.x\n(\n1) }", E_CALL},
    {"local t = {}\nlocal v = t\n:m\n(\n1)\n\nreturn v", E_METHCALL},
    {"local t = {}\nreturn t\n.x\n.y\n", E_FIELD},
    {"local t = {}\nlocal v = t.x\n.y\n\nreturn v", E_FIELD},
    {"local t = {}\nlocal v = t\n[1]\n[\n2\n]\n\nreturn v", E_INDEX},
    {"local t = {}\nreturn t\n.x\n.y\n(1)", E_FIELD},
    {"local a\nlocal v = a\n+\n1", E_BINOP},
    {"local a\nlocal v = 1 +\n(a)\n", E_BINOP},
    {"local a\nlocal v = a ..\n{}\n\nreturn v", E_BINOP},
    {"local a\nlocal v = a\n<\n1\n\nreturn v", E_BINOP},
    {"local a = {}\nlocal b = a\n>=\n{\n}\n", E_BINOP},
    {"local a\nlocal v = -\na\n\nreturn v", E_UNOP},
    {"local a\nlocal v = #\na\n\nreturn v", E_UNOP},
    {"local a\nlocal v = ~\na\n\nreturn v", E_UNOP},
  };
  for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
    int lline = -1;
    if (luaL_loadbuffer(L, rt[i].src, strlen(rt[i].src), "=chunk") == LUA_OK &&
        lua_pcall(L, 0, 0, 0) != LUA_OK) {
      const char *m = lua_tostring(L, -1);
      if (strncmp(m, "chunk:", 6) == 0) lline = atoi(m + 6);
    }
    lua_settop(L, 0);
    c = parse(rt[i].src);
    Expr *e = c ? find_expr(c, rt[i].k) : NULL;
    CHECK(e && lline > 0 && e->line == lline,
          "runtime error line of case %zu: ours %d, Lua %d", i,
          e ? e->line : -1, lline);
  }
}

/* Sources whose functions are compared with Lua's (lines, params). */
static const char *const func_sources[] = {
  "local function a()\nend\nlocal b = function\n(\n)\nend\n"
  "function c.d:e(x,\n  y)\n  return function() end\nend\n"
  "local t = { f = function(...) end, function() return function() end end }\n"
  "local function\ng\n(\n)\nend\nreturn function(a, b, ...) local function h() end end\n",
  "function f() end function g() end local x = function() end",
  "x = [[\n\n]] function f()\n--[[\n\n]] end\ny = '\\\n\\z\n\n' function g\n() end",
  "local a = function(x) end\r\nlocal b = function(x)\r\nend\r\n\rfunction c() \n\r end",
  "return function() return function() return function() end end end",
  "local f = function(a, b)\n  local g = function(c) return function(d, ...)\n"
  "  end end\nend\nlocal t = {f = function(self) end, [1] = function() end}\n"
  "function t:m(a) end function t.n(a) end",
  "do local function f() end end while x do local g = function() end end\n"
  "repeat local h = function() end until h\nif a then local i = function() end "
  "elseif b then local j = function() end else local k = function() end end\n"
  "for i = 1, 2 do local l = function() end end for k in pairs(t) do local m = "
  "function() end end",
};

static void test_func_lines(void) {
  for (size_t i = 0; i < sizeof func_sources / sizeof func_sources[0]; i++) {
    char what[32];
    snprintf(what, sizeof what, "func source %zu", i);
    CHECK(diff_lua(func_sources[i], strlen(func_sources[i]), what, 1)
          == DIFF_SAME, "%s agrees with Lua", what);
  }
  Chunk *c = parse("local function f()\n  local function g() end\n"
                   "  return function() end\nend\nfunction t:m() end");
  CHECK(c && c->nfuncs == 5, "5 functions");
  if (c && c->nfuncs == 5) {
    CHECK(c->funcs[1]->parent == c->main && c->funcs[2]->parent == c->funcs[1]
          && c->funcs[3]->parent == c->funcs[1] &&
          c->funcs[4]->parent == c->main, "parents");
    CHECK(c->funcs[1]->line == 1 && c->funcs[1]->lastline == 4, "f lines");
    CHECK(c->funcs[2]->line == 2 && c->funcs[2]->lastline == 2, "g lines");
    CHECK(c->funcs[4]->nparams == 1 && strcmp(c->funcs[4]->params[0], "self")
          == 0, "method has self");
  }
}

/* }====================================================== */


/*
** {======================================================
** kp_find_func, names, kp_opname
** =======================================================
*/

static void test_find_func(void) {
  Chunk *c = parse("local a, b = function(x) end, function(x, y) end\n"
                   "local c = function(p) end; local d = function(q) end\n"
                   "function m(self2)\nend\n"
                   "local function solo(z) end");
  CHECK(c && c->nfuncs == 7, "find_func source");
  if (!c || c->nfuncs != 7) return;
  int amb = -1;
  CHECK(kp_find_func(c, 1, 1, -1, NULL, &amb) == NULL && amb == 1,
        "two on line 1: ambiguous");
  CHECK(kp_find_func(c, 1, 1, 1, NULL, &amb) == c->funcs[1] && amb == 0,
        "narrowed by nparams 1");
  CHECK(kp_find_func(c, 1, 1, 2, NULL, &amb) == c->funcs[2] && amb == 0,
        "narrowed by nparams 2");
  CHECK(kp_find_func(c, 1, 1, 3, NULL, &amb) == NULL && amb == 0,
        "nparams 3: none");
  CHECK(kp_find_func(c, 2, 2, 1, NULL, &amb) == NULL && amb == 1,
        "same nparams: still ambiguous");
  const char *q[] = {"q"}, *p[] = {"p"}, *r[] = {"r"};
  CHECK(kp_find_func(c, 2, 2, 1, q, &amb) == c->funcs[4] && amb == 0,
        "narrowed by names (q)");
  CHECK(kp_find_func(c, 2, 2, 1, p, &amb) == c->funcs[3] && amb == 0,
        "narrowed by names (p)");
  CHECK(kp_find_func(c, 2, 2, 1, r, &amb) == NULL && amb == 0,
        "names match none");
  CHECK(kp_find_func(c, 3, 4, -1, NULL, &amb) == c->funcs[5] && amb == 0,
        "function statement over two lines");
  CHECK(kp_find_func(c, 3, 3, -1, NULL, &amb) == NULL && amb == 0,
        "wrong lastline");
  CHECK(kp_find_func(c, 5, 5, 0, NULL, &amb) == c->funcs[6],
        "a single match is returned as is");
  CHECK(kp_find_func(c, 9, 9, -1, NULL, &amb) == NULL && amb == 0, "none");
  CHECK(kp_find_func(c, 0, 0, -1, NULL, &amb) == c->main, "main chunk");
  CHECK(kp_find_func(c, 1, 1, -1, NULL, NULL) == NULL, "NULL ambiguous ok");
}

static void expect_name(int line, const char *src, int idx, const char *name) {
  Chunk *c = parse(src);
  const char *got = c && idx < c->nfuncs ? c->funcs[idx]->name : "<none>";
  check_((got == NULL && name == NULL) ||
         (got && name && strcmp(got, name) == 0), line,
         "name of function %d in %s: want %s, got %s", idx, src,
         name ? name : "NULL", got ? got : "NULL");
}
#define NAME(src, i, n) expect_name(__LINE__, src, i, n)

static void test_names(void) {
  NAME("function f() end", 1, "f");
  NAME("function a.b.c() end", 1, "a.b.c");
  NAME("function a.b:c() end", 1, "a.b:c");
  NAME("function a:b() end", 1, "a:b");
  NAME("local function g() end", 1, "g");
  NAME("local f = function() end", 1, "f");
  NAME("local a, b = 1, function() end", 1, "b");
  NAME("x.y = function() end", 1, "x.y");
  NAME("t[1] = function() end", 1, NULL);
  NAME("return function() end", 1, NULL);
  NAME("f(function() end)", 1, NULL);
  NAME("local t = {m = function() end}", 1, "m");
  NAME("local f = (function() end)", 1, NULL);
  Chunk *c = parse("return 1");
  CHECK(c && c->main->name == NULL && c->nfuncs == 1 &&
        strcmp(c->chunkname, "chunk") == 0, "main is anonymous");
}

static void test_opname(void) {
  static const struct { OpKind op; const char *s; } ops[] = {
    {OP_ADD, "+"}, {OP_SUB, "-"}, {OP_MUL, "*"}, {OP_DIV, "/"},
    {OP_IDIV, "//"}, {OP_MOD, "%"}, {OP_POW, "^"}, {OP_BAND, "&"},
    {OP_BOR, "|"}, {OP_BXOR, "~"}, {OP_SHL, "<<"}, {OP_SHR, ">>"},
    {OP_CONCAT, ".."}, {OP_EQ, "=="}, {OP_NE, "~="}, {OP_LT, "<"},
    {OP_LE, "<="}, {OP_GT, ">"}, {OP_GE, ">="}, {OP_AND, "and"},
    {OP_OR, "or"}, {OP_NEG, "-"}, {OP_NOT, "not"}, {OP_LEN, "#"},
    {OP_BNOT, "~"},
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    CHECK(strcmp(kp_opname(ops[i].op), ops[i].s) == 0, "kp_opname(%d)",
          (int)ops[i].op);
}

/* }====================================================== */


/*
** {======================================================
** Syntax errors: Lua 5.4's messages, checked twice (as written here, as
** written by the linked Lua)
** =======================================================
*/

static const struct { const char *src; const char *msg; } errors[] = {
  {"function f()", "chunk:1: 'end' expected near <eof>"},
  {"x = = 1", "chunk:1: unexpected symbol near '='"},
  {"local function f()\nreturn\nend end", "chunk:3: <eof> expected near 'end'"},
  {"if x then\nelse\nelse end",
   "chunk:3: 'end' expected (to close 'if' at line 1) near 'else'"},
  {"local function f()\n\n\n", "chunk:4: 'end' expected (to close 'function' "
   "at line 1) near <eof>"},
  {"while x do\n", "chunk:2: 'end' expected (to close 'while' at line 1) "
   "near <eof>"},
  {"repeat\nx()\n", "chunk:3: 'until' expected (to close 'repeat' at line 1) "
   "near <eof>"},
  {"f(\n1\n,\n", "chunk:4: unexpected symbol near <eof>"},
  {"f(a\n,b", "chunk:2: ')' expected (to close '(' at line 1) near <eof>"},
  {"x = (a\n", "chunk:2: ')' expected (to close '(' at line 1) near <eof>"},
  {"x = { c\n\n(1", "chunk:3: ')' expected near <eof>"},  /* lookahead */
  {"x = { c\n.d\n(1", "chunk:3: ')' expected (to close '(' at line 2) near <eof>"},
  {"x = {\n1,\n2\n", "chunk:4: '}' expected (to close '{' at line 1) near <eof>"},
  {"local t = {x 1}", "chunk:1: '}' expected near '1'"},
  {"x = a[1", "chunk:1: ']' expected near <eof>"},
  {"local x = 3x", "chunk:1: malformed number near '3x'"},
  {"x = 0x", "chunk:1: malformed number near '0x'"},
  {"x = 0x1p", "chunk:1: malformed number near '0x1p'"},
  {"x = 1e+", "chunk:1: malformed number near '1e+'"},
  {"x = .5x", "chunk:1: malformed number near '.5x'"},
  {"x = 3..2", "chunk:1: malformed number near '3..2'"},
  {"x = 'abc", "chunk:1: unfinished string near <eof>"},
  {"x = 'abc\ny'", "chunk:1: unfinished string near ''abc'"},
  {"x = \"a\\\nb", "chunk:2: unfinished string near <eof>"},
  {"x = '\\q'", "chunk:1: invalid escape sequence near ''\\q'"},
  {"x = '\\xg'", "chunk:1: hexadecimal digit expected near ''\\xg'"},
  {"x = '\\x5'", "chunk:1: hexadecimal digit expected near ''\\x5''"},
  {"x = '\\u{110000000}'",
   "chunk:1: UTF-8 value too large near ''\\u{110000000'"},
  {"x = '\\u{12'", "chunk:1: missing '}' near ''\\u{12''"},
  {"x = '\\u12'", "chunk:1: missing '{' near ''\\u1'"},
  {"x = '\\u{}'", "chunk:1: hexadecimal digit expected near ''\\u{}'"},
  {"x = 'ab\\300'", "chunk:1: decimal escape too large near ''ab\\300''"},
  {"x = [=x", "chunk:1: invalid long string delimiter near '[='"},
  {"--[[ abc\n", "chunk:2: unfinished long comment (starting at line 1) "
   "near <eof>"},
  {"x = [==[ abc\n]]", "chunk:2: unfinished long string (starting at line 1) "
   "near <eof>"},
  {"x = \xC3", "chunk:1: unexpected symbol near '<\\195>'"},
  {"x = @", "chunk:1: unexpected symbol near '@'"},
  {"x = 1 [[\nab\n]]", "chunk:3: unexpected symbol near '[[ab\n]]'"},
  {"x = 1 'a\\0b'", "chunk:1: unexpected symbol near ''a'"},
  {"x = 1 [==[a\\0b]==]", "chunk:1: unexpected symbol near '[==[a\\0b]==]'"},
  {"function f() return function() return ... end end",
   "chunk:1: cannot use '...' outside a vararg function near '...'"},
  {"a.b:c = 1", "chunk:1: function arguments expected near '='"},
  {"for i do end", "chunk:1: '=' or 'in' expected near 'do'"},
  {"for i = 1 do end", "chunk:1: ',' expected near 'do'"},
  {"for a, b = 1, 2 do end", "chunk:1: 'in' expected near '='"},
  {"local function f(a,) end", "chunk:1: <name> or '...' expected near ')'"},
  {"local function f(..., a) end", "chunk:1: ')' expected near ','"},
  {"x = {a=1,,}", "chunk:1: unexpected symbol near ','"},
  {"return 1 x = 2", "chunk:1: <eof> expected near 'x'"},
  {"return return", "chunk:1: unexpected symbol near 'return'"},
  {"return 1 return", "chunk:1: <eof> expected near 'return'"},
  {"x = a..", "chunk:1: unexpected symbol near <eof>"},
  {"(a) = 1", "chunk:1: syntax error near '='"},
  {"f() = 1", "chunk:1: syntax error near '='"},
  {"a, f() = 1, 2", "chunk:1: syntax error near '='"},
  {"(f())", "chunk:1: syntax error near <eof>"},
  {"x", "chunk:1: syntax error near <eof>"},
  {"x.y\nz()", "chunk:2: syntax error near 'z'"},
  {"1 = 2", "chunk:1: unexpected symbol near '1'"},
  {"local 1", "chunk:1: <name> expected near '1'"},
  {"local function 1", "chunk:1: <name> expected near '1'"},
  {"goto 1", "chunk:1: <name> expected near '1'"},
  {"x = a.1", "chunk:1: unexpected symbol near '.1'"},
  {"x = a. 1", "chunk:1: <name> expected near '1'"},
  {"x = a:b", "chunk:1: function arguments expected near <eof>"},
  {"::a", "chunk:1: '::' expected near <eof>"},
  {"local x <const", "chunk:1: '>' expected near <eof>"},
  {"function a.b:c.d() end", "chunk:1: '(' expected near '.'"},
  {"function (x) end", "chunk:1: <name> expected near '('"},
  {"x = function f() end", "chunk:1: '(' expected near 'f'"},
  {"if x end", "chunk:1: 'then' expected near 'end'"},
  {"x = }", "chunk:1: unexpected symbol near '}'"},
  {"x = 1 + * 2", "chunk:1: unexpected symbol near '*'"},
  {"local x <foo> = 1", "chunk:1: unknown attribute 'foo'"},
  {"local x <close>, y <close> = 1",
   "chunk:1: multiple to-be-closed variables in local list"},
  {"local x <const> = 1; x = 2",
   "chunk:1: attempt to assign to const variable 'x'"},
  {"local x <close> = nil\n\nx, y = 2, 3",
   "chunk:3: attempt to assign to const variable 'x'"},
  {"local x <const> = 1; local function g() x = 2 end",
   "chunk:1: attempt to assign to const variable 'x'"},
  {"local x <const> = {}\nfunction x() end\n\n",
   "chunk:4: attempt to assign to const variable 'x'"},
  {"goto l; local a; ::l:: print(a)",
   "chunk:1: <goto l> at line 1 jumps into the scope of local 'a'"},
  {"repeat local x; goto l; local y; ::l:: until x",
   "chunk:1: <goto l> at line 1 jumps into the scope of local 'y'"},
  {"do goto l end", "chunk:1: no visible label 'l' for <goto> at line 1"},
  {"local function f()\n goto l\nend\n::l::",
   "chunk:4: no visible label 'l' for <goto> at line 2"},
  {"do ::l:: end goto l", "chunk:1: no visible label 'l' for <goto> at line 1"},
  {"break", "chunk:1: break outside loop at line 1"},
  {"while x do local function f() break end end",
   "chunk:1: break outside loop at line 1"},
  {"::a:: ::a::", "chunk:1: label 'a' already defined on line 1"},
  {"::a::\ndo ::a:: end", "chunk:2: label 'a' already defined on line 1"},
  {"x = '\\u{7FFFFFFF}' y", "chunk:1: syntax error near <eof>"},
  {"x = 1 .. 2 .. \n", "chunk:2: unexpected symbol near <eof>"},
  {"local function f() end end", "chunk:1: <eof> expected near 'end'"},
  {"f(1,)", "chunk:1: unexpected symbol near ')'"},
  {"x = not", "chunk:1: unexpected symbol near <eof>"},
  {"x = #", "chunk:1: unexpected symbol near <eof>"},
  {"x = ... ...", "chunk:1: unexpected symbol near '...'"},
  {"a.b.c", "chunk:1: syntax error near <eof>"},
  {"x = {[1] 2}", "chunk:1: '=' expected near '2'"},
  {"x = {y = }", "chunk:1: unexpected symbol near '}'"},
  {"local a = {} a:b.c()", "chunk:1: function arguments expected near '.'"},
  {"x = ~= 1", "chunk:1: unexpected symbol near '~='"},
  {"if x then elseif end", "chunk:1: unexpected symbol near 'end'"},
  {"x = \x01", "chunk:1: unexpected symbol near '<\\1>'"},
  /* a NUL byte is token 0, which Lua takes as "no token": no "near" */
  {"x = 1 \0", "chunk:1: unexpected symbol"},
  {"f() \0", "chunk:1: unexpected symbol"},
  {"x = {1 \0}", "chunk:1: '}' expected"},
};
/* the lengths of the last sources, which go on after a NUL */
static const size_t errors_len[] = {7, 5, 9};

/* A chunk with 201 locals, and two more limit messages. */
static void test_limits(void) {
  Buf b = {0};
  bput(&b, "local a0");
  for (int i = 1; i <= 200; i++) bput(&b, ", a%d", i);
  const char *lmsg = lua_load_msg(b.s, b.n);
  Chunk *c = parsen(b.s, b.n);
  CHECK(lmsg && c == NULL && strcmp(err, "chunk:1: too many local variables "
        "(limit is 200) in main function near <eof>") == 0 &&
        strcmp(lmsg, err) == 0, "201 locals: %s", err);
  b.n = 0;
  bput(&b, "local function f()\n");
  for (int i = 0; i < 198; i++) bput(&b, "local a%d\n", i);
  bput(&b, "for i = 1, 2 do end\nend");
  lmsg = lua_load_msg(b.s, b.n);
  c = parsen(b.s, b.n);
  CHECK(lmsg && c == NULL && strcmp(lmsg, err) == 0 &&
        strstr(err, "in function at line 1"), "for loop locals: %s / %s",
        err, lmsg ? lmsg : "ok");
  b.n = 0;
  bput(&b, "local a0");  /* 200 is fine */
  for (int i = 1; i < 200; i++) bput(&b, ", a%d", i);
  c = parsen(b.s, b.n);
  CHECK(c != NULL && lua_load_msg(b.s, b.n) == NULL, "200 locals: %s", err);
  lua_settop(L, 0);
  /* known difference: register limits are not modeled */
  b.n = 0;
  bput(&b, "f(1");
  for (int i = 0; i < 300; i++) bput(&b, ",1");
  bput(&b, ")");
  lmsg = lua_load_msg(b.s, b.n);
  c = parsen(b.s, b.n);
  CHECK(c != NULL && lmsg && strstr(lmsg, "registers") &&
        known_difference(lmsg, NULL), "301 arguments: Lua says %s",
        lmsg ? lmsg : "ok");
  lua_settop(L, 0);
  free(b.s);
}

static void test_errors(void) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
    const char *src = errors[i].src;
    size_t nerr = sizeof errors / sizeof errors[0];
    size_t nnul = sizeof errors_len / sizeof errors_len[0];
    size_t len = i >= nerr - nnul ? errors_len[i - (nerr - nnul)]
                                  : strlen(src);
    Chunk *c = parsen(src, len);
    CHECK(c == NULL && strcmp(err, errors[i].msg) == 0,
          "error for %s\n   want %s\n   got  %s", src, errors[i].msg,
          c ? "(parsed)" : err);
    const char *lmsg = lua_load_msg(src, len);
    CHECK(lmsg && strcmp(lmsg, errors[i].msg) == 0,
          "Lua's message for %s\n   want %s\n   Lua  %s", src,
          errors[i].msg, lmsg ? lmsg : "(loads)");
    lua_settop(L, 0);
  }
  test_limits();
  /* a message bigger than the buffer is cut, not overflowed */
  char small[16];
  Arena a;
  ka_init(&a);
  CHECK(kp_parse(&a, "x = = 1", 7, "chunk", small, sizeof small) == NULL &&
        strlen(small) == 15, "message truncated to the buffer");
  CHECK(kp_parse(&a, "x = = 1", 7, "chunk", NULL, 0) == NULL,
        "no message buffer");
  ka_free(&a);
}

/* Nesting: fails where Lua fails, and never overflows the C stack. */
static void test_depth(void) {
  static const char *const shapes[][3] = {
    /* prefix repeated, middle, suffix repeated */
    {"(", "1", ")"},
    {"do ", "", " end"},
    {"- ", "x", ""},
    {"{", "", "}"},
    {"f(", "", ")"},
    {"function() return ", "1", " end"},
    {"a .. ", "b", ""},
    {"2 ^ ", "2", ""},
    {"if x then ", "", " end"},
    {"x, ", "x", ""},
  };
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    int agree = 1, lfail = 0, ofail = 0;
    for (int n = 150; n <= 260; n++) {
      Buf b = {0};
      int stat = (k == 1 || k == 8);
      int assign = (k == 9);
      bput(&b, stat ? "" : assign ? "" : "x = ");
      for (int i = 0; i < n; i++) bput(&b, "%s", shapes[k][0]);
      bput(&b, "%s", shapes[k][1]);
      for (int i = 0; i < n; i++) bput(&b, "%s", shapes[k][2]);
      if (assign) bput(&b, " = 1");
      const char *lmsg = lua_load_msg(b.s, b.n);
      lua_settop(L, 0);
      Chunk *c = parsen(b.s, b.n);
      if ((lmsg != NULL) != (c == NULL) ||
          (lmsg && !known_difference(lmsg, err) && strcmp(lmsg, err))) {
        if (agree) printf("  depth shape %zu, n=%d: Lua %s, ours %s\n", k, n,
                          lmsg ? lmsg : "ok", c ? "ok" : err);
        agree = 0;
      }
      lfail += lmsg != NULL;
      ofail += c == NULL;
      free(b.s);
    }
    CHECK(agree && lfail > 0, "nesting shape %zu agrees with Lua (%d/%d fail)",
          k, ofail, lfail);
  }
  /* very deep input: an error, no crash */
  size_t n = 1000000;
  char *s = malloc(2 * n + 8);
  memset(s, '(', n);
  memcpy(s + n, "x", 1);
  memset(s + n + 1, ')', n);
  Chunk *c = parsen(s, 2 * n + 1);
  CHECK(c == NULL && strcmp(err, "chunk:1: chunk has too many syntax levels")
        == 0, "a million parentheses: %s", err);
  memcpy(s, "x=", 2);
  for (size_t i = 2; i < n; i++) s[i] = i % 2 ? ' ' : '-';
  c = parsen(s, n + 1);
  CHECK(c == NULL && strstr(err, "too many syntax levels"), "deep unary");
  free(s);
}

/* }====================================================== */


/*
** {======================================================
** Real files, a long input
** =======================================================
*/

typedef struct Files { char **path; int n, cap; } Files;

static void find_lua_files(Files *fs, const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (d == NULL || depth > 6) { if (d) closedir(d); return; }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    size_t n = strlen(dir) + strlen(de->d_name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      find_lua_files(fs, p, depth + 1);
      free(p);
    }
    else if (S_ISREG(st.st_mode) && strlen(de->d_name) > 4 &&
             strcmp(de->d_name + strlen(de->d_name) - 4, ".lua") == 0) {
      if (fs->n == fs->cap) {
        fs->cap = fs->cap ? fs->cap * 2 : 64;
        fs->path = realloc(fs->path, (size_t)fs->cap * sizeof(char *));
      }
      fs->path[fs->n++] = p;
    }
    else free(p);
  }
  closedir(d);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  Buf b = {0};
  char chunk[65536];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (b.n + k + 1 > b.cap) {
      b.cap = (b.n + k + 1) * 2;
      b.s = realloc(b.s, b.cap);
    }
    memcpy(b.s + b.n, chunk, k);
    b.n += k;
  }
  fclose(f);
  if (b.s == NULL) b.s = calloc(1, 1);
  b.s[b.n] = '\0';
  *len = b.n;
  return b.s;
}

static Files files;

static void test_files(void) {
  static const char *const dirs[] = {
    "tests", "lua", "/usr/share/lua", "/usr/local/share/lua",
    "/usr/lib/x86_64-linux-gnu/lua", "/usr/share/luajit-2.1.0-beta3",
    "/usr/local/share/luajit-2.1.0-beta3", NULL
  };
  for (int i = 0; dirs[i]; i++) find_lua_files(&files, dirs[i], 0);
  int nok = 0, nbad = 0, nerr = 0, nbig = 0;
  size_t bytes = 0;
  for (int i = 0; i < files.n && i < 3000; i++) {
    size_t len;
    char *s = read_file(files.path[i], &len);
    if (s == NULL) continue;
    if (len > 0 && (s[0] == '#' || s[0] == '\x1b' || (unsigned char)s[0] == 0xEF)) {
      /* load() would not skip these: check only that we parse */
      Chunk *c = parsen(s, len);
      if (c) nok++; else nerr++;
      free(s);
      continue;
    }
    DiffResult r = diff_lua(s, len, files.path[i], nbad < 10);
    if (r == DIFF_BAD) nbad++;
    else if (parsen(s, len)) {
      nok++;
      bytes += len;
      if (len > 20000) nbig++;
    }
    else nerr++;  /* both reject it, with the same message */
    free(s);
  }
  printf("  real files: %d found, %d parsed (%zu bytes, %d over 20KB), "
         "%d rejected like Lua, %d disagreements\n", files.n, nok, bytes, nbig,
         nerr, nbad);
  CHECK(nbad == 0, "real Lua files agree with Lua (%d disagree)", nbad);
  if (files.n == 0) printf("  (no Lua files found on this system)\n");
}

/* A long generated input: many lines, functions, strings. */
static void test_long_input(void) {
  Buf b = {0};
  int lines = 200000;
  for (int i = 1; i <= lines; i++) {
    if (i % 1000 == 1) bput(&b, "function f%d(a, b) return a + b end\n", i);
    else bput(&b, "t[%d] = {x = %d, 'str%d', %d.5, y = g(%d) .. [[s]]}\n",
              i, i, i, i, i);
  }
  bput(&b, "return t");
  Chunk *c = parsen(b.s, b.n);
  CHECK(c != NULL, "long input: %s", c ? "" : err);
  if (c) {
    Block *m = c->main->body;
    CHECK(m->n == lines + 1 && m->stmts[m->n - 1]->line == lines + 1 &&
          c->nfuncs == lines / 1000 + 1 && check_tree(c),
          "long input: %d statements, last at line %d", m->n,
          m->stmts[m->n - 1]->line);
    CHECK(kp_find_func(c, 199001, 199001, -1, NULL, NULL) ==
          c->funcs[c->nfuncs - 1], "find_func in a long input");
  }
  /* a long string and a long comment */
  b.n = 0;
  bput(&b, "local s = [==[");
  for (int i = 0; i < 100000; i++) bput(&b, "line %d ]] ]=] \n", i);
  bput(&b, "]==] --[[");
  for (int i = 0; i < 1000; i++) bput(&b, "\n");
  bput(&b, "]] return s");
  c = parsen(b.s, b.n);
  CHECK(c && c->main->body->stmts[1]->line == 101001 &&
        c->main->body->stmts[0]->u.local.exprs[0]->u.str.len ==
        b.n - strlen("local s = [==[]==] --[[]] return s") - 1000,
        "long string: %s", c ? "" : err);
  free(b.s);
}

/* }====================================================== */


/*
** {======================================================
** Random programs and mutations, against Lua
** =======================================================
*/

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32);
}
static int R(int n) { return (int)(rnd() % (uint32_t)n); }

static void gsep(Buf *b) {
  switch (R(16)) {
    case 0: bput(b, "\n"); break;
    case 1: bput(b, "\r\n"); break;
    case 2: bput(b, " --c\n"); break;
    case 3: bput(b, "--[[\n]]"); break;
    case 4: bput(b, "\n\r"); break;
    case 5: bput(b, "\r"); break;
    case 6: bput(b, "\n\n"); break;
    default: bput(b, " ");
  }
}
static void gt(Buf *b, const char *t) { gsep(b); bput(b, "%s", t); }

static const char *const gnames[] = {"a", "b", "c", "x", "y", "self"};
static void gexpr(Buf *b, int d);
static void gblock(Buf *b, int d, int inloop);

static void gname(Buf *b) { gt(b, gnames[R(6)]); }

static void gargs(Buf *b, int d) {
  switch (R(4)) {
    case 0: gt(b, "'s'"); break;
    case 1: gt(b, "{"); if (R(2)) gexpr(b, d + 1); gt(b, "}"); break;
    default:
      gt(b, "(");
      for (int i = R(3); i > 0; i--) { gexpr(b, d + 1); if (i > 1) gt(b, ","); }
      gt(b, ")");
  }
}

static void gprefix(Buf *b, int d) {
  if (R(4) == 0) { gt(b, "("); gexpr(b, d + 1); gt(b, ")"); }
  else gname(b);
  for (int i = R(3); i > 0; i--) {
    switch (R(4)) {
      case 0: gt(b, "."); gname(b); break;
      case 1: gt(b, "["); gexpr(b, d + 1); gt(b, "]"); break;
      case 2: gt(b, ":"); gname(b); gargs(b, d); break;
      default: gargs(b, d);
    }
  }
}

static void gfunc(Buf *b, int d) {
  gt(b, "(");
  int n = R(3);
  for (int i = 0; i < n; i++) { if (i) gt(b, ","); gname(b); }
  if (R(3) == 0) { if (n) gt(b, ","); gt(b, "..."); }
  gt(b, ")");
  gblock(b, d + 1, 0);
  gt(b, "end");
}

static void gexpr(Buf *b, int d) {
  static const char *const bin[] = {"+", "-", "*", "/", "//", "%", "^", "..",
    "==", "~=", "<", "<=", ">", ">=", "and", "or", "&", "|", "~", "<<", ">>"};
  static const char *const un[] = {"-", "not", "#", "~"};
  static const char *const lit[] = {"nil", "true", "false", "1", "2.5",
    "0x10", "1e3", "'s'", "[[\nx]]", "\"a\\z\n b\"", "..."};
  int k = d > 4 ? R(3) : R(10);
  switch (k) {
    case 0: gt(b, lit[R(11)]); break;
    case 1: case 2: gprefix(b, d); break;
    case 3: case 4: gexpr(b, d + 1); gt(b, bin[R(21)]); gexpr(b, d + 1); break;
    case 5: gt(b, un[R(4)]); gexpr(b, d + 1); break;
    case 6: gt(b, "function"); gfunc(b, d); break;
    case 7:
      gt(b, "{");
      for (int i = R(4); i > 0; i--) {
        switch (R(3)) {
          case 0: gname(b); gt(b, "="); break;
          case 1: gt(b, "["); gexpr(b, d + 1); gt(b, "]"); gt(b, "="); break;
        }
        gexpr(b, d + 1);
        if (i > 1 || R(2)) gt(b, R(2) ? "," : ";");
      }
      gt(b, "}");
      break;
    default: gt(b, "("); gexpr(b, d + 1); gt(b, ")");
  }
}

static void gstat(Buf *b, int d, int inloop) {
  if (d > 4) { gprefix(b, d); gargs(b, d); return; }
  switch (R(17)) {
    case 0:
      gt(b, "local"); gname(b);
      if (R(4) == 0) gt(b, R(2) ? "<const>" : "<close>");
      if (R(2)) { gt(b, ","); gname(b); }
      if (R(3)) { gt(b, "="); gexpr(b, d + 1); }
      break;
    case 1: case 2:
      gprefix(b, d);
      if (R(2)) { gargs(b, d); break; }
      if (R(3) == 0) { gt(b, ","); gprefix(b, d); }
      gt(b, "="); gexpr(b, d + 1);
      break;
    case 3: gt(b, "do"); gblock(b, d + 1, inloop); gt(b, "end"); break;
    case 4:
      gt(b, "while"); gexpr(b, d + 1); gt(b, "do"); gblock(b, d + 1, 1);
      gt(b, "end");
      break;
    case 5:
      gt(b, "repeat"); gblock(b, d + 1, 1); gt(b, "until"); gexpr(b, d + 1);
      break;
    case 6:
      gt(b, "if"); gexpr(b, d + 1); gt(b, "then"); gblock(b, d + 1, inloop);
      if (R(2)) {
        gt(b, "elseif"); gexpr(b, d + 1); gt(b, "then");
        gblock(b, d + 1, inloop);
      }
      if (R(2)) { gt(b, "else"); gblock(b, d + 1, inloop); }
      gt(b, "end");
      break;
    case 7:
      gt(b, "for"); gname(b); gt(b, "="); gexpr(b, d + 1); gt(b, ",");
      gexpr(b, d + 1);
      if (R(2)) { gt(b, ","); gexpr(b, d + 1); }
      gt(b, "do"); gblock(b, d + 1, 1); gt(b, "end");
      break;
    case 8:
      gt(b, "for"); gname(b);
      if (R(2)) { gt(b, ","); gname(b); }
      gt(b, "in"); gexpr(b, d + 1); gt(b, "do"); gblock(b, d + 1, 1);
      gt(b, "end");
      break;
    case 9:
      gt(b, "function"); gname(b);
      if (R(2)) { gt(b, "."); gname(b); }
      if (R(2)) { gt(b, ":"); gname(b); }
      gfunc(b, d);
      break;
    case 10: gt(b, "local function"); gname(b); gfunc(b, d); break;
    case 11: gt(b, "goto"); gt(b, R(2) ? "l1" : "l2"); break;
    case 12: gt(b, R(2) ? "::l1::" : "::l2::"); break;
    case 13: gt(b, inloop || R(4) == 0 ? "break" : ";"); break;
    case 14: gt(b, ";"); break;
    default: gprefix(b, d); gargs(b, d);
  }
}

static void gblock(Buf *b, int d, int inloop) {
  for (int i = R(4); i > 0; i--) gstat(b, d, inloop);
  if (R(5) == 0) {
    gt(b, "return");
    if (R(2)) gexpr(b, d + 1);
  }
}

static const char *const corpus[] = {
  "local t = {1, 2, x = 3, [4] = 'a\\n\\x41\\u{48}'; f = function(...) return ... end}\n"
  "for i = 1, #t do t[i] = t[i] * 2 ^ -i // 3 % 4 end\n"
  "for k, v in pairs(t) do if k == 'x' then goto skip end print(k, v) ::skip:: end\n",
  "local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end\n"
  "local s = [==[\nlong ]] string]==] --[[ comment\n]] return fib(10) .. s\n",
  "local a <const>, b <close> = 1, nil\nrepeat local x = a until x >= 1\n"
  "while true do break end do local y = 0x1p4 + 1e-3 - .5 end\n",
  "function obj.method:name(a, b, ...) local t = {...}; return self, #t, a ~ b, a & b | ~a << 1 >> 2 end\n"
  "x, y.z, w[1] = f(), g'str', h{1}\nlocal s = \"\\z\n  esc\\\"\\'\\\\\\065\\x7a\"\n",
  "return function(a) return function(b) return a and b or not a end end",
};

/* Applies one random edit. */
static void mutate(Buf *b) {
  static const char *const toks[] = {"end", "function", "local", "goto",
    "::", "...", "[[", "]]", "--[[", "return", "break", "<const>",
    "<close>", "0x", "1e", "\\u{", "\\x", "\\z", "'", "\"", "(", ")", "{",
    "}", "[", "]", "=", ",", ";", ".", ":", "\n", "\r", "x", "do", "then",
    "if", "else", "elseif", "until", "repeat", "for", "in", "while", "[=[",
    "]=]", "--", "\\", "0", "9", "a.b", ":m()", "..", "~", "^", "-", "not",
    "#", "\xC3", "\0", "=="};
  size_t pos = b->n ? (size_t)R((int)b->n + 1) : 0;
  switch (R(6)) {
    case 0: b->n = pos; break;  /* truncate */
    case 1: {  /* delete a range */
      size_t k = (size_t)R(10) + 1;
      if (pos + k > b->n) k = b->n - pos;
      memmove(b->s + pos, b->s + pos + k, b->n - pos - k);
      b->n -= k;
      break;
    }
    case 2: case 3: {  /* insert a token */
      const char *t = toks[R((int)(sizeof toks / sizeof toks[0]))];
      size_t k = t[0] ? strlen(t) : 1;
      bput(b, "%*s", (int)k, "");  /* make room */
      memmove(b->s + pos + k, b->s + pos, b->n - k - pos);
      memcpy(b->s + pos, t, k);
      break;
    }
    case 4:  /* replace a byte */
      if (pos < b->n) b->s[pos] = (char)R(256);
      break;
    default: {  /* duplicate a range */
      size_t k = (size_t)R(40) + 1;
      if (pos + k > b->n) k = b->n - pos;
      char *tmp = malloc(k + 1);
      memcpy(tmp, b->s + pos, k);
      bput(b, "%*s", (int)k, "");
      memmove(b->s + pos + k, b->s + pos, b->n - k - pos);
      memcpy(b->s + pos, tmp, k);
      free(tmp);
    }
  }
}

static void test_random(int nprog, int nmut) {
  Buf b = {0};
  int bad = 0, known = 0, okp = 0;
  for (int i = 0; i < nprog; i++) {
    b.n = 0;
    bput(&b, "");
    gblock(&b, 0, 0);
    DiffResult r = diff_lua(b.s, b.n, "random program", bad < 5);
    if (r == DIFF_BAD && bad < 5) printf("  program: %s\n", b.s);
    bad += r == DIFF_BAD;
    known += r == DIFF_KNOWN;
    okp += r == DIFF_SAME && lua_load_msg(b.s, b.n) == NULL;
    lua_settop(L, 0);
  }
  printf("  random programs: %d, %d load, %d known differences, %d bad\n",
         nprog, okp, known, bad);
  CHECK(bad == 0, "random programs agree with Lua (%d disagree)", bad);

  /* mutations of the corpus, of random programs and of real files */
  int nsrc = (int)(sizeof corpus / sizeof corpus[0]);
  int bad2 = 0, known2 = 0, same2 = 0;
  for (int i = 0; i < nmut; i++) {
    b.n = 0;
    bput(&b, "");
    int which = R(nsrc + 2);
    if (which < nsrc) bput(&b, "%s", corpus[which]);
    else if (which == nsrc || files.n == 0) gblock(&b, 0, 0);
    else {
      size_t len;
      char *s = read_file(files.path[R(files.n)], &len);
      if (s) {
        if (len > 4096) { size_t off = (size_t)R((int)(len - 4096)); 
          bput(&b, "%.4096s", s + off); }
        else bput(&b, "%s", s);
        free(s);
      }
    }
    for (int k = R(3) + 1; k > 0; k--) mutate(&b);
    if (b.n > 0 && (b.s[0] == '#' || b.s[0] == '\x1b' ||
                    (unsigned char)b.s[0] == 0xEF)) {
      parsen(b.s, b.n);  /* must not crash; Lua's load differs here */
      continue;
    }
    DiffResult r = diff_lua(b.s, b.n, "mutation", bad2 < 8);
    if (r == DIFF_BAD && bad2 < 8) {
      printf("  source: ");
      for (size_t j = 0; j < b.n && j < 300; j++) {
        unsigned char ch = (unsigned char)b.s[j];
        if (ch >= 32 && ch < 127) putchar(ch); else printf("\\%d", ch);
      }
      printf("\n");
    }
    bad2 += r == DIFF_BAD;
    known2 += r == DIFF_KNOWN;
    same2 += r == DIFF_SAME;
    lua_settop(L, 0);
  }
  printf("  mutations: %d, %d agree, %d known differences, %d bad\n", nmut,
         same2, known2, bad2);
  CHECK(bad2 == 0, "mutated sources agree with Lua (%d disagree)", bad2);
  free(b.s);
}

/* }====================================================== */


int main(int argc, char **argv) {
  ka_init(&A);
  L = luaL_newstate();
  luaL_openlibs(L);
  int nprog = 3000, nmut = 30000;
  if (getenv("KJIT_FUZZ_ITERS")) nmut = atoi(getenv("KJIT_FUZZ_ITERS"));
  if (getenv("KJIT_FUZZ_SEED"))
    rng_state = strtoull(getenv("KJIT_FUZZ_SEED"), NULL, 0) * 2654435761u + 1;
  test_precedence();
  test_exprs();
  test_stmts();
  test_literals();
  test_lines();
  test_func_lines();
  test_find_func();
  test_names();
  test_opname();
  test_errors();
  test_depth();
  test_files();
  test_long_input();
  test_random(nprog, nmut);
  ka_free(&A);
  lua_close(L);
  for (int i = 0; i < files.n; i++) free(files.path[i]);
  free(files.path);
  printf("test_parse: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}
