-- Differential tests (issue 29): a Lua value (anything read from a table)
-- stored into a kjit array's element or a record field, `A[i] = t.x`. The
-- store converts as the array's __newindex does interpreted: numbers as
-- they are (an integer array takes only floats with an exact integer
-- value), anything else raises "number expected, got <type>" (strings
-- included: the store is strict), a bool array takes only booleans; the
-- index is checked first. Arrays and tables are compared after the call.
local kjit = require "kjit"
local T = require "tablediff"

local function arrays_equal(a, b, where)
  assert(#a == #b, where .. ": lengths differ")
  for i = 1, #a do
    if not same_value(a[i], b[i]) then
      error(string.format("%s: element %d: interpreted %s, compiled %s", where, i,
                          tostring(a[i]), tostring(b[i])), 0)
    end
  end
end

-- Runs fn(array, table, ...) interpreted and compiled on fresh copies;
-- results, errors (with file:line), the arrays and the tables must agree.
local function check(fn, dtype, n, make, ...)
  local j = kjit.jit(fn)
  local ai, ac = kjit.zeros(n, dtype), kjit.zeros(n, dtype)
  local ti, tc = make(), make()
  local ri = table.pack(pcall(fn, ai, ti, ...))
  local rc = table.pack(pcall(j, ac, tc, ...))
  local where = dtype .. " at line " .. debug.getinfo(2, "l").currentline
  eq(ri[1], rc[1], where .. ": ok")
  if not ri[1] then eq(tostring(rc[2]), tostring(ri[2]), where .. ": error") end
  arrays_equal(ai, ac, where)
  local e = T.compare(ti, tc, {}, {}, "table")
  if e then error(where .. ": " .. e, 0) end
  return ri, rc
end

local values = { 1, -7, 1.5, 2.0, 2^53, 300, -1, 0/0, math.huge, "1", "0x10", "abc", true, false,
                 {}, setmetatable({}, { __name = "Thing" }) }
local dtypes = { "f64", "f32", "i64", "i32", "i16", "u8", "u32", "bool" }

test("a[i] = t.x for every dtype and every kind of value", function()
  for _, dt in ipairs(dtypes) do
    for k = 1, #values + 1 do   -- k = #values + 1: t.x is nil
      local v = values[k]
      check(function(a, t) a[2] = t.x end, dt, 3, function() return { x = v } end)
    end
  end
end)

test("errors carry file:line; the index is checked before the value", function()
  local ri = check(function(a, t) a[1] = t.s end, "f64", 2, function() return { s = "2" } end)
  assert(not ri[1] and tostring(ri[2]):find("test_lang_store.lua:%d+: number expected, got string"),
         tostring(ri[2]))
  ri = check(function(a, t) a[5] = t.s end, "f64", 2, function() return { s = "2" } end)
  assert(not ri[1] and not tostring(ri[2]):find("number expected"), tostring(ri[2]))
  ri = check(function(a, t) a[1] = t.f end, "bool", 2, function() return { f = 1 } end)
  assert(not ri[1] and tostring(ri[2]):find("boolean expected, got number"), tostring(ri[2]))
end)

test("loops: copying a list of numbers into an array, writes before an error kept", function()
  local function copy(a, t)
    for i = 1, #t do a[i] = t[i] end
    return a[1]
  end
  check(copy, "f64", 5, function() return { 1, 2.5, 3, 4, 5 } end)
  check(copy, "i32", 5, function() return { 1, 2, 3, 4, 5 } end)
  check(copy, "i32", 5, function() return { 1, 2, 3.5, 4, 5 } end)
  check(copy, "f64", 5, function() return { 1, 2, "x", 4, 5 } end)
  check(function(a, t) for i = 1, #t do a[i] = t[i].on end end, "bool", 3,
        function() return { { on = true }, { on = false }, { on = true } } end)
  check(function(a, ps)   -- the common line: fields of a list of records
    for i = 1, #ps do a[i] = ps[i].x * 2 + ps[i].y end
  end, "f64", 3, function() return { { x = 1, y = 2 }, { x = 0.5, y = -1 }, { x = 3, y = 4 } } end)
end)

test("a value from a table with __index, through a metamethod", function()
  local mt = { __index = function(_, k) return k == "x" and 42 or "no" end }
  check(function(a, t) a[1] = t.x; a[2] = t.y end, "f64", 2,
        function() return setmetatable({}, mt) end)
end)

test("record fields take Lua values by the same rules", function()
  local P = kjit.struct { { "x", "f64" }, { "n", "i32" }, { "on", "bool" } }
  local function set(p, t) p[1].x = t.x; p[1].n = t.n; p[1].on = t.on end
  local j = kjit.jit(set)
  for _, t in ipairs { { x = 1.5, n = 3, on = true }, { x = 2, n = 2.5, on = true },
                       { x = "1", n = 1, on = false }, { x = 1, n = 1, on = 1 },
                       { x = 1, n = {}, on = false } } do
    local pi, pc = kjit.zeros(1, P), kjit.zeros(1, P)
    local ri = table.pack(pcall(set, pi, t))
    local rc = table.pack(pcall(j, pc, t))
    eq(rc[1], ri[1])
    eq(tostring(rc[2]), tostring(ri[2]))
    assert(same_value(pi[1].x, pc[1].x) and same_value(pi[1].n, pc[1].n) and pi[1].on == pc[1].on)
  end
end)

test("a[t.i] and a[t.i] = v: keys read from a table, with the array's errors", function()
  local get = function(a, t) return a[t.i] end
  local set = function(a, t) a[t.i] = t.v end
  for _, k in ipairs { 1, 2.0, 2.5, 3, 0, "1", "zzz", "shape", {}, true } do
    if k ~= "shape" then check(get, "f64", 2, function() return { i = k } end) end
    check(set, "f64", 2, function() return { i = k, v = 7 } end)
    check(set, "i32", 2, function() return { i = k, v = "7" } end)
  end
  check(get, "f64", 2, function() return {} end)   -- a nil key
  -- a field read through a key held in a variable is the one difference:
  -- compiled code says so instead of returning something else
  local ok, e = pcall(kjit.jit(get), kjit.zeros(2), { i = "shape" })
  assert(not ok and tostring(e):find("by its name only (a.shape)", 1, true), tostring(e))
  -- a permutation table indexing an array: the common loop
  check(function(a, p)
    local s = 0
    for i = 1, #p do a[p[i]] = i; s = s + a[p[i]] end
    return s
  end, "f64", 4, function() return { 3, 1, 4, 2 } end)
end)

test("a refusal naming a value read from a table says 'a Lua value', not 'a value value'", function()
  local f = kjit.jit(function(m, t) m[1][1] = t.x end)
  local ok, e = pcall(f, kjit.zeros(2), { x = 1 })
  assert(not ok and not tostring(e):find("value value", 1, true), tostring(e))
end)

test("a:fill(t.x) and a:fill(number-or-nil) raise the interpreter's words", function()
  for _, dt in ipairs({ "f64", "i32", "u8" }) do
    for k = 1, #values + 1 do   -- k = #values + 1: t.x is nil
      local v = values[k]
      if v ~= true and v ~= false then   -- a number array refuses booleans (checked below)
        check(function(a, t) a:fill(t.x); return a[1] end, dt, 3, function() return { x = v } end)
      end
    end
    check(function(a, t) a:fill(t.x) end, dt, 3, function() return { x = true } end)
    -- number or nil (math.tointeger's result): nil raises the fill's own message
    check(function(a, t, x) a:fill(math.tointeger(x)); return a[2] end, dt, 2, function() return {} end, 1.5)
    check(function(a, t, x) a:fill(math.tointeger(x)); return a[2] end, dt, 2, function() return {} end, 4.0)
  end
end)
