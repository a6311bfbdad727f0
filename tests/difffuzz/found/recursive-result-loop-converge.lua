-- difffuzz reproducer: program 410054 (all families), its six argument tuples,
-- at opt 2 and opt 3 (the two levels the fuzzer tried with --levels 2)
-- class: compile ("type inference did not converge"), on main at 125889f and
-- two sessions before it; the interpreter runs it.
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- an interpreted and a compiled run differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local kjit = require "kjit"
local RS = kjit.struct{ {"x", "f64"}, {"k", "i32"} }
local function dz(d, m) local z = kjit.zeros(m + 1, d) z[1] = 1 return #z + #tostring(d) + z[1] end
local K = { math.maxinteger, (-0.0), big = 100 }
local s1 = 906
local function g1(x) s1 = (s1 * 75 + 74 + x // 1) % 65537; return s1 end
local FV = { function(x, y) return x + y end, function(x, y) return x * y end, math.max, function(x, y) return y - x end, function(x, y) local s = 0 for i = 1, 3 do s = s + x * i - y end return s end, function(x, y) local s = y while s < x + 3 do s = s + 1.5 end if s > 1e15 then error('big ' .. s) end return s // 1 end }
local function r1(d, x)
  if d <= 0 then return d end
  local y = r1(d - 1, FV[1](K[2], x))
  return (y - (9223372036854775808.0 - (-math.huge)))
end
local function v1(...)
  local cnt = 0
  local q1, q2 = ...
  local s = select('#', ...)
  for i = 1, select('#', ...) do
    cnt = cnt + 1; if cnt > 60 then break end
    local x = select(i, ...)
    s = s + (x or 0) * 2147483648
  end
  if (q1 or 0) > (-math.huge) then return s, ... end
  if (q2 or 0) < 1.0 then return end
  return select(2, ...)
end
local function w1(...)
  return v1((-math.huge), ...)
end
return function(a, b, n, A, B, C, M)
  local cnt = 0
  s1 = 906
  local T1 = C:copy():reshape({ 0 })
  local T2 = A:copy():reshape({ 3 })
  local T3 = kjit.arange(0.5, 1.5)
  local T0 = kjit.zeros(3, "u32")
  T0:fill(r1(0, 256))
  local f1 = (b ~= b)
  repeat
    cnt = cnt + 1; if cnt > 60 then break end
    local z2 = math.tointeger((M[2][1] * 2))
    if (r1(0, r1(3, n)) == (math.acos((-0.5)) ^ (((-9223372036854775808.0) >= K[1]) and n or b))) then break end
    local x3 = r1(0, b)
    b = x3
    repeat
      cnt = cnt + 1; if cnt > 60 then break end
      while true do
        cnt = cnt + 1; if cnt > 60 then break end
        local s4 = (string.format("%.3f", b)):upper()
        local x5 = math.floor(#s4 + (s4 < "" and 1 or 0) + (string.byte(s4, 1) or 0))
        a = (a - x5)
        local c6 = 0.25
        local o7 = { f = function(a) return a + c6 end }
        local x8 = o7.f(x5)
        if (z2 and true or false) then break end
        if ((#T1) >= a) then error("boom") end
      end
      local x9 = 1e15
      local x10 = B[((math.min((-2147483649), a, 9007199254740992.0) % (x3 % a)) % #B + 1)]
      x10 = (((K[1] >= T3[1]) and (x3 and x3) or x9) * ((x10 ~ x3) + 3))
    until (r1((n % 4), r1(4, 100)) > (g1(x3) or b))
  until (not (T3[1] == ((-9223372036854775807) ^ M[2][3])))
  local c11 = (-128)
  local function g12(a) c11 = c11 + a; return c11 end
  local x13 = g12(a)
  c11 = b
  x13 = x13 + g12(1)
  b = x13
  if (not (a < T3[1])) then
    M[4] = T0
    local z14
    if (((c11 + x13) - (x13 + c11)) ~= ((K[1] / A[2]) * x13)) then z14 = (c11 % 1) end
    local x15 = n
  end
  return T1
end

]]
local CASES = {
  { n = 7, 0x1p+0, 12, 3, { array = true, dtype = "u32", shape = { 3 }, vals = { 3, 7, 1 } }, { array = true, dtype = "u8", shape = { 2 }, vals = { 100, 100 } }, { array = true, dtype = "f64", shape = { 0 }, vals = {  } }, { array = true, dtype = "u32", shape = { 3, 3 }, vals = { 127, 255, 2147483647, 1, 2147483647, 5, 65535, 5, 1 } } },
  { n = 7, 0x1p-1, -7, -1, { array = true, dtype = "u32", shape = { 3 }, vals = { 3, 7, 1 } }, { array = true, dtype = "u8", shape = { 2 }, vals = { 100, 100 } }, { array = true, dtype = "f64", shape = { 0 }, vals = {  } }, { array = true, dtype = "u32", shape = { 3, 3 }, vals = { 127, 255, 2147483647, 1, 2147483647, 5, 65535, 5, 1 } } },
  { n = 7, -0x1.8p+1, -970, 0, { array = true, dtype = "u32", shape = { 3 }, vals = { 3, 7, 1 } }, { array = true, dtype = "u8", shape = { 2 }, vals = { 100, 100 } }, { array = true, dtype = "f64", shape = { 0 }, vals = {  } }, { array = true, dtype = "u32", shape = { 3, 3 }, vals = { 127, 255, 2147483647, 1, 2147483647, 5, 65535, 5, 1 } } },
  { n = 7, -0x1.521bdba6b87ccp+0, 2147483648, 2, { array = true, dtype = "u32", shape = { 3 }, vals = { 3, 7, 1 } }, { array = true, dtype = "u8", shape = { 2 }, vals = { 100, 100 } }, { array = true, dtype = "f64", shape = { 0 }, vals = {  } }, { array = true, dtype = "u32", shape = { 3, 3 }, vals = { 127, 255, 2147483647, 1, 2147483647, 5, 65535, 5, 1 } } },
  { n = 7, 0x0.012688b70e62bp-1022, -965, 3, { array = true, dtype = "u32", shape = { 3 }, vals = { 3, 7, 1 } }, { array = true, dtype = "u8", shape = { 2 }, vals = { 100, 100 } }, { array = true, dtype = "f64", shape = { 0 }, vals = {  } }, { array = true, dtype = "u32", shape = { 3, 3 }, vals = { 127, 255, 2147483647, 1, 2147483647, 5, 65535, 5, 1 } } },
  { n = 7, 0x1p+0, -0x1.ccccb31306dacp+7, 0x1p+2, { array = true, dtype = "u32", shape = { 3 }, vals = { 3, 7, 1 } }, { array = true, dtype = "u8", shape = { 2 }, vals = { 100, 100 } }, { array = true, dtype = "f64", shape = { 0 }, vals = {  } }, { array = true, dtype = "u32", shape = { 3, 3 }, vals = { 127, 255, 2147483647, 1, 2147483647, 5, 65535, 5, 1 } } },
}
local status = 0
for _, opt in ipairs({ 2, 3 }) do
  for c, spec in ipairs(CASES) do
    print(("case %d, opt %d"):format(c, opt))
    if C.repro(kjit, SRC, "=fz410054", spec, opt) ~= 0 then status = 1 end
  end
end
os.exit(status)
