#!/usr/bin/env bash
# demo/run.sh: build kjit (installing what is missing) and run the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/setup.sh --target kjit_module   # the Lua module only: the tests are built by their command
LUA_CPATH="$PWD/build/?.so;;" exec lua5.4 demo/mandelbrot.lua
