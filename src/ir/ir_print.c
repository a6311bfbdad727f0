/*
** ir_print.c: the IR as text, for tests and inspection. One line per
** instruction: its source line ("-" when unknown), the value, the
** operation, and after ';' the local variable it was stored in:
**
**      4  %6 = index %0, %5  ; v
**
** Blocks show their predecessors and innermost loop; loops are listed at
** the end with their kind, blocks, exits and (numeric for) control value.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ir.h"

typedef struct Out {
  char **buf; size_t *len, *cap;
  KirNote note; void *ud;   /* kir_print_noted */
} Out;

static void put(Out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if (*o->buf == NULL || *o->len + (size_t)k + 1 > *o->cap) {
    size_t cap = (*o->len + (size_t)k + 1) * 2;
    char *nb = realloc(*o->buf, cap);
    if (nb == NULL) return;
    *o->buf = nb;
    *o->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(*o->buf + *o->len, (size_t)k + 1, fmt, ap);
  va_end(ap);
  *o->len += (size_t)k;
}

/* The shortest %g that reads back the same, with a '.0' on integers. */
static void putflt(Out *o, double f) {
  char t[64];
  if (isinf(f)) { put(o, f > 0 ? "inf" : "-inf"); return; }
  if (isnan(f)) { put(o, "nan"); return; }
  for (int prec = 14; prec <= 17; prec++) {
    snprintf(t, sizeof t, "%.*g", prec, f);
    if (strtod(t, NULL) == f) break;
  }
  put(o, "%s%s", t, strpbrk(t, ".en") ? "" : ".0");
}

static void putstr(Out *o, const char *s, size_t len) {
  put(o, "\"");
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\n') put(o, "\\n");
    else if (c == '"' || c == '\\') put(o, "\\%c", c);
    else if (c < 32 || c >= 127) put(o, "\\%d", c);
    else put(o, "%c", c);
  }
  put(o, "\"");
}

static void putargs(Out *o, const KirInsn *v, int from) {
  for (int i = from; i < v->nargs; i++)
    put(o, "%s%%%d%s", i > from ? ", " : "", v->args[i]->id,
        (i == v->nargs - 1 && (v->flags & KIR_F_OPEN)) ? "..." : "");
}

static void putnres(Out *o, int n) {
  if (n < 0) put(o, " -> all");
  else put(o, " -> %d", n);
}

static void putupval(Out *o, const KirFunc *f, int idx) {
  const char *name = idx < f->proto->nup ? f->proto->up[idx].name : NULL;
  put(o, " %d", idx);
  if (name) put(o, " %s", name);
}

static void insn(Out *o, const KirFunc *f, const KirInsn *v) {
  if (v->line >= 0) put(o, "%5d  ", v->line);
  else put(o, "%5s  ", "-");
  int isval = !(v->op == KIR_JMP || v->op == KIR_BR || v->op == KIR_RET ||
                v->op == KIR_SETFIELD || v->op == KIR_SETINDEX ||
                v->op == KIR_SETUPVAL || v->op == KIR_SETLIST || v->op == KIR_TBC ||
                v->op == KIR_SETCELL);
  if (isval) {
    const char *n = o->note ? o->note(o->ud, NULL, v) : NULL;
    put(o, "%%%d%s%s = ", v->id, n ? ":" : "", n ? n : "");
  }
  put(o, "%s", kir_opname[v->op]);
  const KirBlock *b = v->block;
  switch (v->op) {
  case KIR_PARAM: put(o, " %d", v->aux); break;
  case KIR_UNDEF: put(o, " r%d", v->aux); break;
  case KIR_INT: put(o, " %lld", (long long)v->k.i); break;
  case KIR_FLT: put(o, " "); putflt(o, v->k.f); break;
  case KIR_STR: put(o, " "); putstr(o, v->k.str.s, v->k.str.len); break;
  case KIR_GETUPVAL: putupval(o, f, v->aux); break;
  case KIR_SETUPVAL: putupval(o, f, v->aux); put(o, ", %%%d", v->args[0]->id); break;
  case KIR_PHI:
    for (int i = 0; i < v->nargs; i++)
      put(o, "%s %%%d b%d", i ? "," : "", v->args[i]->id, b->preds[i]->id);
    break;
  case KIR_GETFIELD: case KIR_SETFIELD:
    put(o, " %%%d, ", v->args[0]->id);
    putstr(o, v->k.str.s, v->k.str.len);
    if (v->op == KIR_SETFIELD) put(o, ", %%%d", v->args[1]->id);
    break;
  case KIR_CALL:
    put(o, " %%%d(", v->args[0]->id);
    putargs(o, v, 1);
    put(o, ")");
    putnres(o, v->aux);
    if (v->flags & KIR_F_TAIL) put(o, " tail");
    if (v->flags & KIR_F_TFOR) put(o, " tfor");
    break;
  case KIR_RESULT: put(o, " %%%d, %d", v->args[0]->id, v->aux); break;
  case KIR_VARARG: putnres(o, v->aux); break;
  case KIR_CLOSURE:
    put(o, " f%d", f->proto->p[v->aux]->id);
    if (v->nargs) { put(o, ", "); putargs(o, v, 0); }
    break;
  case KIR_SETLIST: put(o, " "); putargs(o, v, 0); put(o, " @%d", v->aux); break;
  case KIR_JMP: put(o, " b%d", b->succ[0]->id); break;
  case KIR_BR:
    put(o, " %%%d, b%d, b%d", v->args[0]->id, b->succ[0]->id, b->succ[1]->id);
    break;
  case KIR_FORPREP: case KIR_FORLOOP:
    put(o, " ");
    putargs(o, v, 0);
    put(o, " -> b%d, b%d", b->succ[0]->id, b->succ[1]->id);
    break;
  default:
    if (v->nargs) { put(o, " "); putargs(o, v, 0); }
    break;
  }
  if (v->name) put(o, "  ; %s", v->name);
  put(o, "\n");
}

