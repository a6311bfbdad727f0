/*
** krecord.c: the process-wide table of record layouts (krecord.h).
**
** Interning. A layout is identified by its canonical text (key): the
** fields in order, each "name:dtype[count]@offset" (a nested record
** writes its own key in place of the dtype), then the size, e.g.
**   {x:f32@0,y:f32@4,pos:f64[3]@8}32
** Equal keys are equal layouts, so the table maps keys to objects. The
** table only grows (layouts are immutable and referenced from arrays,
** types and compiled code of any state), under a mutex; lookups by id
** read a fixed-size array of pointers whose filled prefix only grows.
** A program declares few layouts; a bound (KREC_MAX) keeps a script that
** makes new layouts in a loop from growing the table without end.
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/krecord.h"

#define KREC_MAX 4096
#define KREC_MAXSIZE ((int64_t)1 << 40)   /* bytes in one record */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const KRecord *table[KREC_MAX];
static int ntable;   /* written under lock, after its entry (release); read without */

int64_t krec_elemsize(const KRecField *f) {
  return f->dtype == (int)KJIT_RECORD ? f->rec->size : (int64_t)kjit_dtype_size((kjit_dtype)f->dtype);
}

int64_t krec_elemalign(const KRecField *f) {
  return f->dtype == (int)KJIT_RECORD ? f->rec->align : (int64_t)kjit_dtype_size((kjit_dtype)f->dtype);
}

/* Lock-free (kjit_call checks a layout per call): an entry is complete
** before ntable counts it. */
const KRecord *krec_byid(int32_t id) {
  int n = __atomic_load_n(&ntable, __ATOMIC_ACQUIRE);
  return id >= 0 && id < n ? table[id] : NULL;
}

const KRecField *krec_field(const KRecord *r, const char *name, size_t len) {
  for (int i = 0; i < r->nfields; i++)
    if (strlen(r->fields[i].name) == len && memcmp(r->fields[i].name, name, len) == 0)
      return &r->fields[i];
  return NULL;
}

static int isident(const char *s) {
  if (s == NULL || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
      return 0;
  return 1;
}

/* Appends to a growing string; returns 0 on memory failure. */
typedef struct { char *s; size_t n, cap; } Str;
static int add(Str *b, const char *t) {
  size_t k = strlen(t);
  if (b->n + k + 1 > b->cap) {
    size_t cap = (b->n + k + 1) * 2;
    char *p = realloc(b->s, cap);
    if (p == NULL) return 0;
    b->s = p; b->cap = cap;
  }
  memcpy(b->s + b->n, t, k + 1);
  b->n += k;
  return 1;
}

/* The layout's checks (krecord.h); 0 with a message if it is not valid. */
/* Layouts also come from bytes (kjit.load's, host/export.c, which a
** checksum guards against damage, not a forger): every number code reads
** from a layout is checked here, before arithmetic on it, so no bytes can
** make an element size that overflows an allocation's size, an alignment
** of 0, or a field that reaches past its record. */
static int check(const KRecField *f, int n, int64_t size, int64_t align, char *err, size_t errlen) {
  if (n < 1) { snprintf(err, errlen, "a record needs at least one field"); return 0; }
  if (size < 1 || size > KREC_MAXSIZE) {
    snprintf(err, errlen, "record size %lld is out of range (1 to 2^40 bytes)", (long long)size);
    return 0;
  }
  int64_t maxalign = 1;
  for (int i = 0; i < n; i++) {
    const char *nm = f[i].name;
    if (!isident(nm)) {
      snprintf(err, errlen, "field #%d: name '%s' is not a Lua identifier", i + 1, nm ? nm : "(null)");
      return 0;
    }
    for (int j = 0; j < i; j++)
      if (strcmp(f[j].name, nm) == 0) {
        snprintf(err, errlen, "field '%s' is declared twice", nm);
        return 0;
      }
    if (f[i].dtype == (int)KJIT_RECORD ? f[i].rec == NULL : kjit_dtype_size((kjit_dtype)f[i].dtype) == 0) {
      snprintf(err, errlen, "field '%s': invalid dtype %d", nm, f[i].dtype);
      return 0;
    }
    if (f[i].count < 0 || f[i].count > ((int64_t)1 << 32)) {
      snprintf(err, errlen, "field '%s': bad element count %lld", nm, (long long)f[i].count);
      return 0;
    }
    int64_t es = krec_elemsize(&f[i]), ea = krec_elemalign(&f[i]);
    if ((f[i].count ? f[i].count : 1) > size / es) {   /* (before es * count can overflow) */
      snprintf(err, errlen, "field '%s' (%lld elements of %lld bytes) does not fit in a record "
               "of %lld bytes", nm, (long long)(f[i].count ? f[i].count : 1), (long long)es,
               (long long)size);
      return 0;
    }
    int64_t bytes = es * (f[i].count ? f[i].count : 1);
    if (ea > maxalign) maxalign = ea;
    if (f[i].offset < 0 || f[i].offset > size || bytes > size - f[i].offset) {
      snprintf(err, errlen, "field '%s' (%lld bytes at offset %lld) does not fit in a record "
               "of %lld bytes", nm, (long long)bytes, (long long)f[i].offset, (long long)size);
      return 0;
    }
    if (f[i].offset % ea != 0) {
      snprintf(err, errlen, "field '%s' at offset %lld is not aligned to %lld bytes "
               "(packed structs are not supported)", nm, (long long)f[i].offset, (long long)ea);
      return 0;
    }
    for (int j = 0; j < i; j++) {
      int64_t jb = krec_elemsize(&f[j]) * (f[j].count ? f[j].count : 1);
      if (f[i].offset < f[j].offset + jb && f[j].offset < f[i].offset + bytes) {
        snprintf(err, errlen, "fields '%s' and '%s' overlap", f[j].name, nm);
        return 0;
      }
    }
  }
  if (align != maxalign) {   /* what every layout maker computes: kjit.struct, kjit_record_new */
    snprintf(err, errlen, "record alignment %lld is not its largest field alignment %lld",
             (long long)align, (long long)maxalign);
    return 0;
  }
  if (size % align != 0) {
    snprintf(err, errlen, "record size %lld is not a multiple of its alignment %lld",
             (long long)size, (long long)align);
    return 0;
  }
  return 1;
}

const KRecord *krec_intern(const KRecField *f, int n, int64_t size, int64_t align,
                           char *err, size_t errlen) {
  if (!check(f, n, size, align, err, errlen)) return NULL;
  Str key = { 0 };
  char tmp[96];
  int ok = add(&key, "{");
  for (int i = 0; ok && i < n; i++) {
    ok = add(&key, i ? "," : "") && add(&key, f[i].name) && add(&key, ":") &&
         add(&key, f[i].dtype == (int)KJIT_RECORD ? f[i].rec->key
                                                  : kjit_dtype_name((kjit_dtype)f[i].dtype));
    if (ok && f[i].count) { snprintf(tmp, sizeof tmp, "[%lld]", (long long)f[i].count); ok = add(&key, tmp); }
    if (ok) { snprintf(tmp, sizeof tmp, "@%lld", (long long)f[i].offset); ok = add(&key, tmp); }
  }
  if (ok) { snprintf(tmp, sizeof tmp, "}%lld", (long long)size); ok = add(&key, tmp); }
  if (!ok) { free(key.s); snprintf(err, errlen, "not enough memory"); return NULL; }
  const KRecord *found = NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < ntable && !found; i++)
    if (strcmp(table[i]->key, key.s) == 0) found = table[i];
  if (!found) {
    size_t names = 0;
    for (int i = 0; i < n; i++) names += strlen(f[i].name) + 1;
    KRecord *r = ntable < KREC_MAX ? malloc(sizeof *r + (size_t)n * sizeof(KRecField) + names) : NULL;
    if (r) {
      char *np = (char *)&r->fields[n];
      r->id = ntable;
      r->size = size;
      r->align = align;
      r->key = key.s;
      key.s = NULL;   /* owned by r from now on */
      r->nfields = n;
      for (int i = 0; i < n; i++) {
        r->fields[i] = f[i];
        size_t k = strlen(f[i].name) + 1;
        memcpy(np, f[i].name, k);
        r->fields[i].name = np;
        np += k;
      }
      table[ntable] = r;
      __atomic_store_n(&ntable, ntable + 1, __ATOMIC_RELEASE);
      found = r;
    }
  }
  pthread_mutex_unlock(&lock);
  free(key.s);
  if (!found) snprintf(err, errlen, ntable >= KREC_MAX ? "too many distinct record layouts (%d)"
                                                       : "not enough memory", KREC_MAX);
  return found;
}

