/*
** objload.h: kjit's own loader of the object code the disk cache keeps,
** so that a cache hit needs no LLVM (llvm_load.h).
**
** The cache stores what the CPU backend generated: an ELF64 relocatable
** object (kc_compile_obj, LLVM's JIT code model, which on x86-64 is the
** large one: calls and constants through 64-bit absolute addresses). Its
** linking is small: lay its allocated sections out in fresh memory,
** resolve the few undefined names (kjit's run-time functions, libm) and
** apply the relocations. This loader does exactly that for x86-64 and the
** relocation types such code uses (R_X86_64_64, PC32, PLT32, PC64, 32,
** 32S, GOTPCREL, GOTPCRELX, REX_GOTPCRELX), W^X (written, then made
** read+execute / read-only). Anything else (another CPU, a TLS section,
** constructors, a relocation it does not know, a name it cannot find, a
** 32-bit displacement out of range) is refused, and the caller loads the
** object with the LLVM JIT instead: correct, only slower.
**
** Unwind tables (.eh_frame) are not registered: kjit's generated code
** never unwinds (errors leave it by longjmp), as with the LLVM JIT here.
*/
#ifndef KJIT_OBJLOAD_H
#define KJIT_OBJLOAD_H

#include <stddef.h>

/* Loads obj (len bytes; not kept) and finds the function `entry` in it.
** resolve(name) gives the address of an undefined name (NULL: unknown).
** Returns the mapping (kol_free it) with *entry_addr set, or NULL with a
** reason in why. */
void *kol_load(const void *obj, size_t len, const char *entry,
               void *(*resolve)(const char *name), void **entry_addr,
               size_t *maplen, char *why, size_t whylen);

/* Unmaps what kol_load mapped. */
void kol_free(void *map, size_t maplen);

#endif
