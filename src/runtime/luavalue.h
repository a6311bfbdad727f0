/*
** runtime/luavalue.h: the run-time helpers compiled code calls for Lua
** values (tables and whatever is read from them): frames of stack slots,
** reads and writes through the Lua API, arithmetic and comparisons with
** metamethods. How values are anchored, and why these helpers may
** longjmp, is said at the top of luavalue.c.
*/
#ifndef KJIT_RUNTIME_LUAVALUE_H
#define KJIT_RUNTIME_LUAVALUE_H
#include <stddef.h>
#include <stdint.h>
#include "lua.h"

/* Codes the checked helpers return (0: done). A type error kjit foresees
** is raised by compiled code through kjit_lv_typeerror / kjit_lv_raise,
** with the user's file:line and Lua's description of the operand. */
enum {
  KLV_OK = 0,
  KLV_INSLOT = 0,      /* a read's result is in the slot (not a number) */
  KLV_INT = 1,         /* ... an integer, in *out */
  KLV_FLT = 2,         /* ... a float, its bits in *out */
  KLV_BOOL = 3,        /* a stored value or an argument: a boolean, 0 or 1 in bits */
  KLV_NIL = 4,         /* an argument only: nil */
  KLV_BADA = 0x11,     /* operand a has the wrong type (no metamethod) */
  KLV_BADB = 0x12,     /* operand b ... */
  KLV_NOINTA = 0x21,   /* bitwise: a has no integer representation */
  KLV_NOINTB = 0x22,
  KLV_IDIV0 = 0x30,    /* integer // 0 */
  KLV_MOD0 = 0x40,     /* integer % 0 */
  KLV_KEYNIL = 0x50,   /* t[nil] = v on a table without __newindex */
  KLV_KEYNAN = 0x60,   /* t[0/0] = v ... */
  KLV_CMP = 0x70       /* an ordering without a metamethod */
};

/* For the run-time files that call Lua for compiled code (luacall.c,
** luatfor.c, luaclosure.c), not called by compiled code: the value on top
** as a read's result, popped (a number's tag and bits in *out, anything
** else into slot dst: KLV_INSLOT), and a value given as (tag, bits, slot)
** pushed (KLV_INT, KLV_FLT, KLV_BOOL, KLV_NIL, else the slot's value). */
int32_t kjit_lv_take(lua_State *L, int32_t dst, int64_t *out);
void kjit_lv_push(lua_State *L, int32_t tag, int64_t bits, int32_t slot);

/* The native view of the kjit array in slot t for compiled code
** (codegen/cg_luaview.c): 1 f64, 2 i64, else 0; info: address, length. */
int32_t kjit_lv_arrview(lua_State *L, int32_t t, int64_t *info);

/* Slots are absolute Lua stack indices (see luavalue.c). */
int32_t kjit_lv_open(lua_State *L, int32_t n);
void kjit_lv_close(lua_State *L, int32_t first);
void kjit_lv_copy(lua_State *L, int32_t from, int32_t to);
void kjit_lv_setint(lua_State *L, int32_t slot, int64_t i);
void kjit_lv_setnum(lua_State *L, int32_t slot, double d);
void kjit_lv_setbool(lua_State *L, int32_t slot, int32_t b);
void kjit_lv_setnil(lua_State *L, int32_t slot);
void kjit_lv_setstr(lua_State *L, int32_t slot, const char *s, int64_t len);
int32_t kjit_lv_truthy(lua_State *L, int32_t slot);
int32_t kjit_lv_isnil(lua_State *L, int32_t slot);
int32_t kjit_lv_tonum(lua_State *L, int32_t slot, int32_t strings, int64_t *out);
int32_t kjit_lv_gettable(lua_State *L, int32_t t, int32_t k, int32_t dst, int64_t *out);
/* h: the address of the table in slot t when compiled code knows it (a
** read's *out for a table), else NULL: the fast paths' hint. */
int32_t kjit_lv_geti(lua_State *L, int32_t t, void *h, int64_t i, int32_t dst, int64_t *out);
/* getfield, setfield: ks is the call site's cache of the field name's
** string (luatable.c), NULL at first. */
int32_t kjit_lv_getfield(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                         int32_t dst, int64_t *out);
int32_t kjit_lv_settable(lua_State *L, int32_t t, int32_t k, int32_t vtag, int64_t vbits,
                         int32_t v);
