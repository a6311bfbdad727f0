-- Differential tests for the native calls of sites whose values go on
-- (runtime/luacall.c native_call's counts): an open call passing its one
-- value (`math.sqrt(p:dot(q))`), a return of a call (`return p:m(q)`),
-- an open call adjusted to a compiled function's parameters (`g(p:two())`)
-- and a call spread into another call of a value (`p:add(q:scale(2))`,
-- kjit_lc_call_spread: the outer callee now runs compiled too). The
-- interpreted function is the specification: each scenario runs once
-- interpreted and once compiled, under the callee policies "all" and the
-- default "leaves" (and "none"), and the logs of results, subtypes and
-- error messages with their file:line must agree while callees are
-- replaced mid-run, classes swapped, methods turned into C functions or
-- callable tables, and result counts change. A fact: such sites make
-- native calls (kjit.testing.callees' third value). Also run through the
-- Lua API only (lua.test_callsite_open_api: KJIT_NO_STACK_READS=1).
local kjit = require "kjit"
local testing = require "kjit.testing"
local H = require "calls_harness"
local differential, class = H.differential, H.class
local stack_reads = os.getenv("KJIT_NO_STACK_READS") == nil

local function native_calls() return (select(3, testing.callees())) end

-- body() under each callee policy; native calls wanted under "all" where
-- the stack is read in place (want: true)
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

-- How many native calls a compiled loop of n turns makes, after a first
-- run of 10 (which compiles); body(p, q, n) is the loop.
local function native_in(body, p, q)
  local old = testing.callees("all")
  local f = kjit.jit(body)
  local ok, err = pcall(function()
    f(p, q, 10)
    local before = native_calls()
    f(p, q, 1000)
    return native_calls() - before
  end)
  testing.callees(old)
  if not ok then error(err, 0) end
  return err
end

test("open calls, returns and spread calls are native (a fact: the count)", function()
  local C = class()
  function C:add(o) return setmetatable({ x = self.x + o.x, y = self.y + o.y }, C) end
  function C:scale(k) return setmetatable({ x = self.x * k, y = self.y * k }, C) end
  function C:len2() return self:dot(self) end                        -- a return
  local p, q = setmetatable({ x = 1, y = 2 }, C), setmetatable({ x = 0.5, y = 4 }, C)
  local open = native_in(function(p, q, n)
    local s = 0
    for _ = 1, n do s = s + math.sqrt(p:dot(q)) end                  -- an open call's value
    return s
  end, p, q)
  local ret = native_in(function(p, q, n)
    local s = 0
    for _ = 1, n do s = s + p:len2() end                             -- len2's return of dot
    return s
  end, p, q)
  local spread = native_in(function(p, q, n)
    local r = p
    for _ = 1, n do r = p:add(q:scale(0.5)) end                      -- add compiled, scale native
    return r.x
  end, p, q)
  if stack_reads then
    truthy(open >= 999, "open calls native: " .. open)
    truthy(ret >= 999, "returns native: " .. ret)   -- (len2's own return: its count is open)
    truthy(spread >= 999, "spread calls' outer callees native: " .. spread)
  else
    eq(open + ret + spread, 0, "no native calls without stack reads")
  end
end)

test("an open call's one value: callee replaced, nil, class swapped, C function, callable", function()
  modes(function()
    differential(function()
      local C = class()
      local a, b = setmetatable({ x = 3, y = 4 }, C), setmetatable({ x = 0.5, y = 2 }, C)
      local function f(p, q, n)
        local s = 0
        for _ = 1, n do s = s + math.abs(p:dot(q)) end
        return s, tostring(p:dot(q))
      end
      return f, function(run)
        run(a, b, 3)
        run(a, b, 3)
        function C:dot(o) return self.x - o.x end                      -- replaced
        run(a, b, 3)
        function C:dot(o) return 7 end                                 -- an integer now
        run(a, b, 3)
        function C:dot(o) return nil end                               -- abs(nil): its error
        run(a, b, 3)
        local D = class()
        function D:dot(o) return -self.y end
        setmetatable(a, D)                                             -- another class
        run(a, b, 3)
        D.dot = math.floor                                             -- a C function: floor(a, b)
        a.x = 2.5
        run(a, b, 2)
        D.dot = setmetatable({}, { __call = function(_, s, o) return s.x * 10 end })
        run(a, b, 2)                                                   -- a callable table
        D.dot = 5
        run(a, b, 2)                                                   -- not callable
      end
    end)
  end, true)
end)

test("a return of a call: results 1, 2, 0; replaced mid-run; errors at levels 1 and 3", function()
  modes(function()
    differential(function()
      local C = class()
      function C:m(k) return self.x * k end
      function C:via(k) return self:m(k) end                            -- a return of a value call
      local a = setmetatable({ x = 2, y = 1 }, C)
      local function f(p, n)
        local s = 0
        for k = 1, n do s = s + (p:via(k) or 0) end
        local u, v = p:via(n)
        return s, u, v
      end
      return f, function(run)
        run(a, 3)
        run(a, 3)
        function C:m(k) return self.x + k, k end                        -- two results
        run(a, 3)
        function C:m(k) end                                            -- none
        run(a, 3)
        function C:m(k) return self.x * k end
        run(a, 4)
        function C:m(k) if k > 2 then error("big " .. k) end return k end        -- level 1
        run(a, 4)
        -- (not level 2: after via's tail call the interpreter names f's line,
        -- compiled code via's: docs/differences.md item 6, as before)
        function C:m(k) if k > 2 then error("above " .. k, 3) end return k end   -- level 3
        run(a, 4)
        function C:m(k) return self.y.z end                             -- indexing a number
        run(a, 2)
        C.m = math.max                                                 -- a C function
        run(a, 2)
      end
    end)
  end, true)
end)

test("an open call adjusted to a compiled function's parameters: fewer, more, nil", function()
  modes(function()
    differential(function()
      local C = class()
      function C:two(k) return self.x * k, k end
      local function g(u, v) return u + (v or 100) end
      local a = setmetatable({ x = 3, y = 1 }, C)
      local function f(p, n)
        local s = 0
        for k = 1, n do s = s + g(p:two(k)) end
        return s
      end
      return f, function(run)
        run(a, 3)
        run(a, 3)
        function C:two(k) return self.x end                             -- one: v nil
        run(a, 3)
        function C:two(k) return k, k, k end                            -- three: adjusted
        run(a, 3)
        function C:two(k) return 1.5, 2 end
        run(a, 3)
        function C:two(k) error("in two " .. k, 2) end
        run(a, 3)
      end
    end)
  end, true)
end)

test("a call spread into a call of a value: outer and inner replaced, C, callable, errors", function()
  modes(function()
    differential(function()
      local C = class()
      function C:add(o, w) return setmetatable({ x = self.x + o.x, y = self.y + (w or o.y) }, C) end
      function C:scale(k) return setmetatable({ x = self.x * k, y = self.y * k }, C) end
      local a, b = setmetatable({ x = 1, y = 2 }, C), setmetatable({ x = 0.5, y = 4 }, C)
      local function f(p, q, n)
        local r = p
        for k = 1, n do r = r:add(q:scale(k)) end
        return r.x, r.y
      end
      return f, function(run)
        run(a, b, 3)
        run(a, b, 3)
        function C:scale(k) return self, k end                          -- two values: w = k
        run(a, b, 3)
        function C:scale(k) end                                        -- none: o nil, add's error
        run(a, b, 3)
        function C:scale(k) return setmetatable({ x = k, y = 1.5 }, C) end
        run(a, b, 3)
        function C:add(o) return setmetatable({ x = self.x - o.x, y = o.y }, C) end  -- outer
        run(a, b, 3)
        function C:add(o) if o.x > 2 then error("too far " .. o.x, 2) end return self end
        run(a, b, 3)                                                   -- level 2 from the outer
        function C:scale(k) if k > 1 then error("inner " .. k, 2) end return self end
        run(a, b, 3)                                                   -- level 2 from the inner
        function C:scale(k) return k, k + 1 end
        C.add = math.max                                               -- a C function outer
        run(a, b, 3)
        C.add = setmetatable({}, { __call = function(_, s, u, v) return setmetatable({ x = u, y = v }, C) end })
        run(a, b, 3)                                                   -- a callable table outer
        C.add = nil
        run(a, b, 1)                                                   -- not callable
      end
    end)
  end, true)
end)

test("tail recursion through returns and deep recursion through open calls", function()
  modes(function()
    differential(function()
      local C = class()
      function C:down(n)                                               -- a proper tail call
        if n == 0 then return self.x end
        return self:down(n - 1)
      end
      function C:deep(n)                                               -- an open call's value
        if n == 0 then return self.x end
        return math.abs(self:deep(n - 1))
      end
      local a = setmetatable({ x = 0.5 }, C)
      local function f(p, n, m) return p:down(n), p:deep(m) end
      return f, function(run, note, call)
        run(a, 10, 10)
        run(a, 10, 10)
        run(a, 200000, 3000)                                           -- past the C stack's room
        local ok, err = pcall(call, a, 1, 1000000)
        note(ok)
        note(tostring(err):find("stack overflow", 1, true) ~= nil)
        run(a, 20, 20)
      end
    end)
  end)
end)

test("a collection at every allocation while sites make tables and pass them on", function()
  collectgarbage("generational", 0, 0)
  local ok, err = pcall(modes, function()
    differential(function()
      local C = class()
      function C:add(o) return setmetatable({ x = self.x + o.x, y = self.y + o.y, tag = "v" }, C) end
      function C:scale(k) return setmetatable({ x = self.x * k, y = self.y * k }, C) end
      function C:len() return math.sqrt(self:dot(self)) end
      function C:twice() return self:add(self) end
      local a, b = setmetatable({ x = 1, y = 2 }, C), setmetatable({ x = 0.5, y = 4 }, C)
      local function f(p, q, n)
        local r, s = p, 0
        for k = 1, n do
          r = r:add(q:scale(1 / k)):twice()
          s = s + r:len()
        end
        return s, r.tag
      end
      return f, function(run)
        run(a, b, 20)
        run(a, b, 20)
      end
    end)
  end, true)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  if not ok then error(err, 0) end
end)
