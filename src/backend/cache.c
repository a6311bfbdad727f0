/*
** cache.c: the on-disk cache of compiled code (see cache.h).
**
** File layout (host byte order; the key names the host, so a file from
** another byte order never matches):
**
**   offset  size
**        0     8  magic "KJITCACH"
**        8     4  format version (KCACHE_FORMAT)
**       12     4  header size (sizeof(FileHeader))
**       16     8  kind, NUL-padded ("cpu", "ptx")
**       24     8  64-bit hash of the key (also the file name)
**       32     8  key length
**       40     8  payload length
**       48     8  checksum of key and payload
**       56        key bytes, then payload bytes (file size must match)
**
** The CPU payload: u32 length of the entry name, the name (no NUL), u32
** the cannot-fail fact of the entry (kc_code_noraise: 0, 1, 2; format 3),
** u32 length of the caller's extra bytes (what the dispatcher keeps from the
** code generator: jit.c), those bytes, then the ELF object. The name is
** "kjit_c_" and 16 hex digits. kjit's own loader (objload.c) loads the
** object where it can, with no LLVM in the process; otherwise the LLVM
** JIT does, after the symbol is renamed in the object's string table to a
** fresh name of the same length (kc_unique_id), so that loaded copies
** never clash in the JIT's one JITDylib, and the names whose address only
** the loader's name hook knows (exported code's record layouts) are bound
** to names of their own (elf_bind_hooked).
**
** The key of CPU code (host/cache_key.c) is computed after typing, before
** any LLVM IR is made, from the inputs of the typed IR (bytecode, frozen
** values, argument types), the options, this build (kcache_build_id) and
** the host's CPU (kcache_host_id, from cpuid on x86-64: no LLVM): a hit
** skips the code generator, the LLVM optimizer and LLVM's start-up. IR
** and assembly text are not kept: f:inspect("llvm"/"asm") recompiles a
** specialization that came from the cache.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "common/clock.h"
#include "backend/cache.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "lauxlib.h"

#ifndef KJIT_VERSION
#define KJIT_VERSION "0.0.0"
#endif
#ifndef KJIT_LLVM_VERSION
#define KJIT_LLVM_VERSION "unknown"
#endif

#define MAGIC "KJITCACH"
#define SUFFIX ".kjc"
#define TMPMARK ".tmp."

typedef struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t hsize;
  char kind[8];
  uint64_t keyhash;
  uint64_t keylen;
  uint64_t bloblen;
  uint64_t checksum;
} FileHeader;

/* Payloads larger than this are refused (a corrupt length, not code). */
#define MAXFILE ((uint64_t)1 << 30)

/* --- process-wide state ---------------------------------------------------- */

static pthread_mutex_t dir_lock = PTHREAD_MUTEX_INITIALIZER;
static char *dir_override;         /* kcache_set_dir (guarded by dir_lock) */

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static KCacheStats stats;

static unsigned long tmp_counter;

static void count(unsigned long *c) {
  pthread_mutex_lock(&stats_lock);
  (*c)++;
  pthread_mutex_unlock(&stats_lock);
}

void kcache_stats(KCacheStats *s, int reset) {
  pthread_mutex_lock(&stats_lock);
  if (s) *s = stats;
  if (reset) memset(&stats, 0, sizeof stats);
  pthread_mutex_unlock(&stats_lock);
}

/* --- hashing ------------------------------------------------------------------ */

/* FNV-1a, 64 bits: no table, good enough to spread file names and to
   catch corruption (the full key is compared anyway). */
static uint64_t hash_add(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}
#define HASH0 0xcbf29ce484222325ULL

/* --- build identity ------------------------------------------------------------ */

static pthread_once_t build_once = PTHREAD_ONCE_INIT;
static char build_id[1024];

