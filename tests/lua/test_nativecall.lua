-- Differential tests for the native call protocol (issue 29): a call site
-- of a function value in compiled code calls the compiled callee it
-- called last at its entry, with native arguments (runtime/luacall.c
-- "Native calls", host/callval.c fill_site). The interpreted function is
-- the specification: each scenario runs the same steps once interpreted
-- and once compiled, under every callee policy ("all", the default
-- "leaves", "none"), and the logs of results, subtypes and error messages
-- must agree; the site must miss exactly when Lua would see another
-- function (a method replaced, a field or upvalue reassigned, another
-- metatable, closures freed and made again at the same address) or other
-- argument kinds. A fact: native calls are made (kjit.testing.callees'
-- third value counts them). Also run through the Lua API only
-- (lua.test_nativecall_api: KJIT_NO_STACK_READS=1, no native calls).
local kjit = require "kjit"
local testing = require "kjit.testing"
local stack_reads = os.getenv("KJIT_NO_STACK_READS") == nil

-- the two passes, interpreted and compiled, and their logs compared
local differential = require("calls_harness").differential

local function native_calls() return (select(3, testing.callees())) end

-- body under each policy; where callees compile and the stack is read in
-- place, some calls must have been native (want: "native" under "all" and
-- "leaves", "native all" under "all": callees that call are not leaves)
local function modes(body, want)
  for _, m in ipairs { "all", "leaves", "none" } do
    local old = testing.callees(m)
    local before = native_calls()
    local ok, err = pcall(body, m)
    local made = native_calls() - before
    testing.callees(old)
    if not ok then error(m .. ": " .. tostring(err), 0) end
    if (want == "native" and m ~= "none" or want == "native all" and m == "all") and stack_reads then
      truthy(made > 0, "native calls under \"" .. m .. "\"")
    end
    if m == "none" then eq(made, 0, "no native calls with no callee compiled") end
  end
end

local class = require("calls_harness").class
local dot_pair = require("calls_harness").dot_pair

-- How much counter() grows over a compiled loop of 1000 calls of a
-- class's method (after a first call of 10, which compiles).
local function during_method_loop(counter)
  local C = class()
  local a, b = setmetatable({ x = 1, y = 2 }, C), setmetatable({ x = 3.5, y = 4 }, C)
  local f = kjit.jit(function(p, q, n)
    local s = 0
    for _ = 1, n do s = s + p:dot(q) end
    return s
  end)
  eq(f(a, b, 10), 115.0)
  local before = counter()
  eq(f(a, b, 1000), 11500.0)
  return counter() - before
end

test("a compiled loop calls a compiled method natively (a fact: the count)", function()
  local made = during_method_loop(native_calls)
  if stack_reads then truthy(made >= 999, "native calls: " .. made)
  else eq(made, 0, "no native calls without stack reads") end
end)

test("the site misses when the method, the metatable or __index changes", function()
  modes(function()
    differential(function()
      local C = class()
      local a, b, f = dot_pair(C)
      return f, function(run)
        run(a, b, 3)
        run(a, b, 3)
        function C:dot(o) return self.x * 2 + o.y end        -- replaced: another closure
        run(a, b, 3)
        a.dot = function(self, o) return self.y * o.x end    -- the object's own field
        run(a, b, 3)
        a.dot = nil
        run(a, b, 3)
        local D = class()
        function D:dot(o) return self.x - o.x end
        setmetatable(a, D)                                   -- another metatable
        run(a, b, 3)
        getmetatable(a).__index = C                          -- __index changed
        run(a, b, 3)
        setmetatable(a, C)
        run(a, b, 3)
      end
    end)
  end, "native")
end)

test("the site misses when a function field or an assigned upvalue is reassigned", function()
  modes(function()
    differential(function()
      local M = {}
      function M.f(x, y) return x * y + 1 end
      local g = function(x, y) return x + y * 0.5 end
      local function f(m, n, k)
        local s = 0
        for i = 1, n do s = s + m.f(i, 2) + g(i, 3) end
        if k == 1 then g = function(x, y) return x - y end end   -- assigned here: live
        return s
      end
      return f, function(run)
        run(M, 4, 0)
        run(M, 4, 0)
        M.f = function(x, y) return x - y * 3 end             -- the field reassigned
        run(M, 4, 0)
        run(M, 4, 1)                                          -- the upvalue reassigned
        run(M, 4, 0)
        M.f = function(x, y) return x // y end
        run(M, 5, 0)
      end
    end)
  end, "native")
end)

