/*
** records.c: the C peer of bench/records.lua: the same particle update on
** the same struct, an array of `struct Particle { float x, y, vx, vy; }`
** (as kjit.struct lays it out). Compile as bench/records.lua says:
**   clang-14 -O3 -march=native -ffp-contract=off bench/c/records.c -o ...
** Usage: records N STEPS RUNS BOUNCE   prints the median milliseconds per step
** and a checksum (the one bench/records.lua prints for kjit).
*/
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef struct Particle { float x, y, vx, vy; } Particle;

/* Lua's arithmetic: doubles, each result rounded to float when stored.
** bounce: the particles bounce off y = 0 (a conditional store). */
static int bounce = 1;
static void step(Particle *p, long n, double dt) {
  if (bounce) {
    for (long i = 0; i < n; i++) {
      Particle *r = &p[i];
      r->x = (float)(r->x + r->vx * dt);
      r->y = (float)(r->y + r->vy * dt);
      if (r->y < 0) { r->y = -r->y; r->vy = -r->vy; }
    }
  } else {
    for (long i = 0; i < n; i++) {
      Particle *r = &p[i];
      r->x = (float)(r->x + r->vx * dt);
      r->y = (float)(r->y + r->vy * dt);
    }
  }
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);   /* CPU time, as os.clock in Lua */
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000, steps = argc > 2 ? atol(argv[2]) : 20;
  int runs = argc > 3 ? atoi(argv[3]) : 7;
  bounce = argc > 4 ? atoi(argv[4]) : 1;
  Particle *p = aligned_alloc(64, (size_t)n * sizeof *p);
  double t[64];
  if (p == NULL || runs < 1 || runs > 64) return 1;
  for (long i = 0; i < n; i++) {   /* the values bench/records.lua sets */
    long k = i + 1;
    p[i].x = (float)(k % 1000); p[i].y = (float)(k % 777);
    p[i].vx = (float)((k % 13) - 6); p[i].vy = (float)((k % 7) - 3);
  }
  step(p, n, 0.01);   /* warm-up */
  for (int r = 0; r < runs; r++) {
    double t0 = now_ms();
    for (long s = 0; s < steps; s++) step(p, n, 0.01);
    t[r] = (now_ms() - t0) / steps;
  }
  qsort(t, runs, sizeof t[0], cmp);
  double sum = 0;
  for (long i = 0; i < n; i++) sum += p[i].x + p[i].y;
  printf("%.4f %.6e\n", t[runs / 2], sum);
  free(p);
  return 0;
}
