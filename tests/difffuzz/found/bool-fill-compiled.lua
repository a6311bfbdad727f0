-- difffuzz found: bool-fill-compiled
-- a:fill(true) on a bool array in compiled code is a compile error (bad argument #1 to 'fill' (a number expected in compiled code, got boolean)); interpreted it fills
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(Q, n)
  Q:fill(n > 0)
  return Q[2]
end
]]
local ARGS = { n = 2, { array = true, dtype = "bool", shape = { 2 }, vals = { false, false } }, 1 }
os.exit(C.repro(kjit, SRC, "=bool-fill-compiled", ARGS, 3))
