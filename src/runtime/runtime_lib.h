/*
** runtime_lib.h: calls into the Lua library from compiled code (print,
** io.write, os.clock, os.time, math.random, math.randomseed, tostring,
** string.format, '..', and error/assert with values built at run time).
**
** Compiled code describes what to do as a short program of 64-bit words
** (a "recipe", built on its stack by src/codegen/cg_lib.c) and calls
** kjit_rt_lib once per library call. The recipe is a stack machine over
** the Lua stack of err->L:
**   KRL_NIL | KRL_FALSE | KRL_TRUE        push the value
**   KRL_NIL1 | KRL_FALSE1  w              the same, w ignored (the falsy side
**                                         of a number-or-nil: one op word)
**   KRL_INT  v                            push the integer v
**   KRL_FLT  bits                         push the float of those bits
**   KRL_STR  ptr len                      push the string
**   KRL_CONCAT | n << 8                   Lua's '..' of the top n values
**   KRL_CONCATN | n << 8, chunk, line, site, names
**                                         the same, step by step as the VM
**                                         runs it; an operand that cannot
**                                         be concatenated raises the VM's
**                                         error at chunk:line, naming its
**                                         register as names (n strings,
**                                         NUL-separated) do; __concat is
**                                         called from site's trampoline
**                                         ("chunk\nline\n..\n")
**   KRL_CALL | nargs << 8 | nres << 16, chunk, line, path, name
**                                         call the library function `path`
**                                         ("print", "math.random", ...) as
**                                         the source spelled it (name) at
**                                         chunk:line, with the top nargs
**                                         values; nres results stay
**   KRL_ERROR | level << 8, chunk, line   error(top, level) from chunk:line
**   KRL_ASSERT, chunk, line               assert(below-top, top)
**   KRL_RESULT | kind << 8                pop the top into out[0..1] (kind:
**                                         KRL_K_INT or KRL_K_FLT; anything
**                                         else there is an error)
**   KRL_SLOT  k                           push the value in slot k of the
**                                         compiled frame (absolute stack index;
**                                         runtime/luavalue.c's frames)
**   KRL_RESULT | KRL_K_SLOT << 8, k       pop the top into slot k (any value)
**   KRL_LIBVAL  path                      push the library's value at path
**                                         ("kjit.f32": a dtype object), read
**                                         when it runs
**   KRL_END
** Returns 0, or nonzero with *err filled: the compiled code fail-returns
** as for any run-time error and the dispatcher raises it (KE_LUAERR: the
** Lua value raised, kept in the registry; KE_USER: a message built here).
*/
#ifndef KJIT_RUNTIME_LIB_H
#define KJIT_RUNTIME_LIB_H
#include <stdint.h>
#include "common/compile.h"

enum {
  KRL_END, KRL_NIL, KRL_FALSE, KRL_TRUE, KRL_INT, KRL_FLT, KRL_STR, KRL_CONCAT, KRL_CALL,
  KRL_ERROR, KRL_ASSERT, KRL_RESULT, KRL_NIL1, KRL_FALSE1, KRL_SLOT,
  KRL_LIBVAL, KRL_CONCATN
};
enum { KRL_K_INT = 1, KRL_K_FLT = 2, KRL_K_SLOT = 3 };

int32_t kjit_rt_lib(KErr *err, const int64_t *prog, int64_t *out);
/* Pushes the Lua function that makes call site site's call
** ("chunk\nline\npath\nname", a constant of compiled code), made once. */
void krt_push_trampoline(lua_State *L, const char *site, int nres);
/* The same, cached under key (a constant of compiled code) for a site text
** made when it runs. */
void krt_push_trampoline_at(lua_State *L, const void *key, const char *site, int nres);
/* The trampoline of an operator's metamethod call at chunk:line, path
** "op:+", "op:<" ... (one result), cached under key: site text made only
** when the cache misses. */
void krt_push_op_trampoline(lua_State *L, const void *key, const char *chunk, int32_t line,
                            const char *path);

#endif
