-- bench/compile_time.lua: the first compile in a fresh process (LLVM's
-- start-up included), of a small function or of the mandelbrot kernel.
--   LUA_CPATH="build/?.so;;" lua5.4 bench/compile_time.lua small|mandelbrot
-- Prints "compile_ms <ms>". The call runs on a 2 x 2 image with 1
-- iteration, so the time is the compile's. CPU time (os.clock).
local which = arg[1]
local here = arg[0]:match("^(.*[/\\])") or ""
local K = dofile(here .. "kernels.lua")
local kjit = require "kjit"
local t0, f
if which == "small" then
  t0 = os.clock()
  f = kjit.jit(function(a, b) return a * b + 1 end)
  f(3, 4)
elseif which == "mandelbrot" then
  local img = kjit.zeros({ 2, 2 }, "i32")
  t0 = os.clock()
  f = kjit.jit(K.mandelbrot)
  f(2, 2, 1, img)
else
  io.stderr:write("usage: compile_time.lua small|mandelbrot\n")
  os.exit(2)
end
print(string.format("compile_ms %.6g", (os.clock() - t0) * 1e3))
