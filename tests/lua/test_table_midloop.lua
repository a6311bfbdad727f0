-- Differential tests of loops over tables whose header changes mid-loop
-- (the array part's address and size, the metatable, the nodes), through
-- something compiled code calls: the array part grown or shrunk by a write
-- that misses (a rehash moves it), a metatable set or taken away mid-loop
-- (__newindex on the empty elements of the array part, __index on its
-- holes), a callee, the interrupt poll's count hook; and a non-number in the
-- middle of a numeric array, with the error's file:line. Written for a
-- cache of tables' headers across loop iterations (measured and dropped:
-- see git log), they guard any such hoisting: without a reload after every
-- call, they fail (differences, and freed memory read). The interpreted
-- function is the specification (tablediff: results, then every argument
-- key by key).
local T = require "tablediff"
local kjit = require "kjit"

local function floats(n, f)
  local t = {}
  for i = 1, n do t[i] = f and f(i) or i * 0.25 end
  return t
end

test("sparse-like loops: three tables read, one written, as written", function()
  local function mult(n, cycles, vy, val, row, col, vx)
    for p = 1, cycles do
      for r = 1, n do
        local sum = 0
        for i = row[r], row[r + 1] - 1 do sum = sum + vx[col[i]] * val[i] end
        vy[r] = sum
      end
    end
  end
  T.check(mult, function()
    local n, nr = 20, 3
    local row, col = { 1 }, {}
    for r = 1, n do
      row[r + 1] = row[r] + nr
      for i = 0, nr - 1 do col[row[r] + i] = 1 + (r + i * 7) % n end
    end
    return n, 3, {}, floats(n * nr), row, col, floats(n)
  end)
end)

