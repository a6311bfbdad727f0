/*
** parse.h: lexer and parser for full Lua 5.4 (lex.c, parse.c).
*/
#ifndef KJIT_PARSE_H
#define KJIT_PARSE_H

#include "arena.h"
#include "ast.h"

/* Parses src[0..len) as a Lua 5.4 chunk. chunkname is the short source
** name used in messages ("file.lua", "[string \"...\"]"). On success returns
** the chunk; on a syntax error returns NULL and writes "chunkname:line:
** message" (Lua's own wording, e.g. "'end' expected (to close 'function'
** at line 3) near '<eof>'") into err[0..errsz). Never calls Lua. Returns
** NULL with "not enough memory" when the arena fails. */
Chunk *kp_parse(Arena *A, const char *src, size_t len, const char *chunkname,
                char *err, size_t errsz);

/* Finds the function whose 'function' keyword is on line `line` and whose
** 'end' is on line `lastline` (debug.getinfo's linedefined and
** lastlinedefined). When several match, nparams >= 0 narrows by number of
** parameters and params (if not NULL) by their names. Returns the match;
** NULL with *ambiguous set to 1 if several remain, 0 if none. */
Func *kp_find_func(Chunk *c, int line, int lastline, int nparams,
                   const char *const *params, int *ambiguous);

/* Operator names for messages: "+", "//", "and", "#", "~" ... */
const char *kp_opname(OpKind op);

#endif
