-- Differential tests of innermost loops over tables that change inside
-- them, for any code that keeps a table's array part (its size and
-- address) from one access to the next: t[i] and t[i] = v in an innermost
-- loop over a table made before it, changed inside that loop through
-- something the loop calls (a Lua callee, a metamethod, the interrupt
-- poll's hook): the array part moved by a grow, shrunk by a rehash, a
-- metatable set on it, every key kind at and past the border, errors, a
-- collection at every allocation. Written for an array part kept across
-- innermost loops (measured and dropped: docs/performance.md, "Array
-- parts kept across a loop"); with that code's forgetting after calls
-- turned off, this file crashed (a read through a freed array part). The
-- interpreted function is the specification (tablediff: results, then
-- every argument key by key).
local T = require "tablediff"
local kjit = require "kjit"

local function floats(n)
  local t = {}
  for i = 1, n do t[i] = i * 0.25 end
  return t
end

local function grow(t, v, i)
  if i == 3 then for k = #t + 1, #t + 300 do t[k] = k * 0.5 end end
  return v or 0
end
local function shrink(t, v, i)
  if i == 3 then
    for k = #t, 1, -1 do t[k] = nil end
    for k = 1, 40 do t["h" .. k] = k end   -- a rehash: the array part goes
  end
  return v or 0
end
-- (metamethods made once: tablediff compares functions by identity)
local function hundred(_, k) return k * 100 end
local function plus1000(u, k, x) rawset(u, k, x + 1000) end
local function classed(t, v, i)
  if i == 4 then
    for k = #t, 6, -1 do t[k] = nil end
    setmetatable(t, { __index = hundred, __newindex = plus1000 })
  end
  return v or 0
end

test("reads: the callee grows, shrinks, classes the table mid-loop", function()
  local function run(t, n, f)
    local s = 0
    for i = 1, n do s = s + f(t, t[i], i) end
    return s, #t
  end
  for _, f in ipairs({ grow, shrink, classed }) do
    T.check(run, function() return floats(12), 12, f end)
    T.check(run, function() return floats(12), 40, f end)   -- past the border too
  end
end)

test("writes: the callee moves the array part written into", function()
  local function run(x, y, n, f)
    for i = 1, n do
      y[i] = x[i] * 2
      f(y, y[i], i)
    end
    return #y
  end
  for _, f in ipairs({ grow, shrink, classed }) do
    T.check(run, function() return floats(12), floats(8), 12, f end)
    T.check(run, function() return floats(12), {}, 12, f end)
  end
end)

local function growing(u, k)
  for j = 11, 400 do rawset(u, j, j * 1.0) end
  return 0.5
end
local function rehashing(u, k, v)
  for j = 1, 50 do rawset(u, "k" .. j, j) end
  rawset(u, k, v)
end

test("a metamethod the loop's own access runs changes the table", function()
  -- __index on a hole grows the table (moves its array part)
  local function run(t, n)
    local s = 0
    for i = 1, n do s = s + t[i] end
    return s, #t
  end
  T.check(run, function()
    local t = floats(10)
    t[4] = nil
    setmetatable(t, { __index = growing })
    return t, 30
  end)
  -- __newindex on an empty element rehashes
  T.check(function(t, n)
    for i = 1, n do t[i] = i * 2 end
    return #t
  end, function()
    local t = floats(10)
    t[5] = nil
    setmetatable(t, { __newindex = rehashing })
    return t, 20
  end)
end)

test("keys at and past the border: 0, negative, huge, floats", function()
  local function run(t, keys, f)
    local s, c = 0, 0
    for i = 1, #keys do
      local v = t[keys[i]]
      if v then s = s + v else c = c + 1 end
      f(t, nil, i)
    end
    return s, c
  end
  local keys = { 1, 2, 0, -1, 3, 12, 13, 2 ^ 40, math.maxinteger, math.mininteger, 1.0, 2.5, 12.0, 3, 1 }
  for _, f in ipairs({ grow, shrink, classed }) do
    T.check(run, function() return floats(12), keys, f end)
  end
  -- writes with the same keys (a float key with an integral value is that integer)
  T.check(function(t, ks)
    for i = 1, #ks do t[ks[i]] = i end
    return #t
  end, function() return floats(6), { 1, 6, 7, 0, -1, 2.0, 8.0, 2 ^ 40, 3 } end)
end)

test("a non-number mid-loop: the error and its line", function()
  local function run(t, n, f)
    local s = 0
    for i = 1, n do s = s + f(t, t[i] * 2, i) end
    return s
  end
  T.check_error("attempt to perform arithmetic on a nil value", run, function()
    return floats(20), 20, shrink
  end)
  T.check_error("attempt to mul a 'string' with a 'number'", run, function()
    local t = floats(20); t[9] = "x"; return t, 20, grow
  end)
  local ok, err = pcall(kjit.jit(run), (function() local t = floats(5); t[4] = {}; return t end)(), 5, grow)
  assert(not ok and err:find("test_table_kept.lua:" .. debug.getinfo(run, "S").linedefined + 2, 1, true), err)
end)

test("the poll's hook grows and shrinks the table mid-loop", function()
  local t = floats(1000)
  local function run(t, n)
    local s = 0
    for i = 1, n do
      local v = t[(i % 1200) + 1]
      if v then s = s + v end
    end
    return s
  end
  local j = kjit.jit(run)
  j(t, 10)   -- compiled before the hook is set
  for round = 1, 2 do
    local hooked = 0
    local function hook()
      hooked = hooked + 1
      if round == 1 then
        local m = #t
        for k = m + 1, m + 3000 do t[k] = 0.0 end   -- moves the array part
      else
        -- rehashed: the array part goes, then comes back elsewhere with
        -- the same values (the sum does not depend on when the hook runs)
        local keep = {}
        for k = 1, #t do keep[k] = t[k] end
        for k = #t, 1, -1 do t[k] = nil end
        for k = 1, 40 do t["h" .. hooked .. "_" .. k] = k end
        for k = 1, #keep do t[k] = keep[k] end
      end
    end
    local t2 = {}
    for k, v in pairs(t) do t2[k] = v end
    -- the interpreted run on a copy, its hook doing the same to the copy
    local saved = t
    t = t2
    debug.sethook(hook, "", 50000)
    local want = run(t2, 300000)
    debug.sethook()
    t = saved
    hooked = 0
    debug.sethook(hook, "", 50000)
    local got = j(t, 300000)
    debug.sethook()
    assert(hooked > 0, "the hook never ran")
    assert(got == want, string.format("round %d: got %s, want %s", round, got, want))
  end
end)

test("a collection at every allocation while the callee grows the table", function()
  local function run(t, n, f)
    local s = 0
    for i = 1, n do s = s + f(t, t[i], i) end
    return s, #t
  end
  collectgarbage("incremental", 0, 1000)   -- pause 0: a cycle always running
  local ok, err = pcall(function()
    for _, f in ipairs({ grow, shrink, classed }) do
      T.check(run, function() return floats(12), 40, f end)
    end
  end)
  collectgarbage("incremental", 200, 100)
  assert(ok, err)
end)
