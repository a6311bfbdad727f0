-- bench/call_overhead.lua: the cost of calling a kjit function from Lua,
-- against an empty lua_CFunction (kjit._nop) called with the same
-- arguments, and the first-compile time of a small function.
--   LUA_CPATH="build/?.so;;" lua5.4 bench/call_overhead.lua [--raw]
-- --raw prints "name value" lines for bench/bench.lua instead of sentences.
local kjit = require "kjit"
local clock = os.clock

local function median(t) table.sort(t) return t[(#t + 1) // 2] end

-- first compile of a small function (fresh process: includes LLVM start-up)
local t0 = clock()
local small = kjit.jit(function(a, b) return a * b + 1 end)
small(3, 4)
local first_ms = (clock() - t0) * 1e3
t0 = clock()
local small2 = kjit.jit(function(n) local s = 0 for i = 1, n do s = s + i end return s end)
small2(10)
local second_ms = (clock() - t0) * 1e3

local N = 2000000
local x = kjit.zeros(16)
local nop = kjit._nop
local f0 = kjit.jit(function() end)
local f4 = kjit.jit(function(a, b, c, d) end)
f0(); f4(1, 2.5, x, 4)

local function time(fn)
  local runs = {}
  for r = 1, 7 do
    local t = clock()
    fn()
    runs[r] = (clock() - t) / N * 1e9
  end
  return median(runs)
end

local loop = time(function() for _ = 1, N do end end)
local nop0 = time(function() for _ = 1, N do nop() end end) - loop
local jit0 = time(function() for _ = 1, N do f0() end end) - loop
local nop4 = time(function() for _ = 1, N do nop(1, 2.5, x, 4) end end) - loop
local jit4 = time(function() for _ = 1, N do f4(1, 2.5, x, 4) end end) - loop

if arg[1] == "--raw" then
  for _, kv in ipairs({ { "first_compile_ms", first_ms }, { "next_compile_ms", second_ms },
                        { "call0_jit_ns", jit0 }, { "call0_c_ns", nop0 },
                        { "call4_jit_ns", jit4 }, { "call4_c_ns", nop4 } }) do
    print(string.format("%s %.6g", kv[1], kv[2]))
  end
  return
end
print(string.format("first compile of a small function:  %6.2f ms", first_ms))
print(string.format("next compile of a small function:   %6.2f ms", second_ms))
print(string.format("call, 0 arguments: kjit %5.1f ns, empty C function %5.1f ns: %.2fx", jit0, nop0, jit0 / nop0))
print(string.format("call, 4 arguments: kjit %5.1f ns, empty C function %5.1f ns: %.2fx", jit4, nop4, jit4 / nop4))
