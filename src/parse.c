/*
** parse.c: recursive-descent parser for Lua 5.4 (reference manual
** sections 3 and 9), building the tree of ast.h.
**
** Besides the grammar, the parser makes the compile-time checks that Lua's
** own parser makes, with Lua's messages, so that kp_parse accepts exactly
** what load() accepts: '...' outside a vararg function, goto/label rules
** (including "jumps into the scope of local"), 'break' outside a loop,
** assignment to <const>/<close> variables, local attributes, the limit of
** 200 locals per function and the nesting limit (LUAI_MAXCCALLS). To get
** those right it keeps Lua's bookkeeping of blocks, active locals, labels
** and pending gotos, by name only.
**
** Lines. Func.line/lastline are Lua's linedefined/lastlinedefined: the
** line of 'function' for a function statement, but of the token after
** 'function' (or after the name, for 'local function') otherwise, as in
** Lua. Expressions carry the line Lua gives to their run-time errors:
** calls (E_CALL, E_METHCALL) the line where the called expression starts;
** arithmetic, bitwise, concatenation and unary operators the operator's
** line; comparisons the line where their second operand ends; indexing
** (E_FIELD, E_INDEX) the line of the name or of the ']'; anything else the
** line where it starts. Statements: their first line. Blocks: from the
** line of their first token to the line of the token that closes them
** ('end', 'until', 'else', <eof>...).
**
** Lists are collected on a malloc'ed scratch stack (LIFO: an inner list is
** finished before the outer one goes on) and copied to the arena when
** complete. Errors longjmp back to kp_parse, which frees the scratch.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"
#include "parse.h"

#define MAXVARS     200   /* locals per function, as Lua's MAXVARS */
#define MAXLEVELS   200   /* nesting of statements/expressions (C levels) */

/* Kinds of local variables (Lua's VDKREG, RDKCONST, RDKTOCLOSE). */
enum { VREG, VCONST, VCLOSE };

typedef struct LocalVar {
  const char *name;
  int kind;
} LocalVar;

/* A label or a pending goto. */
typedef struct LabelDesc {
  const char *name;
  int line;
  int nactvar;      /* active locals at that point */
} LabelDesc;

typedef struct BlockCnt {
  struct BlockCnt *previous;
  int firstlabel;   /* index of its first label in Parser.labels */
  int firstgoto;    /* index of its first pending goto */
  int nactvar;      /* active locals outside the block */
  int isloop;
} BlockCnt;

typedef struct FuncState {
  Func *f;
  struct FuncState *prev;
  BlockCnt *bl;
  int firstlocal;   /* index of its first local in Parser.actvar */
  int firstlabel;   /* index of its first label in Parser.labels */
  int nactvar;      /* number of active locals */
} FuncState;

typedef struct Parser {
  KxLexer lx;
  jmp_buf jb;
  FuncState *fs;
  int depth;                            /* syntax levels, as nCcalls */
  int nexprs;
  void **stk; size_t nstk, capstk;      /* scratch stack for lists */
  LocalVar *actvar; size_t nact, capact;/* declared locals, all functions */
  LabelDesc *labels; size_t nlabel, caplabel;
  LabelDesc *gotos; size_t ngoto, capgoto;
  Func **funcs; size_t nfuncs, capfuncs;
} Parser;

static const char BREAK_LABEL[] = "break";


/*
** {======================================================
** Helpers: memory, lists, tokens, errors
** =======================================================
*/

/* Makes room for one more element in a malloc'ed array. */
static void *grow(Parser *P, void *arr, size_t n, size_t *cap, size_t elsz) {
  if (n < *cap) return arr;
  size_t ncap = *cap ? *cap * 2 : 32;
  if (ncap > (size_t)0x7fffffff || ncap > SIZE_MAX / elsz)
    kx_memerror(&P->lx);
  void *na = realloc(arr, ncap * elsz);
  if (na == NULL) kx_memerror(&P->lx);
  *cap = ncap;
  return na;
}

static void *alloc(Parser *P, size_t n) { return kx_alloc(&P->lx, n); }

static void push(Parser *P, void *x) {
  P->stk = grow(P, P->stk, P->nstk, &P->capstk, sizeof(void *));
  P->stk[P->nstk++] = x;
}

/* Pops the scratch entries above mark, returning their number. */
static int popcount(Parser *P, size_t mark) {
  size_t k = P->nstk - mark;
  if (k > 0x7fffffff) kx_memerror(&P->lx);
  P->nstk = mark;
  return (int)k;
}

/* Moves the scratch entries above mark into an arena array of the given
** pointer type (NULL when empty), pops them and sets *n. */
#define DEFCOLLECT(fname, T) \
  static T *fname(Parser *P, size_t mark, int *n) { \
    int k = popcount(P, mark); \
    T *a = NULL; \
    if (k > 0) { \
      /* only now: P->stk is NULL while nothing was pushed (NULL + 0 is UB) */ \
      void **items = P->stk + mark; \
      a = alloc(P, (size_t)k * sizeof(T)); \
      for (int i = 0; i < k; i++) a[i] = (T)items[i]; \
    } \
    *n = k; \
    return a; \
  }
DEFCOLLECT(collect_exprs, Expr *)
DEFCOLLECT(collect_stmts, Stmt *)
DEFCOLLECT(collect_names, const char *)

#define tok(P)   ((P)->lx.t.tok)
#define curline(P) ((P)->lx.t.line)

static void next(Parser *P) { kx_next(&P->lx); }

static _Noreturn void syntaxerror(Parser *P, const char *msg) {
  kx_syntaxerror(&P->lx, msg);
}

static _Noreturn void error_expected(Parser *P, int token) {
  char b[KX_TOKSTR_SIZE];
  syntaxerror(P, kx_format(&P->lx, "%s expected", kx_token2str(token, b)));
}

