-- difffuzz found: tointeger-nil
-- math.tointeger of a nil value raises in compiled code (the interpreter returns fail)
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
  if a > 0 then z = 1 end
  local y = math.tointeger(z)
  return y == nil
end
]]
local ARGS = { n = 1, -1 }
os.exit(C.repro(kjit, SRC, "=tointeger-nil", ARGS, 3))
