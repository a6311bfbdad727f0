-- Differential tests for the speed work on method calls (issue 29, the
-- methods branch): a call of a Lua function value that runs compiled
-- passes its results straight back (luacall.c call_lua, jit.c
-- kd_run_direct_to), and a field absent from a table is looked for along
-- __index tables without the Lua API (luatable.c index_chain). The
-- interpreted function is the specification: results with their subtypes,
-- table state, errors with file:line. Each block runs with callees
-- compiled ("all") and interpreted ("none"): both paths of call_lua.
local T = require "tablediff"
local kjit = require "kjit"
local testing = require "kjit.testing"

local function compiled_count() return select(2, testing.callees()) end

-- body under both callee modes; with "all", at least `want` callee
-- specializations must be made (so that nothing passes by running
-- interpreted)
local function both(want, body)
  for _, m in ipairs { "all", "none" } do
    local old = testing.callees(m)
    local before = compiled_count()
    local ok, err = pcall(body, m)
    testing.callees(old)
    if not ok then error(err, 0) end
    if m == "all" and want then
      truthy(compiled_count() - before >= want,
             "callees compiled: " .. (compiled_count() - before) .. ", wanted " .. want)
    end
  end
end

local Base = {}
Base.__index = Base
function Base:kind() return "base" end
function Base:area() return self.w * self.h end
local Rect = setmetatable({}, Base)
Rect.__index = Rect
function Rect:kind() return "rect" end
function Rect:scaled(s) return self.w * s, self.h * s end
local function rect(w, h) return setmetatable({ w = w, h = h }, Rect) end

test("methods along a chain of __index tables: the nearest one wins", function()
  both(2, function()
    T.check(function(r, n)
      local s = 0
      for _ = 1, n do s = s + r:area() end
      return s, r:kind(), r:scaled(2), math.type(r:area())
    end, function() return rect(3, 4), 5 end)
    -- a method defined on the object itself hides the class's
    local function own() return "own" end
    T.check(function(r) return r:kind(), r:area() end, function()
      local r = rect(2, 0.5)
      r.kind = own
      return r
    end)
  end)
end)

test("fields absent from a table: nil without a metatable, without __index, and through them", function()
  both(nil, function()
    T.check(function(t, u, v) return t.missing, u.missing, v.missing, v.w end,
            function() return {}, setmetatable({}, {}), rect(1, 2) end)
    -- __index holds a string: indexed as Lua indexes it (string methods)
    T.check(function(t) return t.missing, t.len ~= nil end,
            function() return setmetatable({}, { __index = "abc" }) end)
    -- a field present with a false value ends the walk
    T.check(function(t) return t.flag, t.other end, function()
      local C = { flag = true, other = 1 }
      C.__index = C
      return setmetatable({ flag = false }, C)
    end)
    -- an __index function on the way runs
    local function bang(_, k) return k .. "!" end
    T.check(function(t) return t.deep, t.w end, function()
      local F = setmetatable({}, { __index = bang })
      local C = setmetatable({ w = 7 }, { __index = F })
      return setmetatable({}, { __index = C })
    end)
  end)
end)

test("a chain deeper than the fast walk goes on through Lua", function()
  both(nil, function()
    T.check(function(t) return t.top, t.mid end, function()
      local c = { top = "top" }
      for i = 1, 12 do
        c.__index = c
        c = setmetatable({ ["l" .. i] = i }, c)
        if i == 6 then c.mid = 6.5 end
      end
      return c
    end)
  end)
end)

test("a method replaced between calls: the next call finds the new one", function()
  both(2, function()
    local f = kjit.jit(function(r) return r:area() end)
    local r = rect(2, 3)
    eq(f(r), 6)
    local old = Base.area
    Base.area = function(self) return self.w + self.h end
    local ok, v = pcall(f, r)
    Base.area = old
    truthy(ok, v)
    eq(v, 5)
    Rect.area = function() return "rect's" end
    ok, v = pcall(f, r)
    Rect.area = nil
    truthy(ok, v)
    eq(v, "rect's")
    eq(f(r), 6)
  end)
end)

local V = {}
V.__index = V
function V:none() self.n = (self.n or 0) + 1 end
function V:one() return self.x end
function V:two() return self.x, self.y end
function V:flag() return self.x > 1 end
function V:maybe() if self.x > 1 then return self.x end end
function V:text() return "v" .. self.x end
function V:same() return self end
local function v(x, y) return setmetatable({ x = x, y = y }, V) end