static int testnext(Parser *P, int c) {
  if (tok(P) != c) return 0;
  next(P);
  return 1;
}

static void check(Parser *P, int c) {
  if (tok(P) != c) error_expected(P, c);
}

static void checknext(Parser *P, int c) {
  check(P, c);
  next(P);
}

#define check_condition(P,c,msg) { if (!(c)) syntaxerror(P, msg); }

/* Checks that the current token is 'what', closing 'who' opened at line
** 'where', and skips it. */
static void check_match(Parser *P, int what, int who, int where) {
  if (testnext(P, what)) return;
  if (where == P->lx.linenumber) error_expected(P, what);
  char b1[KX_TOKSTR_SIZE], b2[KX_TOKSTR_SIZE];
  syntaxerror(P, kx_format(&P->lx, "%s expected (to close %s at line %d)",
                           kx_token2str(what, b1), kx_token2str(who, b2),
                           where));
}

static const char *str_checkname(Parser *P) {
  check(P, KX_NAME);
  const char *s = P->lx.t.s;
  next(P);
  return s;
}

/* Counts one syntax level; Lua's limit on nested C calls while parsing. */
static void enterlevel(Parser *P) {
  if (++P->depth >= MAXLEVELS)
    kx_semerror(&P->lx, "chunk has too many syntax levels");
}

#define leavelevel(P) ((P)->depth--)

static int block_follow(Parser *P, int withuntil) {
  switch (tok(P)) {
    case KX_ELSE: case KX_ELSEIF: case KX_END: case KX_EOS: return 1;
    case KX_UNTIL: return withuntil;
    default: return 0;
  }
}

/* }====================================================== */


/*
** {======================================================
** Scopes: locals, labels, gotos
** =======================================================
*/

static _Noreturn void errorlimit(Parser *P, int limit, const char *what) {
  int line = P->fs->f->line;
  const char *where = line == 0 ? "main function"
                    : kx_format(&P->lx, "function at line %d", line);
  syntaxerror(P, kx_format(&P->lx, "too many %s (limit is %d) in %s", what,
                           limit, where));
}

/* Declares a local; it becomes visible with adjustlocalvars. */
static int new_localvar(Parser *P, const char *name) {
  FuncState *fs = P->fs;
  if (P->nact + 1 - (size_t)fs->firstlocal > MAXVARS)
    errorlimit(P, MAXVARS, "local variables");
  P->actvar = grow(P, P->actvar, P->nact, &P->capact, sizeof(LocalVar));
  P->actvar[P->nact].name = name;
  P->actvar[P->nact].kind = VREG;
  return (int)P->nact++;
}

static void adjustlocalvars(Parser *P, int n) { P->fs->nactvar += n; }

static void removevars(Parser *P, int tolevel) {
  P->fs->nactvar = tolevel;
  P->nact = (size_t)(P->fs->firstlocal + tolevel);
}

/* Kind of the variable that 'name' denotes here: a local of this or an
** enclosing function; VREG for globals. */
static int varkind(Parser *P, const char *name) {
  for (FuncState *fs = P->fs; fs; fs = fs->prev)
    for (int i = fs->nactvar - 1; i >= 0; i--) {
      LocalVar *v = &P->actvar[fs->firstlocal + i];
      if (strcmp(v->name, name) == 0) return v->kind;
    }
  return VREG;
}

static void check_readonly(Parser *P, Expr *e) {
  if (e->kind == E_NAME && varkind(P, e->u.name.name) != VREG)
    kx_semerror(&P->lx, kx_format(&P->lx,
                "attempt to assign to const variable '%s'", e->u.name.name));
}

static LabelDesc *newlabelentry(Parser *P, LabelDesc **arr, size_t *n,
                                size_t *cap, const char *name, int line) {
  *arr = grow(P, *arr, *n, cap, sizeof(LabelDesc));
  LabelDesc *l = &(*arr)[(*n)++];
  l->name = name;
  l->line = line;
  l->nactvar = P->fs->nactvar;
  return l;
}

/* A visible label of the current function with this name, or NULL. */
static LabelDesc *findlabel(Parser *P, const char *name) {
  for (size_t i = (size_t)P->fs->firstlabel; i < P->nlabel; i++)
    if (strcmp(P->labels[i].name, name) == 0) return &P->labels[i];
  return NULL;
}

static void newgotoentry(Parser *P, const char *name, int line) {
  newlabelentry(P, &P->gotos, &P->ngoto, &P->capgoto, name, line);
}

/* Resolves pending goto g with label lb, removing it from the list. */
static void solvegoto(Parser *P, size_t g, LabelDesc *lb) {
  LabelDesc *gt = &P->gotos[g];
  if (gt->nactvar < lb->nactvar) {  /* enters the scope of a local? */
    const char *var = P->actvar[P->fs->firstlocal + gt->nactvar].name;
    kx_semerror(&P->lx, kx_format(&P->lx,
                "<goto %s> at line %d jumps into the scope of local '%s'",
                gt->name, gt->line, var));
  }
  memmove(gt, gt + 1, (P->ngoto - g - 1) * sizeof(LabelDesc));
  P->ngoto--;
}

/* Resolves the pending gotos of the current block that go to lb. */
static void solvegotos(Parser *P, LabelDesc *lb) {
  size_t i = (size_t)P->fs->bl->firstgoto;
  while (i < P->ngoto) {
    if (strcmp(P->gotos[i].name, lb->name) == 0) solvegoto(P, i, lb);
    else i++;
  }
}

/* Declares a label; 'last' says it ends its block (so the block's locals
** are already out of scope there). */
static void createlabel(Parser *P, const char *name, int line, int last) {
  LabelDesc *l = newlabelentry(P, &P->labels, &P->nlabel, &P->caplabel,
                               name, line);
  if (last) l->nactvar = P->fs->bl->nactvar;
  solvegotos(P, l);
}

