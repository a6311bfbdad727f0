/*
** cache.h: the on-disk cache of compiled code (kjit.jit(fn, {cache = true})).
**
** Two layers:
**   - a blob store: an opaque payload saved under a key (any bytes), one
**     file per key, for any backend (CPU object code here; PTX for
**     kjit.cuda later);
**   - the CPU use of it: kcache_cpu_load (object code by key, loaded
**     without LLVM where possible) and kcache_cpu_compile (kc_compile
**     that also saves the object code under the key).
**
** Directory: kcache_set_dir's, else $KJIT_CACHE_DIR, else
** $XDG_CACHE_HOME/kjit, else $HOME/.cache/kjit (created on first store).
** File: "<kind>-<16 hex digits of the key hash>.kjc", holding a header
** (magic, format version, kind, key hash, lengths, checksum), the full key
** and the payload. A reader compares the full key, not only its hash, and
** checks sizes and the checksum: a truncated, corrupt or foreign file is a
** miss (and is overwritten by the next store). Writers write a temporary
** file in the same directory and rename it over the final name, so
** concurrent writers and readers never see a partial file. No fsync: a
** crash may leave a truncated file, which is then a miss.
**
** Failures (unwritable directory, disk full) are silent: the caller
** compiles as if there were no cache. kcache_stats counts them.
**
** The cache directory is trusted, like any directory of shared libraries:
** a file crafted to pass the checks (correct key and checksum) is loaded.
**
** Threads: every function may be called from any thread.
*/
#ifndef KJIT_CACHE_H
#define KJIT_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "lua.h"
#include "backend/cpu.h"

/* Bumped whenever the file layout or a payload layout changes. */
#define KCACHE_FORMAT 3   /* 3: the CPU payload carries the cannot-fail fact */

/* ---- blob store ---------------------------------------------------------- */

/* Text identifying this build of kjit for keys: cache format, kjit and
   LLVM versions, and the size and mtime of the library holding kjit (so a
   rebuilt kjit never loads code from an older one). Static storage. Every
   key should start with it. */
const char *kcache_build_id(void);

/* The cache directory in use (malloc'd; NULL if none can be found, e.g.
   no $HOME). */
char *kcache_dir(void);

/* Sets the directory (copied) for this process, overriding the
   environment; NULL goes back to the environment. Returns 0 or -1 (out of
   memory). */
int kcache_set_dir(const char *dir);

/* Looks up key (keylen bytes) for payload kind `kind` (1..8 characters
   of [a-z0-9], e.g. "cpu", "ptx"). On a hit returns 0 with *blob set to a
   malloc'd copy of the payload (free()) and *len its size; on a miss or an
   invalid file returns -1. */
int kcache_load(const char *kind, const void *key, size_t keylen, void **blob,
                size_t *len);

/* Saves the payload under key (atomically replacing any older file).
   Returns 0, or -1 when the file could not be written (nothing is left
   behind). */
int kcache_store(const char *kind, const void *key, size_t keylen,
                 const void *blob, size_t len);

/* Removes every kjit cache file (and leftover temporary file) from the
   cache directory; other files are left alone. Returns the number of
   files removed. */
int kcache_clear(void);

typedef struct KCacheStats {
  unsigned long hits;      /* valid file found and used */
  unsigned long misses;    /* no file for the key */
  unsigned long rejected;  /* a file was there but invalid (corrupt, foreign,
                              other key with the same hash, unloadable) */
  unsigned long stores;    /* files written */
  unsigned long failures;  /* files that could not be written */
  double load_ms;          /* total time of the hits, from the start of the
                              look-up to the code being ready */
} KCacheStats;

/* Counters since the process started (or the last reset). */
void kcache_stats(KCacheStats *s, int reset);

/* ---- CPU object code ------------------------------------------------------ */

/* The host's CPU for keys: on x86-64 its cpuid identification and
   feature words (what LLVM picks the CPU name and features from), without
   LLVM; elsewhere LLVM's host description (which loads LLVM). Static. */
const char *kcache_host_id(void);

/* The host CPU's feature words, for code shipped to other hosts
   (export.c): on x86-64 cpuid leaf 1 ecx (less the hypervisor bit) and edx,
   leaf 7.0 ebx, ecx, edx, 7.1 eax, 0xd.1 eax, 0x80000001 ecx and edx, and
   XCR0's low word; code compiled on a host runs on another whose words
   hold every bit of its own. Returns 1, or 0 (all zero) where there is no
   such test: there the whole kcache_host_id must match. */
#define KCACHE_NFEAT 10
int kcache_host_features(uint32_t w[KCACHE_NFEAT]);

/* Looks key up for CPU code. On a hit returns the code (loaded by kjit's
   own loader, objload.h, or failing that by the LLVM JIT), with *addr its
   entry and *extra a malloc'd copy of the bytes stored with it (*extralen
   bytes); otherwise NULL (a miss, or an unusable file: counted rejected). */
KCpuCode *kcache_cpu_load(const void *key, size_t keylen, void **addr,
                          void **extra, size_t *extralen);

/* kc_compile for a module with one entry point named `entry`, which also
   stores the object code under key, with extra (the caller's bytes, given
   back by kcache_cpu_load). Takes ownership of ctx and M in all cases;
   *addr receives the entry address; errors as kc_compile. */
KCpuCode *kcache_cpu_compile(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M,
                             int opt, const char *entry, const void *key,
                             size_t keylen, const void *extra, size_t extralen,
                             void **addr, char **err);

/* The CPU payload without the store (kjit's exported code, export.c):
   kcache_cpu_compile's compile, which gives the payload (malloc'd, *plen
   bytes: entry name, extra bytes, ELF object) in *payload instead of
   saving it (NULL when it could not be made: no ELF, no memory; the code
   is still returned). */
KCpuCode *kcache_cpu_build(LLVMOrcThreadSafeContextRef ctx, LLVMModuleRef M, int opt,
                           const char *entry, const void *extra, size_t extralen,
                           void **addr, void **payload, size_t *plen, char **err);

/* Loads such a payload (not kept) as kcache_cpu_load loads a cache file's:
   the code, *addr its entry, *extra a malloc'd copy of the extra bytes; or
   NULL when it cannot be loaded. */
KCpuCode *kcache_cpu_payload_load(const void *payload, size_t len, void **addr,
                                  void **extra, size_t *extralen);

/* Registers kjit.cache_clear, kjit.cache_stats and kjit.cache_dir into the
   module table at the top of the stack. */
void kcache_open(lua_State *L);

#endif
