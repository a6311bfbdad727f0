/*
** kernel.c: cuda.jit kernels.
**
**   k = cuda.jit(fn [, opts])       a kernel object (userdata "kjit.kernel")
**   k[{grid, block [, stream [, shared_bytes]]}](args...)
**       the config table gives a launcher (cached per config, so repeated
**       launches allocate nothing), whose call classifies the arguments,
**       finds or compiles the specialization and launches it:
**         GPU:        PTX (nvvm.c) -> cuModuleLoadData -> cuLaunchKernel
**                     (cuLaunchCooperativeKernel for a kernel that syncs
**                     the grid, cuda.cg: cudadrv.c checks co-residency)
**         simulate 1: the kernel compiled for the CPU (target_sim.c),
**                     run by cudasim.c
**         simulate 2: the Lua function itself, one coroutine per thread
**                     (the interpreted reference; print works there)
**
** The kjit.cuda built-ins (cuda.grid, cuda.shared.array ...) are C
** functions here: the typer recognises them by identity (the registry
** table of ir_builtins.h) and the code generator compiles them; called
** from interpreted Lua they read the thread of the interpreted launcher
** and fail outside a kernel.
**
** Errors in kernels: each spec owns a small device error record
** (runtime_err.h KErrWord); the first failing thread fills it; the
** launch that copies host buffers back, and every synchronizing call
** (kk_check_errors), reads it and raises "file:line: message (thread ...,
** block ...)".
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/clock.h"
#include "lua.h"
#include "lauxlib.h"
#include "kjit.h"
#include "host/buffer.h"
#include "host/record.h"
#include "common/compile.h"
#include "backend/cpu.h"
#include "runtime/runtime.h"
#include "runtime/runtime_poll.h"
#include <llvm-c/Analysis.h>
#include "backend/nvvm.h"
#include "backend/cache.h"
#include "backend/llvm_load.h"
#include "host/session.h"
#include "host/cudadrv.h"
#include "runtime/cudasim.h"
#include "host/kernel.h"
#include "ir/ir_builtins.h"
#include "ir/ir_type.h"
#include "common/runtime_err.h"
#include "common/cuda_intrin.h"
#include "host/options.h"
#include "host/signature.h"
#include "host/driver.h"
#include "host/kernel_intrin.h"
#include "host/export.h"
#include "host/kernel_link.h"

#define KERNEL_MT "kjit.kernel"
#define LAUNCHER_MT "kjit.launcher"
#define DIM3_MT "kjit.cuda.dim3"

/* ---- Specializations ------------------------------------------------------------ */

/* A spec's target: the GPU (PTX through libNVVM) or the simulator (the
** kernel compiled for the CPU, run by cudasim.c). */
enum { KT_NVPTX = 1, KT_SIM };

/* A spec's module on one device, with its error record there. */
typedef struct KDevMod {
  KCuModule mod;
  KCuFunction func;
  KCuDevPtr errrec;
  int ready;                   /* errrec allocated and zeroed */
  int launched;                /* launched since its record was last read */
  unsigned gen;                /* kcu_gen of the context mod was loaded in */
} KDevMod;

typedef struct KernSpec {
  struct KernSpec *next;
  int nargs;
  Type args[KJIT_MAXARGS];
  int target;                  /* KT_NVPTX or KT_SIM */
  int cc;                      /* KT_NVPTX: compute capability */
  char name[48];               /* the kernel's symbol */
  char *chunk;                 /* chunk name of the kernel, for messages */
  char *ptx, *llvm, *types;
  char **msgs; int nmsgs;      /* error()/assert() texts (KT_NVPTX) */
  int uses_sync;               /* KI_USES_* (cuda_intrin.h): waits, grid sync */
  double compile_ms;
  /* KT_SIM */
  KCpuCode *code;
  KEntry entry;
  /* KT_NVPTX: one loaded module per device, loaded at the first launch
  ** there and kept (launches alternating devices reload nothing) */
  struct KDevMod *dm;          /* dm[dev], ndm entries (0 .. highest dev used) */
  int ndm;
  int pending;                 /* on the pending list: dm[d].launched for some d */
  int declared;                /* compiled by k:compile(sig): its argument
                                  types bind launches that fit it loosely */
  const void *owner;           /* the Lua state (main thread) that compiled it */
  struct KernSpec *pnext;      /* pending list */
  int hostlaunches;            /* KT_NVPTX launches that copied host arrays
                                  (the second one warns: warn_host_arrays) */
  KCuLinkInput *link;          /* KT_NVPTX: the link files' linker inputs */
  int nlink;                   /* (kernel_link.c), linked when it loads */
} KernSpec;

typedef struct Kernel {
  KernSpec *specs;             /* most recent first */
  int boundscheck, fastmath, fma, opt;
  int maxreg, maxtpb;          /* PTX annotations, 0: none */
  int lineinfo;                /* .loc lines (lineinfo or debug) */
  int ncfg;                    /* launchers in the config cache */
  int cache;                   /* keep PTX in the disk cache (cache.c) */
  int dead;                    /* __gc ran: specs freed; a resurrected
                                  kernel refuses to compile or launch */
  int loaded;                  /* made by kjit.load: one spec, no Lua
                                  function to compile others from */
} Kernel;

typedef struct Launcher {
  unsigned grid[3], block[3];
  unsigned shared;
  const void *stream;          /* identity of the stream object, or NULL */
} Launcher;

/* Specs launched on the GPU whose error record has not been read since
** (process-wide, like the driver's context: guarded by pending_mu). */
static KernSpec *pending_specs;
static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;

static const void *main_thread(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  const void *m = lua_topointer(L, -1);
  lua_pop(L, 1);
  return m;
}

/* Called on every GPU launch. s->pending is written only by s->owner's
** thread (here, check_record and free_kspec all run in the state owning
** the kernel), so testing it unlocked there is safe: a spec already
** pending costs nothing more. */
static void pending_add(KernSpec *s) {
  if (s->pending) return;
  pthread_mutex_lock(&pending_mu);
  s->pending = 1;
  s->pnext = pending_specs;
  pending_specs = s;
  pthread_mutex_unlock(&pending_mu);
}

/* Removes s from the pending list. */
static void pending_remove(KernSpec *s) {
  pthread_mutex_lock(&pending_mu);
  if (s->pending) {
    for (KernSpec **pp = &pending_specs; *pp; pp = &(*pp)->pnext)
      if (*pp == s) { *pp = s->pnext; break; }
    s->pending = 0;
  }
  pthread_mutex_unlock(&pending_mu);
}

static KDevMod *devmod(KernSpec *s, int dev);

static int any_launched(KernSpec *s) {
  for (int d = 0; d < s->ndm; d++)
    if (devmod(s, d)->launched) return 1;
  return 0;
}

/* dm[dev] if it belongs to dev's current context; an entry of a context
** cuda.close() released is forgotten (its module and error record went
** with the context: nothing to unload or free). NULL past ndm. */
static KDevMod *devmod(KernSpec *s, int dev) {
  if (dev < 0 || dev >= s->ndm) return NULL;
  KDevMod *m = &s->dm[dev];
  if ((m->mod || m->errrec) && kcu_stale(0, dev, m->gen)) memset(m, 0, sizeof *m);
  return m;
}

static void free_kspec(KernSpec *s) {
  pending_remove(s);
  for (int d = 0; d < s->ndm; d++) {
    devmod(s, d);
    if (s->dm[d].mod) kcu_module_unload_on(d, s->dm[d].mod);
    if (s->dm[d].errrec) kcu_free_on(d, s->dm[d].errrec);
  }
  free(s->dm);
  kc_free(s->code);
  for (int i = 0; i < s->nmsgs; i++) free(s->msgs[i]);
  free(s->msgs);
  free(s->chunk); free(s->ptx); free(s->llvm); free(s->types);
  klink_free(s->link, s->nlink);
  free(s);
}