/* A goto that left a block without finding its label. */
static _Noreturn void undefgoto(Parser *P, LabelDesc *gt) {
  if (strcmp(gt->name, BREAK_LABEL) == 0)
    kx_semerror(&P->lx, kx_format(&P->lx, "break outside loop at line %d",
                                  gt->line));
  kx_semerror(&P->lx, kx_format(&P->lx,
              "no visible label '%s' for <goto> at line %d",
              gt->name, gt->line));
}

static void enterblock(Parser *P, BlockCnt *bl, int isloop) {
  FuncState *fs = P->fs;
  bl->isloop = isloop;
  bl->nactvar = fs->nactvar;
  bl->firstlabel = (int)P->nlabel;
  bl->firstgoto = (int)P->ngoto;
  bl->previous = fs->bl;
  fs->bl = bl;
}

static void leaveblock(Parser *P) {
  FuncState *fs = P->fs;
  BlockCnt *bl = fs->bl;
  removevars(P, bl->nactvar);
  if (bl->isloop)  /* resolves pending breaks */
    createlabel(P, BREAK_LABEL, 0, 0);
  P->nlabel = (size_t)bl->firstlabel;  /* its labels go out of scope */
  fs->bl = bl->previous;
  if (bl->previous) {  /* pending gotos now belong to the enclosing block */
    for (size_t i = (size_t)bl->firstgoto; i < P->ngoto; i++)
      P->gotos[i].nactvar = bl->nactvar;
  }
  else if ((size_t)bl->firstgoto < P->ngoto)  /* end of the function */
    undefgoto(P, &P->gotos[bl->firstgoto]);
}

/* }====================================================== */


/*
** {======================================================
** Nodes
** =======================================================
*/

static Expr *newexpr(Parser *P, ExprKind k, int line) {
  Expr *e = alloc(P, sizeof(Expr));
  e->kind = k;
  e->line = line;
  e->id = P->nexprs++;
  return e;
}

static Stmt *newstmt(Parser *P, StmtKind k, int line) {
  Stmt *s = alloc(P, sizeof(Stmt));
  s->kind = k;
  s->line = line;
  return s;
}

static Func *newfunc(Parser *P, int line) {
  Func *f = alloc(P, sizeof(Func));
  f->line = line;
  f->parent = P->fs ? P->fs->f : NULL;
  f->id = (int)P->nfuncs;
  P->funcs = grow(P, P->funcs, P->nfuncs, &P->capfuncs, sizeof(Func *));
  P->funcs[P->nfuncs++] = f;
  return f;
}

static void open_func(Parser *P, FuncState *fs, BlockCnt *bl, Func *f) {
  fs->f = f;
  fs->prev = P->fs;
  fs->bl = NULL;
  fs->firstlocal = (int)P->nact;
  fs->firstlabel = (int)P->nlabel;
  fs->nactvar = 0;
  P->fs = fs;
  enterblock(P, bl, 0);
}

static void close_func(Parser *P) {
  leaveblock(P);
  P->fs = P->fs->prev;
}

/* The dotted name of a name/field chain ("a.b.c"), or NULL. sep is the
** separator before the last field ('.' or ':'). */
static const char *chainname(Parser *P, Expr *e, int sep) {
  size_t len = 0;
  Expr *x;
  for (x = e; x->kind == E_FIELD; x = x->u.field.obj)
    len += strlen(x->u.field.name) + 1;
  if (x->kind != E_NAME) return NULL;
  len += strlen(x->u.name.name);
  char *s = alloc(P, len + 1);
  char *p = s + len;
  *p = '\0';
  for (x = e; x->kind == E_FIELD; x = x->u.field.obj) {
    size_t n = strlen(x->u.field.name);
    p -= n;
    memcpy(p, x->u.field.name, n);
    *--p = (x == e) ? (char)sep : '.';
  }
  memcpy(s, x->u.name.name, strlen(x->u.name.name));
  return s;
}

/* Names a function literal after what it is assigned to, for messages. */
static void namefunc(Parser *P, Expr *value, const char *name) {
  (void)P;
  if (value->kind == E_FUNC && value->u.func->name == NULL && name)
    value->u.func->name = name;
}

/* }====================================================== */


/*
** {======================================================
** Rules for expressions
** =======================================================
*/

static Block *statlist(Parser *P);
static Expr *expr(Parser *P);
static void statement(Parser *P);

/* explist -> expr { ',' expr } */
static Expr **explist(Parser *P, int *n) {
  size_t mark = P->nstk;
  push(P, expr(P));
  while (testnext(P, ','))
    push(P, expr(P));
  return collect_exprs(P, mark, n);
}

/* index -> '[' expr ']' */
static Expr *yindex(Parser *P) {
  next(P);  /* skip '[' */
  Expr *e = expr(P);
  checknext(P, ']');
  return e;
}

/* recfield -> (NAME | '['exp']') = exp */
static TableItem *recfield(Parser *P) {
  TableItem *it = alloc(P, sizeof(TableItem));
  if (tok(P) == KX_NAME) {
    it->kind = TI_NAMED;
    it->name = str_checkname(P);
  }
  else {
    it->kind = TI_KEYED;
    it->key = yindex(P);
  }
  checknext(P, '=');
  it->value = expr(P);
  if (it->kind == TI_NAMED) namefunc(P, it->value, it->name);
  return it;
}

/* listfield -> exp */
static TableItem *listfield(Parser *P) {
  TableItem *it = alloc(P, sizeof(TableItem));
  it->kind = TI_POS;
  it->value = expr(P);
  return it;
}

/* field -> listfield | recfield */
static TableItem *field(Parser *P) {
  switch (tok(P)) {
    case KX_NAME:  /* may be 'listfield' or 'recfield' */
      if (kx_lookahead(&P->lx) != '=') return listfield(P);
      return recfield(P);
    case '[':
      return recfield(P);
    default:
      return listfield(P);
  }
}

