/*
** host/sysinfo.c: kjit.sysinfo([print]), the one-call system report (as
** `numba -s`): what a bug report needs and what a user checks first.
**
**   lua5.4 -l kjit -e 'kjit.sysinfo(true)'
**
** Returns a table of plain values (strings, numbers, booleans, a list of
** device names) and, with print = true, also writes it as "name: value"
** lines to standard output. Everything is read when it is called, never
** cached; looking at the host CPU loads LLVM (as the first compile would).
** Nothing here raises for a missing optional library: the report says
** what was not found and why.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lua.h"
#include "lauxlib.h"
#include "backend/cpu.h"
#include "backend/cache.h"
#include "backend/llvm_load.h"
#include "host/sysinfo.h"

/* The CPU's marketing name from /proc/cpuinfo ("AMD EPYC 9R14 ..."), or
** NULL. */
static const char *cpu_model(char *buf, size_t n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return NULL;
  char line[512];
  const char *r = NULL;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *c = strchr(line, ':');
    if (c == NULL) continue;
    c++;
    while (*c == ' ' || *c == '\t') c++;
    c[strcspn(c, "\n")] = '\0';
    snprintf(buf, n, "%s", c);
    r = buf;
    break;
  }
  fclose(f);
  return r;
}

/* kjit's files in the cache directory: their count and total size. */
static void cache_usage(const char *dir, lua_Integer *files, lua_Integer *bytes) {
  *files = 0;
  *bytes = 0;
  DIR *d = dir ? opendir(dir) : NULL;
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n < 5 || strcmp(e->d_name + n - 4, ".kjc") != 0) continue;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    (*files)++;
    *bytes += (lua_Integer)st.st_size;
  }
  closedir(d);
}

/* Calls module[name] (or module.cuda[name] when cuda) with no argument in
** protected mode; leaves nres results (nil on failure) on the stack. */
static void call_field(lua_State *L, int mod, int cuda, const char *name, int nres) {
  lua_pushvalue(L, mod);
  if (cuda) { lua_getfield(L, -1, "cuda"); lua_remove(L, -2); }
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
  if (lua_pcall(L, 0, nres, 0) != LUA_OK) {
    lua_pop(L, 1);
    for (int i = 0; i < nres; i++) lua_pushnil(L);
  }
}

static void setstr(lua_State *L, const char *k, const char *v) {
  if (v) lua_pushstring(L, v); else lua_pushnil(L);
  lua_setfield(L, -2, k);
}

/* Writes t's fields in this order, "name: value" (lists joined by ", "). */
static const char *const order[] = {
  "kjit", "lua", "lua_headers", "llvm", "llvm_loaded_before", "target", "cpu", "cpu_model",
  "cpu_features", "cores", "threads", "stack_reads", "cache_dir", "cache_files",
  "cache_bytes", "cuda", "cuda_devices", "cuda_simulator", "ptx_backend", "libcuda",
  "libnvvm", NULL
};

static void print_report(lua_State *L, int t) {
  for (int i = 0; order[i]; i++) {
    lua_getfield(L, t, order[i]);
    if (lua_istable(L, -1)) {
      luaL_Buffer b;
      int li = lua_gettop(L), n = (int)luaL_len(L, -1);
      luaL_buffinit(L, &b);
      for (int k = 1; k <= n; k++) {
        if (k > 1) luaL_addstring(&b, ", ");
        lua_geti(L, li, k);
        luaL_addvalue(&b);
      }
      if (n == 0) luaL_addstring(&b, "none");
      luaL_pushresult(&b);
      lua_remove(L, -2);
    }
    printf("%-20s %s\n", order[i], lua_isnil(L, -1) ? "-" : luaL_tolstring(L, -1, NULL));
    lua_settop(L, t);
  }
  fflush(stdout);
}

