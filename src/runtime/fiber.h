/*
** fiber.h: user-level threads (fibers) for the compiled CUDA simulator.
**
** A fiber is a stack and a saved context. kfib_switch saves the running
** context into `from` and resumes `to`, on the same OS thread: no system
** call, no lock. On x86-64 Linux the switch is a few instructions of
** assembly (callee-saved registers, MXCSR and the x87 control word);
** elsewhere ucontext's swapcontext. With AddressSanitizer or
** ThreadSanitizer the switches are announced to them (their fiber APIs),
** so they follow the stacks.
**
** Why fibers: a simulated block's threads must all reach a barrier (or a
** warp meeting) before any goes on. As OS threads that cost a thread
** creation per GPU thread and two futex round trips per barrier per
** thread; as fibers it is a function call's worth of work.
*/
#ifndef KJIT_FIBER_H
#define KJIT_FIBER_H
#include <stddef.h>

#if defined(__x86_64__) && defined(__linux__) && !defined(KFIB_NO_ASM)
#define KFIB_ASM 1
#else
#include <ucontext.h>
#endif

typedef struct KFiber {
#ifdef KFIB_ASM
  void *sp;                 /* the saved stack pointer */
#else
  ucontext_t uc;
#endif
  void (*fn)(void *);       /* a started fiber runs fn(arg); it never returns */
  void *arg;
  char *lo;                 /* its stack (NULL: the OS thread's own) */
  size_t size;
  const void *alo;          /* AddressSanitizer: the bounds of a stack */
  size_t asize;             /* that kfib_self met (lo == NULL) */
  void *tsan;               /* ThreadSanitizer's fiber, or NULL */
  int dying;                /* the fiber switches away for the last time */
} KFiber;

/* Stacks for n fibers, `each` usable bytes apiece, below each a guard page
** (an overflow faults instead of writing the next stack). Reserved, not
** committed: a fiber's untouched pages cost nothing. Returns NULL without
** memory. */
char *kfib_stacks(size_t n, size_t each);
void kfib_stacks_free(char *stacks, size_t n, size_t each);
/* the usable stack of fiber i of such a block (its lowest address) */
char *kfib_stack_of(char *stacks, size_t i, size_t each);

/* The calling context, as a fiber that others may switch back to. */
void kfib_self(KFiber *f);
/* Prepares f to run fn(arg) on [lo, lo + size) when first switched to.
** fn must not return: it ends with f->dying = 1 and a last switch. */
void kfib_start(KFiber *f, char *lo, size_t size, void (*fn)(void *), void *arg);
/* Saves the running context in from, resumes to. */
void kfib_switch(KFiber *from, KFiber *to);
/* Releases what kfib_start took (the sanitizer's fiber); after f died. */
void kfib_done(KFiber *f);

#endif