static void build_init(void) {
  int n = snprintf(build_id, sizeof build_id,
                   "kjit-cache %d; kjit %s; llvm %s", KCACHE_FORMAT,
                   KJIT_VERSION, KJIT_LLVM_VERSION);
  /* The library (or executable) this code lives in: a rebuilt kjit may
     generate different code for the same IR and options. */
  Dl_info info;
  struct stat st;
  if (n > 0 && (size_t)n < sizeof build_id &&
      dladdr((void *)build_init, &info) && info.dli_fname &&
      stat(info.dli_fname, &st) == 0)
    snprintf(build_id + n, sizeof build_id - (size_t)n,
             "; lib %s %lld %lld.%09ld", info.dli_fname, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
}

const char *kcache_build_id(void) {
  pthread_once(&build_once, build_init);
  return build_id;
}

/* --- directory ------------------------------------------------------------------ */

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

/* a + b, malloc'd */
static char *concat(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *r = malloc(na + nb + 1);
  if (!r) return NULL;
  memcpy(r, a, na);
  memcpy(r + na, b, nb + 1);
  return r;
}

char *kcache_dir(void) {
  pthread_mutex_lock(&dir_lock);
  char *r = dir_override ? dupstr(dir_override) : NULL;
  int set = dir_override != NULL;
  pthread_mutex_unlock(&dir_lock);
  if (set) return r;
  const char *e = getenv("KJIT_CACHE_DIR");
  if (e && *e) return dupstr(e);
  e = getenv("XDG_CACHE_HOME");
  if (e && *e == '/') return concat(e, "/kjit"); /* the spec: absolute only */
  e = getenv("HOME");
  if (e && *e) return concat(e, "/.cache/kjit");
  return NULL;
}

int kcache_set_dir(const char *dir) {
  char *d = NULL;
  if (dir && !(d = dupstr(dir))) return -1;
  pthread_mutex_lock(&dir_lock);
  free(dir_override);
  dir_override = d;
  pthread_mutex_unlock(&dir_lock);
  return 0;
}

/* mkdir -p (each missing component, mode 0777 less the umask). */
static int make_dirs(const char *dir) {
  struct stat st;
  if (dir[0] == '\0') return -1;
  if (stat(dir, &st) == 0) return S_ISDIR(st.st_mode) ? 0 : -1;
  char *p = dupstr(dir);
  if (!p) return -1;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    *s = '/';
  }
  int r = mkdir(p, 0777) == 0 || errno == EEXIST ? 0 : -1;
  free(p);
  return r;
}

/* kind: 1..8 characters of [a-z0-9] */
static int kind_ok(const char *kind) {
  size_t n = kind ? strlen(kind) : 0;
  if (n < 1 || n > 8) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((kind[i] >= 'a' && kind[i] <= 'z') || (kind[i] >= '0' && kind[i] <= '9')))
      return 0;
  return 1;
}

/* "<dir>/<kind>-<hash>.kjc", malloc'd */
static char *file_path(const char *dir, const char *kind, uint64_t h) {
  size_t n = strlen(dir) + strlen(kind) + 32;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s-%016llx" SUFFIX, dir, kind, (unsigned long long)h);
  return p;
}

/* Is name one of ours: "<kind>-<16 hex>.kjc", or a temporary file
   "<that>.tmp.<anything>"? */
static int our_name(const char *name) {
  const char *dash = strchr(name, '-');
  if (!dash || dash == name || dash - name > 8) return 0;
  for (const char *s = name; s < dash; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))) return 0;
  const char *h = dash + 1;
  for (int i = 0; i < 16; i++)
    if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f'))) return 0;
  const char *rest = h + 16;
  if (strncmp(rest, SUFFIX, strlen(SUFFIX)) != 0) return 0;
  rest += strlen(SUFFIX);
  return *rest == 0 || strncmp(rest, TMPMARK, strlen(TMPMARK)) == 0;
}

/* --- blob store ------------------------------------------------------------------- */

static uint64_t key_hash(const char *kind, const void *key, size_t keylen) {
  uint64_t h = hash_add(HASH0, kind, strlen(kind) + 1);
  return hash_add(h, key, keylen);
}

