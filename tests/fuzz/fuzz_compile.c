/*
** fuzz_compile.c: libFuzzer target for the whole kjit pipeline (the
** function's bytecode through lua_dump and the decoder, the IR builder,
** the typer, the loop facts, code generation, LLVM, the dispatcher,
** run-time errors). Built by tests/fuzz/build.sh (clang-14, -fsanitize=fuzzer,
** address,undefined); see tests/fuzz/README.md.
**
** Input format:
**   <signature line>\n<Lua source>
** The signature line is a list of argument types separated by commas or
** spaces: i64 f64 bool nil fn jfn imax inf and arrays such as f32[:] or
** u8[:,:] (up to 4 dims, any dtype); the flags "fast" (fastmath) and O0..O3
** (opt level; default O0: LLVM's -O3 pipeline costs most of the time per
** input and is not kjit's code) set kjit.jit options, and "inspect" also
** asks for f:inspect("llvm"). The source is loaded as a chunk (its name is
** the source itself, as load(src) does) in a fresh lua_State; the chunk should return a function. That function is
** wrapped with kjit.jit, given the signature line as f:compile(text), and
** called three times under pcall with
** arguments of the signature's types (ordinary values, then edge values:
** 0, -1, NaN, -0.0, empty and size-1 arrays), then
** f:inspect("types") runs. Every outcome except a crash, a sanitizer report
** or a leak is fine. A line "--alt" in the source splits it: the part
** before is loaded, the part after is given as the chunk name (kjit
** compiles the bytecode: a chunk name holding other code must not matter).
** (The "maxinteger" edge value is the "imax" type.)
**
** Bounds, so that every input finishes quickly:
**   - interpreted Lua (the chunk, the driver) runs under a count hook that
**     raises an error after FUZZ_LUA_BUDGET VM instructions;
**   - the Lua allocator refuses to hold more than FUZZ_MEM_LIMIT bytes
**     (arrays live in Lua memory: kjit.zeros(1 << 40) gets "not enough
**     memory");
**   - compiled code cannot be interrupted (hooks do not run in it): an
**     input that loops forever in compiled code is a libFuzzer timeout,
**     which tests/fuzz/run.sh treats as not-a-bug (-timeout=15 with
**     -ignore_timeouts=1 in fork mode). Arguments are small (arrays of at
**     most 24 elements, integers up to 3 except maxinteger) so ordinary
**     loops over them stay short.
**   - only the base, math, string and table libraries are opened (no io,
**     os, package, debug), and dofile/loadfile/load/print are removed.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
#include "kjit.h"

#define FUZZ_LUA_BUDGET 300   /* x 1000 VM instructions */
#define FUZZ_MEM_LIMIT ((size_t)256 << 20)

typedef struct { size_t used; } FuzzMem;

static void *fuzz_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  FuzzMem *m = ud;
  if (ptr == NULL) osize = 0;
  if (nsize == 0) {
    free(ptr);
    m->used -= osize;
    return NULL;
  }
  if (nsize > osize && m->used - osize + nsize > FUZZ_MEM_LIMIT) return NULL;
  void *p = realloc(ptr, nsize);
  if (p != NULL) m->used = m->used - osize + nsize;
  return p;
}

static int hook_ticks;
static void fuzz_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  if (++hook_ticks > FUZZ_LUA_BUDGET) {
    hook_ticks = 0;   /* the error handler may run a little more code */
    luaL_error(L, "fuzz: instruction budget exhausted");
  }
}

