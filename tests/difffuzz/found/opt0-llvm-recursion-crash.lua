-- difffuzz reproducer: program 2000763, case 1, opt 0
-- class: crash (worker exit status 139)
-- families: - without -
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local c1 = 3.0
local c2 = math.mininteger
local function h1(p1, P)
  local cnt = 0
  return p1, (c2), (p1)
end
return function(a, b, n, A)
  local cnt = 0
  if (A[2] < math.asin(A.size)) then
    repeat
      for i17 = math.maxinteger - 2, 3 do
        local x20 = (h1(9007199254740993, A) + i17)
        b = x20
      end
      if ((n & A[2]) <= ((a < A[6]) and b or 9007199254740993)) then
      elseif ((A[5] + math.maxinteger) < math.asin(a)) then
        local x21 = h1((0x7fffffffffffffff ^ math.min(a, h1(b, A))), A)
        b = x21
        if ((c1 > x21) and (not (0 < A[1]))) then break end
      elseif (math.floor(A[7]) > (a - b)) then
      end
    until (math.floor(A[4]) > (-(-9223372036854775808.0)))
  end
end
]]
local ARGS = { n = 4, -0x1.a7173d61fd7e4p+9, math.huge, 2, { array = true, dtype = "u64", shape = { 6 }, vals = { 100, 65535, 3, 100, 1, 5 } } }
os.exit(C.repro(kjit, SRC, "=fz2000763", ARGS, 0))
