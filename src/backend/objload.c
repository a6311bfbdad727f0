/*
** objload.c: kjit's loader of cached ELF objects (see objload.h).
**
** Layout of one load, one mapping, three page-aligned parts:
**   [executable sections][read-only sections, GOT][writable sections]
** written while read+write, then mprotect'ed to r-x, r-- and rw-.
*/
#include "backend/objload.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__has_include)
#if __has_include(<elf.h>)
#define KOL_X86_64 1
#endif
#endif

#ifdef KOL_X86_64
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef R_X86_64_GOTPCRELX
#define R_X86_64_GOTPCRELX 41
#endif
#ifndef R_X86_64_REX_GOTPCRELX
#define R_X86_64_REX_GOTPCRELX 42
#endif
#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND 0x70000001
#endif

static void *refuse(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return NULL;
}

/* The parts a section goes into. */
enum { PART_X, PART_R, PART_W, NPARTS, PART_NONE = -1 };

static int part_of(const Elf64_Shdr *s) {
  if (!(s->sh_flags & SHF_ALLOC) || s->sh_type == SHT_X86_64_UNWIND) return PART_NONE;
  if (s->sh_flags & SHF_EXECINSTR) return PART_X;
  return (s->sh_flags & SHF_WRITE) ? PART_W : PART_R;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

void *kol_load(const void *obj, size_t len, const char *entry,
               void *(*resolve)(const char *name), void **entry_addr,
               size_t *maplen, char *why, size_t whylen) {
  const unsigned char *o = obj;
  Elf64_Ehdr eh;
  if (len < sizeof eh) return refuse(why, whylen, "too short for ELF");
  memcpy(&eh, o, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_REL || eh.e_machine != EM_X86_64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096 ||
      eh.e_shoff > len || (len - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
    return refuse(why, whylen, "not an x86-64 ELF relocatable object");
  unsigned nsh = eh.e_shnum;
  Elf64_Shdr *sh = malloc(nsh * sizeof *sh);
  uint64_t *off = calloc(nsh, sizeof *off);      /* each section's offset in the mapping */
  if (!sh || !off) { free(sh); free(off); return refuse(why, whylen, "out of memory"); }
  memcpy(sh, o + eh.e_shoff, nsh * sizeof *sh);
  unsigned char *map = NULL;
  size_t total = 0;
  const char *fail = NULL;
  char failbuf[160];
  int symtab = -1;

  /* sections: checked, and placed part by part */
  uint64_t size[NPARTS] = {0, 0, 0};
  for (unsigned i = 0; i < nsh && !fail; i++) {
    const Elf64_Shdr *s = &sh[i];
    if (s->sh_type != SHT_NOBITS && s->sh_type != SHT_NULL &&
        (s->sh_offset > len || s->sh_size > len - s->sh_offset))
      fail = "a section outside the file";
    else if (s->sh_type == SHT_SYMTAB) symtab = symtab < 0 ? (int)i : -2;
    else if (s->sh_type == SHT_REL) fail = "REL relocations";
    if (fail || part_of(s) == PART_NONE) continue;
    if (s->sh_flags & SHF_TLS) fail = "thread-local storage";
    else if (s->sh_type != SHT_PROGBITS && s->sh_type != SHT_NOBITS)
      fail = "an allocated section of an unknown type (constructors?)";
    else if (s->sh_addralign > 4096 || (s->sh_addralign & (s->sh_addralign - 1)))
      fail = "a section alignment";
    else {
      int p = part_of(s);
      uint64_t a = s->sh_addralign ? s->sh_addralign : 1;
      off[i] = align_up(size[p], a);
      size[p] = off[i] + s->sh_size;
      if (size[p] > ((uint64_t)1 << 30)) fail = "sections too large";
    }
  }
  if (!fail && symtab < 0) fail = symtab == -1 ? "no symbol table" : "two symbol tables";
  const Elf64_Shdr *st = fail ? NULL : &sh[symtab];
  const Elf64_Sym *syms = NULL;
  const char *str = NULL;
  size_t nsym = 0, strn = 0;
  if (!fail) {
    if (st->sh_entsize != sizeof(Elf64_Sym) || st->sh_link >= nsh ||
        sh[st->sh_link].sh_type != SHT_STRTAB)
      fail = "a malformed symbol table";
    else {
      syms = (const Elf64_Sym *)(o + st->sh_offset);   /* read with memcpy: any alignment */
      nsym = st->sh_size / sizeof(Elf64_Sym);
      str = (const char *)o + sh[st->sh_link].sh_offset;
      strn = sh[st->sh_link].sh_size;
      if (strn == 0 || str[strn - 1] != 0) fail = "a malformed string table";
    }
  }
  /* GOT slots: one per GOT-relative relocation */
  size_t ngot = 0;
  for (unsigned i = 0; i < nsh && !fail; i++) {
    if (sh[i].sh_type != SHT_RELA || sh[i].sh_info >= nsh || part_of(&sh[sh[i].sh_info]) == PART_NONE)
      continue;
    if (sh[i].sh_link != (unsigned)symtab || sh[i].sh_entsize != sizeof(Elf64_Rela)) {
      fail = "a relocation section for another symbol table";
      break;
    }
    size_t nr = sh[i].sh_size / sizeof(Elf64_Rela);
    for (size_t r = 0; r < nr; r++) {
      Elf64_Rela rel;
      memcpy(&rel, o + sh[i].sh_offset + r * sizeof rel, sizeof rel);
      unsigned t = ELF64_R_TYPE(rel.r_info);
      if (t == R_X86_64_GOTPCREL || t == R_X86_64_GOTPCRELX || t == R_X86_64_REX_GOTPCRELX) ngot++;
    }
  }
  uint64_t gotoff = align_up(size[PART_R], 8);
  if (ngot) size[PART_R] = gotoff + 8 * ngot;

  /* the mapping */
  long pg = sysconf(_SC_PAGESIZE);
  uint64_t page = pg > 0 ? (uint64_t)pg : 4096;
  uint64_t base[NPARTS];
  if (!fail) {
    uint64_t at = 0;
    for (int p = 0; p < NPARTS; p++) {
      base[p] = at;
      at += align_up(size[p], page);
    }
    total = at ? (size_t)at : (size_t)page;
    map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) { map = NULL; fail = "mmap failed"; }
  }
  for (unsigned i = 0; i < nsh && !fail; i++) {
    int p = part_of(&sh[i]);
    if (p == PART_NONE) continue;
    off[i] += base[p];
    if (sh[i].sh_type == SHT_PROGBITS) memcpy(map + off[i], o + sh[i].sh_offset, sh[i].sh_size);
  }

  /* relocations */
  size_t got = 0;
  for (unsigned i = 0; i < nsh && !fail; i++) {
    if (sh[i].sh_type != SHT_RELA || sh[i].sh_info >= nsh || part_of(&sh[sh[i].sh_info]) == PART_NONE)
      continue;
    const Elf64_Shdr *target = &sh[sh[i].sh_info];
    size_t nr = sh[i].sh_size / sizeof(Elf64_Rela);
    for (size_t r = 0; r < nr && !fail; r++) {
      Elf64_Rela rel;
      memcpy(&rel, o + sh[i].sh_offset + r * sizeof rel, sizeof rel);
      unsigned t = ELF64_R_TYPE(rel.r_info);
      size_t si = ELF64_R_SYM(rel.r_info);
      if (t == R_X86_64_NONE) continue;
      if (si >= nsym) { fail = "a relocation's symbol"; break; }
      Elf64_Sym sym;
      memcpy(&sym, (const unsigned char *)syms + si * sizeof sym, sizeof sym);
      uint64_t S;
      if (sym.st_shndx == SHN_UNDEF) {
        if (sym.st_name >= strn) { fail = "a symbol name"; break; }
        void *a = resolve(str + sym.st_name);
        if (!a) {
          snprintf(failbuf, sizeof failbuf, "unknown name %.100s", str + sym.st_name);
          fail = failbuf;
          break;
        }
        S = (uint64_t)(uintptr_t)a;
      } else if (sym.st_shndx == SHN_ABS) {
        S = sym.st_value;
      } else if (sym.st_shndx < nsh && part_of(&sh[sym.st_shndx]) != PART_NONE) {
        S = (uint64_t)(uintptr_t)map + off[sym.st_shndx] + sym.st_value;
      } else {
        fail = "a symbol in a section that is not loaded (common, or unwind tables)";
        break;
      }
      size_t width = t == R_X86_64_64 || t == R_X86_64_PC64 ? 8 : 4;
      if (rel.r_offset > target->sh_size || target->sh_size - rel.r_offset < width) {
        fail = "a relocation outside its section";
        break;
      }
      unsigned char *P = map + off[sh[i].sh_info] + rel.r_offset;
      uint64_t Pa = (uint64_t)(uintptr_t)P;
      int64_t A = rel.r_addend;
      uint64_t v64;
      int64_t sv;
      switch (t) {
      case R_X86_64_64: v64 = S + (uint64_t)A; memcpy(P, &v64, 8); break;
      case R_X86_64_PC64: v64 = S + (uint64_t)A - Pa; memcpy(P, &v64, 8); break;
      case R_X86_64_PC32: case R_X86_64_PLT32:
        sv = (int64_t)(S + (uint64_t)A - Pa);
        goto put32s;
      case R_X86_64_32S:
        sv = (int64_t)(S + (uint64_t)A);
        goto put32s;
      case R_X86_64_32: {
        uint64_t u = S + (uint64_t)A;
        if (u > UINT32_MAX) { fail = "a 32-bit address out of range"; break; }
        uint32_t v = (uint32_t)u;
        memcpy(P, &v, 4);
        break;
      }
      case R_X86_64_GOTPCREL: case R_X86_64_GOTPCRELX: case R_X86_64_REX_GOTPCRELX: {
        uint64_t slot = (uint64_t)(uintptr_t)map + base[PART_R] + gotoff + 8 * got++;
        memcpy((void *)(uintptr_t)slot, &S, 8);
        sv = (int64_t)(slot + (uint64_t)A - Pa);
        goto put32s;
      }
      default:
        snprintf(failbuf, sizeof failbuf, "relocation type %u", t);
        fail = failbuf;
        break;
      }
      continue;
    put32s:
      if (sv < INT32_MIN || sv > INT32_MAX) { fail = "a 32-bit displacement out of range"; break; }
      int32_t v = (int32_t)sv;
      memcpy(P, &v, 4);
    }
  }

  /* the entry */
  void *addr = NULL;
  for (size_t i = 0; i < nsym && !fail && !addr; i++) {
    Elf64_Sym sym;
    memcpy(&sym, (const unsigned char *)syms + i * sizeof sym, sizeof sym);
    if (sym.st_name < strn && strcmp(str + sym.st_name, entry) == 0 &&
        ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx < nsh &&
        part_of(&sh[sym.st_shndx]) == PART_X)
      addr = map + off[sym.st_shndx] + sym.st_value;
  }
  if (!fail && !addr) fail = "no entry function";

  /* W^X: nothing is executable before it is read-only */
  if (!fail) {
    int prot[NPARTS] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
    for (int p = 0; p < NPARTS && !fail; p++) {
      size_t n = (size_t)align_up(size[p], page);
      if (n && mprotect(map + base[p], n, prot[p]) != 0) fail = "mprotect failed";
    }
  }
  free(sh);
  free(off);
  if (fail) {
    if (map) munmap(map, total);
    return refuse(why, whylen, "%s", fail);
  }
  *entry_addr = addr;
  *maplen = total;
  return map;
}

void kol_free(void *map, size_t maplen) {
  if (map) munmap(map, maplen);
}

#else /* not x86-64 Linux: every object goes to the LLVM JIT */

void *kol_load(const void *obj, size_t len, const char *entry,
               void *(*resolve)(const char *name), void **entry_addr,
               size_t *maplen, char *why, size_t whylen) {
  (void)obj, (void)len, (void)entry, (void)resolve, (void)entry_addr, (void)maplen;
  snprintf(why, whylen, "kjit's object loader is for x86-64 Linux only");
  return NULL;
}

void kol_free(void *map, size_t maplen) {
  (void)map, (void)maplen;
}

#endif
