/*
** llvm_load.c: libLLVM loaded on first use (see llvm_load.h).
**
** The stubs and their table come from tools/llvm_stubs.lua (llvm_stubs.c
** in the build directory). An empty slot sends its stub to
** kjit_llvm_resolve (below), which saves the argument registers, calls
** kjit_llvm_bind (loads LLVM, fills every slot), restores them and
** jumps to the function. Slots are written once, before `loaded` is set;
** a stub reading a slot sees either 0 (and goes to the once-guarded
** loader) or the final address.
*/
#include "backend/llvm_load.h"

#ifdef KJIT_LLVM_DLOPEN
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const int kjit_llvm_nstubs;
extern void *kjit_llvm_slots[];
extern const char *const kjit_llvm_names[];

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_err[2 * PATH_MAX + 1024];   /* a path and a message (with a path) */

#ifdef KJIT_LLVM_BACKEND
/* The static build: kjit's own LLVM backend module (KJIT_LLVM_BACKEND,
** "kjit_llvm.so"), LLVM's static libraries cut down to what kjit calls
** (CMakeLists.txt). It is looked for next to the binary this code is in
** (kjit.so, libkjit.so, a test program), then at KJIT_LLVM_BACKEND_REL
** from there (an installed libkjit.so in lib/ finds the one installed
** beside kjit.so in lib/lua/5.4/), then by name (the loader's path).
** A shared object's directory: that of the path it was loaded by when
** absolute, else the loader's own record of it (its origin, made absolute
** when it was loaded: a later chdir does not move it). The main program
** (a C test linking kjit's objects) has neither, so /proc/self/exe's. */
static void own_dir(char *dir, size_t n) {
  Dl_info info;
  struct link_map *self = NULL;
  dir[0] = '\0';
  if (!dladdr1((void *)own_dir, &info, (void **)&self, RTLD_DL_LINKMAP) || !self) return;
  if (self->l_name && self->l_name[0] == '/') {
    snprintf(dir, n, "%s", self->l_name);
  } else if (self->l_name && self->l_name[0]) {
    if (dlinfo(self, RTLD_DI_ORIGIN, dir) != 0) dir[0] = '\0';
    return;
  } else {
    ssize_t len = readlink("/proc/self/exe", dir, n - 1);
    dir[len > 0 ? len : 0] = '\0';
  }
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else dir[0] = '\0';
}

static void *open_llvm(const char **why, char *first, size_t nfirst) {
  char dir[PATH_MAX];
  own_dir(dir, sizeof dir);
  const char *rel = KJIT_LLVM_BACKEND_REL;
  char cands[3][PATH_MAX + 256];
  int n = 0;
  if (dir[0]) {
    snprintf(cands[n++], sizeof cands[0], "%s/%s", dir, KJIT_LLVM_BACKEND);
    if (rel[0] == '/')
      snprintf(cands[n++], sizeof cands[0], "%s/%s", rel, KJIT_LLVM_BACKEND);
    else if (rel[0])
      snprintf(cands[n++], sizeof cands[0], "%s/%s/%s", dir, rel, KJIT_LLVM_BACKEND);
  }
  snprintf(cands[n++], sizeof cands[0], "%s", KJIT_LLVM_BACKEND);
  snprintf(first, nfirst, "%s", cands[0]);
  void *h = NULL;
  static char first_why[PATH_MAX + 256];   /* (under load's once) */
  snprintf(first_why, sizeof first_why, "?");
  *why = first_why;
  int i;
  for (i = 0; i < n && !h; i++) {
    h = dlopen(cands[i], RTLD_LAZY | RTLD_LOCAL);
    /* the first failure says most (a missing file there, or a broken one);
       dlerror's text is overwritten by the next failure */
    const char *e = h ? NULL : dlerror();
    if (i == 0 && e) snprintf(first_why, sizeof first_why, "%s", e);
  }
  if (!h) return NULL;
  /* a module of another LLVM (kjit.so and kjit_llvm.so of two installs):
     refused, and left loaded (unloading LLVM runs its destructors) */
  const char *(*version)(void) = (const char *(*)(void))dlsym(h, "kjit_llvm_backend_version");
  if (!version || strcmp(version(), KJIT_LLVM_VERSION) != 0) {
    size_t len = strlen(cands[i - 1]);   /* (the path it loaded) */
    if (len >= nfirst) len = nfirst - 1;
    memcpy(first, cands[i - 1], len);
    first[len] = '\0';
    *why = "it is not kjit's LLVM module for LLVM " KJIT_LLVM_VERSION;
    return NULL;
  }
  return h;
}
#else
/* The shared libLLVM the build linked against (KJIT_LIBLLVM, from
** llvm-config --libfiles), then its soname (the loader's search path). */
static void *open_llvm(const char **why, char *first, size_t nfirst) {
  static const char *const paths[] = {KJIT_LIBLLVM, KJIT_LIBLLVM_NAME};
  void *h = NULL;
  *why = "?";
  snprintf(first, nfirst, "%s", KJIT_LIBLLVM);
  for (size_t i = 0; i < sizeof paths / sizeof *paths && !h; i++) {
    h = dlopen(paths[i], RTLD_LAZY | RTLD_LOCAL);
    if (!h) *why = dlerror();
  }
  return h;
}
#endif