int32_t kjit_lv_seti(lua_State *L, int32_t t, void *h, int64_t i, int32_t vtag, int64_t vbits,
                     int32_t v);
int32_t kjit_lv_setfield(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                         int32_t vtag, int64_t vbits, int32_t v);
int32_t kjit_lv_getfieldk(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                          int64_t *kn, int32_t dst, int64_t *out);
int32_t kjit_lv_setfieldk(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                          int64_t *kn, int32_t vtag, int64_t vbits, int32_t v);
/* A table access's site in compiled code (codegen/cg_lua.c makes one
** private global per t.k or t[i] it reads or writes inline): the caches
** of the inline path, and what the access's errors say. */
typedef struct KlvSite {
  void *ks;            /* the field name's interned string (luatable.c); NULL at first */
  int64_t kn;          /* index of the node where the site found its key last */
  const char *name;    /* the field name (no NUL inside); NULL for t[i] */
  const char *info;    /* Lua's description of the indexed value: " (local 't')", "" */
  const char *chunk;   /* the function's chunkname */
  int32_t line;
  /* a method found through its class (luatable.c kjit_lt_smethod): the
  ** nodes where the object's metatable held __index and that class table
  ** held the key last, and the interned "__index" (NULL at first) */
  int64_t mn, cn;
  void *ixs;
} KlvSite;
/* The whole access where the inline path missed, raising its own errors
** with the site's file:line (so compiled code has no error block per
** access). The indexed value is (otag, obits) when it is a number
** (boxed into slot t first, which is then a scratch slot), else it is in
** slot t (otag 0). Reads return the result's tag (the value in *out or
** in slot dst), writes KLV_OK. */
int32_t kjit_lv_sgetfield(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                          void *h, int32_t dst, int64_t *out);
extern long kjit_lv_sgetfield_calls;   /* kjit_lv_sgetfield's calls (kjit.testing.callees) */
extern long kjit_lv_chain_calls;      /* kjit_lv_chain's: a chain's slow calls (the same) */
int32_t kjit_lv_sgeti(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int64_t i, int32_t dst, int64_t *out);
int32_t kjit_lv_ssetfield(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                          void *h, int32_t vtag, int64_t vbits, int32_t v);
int32_t kjit_lv_sseti(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int64_t i, int32_t vtag, int64_t vbits, int32_t v);
/* t[k] with a key known only at run time (ktag, kbits; in slot kslot when
** ktag is 0, KLV_INSLOT): an integer as sgeti/sseti, anything else
** through the API (a float, a string, nil: the key pushed above the frame
** for the call), so compiled code has one miss path for both. */
/* (t[k] through the API with the access's site: its position where the
** VM would raise without one, an __index chain ending at a number) */
int32_t kjit_lv_gettable_at(lua_State *L, const KlvSite *s, int32_t t, int32_t k, int32_t dst,
                            int64_t *out);
int32_t kjit_lv_settable_at(lua_State *L, const KlvSite *s, int32_t t, int32_t k, int32_t vtag,
                            int64_t vbits, int32_t v);
int32_t kjit_lv_sgetk(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int32_t ktag, int64_t kbits, int32_t kslot, int32_t dst, int64_t *out);
int32_t kjit_lv_ssetk(lua_State *L, KlvSite *s, int32_t otag, int64_t obits, int32_t t,
                      void *h, int32_t ktag, int64_t kbits, int32_t kslot, int32_t vtag,
                      int64_t vbits, int32_t v);
int32_t kjit_lv_len(lua_State *L, int32_t t, int32_t dst, int64_t *out, const char *site);
int64_t kjit_lv_newtable(lua_State *L, int32_t dst, int32_t narr, int32_t nrec);
void kjit_lv_ctorfield(lua_State *L, int32_t t, void *h, const char *k, void **ks, int32_t vtag,
                       int64_t vbits, int32_t v);
int64_t kjit_lv_setmt(lua_State *L, int32_t ttag, int64_t tbits, int32_t t, int32_t mtag,
                      int64_t mbits, int32_t m, int32_t dst, const char *site);
/* One item of a constructor's list as compiled code holds it: a number
** (KLV_INT, KLV_FLT with bits), a boolean (KLV_BOOL), nil (KLV_NIL), or
** the value in stack slot `slot` (KLV_INSLOT). */
typedef struct KlvItem { int32_t tag, slot; int64_t bits; } KlvItem;
/* t[base + 1 .. base + n] = items, raw, into the table of slot t (h: its
** address) that a constructor just made with room for them: one call for
** the whole list (luatable.c kjit_lt_setlist writes the array part). */
void kjit_lv_setlist(lua_State *L, int32_t t, void *h, int64_t base, int32_t n,
                     const KlvItem *items);
