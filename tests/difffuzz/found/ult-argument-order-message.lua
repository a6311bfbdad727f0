-- difffuzz reproducer: program 4002334, case 1, opt 2
-- class: message (bad argument #N to '?' (number expected, got nil))
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
local c1 = 100
local c2 = 3
local function h1(p1, P)
  local cnt = 0
  local z1 = math.tointeger(math.floor((p1 * 2.0)))
  return p1, (((p1 ^ P[0]) << P[5])), p1
end
local function h2(p1)
  local cnt = 0
  local x2 = p1
  p1 = x2
  return (p1), (((p1 + 1) * p1)), p1
end
return function(a, b, n, A, B, C)
  local cnt = 0
  local z3
  if (not (not (b == A[5]))) then z3 = (n and ((A[4] - (-9223372036854775808.0)) // (1e308 / B[1]))) end
  for i4 = -2.5, 1e308, -0.5 do
    cnt = cnt + 1; if cnt > 60 then break end
    repeat
      cnt = cnt + 1; if cnt > 60 then break end
      C[2] = B[1]
      if (not ((b > 256) and (9007199254740993 == 2))) then
        if (z3 and true or false) then break end
        local x5 = 5
        x5 = ((h1(0.75, A) // n) & h1((x5 + (#B)), A))
      end
      if ((b + math.ceil(C[2])) > (math.min(c2, a, (-0.0)) // 0.0)) then
        local f6 = ((math.pi + C[1]) ~= (c2 - b))
        local x7 = (a // math.floor((n | i4)))
        if (a < z3) then break end
      else
        local u8, u9 = h1((-2), A)
        local u10, u11, u12 = h1(b, A)
      end
      A[4] = math.abs((B[1] // B[1]))
    until (0.25 <= (-1.0))
  end
  if (9007199254740992 <= (C[2] / C[1])) then error("bad value") end
  if math.ult(a, z3) then return b, (c2), (h2((C[1] + (-0.0)))) end
  local z13
  if ((-0.5) ~= C[2]) then a = z13 + c1 end
  return b, b, b
end
]]
local ARGS = { n = 6, (-math.huge), 484, 7, { array = true, dtype = "i16", shape = { 6 }, vals = { 127, 255, -5, 3, 100, 0 } }, { array = true, dtype = "u32", shape = { 1 }, vals = { 0 } }, { array = true, dtype = "i64", shape = { 2 }, vals = { 1, 0 } } }
os.exit(C.repro(kjit, SRC, "=fz4002334", ARGS, 2))
