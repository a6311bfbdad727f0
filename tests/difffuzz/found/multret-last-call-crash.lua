-- difffuzz found: multret-last-call-crash
-- segfault compiling (LLVMBuildCall2 from emit_lua_call, cg_func.c:946): a callee's second result is 0.25 or the result of a call, then passed to that callee; item 6's crash without a call in the middle of a result list
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local function h1(p1, p2) return 0 end
local function h2(p3)
  if p3 > 0 then return p3, 0.25 end
  return p3, h1(1, 2)
end
return function(a, b)
  local u4, u5 = h2(a)
  return h1(b, u5)
end
]]
local ARGS = { n = 2, 1, 2 }
os.exit(C.repro(kjit, SRC, "=multret-last-call-crash", ARGS, 0))
