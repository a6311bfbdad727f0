-- difffuzz found: too-few-arguments-compile-error
-- a library function given too few arguments on a path that does not run
-- (the tablib family): compile error "bad argument #2 to 'table.insert'
-- (number expected, got no value)"; the interpreter returns (where it runs
-- it says "wrong number of arguments to 'insert'")
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
  local t = { a }
  if n > 100 then table.insert(t) end
  return #t
end
]]
local ARGS = { n = 3, 1, 2, 3 }
os.exit(C.repro(kjit, SRC, "=too-few-arguments-compile-error", ARGS, 3))
