-- difffuzz found: nil-index-metamethod
-- (debt20's hand probe, session 20, of type metatables) indexing or calling
-- nil or a boolean while debug.setmetatable gave its type __index or
-- __call: the interpreter calls the metamethod; compiled code raised Lua's
-- "attempt to index a nil value". Now refused (a documented compile error,
-- class unsupported) where the type has the metamethod
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
-- check.lua (tests/difffuzz/, beside found/) compares and classifies; run.lua's
-- reproducers carry a copy of it, these load the one in the repository
local here = (arg and arg[0] or ""):match("^(.*[/\\])") or "./"
local C = dofile(here .. "../check.lua")
debug.setmetatable(nil, { __index = function(t, k) return 42 end })
local SRC = [[
return function(a, b, n)
  local u
  if n > 2 then return u.f + a end
  return a
end
]]
local ARGS = { n = 3, 2, 2, 3 }
local status = C.repro(kjit, SRC, "=nil-index-metamethod", ARGS, 2)
debug.setmetatable(nil, nil)
os.exit(status)
