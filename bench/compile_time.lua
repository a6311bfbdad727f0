-- bench/compile_time.lua: the first compile in a fresh process (LLVM's
-- start-up included: its targets and JIT, not loading the library, which
-- kjit.load_llvm() does first and "llvm_load_ms" reports), of a small
-- function, of the small loop, of the mandelbrot kernel or of
-- a 2-D 5-point stencil over f64[:,:] (one sweep; nested loops whose bounds
-- checks are versioned, then vectorized: the costly case for LLVM).
--   LUA_CPATH="build/?.so;;" lua5.4 bench/compile_time.lua small|loop|mandelbrot|stencil [CACHEDIR]
-- Prints "compile_ms <ms>". The call runs on a 2 x 2 image with 1
-- iteration (a 4 x 4 grid for the stencil), so the time is the compile's.
-- CPU time (os.clock).
-- With CACHEDIR, the function is compiled with {cache = true} and the disk
-- cache in CACHEDIR: the first run stores the object code, the next ones
-- load it (then "compile_ms" is the load, and "cache_hits 1" follows).
local which, cachedir = arg[1], arg[2]
local here = arg[0]:match("^(.*[/\\])") or ""
local K = dofile(here .. "kernels.lua")
local kjit = require "kjit"
local opts = nil
if cachedir then
  kjit.cache_dir(cachedir)
  opts = { cache = true }
end
-- B = the 5-point average of A inside the border
local function stencil(n, A, B)
  for i = 2, n - 1 do
    for j = 2, n - 1 do
      B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1])
    end
  end
end

-- LLVM is loaded on the first compile (or by kjit.load_llvm); a cache hit
-- needs none, so with CACHEDIR it is left to the compile
local llvm_ms = (not cachedir and kjit.load_llvm) and kjit.load_llvm() or 0
local t0, f
if which == "loop" then
  t0 = os.clock()
  f = kjit.jit(function(x, n) local s = 0.0 for i = 1, n do s = s + x * i end return s end, opts)
  f(1.5, 10)
elseif which == "small" then
  t0 = os.clock()
  f = kjit.jit(function(a, b) return a * b + 1 end, opts)
  f(3, 4)
elseif which == "mandelbrot" then
  local img = kjit.zeros({ 2, 2 }, "i32")
  t0 = os.clock()
  f = kjit.jit(K.mandelbrot, opts)
  f(2, 2, 1, img)
elseif which == "stencil" then
  local A, B = kjit.zeros({ 4, 4 }, "f64"), kjit.zeros({ 4, 4 }, "f64")
  t0 = os.clock()
  f = kjit.jit(stencil, opts)
  f(4, A, B)
else
  io.stderr:write("usage: compile_time.lua small|loop|mandelbrot|stencil [CACHEDIR]\n")
  os.exit(2)
end
print(string.format("compile_ms %.6g", (os.clock() - t0) * 1e3))
if not cachedir then print(string.format("llvm_load_ms %.6g", llvm_ms)) end
if cachedir then
  -- and another function in the same process: LLVM is started by now
  t0 = os.clock()
  kjit.jit(function(a, b) return a * b + 2 end, opts)(3, 4)
  print(string.format("next_ms %.6g", (os.clock() - t0) * 1e3))
  print(string.format("cache_hits %d", kjit.cache_stats().hits))
end
