-- difffuzz found: bool-alloc-sigfpe
-- kjit.zeros(n, "bool") in compiled code: SIGFPE in kjit_rt_alloc (dt_sizes had no bool entry: a division by a zero size); fixed on branch fuzzext
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
  local T = kjit.zeros(n, "bool")
  T[n] = n > 1
  return T
end
]]
local ARGS = { n = 1, 1 }
os.exit(C.repro(kjit, SRC, "=bool-alloc-sigfpe", ARGS, 3))
