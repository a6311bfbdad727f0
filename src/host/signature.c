/*
** host/signature.c: the signature grammar (signature.h) and the typing
** rules of each API that takes signatures. One reader, so that kjit.jit,
** cuda.jit and the ufuncs accept the same texts and explain a mistake the
** same way: what was found, and where (argument number and column).
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "signature.h"

/* ---- Names ------------------------------------------------------------------------ */

static const struct { const char *alias, *dtype; } dtype_aliases[] = {
  { "int32", "i32" }, { "int64", "i64" }, { "float32", "f32" }, { "float64", "f64" },
  { "boolean", "bool" }, { "b1", "bool" },   /* the scalar words' spellings (scalar_type) */
  /* the rest of numba's names */
  { "int8", "i8" }, { "int16", "i16" }, { "uint8", "u8" }, { "uint16", "u16" },
  { "uint32", "u32" }, { "uint64", "u64" }, { "double", "f64" }, { "float16", "f16" },
  /* numba's short names and index types. Its i8 and u8 (64-bit) are not
  ** here: those are kjit's int8 and uint8 (coming-from-numba-cuda.md) */
  { "f2", "f16" }, { "f4", "f32" }, { "f8", "f64" }, { "i1", "i8" }, { "i2", "i16" }, { "i4", "i32" },
  { "u1", "u8" }, { "u2", "u16" }, { "u4", "u32" }, { "intp", "i64" }, { "uintp", "u64" },
};

static int dtype_of(const char *name) {
  /* a record: kjit.jit and kernels (its layout given apart: f:compile(sig, P)) */
  if (strcmp(name, "record") == 0) return (int)KJIT_RECORD;
  /* numba-cuda's random states (kernel.c gives the layout: cuda.random's) */
  if (strcmp(name, KSIG_XORO) == 0) return (int)KJIT_RECORD;
  for (int t = 0; t < KJIT_NDTYPES; t++)
    if (strcmp(kjit_dtype_name((kjit_dtype)t), name) == 0) return t;
  for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++)
    if (strcmp(dtype_aliases[i].alias, name) == 0) return dtype_of(dtype_aliases[i].dtype);
  return -1;
}

const char *ksig_dtype_name(const char *name) {
  int t = dtype_of(name);
  return t < 0 || t == (int)KJIT_RECORD ? NULL : kjit_dtype_name((kjit_dtype)t);
}