test("the site misses when another function assigns an upvalue the callee froze", function()
  modes(function()
    differential(function()
      local k = 2
      local C = class()
      function C:scaled() return self.x * k end     -- k frozen in its code, guarded
      local function setk(v) k = v end
      local a = setmetatable({ x = 1.5 }, C)
      local function f(p, n)
        local s = 0
        for _ = 1, n do s = s + p:scaled() end
        return s
      end
      return f, function(run)
        run(a, 3)
        run(a, 3)
        setk(10)
        run(a, 3)
        setk(0.25)
        run(a, 3)
        setk(2)
        run(a, 3)
      end
    end)
  end, "native")
end)

test("closures freed and made again at one site: never the old one's code", function()
  modes(function()
    differential(function()
      local function make(k)
        local K = { k = k }
        return function(x) return x * K.k + 1 end   -- K: a frozen table upvalue
      end
      local function make2(k)
        return function(x) return x * 2 + k end     -- k: a frozen number upvalue
      end
      local function f(h, n)
        local s = 0
        for i = 1, n do s = s + h(i) end
        return s
      end
      local function plain(x) return x * 3 + 0.5 end
      return f, function(run)
        for k = 1, 12 do
          run(make(k), 3)
          run(make2(k), 3)
          run(function(x) return x * k end, 3)
          collectgarbage("collect")   -- the closures above may die and their memory come back
        end
        run(plain, 3)
        run(plain, 3)
      end
    end)
  end)
end)

test("argument and result kinds change at one site", function()
  modes(function()
    differential(function()
      local V = setmetatable({}, { __mul = function(a, b) return 7 end })
      local C = class()
      function C:scale(k) return self.x * k end
      function C:pair(k) return self.x * k, self.y end
      local function f(p, k)
        local s, t = p:scale(k), 0
        local a, b = p:pair(k)                               -- two results wanted
        local c, d, e = p:scale(k)                           -- more than it gives
        return s, a, b, c, d, e
      end
      return f, function(run)
        local a = setmetatable({ x = 2, y = 0.5 }, C)
        run(a, 3)
        run(a, 3)
        run(a, 1.5)                                          -- a float
        run(a, 2 ^ 53)
        run(a, math.maxinteger)                              -- wraps as integers do
        a.x = 2.5
        run(a, 3)
        a.x = V                                              -- __mul
        run(a, 3)
        a.x = "4"                                            -- a string, coerced
        run(a, 3)
        a.x = {}                                             -- Lua's error, the callee's line
        run(a, 3)
        a.x = 1
        run(a, { 1 })                                        -- a table argument
        run(a, nil)
        run(a, true)
        run(a, 3)
      end
    end)
  end, "native")
end)

test("errors in a natively called callee: its file:line, error levels, error values", function()
  modes(function()
    differential(function()
      local C = class()
      function C:check(k)
        local s = self.x * k
        if s > 20 then error("too big " .. s, 2) end   -- the caller's line
        if s > 10 then error({ code = s }) end         -- a table value
        if s < 0 then error("negative " .. s) end      -- the callee's line
        return s + self.y.z
      end
      local a = setmetatable({ x = 2, y = { z = 1 } }, C)
      local function f(p, n)
        local s = 0
        for k = 1, n do s = s + p:check(k) end
        return s
      end
      return f, function(run, note, call)
        run(a, 3)
        run(a, 3)
        run(a, 8)
        run(a, 12)
        a.x = -1
        run(a, 2)
        a.x = 1
        a.y = 5                                         -- indexing a number
        run(a, 2)
        a.y = { z = 0.5 }
        run(a, 4)
        local ok, e = pcall(call, a, 7)
        note(type(e) == "table" and e.code or e)
      end
    end)
  end, "native all")
end)

