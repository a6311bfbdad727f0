/*
** lex.h: the Lua 5.4 lexer (lex.c), internal to the parser.
**
** The lexer is pulled one token at a time, like Lua's own, so that a
** lexical error is reported only when the parser reaches it and with the
** same line Lua would give. Errors are formatted here ("chunk:line: msg
** near 'tok'") and leave through the parser's jmp_buf.
*/
#ifndef KJIT_LEX_H
#define KJIT_LEX_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include "arena.h"

/* Single-character tokens are their own byte value (0..255). */
enum {
  KX_FIRST_RESERVED = 257,
  /* reserved words, in alphabetical order */
  KX_AND = KX_FIRST_RESERVED, KX_BREAK, KX_DO, KX_ELSE, KX_ELSEIF, KX_END,
  KX_FALSE, KX_FOR, KX_FUNCTION, KX_GOTO, KX_IF, KX_IN, KX_LOCAL, KX_NIL,
  KX_NOT, KX_OR, KX_REPEAT, KX_RETURN, KX_THEN, KX_TRUE, KX_UNTIL, KX_WHILE,
  /* multi-character symbols */
  KX_IDIV, KX_CONCAT, KX_DOTS, KX_EQ, KX_GE, KX_LE, KX_NE, KX_SHL, KX_SHR,
  KX_DBCOLON,
  /* end of stream and tokens with a value */
  KX_EOS, KX_FLT, KX_INT, KX_NAME, KX_STRING
};

typedef struct KxToken {
  int tok;
  int line;             /* line where the token starts */
  int64_t i;            /* KX_INT */
  double f;             /* KX_FLT */
  const char *s;        /* KX_NAME, KX_STRING: text (arena, NUL-ended);
                           KX_INT, KX_FLT: the numeral as written */
  size_t len;           /* length of s */
  int sep;              /* KX_STRING: quote char, or -(level+2) for a
                           long bracket [==[ (for messages) */
} KxToken;

typedef struct KxLexer {
  Arena *A;
  const char *p, *end;  /* p: just after the current character */
  int cur;              /* current character, or KX_EOZ */
  int linenumber;       /* Lua's ls->linenumber: line of the scan point */
  int lastline;         /* Lua's ls->lastline: line where the last token
                           consumed ends */
  KxToken t;            /* current token */
  KxToken ahead;        /* lookahead token, valid when has_ahead */
  int has_ahead;
  char *buf;            /* text of the token being scanned (malloc) */
  size_t blen, bcap;
  const char *chunkname;
  char *err;            /* where messages go */
  size_t errsz;
  jmp_buf *jb;          /* where errors go */
} KxLexer;

#define KX_EOZ (-1)

/* Sets up a lexer over src[0..len); the first token is read by kx_next. */
void kx_init(KxLexer *L, Arena *A, const char *src, size_t len,
             const char *chunkname, char *err, size_t errsz, jmp_buf *jb);
/* Frees what the lexer malloc'ed (not the arena). Safe after an error. */
void kx_close(KxLexer *L);
/* Advances to the next token (L->t). */
void kx_next(KxLexer *L);
/* Scans the token after L->t without consuming it; returns its kind. */
int kx_lookahead(KxLexer *L);

/* Text of a token kind for messages: "'end'", "'+'", "<eof>", "<name>";
** buf (KX_TOKSTR_SIZE bytes) may be used to build it. */
#define KX_TOKSTR_SIZE 24
const char *kx_token2str(int tok, char *buf);

/* Arena allocation that raises "not enough memory" on failure. */
void *kx_alloc(KxLexer *L, size_t n);

/* Errors. All format "chunkname:line: msg" with line = L->linenumber and
** longjmp to L->jb. */
/* ... near the current token, like luaX_syntaxerror. */
_Noreturn void kx_syntaxerror(KxLexer *L, const char *msg);
/* ... without "near", like luaK_semerror. */
_Noreturn void kx_semerror(KxLexer *L, const char *msg);
/* "not enough memory", without position. */
_Noreturn void kx_memerror(KxLexer *L);
/* printf-style formatting into the arena, for building messages. */
const char *kx_format(KxLexer *L, const char *fmt, ...)
#ifdef __GNUC__
  __attribute__((format(printf, 2, 3)))
#endif
  ;

#endif
