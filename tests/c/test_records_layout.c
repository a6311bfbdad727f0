/*
** test_records_layout.c: record dtypes against the C compiler. kjit.struct's
** layouts (offsets, size, alignment) are checked against offsetof/sizeof/
** _Alignof of the same structs as this compiler lays them out; layouts
** are interned (equal declarations give the same object); and the C API
** for host structs (kjit_record_new, kjit_pushrecords, kjit_toarray)
** works on a host array of structs in place.
**
** Usage: test_records [results-file]   (writes "passed failed 0\n" there)
*/
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include "kjit.h"

#include "check.h"

static lua_State *newstate(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "kjit", luaopen_kjit, 0);
  lua_setglobal(L, "kjit");
  return L;
}

/* Runs code that returns a kjit.struct; leaves it on the stack. */
static int declare(lua_State *L, const char *code) {
  if (luaL_dostring(L, code) != LUA_OK) {
    printf("error: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  return 1;
}

/* P.<what> or P.offset.<name> of the struct on top, as an integer. */
static long long field(lua_State *L, const char *what, const char *name) {
  lua_getfield(L, -1, what);
  if (name) { lua_getfield(L, -1, name); lua_remove(L, -2); }
  long long v = lua_isinteger(L, -1) ? (long long)lua_tointeger(L, -1) : -1;
  lua_pop(L, 1);
  return v;
}

#define SIZE_IS(T) \
  CHECK(field(L, "size", NULL) == (long long)sizeof(T) && \
        field(L, "align", NULL) == (long long)_Alignof(T), \
        #T ": size %lld align %lld, C says %zu %zu", field(L, "size", NULL), \
        field(L, "align", NULL), sizeof(T), _Alignof(T))
#define OFF_IS(T, f) \
  CHECK(field(L, "offset", #f) == (long long)offsetof(T, f), #T "." #f ": offset %lld, C says %zu", \
        field(L, "offset", #f), offsetof(T, f))

typedef struct Particle { float x, y, vx, vy; } Particle;
typedef struct Mixed { uint8_t a; double b; int16_t c; int32_t d; uint8_t e; } Mixed;
typedef struct Arr { int8_t tag; double pos[3]; uint16_t flags[5]; float w; } Arr;
typedef struct Inner { uint8_t k; int64_t v; } Inner;
typedef struct Outer { int8_t a; Inner in; float f; Inner two[2]; uint8_t z; } Outer;
typedef struct Small { uint8_t a; uint16_t b; uint8_t c; } Small;
typedef struct Tail { double d; uint8_t c; } Tail;
typedef struct Every {
  int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32;
  int64_t i64; uint64_t u64; float f32; double f64;
} Every;

static void test_layouts(void) {
  lua_State *L = newstate();
  if (declare(L, "return kjit.struct{ {'x','f32'}, {'y','f32'}, {'vx','f32'}, {'vy','f32'} }")) {
    SIZE_IS(Particle); OFF_IS(Particle, x); OFF_IS(Particle, y); OFF_IS(Particle, vx);
    OFF_IS(Particle, vy);
    lua_pop(L, 1);
  }
  if (declare(L, "return kjit.struct{ {'a','u8'}, {'b','f64'}, {'c','i16'}, {'d','i32'}, {'e','u8'} }")) {
    SIZE_IS(Mixed); OFF_IS(Mixed, a); OFF_IS(Mixed, b); OFF_IS(Mixed, c); OFF_IS(Mixed, d);
    OFF_IS(Mixed, e);
    lua_pop(L, 1);
  }
  if (declare(L, "return kjit.struct{ {'tag','i8'}, {'pos','f64',3}, {'flags','u16',5}, {'w','f32'} }")) {
    SIZE_IS(Arr); OFF_IS(Arr, tag); OFF_IS(Arr, pos); OFF_IS(Arr, flags); OFF_IS(Arr, w);
    lua_pop(L, 1);
  }
  if (declare(L, "local I = kjit.struct{ {'k','u8'}, {'v','i64'} }\n"
                 "return kjit.struct{ {'a','i8'}, {'in',I}, {'f','f32'}, {'two',I,2}, {'z','u8'} }")) {
    SIZE_IS(Outer); OFF_IS(Outer, a); OFF_IS(Outer, in); OFF_IS(Outer, f); OFF_IS(Outer, two);
    OFF_IS(Outer, z);
    lua_pop(L, 1);
  }
  if (declare(L, "return kjit.struct{ {'a','u8'}, {'b','u16'}, {'c','u8'} }")) {
    SIZE_IS(Small); OFF_IS(Small, a); OFF_IS(Small, b); OFF_IS(Small, c);
    lua_pop(L, 1);
  }
  if (declare(L, "return kjit.struct{ {'d','f64'}, {'c','u8'} }")) {
    SIZE_IS(Tail); OFF_IS(Tail, d); OFF_IS(Tail, c);
    lua_pop(L, 1);
  }
  if (declare(L, "local t = {}\nfor _, d in ipairs{'i8','u8','i16','u16','i32','u32','i64',"
                 "'u64','f32','f64'} do t[#t+1] = {d, d} end\nreturn kjit.struct(t)")) {
    SIZE_IS(Every); OFF_IS(Every, i8); OFF_IS(Every, u8); OFF_IS(Every, i16);
    OFF_IS(Every, u16); OFF_IS(Every, i32); OFF_IS(Every, u32); OFF_IS(Every, i64);
    OFF_IS(Every, u64); OFF_IS(Every, f32); OFF_IS(Every, f64);
    lua_pop(L, 1);
  }
  /* interned: equal declarations are the same value and the same layout */
  CHECK(luaL_dostring(L, "local A = kjit.struct{ {'x','f32'}, {'y','f64'} }\n"
                         "local B = kjit.struct{ {'x','f32'}, {'y','f64'} }\n"
                         "local C = kjit.struct{ {'y','f32'}, {'x','f64'} }\n"
                         "return A == B and A ~= C, A, B") == LUA_OK && lua_toboolean(L, -3),
        "equal layouts are one value");
  const kjit_record *ra = NULL, *rb = NULL;
  CHECK(kjit_torecord(L, -2, &ra) == KJIT_OK && kjit_torecord(L, -1, &rb) == KJIT_OK &&
        ra == rb && ra != NULL, "equal layouts are one object");
  lua_close(L);
  /* a second state gets the same process-wide object */
  L = newstate();
  const kjit_record *rc = NULL;
  CHECK(luaL_dostring(L, "return kjit.struct{ {'x','f32'}, {'y','f64'} }") == LUA_OK &&
        kjit_torecord(L, -1, &rc) == KJIT_OK && rc == ra, "layouts are process-wide");
  lua_close(L);
}

/* ---- the C API: a host's own array of structs ------------------------------ */

static int released;
static void on_release(void *ud, void *data) { (void)data; released += ud == (void *)&released; }

static void test_capi(void) {
  lua_State *L = newstate();
  kjit_field pf[4] = {
    { "x", KJIT_F32, NULL, 0, offsetof(Particle, x) },
    { "y", KJIT_F32, NULL, 0, offsetof(Particle, y) },
    { "vx", KJIT_F32, NULL, 0, offsetof(Particle, vx) },
    { "vy", KJIT_F32, NULL, 0, offsetof(Particle, vy) },
  };
  const kjit_record *rp = NULL;
  CHECK(kjit_record_new(L, pf, 4, sizeof(Particle), &rp) == KJIT_OK && rp != NULL, "record_new");
  CHECK(kjit_record_size(rp) == sizeof(Particle) && kjit_record_nfields(rp) == 4, "size, nfields");
  kjit_field got;
  CHECK(kjit_record_field(rp, 2, &got) == KJIT_OK && strcmp(got.name, "vx") == 0 &&
        got.dtype == KJIT_F32 && got.offset == 8 && got.count == 0, "record_field");
  CHECK(kjit_record_field(rp, 4, &got) == KJIT_ERRARG, "record_field out of range");
  /* the same layout as kjit.struct's: the same object */
  const kjit_record *rl = NULL;
  CHECK(luaL_dostring(L, "return kjit.struct{ {'x','f32'}, {'y','f32'}, {'vx','f32'}, "
                         "{'vy','f32'} }") == LUA_OK &&
        kjit_torecord(L, -1, &rl) == KJIT_OK && rl == rp, "host layout == kjit.struct layout");
  lua_pop(L, 1);
  /* bad descriptions: a message, nothing else pushed */
  int top = lua_gettop(L);
  kjit_field bad[2] = { { "x", KJIT_F64, NULL, 0, 0 }, { "y", KJIT_F32, NULL, 0, 4 } };
  CHECK(kjit_record_new(L, bad, 2, 16, &rl) == KJIT_ERRARG && lua_gettop(L) == top + 1 &&
        strstr(lua_tostring(L, -1), "overlap") != NULL, "overlapping fields: %s",
        lua_tostring(L, -1));
  lua_settop(L, top);
  kjit_field mis[1] = { { "x", KJIT_F64, NULL, 0, 4 } };
  CHECK(kjit_record_new(L, mis, 1, 16, &rl) == KJIT_ERRARG &&
        strstr(lua_tostring(L, -1), "aligned") != NULL, "misaligned field: %s", lua_tostring(L, -1));
  lua_settop(L, top);
  kjit_field nm[1] = { { "not a name", KJIT_F64, NULL, 0, 0 } };
  CHECK(kjit_record_new(L, nm, 1, 8, &rl) == KJIT_ERRARG, "bad name");
  lua_settop(L, top);

  /* push the host's array: Lua reads and writes it in place */
  static Particle ps[3] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } };
  int64_t n = 3;
  CHECK(kjit_pushrecords(L, ps, rp, 1, &n, on_release, &released) == KJIT_OK, "pushrecords");
  lua_setglobal(L, "ps");
  CHECK(luaL_dostring(L, "ps[2].x = ps[2].x + ps[3].vy; return ps[1].vy, #ps, tostring(ps[2])")
        == LUA_OK && lua_tointeger(L, -3) == 4 && lua_tointeger(L, -2) == 3, "Lua reads it");
  lua_settop(L, top);
  CHECK(ps[1].x == 17.0f, "Lua writes it in place (%g)", (double)ps[1].x);
  lua_getglobal(L, "ps");
  kjit_array a;
  CHECK(kjit_toarray(L, -1, &a) == KJIT_OK && a.dtype == KJIT_RECORD && a.record == rp &&
        a.data == (void *)ps && a.ndim == 1 && a.shape[0] == 3, "toarray reports the layout");
  lua_pop(L, 1);
  /* misaligned data, NULL layout */
  CHECK(kjit_pushrecords(L, (char *)ps + 2, rp, 1, &n, NULL, NULL) == KJIT_ERRARG, "misaligned");
  lua_settop(L, top);
  CHECK(kjit_pushrecords(L, ps, NULL, 1, &n, NULL, NULL) == KJIT_ERRARG, "NULL layout");
  lua_settop(L, top);
  /* a numeric array reports no layout */
  double d[2] = { 1, 2 };
  int64_t two = 2;
  CHECK(kjit_pusharray(L, d, KJIT_F64, 1, &two, NULL, NULL, NULL) == KJIT_OK &&
        kjit_toarray(L, -1, &a) == KJIT_OK && a.record == NULL, "numeric: no layout");
  lua_settop(L, top);
  /* kjit_pushrecord gives Lua the layout as a dtype */
  CHECK(kjit_pushrecord(L, rp) == KJIT_OK, "pushrecord");
  lua_setglobal(L, "P");
  CHECK(luaL_dostring(L, "return kjit.zeros(2, P).dtype == P and P.size") == LUA_OK &&
        lua_tointeger(L, -1) == (lua_Integer)sizeof(Particle), "pushrecord is usable as a dtype");
  lua_settop(L, top);
  /* compiled from C for the host's layout, called on the host's array */
  CHECK(luaL_dostring(L, "return function(p, dt) for i = 1, #p do local r = p[i]; "
                         "r.x = r.x + r.vx * dt end; return p[#p].x end") == LUA_OK, "chunk");
  kjit_fn *fn = NULL;
  const kjit_record *recs[1] = { rp };
  CHECK(kjit_compile_records(L, -1, "f32(record[:], f64)", recs, 1, &fn) == KJIT_OK && fn,
        "compile_records: %s", fn ? "" : lua_tostring(L, -1));
  if (fn) {
    kjit_array arr = { ps, KJIT_RECORD, 1, { 3, 1, 1, 1 }, rp };
    kjit_value args[2] = { kjit_arr(&arr), kjit_float(0.5) }, res[1];
    float before = ps[2].x;
    CHECK(kjit_call(L, fn, args, 2, res, 1) == KJIT_OK && res[0].type == KJIT_TFLOAT &&
          res[0].v.f == (double)(float)(before + 11 * 0.5) && ps[0].x == 1.0f + 1.5f,
          "kjit_call on the host's structs");
    /* another layout is refused */
    kjit_field qf[1] = { { "x", KJIT_F64, NULL, 0, 0 } };
    const kjit_record *rq = NULL;
    kjit_record_new(L, qf, 1, 8, &rq);
    arr.record = rq;
    CHECK(kjit_call(L, fn, args, 2, res, 1) == KJIT_ERRARG &&
          strstr(lua_tostring(L, -1), "another layout") != NULL, "layout checked");
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  CHECK(luaL_dostring(L, "return kjit.jit(function(p) return p end)") == LUA_OK &&
        kjit_compile_records(L, -1, "void(record[:])", recs, 0, &fn) == KJIT_ERRCOMPILE,
        "a record without its layout: %s", lua_tostring(L, -1));
  lua_settop(L, top);
  lua_close(L);
  CHECK(released == 1, "release called once (%d)", released);
}

int main(int argc, char **argv) {
  test_layouts();
  test_capi();
  printf("test_records: %d passed, %d failed\n", npass, nfail);
  if (argc > 1) {
    FILE *f = fopen(argv[1], "w");
    if (f) { fprintf(f, "%d %d 0\n", npass, nfail); fclose(f); }
  }
  return nfail != 0;
}
