-- Differential tests of numeric for loops whose bounds are read from
-- tables (codegen/cg_version.c emit_kind_split): the initial value and the
-- step are numbers of either kind until the loop starts, so the loop is
-- compiled twice, an integer copy entered where forprep makes an integer
-- loop and a float copy for the rest, as Lua's forprep decides once. The
-- interpreted run is the specification (tablediff: results, subtypes and
-- tables compared key by key, error messages compared whole).
local T = require "tablediff"
local kjit = require "kjit"

-- SciMark's sparse matrix times vector, as written
local function sparse_mult(n, cycles, vy, val, row, col, vx)
  for p = 1, cycles do
    for r = 1, n do
      local sum = 0
      for i = row[r], row[r + 1] - 1 do sum = sum + vx[col[i]] * val[i] end
      vy[r] = sum
    end
  end
end

-- a 4 x 4 matrix with three entries a row (row: where each row's starts)
local function matrix(conv)
  conv = conv or function(x) return x end
  local row, col, val, vx = {}, {}, {}, {}
  for r = 1, 5 do row[r] = conv(1 + 3 * (r - 1)) end
  for k = 1, 12 do col[k] = 1 + (k * 7) % 4; val[k] = k * 0.25 end
  for c = 1, 4 do vx[c] = c - 0.5 end
  return row, col, val, vx
end

test("integer bounds: the integer copy; float bounds: the float copy", function()
  T.check(sparse_mult, function()
    local row, col, val, vx = matrix()
    return 4, 2, {}, val, row, col, vx
  end)
  -- bounds that are floats with integral values: a float loop (the keys
  -- normalize to the same elements)
  T.check(sparse_mult, function()
    local row, col, val, vx = matrix(function(x) return x + 0.0 end)
    return 4, 1, {}, val, row, col, vx
  end)
  -- one row's bound a float, the others integers: each loop's kind at its
  -- own entry
  T.check(sparse_mult, function()
    local row, col, val, vx = matrix()
    row[3] = 7.0
    return 4, 1, {}, val, row, col, vx
  end)
  -- integer elements: the sums stay integers
  T.check(sparse_mult, function()
    local row, col, val, vx = matrix()
    for k = 1, 12 do val[k] = k end
    for c = 1, 4 do vx[c] = c end
    return 4, 1, {}, val, row, col, vx
  end)
end)

test("the control variable's kind is the loop's", function()
  local function kinds(t)
    local s, last, n = 0, nil, 0
    for i = t.a, t.b, t.c do
      s = s + i
      last = i
      n = n + 1
    end
    return s, last, n
  end
  local cases = {
    { a = 1, b = 5, c = 1 }, { a = 1.0, b = 5, c = 1 }, { a = 1, b = 5, c = 1.0 },
    { a = 1, b = 5.5, c = 1 }, { a = 0.5, b = 3, c = 1 }, { a = 5, b = 1, c = -2 },
    { a = 5.0, b = 1, c = -0.5 }, { a = 1, b = 0, c = 1 }, { a = 1.5, b = 1, c = 1 },
    { a = math.maxinteger - 2, b = math.maxinteger, c = 1 },
    { a = math.mininteger, b = math.mininteger + 2, c = 1 },
    { a = 1, b = math.huge, c = math.maxinteger // 4 },
    { a = 1, b = -math.huge, c = 1 }, { a = 1, b = 0 / 0, c = 1 }, { a = 0 / 0, b = 3, c = 1 },
    { a = 1.0, b = 1e300, c = 1e299 }, { a = 1, b = 3, c = math.huge },
    { a = 3, b = 1, c = -math.huge },
  }
  for _, c in ipairs(cases) do T.check(kinds, function() return { a = c.a, b = c.b, c = c.c } end) end
  -- a key: a whole float finds the integer's element, a fractional one misses
  local function keys(t, a, b)
    local s = 0
    for i = a[1], b[1] do s = s + (t[i] or 100) end
    return s
  end
  local function tab() return { 10, 20, 30, 40 } end
  T.check(keys, function() return tab(), { 1 }, { 4 } end)
  T.check(keys, function() return tab(), { 1.0 }, { 4 } end)
  T.check(keys, function() return tab(), { 0.5 }, { 4 } end)
  T.check(keys, function() return tab(), { 2 }, { 3.9 } end)
end)

test("leaving the loop early: break, return", function()
  -- (a value of the loop used by a return inside it: one copy of the loop)
  local function find(t, b, x)
    for i = b[1], b[2] do
      if t[i] == x then return i, t[i] end
    end
    return -1
  end
  local function upto(t, b, x)
    local s, at = 0, nil
    for i = b[1], b[2], b[3] do
      if t[i] > x then at = i; break end
      s = s + t[i]
    end
    return s, at
  end
  local function tab() return { 3, 1.5, 7, 2, 9 } end
  for _, lo in ipairs({ 1, 1.0, 2, 0.5 }) do
    T.check(find, function() return tab(), { lo, 5 }, 7 end)
    T.check(find, function() return tab(), { lo, 5 }, 8 end)
    T.check(upto, function() return tab(), { lo, 5, 1 }, 5 end)
    T.check(upto, function() return tab(), { 5, lo, -1 }, 8 end)
  end
end)

test("bounds that are strings convert, as lvm.c's forprep does; others raise", function()
  local function f(t)
    local s, last = 0, nil
    for i = t.a, t.b, t.c do s = s + i; last = i end
    return s, last
  end
  -- (Lua 5.4's forprep converts a string bound with luaV_tonumber_: the
  -- loop is then a float loop, as its initial value is not an integer)
  T.check(f, function() return { a = "1", b = 3, c = 1 } end)
  T.check(f, function() return { a = 1, b = "3", c = 1 } end)
  T.check(f, function() return { a = 1, b = 3, c = "1" } end)
  T.check(f, function() return { a = " 0x10 ", b = "20.5", c = 2 } end)
  T.check_error("initial value", f, function() return { a = "x", b = 3, c = 1 } end)
  T.check_error("limit", f, function() return { a = 1, b = "3x", c = 1 } end)
  T.check_error("initial value", f, function() return { a = {}, b = 3, c = 1 } end)
  T.check_error("limit", f, function() return { a = 1, b = nil, c = 1 } end)
  T.check_error("step", f, function() return { a = 1, b = 3, c = 0 } end)
  T.check_error("step", f, function() return { a = 1.0, b = 3, c = 0.0 } end)
end)

test("a table changed inside the loop, and metatables", function()
  -- the loop writes the elements it reads and the bounds' table: the bounds
  -- were read once, at entry
  local function writes(row, v)
    local s = 0
    for i = row[1], row[2] do
      v[i] = v[i] * 2
      row[2] = row[2] + 1
      v[i + 1] = (v[i + 1] or 0) + i
      s = s + v[i]
    end
    return s
  end
  T.check(writes, function() return { 1, 3 }, { 1.5, 2, 3, 4 } end)
  T.check(writes, function() return { 1.0, 3 }, { 1.5, 2, 3, 4 } end)
  -- a missing element goes through __index, which sees the key as it is
  local function idx(t, b)
    local s = 0
    for i = b.lo, b.hi do s = s + t[i] end
    return s
  end
  local miss = { __index = function(_, k) return math.type(k) == "float" and 1000 or 10 end }
  local function proxy() return setmetatable({ 1, 2 }, miss) end
  T.check(idx, function() return proxy(), { lo = 1, hi = 4 } end)
  T.check(idx, function() return proxy(), { lo = 1.0, hi = 4 } end)
  T.check(idx, function() return proxy(), { lo = 0.5, hi = 4 } end)
  -- __newindex on elements the loop adds
  local function fill(t, b)
    for i = b[1], b[2] do t[i] = i end
    return rawlen(t)
  end
  local logmt = { __newindex = function(t, k, v) local log = rawget(t, "log"); log[#log + 1] = k; rawset(t, k, v) end }
  local function logged() return setmetatable({ log = {} }, logmt) end
  T.check(fill, function() return logged(), { 1, 3 } end)
  T.check(fill, function() return logged(), { 1.0, 3 } end)
  -- an error in the middle leaves the writes before it
  local function half(t, b)
    for i = b[1], b[2] do t[i] = t[i] + 1 end
  end
  T.check_error("attempt to", half, function() return { 1, 2, "x", 4 }, { 1, 4 } end)
  T.check_error("attempt to", half, function() return { 1, 2, {}, 4 }, { 1.0, 4 } end)
end)

test("the integer copy is made (a fact of the code)", function()
  if os.getenv("KJIT_NO_KIND_SPLIT") then return end   -- (lua.test_for_kinds_one)
  local f = kjit.jit(sparse_mult)
  local row, col, val, vx = matrix()
  local vy = {}
  f(4, 1, vy, val, row, col, vx)
  local ll = f:inspect("llvm")
  assert(ll:find("intcopy", 1, true), "no integer copy of the inner loop")
end)

test("tables made in both copies stay anchored under a collection at every allocation", function()
  local G = require "gc_harness"
  -- each iteration makes a table and a string the next ones read back
  local function build(b, out)
    local prev = nil
    for i = b[1], b[2] do
      local t = { i, prev, tostring(i) .. "x" }
      out[#out + 1] = t
      prev = t
    end
    local s = 0
    for i = b[1], b[2] do s = s + out[i][1] + #out[i][3] end
    return s, prev and prev[1]
  end
  for _, mode in ipairs(G.modes) do
    G.with_gc(mode, function()
      T.check(build, function() return { 1, 40 }, {} end)
      T.check(build, function() return { 1.0, 40 }, {} end)
    end)
  end
end)