test("recursion through natively called methods ends in Lua's stack overflow", function()
  modes(function()
    differential(function()
      local C = class()
      function C:down(n)
        if n == 0 then return self.x end
        return self:down(n - 1) + 1
      end
      local a = setmetatable({ x = 0.5 }, C)
      local function f(p, n) return p:down(n) end
      return f, function(run, note, call)
        run(a, 10)
        run(a, 10)
        run(a, 3000)
        local ok, err = pcall(call, a, 1000000)
        note(ok)
        note(tostring(err):find("stack overflow", 1, true) ~= nil)
        run(a, 20)
      end
    end)
  end)
end)

test("a count hook fires in a natively called callee's loop", function()
  local C = class()
  function C:spin(n)
    local s = 0
    for i = 1, n do s = (s + i * self.x) % 1000 end
    return s
  end
  local a = setmetatable({ x = 3 }, C)
  local f = kjit.jit(function(p, n, m)
    local s = 0
    for _ = 1, m do s = s + p:spin(n) end
    return s
  end)
  local old = testing.callees("all")
  local ok, err = pcall(function()
    eq(f(a, 10, 3), f(a, 10, 3))
    local calls = 0
    debug.sethook(function()
      calls = calls + 1
      if calls == 3 then debug.sethook(); error("stopped", 0) end
    end, "", 1 << 30)
    local ok2, e = pcall(f, a, 1 << 20, 100)
    debug.sethook()
    truthy(not ok2 and e == "stopped", "the hook stopped it: " .. tostring(e))
  end)
  debug.sethook()
  testing.callees(old)
  if not ok then error(err, 0) end
end)

test("a natively called callee that grows the Lua stack (it moves) and gives a table", function()
  modes(function()
    differential(function()
      local C = class()
      local big = {}
      for i = 1, 20000 do big[i] = i % 7 end
      function C:wide(k)
        local n = select('#', table.unpack(big, 1, k))   -- k values on the stack
        return { n = n * self.x }
      end
      local a = setmetatable({ x = 2 }, C)
      local function f(p, k)
        local s = 0
        for i = 1, 3 do s = s + p:wide(k * i).n end
        return s
      end
      return f, function(run)
        run(a, 10)
        run(a, 10)
        run(a, 5000)        -- the stack reallocated under the callee
        run(a, 6000)
        collectgarbage("collect")
        run(a, 10)
      end
    end)
  end, "native all")
end)

-- ---- The class method through kjit_lt_smethod, called by compiled code (cg_lua.c) --------

local function field_helper_calls() return (select(4, testing.callees())) end

test("a class method is read without the field helper in the loop (a fact)", function()
  local made = during_method_loop(field_helper_calls)
  if stack_reads then truthy(made < 5, "field helper calls: " .. made)
  else truthy(made >= 1000, "the helper without stack reads: " .. made) end
end)

test("the method read misses on every change Lua would see", function()
  modes(function()
    differential(function()
      local C = class()
      local Base = { dot = function(self, o) return self.x + o.x + 1000 end }
      local a, b, f = dot_pair(C)
      return f, function(run)
        run(a, b, 3)
        run(a, b, 3)
        rawset(a, "dot", function(self, o) return self.y * o.y end)   -- its own, raw
        run(a, b, 3)
        a.dot = nil                                          -- the key stays, its value nil
        run(a, b, 3)
        rawset(C, "dot", function(self, o) return self.x - o.y end)   -- the class's, raw
        run(a, b, 3)
        C.dot = nil                                          -- not in the class: its metatable's
        setmetatable(C, { __index = Base })
        run(a, b, 3)
        C.dot = class().dot
        run(a, b, 3)
        local D = { dot = function(self, o) return 7 end }
        getmetatable(a).__index = D                          -- __index another table
        run(a, b, 3)
        getmetatable(a).__index = function(t, k)             -- __index a function
          return function(self, o) return #k + self.x end
        end
        run(a, b, 3)
        getmetatable(a).__index = nil                        -- none: calling nil
        run(a, b, 3)
        getmetatable(a).__index = C
        run(a, b, 3)
        setmetatable(a, nil)                                 -- no metatable
        run(a, b, 3)
        setmetatable(a, setmetatable({}, { __index = C }))   -- a metatable without __index
        run(a, b, 3)
        setmetatable(a, { __index = C })                     -- another metatable, same class
        run(a, b, 3)
        C.dot = rawequal                                     -- a C function
        run(a, b, 3)
        C.dot = setmetatable({}, { __call = function(_, self, o) return self.x * 10 end })
        run(a, b, 3)                                         -- a callable table
        C.dot = 5                                            -- not callable
        run(a, b, 3)
        C.dot = class().dot
        run(C, b, 3)                                         -- the class itself (C.x: nil)
        C.x, C.y = 0.5, 0.25
        run(C, b, 3)
        run(a, b, 3)
      end
    end)
  end, "native")
end)