/* Reads exactly n bytes. */
static int read_all(int fd, void *p, size_t n) {
  char *s = p;
  while (n) {
    ssize_t r = read(fd, s, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    s += r;
    n -= (size_t)r;
  }
  return 0;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t r = write(fd, s, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    s += r;
    n -= (size_t)r;
  }
  return 0;
}

int kcache_load(const char *kind, const void *key, size_t keylen, void **blob,
                size_t *len) {
  *blob = NULL;
  *len = 0;
  if (!kind_ok(kind)) return -1;
  char *dir = kcache_dir();
  if (!dir) return -1;
  uint64_t h = key_hash(kind, key, keylen);
  char *path = file_path(dir, kind, h);
  free(dir);
  if (!path) return -1;
  /* O_NONBLOCK: opening a FIFO (or a device) planted under a cache name
  ** must not wait for a writer; only regular files are read */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  free(path);
  if (fd < 0) {
    count(&stats.misses);
    return -1;
  }
  struct stat st;
  FileHeader fh;
  char *buf = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      (uint64_t)st.st_size < sizeof fh || read_all(fd, &fh, sizeof fh) != 0)
    goto bad;
  char kbuf[8] = {0};
  memcpy(kbuf, kind, strlen(kind));
  if (memcmp(fh.magic, MAGIC, 8) != 0 || fh.version != KCACHE_FORMAT ||
      fh.hsize != sizeof fh || memcmp(fh.kind, kbuf, 8) != 0 ||
      fh.keyhash != h || fh.keylen != keylen || fh.bloblen > MAXFILE ||
      (uint64_t)st.st_size != sizeof fh + fh.keylen + fh.bloblen)
    goto bad;
  /* key and payload in one buffer; the payload is moved to its start.
  ** Every read is bounded by the header's sizes (checked above against
  ** the caller's key length, MAXFILE and the file's size); a file that
  ** grew since fstat is refused rather than read further. */
  size_t total = (size_t)(fh.keylen + fh.bloblen);
  buf = malloc(total ? total : 1);
  if (!buf || read_all(fd, buf, total) != 0) goto bad;
  char extra;
  if (read(fd, &extra, 1) != 0) goto bad;
  if (memcmp(buf, key, keylen) != 0 ||
      hash_add(HASH0, buf, total) != fh.checksum)
    goto bad;
  close(fd);
  count(&stats.hits);
  memmove(buf, buf + keylen, (size_t)fh.bloblen);
  *blob = buf;
  *len = (size_t)fh.bloblen;
  return 0;
bad:
  free(buf);
  close(fd);
  count(&stats.rejected);
  return -1;
}

int kcache_store(const char *kind, const void *key, size_t keylen,
                 const void *blob, size_t len) {
  if (!kind_ok(kind) || len > MAXFILE) goto fail;
  char *dir = kcache_dir();
  if (!dir) goto fail;
  if (make_dirs(dir) != 0) {
    free(dir);
    goto fail;
  }
  uint64_t h = key_hash(kind, key, keylen);
  char *path = file_path(dir, kind, h);
  free(dir);
  if (!path) goto fail;
  size_t tn = strlen(path) + 64;
  char *tmp = malloc(tn);
  if (!tmp) {
    free(path);
    goto fail;
  }
  /* a name no other writer (process or thread) uses */
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    snprintf(tmp, tn, "%s" TMPMARK "%ld.%lu", path, (long)getpid(),
             __atomic_add_fetch(&tmp_counter, 1, __ATOMIC_RELAXED));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    free(tmp);
    free(path);
    goto fail;
  }
  FileHeader fh;
  memset(&fh, 0, sizeof fh);
  memcpy(fh.magic, MAGIC, 8);
  fh.version = KCACHE_FORMAT;
  fh.hsize = sizeof fh;
  memcpy(fh.kind, kind, strlen(kind));
  fh.keyhash = h;
  fh.keylen = keylen;
  fh.bloblen = len;
  fh.checksum = hash_add(hash_add(HASH0, key, keylen), blob, len);
  int ok = write_all(fd, &fh, sizeof fh) == 0 &&
           write_all(fd, key, keylen) == 0 && write_all(fd, blob, len) == 0;
  ok = close(fd) == 0 && ok;
  /* rename is atomic: readers see the old file or the whole new one */
  ok = ok && rename(tmp, path) == 0;
  if (!ok) unlink(tmp);
  free(tmp);
  free(path);
  if (!ok) goto fail;
  count(&stats.stores);
  return 0;
fail:
  count(&stats.failures);
  return -1;
}

int kcache_clear(void) {
  char *dir = kcache_dir();
  if (!dir) return 0;
  DIR *d = opendir(dir);
  int n = 0;
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (!our_name(de->d_name)) continue;
      char *p = malloc(strlen(dir) + strlen(de->d_name) + 2);
      if (!p) break;
      sprintf(p, "%s/%s", dir, de->d_name);
      if (unlink(p) == 0) n++;
      free(p);
    }
    closedir(d);
  }
  free(dir);
  return n;
}

/* --- CPU object code ------------------------------------------------------------- */

