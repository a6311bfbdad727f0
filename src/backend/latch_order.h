/*
** latch_order.h: loop latches' arithmetic placed so that a loop-carried
** value and the one it replaces can share a register (latch_order.c).
*/
#ifndef KJIT_LATCH_ORDER_H
#define KJIT_LATCH_ORDER_H

#include <llvm-c/Types.h>

/* In each latch of M, a header phi's next value that is also used outside
** the latch is moved (with the arithmetic only it uses) below the phi's
** last read there. Run after the optimizer, before the code generator.
** Returns how many values moved. */
int kc_order_latches(LLVMModuleRef M);

#endif
