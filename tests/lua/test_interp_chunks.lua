-- Main chunks left to the interpreter (host/chunkpolicy.c): a main chunk
-- whose innermost loops of greatest depth each call a function that runs
-- interpreted anyway (a local function left to the interpreter, or a
-- method the chunk defines that the callee policy leaves interpreted), and
-- no function of which has a loop the callee policy compiles, runs
-- interpreted: nothing is compiled (bench/tables/vectors.lua,
-- bench/programs/ray.lua). Facts: such chunks run interpreted (f.tier 0,
-- kjit.testing.callees' sixth value, nothing compiled); the chunks the
-- rule must not catch compile. Differential (the interpreted function is
-- the specification): results, varargs and multiple results, table state,
-- errors with file:line from a method called in the loop, methods
-- replaced between calls, a yield inside the chunk.
local T = require "tablediff"
local H = require "calls_harness"
local kjit = require "kjit"
local testing = require "kjit.testing"

-- a file's main chunk, as loadfile makes it ("@": the source is a file)
local function chunk(src, name) return assert(load(src, "@" .. name)) end
local function left() return select(6, testing.callees()) end
local function compiled() return select(2, testing.callees()) end

-- body, after checking that the rule leaves it to the interpreter (a
-- differential case below must test the interpreted path)
local function interpreted(body)
  local j = kjit.jit(body)
  j:compile("()")
  eq(j.tier, 0, "left to the interpreter")
  return body
end

-- A class in vectors' shape: methods that make tables (left interpreted by
-- the callee policy) and a small leaf (dot: compiled when compiled code
-- calls it).
local CLASS = [[
  local Vec = {}
  Vec.__index = Vec
  function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
  function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
  function Vec:scale(s) return Vec.new(self.x * s, self.y * s) end
  function Vec:dot(o) return self.x * o.x + self.y * o.y end
  function Vec:length() return math.sqrt(self:dot(self)) end
]]

-- vectors' shape: a step left to the interpreter, called from the loop;
-- a final loop calling a method that runs interpreted
local VECTORS = CLASS .. [[
  local n, steps = ...
  local function spawn(n)
    local es = {}
    for i = 1, n do es[i] = { pos = Vec.new(i, i % 3), vel = Vec.new(1, -1) } end
    return es
  end
  local es = spawn(n)
  local function step(es, dt)
    for i = 1, #es do
      local e = es[i]
      e.pos = e.pos:add(e.vel:scale(dt))
    end
  end
  for _ = 1, steps do step(es, 0.5) end
  local s = 0
  for i = 1, #es do s = s + es[i].pos:length() end
  return s, #es, select('#', ...), ...
]]

