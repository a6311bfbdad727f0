-- Differential tests of the inline table paths' cheaper shapes (issue 29's
-- speed work, codegen/cg_lua.c): one branch per field access (the site's
-- remembered node index masked by the table's node array size; "no table"
-- is kjit_lt_none, where every check misses), kjit_lt_on read once per
-- call, a table value read at a site whose value is indexed next copied
-- into its slot inline (ps[i].x), and the cold slow paths of arithmetic.
-- The interpreted run is the specification (tablediff compares results
-- and the tables' state key by key). Run again with KJIT_NO_STACK_READS=1
-- (tests.cmake: lua.test_tables_inline_api), where the inline copy is off.
local T = require "tablediff"
local kjit = require "kjit"

test("a field's remembered node, applied to tables of other sizes", function()
  -- the site learns the node of .x in a big table, then meets small
  -- tables (one node; Lua's empty dummynode) with .x elsewhere or absent
  local function read_all(ts, n)
    local s = 0
    for i = 1, n do
      local t = ts[i]
      local x = t.x
      s = s + (x or 1000)
    end
    return s
  end
  local mt = { __index = function(_, k) return k == "x" and 11 or nil end }
  T.check(read_all, function()
    local big = {}
    for k = 1, 40 do big["k" .. k] = k end
    big.x = 7
    local ts = { big, { x = 1.5 }, {}, { y = 2, x = 3 }, big,
                 setmetatable({}, mt),
                 { x = 2 ^ 53 }, { [1] = 1, x = -4 } }
    return ts, #ts
  end)
  -- writes through the same node cache: present (inline), absent (new key)
  T.check(function(ts, n)
    for i = 1, n do ts[i].x = i * 0.5 end
    return ts[1].x, ts[n].x
  end, function()
    local big = {}
    for k = 1, 20 do big["f" .. k] = k end
    big.x = 0
    return { big, {}, { x = 1 }, big, { y = 1 } }, 5
  end)
end)

test("indexing a value that is not a table (the no-table hint)", function()
  -- a string (its metatable's __index), a number and nil raise or answer
  -- as interpreted
  T.check(function(t) local s = t.s; return s.len ~= nil, s.upper == string.upper end,
          function() return { s = "abc" } end)
  T.check_error("attempt to index a number value", function(t) local n = t.n; return n.x end,
                function() return { n = 3 } end)
  T.check_error("attempt to index a nil value", function(t) local n = t.missing; return n.x end,
                function() return {} end)
  T.check_error("attempt to index a number value", function(t) return t[1][1] end,
                function() return { 5 } end)
end)

-- a list of records, read as ps[i].x: the inline copy of the table into
-- the slot of ps[i]
local function step(ps, dt)
  local e = 0
  for i = 1, #ps do
    local p = ps[i]
    p.x = p.x + p.v * dt
    e = e + p.v * p.v
  end
  return e
end

test("a list of records: each element copied into its slot inline", function()
  T.check(step, function()
    local ps = {}
    for i = 1, 50 do ps[i] = { x = i, v = (i % 7) - 3.5 } end
    return ps, 0.25
  end)
  -- elements that are not tables take Lua's path: a number, a string, a
  -- hole, a table whose fields come from __index
  T.check_error("attempt to index a number value", step, function()
    return { { x = 1, v = 2 }, 42 }, 1.0
  end)
  -- ("s").x is nil, through the strings' metatable
  T.check_error("attempt to perform arithmetic on a nil value", step, function()
    return { { x = 1, v = 2 }, "s" }, 1.0
  end)
  T.check_error("attempt to index a nil value", function(ps) return ps[2].x end,
                function() return { { x = 1 }, nil, { x = 3 } } end)
  T.check(step, function()
    local proto = { x = 10, v = 1 }
    return { { x = 1, v = 2 }, setmetatable({}, { __index = proto }) }, 1.0
  end)
  -- self.pos.x: a table field holding a table
  T.check(function(o, n)
    for _ = 1, n do o.pos.x = o.pos.x + o.vel.x end
    return o.pos.x
  end, function() return { pos = { x = 1 }, vel = { x = 0.5 } }, 10 end)
end)

test("a list resized by a call in the loop", function()
  -- the loop holds the element it copied; the list's array part moves
  local function grow(t) for _ = 1, 8 do t[#t + 1] = { x = 0 } end end
  T.check(function(ps, grow)
    local s = 0
    for i = 1, 20 do
      local p = ps[i]
      grow(ps)
      s = s + p.x + ps[i].x
    end
    return s, #ps
  end, function()
    local ps = {}
    for i = 1, 20 do ps[i] = { x = i } end
    return ps, grow
  end)
end)

test("list elements survive collections at every allocation", function()
  -- each element lives only in the list and in compiled code's slot while
  -- the callee drops it from the list and allocates
  local function churn(ps, drop)
    local s = 0
    for i = 1, #ps do
      local p = ps[i]
      drop(ps, i)
      s = s + p.x + #p.tag
    end
    return s
  end
  local function drop(t, i) t[i] = false; local junk = {}; for k = 1, 20 do junk[k] = { k } end end
  collectgarbage("incremental", 0, 1000, 0)   -- no pause, the smallest steps
  local ok, err = pcall(T.check, churn, function()
    local ps = {}
    for i = 1, 60 do ps[i] = { x = i, tag = string.rep("t", i % 5 + 1) } end
    return ps, drop
  end)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  if not ok then error(err, 0) end
end)

test("arithmetic on table values: numbers inline, anything else as Lua", function()
  local V = {}
  V.__add = function(a, b) return (type(a) == "table" and a.v or a) + (type(b) == "table" and b.v or b) end
  V.__mul = function(a, b) return "mul" end
  T.check(function(t)
    local r = {}
    for i = 1, #t do r[i] = t[i] + t[i] end
    local m = t[3] * 2
    return r[1], r[2], r[3], m, t[1] < t[2]
  end, function() return { 1, 2.5, setmetatable({ v = 4 }, V) } end)
  T.check_error("attempt to mul a 'number' with a 'string'", function(t)
    return t.a * t.b
  end, function() return { a = 2, b = "x" } end)
end)

test("IR facts: kjit_lt_on is read once per call; a field read is one branch", function()
  local f = kjit.jit(function(b)
    local s = 0
    for i = 1, #b do
      local p = b[i]
      s = s + p.x * p.y + p.z
    end
    return s
  end)
  f({ { x = 1, y = 2, z = 3 } })
  local ir = f:inspect("llvm")
  local _, nlton = ir:gsub("load i32, i32%* @kjit_lt_on", "")
  eq(nlton, 1, "loads of kjit_lt_on")
  -- no table-size compare guards the field reads: their remembered node
  -- is masked (shl 1, lsizenode; then and), not compared
  local _, nmask = ir:gsub("shl i64 24,", "")
  eq(nmask, 0, "node array bound compares")
  -- the three field reads and the arithmetic on them: one chain
  -- (codegen/cg_chain.c), checked at once, with one call on its miss path
  local _, nmiss = ir:gsub("call i32 @kjit_lv_sgetfield", "")
  eq(nmiss, 0, "field reads' own helper calls")
  local _, nchain = ir:gsub("call i32 @kjit_lv_chain", "")
  eq(nchain, 1, "the chain's helper calls")
end)

test("keys known only at run time: one miss path for every kind of key", function()
  -- q[k] with k read from a table: an integer inline, anything else through
  -- the same call (kjit_lv_sgetk / kjit_lv_ssetk)
  T.check(function(p, q)
    local r = {}
    for i = 1, #p do
      local k = p[i]
      q[k] = (q[k] or 0) + i
      r[i] = q[k]
    end
    return r
  end, function() return { 1, 2.0, "s", true, 3, 2.5, 1, -1, 2 ^ 63 }, { 10, 20 } end)
  T.check_error("index is nil", function(p, q) for i = 1, 3 do q[p[i]] = i end end,
                function() return { 1, 2 }, {} end)
  T.check_error("attempt to index a number value", function(p, q)
    local n = q.n
    return n[p[1]]
  end, function() return { "x" }, { n = 1 } end)
  T.check_error("attempt to index a number value", function(p, q)
    local n = q.n
    n[p[1]] = 1
  end, function() return { 2 }, { n = 1 } end)
  local mt = { __index = function(_, k) return type(k) end,
               __newindex = function(t, k, v) rawset(t, tostring(k), v) end }
  T.check(function(p, q)
    local a, b = q[p[1]], q[p[2]]
    q[p[1]] = 1; q[p[2]] = 2; q[p[3]] = 3
    return a, b
  end, function() return { 1.5, "k", 7 }, setmetatable({}, mt) end)
end)