test("results of compiled callees: as many as wanted, of every kind", function()
  both(6, function()
    T.check(function(o)
      o:none()
      local a, b, c = o:one()
      local d, e = o:two()
      local f, g, h = o:two()
      return a, b, c, d, e, f, g, h, o.n
    end, function() return v(1, 2.5) end)
    T.check(function(o, p)
      local s = 0
      for _ = 1, 3 do if o:flag() then s = s + 1 end end
      return s, o:flag(), p:flag(), o:maybe(), p:maybe(), o:text(), o:same() == o
    end, function() return v(2, 0), v(0.5, 0) end)
  end)
end)

test("errors raised by compiled callees name the callee's line", function()
  both(1, function()
    local C = {}
    C.__index = C
    function C:get(i) return self.items[i] + 1 end
    T.check_error("attempt to perform arithmetic on a nil value", function(o, n)
      local s = 0
      for i = 1, n do s = s + o:get(i) end
      return s
    end, function() return setmetatable({ items = { 1, 2 } }, C), 3 end)
    local f = kjit.jit(function(o) return o:get(3) end)
    local ok, err = pcall(f, setmetatable({ items = {} }, C))
    truthy(not ok and err:find("test_methods.lua:%d+: attempt to perform arithmetic"), err)
  end)
end)

test("a collection at every allocation while compiled methods make and return tables", function()
  both(1, function()
    local P = {}
    P.__index = P
    function P:moved(d) return { x = self.x + d, tag = "p" .. d } end
    collectgarbage("generational", 0, 0)
    local ok, err = pcall(T.check, function(p, n)
      local last
      for i = 1, n do last = p:moved(i) end
      return last.x, last.tag
    end, function() return setmetatable({ x = 1 }, P), 50 end)
    collectgarbage("incremental", 200, 100, 13)
    collectgarbage("collect")
    truthy(ok, err)
  end)
end)

test("frozen upvalues of a compiled callee checked in place: every kind of value, changed or not", function()
  local testing_mode = testing.callees("all")
  local ok, err = pcall(function()
    local k, name, flag, opt, tab = 1, "a", true, nil, { w = 2 }
    local C = {}
    C.__index = C
    function C:get(n)
      local s = 0
      for i = 1, n do s = s + i * k end
      if flag then s = s + 1 end
      if opt then s = s + opt end
      return s + tab.w, name, math.type(k)
    end
    local o = setmetatable({}, C)
    local g = kjit.jit(function(o, n) return o:get(n) end)
    local function check(what)
      local a, b, c = g(o, 3)
      local x, y, z = o:get(3)
      truthy(same_value(a, x) and b == y and c == z,
             what .. ": compiled " .. tostring(a) .. " " .. tostring(b) .. " " .. tostring(c) ..
             ", interpreted " .. tostring(x) .. " " .. tostring(y) .. " " .. tostring(z))
    end
    check("first")
    check("unchanged")
    k = 1.0; check("an integer made the equal float")   -- raw equal, another subtype
    k = 1; check("back")
    name = "b"; check("a string")
    flag = false; check("a boolean")
    opt = 0.5; check("nil made a number")
    tab = { w = 3 }; check("another table")
    opt = nil; check("back to nil")
  end)
  testing.callees(testing_mode)
  if not ok then error(err, 0) end
end)

-- The class pattern with the class in an upvalue: `setmetatable(o, Class)`
-- passes the frozen class table on as itself (cg_callvalue.c
-- cg_fn_boxconst), so the object's metatable is the real class, and so is
-- a table stored or returned; compared with the interpreter key by key.
test("setmetatable({...}, Class) with Class an upvalue, stored and returned", function()
  local Vec = {}
  Vec.__index = Vec
  Vec.__add = function(a, b) return setmetatable({ x = a.x + b.x, y = a.y + b.y }, Vec) end
  function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
  function Vec:dot(o) return self.x * o.x + self.y * o.y end
  local CFG = { scale = 2 }
  local function walk(n, out)
    local acc = Vec.new(0, 0)
    for i = 1, n do acc = acc + Vec.new(i, i * 0.5) end
    out.class = Vec
    out.cfg = CFG
    out.last = acc
    return acc:dot(Vec.new(1, 1)), getmetatable(acc) == Vec, rawequal(out.cfg, CFG), acc
  end
  for _, callees in ipairs({ "loops", "all" }) do
    local old = testing.callees(callees)
    T.check(walk, function() return 5, {} end)
    T.check(walk, function() return 0, { class = 1 } end)
    local r = { kjit.jit(walk)(3, {}) }
    eq(getmetatable(r[4]), Vec, "the real class (" .. callees .. ")")
    testing.callees(old)
  end
  -- in a kernel a table stays refused, located
  local ok, err = pcall(function()
    kjit.cuda.jit(function(a) local o = setmetatable({}, Vec) a[1] = 1 end)[{ 1, 1 }](kjit.zeros(1, "f32"))
  end)
  eq(ok, false, "a kernel refuses it")
end)
