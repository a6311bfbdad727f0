/*
** khalf.h: IEEE 754 binary16 ("half", kjit's f16 dtype) conversions in
** plain C, the one definition of f16 rounding every layer uses: the
** arrays' element reads and stores (host/buffer.c, runtime/alloc.c), the
** kjit.f16 / cuda.float16 cast and cuda.fp16.* in interpreted kernels
** (host/kernel_intrin.c), and the conversion routines LLVM calls from
** compiled CPU and simulator code where the CPU has no F16C
** (runtime/runtime.c registers them under LLVM's libcall names).
**
** kh_from_double rounds a double to the nearest half, ties to even, in
** ONE rounding (as numpy.float16(x)): overflow gives +-inf (a value at or
** past 65520 = 65504 + half an ulp), underflow gives subnormals or +-0,
** NaN stays NaN (quiet, sign kept, payload's top bits kept). Rounding a
** float goes through the double, which holds it exactly: still one
** rounding. kh_to_double is exact.
**
** Why computing a half operation in f32 or f64 and rounding once gives
** the bits of the hardware's add.rn.f16: for +, -, *, / and sqrt of p-bit
** inputs, rounding first to q >= 2p + 2 bits and then to p bits equals
** rounding once (Figueroa, "When is double rounding innocuous?", 1995);
** p = 11, and f32 has 24 bits. fma is exact in f64 below the overflow
** threshold (the product has 22 bits, the sum spans under 53 bits).
*/
#ifndef KJIT_KHALF_H
#define KJIT_KHALF_H

#include <stdint.h>
#include <string.h>

static inline uint16_t kh_from_double(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  uint16_t sign = (uint16_t)((u >> 48) & 0x8000);
  int e = (int)((u >> 52) & 0x7ff);
  uint64_t m = u & 0xfffffffffffffULL;
  if (e == 0x7ff)   /* inf, or NaN (kept quiet; 0x200 set) */
    return (uint16_t)(sign | 0x7c00 | (m ? 0x200 | (uint16_t)(m >> 42) : 0));
  int he = e - 1023 + 15;   /* the half's biased exponent */
  if (he >= 31) return (uint16_t)(sign | 0x7c00);
  if (e == 0) return sign;  /* double subnormals are far below half's */
  m |= 1ULL << 52;          /* 53-bit significand */
  int shift;                /* bits to drop from m */
  if (he <= 0) {            /* a half subnormal (or zero after rounding) */
    shift = 42 + 1 - he;
    if (shift > 54) return sign;   /* below half the smallest subnormal */
    he = 0;
  } else {
    shift = 42;
  }
  uint64_t q = m >> shift, rem = m & ((1ULL << shift) - 1), halfway = 1ULL << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) q++;
  /* q: the significand with its leading 1 for normals (11 bits); a carry
  ** into bit 11 (or into bit 10 from a subnormal) moves the exponent,
  ** which adding the fields does: the encoding is monotonic */
  uint32_t bits = he == 0 ? (uint32_t)q : ((uint32_t)(he - 1) << 10) + (uint32_t)q;
  if (bits >= 0x7c00) bits = 0x7c00;   /* rounded up to inf */
  return (uint16_t)(sign | bits);
}

static inline double kh_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  uint64_t m = h & 0x3ff, u = (uint64_t)(h & 0x8000) << 48;
  if (e == 31) u |= 0x7ff0000000000000ULL | (m << 42);
  else if (e != 0) u |= ((uint64_t)(e - 15 + 1023) << 52) | (m << 42);
  else if (m != 0) {   /* subnormal: normalize */
    int s = 0;
    while (!(m & 0x400)) { m <<= 1; s++; }
    u |= ((uint64_t)(1 - 15 - s + 1023) << 52) | ((m & 0x3ff) << 42);
  }
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* A double rounded to half and widened back (kjit.f16(x)). */
static inline double kh_round(double d) { return kh_to_double(kh_from_double(d)); }

#endif
