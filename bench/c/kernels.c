/* bench/c/kernels.c: the kernels of bench/kernels.lua in C, the same loops
 * with 0-based indices, and a runner with the protocol of bench/run_lua.lua:
 *
 *   kernels <kernel> <runs> <params...>
 *     -> result <median s> <min s> <runs> <checksum>
 *
 * Built by bench/run.sh with `clang-14 -O3 -march=native` and with
 * `gcc -O3 -march=native` (and once more with -ffp-contract=off, which is
 * what kjit does by default). No `restrict`: the Lua text gives kjit no
 * aliasing guarantee either. Times are process CPU time.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the kernels ------------------------------------------------------ */

static void saxpy(long n, double a, const float *x, const float *y, float *out) {
  for (long i = 0; i < n; i++) out[i] = a * x[i] + y[i];
}

static double dot(long n, const double *x, const double *y) {
  double s = 0.0;
  for (long i = 0; i < n; i++) s = s + x[i] * y[i];
  return s;
}

static void mandelbrot(long w, long h, long maxiter, int32_t (*img)[w]) {
  double scale = 3.0 / w;
  for (long y = 0; y < h; y++) {
    double ci = y * scale - 1.0;
    for (long x = 0; x < w; x++) {
      double cr = x * scale - 2.0;
      double zr = 0.0, zi = 0.0;
      long n = 0;
      while (n < maxiter && zr * zr + zi * zi <= 4.0) {
        double t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        n = n + 1;
      }
      img[y][x] = (int32_t)n;
    }
  }
}

static double nbody(long nb, long steps, double dt, double *x, double *y, double *z,
                    double *vx, double *vy, double *vz, const double *m) {
  for (long s = 0; s < steps; s++) {
    for (long i = 0; i < nb; i++) {
      for (long j = i + 1; j < nb; j++) {
        double dx = x[i] - x[j], dy = y[i] - y[j], dz = z[i] - z[j];
        double d2 = dx * dx + dy * dy + dz * dz;
        double mag = dt / (d2 * sqrt(d2));
        double mi = m[i] * mag, mj = m[j] * mag;
        vx[i] = vx[i] - dx * mj;
        vy[i] = vy[i] - dy * mj;
        vz[i] = vz[i] - dz * mj;
        vx[j] = vx[j] + dx * mi;
        vy[j] = vy[j] + dy * mi;
        vz[j] = vz[j] + dz * mi;
      }
    }
    for (long i = 0; i < nb; i++) {
      x[i] = x[i] + dt * vx[i];
      y[i] = y[i] + dt * vy[i];
      z[i] = z[i] + dt * vz[i];
    }
  }
  double e = 0.0;
  for (long i = 0; i < nb; i++) {
    e = e + 0.5 * m[i] * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i]);
    for (long j = i + 1; j < nb; j++) {
      double dx = x[i] - x[j], dy = y[i] - y[j], dz = z[i] - z[j];
      e = e - m[i] * m[j] / sqrt(dx * dx + dy * dy + dz * dz);
    }
  }
  return e;
}

static void matmul(long n, double (*A)[n], double (*B)[n], double (*C)[n]) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) {
      double s = 0.0;
      for (long k = 0; k < n; k++) s = s + A[i][k] * B[k][j];
      C[i][j] = s;
    }
}

static void jacobi(long n, long iters, double (*A)[n], double (*B)[n]) {
  for (long it = 0; it < iters; it++) {
    for (long i = 1; i < n - 1; i++)
      for (long j = 1; j < n - 1; j++)
        B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]);
    double (*t)[n] = A;
    A = B;
    B = t;
  }
}

static void convolve(long n, long m, const double *a, const double *z, double *out) {
  for (long i = 0; i < n + m - 1; i++) {
    long s = i - m + 1 > 0 ? i - m + 1 : 0;
    long e = i < n - 1 ? i : n - 1;
    double acc = 0.0;
    for (long j = 0; j <= e - s; j++) acc = acc + a[j + s] * z[i - j - s];
    out[i] = acc;
  }
}

static void histogram(long n, const double *x, long nbins, int64_t *counts) {
  for (long i = 0; i < n; i++) {
    long b = (long)floor(x[i] * nbins);
    if (b > nbins - 1) b = nbins - 1;
    counts[b] = counts[b] + 1;
  }
}

static void prefix_sum(long n, const double *x, double *out) {
  double s = 0.0;
  for (long i = 0; i < n; i++) {
    s = s + x[i];
    out[i] = s;
  }
}

