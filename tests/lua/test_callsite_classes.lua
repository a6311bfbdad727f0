-- Differential tests for a call site's second native callee
-- (runtime/callsite.h KlcSite.fill2, host/callval.c fill_site): a method
-- call over objects of two classes (ray's `c:intersect` over spheres and
-- groups) calls both compiled methods natively; a third class, a method
-- replaced in one class, a class swapped under an object, a method turned
-- into a C function or a callable table each send the call where Lua
-- sends it. The interpreted function is the specification: each scenario
-- runs once interpreted and once compiled, under the callee policies
-- "all", "leaves" and "none", and the logs of results, subtypes and
-- errors with file:line must agree. A fact: the alternating site is
-- native for both classes (kjit.testing.callees' third value). Also run
-- through the Lua API only (lua.test_callsite_classes_api).
local kjit = require "kjit"
local testing = require "kjit.testing"
local H = require "calls_harness"
local differential = H.differential
local stack_reads = os.getenv("KJIT_NO_STACK_READS") == nil

local function native_calls() return (select(3, testing.callees())) end

local function modes(body, want)
  for _, m in ipairs { "all", "leaves", "none" } do
    local old = testing.callees(m)
    local before = native_calls()
    local ok, err = pcall(body, m)
    local made = native_calls() - before
    testing.callees(old)
    if not ok then error(m .. ": " .. tostring(err), 0) end
    if want and m == "all" and stack_reads then truthy(made > 0, "native calls under \"all\"") end
    if m == "none" then eq(made, 0, "no native calls with no callee compiled") end
  end
end

-- Two classes with a method `area` of their own, a list alternating them,
-- and a loop summing o:area(k) over the list n times.
local function shapes()
  local Sq, Ci = {}, {}
  Sq.__index, Ci.__index = Sq, Ci
  function Sq:area(k) return self.s * self.s * k end
  function Ci:area(k) return 3 * self.r * self.r * k end
  local list = {}
  for i = 1, 6 do
    list[i] = i % 2 == 1 and setmetatable({ s = i }, Sq) or setmetatable({ r = i * 0.5 }, Ci)
  end
  local function f(l, n)
    local s = 0
    for k = 1, n do
      for i = 1, #l do s = s + l[i]:area(k) end
    end
    return s
  end
  return Sq, Ci, list, f
end

test("a site over two classes calls both methods natively (a fact: the count)", function()
  local _, _, list, body = shapes()
  local old = testing.callees("all")
  local f = kjit.jit(body)
  local ok, made = pcall(function()
    f(list, 2)
    local before = native_calls()
    eq(f(list, 100), body(list, 100))
    return native_calls() - before
  end)
  testing.callees(old)
  if not ok then error(made, 0) end
  if stack_reads then truthy(made >= 600, "native calls at the two-class site: " .. made)
  else eq(made, 0, "no native calls without stack reads") end
end)

test("a third class, methods replaced, classes swapped, C functions and callables", function()
  modes(function()
    differential(function()
      local Sq, Ci, list, f = shapes()
      return f, function(run)
        run(list, 3)
        run(list, 3)
        function Ci:area(k) return self.r + k end                     -- one class's method replaced
        run(list, 3)
        local Tr = { __index = {} }
        function Tr.__index:area(k) return -k end
        list[3] = setmetatable({}, Tr)                                 -- a third class
        run(list, 3)
        setmetatable(list[1], Ci)                                      -- a class swapped: Ci's method
        list[1].r = 2.5
        run(list, 3)
        Sq.area = math.max                                             -- a C function: max(o, k)
        run(list, 3)
        function Sq:area(k) return k * 0.5 end
        Ci.area = setmetatable({}, { __call = function(_, o, k) return k * 10 end })
        run(list, 3)                                                   -- a callable table
        list[2].area = function(o, k) return 1000 end                  -- the object's own field
        run(list, 3)
        function Sq:area(k) if k > 2 then error("square " .. k, 2) end return k end
        run(list, 3)                                                   -- error level 2
        function Sq:area(k) return self.nope.x end
        run(list, 3)                                                   -- indexing nil: its line
        Sq.area = nil
        run(list, 1)                                                   -- not callable
      end
    end)
  end, true)
end)

test("two classes whose methods take other argument kinds at one site", function()
  modes(function()
    differential(function()
      local A, B = {}, {}
      A.__index, B.__index = A, B
      function A:m(x) return self.v + x end
      function B:m(x) return self.v * x end
      local l = { setmetatable({ v = 1 }, A), setmetatable({ v = 2.5 }, B) }
      local function f(l, x, n)
        local s = 0
        for _ = 1, n do for i = 1, #l do s = s + l[i]:m(x) end end
        return s
      end
      return f, function(run)
        run(l, 2, 3)
        run(l, 2, 3)
        run(l, 0.5, 3)                                                 -- a float: other kinds
        run(l, 2, 3)
        l[1].v = 1.25
        run(l, 3, 3)
        run(l, { 1 }, 1)                                               -- a table: the error
        run(l, 2 ^ 62, 2)
      end
    end)
  end, true)
end)
