/*
** kjit.h: the public C API of kjit (Numba for Lua 5.4).
**
** A host program opens kjit in its own lua_State, hands its own memory to
** Lua without copies, reads arrays back, and compiles and calls jit
** functions from C:
**
**   luaL_requiref(L, "kjit", luaopen_kjit, 0);       open (require "kjit")
**   kjit_pusharray(L, data, KJIT_F32, 2, shape, NULL, release, ud);
**   kjit_toarray(L, idx, &arr);                      read an array back
**   kjit_compile(L, idx, "f64(f64[:], f64)", &fn);   compile a Lua function
**   kjit_call(L, fn, args, 2, results, 1);           call it, no Lua calls
**
** Conventions (Lua's): functions that can fail return a status code,
** KJIT_OK (= LUA_OK) on success; on failure they push one error message
** string on the stack, as lua_pcall does, and the host pops it. No function
** here raises a Lua error (they protect themselves with lua_pcall), so they
** may be called outside any protected call. (Should the stack be unable to
** grow, they return KJIT_ERRMEM and push nothing.) A function given a lua_State
** must be called by the thread using that state; different states may be
** used by different threads at the same time (compiled code is shared by
** the process, everything else belongs to its state).
**
** Only the kjit_* names and luaopen_kjit are exported by libkjit.so (for
** embedding) and kjit.so (the Lua module).
*/
#ifndef KJIT_H
#define KJIT_H

#include <stdint.h>
#include <stddef.h>
#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KJIT_API __attribute__((visibility("default")))
#else
#define KJIT_API
#endif

/* Element types of kjit arrays. The order is part of the ABI. */
typedef enum kjit_dtype {
  KJIT_I8, KJIT_U8, KJIT_I16, KJIT_U16, KJIT_I32, KJIT_U32,
  KJIT_I64, KJIT_U64, KJIT_F32, KJIT_F64,
  KJIT_BOOL,      /* one byte: 0 is false, anything else true (Lua
                     booleans in scripts; kjit writes 0 or 1) */
  KJIT_F16,       /* IEEE 754 binary16 (half), two bytes; read as a Lua
                     float, stores round to nearest even */
  KJIT_NDTYPES
} kjit_dtype;

#define KJIT_MAXDIMS 4

/* Status codes. Where a Lua code means the same thing, it is that code. */
#define KJIT_OK         LUA_OK      /* 0: success */
#define KJIT_ERRRUN     LUA_ERRRUN  /* run-time error in compiled code (the
                                       message has the script's file:line) */
#define KJIT_ERRMEM     LUA_ERRMEM  /* out of memory */
#define KJIT_ERRARG     16          /* a bad argument from the host (NULL
                                       pointer, dtype, shape, strides, types
                                       or count of call arguments); detected
                                       before anything runs */
#define KJIT_ERRCOMPILE 17          /* the signature is malformed, or the
                                       function cannot be compiled for it */

/* Opens the kjit module: pushes the module table. Use it as
** luaL_requiref(L, "kjit", luaopen_kjit, 0) so that scripts can
** require "kjit". (Raises Lua errors like any lua_CFunction: call it
** through luaL_requiref, lua_call or lua_pcall.) */
KJIT_API int luaopen_kjit(lua_State *L);

/* Size in bytes of one element of dtype t, or 0 for an invalid dtype. */
KJIT_API size_t kjit_dtype_size(kjit_dtype t);

/* Name of dtype t ("f32", ...), or NULL for an invalid dtype. */
KJIT_API const char *kjit_dtype_name(kjit_dtype t);

/* ---- Arrays -------------------------------------------------------------- */

/* A C view of a kjit array: row-major and C-contiguous, always. Element
** (i1, ..., in), 1-based in Lua, is at index
** ((i1-1)*shape[1] + (i2-1))*shape[2] ... of data. */
typedef struct kjit_array {
  void *data;                     /* first element */
  kjit_dtype dtype;
  int ndim;                       /* 1..KJIT_MAXDIMS */
  int64_t shape[KJIT_MAXDIMS];    /* extents shape[0..ndim); kjit_toarray
                                     sets the rest to 1, kjit_call ignores them */
  const struct kjit_record *record;  /* dtype KJIT_RECORD: the layout of the
                                     records (kjit_toarray sets it, NULL for
                                     other dtypes) */
} kjit_array;

