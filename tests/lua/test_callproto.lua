-- Differential tests for the call protocol of compiled calls of methods and
-- function values (issue 29, the speed of object-style code): the method
-- lookup's per-site hints (runtime/luatable.c kjit_lt_smethod) and the
-- direct call of a compiled callee from the site's inline cache
-- (runtime/luacall.c, host/callval.c). The interpreted function is the
-- specification: each scenario runs the same steps (calls with changes to
-- classes, metatables and objects between them) once with the function
-- interpreted and once compiled, and the logs of results, subtypes and
-- error messages must agree. Each runs with every callee compiled ("all"),
-- with the default policy ("leaves") and with none ("none"), so both the
-- compiled callee and the interpreted one stand behind the lookup. Also run through the Lua API only
-- (lua.test_callproto_api: KJIT_NO_STACK_READS=1).
local kjit = require "kjit"
local testing = require "kjit.testing"

-- the two passes, interpreted and compiled, and their logs compared
local differential = require("calls_harness").differential

-- body with every callee compiled, then with none; under "all" some
-- callee must have compiled (none passes by running them interpreted)
local function modes(body, nocallees)
  for _, m in ipairs { "all", "leaves", "none" } do
    local old = testing.callees(m)
    local before = select(2, testing.callees())
    local ok, err = pcall(body, m)
    local made = select(2, testing.callees()) - before
    testing.callees(old)
    if not ok then error(m .. ": " .. tostring(err), 0) end
    if m == "all" and not nocallees then truthy(made > 0, "callees compiled under \"all\"") end
  end
end

local class = require("calls_harness").class
local dot_pair = require("calls_harness").dot_pair

test("a method's lookup sees a replaced method, an own field, a new metatable", function()
  modes(function()
    differential(function()
      local C = class()
      local a, b, f = dot_pair(C)
      return f, function(run)
        run(a, b, 3)
        run(a, b, 3)
        function C:dot(o) return self.x - o.x end       -- the method replaced
        run(a, b, 2)
        a.dot = function(self, o) return 100 end        -- the object's own field shadows it
        run(a, b, 2)
        a.dot = nil
        run(a, b, 2)
        local D = class()
        function D:dot(o) return -1 end
        setmetatable(a, D)                             -- another class
        run(a, b, 2)
        setmetatable(a, C)
        run(a, b, 2)
        C.dot = nil                                    -- gone: Lua's error, with the line
        run(a, b, 1)
        C.dot = function(self, o) return self.y end
        run(a, b, 1)
      end
    end)
  end)
end)

test("a method's lookup sees __index changed: a function, another table, nil, a chain", function()
  modes(function()
    differential(function()
      local C = class()
      local a = setmetatable({ x = 2, y = 3 }, C)
      local function f(p) return p:dot(p), p.x end
      return f, function(run)
        run(a)
        local Other = { dot = function(self, o) return 7.5 end }
        C.__index = Other                              -- another table
        run(a)
        C.__index = function(t, k)                     -- a function
          if k == "dot" then return function() return "from __index" end end
        end
        run(a)
        C.__index = nil                                -- no __index: calling nil
        run(a)
        local Base = { dot = function() return "base" end }
        Base.__index = Base
        local Mid = setmetatable({}, Base)
        Mid.__index = Mid
        C.__index = Mid                                -- a chain of two classes
        run(a)
        Mid.dot = function() return "mid" end
        run(a)
        C.__index = C
        run(a)
      end
    end)
  end)
end)

test("a method's lookup survives rehashes of the object, the metatable and the class", function()
  modes(function()
    differential(function()
      local C = class()
      local a = setmetatable({ x = 1, y = 1 }, C)
      local function f(p, q) return p:dot(q) end
      return f, function(run)
        run(a, a)
        for i = 1, 40 do a["k" .. i] = i end           -- the object's nodes move
        run(a, a)
        for i = 1, 40 do C["m" .. i] = function() return i end end   -- the class's
        run(a, a)
        for i = 1, 40 do C["m" .. i] = nil end
        local mt = getmetatable(a)
        for i = 1, 20 do mt["__z" .. i] = i end        -- the metatable's (it is C)
        run(a, a)
        C.m7 = function(self) return self.x end
        run(a, a)
        for i = 1, 40 do a["k" .. i] = nil end
        a.y = 2.5
        run(a, a)
      end
    end)
  end)
end)

