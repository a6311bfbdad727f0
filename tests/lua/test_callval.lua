-- Differential tests: Lua functions that compiled code calls through values
-- (methods found through __index, functions read from tables, passed in,
-- iterators) run compiled (host/callval.c). The interpreted function is the
-- specification: results with their subtypes, table state, errors with
-- file:line. Most tests compile every callee (kjit.testing.callees "all");
-- each checks that callees did compile, so that none passes by running the
-- callee interpreted.
local T = require "tablediff"
local kjit = require "kjit"
local testing = require "kjit.testing"

local function compiled_count() return select(2, testing.callees()) end

-- runs body with callees mode m; checks that at least `want` callee
-- specializations were made during it (nil: any number, 0 included)
local function with_callees(m, want, body)
  local old = testing.callees(m)
  local before = compiled_count()
  local ok, err = pcall(body)
  testing.callees(old)
  if not ok then error(err, 0) end
  if want then
    truthy(compiled_count() - before >= want,
           "callees compiled: " .. (compiled_count() - before) .. ", wanted " .. want)
  end
end

local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end
function Vec:scale(s) return Vec.new(self.x * s, self.y * s) end

test("methods found through an __index table run compiled: results and subtypes", function()
  -- (Vec:add and Vec:scale pass the upvalue Vec to setmetatable, which
  -- kjit refuses yet: they run interpreted; Vec:dot compiles)
  with_callees("all", 1, function()
    T.check(function(a, b, n)
      local s = 0
      for _ = 1, n do
        local c = a:add(b)
        s = s + c:dot(a)
      end
      return s, a:scale(0.5), a:dot(b)
    end, function() return Vec.new(1, 2), Vec.new(3, 4), 5 end)
    -- integers stay integers, floats floats
    T.check(function(a, b) return a:dot(b), a:scale(2).x, math.type(a:dot(b)) end,
            function() return Vec.new(1, 2), Vec.new(3.5, 4) end)
  end)
end)