static char *xstrdup(const char *s) {
  if (s == NULL) return NULL;
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

/* ---- Compiling ---------------------------------------------------------------------- */

/* The session's free_result for a spec not yet linked into its kernel. */
static void free_unlinked_kspec(void *p) { free_kspec(p); }

/* "(f64[:], i64)": a list of types (a spec's signature). */
static void type_list(luaL_Buffer *b, const Type *t, int n) {
  char tb[32];
  luaL_addchar(b, '(');
  for (int i = 0; i < n; i++) {
    if (i) luaL_addstring(b, ", ");
    luaL_addstring(b, kty_name(t[i], tb, sizeof tb));
  }
  luaL_addchar(b, ')');
}

static void sess_fail(SessionBox *sb, const char *what, char *err) {
  snprintf(sb->S.errmsg, sizeof sb->S.errmsg, "kjit.cuda: %s: %s", what, err ? err : "LLVM error");
  free(err);
  longjmp(*sb->S.jb, 1);
}

/* Types and emits the kernel at kidx into M for target t (host/driver.c:
** bytecode -> IR -> types -> LLVM IR) and fills the spec's signature,
** chunk, types and messages. Errors raise through S->jb. */
static void bc_emit(lua_State *L, Session *S, int kidx, const Type *args, int nargs,
                    KernSpec *ks, const KcgTarget *t, LLVMContextRef C, LLVMModuleRef M) {
  KdrvOutput kk;
  lua_getiuservalue(L, kidx, 1);
  KdrvInput in = { -1, nargs, args, 0, t, C, M, ks->name, NULL, NULL, 0 };
  kdrv_compile(S, &in, &kk);
  lua_pop(L, 1);
  ks->nargs = kk.nargs;
  memcpy(ks->args, kk.args, sizeof(Type) * (size_t)kk.nargs);
  ks->chunk = xstrdup(kk.chunkname);
  ks->types = kk.types;
  ks->msgs = kk.msgs;
  ks->nmsgs = kk.nmsgs;
  ks->uses_sync = kk.uses_sync;
}

/* libNVVM's options for kernel k (nvvm.h). */
static int kn_flags(const Kernel *k) {
  return (k->opt == 0 ? KN_OPT0 : 0) | (k->fastmath ? KN_FASTMATH : 0) |
         (k->lineinfo ? KN_LINEINFO : 0);
}

/* k:export's output (export.h): a KT_SIM spec's CPU payload
** (backend/cache.h), owned by a userdata on the stack. */
typedef struct KExportBox { void *p; size_t n; } KExportBox;

static void refuse_loaded(lua_State *L, const Kernel *k, const Type *args, int nargs,
                          int target);

/* Compiles the kernel at kidx for args, for target (KT_NVPTX for compute
** capability cc, or KT_SIM); links the spec into the kernel. Raises Lua
** errors (compile errors carry the user's file:line). With ex (k:export,
** KT_SIM only), the object code is made for export, into ex. */
static KernSpec *compile_kernel_ex(lua_State *L, int kidx_, const Type *args, int nargs,
                                   int target, int cc, KExportBox *ex);
static KernSpec *compile_kernel(lua_State *L, int kidx_, const Type *args, int nargs,
                                int target, int cc) {
  return compile_kernel_ex(L, kidx_, args, nargs, target, cc, NULL);
}
static KernSpec *compile_kernel_ex(lua_State *L, int kidx_, const Type *args, int nargs,
                                   int target, int cc, KExportBox *ex) {
  Kernel *k = luaL_checkudata(L, kidx_, KERNEL_MT);
  if (k->dead) luaL_error(L, "kernel used after it was finalized");
  if (k->loaded) refuse_loaded(L, k, args, nargs, target);
  volatile int kidx = lua_absindex(L, kidx_);   /* used after setjmp */
  double t0 = k_now_ms();
  SessionBox *sb = ks_push_session(L, k->boundscheck, k->fastmath, k->opt);
  int sbidx = lua_gettop(L);
  Session *S = &sb->S;
  KernSpec *ks = ks_session_result(L, sb, sizeof *ks, free_unlinked_kspec);
  jmp_buf jb;
  S->jb = &jb;
  int top = lua_gettop(L);
  if (setjmp(jb)) {
    lua_settop(L, top);
    lua_pushstring(L, S->errmsg);
    ks_release_session(L, sb);
    lua_error(L);
  }
  ks->target = target;
  ks->cc = cc;
  ks->owner = main_thread(L);
  if (target == KT_NVPTX)   /* one kernel per CUDA module: a fixed name keeps the PTX cacheable */
    snprintf(ks->name, sizeof ks->name, "kjit_kernel");
  else
    snprintf(ks->name, sizeof ks->name, "kjit_kernel_%lu", kc_unique_id());
  char *err = NULL;
  const char *lerr = NULL;
  if (kjit_llvm_load(&lerr) != 0) {   /* the first compile loads LLVM (llvm_load.h) */
    snprintf(S->errmsg, sizeof S->errmsg, "kjit: %s", lerr);
    longjmp(*S->jb, 1);
  }
  if (target == KT_NVPTX) {
    sb->C = LLVMContextCreate();
    sb->M = LLVMModuleCreateWithNameInContext("kjit_kernel", sb->C);
    kn_prepare_module(sb->M, k->lineinfo);
    if (k->lineinfo)   /* cg_debug.c reads it: Lua lines as debug locations */
      LLVMAddNamedMetadataOperand(sb->M, "kjit.lineinfo", LLVMMDNodeInContext(sb->C, NULL, 0));
    if (S->fastmath && kc_link_ir(sb->M, KC_FASTMATH_IR, &err) != 0) sess_fail(sb, "LLVM", err);
    bc_emit(L, S, kidx, args, nargs, ks, &kcg_target_nvptx, sb->C, sb->M);
    if (k->maxtpb) kn_annotate(sb->M, ks->name, "maxntidx", k->maxtpb);   /* .maxntid */
    if (k->maxreg) kn_annotate(sb->M, ks->name, "maxnreg", k->maxreg);    /* .maxnreg */
    /* only kernels comparing integers with floats or looping to a float
    ** limit need the helpers (parsing them costs a few ms) */
    if ((LLVMGetNamedFunction(sb->M, "kjit_rt_cmp_int_float") ||
         LLVMGetNamedFunction(sb->M, "kjit_rt_forlimit")) &&
        kc_link_ir(sb->M, kcg_target_nvptx.runtime_ir, &err) != 0)
      sess_fail(sb, "LLVM", err);
    char *vmsg = NULL;
    if (LLVMVerifyModule(sb->M, LLVMReturnStatusAction, &vmsg)) {
      err = xstrdup(vmsg);
      LLVMDisposeMessage(vmsg);
      sess_fail(sb, "invalid kernel IR (a kjit bug)", err);
    }
    LLVMDisposeMessage(vmsg);
    char *ir = LLVMPrintModuleToString(sb->M);
    ks->llvm = xstrdup(ir);
    LLVMDisposeMessage(ir);
    if (ks->llvm == NULL) sess_fail(sb, "memory", xstrdup("not enough memory"));
    /* the disk cache: keyed by the module (which holds everything the
    ** source, types and options made of it) and the PTX compiler */
    char *key = NULL;
    size_t keylen = 0;
    if (k->cache) {
      const char *why;
      lua_pushfstring(L, "%s\nptx cc=%d fma=%d flags=%d %s %s\n", kcache_build_id(), cc, k->fma,
                      kn_flags(k), kn_backend(&why), kn_identity());
      size_t hl;
      const char *head = lua_tolstring(L, -1, &hl);
      keylen = hl + strlen(ks->llvm);
      key = malloc(keylen);
      if (key) { memcpy(key, head, hl); memcpy(key + hl, ks->llvm, keylen - hl); }
      lua_pop(L, 1);
      void *blob = NULL;
      size_t blen = 0;
      if (key && kcache_load("ptx", key, keylen, &blob, &blen) == 0) {
        if (blen > 0 && ((char *)blob)[blen - 1] == 0) ks->ptx = blob;
        else free(blob);
      }
    }
    if (ks->ptx == NULL) {
      ks->ptx = kn_compile(sb->M, ks->name, cc, k->fma, kn_flags(k), &err);
      if (ks->ptx == NULL) { free(key); sess_fail(sb, "PTX", err); }
      if (key) kcache_store("ptx", key, keylen, ks->ptx, strlen(ks->ptx) + 1);
    }
    free(key);
    /* the link files (kernel_link.c), compiled for this cc */
    lua_getiuservalue(L, kidx, 3);
    ks->nlink = klink_sources(L, -1, cc, &ks->link, &err);
    lua_pop(L, 1);
    if (ks->nlink < 0) {   /* located at the launch (or k:compile) that compiles */
      ks->nlink = 0;
      luaL_where(L, 1);
      snprintf(S->errmsg, sizeof S->errmsg, "%skjit.cuda: link: %s", lua_tostring(L, -1),
               err ? err : "not enough memory");
      free(err);
      longjmp(*S->jb, 1);
    }
  } else {
    ksim_register_symbols();
    kc_register_symbol("kjit_rt_cmp_int_float", (void *)kjit_rt_cmp_int_float);
    kc_register_symbol("kjit_rt_forlimit", (void *)kjit_rt_forlimit);
    sb->ctx = kc_new_context();
    LLVMContextRef C = LLVMOrcThreadSafeContextGetContext(sb->ctx);
    sb->M = LLVMModuleCreateWithNameInContext("kjit_sim", C);
    if (kc_prepare_module(sb->M, &err) != 0) sess_fail(sb, "LLVM", err);
    if (S->fastmath && kc_link_ir(sb->M, KC_FASTMATH_IR, &err) != 0) sess_fail(sb, "LLVM", err);
    bc_emit(L, S, kidx, args, nargs, ks, &kcg_target_sim, C, sb->M);
    KCpuOptions co = { k->opt, 1, 0, NULL };
    const char *names[1] = { ks->name };
    void *addr = NULL;
    LLVMModuleRef M = sb->M;
    LLVMOrcThreadSafeContextRef ctx = sb->ctx;
    sb->M = NULL; sb->ctx = NULL;
    if (ex) {
      ks->code = kcache_cpu_build(ctx, M, k->opt, ks->name, NULL, 0, &addr, &ex->p, &ex->n, &err);
      if (ks->code && ex->p == NULL)
        sess_fail(sb, "k:export", xstrdup("no object code could be made for this platform "
                                          "(kjit exports ELF objects only)"));
    } else
    ks->code = kc_compile(ctx, M, &co, names, 1, &addr, &ks->llvm, NULL, &err);
    if (ks->code == NULL) sess_fail(sb, "LLVM failed to compile the simulated kernel", err);
    ks->entry = (KEntry)addr;
  }
  ks->compile_ms = k_now_ms() - t0;
  sb->result = NULL;   /* owned by the kernel from here on */
  ks_release_session(L, sb);
  lua_settop(L, sbidx - 1);
  ks->next = k->specs;
  k->specs = ks;
  return ks;
}

/* ---- Signatures ------------------------------------------------------------------------ */

/* The arrays among a launch's arguments, recognised once (arg_type) for
** the runners: buf[i] or dev[i], or neither. */
typedef struct LaunchArrays {
  KBuffer *buf[KJIT_MAXARGS];
  KDevArray *dev[KJIT_MAXARGS];
} LaunchArrays;

/* launcher_call's upvalues: the metatables of kjit arrays, device arrays
** and launchers. Comparing with them is about 4 Lua API calls, where
** luaL_testudata's registry lookup by name cost about 330 instructions:
** with two device arrays, the type tests were most of kjit's host-side
** cost of a launch. */
enum { UP_ARRAY_MT = 1, UP_DEVARRAY_MT, UP_LAUNCHER_MT };

/* The userdata at idx if its metatable is launcher_call's upvalue up. */
static void *test_upmeta(lua_State *L, int idx, int up) {
  void *p = lua_touserdata(L, idx);
  if (p == NULL || !lua_getmetatable(L, idx)) return NULL;
  int same = lua_rawequal(L, -1, lua_upvalueindex(up));
  lua_pop(L, 1);
  return same ? p : NULL;
}

/* The type of kernel argument i at idx (a number, boolean, kjit array or
** device array, noted in la); raises a Lua error naming the argument
** otherwise. Called by launcher_call only: it reads its upvalues. */
static Type arg_type(lua_State *L, int idx, int argn, LaunchArrays *la, int i) {
  Type t = TY(T_NIL);
  la->buf[i] = NULL;
  la->dev[i] = NULL;
  switch (lua_type(L, idx)) {
  case LUA_TNUMBER: t = TY(lua_isinteger(L, idx) ? T_INT : T_F64); break;
  case LUA_TBOOLEAN: t = TY(T_BOOL); break;
  case LUA_TNIL: case LUA_TNONE: break;
  case LUA_TUSERDATA: {
    KBuffer *b = test_upmeta(L, idx, UP_ARRAY_MT);
    if (b && kb_released(b)) kb_released_error(L);
    if (b) { la->buf[i] = b; t = TY(T_BUF); t.dtype = (uint8_t)b->dtype; t.ndim = (uint8_t)b->ndim; break; }
    KDevArray *d = test_upmeta(L, idx, UP_DEVARRAY_MT);
    if (d) {
      la->dev[i] = d; t = TY(T_BUF); t.dtype = (uint8_t)d->dtype; t.ndim = (uint8_t)d->ndim;
      if (d->record) t.ref = d->record->id;   /* records: the layout */
      break;
    }
    b = krec_test_array(L, idx);   /* an array of records (host/record.c) */
    if (b && b->ndim == 0)
      luaL_error(L, "bad argument #%d to kernel (a record: pass the array of records)", argn);
    if (b) {
      la->buf[i] = b; t = TY(T_BUF); t.dtype = KJIT_RECORD; t.ndim = (uint8_t)b->ndim;
      t.ref = b->record->id;
      break;
    }
  }
  /* fall through */
  default:
    luaL_error(L, "bad argument #%d to kernel (number, boolean, kjit array or device array "
               "expected, got %s)", argn, luaL_typename(L, idx));
  }
  return t;
}

/* Exact match, or (loose) a number passed where the spec takes another
** number type (k:compile("void(f32, ...)") then launched with a Lua float). */
static int spec_fits(const KernSpec *s, const Type *t, int n, int loose) {
  for (int i = 0; i < s->nargs; i++) {
    Type a = i < n ? t[i] : TY(T_NIL), p = s->args[i];
    if (a.kind == p.kind && (a.kind != T_BUF || (a.dtype == p.dtype && a.ndim == p.ndim &&
                                                  (a.dtype != KJIT_RECORD || a.ref == p.ref))))
      continue;
    if (loose && (a.kind == T_INT || a.kind == T_F64) && (p.kind == T_F32 || p.kind == T_F64)) continue;
    return 0;
  }
  return 1;
}

static KernSpec *find_kspec(Kernel *k, const Type *t, int n, int target, int cc) {
  for (int loose = 0; loose < 2; loose++)
    for (KernSpec *s = k->specs; s; s = s->next)
      /* loaded PTX runs on its device and newer ones (the driver compiles it) */
      if (s->target == target && (target != KT_NVPTX || s->cc == cc || (k->loaded && s->cc <= cc)) &&
          spec_fits(s, t, n, loose))
        return s;
  return NULL;
}

/* The argument types a launch that found no specialization compiles for:
** those of a signature declared with k:compile (for any target or compute
** capability) that the launch's values fit, so that a Lua number passed
** for a declared f32 parameter stays an f32 in the simulator and on every
** device, as on the GPU the signature was compiled for; else the launch's
** own types. Exact fits first, as find_kspec chooses on the GPU. Copies
** into out; returns the count. */
static int launch_types(const Kernel *k, const Type *t, int n, Type *out) {
  for (int loose = 0; loose < 2; loose++)
    for (const KernSpec *s = k->specs; s; s = s->next)
      if (s->declared && s->nargs >= n && spec_fits(s, t, n, loose)) {
        memcpy(out, s->args, (size_t)s->nargs * sizeof *out);
        return s->nargs;
      }
  memcpy(out, t, (size_t)n * sizeof *out);
  return n;
}

/* Reads "void(f32, f32[:], i64)" (the "void" and even the parentheses
** may be left out) with the one signature grammar (host/signature.c). */
/* numba-cuda's xoroshiro128p_type: the layout of cuda.random's states
** (lua/kjit/random.lua's kjit.struct{{"s0", "u64"}, {"s1", "u64"}}; equal
** declarations are one layout). */
static int32_t xoro_layout(lua_State *L) {
  KRecField f[2] = { { "s0", KJIT_U64, NULL, 0, 0 }, { "s1", KJIT_U64, NULL, 0, 0 } };
  char err[128];
  const KRecord *r = krec_c_layout(f, 2, err, sizeof err);
  if (r == NULL) luaL_error(L, "kjit.cuda: %s", err);
  return r->id;
}

static int parse_sig(lua_State *L, const char *s, Type *out) {
  KSig ks;
  Type ret;
  int has_ret;
  char err[256];
  if (ksig_parse(s, KSIG_KERNEL, &ks, err, sizeof err) != 0 ||
      ksig_types(&ks, KSIG_KERNEL, out, &ret, &has_ret, err, sizeof err) != 0)
    return luaL_error(L, "bad kernel signature '%s': %s", s, err);
  for (int i = 0; i < ks.nargs; i++)   /* a record whose layout the name gives */
    if (strcmp(ks.args[i].name, KSIG_XORO) == 0) {
      out[i].ref = xoro_layout(L);
      out[i].sub = 1;   /* (sig_layouts: known; cleared there) */
    }
  return ks.nargs;
}

/* Records in a signature: each `record` of t[0..n) takes the layout (a
** kjit.struct) at the next stack index from *idx on, k:compile("void(
** record[:], f64)", P [, cc]); *idx ends after them. */
static void sig_layouts(lua_State *L, const char *sig, Type *t, int n, int *idx) {
  for (int i = 0; i < n; i++) {
    if (t[i].kind != T_BUF || t[i].dtype != KJIT_RECORD) continue;
    if (t[i].sub == 1) {   /* xoroshiro128p_type (parse_sig) */
      t[i].sub = 0;
      if (t[i].ndim == 0)
        luaL_error(L, "bad kernel signature '%s': argument #%d: kernels take arrays of records "
                   "(xoroshiro128p_type[:]), not one record", sig, i + 1);
      continue;
    }
    const KRecord *r = krec_test(L, *idx);
    if (r == NULL)
      luaL_error(L, "bad kernel signature '%s': argument #%d is a record: give its layout (a "
                 "kjit.struct) after the signature", sig, i + 1);
    if (t[i].ndim == 0)
      luaL_error(L, "bad kernel signature '%s': argument #%d: kernels take arrays of records "
                 "(record[:]), not one record", sig, i + 1);
    t[i].ref = r->id;
    (*idx)++;
  }
}

/* ---- Errors recorded by kernels ------------------------------------------------------- */

/* Pushes "file:line: message (thread (x,y,z), block (x,y,z))". */
static void push_kernel_error(lua_State *L, const KErr *e, const unsigned tid[3],
                              const unsigned bid[3]) {
  krt_push_error(L, e);
  if (e->kind == KE_LUAERR || e->kind == KE_INTERRUPT) return;   /* a stop: the value as raised */
  lua_pushfstring(L, " (in thread (%d,%d,%d) of block (%d,%d,%d))", (int)tid[0], (int)tid[1],
                  (int)tid[2], (int)bid[0], (int)bid[1], (int)bid[2]);
  lua_concat(L, 2);
}

/* Reads a spec's device error record; raises if a thread failed. A clean
** record stays pending unless complete. */
static void check_record(lua_State *L, KernSpec *s, int complete) {
  /* the current device's record: the other devices' launches stay pending
  ** until a synchronize there */
  int dev = kcu_device();
  KDevMod *m = devmod(s, dev);
  if (m == NULL || !m->errrec || !m->launched) {
    if (!any_launched(s)) pending_remove(s);
    return;
  }
  int64_t w[KJIT_KERR_WORDS];
  kcu_memcpy_dtoh(L, w, m->errrec, sizeof w, NULL);
  if (w[KERR_W_CLAIMED] == 0) {
    if (complete) {
      m->launched = 0;
      if (!any_launched(s)) pending_remove(s);
    }
    return;
  }
  m->launched = 0;
  if (!any_launched(s)) pending_remove(s);
  int64_t zero[KJIT_KERR_WORDS];
  memset(zero, 0, sizeof zero);
  kcu_memcpy_htod(L, m->errrec, zero, sizeof zero, NULL);
  KErr e;
  memset(&e, 0, sizeof e);
  e.kind = (int32_t)w[KERR_W_KIND];
  e.line = (int32_t)w[KERR_W_LINE];
  e.a = w[KERR_W_A]; e.b = w[KERR_W_B]; e.c = w[KERR_W_C];
  int64_t msgno = w[KERR_W_MSG];
  e.msg = msgno > 0 && msgno <= s->nmsgs ? s->msgs[msgno - 1] : NULL;
  if (e.msg == NULL && (e.kind == KE_USER || e.kind == KE_USER_NOPOS || e.kind == KE_ASSERT ||
                         e.kind == KE_TYPEERR))
    e.msg = "error in kernel";
  e.chunk = s->chunk;
  memcpy(&e.f, &w[KERR_W_FBITS], sizeof e.f);
  unsigned tid[3], bid[3];
  for (int i = 0; i < 3; i++) { tid[i] = (unsigned)w[KERR_W_TID + i]; bid[i] = (unsigned)w[KERR_W_BID + i]; }
  push_kernel_error(L, &e, tid, bid);
  lua_error(L);
}

void kk_check_errors(lua_State *L, int complete) {
  KernSpec *todo[64];
  int n = 0;
  const void *owner = main_thread(L);
  pthread_mutex_lock(&pending_mu);
  int dev = kcu_device();
  /* this Lua state's launches on this device only (dm is written by the
  ** owner's thread: this one) */
  for (KernSpec *s = pending_specs; s && n < 64; s = s->pnext)
    if (s->owner == owner && dev < s->ndm && s->dm[dev].launched &&
        !kcu_stale(0, dev, s->dm[dev].gen)) todo[n++] = s;
  pthread_mutex_unlock(&pending_mu);
  for (int i = 0; i < n; i++) check_record(L, todo[i], complete);
}

/* ---- The interpreted reference launcher ------------------------------------------ */

typedef struct Interp {
  unsigned tid[3], bid[3], block[3], grid[3];
  size_t dynbytes;
  int shared_ref;               /* registry: this block's shared arrays by call site */
} Interp;

static __thread Interp *icur;

/* The simulators' messages for grid-synchronized kernels (cudasim.c's too). */
#define GRID_TOO_LARGE "a kernel that syncs the grid (cuda.cg) runs all its blocks at once, " \
  "and the simulator runs at most " KSIM_GRID_MAX_THREADS_S " threads at once"
#define GRID_DEADLOCK "kernel deadlock: threads wait at cuda.syncthreads or a warp collective " \
  "while others of their block wait at the grid barrier (cuda.cg.this_grid():sync())"

static Interp *need_kernel(lua_State *L, const char *what) {
  if (icur == NULL)
    luaL_error(L, "%s can only be called inside a kernel (launch it with k[{grid, block}](...))", what);
  return icur;
}

static int l_grid(lua_State *L) {
  Interp *t = need_kernel(L, "cuda.grid");
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 3, 1, "1, 2 or 3 expected");
  for (int a = 0; a < n; a++)
    lua_pushinteger(L, (lua_Integer)t->bid[a] * t->block[a] + t->tid[a] + 1);
  return (int)n;
}

