-- Differential tests: tables held by upvalues and globals that compiled
-- code writes into (issue 29: the class pattern with fields set and
-- methods replaced, module counters, caches memoized in a module table,
-- nested M.state.items), read live by every compiled function whatever the
-- order of compiles (src/ir/ir_live.c). Each program is made twice by a
-- factory: one world runs interpreted, the other compiled; results, errors
-- and the world's tables are compared key by key (tablediff.lua).
local T = require "tablediff"
local kjit = require "kjit"
local testing = require "kjit.testing"

local function retired() return select(7, testing.callees()) end

-- A copy of the world's data (each world has its own functions, so
-- functions are compared by where they come from: their source line).
local function data(v, seen)
  if type(v) == "function" then
    local i = debug.getinfo(v, "S")
    return "function@" .. i.linedefined
  end
  if type(v) ~= "table" then return v end
  seen = seen or {}
  if seen[v] then return seen[v] end
  local c = {}
  seen[v] = c
  for k, x in pairs(v) do c[data(k, seen)] = data(x, seen) end
  return c
end

-- make() -> entry function, the world's state (a table of its tables);
-- calls: a list of argument lists. Both worlds see the same calls; after
-- each, results (or error messages) and the states are compared.
local function world(make, calls, opts)
  local where = debug.getinfo(2, "Sl")
  where = where.short_src .. ":" .. where.currentline
  local fi, si = make()
  local fc, sc = make()
  local jc = kjit.jit(fc, opts)
  for n, args in ipairs(calls) do
    local ir = table.pack(pcall(fi, table.unpack(args)))
    local cr = table.pack(pcall(jc, table.unpack(args)))
    local what = where .. ": call " .. n
    if ir[1] ~= cr[1] then
      error(what .. ": interpreted " .. (ir[1] and "returned" or "raised " .. tostring(ir[2])) ..
            ", compiled " .. (cr[1] and "returned" or "raised " .. tostring(cr[2])), 0)
    end
    if not ir[1] then
      eq(tostring(cr[2]), tostring(ir[2]), what .. ": error")
    else
      local e = T.compare(data(ir), data(cr), {}, {}, "results")
      if e then error(what .. ": " .. e, 0) end
    end
    local e = T.compare(data(si), data(sc), {}, {}, "state")
    if e then error(what .. ": " .. e, 0) end
  end
  return jc
end

-- under both callee policies: methods called through values compiled
-- ("all") and left to the interpreter ("none")
local function both(body)
  for _, m in ipairs { "all", "none", "leaves" } do
    local old = testing.callees(m)
    local ok, err = pcall(body, m)
    testing.callees(old)
    if not ok then error(m .. ": " .. tostring(err), 0) end
  end
end

local function class()
  local Pt = { scale = 1, made = 0 }
  Pt.__index = Pt
  function Pt.new(x, y)
    Pt.made = Pt.made + 1
    return setmetatable({ x = x, y = y }, Pt)
  end
  function Pt:len() return (self.x + self.y) * Pt.scale end
  function Pt:setscale(k) Pt.scale = k end
  function Pt.twice(p) return 2 * p:len() end
  return Pt
end

test("the class pattern: a field of the class set in the loop, read by its methods", function()
  both(function()
    world(function()
      local Pt = class()
      return function(n)
        local s = 0
        for i = 1, n do
          Pt.scale = i
          local p = Pt.new(i, i)
          s = s + Pt.len(p) + p:len()
        end
        return s
      end, { Pt = Pt }
    end, { { 10 }, { 3 }, { 0 } })
    -- the write in a method called through the object, the read in another
    world(function()
      local Pt = class()
      return function(n)
        local s = 0
        for i = 1, n do
          local p = Pt.new(i, 0.5)
          p:setscale(i)
          s = s + p:len() + Pt.scale
        end
        return s
      end, { Pt = Pt }
    end, { { 10 }, { 4 } })
  end)
end)

