-- Which IR pass list a module gets (backend/cpu.c kc_optimize), as a fact
-- (kjit.testing.pipelines counts the modules each list optimized), and the
-- interpreter's answers under it. A module dominated by Lua-value code
-- gets the short Lua-value list (kc_pipeline_lua), counted by
-- kc_is_luacode: its calls of the Lua-value helpers per instruction, a
-- chain's one cold call (codegen/cg_chain.c kjit_lv_chain) counting for
-- each of its operations. A loop of butterflies over a Lua table (scimark's
-- FFT has this shape) has few helper calls but long chains: with each
-- chain counted once it went through O3, whose compile cost more than the
-- run it sped up; a numeric kernel over a kjit array keeps O3.
local T = require "tablediff"
local kjit = require "kjit"
local testing = require "kjit.testing"

-- the radix-2 butterflies of an in-place FFT over v = { re1, im1, re2, im2, ... }
local function butterflies(v, n, dir)
  local dual = 1
  repeat
    local dual2 = 2 * dual
    for i = 1, 2 * n - 1, 2 * dual2 do
      local j = i + dual2
      local ir, ii = v[i], v[i + 1]
      local jr, ji = v[j], v[j + 1]
      v[j], v[j + 1] = ir - jr, ii - ji
      v[i], v[i + 1] = ir + jr, ii + ji
    end
    local theta = dir * math.pi / dual
    local s, s2 = math.sin(theta), 2.0 * math.sin(theta * 0.5) ^ 2
    local wr, wi = 1.0, 0.0
    for a = 3, dual2 - 1, 2 do
      wr, wi = wr - s * wi - s2 * wr, wi + s * wr - s2 * wi
      for i = a, a + 2 * (n - dual2), 2 * dual2 do
        local j = i + dual2
        local jr, ji = v[j], v[j + 1]
        local dr, di = wr * jr - wi * ji, wr * ji + wi * jr
        local ir, ii = v[i], v[i + 1]
        v[j], v[j + 1] = ir - dr, ii - di
        v[i], v[i + 1] = ir + dr, ii + di
      end
    end
    dual = dual2
  until dual >= n
  return v[1], v[2 * n]
end

local function signal(n, f)
  local v = {}
  for i = 1, 2 * n do v[i] = f(i) end
  return v
end

-- how many modules each list optimized between two calls
local function delta(before)
  local now, d = testing.pipelines(), {}
  for k, v in pairs(now) do d[k] = v - before[k] end
  return d
end

test("chains count for their operations: butterflies over a table take the Lua-value list", function()
  local before = testing.pipelines()
  local f = kjit.jit(butterflies)
  local v = signal(8, function(i) return i * 0.5 end)
  local r1, r2 = f(v, 8, -1)
  local d = delta(before)
  local w = signal(8, function(i) return i * 0.5 end)
  local e1, e2 = butterflies(w, 8, -1)
  eq(r1, e1)
  eq(r2, e2)
  eq(d.lua, 1)
  eq(d.o3, 0)
  eq(d.tier1, 0)   -- (Lua-value code is full tier at once)
  assert(f:inspect("llvm"):find("@kjit_lv_chain", 1, true), "the butterflies have no chain")
end)

test("butterflies over a table: the interpreter's values, table state and errors", function()
  for _, n in ipairs({ 1, 2, 8, 32 }) do
    T.check(butterflies, function() return signal(n, function(i) return math.sin(i * 0.37) end), n, -1 end)
    T.check(butterflies, function() return signal(n, function(i) return math.cos(i) * 3.5 end), n, 1 end)
    -- integers (the chains' flat versions), mixed with floats
    T.check(butterflies, function() return signal(n, function(i) return i % 5 - 2 end), n, 1 end)
    T.check(butterflies, function()
      return signal(n, function(i) if i % 3 == 0 then return i else return i / 4 end end), n, -1
    end)
    -- a string that converts (the chains' slow call: Lua's coercion)
    T.check(butterflies, function() return signal(n, function(i) return i == 2 and "1.5" or i * 0.5 end), n, 1 end)
  end
  -- an element that is not a number: Lua's error, the writes before it done
  T.check_error("arithmetic", butterflies, function()
    return signal(8, function(i) return i == 9 and {} or i * 0.25 end), 8, 1
  end)
  T.check_error("arithmetic", butterflies, function() return signal(4, function(i) return i < 8 and i or nil end), 4, 1 end)
end)

test("a numeric kernel over an array keeps O3", function()
  local function axpy(a, x, y)
    for i = 1, #x do y[i] = a * x[i] + y[i] end
  end
  local before = testing.pipelines()
  local f = kjit.jit(axpy, { tiered = false })
  local x, y = kjit.zeros(64, "f64"), kjit.zeros(64, "f64")
  for i = 1, 64 do x[i], y[i] = i, 2 * i end
  f(0.5, x, y)
  eq(y[10], 25.0)
  local d = delta(before)
  eq(d.o3, 1)
  eq(d.lua, 0)
end)

-- spectral-norm's Av: an inlined leaf call in a loop over Lua tables (a
-- chain, an index read and write)
local function A(i, j)
  local ij = i + j - 1
  return 1.0 / (ij * (ij - 1) * 0.5 + i)
end
local function Av(x, y, N)
  for i = 1, N do
    local a = 0
    for j = 1, N do a = a + x[j] * A(i, j) end
    y[i] = a
  end
end

test("a Lua-value module goes to the code generator without lifetime markers", function()
  -- (backend/cpu.c kc_drop_lifetimes: the inliner's markers around the
  -- inlined specialization's buffers cost 2% of the code generation)
  local before = testing.pipelines()
  local f = kjit.jit(Av)
  local x, y = { 1, 2.5, 3, 4 }, {}
  f(x, y, 4)
  eq(delta(before).lua, 1)
  local ir = f:inspect("llvm")
  assert(ir:find("alloca", 1, true), "no buffers: the fact below would say nothing")
  assert(not ir:find("call void @llvm.lifetime", 1, true), "a lifetime marker left")
  for _, n in ipairs({ 0, 1, 4, 9 }) do
    T.check(Av, function()
      local v = {}
      for i = 1, n do v[i] = i % 3 == 0 and i or i * 0.5 end
      return v, {}, n
    end)
  end
  -- an element that is not a number: Lua's error at its line, y as far as written
  T.check_error("attempt to mul", Av, function() return { 1, 2, "x" }, {}, 3 end)
end)
