-- difffuzz found: select-vararg-helper-string
-- select(2, ...) in a vararg helper given constant strings (fuzzC's
-- list; the varargs family's v1 with the dynamic family's strings): refused
-- ("cannot return a string from compiled code"); `return ...` of them was
-- an internal error, and `select(2, ...) == "bb"` false; the interpreter returns
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local function g(...) local x = select(2, ...) return x == "bb" end
return function(a, b, n)
  return g("a", "bb"), g("a", "a")
end
]]
local ARGS = { n = 3, 2, 2, 3 }
os.exit(C.repro(kjit, SRC, "=select-vararg-helper-string", ARGS, 3))
