/*
** rand_cuda.c: cuRAND's host API by dlopen (rand_cuda.h).
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include "libs/libfind.h"
#include "libs/rand_cuda.h"

typedef void *Gen;
#define RAND_API(X) \
  X(Create, "curandCreateGenerator", (Gen *g, int type)) \
  X(CreateHost, "curandCreateGeneratorHost", (Gen *g, int type)) \
  X(Destroy, "curandDestroyGenerator", (Gen g)) \
  X(SetSeed, "curandSetPseudoRandomGeneratorSeed", (Gen g, unsigned long long seed)) \
  X(SetOffset, "curandSetGeneratorOffset", (Gen g, unsigned long long offset)) \
  X(SetDims, "curandSetQuasiRandomGeneratorDimensions", (Gen g, unsigned dims)) \
  X(SetStream, "curandSetStream", (Gen g, void *stream)) \
  X(Generate, "curandGenerate", (Gen g, unsigned *out, size_t n)) \
  X(Uniform, "curandGenerateUniform", (Gen g, float *out, size_t n)) \
  X(UniformDouble, "curandGenerateUniformDouble", (Gen g, double *out, size_t n)) \
  X(Normal, "curandGenerateNormal", (Gen g, float *out, size_t n, float m, float s)) \
  X(NormalDouble, "curandGenerateNormalDouble", (Gen g, double *out, size_t n, double m, double s)) \
  X(LogNormal, "curandGenerateLogNormal", (Gen g, float *out, size_t n, float m, float s)) \
  X(LogNormalDouble, "curandGenerateLogNormalDouble", \
    (Gen g, double *out, size_t n, double m, double s)) \
  X(Poisson, "curandGeneratePoisson", (Gen g, unsigned *out, size_t n, double lambda)) \
  X(GetVersion, "curandGetVersion", (int *v))

#define X_FIELD(f, sym, params) int (*f) params;
static struct { RAND_API(X_FIELD) } cr;
#undef X_FIELD

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[600], backend[600];

static void load(void) {
  static const char *const names[] = { "libcurand.so.10", "libcurand.so", NULL };
  static const kl_spec spec = { "cuRAND", "KJIT_CURAND", names, NULL, NULL, NULL };
  char path[400];
  void *h = kl_open(&spec, path, sizeof path, why, sizeof why);
  if (h == NULL) return;
#define X_SYM(f, sym, params) \
  if ((*(void **)&cr.f = dlsym(h, sym)) == NULL) { \
    snprintf(why, sizeof why, "%s has no %s (cuRAND too old?)", path, sym); \
    return; \
  }
  RAND_API(X_SYM)
#undef X_SYM
  int v = 0;
  cr.GetVersion(&v);
  snprintf(backend, sizeof backend, "cuRAND %d.%d.%d (%s)", v / 1000, v / 100 % 10, v % 100, path);
  loaded = 1;
}

int kcurand_available(const char **w) {
  pthread_once(&once, load);
  if (!loaded && w) *w = why;
  return loaded;
}

const char *kcurand_backend(void) {
  pthread_once(&once, load);
  return loaded ? backend : why;
}

const char *kcurand_status_name(int s) {
  switch (s) {
    case 0: return "CURAND_STATUS_SUCCESS";
    case 100: return "CURAND_STATUS_VERSION_MISMATCH";
    case 101: return "CURAND_STATUS_NOT_INITIALIZED";
    case 102: return "CURAND_STATUS_ALLOCATION_FAILED";
    case 103: return "CURAND_STATUS_TYPE_ERROR";
    case 104: return "CURAND_STATUS_OUT_OF_RANGE";
    case 105: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case 106: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case 201: return "CURAND_STATUS_LAUNCH_FAILURE";
    case 202: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case 203: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case 204: return "CURAND_STATUS_ARCH_MISMATCH";
    case 999: return "CURAND_STATUS_INTERNAL_ERROR";
    default: return "unknown cuRAND status";
  }
}

#define TRY(expr, name) do { int r_ = (expr); if (r_) { *call = name; return r_; } } while (0)

int kcurand_create(void **g, int kind, int host, uint64_t seed, uint64_t offset,
                   unsigned dims, const char **call) {
  static const int types[] = { 161, 101, 121, 201 };   /* curandRngType_t */
  Gen h = NULL;
  *g = NULL;
  if (host) TRY(cr.CreateHost(&h, types[kind]), "curandCreateGeneratorHost");
  else TRY(cr.Create(&h, types[kind]), "curandCreateGenerator");
  int r = 0;
  if (kind == KR_SOBOL32) {
    if ((r = cr.SetDims(h, dims)) != 0) *call = "curandSetQuasiRandomGeneratorDimensions";
  } else if ((r = cr.SetSeed(h, seed)) != 0) {
    *call = "curandSetPseudoRandomGeneratorSeed";
  }
  if (r == 0 && offset && (r = cr.SetOffset(h, offset)) != 0) *call = "curandSetGeneratorOffset";
  if (r) { cr.Destroy(h); return r; }
  *g = h;
  return 0;
}

int kcurand_set_stream(void *g, void *stream, const char **call) {
  TRY(cr.SetStream(g, stream), "curandSetStream");
  return 0;
}

int kcurand_generate(void *g, int draw, void *out, size_t n, int dbl, double a, double b,
                     const char **call) {
  switch (draw) {
    case KR_BITS: TRY(cr.Generate(g, out, n), "curandGenerate"); break;
    case KR_UNIFORM:
      if (dbl) TRY(cr.UniformDouble(g, out, n), "curandGenerateUniformDouble");
      else TRY(cr.Uniform(g, out, n), "curandGenerateUniform");
      break;
    case KR_NORMAL:
      if (dbl) TRY(cr.NormalDouble(g, out, n, a, b), "curandGenerateNormalDouble");
      else TRY(cr.Normal(g, out, n, (float)a, (float)b), "curandGenerateNormal");
      break;
    case KR_LOGNORMAL:
      if (dbl) TRY(cr.LogNormalDouble(g, out, n, a, b), "curandGenerateLogNormalDouble");
      else TRY(cr.LogNormal(g, out, n, (float)a, (float)b), "curandGenerateLogNormal");
      break;
    default: TRY(cr.Poisson(g, out, n, a), "curandGeneratePoisson"); break;
  }
  return 0;
}

void kcurand_destroy(void *g) {
  if (g && loaded) cr.Destroy(g);
}
