/*
** host/front.h: the front half every compile shares (kjit.jit's
** compile_spec, cuda.jit's compile_kernel): the function read and
** resolved, its parameters typed from the argument types, function
** arguments made compile-time constants, types inferred. What follows
** (code generation, a backend) is each caller's.
*/
#ifndef KJIT_HOST_FRONT_H
#define KJIT_HOST_FRONT_H
#include "compile.h"

/* Specializes the Lua function of the jit or kernel object at objidx (its
** user value 1; objidx absolute) for args[0..nargs):
** parameters past nargs are nil; a T_FUNC argument is the value at stack
** index argbase + i, a constant of this specialization (argbase 0: none
** was given, which is an error: a signature cannot name a function).
** Infers the types of everything reached. Compile errors longjmp through
** S->jb. Returns the root specialization (root->fn, root->nargs). */
KSpec *kh_specialize(Session *S, int objidx, const Type *args, int nargs, int argbase);

#endif
