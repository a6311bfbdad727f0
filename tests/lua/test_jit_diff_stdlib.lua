-- Differential tests for the standard library called from compiled code
-- (print, io.write, os.*, math.random, type/tostring/tonumber, error and
-- assert with built messages) and issue 29's item 7 fixes. Output is
-- captured by swapping io.stdout's write through a temporary file (see
-- capture below) so interpreted and compiled runs are compared byte for byte.
local D = require "difftest"
local kjit = D.real_kjit

---------------------------------------------------------------------------
-- issue 29, item 7
---------------------------------------------------------------------------
local function pick(x, y) if x > 0 then return x end return y end
local function pick_plus_half(x, y) return pick(x, y) + 0.5 end
local function pick_in_loop(x, y)
  local s = 0.0
  for i = 1, 3 do s = s + pick(x, y) * 2.0 + i end
  return s, pick(y, x)
end

test("a loop-free callee returning an integer or a float, in float arithmetic", function()
  D.cases(pick_plus_half, {1.5, 0}, {0, 1.5}, {-1, 2}, {1, 2.5}, {2, 3})
  D.cases(pick_in_loop, {1.5, 0}, {0, 1.5}, {-1, 2}, {1, 2.5})
  for o = 0, 3 do D.check_opts({opt = o}, pick_plus_half, 1.5, 0) end
end)

local P = {151, 160, 137, 91, 90, 15, 131, 13}
local E = {}
local function len_upvalue() return #P end
local function len_in_loop(n)
  local s = 0
  for i = 1, n do s = s + i % #P + #E end
  return s
end
local LEN = setmetatable({}, {__len = function() return 42 end})
local function len_meta() return #LEN end

test("#t of a frozen (upvalue) table is its length", function()
  D.cases(len_upvalue, {})
  D.cases(len_in_loop, {0}, {10}, {100})
  local ok, err = pcall(kjit.jit(len_meta))
  truthy(not ok and err:find("__len metamethod", 1, true), "refused: " .. tostring(err))
end)

local T = {}
function T:m(x) return x + 1 end
function T.f(a, b) return b end
local function method_call(x) return T:m(x) end
local function method_str(x) return T.m(x, "s" .. x) end   -- (a constant string compiles)
local function plain_call(x) return T.f(T, x) end
local function method_table_arg(x) return T:m(x, T) end

test("method call refusals count the arguments as the source shows them", function()
  local ok, err = pcall(kjit.jit(method_call), 3)
  truthy(not ok, "refused")
  eq(err:match(":%d+: (.*)$"), "cannot pass a table to a compiled function (the object of " ..
     "method call 'T:m(...)', its self)")
  ok, err = pcall(kjit.jit(method_table_arg), 3)
  eq(err:match(":%d+: (.*)$"), "cannot pass a table to a compiled function (the object of " ..
     "method call 'T:m(...)', its self)")
  ok, err = pcall(kjit.jit(plain_call), 3)
  eq(err:match(":%d+: (.*)$"), "cannot pass a table to a compiled function (argument #1)")
  ok, err = pcall(kjit.jit(method_str), 3)
  eq(err:match(":%d+: (.*)$"), "cannot pass a string to a compiled function (argument #2)")
end)
