-- Function literals left to the interpreter (ir_escape.c
-- kcl_left_to_interpreter): a literal that a main chunk makes outside its
-- loops, that calls a method and has no loop without a method call
-- (bench/tables/vectors.lua's `step`, `centre`; bench/programs/ray.lua's
-- `ray_trace`, which has no loop), is made a real Lua closure and called
-- through its value, so that the callee policy runs it interpreted, unless
-- a value it captures has no Lua form (then it compiles with its maker, as
-- before). The interpreted function is the specification: results with
-- their subtypes, table state key by key, errors with file:line,
-- collections at every allocation. The bodies are main chunks of files
-- (load with an "@" chunk name, as loadfile names one), as
-- kjit.jit(loadfile(p)) compiles a program.
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

local function chunk(src, name) return assert(load(src, "@" .. name .. ".lua")) end

-- the specializations a compile made (the root and each compiled literal)
local function nspecs(j)
  local n = 0
  for _ in j:inspect("ir"):gmatch("spec %d+ %(") do n = n + 1 end
  return n
end

test("a main chunk's literal whose loops call methods runs interpreted; one that reads fields compiles", function()
  local body = chunk([[
    local es, Vec = ...
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
  ]], "centre")
  T.check(body, function() return vecs(7), Vec end)
  local j = kjit.jit(body)
  j(vecs(3), Vec)
  eq(nspecs(j), 2, "the root and sumx compiled, centre not")
  -- with every callee compiled, the callee policy compiles it instead
  local old = testing.callees("all")
  local before = select(2, testing.callees())
  local ok, err = pcall(function()
    local x, y = kjit.jit(body)(vecs(5), Vec)
    local ix, iy = body(vecs(5), Vec)
    eq(x, ix, "x")
    eq(y, iy, "y")
  end)
  local made = select(2, testing.callees()) - before
  testing.callees(old)
  if not ok then error(err, 0) end
  truthy(made > 0, "centre compiled as a callee under \"all\"")
end)

