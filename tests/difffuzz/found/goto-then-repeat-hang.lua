-- difffuzz found: goto-then-repeat-hang
-- a repeat loop's guard (if cnt > 60 then break end) after a backward-goto loop that left cnt past 60: compiled code never leaves the repeat loop (opt >= 1)
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(b, n)
  local cnt = 0
  ::top::
  cnt = cnt + 1
  if cnt <= 60 and b > 0 then goto top end
  repeat
    cnt = cnt + 1; if cnt > 60 then break end
  until n == 0.5
  return cnt
end
]]
local ARGS = { n = 2, 1, 0 }
os.exit(C.repro(kjit, SRC, "=goto-then-repeat-hang", ARGS, 2))
