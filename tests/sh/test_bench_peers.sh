#!/usr/bin/env bash
# tests/sh/test_bench_peers.sh: the benchmark's peer implementations compute
# what the Lua kernels compute. On the small sizes of bench/workload.lua,
# every kernel's checksum from
#   - bench/c/kernels.c built with clang-14 and with gcc (-O3 -march=native
#     -ffp-contract=off: with FMA contraction C rounds differently, and
#     mandelbrot's escape counts change a little),
#   - LuaJIT over FFI arrays (bench/run_lua.lua luajit),
#   - Numba (bench/numba_kernels.py; skipped when bench/.venv has no numba)
# must equal the Lua 5.4 interpreter's (bench/run_lua.lua lua): exactly,
# except saxpy (f32 arrays there, doubles in Lua tables: 1e-6 relative).
# A missing compiler or LuaJIT is a skip. No timing is checked.
# Writes "P F S" to $KJIT_RESULTS_DIR/test_bench_peers.txt (default
# build/test-results, where tests/run_all.sh sums them).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1

passed=0 failed=0 skipped=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

kernels=(saxpy dot mandelbrot nbody matmul jacobi convolve histogram prefix_sum fib)
small() {  # the small parameters of kernel $1
  lua5.4 -e "local W = dofile('bench/workload.lua')
             print(table.concat(W.spec['$1'].small, ' '))"
}
checksum() {  # checksum <command...>: the last field of the result line
  "$@" 2>"$tmp/err" | awk '$1 == "result" { print $5 }'
}
agree() {  # agree <kernel> <got> <want>
  lua5.4 -e "local got, want = tonumber('$2'), tonumber('$3')
             local tol = ('$1' == 'saxpy') and 1e-6 or 0
             local ok = got ~= nil and want ~= nil
                        and math.abs(got - want) <= tol * math.max(1, math.abs(want))
             os.exit(ok)"
}

peers=()   # name|command prefix
for cc in clang-14 gcc; do
  if command -v "$cc" >/dev/null 2>&1 &&
     "$cc" -O3 -march=native -ffp-contract=off -o "$tmp/kernels-$cc" bench/c/kernels.c -lm; then
    peers+=("C ($cc)|$tmp/kernels-$cc")
  else
    echo "SKIP C ($cc): not found or does not compile"; skipped=$((skipped + 1))
  fi
done
if command -v luajit >/dev/null 2>&1; then
  peers+=("LuaJIT|luajit bench/run_lua.lua luajit")
else
  echo "SKIP LuaJIT: not found"; skipped=$((skipped + 1))
fi
if [[ -x bench/.venv/bin/python ]] && bench/.venv/bin/python -c 'import numba' 2>/dev/null; then
  peers+=("Numba|bench/.venv/bin/python bench/numba_kernels.py")
else
  echo "SKIP Numba: no bench/.venv with numba (bash bench/run.sh makes it)"; skipped=$((skipped + 1))
fi

for k in "${kernels[@]}"; do
  p=$(small "$k")
  # shellcheck disable=SC2086  # $p is the parameter list
  want=$(checksum lua5.4 bench/run_lua.lua lua "$k" 1 $p)
  if [[ -z $want ]]; then
    echo "FAIL $k: no result from the Lua 5.4 interpreter: $(cat "$tmp/err")"
    failed=$((failed + 1)); continue
  fi
  for peer in "${peers[@]}"; do
    name=${peer%%|*} cmd=${peer#*|}
    # shellcheck disable=SC2086  # $cmd and $p are word lists
    got=$(checksum $cmd "$k" 1 $p)
    if agree "$k" "$got" "$want"; then
      passed=$((passed + 1)); echo "ok   $k: $name $got"
    else
      failed=$((failed + 1)); echo "FAIL $k: $name gives '$got', Lua 5.4 gives $want $(head -c 300 "$tmp/err")"
    fi
  done
done

echo "test_bench_peers: $passed passed, $failed failed, $skipped skipped"
results=${KJIT_RESULTS_DIR:-build/test-results}
mkdir -p "$results"
echo "$passed $failed $skipped" > "$results/test_bench_peers.txt"
((failed == 0))