test("a method replaced by compiled code is the one called after", function()
  both(function()
    world(function()
      local Pt = class()
      return function(n)
        local s = 0
        for i = 1, n do
          local p = Pt.new(i, 1)
          s = s + p:len()
          if i == 3 then Pt.len = function(self) return self.x - self.y end end
          if i == 6 then Pt.twice = function(q) return -q.x end end
          s = s + Pt.twice(p)
        end
        return s
      end, { Pt = Pt }
    end, { { 8 } })
  end)
end)

test("a module's counter and memo cache, updated by its functions", function()
  both(function()
    world(function()
      local M = { count = 0, cache = {} }
      function M.bump(k) M.count = M.count + k end
      function M.fib(n)
        local c = M.cache[n]
        if c then return c end
        local r = n < 2 and n or M.fib(n - 1) + M.fib(n - 2)
        M.cache[n] = r
        return r
      end
      return function(n)
        local s = 0
        for i = 1, n do
          M.bump(i)
          s = s + M.fib(i) + M.count
        end
        return s, M.count
      end, { M = M }
    end, { { 20 }, { 5 } })
    -- the writer a local function outside the module, in the same compile
    world(function()
      local M = { count = 0 }
      local function bump() M.count = M.count + 1 end
      local function get() return M.count end
      return function(n)
        local s = 0
        for _ = 1, n do s = s + get(); bump() end
        return s + get()
      end, { M = M }
    end, { { 7 }, { 2 } })
  end)
end)

