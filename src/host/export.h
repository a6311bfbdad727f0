/*
** host/export.h: compiled code as bytes (f:export, k:export, kjit.load).
**
** export.c owns the envelope: a header (magic, format, kind, length,
** checksum), the identity of the build that made the code, and a payload
** that jit.c (one kjit.jit specialization: the disk cache's CPU payload,
** backend/cache.h) or kernel.c (one cuda.jit specialization) writes and
** reads. kjit.load checks the envelope and hands the payload to the one
** that made it. Helpers to write and read payload fields are here too.
*/
#ifndef KJIT_HOST_EXPORT_H
#define KJIT_HOST_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include "lua.h"

/* What the bytes hold. */
enum {
  KEXP_JIT = 1,       /* a kjit.jit specialization: CPU object code */
  KEXP_KERNEL_SIM,    /* a cuda.jit kernel for the simulator: CPU object code */
  KEXP_KERNEL_PTX     /* a cuda.jit kernel for the GPU: PTX */
};

/* Pushes the bytes (a Lua string) of a payload of this kind, made by this
** build for this host. Raises only on out of memory. */
void kexp_push(lua_State *L, int kind, const void *payload, size_t len);

/* ---- payload fields (host byte order: the identity names the host) ---- */

typedef struct KexpW { char *p; size_t n, cap; int oom; } KexpW;
void kexp_put(KexpW *w, const void *s, size_t n);
void kexp_u32(KexpW *w, uint32_t v);
void kexp_str(KexpW *w, const char *s);   /* u32 length, bytes (NULL: empty) */

typedef struct KexpR {
  const unsigned char *p;
  size_t n, at;
  int bad;
  char why[300];   /* what is wrong, where a reader knows more than "damaged" ("" if not) */
} KexpR;
/* Each read past the end sets bad and gives zeros / NULL. */
const void *kexp_get(KexpR *r, size_t n);
uint32_t kexp_getu32(KexpR *r);
/* A malloc'd NUL-terminated copy of a kexp_str (NULL and bad on failure). */
char *kexp_getstr(KexpR *r);

/* A record layout as its fields (nested layouts inline), and back:
** interned in this process (NULL and bad when damaged). */
struct kjit_record;
void kexp_record(KexpW *w, const struct kjit_record *r);
const struct kjit_record *kexp_getrecord(KexpR *r, int depth);

/* Layouts of arrays of records that exported code makes: compiled code
** reads a layout's dtype from the global "kjit.layout.<id>" (runtime/
** alloc.h), the id being the exporting process's. The payload carries
** each id with its layout (kexp_put_layouts); the loader interns the
** layouts here and maps the ids (kexp_get_layouts), and the object
** loader's resolver (kexp_layout_symbol, the backend's name hook) gives
** each global the cell of this process's id while that map is set. */
void kexp_put_layouts(KexpW *w, const int32_t *ids, int n);
/* Reads them and sets this thread's map (0 and nothing set when damaged). */
int kexp_get_layouts(KexpR *r);
void kexp_clear_layouts(void);
void *kexp_layout_symbol(const char *name);

/* Raises "kjit.load: damaged exported code (what)", with r's why after
** what when a reader set one (a record layout that fails its checks). */
void kexp_damaged(lua_State *L, const KexpR *r, const char *what);

/* kjit.load(bytes) itself (the C API's kjit_load calls it). */
int kexp_l_load(lua_State *L);

/* Registers kjit.load into the module table at the top of the stack. */
void kexp_open(lua_State *L);

/* The loaders export.c calls once the envelope is checked: each pushes
** the callable for the payload, or raises "kjit.load: ..." (jit.c,
** kernel.c). */
void kd_load(lua_State *L, const void *payload, size_t len);
void kk_load(lua_State *L, int kind, const void *payload, size_t len);

#endif
