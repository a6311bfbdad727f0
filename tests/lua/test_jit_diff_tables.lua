-- Differential tests: Lua tables in compiled code (issue 29 item 1):
-- tables as arguments, locals and results; reads and writes by integer
-- and string keys, #t, constructors, metamethods, aliasing, errors with
-- the interpreter's messages; frozen upvalue tables as before.
local T = require "tablediff"
local kjit = require "kjit"

local function points()
  return { { x = 1, y = 2, vx = 0.5, vy = -1 }, { x = 3.5, y = -4, vx = 2, vy = 0 },
           { x = 0, y = 0, vx = 1, vy = 1 } }
end

test("reads: t.x, t[i], t[i].x, a.b.c, with subtypes kept", function()
  T.check(function(t) return t.x + t.y, t.x * 2, t.y // 2 end,
          function() return { x = 1, y = 7 } end)
  T.check(function(t) return t.x + t.y end, function() return { x = 1.5, y = 7 } end)
  T.check(function(t, i) return t[i], t[i + 1] end, function() return { 10, 20.5, 30 }, 1 end)
  T.check(function(ps, i) return ps[i].x, ps[i].vy end, function() return points(), 2 end)
  T.check(function(a) return a.b.c, a.b.d end, function() return { b = { c = 42, d = "s" } } end)
  T.check(function(t) return t.missing, t[100] end, function() return {} end)
  T.check(function(t) return t[1.0], t[2] end, function() return { 5, 6 } end)
  T.check(function(t) return t[true], t["k"] end, function() return { [true] = 1, k = 2 } end)
end)

