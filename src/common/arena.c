/* arena.c: bump allocator in linked blocks, freed all at once. */
#include <stdlib.h>
#include <string.h>
#include "common/arena.h"

struct ArenaBlock {
  ArenaBlock *next;
  size_t used, cap;
  _Alignas(16) char mem[];
};

void ka_init(Arena *a) { a->head = NULL; a->total = 0; }

void *ka_alloc(Arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  ArenaBlock *b = a->head;
  if (b == NULL || b->cap - b->used < n) {
    size_t cap = n > 16384 ? n : 16384;
    b = malloc(sizeof(ArenaBlock) + cap);
    if (b == NULL) return NULL;
    b->next = a->head; b->used = 0; b->cap = cap;
    a->head = b;
  }
  void *p = b->mem + b->used;
  b->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

char *ka_strndup(Arena *a, const char *s, size_t n) {
  char *p = ka_alloc(a, n + 1);
  if (p) { memcpy(p, s, n); p[n] = '\0'; }
  return p;
}

void ka_free(Arena *a) {
  ArenaBlock *b = a->head;
  while (b) { ArenaBlock *n = b->next; free(b); b = n; }
  a->head = NULL; a->total = 0;
}
