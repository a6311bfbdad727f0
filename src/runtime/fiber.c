/*
** fiber.c: user-level threads for the compiled CUDA simulator (fiber.h).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "runtime/fiber.h"

#if defined(__SANITIZE_ADDRESS__)
#define KFIB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KFIB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define KFIB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KFIB_TSAN 1
#endif
#endif

#ifdef KFIB_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef KFIB_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* ---- Stacks ------------------------------------------------------------------ */

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

char *kfib_stacks(size_t n, size_t each) {
  size_t pg = page_size(), slot = each + pg;
  if (n == 0 || slot / pg * pg != slot || n > SIZE_MAX / slot) return NULL;
  char *m = mmap(NULL, n * slot, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  for (size_t i = 0; i < n; i++)
    if (mprotect(m + i * slot, pg, PROT_NONE) != 0) {
      munmap(m, n * slot);
      return NULL;
    }
  return m;
}

void kfib_stacks_free(char *stacks, size_t n, size_t each) {
  if (stacks == NULL) return;
#ifdef KFIB_ASAN
  /* the redzones instrumented frames left on these stacks stay in ASan's
  ** shadow after munmap: a library mapped here later (libNVVM's data)
  ** would read as poisoned stack */
  __asan_unpoison_memory_region(stacks, n * (each + page_size()));
#endif
  munmap(stacks, n * (each + page_size()));
}

char *kfib_stack_of(char *stacks, size_t i, size_t each) {
  size_t pg = page_size();
  return stacks + i * (each + pg) + pg;
}

/* ---- Sanitizers ------------------------------------------------------------- */

/* the context being left, for the arriving side's sanitizer bookkeeping */
static _Thread_local KFiber *tls_from;

static void arrived(void *fake) {
#ifdef KFIB_ASAN
  const void *lo = NULL;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake, &lo, &size);
  /* the bounds of the stack we came from: how a fiber returns to a
  ** context it did not create (the scheduler's OS-thread stack) */
  if (tls_from && tls_from->lo == NULL) { tls_from->alo = lo; tls_from->asize = size; }
#else
  (void)fake;
#endif
}

static void leaving(KFiber *from, KFiber *to, void **fake) {
  tls_from = from;
#ifdef KFIB_ASAN
  __sanitizer_start_switch_fiber(from->dying ? NULL : fake,
                                 to->lo ? to->lo : to->alo, to->lo ? to->size : to->asize);
#else
  (void)fake;
#endif
#ifdef KFIB_TSAN
  __tsan_switch_to_fiber(to->tsan, 0);
#endif
  (void)to;
}

/* Every fiber starts here, on its own stack. */
void kjit_fib_run(KFiber *f);
void kjit_fib_run(KFiber *f) {
  arrived(NULL);
  f->fn(f->arg);
  abort();   /* fn switched away for good: never here */
}

void kfib_self(KFiber *f) {
  memset(f, 0, sizeof *f);
#ifdef KFIB_TSAN
  f->tsan = __tsan_get_current_fiber();
#endif
}

void kfib_done(KFiber *f) {
#ifdef KFIB_TSAN
  if (f->tsan) __tsan_destroy_fiber(f->tsan);
#endif
  f->tsan = NULL;
}

#ifdef KFIB_ASM
/* kjit_fib_swap(&from->sp, to->sp): pushes the callee-saved registers and
** the floating-point control words, saves the stack pointer, loads the
** other's, pops its registers and returns into it. A fresh fiber's stack
** (kfib_start) is laid out as if it had called kjit_fib_swap from
** kjit_fib_entry, which calls kjit_fib_run(r12 = the fiber). */
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl kjit_fib_swap\n"
    ".hidden kjit_fib_swap\n"
    ".type kjit_fib_swap,@function\n"
    "kjit_fib_swap:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $8, %rsp\n"
    "  stmxcsr (%rsp)\n"
    "  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size kjit_fib_swap, .-kjit_fib_swap\n"
    ".p2align 4\n"
    ".globl kjit_fib_entry\n"
    ".hidden kjit_fib_entry\n"
    ".type kjit_fib_entry,@function\n"
    "kjit_fib_entry:\n"
    "  movq %r12, %rdi\n"
    "  call kjit_fib_run\n"
    "  ud2\n"
    ".size kjit_fib_entry, .-kjit_fib_entry\n");
void kjit_fib_swap(void **save, void *load);
void kjit_fib_entry(void);

void kfib_start(KFiber *f, char *lo, size_t size, void (*fn)(void *), void *arg) {
  f->fn = fn;
  f->arg = arg;
  f->lo = lo;
  f->size = size;
  f->dying = 0;
  /* t: 16-aligned; kjit_fib_entry is entered by ret with rsp = t, so its
  ** call of kjit_fib_run sees the ABI's alignment */
  uintptr_t t = ((uintptr_t)(lo + size) & ~(uintptr_t)15) - 16;
  uint64_t *s = (uint64_t *)t;
  s[-1] = (uint64_t)(uintptr_t)kjit_fib_entry;   /* popped by ret */
  s[-2] = 0;                                      /* rbp */
  s[-3] = 0;                                      /* rbx */
  s[-4] = (uint64_t)(uintptr_t)f;                 /* r12: the fiber */
  s[-5] = s[-6] = s[-7] = 0;                      /* r13 r14 r15 */
  uint32_t mxcsr;
  uint16_t fpcw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpcw));
  uint32_t *cw = (uint32_t *)&s[-8];
  cw[0] = mxcsr;
  cw[1] = fpcw;
  f->sp = &s[-8];
#ifdef KFIB_TSAN
  f->tsan = __tsan_create_fiber(0);
#endif
}

void kfib_switch(KFiber *from, KFiber *to) {
  void *fake = NULL;
  leaving(from, to, &fake);
  kjit_fib_swap(&from->sp, to->sp);
  arrived(fake);
}

#else   /* ucontext */

static _Thread_local KFiber *tls_to;   /* the fiber being switched to */

static void uc_entry(void) { kjit_fib_run(tls_to); }

void kfib_start(KFiber *f, char *lo, size_t size, void (*fn)(void *), void *arg) {
  f->fn = fn;
  f->arg = arg;
  f->lo = lo;
  f->size = size;
  f->dying = 0;
  getcontext(&f->uc);
  f->uc.uc_stack.ss_sp = lo;
  f->uc.uc_stack.ss_size = size;
  f->uc.uc_link = NULL;
  makecontext(&f->uc, uc_entry, 0);
#ifdef KFIB_TSAN
  f->tsan = __tsan_create_fiber(0);
#endif
}

void kfib_switch(KFiber *from, KFiber *to) {
  void *fake = NULL;
  leaving(from, to, &fake);
  tls_to = to;
  swapcontext(&from->uc, &to->uc);
  arrived(fake);
}
#endif