const KRecord *krec_c_layout(const KRecField *fields, int n, char *err, size_t errlen) {
  KRecField f[256];
  if (n > 256) { snprintf(err, errlen, "a record has at most 256 fields"); return NULL; }
  if (n < 1) { snprintf(err, errlen, "a record needs at least one field"); return NULL; }
  int64_t off = 0, align = 1;
  for (int i = 0; i < n; i++) {
    f[i] = fields[i];
    if (f[i].dtype == (int)KJIT_RECORD ? f[i].rec == NULL : kjit_dtype_size((kjit_dtype)f[i].dtype) == 0) {
      snprintf(err, errlen, "field #%d: invalid dtype", i + 1);
      return NULL;
    }
    if (f[i].count < 0 || f[i].count > ((int64_t)1 << 32)) {
      snprintf(err, errlen, "field #%d: bad element count %lld", i + 1, (long long)f[i].count);
      return NULL;
    }
    int64_t es = krec_elemsize(&f[i]), ea = krec_elemalign(&f[i]);
    off = (off + ea - 1) / ea * ea;
    f[i].offset = off;
    off += es * (f[i].count ? f[i].count : 1);
    if (ea > align) align = ea;
    if (off > ((int64_t)1 << 40)) { snprintf(err, errlen, "record too large"); return NULL; }
  }
  return krec_intern(f, n, (off + align - 1) / align * align, align, err, errlen);
}

/* ---- The text users read (tostring(P), messages) --------------------------- */

static int addtext(Str *b, const KRecord *r) {
  char tmp[64];
  int ok = add(b, "struct{");
  for (int i = 0; ok && i < r->nfields; i++) {
    const KRecField *f = &r->fields[i];
    ok = (i == 0 || add(b, ", ")) && add(b, f->name) && add(b, ": ") &&
         (f->dtype == (int)KJIT_RECORD ? addtext(b, f->rec) : add(b, kjit_dtype_name((kjit_dtype)f->dtype)));
    if (ok && f->count) { snprintf(tmp, sizeof tmp, "[%lld]", (long long)f->count); ok = add(b, tmp); }
    if (ok) { snprintf(tmp, sizeof tmp, " @%lld", (long long)f->offset); ok = add(b, tmp); }
  }
  if (ok) { snprintf(tmp, sizeof tmp, "; size %lld}", (long long)r->size); ok = add(b, tmp); }
  return ok;
}

char *krec_text(const KRecord *r) {
  Str b = { NULL, 0, 0 };
  if (!addtext(&b, r)) { free(b.s); return NULL; }
  return b.s;
}