/* constructor -> '{' [ field { sep field } [sep] ] '}'
   sep -> ',' | ';' */
static Expr *constructor(Parser *P) {
  int line = curline(P);
  size_t mark = P->nstk;
  checknext(P, '{');
  do {
    if (tok(P) == '}') break;
    push(P, field(P));
  } while (testnext(P, ',') || testnext(P, ';'));
  check_match(P, '}', '{', line);
  int n = popcount(P, mark);
  Expr *e = newexpr(P, E_TABLE, line);
  e->u.table.n = n;
  if (n > 0) {
    void **items = P->stk + mark;   /* P->stk may be NULL when n == 0 */
    e->u.table.items = alloc(P, (size_t)n * sizeof(TableItem));
    for (int i = 0; i < n; i++)
      e->u.table.items[i] = *(TableItem *)items[i];
  }
  return e;
}

/* parlist -> [ {NAME ','} (NAME | '...') ] */
static void parlist(Parser *P, Func *f) {
  int nparams = 0;
  if (tok(P) != ')') {
    do {
      switch (tok(P)) {
        case KX_NAME: {
          const char *name = str_checkname(P);
          new_localvar(P, name);
          push(P, (void *)name);
          nparams++;
          break;
        }
        case KX_DOTS:
          next(P);
          f->is_vararg = 1;
          break;
        default:
          syntaxerror(P, "<name> or '...' expected");
      }
    } while (!f->is_vararg && testnext(P, ','));
  }
  adjustlocalvars(P, nparams);
}

/* body ->  '(' parlist ')' block END */
static Func *body(Parser *P, int ismethod, int line) {
  FuncState fs;
  BlockCnt bl;
  Func *f = newfunc(P, line);
  open_func(P, &fs, &bl, f);
  size_t mark = P->nstk;
  if (ismethod) {
    new_localvar(P, "self");
    adjustlocalvars(P, 1);
    push(P, (void *)"self");
  }
  checknext(P, '(');
  parlist(P, f);
  f->params = collect_names(P, mark, &f->nparams);
  checknext(P, ')');
  f->body = statlist(P);
  f->lastline = curline(P);
  check_match(P, KX_END, KX_FUNCTION, line);
  close_func(P);
  return f;
}

/* funcargs -> '(' [ explist ] ')' | constructor | STRING
** Fills the argument list of a call whose expression starts at 'line'. */
static Expr **funcargs(Parser *P, int line, int *nargs) {
  switch (tok(P)) {
    case '(': {
      next(P);
      Expr **args = NULL;
      *nargs = 0;
      if (tok(P) != ')') args = explist(P, nargs);
      check_match(P, ')', '(', line);
      return args;
    }
    case '{': {
      Expr **args = alloc(P, sizeof(Expr *));
      args[0] = constructor(P);
      *nargs = 1;
      return args;
    }
    case KX_STRING: {
      Expr **args = alloc(P, sizeof(Expr *));
      Expr *s = newexpr(P, E_STR, curline(P));
      s->u.str.s = P->lx.t.s;
      s->u.str.len = P->lx.t.len;
      next(P);
      args[0] = s;
      *nargs = 1;
      return args;
    }
    default:
      syntaxerror(P, "function arguments expected");
  }
}

/* primaryexp -> NAME | '(' expr ')' */
static Expr *primaryexp(Parser *P) {
  int line = curline(P);
  switch (tok(P)) {
    case '(': {
      next(P);
      Expr *inner = expr(P);
      check_match(P, ')', '(', line);
      Expr *e = newexpr(P, E_PAREN, line);
      e->u.paren = inner;
      return e;
    }
    case KX_NAME: {
      Expr *e = newexpr(P, E_NAME, line);
      e->u.name.name = str_checkname(P);
      return e;
    }
    default:
      syntaxerror(P, "unexpected symbol");
  }
}

/* fieldsel -> ['.' | ':'] NAME
** Indexing gets the line where it ends (the name, or the ']' below): the
** line Lua gives to its errors, as it emits the access there or later. */
static Expr *fieldsel(Parser *P, Expr *obj) {
  Expr *e = newexpr(P, E_FIELD, curline(P));
  next(P);  /* skip the dot or colon */
  e->u.field.obj = obj;
  e->u.field.name = str_checkname(P);
  e->line = P->lx.lastline;
  return e;
}

/* suffixedexp ->
     primaryexp { '.' NAME | '[' exp ']' | ':' NAME funcargs | funcargs } */
static Expr *suffixedexp(Parser *P) {
  /* Lua gives calls the line where they start, as its scanner has it:
  ** after a lookahead (in a table constructor) the next token's line. */
  int line = P->lx.linenumber;
  Expr *v = primaryexp(P);
  for (;;) {
    switch (tok(P)) {
      case '.':
        v = fieldsel(P, v);
        break;
      case '[': {
        Expr *e = newexpr(P, E_INDEX, curline(P));
        e->u.index.obj = v;
        e->u.index.key = yindex(P);
        e->line = P->lx.lastline;
        v = e;
        break;
      }
      case ':': {
        Expr *e = newexpr(P, E_METHCALL, line);
        next(P);
        e->u.meth.obj = v;
        e->u.meth.name = str_checkname(P);
        e->u.meth.args = funcargs(P, line, &e->u.meth.nargs);
        v = e;
        break;
      }
      case '(': case KX_STRING: case '{': {
        Expr *e = newexpr(P, E_CALL, line);
        e->u.call.fn = v;
        e->u.call.args = funcargs(P, line, &e->u.call.nargs);
        v = e;
        break;
      }
      default:
        return v;
    }
  }
}

/* simpleexp -> FLT | INT | STRING | NIL | TRUE | FALSE | ... |
                constructor | FUNCTION body | suffixedexp */