static int l_gridsize(lua_State *L) {
  Interp *t = need_kernel(L, "cuda.gridsize");
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 3, 1, "1, 2 or 3 expected");
  for (int a = 0; a < n; a++) lua_pushinteger(L, (lua_Integer)t->block[a] * t->grid[a]);
  return (int)n;
}

static int l_syncthreads(lua_State *L) {
  need_kernel(L, "cuda.syncthreads");
  kki_cur->th[kki_cur->cur].op = -1;   /* a plain barrier (the scheduler's KKI_BAR) */
  if (!lua_isyieldable(L))
    return luaL_error(L, "cuda.syncthreads cannot be called here (inside a metamethod or C call)");
  return lua_yield(L, 0);
}

static int l_threadfence(lua_State *L) {
  need_kernel(L, "cuda.threadfence");
  return 0;
}

/* cuda.cg.this_grid(): the grid group, one object (upvalue 1) whose
** methods are the functions below; compiled kernels never make it (the
** typer knows the calls, ir_type_cuda.c). */
#define GRIDGROUP_MT "kjit.cuda.grid_group"

static int l_this_grid(lua_State *L) {
  need_kernel(L, "cuda.cg.this_grid");
  lua_pushvalue(L, lua_upvalueindex(1));
  return 1;
}

/* g:m() or numba-cuda's g.m() (no self: there is one grid). */
static void check_group(lua_State *L, const char *m) {
  if (!lua_isnone(L, 1) && luaL_testudata(L, 1, GRIDGROUP_MT) == NULL)
    luaL_error(L, "bad argument #1 to '%s' (a grid group expected: call it as g:%s() with "
               "g = cuda.cg.this_grid())", m, m);
}

/* g:sync(): waits for every thread of the grid (interp_launch). */
static int l_grid_sync(lua_State *L) {
  check_group(L, "sync");
  need_kernel(L, "sync");
  kki_cur->th[kki_cur->cur].op = KI_GRID_SYNC;
  if (!lua_isyieldable(L))
    return luaL_error(L, "sync cannot be called here (inside a metamethod or C call)");
  return lua_yield(L, 0);
}

/* g:thread_rank(), g:size(): as cg_cuda_intrin.c's grid_rank */
static int l_grid_rank(lua_State *L) {
  check_group(L, "thread_rank");
  Interp *t = need_kernel(L, "thread_rank");
  lua_Integer nb = (lua_Integer)t->block[0] * t->block[1] * t->block[2];
  lua_Integer blk = ((lua_Integer)t->bid[2] * t->grid[1] + t->bid[1]) * t->grid[0] + t->bid[0];
  lua_Integer tid = ((lua_Integer)t->tid[2] * t->block[1] + t->tid[1]) * t->block[0] + t->tid[0];
  lua_pushinteger(L, blk * nb + tid);
  return 1;
}

static int l_grid_size(lua_State *L) {
  check_group(L, "size");
  Interp *t = need_kernel(L, "size");
  lua_pushinteger(L, (lua_Integer)t->block[0] * t->block[1] * t->block[2] * t->grid[0] *
                     t->grid[1] * t->grid[2]);
  return 1;
}

/* Puts cuda.cg (this_grid) into the cuda table at idx. */
static void open_cg(lua_State *L, int idx) {
  static const struct { lua_CFunction f; int id; } methods[] = {
    { l_grid_sync, B_CUDA_CG_SYNC }, { l_grid_rank, B_CUDA_CG_THREAD_RANK },
    { l_grid_size, B_CUDA_CG_SIZE },
  };
  idx = lua_absindex(L, idx);
  lua_newtable(L);   /* cuda.cg */
  lua_newuserdatauv(L, 1, 0);   /* the group */
  if (luaL_newmetatable(L, GRIDGROUP_MT)) {
    lua_newtable(L);
    for (int i = 0; i < 3; i++) {
      lua_pushcfunction(L, methods[i].f);
      kir_builtin_register(L, -1, methods[i].id);
      lua_setfield(L, -2, kir_builtin_name(methods[i].id));
    }
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "kjit.cuda grid group");
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
  lua_pushcclosure(L, l_this_grid, 1);
  kir_builtin_register(L, -1, B_CUDA_CG_THIS_GRID);
  lua_setfield(L, -2, "this_grid");
  lua_setfield(L, idx, "cg");
}

static kjit_dtype arr_dtype(lua_State *L, int idx) {
  return kb_checkdtype(L, idx, KJIT_F64);
}

/* A size n, or a shape {n, m, ...} (numba's (n, m)), at 1: its ndim. */
static int arr_shape(lua_State *L, int64_t shape[KJIT_MAXDIMS], int minlen) {
  if (lua_type(L, 1) != LUA_TTABLE) {
    lua_Integer n = luaL_checkinteger(L, 1);
    luaL_argcheck(L, n >= minlen && n <= (1 << 24), 1, "size out of range");
    shape[0] = n;
    shape[1] = shape[2] = shape[3] = 1;
    return 1;
  }
  int nd = kb_checkshape(L, 1, shape);
  int64_t cnt = 1;
  for (int k = 0; k < nd; k++) {
    luaL_argcheck(L, shape[k] >= 1 && shape[k] <= (1 << 24), 1, "extent out of range");
    cnt *= shape[k];
    luaL_argcheck(L, cnt <= (1 << 24), 1, "size out of range");
  }
  return nd;
}

static int l_shared_array(lua_State *L) {
  Interp *t = need_kernel(L, "cuda.shared.array");
  int64_t shape[KJIT_MAXDIMS];
  int nd = arr_shape(L, shape, 0);
  lua_Integer n = shape[0];
  kjit_dtype d = arr_dtype(L, 2);
  if (nd == 1 && n == 0) n = (lua_Integer)(t->dynbytes / kjit_dtype_size(d));
  /* one array per call site and block, as on the GPU */
  lua_Debug ar;
  const char *site = "?";
  int line = 0;
  if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar)) { site = ar.source; line = ar.currentline; }
  lua_rawgeti(L, LUA_REGISTRYINDEX, t->shared_ref);
  lua_pushfstring(L, "%s:%d:%d:%d:%d:%s", site, line, (int)shape[0], (int)shape[1] * nd,
                  (int)(shape[2] * shape[3]), kjit_dtype_name(d));
  lua_pushvalue(L, -1);
  if (lua_rawget(L, -3) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  shape[0] = n;
  if (nd == 1 && shape[0] > 0 && n * (lua_Integer)kjit_dtype_size(d) <= (lua_Integer)t->dynbytes &&
      lua_type(L, 1) == LUA_TNUMBER && lua_tointeger(L, 1) == 0) {
    /* dynamic shared memory (size 0): one block of bytes per block, which
    ** every dynamic array of the block views whatever its dtype or call
    ** site, as on the GPU (numba-cuda: they all start at the same address;
    ** slices place several arrays in it) */
    if (lua_getfield(L, -2, "dynamic memory") == LUA_TNIL) {
      lua_pop(L, 1);
      int64_t bytes[KJIT_MAXDIMS] = { (int64_t)t->dynbytes, 1, 1, 1 };
      kb_push_new(L, KJIT_U8, 1, bytes, 1);
      lua_pushvalue(L, -1);
      lua_setfield(L, -4, "dynamic memory");
    }
    KBuffer *base = kb_check(L, -1);
    kb_push_borrowed(L, base->data, d, 1, shape, NULL, NULL);
    lua_insert(L, -2);
    lua_setiuservalue(L, -2, 1);   /* the view keeps the block's bytes alive */
  } else {
    kb_push_new(L, d, nd, shape, 1);
  }
  lua_pushvalue(L, -2);
  lua_pushvalue(L, -2);
  lua_rawset(L, -5);
  return 1;
}

static int l_local_array(lua_State *L) {
  need_kernel(L, "cuda.local_array");
  int64_t shape[KJIT_MAXDIMS];
  int nd = arr_shape(L, shape, 1);
  kjit_dtype d = arr_dtype(L, 2);
  kb_push_new(L, d, nd, shape, 1);
  return 1;
}

enum { AT_ADD, AT_SUB, AT_MAX, AT_MIN, AT_EXCH, AT_CAS };

