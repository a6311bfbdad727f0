/*
** nvrtc.h: CUDA C++ source to PTX with NVRTC, loaded at run time (dlopen
** through libfind.c, like libNVVM), for cuda.jit's `link = {"file.cu"}`.
*/
#ifndef KJIT_NVRTC_H
#define KJIT_NVRTC_H

#include <stddef.h>

/* Compiles the CUDA C++ text src (its file name `name`, for messages and
** #include "..." next to it) to relocatable PTX for compute capability cc
** (e.g. 80): -rdc=true, so that its extern "C" __device__ functions stay
** in the PTX for the linker. Returns malloc'd PTX, or NULL with a malloc'd
** message in *err: NVRTC missing ("NVRTC not found (libnvrtc.so.13; set
** KJIT_NVRTC or CUDA_HOME, or install the CUDA toolkit: ...)") or its
** compile log. */
char *knr_compile(const char *src, const char *name, int cc, char **err);

#endif
