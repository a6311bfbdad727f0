-- difffuzz found: cfunction-method-argument-number
-- (left by fuzzD, session 20: found/string-method-argument-number.lua's
-- case with a table as the object) a C function called as a method of a
-- table (`t:rep(x)`, t's __index the string library): the interpreter
-- counts arguments from the one after the object ("calling 'rep' on bad
-- self"); compiled code counted from the object ("bad argument #1 to 'rep'")
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local S = setmetatable({}, { __index = string })
return function(a, b, n, T)
  local o = n > 2 and S or T
  return o:rep(a)
end
]]
local ARGS = { n = 4, 2, 2, 3, { luatable = { x = 1 } } }
os.exit(C.repro(kjit, SRC, "=cfunction-method-argument-number", ARGS, 2))