/* The driver: builds arguments for the signature and calls the jit
** function. Runs interpreted, under the hook like the user chunk. */
static const char DRIVER[] =
  "local kjit, fn, sig = ...\n"
  "local toks, opts = {}, { opt = 0 }\n"
  "for tok in sig:gmatch('[^,%s]+') do\n"
  "  if tok == 'fast' then opts.fastmath = true\n"
  "  elseif tok:match('^O[0-3]$') then opts.opt = tonumber(tok:sub(2))\n"
  "  elseif #toks < 8 then toks[#toks + 1] = tok end\n"
  "end\n"
  "local f = kjit.jit(fn, opts)\n"
  "local shapes = {\n"
  "  { {4}, {3, 4}, {2, 3, 2}, {2, 2, 2, 2} },\n"
  "  { {0}, {0, 3}, {2, 0, 2}, {1, 1, 0, 1} },\n"
  "  { {1}, {1, 1}, {1, 1, 1}, {1, 1, 1, 1} } }\n"
  "local ints = { 3, 0, -1 }\n"
  "local flts = { 2.5, 0 / 0, -0.0 }\n"
  "local function mk(tok, v)\n"
  "  if tok == 'i64' or tok == 'int' then return ints[v]\n"
  "  elseif tok == 'imax' then return math.maxinteger\n"
  "  elseif tok == 'f64' or tok == 'float' then return flts[v]\n"
  "  elseif tok == 'inf' then return math.huge\n"
  "  elseif tok == 'bool' then return v == 1\n"
  "  elseif tok == 'nil' then return nil\n"
  "  elseif tok == 'fn' then return fn\n"
  "  elseif tok == 'jfn' then return f\n"
  "  end\n"
  "  local dt, dims = tok:match('^(%w+)%[([:,]*)%]$')\n"
  "  if not dt then return 1 end\n"
  "  local nd = select(2, dims:gsub(':', ''))\n"
  "  if nd < 1 then nd = 1 elseif nd > 4 then nd = 4 end\n"
  "  local ok, a = pcall(kjit.zeros, shapes[v][nd], dt)\n"
  "  if not ok then return 1 end\n"
  "  local flat = a:reshape(a.size)\n"
  "  local isint = dt:sub(1, 1) ~= 'f'\n"
  "  for i = 1, a.size do flat[i] = isint and (i * 7 % 11 - 3) or (i * 0.75 - 2) end\n"
  "  return a\n"
  "end\n"
  "pcall(f.compile, f, sig)   -- the signature line as f:compile text too\n"
  "for v = 1, 3 do\n"
  "  local args = {}\n"
  "  for i = 1, #toks do args[i] = mk(toks[i], v) end\n"
  "  pcall(f, table.unpack(args, 1, #toks))\n"
  "end\n"
  "pcall(f.inspect, f, 'types')\n"
  "if sig:find('inspect', 1, true) then pcall(f.inspect, f, 'llvm') end\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384) return 0;
  const uint8_t *nl = memchr(data, '\n', size);
  if (nl == NULL) return 0;
  size_t siglen = (size_t)(nl - data);
  if (siglen > 200) return 0;
  char sig[201];
  memcpy(sig, data, siglen);
  sig[siglen] = '\0';
  size_t srclen = size - siglen - 1;
  /* NUL-terminated copy: it is also the chunk name kjit reads back */
  char *src = malloc(srclen + 1);
  if (src == NULL) return 0;
  memcpy(src, nl + 1, srclen);
  src[srclen] = '\0';

  FuzzMem mem = { 0 };
  lua_State *L = lua_newstate(fuzz_alloc, &mem);
  if (L == NULL) { free(src); return 0; }
  luaL_requiref(L, "_G", luaopen_base, 1);
  luaL_requiref(L, "math", luaopen_math, 1);
  luaL_requiref(L, "string", luaopen_string, 1);
  luaL_requiref(L, "table", luaopen_table, 1);
  luaL_requiref(L, "kjit", luaopen_kjit, 1);
  lua_settop(L, 0);
  static const char *const removed[] = { "dofile", "loadfile", "load", "print", NULL };
  for (int i = 0; removed[i]; i++) { lua_pushnil(L); lua_setglobal(L, removed[i]); }

  hook_ticks = 0;
  lua_sethook(L, fuzz_hook, LUA_MASKCOUNT, 1000);
  /* "alt" mode: a line "--alt" splits the source into the code that is
  ** loaded and the text given as its chunk name (other text, maybe not
  ** Lua: only a name to kjit, which compiles the bytecode) */
  const char *name = src;
  size_t codelen = srclen;
  char *alt = strstr(src, "\n--alt\n");
  if (alt != NULL) {
    codelen = (size_t)(alt - src);
    name = alt + 7;
  }
  if (luaL_loadbufferx(L, src, codelen, name, "t") == LUA_OK &&
      lua_pcall(L, 0, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TFUNCTION) {
    int fn = lua_gettop(L);
    if (luaL_loadbufferx(L, DRIVER, sizeof DRIVER - 1, "=driver", "t") != LUA_OK) abort();
    lua_getglobal(L, "kjit");
    lua_pushvalue(L, fn);
    lua_pushstring(L, sig);
    (void)lua_pcall(L, 3, 0, 0);
  }
  lua_close(L);
  free(src);
  if (mem.used != 0) abort();   /* lua_close frees everything it allocated */
  return 0;
}