/* The interpreted atomics: the launcher runs one coroutine at a time, so a
** read-modify-write is atomic. Integer arithmetic wraps in the element
** type, as the hardware's does. */
static int atomic_op(lua_State *L, int op) {
  need_kernel(L, "cuda.atomic");
  KBuffer *b = kb_check(L, 1);
  if (b->ndim != 1) return luaL_argerror(L, 1, "1-D array expected");
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || i > b->shape[0]) return kb_bounds_error(L, i, b->shape[0]);
  int64_t k = i - 1;
  kb_push_element(L, b, k);    /* the old value: the result */
  int isf = kb_dtype_isfloat(b->dtype);
  switch (b->dtype) {
  case KJIT_I32: case KJIT_U32: case KJIT_I64: case KJIT_U64: case KJIT_F32: case KJIT_F64: break;
  default: return luaL_error(L, "cuda.atomic: atomics work on i32, u32, i64, u64, f32 and f64 arrays");
  }
  if (op == AT_CAS && isf) return luaL_error(L, "cuda.atomic.cas works on integer arrays only");
  int top = lua_gettop(L);
  if (op == AT_EXCH) { kb_store_element(L, b, k, 3); lua_settop(L, top); return 1; }
  if (op == AT_CAS) {
    /* compare in the element type: store the expected value into a probe */
    int64_t shape[KJIT_MAXDIMS] = { 1, 1, 1, 1 };
    KBuffer *probe = kb_push_new(L, b->dtype, 1, shape, 1);
    kb_store_element(L, probe, 0, 3);
    size_t es = kjit_dtype_size(b->dtype);
    if (memcmp(probe->data, b->data + k * (int64_t)es, es) == 0) kb_store_element(L, b, k, 4);
    lua_settop(L, top);
    return 1;
  }
  if (isf) {
    lua_Number old = lua_tonumber(L, top), v = luaL_checknumber(L, 3);
    lua_Number r = op == AT_ADD ? old + v : op == AT_SUB ? old - v :
                   op == AT_MAX ? (v > old ? v : old) : (v < old ? v : old);
    lua_pushnumber(L, r);
  } else {
    int64_t shape[KJIT_MAXDIMS] = { 1, 1, 1, 1 };
    KBuffer *probe = kb_push_new(L, b->dtype, 1, shape, 1);
    kb_store_element(L, probe, 0, 3);   /* v converted with the store rules */
    uint64_t old = 0, v = 0;
    size_t es = kjit_dtype_size(b->dtype);
    memcpy(&old, b->data + k * (int64_t)es, es);
    memcpy(&v, probe->data, es);
    int uns = b->dtype == KJIT_U32 || b->dtype == KJIT_U64;
    int64_t so = es == 4 ? (int64_t)(int32_t)old : (int64_t)old;
    int64_t sv = es == 4 ? (int64_t)(int32_t)v : (int64_t)v;
    uint64_t r;
    switch (op) {
    case AT_ADD: r = old + v; break;
    case AT_SUB: r = old - v; break;
    case AT_MAX: r = uns ? (v > old ? v : old) : (uint64_t)(sv > so ? sv : so); break;
    default: r = uns ? (v < old ? v : old) : (uint64_t)(sv < so ? sv : so); break;
    }
    memcpy(b->data + k * (int64_t)es, &r, es);
    lua_settop(L, top);
    return 1;
  }
  kb_store_element(L, b, k, -1);
  lua_settop(L, top);
  return 1;
}

static int l_atomic_add(lua_State *L) { return atomic_op(L, AT_ADD); }
static int l_atomic_sub(lua_State *L) { return atomic_op(L, AT_SUB); }
static int l_atomic_max(lua_State *L) { return atomic_op(L, AT_MAX); }
static int l_atomic_min(lua_State *L) { return atomic_op(L, AT_MIN); }
static int l_atomic_exch(lua_State *L) { return atomic_op(L, AT_EXCH); }
static int l_atomic_cas(lua_State *L) { return atomic_op(L, AT_CAS); }

static const struct { lua_CFunction f; int id; const char *table, *name; } cuda_fns[] = {
  { l_grid, B_CUDA_GRID, NULL, "grid" },
  { l_gridsize, B_CUDA_GRIDSIZE, NULL, "gridsize" },
  { l_syncthreads, B_CUDA_SYNCTHREADS, NULL, "syncthreads" },
  { l_threadfence, B_CUDA_THREADFENCE, NULL, "threadfence" },
  { l_shared_array, B_CUDA_SHARED_ARRAY, "shared", "array" },
  { l_local_array, B_CUDA_LOCAL_ARRAY, NULL, "local_array" },
  { l_atomic_add, B_CUDA_ATOMIC_ADD, "atomic", "add" },
  { l_atomic_sub, B_CUDA_ATOMIC_SUB, "atomic", "sub" },
  { l_atomic_max, B_CUDA_ATOMIC_MAX, "atomic", "max" },
  { l_atomic_min, B_CUDA_ATOMIC_MIN, "atomic", "min" },
  { l_atomic_exch, B_CUDA_ATOMIC_EXCH, "atomic", "exch" },
  { l_atomic_cas, B_CUDA_ATOMIC_CAS, "atomic", "cas" },
};

typedef struct Dim3 { int id; } Dim3;

static int dim3_index(lua_State *L) {
  Dim3 *d = luaL_checkudata(L, 1, DIM3_MT);
  const char *k = luaL_checkstring(L, 2);
  static const char *const names[] = { "cuda.threadIdx", "cuda.blockIdx", "cuda.blockDim", "cuda.gridDim" };
  int g = d->id - B_CUDA_THREADIDX;
  Interp *t = need_kernel(L, names[g]);
  if (!((k[0] == 'x' || k[0] == 'y' || k[0] == 'z') && k[1] == 0))
    return luaL_error(L, "%s has no field '%s' (x, y, z)", names[g], k);
  int a = k[0] - 'x';
  unsigned v = g == 0 ? t->tid[a] : g == 1 ? t->bid[a] : g == 2 ? t->block[a] : t->grid[a];
  lua_pushinteger(L, v);
  return 1;
}

static int dim3_tostring(lua_State *L) {
  Dim3 *d = luaL_checkudata(L, 1, DIM3_MT);
  lua_pushfstring(L, "%s", kir_builtin_name(d->id));
  return 1;
}

/* One block of an interpreted launch: its threads' coroutines (a table
** at stack index co), their states (KKI_*), whether each started. */
typedef struct IBlock {
  unsigned bid[3];
  int shared_ref;              /* registry: its shared arrays */
  int co;                      /* stack index of its coroutines */
  char *state, *started;
  KIBlock kb;
  size_t done;                 /* threads that returned */
} IBlock;

/* The blocks running (at most one unless they wait at the grid barrier). */
typedef struct ILaunch { IBlock *act; size_t nact; } ILaunch;

/* Raises the message on the stack top after releasing the blocks'
** shared arrays. */
static void ilaunch_fail(lua_State *L, ILaunch *il) {
  for (size_t b = 0; b < il->nact; b++) luaL_unref(L, LUA_REGISTRYINDEX, il->act[b].shared_ref);
  il->nact = 0;
  lua_error(L);
}

/* Starts block bid: a coroutine per thread, on the stack (a table, a
** state array and a KIThread array) until the blocks running finish. */
static void iblock_start(lua_State *L, IBlock *b, const unsigned bid[3], size_t nthreads,
                         int fidx, int argbase, int nargs) {
  memset(b, 0, sizeof *b);
  memcpy(b->bid, bid, sizeof b->bid);
  b->shared_ref = LUA_NOREF;
  b->state = lua_newuserdatauv(L, 2 * nthreads, 0);
  b->started = b->state + nthreads;
  b->kb.th = lua_newuserdatauv(L, nthreads * sizeof(KIThread), 0);
  b->kb.n = nthreads;
  lua_createtable(L, (int)nthreads, 0);
  b->co = lua_gettop(L);
  for (size_t i = 0; i < nthreads; i++) {
    lua_State *co = lua_newthread(L);
    lua_pushvalue(L, fidx);
    for (int a = 0; a < nargs; a++) lua_pushvalue(L, argbase + a);
    lua_xmove(L, co, nargs + 1);
    lua_rawseti(L, b->co, (lua_Integer)i + 1);
    b->state[i] = KKI_RUN;
    b->started[i] = 0;
  }
  lua_newtable(L);
  b->shared_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Runs block b until every thread returned (1) or its live threads all
** wait at the grid barrier (0): runs every runnable thread until it waits
** or ends; then completes the warp meetings that can be (kernel_intrin.h),
** else, when every live thread waits at a block barrier, releases it (a
** thread passes a barrier after every thread reached it or ended). Raises
** a thread's error and the deadlocks (ilaunch_fail). */
static int iblock_run(lua_State *L, ILaunch *il, IBlock *b, Interp *it, const Launcher *c,
                      int nargs) {
  size_t n = b->kb.n;
  memcpy(it->bid, b->bid, sizeof it->bid);
  it->shared_ref = b->shared_ref;
  for (;;) {
    for (size_t i = 0; i < n; i++) {
      if (b->state[i] != KKI_RUN) continue;
      lua_rawgeti(L, b->co, (lua_Integer)i + 1);
      lua_State *co = lua_tothread(L, -1);
      lua_pop(L, 1);   /* the table keeps it */
      it->tid[0] = (unsigned)(i % c->block[0]);
      it->tid[1] = (unsigned)((i / c->block[0]) % c->block[1]);
      it->tid[2] = (unsigned)(i / ((size_t)c->block[0] * c->block[1]));
      int nres;
      icur = it;
      kki_cur = &b->kb;
      b->kb.cur = i;
      b->kb.th[i].op = -1;   /* a yield from elsewhere is a barrier, as before */
      int st = lua_resume(co, L, b->started[i] ? 0 : nargs, &nres);
      b->started[i] = 1;
      icur = NULL;
      kki_cur = NULL;
      if (st == LUA_YIELD) {
        lua_pop(co, nres);
        int op = b->kb.th[i].op;
        b->state[i] = KI_IS_WARP(op) ? KKI_WARP : op == KI_GRID_SYNC ? KKI_GRID : KKI_BAR;
        continue;
      }
      b->state[i] = KKI_DONE;
      b->done++;
      if (st != LUA_OK) {
        const char *msg = lua_tostring(co, -1);
        lua_pushfstring(L, "%s (in thread (%d,%d,%d) of block (%d,%d,%d))",
                        msg ? msg : "error object is not a string", (int)it->tid[0],
                        (int)it->tid[1], (int)it->tid[2], (int)b->bid[0], (int)b->bid[1],
                        (int)b->bid[2]);
        ilaunch_fail(L, il);
      }
    }
    if (b->done == n) return 1;
    if (kki_resolve(&b->kb, b->state) > 0) continue;
    size_t atbar = 0, atgrid = 0;
    for (size_t i = 0; i < n; i++) {
      atbar += b->state[i] == KKI_BAR;
      atgrid += b->state[i] == KKI_GRID;
    }
    if (atgrid + b->done == n) return 0;
    if (atgrid > 0) {
      luaL_where(L, 1);
      lua_pushstring(L, "kjit.cuda simulator: " GRID_DEADLOCK);
      lua_concat(L, 2);
      ilaunch_fail(L, il);
    }
    if (atbar + b->done < n) {
      luaL_where(L, 1);
      lua_pushfstring(L, "kernel deadlock in block (%d,%d,%d): threads wait at a warp collective "
                      "(shfl_sync, ballot_sync ...) for lanes of its mask that wait at "
                      "cuda.syncthreads", (int)b->bid[0], (int)b->bid[1], (int)b->bid[2]);
      lua_concat(L, 2);
      ilaunch_fail(L, il);
    }
    kki_release(&b->kb, b->state);
  }
}

/* Runs fn (at fidx) for every thread of the grid, one coroutine per thread
** of a block (iblock_run). Blocks run one after another; a block whose
** threads wait at the grid barrier (cuda.cg) stays, and the next starts;
** when every block has started and every live thread of the grid waits
** there, all pass it and the blocks waiting run again, in order (the
** compiled simulator, cudasim.c, runs them all at once from the start).
** Arguments: the nargs values at argbase (device arrays already replaced
** by views). */
static void interp_launch(lua_State *L, int fidx, const Launcher *c, int argbase, int nargs) {
  size_t nthreads = (size_t)c->block[0] * c->block[1] * c->block[2];
  if (nthreads > 1024) luaL_error(L, "kernel launch: %I threads per block (at most 1024)", (lua_Integer)nthreads);
  size_t nblocks = (size_t)c->grid[0] * c->grid[1] * c->grid[2];
  Interp it;
  memset(&it, 0, sizeof it);
  memcpy(it.block, c->block, sizeof it.block);
  memcpy(it.grid, c->grid, sizeof it.grid);
  it.dynbytes = c->shared;
  if (icur) luaL_error(L, "cannot launch a kernel from inside a kernel");
  luaL_checkstack(L, nargs + 40, "too many threads");
  int base = lua_gettop(L);
  /* at most as many blocks wait at the grid barrier as the limit allows */
  size_t cap = KSIM_GRID_MAX_THREADS / nthreads + 1;
  ILaunch il = { lua_newuserdatauv(L, cap * sizeof(IBlock), 0), 0 };
  int actbase = lua_gettop(L);
  size_t next = 0;
  while (il.nact > 0 || next < nblocks) {
    size_t from;
    if (next < nblocks) {
      if (il.nact > 0 && (uint64_t)nblocks * nthreads > KSIM_GRID_MAX_THREADS) {
        luaL_where(L, 1);
      lua_pushstring(L, "kjit.cuda simulator: " GRID_TOO_LARGE);
      lua_concat(L, 2);
        ilaunch_fail(L, &il);
      }
      unsigned bid[3] = { (unsigned)(next % c->grid[0]),
                          (unsigned)((next / c->grid[0]) % c->grid[1]),
                          (unsigned)(next / ((size_t)c->grid[0] * c->grid[1])) };
      luaL_checkstack(L, 8, "too many blocks");
      iblock_start(L, &il.act[il.nact], bid, nthreads, fidx, argbase, nargs);
      from = il.nact++;
      next++;
    } else {
      /* every block started, every live thread at the grid barrier: all pass */
      for (size_t b = 0; b < il.nact; b++)
        for (size_t i = 0; i < nthreads; i++)
          if (il.act[b].state[i] == KKI_GRID) il.act[b].state[i] = KKI_RUN;
      from = 0;
    }
    size_t keep = from;
    for (size_t b = from; b < il.nact; b++) {
      if (iblock_run(L, &il, &il.act[b], &it, c, nargs)) {
        luaL_unref(L, LUA_REGISTRYINDEX, il.act[b].shared_ref);
        il.act[b].shared_ref = LUA_NOREF;
      } else {
        il.act[keep++] = il.act[b];
      }
    }
    il.nact = keep;
    if (il.nact == 0) lua_settop(L, actbase);   /* the finished blocks' coroutines */
  }
  lua_settop(L, base);
}

/* ---- Launching ---------------------------------------------------------------------- */

/* One launch dimension: a number with an integer value (4 or 4.0, as
** Lua's integer conversion takes it; never a string), from 1 to 2^31 - 1,
** the same rule for a bare dimension and for each of {x, y, z}. */
static unsigned read_dim(lua_State *L, int idx, const char *what, int i) {
  int ok = 0;
  lua_Integer x = 0;
  if (lua_type(L, idx) == LUA_TNUMBER) x = lua_tointegerx(L, idx, &ok);
  if (!ok || x < 1 || x > 0x7fffffff) {
    const char *got = lua_type(L, idx) == LUA_TNUMBER ? luaL_tolstring(L, idx, NULL)
                                                       : luaL_typename(L, idx);
    if (i > 0)
      luaL_error(L, "kernel launch: %s[%d] must be a positive integer (at most 2^31-1), got %s", what,
                 i, got);
    luaL_error(L, "kernel launch: %s must be an integer or {x, y, z} (from 1 to 2^31-1), got %s",
               what, got);
  }
  return (unsigned)x;
}

/* Reads an integer or {x, y, z} into v[3]. */
static void read_dim3(lua_State *L, int idx, unsigned v[3], const char *what) {
  v[0] = v[1] = v[2] = 1;
  if (!lua_istable(L, idx)) { v[0] = read_dim(L, idx, what, 0); return; }
  int n = (int)luaL_len(L, idx);
  if (n < 1 || n > 3) luaL_error(L, "kernel launch: %s must have 1 to 3 dimensions", what);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    v[i] = read_dim(L, -1, what, i + 1);
    lua_pop(L, 1);
  }
}