int64_t kjit_lv_ctor_grow(lua_State *L, int32_t dst, int32_t last, int32_t narr, int32_t nrec);
int64_t kjit_lv_ptr(lua_State *L, int32_t t);
int64_t kjit_lv_getref(lua_State *L, int32_t ref, int32_t dst);
void kjit_lv_rawseti(lua_State *L, int32_t t, int64_t i, int32_t vtag, int64_t vbits, int32_t v);
int32_t kjit_lv_arith(lua_State *L, int32_t op, int32_t a, int32_t b, int32_t dst, int64_t *out);
int32_t kjit_lv_compare(lua_State *L, int32_t op, int32_t a, int32_t b);
void kjit_lv_typeerror(lua_State *L, int32_t slot, const char *pre, const char *post,
                       const char *chunk, int32_t line);
void kjit_lv_cmperror(lua_State *L, int32_t a, int32_t b, const char *chunk, int32_t line);
void kjit_lv_raise(lua_State *L, const char *msg, const char *chunk, int32_t line);
void kjit_lv_keyerror(lua_State *L, int32_t nan, const char *chunk, int32_t line);
void kjit_lv_indexerror(lua_State *L, int32_t rc, int32_t obj, const char *info,
                        const char *chunk, int32_t line);
void kjit_lv_aritherror(lua_State *L, int32_t rc, int32_t a, int32_t b, int32_t bitwise,
                        const char *infoa, const char *infob, const char *chunk, int32_t line);
void kjit_lv_settagged(lua_State *L, int32_t slot, int32_t tag, int64_t bits);
/* Whole slow paths (operands as (tag, bits, slot)), raising their errors;
** key: a constant of the site (its trampoline's cache key), or NULL. */
int32_t kjit_lv_arithx(lua_State *L, int32_t op, int32_t atag, int64_t abits, int32_t aslot,
                       int32_t btag, int64_t bbits, int32_t bslot, int32_t dst, int64_t *out,
                       const char *chunk, int32_t line, const char *infoa, const char *infob,
                       const void *key);
/* kjit_lv_arithx with what does not change per call in one constant
** record per operation (codegen/cg_lua.c): four arguments fewer to set
** up at each of the many arithmetic sites of table code. */
typedef struct KlvArith {
  int32_t op, line;
  const char *chunk, *infoa, *infob;
} KlvArith;
int32_t kjit_lv_sarith(lua_State *L, const KlvArith *s, int32_t atag, int64_t abits, int32_t aslot,
                       int32_t btag, int64_t bbits, int32_t bslot, int32_t dst, int64_t *out);
/* A chain of operations that compiled code checked as one
** (codegen/cg_chain.c) and found not all numbers of the kind it computes,
** or a field not where its site looks: the whole chain again, operation
** by operation in the program's order, each as its own helper does it
** (kjit_lv_sarith, kjit_lv_sgetfield, kjit_lv_ssetfield: metamethods,
** strings, errors raised there with the operation's line and operands'
** descriptions). Operands are leaves (leaves[4 * i ..]: tag, bits, slot,
** as the helpers take them, and a table's hint) or results of earlier
** operations of the chain (outs[2 * j ..]: tag, bits; a result that is
** not a number is in the operation's own slot, base + dst, which anchors
** it). */
enum { KLV_CHAIN_GET = -1, KLV_CHAIN_SET = -2,    /* KlvChainOp.a.op, else LUA_OPADD ... */
       KLV_CHAIN_GETI = -3, KLV_CHAIN_SETI = -4,
       KLV_CHAIN_EQ = -5, KLV_CHAIN_LT = -6, KLV_CHAIN_LE = -7,   /* (results 0 or 1) */
       KLV_CHAIN_SQRT = -8 };   /* math.sqrt (a float; a.infoa, a.infob: its argument error's words) */