test("#t, sums over the array part, t[#t + 1] = v", function()
  T.check(function(t)
    local s = 0
    for i = 1, #t do s = s + t[i] end
    return s, #t
  end, function() return { 1, 2, 3, 4.5 } end)
  T.check(function(t)
    local s = 0
    for i = 1, #t do s = s + t[i] end
    return s
  end, function() return { 1, 2, 3 } end)
  T.check(function(t, n)
    for i = 1, n do t[#t + 1] = i * i end
    return #t
  end, function() return { 7 }, 5 end)
  T.check(function(t) return #t end, function() return {} end)
end)

test("writes by integer and string keys, new keys, nil deletes", function()
  T.check(function(t, v)
    t.x = v; t[1] = v * 2; t.name = "n"; t.flag = true; t.gone = nil; t[2.0] = 3
  end, function() return { gone = 1 }, 2.5 end)
  T.check(function(ps, dt)
    for i = 1, #ps do
      local p = ps[i]
      p.x = p.x + p.vx * dt
      p.y = p.y + p.vy * dt
    end
  end, function() return points(), 0.25 end)
  T.check(function(t, s) local k = s.k; t[k] = s.v; return t[k] end,
          function() return {}, { k = "key", v = 3 } end)
end)

test("constructors, nested, returned", function()
  T.check(function() return {} end, function() end)
  T.check(function(a) return { x = a, y = a * 2, name = "p" } end, function() return 3 end)
  T.check(function(a, b) return { a, b, a + b, { a, { b } } } end, function() return 1, 2.5 end)
  T.check(function(n)
    local t = {}
    for i = 1, n do t[i] = { i = i, sq = i * i } end
    return t
  end, function() return 10 end)
  T.check(function(n)   -- a table built in a loop and kept in a local across iterations
    local last = nil
    local first
    for i = 1, n do
      local t = { v = i, prev = last }
      if i == 1 then first = t end
      last = t
    end
    return last, first
  end, function() return 5 end)
end)

test("returning tables: the caller gets the same table", function()
  T.check(function(t) return t end, function() return { 1 } end)
  T.check(function(t, u) return u, t end, function() local a = {}; return a, { a } end)
  T.check(function(t) local u = t.inner; u.z = 1; return u end,
          function() return { inner = { y = 2 } } end)
  T.check(function(t, c) if c then return t.a end return t.b end,
          function() return { a = { 1 }, b = { 2 } }, true end)
  local id = kjit.jit(function(t) return t end)
  local tt = {}
  truthy(id(tt) == tt, "f(t) == t")
end)

test("aliasing: two names for one table, and callees", function()
  local function bump(t) t.n = t.n + 1; return t end
  T.check(function(a, b) a.x = 1; b.x = b.x + 1; return a.x end,
          function() local t = {}; return t, t end)
  T.check(function(t) bump(t); bump(t); return t.n end, function() return { n = 0 } end)
  T.check(function(t) return bump(bump(t)) end, function() return { n = 5 } end)
end)

test("loops carrying table values in locals (phis)", function()
  T.check(function(t)
    local a, b = t[1], t[2]
    for i = 1, 5 do a, b = b, a end
    return a, b
  end, function() return { { 1 }, { 2 } } end)
  T.check(function(t)
    local best = nil
    for i = 1, #t do
      if best == nil or t[i].v > best.v then best = t[i] end
    end
    return best
  end, function() return { { v = 3 }, { v = 9 }, { v = 1 } } end)
  T.check(function(t)
    local prev
    local n = 0
    for i = 1, #t do
      local cur = t[i]
      if prev and prev.v < cur.v then n = n + 1 end
      prev = cur
    end
    return n, prev
  end, function() return { { v = 1 }, { v = 2 }, { v = 0 }, { v = 5 } } end)
  T.check(function(t)
    local v = t.x
    while v do v = v.next end
    return v
  end, function() return { x = { next = { next = {} } } } end)
end)

test("math on values read from tables", function()
  T.check(function(b)
    local dx, dy = b[1].x - b[2].x, b[1].y - b[2].y
    return math.sqrt(dx * dx + dy * dy), math.floor(b[1].x), math.abs(b[2].y)
  end, function() return points() end)
  T.check(function(t) return math.sqrt(t.s) end, function() return { s = "16" } end)
  T.check_error("bad argument #1 to 'sqrt' (number expected, got nil)",
                function(t) return math.sqrt(t.nope) end, function() return {} end)
  T.check_error("bad argument #1 to 'floor' (number expected, got table)",
                function(t) return math.floor(t) end, function() return {} end)
  T.check_error("bad 'for' limit (number expected, got nil)",
                function(t) local s = 0 for i = 1, t.n do s = s + i end return s end,
                function() return {} end)
end)

test("comparisons and conditions on table values", function()
  T.check(function(t)
    return t.a == t.b, t.a < t.b, t.a <= 2, t.s == "x", t.a == nil, t.z == nil, t == t
  end, function() return { a = 1, b = 2.5, s = "x" } end)
  T.check(function(t)
    local n = 0
    if t.flag then n = n + 1 end
    if not t.other then n = n + 10 end
    if t.zero then n = n + 100 end
    return n
  end, function() return { flag = true, other = false, zero = 0 } end)
  T.check(function(t) return t.s < t.u end, function() return { s = "a", u = "b" } end)
end)

test("errors: the interpreter's messages, file:line, variable names", function()
  T.check_error("attempt to index a nil value (field 'x')",
                function(t) return t.x.y end, function() return {} end)
  T.check_error("attempt to index a number value (field 'x')",
                function(t) return t.x.y end, function() return { x = 1 } end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'x')",
                function(t) return t.x + 1 end, function() return {} end)
  T.check_error("attempt to perform arithmetic on a table value (local 't')",
                function(t) return t + 1 end, function() return {} end)
  T.check_error("attempt to perform arithmetic on a table value (local 'u')",
                function(t) local u = t.u; return 2 * u end, function() return { u = {} } end)
  T.check_error("attempt to compare two table values",
                function(t) return t.a < t.b end, function() return { a = {}, b = {} } end)
  T.check_error("attempt to compare number with nil",
                function(t) return 1 < t.b end, function() return {} end)
  T.check_error("attempt to get length of a nil value (field 'x')",
                function(t) return #t.x end, function() return {} end)
  T.check_error("attempt to index a nil value (field '?')",
                function(t, i) t[i].v = 1 end, function() return {}, 3 end)
  T.check_error("index is nil", function(t, k) t[k] = 1 end, function() return {} end)
  T.check_error("index is NaN", function(t, k) t[k / k] = 1 end, function() return {}, 0 end)
  T.check_error("has no integer representation",
                function(t) return t.x | 1 end, function() return { x = 1.5 } end)
  T.check_error("attempt to divide by zero", function(t) return t.x // 0 end,
                function() return { x = 1 } end)
  -- an error midway leaves every earlier write done
  T.check_error("attempt to perform arithmetic on a nil value (field 'v')",
                function(ps) for i = 1, #ps do ps[i].w = ps[i].v * 2 end end,
                function() return { { v = 1 }, { v = 2 }, {}, { v = 4 } } end)
end)

-- metatables (made by the tests' make functions from shared methods)
local function idx_fn(t, k) return k .. "!" end
local function add_mm(a, b)
  local x = type(a) == "table" and a.v or a
  local y = type(b) == "table" and b.v or b
  return x + y
end
local function lt_mm(a, b) return a.v < b.v end
local function le_mm(a, b) return a.v <= b.v end
local function len_mm() return 99 end
local function eq_mm(a, b) return a.v == b.v end
local function raise_mm() error("from the metamethod") end
local function idx_tab() return { b = 3 } end

test("metamethods run exactly as interpreted", function()
  T.check(function(t) return t.foo, t[1] end,
          function() return setmetatable({}, { __index = idx_fn }) end)
  T.check(function(t) return t.x, t.y end,
          function() return setmetatable({ y = 1 }, { __index = { x = 5, y = 6 } }) end)
  T.check(function(t, log) t.a = 1; t.b = 2; return t.a end,
          function()
            local log = {}
            return setmetatable({ b = 0 }, { __newindex = log }), log
          end)
  T.check(function(a, b) return a + b, a + 1, 2 + b end,
          function() local mt = { __add = add_mm }
            return setmetatable({ v = 1 }, mt), setmetatable({ v = 10 }, mt) end)
  T.check(function(a, b) return a < b, a <= b, a == b end,
          function() local mt = { __lt = lt_mm, __le = le_mm, __eq = eq_mm }
            return setmetatable({ v = 1 }, mt), setmetatable({ v = 1 }, mt) end)
  T.check(function(t) return #t end, function() return setmetatable({}, { __len = len_mm }) end)
  T.check_error("from the metamethod", function(t) t.x = 1; return t.y end,
                function() return setmetatable({}, { __index = raise_mm }) end)
  T.check(function(t) return t.a.b end,
          function() return setmetatable({}, { __index = idx_tab }) end)
end)

-- frozen constants: upvalue tables read at compile time keep working
local CONF = { scale = 2.5, n = 3, names = { "a" } }
test("upvalue tables read at compile time (frozen), with table arguments", function()
  T.check(function(t) return t.x * CONF.scale, CONF.n end, function() return { x = 2 } end)
  T.check(function(t)
    for i = 1, CONF.n do t[i] = i * CONF.scale end
    return t
  end, function() return {} end)
end)

test("table arguments: signature and specializations", function()
  local f = kjit.jit(function(t) return t.x end)
  eq(f({ x = 1 }), 1)
  eq(f({ x = 2.5 }), 2.5)   -- the same specialization: any table
  truthy(f:inspect("types"):find("table", 1, true), "types mention the table argument")
  -- a table and a number at the same position are two specializations
  local g = kjit.jit(function(t) if t == 1 then return 1 end return 2 end)
  eq(g(1), 1)
end)

test("refused at compile time, located, saying what to write", function()
  -- (an array stored in a table is its userdata since refuse2: test_refuse2.lua)
  local z, tz = kjit.zeros(2), {}
  kjit.jit(function(t, a) t.a = a end)(tz, z)
  eq(tz.a, z)
  -- (first plan: a function literal given to a function value was refused;
  -- it is a real Lua closure now: test_jit_escape.lua, test_jit_pcall.lua)
  eq(kjit.jit(function(t) local r = t.f(function() return 5 end); return r end)(
       { f = function(g) return g() end }), 5)
  -- (a library function given values read from a table is called as the
  -- Lua function it is: test_lang_functions.lua)
  eq(kjit.jit(function(t) return math.max(t.x, 1) end)({ x = 3 }), 3)
end)

test("a parallel prange loop refuses tables; a serial one runs them", function()
  local body = function(t, n)
    for i in kjit.prange(1, n) do t[i] = i * 2 end
    return t
  end
  raises("writing into a table cannot run inside a parallel kjit.prange loop",
         kjit.jit(body, { parallel = true }), {}, 4)
  T.check(body, function() return {}, 4 end)
end)

local function newindex_log(t, k, v) rawset(t, "log_" .. k, v) end
test("the fast paths over the table layout agree with the API's", function()
  -- a number written over a table, a float over an integer, an int over a string
  T.check(function(t) t.a = 1; t.b = 2.5; t.c = 3; t[1] = 0.5; t[2] = 7; return t end,
          function() return { a = {}, b = 1, c = "s", 10, "x" } end)
  -- beyond the array part, holes, keys in the hash part
  T.check(function(t, n) local s = 0 for i = 1, n do s = s + (t[i] or 0) end return s end,
          function() local t = { 1, 2, 3 }; t[10] = 4.5; t[6] = 1; return t, 12 end)
  -- __newindex runs for absent keys only; present keys are written in place
  T.check(function(t) t.present = 2; t.absent = 3; t[1] = 4; t[5] = 6; return t end,
          function() return setmetatable({ present = 1, 9 }, { __newindex = newindex_log }) end)
  -- long field names (not short strings), and names shared by many sites
  T.check(function(t) t.a_rather_long_field_name_longer_than_forty_bytes = t.a_rather_long_field_name_longer_than_forty_bytes + 1; return t end,
          function() return { a_rather_long_field_name_longer_than_forty_bytes = 1 } end)
  -- a local that holds a table on one path and a number on another
  T.check(function(t, c)
    local v = t.inner
    if c then v = 5 end
    if c then return v + 1 end
    return v.x
  end, function() return { inner = { x = 2 } }, false end)
  T.check(function(t, c)
    local v = t.inner
    if c then v = 5 end
    if c then return v + 1 end
    return v.x
  end, function() return { inner = { x = 2 } }, true end)
  -- a list of records, nested tables read through the array part
  T.check(function(ps) local s = 0 for i = 1, #ps do s = s + ps[i].p.x end return s end,
          function() return { { p = { x = 1 } }, { p = { x = 2.5 } } } end)
end)

-- writes to an upvalue table or a global table reach the real table
local function counter_factory()
  local counts = { n = 0, hits = {} }
  local function bump(k)
    counts.n = counts.n + k
    counts.hits[#counts.hits + 1] = k
    return counts.n
  end
  return bump, counts
end

test("writes to upvalue and global tables reach the real table", function()
  local fi, ci = counter_factory()
  local fc, cc = counter_factory()
  local jc = kjit.jit(fc)
  for _, k in ipairs({ 2, 3, 0.5 }) do eq(jc(k), fi(k)) end
  local e = T.compare(ci, cc, {}, {}, "counts")
  truthy(e == nil, e)
  KJIT_TEST_TABLES_G = { v = 1 }
  local g = kjit.jit(function() KJIT_TEST_TABLES_G.v = KJIT_TEST_TABLES_G.v * 2 return KJIT_TEST_TABLES_G.v end)
  eq(g(), 2); eq(g(), 4); eq(KJIT_TEST_TABLES_G.v, 4)
  -- a callee's read of a table that compiled code writes is live (before
  -- 2026-11-28 refused: "this table is written by compiled code")
  local helper = function() return ci.n end
  eq(kjit.jit(function() ci.n = 1 return helper() end)(), 1)
  eq(kjit.jit(function(k) ci.n = k return helper() + ci.n end)(7), 14)
  -- read-only upvalue tables stay frozen constants, as before
  local CONFR = { scale = 2 }
  eq(kjit.jit(function(x) return x * CONFR.scale end)(3), 6)
end)

-- without parallel, prange is a plain loop and compiles; with it, the
-- iterations would race for v
test("a prange loop carrying a table value between iterations: serial compiles, parallel is refused, located", function()
  local f = function(t, n) local v = t[1] for i in kjit.prange(1, n) do v = t[i] end return v end
  eq(kjit.jit(f)({ 1, 2 }, 2), f({ 1, 2 }, 2))
  raises("the iterations would race for it", kjit.jit(f, { parallel = true }), { 1, 2 }, 2)
end)

local function pick(t, k) return t[k] end
local function fill(t, n) for i = 1, n do t[i] = i * 0.5 end return #t end
test("values of every kind through calls and results", function()
  T.check(function(t) return pick(t, 1), pick(t, 2), pick(t, 3), pick(t, 4), pick(t, 5) end,
          function() return { true, 3, "str", 2.5 } end)
  T.check(function(t) local n = fill(t, 4); return n, t[4] end, function() return {} end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'integer index')",
                function(t) fill(t, 2); return t[1] + t[3] end, function() return {} end)
end)

-- a function that makes or returns arrays returns through the array path
-- (jit.c): its Lua values (tables, values read from tables) were pushed as
-- floats there (found by the seam review)
test("Lua-value results of functions that make or return arrays", function()
  T.check(function(t) local a = kjit.zeros(2); return t.x end, function() return { x = 3 } end)
  T.check(function(t) local a = kjit.zeros(2); return t.x, t.y end, function() return { x = 3.5, y = "s" } end)
  T.check(function(n) local a = kjit.zeros(2); return { n } end, function() return 3 end)
  T.check(function(t)
    local a = kjit.zeros(1)
    local v = t.x
    if v then return #a, 1 end
    return #a, v
  end, function() return { x = false } end)
end)

-- `return f(x)` of a callee whose results include tables: the caller has no
-- value of Lua type of its own, its frame still takes them (an internal
-- error before)
local function mk_pair(n) return { n = n }, n * 2 end
test("return f(x) of a callee returning tables", function()
  T.check(function(n) return mk_pair(n) end, function() return 3 end)
  T.check(function(n) local a = kjit.zeros(n) return mk_pair(#a) end, function() return 2 end)
end)
