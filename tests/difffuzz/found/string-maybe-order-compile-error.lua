-- difffuzz found: string-maybe-order-compile-error
-- a constant string ordered with a number-or-nil on a path that does not
-- run (the dynamic family's string ordered with a value of any type, the
-- nilable family's z): compile error "attempt to compare string with
-- number"; the interpreter returns
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
  local z
  if a > 1 then z = a end
  if n > 100 then return "a" < z end
  return a
end
]]
local ARGS = { n = 3, 2, 2, 3 }
os.exit(C.repro(kjit, SRC, "=string-maybe-order-compile-error", ARGS, 3))
