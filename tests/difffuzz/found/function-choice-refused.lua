-- difffuzz found: function-choice-refused
-- a local that is one of two known functions (the class family's method
-- chosen by a branch: `Pt.scale = (n % 2 == 0) and scale1 or scale2`) was
-- refused at compile time: "local 'f' holds both function and function
-- values" (a constant table or math.abs on the other path the same)
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local function scale1(self, k) return self.x * k end
local function scale2(self, k) return self.y * k + 1 end
return function(a, b, n)
  local f = (n % 2 == 0) and scale1 or scale2
  return f({ x = a, y = b }, 2)
end
]]
local ARGS = { n = 3, 1.5, 2, 3 }
os.exit(C.repro(kjit, SRC, "=function-choice-refused", ARGS, 3))
