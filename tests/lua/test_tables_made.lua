-- Differential tests of tables made and walked by compiled code inline
-- (codegen/cg_lua.c, issue 29's speed work on binary-trees): a
-- constructor's list stored straight into its fresh table's array part
-- (setlist_inline), a read whose value goes on as a Lua value (passed,
-- returned, stored, a list item, a phi) copying whatever it finds into its
-- slot (flows_on), a read only tested giving any value's truth, an index
-- past an array part with no hash part reading nil (absent_inline), and
-- slot copies (copy_slot). The interpreted run is the specification
-- (tablediff compares results and the tables' state key by key). Run
-- again with KJIT_NO_STACK_READS=1 (tests.cmake: lua.test_tables_made_api),
-- where every one of these paths takes its helper.
local T = require "tablediff"
local G = require "gc_harness"

-- binary-trees' two functions, as its author wrote them
local function BottomUpTree(item, depth)
  if depth > 0 then
    local i = item + item
    depth = depth - 1
    local left, right = BottomUpTree(i - 1, depth), BottomUpTree(i, depth)
    return { item, left, right }
  else
    return { item }
  end
end

local function ItemCheck(tree)
  if tree[2] then
    return tree[1] + ItemCheck(tree[2]) - ItemCheck(tree[3])
  else
    return tree[1]
  end
end

test("binary-trees' trees: made, returned and walked", function()
  T.check(function(d) local t = BottomUpTree(1, d); return t, ItemCheck(t) end, function() return 6 end)
  T.check(function(d) return ItemCheck(BottomUpTree(-1, d)) end, function() return 8 end)
  -- trees the interpreter made, walked compiled: leaves of other shapes
  T.check(ItemCheck, function() return BottomUpTree(3, 5) end)
  T.check(ItemCheck, function() return { 1, { 2.5 }, { 3, { 4 }, { 5 } } } end)
end)

test("a constructor's list: every kind of item", function()
  local function make(a, b, t, s, f)
    local x = t[1]      -- a number read from a table (tag in registers)
    local y = t[2]      -- a table read from a table (in its slot)
    local z = t.name    -- a string
    return { a, b, x, y, z, s, f, true, false, a > b, 1.5, -7, t }
  end
  T.check(make, function() return 1, 2.25, { 10, { 1 }, name = "n" }, "str", print end)
  T.check(make, function() return 1.5, -3, { 2.5, "two", name = 4 }, "", math.sin end)
  -- nil items: holes in the array part, as interpreted
  T.check(function(a, t) return { a, nil, t[5], a, nil } end, function() return 3, {} end)
  -- the list after fields, and a list past the constructor's first 50
  T.check(function(a, b) return { x = a, y = b, a, b, [10] = a } end, function() return 1, "b" end)
  T.check(function(a)
    return { a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a,
             a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a,
             a, a, a, { a }, a }
  end, function() return 2 end)
  -- made in a loop, each kept in a list
  T.check(function(n)
    local ps = {}
    for i = 1, n do ps[i] = { i, i * 0.5, { i }, "p" .. i } end
    return ps
  end, function() return 40 end)
end)

test("reads whose value goes on: passed, returned, stored, a phi", function()
  local function id(v) return v end
  local function pass(t, i, f) return f(t[i]), t[i] end
  for _, v in ipairs({ 1, 2.5, "s", true, false, print, { 7 } }) do
    T.check(pass, function() return { v, v }, 1, id end)
  end
  -- nil: an empty element, a key past the array part, absent from a
  -- table with a hash part, a table whose __index answers
  T.check(pass, function() return { 1, nil, 3 }, 2, id end)
  T.check(pass, function() return { 1 }, 2, id end)
  T.check(pass, function() return { 1, [5] = "h" }, 5, id end)
  local function tens(_, k) return k * 10 end   -- (one function for both runs)
  T.check(pass, function() return setmetatable({ 1 }, { __index = tens }), 4, id end)
  T.check(pass, function() return setmetatable({}, { __index = { 1, 2, 3, 4 } }), 3, id end)
  -- stored into another table, and a phi (the last table seen)
  T.check(function(src, dst, n)
    local last = nil
    for i = 1, n do
      dst[i] = src[i]
      dst["k" .. i] = src[i]
      if src[i] then last = src[i] end
    end
    return last
  end, function() return { {}, "x", 3, false, { 5 } }, {}, 6 end)
  -- a value read from a table, then indexed, then passed on
  T.check(function(t) return id(t[1][2]), t[1][3] end, function() return { { 1, { 2 }, "c" } } end)
end)

test("a read only tested: any value, holes, keys past the array part", function()
  local function count(t, n)
    local c = 0
    for i = 1, n do
      if t[i] then c = c + 1 end
      if not t[i + 1] then c = c + 100 end
    end
    return c
  end
  T.check(count, function() return { 1, false, "s", {}, print, true, nil, 0, 2.5 }, 12 end)
  -- array parts of every size (alimit a power of 2 or not), keys in the
  -- hash part past the array part, a metatable's __index for absent keys
  for n = 0, 9 do
    T.check(count, function()
      local t = {}
      for i = 1, n do t[i] = i end
      return t, n + 3
    end)
  end
  T.check(count, function() return { 1, 2, 3, [5] = 5, [7] = false }, 9 end)
  T.check(count, function() local t = { 1, 2, 3 }; t.x = 1; t[4] = 4; t[6] = 6; return t, 8 end)
  local function low(_, k) return k < 4 end   -- (one function for both runs)
  T.check(count, function() return setmetatable({ 1 }, { __index = low }), 6 end)
  T.check(count, function() return setmetatable({ 1, 2 }, { __index = { [3] = 1, [5] = 1 } }), 6 end)
  -- a table shrunk by Lua's rehash (alimit below the array's size)
  T.check(count, function()
    local t = {}
    for i = 1, 17 do t[i] = i end
    for i = 9, 17 do t[i] = nil end
    t.a, t.b, t.c = 1, 2, 3
    local _ = #t
    return t, 20
  end)
  -- what is not a table: indexing it is an error, not nil
  T.check_error("attempt to index a number value", count, function() return 5, 2 end)
  T.check_error("attempt to index a nil value", function(t) if t[1][3] then return 1 end end,
                function() return {} end)
  -- a string's __index (the string library) answers
  T.check(function(s) if s[3] then return 1 end return 2 end, function() return "abc" end)
end)

test("tables made and walked survive collections at every allocation", function()
  for _, mode in ipairs(G.modes) do
    G.with_gc(mode, function()
      T.check(function(d) local t = BottomUpTree(0, d); return ItemCheck(t), t end, function() return 7 end)
      T.check(function(n)
        local ps, prev = {}, { 0 }
        for i = 1, n do
          local node = { i, prev, "n" .. i, { i * 2 } }
          ps[i] = { node[2], node[3], node }
          prev = node
        end
        return ps, prev
      end, function() return 60 end)
    end)
  end
end)

test("a list into a table that is not white: the helper stores it", function()
  -- a fresh table a collection step marked between its making and its
  -- list (the constructor's items made first: calls that allocate); the
  -- GC barrier then matters, and the helper's path takes it
  local function junk() local j = {}; for k = 1, 30 do j[k] = { k } end; return { k = j } end
  G.with_gc("incremental", function()
    T.check(function(n)
      local out = {}
      for i = 1, n do out[i] = { junk(), junk(), i } end
      collectgarbage("collect")
      return out
    end, function() return 20 end)
  end)
end)
