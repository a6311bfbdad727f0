/*
** ast.h: the syntax tree of a Lua 5.4 chunk, as the parser builds it.
**
** The parser covers all of Lua 5.4, so that a construct kjit cannot
** compile is reported by name and line instead of as a syntax error. All
** nodes live in the compile's Arena. Fields marked "resolver" are NULL
** after parsing and filled in by resolve.c; per-specialization facts
** (types) live in side tables indexed by Expr.id, never in the tree.
*/
#ifndef KJIT_AST_H
#define KJIT_AST_H

#include <stdint.h>
#include <stddef.h>

typedef struct Expr Expr;
typedef struct Stmt Stmt;
typedef struct Block Block;
typedef struct Func Func;
typedef struct Var Var;          /* defined by the resolver (resolve.h) */

typedef enum OpKind {
  /* binary */
  OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_IDIV, OP_MOD, OP_POW,
  OP_BAND, OP_BOR, OP_BXOR, OP_SHL, OP_SHR, OP_CONCAT,
  OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR,
  /* unary */
  OP_NEG, OP_NOT, OP_LEN, OP_BNOT
} OpKind;

typedef enum ExprKind {
  E_NIL, E_TRUE, E_FALSE,
  E_INT,        /* integer literal (u.i) */
  E_FLT,        /* float literal (u.f) */
  E_STR,        /* string literal (u.str), escapes already decoded */
  E_VARARG,     /* ... */
  E_FUNC,       /* function literal (u.func) */
  E_NAME,       /* a name (u.name) */
  E_INDEX,      /* obj[key] (u.index) */
  E_FIELD,      /* obj.name (u.field) */
  E_CALL,       /* fn(args) (u.call); also f"str" and f{table} */
  E_METHCALL,   /* obj:name(args) (u.meth) */
  E_BINOP,      /* a op b (u.bin) */
  E_UNOP,       /* op a (u.un) */
  E_TABLE,      /* { items } (u.table) */
  E_PAREN       /* ( e ): truncates to one value (u.paren) */
} ExprKind;

typedef enum TableItemKind { TI_POS, TI_NAMED, TI_KEYED } TableItemKind;
typedef struct TableItem {
  TableItemKind kind;
  const char *name;     /* TI_NAMED: name = value */
  Expr *key;            /* TI_KEYED: [key] = value */
  Expr *value;
} TableItem;

struct Expr {
  ExprKind kind;
  int line;
  int id;               /* 0..Chunk.nexprs-1, unique in the chunk */
  union {
    int64_t i;
    double f;
    struct { const char *s; size_t len; } str;
    Func *func;
    struct { const char *name; Var *var; /* resolver; NULL = global */ } name;
    struct { Expr *obj, *key; } index;
    struct { Expr *obj; const char *name; } field;
    struct { Expr *fn; Expr **args; int nargs; } call;
    struct { Expr *obj; const char *name; Expr **args; int nargs; } meth;
    struct { OpKind op; Expr *a, *b; } bin;
    struct { OpKind op; Expr *a; } un;
    struct { TableItem *items; int n; } table;
    Expr *paren;
  } u;
};

typedef enum StmtKind {
  S_LOCAL,      /* local names <attribs> = exprs */
  S_ASSIGN,     /* targets = exprs */
  S_CALL,       /* a call statement (u.call is E_CALL or E_METHCALL) */
  S_DO,         /* do block end */
  S_WHILE,      /* while cond do body end */
  S_REPEAT,     /* repeat body until cond (cond sees body's locals) */
  S_IF,         /* if conds[0] then blocks[0] elseif ... else els end */
  S_FORNUM,     /* for name = start, limit [, step] do body end */
  S_FORIN,      /* for names in exprs do body end */
  S_FUNCTION,   /* function a.b.c[:m](...) ... end */
  S_LOCALFUNC,  /* local function name(...) ... end */
  S_RETURN,     /* return exprs */
  S_BREAK,
  S_GOTO,
  S_LABEL,      /* ::name:: */
  S_EMPTY       /* ; */
} StmtKind;

struct Block {
  Stmt **stmts;
  int n;
  int line, lastline;   /* first and last line of the block */
};

struct Stmt {
  StmtKind kind;
  int line;
  union {
    struct {
      const char **names;
      const char **attribs;   /* per name: NULL, "const" or "close" */
      int nnames;
      Expr **exprs; int nexprs;
      Var **vars;             /* resolver */
    } local;
    struct { Expr **targets; int ntargets; Expr **exprs; int nexprs; } assign;
    Expr *call;
    Block *block;                                  /* S_DO */
    struct { Expr *cond; Block *body; } loop;      /* S_WHILE, S_REPEAT */
    struct { Expr **conds; Block **blocks; int n; Block *els; } ifs;
    struct {
      const char *name; Var *var;                  /* var: resolver */
      Expr *start, *limit, *step;                  /* step NULL if absent */
      Block *body;
      int prange;        /* a `for i in kjit.prange(a, b, step)` (types.c) */
    } fornum;
    struct {
      const char **names; int nnames; Var **vars;  /* vars: resolver */
      Expr **exprs; int nexprs;
      Block *body;
    } forin;
    struct {
      Expr *target;     /* E_NAME or E_FIELD chain: a.b.c */
      int is_method;    /* a.b:c; func has "self" as its first parameter */
      Func *func;
    } function;
    struct { const char *name; Var *var; Func *func; } localfunc;
    struct { Expr **exprs; int n; } ret;
    const char *label;                             /* S_GOTO, S_LABEL */
  } u;
};

struct Func {
  int line;             /* line of 'function' (= debug.getinfo linedefined) */
  int lastline;         /* line of its 'end' (= lastlinedefined) */
  const char **params; int nparams;
  int is_vararg;
  Var **paramvars;      /* resolver */
  Block *body;
  const char *name;     /* "f", "a.b.c", "a.b:c" or NULL for anonymous */
  int id;               /* index in Chunk.funcs */
  Func *parent;         /* enclosing function; NULL for the main chunk */
};

typedef struct Chunk {
  Func *main;           /* the chunk itself: line 0, vararg */
  Func **funcs;         /* every function literal, main included, in order */
  int nfuncs;
  int nexprs;           /* number of Expr ids handed out */
  const char *chunkname;/* as given to kp_parse, used in messages */
} Chunk;

#endif