test("a loop-free literal that calls methods runs interpreted, called from a compiled loop", function()
  local body = chunk([[
    local es, n = ...
    local function norm2(v) return v:dot(v) end        -- left to the interpreter
    local function half(v) return v.x * 0.5 + v.y end  -- no method: compiled
    local s = 0
    for i = 1, n do
      local v = es[(i % #es) + 1]
      s = s + norm2(v) + half(v)
    end
    return s, math.type(s)
  ]], "norm2")
  T.check(body, function() return vecs(4), 25 end)
  -- (its one loop calls norm2, which runs interpreted: the chunk policy,
  -- host/chunkpolicy.c, leaves the whole chunk to the interpreter; off
  -- here, to see the literal's own rule)
  local j = kjit.jit(body)
  j(vecs(2), 3)
  if testing.interp_chunks() then eq(j.tier, 0, "the chunk runs interpreted") end
  local old = testing.interp_chunks(false)
  j = kjit.jit(body)
  local ok, err = pcall(j, vecs(2), 3)
  testing.interp_chunks(old)
  if not ok then error(err, 0) end
  eq(nspecs(j), 2, "the root and half compiled, norm2 not")
end)

test("literals compile with their maker where it may run many times", function()
  -- made by a function that is not a main chunk (each call would make a
  -- closure), or inside a main chunk's loop
  local function maker(es)
    local function norm2(v) return v:dot(v) end
    return norm2(es[1]) + norm2(es[2])
  end
  T.check(maker, function() return vecs(2) end)
  local j = kjit.jit(maker)
  j(vecs(2))
  eq(nspecs(j), 2, "maker and norm2 compiled")
  local inloop = chunk([[
    local es = ...
    local s = 0
    for k = 1, 2 do
      local function norm2(v) return v:dot(v) + k end
      s = s + norm2(es[k])
    end
    return s
  ]], "inloop")
  T.check(inloop, function() return vecs(2) end)
  j = kjit.jit(inloop)
  j(vecs(2))
  eq(nspecs(j), 2, "the chunk and norm2 compiled")
end)

test("a literal left to the interpreter: writes to tables, captured locals, several loops", function()
  T.check(chunk([[
    local es, out, Vec = ...
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
  ]], "tally"), function() return vecs(6), {}, Vec end)
  -- globals it reads are read when it runs, as interpreted (a compiled
  -- function reads them when it compiles)
  local env = setmetatable({ SCALE = 1 }, { __index = _G })
  T.check(assert(load([[
    local es = ...
    local function scaled(t)
      local s = 0
      for i = 1, #t do s = s + t[i]:dot(t[i]) * SCALE end
      return s
    end
    local a = scaled(es)
    SCALE = 3
    return a, scaled(es)
  ]], "@globals.lua", "t", env)), function() env.SCALE = 1; return vecs(3) end)
  -- a repeat loop and a generic for, each calling a method
  T.check(chunk([[
    local es = ...
    local function walk(t)
      local s, i = 0, 0
      repeat i = i + 1; s = s + t[i]:dot(t[1]) until i >= #t
      for _, v in ipairs(t) do s = s + v:add(v).x end
      return s
    end
    return walk(es), walk({ es[1] })
  ]], "walk"), function() return vecs(5) end)
end)

test("a literal left to the interpreter: errors with the interpreter's message and line", function()
  -- a method missing on one object
  T.check_error("attempt to call a nil value (method 'dot')", chunk([[
    local es = ...
    local function norms(t)
      local s = 0
      for i = 1, #t do s = s + t[i]:dot(t[i]) end
      return s
    end
    return norms(es)
  ]], "norms"), function()
    local t = vecs(4)
    t[3] = { x = 1, y = 2 }
    return t
  end)
  -- an error raised inside the method, after writes to the caller's table
  T.check_error("attempt to perform arithmetic on a table value", chunk([[
    local es, log = ...
    local function run(t)
      for i = 1, #t do log[#log + 1] = i; t[i] = t[i]:scale(2) end
    end
    run(es)
    return #log
  ]], "run"), function()
    local t = vecs(4)
    t[3] = Vec.new(1, {})
    return t, {}
  end)
end)

test("literals that cannot be real closures compile as before", function()
  -- a local assigned after the literal (mutual recursion): compiled with
  -- its maker, as every such literal
  local body = chunk([[
    local es = ...
    local bump
    local function run(t)
      local s = 0
      for i = 1, #t do s = s + t[i]:dot(t[i]) + bump() end
      return s
    end
    function bump() return 1 end
    return run(es)
  ]], "late")
  T.check(body, function() return vecs(4) end)
  local j = kjit.jit(body)
  j(vecs(2))
  truthy(nspecs(j) >= 2, "run compiled with its maker")
  -- kjit arrays and records it captures are passed to the closure
  -- (kjit and the record layout P as globals: read when it compiles)
  local env = setmetatable({ kjit = kjit, P = kjit.struct{ { "x", "f64" } } }, { __index = _G })
  T.check(assert(load([[
    local es, n = ...
    local a, r = kjit.zeros(n), kjit.zeros(n, P)
    local function fill(t) for i = 1, #t do a[i] = t[i]:dot(t[i]); r[i].x = a[i] * 2 end end
    fill(es)
    return a[1] + a[n], r[n].x
  ]], "@arrays.lua", "t", env)), function() return vecs(3), 3 end)
end)

test("a literal left to the interpreter: every table it makes survives collections at each allocation", function()
  local body = chunk([[
    local es, steps, Vec = ...
    local function step(t, dt)
      local c = Vec.new(0, 0)
      for i = 1, #t do c = c:add(t[i]) end
      for i = 1, #t do t[i] = t[i]:add(c:scale(dt)) end
    end
    for _ = 1, steps do step(es, 0.01) end
    local s = 0
    for i = 1, #es do s = s + es[i].x + es[i].y end
    return s
  ]], "step")
  for _, mode in ipairs(G.modes) do
    G.with_gc(mode, function() T.check(body, function() return vecs(5), 4, Vec end) end)
  end
end)

-- A call that passes the literal a value with no Lua form (a kjit.struct
-- layout read from a global): the literal compiles with its maker, as
-- before the rule (with it, the call was refused: "a kjit.struct cannot be
-- passed to a function value").
test("a literal given a value with no Lua form compiles with its maker", function()
  local env = setmetatable({ P = kjit.struct{ { "x", "f64" } }, kjit = kjit }, { __index = _G })
  local body = assert(load([[
    local es = ...
    local function norms(t, layout)   -- left to the interpreter, but for its argument
      local s = 0
      for i = 1, #t do s = s + t[i]:dot(t[i]) end
      return s
    end
    return norms(es, P)
  ]], "@layout.lua", "t", env))
  T.check(body, function() return vecs(4) end)
  local j = kjit.jit(body)
  j(vecs(2))
  eq(nspecs(j), 2, "norms compiled with its maker")
end)

-- Only a file's main chunk (made once a run): a chunk load() made from a
-- string may be called many times, and would make a closure at each call,
-- so its literals compile with it (the same text as a file's chunk leaves
-- the literal to the interpreter).
test("a string chunk's literals compile with it; a file chunk's are left", function()
  local src = [[
    local es = ...
    local function norms(t)
      local s = 0
      for i = 1, #t do s = s + t[i]:dot(t[i]) end
      return s
    end
    return norms(es)
  ]]
  for _, name in ipairs({ "=generated", false }) do
    local body = assert(load(src, name or nil))
    T.check(body, function() return vecs(4) end)
    local j = kjit.jit(body)
    for _ = 1, 3 do j(vecs(2)) end
    eq(nspecs(j), 2, "norms compiled with its maker (" .. tostring(name) .. ")")
  end
  local j = kjit.jit(assert(load(src, "@file.lua")))
  j(vecs(2))
  eq(nspecs(j), 1, "a file's chunk: norms left to the interpreter")
end)
