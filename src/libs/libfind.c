/*
** libfind.c: the one search for run-time loaded libraries (libfind.h).
**
** Why one function: libNVVM, cuBLAS, cuFFT and cuRAND live in the same
** places (a toolkit under CUDA_HOME or /usr/local/cuda, the loader path, or
** pip's nvidia-* wheels), and a user who fixes the search for one (an
** environment variable, CUDA_HOME) expects it fixed for all. The host
** libraries (OpenBLAS for kjit.blas, FFTW for the simulator's cuFFT) take
** the same first steps, then the file cmake found.
*/
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libs/libfind.h"

const char *kl_cuda_home(int i) {
  if (i == 0) {
    const char *h = getenv("CUDA_HOME");
    return h && *h ? h : NULL;
  }
  return i == 1 ? "/usr/local/cuda" : NULL;
}

static void *try_open(const char *file, char *path, size_t path_size) {
  void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (h && path && path_size) snprintf(path, path_size, "%s", file);
  return h;
}

/* pip's wheels: nvidia/<package>/lib/<soname> (CUDA 12 wheels: nvidia/cublas/lib;
** CUDA 13 wheels: nvidia/cu13/lib) in the usual site-packages folders. */
static void *try_pip(const char *soname, char *path, size_t path_size) {
  const char *roots[4] = { getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX"), getenv("HOME"), NULL };
  static const char *const under[] = { "lib/python3*/site-packages", "lib/python3*/site-packages",
                                       ".local/lib/python3*/site-packages" };
  static const char *const system_dirs[] = { "/usr/local/lib/python3*/dist-packages",
                                             "/usr/local/lib/python3*/site-packages",
                                             "/usr/lib/python3/dist-packages" };
  char pat[1024];
  void *h = NULL;
  for (int i = 0; h == NULL && i < 6; i++) {
    if (i < 3) {
      if (roots[i] == NULL || *roots[i] == 0) continue;
      snprintf(pat, sizeof pat, "%s/%s/nvidia/*/lib/%s", roots[i], under[i], soname);
    } else {
      snprintf(pat, sizeof pat, "%s/nvidia/*/lib/%s", system_dirs[i - 3], soname);
    }
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0)
      for (size_t k = 0; h == NULL && k < g.gl_pathc; k++) h = try_open(g.gl_pathv[k], path, path_size);
    globfree(&g);
  }
  return h;
}

void *kl_open(const kl_spec *spec, char *path, size_t path_size, char *why, size_t why_size) {
  static const char *const default_subdirs[] = { "lib64", "lib", "targets/x86_64-linux/lib", NULL };
  const char *const *subdirs = spec->subdirs ? spec->subdirs : default_subdirs;
  const char *env = spec->env ? getenv(spec->env) : NULL;
  char file[1024];
  void *h;
  if (why && why_size) why[0] = 0;
  if (env && *env) {
    h = try_open(env, path, path_size);
    if (h == NULL && why && why_size) {
      const char *e = dlerror();
      snprintf(why, why_size, "%s=%s could not be loaded: %s", spec->env, env, e ? e : "unknown error");
    }
    return h;
  }
  for (const char *const *s = spec->sonames; *s; s++)
    if ((h = try_open(*s, path, path_size)) != NULL) return h;
  if (spec->built) {   /* a host library */
    if (*spec->built && (h = try_open(spec->built, path, path_size)) != NULL) return h;
    if (why && why_size)
      snprintf(why, why_size, "%s not found (%s): %s%s%s", spec->what, spec->sonames[0],
               spec->install ? spec->install : "install it", spec->env ? " or set " : "",
               spec->env ? spec->env : "");
    return NULL;
  }
  for (int i = 0; i < 2; i++) {
    const char *home = kl_cuda_home(i);
    if (home == NULL) continue;
    for (const char *const *d = subdirs; *d; d++)
      for (const char *const *s = spec->sonames; *s; s++) {
        snprintf(file, sizeof file, "%s/%s/%s", home, *d, *s);
        if ((h = try_open(file, path, path_size)) != NULL) return h;
      }
  }
  for (const char *const *s = spec->sonames; *s; s++)
    if ((h = try_pip(*s, path, path_size)) != NULL) return h;
  if (why && why_size)
    snprintf(why, why_size, "%s not found (%s; set %s%sCUDA_HOME, or install the CUDA toolkit)",
             spec->what, spec->sonames[0], spec->env ? spec->env : "", spec->env ? " or " : "");
  return NULL;
}
