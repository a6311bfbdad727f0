/*
** runtime/luaclosure.c: real Lua closures for the function literals that
** escape compiled code (stored in a table, returned: ir/ir_escape.c says
** which), issue 29 item 2.
**
** The Lua API cannot instantiate a nested prototype, so each such literal
** gets, when it compiles, a "maker": a Lua function loaded from a binary
** chunk written here, whose main function takes one parameter per upvalue
** of the literal and runs `CLOSURE P; RETURN (closing upvalues)`, P being
** the literal's own prototype copied byte for byte from lua_dump of the
** compiled function, its upvalue descriptors rewritten to capture the
** maker's parameters. Calling the maker with the captured values makes a
** closure of P with fresh upvalues holding those values: Lua's semantics
** for locals that keep one value while the literal lives, which the typer
** requires (ir_closure.c). Upvalues P shares with the compiled function's
** own real closure (its _ENV, an upvalue of the chunk) are joined to the
** real ones (lua_upvaluejoin), so they are the same variables. The binary
** chunk format is the one every Lua 5.4 release writes (frontend
** bytecode.h); only this file writes it.
*/
#include "runtime/luaclosure.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/luavalue.h"
#include "runtime/luacall.h"
#include "lauxlib.h"
#include "backend/cpu.h"
#include "common/karray.h"
#include "host/record.h"   /* (KREC_ARRAY_MT only) */

/* ---- Reading a dump (ldump.c's format) ------------------------------------ */

typedef struct Rd { const unsigned char *p; size_t n, at; int bad; } Rd;

static unsigned byte(Rd *r) {
  if (r->at >= r->n) { r->bad = 1; return 0; }
  return r->p[r->at++];
}
static size_t size(Rd *r) {
  size_t x = 0;
  unsigned b;
  int k = 0;
  do {
    b = byte(r);
    x = (x << 7) | (b & 0x7f);
    if (++k > 10) { r->bad = 1; return 0; }
  } while (!(b & 0x80) && !r->bad);
  return x;
}
static void skip(Rd *r, size_t n) {
  if (n > r->n - r->at) { r->bad = 1; r->at = r->n; return; }
  r->at += n;
}
static void skip_string(Rd *r) { size_t s = size(r); if (s) skip(r, s - 1); }

/* Skips one function; with want >= 0 at this level's protos, records the
** byte range of child path[0] (recursively) and of its upvalue table. */
static void function(Rd *r, const int *path, int depth, size_t *from, size_t *to, size_t *ups) {
  size_t start = r->at;
  skip_string(r);                  /* source */
  size(r); size(r);                /* linedefined, lastlinedefined */
  skip(r, 3);                      /* numparams, is_vararg, maxstacksize */
  skip(r, size(r) * 4);            /* code */
  size_t nk = size(r);
  for (size_t i = 0; i < nk && !r->bad; i++) {
    unsigned t = byte(r);
    if (t == 0x13 || t == 0x03) skip(r, 8);        /* float, integer */
    else if (t == 0x04 || t == 0x14) skip_string(r);
    else if (t != 0x00 && t != 0x01 && t != 0x11) r->bad = 1;
  }
  size_t upat = r->at;
  size_t nup = size(r);
  skip(r, nup * 3);
  size_t np = size(r);
  for (size_t i = 0; i < np && !r->bad; i++) {
    if (depth > 0 && (int)i == path[0])
      function(r, path + 1, depth - 1, from, to, ups);
    else
      function(r, NULL, 0, NULL, NULL, NULL);
  }
  skip(r, size(r));                /* lineinfo */
  size_t na = size(r);
  for (size_t i = 0; i < na && !r->bad; i++) { size(r); size(r); }
  size_t nl = size(r);
  for (size_t i = 0; i < nl && !r->bad; i++) { skip_string(r); size(r); size(r); }
  size_t nu = size(r);
  for (size_t i = 0; i < nu && !r->bad; i++) skip_string(r);
  if (depth == 0 && from) { *from = start; *to = r->at; *ups = upat; }
}

/* A growable byte buffer (malloc'd: no Lua stack discipline to keep). */
typedef struct Buf { unsigned char *p; size_t n, cap; int bad; } Buf;

static void add(Buf *b, const void *p, size_t n) {
  if (b->bad) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (q == NULL) { b->bad = 1; return; }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}
static void addc(Buf *b, unsigned c) { unsigned char x = (unsigned char)c; add(b, &x, 1); }

static int writer(lua_State *L, const void *p, size_t sz, void *ud) {
  (void)L;
  add((Buf *)ud, p, sz);
  return ((Buf *)ud)->bad;
}

static void put_size(Buf *b, size_t x) {
  unsigned char buf[16];
  int n = 0;
  do { buf[15 - n++] = (unsigned char)(x & 0x7f); x >>= 7; } while (x);
  buf[15] |= 0x80;
  add(b, buf + 16 - n, (size_t)n);
}

#define HEADER 31   /* signature 4, version, format, LUAC_DATA 6, 3 sizes, LUAC_INT 8, LUAC_NUM 8 */