/* The launch shapes every CUDA GPU refuses (compute capability 5.0 and
** up), refused in every mode, so the simulators accept exactly what a GPU
** would: grid y and z at most 65535 (x at most 2^31 - 1, read_dim3), block
** x and y at most 1024, z at most 64, 1024 threads per block. */
static void check_shape(lua_State *L, const Launcher *c) {
  static const char xyz[] = "xyz";
  for (int i = 1; i < 3; i++)
    if (c->grid[i] > 65535)
      luaL_error(L, "kernel launch: grid %c is %d (at most 65535)", xyz[i], (int)c->grid[i]);
  for (int i = 0; i < 3; i++) {
    unsigned lim = i == 2 ? 64 : 1024;
    if (c->block[i] > lim)
      luaL_error(L, "kernel launch: block %c is %d (at most %d)", xyz[i], (int)c->block[i], (int)lim);
  }
  uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
  if (threads > 1024)
    luaL_error(L, "kernel launch: %I threads per block (at most 1024)", (lua_Integer)threads);
}

/* k[{grid, block [, stream [, shared_bytes]]}]: the launcher for that
** config, from the kernel's cache when one with the same config exists. */
static int push_launcher(lua_State *L, int kidx, int cfg) {
  Launcher c;
  memset(&c, 0, sizeof c);
  lua_geti(L, cfg, 1);
  read_dim3(L, -1, c.grid, "grid");
  lua_geti(L, cfg, 2);
  read_dim3(L, -1, c.block, "block");
  check_shape(L, &c);
  lua_geti(L, cfg, 3);   /* stream */
  int sidx = lua_gettop(L);
  if (!lua_isnil(L, sidx) && !(lua_isinteger(L, sidx) && lua_tointeger(L, sidx) == 0)) {
    if (!lua_isuserdata(L, sidx)) luaL_error(L, "kernel launch: config[3] must be a stream (cuda.stream()) or 0");
    c.stream = lua_topointer(L, sidx);
  }
  lua_geti(L, cfg, 4);
  if (!lua_isnil(L, -1)) {
    int ok;
    lua_Integer sh = lua_tointegerx(L, -1, &ok);
    if (!ok || sh < 0) luaL_error(L, "kernel launch: shared_bytes must be a non-negative integer");
    /* the limit without cuFuncSetAttribute opt-in, on every GPU since Volta */
    if (sh > 48 * 1024)
      luaL_error(L, "kernel launch: %I bytes of dynamic shared memory (at most 49152)", (lua_Integer)sh);
    c.shared = (unsigned)sh;
  }
  lua_pop(L, 1);
  /* the cache is keyed by a hash of the config; entries are compared */
  uint64_t h = 1469598103934665603ull;
  const unsigned char *bytes = (const unsigned char *)&c;
  for (size_t i = 0; i < sizeof c; i++) h = (h ^ bytes[i]) * 1099511628211ull;
  lua_Integer key = (lua_Integer)(h >> 1);
  lua_getiuservalue(L, kidx, 2);
  int cache = lua_gettop(L);
  if (lua_rawgeti(L, cache, key) == LUA_TUSERDATA) {
    Launcher *old = lua_touserdata(L, -1);
    if (memcmp(old, &c, sizeof c) == 0) return 1;
  }
  lua_pop(L, 1);
  Launcher *l = lua_newuserdatauv(L, sizeof *l, 2);
  *l = c;
  luaL_setmetatable(L, LAUNCHER_MT);
  lua_pushvalue(L, kidx);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, sidx);
  lua_setiuservalue(L, -2, 2);
  /* bounded: a kernel launched with ever-new configs starts a new cache */
  Kernel *k = lua_touserdata(L, kidx);
  if (++k->ncfg > 64) {
    k->ncfg = 1;
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, kidx, 2);
    lua_replace(L, cache);
  }
  lua_pushvalue(L, -1);
  lua_rawseti(L, cache, key);
  return 1;
}

/* Writes (and frees) the lines a simulated kernel printed, through Lua's
** io.write when the io library is there, else to stdout. */
static void write_printed(lua_State *L, char *text) {
  int top = lua_gettop(L);
  lua_pushstring(L, text);
  free(text);
  if (lua_getglobal(L, "io") == LUA_TTABLE && lua_getfield(L, -1, "write") == LUA_TFUNCTION) {
    lua_pushvalue(L, top + 1);
    lua_call(L, 1, 0);
  } else {
    fputs(lua_tostring(L, top + 1), stdout);
  }
  lua_settop(L, top);
}

static void run_sim(lua_State *L, KernSpec *s, const Launcher *c, int argbase, int nargs,
                    const LaunchArrays *la) {
  int64_t slots[KJIT_MAXARGS];
  KBuffer tmp[KJIT_MAXARGS];
  for (int i = 0; i < s->nargs; i++) {
    int idx = argbase + i;
    Type p = s->args[i];
    slots[i] = 0;
    if (i >= nargs) continue;
    switch (p.kind) {
    case T_INT: slots[i] = lua_tointeger(L, idx); break;
    case T_F64: case T_F32: { double d = lua_tonumber(L, idx); memcpy(&slots[i], &d, 8); break; }
    case T_BOOL: slots[i] = lua_toboolean(L, idx); break;
    case T_BUF: {   /* an array (spec_fits), recognised by arg_type */
      KBuffer *b = la->buf[i];
      if (b == NULL) {
        KDevArray *d = la->dev[i];
        kcu_check_usable(L, d, i + 1);
        memset(&tmp[i], 0, sizeof tmp[i]);
        tmp[i].data = (char *)(uintptr_t)d->ptr;
        memcpy(tmp[i].shape, d->shape, sizeof tmp[i].shape);
        tmp[i].size = d->size;
        tmp[i].ndim = d->ndim;
        tmp[i].dtype = d->dtype;
        tmp[i].record = d->record;
        b = &tmp[i];
      }
      slots[i] = (int64_t)(intptr_t)b;
      break;
    }
    default: break;
    }
  }
  size_t nthreads = (size_t)c->block[0] * c->block[1] * c->block[2];
  if (nthreads > 1024) luaL_error(L, "kernel launch: %I threads per block (at most 1024)", (lua_Integer)nthreads);
  KErr e;
  unsigned tid[3], bid[3];
  krt_poll_begin(L, &e);   /* kjit_rt_poll's context (runtime_poll.c) */
  char *printed = NULL;
  int rc = ksim_run(s->entry, slots, c->grid, c->block, c->shared, s->uses_sync, &e, tid, bid,
                    &printed);
  if (printed) write_printed(L, printed);
  if (rc < 0) luaL_error(L, "kjit.cuda simulator: %s", e.msg ? e.msg : "failed");
  if (rc > 0) { push_kernel_error(L, &e, tid, bid); lua_error(L); }
}

/* The spec's module on device dev, loaded there at its first launch and
** kept for the spec's life: a kernel launched on devices 0, 1, 0, 1 loads
** two modules. Each step can raise: a half-prepared entry (func or errrec
** still 0) is prepared again at the next launch. */
static KDevMod *gpu_prepare(lua_State *L, KernSpec *s, int dev) {
  if (dev >= s->ndm) {
    KDevMod *v = realloc(s->dm, (size_t)(dev + 1) * sizeof *v);
    if (v == NULL) luaL_error(L, "not enough memory");
    memset(v + s->ndm, 0, (size_t)(dev + 1 - s->ndm) * sizeof *v);
    s->dm = v;
    s->ndm = dev + 1;
  }
  KDevMod *m = devmod(s, dev);   /* forgotten if cuda.close() released its context */
  if (m->mod && m->func && m->ready) return m;
  m->gen = kcu_gen(0, dev);     /* the context current now (run_gpu's caller ensured it) */
  if (m->mod == NULL) {
    char ext[128];
    if (s->nlink > 0)   /* external device functions: the driver's linker (kernel_link.c) */
      m->mod = kcu_module_link(L, s->ptx, s->nlink, s->link);
    else if (klink_first_extern(s->ptx, ext, sizeof ext))
      luaL_error(L, "kjit.cuda: the kernel calls the external device function '%s' "
                 "(cuda.declare_device) but has no link files to find it in: "
                 "cuda.jit(fn, {link = {\"functions.cu\"}})", ext);
    else
      m->mod = kcu_module_load(L, s->ptx);
  }
  if (m->func == NULL) m->func = kcu_get_function(L, m->mod, s->name);
  if (m->errrec == 0) m->errrec = kcu_alloc(L, KJIT_KERR_WORDS * 8);
  int64_t zero[KJIT_KERR_WORDS];
  memset(zero, 0, sizeof zero);
  kcu_memcpy_htod(L, m->errrec, zero, sizeof zero, NULL);
  m->ready = 1;
  return m;
}

/* Host buffers passed to a GPU kernel: copied in before, out after,
** through device arrays on the Lua stack, so an error anywhere leaves
** their memory to the GC. */
typedef struct HostCopy { KBuffer *b; KCuDevPtr d; size_t bytes; } HostCopy;

