-- difffuzz found: class-write-frozen-callee (program 584026 of fuzzC's run)
-- the main function writes a class table (Pt.scale = ...) that a compiled
-- callee reads frozen (Sub:len2's Pt.len2): the documented refusal "pass the
-- table as an argument" (docs/guide/table-speed.md; branch classwrite works on
-- it). Deterministic: refused in every order of compiles and opt levels; what
-- looked like order dependence was the minimizer, which dropped no line of a
-- program calling setmetatable (run.lua's known globals: fixed, branch fuzzD).
-- Exits 0 while refused (unsupported), 0 once compiled and the same
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local Pt = {}
local function scale1(self, k) return self.x * k end
local Sub = setmetatable({}, { __index = function(_, k) return Pt[k] end })
function Sub:len2() return Pt.len2(self) + 1 end
return function(a, b, n)
  Pt.scale = scale1
  if n > 100 then
    local m = Sub.len2
    return m({ x = a, y = b }, 1)
  end
  return a
end
]]
local ARGS = { n = 3, 2, 2, 3 }
os.exit(C.repro(kjit, SRC, "=class-write-frozen-callee", ARGS, 3))