static Expr *simpleexp(Parser *P) {
  int line = curline(P);
  Expr *e;
  switch (tok(P)) {
    case KX_FLT:
      e = newexpr(P, E_FLT, line);
      e->u.f = P->lx.t.f;
      break;
    case KX_INT:
      e = newexpr(P, E_INT, line);
      e->u.i = P->lx.t.i;
      break;
    case KX_STRING:
      e = newexpr(P, E_STR, line);
      e->u.str.s = P->lx.t.s;
      e->u.str.len = P->lx.t.len;
      break;
    case KX_NIL: e = newexpr(P, E_NIL, line); break;
    case KX_TRUE: e = newexpr(P, E_TRUE, line); break;
    case KX_FALSE: e = newexpr(P, E_FALSE, line); break;
    case KX_DOTS:
      check_condition(P, P->fs->f->is_vararg,
                      "cannot use '...' outside a vararg function");
      e = newexpr(P, E_VARARG, line);
      break;
    case '{':
      return constructor(P);
    case KX_FUNCTION: {
      next(P);
      e = newexpr(P, E_FUNC, line);
      e->u.func = body(P, 0, curline(P));  /* linedefined: after 'function' */
      return e;
    }
    default:
      return suffixedexp(P);
  }
  next(P);
  return e;
}

static int getunopr(int op) {
  switch (op) {
    case KX_NOT: return OP_NOT;
    case '-': return OP_NEG;
    case '~': return OP_BNOT;
    case '#': return OP_LEN;
    default: return -1;
  }
}

static int getbinopr(int op) {
  switch (op) {
    case '+': return OP_ADD;
    case '-': return OP_SUB;
    case '*': return OP_MUL;
    case '%': return OP_MOD;
    case '^': return OP_POW;
    case '/': return OP_DIV;
    case KX_IDIV: return OP_IDIV;
    case '&': return OP_BAND;
    case '|': return OP_BOR;
    case '~': return OP_BXOR;
    case KX_SHL: return OP_SHL;
    case KX_SHR: return OP_SHR;
    case KX_CONCAT: return OP_CONCAT;
    case KX_NE: return OP_NE;
    case KX_EQ: return OP_EQ;
    case '<': return OP_LT;
    case KX_LE: return OP_LE;
    case '>': return OP_GT;
    case KX_GE: return OP_GE;
    case KX_AND: return OP_AND;
    case KX_OR: return OP_OR;
    default: return -1;
  }
}

/* Left and right priorities of the binary operators, indexed by OpKind;
** right < left makes an operator right associative. */
static const struct { unsigned char left, right; } priority[] = {
  [OP_ADD] = {10, 10}, [OP_SUB] = {10, 10},
  [OP_MUL] = {11, 11}, [OP_DIV] = {11, 11}, [OP_IDIV] = {11, 11},
  [OP_MOD] = {11, 11},
  [OP_POW] = {14, 13},
  [OP_BAND] = {6, 6}, [OP_BOR] = {4, 4}, [OP_BXOR] = {5, 5},
  [OP_SHL] = {7, 7}, [OP_SHR] = {7, 7},
  [OP_CONCAT] = {9, 8},
  [OP_EQ] = {3, 3}, [OP_NE] = {3, 3}, [OP_LT] = {3, 3}, [OP_LE] = {3, 3},
  [OP_GT] = {3, 3}, [OP_GE] = {3, 3},
  [OP_AND] = {2, 2}, [OP_OR] = {1, 1}
};

#define UNARY_PRIORITY 12

/* subexpr -> (simpleexp | unop subexpr) { binop subexpr }
** where 'binop' is any binary operator with a priority higher than
** 'limit'. Returns the first operator it did not take (-1 if none). */
static int subexpr(Parser *P, Expr **out, int limit) {
  Expr *e;
  enterlevel(P);
  int uop = getunopr(tok(P));
  if (uop >= 0) {
    int line = curline(P);
    next(P);  /* skip operator */
    Expr *a;
    subexpr(P, &a, UNARY_PRIORITY);
    e = newexpr(P, E_UNOP, line);
    e->u.un.op = (OpKind)uop;
    e->u.un.a = a;
  }
  else
    e = simpleexp(P);
  int op = getbinopr(tok(P));
  while (op >= 0 && priority[op].left > limit) {
    int line = curline(P);
    next(P);  /* skip operator */
    Expr *b;
    int nextop = subexpr(P, &b, priority[op].right);
    if (op >= OP_EQ && op <= OP_GE)  /* Lua gives comparisons the line */
      line = P->lx.lastline;         /* where their second operand ends */
    Expr *bin = newexpr(P, E_BINOP, line);
    bin->u.bin.op = (OpKind)op;
    bin->u.bin.a = e;
    bin->u.bin.b = b;
    e = bin;
    op = nextop;
  }
  leavelevel(P);
  *out = e;
  return op;
}

/* expr -> subexpr */
static Expr *expr(Parser *P) {
  Expr *e;
  subexpr(P, &e, 0);
  return e;
}

/* }====================================================== */


/*
** {======================================================
** Rules for statements
** =======================================================
*/

static void addstmt(Parser *P, Stmt *s) { push(P, s); }

/* block -> statlist, in a scope of its own */
static Block *block(Parser *P) {
  BlockCnt bl;
  enterblock(P, &bl, 0);
  Block *b = statlist(P);
  leaveblock(P);
  return b;
}

/* statlist -> { stat [';'] } */
static Block *statlist(Parser *P) {
  Block *b = alloc(P, sizeof(Block));
  size_t mark = P->nstk;
  b->line = curline(P);
  while (!block_follow(P, 1)) {
    if (tok(P) == KX_RETURN) {
      statement(P);
      break;  /* 'return' must be the last statement */
    }
    statement(P);
  }
  b->lastline = curline(P);
  b->stmts = collect_stmts(P, mark, &b->n);
  return b;
}