/* Called once with (ud, data) when Lua no longer references a borrowed
** array: the host may free or reuse data from then on. */
typedef void (*kjit_release)(void *ud, void *data);

/* Pushes a kjit array that borrows host memory: no copy is made, and Lua
** code (interpreted or compiled) reads and writes data in place.
**   data     the first element; aligned to the element size; may be NULL
**            only when the array is empty (some extent is 0).
**   dtype    element type; ndim 1..KJIT_MAXDIMS; shape[0..ndim) >= 0.
**   strides  NULL for C-contiguous, or ndim strides in bytes. kjit arrays
**            are always C-contiguous (compiled code sees an array as a data
**            pointer and extents, which keeps indexing a multiply-add and
**            lets LLVM vectorize), so strides are accepted only when they
**            are the C-contiguous ones (those of extents 0 or 1 are not
**            looked at, as in NumPy); other strides are refused with
**            KJIT_ERRARG and a message: copy such data into a contiguous
**            block first.
**   release  called exactly once, with (ud, data), when Lua no longer
**            references the array or any view of it (a[i], a:slice,
**            a:reshape): after the garbage collector finds it unreachable,
**            or at lua_close at the latest. May be NULL (the host keeps
**            data alive longer than L, e.g. static memory). It runs inside
**            the collector: it must not call Lua on this state. Should a
**            script keep the array (or a view) alive past that point (a
**            finalizer resurrecting it), every later use of it is a Lua
**            error ("array used after its memory was released"): kjit
**            never touches data after calling release.
** Returns KJIT_OK with the array on the stack; or KJIT_ERRARG/KJIT_ERRMEM
** with a message on the stack, and then release is never called: the host
** still owns data. */
KJIT_API int kjit_pusharray(lua_State *L, void *data, kjit_dtype dtype,
                            int ndim, const int64_t *shape,
                            const int64_t *strides, kjit_release release,
                            void *ud);

/* Reads the kjit array at stack index idx (an array made by Lua, a
** borrowed one, or a view) into *out. Returns KJIT_OK, or KJIT_ERRARG if
** the value is not a kjit array (or is a borrowed one whose memory was
** already released, see kjit_pusharray) or out is NULL. Pushes nothing, in either
** case (like lua_to* functions). out->data stays valid as long as the
** array is reachable from Lua (on the stack, in a table, the registry). */
KJIT_API int kjit_toarray(lua_State *L, int idx, kjit_array *out);

/* ---- Device memory shared with CUDA C code ------------------------------- */

/* The device address of the first element of the kjit.cuda device array
** at idx (a CUdeviceptr of the current context; in the simulator, a host
** address) and its size in bytes (bytes may be NULL). The memory stays
** kjit's: valid while the array is reachable from Lua. Returns KJIT_OK, or
** KJIT_ERRARG (not a device array, one already released or made before
** cuda.close(), or ptr NULL);
** pushes nothing. */
KJIT_API int kjit_device_array_ptr(lua_State *L, int idx, uint64_t *ptr, size_t *bytes);

/* Pushes a kjit.cuda device array over device memory the host allocated
** (cuMemAlloc, cudaMalloc ...: a CUdeviceptr on the current device; in the
** simulator, KJIT_CUDASIM=1, host memory), C-contiguous, of the given
** dtype, ndim (1..KJIT_MAXDIMS) and shape. kjit never frees it: the host
** keeps it alive as long as Lua may use the array. Kernels and copies use
** it like any device array. Returns KJIT_OK with the array on the stack,
** or KJIT_ERRARG/KJIT_ERRMEM with a message on the stack (bad arguments,
** no CUDA driver outside the simulator). */
KJIT_API int kjit_push_device_array_wrap(lua_State *L, uint64_t ptr, kjit_dtype dtype, int ndim,
                                         const int64_t *shape);

