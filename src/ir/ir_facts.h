/*
** ir_facts.h: loop and function facts on the typed IR, for the code
** generator (what the earlier source-text generator derived from its syntax tree, restated on SSA).
**
** kfa_analyze reads one typed specialization (KtySpec: its KirFunc, types,
** constants, live blocks) and returns side tables, by loop id and by
** instruction id, in an arena. It never writes the IR or the typer's
** tables. Everything is a fact the code generator lowers with; it decides
** what to do with it per target (the notes at each fact say what the old
** generator did with it).
**
** Every loop has a KfaLoop (F->loops[KirLoop.id]); a loop whose header
** never runs has nothing but loop and nest set.
**
** 1. Numeric for loops (kind FORNUM). isint: the control variable
**    (KirLoop.var) is an integer (else a float loop: nothing else below
**    applies). init, limit, step: forprep's operands; stepsign +1/-1 when
**    the step is a compile-time constant (stepk for an integer), 0 when
**    its sign is known only at run time (a step of 0 raises, as in Lua).
**    innermost: no numeric for loop inside it (while loops may be; the
**    old generator's has_fornum). exits: edges that leave it other than
**    its forloop's (break, goto, return; for information: a hoisted test
**    over the whole range is still sound with an early exit, it may only
**    fail more often, which sends the loop to its checked copy).
**    narrow: whether the counter may be an i32: KFA_NARROW_ALWAYS (init,
**    limit and step constants and every value of the range fits int32),
**    KFA_NARROW_TEST (the range [lo, hi], below, fits int32 at run time:
**    test lo >= INT32_MIN && hi <= INT32_MAX before the loop; the counter
**    never steps past hi because the loop counts iterations, as forprep
**    does), KFA_NARROW_NEVER (a float loop, or constants outside int32).
**    The old generator narrowed only while loops; this is new and
**    optional.
**
** 2. Bounds checks (KfaCheck): for an integer numeric for loop L, every
**    INDEX/SETINDEX anywhere inside L (inner loops included, as the old
**    collect_block) whose check a test before L proves:
**      - the array is loop-invariant: walking its chain of INDEX operands
**        (x[i][j] is index(index(x, i), j)) while they are inside L, the
**        root is a value defined outside L, typed T_BUF with ndim > depth
**        (dim = depth: which extent of the root the key indexes);
**      - the key is typed T_INT and is either L's control variable v, or
**        v + c, c + v, v - c (ADD/SUB) with c an invariant integer (a
**        literal, a compile-time integer constant, or a T_INT value
**        defined outside L): affine, the test is 1 <= lo+c and hi+c <= n;
**        or is itself an invariant integer: the test is 1 <= key <= n.
**    lo..hi is the range of v: lo = step > 0 ? init : last, hi = step > 0
**    ? last : init, last = init + count * step with forprep's iteration
**    count (computed as the old emit_fornum does, in 128 bits for the
**    test). At most KFA_MAXHOIST checks per loop (the rest stay checked).
**    General affine keys: where the rule above fails, a key that is
**    +v or -v plus a sum of invariant terms, in any order and association
**    (`j + s + 1`, `i - j + 1`, `n - j`, `(i - 1) * n + j`): integer ADD,
**    SUB and UNM around exactly one v, each other operand an integer
**    expression kfa_nest_invariant in L (the loop the test goes before;
**    computed again there: `(i - 1) * n` in the body of an inner loop),
**    at most KFA_MAXTERMS terms (KfaCheck.negv, terms). Integer + - wrap,
**    so the key is, modulo 2^64, +-v + W with W the wrapped sum of the
**    terms (computed before the loop as the body computes it); the test
**    takes +-lo + W and +-hi + W in 128 bits: when both lie in [1, n],
**    every key of the range does, exactly, without wrapping. A key
**    without v is invariant when the same holds of it as a whole (`x[i -
**    1]` in the inner loop of a nest: recomputed before it).
**    In a nest check, a key may also be a sum of such forms in the
**    variables of several loops of the nest, each optionally multiplied
**    by an integer invariant in O (the row-major `x[(i - 1) * n + j]`:
**    KfaCheck.vterms): + - * are a ring modulo 2^64, so the key is the
**    exact sum modulo 2^64, and the sum's least and greatest values over
**    the loops' ranges (each product's ends taken over its loop's range,
**    a sound bound for a sum) are tested in 128 bits, products guarded
**    against overflowing them.
**    Nothing else is hoisted (an index computed in the loop from anything
**    but v and invariants, a variant array, a float key: they stay
**    checked, KfaLoop.unchecked lists them with the reason). The IR sees
**    through copies (`local j = i; x[j]` is x[i]), which the AST rule did
**    not: the one difference from the old decisions (test_irfacts
**    cross-checks the rest), and a control variable assigned in the body
**    (the old rule then hoisted nothing in that loop; here the reads
**    before the assignment are still v, the ones after are not). Blocks
**    that never run (sp->live) are skipped.
**    The old generator versioned (a fast copy without these checks, a
**    checked copy marked not to vectorize, the test choosing) only
**    innermost loops on the CPU, every level up to 3 deep in kernels.
**    Rectangular nests: KfaLoop.nest is the outermost enclosing loop O
**    such that every numeric for loop from L up to O (O excluded) is an
**    integer loop whose init, limit and step are constants, defined
**    outside O, #x, x.shape[k] (k constant), x.size of an array from
**    outside O, or integer + - * of such (kfa_nest_invariant: `n - 1` is
**    evaluated in O's body at each entry of L) (nest == L when none
**    qualifies: a triangular nest, a while loop in between). A nest head
**    O (a loop that some inner loop's nest reaches: the one it names, or
**    one on the way to it) has nestchecks: every check inside it that one
**    test before O proves: the array root (index chains walked while inside O) is
**    defined outside O and the key is invariant in O or affine in the
**    control variable of a loop M of the nest that contains the access
**    (vloop: M, the offset invariant in O). M's range is computed before O
**    from M's forprep operands. (New: the old generator re-tested at each
**    entry of the innermost loop.)
**    A kjit.prange loop (5.) whose control variable is an integer is a
**    nest head too: a parallel one's worker tests the nest checks at each
**    call, its own variable over the call's chunk; a serial one (not in
**    a parallel body) is tested once before it, over its whole range. Its
**    range facts (init, limit, step, stepsign, isint as in 1.) are the
**    call's operands a, b [, c] (no c: step NULL, 1). M is any loop inside
**    it such that every loop from M up to the prange loop is an integer
**    for or a (serial) prange loop whose operands are invariant there
**    (nest_loop; a for's nest field stops below the prange loop, which is
**    no for), or whose init and limit are the prange variable i plus or
**    minus such an invariant (kfa_head_operand: a triangular `for j = 1,
**    i`, `for j = i + 1, n`), its step invariant: its range over the
**    test's range of i is taken whole (step > 0: from the least init to
**    the greatest limit; none when that is empty), a sound bound of every
**    range it has. A key in such a loop's variable and another's (`i -
**    j`) is not tested there: the two ranges are not independent, the
**    bound would fail for every chunk of more than one i.
**
** 3. While loops (KfaNarrow, KfaLoop.narrowk): the old narrow_find on the
**    IR: among the tests of the loop's condition (the header's branch and
**    the `and` tests chained after it, each with an exit), `k < e`,
**    `k <= e` (or the swapped `e > k`, `e >= k`) where k is a T_INT phi of
**    the header that the loop changes only by one `k + 1` (one ADD of the
**    literal 1, outside inner loops, every path back to the header through
**    it or around it) and e is an integer literal in [INT32_MIN,
**    INT32_MAX - 1] or a T_INT value defined outside the loop (not the
**    control variable of an enclosing for). Run-time test before the loop:
**    k's entry value (and e's, unless constant) in [INT32_MIN, INT32_MAX -
**    1]; then k and e fit i32 throughout. The old generator used it only
**    in kernels and not inside another narrowed loop. The difference: a
**    goto in the body (a `continue`) stopped the old rule; the SSA proof
**    holds with it (every iteration passes the header's test, and the
**    step at most once), so such a loop is narrowed here too.
**
** 4. Peelable phis (KfaLoop.peel, and peel[] by instruction id): a header
**    phi typed T_NUMBER whose operands on the back edges are all f64/f32:
**    only the entry value may be an integer, so peeling one iteration (or
**    versioning on the entry tag) makes it a plain float inside the loop.
**
** 5. kjit.prange loops (KfaPrange, KfaLoop.prange): a FORIN loop whose
**    tfor call's iterator is the prange call (KfaPrange.call: a, b [, c]
**    are its operands 1..3). Its header phis other than the iteration
**    state are the locals assigned in the body: each must be a reduction
**    (s = s + e, s - e, s * e, math.min(s, e), math.max(s, e),
**    math.min(e, s), math.max(e, s)): the values of s in the loop are the
**    phi, phis inside the body joining only such values, and reduction
**    operations named s (stored into s) taking one of them at the s
**    position; any other use of them in the loop breaks the rule (e may
**    not mention s). One operator per variable; a T_INT, T_F64, T_F32 or
**    T_NUMBER phi (KfaRedVar.number: the old typer had made such a
**    variable a float, and accepted it); min(e, s) and max(e, s) of
**    integers only. return, break and goto out of the body are errors
**    (breaks of inner loops are fine), and so is an assignment to an
**    enclosing local that nothing reads afterwards (SSA makes no phi for
**    it: found in the body's bytecode). Writes to arrays are listed
**    (writes) with whether each iteration writes its own row (disjoint:
**    the outermost key is the control variable plus an invariant); the
**    others are not refused (nor were they): the user promises
**    independence by writing prange.
**    The result: errmsg, the old generator's message for the first rule
**    broken (in the old order: the body's statements in source order,
**    gotos, then per variable its type, argument order and reads), and
**    errline, where to report it ("chunk:errline: errmsg"); it matters
**    only where the loop would run in parallel (the option on, the CPU,
**    not inside another prange loop: the old generator analysed no other
**    loop), and then it is a compile error. errline is the failing
**    statement's line, except where the statement left no instruction
**    (`last = i` is a copy): then the line of the value stored. parallel:
**    it runs in parallel; reds: its reductions in the order the body
**    first mentions them (operator, identity KFA_ID_*, operations);
**    shared: the named values from outside that the body reads, in the
**    same order.
**    KfaLoop.note: the line of f:inspect("parallel") for every for, while,
**    repeat and prange loop (the old texts; NULL for a prange loop that
**    fails to compile); the code generator collects them over the
**    specializations it emits for the CPU, identical lines once, "no
**    loops" when none. Lines are KirLoop.line: a repeat loop's is its
**    body's first line (the old one named the line of `repeat`), a
**    `while true` loop's likewise.
**
** 6. Purity (kfa_mark_pure, over a whole session): the old mark_pure: a
**    specialization is pure when it returns one integer, float, number
**    (the old typer made those floats; the tagged pair fits two registers)
**    or boolean, has no loop, stores nothing (setindex, setfield, setupval,
**    setlist), makes no table or closure, and calls only built-ins other
**    than error and the cuda ones, and pure specializations; the greatest
**    such set. Dead blocks are ignored (the old one read every statement);
**    a forward goto is a plain branch here (the old one refused any goto).
**    The code generator narrows the candidates before the fixpoint (its
**    predicate `fits`: a result in registers, no Lua frames, a fixed
**    result count), so the set stays closed under calls: a pure
**    specialization calls only pure ones, and a caller of one that does
**    not fit is no candidate either. test_irfacts cross-checks the
**    decisions with the old rule (no predicate).
**
** 7. Deferred bounds checks (kernels) are left to the code generator: the
**    old rule deferred the checks of one statement's straight-line value
**    expressions (constants, locals, + - * / and unary minus on numbers,
**    #, integer-indexed reads of arrays with a fallback) to one branch
**    before the statement's effect. On the IR the statement is gone, but
**    the same thing is local to a block: the checks of a run of such
**    instructions wait until the first instruction with an effect (a
**    store, a call, the terminator), and the fallback of a deferred read
**    (a kernel parameter, or a shared/local array of constant size: in
**    SSA the root value itself, never reassigned) is what the lowering
**    has at hand. No loop fact is involved.
**
** What the code generator still does with these facts: compute forprep's
** iteration count, lo, hi and the tests (in 128 bits, as emit_int_for and
** hoist_test); decide what to version (innermost loops on the CPU, three
** levels in kernels, or a nest head with its nestchecks) and emit the
** fast and checked copies, the latter not vectorized; the narrow slots
** and their copy back (while loops, kernels); peel or version the
** peelable phis; outline prange bodies, their environment, partials and
** combination (KFA_ID_*); raise a prange errmsg; lower pure calls; defer
** kernel checks (7.); collect the notes. Facts are computed whether or
** not bounds checking is on: with boundscheck = false there is nothing to
** hoist.
*/
#ifndef KJIT_IR_FACTS_H
#define KJIT_IR_FACTS_H

