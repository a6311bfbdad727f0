-- difffuzz found: select-constant-string-refused
-- select(i, ...) over constant strings (the dynamic family's select with
-- values of any type): the selected string was no constant, refused
-- ("cannot return a string from compiled code")
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
  local s = select(2, "a", "bb")
  return s, #s
end
]]
local ARGS = { n = 3, 1, 2, 0 }
os.exit(C.repro(kjit, SRC, "=select-constant-string-refused", ARGS, 3))
