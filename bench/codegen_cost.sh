#!/bin/bash
# bench/codegen_cost.sh: what LLVM's code generator costs on the module kjit
# makes for a Lua program's main chunk (compiled whole, as
# bench/programs/run1.lua does), measured outside kjit so that edits of the
# module can be tried by hand: the chunk's optimized module (f:inspect("llvm"))
# is written to OUT.ll, then `llc-14 -O2 -mcpu=native` (the same LLVM release,
# kjit's code generation level) compiles it under callgrind, counting only
# the code generator's passes (not llc's start-up or its parsing).
#   LUA_CPATH="build/?.so;;" bash bench/codegen_cost.sh OUT PROGRAM.lua [ARGS...]
# Prints "ir_insns N" (instructions of the optimized module) and
# "codegen_instructions N". Then edit OUT.ll and run
#   bash bench/codegen_cost.sh --llc OUT.ll
# to count an edited module. Run the program with small arguments: only its
# compile matters (the chunk runs once, its output discarded).
set -e
llc=$(command -v llc-14 || command -v llc)
count() {
  local cg; cg=$(mktemp /tmp/codegen_cost.XXXXXX)
  valgrind --tool=callgrind --callgrind-out-file="$cg" \
    --toggle-collect='llvm::legacy::PassManagerImpl::run*' \
    "$llc" -O2 -mcpu=native -filetype=obj -o /dev/null "$1" 2>&1 |
    sed -n 's/.*refs: *\([0-9,]*\).*/codegen_instructions \1/p' | tr -d ,
  rm -f "$cg"
}
if [ "$1" = "--llc" ]; then count "$2"; exit; fi
out=$1 prog=$2
shift 2
lua5.4 - "$prog" "$@" > "$out.ll" <<'LUA'
local path = arg[1]
package.path = (path:match("^(.*[/\\])") or "./") .. "?.lua;" .. package.path
local args = { [0] = path }
for i = 2, #arg do args[#args + 1] = arg[i] end
arg = args
local f = require("kjit").jit(assert(loadfile(path)))
local out = io.output()
io.output("/dev/null")
f()
io.output(out)
io.write(f:inspect("llvm"))
LUA
echo "ir_insns $(grep -c '^  [^;]' "$out.ll")"
count "$out.ll"
