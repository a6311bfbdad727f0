-- difffuzz found: ipairs-nil-refused
-- ipairs of nil (or of no value) on a path that does not run (fuzzC's
-- hand probe of the tabarg family's ipairs): refused ("ipairs in compiled
-- code iterates over a kjit array or a Lua value, not a nil"), and ipairs()
-- said "bad argument #0" when compiling; the interpreter returns
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
  local s = 0
  if n > 100 then for i in ipairs(nil) do s = s + i end end
  if n > 200 then for i in ipairs() do s = s + i end end
  return s + a
end
]]
local ARGS = { n = 3, 2, 2, 3 }
os.exit(C.repro(kjit, SRC, "=ipairs-nil-refused", ARGS, 3))