/* ---- Compiling and calling from C ---------------------------------------- */

/* A compiled specialization: native code for one argument signature. */
typedef struct kjit_fn kjit_fn;

/* Compiles the value at stack index idx (a Lua function, or a kjit.jit
** object, whose options are used) for a signature such as
** "f64(f64[:], f64)", the syntax of f:compile in Lua: argument types i64
** (int), f64 (float, double), bool, arrays dtype[:] / dtype[:,:] ... (bool[:]
** too: KJIT_BOOL arrays, whose elements are Lua booleans); an
** optional result type (f64, f32, i64, bool, void) that is checked.
** Returns KJIT_OK, sets *out and pushes an object that owns the code: *out
** stays valid as long as that object is reachable from Lua (keep it on the
** stack, or in the registry with luaL_ref). Each call compiles anew into a
** private object, so scripts cannot free the code under the host.
** On failure sets *out to NULL (if out is not NULL) and returns
** KJIT_ERRARG (idx is not a function, sig or out is NULL) or
** KJIT_ERRCOMPILE ("file:line: message" for the Lua source, or the
** signature error) or KJIT_ERRMEM, with the message on the stack. */
KJIT_API int kjit_compile(lua_State *L, int idx, const char *sig,
                          kjit_fn **out);

/* Compiled code as bytes (Lua: f:export(sig), kjit.load(bytes); see
** docs/guide/export.md). kjit_export compiles the value at idx (a Lua
** function or a kjit.jit object) for sig, as kjit_compile, and pushes the
** bytes as a Lua string (lua_tolstring gives them): KJIT_OK, or
** KJIT_ERRARG / KJIT_ERRCOMPILE (compile errors, and code that cannot be
** exported: writes into a table upvalue or global) with the message on
** the stack. kjit_load loads such bytes (copied; made by this build of
** kjit, possibly in another process or on another machine) without
** compiling: KJIT_OK with *out set and an owner object pushed, as
** kjit_compile; or KJIT_ERRARG with the reason on the stack (damaged
** bytes, another build of kjit, LLVM or Lua, a CPU lacking features the
** code uses, a kernel's bytes). */
KJIT_API int kjit_export(lua_State *L, int idx, const char *sig);
KJIT_API int kjit_load(lua_State *L, const void *bytes, size_t len,
                       kjit_fn **out);

/* Value types of call arguments and results. */
typedef enum kjit_type {
  KJIT_TNIL, KJIT_TBOOL, KJIT_TINT, KJIT_TFLOAT, KJIT_TARRAY
} kjit_type;

typedef struct kjit_value {
  kjit_type type;
  union {
    int b;                  /* KJIT_TBOOL: 0 or 1 */
    int64_t i;              /* KJIT_TINT: a Lua integer (i64) */
    double f;               /* KJIT_TFLOAT: a Lua float (f64; f32 results
                               are widened) */
    const kjit_array *a;    /* KJIT_TARRAY (arguments only) */
  } v;
} kjit_value;

/* Calls compiled code directly: no Lua call, no allocation. args[0..nargs)
** must match the signature exactly (count, i64 / f64 / bool, array dtype
** and ndim), else KJIT_ERRARG with a message naming the argument: no
** implicit conversion (an integer is not an f64 argument). An array
** argument is any kjit_array (host memory, or one filled by kjit_toarray);
** the compiled code may read and write its data during the call only.
** The function's results fill results[0..nresults); missing results are
** KJIT_TNIL, extra ones are dropped (as lua_call adjusts); results may be
** NULL when nresults is 0. Returns KJIT_OK, or KJIT_ERRRUN with the
** run-time error's message ("script.lua:12: index 11 out of bounds
** [1, 10]") on the stack. L is only used for that message: it must be a
** state the calling thread owns; fn may be used from several threads at
** once (with a state each) while its owner object is alive. */
KJIT_API int kjit_call(lua_State *L, const kjit_fn *fn, const kjit_value *args,
                       int nargs, kjit_value *results, int nresults);

