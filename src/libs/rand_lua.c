#include "libs/libs.h"
void klib_rand_open(lua_State *L) { (void)L; }