#include "ir/ir_type.h"

#define KFA_MAXHOIST 256   /* hoisted checks per loop (as KJIT_MAXHOIST) */
#define KFA_MAXTERMS 8     /* invariant terms of a general affine key */

typedef enum { KFA_NARROW_NEVER, KFA_NARROW_TEST, KFA_NARROW_ALWAYS } KfaNarrowKind;

/* Reduction operators (the old RED_*); _EF: math.min(e, s)/max(e, s). */
typedef enum {
  KFA_RED_NONE, KFA_RED_ADD, KFA_RED_MUL, KFA_RED_MIN, KFA_RED_MAX, KFA_RED_MIN_EF,
  KFA_RED_MAX_EF
} KfaRed;

/* What a chunk other than the first starts a reduction from. */
typedef enum {
  KFA_ID_ZERO,      /* + and -: 0 (integers) or -0.0 (x + -0.0 == x) */
  KFA_ID_ONE,       /* *: 1 or 1.0 */
  KFA_ID_VALUE,     /* min(s, e), max(s, e): the variable's value */
  KFA_ID_MAXVAL,    /* min(e, s): INT64_MAX */
  KFA_ID_MINVAL     /* max(e, s): INT64_MIN */
} KfaIdentity;

/* A product in a nest check's key (kfa_nest_linear_): neg ? -1 : 1 times
** scale (NULL: 1; else an integer invariant in the nest) times
** (vneg ? -v : v) + the wrapped sum of terms, v the control variable of
** loop. */
typedef struct KfaVarTerm {
  KirLoop *loop;
  int vneg, neg;
  KirInsn *scale;
  KirInsn **terms; uint8_t *tneg; int nterms;
} KfaVarTerm;