test("a chunk whose hot loops call interpreted functions runs interpreted (facts)", function()
  local body = chunk(VECTORS, "vectors")
  local j = kjit.jit(body)
  local l0, c0 = left(), compiled()
  eq(j:compile("()"), j, "f:compile returns f")
  eq(j.tier, 0, "interpreted: f.tier is 0")
  eq(left() - l0, 1, "one chunk left to the interpreter")
  local a = table.pack(j(5, 3))
  local b = table.pack(body(5, 3))
  eq(a.n, b.n, "as many results")
  for i = 1, a.n do eq(a[i], b[i], "result " .. i) end
  eq(compiled() - c0, 0, "no callee compiled")
  eq(j.tier, 0, "still interpreted after a call")
  eq(#j.signatures, 0, "no specialization made")
  raises("runs interpreted", function() return j:inspect("types") end)
  raises("bad signature", function() return j:compile("(nonsense") end)
  -- code asked for: f:inspect with a signature compiles, and later calls
  -- of that signature run it
  truthy(#j:inspect("types", "(i64, i64)") > 0, "inspect compiled it")
  truthy(j.tier == 1 or j.tier == 2, "compiled once asked")
  local c = table.pack(j(5, 3))
  for i = 1, b.n do eq(c[i], b[i], "compiled result " .. i) end
end)

test("a chunk load() made from a string compiles (it may be called many times)", function()
  local body = assert(load(VECTORS, "=vectors"))
  local j = kjit.jit(body)
  local l0 = left()
  j:compile("()")
  eq(left() - l0, 0, "not left to the interpreter")
  assert(j.tier ~= nil and j.tier > 0, "compiled: f.tier " .. tostring(j.tier))
  local a, b = table.pack(j(5, 3)), table.pack(body(5, 3))
  eq(a.n, b.n, "as many results")
  for i = 1, a.n do eq(a[i], b[i], "result " .. i) end
end)

test("ray's shape: a pixel loop nest calling a loop-free function over a method", function()
  local body = chunk(CLASS .. [[
    local n = ...
    local best = { 0 }
    local scene = setmetatable({ x = 0.5, y = 2 }, Vec)
    local function unit(x, y) local l = math.sqrt(x * x + y * y) return x / l, y / l end
    local delta = 1
    while delta * delta + 1 ~= 1 do delta = delta * 0.5 end   -- an arithmetic loop, not deepest
    local function trace(x, y)
      best[1] = scene:dot(Vec.new(x, y))
      scene:add(scene)
      return best[1] + delta
    end
    local g = 0
    for y = 1, n do
      for x = 1, n do
        local ux, uy = unit(x, y)
        g = g + trace(ux, uy)
      end
    end
    return g, best[1]
  ]], "ray")
  local l0 = left()
  local j = kjit.jit(body)
  eq(j:compile("(i64)").tier, 0, "interpreted")
  eq(left() - l0, 1, "left to the interpreter")
  T.check(body, function() return 7 end)
  testing.interp_chunks(false)
  local ok, err = pcall(function()
    local k = kjit.jit(body)
    k:compile("(i64)")
    truthy(k.tier == 1 or k.tier == 2, "compiled with the rule off")
    T.check(body, function() return 7 end)
  end)
  testing.interp_chunks(true)
  if not ok then error(err, 0) end
end)

-- Each of these chunks must compile (the rule must not catch it).
local COMPILED = {
  -- nbody's shape: the loop calls a local function with an arithmetic loop
  nbody = [[
    local n = ...
    local xs = {}
    for i = 1, 8 do xs[i] = i * 0.5 end
    local function advance(xs, dt)
      for i = 1, #xs do xs[i] = xs[i] + dt * xs[i] * 0.01 end
    end
    for _ = 1, n do advance(xs, 0.1) end
    return xs[1], xs[8]
  ]],
  -- perlin's and array3d's shape: the loop calls a method that compiles
  -- (a small leaf or small caller)
  leafmethod = CLASS .. [[
    local n = ...
    local a, b = Vec.new(1, 2), Vec.new(3, 4)
    local s = 0
    for i = 1, n do s = s + a:dot(b) * i end
    return s
  ]],
  -- a method the chunk does not define (a module's): not known
  foreign = [[
    local n, o = ...
    local s = 0
    for i = 1, n do s = s + o:get(i) end
    return s
  ]],
  -- deepest loop without a call into interpreted code, beside one with it
  mixed = CLASS .. [[
    local n = ...
    local v = Vec.new(1, 1)
    for i = 1, n do v = v:add(v) end
    local s = 0
    for i = 1, n do for k = 1, n do s = s + i * k end end
    return s, v.x
  ]],
  -- the hot loops call interpreted functions, but a function of the chunk
  -- has an arithmetic loop (compiled only when compiled code calls it)
  kernel = CLASS .. [[
    local n = ...
    local Sum = {}
    Sum.__index = Sum
    function Sum:run(m) local s = 0 for i = 1, m do s = s + i * i * 0.5 end return s end
    local o = setmetatable({}, Sum)
    local t, v = 0, Vec.new(1, 2)
    for i = 1, n do t = t + o:run(10) + v:add(v).x end
    return t
  ]],
  -- no loop at all
  noloop = CLASS .. [[
    local a = Vec.new(...)
    return a:add(a):length()
  ]],
}

test("chunks the rule does not catch compile (facts)", function()
  local Get = { get = function(_, i) return i * 2 end }
  Get.__index = Get
  for name, src in pairs(COMPILED) do
    local body = chunk(src, name)
    local l0 = left()
    local j = kjit.jit(body)
    local args = name == "foreign" and { 3, setmetatable({}, Get) } or { 3, 4 }
    local got = table.pack(j(table.unpack(args)))
    local want = table.pack(body(table.unpack(args)))
    for i = 1, want.n do eq(got[i], want[i], name .. " result " .. i) end
    eq(left() - l0, 0, name .. ": not left to the interpreter")
    truthy(j.tier == 1 or j.tier == 2, name .. " compiled: tier " .. tostring(j.tier))
  end
  -- a function that is not a main chunk, in vectors' shape: compiles
  local f = kjit.jit(function(n)
    local V = {}
    V.__index = V
    function V:add(o) return setmetatable({ x = self.x + o.x }, V) end
    local function step(v) return v:add(v) end
    local v = setmetatable({ x = 1 }, V)
    for _ = 1, n do v = step(v) end
    return v.x
  end)
  eq(f(3), 8)
  truthy(f.tier == 1 or f.tier == 2, "a function literal compiles")
  -- every callee compiled: the rule is off
  local old = testing.callees("all")
  local j = kjit.jit(chunk(VECTORS, "vectors_all"))
  local ok, err = pcall(j.compile, j, "(i64, i64)")
  testing.callees(old)
  if not ok then error(err, 0) end
  truthy(j.tier == 1 or j.tier == 2, "compiled under callees \"all\"")
end)

test("an interpreted chunk: results, varargs, tables, errors, methods replaced", function()
  -- results with subtypes, every vararg passed on, the tables it changes
  T.check(interpreted(chunk(VECTORS, "vectors_t")), function() return 4, 2 end)
  T.check(interpreted(chunk(CLASS .. [[
    local out, n = ...
    local function fill(t, k) for i = 1, k do t[i] = Vec.new(i, -i):scale(0.5).y end end
    for r = 1, n do fill(out, r) end
    out.n = #out
    return out
  ]], "fill")), function() return {}, 3 end)
  -- an error raised in a method called by the loop: the interpreter's
  -- message and line, the writes before it kept
  T.check_error("boom at 3", interpreted(chunk(CLASS .. [[
    local out = ...
    function Vec:check(i) if i == 3 then error("boom at " .. i) end return self end
    local v = Vec.new(1, 2)
    local function visit(w, i) return w:check(i):add(w) end
    for i = 1, 5 do out[i] = visit(v, i).x end
  ]], "errs")), function() return {} end)
  -- (the same through the harness, which logs messages with positions)
  H.differential(function()
    local body = interpreted(chunk(CLASS .. [[
      local o, n = ...
      local function go(v) return v:dot(v):bad() end
      local s = 0
      for i = 1, n do s = s + go(o) end
      return s
    ]], "errline"))
    return body, function(run)
      run(setmetatable({ x = 1, y = 2 }, { __index = { dot = function() return 1 end } }), 2)
      run(nil, 2)
    end
  end)
  -- methods replaced between calls: the chunk reads them as it runs
  H.differential(function()
    local M = {}
    M.__index = M
    function M:get() return setmetatable({ v = self.v }, M) end
    local body = interpreted(chunk([[
      local o, n = ...
      local function pick(x) return x:get() end
      local s = 0
      for i = 1, n do s = s + pick(o).v * i end
      return s, math.type(s)
    ]], "replaced"))
    return body, function(run)
      local o = setmetatable({ v = 2 }, M)
      run(o, 3)
      function M:get() return { v = self.v + 0.5 } end
      run(o, 3)
      M.get = nil
      run(o, 3)
    end
  end)
end)

test("an interpreted chunk may yield inside a coroutine, as interpreted", function()
  local body = chunk(CLASS .. [[
    local n = ...
    local function tick(v) coroutine.yield(v:length()) return v:add(v) end
    local v = Vec.new(3, 4)
    for i = 1, n do v = tick(v) end
    return v.x, v.y
  ]], "yields")
  local j = kjit.jit(body)
  local got, want = {}, {}
  for _, p in ipairs({ { j, got }, { body, want } }) do
    local f = p[1]
    local co = coroutine.wrap(function(...) return f(...) end)
    local r = table.pack(co(3))
    while true do
      p[2][#p[2] + 1] = table.concat({ tostring(r[1]), tostring(r[2]) }, ",")
      if r.n == 2 then break end
      r = table.pack(co())
    end
  end
  eq(j.tier, 0, "interpreted")
  eq(table.concat(got, " "), table.concat(want, " "))
end)

test("a finalized object that ran its chunk interpreted refuses calls, as any", function()
  local j = resurrected(function()
    local k = kjit.jit(chunk(VECTORS, "vectors_dead"))
    eq(select(2, k(2, 1)), 2, "ran")
    eq(k.tier, 0, "interpreted")
    return k
  end)
  raises("finalized", function() return j(2, 1) end)
  raises("finalized", function() return j:compile("(i64, i64)") end)
end)

test("levels of errors in an interpreted chunk: error(msg, 2) in its functions names its line", function()
  local body = interpreted(chunk(CLASS .. [[
    local n, lvl = ...
    function Vec:check(i) if i == n then error("bad step " .. i, lvl) end return self end
    local function visit(v, i) return v:check(i):add(v) end
    local v = Vec.new(1, 2)
    for i = 1, 4 do v = visit(v, i) end
    return v.x
  ]], "levels"))
  local j = kjit.jit(body)
  for _, lvl in ipairs({ 1, 2, 3 }) do
    -- called from a Lua function (not a tail call), as a program is
    local ok1, e1 = pcall(function() local r = body(3, lvl) return r end)
    local ok2, e2 = pcall(function() local r = j(3, lvl) return r end)
    eq(ok2, ok1, "level " .. lvl)
    eq(e2, e1, "level " .. lvl .. " message")
  end
  eq(j(9, 1), body(9, 1), "no error")
end)
