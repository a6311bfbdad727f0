-- Differential tests for the cheaper call paths of function values
-- (runtime/luacall.c, host/callval.c, codegen/cg_callvalue.c): the
-- trampoline with fixed parameters (a call whose argument count is fixed),
-- a site that remembers the closure it leaves interpreted (no hook), and
-- the native call made by the caller's own code (native_inline). The
-- interpreted function is the specification: each scenario runs once
-- interpreted and once compiled, under every callee policy ("all", the
-- default "leaves", "none"), and the logs of results, subtypes and error
-- messages must agree. Also run through the Lua API only
-- (lua.test_callpath_api: KJIT_NO_STACK_READS=1: no native calls, no
-- interpreted-site marks) and with the inline native calls on
-- (lua.test_callpath_inline: KJIT_INLINE_CALLS=1).
local kjit = require "kjit"
local testing = require "kjit.testing"
local H = require "calls_harness"
local G = require "gc_harness"
local differential = H.differential
local stack_reads = os.getenv("KJIT_NO_STACK_READS") == nil
-- KJIT_INLINE_CALLS=1 (lua.test_callpath_inline): hot sites make their
-- native calls inline (codegen/cg_callvalue.c native_inline)
local inline_calls = os.getenv("KJIT_INLINE_CALLS") == "1"

local function native_calls() return (select(3, testing.callees())) end

-- body(mode) under each callee policy, the policy put back after it
local function modes(body)
  for _, m in ipairs { "all", "leaves", "none" } do
    local old = testing.callees(m)
    local ok, err = pcall(body, m)
    testing.callees(old)
    if not ok then error(m .. ": " .. tostring(err), 0) end
  end
end

-- The loop every scenario compiles: t.f called n times with (i, k), its
-- results summed (a hot site: in a loop).
local function sum_loop(t, n, k)
  local s = 0
  for i = 1, n do s = s + t.f(i, k) end
  return s
end