static long fib(long n) {
  if (n < 2) return n;
  return fib(n - 1) + fib(n - 2);
}

/* ---- inputs and checksums, as in bench/workload.lua -------------------- */

#define G1 0.618033988749895
#define G2 0.414213562373095

static void *zalloc(size_t count, size_t size) {
  size_t bytes = (count * size + 63) / 64 * 64;
  void *p = aligned_alloc(64, bytes ? bytes : 64);
  if (!p) { fprintf(stderr, "kernels: out of memory\n"); exit(1); }
  memset(p, 0, bytes);
  return p;
}
static void fill_frac(long n, double *x, double g, double off) {
  for (long i = 1; i <= n; i++) x[i - 1] = fmod(i * g, 1.0) + off;
}
static void fill_frac_f32(long n, float *x, double g) {
  for (long i = 1; i <= n; i++) x[i - 1] = (float)fmod(i * g, 1.0);
}
static void fill_frac2(long r, long c, double *m, double g, long si, long sj) {
  for (long i = 1; i <= r; i++)
    for (long j = 1; j <= c; j++) m[(i - 1) * c + (j - 1)] = fmod((double)(si * i + sj * j) * g, 1.0);
}
static double sum_f64(long n, const double *x) {
  double s = 0.0;
  for (long i = 0; i < n; i++) s = s + x[i];
  return s;
}
static double sum_f32(long n, const float *x) {
  double s = 0.0;
  for (long i = 0; i < n; i++) s = s + x[i];
  return s;
}
static void jacobi_init(long n, double *m) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++) m[i * n + j] = i == 0 ? 1.0 : j == 0 ? 0.5 : 0.0;
}

#define PI 3.141592653589793
#define SOLAR_MASS (4 * PI * PI)
#define DAYS 365.24
static const double BODIES[5][7] = {
  {0, 0, 0, 0, 0, 0, SOLAR_MASS},
  {4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
   1.66007664274403694e-03 * DAYS, 7.69901118419740425e-03 * DAYS,
   -6.90460016972063023e-05 * DAYS, 9.54791938424326609e-04 * SOLAR_MASS},
  {8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
   -2.76742510726862411e-03 * DAYS, 4.99852801234917238e-03 * DAYS,
   2.30417297573763929e-05 * DAYS, 2.85885980666130812e-04 * SOLAR_MASS},
  {1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
   2.96460137564761618e-03 * DAYS, 2.37847173959480950e-03 * DAYS,
   -2.96589568540237556e-05 * DAYS, 4.36624404335156298e-05 * SOLAR_MASS},
  {1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
   2.68067772490389322e-03 * DAYS, 1.62824170038242295e-03 * DAYS,
   -9.51592254519715870e-05 * DAYS, 5.15138902046611451e-05 * SOLAR_MASS},
};

/* st[k][i]: property k (x y z vx vy vz m) of body i; the Sun's velocity
 * offsets the total momentum to zero */
static void nbody_init(double st[7][5]) {
  for (int i = 0; i < 5; i++)
    for (int k = 0; k < 7; k++) st[k][i] = BODIES[i][k];
  double px = 0.0, py = 0.0, pz = 0.0;
  for (int i = 0; i < 5; i++) {
    px = px + BODIES[i][3] * BODIES[i][6];
    py = py + BODIES[i][4] * BODIES[i][6];
    pz = pz + BODIES[i][5] * BODIES[i][6];
  }
  st[3][0] = -px / SOLAR_MASS;
  st[4][0] = -py / SOLAR_MASS;
  st[5][0] = -pz / SOLAR_MASS;
}

/* ---- the runner -------------------------------------------------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Parameters go through a volatile so that the compiler cannot fold a run
 * or merge the runs of a pure kernel (fib) into one. */
static volatile long vparam[4];

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: kernels <kernel> <runs> <params...>\n");
    return 2;
  }
  const char *name = argv[1];
  int runs = atoi(argv[2]);
  int np = argc - 3;
  if (runs < 1 || np > 4) { fprintf(stderr, "kernels: bad arguments\n"); return 2; }
  for (int i = 0; i < np; i++) vparam[i] = atol(argv[3 + i]);
  long p0 = vparam[0], p1 = np > 1 ? vparam[1] : 0;

  double *times = zalloc((size_t)runs, sizeof(double));
  double check = 0.0;
  /* run every kernel the same way: reset, time one call */
