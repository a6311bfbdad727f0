-- Differential tests for methods that make tables (issue 29, task ctor):
-- `setmetatable(t, mt)` done by compiled code itself (codegen/cg_lua.c
-- cg_lua_setmetatable, runtime kjit_lv_setmt) and a constructor's own
-- field writes done raw (cg_lua.c in_ctor, kjit_lv_ctorfield). The
-- interpreted function is the specification: each case runs interpreted and
-- compiled, and the tables it leaves (every key, value and metatable), its
-- results and its error messages must agree.
local kjit = require "kjit"
local testing = require "kjit.testing"
local G = require "gc_harness"

-- A table's contents as text: keys sorted, nested tables by content,
-- metatables by the name `names` gives them (identity), else by content.
local function dump(v, names, depth)
  depth = depth or 0
  if type(v) ~= "table" then
    if math.type(v) == "float" then return string.format("%.17g(f)", v) end
    return tostring(v) .. (math.type(v) == "integer" and "(i)" or "")
  end
  if names and names[v] then return names[v] end
  if depth > 4 then return "{...}" end
  local keys = {}
  for k in next, v do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. dump(rawget(v, k), names, depth + 1) end
  local mt = getmetatable(v)
  local m = mt == nil and "" or " mt:" .. dump(mt, names, depth + 1)
  return "{" .. table.concat(parts, ",") .. "}" .. m .. " #" .. rawlen(v)
end

