/*
** backend/perfmap.c: JIT code made visible to `perf` (perfmap.h).
**
** With KJIT_PERF_MAP set (to anything but 0), every object kjit links for
** the CPU (compiled by LLVM, or loaded from the disk cache by LLVM or by
** kjit's own loader) appends one line per function to /tmp/perf-<pid>.map,
** the file `perf report` reads for code it cannot find in any mapped file:
**
**   <start, hex> <size, hex> <name>
**
** The names are the code generator's (kjit_f<function>_s<specialization>_
** <chunk>_<line>, and the entry kjit_entry_<n>), so a profile names the Lua
** function and its line.
**
** Where a function lies: both loaders lay out each section of the object
** as one block, so a function's address is the address the loader gives
** the entry minus the entry's offset in its section, plus the function's
** offset in the same section. Only functions in the entry's section are
** written (kjit's objects have one text section). The ELF symbol table is
** read here, bounds-checked: a malformed object writes nothing.
*/
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backend/perfmap.h"

static int perf_on = -1;
static pthread_mutex_t perf_lock = PTHREAD_MUTEX_INITIALIZER;

int kperf_enabled(void) {
  if (perf_on < 0) {   /* a benign race: every thread computes the same */
    const char *v = getenv("KJIT_PERF_MAP");
    perf_on = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
  }
  return perf_on;
}

/* The symbol table and its string table, or 0 if obj is not a well-formed
** 64-bit ELF relocatable object with one. */
static int find_symtab(const uint8_t *obj, size_t len, const Elf64_Sym **syms, size_t *nsyms,
                       const char **strs, size_t *strlen_) {
  if (len < sizeof(Elf64_Ehdr) || memcmp(obj, ELFMAG, SELFMAG) != 0 ||
      obj[EI_CLASS] != ELFCLASS64)
    return 0;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)obj;
  if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
      (size_t)eh->e_shnum > (len - eh->e_shoff) / sizeof(Elf64_Shdr))
    return 0;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(obj + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB) continue;
    if (sh[i].sh_link >= eh->e_shnum) return 0;
    const Elf64_Shdr *st = &sh[sh[i].sh_link];
    if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset ||
        st->sh_offset > len || st->sh_size > len - st->sh_offset || st->sh_size == 0)
      return 0;
    *syms = (const Elf64_Sym *)(obj + sh[i].sh_offset);
    *nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
    *strs = (const char *)(obj + st->sh_offset);
    *strlen_ = st->sh_size;
    return 1;
  }
  return 0;
}

static const char *symname(const char *strs, size_t n, uint32_t off) {
  if (off >= n || memchr(strs + off, '\0', n - off) == NULL) return NULL;
  return strs + off;
}

void kperf_object(const void *obj, size_t len, const char *entry, const void *entry_addr) {
  if (!kperf_enabled() || obj == NULL || entry == NULL || entry_addr == NULL) return;
  const Elf64_Sym *syms;
  const char *strs;
  size_t nsyms, nstrs;
  if (!find_symtab(obj, len, &syms, &nsyms, &strs, &nstrs)) return;
  const Elf64_Sym *e = NULL;
  for (size_t i = 0; i < nsyms && !e; i++) {
    const char *n = symname(strs, nstrs, syms[i].st_name);
    if (n && strcmp(n, entry) == 0 && syms[i].st_shndx != SHN_UNDEF) e = &syms[i];
  }
  if (e == NULL) return;
  uintptr_t base = (uintptr_t)entry_addr - (uintptr_t)e->st_value;
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
  pthread_mutex_lock(&perf_lock);
  FILE *f = fopen(path, "a");
  if (f != NULL) {
    for (size_t i = 0; i < nsyms; i++) {
      const Elf64_Sym *s = &syms[i];
      if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx != e->st_shndx || s->st_size == 0)
        continue;
      const char *n = symname(strs, nstrs, s->st_name);
      if (n == NULL || n[0] == '\0') continue;
      fprintf(f, "%lx %lx %s\n", (unsigned long)(base + (uintptr_t)s->st_value),
              (unsigned long)s->st_size, n);
    }
    fclose(f);
  }
  pthread_mutex_unlock(&perf_lock);
}