#define TIMED(reset, call)                                        \
  for (int r = -1; r < runs; r++) { /* r == -1: the warm-up */    \
    reset;                                                        \
    double t0 = now();                                            \
    call;                                                         \
    double t1 = now();                                            \
    if (r >= 0) times[r] = t1 - t0;                               \
  }

  if (!strcmp(name, "saxpy") && np == 1) {
    long n = p0;
    float *x = zalloc(n, 4), *y = zalloc(n, 4), *out = zalloc(n, 4);
    fill_frac_f32(n, x, G1);
    fill_frac_f32(n, y, G2);
    TIMED((void)0, saxpy(vparam[0], 2.0, x, y, out));
    check = sum_f32(n, out);
  } else if (!strcmp(name, "dot") && np == 1) {
    long n = p0;
    double *x = zalloc(n, 8), *y = zalloc(n, 8), s = 0;
    fill_frac(n, x, G1, 0.0);
    fill_frac(n, y, G2, 0.0);
    TIMED((void)0, s = dot(vparam[0], x, y));
    check = s;
  } else if (!strcmp(name, "mandelbrot") && np == 3) {
    long w = p0, h = p1;
    int32_t *img = zalloc(w * h, 4);
    TIMED((void)0, mandelbrot(vparam[0], vparam[1], vparam[2], (int32_t(*)[w])img));
    for (long i = 0; i < w * h; i++) check = check + img[i];
  } else if (!strcmp(name, "nbody") && np == 1) {
    double st[7][5], e = 0;
    TIMED(nbody_init(st), e = nbody(5, vparam[0], 0.01, st[0], st[1], st[2], st[3], st[4], st[5], st[6]));
    check = e;
  } else if (!strcmp(name, "matmul") && np == 1) {
    long n = p0;
    double *A = zalloc(n * n, 8), *B = zalloc(n * n, 8), *C = zalloc(n * n, 8);
    fill_frac2(n, n, A, G1, 1, 2);
    fill_frac2(n, n, B, G2, 2, 1);
    TIMED((void)0, matmul(vparam[0], (double(*)[n])A, (double(*)[n])B, (double(*)[n])C));
    check = sum_f64(n * n, C);
  } else if (!strcmp(name, "jacobi") && np == 2) {
    long n = p0;
    if (p1 % 2) { fprintf(stderr, "kernels: jacobi: iters must be even\n"); return 2; }
    double *A = zalloc(n * n, 8), *B = zalloc(n * n, 8);
    TIMED((jacobi_init(n, A), jacobi_init(n, B)),
          jacobi(vparam[0], vparam[1], (double(*)[n])A, (double(*)[n])B));
    check = sum_f64(n * n, A);
  } else if (!strcmp(name, "convolve") && np == 2) {
    long n = p0, m = p1;
    double *a = zalloc(n, 8), *z = zalloc(m, 8), *out = zalloc(n + m - 1, 8);
    fill_frac(n, a, G1, 0.0);
    fill_frac(m, z, G2, -0.5);
    TIMED((void)0, convolve(vparam[0], vparam[1], a, z, out));
    check = sum_f64(n + m - 1, out);
  } else if (!strcmp(name, "histogram") && np == 2) {
    long n = p0, nbins = p1;
    double *x = zalloc(n, 8);
    int64_t *counts = zalloc(nbins, 8);
    fill_frac(n, x, G1, 0.0);
    TIMED(memset(counts, 0, nbins * 8), histogram(vparam[0], x, vparam[1], counts));
    for (long b = 0; b < nbins; b++) check = check + (double)(b + 1) * counts[b];
  } else if (!strcmp(name, "prefix_sum") && np == 1) {
    long n = p0;
    double *x = zalloc(n, 8), *out = zalloc(n, 8);
    fill_frac(n, x, G1, -0.5);
    TIMED((void)0, prefix_sum(vparam[0], x, out));
    check = sum_f64(n, out);
  } else if (!strcmp(name, "fib") && np == 1) {
    long f = 0;
    TIMED((void)0, f = fib(vparam[0]));
    check = (double)f;
  } else {
    fprintf(stderr, "kernels: unknown kernel '%s' or wrong number of parameters\n", name);
    return 2;
  }
  /* the arrays are left to the process exit */
  qsort(times, runs, sizeof(double), cmp_double);
  double median = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
  printf("result %.9g %.9g %d %.17g\n", median, times[0], runs, check);
  free(times);
  return 0;
}
