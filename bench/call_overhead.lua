-- bench/call_overhead.lua: the cost of calling a kjit function from Lua,
-- against an empty lua_CFunction (require "kjit.testing".nop) called with the same
-- arguments, and the first-compile time of a small function.
--   LUA_CPATH="build/?.so;;" lua5.4 bench/call_overhead.lua [--raw]
-- --raw prints "name value" lines for bench/bench.lua instead of sentences.
-- KJIT_NO_STACK_READS=1 measures the calls with their arguments read
-- through the Lua API instead of from the stack (host/lua_stack.h); the
-- output names the mode (kjit.stack_reads).
--
-- Three argument lists: none; four numbers (1, 2.5, 3, 4.5: two integers,
-- two floats); four f64 arrays. Each is called four ways: the empty C
-- function (the targets' peer), a C function that reads its arguments as
-- a hand-written binding does (require "kjit.testing".reads: luaL_checknumber,
-- luaL_checkudata; what any C code taking arguments pays), the jit object
-- f(...) (its __call), and f:native(sig), the plain C function bound to
-- one specialization. Every time is a median of
-- ROUNDS rounds, the variants interleaved within each round (a machine
-- shared with other work slows them alike), less the empty loop's time.
-- The ratios (f/C, native/C) are the medians of each round's own ratio,
-- both times from the same round: the empty C function's time moved by
-- 7-10 ns between runs on a loaded machine, a ratio of medians with it.
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
local ROUNDS = 15
local x, y, z, w = kjit.zeros(16), kjit.zeros(16), kjit.zeros(16), kjit.zeros(16)
local testing = require "kjit.testing"   -- kjit's own benchmark helpers
local nop, reads = testing.nop, testing.reads
local f0 = kjit.jit(function() end)
local f4 = kjit.jit(function(a, b, c, d) end)
local fa = kjit.jit(function(a, b, c, d) end)
f0(); f4(1, 2.5, 3, 4.5); fa(x, y, z, w)
local n0 = f0:native("()")
local n4 = f4:native("(i64, f64, i64, f64)")
local na = fa:native("(f64[:], f64[:], f64[:], f64[:])")
-- f4 and fa keep their own last specialization: f4 is called only with these

local variants = {
  { "loop",  function() for _ = 1, N do end end },
  { "c0",    function() for _ = 1, N do nop() end end },
  { "r0",    function() for _ = 1, N do reads() end end },
  { "jit0",  function() for _ = 1, N do f0() end end },
  { "nat0",  function() for _ = 1, N do n0() end end },
  { "c4",    function() for _ = 1, N do nop(1, 2.5, 3, 4.5) end end },
  { "r4",    function() for _ = 1, N do reads(1, 2.5, 3, 4.5) end end },
  { "jit4",  function() for _ = 1, N do f4(1, 2.5, 3, 4.5) end end },
  { "nat4",  function() for _ = 1, N do n4(1, 2.5, 3, 4.5) end end },
  { "ca",    function() for _ = 1, N do nop(x, y, z, w) end end },
  { "ra",    function() for _ = 1, N do reads(x, y, z, w) end end },
  { "jita",  function() for _ = 1, N do fa(x, y, z, w) end end },
  { "nata",  function() for _ = 1, N do na(x, y, z, w) end end },
}
local runs = {}
for _, v in ipairs(variants) do runs[v[1]] = {} end
for r = 1, ROUNDS do
  for _, v in ipairs(variants) do
    local t = clock()
    v[2]()
    runs[v[1]][r] = (clock() - t) / N * 1e9
  end
end
local ns = {}
for k, t in pairs(runs) do ns[k] = median(t) end
for k in pairs(ns) do if k ~= "loop" then ns[k] = ns[k] - ns.loop end end
-- the median of the per-round ratios of variant v to variant c
local function ratio(v, c)
  local t = {}
  for r = 1, ROUNDS do
    t[r] = (runs[v][r] - runs.loop[r]) / (runs[c][r] - runs.loop[r])
  end
  return median(t)
end

if arg[1] == "--raw" then
  for _, kv in ipairs({ { "first_compile_ms", first_ms }, { "next_compile_ms", second_ms },
                        { "call0_jit_ns", ns.jit0 }, { "call0_native_ns", ns.nat0 }, { "call0_c_ns", ns.c0 },
                        { "call0_creads_ns", ns.r0 },
                        { "call4_jit_ns", ns.jit4 }, { "call4_native_ns", ns.nat4 }, { "call4_c_ns", ns.c4 },
                        { "call4_creads_ns", ns.r4 },
                        { "calla_jit_ns", ns.jita }, { "calla_native_ns", ns.nata }, { "calla_c_ns", ns.ca },
                        { "calla_creads_ns", ns.ra },
                        { "call0_jit_ratio", ratio("jit0", "c0") }, { "call0_native_ratio", ratio("nat0", "c0") },
                        { "call4_jit_ratio", ratio("jit4", "c4") }, { "call4_native_ratio", ratio("nat4", "c4") },
                        { "calla_jit_ratio", ratio("jita", "ca") }, { "calla_native_ratio", ratio("nata", "ca") } }) do
    print(string.format("%s %.6g", kv[1], kv[2]))
  end
  return
end
print(string.format("first compile of a small function:  %6.2f ms", first_ms))
print(string.format("next compile of a small function:   %6.2f ms", second_ms))
print(string.format("%-22s %8s %8s %8s %8s %9s %9s %9s", "call (ns, median of " .. ROUNDS .. ")",
                    "empty C", "C reads", "f(...)", "native", "f/C", "native/C", "target"))
for _, row in ipairs({ { "no arguments", "0", 1.5 }, { "4 numbers", "4", 2 }, { "4 arrays", "a", 3 } }) do
  local c, r, j, n = ns["c" .. row[2]], ns["r" .. row[2]], ns["jit" .. row[2]], ns["nat" .. row[2]]
  print(string.format("%-22s %8.1f %8.1f %8.1f %8.1f %8.2fx %8.2fx %8.1fx", row[1], c, r, j, n,
                      ratio("jit" .. row[2], "c" .. row[2]), ratio("nat" .. row[2], "c" .. row[2]), row[3]))
end
print("(f/C, native/C: medians of each round's ratio, both times from that round)")
print("(C reads: a C function reading its arguments with luaL_checknumber / luaL_checkudata)")
print(string.format("(the empty loop, subtracted: %.1f ns per iteration)", ns.loop))
print("(arguments read from the stack: " .. tostring(kjit.stack_reads) .. ")")
