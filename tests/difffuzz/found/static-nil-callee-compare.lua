-- difffuzz found: static-nil-callee-compare
-- a callee compares its argument, statically nil at the call (math.tointeger of a non-integral constant), after an early return that the run takes: compile-time "attempt to compare number with nil" for code that does not run (issue 22 item 8 kind)
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local function h1(p1, p2)
  local cnt = 0
  repeat
    cnt = cnt + 1; if cnt > 60 then break end
    local z1 = math.tointeger(p1)
    if ((p2 > 9007199254740993) and (z1 <= p2)) then local z2 = math.fmod(z1, p1) end
  until (p2 > (-2.5))
  return p1
end
return function(n)
  local z8 = math.tointeger(math.cos(128))
  if z8 == nil then
    if -3.0 < n then return 3.0 end
  end
  local u12 = h1(n, z8)
  return n
end
]]
local ARGS = { n = 1, 0.0 }
os.exit(C.repro(kjit, SRC, "=static-nil-callee-compare", ARGS, 3))
