-- difffuzz found: format-array-refused
-- (fuzzD's hand probe of the strkeys family, session 20) string.format with
-- a kjit array as its format or as an argument: the interpreter formats it
-- (%s: its __tostring) or raises "bad argument #1 to 'format' (string
-- expected, got kjit.array)"; compiled code refused it when compiling
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(a, b, n, A)
  if n > 2 then return string.format(A, n) end
  return string.format("%s|%d", A, n)
end
]]
local status = 0
for _, n in ipairs({ 1, 3 }) do
  local ARGS = { n = 4, 2, 2, n, { array = true, dtype = "f64", shape = { 2 }, vals = { 1.5, 2 } } }
  status = math.max(status, C.repro(kjit, SRC, "=format-array-refused", ARGS, 2))
end
os.exit(status)