static int l_sysinfo(lua_State *L) {
  int doprint = lua_toboolean(L, 1);
  int mod = lua_upvalueindex(1);
  lua_settop(L, 0);
  lua_newtable(L);
  int t = lua_gettop(L);

  lua_getfield(L, mod, "version");
  lua_setfield(L, t, "kjit");
  lua_pushfstring(L, "%d.%d", (int)lua_version(L) / 100, (int)lua_version(L) % 100);
  lua_setfield(L, t, "lua");                    /* the running interpreter */
  setstr(L, "lua_headers", LUA_RELEASE);         /* the release kjit was built against */
  lua_getfield(L, mod, "llvm_version");
  lua_setfield(L, t, "llvm");

  /* the host as LLVM sees it: "triple cpu +feature,-feature,..." */
  lua_pushboolean(L, kjit_llvm_loaded());
  lua_setfield(L, t, "llvm_loaded_before");
  const char *err = NULL;
  if (kjit_llvm_load(&err) == 0) {
    const char *d = kc_host_description();
    const char *sp1 = strchr(d, ' ');
    const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (sp1 && sp2) {
      lua_pushlstring(L, d, (size_t)(sp1 - d));
      lua_setfield(L, t, "target");
      lua_pushlstring(L, sp1 + 1, (size_t)(sp2 - sp1 - 1));
      lua_setfield(L, t, "cpu");
      luaL_Buffer b;   /* the enabled features only, space-separated */
      luaL_buffinit(L, &b);
      int first = 1;
      for (const char *p = sp2 + 1; *p;) {
        size_t n = strcspn(p, ",");
        if (*p == '+') {
          if (!first) luaL_addchar(&b, ' ');
          luaL_addlstring(&b, p + 1, n - 1);
          first = 0;
        }
        p += n;
        if (*p == ',') p++;
      }
      luaL_pushresult(&b);
      lua_setfield(L, t, "cpu_features");
    } else {
      setstr(L, "target", d);
    }
  } else {
    lua_pushfstring(L, "LLVM not loaded: %s", err ? err : "?");
    lua_setfield(L, t, "target");
  }
  char mb[256];
  setstr(L, "cpu_model", cpu_model(mb, sizeof mb));
  long nproc = sysconf(_SC_NPROCESSORS_ONLN);
  lua_pushinteger(L, nproc > 0 ? (lua_Integer)nproc : 1);
  lua_setfield(L, t, "cores");
  call_field(L, mod, 0, "get_num_threads", 1);
  lua_setfield(L, t, "threads");
  lua_getfield(L, mod, "stack_reads");
  lua_setfield(L, t, "stack_reads");

  char *dir = kcache_dir();
  setstr(L, "cache_dir", dir);
  lua_Integer files, bytes;
  cache_usage(dir, &files, &bytes);
  free(dir);
  lua_pushinteger(L, files);
  lua_setfield(L, t, "cache_files");
  lua_pushinteger(L, bytes);
  lua_setfield(L, t, "cache_bytes");

  /* CUDA: the driver, its devices, the PTX maker */
  call_field(L, mod, 1, "is_available", 2);   /* ok, reason */
  int ok = lua_toboolean(L, -2);
  if (ok) lua_pushliteral(L, "available");
  else lua_pushfstring(L, "not available (%s)", lua_isstring(L, -1) ? lua_tostring(L, -1) : "?");
  lua_setfield(L, t, "cuda");
  lua_pushboolean(L, ok);
  lua_setfield(L, t, "libcuda");
  lua_pop(L, 2);
  lua_newtable(L);                            /* device names */
  if (ok) {
    call_field(L, mod, 1, "devices", 1);
    if (lua_istable(L, -1)) {
      int n = (int)luaL_len(L, -1);
      for (int i = 1; i <= n; i++) {
        lua_geti(L, -1, i);
        if (lua_istable(L, -1)) lua_getfield(L, -1, "name");
        else lua_pushvalue(L, -1);
        lua_seti(L, -4, i);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_setfield(L, t, "cuda_devices");
  call_field(L, mod, 1, "simulating", 1);
  lua_setfield(L, t, "cuda_simulator");
  call_field(L, mod, 1, "ptx_backend", 2);    /* name, why not libNVVM */
  lua_pushboolean(L, lua_isstring(L, -2) && strcmp(lua_tostring(L, -2), "libNVVM") == 0);
  lua_setfield(L, t, "libnvvm");
  if (lua_isstring(L, -1)) {
    lua_pushfstring(L, "%s (%s)", lua_tostring(L, -2), lua_tostring(L, -1));
    lua_replace(L, -3);
  }
  lua_pop(L, 1);
  lua_setfield(L, t, "ptx_backend");

  if (doprint) print_report(L, t);
  lua_settop(L, t);
  return 1;
}

void ksys_open(lua_State *L) {
  lua_pushvalue(L, -1);   /* the module table, an upvalue */
  lua_pushcclosure(L, l_sysinfo, 1);
  lua_setfield(L, -2, "sysinfo");
}
