/*
** lex.c: lexer for Lua 5.4 (reference manual section 3.1).
**
** Behaves like Lua's llex.c where it shows: the same tokens, the same
** line counting ("\n", "\r", "\r\n" and "\n\r" are one line each), the same
** numeral and escape rules, and the same error messages, including the
** text after "near", which is what Lua's scan buffer held at the error.
** To get those texts right the scan buffer here holds exactly what Lua's
** does: a string's opening quote and its decoded contents, a numeral as
** written, a long bracket with its '=' signs.
*/
#include <ctype.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"

static const char *const reserved[] = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function",
  "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return",
  "then", "true", "until", "while"
};
#define NRESERVED ((int)(sizeof(reserved) / sizeof(reserved[0])))

static const char *const symbols[] = {
  "//", "..", "...", "==", ">=", "<=", "~=", "<<", ">>", "::", "<eof>",
  "<number>", "<integer>", "<name>", "<string>"
};

/* Lua's character classes are ASCII-only and locale-independent. */
static int isalpha_(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int isdigit_(int c) { return c >= '0' && c <= '9'; }
static int isalnum_(int c) { return isalpha_(c) || isdigit_(c); }
static int isxdigit_(int c) {
  return isdigit_(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int isspace_(int c) {
  return c == ' ' || (c >= '\t' && c <= '\r');   /* \t \n \v \f \r */
}
static int isnewline(int c) { return c == '\n' || c == '\r'; }
/* Length up to the first NUL, at most n (strnlen is POSIX, not C11). */
static size_t strlen_max(const char *s, size_t n) {
  const char *z = memchr(s, '\0', n);
  return z ? (size_t)(z - s) : n;
}
static int hexvalue(int c) {
  return isdigit_(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}


/*
** {======================================================
** Errors
** =======================================================
*/

static _Noreturn void throw_(KxLexer *L) { longjmp(*L->jb, 1); }

_Noreturn void kx_memerror(KxLexer *L) {
  if (L->err && L->errsz > 0)
    snprintf(L->err, L->errsz, "%s", "not enough memory");
  throw_(L);
}

void *kx_alloc(KxLexer *L, size_t n) {
  void *p = ka_alloc(L->A, n);
  if (p == NULL) kx_memerror(L);
  return p;
}

const char *kx_format(KxLexer *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) kx_memerror(L);
  char *s = kx_alloc(L, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

const char *kx_token2str(int tok, char *buf) {
  if (tok < KX_FIRST_RESERVED) {  /* single-byte symbol */
    if (tok >= 0x20 && tok < 0x7f) snprintf(buf, KX_TOKSTR_SIZE, "'%c'", tok);
    else snprintf(buf, KX_TOKSTR_SIZE, "'<\\%d>'", tok);
    return buf;
  }
  const char *s = tok < KX_IDIV ? reserved[tok - KX_FIRST_RESERVED]
                                : symbols[tok - KX_IDIV];
  if (tok < KX_EOS) {  /* reserved words and symbols are quoted */
    snprintf(buf, KX_TOKSTR_SIZE, "'%s'", s);
    return buf;
  }
  return s;  /* "<eof>", "<name>" ... are not */
}

/* Writes the final message; near may be NULL. */
static _Noreturn void error_(KxLexer *L, const char *msg, const char *near) {
  if (L->err && L->errsz > 0) {
    if (near)
      snprintf(L->err, L->errsz, "%s:%d: %s near %s", L->chunkname,
               L->linenumber, msg, near);
    else
      snprintf(L->err, L->errsz, "%s:%d: %s", L->chunkname, L->linenumber,
               msg);
  }
  throw_(L);
}

/* Quotes the scan buffer (up to its first NUL, as Lua's "%s" does). */
static const char *quotebuf(KxLexer *L) {
  size_t n = strlen_max(L->buf ? L->buf : "", L->blen);
  return kx_format(L, "'%.*s'", (int)n, L->buf ? L->buf : "");
}

/* An error found while scanning: "near" shows the scan buffer for tokens
** with text, the token's name for others, nothing for tok == 0. */
static _Noreturn void lexerror(KxLexer *L, const char *msg, int tok) {
  char b[KX_TOKSTR_SIZE];
  if (tok == 0) error_(L, msg, NULL);
  if (tok == KX_NAME || tok == KX_STRING || tok == KX_FLT || tok == KX_INT)
    error_(L, msg, quotebuf(L));
  error_(L, msg, kx_token2str(tok, b));
}

/* The text Lua would show for the current token. */
static const char *txttoken(KxLexer *L, const KxToken *t) {
  char b[KX_TOKSTR_SIZE];
  switch (t->tok) {
    case KX_NAME: case KX_INT: case KX_FLT:
      return kx_format(L, "'%s'", t->s);
    case KX_STRING: {
      size_t n = strlen_max(t->s, t->len);  /* stops at an embedded NUL */
      if (t->sep > 0) {
        if (n < t->len)
          return kx_format(L, "'%c%.*s'", t->sep, (int)n, t->s);
        return kx_format(L, "'%c%s%c'", t->sep, t->s, t->sep);
      }
      else {
        size_t eq = (size_t)(-t->sep - 2);
        char *e = kx_alloc(L, eq + 1);
        memset(e, '=', eq);
        if (n < t->len)
          return kx_format(L, "'[%s[%.*s'", e, (int)n, t->s);
        return kx_format(L, "'[%s[%s]%s]'", e, t->s, e);
      }
    }
    default:
      return kx_format(L, "%s", kx_token2str(t->tok, b));
  }
}

_Noreturn void kx_syntaxerror(KxLexer *L, const char *msg) {
  if (L->t.tok == 0)  /* a NUL byte: Lua takes token 0 as "no token" */
    error_(L, msg, NULL);
  error_(L, msg, txttoken(L, &L->t));
}

_Noreturn void kx_semerror(KxLexer *L, const char *msg) {
  error_(L, msg, NULL);
}

/* }====================================================== */


/*
** {======================================================
** Scanning primitives
** =======================================================
*/

static void nextc(KxLexer *L) {
  L->cur = L->p < L->end ? (unsigned char)*L->p++ : KX_EOZ;
}

static void save(KxLexer *L, int c) {
  if (L->blen == L->bcap) {
    size_t ncap = L->bcap ? L->bcap * 2 : 256;
    char *nb = ncap > L->bcap ? realloc(L->buf, ncap) : NULL;
    if (nb == NULL) kx_memerror(L);
    L->buf = nb; L->bcap = ncap;
  }
  L->buf[L->blen++] = (char)c;
}

static void save_next(KxLexer *L) { save(L, L->cur); nextc(L); }

/* Removes the last n saved characters. */
static void unsave(KxLexer *L, size_t n) { L->blen -= n; }

/* Saves and skips the current character if it is one of set[0], set[1]. */
static int accept2(KxLexer *L, const char *set) {
  if (L->cur != set[0] && L->cur != set[1]) return 0;
  save_next(L);
  return 1;
}

/* Skips one line break: "\n", "\r", "\n\r" or "\r\n". */
static void newline(KxLexer *L) {
  int old = L->cur;
  nextc(L);
  if (isnewline(L->cur) && L->cur != old) nextc(L);
  if (L->linenumber == 0x7fffffff - 1)
    lexerror(L, "chunk has too many lines", 0);
  L->linenumber++;
}

/* Copies buf[from..from+n) into the arena as the token's text. */
static void settext(KxLexer *L, KxToken *t, size_t from, size_t n) {
  char *s = kx_alloc(L, n + 1);
  memcpy(s, L->buf + from, n);
  s[n] = '\0';
  t->s = s; t->len = n;
}

/* }====================================================== */


/*
** {======================================================
** Numerals
** =======================================================
*/

/* Integer conversion as Lua does it: hex wraps around, decimal that
** overflows is not an integer. Returns 1 on success. */
static int str2int(const char *s, int64_t *out) {
  uint64_t a = 0;
  int empty = 1;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (s += 2; isxdigit_((unsigned char)*s); s++, empty = 0)
      a = a * 16 + (uint64_t)hexvalue((unsigned char)*s);
  }
  else {
    const uint64_t maxby10 = (uint64_t)INT64_MAX / 10;
    const int maxlastd = (int)((uint64_t)INT64_MAX % 10);
    for (; isdigit_((unsigned char)*s); s++, empty = 0) {
      int d = *s - '0';
      if (a >= maxby10 && (a > maxby10 || d > maxlastd))
        return 0;  /* overflow: a float */
      a = a * 10 + (uint64_t)d;
    }
  }
  if (empty || *s != '\0') return 0;
  *out = (int64_t)a;  /* two's complement wrap, as Lua */
  return 1;
}

/* Float conversion: strtod (which reads hex floats too), rejecting 'inf'
** and 'nan', retrying with the locale's decimal point like Lua. */
static int str2flt(const char *s, double *out) {
  const char *mode = strpbrk(s, ".xXnN");
  if (mode && (*mode == 'n' || *mode == 'N')) return 0;
  char *end;
  *out = strtod(s, &end);
  if (end != s && *end == '\0') return 1;
  const char *dot = strchr(s, '.');
  char pt = localeconv()->decimal_point[0];
  if (dot == NULL || pt == '.' || strlen(s) > 200) return 0;
  char b[201];
  strcpy(b, s);
  b[dot - s] = pt;
  *out = strtod(b, &end);
  return end != b && *end == '\0';
}

/* numeral -> digits and '.', exponents with optional sign, 0x prefix;
** the whole run is converted at once and must be a valid number. */
static void read_numeral(KxLexer *L, KxToken *t) {
  const char *expo = "Ee";
  int first = L->cur;
  save_next(L);
  if (first == '0' && accept2(L, "xX")) expo = "Pp";
  for (;;) {
    if (accept2(L, expo)) accept2(L, "-+");
    else if (isxdigit_(L->cur) || L->cur == '.') save_next(L);
    else break;
  }
  if (isalpha_(L->cur)) save_next(L);  /* touching a letter: an error */
  save(L, '\0');
  const char *s = L->buf;
  if (str2int(s, &t->i)) t->tok = KX_INT;
  else if (str2flt(s, &t->f)) t->tok = KX_FLT;
  else { L->blen--; lexerror(L, "malformed number", KX_FLT); }
  settext(L, t, 0, L->blen - 1);
}

/* }====================================================== */


/*
** {======================================================
** Strings
** =======================================================
*/

/* Reads '[' '='* '[' (or the ']' form); returns level+2 if well formed,
** 1 for a single bracket, 0 for '[=' not followed by a bracket. */
static size_t skip_sep(KxLexer *L) {
  size_t count = 0;
  int s = L->cur;
  save_next(L);
  while (L->cur == '=') { save_next(L); count++; }
  return L->cur == s ? count + 2 : count == 0 ? 1 : 0;
}

/* longstring -> '[' '='* '[' chars ']' '='* ']'. t is NULL for a
** comment. A first line break right after the opening is skipped. */
static void read_long_string(KxLexer *L, KxToken *t, size_t sep) {
  int line = L->linenumber;
  save_next(L);  /* second '[' */
  if (isnewline(L->cur)) newline(L);
  for (;;) {
    switch (L->cur) {
      case KX_EOZ:
        lexerror(L, kx_format(L, "unfinished long %s (starting at line %d)",
                              t ? "string" : "comment", line), KX_EOS);
      case ']':
        if (skip_sep(L) == sep) {
          save_next(L);  /* second ']' */
          goto done;
        }
        break;
      case '\n': case '\r':
        save(L, '\n');
        newline(L);
        if (t == NULL) L->blen = 0;  /* comments keep nothing */
        break;
      default:
        if (t) save_next(L);
        else nextc(L);
    }
  }
done:
  if (t) {
    t->tok = KX_STRING;
    t->sep = -(int)sep;
    settext(L, t, sep, L->blen - 2 * sep);
  }
}

/* Raises msg near the buffer if c is false, adding the offending
** character to the buffer first (so the message shows it). */
static void esccheck(KxLexer *L, int c, const char *msg) {
  if (!c) {
    if (L->cur != KX_EOZ) save_next(L);
    lexerror(L, msg, KX_STRING);
  }
}

/* Saves the escape character, then checks and returns one hex digit. */
static int gethexa(KxLexer *L) {
  save_next(L);
  esccheck(L, isxdigit_(L->cur), "hexadecimal digit expected");
  return hexvalue(L->cur);
}

/* \xXX; on return the current char is the second digit, and the buffer
** holds the backslash (the caller drops it). */
static int read_hexa_esc(KxLexer *L) {
  int r = gethexa(L);
  r = (r << 4) + gethexa(L);
  unsave(L, 2);  /* 'x' and the first digit */
  return r;
}

/* \u{XXX}: returns the code point (at most 2^31-1); skips the '}'. */
static unsigned long read_utf8_esc(KxLexer *L) {
  size_t drop = 4;  /* '\', 'u', '{' and the first digit */
  save_next(L);     /* 'u' */
  esccheck(L, L->cur == '{', "missing '{'");
  unsigned long r = (unsigned long)gethexa(L);
  for (;;) {
    save_next(L);
    if (!isxdigit_(L->cur)) break;
    drop++;
    esccheck(L, r <= (0x7FFFFFFFul >> 4), "UTF-8 value too large");
    r = (r << 4) + (unsigned long)hexvalue(L->cur);
  }
  esccheck(L, L->cur == '}', "missing '}'");
  nextc(L);  /* '}' */
  unsave(L, drop);
  return r;
}

/* Saves the UTF-8 encoding of x (extended to 6 bytes, up to 2^31-1). */
static void save_utf8(KxLexer *L, unsigned long x) {
  unsigned char b[6];
  int n = 0;
  if (x < 0x80) { save(L, (int)x); return; }
  unsigned long maxfirst = 0x3f;  /* payload that fits in the first byte */
  do {
    b[n++] = (unsigned char)(0x80 | (x & 0x3f));
    x >>= 6;
    maxfirst >>= 1;
  } while (x > maxfirst);
  save(L, (int)((~maxfirst << 1 | x) & 0xff));
  while (n > 0) save(L, b[--n]);
}

/* \ddd: up to three decimal digits, at most 255. */
static int read_dec_esc(KxLexer *L) {
  int r = 0, i;
  for (i = 0; i < 3 && isdigit_(L->cur); i++) {
    r = 10 * r + L->cur - '0';
    save_next(L);
  }
  esccheck(L, r <= 255, "decimal escape too large");
  unsave(L, (size_t)i);
  return r;
}

/* string -> '"' chars '"' | "'" chars "'" */
static void read_string(KxLexer *L, KxToken *t) {
  int del = L->cur;
  save_next(L);  /* keeps the quote, for messages */
  while (L->cur != del) {
    switch (L->cur) {
      case KX_EOZ:
        lexerror(L, "unfinished string", KX_EOS);
      case '\n': case '\r':
        lexerror(L, "unfinished string", KX_STRING);
      case '\\': {
        int c;
        save_next(L);  /* keeps the '\' for messages */
        switch (L->cur) {
          case 'a': c = '\a'; goto skip_save;
          case 'b': c = '\b'; goto skip_save;
          case 'f': c = '\f'; goto skip_save;
          case 'n': c = '\n'; goto skip_save;
          case 'r': c = '\r'; goto skip_save;
          case 't': c = '\t'; goto skip_save;
          case 'v': c = '\v'; goto skip_save;
          case 'x': c = read_hexa_esc(L); goto skip_save;
          case 'u': save_utf8(L, read_utf8_esc(L)); continue;
          case '\n': case '\r':
            newline(L); c = '\n'; goto just_save;
          case '\\': case '"': case '\'':
            c = L->cur; goto skip_save;
          case KX_EOZ: continue;  /* "unfinished string" next round */
          case 'z': {  /* skips the following white space */
            unsave(L, 1);
            nextc(L);
            while (isspace_(L->cur)) {
              if (isnewline(L->cur)) newline(L);
              else nextc(L);
            }
            continue;
          }
          default:
            esccheck(L, isdigit_(L->cur), "invalid escape sequence");
            c = read_dec_esc(L);
            goto just_save;
        }
      skip_save:
        nextc(L);
      just_save:
        unsave(L, 1);  /* the '\' */
        save(L, c);
        break;
      }
      default:
        save_next(L);
    }
  }
  save_next(L);  /* closing quote */
  t->tok = KX_STRING;
  t->sep = del;
  settext(L, t, 1, L->blen - 2);
}

/* }====================================================== */


static int reserved_word(const char *s, size_t n) {
  if (n < 2 || n > 8 || s[0] < 'a' || s[0] > 'w') return 0;
  for (int i = 0; i < NRESERVED; i++)
    if (strlen(reserved[i]) == n && memcmp(reserved[i], s, n) == 0)
      return KX_FIRST_RESERVED + i;
  return 0;
}

/* Scans one token into t. */
static void llex(KxLexer *L, KxToken *t) {
  L->blen = 0;
  t->s = NULL; t->len = 0; t->sep = 0;
  for (;;) {
    t->line = L->linenumber;
    switch (L->cur) {
      case '\n': case '\r':
        newline(L);
        break;
      case ' ': case '\f': case '\t': case '\v':
        nextc(L);
        break;
      case '-':  /* '-' or comment */
        nextc(L);
        if (L->cur != '-') { t->tok = '-'; return; }
        nextc(L);
        if (L->cur == '[') {  /* long comment? */
          size_t sep = skip_sep(L);
          L->blen = 0;
          if (sep >= 2) {
            read_long_string(L, NULL, sep);
            L->blen = 0;
            break;
          }
        }
        while (!isnewline(L->cur) && L->cur != KX_EOZ) nextc(L);
        break;
      case '[': {
        size_t sep = skip_sep(L);
        if (sep >= 2) { read_long_string(L, t, sep); return; }
        if (sep == 0) lexerror(L, "invalid long string delimiter", KX_STRING);
        t->tok = '[';
        return;
      }
      case '=':
        nextc(L);
        t->tok = L->cur == '=' ? (nextc(L), KX_EQ) : '=';
        return;
      case '<':
        nextc(L);
        t->tok = L->cur == '=' ? (nextc(L), KX_LE)
               : L->cur == '<' ? (nextc(L), KX_SHL) : '<';
        return;
      case '>':
        nextc(L);
        t->tok = L->cur == '=' ? (nextc(L), KX_GE)
               : L->cur == '>' ? (nextc(L), KX_SHR) : '>';
        return;
      case '/':
        nextc(L);
        t->tok = L->cur == '/' ? (nextc(L), KX_IDIV) : '/';
        return;
      case '~':
        nextc(L);
        t->tok = L->cur == '=' ? (nextc(L), KX_NE) : '~';
        return;
      case ':':
        nextc(L);
        t->tok = L->cur == ':' ? (nextc(L), KX_DBCOLON) : ':';
        return;
      case '"': case '\'':
        read_string(L, t);
        return;
      case '.':  /* '.', '..', '...' or a numeral */
        save_next(L);
        if (L->cur == '.') {
          nextc(L);
          t->tok = L->cur == '.' ? (nextc(L), KX_DOTS) : KX_CONCAT;
          return;
        }
        if (!isdigit_(L->cur)) { t->tok = '.'; return; }
        read_numeral(L, t);
        return;
      case '0': case '1': case '2': case '3': case '4':
      case '5': case '6': case '7': case '8': case '9':
        read_numeral(L, t);
        return;
      case KX_EOZ:
        t->tok = KX_EOS;
        return;
      default:
        if (isalpha_(L->cur)) {  /* name or reserved word */
          do save_next(L); while (isalnum_(L->cur));
          int r = reserved_word(L->buf, L->blen);
          if (r) { t->tok = r; return; }
          t->tok = KX_NAME;
          settext(L, t, 0, L->blen);
          return;
        }
        t->tok = L->cur;  /* any other byte is a token by itself */
        nextc(L);
        return;
    }
  }
}

void kx_init(KxLexer *L, Arena *A, const char *src, size_t len,
             const char *chunkname, char *err, size_t errsz, jmp_buf *jb) {
  memset(L, 0, sizeof *L);
  L->A = A;
  L->p = src;
  L->end = src + len;
  L->linenumber = 1;
  L->lastline = 1;
  L->chunkname = chunkname ? chunkname : "?";
  L->err = err;
  L->errsz = errsz;
  L->jb = jb;
  L->t.tok = KX_EOS;
  nextc(L);
}

void kx_close(KxLexer *L) {
  free(L->buf);
  L->buf = NULL;
  L->blen = L->bcap = 0;
}

void kx_next(KxLexer *L) {
  L->lastline = L->linenumber;
  if (L->has_ahead) {
    L->t = L->ahead;
    L->has_ahead = 0;
  }
  else
    llex(L, &L->t);
}

int kx_lookahead(KxLexer *L) {
  if (!L->has_ahead) {
    llex(L, &L->ahead);
    L->has_ahead = 1;
  }
  return L->ahead.tok;
}
