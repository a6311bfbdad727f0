-- difffuzz found: string-method-argument-number
-- (a hand probe of the strkeys family's string methods) a method call on a
-- string read from a table (`T.s:sub(x)`), or one taking all its values
-- (`return s:byte(x)`), with a bad argument: "bad argument #2 to 'sub'" where
-- the interpreter, counting as the method call shows them, says #1
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(a, b, n, T)
  if n > 2 then return ("abc"):byte(n + 0.5) end
  return T.s:sub(a + 0.5)
end
]]
local ARGS = { n = 4, 2, 2, 1, { luatable = { s = "abc" } } }
os.exit(C.repro(kjit, SRC, "=string-method-argument-number", ARGS, 3))
