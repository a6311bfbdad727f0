/*
** image_filter.c: edge detection of a PGM (P5) or PPM (P6) image by Lua
** kernels that kjit compiles (image_filter.lua: grayscale, 3x3 box blur,
** Sobel magnitude). The C program reads the file into its own memory,
** lends the pixels and an output image to Lua as borrowed kjit arrays
** (kjit_pusharray), and writes the result as a PGM.
**
**   image_filter script in.ppm out.pgm [--generate] [--check]
**
** --generate  first writes a generated test picture (shapes and gradients,
**             200x150 RGB) to in.ppm
** --check     also runs the kernels in the Lua interpreter and exits with
**             status 1 unless the two outputs are identical
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime under -std=c11 */
#endif
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

typedef struct Image { int w, h, channels; unsigned char *px; } Image;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Next header number of a PNM file, skipping blanks and # comments. */
static int pnm_int(FILE *f, int *out) {
  int c;
  for (;;) {
    c = fgetc(f);
    if (c == '#') { while (c != '\n' && c != EOF) c = fgetc(f); continue; }
    if (c == EOF || !isspace(c)) break;
  }
  if (c == EOF || !isdigit(c)) return 0;
  long v = 0;
  while (c != EOF && isdigit(c)) { v = v * 10 + (c - '0'); if (v > 1 << 20) return 0; c = fgetc(f); }
  *out = (int)v;
  return 1;   /* c, the single blank after the number, is consumed */
}

/* Reads a binary PGM (P5) or PPM (P6) with maxval <= 255. */
static int read_pnm(const char *path, Image *im) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) { perror(path); return 0; }
  char magic[3] = { 0 };
  int maxval, ok = fread(magic, 1, 2, f) == 2 && magic[0] == 'P' &&
                   (magic[1] == '5' || magic[1] == '6');
  ok = ok && pnm_int(f, &im->w) && pnm_int(f, &im->h) && pnm_int(f, &maxval) &&
       im->w > 0 && im->h > 0 && maxval > 0 && maxval <= 255;
  if (!ok) { fprintf(stderr, "%s: not a binary PGM/PPM with 8-bit samples\n", path); fclose(f); return 0; }
  im->channels = magic[1] == '6' ? 3 : 1;
  size_t n = (size_t)im->w * im->h * im->channels;
  im->px = malloc(n);
  if (im->px == NULL || fread(im->px, 1, n, f) != n) {
    fprintf(stderr, "%s: truncated image\n", path);
    free(im->px);
    fclose(f);
    return 0;
  }
  fclose(f);
  return 1;
}

static int write_pnm(const char *path, const Image *im) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) { perror(path); return 0; }
  fprintf(f, "P%c\n%d %d\n255\n", im->channels == 3 ? '6' : '5', im->w, im->h);
  size_t n = (size_t)im->w * im->h * im->channels;
  int ok = fwrite(im->px, 1, n, f) == n;
  return (fclose(f) == 0) && ok;
}

/* A test picture: a colour gradient, a disc, a rectangle and a ring. */
static int generate(const char *path) {
  Image im = { 200, 150, 3, NULL };
  im.px = malloc((size_t)im.w * im.h * 3);
  if (im.px == NULL) return 0;
  for (int y = 0; y < im.h; y++)
    for (int x = 0; x < im.w; x++) {
      unsigned char *p = im.px + 3 * ((size_t)y * im.w + x);
      int r = x * 255 / im.w, g = y * 255 / im.h, b = 128;
      double d1 = hypot(x - 60.0, y - 70.0), d2 = hypot(x - 150.0, y - 50.0);
      if (d1 < 35) { r = 240; g = 200; b = 40; }
      if (x > 110 && x < 180 && y > 90 && y < 130) { r = 20; g = 40; b = 200; }
      if (d2 > 18 && d2 < 26) { r = g = b = 255; }
      p[0] = (unsigned char)r; p[1] = (unsigned char)g; p[2] = (unsigned char)b;
    }
  int ok = write_pnm(path, &im);
  free(im.px);
  return ok;
}

