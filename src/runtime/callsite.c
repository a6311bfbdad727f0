/*
** runtime/callsite.c: a call site's native cache shared by threads
** (callsite.h KlcSite).
**
** A site is a private global of the caller's machine code, so every
** thread that runs that code reads it (luacall.c native_call, and the
** caller's own code where it makes the call inline: cg_callvalue.c
** native_inline), while any of them may refill it (host/callval.c
** fill_site: another callee, other argument kinds, another Lua state).
** A reader checks the fill's closure, state, epoch and kinds and then
** calls the fill's entry: were the fields of two fills, it could pass the
** check of one and call the entry of the other, with arguments of the
** wrong kinds.
**
** Chosen: a sequence word (a seqlock) in the site, not an immutable fill
** published through one pointer. A pointer needs its old fills freed
** safely (a reader may still be reading one: epochs or hazard pointers,
** or fills kept until the code is freed, which a site alternating between
** two states would grow without end), and adds a dependent load to every
** call; the word costs a reader two loads of a word it shares a line
** with, and a compare (x86: the acquire load and fence are plain moves).
**
** Writers (fill_site, the clearing of a state's fills, the mark of a
** closure left interpreted) claim the word by moving it from even to odd
** (a compare-and-swap: one writer at a time per site), store the fields,
** and publish by moving it to the next even value (release). A reader
** loads the word (acquire), the fields it needs, and the word again
** after an acquire fence: only where both loads saw the same even value
** did no write overlap its reads, and the fields are one fill, published
** before it began. Every field is loaded and stored with relaxed atomics
** (plain moves), so that the overlapping reads a reader then throws away
** are not data races in C's model either (ThreadSanitizer checks it:
** tests/c/test_callsite_race.c). Nothing a fill points to (its guard,
** its entry slot) is read before the second load of the word.
**
** Lifetime is not the word's business: a fill's references (fnref,
** natref, guardref) keep its closure, native code and guard alive until a
** writer of the same Lua state replaces or clears it, and a state runs in
** one thread at a time, so a reader of that state is never inside a call
** of the fill being released (host/callval.c).
*/
#include "runtime/callsite.h"
#include "runtime/luacall.h"   /* (kjit_lc_epoch) */
#include <sched.h>
#include <string.h>

enum { WORDS = sizeof(KlcFill) / sizeof(uint64_t) };
_Static_assert(sizeof(KlcFill) % sizeof(uint64_t) == 0, "a fill is copied in words");

/* Claims s for writing when its word is still q (even): 1, the word odd. */
static int claim_at(KlcSite *s, uint32_t q) {
  if (!__atomic_compare_exchange_n(&s->seq, &q, q + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return 0;
  __atomic_thread_fence(__ATOMIC_RELEASE);   /* (the odd word before any field's store) */
  return 1;
}

/* Claims s for writing whatever it holds; returns the even word it had. */
static uint32_t claim(KlcSite *s) {
  for (int spins = 0;; spins++) {
    uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    if ((q & 1) == 0 && claim_at(s, q)) return q;
    if (spins > 64) sched_yield();   /* (a writer stores a few words: rarely met) */
  }
}

static void unclaim(KlcSite *s, uint32_t q) { __atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE); }

uint32_t kjit_lc_site_snapshot(const KlcSite *s, KlcFill *out) {
  const uint64_t *from = (const uint64_t *)(const void *)&s->fill;
  uint64_t w[WORDS];
  for (int spins = 0;; spins++) {
    uint32_t q = kjit_lc_site_begin(s);
    for (int i = 0; i < (int)WORDS; i++) w[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
    if (kjit_lc_site_still(s, q)) {
      memcpy(out, w, sizeof w);
      return q;
    }
    if (spins > 64) sched_yield();
  }
}

int kjit_lc_site_publish(KlcSite *s, const KlcFill *f, uint32_t q) {
  if ((q & 1) != 0 || !claim_at(s, q)) return 0;
  uint64_t w[WORDS];
  memcpy(w, f, sizeof w);
  uint64_t *to = (uint64_t *)(void *)&s->fill;
  for (int i = 0; i < (int)WORDS; i++) __atomic_store_n(&to[i], w[i], __ATOMIC_RELAXED);
  unclaim(s, q);
  return 1;
}

void kjit_lc_site_interp(lua_State *L, KlcSite *s, const void *fn) {
  if (s == NULL) return;
  uint32_t q = claim(s);
  __atomic_store_n(&s->interp, fn, __ATOMIC_RELAXED);
  __atomic_store_n(&s->interp_reg, ((const KlsState *)(void *)L)->l_G, __ATOMIC_RELAXED);
  __atomic_store_n(&s->interp_epoch, __atomic_load_n(&kjit_lc_epoch, __ATOMIC_RELAXED),
                   __ATOMIC_RELAXED);
  unclaim(s, q);
}

int kjit_lc_site_interp_is(const KlcSite *s, const void *fn, const void *reg, uint32_t ep) {
  if (s == NULL) return 0;
  uint32_t q = kjit_lc_site_begin(s);
  int is = __atomic_load_n(&s->interp, __ATOMIC_RELAXED) == fn &&
           __atomic_load_n(&s->interp_reg, __ATOMIC_RELAXED) == reg &&
           __atomic_load_n(&s->interp_epoch, __ATOMIC_RELAXED) == ep;
  return is && kjit_lc_site_still(s, q);
}
