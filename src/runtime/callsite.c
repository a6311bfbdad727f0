/*
** runtime/callsite.c: a call site's native cache shared by threads
** (callsite.h KlcSite).
**
** A site is a private global of the caller's machine code, so every
** thread that runs that code reads it (luacall.c native_call, and the
** caller's own code where it makes the call inline: cg_callvalue.c
** native_inline), and host/callval.c fill_site rewrites it (another
** callee, other argument kinds). A reader checks the fill's closure,
** state, epoch and kinds and then calls the fill's entry: were the fields
** of two fills, it could pass the check of one and call the entry of the
** other, with arguments of the wrong kinds.
**
** Chosen: one writing state per site, its owner (the first state that
** fills it or marks it, for the life of the code). Then no reader ever
** uses a fill while another thread writes it:
**   - a reader of the owner's state runs in the owner's thread of the
**     moment, as its writer does (a Lua state runs in one thread at a
**     time; fill_site and the clearing of fills run inside that state's
**     calls or collector), so it never overlaps a write;
**   - a reader of another state is not the owner: it misses at once,
**     without reading the fill, and takes the slow path (which computes
**     the same answers).
** A state that is not the owner never fills the site: its calls there
** take the helper's slow path (the inline cache), as a second state's do
** at an upvalue cache (luacall.h KlcUpvCache). Today no two states run
** one code (each loads its own copy: backend/cpu.c, objload.c; kjit_call
** refuses code that uses Lua values, jit.c kd_spec_info; kjit.prange
** bodies hold no Lua values), so nothing is lost.
** Measured and not kept: a sequence word (a seqlock: writers odd/even,
** readers load it before and after the fields): every native call 25
** instructions more through the helper (276 -> 301, the register pressure
** of one more live value in kjit_lc_call) and 19 inline (190 -> 209),
** perlin 3.6% more in all; the fields as relaxed atomics without it, 19
** more through the helper (GCC reloads around each); and an immutable
** fill published through a pointer needs its old fills freed safely (a
** reader of another state may still be reading one) or kept until the
** code is freed.
** A reader asks first whether its state owns the site (one relaxed load
** of the owner word, set once) and touches the fill only then: another
** state's reader never reads a fill the owner's thread may be writing,
** not even to miss (no data race in C's model either: ThreadSanitizer,
** tests/c/test_callsite_race.c). The owner's readers and writers are one
** thread at a time, so the fill is read and written with plain accesses.
*/
#include "runtime/callsite.h"
#include "runtime/luacall.h"   /* (kjit_lc_epoch) */

int kjit_lc_site_own(KlcSite *s, const void *reg) {
  const void *none = NULL;
  if (__atomic_compare_exchange_n(&s->owner, &none, reg, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return 1;
  return none == reg;   /* (the owner the exchange found) */
}

void kjit_lc_site_interp(lua_State *L, KlcSite *s, const void *fn) {
  const void *reg = ((const KlsState *)(void *)L)->l_G;
  if (s == NULL || !kjit_lc_site_own(s, reg)) return;
  s->interp = fn;
  s->interp_reg = reg;
  s->interp_epoch = __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED);
}

int kjit_lc_site_interp_is(const KlcSite *s, const void *fn, const void *reg, uint32_t ep) {
  return s != NULL && kjit_lc_site_mine(s, reg) && s->interp == fn && s->interp_reg == reg &&
         s->interp_epoch == ep;
}
