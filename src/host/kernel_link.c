/*
** kernel_link.c: cuda.jit's `link` option (numba-cuda's spelling):
**
**   cuda.jit(fn, {link = {"functions.cu", "more.ptx"}})
**
** The files define the external device functions the kernel calls
** (cuda.declare_device, common/cuda_extern.h). They are checked when the
** kernel is made (each must be a .ptx or .cu file that can be read), read
** again each time a GPU specialization compiles (a .cu through NVRTC for
** the specialization's compute capability: libs/nvrtc.c), and handed with
** the kernel's PTX to the driver's linker when the module loads
** (cudadrv.c's kcu_module_link). NVRTC's output is kept for the process,
** by source text and cc. The simulator ignores the files: it runs the
** declarations' sim functions.
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
    luaL_error(L, "cuda.jit: option 'link' must be a list of .ptx and .cu files, got %s",
               luaL_typename(L, v));
  lua_Integer n = luaL_len(L, v);
  lua_createtable(L, (int)n, 0);   /* the checked list */
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_geti(L, v, i) != LUA_TSTRING)
      luaL_error(L, "cuda.jit: link[%d] must be a file name (a string), got %s", (int)i,
                 luaL_typename(L, -1));
    const char *f = lua_tostring(L, -1);
    if (!has_suffix(f, ".ptx") && !has_suffix(f, ".cu"))
      luaL_error(L, "cuda.jit: link[%d] '%s': kjit links .ptx and .cu files (compile other "
                 "sources to PTX first: nvcc -ptx -rdc=true)", (int)i, f);
    FILE *fp = fopen(f, "rb");
    if (fp == NULL) luaL_error(L, "cuda.jit: link[%d]: cannot open '%s': %s", (int)i, f, strerror(errno));
    fclose(fp);
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

static char *read_file(const char *path, char **err) {
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
  return buf;
fail: {
    const char *e = strerror(errno);
    size_t m = strlen(path) + strlen(e) + 32;
    *err = malloc(m);
    if (*err) snprintf(*err, m, "cannot read '%s': %s", path, e);
    return NULL;
  }
}

int klink_sources(lua_State *L, int list, int cc, char ***ptx, char ***names, char **err) {
  *ptx = *names = NULL;
  *err = NULL;
  list = lua_absindex(L, list);
  if (!lua_istable(L, list)) return 0;
  int n = (int)luaL_len(L, list);
  if (n == 0) return 0;
  *ptx = calloc((size_t)n, sizeof **ptx);
  *names = calloc((size_t)n, sizeof **names);
  if (*ptx == NULL || *names == NULL) goto oom;
  for (int i = 0; i < n; i++) {
    lua_geti(L, list, i + 1);
    const char *f = lua_tostring(L, -1);
    size_t fl = strlen(f) + 1;
    (*names)[i] = malloc(fl);
    if ((*names)[i] == NULL) { lua_pop(L, 1); goto oom; }
    memcpy((*names)[i], f, fl);
    lua_pop(L, 1);
    char *text = read_file((*names)[i], err);
    if (text == NULL) goto failed;
    if (has_suffix((*names)[i], ".cu")) {
      char *e2 = NULL;
      (*ptx)[i] = cu_to_ptx(text, (*names)[i], cc, &e2);
      free(text);
      if ((*ptx)[i] == NULL) {
        size_t m = strlen((*names)[i]) + (e2 ? strlen(e2) : 0) + 32;
        *err = malloc(m);
        if (*err) snprintf(*err, m, "'%s': %s", (*names)[i], e2 ? e2 : "NVRTC failed");
        free(e2);
        goto failed;
      }
    } else {
      (*ptx)[i] = text;
    }
  }
  return n;
oom:
  *err = malloc(32);
  if (*err) snprintf(*err, 32, "not enough memory");
failed:
  klink_free(*ptx, *names, n);
  *ptx = *names = NULL;
  return -1;
}

void klink_free(char **ptx, char **names, int n) {
  for (int i = 0; i < n; i++) {
    if (ptx) free(ptx[i]);
    if (names) free(names[i]);
  }
  free(ptx);
  free(names);
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
