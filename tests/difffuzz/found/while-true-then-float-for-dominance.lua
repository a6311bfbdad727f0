-- difffuzz found: while-true-then-float-for-dominance
-- invalid LLVM module (Instruction does not dominate all uses: the counter's add) at every opt level: a while-true loop and a float for loop sharing a counter in a branch, a local and a parameter changing type there, then a loop that returns or breaks on them; no goto (item 7b's message, another shape)
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
return function(a, b, n, B)
  local cnt = 0
  local x1 = 0
  if n ~= n then
    while true do
      cnt = cnt + 1; if cnt > 60 then break end
      a = -1.0
    end
    for i2 = 0.1, 4, 0.5 do
      cnt = cnt + 1; if cnt > 60 then break end
      x1 = i2
    end
  end
  for i4 = 1, 5, 7 do
    if B[3] <= a then return b end
    if x1 == 2 then break end
  end
  return b
end
]]
local ARGS = { n = 4, -653, 0x1p-1, -1, { array = true, dtype = "i32", shape = { 6 }, vals = { -128, -1, 255, 65535, 7, -128 } } }
os.exit(C.repro(kjit, SRC, "=while-true-then-float-for-dominance", ARGS, 2))