/* Returns the number of host arrays copied (mapped and managed arrays are
** passed by their device address: not copied, not counted). */
static int run_gpu(lua_State *L, KernSpec *s, const Launcher *c, int argbase, int nargs, KCuStream stream,
                   const LaunchArrays *la) {
  luaL_checkstack(L, KJIT_MAXARGS + 8, "kernel arguments");
  int dev = kcu_device();
  KDevMod *dm = gpu_prepare(L, s, dev);
  uint64_t vals[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 2];
  void *params[KJIT_MAXARGS * (KJIT_MAXDIMS + 1) + 2];
  HostCopy hc[KJIT_MAXARGS];
  int nh = 0, np = 0, inplace = 0;
  for (int i = 0; i < s->nargs; i++) {
    int idx = argbase + i;
    Type p = s->args[i];
    switch (p.kind) {
    case T_INT: vals[np] = (uint64_t)(i < nargs ? lua_tointeger(L, idx) : 0); params[np] = &vals[np]; np++; break;
    case T_F64: { double d = i < nargs ? lua_tonumber(L, idx) : 0; memcpy(&vals[np], &d, 8); params[np] = &vals[np]; np++; break; }
    case T_F32: { float f = (float)(i < nargs ? lua_tonumber(L, idx) : 0); vals[np] = 0; memcpy(&vals[np], &f, 4); params[np] = &vals[np]; np++; break; }
    case T_BOOL: vals[np] = (uint64_t)lua_toboolean(L, idx); params[np] = &vals[np]; np++; break;
    case T_BUF: {   /* an array (spec_fits), recognised by arg_type */
      KBuffer *b = la->buf[i];
      const int64_t *shape;
      KCuDevPtr ptr;
      size_t bytes = b ? (size_t)b->size * (b->record ? (size_t)b->record->size
                                                      : kjit_dtype_size(b->dtype)) : 0;
      if (b && kcu_host_mapped(b->data, bytes, &ptr)) {   /* hostmem.c: in place */
        inplace = 1;
        shape = b->shape;
      } else if (b) {
        KDevArray *tmp = b->record ? kcu_push_devrecords(L, b->record, b->ndim, b->shape)
                                   : kcu_push_devarray(L, b->dtype, b->ndim, b->shape);
        ptr = tmp->ptr;
        hc[nh].b = b; hc[nh].d = ptr; hc[nh].bytes = bytes; nh++;
        kcu_memcpy_htod(L, ptr, b->data, bytes, stream);
        shape = b->shape;
      } else {
        KDevArray *d = la->dev[i];
        kcu_check_usable_kernel(L, d, i + 1);
        ptr = d->ptr;
        shape = d->shape;
      }
      vals[np] = ptr; params[np] = &vals[np]; np++;
      for (int k = 0; k < p.ndim; k++) { vals[np] = (uint64_t)shape[k]; params[np] = &vals[np]; np++; }
      break;
    }
    default: break;
    }
  }
  vals[np] = dm->errrec; params[np] = &vals[np]; np++;
  vals[np] = c->shared; params[np] = &vals[np]; np++;
  if (s->uses_sync & KI_USES_GRID)   /* cuda.cg's grid sync: every block resident */
    kcu_launch_cooperative(L, dm->func, c->grid, c->block, c->shared, stream, params);
  else
    kcu_launch(L, dm->func, c->grid, c->block, c->shared, stream, params);
  dm->launched = 1;
  pending_add(s);
  if (nh > 0 || inplace) {
    for (int i = 0; i < nh; i++) kcu_memcpy_dtoh(L, hc[i].b->data, hc[i].d, hc[i].bytes, stream);
    kcu_sync(L, stream);   /* raises a kernel error through the sync hook */
  }
  return nh;
}

/* A performance warning (Lua's warn: off until "@on" or lua5.4 -W), once
** per specialization, at its second launch with host arrays: every such
** launch copies them to the device and back, which costs more than most
** kernels. */
static void warn_host_arrays(lua_State *L, int kidx) {
  lua_Debug ar;
  if (((Kernel *)lua_touserdata(L, kidx))->loaded) return;   /* no Lua function */
  lua_getiuservalue(L, kidx, 1);
  lua_getinfo(L, ">S", &ar);
  lua_pushfstring(L, "kjit: the kernel at %s:%d is launched with host arrays again: each "
                  "launch copies them to the GPU and back (copy them once with "
                  "cuda.to_device and pass the device arrays)", ar.short_src, ar.linedefined);
  lua_warning(L, lua_tostring(L, -1), 0);
  lua_pop(L, 1);
}

/* launcher(args...) */
static int launcher_call(lua_State *L) {
  Launcher *c = test_upmeta(L, 1, UP_LAUNCHER_MT);
  if (c == NULL) return luaL_typeerror(L, 1, LAUNCHER_MT);
  int nargs = lua_gettop(L) - 1;
  if (nargs > KJIT_MAXARGS) return luaL_error(L, "too many kernel arguments (at most %d)", KJIT_MAXARGS);
  Type t[KJIT_MAXARGS];
  LaunchArrays la;
  for (int i = 0; i < nargs; i++) t[i] = arg_type(L, 2 + i, i + 1, &la, i);
  lua_getiuservalue(L, 1, 1);
  int kidx = lua_gettop(L);
  Kernel *k = lua_touserdata(L, kidx);
  if (k->dead) return luaL_error(L, "kernel used after it was finalized");
  int mode = kcu_sim_mode();
  if (mode == 2 && k->loaded)
    return luaL_error(L, "kjit: a kernel loaded from exported code has no Lua function for the "
                      "interpreted simulator (KJIT_CUDASIM=2): use KJIT_CUDASIM=1");
  if (mode == 2) {
    /* the plain Lua function; device arrays become views of their memory */
    for (int i = 0; i < nargs; i++) {
      KDevArray *d = la.dev[i];
      if (d) {
        kcu_check_usable(L, d, i + 1);
        if (d->record)   /* records: a borrowed array of records */
          krec_push_borrowed(L, (void *)(uintptr_t)d->ptr, d->record, d->ndim, d->shape, NULL, NULL);
        else
          kb_push_borrowed(L, (void *)(uintptr_t)d->ptr, d->dtype, d->ndim, d->shape, NULL, NULL);
        /* the view keeps the device array (whose userdata holds the
        ** memory) alive, even if the kernel stores it somewhere */
        lua_pushvalue(L, 2 + i);
        lua_setiuservalue(L, -2, 1);
        lua_replace(L, 2 + i);
      }
    }
    lua_getiuservalue(L, kidx, 1);
    interp_launch(L, lua_gettop(L), c, 2, nargs);
    return 0;
  }
  Type ct[KJIT_MAXARGS];
  if (mode == 1) {
    KernSpec *s = find_kspec(k, t, nargs, KT_SIM, 0);
    if (s == NULL) s = compile_kernel(L, kidx, ct, launch_types(k, t, nargs, ct), KT_SIM, 0);
    run_sim(L, s, c, 2, nargs, &la);
    return 0;
  }
  int cc = kcu_compute_capability(L);   /* makes the context current (kcu_ensure) */
  KernSpec *s = find_kspec(k, t, nargs, KT_NVPTX, cc);
  if (s == NULL) s = compile_kernel(L, kidx, ct, launch_types(k, t, nargs, ct), KT_NVPTX, cc);
  KCuStream stream = NULL;
  if (c->stream) {
    lua_getiuservalue(L, 1, 2);
    stream = kcu_check_stream(L, -1);
    lua_pop(L, 1);
  }
  int host = run_gpu(L, s, c, 2, nargs, stream, &la) > 0;
  if (host && ++s->hostlaunches == 2) warn_host_arrays(L, kidx);
  return 0;
}

static int launcher_tostring(lua_State *L) {
  Launcher *c = luaL_checkudata(L, 1, LAUNCHER_MT);
  lua_pushfstring(L, "kjit.launcher: grid (%d,%d,%d), block (%d,%d,%d), %d shared bytes",
                  (int)c->grid[0], (int)c->grid[1], (int)c->grid[2], (int)c->block[0],
                  (int)c->block[1], (int)c->block[2], (int)c->shared);
  return 1;
}

/* ---- The kernel object --------------------------------------------------------------- */

static int default_cc(lua_State *L, int idx) {
  if (!lua_isnoneornil(L, idx)) {
    lua_Integer cc = luaL_checkinteger(L, idx);
    luaL_argcheck(L, cc >= 50 && cc <= 120, idx, "compute capability such as 80 or 90 expected");
    return (int)cc;
  }
  if (kcu_sim_mode() == 0 && kcu_available(NULL)) return kcu_compute_capability(L);
  return 90;
}

/* k:compile(sig [, cc]): PTX for sig, without a GPU. Returns k. */
static int kernel_compile(lua_State *L) {
  Kernel *k = luaL_checkudata(L, 1, KERNEL_MT);
  const char *sig = luaL_checkstring(L, 2);
  Type t[KJIT_MAXARGS];
  int n = parse_sig(L, sig, t);
  int next = 3;
  sig_layouts(L, sig, t, n, &next);   /* records: their layouts, then cc */
  int cc = default_cc(L, next);
  KernSpec *s = NULL, **pp;
  for (s = k->specs; s; s = s->next)   /* exactly these types (f32 is not f64) */
    if (s->target == KT_NVPTX && s->cc == cc && spec_fits(s, t, n, 0)) break;
  if (s == NULL) compile_kernel(L, 1, t, n, KT_NVPTX, cc)->declared = 1;
  else {
    /* make it the most recent, for inspect */
    s->declared = 1;
    for (pp = &k->specs; *pp != s; pp = &(*pp)->next) {}
    *pp = s->next;
    s->next = k->specs;
    k->specs = s;
  }
  lua_settop(L, 1);
  return 1;
}

/* k:inspect("types" | "llvm" | "ptx" [, sig]) */
static int kernel_inspect(lua_State *L) {
  Kernel *k = luaL_checkudata(L, 1, KERNEL_MT);
  static const char *const whats[] = { "types", "llvm", "ptx", NULL };
  int what = luaL_checkoption(L, 2, "types", whats);
  if (!lua_isnoneornil(L, 3)) {
    lua_pushcfunction(L, kernel_compile);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 3);
    lua_call(L, 2, 0);
  }
  KernSpec *s = k->specs;
  if (what == 2) while (s && s->target != KT_NVPTX) s = s->next;
  if (s == NULL)
    return luaL_error(L, "nothing compiled yet: launch the kernel or use k:compile(sig) first");
  lua_pushstring(L, what == 0 ? s->types : what == 1 ? s->llvm : s->ptx);
  return 1;
}

static int kernel_gc(lua_State *L) {
  Kernel *k = luaL_checkudata(L, 1, KERNEL_MT);
  while (k->specs) {
    KernSpec *n = k->specs->next;
    free_kspec(k->specs);
    k->specs = n;
  }
  k->dead = 1;
  return 0;
}

/* k:forall(n [, tpb [, stream [, shared_bytes]]]): the launcher of numba-
** cuda's forall: enough threads for n elements (tpb per block, default
** 256 or fewer when n is smaller; a kernel with a launch bound uses it),
** one thread per element with cuda.grid(1) from 1 to n (and a few more
** in the last block: test i <= n as usual). */
static int kernel_forall(lua_State *L) {
  Kernel *k = luaL_checkudata(L, 1, KERNEL_MT);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 1, 2, "at least 1 element expected");
  lua_Integer tpb = luaL_optinteger(L, 3, 0);
  luaL_argcheck(L, tpb >= 0 && tpb <= 1024, 3, "threads per block from 1 to 1024 expected (0: chosen)");
  if (tpb == 0) {
    tpb = k->maxtpb ? k->maxtpb : 256;
    if (n < tpb) tpb = (n + 31) / 32 * 32;   /* whole warps */
  }
  lua_Integer blocks = (n + tpb - 1) / tpb;
  if (blocks > 0x7fffffff) return luaL_error(L, "k:forall(%I): too many elements", n);
  lua_settop(L, 5);
  lua_createtable(L, 4, 0);
  lua_pushinteger(L, blocks); lua_rawseti(L, -2, 1);
  lua_pushinteger(L, tpb); lua_rawseti(L, -2, 2);
  lua_pushvalue(L, 4); lua_rawseti(L, -2, 3);
  lua_pushvalue(L, 5); lua_rawseti(L, -2, 4);
  return push_launcher(L, 1, lua_gettop(L));
}

/* k:max_cooperative_grid_blocks(blockdim [, shared_bytes]): numba-cuda's
** limit on the blocks of a launch of a kernel that syncs the grid (cuda.cg):
** on the GPU the occupancy calculator's blocks per SM for the kernel's
** newest PTX specialization times the SMs; in the simulator what its limit
** on threads allows. */
static int kernel_max_coop(lua_State *L) {
  Kernel *k = luaL_checkudata(L, 1, KERNEL_MT);
  unsigned block[3];
  read_dim3(L, 2, block, "blockdim");
  lua_Integer sh = luaL_optinteger(L, 3, 0);
  luaL_argcheck(L, sh >= 0 && sh <= 48 * 1024, 3, "shared bytes from 0 to 49152 expected");
  uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
  if (threads > 1024) return luaL_error(L, "blockdim: %I threads per block (at most 1024)", (lua_Integer)threads);
  if (kcu_sim_mode()) {
    lua_pushinteger(L, (lua_Integer)(KSIM_GRID_MAX_THREADS / threads));
    return 1;
  }
  int cc = kcu_compute_capability(L);
  KernSpec *s;
  for (s = k->specs; s; s = s->next)
    if (s->target == KT_NVPTX && s->cc == cc) break;
  if (s == NULL)
    return luaL_error(L, "k:max_cooperative_grid_blocks: the kernel has no code for this GPU "
                      "yet (compile it first: k:compile(signature) or a launch)");
  KDevMod *dm = gpu_prepare(L, s, kcu_device());
  lua_pushinteger(L, (lua_Integer)kcu_max_cooperative_blocks(L, dm->func, (int)threads, (unsigned)sh));
  return 1;
}

