/*
** kernel_link.h: cuda.jit's `link` option: external device code linked
** with the kernel (kernel_link.c says how and why).
*/
#ifndef KJIT_KERNEL_LINK_H
#define KJIT_KERNEL_LINK_H
#include <stddef.h>
#include "lua.h"
#include "host/cudadrv.h"

/* Reads option `link` of the options table at opts (a file name or a list
** of them): pushes the checked list (each a readable .ptx, .cu, .cubin,
** .fatbin, .o or .a file, the binary ones with their format's magic), or
** nil when absent; replaces the table at opts with a copy without `link`
** (for the option reader). Raises the Lua error naming the file. */
void klink_option(lua_State *L, int opts);

/* The linker input of each file of the list at index list (a .cu compiled
** by NVRTC for compute capability cc into PTX; the others' bytes as they
** are, with their CUjitInputType), malloc'd into *in. Returns their count
** (0: no list), or -1 with a malloc'd *err. */
int klink_sources(lua_State *L, int list, int cc, KCuLinkInput **in, char **err);
void klink_free(KCuLinkInput *in, int n);

/* 1 and the name when the PTX calls an external function other than the
** CUDA runtime's own (vprintf ...), else 0. */
int klink_first_extern(const char *ptx, char *name, size_t n);

#endif