test("nested M.state.items: appended to by a callee, counted by the caller", function()
  both(function()
    world(function()
      local M = { state = { items = {}, total = 0 } }
      local function add(x)
        local items = M.state.items
        items[#items + 1] = x
        M.state.total = M.state.total + x
      end
      local function log(x) table.insert(M.state.items, -x) end
      return function(n)
        for i = 1, n do
          add(i * 0.5)
          if i % 3 == 0 then log(i) end
        end
        return #M.state.items, M.state.total, M.state.items[1]
      end, { M = M }
    end, { { 9 }, { 1 } })
  end)
end)

test("the write in the caller and the read in a callee, and the reverse", function()
  both(function()
    world(function()
      local Cfg = { k = 2 }
      local function scaled(x) return x * Cfg.k end
      return function(n)
        local s = 0
        for i = 1, n do Cfg.k = i; s = s + scaled(i) end
        return s
      end, { Cfg = Cfg }
    end, { { 6 } })
    world(function()
      local Cfg = { k = 2 }
      local function set(v) Cfg.k = v end
      return function(n)
        local s = 0
        for i = 1, n do set(i); s = s + Cfg.k end
        return s
      end, { Cfg = Cfg }
    end, { { 6 } })
  end)
end)

test("a global table written by compiled code, read by a callee", function()
  -- (one global name: the interpreted world runs to its end first)
  local function make()
    KJIT_CW_COUNTER = { n = 0 }
    local function get() return KJIT_CW_COUNTER.n end
    return function(k)
      KJIT_CW_COUNTER.n = KJIT_CW_COUNTER.n + k
      return get() * 10
    end
  end
  both(function()
    local fi, want = make(), {}
    for k = 1, 3 do want[k] = fi(k) end
    local fc = kjit.jit(make())
    for k = 1, 3 do eq(fc(k), want[k]) end
    eq(KJIT_CW_COUNTER.n, 6)
  end)
end)

test("errors mid-way leave the writes done before them, with the interpreter's message", function()
  both(function()
    world(function()
      local Pt = class()
      return function(n, bad)
        local s = 0
        for i = 1, n do
          Pt.scale = i
          if i == bad then Pt.scale = nil end
          s = s + Pt.new(i, 1):len()
        end
        return s
      end, { Pt = Pt }
    end, { { 5, 0 }, { 5, 3 }, { 2, 0 } })
  end)
end)

-- Classes made by one factory: their setters are closures of one
-- prototype, whose bytecode ir_live.c decodes once (kjit.writesproto);
-- each class is still found written by its own setter (its own upvalue).
test("classes made by one factory: each found written by its own setter", function()
  local function make()
    local C = { v = 1 }
    function C.set(k) C.v = k end
    return C
  end
  local classes = {}
  for i = 1, 20 do classes[i] = make() end
  for i = 1, 20, 3 do
    local C = classes[i]
    local get = kjit.jit(function() return C.v end)
    eq(get(), 1)
    C.set(i + 1)   -- (interpreted: its own function's write, read live)
    eq(get(), i + 1, "class " .. i)
  end
  collectgarbage()   -- (the prototype's closure that answered may go)
  local late = make()
  local get = kjit.jit(function() return late.v end)
  eq(get(), 1)
  late.set(7)
  eq(get(), 7, "a class made after a collection")
end)

-- A compile that is refused after it typed a write marks nothing
-- (ir_type.c mark_live, kty_live_commit): the readers compiled before keep
-- their code (on the session's start they were retired for nothing); the
-- same write in a compile that succeeds retires them.
test("a writer whose compile is refused retires no reader", function()
  local M = { count = 0 }
  local get = kjit.jit(function() return M.count end)
  eq(get(), 0)
  local before = retired()
  -- (the store is typed, and marks M, before the call that is refused)
  local bad = kjit.jit(function(k) M.count = M.count + k; return debug.getinfo(1, "l") end)
  local ok, err = pcall(bad.compile, bad, "(i64)")
  truthy(not ok and tostring(err):find("debug functions", 1, true), "refused: " .. tostring(err))
  eq(retired(), before, "specializations retired by a refused compile")
  eq(M.count, 0)
  local bump = kjit.jit(function(k) M.count = M.count + k end)
  bump(2)
  truthy(retired() > before, "the reader retired by the writer that compiled")
  eq(get(), 2)
  -- a global the refused compile assigns
  KJIT_CW_REFUSED = 1
  local gget = kjit.jit(function() return KJIT_CW_REFUSED end)
  eq(gget(), 1)
  before = retired()
  local gbad = kjit.jit(function(k) KJIT_CW_REFUSED = k; return debug.getinfo(1, "l") end)
  ok, err = pcall(gbad.compile, gbad, "(i64)")
  truthy(not ok and tostring(err):find("debug functions", 1, true), "refused: " .. tostring(err))
  eq(retired(), before, "specializations retired by a refused compile (a global)")
  kjit.jit(function(k) KJIT_CW_REFUSED = KJIT_CW_REFUSED + k end)(4)
  truthy(retired() > before, "the global's reader retired by the writer that compiled")
  eq(gget(), 5)
  KJIT_CW_REFUSED = nil
end)

test("order of compiles: a reader compiled first is retired when a writer compiles", function()
  local M = { count = 0 }
  local get = kjit.jit(function() return M.count end)
  eq(get(), 0)
  local native = get:native("i64()")
  local before = retired()
  local bump = kjit.jit(function(k) M.count = M.count + k end)
  bump(2)
  truthy(retired() > before, "the reader's specialization was retired")
  eq(get(), 2)
  eq(native(), 2)
  bump(3)
  eq(get(), 5)
  eq(native(), 5)
  -- the reader a callee that compiled as a value's (a method), first
  both(function(m)
    local P = { v = 1 }
    P.__index = P
    function P:get() return P.v + self.w end
    local o = setmetatable({ w = 10 }, P)
    local read = kjit.jit(function(x) return x:get() end)
    eq(read(o), 11)
    local write = kjit.jit(function(v) P.v = v end)
    write(5)
    eq(read(o), 15, m)
  end)
end)

test("a table nobody compiled writes stays frozen: interpreted replacement is not seen", function()
  -- (docs/reference/differences.md, item 2: upvalues and globals are frozen)
  local Q = { k = 3 }
  function Q.get() return Q.k end   -- reads Q, never writes it
  local f = kjit.jit(function(x) return x * Q.get() + Q.k end)
  eq(f(2), 9)
  Q.k = 100   -- an interpreted write: the compiled code keeps 3
  eq(f(2), 9)
  -- a table one of whose own functions writes it is live, even where that
  -- function runs interpreted
  local R = { k = 3 }
  function R.set(v) R.k = v end
  local g = kjit.jit(function(x) return x * R.k end)
  eq(g(2), 6)
  R.set(10)
  eq(g(2), 20)
  R.k = 7
  eq(g(2), 14)
end)

test("an object held by an upvalue, its methods called on it (self a frozen table)", function()
  -- (before 2026-11-28 refused: "cannot pass a table ... its self")
  both(function()
    world(function()
      local Player = { speed = 2 }
      Player.__index = Player
      function Player.new() return setmetatable({ x = 0, hits = 0 }, Player) end
      function Player:update(dt) self.x = self.x + self.speed * dt end
      function Player:hit() self.hits = self.hits + 1; return self.hits end
      local player = Player.new()
      return function(n)
        local s = 0
        for i = 1, n do
          player:update(0.5)
          if i % 2 == 0 then s = s + player:hit() end
        end
        return s, player.x
      end, { player = player, Player = Player }
    end, { { 6 }, { 3 } })
  end)
end)

test("a kernel reading a table compiled code writes is refused, saying what to write", function()
  local cuda = kjit.cuda
  local prev = cuda.simulate(true)
  local Cfg = { k = 2 }
  kjit.jit(function(v) Cfg.k = v end)(3)
  local kern = cuda.jit(function(out)
    local i = cuda.grid(1)
    if i <= #out then out[i] = Cfg.k end
  end)
  local ok, err = pcall(function() kern[{ 1, 4 }](kjit.zeros(4)) end)
  cuda.simulate(prev)
  truthy(not ok and err:find("copy the values into a kjit array and pass it", 1, true), tostring(err))
end)

test("elements of a frozen list written by their constant index, or through a local", function()
  -- (before 2026-11-28 `local e = L[1]; e.v = x` was refused: "cannot
  -- assign to a field ('v') in compiled code")
  both(function()
    world(function()
      local L = { { v = 1 }, { v = 2 } }
      local function getv() return L[1].v + L[2].v end
      return function(x)
        local e = L[1]
        e.v = x
        L[2].v = L[2].v + 1
        return getv(), L[1].v
      end, { L = L }
    end, { { 5 }, { 0.5 } })
  end)
end)

test("retired code and its objects collected, callees retired again and again", function()
  -- (ASan: retired specializations are freed with their objects, never before)
  local before = retired()
  for round = 1, 12 do
    local M = { count = round }
    local P = { v = round }
    P.__index = P
    function P:get() return P.v + self.w end
    local o = setmetatable({ w = 1 }, P)
    local get = kjit.jit(function() return M.count end)
    local read = kjit.jit(function(x) return x:get() end)
    local native = get:native("i64()")
    eq(get(), round)
    eq(read(o), round + 1)
    kjit.jit(function(k) M.count = M.count + k; P.v = k end)(2)
    eq(get(), round + 2)
    eq(native(), round + 2)
    eq(read(o), 3)
    if round % 3 == 0 then collectgarbage() end
  end
  collectgarbage()
  truthy(retired() - before >= 12, "retired: " .. (retired() - before))
end)

test("a global one method assigns and another reads, each compiled on its own", function()
  -- (before 2026-11-28 the reader kept the value it froze: 5 where the
  -- interpreter gives 15)
  both(function()
    local function make()
      KJIT_CW_SCORE = 0
      local Game = {}
      Game.__index = Game
      function Game:update(k) KJIT_CW_SCORE = KJIT_CW_SCORE + k end
      function Game:show() return KJIT_CW_SCORE end
      local g = setmetatable({}, Game)
      return function(n)
        local s = 0
        for _ = 1, n do g:update(1); s = s + g:show() end
        return s
      end
    end
    local want = make()(5)
    eq(kjit.jit(make())(5), want)
    eq(KJIT_CW_SCORE, 5)
  end)
  -- the reader compiled and called before the writer compiles
  KJIT_CW_HITS = 1
  local get = kjit.jit(function() return KJIT_CW_HITS end)
  eq(get(), 1)
  kjit.jit(function(k) KJIT_CW_HITS = KJIT_CW_HITS + k end)(4)
  eq(get(), 5)
end)