test("the array part grown inside the loop (moved by a write that misses)", function()
  local function grow(t, n)
    local s = 0
    for i = 1, n do
      s = s + t[i]
      if i == 3 then for k = n + 1, n + 300 do t[k] = k * 0.5 end end
    end
    for i = 1, n + 300 do s = s + t[i] end
    return s
  end
  T.check(grow, function() return floats(8), 8 end)
  -- grown through the loop's own writes, read right after
  T.check(function(t, n)
    local s = 0
    for i = 1, n do t[#t + 1] = i; s = s + t[i] + t[#t] end
    return s, #t
  end, function() return floats(4), 200 end)
end)

test("the array part shrunk by a rehash mid-loop (holes read as nil)", function()
  local function shrink(t, n)
    local s, holes = 0, 0
    for i = 1, n do
      local v = t[i]
      if v then s = s + v else holes = holes + 1 end
      if i == 2 then
        for k = 3, n do t[k] = nil end
        for k = 1, 64 do t[k + 0.5] = k end   -- new keys in the hash part: a rehash
        for k = 3, n, 3 do t[k] = k end
      end
    end
    return s, holes
  end
  T.check(shrink, function() return floats(40), 40 end)
end)

-- metamethods shared by both runs (tablediff compares metatables' fields)
local function times10(t, k, v) rawset(t, k, v * 10) end
local function negate(t, k, v) rawset(t, k, -v) end
local function hundreds(_, k) return k * 100 end
local function seven() return 7 end

test("a metatable set mid-loop: __newindex on empty elements, __index on holes", function()
  local function writes(t, n)
    for i = 1, n do
      if i == 3 then setmetatable(t, { __newindex = times10 }) end
      t[i] = i
    end
    return t
  end
  -- the array part has room for 8, elements 3..8 empty
  T.check(writes, function()
    local t = { 1, 2, 3, 4, 5, 6, 7, 8 }
    for i = 3, 8 do t[i] = nil end
    return t, 8
  end)
  local function reads(t, n)
    local c, s = 0, 0
    for i = 1, n do
      if i == 4 then setmetatable(t, { __index = hundreds }) end
      if t[i] then c = c + 1 end
      s = s + (t[i] or -1)
    end
    return c, s
  end
  T.check(reads, function()
    local t = { 1, 2, 3, 4, 5, 6, 7, 8 }
    t[2], t[5], t[7] = nil, nil, nil
    return t, 8
  end)
  -- and taken away mid-loop: the inline writes resume
  T.check(function(t, n)
    for i = 1, n do
      if i == 5 then setmetatable(t, nil) end
      t[i] = i * 2
    end
    return t
  end, function()
    local t = setmetatable({ 1, 2, 3, 4, 5, 6, 7, 8 }, { __newindex = negate })
    for i = 2, 8, 2 do t[i] = nil end
    return t, 8
  end)
end)

test("a callee changes the table: grown, emptied, given a metatable", function()
  local function more(t) for k = #t + 1, #t + 100 do t[k] = 1.5 end end
  local function empty(t) for k = #t, 1, -1 do t[k] = nil end; t.x = 1; t.y = 2 end
  local function run(t, n, f)
    local s = 0
    for r = 1, 3 do
      for i = 1, n do s = s + (t[i] or 0) end
      f(t)
    end
    return s, #t
  end
  T.check(run, function() return floats(10), 10, more end)
  T.check(run, function() return floats(10), 10, empty end)
  local function classed(t) setmetatable(t, { __index = seven }); t[5] = nil end
  T.check(run, function() return floats(10), 10, classed end)
  -- a field read by name in the loop, the table's nodes rebuilt by the callee
  local function rekey(o, i) for k = 1, 40 do o["k" .. k .. i] = k end; o.x = o.x + 1 end
  T.check(function(o, n, f)
    local s = 0
    for i = 1, n do
      s = s + o.x * o.y
      if i % 4 == 0 then f(o, i) end
    end
    return s
  end, function()
    return { x = 1.5, y = 2 }, 20, rekey
  end)
end)

test("a non-number in the middle of a numeric array: the error and its line", function()
  local function sum(t, n)
    local s = 0
    for i = 1, n do s = s + t[i] * 2 end
    return s
  end
  T.check_error("attempt to mul a 'string' with a 'number'", sum, function()
    local t = floats(20); t[11] = "x"; return t, 20
  end)
  T.check_error("attempt to perform arithmetic on a nil value", sum, function()
    local t = floats(20); t[11] = nil; return t, 20
  end)
  -- the line is the user's
  local ok, err = pcall(kjit.jit(sum), (function() local t = floats(5); t[3] = {}; return t end)(), 5)
  assert(not ok and err:find("test_table_midloop.lua:" .. debug.getinfo(sum, "S").linedefined + 2, 1, true), err)
end)

test("nested loops: the outer table changed in the inner loop", function()
  local function sor(mat, m, n, grow)
    local s = 0
    for y = 2, m - 1 do
      local v, vp, vn = mat[y], mat[y - 1], mat[y + 1]
      for x = 2, n - 1 do
        v[x] = 0.25 * (vp[x] + vn[x] + v[x - 1] + v[x + 1])
        if grow and x == 3 then mat[#mat + 1] = floats(n); vp[#vp + 1] = 0.5 end
      end
      s = s + v[2]
    end
    return s, #mat
  end
  local function make(grow)
    return function()
      local mat = {}
      for y = 1, 6 do mat[y] = floats(7, function(i) return i * y * 0.125 end) end
      return mat, 6, 7, grow
    end
  end
  T.check(sor, make(false))
  T.check(sor, make(true))
end)

test("the poll's count hook grows the table the loop reads", function()
  local t = floats(1000)
  local function run(t, n)
    local s = 0
    for i = 1, n do s = s + t[(i % 1000) + 1] end
    return s
  end
  local hooked = 0
  local function hook()
    hooked = hooked + 1
    local m = #t
    for k = m + 1, m + 3000 do t[k] = 0.0 end   -- moves the array part
  end
  local want = run(t, 300000)
  local j = kjit.jit(run)
  j(t, 10)   -- compiled before the hook is set
  debug.sethook(hook, "", 50000)
  local got = j(t, 300000)
  debug.sethook()
  assert(hooked > 0, "the hook never ran")
  assert(got == want, string.format("got %s, want %s", got, want))
end)