test("the method read over chains, rehashes and names Lua does not intern", function()
  modes(function()
    differential(function()
      local C = class()
      local long = "m" .. string.rep("x", 50)               -- a long string: never inline
      C[long] = function(self, k) return self.x * k end
      local function obj(nfields)
        local o = setmetatable({ x = 2, y = 3 }, C)
        for i = 1, nfields do o["f" .. i] = i end         -- collisions: chains in the node part
        return o
      end
      local function f(p, q, n)
        local s = 0
        for i = 1, n do
          s = s + p:dot(q)
          p["g" .. i] = i                                   -- the object grows: rehashed
        end
        return s + p["m" .. string.rep("x", 50)](p, 2)
      end
      return f, function(run)
        for _, nf in ipairs { 0, 1, 3, 7, 15, 40 } do
          local p, q = obj(nf), obj(nf + 1)
          run(p, q, 5)
          run(p, q, 40)
          p.dot = function(self, o) return -1 end            -- own field among many
          run(p, q, 5)
        end
        local p = obj(20)
        setmetatable(p, p)                                   -- its own metatable
        p.__index = C
        run(p, obj(2), 10)
        p.__index = p                                        -- __index itself: a loop of one
        p.dot = nil
        run(p, obj(2), 1)
      end
    end)
  end, "native")
end)

-- ---- A generic for's iterator call natively (luatfor.c) ---------------------------------

test("a closure iterator is called natively, its nil ending the loop", function()
  modes(function()
    differential(function()
      local function range(t)
        local y = 0
        return function(s, x)
          x = x + 1
          if x > s.n then
            x = 1
            y = y + 1
            if y > s.m then return nil, nil end
          end
          return x, y * s.k
        end, t, 0
      end
      local function falsy(s, x)                            -- false does not end a for
        if x >= s.n then return nil end
        if x % 3 == 0 then return x + 1, false end
        return x + 1, x * 0.5
      end
      local function f(t)
        local s, c = 0, 0
        for x, y in range(t) do s = s + x * y end
        for x, y in falsy, t, 0 do
          c = c + x
          if y == false then c = c + 100 end
        end
        return s, c
      end
      return f, function(run)
        local t = { n = 4, m = 3, k = 2 }
        run(t)
        run(t)
        t.k = 0.5                                            -- float values
        run(t)
        t.k = "x"                                            -- an error inside, located
        run(t)
        t.k = 3
        t.m = 0
        run(t)
        run(t)
      end
    end)
  end, "native")
end)

-- ---- Sites released with the caller's code (callval.c kcv_code_freed) -----------------

test("closures called from a freed specialization are collected", function()
  local weak = setmetatable({}, { __mode = "k" })
  local function round(k)
    local C = class()
    function C:dot(o) return self.x * o.x + k end
    local a, b = setmetatable({ x = 1, y = 2 }, C), setmetatable({ x = 3.5, y = 4 }, C)
    local g = function(x) return x * k + 1 end
    local function it(s, i) if i < s.n then return i + 1 end return nil end
    weak[C.dot], weak[g], weak[it] = true, true, true
    local f = kjit.jit(function(p, q, t, n)
      local s = 0
      for _ = 1, n do s = s + p:dot(q) + t.g(2) end
      for i in t.it, t, 0 do s = s + i end
      return s
    end)
    local before = native_calls()
    local t = { g = g, n = 3, it = it }
    eq(f(a, b, t, 10), f.lua(a, b, t, 10))
    eq(f(a, b, t, 10), f.lua(a, b, t, 10))
    return native_calls() - before
  end
  local made = 0
  for k = 1, 20 do made = made + round(k) end
  for _ = 1, 4 do collectgarbage("collect") end
  local alive = 0
  for _ in pairs(weak) do alive = alive + 1 end
  if stack_reads then truthy(made > 0, "native calls made: " .. made) end
  eq(alive, 0, "closures still alive")
end)