test("a method through an __index function, and a function field", function()
  with_callees("all", 2, function()
    local C = setmetatable({}, { __index = function(_, k)
      if k == "twice" then return function(self, v) return 2 * v + self.base end end
    end })
    C.__index = C
    T.check(function(o, n)
      local s = 0
      for i = 1, n do s = s + o:twice(i) end
      return s
    end, function() return setmetatable({ base = 1 }, C), 10 end)
    local fns = { f = function(v) return v * v end, g = function(a, b) return a // b, a % b end }
    T.check(function(t, x) return t.f(x), t.g(x, 2) end, function() return fns, 7 end)
  end)
end)

test("a callee replaced in the table between calls: the new one runs", function()
  with_callees("all", 2, function()
    local f = kjit.jit(function(t, x) return t.op(x) end)
    local t = { op = function(v) return v + 1 end }
    eq(f(t, 1), 2, "first callee")
    t.op = function(v) return v * 10 end
    eq(f(t, 2), 20, "replaced callee")
    t.op = math.abs   -- a C function: called as it is
    eq(f(t, -3), 3, "C function")
    t.op = setmetatable({}, { __call = function(_, v) return v - 1 end })
    eq(f(t, 5), 4, "callable table")
  end)
end)

test("a callee kjit refuses runs interpreted, tried once", function()
  with_callees("all", nil, function()
    local t = { f = function(x) local y = coroutine.isyieldable(); return x + 1, type(y) end }
    local before = compiled_count()
    T.check(function(t, n) local s = 0 for i = 1, n do s = s + t.f(i) end return s, t.f(0) end,
            function() return t, 20 end)
    eq(compiled_count(), before, "nothing compiled")
  end)
end)

test("errors raised in a compiled callee: the callee's file:line, levels", function()
  with_callees("all", nil, function()
    local m = {}
    function m.check(x) if x > 3 then error("too big: " .. x) end return x end
    function m.up(x) if x > 3 then error("caller's fault", 2) end return x end
    function m.nilarith(x) local t = {} return t.y + x end
    function m.idx(t, i) local s = 0 for k = 1, i do s = s + t[k] end return s end
    T.check_error("too big: 4", function(m, n) local s = 0 for i = 1, n do s = s + m.check(i) end return s end,
                  function() return m, 5 end)
    T.check_error("caller's fault", function(m, n) local s = 0 for i = 1, n do s = s + m.up(i) end return s end,
                  function() return m, 5 end)
    T.check_error("attempt to perform arithmetic on a nil value", function(m) return m.nilarith(1) end,
                  function() return m end)
    T.check_error("attempt to perform arithmetic on a nil value", function(m, t) return m.idx(t, 5) end,
                  function() return m, { 1, 2, 3 } end)
  end)
end)

test("multiple results, fewer arguments, trailing nils, varargs", function()
  with_callees("all", 3, function()
    local t = {}
    function t.three(x) return x, x * 2, x * 3 end
    function t.opt(a, b) if b == nil then return a end return a + b end
    function t.count(...) return select("#", ...), ... end
    T.check(function(t, x)
      local a, b, c = t.three(x)
      local d = t.opt(x)
      local e = t.opt(x, nil)
      local f = t.opt(x, 2)
      return a + b + c, d, e, f, t.count(x, nil, nil)
    end, function() return t, 4 end)
    T.check(function(t, x) return t.three(x) end, function() return t, 1.5 end)
  end)
end)

test("recursion through a table, past the nesting where callees go interpreted", function()
  with_callees("all", 1, function()
    -- (through self, a table argument: each level is a call of a value)
    local M = {}
    function M:sum(n) if n == 0 then return 0 end return n + self:sum(n - 1) end
    T.check(function(M, n) return M:sum(n) end, function() return M, 50 end)
    T.check(function(M, n) return M:sum(n) end, function() return M, 3000 end)
    local D = {}
    function D:down(n) return self:down(n + 1) + 1 end
    T.check_error("stack overflow", function(D) return D:down(1) end, function() return D end)
  end)
end)

test("upvalues of a compiled callee: assigned ones are shared with the interpreter", function()
  with_callees("all", 1, function()
    local count = 0
    local t = { bump = function(k) count = count + k; return count end }
    local f = kjit.jit(function(t, n) local s = 0 for i = 1, n do s = s + t.bump(i) end return s end)
    local r = f(t, 4)
    eq(count, 10, "written through")
    count = 100
    eq(t.bump(1), 101, "interpreted sees it")
    eq(f(t, 1), 102, "compiled sees the interpreter's write")
    eq(r, 1 + 3 + 6 + 10, "results")
  end)
end)

test("a generic for's iterator closure runs compiled", function()
  with_callees("all", 1, function()
    local function points(n)
      local y = 0
      return function(_, x)
        x = x + 1
        if x > n then x = 1; y = y + 1 end
        if y >= n then return nil end
        return x, y
      end, nil, 0
    end
    T.check(function(n) local s = 0 for x, y in points(n) do s = s + x * 10 + y end return s end,
            function() return 4 end)
  end)
end)

test("closures made in a loop: a few compile, the rest run interpreted, all correct", function()
  with_callees("all", nil, function()
    T.check(function(n)
      local s = 0
      for i = 1, n do
        local t = { f = function(x) return x + i end }
        s = s + t.f(i)
      end
      return s
    end, function() return 30 end)
  end)
end)

test("under KJIT_CALLEES=loops only callees with a mostly arithmetic loop compile", function()
  with_callees("loops", nil, function()
    local P = {}
    P.__index = P
    function P:sumsq(n) local s = 0 for i = 1, n do s = s + i * i * self.k end return s end
    function P:get() return self.k end
    local o = setmetatable({ k = 0.5 }, P)
    local before = compiled_count()
    T.check(function(o) return o:get() end, function() return o end)
    eq(compiled_count(), before, "an accessor stays interpreted")
    T.check(function(o, n) return o:sumsq(n) end, function() return o, 10 end)
    eq(compiled_count(), before + 1, "the arithmetic loop compiled")
    function P:octaves(n)   -- arithmetic around a method call: the call decides
      local s, a = 0, 1
      for i = 1, n do s = s + a * self:get() * i; a = a * 0.5 end
      return s
    end
    T.check(function(o, n) return o:octaves(n) end, function() return o, 6 end)
    eq(compiled_count(), before + 1, "a loop calling a method stays interpreted")
  end)
end)

test("a collection at every allocation while compiled callees make tables", function()
  with_callees("all", 1, function()
    local B = {}
    B.__index = B
    function B:box(i) local r = { v = i * self.k, tag = "b" } return r end
    collectgarbage("generational", 0, 0)
    local ok, err = pcall(function()
      T.check(function(a, n)
        local list = {}
        for i = 1, n do list[#list + 1] = a:box(i) end
        local s = 0
        for i = 1, #list do s = s + list[i].v end
        return s, #list, list[n].tag
      end, function() return setmetatable({ k = 2 }, B), 200 end)
    end)
    collectgarbage("incremental", 200, 100, 13)
    collectgarbage("collect")
    if not ok then error(err, 0) end
  end)
end)

test("strings as arguments of a compiled callee", function()
  with_callees("all", 1, function()
    local t = {}
    function t.len(s, k) return #s + k end
    T.check(function(t, s) return t.len(s, 1), t.len("abc", 2) end,
            function() return t, "hello" end)
  end)
end)

test("an upvalue the callee only reads, changed by the interpreter: seen, as interpreted", function()
  with_callees("all", 2, function()
    local scale = 2
    local t = { f = function(n) local s = 0 for i = 1, n do s = s + i * scale end return s end }
    local g = kjit.jit(function(t, n) return t.f(n) end)
    eq(g(t, 3), 12, "first value")
    scale = 10   -- the interpreter assigns it: the callee compiles anew
    eq(g(t, 3), 60, "changed value")
    eq(g(t, 2), 30, "again")
    -- one that keeps changing: after a few compiles, it runs interpreted
    for k = 1, 8 do scale = k; eq(g(t, 2), 3 * k, "scale " .. k) end
  end)
end)

-- A long-running program that makes closures of one function literal in a
-- loop and drops them (callval.c's late closures, and the code's registry
-- references released with it: jit.c release_refs). Each round makes a new
-- closure and a new compiled caller that calls it through a table: past the
-- first eight closures of the literal (KCV_MAXCLOSURES, counted forever),
-- a closure compiles once called KCV_LATE_CALLS (2,000) times from one site;
-- one called a few times stays interpreted. The registry does not grow:
-- each caller's trampoline and its inline-cache entries go with its code.
-- (On the start: 8 closures compiled, and the registry grew by one entry a
-- round.)
test("closures made and dropped in a loop keep compiling; the registry does not grow", function()
  local function regsize() local n = 0 for _ in pairs(debug.getregistry()) do n = n + 1 end return n end
  local function make(k)   -- worth compiling: an arithmetic loop
    return function(n) local s = 0 for i = 1, n do s = s + i * k end return s end
  end
  local function rounds(calls, count)
    local sizes, before = {}, compiled_count()
    for round = 1, count do
      local g = make(round)
      local caller = kjit.jit(function(o, n, m)
        local t = 0
        for _ = 1, m do t = t + o.f(n) end
        return t
      end)
      eq(caller({ f = g }, 10, calls), calls * 55 * round, "round " .. round)
      caller, g = nil, nil
      collectgarbage(); collectgarbage()
      sizes[round] = regsize()
    end
    return compiled_count() - before, sizes
  end
  with_callees("leaves", nil, function()
    -- closures called a few times: the first eight compile, the rest not
    local n, sizes = rounds(3, 24)
    eq(n <= 8, true, "closures compiled at a few calls each (" .. n .. ")")
    eq(sizes[24], sizes[8], "registry entries after 8 and 24 rounds")
    -- called 2,100 times each: every one compiles, late
    n, sizes = rounds(2100, 12)
    eq(n, 12, "late closures compiled")
    eq(sizes[12], sizes[4], "registry entries after 4 and 12 rounds")
  end)
end)

-- A compile that fails after it made a call site's trampoline (the call
-- through o.f typed, then a refusal) releases the trampoline's registry
-- reference and forgets the options recorded for it (ir_type.c
-- kty_forget_sites), as freed code does. (On the start: two entries of
-- kjit.callval.siteopts stayed, for references since released.)
test("failed compiles leave no call site options behind", function()
  local function sites()
    local n = 0
    for _ in pairs(debug.getregistry()["kjit.callval.siteopts"] or {}) do n = n + 1 end
    return n
  end
  local function refused(o, x)
    local y = o.f(x)
    return y + debug.gethook()   -- refused: a debug function
  end
  collectgarbage(); collectgarbage()
  local before = sites()
  for i = 1, 20 do
    local ok, err = pcall(kjit.jit(refused, { boundscheck = i % 2 == 0 }), { f = function(v) return v end }, i)
    eq(ok, false, "compile " .. i .. " refused")
    truthy(tostring(err):find("compile error", 1, true), "the compile's error: " .. tostring(err))
  end
  eq(sites(), before, "call sites with options recorded")
  -- code that compiles keeps its site's entry, and frees it with the code
  local g = kjit.jit(function(o, x) return o.f(x) end, { boundscheck = false })
  eq(g({ f = function(v) return v * 2 end }, 4), 8, "a compiled caller")
  eq(sites(), before + 1, "its call site's options recorded")
  g = nil
  collectgarbage(); collectgarbage()
  eq(sites(), before, "forgotten with its code")
end)
