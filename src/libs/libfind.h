/*
** libfind.h: find and dlopen a library kjit loads at run time: a CUDA
** library (libNVVM, cuBLAS, cuFFT, cuRAND...) or a host one (OpenBLAS,
** FFTW: a file found when kjit was built).
**
** One search for every library kjit loads at run time, in this order:
**   1. the environment variable (e.g. KJIT_CUBLAS=/path/libcublas.so.13):
**      when set, only that file is tried, and failing to load it is the
**      error (dlerror's text), so a test or a user can force one library;
**   2. the loader path (LD_LIBRARY_PATH, ldconfig's cache, RUNPATH), each
**      soname in turn;
**   3. a host library: the file found when kjit was built (spec->built),
**      and nothing else;
**   4. a CUDA library: $CUDA_HOME, then /usr/local/cuda, each with the given
**      subfolders (default: lib64, lib, targets/x86_64-linux/lib);
**   5. a CUDA library: pip's wheels: <site-packages>/nvidia/<any>/lib/<soname>
**      under $VIRTUAL_ENV, ~/.local and the system's Python folders.
** Libraries are opened RTLD_NOW | RTLD_LOCAL. Thread-safe (no state); the
** caller keeps the handle (typically loaded once under pthread_once).
*/
#ifndef KJIT_LIBFIND_H
#define KJIT_LIBFIND_H

#include <stddef.h>

typedef struct kl_spec {
  const char *what;              /* for messages: "cuBLAS", "libNVVM" */
  const char *env;               /* "KJIT_CUBLAS"; NULL: no variable */
  const char *const *sonames;    /* NULL-terminated: "libcublas.so.13", "libcublas.so" */
  const char *const *subdirs;    /* NULL-terminated, under the CUDA trees; NULL: the default */
  const char *built;             /* a host library: its file found at build time (cmake);
                                    NULL: a CUDA library */
  const char *install;           /* a host library not found: what to do ("install it
                                    (e.g. apt-get install libopenblas0)") */
} kl_spec;

/* The handle, or NULL with a message in why ("cuBLAS not found (libcublas.so.13;
** set KJIT_CUBLAS or CUDA_HOME)" or "KJIT_CUBLAS=...: <dlerror>"). path (may be
** NULL) receives the file that was opened as asked (a soname when found on the
** loader path). */
void *kl_open(const kl_spec *spec, char *path, size_t path_size, char *why, size_t why_size);

/* The CUDA trees searched, in order: i = 0 $CUDA_HOME (NULL when unset),
** 1 /usr/local/cuda, then NULL. For files other than libraries (libdevice). */
const char *kl_cuda_home(int i);

#endif