typedef struct KfaCheck {
  KirInsn *insn;          /* the INDEX or SETINDEX */
  KirInsn *base;          /* the array root, defined outside the loop */
  int dim;                /* extent of base the key indexes (0-based) */
  KirInsn *key;
  int affine;             /* key = v + off (v: the loop's control variable) */
  KirInsn *off;           /* affine: the offset value, or NULL for 0 */
  int offconst;           /* off is the constant offk (emit that) */
  lua_Integer offk;
  int negoff;             /* key = v - off */
  KirLoop *vloop;         /* affine: the loop whose control variable v is
                             (in a nest check, any loop of the nest) */
  /* the general affine form (kfa_linear_, 2.): key = v + offset, or
  ** -v + offset (negv), the offset being the wrapped sum of nterms
  ** invariant integer expressions (each subtracted where tneg); off is
  ** then NULL. */
  int negv;
  KirInsn **terms; uint8_t *tneg; int nterms;
  /* a nest check in several loops' variables (kfa_nest_linear_; affine is
  ** 0): key = the wrapped sum of terms and of these products */
  KfaVarTerm *vterms; int nvterms;
} KfaCheck;

typedef struct KfaUnchecked {
  KirInsn *insn; int dim;
  const char *why;        /* "key is not affine", "array varies in the loop" ... */
} KfaUnchecked;

