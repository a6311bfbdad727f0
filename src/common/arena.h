/*
** arena.h: per-compile memory. Everything a compilation allocates (the
** decoded bytecode, the IR, types) comes from one arena, freed as a whole, so a Lua error
** thrown mid-compile leaks nothing once the arena's owner is collected.
*/
#ifndef KJIT_ARENA_H
#define KJIT_ARENA_H

#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
  ArenaBlock *head;
  size_t total;        /* bytes handed out, for limits and tests */
} Arena;

void ka_init(Arena *a);
/* Returns zeroed memory aligned to 16 bytes; NULL only when out of memory. */
void *ka_alloc(Arena *a, size_t n);
char *ka_strndup(Arena *a, const char *s, size_t n);
void ka_free(Arena *a);

#endif
