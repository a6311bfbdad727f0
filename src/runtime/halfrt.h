/*
** halfrt.h: f16 conversion libcalls for the JIT (halfrt.c).
*/
#ifndef KJIT_HALFRT_H
#define KJIT_HALFRT_H
void kjit_half_register(void);
#endif
