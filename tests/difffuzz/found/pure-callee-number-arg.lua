-- difffuzz found: pure-callee-number-arg
-- a pure callee called with an integer and with an integer-or-float (math.max(a, 0.5)), the second result unused: invalid LLVM module (ret i32 in a function returning i64); probably item 7a's non-recursive variant
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local function h1(p1) return p1 end
return function(a, b)
  local u = h1(b)
  local x = h1(math.max(a, 0.5))
  return 1
end
]]
local ARGS = { n = 2, 1, 2 }
os.exit(C.repro(kjit, SRC, "=pure-callee-number-arg", ARGS, 0))