-- build() returns fn, args, names (metatables' names); fn runs
-- interpreted then compiled, each on fresh state; results and errors
-- compared as dumps.
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

local function vec_class()
  local Vec = {}
  Vec.__index = Vec
  function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
  function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
  function Vec:scale(s) return Vec.new(self.x * s, self.y * s) end
  function Vec:dot(o) return self.x * o.x + self.y * o.y end
  return Vec
end

test("a class's constructor and methods that return new objects", function()
  modes(function(m)
    local log = differential(function()
      local Vec = vec_class()
      return function(n)
        local a, b = Vec.new(1.5, 2), Vec.new(0.25, 1)
        local all = {}
        for i = 1, n do
          a = a:add(b):scale(0.5)
          all[i] = a
        end
        return a, all, a:dot(b)
      end, { 5 }, { [Vec] = "Vec" }
    end, m)
    assert(log:find("mt:Vec", 1, true), log)
  end)
end)

test("setmetatable's forms: a class upvalue, a parameter, nil, its value, extra arguments", function()
  local cases = {
    function() local C = { k = 1 }; C.__index = C
      return function(x) local o = setmetatable({ x = x }, C); return o, o.k end, { 2 }, { [C] = "C" } end,
    function() local M = {}
      return function(mt) local t = { a = 1 }; local r = setmetatable(t, mt); return r == t, t end, { M }, { [M] = "M" } end,
    function() local M = {}
      return function(mt) local t = setmetatable({ a = 1 }, mt); return setmetatable(t, nil), getmetatable(t) end, { M }, { [M] = "M" } end,
    function() local M = {}
      return function(mt) local t = {}; setmetatable(t, mt); return t end, { M }, { [M] = "M" } end,
    function() local M = {}
      return function(mt) return setmetatable({ 1, 2, 3, n = 3 }, mt, "extra") end, { M }, { [M] = "M" } end,
    function() local M = {}
      return function(mt, t) return setmetatable(t, mt) end, { M, { z = 9 } }, { [M] = "M" } end,
    function() local M = {}
      return function(t) local mt = { __index = t }; return setmetatable({}, mt).z end, { { z = 3.5 } } end,
  }
  for i, b in ipairs(cases) do differential(b, "case " .. i) end
end)

test("setmetatable's errors read as interpreted", function()
  local smt = setmetatable
  local cases = {
    function() return function(x) return setmetatable(x, {}) end, { 1 } end,
    function() return function(x) return setmetatable(x, {}) end, { "s" } end,
    function() return function(x) return setmetatable({}, x) end, { 5 } end,
    function() return function(x) return setmetatable({}, x) end, { true } end,
    function() return function() return setmetatable({}) end, {} end,
    function() return function(x) return smt({}, x) end, { 1 } end,
    function() return function(t) return setmetatable(t, {}) end, { setmetatable({}, { __metatable = "locked" }) } end,
    function() return function(t) return setmetatable(t.o, {}) end, { { o = 2.5 } } end,
  }
  for i, b in ipairs(cases) do
    local log = differential(b, "error case " .. i)
    assert(log:find("^false | ", 1) and log:find("test_ctor.lua:%d+:"), log)
  end
end)

test("a constructor's fields do not call __newindex; a later write does", function()
  differential(function()
    local seen = {}   -- (an argument: an upvalue table would be frozen)
    local M = { __newindex = function(t, k, v) seen[#seen + 1] = k; rawset(t, k, v) end }
    return function(x, seen)
      local t = setmetatable({ a = x, b = x + 1 }, M)
      t.c = x * 2          -- after setmetatable in the same block: __newindex
      local u = {}
      setmetatable(u, M)
      u.d = 1              -- the table reached setmetatable first
      return t, u, #seen
    end, { 3, seen }, { [M] = "M" }
  end)
  differential(function()
    local M = { __newindex = function(t, k, v) rawset(t, k, v * 10) end }
    local function give(t) setmetatable(t, M) end
    return function(x)
      local t = {}
      give(t)              -- escapes before its field is written
      t.x = x
      return t
    end, { 4 }, { [M] = "M" }
  end)
end)

test("fields of every kind, a nil field, a key starting with __", function()
  differential(function()
    return function(x, s)
      local t = { n = x, f = x / 2, b = true, s = s, t = { x }, z = nil, __index = s }
      local mt = { __index = { extra = 1 } }
      setmetatable(t, mt)
      return t, t.extra, t.z
    end, { 7, "str" }
  end)
end)

test("__gc and __mode metatables keep Lua's semantics", function()
  -- (counted once the function has returned: until then compiled code's
  -- frame may still hold the last table made, where the interpreter's
  -- register was reused by the call of collectgarbage: the same objects
  -- are finalized, at most one collection later)
  local counts = {}
  for pass = 1, 2 do
    local log = {}
    local M = { __gc = function(o) log[#log + 1] = o.id end }
    local function f(n)
      for i = 1, n do local _ = setmetatable({ id = i }, M) end
      return n
    end
    eq((pass == 1 and f or kjit.jit(f))(5), 5)
    collectgarbage("collect")
    collectgarbage("collect")
    table.sort(log)
    counts[pass] = table.concat(log, " ")
  end
  eq(counts[2], counts[1], "finalized")
  eq(counts[1], "1 2 3 4 5", "every object")
  for pass = 1, 2 do
    local W = { __mode = "v" }
    local function f(n)
      local w = setmetatable({}, W)
      for i = 1, n do w[i] = { i } end
      return w
    end
    local w = (pass == 1 and f or kjit.jit(f))(4)
    eq(getmetatable(w), W, "the weak table's metatable")
    collectgarbage("collect")
    eq(next(w), nil, "weak values collected")
  end
end)

test("the GC sees every table (a collection at every allocation)", function()
  for _, mode in ipairs(G.modes) do
    modes(function(m)
      G.with_gc(mode, function()
        differential(function()
          local Vec = vec_class()
          return function(n)
            local acc, keep = Vec.new(0, 0), {}
            for i = 1, n do
              local v = Vec.new(i, -i)
              keep[#keep + 1] = v:scale(2)
              acc = acc:add(v)
            end
            return acc, keep
          end, { 40 }, { [Vec] = "Vec" }
        end, mode .. " " .. m)
      end)
    end)
  end
end)

test("the compiled constructor: one result, no call of setmetatable as a function value", function()
  local Vec = vec_class()
  local f = kjit.jit(Vec.new)
  local v = f(1.5, 2.5)
  eq(getmetatable(v), Vec, "its metatable")
  local ir = f:inspect("ir")
  assert(ir:find("spec 0 (f64, f64) -> table\n", 1, true), ir)
  local ll = f:inspect("llvm")
  assert(ll:find("@kjit_lv_setmt", 1, true) and ll:find("@kjit_lv_ctorfield", 1, true), ll)
  assert(not ll:find("@kjit_lc_call", 1, true), "setmetatable is not called through lua_call")
end)