typedef struct KfaNarrow {
  KirInsn *k;             /* the header phi of the counter */
  KirInsn *cmp;           /* the lt/le testing it */
  KirInsn *bound;         /* e */
  int boundconst; lua_Integer boundk;
  KirInsn *step;          /* the ADD k + 1 */
  KirInsn *kentry;        /* k's value on entry (the test) */
} KfaNarrow;

typedef struct KfaRedVar {
  KirInsn *phi;           /* header phi: the variable in the loop */
  const char *name;
  KfaRed red;
  KfaIdentity id;
  KirInsn **ops; int nops;   /* its reduction operations (source order) */
  int number;             /* the phi is a T_NUMBER: 1, partials are tagged
                             numbers; 2, a number only by its entry value
                             (a peelable phi, + or *): float partials, chunk
                             0 starting from the entry value as is */
} KfaRedVar;

typedef struct KfaPrange {
  KirInsn *call;          /* kjit.prange(a, b [, c]): operands 1..3 */
  int parallel;           /* runs in parallel (legal, the option on, not
                             nested in a parallel prange) */
  int nested;             /* inside another prange loop */
  const char *errmsg;     /* NULL, or why it is refused with parallel on */
  int errline;
  KfaRedVar *reds; int nreds;
  KirInsn **shared; int nshared;   /* outside values read, first use first */
  KirInsn **writes; int nwrites;   /* the SETINDEXes of the body */
  uint8_t *disjoint;      /* per write: its row (outermost key) is the
                             control variable plus an invariant, on an array
                             from outside: each iteration its own row */
} KfaPrange;

