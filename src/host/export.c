/*
** host/export.c: the envelope of exported code (export.h) and kjit.load.
**
** Bytes (host byte order):
**
**   offset  size
**        0     8  magic "KJITCODE"
**        8     4  format (KEXP_FORMAT)
**       12     4  kind (KEXP_JIT, KEXP_KERNEL_SIM, KEXP_KERNEL_PTX)
**       16     8  body length (the bytes after this header)
**       24     8  checksum of the body (FNV-1a, 64 bits, as cache.c's)
**       32        body: u32 length + identity text, KCACHE_NFEAT u32 CPU
**                 feature words, then the payload (jit.c, kernel.c)
**
** The identity is text, one "name value" per line, so that a refusal can
** say what differs: kjit's version, the build (a hash of the sources, the
** compiler and the flags, made by cmake/build_hash.cmake: two builds of one
** version may differ in the run-time functions compiled code calls), the ABI between compiled code and the
** run time (sizes of the structures it reads, argument and result slots),
** the LLVM version, Lua's version and number sizes, the target (CPU
** architecture, OS, byte order), and the host's CPU description. kjit.load
** checks the header, the length, the checksum (a damaged or truncated
** string is refused before anything in it is trusted), then each line. For
** CPU code the CPU test is by features: the loading CPU must have every
** feature bit of the exporting one (kcache_host_features), else the host
** lines must be equal. PTX is checked for kjit and the ABI only: the driver
** compiles it for the device, LLVM and the host CPU do not matter.
**
** Design decisions (documented in docs/guide/export.md):
**  - What is exported is one specialization, compiled again for the
**    export (as f:inspect("asm") does), with everything in the object:
**    callees and function literals are compiled into it, upvalues are
**    frozen into it as at any compile, record layouts travel as their
**    fields (interned again at load), those of arrays the code makes too
**    (their ids in the code are named globals, given this process's ids
**    at load: kexp_layout_symbol). A specialization that holds a live
**    Lua value of this process (a table upvalue or global it writes into:
**    a registry reference) or takes a function argument is refused at
**    export with a message saying why.
**  - The loaded value is bound to that one signature: it has no Lua
**    function to compile another one from, and says so when called with
**    other types.
**  - Like the disk cache's directory, bytes that pass the checks are
**    trusted: the checksum catches damage, not an attacker.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "common/compile.h"
#include "backend/cache.h"
#include "host/buffer.h"
#include "host/export.h"
#include "common/krecord.h"
#include "runtime/alloc.h"
#include "kjit_build_hash.h"   /* KJIT_BUILD_HASH (cmake/build_hash.cmake) */

#ifndef KJIT_VERSION
#define KJIT_VERSION "0.0.0"
#endif
#ifndef KJIT_LLVM_VERSION
#define KJIT_LLVM_VERSION "unknown"
#endif

#define MAGIC "KJITCODE"
#define KEXP_FORMAT 4   /* 2: returned arrays of records carry their layouts; 3: and the
                           layouts of the arrays of records the code makes; 4: the CPU
                           payload carries the cannot-fail fact (cache.c) */
#define HEADER 32

#if defined(__x86_64__)
#define ARCH "x86_64"
#elif defined(__aarch64__)
#define ARCH "aarch64"
#else
#define ARCH "other"
#endif
#if defined(__linux__)
#define OS "linux"
#elif defined(__APPLE__)
#define OS "darwin"
#else
#define OS "other"
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ENDIAN "le"
#else
#define ENDIAN "be"
#endif

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* ---- payload fields ----------------------------------------------------- */

void kexp_put(KexpW *w, const void *s, size_t n) {
  if (w->oom) return;
  if (w->n + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->n + n) cap *= 2;
    char *p = realloc(w->p, cap);
    if (!p) { w->oom = 1; return; }
    w->p = p;
    w->cap = cap;
  }
  if (n) memcpy(w->p + w->n, s, n);
  w->n += n;
}

void kexp_u32(KexpW *w, uint32_t v) { kexp_put(w, &v, 4); }

void kexp_str(KexpW *w, const char *s) {
  size_t n = s ? strlen(s) : 0;
  kexp_u32(w, (uint32_t)n);
  kexp_put(w, s, n);
}

const void *kexp_get(KexpR *r, size_t n) {
  if (r->bad || n > r->n - r->at) { r->bad = 1; return NULL; }
  const void *p = r->p + r->at;
  r->at += n;
  return p;
}

