/*
** casetest.h: what the C tests that check a stage's printed output
** against a case file share (test_bytecode.c, test_irtype.c): CHECK and
** its counts, a growing text buffer, the case file and its rewriting, the
** results file. Included once, by a test's .c file (static functions).
**
** A case file is a list of
**   === name
**   <Lua source>
**   --- kind                (a word: "ir", "typed", "error", ...)
**   <the expected output>
*/
#ifndef KJIT_CASETEST_H
#define KJIT_CASETEST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int npass, nfail;

static void check_(int ok, const char *file, int line, const char *fmt, ...) {
  if (ok) { npass++; return; }
  nfail++;
  const char *base = strrchr(file, '/');
  printf("FAIL (%s:%d): ", base ? base + 1 : file, line);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}
#define CHECK(c, ...) check_((c) != 0, __FILE__, __LINE__, __VA_ARGS__)

/* ---- A growing, NUL-terminated text ----------------------------------- */

typedef struct Buf { char *s; size_t n, cap; } Buf;

static void bput(Buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->s = realloc(b->s, b->cap);
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}
static void bputs(Buf *b, const char *s) { bput(b, s, strlen(s)); }

/* The whole file (malloc'd, NUL-terminated; its length in *len unless
** len is NULL), or NULL. */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  Buf b = {0};
  char tmp[4096];
  size_t r;
  while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) bput(&b, tmp, r);
  fclose(f);
  if (b.s == NULL) bput(&b, "", 0);
  if (len) *len = b.n;
  return b.s;
}

static char *dupn(const char *s, size_t n) {
  char *d = malloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

/* Prints the first line where got differs from want. */
static void first_diff(const char *want, const char *got) {
  int line = 1;
  const char *w = want, *g = got;
  while (*w && *w == *g) { if (*w == '\n') line++; w++; g++; }
  const char *ws = w, *gs = g;
  while (ws > want && ws[-1] != '\n') ws--;
  while (gs > got && gs[-1] != '\n') gs--;
  printf("  first difference at line %d:\n  want: %.*s\n  got:  %.*s\n", line,
         (int)strcspn(ws, "\n"), ws, (int)strcspn(gs, "\n"), gs);
}

/* ---- The case file ------------------------------------------------------ */

typedef struct Case { char *name, *src, *kind, *want; } Case;

/* Reads at most max cases of path into cases; returns how many. */
static int load_case_file(const char *path, Case *cases, int max) {
  char *text = read_file(path, NULL);
  CHECK(text != NULL, "cannot read %s (run from the source directory)", path);
  if (text == NULL) return 0;
  int n = 0;
  char *p = text;
  while ((p = strstr(p, "=== ")) != NULL && n < max) {
    Case *c = &cases[n];
    char *eol = strchr(p, '\n');
    if (eol == NULL) break;
    char *src = eol + 1;
    char *sep = strstr(src, "\n--- ");
    if (sep == NULL) break;
    sep++;
    char *kindend = strchr(sep, '\n');
    if (kindend == NULL) break;
    c->name = dupn(p + 4, (size_t)(eol - p - 4));
    c->src = dupn(src, (size_t)(sep - src));
    c->kind = dupn(sep + 4, (size_t)(kindend - sep - 4));
    char *want = kindend + 1;
    char *next = strncmp(want, "=== ", 4) == 0 ? want - 1 : strstr(want, "\n=== ");
    size_t len = next ? (size_t)(next - want) + 1 : strlen(want);
    c->want = dupn(want, len);
    p = want + len;
    n++;
  }
  free(text);
  return n;
}

static void free_cases(Case *cases, int n) {
  for (int i = 0; i < n; i++) {
    free(cases[i].name); free(cases[i].src); free(cases[i].kind); free(cases[i].want);
  }
}

/* Appends one case, as the case file spells it, to all (for rewriting). */
static void put_case(Buf *all, const char *name, const char *src, const char *kind,
                     const char *out) {
  bputs(all, "=== "); bputs(all, name); bputs(all, "\n");
  bputs(all, src);
  bputs(all, "--- "); bputs(all, kind); bputs(all, "\n");
  bputs(all, out);
}

/* Replaces path by all (the update mode's rewriting). */
static void rewrite_case_file(const char *path, const Buf *all) {
  if (all->s == NULL) return;
  FILE *f = fopen(path, "w");
  if (f) { fwrite(all->s, 1, all->n, f); fclose(f); printf("rewrote %s\n", path); }
}

/* ---- The end of main ------------------------------------------------------ */

/* Prints the counts, writes "passed failed 0" to the results file
** (argv[1], when given) and returns main's exit status. */
static int test_results(const char *name, int argc, char **argv) {
  printf("%s: %d passed, %d failed\n", name, npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}

#endif
