-- difffuzz found: string-arith-array-position (program 660170, seeds of
-- branch debt20)
-- arithmetic with a string operand whose first metamethod is not the
-- string library's own (a kjit array's __add, which calls the string's:
-- lstrlib.c trymt raises inside it, no position; or a Lua __add, whose
-- error has its own position): the compiled message had the user's line
-- put in front (kjit_ls_arith), so "t.lua:5: attempt to add a 'userdata'
-- with a 'string'" where Lua says "attempt to add a 'userdata' with a
-- 'string'", and "t.lua:5: t.lua:2: boom" for a Lua metamethod's error
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(a, b, n, A, B, C, T)
  local x = T.A + "0"
  return x
end
]]
local ARGS = { n = 7, 1, 2, 3,
  { array = true, dtype = "i32", shape = { 0 }, vals = {} },
  { array = true, dtype = "f32", shape = { 1 }, vals = { 1 } },
  { array = true, dtype = "u32", shape = { 1 }, vals = { 1 } },
  { luatable = { ["A"] = { array = true, dtype = "f64", shape = { 1 }, vals = { -1 } } }, alias = {} } }
os.exit(C.repro(kjit, SRC, "=string-arith-array-position", ARGS, 2))
