-- Function literals left to the interpreter (ir_escape.c
-- kcl_runs_interpreted): a literal of a compiled function that calls a
-- method and has no loop without a method call (bench/tables/vectors.lua's
-- `step`, `centre`; bench/programs/ray.lua's `ray_trace`, which has no
-- loop) is made a real Lua closure and called through its value, so
-- that the callee policy runs it interpreted, unless a value it captures
-- has no Lua form (then it compiles with its maker, as before). The
-- interpreted function is the specification: results with their subtypes,
-- table state key by key, errors with file:line, collections at every
-- allocation.
local T = require "tablediff"
local G = require "gc_harness"
local kjit = require "kjit"
local testing = require "kjit.testing"

local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
function Vec:scale(s) return Vec.new(self.x * s, self.y * s) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end

local function vecs(n)
  local t = {}
  for i = 1, n do t[i] = Vec.new(i, (i * 7) % 5 - 2.5) end
  return t
end

-- the specializations a compile made (the root and each compiled literal)
local function nspecs(j)
  local n = 0
  for _ in j:inspect("ir"):gmatch("spec %d+ %(") do n = n + 1 end
  return n
end

test("a literal whose loops call methods runs interpreted; one that reads fields compiles", function()
  local function body(es)
    local function centre(t)   -- its one loop calls a method: left to the interpreter
      local c = Vec.new(0, 0)
      for i = 1, #t do c = c:add(t[i]) end
      return c:scale(1 / #t)
    end
    local function sumx(t)     -- its loop reads fields: compiled with its maker
      local s = 0
      for i = 1, #t do s = s + t[i].x end
      return s
    end
    local c = centre(es)
    return c.x, c.y, sumx(es), getmetatable(c) == Vec
  end
  T.check(body, function() return vecs(7) end)
  local j = kjit.jit(body)
  j(vecs(3))
  eq(nspecs(j), 2, "the root and sumx compiled, centre not")
  -- with every callee compiled, the callee policy compiles it instead
  local old = testing.callees("all")
  local before = select(2, testing.callees())
  local ok, err = pcall(function()
    local k = kjit.jit(body)
    local x, y = k(vecs(5))
    local ix, iy = body(vecs(5))
    eq(x, ix, "x")
    eq(y, iy, "y")
  end)
  local made = select(2, testing.callees()) - before
  testing.callees(old)
  if not ok then error(err, 0) end
  truthy(made > 0, "centre compiled as a callee under \"all\"")
end)

test("a loop-free literal that calls methods runs interpreted, called from a compiled loop", function()
  local function body(es, n)
    local function norm2(v) return v:dot(v) end        -- left to the interpreter
    local function half(v) return v.x * 0.5 + v.y end  -- no method: compiled
    local s = 0
    for i = 1, n do
      local v = es[(i % #es) + 1]
      s = s + norm2(v) + half(v)
    end
    return s, math.type(s)
  end
  T.check(body, function() return vecs(4), 25 end)
  local j = kjit.jit(body)
  j(vecs(2), 3)
  eq(nspecs(j), 2, "the root and half compiled, norm2 not")
end)

test("a literal left to the interpreter: writes to tables, captured locals, several loops", function()
  T.check(function(es, out)
    local count, total = 0, 0
    local function tally(t)   -- assigns captured locals (cells) and writes tables
      for i = 1, #t do
        local d = t[i]:dot(t[i])
        total = total + d
        out[i] = d
        t[i].seen = true
      end
      local k = 0
      while k < #t do k = k + 1; count = count + t[k]:dot(Vec.new(1, 0)) end
    end
    tally(es)
    tally(es)
    return count, total, math.type(count), math.type(total)
  end, function() return vecs(6), {} end)
  -- a repeat loop and a generic for, each calling a method
  T.check(function(es)
    local function walk(t)
      local s, i = 0, 0
      repeat i = i + 1; s = s + t[i]:dot(t[1]) until i >= #t
      for _, v in ipairs(t) do s = s + v:add(v).x end
      return s
    end
    return walk(es), walk({ es[1] })
  end, function() return vecs(5) end)
end)

test("a literal left to the interpreter: errors with the interpreter's message and line", function()
  -- a method missing on one object
  T.check_error("attempt to call a nil value (method 'dot')", function(es)
    local function norms(t)
      local s = 0
      for i = 1, #t do s = s + t[i]:dot(t[i]) end
      return s
    end
    return norms(es)
  end, function()
    local t = vecs(4)
    t[3] = { x = 1, y = 2 }
    return t
  end)
  -- an error raised inside the method, after writes to the caller's table
  T.check_error("attempt to perform arithmetic on a table value", function(es, log)
    local function run(t)
      for i = 1, #t do log[#log + 1] = i; t[i] = t[i]:scale(2) end
    end
    run(es)
    return #log
  end, function()
    local t = vecs(4)
    t[3] = Vec.new(1, {})
    return t, {}
  end)
end)

test("literals that cannot be real closures compile as before", function()
  -- a local assigned after the literal (mutual recursion): compiled with
  -- its maker, as every such literal
  local function body(es)
    local bump
    local function run(t)
      local s = 0
      for i = 1, #t do s = s + t[i]:dot(t[i]) + bump() end
      return s
    end
    function bump() return 1 end
    return run(es)
  end
  T.check(body, function() return vecs(4) end)
  local j = kjit.jit(body)
  j(vecs(2))
  truthy(nspecs(j) >= 2, "run compiled with its maker")
  -- kjit arrays and records it captures are passed to the closure
  local P = kjit.struct{ { "x", "f64" } }
  T.check(function(es, n)
    local a, r = kjit.zeros(n), kjit.zeros(n, P)
    local function fill(t) for i = 1, #t do a[i] = t[i]:dot(t[i]); r[i].x = a[i] * 2 end end
    fill(es)
    return a[1] + a[n], r[n].x
  end, function() return vecs(3), 3 end)
end)

test("a literal left to the interpreter: every table it makes survives collections at each allocation", function()
  for _, mode in ipairs(G.modes) do
    G.with_gc(mode, function()
      T.check(function(es, steps)
        local function step(t, dt)
          local c = Vec.new(0, 0)
          for i = 1, #t do c = c:add(t[i]) end
          for i = 1, #t do t[i] = t[i]:add(c:scale(dt)) end
        end
        for _ = 1, steps do step(es, 0.01) end
        local s = 0
        for i = 1, #es do s = s + es[i].x + es[i].y end
        return s
      end, function() return vecs(5), 4 end)
    end)
  end
end)