/* Targets of an assignment: names, indexing and fields. */
static int isvar(Expr *e) {
  return e->kind == E_NAME || e->kind == E_INDEX || e->kind == E_FIELD;
}

/* exprstat -> func | assignment
   assignment -> suffixedexp { ',' suffixedexp } '=' explist */
static void exprstat(Parser *P, int line) {
  Expr *v = suffixedexp(P);
  if (tok(P) == '=' || tok(P) == ',') {
    Stmt *s = newstmt(P, S_ASSIGN, line);
    size_t mark = P->nstk;
    int extra = 0;
    push(P, v);
    for (;;) {
      check_condition(P, isvar(v), "syntax error");
      check_readonly(P, v);
      if (!testnext(P, ',')) break;
      v = suffixedexp(P);
      push(P, v);
      enterlevel(P);  /* Lua recurses once per target */
      extra++;
    }
    checknext(P, '=');
    s->u.assign.exprs = explist(P, &s->u.assign.nexprs);
    P->depth -= extra;
    s->u.assign.targets = collect_exprs(P, mark, &s->u.assign.ntargets);
    for (int i = 0; i < s->u.assign.ntargets && i < s->u.assign.nexprs; i++)
      if (s->u.assign.exprs[i]->kind == E_FUNC)
        namefunc(P, s->u.assign.exprs[i],
                 chainname(P, s->u.assign.targets[i], '.'));
    addstmt(P, s);
  }
  else {
    check_condition(P, v->kind == E_CALL || v->kind == E_METHCALL,
                    "syntax error");
    Stmt *s = newstmt(P, S_CALL, line);
    s->u.call = v;
    addstmt(P, s);
  }
}

/* test_then_block -> [IF | ELSEIF] cond THEN block
** Pushes the condition and the block. */
static void test_then_block(Parser *P) {
  BlockCnt bl;
  next(P);  /* skip IF or ELSEIF */
  push(P, expr(P));
  checknext(P, KX_THEN);
  enterblock(P, &bl, 0);
  push(P, statlist(P));
  leaveblock(P);
}

/* ifstat -> IF cond THEN block {ELSEIF cond THEN block} [ELSE block] END */
static void ifstat(Parser *P, int line) {
  Stmt *s = newstmt(P, S_IF, line);
  size_t mark = P->nstk;
  test_then_block(P);
  while (tok(P) == KX_ELSEIF)
    test_then_block(P);
  if (testnext(P, KX_ELSE))
    s->u.ifs.els = block(P);
  check_match(P, KX_END, KX_IF, line);
  void **pairs = P->stk + mark;
  int n = popcount(P, mark) / 2;
  s->u.ifs.n = n;
  s->u.ifs.conds = alloc(P, (size_t)n * sizeof(Expr *));
  s->u.ifs.blocks = alloc(P, (size_t)n * sizeof(Block *));
  for (int i = 0; i < n; i++) {
    s->u.ifs.conds[i] = (Expr *)pairs[2 * i];
    s->u.ifs.blocks[i] = (Block *)pairs[2 * i + 1];
  }
  addstmt(P, s);
}

/* whilestat -> WHILE cond DO block END */
static void whilestat(Parser *P, int line) {
  BlockCnt bl;
  Stmt *s = newstmt(P, S_WHILE, line);
  next(P);  /* skip WHILE */
  s->u.loop.cond = expr(P);
  enterblock(P, &bl, 1);
  checknext(P, KX_DO);
  s->u.loop.body = block(P);
  check_match(P, KX_END, KX_WHILE, line);
  leaveblock(P);
  addstmt(P, s);
}

/* repeatstat -> REPEAT block UNTIL cond
** The condition is in the scope of the block's locals. */
static void repeatstat(Parser *P, int line) {
  BlockCnt loop, scope;
  Stmt *s = newstmt(P, S_REPEAT, line);
  enterblock(P, &loop, 1);
  enterblock(P, &scope, 0);
  next(P);  /* skip REPEAT */
  s->u.loop.body = statlist(P);
  check_match(P, KX_UNTIL, KX_REPEAT, line);
  s->u.loop.cond = expr(P);
  leaveblock(P);
  leaveblock(P);
  addstmt(P, s);
}

/* forbody -> DO block */
static Block *forbody(Parser *P, int nvars) {
  BlockCnt bl;
  checknext(P, KX_DO);
  enterblock(P, &bl, 0);
  adjustlocalvars(P, nvars);
  Block *b = block(P);
  leaveblock(P);
  return b;
}

/* fornum -> NAME = exp ',' exp [',' exp] forbody */
static void fornum(Parser *P, Stmt *s, const char *varname) {
  s->kind = S_FORNUM;
  for (int i = 0; i < 3; i++) new_localvar(P, "(for state)");
  new_localvar(P, varname);
  s->u.fornum.name = varname;
  checknext(P, '=');
  s->u.fornum.start = expr(P);
  checknext(P, ',');
  s->u.fornum.limit = expr(P);
  if (testnext(P, ','))
    s->u.fornum.step = expr(P);
  adjustlocalvars(P, 3);  /* control variables */
  s->u.fornum.body = forbody(P, 1);
}

/* forlist -> NAME {',' NAME} IN explist forbody */
static void forlist(Parser *P, Stmt *s, const char *first) {
  s->kind = S_FORIN;
  size_t mark = P->nstk;
  for (int i = 0; i < 4; i++) new_localvar(P, "(for state)");
  new_localvar(P, first);
  push(P, (void *)first);
  while (testnext(P, ',')) {
    const char *name = str_checkname(P);
    new_localvar(P, name);
    push(P, (void *)name);
  }
  checknext(P, KX_IN);
  s->u.forin.exprs = explist(P, &s->u.forin.nexprs);
  s->u.forin.names = collect_names(P, mark, &s->u.forin.nnames);
  adjustlocalvars(P, 4);  /* control variables */
  s->u.forin.body = forbody(P, s->u.forin.nnames);
}

