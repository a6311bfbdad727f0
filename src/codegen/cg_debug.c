/*
** cg_debug.c: source lines for cuda.jit's lineinfo option. When the module
** carries the named metadata !kjit.lineinfo (kernel.c puts it there), each
** Lua function gets a DISubprogram and every instruction emitted for a KIR
** instruction the DILocation of its Lua line (line tables only), so that
** libNVVM writes .loc lines into the PTX (with -generate-line-info) and
** profilers show Lua lines. Elsewhere these are no-ops.
**
** The entry wrapper, runtime helpers and allocas carry no location: only
** calls between Lua functions need one (LLVM's verifier), and those are
** emitted for KIR instructions.
*/
#include <string.h>
#include <llvm-c/DebugInfo.h>
#include "codegen/cg.h"

void cg_debug_begin(CG *G) {
  G->dib = NULL;
  if (LLVMGetNamedMetadataNumOperands(G->M, "kjit.lineinfo") == 0) return;
  G->dib = LLVMCreateDIBuilder(G->M);
  G->difile = NULL;
  G->discope = NULL;
}

/* The file of the chunk named c ("@file.lua", or "=name" / source text). */
static LLVMMetadataRef file_of(CG *G, const char *c) {
  if (c == NULL) c = "?";
  if (c[0] == '@' || c[0] == '=') c++;
  const char *slash = strrchr(c, '/');
  const char *name = slash ? slash + 1 : c;
  size_t dirlen = slash ? (size_t)(slash - c) : 1;
  return LLVMDIBuilderCreateFile(G->dib, name, strlen(name), slash ? c : ".", dirlen);
}

void cg_debug_function(CG *G, KtySpec *sp, int line) {
  if (G->dib == NULL) return;
  LLVMSetCurrentDebugLocation2(G->B, NULL);
  LLVMMetadataRef file = file_of(G, sp->chunkname);
  if (G->difile == NULL) {
    G->difile = file;
    LLVMDIBuilderCreateCompileUnit(G->dib, LLVMDWARFSourceLanguageC, file, "kjit", 4, 1, "", 0, 0,
                                   "", 0, LLVMDWARFEmissionLineTablesOnly, 0, 0, 0, "", 0, "", 0);
  }
  LLVMMetadataRef ty = LLVMDIBuilderCreateSubroutineType(G->dib, file, NULL, 0, LLVMDIFlagZero);
  size_t n;
  const char *name = LLVMGetValueName2(G->fn, &n);
  G->discope = LLVMDIBuilderCreateFunction(G->dib, file, name, n, name, n, file,
                                           (unsigned)(line > 0 ? line : 0), ty, 1, 1,
                                           (unsigned)(line > 0 ? line : 0), LLVMDIFlagZero, 1);
  LLVMSetSubprogram(G->fn, G->discope);
}

void cg_debug_line(CG *G, int line) {
  if (G->dib == NULL || G->discope == NULL || line <= 0) return;
  LLVMMetadataRef loc = LLVMDIBuilderCreateDebugLocation(G->C, (unsigned)line, 0, G->discope, NULL);
  LLVMSetCurrentDebugLocation2(G->B, loc);
}

void cg_debug_end_function(CG *G) {
  if (G->dib == NULL) return;
  LLVMSetCurrentDebugLocation2(G->B, NULL);
  G->discope = NULL;
}

void cg_debug_end(CG *G) {
  if (G->dib == NULL) return;
  LLVMSetCurrentDebugLocation2(G->B, NULL);
  LLVMDIBuilderFinalize(G->dib);
  LLVMDisposeDIBuilder(G->dib);
  G->dib = NULL;
  LLVMAddModuleFlag(G->M, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                    LLVMValueAsMetadata(LLVMConstInt(G->i32, 3, 0)));
}

void cg_debug_dispose(CG *G) {
  if (G->dib) LLVMDisposeDIBuilder(G->dib);
  G->dib = NULL;
}