/* Number of arguments fn takes (its signature's) and of results it
** returns. */
KJIT_API int kjit_nargs(const kjit_fn *fn);
KJIT_API int kjit_nresults(const kjit_fn *fn);

/* ---- C stacks ------------------------------------------------------------ */

/* Declares the C stack the calling thread runs on from now on: the memory
** [base, base + size) (base is the LOWEST address; stacks grow down). For
** hosts that run Lua on stacks of their own (makecontext/swapcontext,
** coroutine or fiber libraries): call it after switching to such a stack,
** before Lua code there calls compiled code, and again after each switch
** back to it. Compiled calls (recursion, nested calls, kjit.jit objects
** called from compiled code) then raise "stack overflow" while a quarter of
** the stack (32 KiB at least, 256 KiB at most) is still free.
** The declaration belongs to the calling thread and is used only while the
** stack pointer lies inside it: on any other stack (after a switch not
** declared) kjit falls back to what it knows, the thread's own stack (read
** from the system), or, on a stack it knows nothing about, at most 64 KiB
** below the point of the call. So an undeclared stack of at least 64 KiB
** plus what the host itself uses on it is safe too; declare smaller ones.
** base NULL forgets the declaration. Lua's own C stack use (interpreted
** recursion, LUAI_MAXCCALLS) is Lua's business, not covered here.
** Returns KJIT_OK, or KJIT_ERRARG (size 0, or the range wraps around);
** never touches a lua_State and pushes nothing. */
KJIT_API int kjit_set_stack_limit(const void *base, size_t size);

/* Stopping runaway compiled code.
**
** kjit_interrupt(L) asks compiled code running for L to stop: at its next
** poll it raises the Lua error "interrupted" (with the place that called
** the compiled function), which unwinds like any error (lua_pcall returns
** LUA_ERRRUN; kjit_call returns KJIT_ERRRUN). Pass the state's main
** thread (the lua_State the host created, as lua.c's globalL) to stop
** compiled code in any of its coroutines; a coroutine stops only code
** running in that coroutine. Async-signal-safe, lock-free: callable from a
** signal handler or from any thread, while L runs or not; it touches no
** Lua state and pushes nothing (the one exception to the conventions
** above). The request stays pending until compiled code of that state
** polls, even if none runs now: a host that moves on to another script
** drops a request not yet seen with kjit_interrupt_clear(L) (as it would
** reset a hook), and so does a host before lua_close(L) when one may be
** pending (a new state could get L's address). Returns KJIT_OK, or
** KJIT_ERRARG when L is NULL or 64 states have requests pending at once.
**
** Lua hooks: the standard way to stop Lua (lua.c's Ctrl-C, a watchdog
** calling lua_sethook) works on compiled code too, for count hooks
** (LUA_MASKCOUNT, any count): a poll calls the hook on the Lua thread
** with event LUA_HOOKCOUNT. A hook that raises an error stops the compiled
** function with that error (its position names a C function: lua.c says
** "interrupted!" without "file:line:"); a hook that returns lets it go on
** (profilers, a permanent count hook of a sandbox: about one call per
** poll). Line, call and return hooks are not called by compiled code.
**
** Polls: compiled code polls about every 65536 loop iterations or function
** entries, kjit.prange workers and simulated kernels too (the thread that
** waits for them keeps polling and stops them all). Target: stopped
** within 10 ms of the request, at a cost of at most 2% of run time. A
** kernel already running on a GPU cannot be stopped: the host thread waits
** for it in the CUDA driver (synchronize, copy back), and the interrupt or
** hook takes effect at the next poll of code on the CPU after it returns.
** The code generator emits the polls in every loop and call of compiled
** code (about every 65536 iterations or calls). */
KJIT_API int kjit_interrupt(lua_State *L);
KJIT_API void kjit_interrupt_clear(lua_State *L);

/* ---- Records (kjit.struct) ------------------------------------------------ */

/* The dtype of an array of records (kjit_array.dtype, with .record set):
** not one of the numeric dtypes above (kjit_dtype_size gives 0 for it). */
#define KJIT_RECORD ((kjit_dtype)64)