/* forstat -> FOR (fornum | forlist) END */
static void forstat(Parser *P, int line) {
  BlockCnt bl;
  Stmt *s = newstmt(P, S_FORNUM, line);
  enterblock(P, &bl, 1);  /* scope for loop and control variables */
  next(P);  /* skip FOR */
  const char *varname = str_checkname(P);
  switch (tok(P)) {
    case '=': fornum(P, s, varname); break;
    case ',': case KX_IN: forlist(P, s, varname); break;
    default: syntaxerror(P, "'=' or 'in' expected");
  }
  check_match(P, KX_END, KX_FOR, line);
  leaveblock(P);
  addstmt(P, s);
}

/* funcname -> NAME {fieldsel} [':' NAME]
   funcstat -> FUNCTION funcname body */
static void funcstat(Parser *P, int line) {
  Stmt *s = newstmt(P, S_FUNCTION, line);
  next(P);  /* skip FUNCTION */
  Expr *v = newexpr(P, E_NAME, curline(P));
  v->u.name.name = str_checkname(P);
  while (tok(P) == '.')
    v = fieldsel(P, v);
  if (tok(P) == ':') {
    s->u.function.is_method = 1;
    v = fieldsel(P, v);
  }
  s->u.function.target = v;
  s->u.function.func = body(P, s->u.function.is_method, line);
  s->u.function.func->name = chainname(P, v,
                                       s->u.function.is_method ? ':' : '.');
  check_readonly(P, v);
  addstmt(P, s);
}

/* localfunc -> LOCAL FUNCTION NAME body */
static void localfunc(Parser *P, int line) {
  Stmt *s = newstmt(P, S_LOCALFUNC, line);
  const char *name = str_checkname(P);
  new_localvar(P, name);
  adjustlocalvars(P, 1);  /* in scope inside its own body */
  s->u.localfunc.name = name;
  s->u.localfunc.func = body(P, 0, curline(P));
  s->u.localfunc.func->name = name;
  addstmt(P, s);
}

/* attrib -> ['<' NAME '>'] */
static int getlocalattribute(Parser *P) {
  if (testnext(P, '<')) {
    const char *attr = str_checkname(P);
    checknext(P, '>');
    if (strcmp(attr, "const") == 0) return VCONST;
    if (strcmp(attr, "close") == 0) return VCLOSE;
    kx_semerror(&P->lx, kx_format(&P->lx, "unknown attribute '%s'", attr));
  }
  return VREG;
}

/* localstat -> LOCAL NAME attrib { ',' NAME attrib } ['=' explist] */
static void localstat(Parser *P, int line) {
  Stmt *s = newstmt(P, S_LOCAL, line);
  size_t mark = P->nstk;
  int hasclose = 0;
  do {
    const char *name = str_checkname(P);
    int vidx = new_localvar(P, name);
    int kind = getlocalattribute(P);
    P->actvar[vidx].kind = kind;
    if (kind == VCLOSE) {
      if (hasclose)
        kx_semerror(&P->lx, "multiple to-be-closed variables in local list");
      hasclose = 1;
    }
    push(P, (void *)name);
    push(P, (void *)(kind == VCONST ? "const" : kind == VCLOSE ? "close"
                                                                : NULL));
  } while (testnext(P, ','));
  void **pairs = P->stk + mark;
  int nvars = popcount(P, mark) / 2;
  s->u.local.nnames = nvars;
  s->u.local.names = alloc(P, (size_t)nvars * sizeof(char *));
  s->u.local.attribs = alloc(P, (size_t)nvars * sizeof(char *));
  for (int i = 0; i < nvars; i++) {
    s->u.local.names[i] = (const char *)pairs[2 * i];
    s->u.local.attribs[i] = (const char *)pairs[2 * i + 1];
  }
  if (testnext(P, '=')) {
    s->u.local.exprs = explist(P, &s->u.local.nexprs);
    for (int i = 0; i < nvars && i < s->u.local.nexprs; i++)
      namefunc(P, s->u.local.exprs[i], s->u.local.names[i]);
  }
  adjustlocalvars(P, nvars);
  addstmt(P, s);
}

/* label -> '::' NAME '::'
** Like Lua, takes the no-op statements that follow first, so that a label
** that ends its block is known as such. */
static void labelstat(Parser *P, const char *name, int line) {
  Stmt *s = newstmt(P, S_LABEL, line);
  s->u.label = name;
  checknext(P, KX_DBCOLON);
  addstmt(P, s);
  while (tok(P) == ';' || tok(P) == KX_DBCOLON)
    statement(P);  /* skip other no-op statements */
  LabelDesc *lb = findlabel(P, name);
  if (lb)
    kx_semerror(&P->lx, kx_format(&P->lx,
                "label '%s' already defined on line %d", name, lb->line));
  createlabel(P, name, line, block_follow(P, 0));
}

/* gotostat -> GOTO NAME */
static void gotostat(Parser *P, int line) {
  Stmt *s = newstmt(P, S_GOTO, line);
  next(P);  /* skip GOTO */
  int nameline = P->lx.linenumber;
  const char *name = str_checkname(P);
  s->u.label = name;
  if (findlabel(P, name) == NULL)  /* forward jump: resolved later */
    newgotoentry(P, name, nameline);
  addstmt(P, s);
}

/* breakstat -> BREAK */
static void breakstat(Parser *P, int line) {
  next(P);  /* skip BREAK */
  newgotoentry(P, BREAK_LABEL, line);
  addstmt(P, newstmt(P, S_BREAK, line));
}

