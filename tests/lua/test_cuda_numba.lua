-- test_cuda_numba.lua: numba-cuda's kernel language in kjit.cuda (issue 25):
-- cuda.jit's eager signatures and options, k:forall, launch configs, casts,
-- intrinsics, print. Without a GPU: every kernel runs in the interpreted
-- simulator (the Lua function itself: the reference, with Lua models of the
-- intrinsics) and in the compiled simulator, results compared, and compiles
-- to PTX that ptxas accepts for sm_75, sm_80 and sm_90 (CUDA 13's ptxas and
-- libNVVM have no sm_70).
local kjit = require "kjit"
local cuda = kjit.cuda
local ptxas = require "ptxas"

local function copy(b)
  if type(b) ~= "userdata" then return b end
  return b:copy()
end

-- Runs k (a kernel) with launcher maker cfg(k) in both simulators on fresh
-- copies of args; returns the copies of each mode (interpreted first) after
-- checking that every array argument agrees exactly.
local function both(name, k, cfg, args)
  local results = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local a = {}
    for i = 1, #args do a[i] = copy(args[i]) end
    local ok, err = pcall(function() cfg(k)(table.unpack(a, 1, #args)) end)
    cuda.simulate(prev)
    if not ok then error(err, 0) end
    results[#results + 1] = a
  end
  for i = 1, #args do
    if type(args[i]) == "userdata" then
      local g, w = results[2][i], results[1][i]
      g, w = g:reshape(g.size), w:reshape(w.size)
      for j = 1, w.size do eq(g[j], w[j], name .. ": argument " .. i .. "[" .. j .. "]") end
    end
  end
  return results[1], results[2]
end

-- PTX for sig checked by ptxas for sm_75, sm_80 and sm_90; returns sm_90's.
local function ptx_ok(fn, sig, opts)
  local k = cuda.jit(fn, opts)
  local ptx
  for _, cc in ipairs{ 75, 80, 90 } do
    k:compile(sig, cc)
    ptx = k:inspect("ptx")
    ptxas.check(ptx, sig, cc)
  end
  return ptx
end

-- ---- cuda.jit(fn, signature [, opts]), k:forall, launch configs ---------------------------

local function scale(a, x)
  local i = cuda.grid(1)
  if i <= #x then x[i] = a * x[i] end
end

test("cuda.jit with a numba signature compiles eagerly", function()
  local k = cuda.jit(scale, "void(float32, float32[:])")
  eq(k.signatures[1], "(f32, f32[:])")
  local k2 = cuda.jit(scale, "void(double, int32[::1])", { boundscheck = false })
  eq(k2.signatures[1], "(f64, i32[:])")
  for _, t in ipairs{ "int8", "int16", "uint8", "uint16", "uint32", "uint64", "int64", "float64" } do
    local kk = cuda.jit(scale, "void(float64, " .. t .. "[:])")
    truthy(kk.signatures[1]:find("[:]", 1, true), t)
  end
  raises("bad kernel signature", function() cuda.jit(scale, "void(float33, float32[:])") end)
  raises("signature string expected", function() cuda.jit(scale, {}, {}) end)
end)

test("an eager f32 signature binds launches in both simulators", function()
  local k = cuda.jit(scale, "void(float32, float32[:])")
  local x = kjit.full(100, 1.1, "f32")
  local _, b = both("scale", k, function(kk) return kk[{1, 128}] end, { 1.0 / 3.0, x })
  near(b[2][1], 1.1 / 3.0, 1e-6)
end)

test("k:forall(n) launches enough threads for n elements", function()
  local k = cuda.jit(function(x)
    local i = cuda.grid(1)
    if i <= #x then x[i] = x[i] + i end
  end)
  for _, n in ipairs{ 1, 31, 256, 257, 1000 } do
    local _, b = both("forall " .. n, k, function(kk) return kk:forall(n) end, { kjit.zeros(n, "i64") })
    for i = 1, n do eq(b[1][i], i) end
  end
  local _, b = both("forall tpb", k, function(kk) return kk:forall(100, 32) end, { kjit.zeros(100, "i64") })
  eq(b[1][100], 100)
  raises("at least 1 element", function() k:forall(0) end)
  raises("threads per block", function() k:forall(10, 2000) end)
end)

test("launch configs: integers and {x, y, z} read alike", function()
  local k = cuda.jit(scale)
  truthy(k[{4.0, 256}], "a float with an integer value as the grid")
  truthy(k[{{4.0}, 256.0}], "in a table too")
  raises("grid must be an integer or {x, y, z}", function() return k[{4.5, 256}] end)
  raises("(from 1 to 2^31-1), got string", function() return k[{"4", 256}] end)
  raises("grid[1] must be a positive integer (at most 2^31-1), got string", function() return k[{{"4"}, 256}] end)
  raises("grid[1] must be a positive integer (at most 2^31-1), got 4.5", function() return k[{{4.5}, 256}] end)
end)

test("cuda.jit options: device, launch_bounds, max_registers, fastmath, opt", function()
  local function dev(x) return x * 2 end
  eq(cuda.jit(dev, { device = true }), dev)
  eq(cuda.jit(dev, "float32(float32)", { device = true }), dev)
  raises("bad device function signature", function() cuda.jit(dev, "float32(", { device = true }) end)
  local k = cuda.jit(function(x)
    local i = cuda.grid(1)
    if i <= #x then x[i] = dev(x[i]) end
  end)
  local _, b = both("device fn", k, function(kk) return kk:forall(10) end, { kjit.full(10, 3, "f64") })
  eq(b[1][10], 6.0)
  local ptx = ptx_ok(scale, "void(float32, float32[:])", { launch_bounds = 128, max_registers = 40 })
  truthy(ptx:find(".maxntid 128, 1, 1", 1, true), ".maxntid")
  truthy(ptx:find(".maxnreg 40", 1, true), ".maxnreg")
  ptx = ptx_ok(scale, "void(float32, float32[:])", { maxThreadsPerBlock = 64 })
  truthy(ptx:find(".maxntid 64, 1, 1", 1, true), ".maxntid")
  raises("one limit", function() cuda.jit(scale, { launch_bounds = 64, maxThreadsPerBlock = 128 }) end)
  -- fastmath: approximate division and square root, as numba-cuda's
  local sq = function(x) local i = cuda.grid(1) if i <= #x then x[i] = math.sqrt(x[i]) / 3 end end
  local fast = ptx_ok(sq, "void(float32[:])", { fastmath = true })
  local exact = ptx_ok(sq, "void(float32[:])")
  truthy(fast:find("sqrt.approx", 1, true) and not exact:find("sqrt.approx", 1, true), "fastmath sqrt")
  ptx_ok(sq, "void(float32[:])", { opt = 0 })
  ptx_ok(sq, "void(float32[:])", { lineinfo = true, debug = false })
end)