test("argument counts: a vararg callee sees every argument, trailing nils too; fewer or more parameters", function()
  modes(function()
    differential(function()
      local t = {}
      local function f(t, n)
        local s = 0
        for i = 1, n do
          local a, b = t.f(i, nil, nil), t.g(i)
          s = s + a + b
        end
        return s
      end
      return f, function(run)
        t.f = function(...) return select('#', ...) end
        t.g = function(a, b, c) return c == nil and a or -1 end
        run(t, 5)
        t.f = function(a) return a end                 -- fewer parameters than arguments
        t.g = function(...) return select('#', ...) * 10 end
        run(t, 5)
        t.f = function(a, b, c, d) return d == nil and b == nil and 2 or 0 end
        run(t, 5)
        -- a callee that makes an array runs as its native function (the
        -- hook's, for the arguments before the trailing nils), which the
        -- trampoline then passes the nils too
        t.f = function(n, b, c)
          local a = kjit.zeros(n)
          for i = 1, n do a[i] = i end
          return (b == nil and c == nil) and a[n] or -1
        end
        run(t, 5)
      end
    end)
  end)
end)

test("errors raised in the callee: its file:line, error(msg, 2) at the call's line, a C callee's argument error", function()
  modes(function()
    differential(function()
      local t = {}
      return sum_loop, function(run)
        t.f = function(i, k) if i > k then error("past " .. k) end return i end
        run(t, 3, 5)
        run(t, 9, 5)
        t.f = function(i, k) if i > k then error("level two " .. i, 2) end return i * 2 end
        run(t, 9, 4)
        t.f = function(i, k) if i > k then error({ code = i }) end return i end
        run(t, 9, 4)
        t.f = string.rep                                -- 'rep' given a number as its string
        run(t, 2, "x")
        t.f = function(i, k) return i + k end           -- k a string that is no number
        run(t, 2, "y")
        t.f = nil
        run(t, 2, 1)
      end
    end)
  end)
end)

test("a traceback taken inside an interpreted callee names the call's line", function()
  local t = { f = function() return debug.traceback("tb") end }
  local call_line = debug.getinfo(1, "l").currentline + 1
  local function f(t) local s = t.f() return s end
  local tb = kjit.jit(f)(t)
  truthy(tb:find("test_callpath.lua:" .. call_line, 1, true), "call line in the traceback: " .. tb)
end)

test("tail calls and returns of a function value's results", function()
  modes(function()
    differential(function()
      local t = {}
      local function f(t, x)
        if x > 100 then return t.f(x, 1) end
        local s = 0
        for i = 1, x do s = s + t.f(i, x) end
        return t.f(s, 2)
      end
      return f, function(run)
        t.f = function(a, b) return a * b, a - b end
        run(t, 7)
        run(t, 700)
        t.f = function(a, b) return a // b end
        run(t, 7)
        run(t, 0)
      end
    end)
  end)
end)

test("recursion through a function value: deep enough for the C stack limit, and unbounded", function()
  modes(function(m)
    differential(function()
      local t = {}
      local function f(t, n)
        if n == 0 then return 0 end
        return 1 + t.f(t, n - 1)
      end
      t.f = f
      return f, function(run)
        run(t, 10)
        run(t, 5000)
        run(t, 40000)
      end
    end)
    -- unbounded: both ways an error that says stack overflow
    local t = {}
    local function g(t, n) return 1 + t.f(t, n + 1) end
    t.f = g
    local ok1, e1 = pcall(g, t, 0)
    local ok2, e2 = pcall(kjit.jit(g), t, 0)
    eq(ok1, false, m .. ": interpreted fails")
    eq(ok2, false, m .. ": compiled fails")
    truthy(tostring(e1):find("stack overflow"), "interpreted: " .. tostring(e1))
    truthy(tostring(e2):find("stack overflow"), "compiled: " .. tostring(e2))
  end)
end)

test("a callee redefined between calls and by itself during the loop", function()
  modes(function()
    differential(function()
      local t = {}
      local calls = 0
      local function leaf(i, k) return i * k + 1 end
      local function other(i, k) return i - k end
      local function changing(i, k)
        calls = calls + 1
        if calls == 5 then t.f = other end   -- the next iteration calls other
        return i + k
      end
      return sum_loop, function(run, note)
        t.f = leaf
        run(t, 20, 3)
        t.f = other
        run(t, 20, 3)
        t.f = leaf
        run(t, 20, 2.5)                      -- other argument kinds
        calls = 0
        t.f = changing
        run(t, 20, 3)
        note(calls)
        t.f = leaf
        run(t, 20, 3)
      end
    end)
  end)
end)

test("a site that leaves one closure interpreted still compiles another, and after a policy change", function()
  if not stack_reads then return end
  local t = { f = function(i, k) return i end }   -- no arithmetic: never compiles ("leaves")
  local f = kjit.jit(sum_loop)
  eq(f(t, 100, 2), 5050, "interpreted callee")
  eq(f(t, 100, 2), 5050, "interpreted callee, the site marked")
  local before = native_calls()
  t.f = function(i, k) return i * k end           -- a small leaf: compiles, called natively
  eq(f(t, 100, 2), 10100, "compiled callee")
  truthy(native_calls() - before >= 99, "native calls after the interpreted closure")
  local old = testing.callees("all")              -- the epoch moves: the mark is forgotten
  local pick = function(i, k) return i end
  t.f = pick
  before = native_calls()
  eq(f(t, 100, 2), 5050, "pick under all")
  testing.callees(old)
  truthy(native_calls() - before >= 99, "pick compiled under \"all\"")
end)

test("native calls made by the caller's code: results of every kind, Lua values, and the counter", function()
  modes(function(m)
    differential(function()
      local t = {}
      local function f(t, n)
        local s, c = 0, 0
        for i = 1, n do
          local a, b = t.f(i, n)
          local r = t.g(t, i)
          s = s + a + b + r.v
          if t.h(i) then c = c + 1 end
        end
        return s, c
      end
      return f, function(run)
        t.f = function(i, n) return i * 2, i / n end   -- an integer and a float
        t.g = function(self, i) return { v = i * 0.5 } end   -- a table: a Lua result
        t.h = function(i) return i % 3 == 0 end
        run(t, 30)
        t.f = function(i, n) if i % 2 == 0 then return i, 1 end return i * 1.5, 2.5 end
        run(t, 30)
      end
    end)
  end)
  if stack_reads then
    local t = { f = function(i, k) return i * k + 1 end }
    local f = kjit.jit(sum_loop)
    f(t, 10, 2)
    local before = native_calls()
    eq(f(t, 1000, 2), 1002000, "sum")
    truthy(native_calls() - before >= 999, "native calls counted: " .. (native_calls() - before))
    if inline_calls then
      truthy(f:inspect("llvm"):find("nccall", 1, true), "the site's inline native call (native_inline)")
    end
  end
end)

test("yields: a callee that yields inside a coroutine fails located; one that does not runs", function()
  local t = {}
  local call_line = debug.getinfo(1, "l").currentline + 1
  local function f(t, n) local s = 0 for i = 1, n do s = s + t.f(i, 1) end return s end
  local jf = kjit.jit(f)
  t.f = function(i, k) return i + k end
  local co = coroutine.wrap(function() return jf(t, 10) end)
  eq(co(), 65, "no yield")
  t.f = function(i, k) coroutine.yield(i) return i end
  local ok, err = pcall(coroutine.wrap(function() return jf(t, 3) end))
  eq(ok, false, "a yield across compiled code fails")
  truthy(tostring(err):find("test_callpath.lua:" .. call_line .. ": attempt to yield across a C-call boundary", 1, true),
         "located: " .. tostring(err))
  -- interpreted, the same coroutine yields
  local co2 = coroutine.wrap(function() return f(t, 3) end)
  eq(co2(), 1, "interpreted yields")
end)

test("the collector at every allocation: callees that make tables, Lua results kept", function()
  for _, gm in ipairs(G.modes) do
    G.with_gc(gm, function()
      modes(function()
        differential(function()
          local t = {}
          local function f(t, n)
            local s = 0
            for i = 1, n do
              local r = t.g(t, i)
              s = s + r.v + #r.list + t.f(i, 2)
            end
            return s
          end
          return f, function(run)
            t.g = function(self, i) return { v = i, list = { i, i + 1, tostring(i) } } end
            t.f = function(i, k) return i * k end
            run(t, 200)
            t.f = function(i, k) local x = { i } return x[1] + k end
            run(t, 200)
          end
        end)
      end)
    end)
  end
end)