typedef struct KlvChainOp {
  KlvArith a;
  int32_t x, y, z;   /* operands: >= 0 leaf x, < 0 the result of operation -1 - x;
                        an access's: x its table (a leaf), then its integer key
                        (t[i]: a leaf), then the value written */
  int32_t dst;       /* the operation's slot, from the frame's first */
  KlvSite *site;     /* an access's */
} KlvChainOp;
int32_t kjit_lv_chain(lua_State *L, const KlvChainOp *ops, int32_t nops, int32_t base,
                      const int64_t *leaves, int64_t *outs);
int32_t kjit_lv_comparex(lua_State *L, int32_t op, int32_t atag, int64_t abits, int32_t aslot,
                         int32_t btag, int64_t bbits, int32_t bslot, const char *chunk,
                         int32_t line, const char *site);

/* Fast paths over Lua 5.4's own table layout (runtime/luatable.c): each
** returns 1 when it did the whole operation (a plain table, no metatable
** in the way, the key present or the array slot in range), else 0 and the
** caller takes the API path. */
int kjit_lt_geti(lua_State *L, int32_t t, void *h, int64_t i, int32_t dst, int64_t *out,
                 int32_t *tag);
int kjit_lt_getfield(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                     int32_t dst, int64_t *out, int32_t *tag);
int kjit_lt_seti(lua_State *L, int32_t t, void *h, int64_t i, int32_t vtag, int64_t vbits);
int32_t kjit_lt_sgeti(lua_State *L, void *h, int64_t i, int32_t dst, int64_t *out);
int kjit_lt_setlist(lua_State *L, void *h, int64_t base, int32_t n, const KlvItem *items);
int kjit_lt_ctorfield(lua_State *L, void *h, const char *k, void **ks, int32_t vtag, int64_t vbits);
int64_t kjit_lt_setmt(lua_State *L, int32_t t, int32_t m, int32_t dst);
int kjit_lt_setfield(lua_State *L, int32_t t, void *h, const char *k, void **ks,
                     int32_t vtag, int64_t vbits, int32_t v);
/* The same without L, for compiled code to call first (-1 or 0: call the
** full helper); h: the table's address or NULL, ks: the site's cache. */
int32_t kjit_lt_fgetfield(void *h, void **ks, int64_t *out);
int32_t kjit_lt_fgeti(void *h, int64_t i, int64_t *out);
int32_t kjit_lt_fsetfield(void *h, void **ks, int32_t vtag, int64_t vbits);
void *kjit_lt_findfield(void *h, void **ks, int64_t *kn);
/* t.k for a site whose inline read missed, where t is a table without k
** whose metatable's __index is a table holding k (a method found through
** its class): the value's tag (a number in *out, else in slot dst), or -1
** for any other shape (the general path). */
int32_t kjit_lt_smethod(lua_State *L, KlvSite *s, void *h, int32_t dst, int64_t *out);
int32_t kjit_lt_fseti(void *h, int64_t i, int32_t vtag, int64_t vbits);
/* The layout as numbers (luatable.c's kjit_lt_layout), for the code
** generator's inline reads and writes; offsets in bytes. */
typedef struct KltLayout {
  int t_alimit, t_array, t_node, t_lsizenode;   /* in a Table */
  int node_size, node_key_tt, node_key_val, node_tt;   /* in a Node (value first) */
  int tv_size, tv_tt;                           /* a TValue (value first) */
  int s_hash;                                   /* in a TString */
  int tag_int, tag_flt, tag_shrkey;
  int tag_table;                                /* a table value's tag */
  int t_metatable;                              /* in a Table */
  int tag_false, tag_true;                      /* booleans' tags */
  int node_next;                                /* a Node's chain link (int) */
  /* the running C function's stack slots (host/lua_stack.h, valid only
  ** while kls_on): L->ci at s_ci, ci->func at ci_func, a slot's size */
  int s_ci, ci_func, sv_size;
  /* for a constructor's list written inline (cg_lua.c setlist_inline) and
  ** an absent element read inline: a Table's 'marked' byte and its white
  ** bits, its 'lastfree' (NULL: no hash part, lua's isdummy) */
  int t_marked, white_bits, t_lastfree;
} KltLayout;
const KltLayout *kjit_lt_layout(lua_State *L);
extern int kjit_lt_on;
/* The no-table table of the inline checks (luatable.c; an LtTable). */
extern const struct LtTable kjit_lt_none;
/* Whether the running Lua's layout matched (checked once, at load). */
int kjit_lt_enabled(void);

/* Registers the helpers' names for the JIT linker (once per process). */
void kjit_lv_register(void);

#endif
