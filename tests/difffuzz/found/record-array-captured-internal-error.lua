-- difffuzz found: record-array-captured-internal-error
-- program 583340 (all families; the dynamic family's pcall of a literal
-- with the records family's record array p): a function literal that
-- captures a record array argument and escapes (given to pcall) raised
-- "kjit: internal error: a captured array argument not found" when made
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local kjit = require "kjit"
return function(a, b, n, p)
  local ok, e = pcall(function() return p[1].k end)
  return ok, e
end
]]
local ARGS = { n = 4, 1, 2, 3, { record = { { "x", "f64" }, { "k", "i32" } }, shape = { 2 }, vals = { { x = 1.5, k = 5 }, { x = 2, k = 7 } } } }
os.exit(C.repro(kjit, SRC, "=record-array-captured-internal-error", ARGS, 3))