/* A record layout: a C struct's fields, dtypes, byte offsets and size.
** Layouts are process-wide, immutable and interned: equal layouts are the
** same pointer, valid until the process exits (never freed). */
typedef struct kjit_record kjit_record;

/* One field of a record description, for kjit_record_new. */
typedef struct kjit_field {
  const char *name;         /* a Lua identifier, unique in the record */
  kjit_dtype dtype;         /* a numeric dtype, or KJIT_RECORD */
  const kjit_record *rec;   /* KJIT_RECORD: the nested record; else NULL */
  int64_t count;            /* 0: a scalar; n >= 1: a fixed array of n */
  size_t offset;            /* offsetof(struct, field) */
} kjit_field;

/* Describes a host struct: fields[0..nfields) at their offsets, size =
** sizeof(struct). Each field must lie inside size, aligned to its element
** size (a nested record: to its alignment), and not overlap another; the
** struct's alignment is the largest of its fields', and size a multiple of
** it. Returns KJIT_OK with *out set (nothing pushed), or KJIT_ERRARG with
** a message on the stack. */
KJIT_API int kjit_record_new(lua_State *L, const kjit_field *fields,
                             int nfields, size_t size, const kjit_record **out);

/* The layout of the kjit.struct value (made in Lua) at stack index idx,
** into *out. Returns KJIT_OK, or KJIT_ERRARG (pushes nothing). */
KJIT_API int kjit_torecord(lua_State *L, int idx, const kjit_record **out);

/* Pushes the kjit.struct value of layout rec (what kjit.struct returns in
** Lua; usable as a dtype: kjit.zeros(n, P)). Returns KJIT_OK, or
** KJIT_ERRARG/KJIT_ERRMEM with a message on the stack. */
KJIT_API int kjit_pushrecord(lua_State *L, const kjit_record *rec);

/* Reading a layout back: its size, number of fields, and field i (0-based)
** into *out (name valid as long as the layout: forever). */
KJIT_API size_t kjit_record_size(const kjit_record *rec);
KJIT_API int kjit_record_nfields(const kjit_record *rec);
KJIT_API int kjit_record_field(const kjit_record *rec, int i, kjit_field *out);

/* kjit_compile for a signature with records: each `record` of sig (a
** record, "record", or an array of them, "record[:]") has the layout of the
** next of recs[0..nrecs), e.g. "void(record[:], f64)" with recs = {rec}.
** kjit_call then takes kjit_arrays of dtype KJIT_RECORD with that .record
** (set .record: kjit_call checks it; kjit_toarray fills it). In Lua the
** same is f:compile("void(record[:], f64)", P). */
KJIT_API int kjit_compile_records(lua_State *L, int idx, const char *sig,
                                  const kjit_record *const *recs, int nrecs,
                                  kjit_fn **out);

/* Pushes an array of records that borrows host memory, as kjit_pusharray
** does for numbers (same lifetime rules, release included): data points
** at shape[0] * ... structs of layout rec, contiguous, aligned to the
** record's alignment. kjit_toarray reports such an array with dtype
** KJIT_RECORD and its layout in .record. */
KJIT_API int kjit_pushrecords(lua_State *L, void *data, const kjit_record *rec,
                              int ndim, const int64_t *shape,
                              kjit_release release, void *ud);

/* Value constructors for kjit_call arguments. */
static inline kjit_value kjit_int(int64_t i) {
  kjit_value v; v.type = KJIT_TINT; v.v.i = i; return v;
}
static inline kjit_value kjit_float(double f) {
  kjit_value v; v.type = KJIT_TFLOAT; v.v.f = f; return v;
}
static inline kjit_value kjit_bool(int b) {
  kjit_value v; v.type = KJIT_TBOOL; v.v.b = b != 0; return v;
}
static inline kjit_value kjit_arr(const kjit_array *a) {
  kjit_value v; v.type = KJIT_TARRAY; v.v.a = a; return v;
}

#ifdef __cplusplus
}
#endif
#endif