uint32_t kexp_getu32(KexpR *r) {
  const void *p = kexp_get(r, 4);
  uint32_t v = 0;
  if (p) memcpy(&v, p, 4);
  return v;
}

char *kexp_getstr(KexpR *r) {
  uint32_t n = kexp_getu32(r);
  const char *s = kexp_get(r, n);
  if (!s) return NULL;
  char *c = malloc((size_t)n + 1);
  if (!c) { r->bad = 1; return NULL; }
  memcpy(c, s, n);
  c[n] = 0;
  return c;
}

/* A record layout, as its fields (nested layouts inline). */
void kexp_record(KexpW *w, const KRecord *r) {
  kexp_u32(w, (uint32_t)r->nfields);
  kexp_put(w, &r->size, 8);
  kexp_put(w, &r->align, 8);
  for (int i = 0; i < r->nfields; i++) {
    const KRecField *f = &r->fields[i];
    kexp_str(w, f->name);
    kexp_u32(w, (uint32_t)f->dtype);
    kexp_put(w, &f->count, 8);
    kexp_put(w, &f->offset, 8);
    if (f->dtype == KJIT_RECORD) kexp_record(w, f->rec);
  }
}

/* The layout put_record wrote, interned in this process (NULL: bad). */
const KRecord *kexp_getrecord(KexpR *r, int depth) {
  uint32_t n = kexp_getu32(r);
  int64_t size = 0, align = 0;
  const void *p;
  if ((p = kexp_get(r, 8))) memcpy(&size, p, 8);
  if ((p = kexp_get(r, 8))) memcpy(&align, p, 8);
  if (r->bad) return NULL;
  if (depth > 16 || n > 4096) {
    snprintf(r->why, sizeof r->why, "a record layout %s", depth > 16 ? "nested more than 16 deep"
                                                                     : "with more than 4096 fields");
    r->bad = 1;
    return NULL;
  }
  KRecField *f = calloc(n ? n : 1, sizeof *f);
  if (!f) { r->bad = 1; return NULL; }
  const KRecord *res = NULL;
  uint32_t i;
  for (i = 0; i < n && !r->bad; i++) {
    f[i].name = kexp_getstr(r);
    f[i].dtype = (int)kexp_getu32(r);
    if ((p = kexp_get(r, 8))) memcpy(&f[i].count, p, 8);
    if ((p = kexp_get(r, 8))) memcpy(&f[i].offset, p, 8);
    if (f[i].dtype == KJIT_RECORD && !r->bad) f[i].rec = kexp_getrecord(r, depth + 1);
  }
  if (!r->bad) {
    char err[256];
    res = krec_intern(f, (int)n, size, align, err, sizeof err);   /* checks every number */
    if (!res) {
      snprintf(r->why, sizeof r->why, "a record layout: %s", err);
      r->bad = 1;
    }
  }
  for (uint32_t j = 0; j < i; j++) free((char *)f[j].name);
  free(f);
  return res;
}

void kexp_damaged(lua_State *L, const KexpR *r, const char *what) {
  if (r && r->why[0]) luaL_error(L, "kjit.load: damaged exported code (%s: %s)", what, r->why);
  luaL_error(L, "kjit.load: damaged exported code (%s)", what);
}

/* ---- layouts of arrays of records made by the code ------------------------------ */

#define KEXP_MAXLAYOUTS 64
static __thread int32_t map_from[KEXP_MAXLAYOUTS], map_to[KEXP_MAXLAYOUTS];
static __thread int map_n;

void kexp_put_layouts(KexpW *w, const int32_t *ids, int n) {
  kexp_u32(w, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    kexp_put(w, &ids[i], 4);
    kexp_record(w, krec_byid(ids[i]));
  }
}

int kexp_get_layouts(KexpR *r) {
  uint32_t n = kexp_getu32(r);
  if (n > KEXP_MAXLAYOUTS) r->bad = 1;
  map_n = 0;
  for (uint32_t i = 0; i < n && !r->bad; i++) {
    int32_t id = 0;
    const void *p = kexp_get(r, 4);
    if (p) memcpy(&id, p, 4);
    const KRecord *rec = kexp_getrecord(r, 0);
    if (r->bad || rec == NULL) break;
    map_from[i] = id;
    map_to[i] = rec->id;
  }
  if (r->bad) return 0;
  map_n = (int)n;
  return 1;
}