static int kernel_export(lua_State *L);
static int kernel_index(lua_State *L) {
  luaL_checkudata(L, 1, KERNEL_MT);
  if (lua_istable(L, 2)) return push_launcher(L, 1, 2);
  const char *key = lua_tostring(L, 2);
  if (key && strcmp(key, "lua") == 0) { lua_getiuservalue(L, 1, 1); return 1; }
  if (key && strcmp(key, "compile") == 0) { lua_pushcfunction(L, kernel_compile); return 1; }
  if (key && strcmp(key, "inspect") == 0) { lua_pushcfunction(L, kernel_inspect); return 1; }
  if (key && strcmp(key, "forall") == 0) { lua_pushcfunction(L, kernel_forall); return 1; }
  if (key && strcmp(key, "export") == 0) { lua_pushcfunction(L, kernel_export); return 1; }
  if (key && strcmp(key, "max_cooperative_grid_blocks") == 0) {
    lua_pushcfunction(L, kernel_max_coop);
    return 1;
  }
  if (key && strcmp(key, "compile_ms") == 0) {
    Kernel *k = lua_touserdata(L, 1);
    if (k->specs) lua_pushnumber(L, k->specs->compile_ms);
    else lua_pushnil(L);
    return 1;
  }
  if (key && strcmp(key, "signatures") == 0) {
    /* the argument types compiled, newest first, each once (a signature
    ** compiled for PTX and for the simulator, or for two devices, is one) */
    Kernel *k = lua_touserdata(L, 1);
    lua_newtable(L);
    int n = 0;
    for (KernSpec *s = k->specs; s; s = s->next) {
      luaL_Buffer b;
      luaL_buffinit(L, &b);
      type_list(&b, s->args, s->nargs);
      luaL_pushresult(&b);
      int seen = 0;
      for (int i = 1; i <= n && !seen; i++) {
        lua_rawgeti(L, -2, i);
        seen = lua_rawequal(L, -1, -2);
        lua_pop(L, 1);
      }
      if (seen) lua_pop(L, 1);
      else lua_rawseti(L, -2, ++n);
    }
    return 1;
  }
  if (lua_type(L, 2) == LUA_TNUMBER || key == NULL)
    return luaL_error(L, "launch a kernel with a config table: k[{grid, block}](...)");
  return luaL_error(L, "kernel has no field '%s' (lua, compile, inspect, forall, compile_ms, signatures, max_cooperative_grid_blocks; launch with k[{grid, block}])", key);
}

static int kernel_call(lua_State *L) {
  return luaL_error(L, "a kernel needs a launch config: k[{grid, block}](...)");
}

static int kernel_tostring(lua_State *L) {
  lua_pushfstring(L, "kjit.kernel: %p", lua_topointer(L, 1));
  return 1;
}

/* Compiles the kernel at kidx for signature sig now (cuda.jit's eager
** form): for the simulator when one is on, else PTX for the current
** device (sm_90 without one), as k:compile(sig) does. */
/* Compiles sig now (cuda.jit's signature); its records take the layouts
** in the list at lays (0: none), as k:compile takes them after sig. */
static void compile_eager(lua_State *L, int kidx, const char *sig, int lays) {
  int top = lua_gettop(L);
  int nl = lays ? (int)luaL_len(L, lays) : 0;
  luaL_checkstack(L, nl + 4, "layouts");
  Type t[KJIT_MAXARGS];
  int n = parse_sig(L, sig, t);
  int past = lua_gettop(L) + 1;
  for (int i = 1; i <= nl; i++) lua_geti(L, lays, i);
  sig_layouts(L, sig, t, n, &past);
  if (past <= lua_gettop(L))
    luaL_error(L, "bad kernel signature '%s': more layouts than records (%d)", sig, nl);
  if (kcu_sim_mode() == 0) {   /* PTX (k:compile), for the current GPU or sm_90 */
    lua_settop(L, top);
    lua_pushcfunction(L, kernel_compile);
    lua_pushvalue(L, kidx);
    lua_pushstring(L, sig);
    for (int i = 1; i <= nl; i++) lua_geti(L, lays, i);
    lua_call(L, 2 + nl, 0);
    return;
  }
  compile_kernel(L, kidx, t, n, KT_SIM, 0)->declared = 1;
  lua_settop(L, top);
}

/* cuda.jit(fn [, signature] [, opts]): numba-cuda's cuda.jit. With a
** signature ("void(float32[:], int32)": kjit's or numba's type names) the
** kernel compiles now, and launches of fitting arguments use it. With
** {device = true} the result is the function itself: kernels call any Lua
** function as a device function, and the host may call it too (numba-cuda
** refuses that; a signature is then only checked). */
static int l_cuda_jit(lua_State *L);

/* The function cuda.jit(sig [, opts]) or cuda.jit(opts) returns, numba's
** decorator form: f(fn) is cuda.jit(fn, sig, opts). */
static int jit_decorator(lua_State *L) {
  lua_settop(L, 1);
  lua_pushcfunction(L, l_cuda_jit);
  lua_insert(L, 1);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_call(L, 3, 1);
  return 1;
}

/* A list of signatures, {"void(f32[:])", "void(f64[:])"}, at idx? */
static int is_sig_list(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return 0;
  int str = lua_geti(L, idx, 1) == LUA_TSTRING;
  lua_pop(L, 1);
  return str;
}

static int l_cuda_jit(lua_State *L) {
  if (lua_type(L, 1) == LUA_TSTRING || lua_istable(L, 1)) {   /* cuda.jit(sig)(fn) */
    lua_settop(L, 2);
    lua_pushcclosure(L, jit_decorator, 2);
    return 1;
  }
  if (luaL_testudata(L, 1, "kjit.jit")) {
    lua_getiuservalue(L, 1, 1);
    lua_replace(L, 1);
  }
  if (lua_type(L, 1) == LUA_TTABLE)   /* Numba's decorator shape: @cuda.jit(fastmath=True) */
    return luaL_argerror(L, 1, "Lua function expected, got table; the options come second: "
                         "cuda.jit(fn, {fastmath = true})");
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (lua_iscfunction(L, 1)) return luaL_argerror(L, 1, "a Lua function expected, got a C function");
  /* cuda.jit(fn, "void(record[:], f64)", P [, ...] [, opts]): the records'
  ** layouts (kjit.struct) follow the signature, as in k:compile; they go
  ** into a list, which the eager compile reads */
  int nl = 0;
  if (lua_type(L, 2) == LUA_TSTRING)
    while (lua_gettop(L) >= 3 + nl && krec_test(L, 3 + nl)) nl++;
  int lays = 0;
  if (nl > 0) {   /* (fn, sig, P..., opts) -> (fn, sig, opts, list) */
    int top0 = lua_gettop(L), hasopts = top0 >= 3 + nl;
    lua_createtable(L, nl, 0);
    for (int i = 1; i <= nl; i++) { lua_pushvalue(L, 2 + i); lua_rawseti(L, -2, i); }
    if (hasopts) lua_pushvalue(L, 3 + nl); else lua_pushnil(L);
    lua_copy(L, top0 + 2, 3);
    lua_copy(L, top0 + 1, 4);
    lua_settop(L, 4);
    lays = 4;
  } else {
    lua_settop(L, 3);
  }
  const char *sig = NULL;
  int siglist = 0;   /* a list of signatures: kept at 3 below */
  if (lua_type(L, 2) == LUA_TSTRING) sig = lua_tostring(L, 2);
  else if (is_sig_list(L, 2)) {
    siglist = 1;
    lua_pushvalue(L, 2);   /* 4 */
    lua_pushnil(L);
    lua_replace(L, 2);
  } else if (!lua_isnil(L, 2)) {
    if (!lua_isnil(L, 3))
      return luaL_argerror(L, 2, "signature string expected (cuda.jit(fn, sig, opts))");
    lua_copy(L, 2, 3);
  }
  /* the signature stays on the stack (at the top, above the list) while
  ** sig points into it: a string made by the caller (a concatenation)
  ** has no other reference, and compiling can run the GC */
  if (sig) lua_pushvalue(L, 2);
  lua_remove(L, 2);   /* opts at 2 */
  if (lays) lays--;
  klink_option(L, 2);   /* the link files, or nil (kernel_link.c); 2 without them */
  int linkidx = lua_gettop(L);
  int v[KO_CUDA_N];
  kopt_read(L, 2, &kopt_cuda_jit, v);   /* host/options.c: names, types, defaults */
  if (v[KO_CUDA_LAUNCH_BOUNDS] && v[KO_CUDA_MAXTPB] && v[KO_CUDA_LAUNCH_BOUNDS] != v[KO_CUDA_MAXTPB])
    return luaL_error(L, "cuda.jit: launch_bounds and maxThreadsPerBlock differ (%d, %d): they are "
                      "one limit", v[KO_CUDA_LAUNCH_BOUNDS], v[KO_CUDA_MAXTPB]);
  if (v[KO_CUDA_DEVICE]) {
    if (sig) {
      KSig ks;
      char err[256];
      if (ksig_parse(sig, KSIG_JIT, &ks, err, sizeof err) != 0)
        return luaL_error(L, "bad device function signature '%s': %s", sig, err);
    }
    lua_settop(L, 1);
    return 1;
  }
  Kernel *k = lua_newuserdatauv(L, sizeof *k, 3);
  memset(k, 0, sizeof *k);
  k->boundscheck = v[KO_CUDA_BOUNDSCHECK];
  k->fastmath = v[KO_CUDA_FASTMATH];
  k->fma = v[KO_CUDA_FMA];
  k->opt = v[KO_CUDA_OPT];
  k->cache = v[KO_CUDA_CACHE];
  k->maxreg = v[KO_CUDA_MAXREG];
  k->lineinfo = v[KO_CUDA_LINEINFO] || v[KO_CUDA_DEBUG];
  k->maxtpb = v[KO_CUDA_LAUNCH_BOUNDS] ? v[KO_CUDA_LAUNCH_BOUNDS] : v[KO_CUDA_MAXTPB];
  luaL_setmetatable(L, KERNEL_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 2);
  lua_pushvalue(L, linkidx);
  lua_setiuservalue(L, -2, 3);
  if (sig) compile_eager(L, lua_gettop(L), sig, lays);
  if (siglist) {   /* each, the first one last (the newest spec is the one inspected) */
    int kidx = lua_gettop(L);
    lua_pushvalue(L, 3);
    for (lua_Integer i = luaL_len(L, -1); i >= 1; i--) {
      if (lua_geti(L, kidx + 1, i) != LUA_TSTRING)
        return luaL_error(L, "cuda.jit: signature %d of the list is not a string", (int)i);
      compile_eager(L, kidx, lua_tostring(L, -1), 0);
      lua_pop(L, 1);
    }
    lua_settop(L, kidx);
  }
  return 1;
}

/* cuda.compile_ptx(fn, sig [, layouts...] [, cc | opts]) -> ptx, kernel name.
** opts: cuda.jit's options (fastmath, lineinfo, max_registers ...) and cc,
** as numba-cuda's keyword arguments. Option `link` is refused: the PTX is
** the kernel's own, its external functions declared .extern; the files are
** linked by the driver when a kernel made by cuda.jit(fn, {link = ...})
** loads (a linked image needs the driver, hence a GPU, which compile_ptx
** does not). */
static int l_compile_ptx(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  const char *sig = luaL_checkstring(L, 2);
  Type t[KJIT_MAXARGS];
  int n = parse_sig(L, sig, t);
  int next = 3;
  sig_layouts(L, sig, t, n, &next);   /* records: their layouts, then cc */
  int opts = 0;
  if (lua_istable(L, next)) {
    opts = next;
    if (lua_getfield(L, opts, "link") != LUA_TNIL)
      return luaL_error(L, "cuda.compile_ptx: option 'link' is not supported: the PTX is the "
                        "kernel's own, with its external device functions declared .extern; "
                        "the driver links the files when a kernel made by cuda.jit(fn, {link = "
                        "...}) loads (k:inspect(\"ptx\") shows its PTX)");
    lua_pop(L, 1);
    lua_getfield(L, opts, "cc");
    next = lua_gettop(L);
  }
  int cc = default_cc(L, next);
  lua_pushcfunction(L, l_cuda_jit);
  lua_pushvalue(L, 1);
  if (opts) {   /* cuda.jit's options: the table without cc */
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, opts)) {
      if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "cc") == 0) {
        lua_pop(L, 1);
        continue;
      }
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_rawset(L, -4);
    }
  }
  lua_call(L, opts ? 2 : 1, 1);
  int kidx = lua_gettop(L);
  KernSpec *s = compile_kernel(L, kidx, t, n, KT_NVPTX, cc);
  lua_pushstring(L, s->ptx);
  lua_pushstring(L, s->name);
  return 2;
}

/* cuda.ptx_backend() -> "libNVVM" | "LLVM NVPTX", reason */
static int l_ptx_backend(lua_State *L) {
  const char *why;
  lua_pushstring(L, kn_backend(&why));
  if (why) lua_pushstring(L, why);
  else lua_pushnil(L);
  return 2;
}

