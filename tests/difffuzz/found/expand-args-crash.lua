-- difffuzz found: expand-args-crash
-- segfault compiling, in LLVMBuildCall2 from emit_lua_call (cg_func.c:946), as item 6 and multret-last-call-crash.lua: h2(math.max(10, a), h2(a, #A)) in a goto loop, h2 returning p1 (a float or the result of h1) and -2.5; no call in the middle of a result list (minimized by the fuzzer, not by hand)
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local c2 = 0x1p-1074
local K = { 1, 65535, neg = 9007199254740993, z = 4.0 }
local function h1(p1, p2, p3)
  local cnt = 0
  return p3, p1
end
local function h2(p1, p2)
  local cnt = 0
  if ((-7) ~= h1(10, (-0.0), math.mininteger)) then
  elseif (math.max(p2, h1(0x1p-1074, p2, 0.75)) ~= math.min(c2, h1(p1, K.z, 0.75))) then
    local x8 = (0.25 % (256 << 0x1p-1074))
    local x9 = math.sqrt(h1(2, x8, 9007199254740993))
    p1 = x9
  elseif ((0.75 + p1) >= p1) then
  end
  return p1, ((-2.5))
end
return function(a, b, n, A, B)
  local cnt = 0
  ::top32::
  cnt = cnt + 1
  local x33 = h2(math.max(10, a), h2(a, (#A)))
  a = (a * x33)
  if cnt <= 60 and (math.pi ~= b) then goto top32 end
end
]]
local ARGS = { n = 5, 3, 0x1.36619be5e79e8p+0, -1, { array = true, dtype = "u64", shape = { 6 }, vals = { 3, 7, 7, 1, 0, 65535 } }, { array = true, dtype = "i8", shape = { 5 }, vals = { 127, 127, 100, 0, -1 } } }
os.exit(C.repro(kjit, SRC, "=expand-args-crash", ARGS, 2))
