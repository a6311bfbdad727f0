/*
** host/options.h: the one option parser of kjit's host APIs. Each API has
** a table of its options (name, type, default); kopt_read reads a Lua
** options table against it. Unknown names and wrongly typed values are
** Lua errors naming the option and the API:
**
**   kjit.jit: unknown option 'bogus' (known: boundscheck, fastmath, opt, cache, parallel)
**   kjit.jit: option 'fastmath' must be a boolean, got number
**   kjit.jit: option 'opt' must be an integer from 0 to 3, got 7
**   kjit.vectorize: unknown target 'gpu' (target must be "cpu", "parallel" or "cuda")
**   bad argument #2 to 'jit' (options table expected, got number)
**
** cuda.jit keeps the Lua argument-error wording of its first release
** ("unknown option 'fast' to 'cuda.jit' (...)", "bad option 'fma' to
** 'cuda.jit' (boolean expected, got number)"): KOPT_STYLE_ARG.
*/
#ifndef KJIT_HOST_OPTIONS_H
#define KJIT_HOST_OPTIONS_H
#include "lua.h"

typedef enum KOptKind { KOPT_BOOL, KOPT_INT, KOPT_CHOICE } KOptKind;

typedef struct KOpt {
  const char *name;
  KOptKind kind;
  int def;                       /* BOOL: 0/1; INT: the value; CHOICE: index */
  int lo, hi;                    /* KOPT_INT: the range; KOPT_CHOICE: lo 1 takes
                                    booleans too (false: choice 0, true: 1) */
  const char *const *choices;    /* KOPT_CHOICE: NULL-terminated */
} KOpt;

typedef enum KOptStyle { KOPT_STYLE_PREFIX, KOPT_STYLE_ARG } KOptStyle;

typedef struct KOptApi {
  const char *api;               /* "kjit.jit": named in every message */
  const char *fname;             /* "jit": for "bad argument #n to 'jit'" */
  int argn;                      /* the options' argument number */
  KOptStyle style;
  const KOpt *opts;              /* ends with { NULL } */
} KOptApi;

/* The APIs' tables. The value indices (KO_*) follow each table's order. */
extern const KOptApi kopt_jit, kopt_cuda_jit, kopt_vectorize, kopt_guvectorize,
  kopt_reduce, kopt_cuda_reduce;
enum { KO_JIT_BOUNDSCHECK, KO_JIT_FASTMATH, KO_JIT_OPT, KO_JIT_CACHE, KO_JIT_PARALLEL,
       KO_JIT_TIERED, KO_JIT_N };
enum { KO_CUDA_BOUNDSCHECK, KO_CUDA_FASTMATH, KO_CUDA_FMA, KO_CUDA_OPT, KO_CUDA_CACHE,
       KO_CUDA_DEVICE, KO_CUDA_LINEINFO, KO_CUDA_DEBUG, KO_CUDA_MAXREG, KO_CUDA_LAUNCH_BOUNDS,
       KO_CUDA_MAXTPB, KO_CUDA_INLINE, KO_CUDA_FORCEINLINE, KO_CUDA_N };
#define KOPT_MAX 16

/* Reads the options table at idx (none or nil: every default) into
** values[] (one per option, in table order). Raises the Lua error. */
void kopt_read(lua_State *L, int idx, const KOptApi *api, int *values);

/* Every option's default into values[]. */
void kopt_defaults(const KOptApi *api, int *values);

/* As kopt_read, but returns -1 with the message pushed instead of
** raising (the Lua parts raise it at their caller's level). */
int kopt_check(lua_State *L, int idx, const KOptApi *api, int *values);

/* Puts std.options in the table at table_idx, for the Lua parts:
**   options(api, opts) -> {name = value, ...} (every option, defaults filled)
**                         or nil, message
** api: "kjit.vectorize", "kjit.guvectorize", "kjit.reduce", "kjit.cuda.reduce". */
void kopt_push_lua(lua_State *L, int table_idx);

#endif
