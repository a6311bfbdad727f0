/*
** kernel_link.c: cuda.jit's `link` option (numba-cuda's spelling):
**
**   cuda.jit(fn, {link = {"functions.cu", "more.ptx"}})
**
** The files define the external device functions the kernel calls
** (cuda.declare_device, common/cuda_extern.h). They are checked when the
** kernel is made (each must be a file that can be read: .ptx or .cu
** source, or a .cubin, .fatbin, .o or .a as nvcc makes them, with its
** format's magic bytes), read again each time a GPU specialization
** compiles (a .cu through NVRTC for the specialization's compute
** capability: libs/nvrtc.c), and handed with the kernel's PTX to the
** driver's linker when the module loads (cudadrv.c's kcu_module_link),
** each with its CUjitInputType (numba-cuda's list: cubin, fatbin, object,
** library, ptx). NVRTC's output is kept for the process, by source text
** and cc. The simulator ignores the files: it runs the declarations' sim
** functions.
**
** The bytes go to cuLinkAddData, not cuLinkAddFile: they are read when
** the specialization compiles, as the sources are, so that a module
** loaded later (another device, a context made again after cuda.close())
** links what the kernel was compiled with, and so that k:export carries
** them (kjit.load links them where the files do not exist).
**
** Why the driver's linker and not one PTX text: two PTX modules cannot be
** pasted together (each has its own .version/.target header, and the
** kernel's .extern declaration must meet the file's .visible definition),
** and linking is exactly what cuLinkAddData/cuLinkComplete do, as in
** numba-cuda. A kernel that calls an external function and has no link
** files is refused when its module loads, naming the function.
*/
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "host/kernel_link.h"
#include "libs/nvrtc.h"

static int has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n > m && strcmp(s + n - m, suf) == 0;
}

/* The kinds of link files, by suffix: the linker's input type, and the
** magic bytes a binary one starts with (what nvcc writes; a wrong file is
** refused at cuda.jit rather than by the driver at the first launch). */
static const struct { const char *suffix; int type; const char *magic; size_t nmagic;
                      const char *what; } kinds[] = {
  { ".ptx", KCU_LINK_PTX, NULL, 0, "PTX" },
  { ".cu", KCU_LINK_PTX, NULL, 0, "CUDA C++" },
  { ".cubin", KCU_LINK_CUBIN, "\x7f" "ELF", 4, "an ELF cubin (nvcc -cubin)" },
  { ".fatbin", KCU_LINK_FATBIN, "\x50\xed\x55\xba", 4, "a fat binary (nvcc -fatbin)" },
  { ".o", KCU_LINK_OBJECT, "\x7f" "ELF", 4, "an ELF object (nvcc -rdc=true -c)" },
  { ".a", KCU_LINK_LIBRARY, "!<arch>\n", 8, "an ar archive (nvcc -lib)" },
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

static int kind_of(const char *f) {
  for (int i = 0; i < NKINDS; i++)
    if (has_suffix(f, kinds[i].suffix)) return i;
  return -1;
}

void klink_option(lua_State *L, int opts) {
  opts = lua_absindex(L, opts);
  if (!lua_istable(L, opts) || lua_getfield(L, opts, "link") == LUA_TNIL) {
    if (lua_istable(L, opts)) lua_pop(L, 1);
    lua_pushnil(L);
    return;
  }
  int v = lua_gettop(L);
  if (lua_type(L, v) == LUA_TSTRING) {   /* one file */
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, v);
    lua_rawseti(L, -2, 1);
    lua_replace(L, v);
  }
  if (!lua_istable(L, v))
    luaL_error(L, "cuda.jit: option 'link' must be a list of files (.ptx, .cu, .cubin, .fatbin, "
               ".o, .a), got %s", luaL_typename(L, v));
  lua_Integer n = luaL_len(L, v);
  lua_createtable(L, (int)n, 0);   /* the checked list */
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_geti(L, v, i) != LUA_TSTRING)
      luaL_error(L, "cuda.jit: link[%d] must be a file name (a string), got %s", (int)i,
                 luaL_typename(L, -1));
    const char *f = lua_tostring(L, -1);
    int kd = kind_of(f);
    if (kd < 0)
      luaL_error(L, "cuda.jit: link[%d] '%s': kjit links .ptx, .cu, .cubin, .fatbin, .o and .a "
                 "files (name the file by its kind)", (int)i, f);
    FILE *fp = fopen(f, "rb");
    if (fp == NULL) luaL_error(L, "cuda.jit: link[%d]: cannot open '%s': %s", (int)i, f, strerror(errno));
    char head[8];
    size_t got = kinds[kd].nmagic ? fread(head, 1, kinds[kd].nmagic, fp) : 0;
    fclose(fp);
    if (kinds[kd].nmagic && (got != kinds[kd].nmagic || memcmp(head, kinds[kd].magic, got) != 0))
      luaL_error(L, "cuda.jit: link[%d] '%s' is not %s", (int)i, f, kinds[kd].what);
    lua_rawseti(L, -2, i);
  }
  lua_replace(L, v);
  /* the options without 'link', for the option reader */
  lua_newtable(L);
  lua_pushnil(L);
  while (lua_next(L, opts)) {
    if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "link") == 0) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  lua_replace(L, opts);
}

