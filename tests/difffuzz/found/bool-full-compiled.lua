-- difffuzz found: bool-full-compiled
-- kjit.full(n, true [, "bool"]) in compiled code is a compile error (bad argument #2 to 'full' (number expected, got boolean)); interpreted it makes a bool array
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local kjit = require "kjit"
return function(n)
  local T = kjit.full(2, n > 0, "bool")
  return T
end
]]
local ARGS = { n = 1, 1 }
os.exit(C.repro(kjit, SRC, "=bool-full-compiled", ARGS, 3))