void kexp_clear_layouts(void) { map_n = 0; }

void *kexp_layout_symbol(const char *name) {
  size_t pl = strlen(KAL_LAYOUT_SYM);
  if (strncmp(name, KAL_LAYOUT_SYM, pl) != 0) return NULL;
  char *end;
  long id = strtol(name + pl, &end, 10);
  if (*end || end == name + pl || id < 0 || id > INT32_MAX) return NULL;
  for (int i = 0; i < map_n; i++)   /* exported code being loaded: this process's id */
    if (map_from[i] == id) return (void *)kal_record_cell(map_to[i]);
  /* the disk cache's code of this process (its key has the id), or the JIT's */
  return krec_byid((int32_t)id) ? (void *)kal_record_cell((int32_t)id) : NULL;
}

/* ---- identity ------------------------------------------------------------ */

/* This build's identity text for a kind (L for Lua's version). */
static void identity(lua_State *L, int kind, char *out, size_t n) {
  int cpu = kind != KEXP_KERNEL_PTX;
  snprintf(out, n,
           "kjit %s\n"
           "build %s\n"
           "abi args %d rets %d buffer %d err %d dims %d\n"
           "llvm %s\n"
           "lua %d integer %d float %d pointer %d\n"
           "target %s-%s-%s\n"
           "host %s\n",
           KJIT_VERSION, KJIT_BUILD_HASH, KJIT_MAXARGS, KJIT_RETSLOTS, (int)sizeof(KBuffer), (int)sizeof(KErr),
           KJIT_MAXDIMS, cpu ? KJIT_LLVM_VERSION : "-", (int)lua_version(L),
           (int)sizeof(lua_Integer), (int)sizeof(lua_Number), (int)sizeof(void *), ARCH, OS,
           ENDIAN, cpu ? kcache_host_id() : "-");
}

/* The line of text that starts with name (up to its newline), or "". */
static void line_of(const char *text, const char *name, char *out, size_t n) {
  size_t nl = strlen(name);
  out[0] = 0;
  for (const char *s = text; s && *s;) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len > nl && strncmp(s, name, nl) == 0 && s[nl] == ' ') {
      snprintf(out, n, "%.*s", (int)len, s);
      return;
    }
    s = e ? e + 1 : NULL;
  }
}

static const char *const feature_word[KCACHE_NFEAT] = {
  "1.ecx", "1.edx", "7.0.ebx", "7.0.ecx", "7.0.edx", "7.1.eax", "d.1.eax", "e1.ecx", "e1.edx", "xcr0"
};

/* Raises unless the identity (and features) of exported code fit here. */
static void check_identity(lua_State *L, int kind, const char *theirs, const uint32_t *feat) {
  char ours[1024];
  identity(L, kind, ours, sizeof ours);
  static const char *const names[] = { "kjit", "abi", "llvm", "lua", "target", "build" };
  int cpu = kind != KEXP_KERNEL_PTX;
  for (int i = 0; i < 6; i++) {
    if (!cpu && (i == 2 || i == 3 || i == 4)) continue;
    char a[512], b[512];
    line_of(theirs, names[i], a, sizeof a);
    line_of(ours, names[i], b, sizeof b);
    if (strcmp(a, b) == 0) continue;
    if (i == 5)   /* the same version, another build: sources, compiler or flags differ */
      luaL_error(L, "kjit.load: the code comes from another build of kjit %s ('%s', this is "
                 "'%s': other sources, compiler or flags; export it again with this build)",
                 KJIT_VERSION, a[0] ? a : "build ?", b);
    if (strcmp(a, b) != 0)
      luaL_error(L, "kjit.load: the code comes from an incompatible build: it was made by "
                 "'%s', this is '%s' (export it again with this kjit)", a[0] ? a : "?", b);
  }
  if (!cpu) return;
  uint32_t here[KCACHE_NFEAT];
  int byfeat = kcache_host_features(here);
  int any = 0;
  for (int i = 0; i < KCACHE_NFEAT; i++) any |= feat[i] != 0;
  if (byfeat && any) {
    for (int i = 0; i < KCACHE_NFEAT; i++)
      if (feat[i] & ~here[i]) {
        char bits[16];
        snprintf(bits, sizeof bits, "0x%x", (unsigned)(feat[i] & ~here[i]));
        luaL_error(L, "kjit.load: the code was compiled for a CPU with features this one lacks "
                   "(cpuid %s bits %s): export it on a CPU like this one", feature_word[i], bits);
      }
    return;
  }
  char a[512], b[512];
  line_of(theirs, "host", a, sizeof a);
  line_of(ours, "host", b, sizeof b);
  if (strcmp(a, b) != 0)
    luaL_error(L, "kjit.load: the code was compiled for another CPU ('%s', this is '%s')", a, b);
}

