/*
** lblas.h: registers kjit.blas (host arrays) and kjit.cuda.blas (device
** arrays) in the kjit module table at the top of the stack (its field cuda
** must be set already). See lblas.c.
*/
#ifndef KJIT_LBLAS_H
#define KJIT_LBLAS_H

#include "lua.h"

void kbl_open(lua_State *L);

#endif
