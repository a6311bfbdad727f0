/*
** latch_order.c: the order of a loop latch's arithmetic, for the register
** allocator (see latch_order.h).
**
** In a latch such as Mandelbrot's escape loop's
**
**     %zr.next = fadd double %cr, %t       ; the value zr takes next
**     %u = fmul double %zr, 2.0            ; the last read of zr
**     ... br label %header                 ; %zr = phi [ %zr.next, %latch ]
**
** the new value is made while the old one is still read, so the two
** cannot share a register and the allocator copies one into the other at
** each iteration (a `vmovapd`: 14 instructions an iteration against 13).
** The machine scheduler reorders such a block by itself when the new
** value is used only by the phi (its "copy constraint" holds for values
** local to the block), but not when it is also used outside the block:
** the counted `while` loops of codegen/cg_countloop.c leave at a chunk's
** end with their values (for the next chunk), and Mandelbrot's escape
** loop, polls on, counted 1.097x the instructions of polls off for that
** copy. Here, after the optimizer, such a value is moved below the last
** read of the one it replaces, with the arithmetic that only it uses
** (the `fsub` feeding the `fadd` above), as the scheduler would have
** placed it: then the two share a register. Only arithmetic without side
** effects moves, and only within its block, below instructions that do
** not use it, so what the code computes is unchanged.
*/
#include "backend/latch_order.h"

#include <llvm-c/Core.h>

#include <stddef.h>

/* arithmetic that may run later in its block: no memory, no side
** effects, no trap (integer division stays) */
static int movable(LLVMValueRef I) {
  switch (LLVMGetInstructionOpcode(I)) {
  case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv: case LLVMFNeg:
  case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMShl: case LLVMLShr: case LLVMAShr:
  case LLVMAnd: case LLVMOr: case LLVMXor:
  case LLVMSIToFP: case LLVMUIToFP: case LLVMFPExt: case LLVMFPTrunc:
    return 1;
  default:
    return 0;
  }
}

static int is_phi(LLVMValueRef v) {
  return LLVMIsAInstruction(v) && LLVMGetInstructionOpcode(v) == LLVMPHI;
}

/* Does v have a user in block b other than a phi (the block's own phis
** read the previous iteration's values)? */
static int read_in_block(LLVMValueRef v, LLVMBasicBlockRef b) {
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef w = LLVMGetUser(u);
    if (LLVMIsAInstruction(w) && LLVMGetInstructionParent(w) == b && !is_phi(w)) return 1;
  }
  return 0;
}

/* v's uses, how many, and whether one is outside block b other than phi p */
static int uses(LLVMValueRef v, LLVMBasicBlockRef b, LLVMValueRef p, int *outside) {
  int n = 0;
  *outside = 0;
  for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef w = LLVMGetUser(u);
    n++;
    if (w != p && LLVMIsAInstruction(w) && LLVMGetInstructionParent(w) != b) *outside = 1;
  }
  return n;
}

#define MAXCHAIN 8

/* Adds to chain[*n] the operands of v that only v uses, arithmetic of
** block b (and theirs, depth levels down): they move with it. */
static void chain_operands(LLVMValueRef v, LLVMBasicBlockRef b, LLVMValueRef *chain, int *n,
                           int depth) {
  if (depth == 0) return;
  int nops = LLVMGetNumOperands(v);
  for (int i = 0; i < nops && *n < MAXCHAIN; i++) {
    LLVMValueRef o = LLVMGetOperand(v, (unsigned)i);
    int out;
    if (!LLVMIsAInstruction(o) || LLVMGetInstructionParent(o) != b || !movable(o) ||
        uses(o, b, NULL, &out) != 1)
      continue;
    int seen = 0;
    for (int k = 0; k < *n; k++) seen |= chain[k] == o;
    if (seen) continue;
    chain[(*n)++] = o;
    chain_operands(o, b, chain, n, depth - 1);
  }
}

/* Phi p of a loop header reads v from latch b: move v below p's last
** read in b when it is above it. Returns 1 when moved. */
static int sink_below_reads(LLVMBasicBlockRef b, LLVMValueRef p, LLVMValueRef v) {
  int outside;
  if (!LLVMIsAInstruction(v) || LLVMGetInstructionParent(v) != b || !movable(v) ||
      read_in_block(v, b))
    return 0;
  uses(v, b, p, &outside);
  if (!outside) return 0;   /* the scheduler's case: see the top */
  /* p's last read in b, after v (p is read in b, so its block dominates
  ** b: b -> p's block is a back edge) */
  LLVMValueRef last = NULL;
  int after = 0;
  for (LLVMValueRef I = LLVMGetFirstInstruction(b); I; I = LLVMGetNextInstruction(I)) {
    if (I == v) after = 1;
    else if (after && !is_phi(I) && !LLVMIsATerminatorInst(I)) {
      int nops = LLVMGetNumOperands(I);
      for (int i = 0; i < nops; i++)
        if (LLVMGetOperand(I, (unsigned)i) == p) last = I;
    }
  }
  if (last == NULL) return 0;
  LLVMValueRef chain[MAXCHAIN];
  int n = 1;
  chain[0] = v;
  chain_operands(v, b, chain, &n, 3);
  /* in their order in the block (all above v, v above last), each put
  ** before the instruction after last, so after the ones moved before it */
  LLVMValueRef order[MAXCHAIN];
  int m = 0;
  for (LLVMValueRef I = LLVMGetFirstInstruction(b); I != v; I = LLVMGetNextInstruction(I))
    for (int k = 1; k < n; k++)
      if (chain[k] == I) order[m++] = I;
  order[m++] = v;
  LLVMValueRef next = LLVMGetNextInstruction(last);
  LLVMBuilderRef B = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(v)));
  LLVMPositionBuilderBefore(B, next);
  for (int k = 0; k < m; k++) {
    LLVMInstructionRemoveFromParent(order[k]);
    LLVMInsertIntoBuilder(B, order[k]);
  }
  LLVMDisposeBuilder(B);
  return 1;
}

int kc_order_latches(LLVMModuleRef M) {
  int moved = 0;
  for (LLVMValueRef F = LLVMGetFirstFunction(M); F; F = LLVMGetNextFunction(F))
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(F); b; b = LLVMGetNextBasicBlock(b)) {
      LLVMValueRef t = LLVMGetBasicBlockTerminator(b);
      if (t == NULL) continue;
      unsigned ns = LLVMGetNumSuccessors(t);
      for (unsigned s = 0; s < ns; s++) {
        LLVMBasicBlockRef h = LLVMGetSuccessor(t, s);
        for (LLVMValueRef p = LLVMGetFirstInstruction(h); p && is_phi(p);
             p = LLVMGetNextInstruction(p)) {
          if (!read_in_block(p, b)) continue;
          unsigned ni = LLVMCountIncoming(p);
          for (unsigned i = 0; i < ni; i++)
            if (LLVMGetIncomingBlock(p, i) == b) {
              moved += sink_below_reads(b, p, LLVMGetIncomingValue(p, i));
              break;
            }
        }
      }
    }
  return moved;
}