static void load(void) {
  char lib[PATH_MAX + 256];
  const char *why;
  void *h = open_llvm(&why, lib, sizeof lib);
  if (!h) {
    snprintf(load_err, sizeof load_err, "cannot load LLVM (%s): %s", lib, why);
    return;
  }
  for (int i = 0; i < kjit_llvm_nstubs; i++) {
    void *f = dlsym(h, kjit_llvm_names[i]);
    if (!f) {
      snprintf(load_err, sizeof load_err, "LLVM (%s) has no function %s", lib,
               kjit_llvm_names[i]);
      /* slots already filled stay valid: the library stays loaded */
      return;
    }
    __atomic_store_n(&kjit_llvm_slots[i], f, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
}

int kjit_llvm_load(const char **err) {
  pthread_once(&once, load);
  if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return 0;
  if (err) *err = load_err;
  return -1;
}

int kjit_llvm_loaded(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }

/* Called by kjit_llvm_resolve for stub i: the function's address. */
__attribute__((visibility("hidden"))) void *kjit_llvm_bind(int i);
void *kjit_llvm_bind(int i) {
  const char *err = NULL;
  if (kjit_llvm_load(&err) != 0 || !kjit_llvm_slots[i]) {
    /* an LLVM call before kjit_llvm_load was checked: nothing to return to */
    fprintf(stderr, "kjit: %s\n", err ? err : "cannot load LLVM");
    abort();
  }
  return kjit_llvm_slots[i];
}

/* The stub's arguments are in rdi, rsi, rdx, rcx, r8, r9, xmm0-7 (and al
   for a variadic call); r11 holds its slot index. On entry rsp is 8 mod
   16 (the stub was called, then jumped): push rbp makes it 16-aligned,
   and 8 * 8 + 8 * 16 = 192 bytes of saves keep it so for the call. */
__asm__(
  ".text\n"
  ".globl kjit_llvm_resolve\n.hidden kjit_llvm_resolve\n"
  ".type kjit_llvm_resolve,@function\n.p2align 4\n"
  "kjit_llvm_resolve:\n"
  "  pushq %rbp\n  movq %rsp, %rbp\n  subq $192, %rsp\n"
  "  movq %rdi, 0(%rsp)\n  movq %rsi, 8(%rsp)\n  movq %rdx, 16(%rsp)\n"
  "  movq %rcx, 24(%rsp)\n  movq %r8, 32(%rsp)\n  movq %r9, 40(%rsp)\n"
  "  movq %rax, 48(%rsp)\n"
  "  movdqu %xmm0, 64(%rsp)\n  movdqu %xmm1, 80(%rsp)\n  movdqu %xmm2, 96(%rsp)\n"
  "  movdqu %xmm3, 112(%rsp)\n  movdqu %xmm4, 128(%rsp)\n  movdqu %xmm5, 144(%rsp)\n"
  "  movdqu %xmm6, 160(%rsp)\n  movdqu %xmm7, 176(%rsp)\n"
  "  movl %r11d, %edi\n  call kjit_llvm_bind\n  movq %rax, %r11\n"
  "  movq 0(%rsp), %rdi\n  movq 8(%rsp), %rsi\n  movq 16(%rsp), %rdx\n"
  "  movq 24(%rsp), %rcx\n  movq 32(%rsp), %r8\n  movq 40(%rsp), %r9\n"
  "  movq 48(%rsp), %rax\n"
  "  movdqu 64(%rsp), %xmm0\n  movdqu 80(%rsp), %xmm1\n  movdqu 96(%rsp), %xmm2\n"
  "  movdqu 112(%rsp), %xmm3\n  movdqu 128(%rsp), %xmm4\n  movdqu 144(%rsp), %xmm5\n"
  "  movdqu 160(%rsp), %xmm6\n  movdqu 176(%rsp), %xmm7\n"
  "  leave\n  jmp *%r11\n"
  ".size kjit_llvm_resolve, .-kjit_llvm_resolve\n"
);

#else /* libLLVM is linked */

int kjit_llvm_load(const char **err) {
  (void)err;
  return 0;
}

int kjit_llvm_loaded(void) { return 1; }

#endif
