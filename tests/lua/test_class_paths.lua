-- Differential tests for the short paths of the class pattern in
-- runtime/luatable.c (issue 29, task interp2): a constructor's named
-- fields inserted as luaH_newkey inserts them, collisions included
-- (kjit_lt_ctorfield: the same nodes, so the same `next` order), the
-- common setmetatable done in place (kjit_lt_setmt: t without a
-- metatable, mt known to have no __gc) and a method found through the
-- class with its site's hints checked by their keys (kjit_lt_smethod).
-- Each case runs interpreted and compiled; results, errors, the tables
-- left (keys in `next` order, values, metatables) must agree.
local kjit = require "kjit"
local testing = require "kjit.testing"
local G = require "gc_harness"

-- A value as text; a table's keys in `next` order (the node layout shows
-- there), metatables by name where `names` has one.
local function dump(v, names, depth)
  depth = depth or 0
  if type(v) == "function" then return "function" end   -- (made anew by each pass)
  if type(v) ~= "table" then
    if math.type(v) == "float" then return string.format("%.17g(f)", v) end
    return tostring(v) .. (math.type(v) == "integer" and "(i)" or "")
  end
  if names and names[v] then return names[v] end
  if depth > 4 then return "{...}" end
  local parts = {}
  for k, x in next, v do parts[#parts + 1] = tostring(k) .. "=" .. dump(x, names, depth + 1) end
  local mt = getmetatable(v)
  local m = mt == nil and "" or " mt:" .. dump(mt, names, depth + 1)
  return "{" .. table.concat(parts, ",") .. "}" .. m
end

-- build() gives fn, args, names; fn runs interpreted, then compiled, each
-- on what a fresh build gives.
local function differential(build, what)
  local logs = {}
  for pass = 1, 2 do
    local fn, args, names = build()
    local call = pass == 1 and fn or kjit.jit(fn)
    local r = table.pack(pcall(call, table.unpack(args, 1, args.n or #args)))
    local parts = {}
    for i = 1, r.n do parts[#parts + 1] = dump(r[i], names) end
    for i = 1, #args do parts[#parts + 1] = "arg" .. i .. "=" .. dump(args[i], names) end
    logs[pass] = table.concat(parts, " | ")
  end
  if logs[1] ~= logs[2] then
    error(string.format("%s:\n  interpreted %s\n  compiled    %s", what or "case", logs[1], logs[2]), 2)
  end
  return logs[1]
end

local function modes(body)
  for _, m in ipairs { "all", "leaves", "none" } do
    local old = testing.callees(m)
    local ok, err = pcall(body, m)
    testing.callees(old)
    if not ok then error(m .. ": " .. tostring(err), 0) end
  end
end

-- ---- Constructors: the nodes laid out as the interpreter lays them ------------------

-- Field names drawn from a fixed generator, so that every run meets
-- collisions (a string's hash is seeded per state: which names collide
-- differs from run to run, but among 2 to 12 names in 2 to 16 nodes some do).
local function names_for(seed, n)
  local ks, seen = {}, {}
  local s = seed
  while #ks < n do
    s = (s * 1103515245 + 12345) % 2147483648
    local len = 1 + s % 6
    local k = "k"   -- (never a keyword)
    for j = 1, len do k = k .. string.char(97 + (s // (j * 7)) % 26) end
    if not seen[k] then seen[k] = true; ks[#ks + 1] = k end
  end
  return ks
end

test("a constructor's named fields: every collision laid out as interpreted (`next` order)", function()
  local cases = 0
  for n = 2, 12 do
    for seed = 1, 12 do
      local ks = names_for(seed * 31 + n, n)
      local items = {}
      for i, k in ipairs(ks) do
        -- numbers of both kinds and booleans (the short path), now and
        -- then a string or a table (the API's insertion between them)
        local v = ({ "a", "b + " .. i, "a * 0.5", "true", "a > b", "s", "{ a }" })[(i + seed) % 7 + 1]
        items[#items + 1] = k .. " = " .. v
      end
      local src = "local a, b, s = ...; local t = { " .. table.concat(items, ", ") .. " }\n" ..
                  "t.zz_after = b; return t"
      local fn = assert(load(src, "=ctor" .. n .. "_" .. seed))
      differential(function() return fn, { 3, 4.5, "str" } end, "constructor " .. src)
      cases = cases + 1
    end
  end
  assert(cases == 132)
end)

test("a constructor's duplicate, nil and mixed keys", function()
  local srcs = {
    "local a = ...; return { x = 1, x = 2 }",
    "local a = ...; return { x = a, y = 2, x = 3.5 }",
    "local a = ...; return { x = nil, x = a }",
    "local a = ...; return { x = a, x = nil }",
    "local a = ...; return { x = a, y = nil, z = a + 1 }",
    "local a = ...; return { x = a, [a] = 1, y = 2, [a + 0.5] = true, z = false }",
    "local a = ...; return { a, x = a, a + 1, y = a * 2, [1] = 9, z = 1 }",
    "local a = ...; local k = 'y'; return { x = a, [k] = 2, y = 3, w = 4 }",
    "local a = ...; return { __index = a, x = 1, __gc = 2, y = 3 }",
  }
  for _, src in ipairs(srcs) do
    local fn = assert(load(src, "=dups"))
    differential(function() return fn, { 7 } end, src)
  end
end)

test("constructors in a loop with a collection at every allocation", function()
  for _, mode in ipairs(G.modes) do
    modes(function(m)
      G.with_gc(mode, function()
        differential(function()
          local V = {}
          V.__index = V
          function V.new(x, y) return setmetatable({ x = x, y = y, z = x + y, w = x > y }, V) end
          function V:add(o) return V.new(self.x + o.x, self.y + o.y) end
          return function(n)
            local acc, keep = V.new(0, 0), {}
            for i = 1, n do
              local v = V.new(i, i * 0.5)
              keep[i] = { v = v, s = acc, k = i }
              acc = acc:add(v)
            end
            return acc, keep
          end, { 30 }, { [V] = "V" }
        end, mode .. " " .. m)
      end)
    end)
  end
end)

-- ---- setmetatable in place ------------------------------------------------------

test("setmetatable: a metatable given __gc later, a protected one, nil, a table met black", function()
  for pass = 1, 2 do
    local log = {}
    local M = { tag = "M" }
    local function make(n, from)
      local r = {}
      for i = 1, n do r[i] = setmetatable({ id = from + i }, M) end
      return r
    end
    local f = pass == 1 and make or kjit.jit(make)
    local keep = f(3, 0)                          -- M without __gc: the short path
    M.__gc = function(o) log[#log + 1] = o.id end -- a new key: M's cache cleared
    f(3, 10)                                      -- these must be finalized
    keep = nil
    collectgarbage("collect"); collectgarbage("collect")
    table.sort(log)
    eq(table.concat(log, " "), "11 12 13", "finalized (pass " .. pass .. ")")
  end
  differential(function()
    local M, P = {}, { __metatable = "locked" }
    return function(t)
      local a = setmetatable({ 1 }, M)
      local r1 = setmetatable(a, nil)
      local r2 = setmetatable(r1, M)
      local b = setmetatable({}, P)
      return r1 == a, r2, getmetatable(b), pcall(setmetatable, b, M), setmetatable(t, M)
    end, { { old = true } }, { [M] = "M", [P] = "P" }
  end)
  -- a long-lived table, black while a collection runs, given a new
  -- metatable at each step (the barrier: the API's path)
  for _, mode in ipairs(G.modes) do
    G.with_gc(mode, function()
      differential(function()
        local old = {}
        for i = 1, 50 do old[i] = { i } end
        return function(ts, n)
          for i = 1, n do
            local mt = { __index = { v = i } }
            setmetatable(ts[i], mt)
            local junk = { i, i }
          end
          local s = 0
          for i = 1, n do s = s + ts[i].v end
          return s
        end, { old, 50 }
      end, "black tables " .. mode)
    end)
  end
end)

-- ---- Methods through the class ---------------------------------------------------

local function classes()
  local A, B = {}, {}
  A.__index = A
  B.__index = B
  function A:m(x) return x + 1 end
  function B:m(x) return x * 10 end
  function A:boom(x) if x > 2 then error("boom at " .. x) end return x end
  return A, B
end

test("a method through its class: class, method, __index and the object changed mid-loop", function()
  modes(function(m)
    local cases = {
      -- the object's class replaced
      function() local A, B = classes()
        return function(o, n) local s = 0
          for i = 1, n do s = s + o:m(i); if i == 3 then setmetatable(o, B) end end
          return s end, { setmetatable({}, A), 6 }, { [A] = "A", [B] = "B" } end,
      -- the method replaced in the class (by the caller)
      function() local A = classes()
        return function(o, C, n) local s = 0
          for i = 1, n do s = s + o:m(i); if i == 2 then C.m = function(_, x) return -x end end end
          return s end, { setmetatable({}, A), A, 5 }, { [A] = "A" } end,
      -- the object given a field of its own of that name
      function() local A = classes()
        return function(o, n) local s = 0
          for i = 1, n do s = s + o:m(i); if i == 2 then o.m = function(_, x) return 100 end end end
          return s end, { setmetatable({}, A), 5 }, { [A] = "A" } end,
      -- __index turned into a function, then removed (an error, located)
      function() local A = classes()
        return function(o, mt, n) local s = 0
          for i = 1, n do
            s = s + o:m(i)
            if i == 2 then mt.__index = function(_, k) return function(_, x) return x * 3 end end end
            if i == 4 then mt.__index = nil end
          end
          return s end, { setmetatable({}, A), A, 6 }, { [A] = "A" } end,
      -- the class grown (its nodes resized and moved) mid-loop
      function() local A = classes()
        return function(o, C, n) local s = 0
          for i = 1, n do s = s + o:m(i); C["extra" .. i] = i end
          return s end, { setmetatable({}, A), A, 40 }, { [A] = "A" } end,
      -- a base class: the class's own metatable's __index
      function() local A, B = classes()
        local D = setmetatable({}, { __index = A }); D.__index = D
        return function(o, n) local s = 0
          for i = 1, n do s = s + o:m(i) end
          return s end, { setmetatable({}, D), 4 }, { [A] = "A", [D] = "D" } end,
      -- objects of two classes at one site, and a metatable without __index
      function() local A, B = classes()
        return function(os) local s = 0
          for i = 1, #os do s = s + os[i]:m(i) end
          return s end, { { setmetatable({}, A), setmetatable({}, B), setmetatable({}, A),
                            setmetatable({}, {}) } }, { [A] = "A", [B] = "B" } end,
      -- a method that raises: its message and position
      function() local A = classes()
        return function(o, n) local s = 0
          for i = 1, n do s = s + o:boom(i) end
          return s end, { setmetatable({}, A), 5 }, { [A] = "A" } end,
    }
    for i, b in ipairs(cases) do differential(b, "method case " .. i .. " (" .. m .. ")") end
  end)
end)

test("methods through their class with a collection at every allocation", function()
  for _, mode in ipairs(G.modes) do
    G.with_gc(mode, function()
      differential(function()
        local A, B = classes()
        return function(n)
          local s = 0
          for i = 1, n do
            local o = setmetatable({ k = i }, i % 3 == 0 and B or A)
            s = s + o:m(i)
          end
          return s
        end, { 30 }
      end, "gc " .. mode)
    end)
  end
end)

-- ---- Tables, strings and nil written over a present field ---------------------------

test("a table, a string or nil over a present field; __newindex only for an absent one", function()
  modes(function(m)
    for _, mode in ipairs(G.modes) do
      G.with_gc(mode, function()
        differential(function()
          local seen = {}
          local M = { __newindex = function(t, k, v) seen[#seen + 1] = k; rawset(t, k, v) end }
          local old = {}   -- long-lived: old (black) in generational mode
          for i = 1, 20 do old[i] = setmetatable({ pos = { i }, name = "n" .. i, tag = false }, M) end
          collectgarbage("collect")
          return function(es, n, seen)
            for step = 1, n do
              for i = 1, #es do
                local e = es[i]
                e.pos = { e.pos[1] + step }        -- a new table over a present one
                e.name = "s" .. step .. "_" .. i   -- a new string
                e.tag = step % 2 == 0 and e.pos or nil   -- a table, or nil over it
                if step == 2 then e.fresh = i end  -- absent: __newindex
              end
            end
            return es, #seen
          end, { old, 4, seen }, { [M] = "M" }
        end, "stores " .. mode .. " " .. m)
      end)
    end
  end)
end)