/* retstat -> RETURN [explist] [';'] */
static void retstat(Parser *P, int line) {
  Stmt *s = newstmt(P, S_RETURN, line);
  next(P);  /* skip RETURN */
  if (!block_follow(P, 1) && tok(P) != ';')
    s->u.ret.exprs = explist(P, &s->u.ret.n);
  testnext(P, ';');
  addstmt(P, s);
}

static void statement(Parser *P) {
  int line = curline(P);
  enterlevel(P);
  switch (tok(P)) {
    case ';':  /* stat -> ';' (empty statement) */
      next(P);
      addstmt(P, newstmt(P, S_EMPTY, line));
      break;
    case KX_IF: ifstat(P, line); break;
    case KX_WHILE: whilestat(P, line); break;
    case KX_DO: {  /* stat -> DO block END */
      Stmt *s = newstmt(P, S_DO, line);
      next(P);
      s->u.block = block(P);
      check_match(P, KX_END, KX_DO, line);
      addstmt(P, s);
      break;
    }
    case KX_FOR: forstat(P, line); break;
    case KX_REPEAT: repeatstat(P, line); break;
    case KX_FUNCTION: funcstat(P, line); break;
    case KX_LOCAL:
      next(P);
      if (testnext(P, KX_FUNCTION)) localfunc(P, line);
      else localstat(P, line);
      break;
    case KX_DBCOLON: {  /* stat -> label */
      next(P);
      const char *name = str_checkname(P);
      labelstat(P, name, line);
      break;
    }
    case KX_RETURN: retstat(P, line); break;
    case KX_BREAK: breakstat(P, line); break;
    case KX_GOTO: gotostat(P, line); break;
    default: exprstat(P, line); break;
  }
  leavelevel(P);
}

/* }====================================================== */


/* mainfunc -> statlist EOS; the chunk is a vararg function. */
static Chunk *mainfunc(Parser *P, const char *chunkname) {
  FuncState fs;
  BlockCnt bl;
  Func *f = newfunc(P, 0);
  f->is_vararg = 1;
  open_func(P, &fs, &bl, f);
  next(P);  /* read the first token */
  f->body = statlist(P);
  check(P, KX_EOS);
  close_func(P);
  Chunk *c = alloc(P, sizeof(Chunk));
  c->main = f;
  c->nfuncs = (int)P->nfuncs;
  c->funcs = alloc(P, P->nfuncs * sizeof(Func *));
  memcpy(c->funcs, P->funcs, P->nfuncs * sizeof(Func *));
  c->nexprs = P->nexprs;
  c->chunkname = chunkname;
  return c;
}

Chunk *kp_parse(Arena *A, const char *src, size_t len, const char *chunkname,
                char *err, size_t errsz) {
  if (err && errsz > 0) err[0] = '\0';
  if (chunkname == NULL) chunkname = "?";
  if (src == NULL) { src = ""; len = 0; }
  /* Allocated, not automatic: it is modified between setjmp and longjmp. */
  Parser *P = ka_alloc(A, sizeof(Parser));
  if (P == NULL) {
    if (err && errsz > 0) snprintf(err, errsz, "%s", "not enough memory");
    return NULL;
  }
  /* As luaL_loadfile: skip a UTF-8 BOM and a first line starting with '#'
  ** (keeping its line break, so line numbers stay right). */
  if (len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0) { src += 3; len -= 3; }
  if (len > 0 && src[0] == '#') {
    size_t i = 0;
    while (i < len && src[i] != '\n') i++;
    src += i; len -= i;
  }
  const char *name = ka_strndup(A, chunkname, strlen(chunkname));
  if (name == NULL) {
    if (err && errsz > 0) snprintf(err, errsz, "%s", "not enough memory");
    return NULL;
  }
  kx_init(&P->lx, A, src, len, name, err, errsz, &P->jb);
  Chunk *c = NULL;
  if (setjmp(P->jb) == 0)
    c = mainfunc(P, name);
  kx_close(&P->lx);
  free(P->stk);
  free(P->actvar);
  free(P->labels);
  free(P->gotos);
  free(P->funcs);
  return c;
}

Func *kp_find_func(Chunk *c, int line, int lastline, int nparams,
                   const char *const *params, int *ambiguous) {
  Func *found = NULL;
  int count = 0;
  if (ambiguous) *ambiguous = 0;
  if (c == NULL) return NULL;
  for (int pass = 0; pass < 2; pass++) {
    /* pass 0: by lines only; pass 1: also by parameters */
    found = NULL;
    count = 0;
    for (int i = 0; i < c->nfuncs; i++) {
      Func *f = c->funcs[i];
      if (f->line != line || f->lastline != lastline) continue;
      if (pass == 1 && nparams >= 0) {
        if (f->nparams != nparams) continue;
        if (params) {
          int j;
          for (j = 0; j < nparams; j++)
            if (params[j] == NULL || strcmp(params[j], f->params[j]) != 0)
              break;
          if (j < nparams) continue;
        }
      }
      found = f;
      count++;
    }
    if (count <= 1) break;
  }
  if (count == 1) return found;
  if (count > 1 && ambiguous) *ambiguous = 1;
  return NULL;
}

const char *kp_opname(OpKind op) {
  switch (op) {
    case OP_ADD: return "+";
    case OP_SUB: return "-";
    case OP_MUL: return "*";
    case OP_DIV: return "/";
    case OP_IDIV: return "//";
    case OP_MOD: return "%";
    case OP_POW: return "^";
    case OP_BAND: return "&";
    case OP_BOR: return "|";
    case OP_BXOR: return "~";
    case OP_SHL: return "<<";
    case OP_SHR: return ">>";
    case OP_CONCAT: return "..";
    case OP_EQ: return "==";
    case OP_NE: return "~=";
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    case OP_GE: return ">=";
    case OP_AND: return "and";
    case OP_OR: return "or";
    case OP_NEG: return "-";
    case OP_NOT: return "not";
    case OP_LEN: return "#";
    case OP_BNOT: return "~";
  }
  return "?";
}
