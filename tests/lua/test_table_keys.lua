-- Differential tests of two fast paths of table code in loops (issue 29,
-- SciMark's FFT): a float key with an integral value indexes the array
-- part inline as the integer it equals (Lua normalizes such keys:
-- ltable.c luaH_get), and a table upvalue or global that the function
-- writes into (a live table: ir_type.c t_live) is read once per call
-- (codegen/cg_lua.c live_table). The interpreted function is the
-- specification (tablediff: results and every argument compared key by
-- key; errors, their messages and the writes before them). Run again with
-- KJIT_NO_STACK_READS=1 (tests.cmake: lua.test_table_keys_api).
local T = require "tablediff"
local kjit = require "kjit"

local function list(n, f)
  local t = {}
  for i = 1, n do t[i] = f and f(i) or i * 0.25 end
  return t
end

-- (first in this file: no f64 or i64 array made before it in this process)
test("array views are emitted once the process has made an f64 or i64 array", function()
  -- rows read from a table, indexed in a loop: candidates for views
  -- (codegen/cg_luaview.c), which only a kjit array would use
  local src = [[
    local rows, n = ...
    local s = 0
    for y = 1, #rows do
      local r = rows[y]
      for x = 1, n do s = s + r[x] end
    end
    return s
  ]]
  local function rows() return { { 1, 2, 3 }, { 4, 5, 6 } }, 3 end
  local before = kjit.jit(load(src, "=rows"))
  T.check(load(src, "=rows"), rows)
  before(rows())
  assert(not before:inspect("llvm"):find("kjit_lv_arrview", 1, true), "no views before any array")
  local a = kjit.zeros(3, "i64")
  local after = kjit.jit(load(src, "=rows"))
  after(rows())
  assert(after:inspect("llvm"):find("kjit_lv_arrview", 1, true), "views once an array was made")
  -- and an array made after the compile is still read right (the helper)
  a[1], a[2], a[3] = 7, 8, 9
  assert(before({ { 1, 2, 3 }, a }, 3) == 30)
end)

test("integral float keys: reads and writes of the array part", function()
  -- a float index from a division (the FFT's bit reversal as written)
  local function bitreverse(v, n)
    local j = 0
    for i = 0, 2 * n - 4, 2 do
      if i < j then
        v[i + 1], v[i + 2], v[j + 1], v[j + 2] = v[j + 1], v[j + 2], v[i + 1], v[i + 2]
      end
      local k = n
      while k <= j do j = j - k; k = k / 2 end
      j = j + k
    end
    return j
  end
  T.check(bitreverse, function() return list(64), 32 end)
  T.check(bitreverse, function() return list(64, function(i) return i end), 32 end)
  -- keys that are floats from the start (typed float), read and written
  local function fsum(t, n)
    local s = 0
    for i = 1, n do
      local k = i * 1.0
      t[k] = t[k] * 2 + 0.5
      s = s + t[k / 2 + 0.5]
    end
    return s
  end
  T.check(fsum, function() return list(20), 20 end)
  -- an integer, then a float (integral or not) in one variable
  T.check(function(t, n)
    local s, k = 0, 1
    for i = 1, n do
      s = s + (t[k] or -1)
      t[k] = i
      k = k * 1.5
    end
    return s
  end, function() return list(12), 9 end)
  -- a key read from a table: an integer, an integral float, then others
  local function viakeys(t, ks)
    local s = 0
    for i = 1, #ks do
      local k = ks[i]
      s = s + (t[k] or 100)
      t[k] = i
    end
    return s
  end
  T.check(viakeys, function() return list(8), { 1, 2.0, 3, 4.0, 8.0 } end)
  -- not integral, negative, zero (both signs), huge, infinite: never
  -- the array part; the hash part or the helper, as interpreted
  T.check(viakeys, function() return list(8), { 1.5, -1.0, 0.0, -0.0, 2 ^ 53, 2 ^ 63, -2 ^ 63, 1e300, math.huge, -math.huge } end)
  -- past the array part: the key is new (appended through the helper)
  T.check(viakeys, function() return list(4), { 5.0, 6.0, 7.0, 20.0 } end)
  T.check(function(t, n)
    for i = 1, n do t[#t + 1.0] = i / 2 end
    return #t
  end, function() return list(3), 9 end)
end)

test("integral float keys: holes, metamethods and errors", function()
  local function get(t, n)
    local s, nils = 0, 0
    for i = 1, n do
      local v = t[i / 1]
      if v == nil then nils = nils + 1 else s = s + v end
    end
    return s, nils
  end
  -- holes in the array part
  T.check(get, function() local t = list(10); t[3] = nil; t[7] = nil; return t, 10 end)
  -- __index and __newindex see the float key (math.type), as interpreted
  -- (they log it in the table's own `log`, compared with the rest)
  local mt = {
    __index = function(t, k) local l = rawget(t, "log"); l[#l + 1] = math.type(k); return k * 10 end,
    __newindex = function(t, k, v) local l = rawget(t, "log"); l[#l + 1] = math.type(k); rawset(t, k, -v) end,
  }
  T.check(function(t, n)
    local s = 0
    for i = 1, n do s = s + t[i + 0.0] end
    for i = 1, n do t[i * 1.0] = i end
    return s
  end, function() return setmetatable({ 1, 2, log = {} }, mt), 5 end)
  -- a present value that is not a number: the helper, then the error
  T.check_error("attempt to add a 'number' with a 'string'", function(t, n)
    local s = 0
    for i = 1, n do s = s + t[i / 1] end
    return s
  end, function() return { 1, 2, "x", 4 }, 4 end)
  -- a NaN key: read gives nil, write raises (at this line)
  T.check_error("index is NaN", function(t, n)
    local s = 0
    for i = 1, n do
      local k = (i == 3) and 0 / 0 or i * 1.0
      if t[k] then s = s + t[k] end
      t[k] = s
    end
    return s
  end, function() return list(6), 6 end)
end)

test("a table upvalue written in a loop: read once a call", function()
  local v, w = {}, {}
  local function fill(n)
    for i = 1, n do v[i] = i * 0.5; w[i] = i end
  end
  -- v and w written in loops (live tables), a local alias of v, and v
  -- read twice per iteration (one read shared)
  local function scale(n, s)
    local a = v
    for i = 1, n do v[i] = v[i] * s + w[i] end
    for i = 1, n do a[i] = a[i] + v[i] end
    local sum = 0
    for i = 1, n do sum = sum + v[i] * i + w[i] end
    return v[1], v[n], w[n], sum
  end
  -- an error half-way leaves the writes before it
  T.check_error("attempt to perform arithmetic on a nil value", scale, function()
    fill(12); v[6] = nil; return 12, 2
  end)
  -- the FFT's closure shape: a table upvalue scaled after a callee wrote it
  local data = list(16)
  local function twice(t, n) for i = 1, n do t[i] = t[i] * 2 end end
  local function cycles(c)
    local norm = 1.0 / 16
    for p = 1, c do
      twice(data, 16)
      for i = 1, 16 do data[i] = data[i] * norm end
    end
    return data[1], data[16], data[7]
  end
  T.check(cycles, function() data = list(16); return 3 end)
end)

test("a live table is read from its reference once a call (the IR's fact)", function()
  local v = { 1, 2, 3 }
  local function scale(n, s)
    for i = 1, n do v[i] = v[i] * s end
    for i = 1, n do v[i] = v[i] + 1 end
    return v[1]
  end
  local j = kjit.jit(scale)
  assert(j(3, 2.0) == 3.0 and v[3] == 7.0)
  local _, calls = j:inspect("llvm"):gsub("call i64 @kjit_lv_getref%(", "")
  assert(calls == 1, "kjit_lv_getref called " .. calls .. " times in the IR")
end)

test("a global table written in a loop beside an assigned global", function()
  local env = {}
  local chunk = load([[
    local n = ...
    for i = 1, n do
      G[i] = (G[i] or 0) + i
      count = count + 1
    end
    return count, G
  ]], "=globals", "t", env)
  local ji = chunk
  local jc = kjit.jit(chunk)
  local function fresh() env.G = list(5); env.count = 0 end
  fresh()
  local c1, g1 = ji(8)
  local copy = {}
  for k, x in pairs(g1) do copy[k] = x end
  fresh()
  local c2, g2 = jc(8)
  assert(c1 == c2, "count")
  for k, x in pairs(copy) do assert(g2[k] == x, "G[" .. k .. "]") end
  for k, x in pairs(g2) do assert(copy[k] == x, "G[" .. k .. "]") end
end)

test("float keys into a kjit array held by a table: elements and located errors", function()
  -- (a float-typed key took kjit_lv_gettable_at before, whose errors had
  -- no file:line)
  local function f(t, n, d)
    local s = 0
    for i = 1, n do
      s = s + t.a[i / d]
      t.a[i * 1.0] = s
    end
    return s
  end
  local function mk(n, d)
    return function()
      local a = kjit.zeros(4)
      for i = 1, 4 do a[i] = i end
      return { a = a }, n, d
    end
  end
  T.check(f, mk(4, 1))
  T.check_error("index 0.5 is not an integer", f, mk(4, 2))
  T.check_error("out of bounds", f, mk(5, 1))
  T.check_error("out of bounds", f, mk(4, 0.5))
end)

test("live tables and float keys with the collector at every allocation", function()
  collectgarbage("generational", 0, 0)   -- a minor collection at every step
  local ok, err = pcall(function()
    local v = {}
    local function churn(n)
      local junk
      for i = 1, n do
        v[i * 1.0] = { i }          -- a new table each time: collections
        junk = { v[i / 1][1], junk }
        v[i] = v[i][1] + #junk
      end
      local s = 0
      for i = 1, n do s = s + v[i] end
      return s
    end
    T.check(churn, function() v = {}; return 40 end)
  end)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  assert(ok, err)
end)