static int fail(lua_State *L, const char *what) {
  fprintf(stderr, "image_filter: %s: %s\n", what, lua_tostring(L, -1));
  lua_close(L);
  return 1;
}

/* filter(img, out, backend) from the script's module at index M. */
static int run_filter(lua_State *L, int M, int img, int out, const char *backend, double *ms) {
  lua_getfield(L, M, "filter");
  lua_pushvalue(L, img);
  lua_pushvalue(L, out);
  lua_pushstring(L, backend);
  double t0 = now_ms();
  int st = lua_pcall(L, 3, 0, 0);
  *ms = now_ms() - t0;
  return st;
}

int main(int argc, char **argv) {
  int gen = 0, check = 0;
  const char *pos[3] = { NULL, NULL, NULL };
  int np = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--generate") == 0) gen = 1;
    else if (strcmp(argv[i], "--check") == 0) check = 1;
    else if (np < 3) pos[np++] = argv[i];
  }
  if (np != 3) {
    fprintf(stderr, "usage: image_filter script in.pgm|in.ppm out.pgm [--generate] [--check]\n");
    return 2;
  }
  if (gen && !generate(pos[1])) { fprintf(stderr, "cannot write %s\n", pos[1]); return 1; }
  Image in;
  if (!read_pnm(pos[1], &in)) return 1;
  Image out = { in.w, in.h, 1, calloc((size_t)in.w * in.h, 1) };
  Image ref = { in.w, in.h, 1, calloc((size_t)in.w * in.h, 1) };
  if (out.px == NULL || ref.px == NULL) { fprintf(stderr, "out of memory\n"); return 1; }

  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_pop(L, 1);
  if (luaL_loadfile(L, pos[0]) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) return fail(L, pos[0]);
  int M = lua_gettop(L);

  /* The pixels stay in this program's memory; Lua borrows them. No
  ** release callback: they outlive the Lua state (freed after lua_close). */
  int64_t ishape[3] = { in.h, in.w, in.channels }, oshape[2] = { in.h, in.w };
  if (kjit_pusharray(L, in.px, KJIT_U8, in.channels == 3 ? 3 : 2, ishape, NULL, NULL, NULL) != KJIT_OK ||
      kjit_pusharray(L, out.px, KJIT_U8, 2, oshape, NULL, NULL, NULL) != KJIT_OK ||
      kjit_pusharray(L, ref.px, KJIT_U8, 2, oshape, NULL, NULL, NULL) != KJIT_OK)
    return fail(L, "kjit_pusharray");
  int I = M + 1, O = M + 2, R = M + 3;

  double first, second, interp;
  if (run_filter(L, M, I, O, "cpu", &first) != LUA_OK) return fail(L, "filter (cpu)");
  if (run_filter(L, M, I, O, "cpu", &second) != LUA_OK) return fail(L, "filter (cpu)");
  printf("image_filter: %dx%d %s, compiled: %.1f ms (first run, compiling), %.2f ms\n",
         in.w, in.h, in.channels == 3 ? "RGB" : "gray", first, second);
  int status = 0;
  if (check) {
    if (run_filter(L, M, I, R, "interpreted", &interp) != LUA_OK) return fail(L, "filter (interpreted)");
    printf("image_filter: interpreted: %.1f ms (%.0fx slower)\n", interp, interp / second);
    size_t n = (size_t)in.w * in.h, edges = 0, diff = 0;
    for (size_t k = 0; k < n; k++) { edges += out.px[k] > 64; diff += out.px[k] != ref.px[k]; }
    if (diff) { printf("FAIL: %zu pixels differ from the interpreted kernels\n", diff); status = 1; }
    else printf("image_filter: output identical to the interpreted kernels\n");
    /* the picture has edges: a filter that wrote nothing must not pass */
    if (edges < n / 100 || edges > n / 2) {
      printf("FAIL: %zu edge pixels of %zu: not an edge map\n", edges, n);
      status = 1;
    }
  }
  lua_close(L);
  if (!write_pnm(pos[2], &out)) { fprintf(stderr, "cannot write %s\n", pos[2]); status = 1; }
  else printf("image_filter: wrote %s\n", pos[2]);
  free(in.px); free(out.px); free(ref.px);
  return status;
}
