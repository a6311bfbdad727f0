/*
** nvrtc.c: CUDA C++ to PTX with NVRTC (nvrtc.h), loaded once per process
** by dlopen through libfind.c ($KJIT_NVRTC, the loader path, CUDA_HOME,
** /usr/local/cuda, pip's nvidia/<package>/lib), never linked: kjit builds and runs
** without it, and only `link = {"file.cu"}` needs it.
**
** Options, as numba-cuda gives NVRTC for its link files: the target
** architecture (compute_<cc>), -rdc=true (relocatable device code: an
** extern "C" __device__ function nobody in the file calls is kept for the
** linker), and include paths: the file's own folder and the toolkit's
** include folder where there is one (cuda_fp16.h and friends).
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "libs/libfind.h"
#include "libs/nvrtc.h"

typedef int nvrtcResult;
typedef void *nvrtcProgram;

static struct {
  nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                        const char *const *);
  nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*ptxsize)(nvrtcProgram, size_t *);
  nvrtcResult (*ptx)(nvrtcProgram, char *);
  nvrtcResult (*logsize)(nvrtcProgram, size_t *);
  nvrtcResult (*log)(nvrtcProgram, char *);
  nvrtcResult (*destroy)(nvrtcProgram *);
  const char *(*errstr)(nvrtcResult);
  int ok;
  char why[800];
} nr;

static pthread_once_t nr_once = PTHREAD_ONCE_INIT;

static void load(void) {
  static const char *const sonames[] = { "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL };
  static const kl_spec spec = { "NVRTC", "KJIT_NVRTC", sonames, NULL, NULL, NULL };
  char why[500];
  void *h = kl_open(&spec, NULL, 0, why, sizeof why);
  if (h == NULL) {
    snprintf(nr.why, sizeof nr.why, "%s; it compiles the .cu files given to cuda.jit's link "
             "option (pip install nvidia-cuda-nvrtc, or the CUDA toolkit), or compile them to "
             ".ptx with nvcc -ptx -rdc=true and link those", why);
    return;
  }
  static const char *const names[] = { "nvrtcCreateProgram", "nvrtcCompileProgram",
                                       "nvrtcGetPTXSize", "nvrtcGetPTX",
                                       "nvrtcGetProgramLogSize", "nvrtcGetProgramLog",
                                       "nvrtcDestroyProgram", "nvrtcGetErrorString" };
  void **slots[] = { (void **)&nr.create, (void **)&nr.compile, (void **)&nr.ptxsize,
                     (void **)&nr.ptx, (void **)&nr.logsize, (void **)&nr.log,
                     (void **)&nr.destroy, (void **)&nr.errstr };
  for (int i = 0; i < 8; i++)
    if ((*slots[i] = dlsym(h, names[i])) == NULL) {
      snprintf(nr.why, sizeof nr.why, "NVRTC has no %s (a library too old or not NVRTC)",
               names[i]);
      return;
    }
  nr.ok = 1;
}

static char *xdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

static char *fail_msg(const char *what, nvrtcResult r, const char *log) {
  size_t n = strlen(what) + (log ? strlen(log) : 0) + 200;
  char *m = malloc(n);
  if (m) snprintf(m, n, "%s: %s%s%s", what, nr.errstr ? nr.errstr(r) : "error",
                  log && *log ? "\n" : "", log ? log : "");
  return m;
}

char *knr_compile(const char *src, const char *name, int cc, char **err) {
  pthread_once(&nr_once, load);
  *err = NULL;
  if (!nr.ok) { *err = xdup(nr.why); return NULL; }
  char arch[48], inc_here[1100], inc_cuda[1100];
  const char *opts[5];
  int nopt = 0;
  snprintf(arch, sizeof arch, "--gpu-architecture=compute_%d", cc);
  opts[nopt++] = arch;
  opts[nopt++] = "-rdc=true";
  const char *slash = strrchr(name, '/');
  if (slash) snprintf(inc_here, sizeof inc_here, "-I%.*s", (int)(slash - name), name);
  else snprintf(inc_here, sizeof inc_here, "-I.");
  opts[nopt++] = inc_here;
  for (int i = 0; i < 2; i++) {
    const char *home = kl_cuda_home(i);
    struct stat st;
    if (home == NULL) continue;
    snprintf(inc_cuda, sizeof inc_cuda, "-I%s/include", home);
    if (stat(inc_cuda + 2, &st) == 0) { opts[nopt++] = inc_cuda; break; }
  }
  nvrtcProgram prog = NULL;
  nvrtcResult r = nr.create(&prog, src, name, 0, NULL, NULL);
  if (r != 0) { *err = fail_msg("nvrtcCreateProgram", r, NULL); return NULL; }
  r = nr.compile(prog, nopt, opts);
  if (r != 0) {
    size_t ln = 0;
    char *log = NULL;
    if (nr.logsize(prog, &ln) == 0 && ln > 0 && (log = malloc(ln + 1)) != NULL) {
      if (nr.log(prog, log) != 0) log[0] = 0;
      log[ln] = 0;
    }
    *err = fail_msg("nvrtcCompileProgram", r, log);
    free(log);
    nr.destroy(&prog);
    return NULL;
  }
  size_t n = 0;
  char *ptx = NULL;
  if (nr.ptxsize(prog, &n) == 0 && (ptx = malloc(n + 1)) != NULL) {
    if (nr.ptx(prog, ptx) != 0) { free(ptx); ptx = NULL; }
    else ptx[n] = 0;
  }
  nr.destroy(&prog);
  if (ptx == NULL) *err = xdup("nvrtcGetPTX failed (out of memory?)");
  return ptx;
}
