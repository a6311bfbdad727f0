-- difffuzz found: tail-call-error-level
-- (a hand probe of the pcallerr family's error levels) error(msg, 2) in a
-- function reached by a tail call (`return h(x)`): the interpreter's h
-- replaces the caller's frame, so level 2 names the caller's caller (here
-- check.lua's pcall: no position); compiled code named the tail call's line
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local function h(y)
  if y > 0 then error("deep", 2) end
  return y
end
return function(a, b, n)
  return h(n)
end
]]
local ARGS = { n = 3, 2, 2, 3 }
os.exit(C.repro(kjit, SRC, "=tail-call-error-level", ARGS, 3))
