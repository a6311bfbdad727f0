-- Dead call results (issue 29, bench/lua_programs.lua's binary-trees): the
-- stack slots where compiled calls leave Lua results are cleared after the
-- results' last use in their block (codegen/cg_lua.c plan_kills), so that a
-- tree built by a call and used once is garbage for the collector, as it
-- is interpreted, instead of staying reachable from the frame until the
-- function returns. Differential: every pattern of use (once, twice, after
-- another call, in a loop, after a loop, several results, a result passed
-- on, returned, never used) computes what the interpreter computes; the
-- collector frees what the interpreter lets it free; and collections at
-- (about) every allocation lose nothing still in use. Run again by ctest
-- with KJIT_NO_STACK_READS=1 (lua.test_slowprogs_api: slots cleared
-- through the Lua API).
local kjit = require "kjit"
local T = require "tablediff"

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

local function mk(i) return { i, i * 2, name = "n" .. i } end
local function two(i) return mk(i), mk(i + 1) end
local function first(t) return t[1] end
local function noop() return 0 end

test("call results used once, twice, after other calls: as interpreted", function()
  -- binary-trees' main loop and stretch tree
  T.check_args(function(d)
    local check = 0
    for i = 1, 4 do
      check = check + ItemCheck(BottomUpTree(i, d)) + ItemCheck(BottomUpTree(-i, d))
    end
    local stretch = BottomUpTree(0, d + 1)
    local s = ItemCheck(stretch)
    local long = BottomUpTree(0, d)
    return check, s, ItemCheck(long), long
  end, 5)
  -- a result read, then another call, then read again (live across the call)
  T.check_args(function(i)
    local a = mk(i)
    local s = a[1]
    noop()
    local b = mk(i + 1)
    return s + a[2] + b[1], a.name, b.name
  end, 3)
  -- several results, one of them never used, one used late
  T.check_args(function(i)
    local a, b = two(i)
    local c, d = two(i + 10)
    local s = first(a) + first(c)
    noop()
    return s + d[2], b
  end, 4)
  -- a result never used at all, and one passed straight on
  T.check_args(function(i)
    mk(i)
    two(i)
    return first(mk(i + 1)), ItemCheck(BottomUpTree(i, 2))
  end, 7)
end)

test("a result read by a call that gives all its results to the next: as interpreted", function()
  -- table.unpack(t, 1, t.n) is made where h takes its values (cg_vararg.c),
  -- after its own instruction: t must still be in its slot then
  local function run(x)
    local t = table.pack(x, nil, x)
    local s = 0
    local h = function(...) s = s + select('#', ...) end
    local keep = { h }
    h(table.unpack(t, 1, t.n))
    noop()
    return s, #keep
  end
  T.check_args(run, 3)
  T.check_args(run, 2.5)
  T.check_args(function(x)
    local t = table.pack(x, x + 1)
    local h = function(...) return select('#', ...), ... end
    local n, a, b = h(table.unpack(t, 1, t.n))
    noop()
    return n, a, b
  end, 4)
end)

test("call results across blocks and loops: as interpreted", function()
  -- made before a loop, used after it (not cleared inside)
  T.check_args(function(n)
    local a = mk(n)
    local s = 0
    for i = 1, n do s = s + first(mk(i)) end
    return s + a[1], a
  end, 20)
  -- made and used in each iteration; the last one returned
  T.check_args(function(n)
    local s, last = 0, nil
    for i = 1, n do
      local t = mk(i)
      s = s + t[1] + t[2]
      last = t
    end
    return s, last
  end, 15)
  -- used on one branch only, and in a phi
  T.check_args(function(n)
    local a = mk(n)
    local r
    if n > 2 then r = a[1] else r = -1 end
    local b = mk(n + 1)
    local c = n > 2 and b or a
    return r, c[1], c
  end, 3)
  T.check_args(function(n)
    local a = mk(n)
    local r
    if n > 2 then r = a[1] else r = -1 end
    local b = mk(n + 1)
    local c = n > 2 and b or a
    return r, c[1], c
  end, 1)
  -- results of other kinds: strings and functions
  T.check_args(function(n)
    local s = tostring(n) .. "x"
    local f = function(x) return x + n end
    local g = (function() return f end)()
    noop()
    return s, g(1), #s
  end, 5)
end)

-- Lua lets the collector free a table nothing can reach any more; the
-- interpreter does here, and compiled code must not keep it longer.
local weak = setmetatable({}, { __mode = "k" })
local function build(n)
  local t = { n }
  for i = 1, n do t[i + 1] = { i } end
  return t
end
local function size(t) return #t end
local function mark(t) weak[t] = true return t end
local function collected()
  collectgarbage("collect")
  return next(weak) == nil
end

test("a tree made by a call and used once is garbage for the collector", function()
  local function run(n)
    local s = size(mark(build(n)))
    local gone = collected()
    return s, gone
  end
  local function run2(n)
    local c = 0
    for i = 1, 3 do c = c + size(mark(build(n + i))) end
    local gone = collected()
    return c, gone
  end
  for _, f in ipairs({ run, run2 }) do
    local ri, gi = f(50)
    truthy(gi, "interpreted: the tree was freed")
    local rc, gc = kjit.jit(f)(50)
    eq(rc, ri, "the result")
    eq(gc, gi, "compiled: the tree was freed too")
  end
end)

local with_gc = require("gc_harness").with_gc

for _, mode in ipairs({ "incremental", "generational" }) do
  test("results still in use survive collections at every allocation (" .. mode .. ")", function()
    local function run(d)
      local a = BottomUpTree(1, d)
      local b = BottomUpTree(2, d)        -- a is live across this call
      local s = ItemCheck(b)
      local c, e = two(d)
      local t = 0
      for i = 1, 3 do t = t + ItemCheck(BottomUpTree(i, d)) + first(c) end
      return s + ItemCheck(a) + t + e[2], a, e
    end
    local f = kjit.jit(run)
    with_gc(mode, function()
      for round = 1, 3 do
        local ri, ai, ei = run(4)
        local rc, ac, ec = f(4)
        eq(rc, ri, "the sum")
        eq(ItemCheck(ac), ItemCheck(ai), "the first tree")
        eq(ec[2], ei[2], "the second result")
      end
    end)
  end)
end