static int make(lua_State *L, const unsigned char *d, size_t n, const int *path, int depth,
                Buf *b, char *err, size_t errsz) {
  if (n < HEADER + 2 || d[4] != 0x54 || d[5] != 0) {
    snprintf(err, errsz, "cannot dump the function to make its closures");
    return 0;
  }
  Rd r = { d, n, HEADER + 1, 0 };
  size_t srcat = r.at;
  size_t from = 0, to = 0, ups = 0;
  function(&r, path, depth, &from, &to, &ups);
  if (r.bad || to <= from || depth < 1) {
    snprintf(err, errsz, "cannot find a function literal in the function's dump");
    return 0;
  }
  Rd s = { d, n, srcat, 0 };
  skip_string(&s);
  size_t srcend = s.at;
  Rd u = { d, n, ups, 0 };
  size_t nup = size(&u);
  size_t upbytes = u.at;   /* the descriptors: 3 bytes each */
  if (nup > 250) { snprintf(err, errsz, "too many upvalues"); return 0; }
  /* the maker: header, no upvalues of its own, its main function */
  add(b, d, HEADER);
  addc(b, 0);
  add(b, d + srcat, srcend - srcat);      /* the dumped function's source */
  put_size(b, 0); put_size(b, 0);
  addc(b, (unsigned)nup);                 /* numparams */
  addc(b, 0);                             /* is_vararg */
  addc(b, (unsigned)(nup + 2));           /* maxstacksize */
  put_size(b, 2);
  uint32_t code[2];
  code[0] = 79u | ((uint32_t)nup << 7);                              /* CLOSURE A 0 */
  code[1] = 70u | ((uint32_t)nup << 7) | (1u << 15) | (2u << 16);   /* RETURN A 2 0 k */
  add(b, code, sizeof code);
  put_size(b, 0);                         /* constants */
  put_size(b, 0);                         /* upvalues */
  put_size(b, 1);                         /* protos: the literal, its upvalues rewritten */
  add(b, d + from, upbytes - from);
  for (size_t i = 0; i < nup; i++) {
    addc(b, 1);                           /* instack: the maker's parameter i */
    addc(b, (unsigned)i);
    addc(b, d[upbytes + 3 * i + 2]);      /* kind */
  }
  add(b, d + upbytes + 3 * nup, to - (upbytes + 3 * nup));
  put_size(b, 0); put_size(b, 0); put_size(b, 0); put_size(b, 0);   /* debug */
  if (b->bad) { snprintf(err, errsz, "not enough memory"); return 0; }
  if (luaL_loadbufferx(L, (const char *)b->p, b->n, "=kjit closure maker", "b") != LUA_OK) {
    snprintf(err, errsz, "cannot load a closure maker: %s", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

int kjit_lc_maker(lua_State *L, const int *path, int depth, char *err, size_t errsz) {
  Buf dump = { 0 }, out = { 0 };
  int ref = 0;
  if (lua_dump(L, writer, &dump, 0) != 0 || dump.bad)
    snprintf(err, errsz, "cannot dump the function to make its closures");
  else
    ref = make(L, dump.p, dump.n, path, depth, &out, err, errsz);
  free(dump.p);
  free(out.p);
  return ref;
}

/* ---- Run time ----------------------------------------------------------------- */

void kjit_lc_mkbegin(lua_State *L, int32_t maker) {
  luaL_checkstack(L, 260, "kjit: making a closure");
  lua_rawgeti(L, LUA_REGISTRYINDEX, maker);
}

void kjit_lc_mkpush(lua_State *L, int32_t tag, int64_t bits, int32_t slot) {
  kjit_lv_push(L, tag, bits, slot);
}

/* Argument i of the dispatcher's call, a kjit array whose data is at data
** (ir_type.c kty_capture_argarray): its userdata. The dispatcher's
** arguments start at stack index 2 (jit.c's __call); failing that, the
** one array below the compiled frames with that data. */
void kjit_lc_mkpush_arg(lua_State *L, int32_t i, int64_t data) {
  int top = lua_gettop(L) - 1;   /* (the maker is on top) */
  for (int pass = 0; pass < 2; pass++)
    for (int idx = pass == 0 ? 2 + i : 1; idx <= (pass == 0 ? 2 + i : top) && idx <= top; idx++) {
      /* (an array of records has a metatable of its own, host/record.h) */
      const KBuffer *b = luaL_testudata(L, idx, KB_METATABLE);
      if (b == NULL) b = luaL_testudata(L, idx, KREC_ARRAY_MT);
      if (b && (int64_t)(intptr_t)b->data == data) {
        lua_pushvalue(L, idx);
        return;
      }
    }
  luaL_error(L, "kjit: internal error: a captured array argument not found");
}

void kjit_lc_mkend(lua_State *L, int32_t nup, const char *how, int32_t root, int32_t dst) {
  lua_call(L, nup, 1);
  for (int u = 0; u < nup; u++) {
    unsigned h = (unsigned char)how[u];
    if (h == 0xff) {   /* `local function f`: f itself */
      lua_pushvalue(L, -1);
      lua_setupvalue(L, -2, u + 1);
    } else if (h == 0xfe) {   /* a cell (luacell.c) was pushed: share its variable */
      lua_getupvalue(L, -1, u + 1);
      lua_upvaluejoin(L, -2, u + 1, -1, 1);
      lua_pop(L, 1);
    } else if (h > 0) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, root);
      lua_upvaluejoin(L, -2, u + 1, -1, (int)h);
      lua_pop(L, 1);
    }
  }
  lua_replace(L, dst);
}

void kjit_lc_closure_register(void) {
  kc_register_symbol("kjit_lc_mkbegin", (void *)kjit_lc_mkbegin);
  kc_register_symbol("kjit_lc_mkpush", (void *)kjit_lc_mkpush);
  kc_register_symbol("kjit_lc_mkend", (void *)kjit_lc_mkend);
  kc_register_symbol("kjit_lc_mkpush_arg", (void *)kjit_lc_mkpush_arg);
}
