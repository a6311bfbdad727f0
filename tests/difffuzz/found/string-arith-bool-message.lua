-- difffuzz found: string-arith-bool-message
-- program 583137 (all families; the dynamic family): a boolean // a
-- constant string: Lua runs the string library's __idiv, which says
-- "attempt to idiv a 'boolean' with a 'string'"; compiled code said
-- "attempt to perform arithmetic on a boolean value"
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
  local m = n > 1
  return m // "2"
end
]]
local ARGS = { n = 3, 1, 2, 3 }
os.exit(C.repro(kjit, SRC, "=string-arith-bool-message", ARGS, 3))
