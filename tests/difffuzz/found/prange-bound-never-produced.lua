-- difffuzz found: prange-bound-never-produced
-- (session 22, branch fuzzF, the raiseop family; program 790365 of seeds
-- 790001.., minimized by hand) a kjit.prange loop inside a for loop, its
-- limit an array read keyed by an operation that always raises (`A[#NG]`,
-- NG a nil global): the typer typed the read as the element (the limit
-- then a float: "kjit.prange: the limit value must be an integer" when
-- compiling, for code the interpreter reaches only to raise "attempt to
-- get length of a nil value"); with an integer limit the nest test read
-- the bound the code generator never made (a crash in LLVM, every tier:
-- tests/lua/test_jit_regress_loops.lua)
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
local SRC = [[
local kjit = require "kjit"
return function(a, b, n, A)
  local cnt = 0
  local T1 = A:copy()
  for i9 = 1, 2 do
    cnt = cnt + 1; if cnt > 60 then break end
    if b ~= 7 then
      for i10 in kjit.prange(1, (A[#NG] + 0.5)) do
        T1[i10 % #T1 + 1] = i9
      end
    end
  end
  return cnt
end
]]
local ARGS = { n = 4, 2.5, 533, 7, { array = true, dtype = "u8", shape = { 4 }, vals = { 7, 127, 7, 128 } } }
os.exit(C.repro(kjit, SRC, "=prange-bound-never-produced", ARGS, 1))
