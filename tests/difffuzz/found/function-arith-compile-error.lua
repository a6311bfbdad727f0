-- difffuzz found: function-arith-compile-error
-- program 583257 (all families; the dynamic family's arithmetic on values
-- of any type): math.abs + x on a path that does not run was a compile
-- error "attempt to perform arithmetic on a math.abs value (field 'abs')";
-- the same for an order comparison ("attempt to compare math.abs with string")
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(a, b, n)
  if n > 100 then return math.abs + a, "10" < math.abs end
  return a
end
]]
local ARGS = { n = 3, 1, 2, 3 }
os.exit(C.repro(kjit, SRC, "=function-arith-compile-error", ARGS, 3))
