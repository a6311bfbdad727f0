-- Frames, constructors and tree walks in compiled code (issue 29's speed
-- work on allocation and compiled-to-compiled calls): frames opened and
-- closed by moving the stack's top (host/lua_stack.h kls_open), a
-- constructor's list written into its new table's array part in one call
-- (runtime/luatable.c kjit_lt_setlist), t[i] of a present value or of a
-- key no __index can see read in one flat call (kjit_lt_sgeti). Each is
-- differential: the interpreted function is the specification, tables are
-- compared key by key and in next() order, and collections run at (about)
-- every allocation. Run again by ctest with KJIT_NO_STACK_READS=1
-- (lua.test_frames_api), where every one of those paths takes the Lua API.
local kjit = require "kjit"
local T = require "tablediff"

-- the keys of t in next() order, and its border: the same node and array
-- layout gives the same order
local function layout(t)
  local ks = {}
  for k in next, t do ks[#ks + 1] = tostring(k) .. ":" .. (math.type(k) or type(k)) end
  return table.concat(ks, " ") .. " #" .. #t
end

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

test("binary trees: built and walked through compiled calls, as interpreted", function()
  local function run(d) local t = BottomUpTree(1, d) return t, ItemCheck(t) end
  for _, d in ipairs({ 0, 1, 4, 8 }) do T.check_args(run, d) end
  T.check_args(function(d) return ItemCheck(BottomUpTree(-1, d)) end, 6)
  -- the walk over a tree made interpreted, and over a float tree
  T.check(ItemCheck, function() return BottomUpTree(3, 5) end)
  T.check(ItemCheck, function() return { 0.5, { 1.5 }, { 2 } } end)
end)

test("constructors: every kind of item, the array part and next() order as interpreted", function()
  local function mk(a, b, s, t, f)
    local x = { a, b, true, false, s, t, f, -0.0, math.mininteger, a + b }
    local y = { a, nil, b }
    local z = { nil, nil }
    local w = { t, { t, { a } }, s }
    local v = { a, b, n = 3, [10] = s }
    return x, y, z, w, v, #x, #y, #z, layout(x), layout(y), layout(z), layout(v)
  end
  T.check_args(mk, 7, 2.5, "str", { 1 }, print)
  T.check_args(mk, 1, 2, "", {}, mk)
  local j = kjit.jit(mk)
  local r1 = table.pack(mk(3, 4, "s", {}, print))
  local r2 = table.pack(j(3, 4, "s", {}, print))
  for k = 6, 12 do eq(r2[k], r1[k], "result " .. k) end
  eq(math.type(r2[1][8]), "float", "-0.0 stays a float")
  eq(1 / r2[1][8], -math.huge, "-0.0 keeps its sign")
end)

test("t[i] of a missing key: nil without a metatable, __index with one", function()
  local function get(t, i) return t[i], t[i + 1], t[-i], t[0] end
  local function plain() return { 1, 2, 3 }, 3 end
  T.check(get, plain)
  T.check(get, function() return { 1, 2, 3 }, 4 end)
  T.check(get, function() return { 1, 2, 3 }, 1000 end)
  T.check(get, function() local t = {} t[3] = 7 t[40] = 8 return t, 3 end)    -- hash part
  T.check(get, function() local t = { 1, 2 } t[5] = "five" return t, 4 end)
  T.check(get, function() local t = {} for i = 1, 17 do t[i] = i end return t, 17 end)
  T.check(get, function() return { 1, 2, 3 }, math.maxinteger end)
  T.check(get, function() return { 1, 2, 3 }, math.mininteger + 1 end)
  -- with a metatable, __index runs (its calls counted in the argument)
  local mt = { __index = function(t, k) local log = rawget(t, "log") log[#log + 1] = k return k * 10 end }
  T.check(get, function() return setmetatable({ 1, 2, log = {} }, mt), 2 end)
  T.check(function(t, i) return get(t, i) end,
          function() return setmetatable({ 1 }, { __index = { 10, 20, 30 } }), 2 end)
  -- an empty element inside the array part, and one a metatable sees
  local mt2 = { __index = function() return "mt" end }
  T.check(get, function() local t = { 1, 2, 3, 4 } t[3] = nil return t, 2 end)
  T.check(get, function()
    local t = setmetatable({ 1, 2, 3, 4 }, mt2)
    t[3] = nil
    return t, 2
  end)
  -- a walk that reaches a number where it expects a table: Lua's error
  T.check_error("attempt to index a number value", ItemCheck, function() return { 1, 5, { 2 } } end)
end)

local with_gc = require("gc_harness").with_gc

-- nested constructors: the outer table is made first and its list stored
-- last, after the inner tables' allocations (a collection step between may
-- have traversed it: kjit_lt_setlist then takes the API, with its barrier)
local function nest(n, s)
  local list = {}
  for i = 1, n do
    list[i] = { i, { i * 2, { s, i } }, { -i }, s .. i, { { { i } } } }
  end
  return list
end

local function verify(list, n, s)
  for i = 1, n do
    local e = list[i]
    eq(e[1], i, "e[1]")
    eq(e[2][1], 2 * i, "e[2][1]")
    eq(e[2][2][1], s, "e[2][2][1]")
    eq(e[2][2][2], i, "e[2][2][2]")
    eq(e[3][1], -i, "e[3][1]")
    eq(e[4], s .. i, "e[4]")
    eq(e[5][1][1][1], i, "e[5][1][1][1]")
    eq(#e, 5, "#e")
  end
end

for _, mode in ipairs({ "incremental", "generational" }) do
  test("constructors and trees survive collections at every allocation (" .. mode .. ")", function()
    local jn = kjit.jit(nest)
    local jt = kjit.jit(function(d) local t = BottomUpTree(1, d) return t, ItemCheck(t) end)
    local want = select(2, (function(d) local t = BottomUpTree(1, d) return t, ItemCheck(t) end)(7))
    with_gc(mode, function()
      for round = 1, 3 do
        local list = jn(200, "k")
        setmetatable({}, { __gc = function() collectgarbage("step") end })
        local t, c = jt(7)
        collectgarbage("collect")
        verify(list, 200, "k")
        eq(c, want, "ItemCheck")
        eq(ItemCheck(t), want, "the tree, walked interpreted after a collection")
      end
    end)
  end)
end

test("deep recursion through compiled frames: the stack grows and moves", function()
  local function chain(n)
    if n == 0 then return { 0 } end
    local rest = chain(n - 1)
    return { n, rest, { n } }
  end
  local function walk(t)
    if t[2] then return t[1] + walk(t[2]) + t[3][1] end
    return t[1]
  end
  local function run(n) return walk(chain(n)) end
  T.check_args(run, 10)
  T.check_args(run, 1500)
  local j = kjit.jit(run)
  eq(j(1500), run(1500), "after the stack grew")
end)

test("frames: a compiled callee's table results land in the caller's slots", function()
  local function pair(a, b) return { a }, { b }, a + b end
  local function use(n)
    local acc = {}
    for i = 1, n do
      local x, y, s = pair(i, i * 0.5)
      acc[i] = { x[1], y[1], s, x, y }
    end
    return acc, layout(acc[n])
  end
  T.check_args(use, 50)
end)

test("code with inline frames from the disk cache, run where the stack reads are off (in children)", function()
  local lua = arg and arg[-1] or "lua5.4"
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local script = dir .. "/t.lua"
  write_file(script, "package.cpath = " .. string.format("%q", package.cpath) .. "\n" .. [[
    local kjit = require "kjit"
    local function make(i, d)
      if d == 0 then return { i } end
      return { i, make(2 * i - 1, d - 1), make(2 * i, d - 1) }
    end
    local function check(t)
      if t[2] then return t[1] + check(t[2]) - check(t[3]) end
      return t[1]
    end
    local f = kjit.jit(function(d) local t = make(1, d) return check(t), #t end, { cache = true })
    io.write(kjit.stack_reads, "|", tostring(f(9)), " ", tostring(select(2, f(3))), " ",
             tostring(kjit.cache_stats().hits or "?"))
  ]])
  local function child(env)
    local p = io.popen(env .. " KJIT_CACHE_DIR='" .. dir .. "' " .. lua .. " '" .. script .. "' 2>&1")
    local out = p:read("a")
    p:close()
    return out
  end
  local first = child("KJIT_NO_STACK_READS=0")
  truthy(first:match("^on|0 3 "), "compiled with the stack reads on: " .. first)
  local second = child("KJIT_NO_STACK_READS=1")
  -- (a cache hit: the code with inline frames runs where kls_on is 0)
  truthy(second:match("^off: KJIT_NO_STACK_READS is set|0 3 [1-9]"), "run with them off: " .. second)
  os.execute("rm -rf '" .. dir .. "'")
end)