/* ---- the envelope ---------------------------------------------------------- */

void kexp_push(lua_State *L, int kind, const void *payload, size_t len) {
  char id[1024];
  identity(L, kind, id, sizeof id);
  uint32_t feat[KCACHE_NFEAT];
  kcache_host_features(feat);
  if (kind == KEXP_KERNEL_PTX) memset(feat, 0, sizeof feat);
  size_t idn = strlen(id);
  size_t body = 4 + idn + sizeof feat + len;
  char *p = lua_newuserdatauv(L, HEADER + body, 0);   /* freed by the GC on an error */
  memcpy(p, MAGIC, 8);
  uint32_t fmt = KEXP_FORMAT, k = (uint32_t)kind, idl = (uint32_t)idn;
  uint64_t bl = body;
  memcpy(p + 8, &fmt, 4);
  memcpy(p + 12, &k, 4);
  memcpy(p + 16, &bl, 8);
  char *b = p + HEADER;
  memcpy(b, &idl, 4);
  memcpy(b + 4, id, idn);
  memcpy(b + 4 + idn, feat, sizeof feat);
  if (len) memcpy(b + 4 + idn + sizeof feat, payload, len);
  uint64_t sum = fnv(b, body);
  memcpy(p + 24, &sum, 8);
  lua_pushlstring(L, p, HEADER + body);
  lua_remove(L, -2);
}

/* kjit.load(bytes) */
int kexp_l_load(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  if (n < HEADER || memcmp(s, MAGIC, 8) != 0)
    return luaL_error(L, "kjit.load: not code exported by kjit (no KJITCODE header)");
  uint32_t fmt, kind;
  uint64_t bl, sum;
  memcpy(&fmt, s + 8, 4);
  memcpy(&kind, s + 12, 4);
  memcpy(&bl, s + 16, 8);
  memcpy(&sum, s + 24, 8);
  if (fmt != KEXP_FORMAT)
    return luaL_error(L, "kjit.load: the code was exported in format %d, this kjit reads "
                      "format %d (export it again with this kjit)", (int)fmt, KEXP_FORMAT);
  if (bl != n - HEADER)
    return luaL_error(L, "kjit.load: damaged exported code: %s (%I bytes, the header says %I)",
                      bl > n - HEADER ? "truncated" : "bytes after its end",
                      (lua_Integer)n, (lua_Integer)(bl + HEADER));
  const char *b = s + HEADER;
  if (fnv(b, (size_t)bl) != sum)
    return luaL_error(L, "kjit.load: damaged exported code (checksum mismatch)");
  if (kind < KEXP_JIT || kind > KEXP_KERNEL_PTX)
    return luaL_error(L, "kjit.load: unknown kind of exported code (%d)", (int)kind);
  KexpR r = { (const unsigned char *)b, (size_t)bl, 0, 0, "" };
  uint32_t idl = kexp_getu32(&r);
  const char *id = kexp_get(&r, idl);
  const uint32_t *fp = kexp_get(&r, KCACHE_NFEAT * 4);
  if (r.bad || idl >= 1024) return luaL_error(L, "kjit.load: damaged exported code (identity)");
  char theirs[1024];
  memcpy(theirs, id, idl);
  theirs[idl] = 0;
  uint32_t feat[KCACHE_NFEAT];
  memcpy(feat, fp, sizeof feat);
  check_identity(L, (int)kind, theirs, feat);
  const void *payload = r.p + r.at;
  size_t plen = r.n - r.at;
  if (kind == KEXP_JIT) kd_load(L, payload, plen);
  else kk_load(L, (int)kind, payload, plen);
  return 1;
}

void kexp_open(lua_State *L) {
  lua_pushcfunction(L, kexp_l_load);
  lua_setfield(L, -2, "load");
}
