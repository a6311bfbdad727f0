/*
** halfrt.c: the f16 conversion routines LLVM 14 calls from compiled CPU
** and simulator code where the CPU lacks F16C (and always for double ->
** half, which F16C does not have): registered with the JIT under LLVM's
** libcall names, so they resolve to common/khalf.h's rounding and never
** to the C compiler's runtime (whose calling convention for half values
** changed between compilers: LLVM 14 passes and returns halves as i16 in
** integer registers, newer libgcc ones in xmm registers).
*/
#include <stdint.h>
#include "common/khalf.h"
#include "backend/cpu.h"
#include "runtime/halfrt.h"

static float h2f(uint16_t h) { return (float)kh_to_double(h); }
static double h2d(uint16_t h) { return kh_to_double(h); }
static uint16_t f2h(float f) { return kh_from_double((double)f); }   /* exact widening: one rounding */
static uint16_t d2h(double d) { return kh_from_double(d); }

void kjit_half_register(void) {
  kc_register_symbol("__gnu_h2f_ieee", (void *)h2f);
  kc_register_symbol("__extendhfsf2", (void *)h2f);
  kc_register_symbol("__extendhfdf2", (void *)h2d);
  kc_register_symbol("__gnu_f2h_ieee", (void *)f2h);
  kc_register_symbol("__truncsfhf2", (void *)f2h);
  kc_register_symbol("__truncdfhf2", (void *)d2h);
}
