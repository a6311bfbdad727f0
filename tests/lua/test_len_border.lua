-- Differential tests of `#t` in loops that also index t near its border.
-- Lua 5.4's `#t` (luaH_getn) may rewrite the table's array-size field
-- (alimit) to the border it found, and an integer read or write just past
-- it (luaH_getint) may move it again; compiled code's inline element reads
-- and writes (cg_lua.c probe, cg_lua_field_probe, absent_inline,
-- setlist_inline) test an index against that field. These loops would
-- differ from the interpreter if compiled code kept the field, or the
-- array part's address, across a `#` or a call: with holes, after
-- `t[#t + 1] = v`, after table.remove, after `t[#t] = nil`, with a read
-- only tested (`if t[n + 1]`). The interpreted function is the
-- specification (tablediff: results, then the tables key by key).
local T = require "tablediff"

-- a table of n values whose array part is a power of 2 (8 for n <= 8),
-- with the keys in holes set to nil afterwards
local function holed(n, holes)
  local t = {}
  for i = 1, n do t[i] = i * 1.5 end
  for _, h in ipairs(holes or {}) do t[h] = nil end
  return t
end

test("appending with t[#t + 1] while reading the last elements", function()
  T.check(function(t, n)
    local s = 0
    for i = 1, n do
      t[#t + 1] = i
      s = s + t[#t] + (t[#t - 1] or 0) * 2
      if t[#t + 1] then s = s + 1000 end
    end
    return s, #t
  end, function() return holed(3), 40 end)
  -- integers only, the chain's integer form
  T.check(function(t, n)
    local s = 0
    for i = 1, n do
      local m = #t
      t[m + 1] = i * 3
      s = s + t[m + 1] - (t[m] or 0)
    end
    return s, #t
  end, function() return { 1, 2, 3 }, 70 end)
end)

test("a border that moves down: t[#t] = nil and reads past it", function()
  T.check(function(t)
    local s, steps = 0, 0
    while #t > 0 do
      local n = #t
      s = s + t[n] + (t[n + 1] or 100) + (t[n + 2] or 10)
      if t[n + 1] then s = s + 1 end
      t[n] = nil
      steps = steps + 1
    end
    return s, steps, t[1], t[2]
  end, function() return holed(16) end)
end)

test("holes: # picks a border, reads and writes around it", function()
  for _, holes in ipairs({ { 7, 8 }, { 4 }, { 5, 6, 7, 8 }, { 2, 6 }, { 9, 10, 11, 12 } }) do
    T.check(function(t, rounds)
      local s = 0
      for r = 1, rounds do
        local n = #t
        -- every index near the border read, inline or through the helper
        for i = 1, n + 3 do
          local v = t[i]
          if v then s = s + v * i else s = s - i end
        end
        t[n + 1] = r + 0.5   -- fills the hole: the border moves up
        if r % 3 == 0 then t[n] = nil end
      end
      return s, #t
    end, function() return holed(12, holes), 9 end)
  end
end)

test("reads past the border only tested: if t[k] then", function()
  T.check(function(t, n)
    local c = 0
    for i = 1, n do
      local m = #t
      if t[m] then c = c + 1 end
      if t[m + 1] then c = c + 100 end
      if t[m + 2] then c = c + 10000 end
      if i % 2 == 0 then t[m + 1] = i else t[m] = nil end
    end
    return c, #t
  end, function() return holed(8, { 7, 8 }), 30 end)
end)

test("table.remove and table.insert between # and indexing", function()
  T.check(function(t, q)
    local s = 0
    while #t > 0 do
      local n = #t
      s = s + t[n] * n
      table.remove(t)
      if #t > 0 then t[#t] = t[#t] * 2 end
      if n % 4 == 0 then table.insert(q, n) end
    end
    for i = 1, #q do s = s + q[i] end
    return s, #t, #q
  end, function() return holed(20), {} end)
  T.check(function(t, n)
    local s = 0
    for i = 1, n do
      table.insert(t, 1, i)
      s = s + t[1] + t[#t] + (t[#t + 1] or 0)
      if i % 3 == 0 then s = s + table.remove(t, 2) end
    end
    return s, #t
  end, function() return { 0.5, 0.25 }, 25 end)
end)

test("a numeric for bounded by #t, the table growing and shrinking inside", function()
  -- (the bound is evaluated once, as Lua does; the reads see the table now)
  T.check(function(t)
    local s = 0
    for i = 1, #t do
      local v = t[i]
      if v then s = s + v end
      if i % 2 == 0 then t[#t + 1] = i else t[#t] = nil end
      s = s + #t
    end
    return s, #t
  end, function() return holed(11) end)
end)
