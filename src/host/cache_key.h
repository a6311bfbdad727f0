/*
** host/cache_key.h: the disk cache's key of a kjit.jit compile, made from
** the typed IR (before any LLVM IR exists), so that a process whose code
** all comes from the cache never needs LLVM (backend/cache.c,
** backend/llvm_load.h).
**
** What the code generator reads is the typed IR of every specialization
** the compile reaches; that is a function of (1) the bytecode of each
** function (lua_dump, with debug information: chunk name and lines go
** into messages), (2) the argument types of each specialization, (3) the
** values the typer froze (upvalues, fields of constant tables, math
** built-ins, callees: the constants of each instruction) and which
** specialization each call runs, and (4) the options. The key holds all of
** them, exactly (numbers bit for bit, strings byte for byte); the caller
** adds the options, the build and the host. A change in any of them is a
** new key, and equal keys compile to the same code: the typer and the
** code generator are deterministic.
*/
#ifndef KJIT_HOST_CACHE_KEY_H
#define KJIT_HOST_CACHE_KEY_H

#include <stddef.h>
#include "ir/ir_type.h"

/* head, then the typed IR's inputs of every specialization in use. A
** malloc'd key of *len bytes, or NULL (out of memory). *local is set to 1
** when the key holds a salt of this process (code that compiles in a
** registry reference of this process: it can never be found by another
** process, so the caller keeps it off the disk), else 0. */
char *kck_key(KtySession *T, const char *head, size_t *len, int *local);

/* Does the typed IR hold a value of this process only? Such code cannot
** run in another process (f:export refuses it). Returns why (KCK_*) with
** the chunk name and line of the first such use, else 0. */
enum {
  KCK_LIVE_TABLE = 1,   /* a table upvalue or global the code writes into (a registry reference) */
  KCK_UPVALUE,          /* an upvalue the code assigns (its closure's registry reference) */
  KCK_FUNCTION,         /* a Lua function used as a value (a registry reference) */
  KCK_LAYOUT,           /* (not returned since arrays of records made carry their layouts) */
  KCK_CALLVALUE,        /* a function value called (a trampoline: a registry reference) */
  KCK_CFUNCTION,        /* a C function kjit does not compile, called (a registry reference) */
  KCK_FROZEN_TABLE,     /* a table upvalue or global indexed by a computed key (a registry reference) */
  KCK_CLOSURE,          /* a function literal that escapes: made as a real Lua closure of
                           this process's function (its maker: a registry reference) */
  KCK_FROZEN_ARRAY      /* a kjit array upvalue or global (its memory's address compiled in) */
};
/* *ref: the registry reference of the value the code holds (its C function
** for KCK_CFUNCTION), 0 where there is none. */
int kck_process_bound(KtySession *T, const char **chunk, int *line, int *ref);
/* The layouts (ids) of the arrays of records the typed code makes or
** reshapes: compiled code reads their dtypes from globals named by these
** ids (cg_alloc.c), which exported code carries (f:export). Writes up to
** max into ids; returns how many there are. */
int kck_layouts(KtySession *T, int32_t *ids, int max);

#endif