typedef struct KfaLoop {
  KirLoop *loop;
  /* numeric for */
  int isint;
  KirInsn *init, *limit, *step;
  int stepsign;           /* +1, -1, 0: known only at run time */
  lua_Integer stepk;      /* stepsign != 0: its value */
  int innermost;
  int exits;              /* leaves other than by its forloop */
  KfaNarrowKind narrow;
  KirLoop *nest;          /* see 2. */
  KfaCheck *checks; int nchecks;
  KfaCheck *nestchecks; int nnestchecks;   /* a nest head: see 2. */
  KfaUnchecked *unchecked; int nunchecked;
  /* while/repeat */
  KfaNarrow *narrowk;     /* NULL: no narrow counter */
  /* every loop */
  KirInsn **peel; int npeel;
  KfaPrange *prange;      /* NULL unless a prange loop */
  const char *note;       /* f:inspect("parallel")'s line for it, or NULL */
} KfaLoop;

typedef struct KfaFacts {
  KtySpec *sp;
  KfaLoop *loops;         /* by KirLoop.id */
  int nloops;
  /* by instruction id */
  KfaLoop **hoisted;      /* INDEX/SETINDEX: the innermost loop whose test
                             proves its check, or NULL */
  uint8_t *peel;          /* 1: a peelable number phi */
} KfaFacts;

/* Facts of sp; parallel: the function has parallel = true and compiles
** for the CPU (decides prange notes and errors). NULL when out of memory. */
KfaFacts *kfa_analyze(Arena *A, KtySpec *sp, int parallel);

/* Whether v (an operand of a loop inside o) can be computed before o: a
** constant, defined outside o, #x, x.shape[k] (k constant) or x.size of
** an array defined outside o, or integer + - * and unary minus of such,
** at most KFA_NEST_EXPRDEPTH deep (2.: what "invariant in O" means for a
** nest's loop operands; the code generator computes such an expression
** again before the nest). */
#define KFA_NEST_EXPRDEPTH 8
int kfa_nest_invariant(const KtySpec *sp, const KirLoop *o, const KirInsn *v);

/* Whether v is x.shape[k] (k a constant in 1..ndim: returns k) or x.size
** (returns -1) of an array x defined outside o: an extent, or their
** product, which kfa_nest_invariant accepts; 0 otherwise. */
int kfa_shape_read(const KtySpec *sp, const KirLoop *o, const KirInsn *v);

/* Whether x (an integer) is prange head o's control variable v, v + off,
** off + v, v - off (*offneg) or off - v (*vneg), off kfa_nest_invariant in
** o (2.: a triangular loop's init or limit). */
int kfa_head_operand(const KtySpec *sp, const KirLoop *o, const KirInsn *x, int *vneg,
                     KirInsn **off, int *offneg);

/* Sets pure[i] for each specialization S->specs[i] (see 6.). cpu: the
** target is the CPU (otherwise none is pure, as before). fits (NULL: all
** do): whether the code generator's pure convention can carry sp at all;
** one that does not is no candidate, and neither is any caller of it. */
void kfa_mark_pure(KtySession *S, int cpu, int (*fits)(KtySession *S, const KtySpec *sp),
                   uint8_t *pure);

/* "s + e", "math.min(s, e)" ...: how messages and notes name a reduction. */
const char *kfa_red_name(KfaRed r);

/* The facts as text (tests; one line per fact). */
void kfa_print(const KfaFacts *F, char **buf, size_t *len, size_t *cap);

#endif
