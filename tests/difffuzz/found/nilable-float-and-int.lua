-- difffuzz found: nilable-float-and-int
-- (z and 5) with z a float or nil: invalid LLVM module (trunc double to i32; PHI of i64 and a truncated float)
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(a)
  local z
  if a > 0 then z = -a end
  local y = z and 5
  return y == nil
end
]]
local ARGS = { n = 1, 0x1.4p+1 }
os.exit(C.repro(kjit, SRC, "=nilable-float-and-int", ARGS, 0))