static const char *const loopkind[] = { "fornum", "forin", "while", "repeat", "loop" };

static void blocklist(Out *o, const char *what, KirBlock *const *bs, int n) {
  if (n == 0) return;
  put(o, " %s", what);
  for (int i = 0; i < n; i++) put(o, " b%d", bs[i]->id);
}

void kir_print(const KirFunc *f, char **buf, size_t *len, size_t *cap) {
  kir_print_noted(f, NULL, NULL, buf, len, cap);
}

void kir_print_noted(const KirFunc *f, KirNote note, void *ud, char **buf,
                     size_t *len, size_t *cap) {
  Out o = { buf, len, cap, note, ud };
  const KbcProto *p = f->proto;
  put(&o, "function f%d lines %d-%d params %d%s stack %d", p->id, p->linedefined,
      p->lastlinedefined, p->numparams, p->is_vararg ? " vararg" : "", p->maxstack);
  if (p->nup) {
    put(&o, " upvalues");
    for (int i = 0; i < p->nup; i++) put(&o, " %s", p->up[i].name ? p->up[i].name : "?");
  }
  if (f->irreducible) put(&o, " irreducible");
  put(&o, "\n");
  for (int j = 0; j < f->nblocks; j++) {
    const KirBlock *b = f->blocks[j];
    put(&o, "b%d:", b->id);
    if (b->npreds) {
      put(&o, " <-");
      for (int i = 0; i < b->npreds; i++) put(&o, " b%d", b->preds[i]->id);
    }
    if (b->loop) put(&o, "  loop %d", b->loop->id);
    if (note) {
      const char *n = note(ud, b, NULL);
      if (n) put(&o, "  %s", n);
    }
    put(&o, "\n");
    for (int i = 0; i < b->nphis; i++) insn(&o, f, b->phis[i]);
    for (int i = 0; i < b->ninsns; i++) insn(&o, f, b->insns[i]);
    if (b->term) insn(&o, f, b->term);
  }
  for (int i = 0; i < f->nloops; i++) {
    const KirLoop *l = f->loops[i];
    put(&o, "loop %d: %s line %d header b%d", l->id, loopkind[l->kind], l->line,
        l->header->id);
    if (l->parent) put(&o, " in loop %d", l->parent->id);
    if (l->entry) put(&o, " entry b%d", l->entry->id);
    blocklist(&o, "blocks", l->blocks, l->nblocks);
    blocklist(&o, "latches", l->latches, l->nlatches);
    blocklist(&o, "exits", l->exits, l->nexits);
    if (l->prep) put(&o, " prep %%%d", l->prep->id);
    if (l->var) put(&o, " var %%%d", l->var->id);
    put(&o, "\n");
  }
}