/* NVRTC's PTX by (source text, cc), for the process: each kernel and each
** specialization links the same files, and NVRTC takes tens of ms where
** the kernel itself compiles in a few. Sources are compared whole. */
typedef struct CuMemo { struct CuMemo *next; char *src; int cc; char *ptx; } CuMemo;
static CuMemo *cu_memo;
static pthread_mutex_t cu_memo_mu = PTHREAD_MUTEX_INITIALIZER;

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* A malloc'd copy of the PTX of src for cc, compiled once. */
static char *cu_to_ptx(const char *src, const char *name, int cc, char **err) {
  pthread_mutex_lock(&cu_memo_mu);
  for (CuMemo *m = cu_memo; m; m = m->next)
    if (m->cc == cc && strcmp(m->src, src) == 0) {
      char *r = dup_str(m->ptx);
      pthread_mutex_unlock(&cu_memo_mu);
      if (r == NULL) *err = dup_str("not enough memory");
      return r;
    }
  pthread_mutex_unlock(&cu_memo_mu);
  char *ptx = knr_compile(src, name, cc, err);
  if (ptx == NULL) return NULL;
  CuMemo *m = malloc(sizeof *m);
  if (m && (m->src = dup_str(src)) != NULL && (m->ptx = dup_str(ptx)) != NULL) {
    m->cc = cc;
    pthread_mutex_lock(&cu_memo_mu);
    m->next = cu_memo;
    cu_memo = m;
    pthread_mutex_unlock(&cu_memo_mu);
  } else if (m) {
    free(m->src);
    free(m);
  }
  return ptx;
}

/* The file's bytes and a terminating 0 (not counted in *len). */
static char *read_file(const char *path, size_t *len, char **err) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t n = 0, cap = 0;
  if (f == NULL) goto fail;
  for (;;) {
    if (cap - n < 4096) {
      char *b = realloc(buf, cap = cap * 2 + 8192);
      if (b == NULL) { fclose(f); free(buf); errno = ENOMEM; goto fail; }
      buf = b;
    }
    size_t r = fread(buf + n, 1, cap - n - 1, f);
    n += r;
    if (r == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) { free(buf); errno = EIO; goto fail; }
  buf[n] = 0;
  *len = n;
  return buf;
fail: {
    const char *e = strerror(errno);
    size_t m = strlen(path) + strlen(e) + 32;
    *err = malloc(m);
    if (*err) snprintf(*err, m, "cannot read '%s': %s", path, e);
    return NULL;
  }
}

int klink_sources(lua_State *L, int list, int cc, KCuLinkInput **in, char **err) {
  *in = NULL;
  *err = NULL;
  list = lua_absindex(L, list);
  if (!lua_istable(L, list)) return 0;
  int n = (int)luaL_len(L, list);
  if (n == 0) return 0;
  KCuLinkInput *v = *in = calloc((size_t)n, sizeof *v);
  if (v == NULL) goto oom;
  for (int i = 0; i < n; i++) {
    lua_geti(L, list, i + 1);
    const char *f = lua_tostring(L, -1);
    size_t fl = strlen(f) + 1;
    v[i].name = malloc(fl);
    if (v[i].name == NULL) { lua_pop(L, 1); goto oom; }
    memcpy(v[i].name, f, fl);
    lua_pop(L, 1);
    size_t len = 0;
    char *text = read_file(v[i].name, &len, err);
    if (text == NULL) goto failed;
    int kd = kind_of(v[i].name);
    v[i].type = kd >= 0 ? kinds[kd].type : KCU_LINK_PTX;
    if (has_suffix(v[i].name, ".cu")) {
      char *e2 = NULL;
      v[i].data = cu_to_ptx(text, v[i].name, cc, &e2);
      free(text);
      if (v[i].data == NULL) {
        size_t m = strlen(v[i].name) + (e2 ? strlen(e2) : 0) + 32;
        *err = malloc(m);
        if (*err) snprintf(*err, m, "'%s': %s", v[i].name, e2 ? e2 : "NVRTC failed");
        free(e2);
        goto failed;
      }
      v[i].size = strlen(v[i].data) + 1;
    } else {
      v[i].data = text;
      v[i].size = v[i].type == KCU_LINK_PTX ? strlen(text) + 1 : len;
    }
  }
  return n;
oom:
  *err = malloc(32);
  if (*err) snprintf(*err, 32, "not enough memory");
failed:
  klink_free(v, n);
  *in = NULL;
  return -1;
}

void klink_free(KCuLinkInput *in, int n) {
  for (int i = 0; in && i < n; i++) {
    free(in[i].data);
    free(in[i].name);
  }
  free(in);
}

/* The first function the PTX declares .extern that kjit's own code does not
** provide (vprintf and the allocator are the CUDA runtime's), into name. */
int klink_first_extern(const char *ptx, char *name, size_t n) {
  static const char *const system[] = { "vprintf", "malloc", "free", "__assertfail", NULL };
  for (const char *p = ptx; (p = strstr(p, ".extern .func")) != NULL; ) {
    p += 13;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '(') {   /* the result's parameter */
      const char *c = strchr(p, ')');
      if (c == NULL) return 0;
      p = c + 1;
      while (*p == ' ' || *p == '\t') p++;
    }
    size_t k = 0;
    while (p[k] && p[k] != '(' && p[k] != ' ' && p[k] != '\n' && p[k] != ';') k++;
    int sys = 0;
    for (int i = 0; system[i]; i++) sys |= strlen(system[i]) == k && strncmp(p, system[i], k) == 0;
    if (!sys && k > 0) {
      snprintf(name, n, "%.*s", (int)k, p);
      return 1;
    }
  }
  return 0;
}
