-- difffuzz found: string-idiv-zero-position
-- an integer // or % by zero with a string operand ("7" % n, n = 0; the
-- dynamic and tabarg families' mixed values): the interpreter's message has
-- no position (the VM raises it inside the string library's C metamethod),
-- the compiled one had the line
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
  local s = "7"
  return s % n
end
]]
local ARGS = { n = 3, 1, 2, 0 }
os.exit(C.repro(kjit, SRC, "=string-idiv-zero-position", ARGS, 3))
