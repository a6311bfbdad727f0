/*
** ir_closure.h: can compiled code follow a function literal? (ir_closure.c
** has the design of closures in compiled code.)
*/
#ifndef KJIT_IR_CLOSURE_H
#define KJIT_IR_CLOSURE_H

#include <stddef.h>
#include "frontend/bytecode.h"

/* The literal made by the CLOSURE at sitepc of p: NULL when every local
** it captures keeps one value while the literal lives (passing upvalues by
** value is then Lua's semantics), else why not (in buf, without position). */
const char *kcl_capture_problem(const KbcProto *p, int sitepc, char *buf, size_t n);

/* Mutual recursion: when upvalue u of the literal made at sitepc is a
** local assigned once afterwards, by a function literal, with nothing
** between that can run Lua code, that CLOSURE's pc (the value the literal
** sees whenever it can run); else -1. */
int kcl_late_literal(const KbcProto *p, int sitepc, int u);

/* Cells (ir_closure.c): is local variable lvi of p (an index into
** p->locvars) shared with a literal and assigned afterwards, so kept in a
** cell? kcl_boxed_at: the local that register reg holds at pc, when it is
** kept in a cell (its locvars index), else -1. kcl_cell_upvalue: is
** upvalue u of p (a literal nested in the compiled function) such a cell? */
int kcl_boxed_local(const KbcProto *p, int lvi);
int kcl_boxed_at(const KbcProto *p, int reg, int pc);
int kcl_cell_upvalue(const KbcProto *p, int u);

/* Does p, or a literal nested in it, assign p's upvalue u (SETUPVAL)? */
int kcl_sets_upvalue(const KbcProto *p, int u);

/* Does the function literal made at site (a KIR_CLOSURE of p's IR) escape
** compiled code: stored in a table, returned, or captured by a literal
** that lets it escape? (ir_escape.c: it is then a real Lua closure.) */
#include "common/arena.h"
struct KirInsn;
int kcl_literal_escapes(Arena *A, const KbcProto *p, const struct KirInsn *site);

/* Is p a file's main chunk (linedefined 0, source "@...": the lua
** command's script, loadfile, dofile, require), which runs once a run?
** A chunk load() made from a string may be called many times. The one
** test of ir_escape.c's literal rule and host/chunkpolicy.c's. */
int kcl_file_main_chunk(const KbcProto *p);
/* Is the literal made at site (a KIR_CLOSURE of p's IR) one to leave to
** the interpreter: made by a main chunk outside its loops, calling a
** method, and each of its loops calling one too? (ir_escape.c) */
int kcl_left_to_interpreter(const KbcProto *p, const struct KirInsn *site);
/* Does the code of literal c make it one (it calls a method, and each of
** its loops calls one)? The test on the literal alone, without where it
** is made (host/chunkpolicy.c asks it too). */
int kcl_runs_interpreted(const KbcProto *c);

/* Is call (a KIR_CALL of p's IR) a call of an escaping literal where it is
** made, compiled as a direct call (ir_closure.c)? */
int kcl_direct_call(const KbcProto *p, const struct KirInsn *call);

#endif