#define ENTRY_PREFIX "kjit_c_"
#define ENTRY_LEN (sizeof ENTRY_PREFIX - 1 + 16)
#define KEY_ENTRY "kjit_cache_entry"

/* Object code is reused only where it is ELF (Linux, the BSDs); elsewhere
   {cache = true} compiles as without a cache. */
#if defined(__has_include)
#if __has_include(<elf.h>)
#include <elf.h>
#define KCACHE_ELF 1
#endif
#endif

#ifdef KCACHE_ELF
#if defined(__x86_64__)
#define HOST_EM EM_X86_64
#elif defined(__aarch64__)
#define HOST_EM EM_AARCH64
#else
#define HOST_EM (-1)
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif

/* Renames the symbol `from` to `to` (same length) in an ELF64 relocatable
   object for this host, in place. Only the symbol string table changes;
   refuses (-1) anything that is not such an object, a name that is not
   exactly one symbol's, or a name whose bytes another symbol shares (a
   merged tail). */
static int elf_rename(unsigned char *obj, size_t len, const char *from,
                      const char *to) {
  Elf64_Ehdr eh;
  size_t nlen = strlen(from);
  if (strlen(to) != nlen || len < sizeof eh) return -1;
  memcpy(&eh, obj, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != HOST_ELFDATA || eh.e_type != ET_REL ||
      (int)eh.e_machine != HOST_EM || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff > len ||
      (len - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
    return -1;
  Elf64_Shdr symtab, strtab;
  int found = 0;
  for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
    memcpy(&symtab, obj + eh.e_shoff + i * sizeof symtab, sizeof symtab);
    found = symtab.sh_type == SHT_SYMTAB;
  }
  if (!found || symtab.sh_link >= eh.e_shnum ||
      symtab.sh_entsize != sizeof(Elf64_Sym) || symtab.sh_offset > len ||
      symtab.sh_size > len - symtab.sh_offset)
    return -1;
  memcpy(&strtab, obj + eh.e_shoff + symtab.sh_link * sizeof strtab,
         sizeof strtab);
  if (strtab.sh_type != SHT_STRTAB || strtab.sh_offset > len ||
      strtab.sh_size > len - strtab.sh_offset)
    return -1;
  const char *str = (const char *)obj + strtab.sh_offset;
  size_t strn = strtab.sh_size;
  size_t nsym = symtab.sh_size / sizeof(Elf64_Sym);
  /* the one symbol named `from` */
  uint64_t at = UINT64_MAX;
  for (size_t i = 0; i < nsym; i++) {
    Elf64_Sym s;
    memcpy(&s, obj + symtab.sh_offset + i * sizeof s, sizeof s);
    if (s.st_name + nlen < strn && memcmp(str + s.st_name, from, nlen + 1) == 0) {
      if (at != UINT64_MAX && at != s.st_name) return -1;
      at = s.st_name;
    }
  }
  if (at == UINT64_MAX) return -1;
  /* no other symbol's name may start inside it */
  for (size_t i = 0; i < nsym; i++) {
    Elf64_Sym s;
    memcpy(&s, obj + symtab.sh_offset + i * sizeof s, sizeof s);
    if (s.st_name > at && s.st_name <= at + nlen) return -1;
  }
  memcpy(obj + strtab.sh_offset + at, to, nlen);
  return 0;
}

/* The LLVM JIT resolves an object's undefined names in its one JITDylib
   (the registered symbols, then the process): it never asks the name hook
   (cpu.h kc_hooked_name), whose answers depend on the load (exported
   code's record layouts: host/export.c maps the exporting process's ids
   to this one's). So before the JIT takes an object, each undefined name
   the hook answers is renamed to one made from its address,
   "kjit.abs.<16 hex digits>", registered for the JIT with that address:
   the same address always gets the same name, so the registrations never
   clash, and they are few (one per layout cell, which lives as long as
   the process). The new names do not fit in place: the symbol string
   table is copied to the end of a new object with the names appended
   (section names, which may share that table, keep their offsets).
   Returns the new object (malloc'd, *outlen bytes), NULL with *outlen 0
   when no name needed binding, or NULL with *outlen 1 when the object
   cannot be rewritten (not one this host's JIT takes, or out of memory). */
static unsigned char *elf_bind_hooked(const unsigned char *obj, size_t len, size_t *outlen) {
  Elf64_Ehdr eh;
  *outlen = 1;
  if (len < sizeof eh) return NULL;
  memcpy(&eh, obj, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > len ||
      (len - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
    return NULL;
  Elf64_Shdr symtab, strtab;
  unsigned si = 0;
  int found = 0;
  for (; si < eh.e_shnum && !found; si++) {
    memcpy(&symtab, obj + eh.e_shoff + si * sizeof symtab, sizeof symtab);
    found = symtab.sh_type == SHT_SYMTAB;
  }
  if (!found || symtab.sh_link >= eh.e_shnum || symtab.sh_entsize != sizeof(Elf64_Sym) ||
      symtab.sh_offset > len || symtab.sh_size > len - symtab.sh_offset)
    return NULL;
  size_t stri = eh.e_shoff + symtab.sh_link * sizeof strtab;
  memcpy(&strtab, obj + stri, sizeof strtab);
  if (strtab.sh_type != SHT_STRTAB || strtab.sh_offset > len ||
      strtab.sh_size > len - strtab.sh_offset || strtab.sh_size == 0 ||
      obj[strtab.sh_offset + strtab.sh_size - 1] != 0)
    return NULL;
  const char *str = (const char *)obj + strtab.sh_offset;
  size_t nsym = symtab.sh_size / sizeof(Elf64_Sym), nbind = 0;
  for (size_t i = 1; i < nsym; i++) {   /* how many: the new table's size */
    Elf64_Sym s;
    memcpy(&s, obj + symtab.sh_offset + i * sizeof s, sizeof s);
    if (s.st_shndx == SHN_UNDEF && s.st_name != 0 && s.st_name < strtab.sh_size &&
        kc_hooked_name(str + s.st_name) != NULL)
      nbind++;
  }
  if (nbind == 0) {
    *outlen = 0;
    return NULL;
  }
  enum { BOUND = sizeof "kjit.abs." - 1 + 16 + 1 };
  size_t newstr = strtab.sh_size + nbind * BOUND, n = len + newstr;
  unsigned char *out = malloc(n);
  if (!out) return NULL;
  memcpy(out, obj, len);
  memcpy(out + len, str, strtab.sh_size);
  size_t at = strtab.sh_size;
  for (size_t i = 1; i < nsym && at < newstr; i++) {
    Elf64_Sym s;
    size_t so = symtab.sh_offset + i * sizeof s;
    memcpy(&s, obj + so, sizeof s);
    void *addr;
    if (s.st_shndx != SHN_UNDEF || s.st_name == 0 || s.st_name >= strtab.sh_size ||
        (addr = kc_hooked_name(str + s.st_name)) == NULL)
      continue;
    char *name = (char *)out + len + at;
    snprintf(name, BOUND, "kjit.abs.%016llx", (unsigned long long)(uintptr_t)addr);
    if (kc_register_symbol(name, addr) != 0) {
      free(out);
      return NULL;
    }
    s.st_name = (Elf64_Word)at;
    memcpy(out + so, &s, sizeof s);
    at += BOUND;
  }
  strtab.sh_offset = len;
  strtab.sh_size = newstr;
  memcpy(out + stri, &strtab, sizeof strtab);
  *outlen = n;
  return out;
}
#else
static int elf_rename(unsigned char *obj, size_t len, const char *from,
                      const char *to) {
  (void)obj, (void)len, (void)from, (void)to;
  return -1;
}
static unsigned char *elf_bind_hooked(const unsigned char *obj, size_t len, size_t *outlen) {
  (void)obj, (void)len;
  *outlen = 1;
  return NULL;
}
#endif

/* --- the host, without LLVM ------------------------------------------------------ */

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static char host_id[512];

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* The CPU's identification and feature words: vendor, family, model and
   stepping (leaf 1 eax), the feature flags of leaves 1, 7.0, 7.1, 0xd.1,
   0x14, 0x19, 0x80000001 and 0x80000008, and the state the OS enables
   (XCR0). LLVM chooses the host CPU name and features from these alone
   (sys::getHostCPUName, getHostCPUFeatures), so two hosts with equal words
   get the same code from the same LLVM. The APIC id (leaf 1 ebx bits
   24-31) differs from core to core and is left out. */
static void host_init(void) {
  unsigned a, b, c, d, max, maxext;
  char *p = host_id;
  size_t left = sizeof host_id;
#define HOST_PUT(...)                                   \
  do {                                                  \
    int k_ = snprintf(p, left, __VA_ARGS__);            \
    if (k_ > 0 && (size_t)k_ < left) { p += k_; left -= (size_t)k_; } \
  } while (0)
  __cpuid(0, max, b, c, d);
  char vendor[13];
  memcpy(vendor, &b, 4);
  memcpy(vendor + 4, &d, 4);
  memcpy(vendor + 8, &c, 4);
  vendor[12] = 0;
  HOST_PUT("x86_64 %s", vendor);
  unsigned ecx1 = 0;
  if (max >= 1) {
    __cpuid(1, a, b, c, d);
    ecx1 = c;
    HOST_PUT(" 1:%x,%x,%x,%x", a, b & 0x00ffffffu, c, d);
  }
  if (max >= 7) {
    unsigned sub;
    __cpuid_count(7, 0, sub, b, c, d);
    HOST_PUT(" 7.0:%x,%x,%x,%x", sub, b, c, d);
    if (sub >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      HOST_PUT(" 7.1:%x,%x,%x,%x", a, b, c, d);
    }
  }
  if (max >= 0xd) {
    __cpuid_count(0xd, 1, a, b, c, d);
    HOST_PUT(" d.1:%x", a);
  }
  if (max >= 0x14) {
    __cpuid_count(0x14, 0, a, b, c, d);
    HOST_PUT(" 14:%x,%x", b, c);
  }
  if (max >= 0x19) {
    __cpuid_count(0x19, 0, a, b, c, d);
    HOST_PUT(" 19:%x", b);
  }
  __cpuid(0x80000000, maxext, b, c, d);
  if (maxext >= 0x80000001) {
    __cpuid(0x80000001, a, b, c, d);
    HOST_PUT(" e1:%x,%x", c, d);
  }
  if (maxext >= 0x80000008) {
    __cpuid(0x80000008, a, b, c, d);
    HOST_PUT(" e8:%x", b);
  }
  if (ecx1 & (1u << 27)) {   /* OSXSAVE: xgetbv works */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    HOST_PUT(" xcr0:%x,%x", hi, lo);
  }
#undef HOST_PUT
}
#else
/* Elsewhere, LLVM's own description (which loads LLVM: a cache hit there
   still needs it). */
static void host_init(void) {
  snprintf(host_id, sizeof host_id, "llvm %s", kc_host_description());
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
int kcache_host_features(uint32_t w[KCACHE_NFEAT]) {
  unsigned a, b, c, d, max, maxext;
  memset(w, 0, KCACHE_NFEAT * sizeof *w);
  __cpuid(0, max, b, c, d);
  if (max >= 1) {
    __cpuid(1, a, b, c, d);
    w[0] = c & ~(1u << 31);   /* less "running under a hypervisor" */
    w[1] = d;
  }
  if (max >= 7) {
    unsigned sub;
    __cpuid_count(7, 0, sub, b, c, d);
    w[2] = b; w[3] = c; w[4] = d;
    if (sub >= 1) { __cpuid_count(7, 1, a, b, c, d); w[5] = a; }
  }
  if (max >= 0xd) { __cpuid_count(0xd, 1, a, b, c, d); w[6] = a; }
  __cpuid(0x80000000, maxext, b, c, d);
  if (maxext >= 0x80000001) { __cpuid(0x80000001, a, b, c, d); w[7] = c; w[8] = d; }
  if (w[0] & (1u << 27)) {   /* OSXSAVE: xgetbv works */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    w[9] = lo;
  }
  return 1;
}
#else
int kcache_host_features(uint32_t w[KCACHE_NFEAT]) {
  memset(w, 0, KCACHE_NFEAT * sizeof *w);
  return 0;
}
#endif

const char *kcache_host_id(void) {
  pthread_once(&host_once, host_init);
  return host_id;
}

/* Loads a CPU payload (u32 entry name length, the name, u32 cannot-fail
   fact, u32 extra length, the extra bytes, the ELF object): with objload.c
   when it takes the object, else with the LLVM JIT under a fresh entry
   name; the code keeps the fact (kc_code_set_noraise). */
static KCpuCode *cpu_load(unsigned char *blob, size_t len, void **addr,
                          void **extra, size_t *extralen) {
  uint32_t nl, noraise, xl;
  if (len < 12) return NULL;
  memcpy(&nl, blob, 4);
  if (nl != ENTRY_LEN || len - 12 <= nl) return NULL;
  char from[ENTRY_LEN + 1], to[ENTRY_LEN + 1];
  memcpy(from, blob + 4, nl);
  from[nl] = 0;
  if (strncmp(from, ENTRY_PREFIX, strlen(ENTRY_PREFIX)) != 0) return NULL;
  memcpy(&noraise, blob + 4 + nl, 4);
  if (noraise > 2) return NULL;
  memcpy(&xl, blob + 8 + nl, 4);
  size_t at = 12 + (size_t)nl;
  if (xl >= len - at) return NULL;
  unsigned char *x = blob + at;
  unsigned char *obj = x + xl;
  size_t objlen = len - at - xl;
  char *err = NULL;
  KCpuCode *c = kc_load_object_native(obj, objlen, from, addr, &err);
  free(err);
  if (!c) {
    /* objload.c refused it: the LLVM JIT (its names are process-wide) */
    snprintf(to, sizeof to, ENTRY_PREFIX "%016lx", kc_unique_id());
    if (elf_rename(obj, objlen, from, to) != 0) return NULL;
    size_t boundlen;   /* names only the hook knows, bound for the JIT */
    unsigned char *bound = elf_bind_hooked(obj, objlen, &boundlen);
    if (!bound && boundlen) return NULL;
    const char *names[1] = {to};
    c = kc_load_object(bound ? bound : obj, bound ? boundlen : objlen, names, 1, addr, &err);
    free(bound);
    free(err); /* an unloadable file is a miss, not an error */
  }
  if (!c) return NULL;
  kc_code_set_noraise(c, (int)noraise);
  *extra = malloc(xl ? xl : 1);
  if (!*extra) {
    kc_free(c);
    return NULL;
  }
  memcpy(*extra, x, xl);
  *extralen = xl;
  return c;
}

KCpuCode *kcache_cpu_load(const void *key, size_t keylen, void **addr,
                          void **extra, size_t *extralen) {
#ifdef KCACHE_ELF
  double t0 = k_now_ms();
  void *blob;
  size_t len;
  if (kcache_load("cpu", key, keylen, &blob, &len) != 0) return NULL;
  KCpuCode *c = cpu_load(blob, len, addr, extra, extralen);
  free(blob);
  pthread_mutex_lock(&stats_lock);
  if (c) {
    stats.load_ms += k_now_ms() - t0;
  } else { /* a valid file, unusable code */
    stats.hits--;
    stats.rejected++;
  }
  pthread_mutex_unlock(&stats_lock);
  return c;
#else
  (void)key, (void)keylen, (void)addr, (void)extra, (void)extralen;
  return NULL;
#endif
}

KCpuCode *kcache_cpu_payload_load(const void *payload, size_t len, void **addr,
                                  void **extra, size_t *extralen) {
#ifdef KCACHE_ELF
  /* a copy: the LLVM JIT's route renames the entry in place */
  unsigned char *blob = malloc(len ? len : 1);
  if (!blob) return NULL;
  memcpy(blob, payload, len);
  KCpuCode *c = cpu_load(blob, len, addr, extra, extralen);
  free(blob);
  return c;
#else
  (void)payload, (void)len, (void)addr, (void)extra, (void)extralen;
  return NULL;
#endif
}

KCpuCode *kcache_cpu_build(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M, int opt,
                           const char *entry, const void *extra, size_t extralen,
                           void **addr, void **payload, size_t *plen, char **err) {
  if (err) *err = NULL;
  *payload = NULL;
  *plen = 0;
  LLVMValueRef F = NULL;
#ifdef KCACHE_ELF
  if (M && entry) F = LLVMGetNamedFunction(M, entry);
#endif
  if (!F || extralen > UINT32_MAX) {   /* compile as without a cache */
    KCpuOptions o = {opt, 0, 0, NULL};
    const char *names[1] = {entry};
    return kc_compile(ctx, M, &o, names, 1, addr, NULL, NULL, err);
  }
  /* compiled under a fixed-width unique name, so that a load by the LLVM
     JIT can rename it in place */
  char name[ENTRY_LEN + 1];
  snprintf(name, sizeof name, ENTRY_PREFIX "%016lx", kc_unique_id());
  LLVMSetValueName2(F, name, ENTRY_LEN);
  const char *names[1] = {name};
  void *obj = NULL;
  size_t objlen = 0;
  KCpuCode *c =
      kc_compile_obj(ctx, M, opt, names, 1, addr, &obj, &objlen, err);
  if (c) {
    size_t n = 12 + ENTRY_LEN + extralen + objlen;
    unsigned char *p = malloc(n);
    if (p) {
      uint32_t nl = ENTRY_LEN, noraise = (uint32_t)kc_code_noraise(c), xl = (uint32_t)extralen;
      memcpy(p, &nl, 4);
      memcpy(p + 4, name, ENTRY_LEN);
      memcpy(p + 4 + ENTRY_LEN, &noraise, 4);
      memcpy(p + 8 + ENTRY_LEN, &xl, 4);
      if (extralen) memcpy(p + 12 + ENTRY_LEN, extra, extralen);
      memcpy(p + 12 + ENTRY_LEN + extralen, obj, objlen);
      *payload = p;
      *plen = n;
    }
  }
  free(obj);
  return c;
}

KCpuCode *kcache_cpu_compile(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M,
                             int opt, const char *entry, const void *key,
                             size_t keylen, const void *extra, size_t extralen,
                             void **addr, char **err) {
  if (!key) {   /* compile as without a cache */
    if (err) *err = NULL;
    KCpuOptions o = {opt, 0, 0, NULL};
    const char *names[1] = {entry};
    return kc_compile(ctx, M, &o, names, 1, addr, NULL, NULL, err);
  }
  void *p = NULL;
  size_t plen = 0;
  KCpuCode *c = kcache_cpu_build(ctx, M, opt, entry, extra, extralen, addr, &p, &plen, err);
  if (c && p) kcache_store("cpu", key, keylen, p, plen);
#ifdef KCACHE_ELF
  else if (c) count(&stats.failures);   /* no memory for the payload */
#endif
  free(p);
  return c;
}

/* --- Lua functions ---------------------------------------------------------------- */

/* kjit.cache_clear() -> number of files removed */
static int l_cache_clear(lua_State *L) {
  lua_pushinteger(L, kcache_clear());
  return 1;
}

/* kjit.cache_stats([reset]) -> { hits, misses, rejected, stores, failures,
   load_ms } */
static int l_cache_stats(lua_State *L) {
  KCacheStats s;
  kcache_stats(&s, lua_toboolean(L, 1));
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)s.hits);
  lua_setfield(L, -2, "hits");
  lua_pushinteger(L, (lua_Integer)s.misses);
  lua_setfield(L, -2, "misses");
  lua_pushinteger(L, (lua_Integer)s.rejected);
  lua_setfield(L, -2, "rejected");
  lua_pushinteger(L, (lua_Integer)s.stores);
  lua_setfield(L, -2, "stores");
  lua_pushinteger(L, (lua_Integer)s.failures);
  lua_setfield(L, -2, "failures");
  lua_pushnumber(L, s.load_ms);
  lua_setfield(L, -2, "load_ms");
  return 1;
}

/* kjit.cache_dir([dir]) -> the directory in use (after setting it; false
   goes back to the environment's) */
static int l_cache_dir(lua_State *L) {
  if (lua_type(L, 1) == LUA_TSTRING) {
    size_t n;
    const char *dir = lua_tolstring(L, 1, &n);
    if (n == 0) return luaL_argerror(L, 1, "the cache directory must not be empty");
    if (strlen(dir) != n)
      return luaL_argerror(L, 1, "the cache directory must not contain '\\0'");
    if (kcache_set_dir(dir)) return luaL_error(L, "not enough memory");
  } else if (lua_isboolean(L, 1) && !lua_toboolean(L, 1)) {
    kcache_set_dir(NULL);
  } else if (!lua_isnoneornil(L, 1)) {
    return luaL_typeerror(L, 1, "string or false");
  }
  char *d = kcache_dir();
  if (!d) {
    lua_pushnil(L);
    return 1;
  }
  /* copied to the stack first: lua_pushstring may raise (out of memory) */
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", d);
  free(d);
  lua_pushstring(L, buf);
  return 1;
}

void kcache_open(lua_State *L) {
  static const luaL_Reg fns[] = {{"cache_clear", l_cache_clear},
                                 {"cache_stats", l_cache_stats},
                                 {"cache_dir", l_cache_dir},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