void kk_open(lua_State *L) {
  int t = lua_gettop(L);
  kcu_set_sync_hook(kk_check_errors);
  if (kb_newmeta(L, KERNEL_MT)) {
    lua_pushcfunction(L, kernel_index); lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, kernel_call); lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, kernel_gc); lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, kernel_tostring); lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "kjit.kernel"); lua_setfield(L, -2, "__metatable");
    kb_regmeta(L, KERNEL_MT);
  }
  lua_pop(L, 1);
  if (kb_newmeta(L, LAUNCHER_MT)) {
    /* kb_open and kcu_open have made the array metatables */
    luaL_getmetatable(L, KB_METATABLE);
    luaL_getmetatable(L, KCU_DEVARRAY);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, launcher_call, 3);   /* UP_ARRAY_MT, UP_DEVARRAY_MT, UP_LAUNCHER_MT */
    lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, launcher_tostring); lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "kjit.launcher"); lua_setfield(L, -2, "__metatable");
    kb_regmeta(L, LAUNCHER_MT);
  }
  lua_pop(L, 1);
  if (kb_newmeta(L, DIM3_MT)) {
    lua_pushcfunction(L, dim3_index); lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, dim3_tostring); lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "kjit.cuda.dim3"); lua_setfield(L, -2, "__metatable");
    kb_regmeta(L, DIM3_MT);
  }
  lua_pop(L, 1);
  lua_pushcfunction(L, l_cuda_jit); lua_setfield(L, t, "jit");
  lua_pushcfunction(L, l_compile_ptx); lua_setfield(L, t, "compile_ptx");
  lua_pushcfunction(L, l_ptx_backend); lua_setfield(L, t, "ptx_backend");
  for (size_t i = 0; i < sizeof cuda_fns / sizeof cuda_fns[0]; i++) {
    if (cuda_fns[i].table) {
      if (lua_getfield(L, t, cuda_fns[i].table) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, t, cuda_fns[i].table);
      }
      lua_pushcfunction(L, cuda_fns[i].f);
      kir_builtin_register(L, -1, cuda_fns[i].id);
      lua_setfield(L, -2, cuda_fns[i].name);
      lua_pop(L, 1);
    } else {
      lua_pushcfunction(L, cuda_fns[i].f);
      kir_builtin_register(L, -1, cuda_fns[i].id);
      lua_setfield(L, t, cuda_fns[i].name);
    }
  }
  /* numba-cuda's casts, math and intrinsics (kernel_intrin.c); kjit.math
  ** goes into the kjit table, the one below the cuda table being built
  ** (lkjit.c) */
  lua_newtable(L);
  kki_open(L, t, -1);
  lua_setfield(L, t - 1, "math");
  open_cg(L, t);
  static const char *const dims[] = { "threadIdx", "blockIdx", "blockDim", "gridDim" };
  for (int i = 0; i < 4; i++) {
    Dim3 *d = lua_newuserdatauv(L, sizeof *d, 0);
    d->id = B_CUDA_THREADIDX + i;
    luaL_setmetatable(L, DIM3_MT);
    kir_builtin_register(L, -1, d->id);
    lua_setfield(L, t, dims[i]);
  }
  lua_settop(L, t);
}

/* ---- Exported kernels: k:export(sig), kjit.load (host/export.h) ------------------- */

/* Refuses a compile of a loaded kernel (compile_kernel). */
static void refuse_loaded(lua_State *L, const Kernel *k, const Type *args, int nargs,
                          int target) {
  const KernSpec *s = k->specs;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  type_list(&b, args, nargs);
  luaL_pushresult(&b);
  luaL_buffinit(L, &b);
  if (s) type_list(&b, s->args, s->nargs);
  luaL_pushresult(&b);
  const char *had = s == NULL ? "nothing" : s->target == KT_SIM ? "the simulator" : "the GPU";
  const char *want = target == KT_SIM ? "the simulator" : "the GPU";
  if (s && s->target == KT_NVPTX && target == KT_NVPTX)
    luaL_error(L, "kjit: this kernel was loaded from exported code, PTX for compute capability "
               "%d and %s only: it cannot compile for %s on this device", s->cc,
               lua_tostring(L, -1), lua_tostring(L, -2));
  luaL_error(L, "kjit: this kernel was loaded from exported code, compiled for %s and %s "
             "only: it cannot compile for %s and %s", had, lua_tostring(L, -1), want,
             lua_tostring(L, -2));
}

/* What a loaded spec needs besides its code: argument types (records as
** layouts), messages, chunk, types text; then the PTX and the link files'
** linker inputs (KT_NVPTX: name, type, bytes each), so that kjit.load
** links what the kernel was compiled with, where the files are absent. */
static void put_kspec(KexpW *w, const Kernel *k, const KernSpec *s) {
  uint32_t h[6] = { (uint32_t)s->nargs, (uint32_t)s->uses_sync, (uint32_t)s->cc,
                    (uint32_t)s->nmsgs, (uint32_t)k->maxtpb,
                    s->target == KT_NVPTX ? (uint32_t)s->nlink : 0 };
  kexp_put(w, h, sizeof h);
  for (int i = 0; i < s->nargs; i++) {
    Type t = s->args[i];
    uint8_t f[6] = { t.kind, t.weak, t.dtype, t.ndim, t.sub, t.fsub };
    kexp_put(w, f, sizeof f);
    if (t.kind == T_BUF && t.dtype == KJIT_RECORD) kexp_record(w, krec_byid(t.ref));
  }
  for (int i = 0; i < s->nmsgs; i++) kexp_str(w, s->msgs[i]);
  kexp_str(w, s->chunk);
  kexp_str(w, s->types);
  if (s->target == KT_NVPTX) {
    kexp_str(w, s->name);
    kexp_str(w, s->ptx);
    for (int i = 0; i < s->nlink; i++) {
      uint64_t t[2] = { (uint64_t)s->link[i].type, (uint64_t)s->link[i].size };
      kexp_str(w, s->link[i].name);
      kexp_put(w, t, sizeof t);
      kexp_put(w, s->link[i].data, s->link[i].size);
    }
  }
}

/* put_kspec's bytes into s; returns 0 or -1 (damaged). */
static int get_kspec(KexpR *r, Kernel *k, KernSpec *s) {
  const void *p = kexp_get(r, 6 * 4);
  if (!p) return -1;
  uint32_t h[6];
  memcpy(h, p, sizeof h);
  if (h[0] > KJIT_MAXARGS || h[3] > 100000 || h[4] > 1024 || h[5] > 1000) return -1;
  s->nargs = (int)h[0];
  s->uses_sync = (int)h[1];
  s->cc = (int)h[2];
  k->maxtpb = (int)h[4];
  for (int i = 0; i < s->nargs && !r->bad; i++) {
    const uint8_t *f = kexp_get(r, 6);
    if (!f) return -1;
    Type t = TY(f[0]);
    t.weak = f[1]; t.dtype = f[2]; t.ndim = f[3]; t.sub = f[4]; t.fsub = f[5];
    if (t.kind == T_BUF && t.dtype == KJIT_RECORD) {
      const KRecord *rec = kexp_getrecord(r, 0);
      if (!rec) return -1;
      t.ref = rec->id;
    }
    s->args[i] = t;
  }
  if (h[3]) {
    s->msgs = calloc(h[3], sizeof *s->msgs);
    if (!s->msgs) return -1;
    s->nmsgs = (int)h[3];
    for (uint32_t i = 0; i < h[3]; i++) s->msgs[i] = kexp_getstr(r);
  }
  s->chunk = kexp_getstr(r);
  s->types = kexp_getstr(r);
  if (s->target == KT_NVPTX) {
    char *name = kexp_getstr(r);
    if (name && strlen(name) < sizeof s->name) snprintf(s->name, sizeof s->name, "%s", name);
    else r->bad = 1;
    free(name);
    s->ptx = kexp_getstr(r);
    if (h[5] && (s->link = calloc(h[5], sizeof *s->link)) == NULL) return -1;
    for (uint32_t i = 0; i < h[5] && !r->bad; i++) {
      KCuLinkInput *in = &s->link[s->nlink++];
      in->name = kexp_getstr(r);
      const void *t = kexp_get(r, 2 * sizeof(uint64_t));
      if (!t || !in->name) return -1;
      uint64_t tv[2];
      memcpy(tv, t, sizeof tv);
      if (tv[0] > KCU_LINK_LIBRARY || tv[1] > r->n) return -1;
      const void *d = kexp_get(r, (size_t)tv[1]);
      if (!d || (in->data = malloc((size_t)tv[1] + 1)) == NULL) return -1;
      memcpy(in->data, d, (size_t)tv[1]);
      in->data[tv[1]] = 0;
      in->type = (int)tv[0];
      in->size = (size_t)tv[1];
      if (in->type == KCU_LINK_PTX && (in->size == 0 || in->data[in->size - 1] != 0)) return -1;
    }
  }
  return r->bad || r->at != r->n ? -1 : 0;
}

#define KEXPORT_BOX_MT "kjit.kexportbox"
static int kexportbox_gc(lua_State *L) {
  KExportBox *b = lua_touserdata(L, 1);
  free(b->p);
  b->p = NULL;
  return 0;
}

/* k:export(sig [, layouts...] [, cc]): the bytes of the kernel compiled
** for sig: for the simulator when one is on (CPU code), else PTX for
** compute capability cc (default: the device's, or 90 without one). */
static int kernel_export(lua_State *L) {
  Kernel *k = luaL_checkudata(L, 1, KERNEL_MT);
  if (k->dead) return luaL_error(L, "kernel used after it was finalized");
  if (k->loaded)
    return luaL_error(L, "k:export: this kernel was loaded from exported code: export the "
                      "original, or pass these bytes on");
  const char *sig = luaL_checkstring(L, 2);
  Type t[KJIT_MAXARGS];
  int n = parse_sig(L, sig, t);
  int next = 3;
  sig_layouts(L, sig, t, n, &next);
  KexpW w = { NULL, 0, 0, 0 };
  if (kcu_sim_mode() != 0) {
    lua_settop(L, next - 1);
    KExportBox *box = lua_newuserdatauv(L, sizeof *box, 0);
    box->p = NULL;
    box->n = 0;
    if (kb_newmeta(L, KEXPORT_BOX_MT)) {
      lua_pushcfunction(L, kexportbox_gc);
      lua_setfield(L, -2, "__gc");
      kb_regmeta(L, KEXPORT_BOX_MT);
    }
    lua_setmetatable(L, -2);
    int boxidx = lua_gettop(L);
    KernSpec *s = compile_kernel_ex(L, 1, t, n, KT_SIM, 0, box);
    /* the export's own compile is not kept (first in the list) */
    k->specs = s->next;
    /* the cache payload, then the spec's description */
    kexp_put(&w, &box->n, sizeof box->n);
    kexp_put(&w, box->p, box->n);
    put_kspec(&w, k, s);
    free_kspec(s);
    free(box->p);
    box->p = NULL;
    if (w.oom) { free(w.p); return luaL_error(L, "not enough memory"); }
    kexp_push(L, KEXP_KERNEL_SIM, w.p, w.n);
    free(w.p);
    lua_replace(L, boxidx);
    lua_settop(L, boxidx);
    return 1;
  }
  int cc = default_cc(L, next);
  KernSpec *s = NULL;
  for (s = k->specs; s; s = s->next)
    if (s->target == KT_NVPTX && s->cc == cc && spec_fits(s, t, n, 0)) break;
  if (s == NULL) {
    s = compile_kernel(L, 1, t, n, KT_NVPTX, cc);
    s->declared = 1;
  }
  put_kspec(&w, k, s);
  if (w.oom) { free(w.p); return luaL_error(L, "not enough memory"); }
  kexp_push(L, KEXP_KERNEL_PTX, w.p, w.n);
  free(w.p);
  return 1;
}

void kk_load(lua_State *L, int kind, const void *payload, size_t len) {
  Kernel *k = lua_newuserdatauv(L, sizeof *k, 2);   /* its __gc frees the spec */
  memset(k, 0, sizeof *k);
  k->loaded = 1;
  luaL_setmetatable(L, KERNEL_MT);
  lua_newtable(L);   /* user value 2: the launchers by config (push_launcher) */
  lua_setiuservalue(L, -2, 2);
  KernSpec *s = calloc(1, sizeof *s);
  if (!s) luaL_error(L, "not enough memory");
  s->target = kind == KEXP_KERNEL_SIM ? KT_SIM : KT_NVPTX;
  s->owner = main_thread(L);
  s->declared = 1;
  KexpR r = { payload, len, 0, 0, "" };
  if (kind == KEXP_KERNEL_SIM) {
    size_t plen = 0;
    const void *p = kexp_get(&r, sizeof plen);
    if (p) memcpy(&plen, p, sizeof plen);
    const void *code = kexp_get(&r, plen);
    if (code == NULL) {
      free_kspec(s);
      luaL_error(L, "kjit.load: damaged exported code (the kernel's code)");
    }
    ksim_register_symbols();
    kc_register_symbol("kjit_rt_cmp_int_float", (void *)kjit_rt_cmp_int_float);
    kc_register_symbol("kjit_rt_forlimit", (void *)kjit_rt_forlimit);
    void *addr = NULL, *extra = NULL;
    size_t xl = 0;
    s->code = kcache_cpu_payload_load(code, plen, &addr, &extra, &xl);
    free(extra);
    if (s->code == NULL) {
      free_kspec(s);
      luaL_error(L, "kjit.load: the kernel's object code could not be loaded in this process");
    }
    s->entry = (KEntry)addr;
  }
  if (get_kspec(&r, k, s) != 0) {
    free_kspec(s);
    kexp_damaged(L, &r, "the kernel's description");
  }
  k->specs = s;
}