/* "i8, u8, ..., f64" */
static void dtype_list(char *buf, size_t n) {
  size_t k = 0;
  buf[0] = '\0';
  for (int t = 0; t < KJIT_NDTYPES && k < n; t++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", t ? ", " : "", kjit_dtype_name((kjit_dtype)t));
}

/* ---- The reader -------------------------------------------------------------------- */

typedef struct Reader {
  const char *text, *p;
  char *err;
  size_t errlen;
} Reader;

static int fail(Reader *R, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(R->err, R->errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static void skip(Reader *R) {
  while (*R->p == ' ' || *R->p == '\t') R->p++;
}

static int column(const Reader *R) { return (int)(R->p - R->text) + 1; }

/* "'x' at column 7" or "the end of the text" */
static const char *found(const Reader *R, char *buf, size_t n) {
  if (*R->p == '\0') snprintf(buf, n, "the end of the text");
  else if (isprint((unsigned char)*R->p)) snprintf(buf, n, "'%c' at column %d", *R->p, column(R));
  else snprintf(buf, n, "byte %d at column %d", (unsigned char)*R->p, column(R));
  return buf;
}

static int name_start(int c) { return isalpha(c) || c == '_'; }
static int name_char(int c) { return isalnum(c) || c == '_'; }

/* what: "argument #3" or "the result type" */
static int read_item(Reader *R, KSigItem *it, const char *what) {
  char fb[48];
  memset(it, 0, sizeof *it);
  skip(R);
  it->column = column(R);
  if (!name_start((unsigned char)*R->p))
    return fail(R, "cannot read %s: expected a type name, found %s", what, found(R, fb, sizeof fb));
  const char *s = R->p;
  while (name_char((unsigned char)*R->p)) R->p++;
  size_t len = (size_t)(R->p - s);
  /* numba-cuda's random states, longer than any other type name: kept
  ** under a short internal name */
  static const char XORO[] = "xoroshiro128p_type";
  if (len == sizeof XORO - 1 && memcmp(s, XORO, len) == 0) { s = KSIG_XORO; len = strlen(KSIG_XORO); }
  if (len >= KSIG_NAMELEN)
    return fail(R, "cannot read %s: '%.12s...' at column %d is not a type (names are at most %d characters)",
                what, s, it->column, KSIG_NAMELEN - 1);
  memcpy(it->name, s, len);
  it->name[len] = '\0';
  it->dtype = dtype_of(it->name);
  skip(R);
  if (*R->p != '[') return 0;
  R->p++;
  int contiguous = -1;   /* the dimension written '::1' */
  it->layout = 'A';
  for (;;) {
    skip(R);
    if (*R->p != ':')
      return fail(R, "cannot read %s: expected ':' or '::1' in the brackets of '%s[...]', found %s",
                  what, it->name, found(R, fb, sizeof fb));
    R->p++;
    if (R->p[0] == ':' && R->p[1] == '1') {
      if (contiguous >= 0)
        return fail(R, "cannot read %s: '%s[...]' has two '::1' dimensions (one contiguous dimension at most)",
                    what, it->name);
      contiguous = it->ndim;
      R->p += 2;
    }
    it->ndim++;
    skip(R);
    if (*R->p == ',') { R->p++; continue; }
    if (*R->p == ']') { R->p++; break; }
    return fail(R, "cannot read %s: expected ',' or ']' in the brackets of '%s[...]', found %s",
                what, it->name, found(R, fb, sizeof fb));
  }
  if (it->ndim > KJIT_MAXDIMS)
    return fail(R, "cannot read %s: '%s' has %d dimensions (kjit arrays have at most %d)",
                what, it->name, it->ndim, KJIT_MAXDIMS);
  if (contiguous >= 0) {
    if (contiguous == it->ndim - 1) it->layout = 'C';
    else if (contiguous == 0) it->layout = 'F';
    else
      return fail(R, "cannot read %s: '::1' marks the contiguous dimension, the first (F layout) "
                  "or the last (C layout), not dimension %d of %d", what, contiguous + 1, it->ndim);
  }
  skip(R);
  return 0;
}

/* The argument list up to ')' (or the end of the text if !closing). */
static int read_args(Reader *R, KSig *s, int closing) {
  char fb[48], what[32];
  skip(R);
  if (closing && *R->p == ')') { R->p++; return 0; }
  if (!closing && *R->p == '\0') return 0;
  for (;;) {
    snprintf(what, sizeof what, "argument #%d", s->nargs + 1);
    if (s->nargs == KJIT_MAXARGS)
      return fail(R, "cannot read %s: at most %d arguments", what, KJIT_MAXARGS);
    if (closing && *R->p == '\0' && s->nargs == 0)
      return fail(R, "missing ')' at the end of the text (after '(')");
    if (closing && *R->p == '\0')
      return fail(R, "missing ')' at the end of the text (after argument #%d)", s->nargs);
    if (read_item(R, &s->args[s->nargs], what) != 0) return -1;
    s->nargs++;
    if (*R->p == ',') { R->p++; skip(R); continue; }
    if (closing && *R->p == ')') { R->p++; return 0; }
    if (!closing && *R->p == '\0') return 0;
    if (closing && *R->p == '\0')
      return fail(R, "missing ')' at the end of the text (after argument #%d)", s->nargs);
    return fail(R, "cannot read %s: expected ',' or %s after '%s', found %s", what,
                closing ? "')'" : "the end of the text", s->args[s->nargs - 1].name, found(R, fb, sizeof fb));
  }
}

int ksig_parse(const char *text, KSigApi api, KSig *out, char *err, size_t errlen) {
  Reader R = { text, text, err, errlen };
  char fb[48];
  memset(out, 0, sizeof *out);
  /* kernels: "f32, f32[:]" without parentheses is a list of arguments */
  if (api == KSIG_KERNEL && strchr(text, '(') == NULL) {
    if (read_args(&R, out, 0) != 0) return -1;
    if (out->nargs == 1 && out->args[0].ndim == 0 &&   /* "void": no argument */
        (strcmp(out->args[0].name, "void") == 0 || strcmp(out->args[0].name, "none") == 0)) {
      out->ret = out->args[0];
      out->has_ret = 1;
      out->nargs = 0;
    }
    return 0;
  }
  skip(&R);
  if (name_start((unsigned char)*R.p)) {
    if (read_item(&R, &out->ret, "the result type") != 0) return -1;
    out->has_ret = 1;
    if (*R.p != '(')
      return fail(&R, "expected '(' after the result type '%s', found %s (a signature is like %s)",
                  out->ret.name, found(&R, fb, sizeof fb),
                  api == KSIG_KERNEL ? "\"void(f32, f32[:], i64)\"" : "\"f64(f32[:], i64)\"");
  }
  if (*R.p != '(')
    return fail(&R, "expected a signature like %s, found %s",
                api == KSIG_KERNEL ? "\"void(f32, f32[:], i64)\"" : "\"f64(f32[:], i64)\"",
                found(&R, fb, sizeof fb));
  R.p++;
  if (read_args(&R, out, 1) != 0) return -1;
  skip(&R);
  if (*R.p != '\0')
    return fail(&R, "unexpected %s after the closing ')'", found(&R, fb, sizeof fb));
  return 0;
}

/* ---- Types per API ------------------------------------------------------------------ */

static int is_none(const char *name) {
  return strcmp(name, "void") == 0 || strcmp(name, "none") == 0;
}

/* The scalar type a name stands for in api's arguments; T_NIL if none. */
static Type scalar_type(const KSigItem *it, KSigApi api) {
  static const struct { const char *name; uint8_t kind; } words[] = {
    { "i64", T_INT }, { "int64", T_INT }, { "int", T_INT },
    { "f64", T_F64 }, { "float64", T_F64 }, { "float", T_F64 }, { "double", T_F64 },
    { "bool", T_BOOL }, { "boolean", T_BOOL }, { "b1", T_BOOL },
  };
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcmp(words[i].name, it->name) == 0) return TY(words[i].kind);
  /* f16 scalars: no Lua value is one (kernels take f32 and round with
  ** cuda.float16(x); f16 arrays are the way to pass halves) */
  if (it->dtype == KJIT_F16) return TY(T_NIL);
  if (api == KSIG_KERNEL && it->dtype >= 0)   /* f32, and integer dtypes (Lua integers) */
    return TY(it->dtype == KJIT_F32 ? T_F32 : it->dtype == KJIT_F64 ? T_F64 : T_INT);
  return TY(T_NIL);
}

static int type_of(const KSigItem *it, KSigApi api, const char *what, Type *out, char *err, size_t n) {
  char dl[96];
  if (it->dtype == (int)KJIT_RECORD) {   /* record (one record), record[:] ... */
    if (api == KSIG_UFUNC) {
      snprintf(err, n, "cannot read %s: vectorized functions do not take records", what);
      return -1;
    }
    *out = TY(T_BUF);
    out->dtype = (uint8_t)KJIT_RECORD;
    out->ndim = (uint8_t)it->ndim;
    return 0;
  }
  if (it->ndim > 0) {
    if (it->dtype < 0) {
      dtype_list(dl, sizeof dl);
      snprintf(err, n, "cannot read %s: '%s' at column %d is not a dtype (one of %s)",
               what, it->name, it->column, dl);
      return -1;
    }
    *out = TY(T_BUF);
    out->dtype = (uint8_t)it->dtype;
    out->ndim = (uint8_t)it->ndim;
    return 0;
  }
  *out = scalar_type(it, api);
  if (out->kind != T_NIL) return 0;
  if (it->dtype == KJIT_F16)
    snprintf(err, n, "cannot read %s: '%s' at column %d: f16 is an array dtype only (%s[:]); "
             "pass an f32 or f64 scalar and round it with kjit.f16(x)", what, it->name, it->column,
             it->name);
  else if (it->dtype >= 0)   /* kjit.jit: a dtype no Lua value has */
    snprintf(err, n, "cannot read %s: '%s' at column %d: kjit.jit functions take i64, f64 and bool "
             "scalars (the Lua values), or arrays such as %s[:]", what, it->name, it->column, it->name);
  else
    snprintf(err, n, "cannot read %s: '%s' at column %d is not a type (scalars: i64, f64, %sbool; "
             "arrays: a dtype with [:], e.g. f32[:, :])", what, it->name, it->column,
             api == KSIG_KERNEL ? "f32, " : "");
  return -1;
}

int ksig_types(const KSig *s, KSigApi api, Type *args, Type *ret, int *has_ret_type,
               char *err, size_t errlen) {
  char what[32];
  for (int i = 0; i < s->nargs; i++) {
    snprintf(what, sizeof what, "argument #%d", i + 1);
    if (type_of(&s->args[i], api, what, &args[i], err, errlen) != 0) return -1;
  }
  *ret = TY(T_NIL);
  *has_ret_type = 0;
  if (!s->has_ret) return 0;
  const KSigItem *r = &s->ret;
  if (api == KSIG_KERNEL) {
    if (r->ndim == 0 && is_none(r->name)) return 0;
    snprintf(err, errlen, "a kernel returns nothing: write \"void(...)\", not '%s(...)'", r->name);
    return -1;
  }
  *has_ret_type = 1;
  if (r->ndim == 0 && is_none(r->name)) return 0;
  /* results may be f32 (arithmetic on f32 arrays), unlike arguments */
  if (r->ndim == 0 && r->dtype == KJIT_F32) { *ret = TY(T_F32); return 0; }
  return type_of(r, api, "the result type", ret, err, errlen);
}

int ksig_ufunc_check(const KSig *s, char *err, size_t errlen) {
  char dl[96];
  for (int i = 0; i < s->nargs; i++)
    if (s->args[i].dtype < 0 || s->args[i].dtype == (int)KJIT_RECORD) {
      dtype_list(dl, sizeof dl);
      snprintf(err, errlen, "cannot read argument #%d: '%s' at column %d is not a dtype (one of %s)",
               i + 1, s->args[i].name, s->args[i].column, dl);
      return -1;
    }
  if (s->has_ret && s->ret.ndim > 0) {
    snprintf(err, errlen, "the result must be a dtype, not an array ('%s[...]')", s->ret.name);
    return -1;
  }
  return 0;
}

/* ---- guvectorize layouts ------------------------------------------------------------------ */

/* The groups of one side ("(n),()") of text, blanks removed. */
static int layout_groups(const char *all, const char *part, size_t len, const char *which,
                         KSigGroup *g, int *ng, char *err, size_t n) {
  char rest[512];   /* the text is at most 500 characters */
  size_t k = 0;
  for (size_t i = 0; i < len; i++)
    if (!isspace((unsigned char)part[i])) {
      rest[k++] = part[i];
    }
  rest[k] = '\0';
  if (k == 0) { snprintf(err, n, "malformed layout '%s': no %s", all, which); return -1; }
  const char *p = rest;
  *ng = 0;
  while (*p) {
    const char *q = p + 1;
    while (name_char((unsigned char)*q) || *q == ',') q++;
    if (*p != '(' || *q != ')') {
      snprintf(err, n, "malformed layout '%s' (expected groups like (n,m) separated by commas)", all);
      return -1;
    }
    if (*ng == KSIG_MAXGROUPS) {
      snprintf(err, n, "malformed layout '%s': more than %d %s", all, KSIG_MAXGROUPS, which);
      return -1;
    }
    KSigGroup *G = &g[(*ng)++];
    G->n = 0;
    if (q > p + 1) {   /* names: "n,m" (an empty name is an error) */
      const char *a = p + 1;
      for (;;) {
        const char *b = a;
        while (b < q && *b != ',') b++;
        size_t nl = (size_t)(b - a);
        int ok = nl > 0 && name_start((unsigned char)*a);
        for (const char *c = a; c < b; c++) ok = ok && name_char((unsigned char)*c);
        if (!ok) { snprintf(err, n, "malformed layout '%s': '%.*s' is not a dimension name", all, (int)nl, a); return -1; }
        if (nl >= KSIG_NAMELEN) {
          snprintf(err, n, "malformed layout '%s': dimension name '%.*s' is too long (at most %d characters)",
                   all, (int)nl, a, KSIG_NAMELEN - 1);
          return -1;
        }
        if (G->n == KSIG_MAXCORE) {
          snprintf(err, n, "malformed layout '%s': a group has more than %d dimensions (kjit arrays have at most %d)",
                   all, KSIG_MAXCORE, KJIT_MAXDIMS);
          return -1;
        }
        memcpy(G->names[G->n], a, nl);
        G->names[G->n++][nl] = '\0';
        if (b == q) break;
        a = b + 1;
      }
    }
    const char *after = q + 1;
    if (*after != '\0' && *after != ',') { snprintf(err, n, "malformed layout '%s'", all); return -1; }
    if (after[0] == ',' && after[1] == '\0') { snprintf(err, n, "malformed layout '%s': trailing comma", all); return -1; }
    p = *after ? after + 1 : after;
  }
  return 0;
}

int ksig_parse_layout(const char *text, KSigLayout *out, char *err, size_t n) {
  memset(out, 0, sizeof *out);
  if (strlen(text) > 500) {
    snprintf(err, n, "malformed layout '%.40s...': too long (at most 500 characters)", text);
    return -1;
  }
  const char *arrow = NULL;   /* the last "->" */
  for (const char *p = text; (p = strstr(p, "->")) != NULL; p++) arrow = p;
  if (arrow == NULL) { snprintf(err, n, "malformed layout '%s': no '->'", text); return -1; }
  if (layout_groups(text, text, (size_t)(arrow - text), "inputs", out->ins, &out->nins, err, n) != 0 ||
      layout_groups(text, arrow + 2, strlen(arrow + 2), "outputs", out->outs, &out->nouts, err, n) != 0)
    return -1;
  /* an output's core dimensions come from the inputs' (nothing else fixes them) */
  for (int o = 0; o < out->nouts; o++)
    for (int d = 0; d < out->outs[o].n; d++) {
      int known = 0;
      for (int i = 0; i < out->nins && !known; i++)
        for (int e = 0; e < out->ins[i].n; e++)
          if (strcmp(out->ins[i].names[e], out->outs[o].names[d]) == 0) known = 1;
      if (!known) {
        snprintf(err, n, "layout '%s': dimension '%s' of output %d appears in no input",
                 text, out->outs[o].names[d], o + 1);
        return -1;
      }
    }
  return 0;
}

/* ---- For the Lua parts (lua/kjit/ufunc.lua) ------------------------------------------------ */

/* signature(text) -> {text =, ret =, args = {{dtype =, dims =}, ...}} or
** nil, "malformed signature 'text': ..." */
static int l_signature(lua_State *L) {
  const char *text = luaL_checkstring(L, 1);
  KSig s;
  char err[256];
  if (ksig_parse(text, KSIG_UFUNC, &s, err, sizeof err) != 0 || ksig_ufunc_check(&s, err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "malformed signature '%s': %s", text, err);
    return 2;
  }
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "text");
  /* the result as written unless it is a dtype: vectorize checks it */
  const char *rd = s.has_ret ? ksig_dtype_name(s.ret.name) : NULL;
  lua_pushstring(L, rd ? rd : s.ret.name);
  lua_setfield(L, -2, "ret");
  lua_createtable(L, s.nargs, 0);
  for (int i = 0; i < s.nargs; i++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, kjit_dtype_name((kjit_dtype)s.args[i].dtype));
    lua_setfield(L, -2, "dtype");
    if (s.args[i].ndim > 0) {   /* dims: nil for a scalar (no brackets) */
      lua_pushinteger(L, s.args[i].ndim);
      lua_setfield(L, -2, "dims");
    }
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "args");
  return 1;
}

static void push_groups(lua_State *L, const KSigGroup *g, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, g[i].n, 0);
    for (int d = 0; d < g[i].n; d++) {
      lua_pushstring(L, g[i].names[d]);
      lua_rawseti(L, -2, d + 1);
    }
    lua_rawseti(L, -2, i + 1);
  }
}

/* layout(text) -> {text =, ins = {{"n"}, {}}, outs = {{"n"}}} or nil, message */
static int l_layout(lua_State *L) {
  const char *text = luaL_checkstring(L, 1);
  KSigLayout lay;
  char err[512];
  if (ksig_parse_layout(text, &lay, err, sizeof err) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_createtable(L, 0, 3);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "text");
  push_groups(L, lay.ins, lay.nins);
  lua_setfield(L, -2, "ins");
  push_groups(L, lay.outs, lay.nouts);
  lua_setfield(L, -2, "outs");
  return 1;
}

void ksig_push_lua(lua_State *L, int table_idx) {
  table_idx = lua_absindex(L, table_idx);
  lua_pushcfunction(L, l_signature);
  lua_setfield(L, table_idx, "signature");
  lua_pushcfunction(L, l_layout);
  lua_setfield(L, table_idx, "layout");
}