test("one site, objects of several classes, and values that are not tables", function()
  modes(function()
    differential(function()
      local C, D = class(), class()
      function D:dot(o) return "D" .. o.x end
      local list = { setmetatable({ x = 1, y = 2 }, C), setmetatable({ x = 3, y = 4 }, D),
                     setmetatable({ x = 5.5, y = 6 }, C), setmetatable({ x = 7, y = 8, dot =
                     function() return "own" end }, C) }
      local function f(t, q)
        local r = {}
        for i = 1, #t do r[i] = t[i]:dot(q) end
        return r[1], r[2], r[3], r[4], #r
      end
      return f, function(run)
        local q = setmetatable({ x = 2, y = 0.5 }, C)
        run(list, q)
        run(list, q)
        list[5] = "str"                                -- a string: its own metatable, no dot
        run(list, q)
        list[5] = 5                                    -- a number: indexing it
        run(list, q)
        list[5] = nil
        run(list, q)
      end
    end)
  end)
end)

test("class defaults read through __index: numbers, strings, tables", function()
  modes(function()
    differential(function()
      local C = class()
      C.k, C.name, C.cfg = 3, "c", { w = 2 }
      local a = setmetatable({}, C)
      local function f(p, n)
        local s = 0
        for i = 1, n do s = s + p.k * i + p.cfg.w end
        return s, p.name, math.type(p.k)
      end
      return f, function(run)
        run(a, 3)
        C.k = 1.5
        run(a, 3)
        a.k = 10
        run(a, 3)
        a.k = nil
        C.cfg = { w = 0.25 }
        run(a, 3)
        C.k = "x"
        run(a, 1)
      end
    end)
  end, "no calls")
end)

test("a collection at every allocation while methods are looked up and called", function()
  modes(function()
    collectgarbage("generational", 0, 0)
    local ok, err = pcall(differential, function()
      local C = class()
      function C:moved(d) return setmetatable({ x = self.x + d, y = self.y }, C) end
      local a = setmetatable({ x = 1, y = 2 }, C)
      local function f(p, n)
        local s = 0
        for i = 1, n do
          local q = p:moved(i)
          s = s + q:dot(p)
        end
        return s
      end
      return f, function(run)
        run(a, 20)
        function C:dot(o) return self.x end
        run(a, 20)
      end
    end)
    collectgarbage("incremental", 200, 100, 13)
    collectgarbage("collect")
    truthy(ok, err)
  end)
end)

test("compiled callees run directly: results of every kind, errors and their levels", function()
  modes(function()
    differential(function()
      local C = class()
      function C:pair(k) return self.x * k, { k = k }, "s" .. k end
      function C:pick(k) if k > 2 then return self.x end return nil end
      function C:boom(k)
        local s = 0
        for i = 1, k do s = s + i * self.x end
        if s > 20 then error("too big " .. s, 2) end
        if s > 10 then error({ code = s }) end
        return s
      end
      local a = setmetatable({ x = 1.5 }, C)
      local function f(p, k)
        local u, t, s = p:pair(k)
        local r = p:pick(k)
        local ok, e = pcall(p.boom, p, k)
        return u, t.k, s, r, ok, type(e) == "table" and e.code or e, p:boom(1)
      end
      return f, function(run)
        for k = 1, 6 do run(a, k) end
        a.x = 2
        run(a, 3)
        run(a, 30)
      end
    end)
  end)
end)

test("recursion through compiled method calls reaches Lua's own stack overflow", function()
  modes(function()
    differential(function()
      local C = class()
      function C:down(n)
        local s = 0
        for i = 1, 2 do s = s + i end
        if n == 0 then return s end
        return self:down(n - 1) + 1
      end
      local a = setmetatable({}, C)
      local function f(p, n) return p:down(n) end
      return f, function(run, note, call)
        run(a, 10)
        run(a, 150)
        local ok, err = pcall(call, a, 100000)
        note(ok)
        note(tostring(err):find("stack overflow", 1, true) ~= nil)
      end
    end)
  end)
end)

test("the default policy compiles small leaf readers, not callees that call or make tables", function()
  local old = testing.callees()
  truthy(old == "leaves", "the default callee policy is leaves, not " .. tostring(old))
  local C = class()
  function C:len2() return self.x * self.x + self.y * self.y end   -- a leaf reader
  function C:get() return self.x end                                -- no arithmetic
  function C:plus(o) return setmetatable({ x = self.x + o.x, y = 0 }, C) end   -- makes a table
  function C:viaself(o) return self:dot(o) + 1 end                 -- calls a method
  local function count(body)
    local before = select(2, testing.callees())
    body()
    return select(2, testing.callees()) - before
  end
  local a = setmetatable({ x = 3, y = 4 }, C)
  eq(count(function() eq(kjit.jit(function(p) return p:len2() end)(a), 25) end), 1, "len2 compiled")
  eq(count(function() eq(kjit.jit(function(p) return p:get() end)(a), 3) end), 0, "get compiled")
  eq(count(function() eq(kjit.jit(function(p) return p:plus(p).x end)(a), 6) end), 0, "plus compiled")
  eq(count(function() eq(kjit.jit(function(p) return p:viaself(p) end)(a), 26) end), 0,
     "viaself compiled")
end)
