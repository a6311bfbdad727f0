-- difffuzz found: arith-metamethod-error-level
-- (debt20's hand probe of the metaops family, session 20) a table's Lua
-- arithmetic (or comparison) metamethod raising error(msg, 2): the VM calls
-- it on behalf of the function doing the arithmetic, so level 2 names the
-- operator's line; compiled code called it from C (lua_arith), and the
-- message had no position
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local M = {}
M.__add = function(a, b) error("add refused", 2) end
return function(a, b, n)
  local t = setmetatable({}, M)
  return t + n
end
]]
local ARGS = { n = 3, 2, 2, 3 }
os.exit(C.repro(kjit, SRC, "=arith-metamethod-error-level", ARGS, 2))
