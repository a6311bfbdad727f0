-- Differential tests of arithmetic chains on values read from tables
-- (codegen/cg_chain.c): operations that follow one another are checked
-- once, computed natively (the float form where the values meet floats,
-- else both ways), and redone through Lua's semantics by one call when a
-- value is not of the kind the chain computes. Every form next to the
-- values that take the slow call: integers (which stay integers), strings
-- that convert, tables with metamethods (run in the interpreter's order),
-- and errors (the operation's line and the operand's name). The
-- interpreted run is the specification (tablediff: results and tables
-- compared key by key, error messages compared whole).
-- Run again with chains off (lua.test_chains_off, KJIT_NO_CHAINS=1): the
-- same results each operation alone; the facts about chains skip there.
local T = require "tablediff"
local kjit = require "kjit"

-- nbody's inner loop: float evidence (dt, a float argument; / ), so the
-- float form
local function step(bi, bj, dt)
  local dx, dy, dz = bi.x - bj.x, bi.y - bj.y, bi.z - bj.z
  local d2 = dx * dx + dy * dy + dz * dz
  local mag = dt / (d2 * math.sqrt(d2))
  local bm = bj.mass * mag
  bi.vx = bi.vx - dx * bm
  bi.vy = bi.vy - dy * bm
  bi.vz = bi.vz - dz * bm
  bm = bi.mass * mag
  bj.vx = bj.vx + dx * bm
  bj.vy = bj.vy + dy * bm
  bj.vz = bj.vz + dz * bm
  return d2
end

local function body(x, y, z, m)
  return { x = x, y = y, z = z, vx = 0.5, vy = -0.25, vz = 0.125, mass = m }
end

test("the float form: floats, integers, mixed", function()
  T.check(step, function() return body(1.5, 2.5, 3.5, 2.0), body(-1.0, 0.5, 0.25, 3.0), 0.01 end)
  -- integer fields: the check fails, Lua's arithmetic runs (integers stay
  -- integers where Lua keeps them: dx, d2 and the sums of products)
  T.check(step, function() return body(3, 4, 5, 2), body(1, 1, 1, 7), 0.01 end)
  T.check(function(bi, bj, dt)
    local dx = bi.x - bj.x
    local s = dx * dx + bi.y * bj.y
    return s, math.type(s), dx, math.type(dx), s * dt
  end, function() return { x = 7, y = 3 }, { x = 2, y = 4 }, 0.5 end)
  -- mixed: the sun at x = 0 (an integer) among floats
  T.check(step, function() return body(0, 0, 0, 39.47), body(4.84, -1.16, -0.10, 0.037), 0.01 end)
  -- integer overflow wraps as in Lua
  T.check(function(a, b, f)
    local s = a.x + b.x
    local p = a.x * b.x + a.y
    return s, p, s * f
  end, function() return { x = math.maxinteger, y = 1 }, { x = 2, y = 0 }, 1.5 end)
end)

test("the flat form: no float evidence, integers and floats at run time", function()
  local function f(p, q)
    local a = p.x * q.x + p.y * q.y
    local b = a - p.x * 2
    p.s = a * b
    return a, b, math.type(a), math.type(b)
  end
  T.check(f, function() return { x = 3, y = 4 }, { x = 5, y = 6 } end)
  T.check(f, function() return { x = 3.5, y = 4 }, { x = 5, y = 6.25 } end)
  T.check(f, function() return { x = math.mininteger, y = -1 }, { x = -1, y = 1 } end)
  -- a counter: integer evidence keeps the flat form
  T.check(function(t)
    local n = t.n + 1
    local m = n * t.k - t.n
    t.n = n
    return n, m, math.type(m)
  end, function() return { n = 41, k = 3 } end)
end)

test("strings convert, tables run their metamethods in Lua's order", function()
  T.check(step, function() return body("1.5", 2.5, 3.5, 2.0), body(-1.0, "0.5", 0.25, 3.0), 0.01 end)
  T.check(function(p, q) local s = p.x * q.x + p.y; return s, math.type(s) end,
          function() return { x = "3", y = 1 }, { x = "4", y = 2 } end)
  -- a vector class: every operation a metamethod, each logged in the
  -- run's own log (carried by the vectors)
  local V = {}
  local function vx(a) return type(a) == "number" and a or a.x end
  local function vec(x, a, b)
    local log = type(a) == "table" and a.log or b.log
    log[#log + 1] = x
    return setmetatable({ x = x, log = log }, V)
  end
  V.__add = function(a, b) return vec(vx(a) + vx(b), a, b) end
  V.__mul = function(a, b) return vec(vx(a) * vx(b), a, b) end
  V.__sub = function(a, b) return vec(vx(a) - vx(b), a, b) end
  local function make()
    local log = {}
    local p = { x = setmetatable({ x = 2, log = log }, V), y = 3.5, log = log }
    local q = { x = 1.25, y = setmetatable({ x = 10, log = log }, V) }
    return p, q, 0.5
  end
  T.check(function(p, q, dt)
    local a = p.x * q.x + p.y * dt
    local b = q.y - a * dt
    p.a, p.b = a, b
    return a.x, b.x
  end, make)
  -- a metamethod that writes the table the chain reads: its effects are
  -- seen where the interpreter sees them (after the chain)
  local W = { __mul = function(a, b) a.p.count = a.p.count + 1; a.p.w = 100.0; return 7.0 end }
  T.check(function(p, dt)
    local r = p.v * dt + p.w * dt
    return r, p.w, p.count
  end, function()
    local p = { w = 2.0, count = 0 }
    p.v = setmetatable({ p = p }, W)
    return p, 0.5
  end)
end)

test("errors: the failing operation's line and operand", function()
  local function f(p, q, dt)
    local a = p.x * dt
      + q.y * dt
    local b = a
      - p.z * q.x
    return a, b
  end
  T.check_error("attempt to perform arithmetic on a nil value (field 'y')", f,
                function() return { x = 1.0, z = 2.0 }, { x = 3.0 }, 0.5 end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'z')", f,
                function() return { x = 1.0 }, { x = 3.0, y = 2.0 }, 0.5 end)
  T.check_error("attempt to perform arithmetic on a table value", f,
                function() return { x = 1.0, z = {} }, { x = 3.0, y = 2.0 }, 0.5 end)
  T.check_error("attempt to mul a 'string' with a 'number'", f,
                function() return { x = "one" }, { x = 3.0, y = 2.0 }, 0.5 end)
  -- the error after a store: the stores before it are left done
  T.check_error("attempt to perform arithmetic on a boolean value", function(p, dt)
    p.a = p.x * dt + p.y * dt
    p.b = p.a * dt + p.flag * dt
  end, function() return { x = 1.0, y = 2.0, flag = true }, 0.25 end)
end)

test("chains in loops: fields updated in place, values carried by phis", function()
  local function advance(bodies, n, dt, steps)
    for _ = 1, steps do
      for i = 1, n do
        local bi = bodies[i]
        local vx, vy = bi.vx, bi.vy
        for j = i + 1, n do
          local bj = bodies[j]
          local dx, dy = bi.x - bj.x, bi.y - bj.y
          local d2 = dx * dx + dy * dy + 0.01
          local mag = dt / (d2 * d2)
          vx = vx - dx * bj.m * mag
          vy = vy - dy * bj.m * mag
          bj.vx = bj.vx + dx * bi.m * mag
          bj.vy = bj.vy + dy * bi.m * mag
        end
        bi.vx, bi.vy = vx, vy
        bi.x = bi.x + dt * vx
        bi.y = bi.y + dt * vy
      end
    end
  end
  local function make(intfirst)
    local b = {}
    for i = 1, 5 do
      b[i] = { x = i * 1.5, y = -i * 0.5, vx = 0.0, vy = 0.0, m = 1.0 + i / 10 }
    end
    if intfirst then b[1].x, b[1].y, b[1].vx, b[1].vy, b[1].m = 0, 0, 0, 0, 10 end
    return b, 5, 0.01, 20
  end
  T.check(advance, function() return make(false) end)
  T.check(advance, function() return make(true) end)
end)

test("one check per chain: the compiled code calls the chain's helper", function()
  if os.getenv("KJIT_NO_CHAINS") then skip("chains are off (KJIT_NO_CHAINS)") end
  local f = kjit.jit(step)
  f(body(1.5, 2.5, 3.5, 2.0), body(-1.0, 0.5, 0.25, 3.0), 0.01)
  local ir = f:inspect("llvm")
  truthy(ir:find("kjit_lv_chain", 1, true), "a chain's helper")
  truthy(not ir:find("kjit_lv_sarith", 1, true), "no operation checked alone")
end)

test("a collection at every step while chains run metamethods", function()
  local V = {}
  V.__add = function(a, b) return setmetatable({ x = (a.x or a) + (type(b) == "table" and b.x or b) }, V) end
  V.__mul = function(a, b) return setmetatable({ x = (type(a) == "table" and a.x or a) * (type(b) == "table" and b.x or b) }, V) end
  local function f(ps, dt, n)
    local acc = 0.0
    for i = 1, n do
      local p = ps[i]
      local r = p.v * dt + p.w * dt
      acc = acc + r.x
    end
    return acc
  end
  local function make()
    local ps = {}
    for i = 1, 50 do ps[i] = { v = setmetatable({ x = i }, V), w = i * 0.5 } end
    return ps, 0.25, 50
  end
  collectgarbage("generational", 0, 0)
  local ok, err = pcall(T.check, f, make)
  collectgarbage("incremental", 200, 100, 13)
  if not ok then error(err, 0) end
end)

-- fields read and written inside a chain: each read checked where its site
-- looks (a number there; a float in the float form), each write over a
-- value present; anything else (a missing field, __index, __newindex, a
-- string, a table, nil) takes the chain's one call, which does every read,
-- operation and write in the program's order
local Logged = {}
Logged.__index = function(t, k)
  local log = rawget(t, "log")
  log[#log + 1] = "get " .. k
  return 2.5
end
Logged.__newindex = function(t, k, v)
  local log = rawget(t, "log")
  log[#log + 1] = "set " .. k
  rawset(t, k, v)
end

test("fields in chains: metamethods, missing fields, order of effects", function()
  local function f(a, b, dt)
    a.vx = a.vx + b.x * dt
    b.vy = b.vy - a.y * dt
    a.y = a.y + b.vy * dt
    return a.vx * b.vy
  end
  local function plain() return { vx = 0.5, y = 1.5 }, { x = 2.5, vy = 0.25 }, 0.1 end
  T.check(f, plain)
  -- b.x missing: __index runs in the chain's call, in order
  T.check(f, function()
    local log = {}
    return { vx = 0.5, y = 1.5, log = log }, setmetatable({ vy = 0.25, log = log }, Logged), 0.1
  end)
  -- a.vx missing: read through __index, written through __newindex
  T.check(f, function()
    local log = {}
    return setmetatable({ y = 1.5, log = log }, Logged), { x = 2.5, vy = 0.25, log = log }, 0.1
  end)
  -- integers and strings in the fields
  T.check(f, function() return { vx = 1, y = 2 }, { x = 3, vy = 4 }, 0.5 end)
  T.check(f, function() return { vx = "1.5", y = 2.0 }, { x = 3.0, vy = "4" }, 0.5 end)
  -- one table under both names: writes seen by the reads after them
  T.check(function(a, b, dt)
    a.x = a.x * dt + b.y
    b.y = b.y * a.x + 0.5
    a.z = a.x + b.y * dt
    return a.x, b.y, a.z
  end, function() local t = { x = 1.5, y = 2.5, z = 0.0 }; return t, t, 0.25 end)
  -- a field copied, an integer one: it stays an integer
  T.check(function(t, dt)
    t.x = t.x + dt
    t.c = t.i
    t.y = t.y * dt
    return t.c, math.type(t.c)
  end, function() return { x = 1.5, y = 2.5, i = 7 }, 0.5 end)
  -- a field that holds a table, read and passed on
  T.check(function(t, dt)
    local v = t.v
    t.s = t.s * dt
    return v, t.s
  end, function() return { v = { 1, 2 }, s = 4.0 }, 0.5 end)
end)

test("fields in chains: errors name the table and the line", function()
  local function f(p, dt)
    local o = p.o
    o.x = o.x * dt
      + p.y * dt
    return o.x
  end
  T.check(f, function() return { o = { x = 2.0 }, y = 3.0 }, 0.5 end)
  T.check_error("attempt to index a nil value (local 'o')", f,
                function() return { y = 3.0 }, 0.5 end)
  T.check_error("attempt to index a number value (local 'o')", f,
                function() return { o = 5, y = 3.0 }, 0.5 end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'y')", f,
                function() return { o = { x = 2.0 } }, 0.5 end)
  -- the write fails after the reads: the reads' metamethods ran
  local Tab = { __index = function(t, k)
    local log = rawget(t, "log")
    log[#log + 1] = k
    return {}
  end }
  T.check_error("attempt to perform arithmetic on a table value (field 'x')", f,
                function() return { o = setmetatable({ log = {} }, Tab), y = 3.0 }, 0.5 end)
end)

test("fields in chains: the compiled code reads them inline, one call for the chain", function()
  if os.getenv("KJIT_NO_CHAINS") then skip("chains are off (KJIT_NO_CHAINS)") end
  local f = kjit.jit(step)
  f(body(1.5, 2.5, 3.5, 2.0), body(-1.0, 0.5, 0.25, 3.0), 0.01)
  local ir = f:inspect("llvm")
  truthy(not ir:find("kjit_lv_sgetfield", 1, true), "no field read alone")
  truthy(not ir:find("kjit_lv_ssetfield", 1, true), "no field write alone")
end)

-- elements t[i] by an integer key: checked in the array part (below its
-- limit, a number there; a write over a value, or into an empty element of
-- a table without a metatable), else the chain's call
test("elements in chains: swaps, holes, the hash part, __index/__newindex", function()
  local function swap(q, i, j)
    q[i], q[j] = q[j], q[i]
    q[i + 1] = q[i] * 2 - q[j]
    return q[i], q[j]
  end
  T.check(swap, function() return { 1, 2, 3, 4, 5 }, 2, 4 end)
  T.check(swap, function() return { 1.5, 2.5, 3.5, 4.5, 5.5 }, 1, 3 end)
  T.check(swap, function() return { 1, "2", 3, 4.5, 5 }, 2, 4 end)
  -- keys past the array part, 0 and negative: the hash part
  T.check(swap, function() return { [0] = 7, 1, 2, [-1] = 3 }, 0, -1 end)
  T.check(swap, function() local t = {}; t[100] = 4; t[200] = 9; return t, 100, 200 end)
  -- an element that is nil: the arithmetic raises, located
  T.check_error("attempt to perform arithmetic on a nil value (field '?')", swap,
                function() return { 1, 2, 3 }, 3, 5 end)
  -- writes into empty elements: plain, and with __newindex (runs) and
  -- __index (reads) on the table
  local function fill(t, n)
    for i = 1, n do
      t[i] = i * 1.5
      t[i] = t[i] + 1
    end
    return #t
  end
  T.check(fill, function() local t = {}; for i = 1, 8 do t[i] = 0 end; for i = 1, 8 do t[i] = nil end; return t, 8 end)
  local Rec = { __newindex = function(t, k, v) rawset(t, k, v * 10) end,
                __index = function(t, k) return -k end }
  T.check(fill, function() return setmetatable({}, Rec), 5 end)
  T.check(function(t, n)
    local s = 0
    for i = 1, n do s = s + t[i] * 2 end
    return s
  end, function() return setmetatable({ 1, 2, nil, 4 }, Rec), 5 end)
  T.check_error("attempt to index a nil value (local 't')", function(t, i)
    t[i] = t[i] + 1
  end, function() return nil, 1 end)
end)

test("elements in chains: fannkuch's copy and rotation", function()
  local function perm(p, q, n)
    for i = 2, n do q[i] = p[i] end
    p[2], p[1] = p[1], p[2]
    local t = p[1]
    for j = n, 1, -1 do p[j], t = t, p[j] end
    return t
  end
  T.check(perm, function() return { 1, 2, 3, 4, 5, 6 }, { 0, 0, 0, 0, 0, 0 }, 6 end)
  T.check(perm, function() return { 1, 2, 3, 4, 5, 6 }, {}, 6 end)
  T.check(perm, function() return { "a", 2, {}, 4, true, 6 }, { 0, 0 }, 6 end)
end)

test("elements in chains by keys read from tables (fannkuch's q[j])", function()
  local function flip(q, p)
    local i, j = 1, p.j
    repeat q[i], q[j] = q[j], q[i]; i = i + 1; j = j - 1; until i >= j
    return q[p.k], i, j
  end
  T.check(flip, function() return { 5, 4, 3, 2, 1 }, { j = 5, k = 2 } end)
  -- keys that are not integers: a float with an integer value (Lua
  -- normalizes it), a float, a string; then a nil key written
  T.check(flip, function() return { 5, 4, 3, 2, 1 }, { j = 4.0, k = 2.0 } end)
  T.check(flip, function() return { 5, 4, 3, [3.5] = 9 }, { j = 3, k = 3.5 } end)
  T.check(flip, function() return { 5, 4, 3, x = 7 }, { j = 3, k = "x" } end)
  T.check_error("index is nil", function(q, p)
    local k = p.k
    q[k] = q[1] + 1
  end, function() return { 1, 2 }, {} end)
end)

test("comparisons in chains: integer and float forms, strings, metamethods, errors", function()
  -- the integer form: counters and integer constants around the values
  local function count(q, p)
    local n, hits = p.n, 0
    for i = 1, #q do
      local x = q[i]
      if x == 1 then hits = hits + 1 end
      if x - 1 >= n then hits = hits + 10 end
      if n < x then hits = hits + 100 end
    end
    return hits
  end
  T.check(count, function() return { 1, 2, 3, 1, 5 }, { n = 2 } end)
  T.check(count, function() return { 1.0, 2.5, 3, 1, 5.0 }, { n = 2.0 } end)
  T.check(count, function() return { 1, 2, 3 }, { n = math.maxinteger } end)
  T.check(count, function() return { 2^53, 2^53 + 1, math.mininteger }, { n = 2^53 } end)
  T.check_error("attempt to compare nil with number", count,
                function() return { 1, 2 }, {} end)
  T.check_error("attempt to compare", count,
                function() return { 1, "2" }, { n = 1 } end)
  -- the float form: NaN, infinities
  local function closer(a, b, dt)
    local d = a.x * dt - b.x * dt
    return d < 0.5, d <= a.y, d == b.y
  end
  T.check(closer, function() return { x = 1.5, y = 0.25 }, { x = 0.5, y = 0.5 }, 1.0 end)
  T.check(closer, function() return { x = 0 / 0, y = 0.25 }, { x = 0.5, y = 0.5 }, 1.0 end)
  T.check(closer, function() return { x = 3, y = 1 }, { x = 1, y = 2 }, 1 end)
  -- strings and tables with __lt/__le/__eq
  local V = {}
  V.__lt = function(a, b) return (type(a) == "table" and a.v or a) < (type(b) == "table" and b.v or b) end
  V.__le = function(a, b) return (type(a) == "table" and a.v or a) <= (type(b) == "table" and b.v or b) end
  V.__eq = function(a, b) return a.v == b.v end
  local function order(t)
    return t.a < t.b, t.a <= t.b, t.a == t.b
  end
  T.check(order, function() return { a = "abc", b = "abd" } end)
  T.check(order, function() return { a = setmetatable({ v = 1 }, V), b = setmetatable({ v = 1 }, V) } end)
  T.check(order, function() return { a = 2, b = 2.0 } end)
end)

-- A C function as a chain member's metamethod (__add = string.rep,
-- __lt = string.rep, __sub = math.max): the chain's slow call runs it from
-- the site's trampoline, as the single operation's helper does (refuse4),
-- so its argument errors carry the operation's line as interpreted.
test("chains whose metamethods are C functions: errors located as interpreted", function()
  local C = setmetatable({}, { __add = string.rep, __lt = string.rep, __sub = math.max })
  local fs = {
    function(t, u) local a = t.x + u.y local b = t.x * 2 + u.y return a, b end,
    function(t, u) local c = t.x < u.y return c end,
    function(t, u) return t.x - u.y + 1 end,
  }
  local args = {
    function() return { x = 1 }, { y = 2 } end,
    function() return { x = C }, { y = 2 } end,
    function() return { x = 1 }, { y = C } end,
    function() return { x = "a" }, { y = 3 } end,
    function() return { x = C }, { y = C } end,
  }
  for _, f in ipairs(fs) do
    for _, make in ipairs(args) do T.check(f, make) end
  end
  T.check_error("bad argument #1 to 'add'", fs[1], args[2])
  T.check_error("bad argument #2 to 'lt'", fs[2], args[3])
end)

-- Session 17 (chains2): the float form takes integers where Lua converts
-- them anyway (an operand of `/`, `^`, or of an operation whose other
-- operand is a float), `%`, `//`, `^` and unary minus in chains, and the
-- operation that ended one chain beginning the next (`vx[col[i]]`,
-- `a.b.c`).

-- spectral-norm's A·x: x holds integers on the first pass, floats after;
-- the sum starts as the integer 0
local function av(x, y, n)
  for i = 1, n do
    local a = 0
    for j = 1, n do a = a + x[j] * (1.0 / (i + j)) end
    y[i] = a
  end
  return y[1], math.type(y[1])
end

test("the float form: integers converted where Lua converts them", function()
  T.check(av, function() return { 1, 2, 3, 4 }, {}, 4 end)
  T.check(av, function() return { 1.5, 2, 3.25, 4 }, {}, 4 end)
  -- integers beyond 2^53 convert as Lua converts them (rounded)
  T.check(av, function() return { 2^53 + 1, math.maxinteger, math.mininteger, -3 }, {}, 4 end)
  -- not numbers: strings convert, a table's __mul runs, nil raises
  T.check(av, function() return { "3", 2, "0x10", 4 }, {}, 4 end)
  local M = { __mul = function(a, b) return 100 * b end }
  T.check(av, function() return { 1, setmetatable({}, M), 3, 4 }, {}, 4 end)
  T.check_error("attempt to perform arithmetic on a nil value (field '?')", av,
                function() return { 1, 2 }, {}, 3 end)
  T.check_error("attempt to perform arithmetic on a boolean value (field '?')", av,
                function() return { 1, true, 3 }, {}, 3 end)
  T.check_error("attempt to perform arithmetic on a boolean value (local 'a')", function(u, w)
    local a = u[1]
    return a * w + u[2] * w
  end, function() return { false, 2 }, 0.5 end)
  -- the integer operand of a comparison or a write keeps its own kind
  T.check(function(p, dt)
    local v = p.v * dt
    local y = p.y + v
    p.y = y
    p.w = p.n
    return y, math.type(y), p.n < v, p.n == p.y
  end, function() return { v = 3, y = 2, n = 2^53 + 1 }, 0.5 end)
  -- a particle at integer positions moving by float steps
  local function move(ps, dt)
    for i = 1, #ps do
      local p = ps[i]
      p.vx = p.vx * 0.999
      p.x = p.x + p.vx * dt
    end
    return ps[1].x, math.type(ps[1].x), ps[1].vx, math.type(ps[1].vx)
  end
  T.check(move, function() return { { x = 1, vx = 2 }, { x = 3.5, vx = -1 }, { x = "2", vx = 1 } }, 0.25 end)
end)

test("the float form: no slow call for integers an operation converts", function()
  local f = kjit.jit(av)
  local x = {}
  for i = 1, 50 do x[i] = 1 end
  local y = {}
  f(x, y, 50)   -- (compiled on integers)
  eq(f(x, y, 50), av(x, {}, 50))
  if os.getenv("KJIT_NO_CHAINS") then skip("chains are off (KJIT_NO_CHAINS)") end
  local ir = f:inspect("llvm")
  truthy(ir:find("kjit_lv_chain", 1, true), "a chain")
  truthy(not ir:find("kjit_lv_sarith", 1, true), "no operation alone")
  -- the product's integer operand is not checked for a float: the chain's
  -- check of x[j] asks for a number, and its fast path converts an
  -- integer (cg_chain.c names that conversion "chint")
  truthy(ir:find("%chint", 1, true), "an integer converted in the chain")
end)

-- % // ^ and unary minus: every form, values of every kind
-- An integer `%` or `//` by zero: Lua 5.4.4 reports a stale line there
-- (docs/reference/differences.md item 10); compiled code the operator's.
-- The messages are compared without their positions, the compiled one at
-- the operator's line, and the tables' state key by key.
local function check_zero(offset, fn, make)   -- (the operator's line: fn's first + offset)
  local line = debug.getinfo(fn, "S").linedefined + offset
  local ia, ca = table.pack(make()), table.pack(make())
  local ok1, e1 = pcall(fn, table.unpack(ia, 1, ia.n))
  local ok2, e2 = pcall(kjit.jit(fn), table.unpack(ca, 1, ca.n))
  truthy(not ok1 and not ok2, "both raise")
  local function bare(e) return (tostring(e):gsub("^[^:]*:%d+: ", "")) end
  eq(bare(e2), bare(e1))
  truthy(tostring(e2):find("test_chains.lua:" .. line .. ":", 1, true), "the operator's line: " .. tostring(e2))
  for k = 1, ia.n do
    local e = T.compare(ia[k], ca[k], {}, {}, "argument #" .. k)
    if e then error(e) end
  end
end

local function mixed(p, q)
  local a = p.x % q.y
  local b = p.x // q.y
  local c = -p.x + q.y ^ 2
  local d = -(a - b) * q.y
  q.r = a % 3 + b // 2
  return a, b, c, d, math.type(a), math.type(b), math.type(c), math.type(d)
end

test("% // ^ and unary minus in chains: integers, floats, strings, metamethods", function()
  local cases = {
    { 7, 2 }, { -7, 2 }, { 7, -2 }, { 7.5, 2 }, { -7.5, 2.0 }, { 7, 2.5 },
    { math.mininteger, -1 }, { math.maxinteger, 3 }, { 1e308, 1e-308 }, { 0 / 0, 1 },
    { "7", 2 }, { 7, "2.5" }, { 2^53 + 1, 3 }, { -0.0, 1 }, { 1 / 0, 3 },
  }
  for _, c in ipairs(cases) do
    T.check(mixed, function() return { x = c[1] }, { y = c[2] } end)
  end
  local V = {}
  V.__mod = function(a, b) return 1 end
  V.__idiv = function(a, b) return 2 end
  V.__unm = function(a) return 3 end
  V.__pow = function(a, b) return 4 end
  V.__add = function(a, b) return 5 end
  T.check(mixed, function() return { x = setmetatable({}, V) }, { y = 2 } end)
  -- by zero: integers raise (located), floats give nan and inf
  check_zero(1, mixed, function() return { x = 7 }, { y = 0 } end)
  check_zero(2, function(p, q)
    local a = p.x + q.y
    q.z = a // q.y
  end, function() return { x = 7 }, { y = 0 } end)
  T.check(mixed, function() return { x = 7.0 }, { y = 0 } end)
  T.check(mixed, function() return { x = 7 }, { y = 0.0 } end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'y')", mixed,
                function() return { x = 7 }, {} end)
  T.check_error("attempt to perform arithmetic on a table value (field 'x')", mixed,
                function() return { x = {} }, { y = 1 } end)
end)

test("% // and unary minus: the integer form (counters) and the float form", function()
  -- integer evidence: i % n, n // 2, a counter; the table holds integers,
  -- then floats, then a zero divisor that raises after the writes before it
  local function wrap(t, n)
    for i = 1, #t do
      local v = t[i]
      t[i] = (v + 1) % n
      t[i] = -(t[i] // 2)
    end
    return t[1], math.type(t[1])
  end
  T.check(wrap, function() return { 1, 2, 3, 4, 5 }, 3 end)
  T.check(wrap, function() return { 1.5, 2, 3, 4.5, 5 }, 3 end)
  T.check(wrap, function() return { math.maxinteger, math.mininteger, -1 }, 7 end)
  check_zero(3, wrap, function() return { 1, 2, 3 }, 0 end)
  -- float evidence: p.x % 1.0, -p.v * dt
  local function frac(ps, dt)
    for i = 1, #ps do
      local p = ps[i]
      p.x = (p.x + p.v * dt) % 1.0
      p.v = -p.v * 0.5
      p.k = p.x // 0.25
    end
    return ps[1].x, ps[1].v, ps[1].k
  end
  T.check(frac, function() return { { x = 0.5, v = 0.75 }, { x = 0.25, v = -1.5 } }, 0.5 end)
  T.check(frac, function() return { { x = 0, v = 3 }, { x = 1, v = -1 } }, 2 end)
  T.check(frac, function() return { { x = 0.5, v = 1 / 0 } }, 0.5 end)
end)

test("the next chain begins where one ended: keys and tables read in a chain", function()
  -- scimark-sparse's row: vx[col[i]] after col[i]
  local function sparse(vy, val, row, col, vx, n)
    for r = 1, n do
      local sum = 0
      for i = row[r], row[r + 1] - 1 do sum = sum + vx[col[i]] * val[i] end
      vy[r] = sum
    end
    return vy[1]
  end
  local function make(x)
    return {}, { 0.5, 1.5, 2.5, 3.5 }, { 1, 3, 5 }, { 2, 1, x, 2 }, { 10, 20.5, 30 }, 2
  end
  T.check(sparse, function() return make(3) end)
  T.check(sparse, function() return make(3.0) end)
  T.check(sparse, function() return make("3") end)
  -- the loop's bounds read from the table: its variable a number of either
  -- kind, a key checked to be an integer with the chain (a float key, whole
  -- or not, takes the chain's call)
  local function floatrows(x)
    local vy, val, row, col, vx, n = make(x)
    row[1], row[2] = 1.0, 3.0
    return vy, val, row, col, vx, n
  end
  T.check(sparse, function() return floatrows(3) end)
  T.check(sparse, function()
    local vy, val, row, col, vx, n = make(3)
    row[1], row[2], row[3] = 0.5, 2.5, 3.5
    val[0.5], val[1.5], val[2.5] = 1, 2.5, 3
    col[0.5], col[1.5], col[2.5] = 1, 2, 3
    return vy, val, row, col, vx, n
  end)
  T.check_error("attempt to perform arithmetic on a nil value (field '?')", sparse,
                function() return make(9) end)
  if not os.getenv("KJIT_NO_CHAINS") then
    -- vx[col[i]] and val[i] are read in the chain (the key a number
    -- checked with it), col[i] alone: one element read with its own call
    -- in each copy of the loop (its integer and its float copy:
    -- test_for_kinds.lua)
    local f = kjit.jit(sparse)
    f(make(3))
    local _, alone = f:inspect("llvm"):gsub("call i32 @kjit_lv_sgetk", "")
    eq(alone, os.getenv("KJIT_NO_KIND_SPLIT") and 1 or 2, "element reads outside the chain")
  end
  -- a field of a field
  local function nested(b, dt)
    b.pos.x = b.pos.x + b.vel.x * dt
    b.pos.y = b.pos.y + b.vel.y * dt
    return b.pos.x, b.pos.y
  end
  T.check(nested, function() return { pos = { x = 1.5, y = 2 }, vel = { x = 0.5, y = -1.5 } }, 0.1 end)
  T.check(nested, function() return { pos = { x = 1, y = 2 }, vel = { x = 5, y = 3 } }, 2 end)
  T.check_error("attempt to index a nil value (field 'vel')", nested,
                function() return { pos = { x = 1.5, y = 2 } }, 0.1 end)
  local Log = { __index = function(t, k) return 0.25 end }
  T.check(nested, function() return { pos = { x = 1.5, y = 2 }, vel = setmetatable({}, Log) }, 0.1 end)
end)

test("a key of either kind in a chain: a whole float is its integer, inline (SciMark FFT's v[j + 1])", function()
  -- j starts an integer and becomes a float (k = k / 2), as in FFT's bit
  -- reversal; v[j + 1] in a chain takes the element inline when j + 1 is
  -- a whole float, as Lua normalizes the key
  local function swap(v, n, ks)
    local j = 0
    for i = 0, 2 * n - 4, 2 do
      if i < j then
        v[i + 1], v[i + 2], v[j + 1], v[j + 2] = v[j + 1], v[j + 2], v[i + 1], v[i + 2]
      end
      local k = ks or n
      while k <= j do j = j - k; k = k / 2 end
      j = j + k
    end
    return v
  end
  local function vec(n)
    local v = {}
    for i = 1, 2 * n do v[i] = i * 0.5 end
    return v
  end
  T.check(swap, function() return vec(16), 16 end)
  T.check(swap, function() return vec(8), 8, 2.5 end)   -- keys that are not integers: nil and new keys
  local seen = {}
  local Log = { __index = function(t, k) seen[#seen + 1] = math.type(k); return 0.0 end }
  T.check(swap, function() return setmetatable({ 1, 2 }, Log), 4 end)
  if not os.getenv("KJIT_NO_CHAINS") then
    -- the metamethod sees the key as it is (an integer here, a float
    -- there): the interpreted and compiled runs record the same kinds
    local a, b = {}, {}
    seen = a; swap(setmetatable({ 1, 2 }, Log), 8, 1.5)
    seen = b; kjit.jit(swap)(setmetatable({ 1, 2 }, Log), 8, 1.5)
    eq(table.concat(b, ","), table.concat(a, ","), "the keys __index saw")
    -- whole-float keys take no slow call of the chain
    local f = kjit.jit(swap)
    f(vec(16), 16)
    local before = select(5, require("kjit.testing").callees())
    f(vec(16), 16)
    eq(select(5, require("kjit.testing").callees()) - before, 0, "the chain's slow calls")
  end
end)

test("metamethods of constants' forms: the event and order Lua uses (t.x - 1, 1 + t.x)", function()
  local E = {}
  for _, ev in ipairs { "add", "sub", "mul", "mod", "idiv", "div", "pow" } do
    E["__" .. ev] = function(a, b)
      local o = type(a) == "table" and a or b
      o.log[#o.log + 1] = ev .. ":" .. (type(a) == "table" and "t" or tostring(a)) .. ","
                          .. (type(b) == "table" and "t" or tostring(b))
      return 1.5
    end
  end
  E.__unm = function(a) a.log[#a.log + 1] = "unm"; return 2 end
  local function f(t, dt)
    local a = t.x - 1 + dt
    local b = 1 + t.x * dt
    local c = 2 - t.x + dt
    local d = t.x % 3 - t.x // 2 + dt
    local e = -t.x * 0.5 + 2 ^ t.x
    return a, b, c, d, e
  end
  T.check(f, function() return { x = setmetatable({ log = {} }, E) }, 0.5 end)
  T.check(f, function() return { x = 4 }, 0.5 end)
  T.check(f, function() return { x = 4.5 }, 0.5 end)
end)

-- A chain without evidence either way (scimark-lu's row update) has two
-- native versions: the float form, tested first, and the flat form; then
-- the call. Every kind of table behind it.
test("flat chains: a float version tested first, the flat one, the call", function()
  local function rowupdate(vi, vj, j, n)
    local eij = vi[j]
    for k = j + 1, n do vi[k] = vi[k] - eij * vj[k] end
    return vi[n], math.type(vi[n])
  end
  T.check(rowupdate, function() return { 0.5, 1.5, 2.5, 3.5 }, { 1.25, 2.25, 3.25, 4.25 }, 1, 4 end)
  T.check(rowupdate, function() return { 2, 3, 4, 5 }, { 1, 2, 3, 4 }, 1, 4 end)
  T.check(rowupdate, function() return { 2, 3.5, 4, 5 }, { 1.5, 2, 3, 4.5 }, 1, 4 end)
  T.check(rowupdate, function() return { 0.5, 1.5, "2.5", 3.5 }, { 1.25, 2.25, 3.25, 4.25 }, 1, 4 end)
  T.check(rowupdate, function() return { math.maxinteger, 3, 4, 5 }, { 1, 2, math.mininteger, 4 }, 1, 4 end)
  T.check_error("attempt to perform arithmetic on a nil value (field '?')", rowupdate,
                function() return { 0.5, 1.5, 2.5, 3.5 }, { 1.25, 2.25 }, 1, 4 end)
  if os.getenv("KJIT_NO_CHAINS") then return end
  local f = kjit.jit(rowupdate)
  f({ 0.5, 1.5 }, { 1.5, 2.5 }, 1, 2)
  local _, versions = f:inspect("llvm"):gsub("\nchfast", "")
  truthy(versions >= 2, "two native versions of the row's chain")
end)

-- Session 20 (numloop): an access to the place an earlier access of the
-- same chain checked (the same table and name, or the same table and key
-- value) takes that check (cg_chain.c same_place): `bj.vx = bj.vx + d`
-- probes once, SOR's `v[x] = ... v[x]` checks its bound once. Where the
-- earlier check fails (a missing field, __index and __newindex, a string,
-- a key past the array part, a table grown by the chain's own call), the
-- chain's call does both, as interpreted.
local G = require "gc_harness"

local function bump(p, q, d)
  p.vx = p.vx + d * q.m
  p.vy = p.vy - d
  p.vx = p.vx * 2          -- written twice, read twice
  local y = p.vy + p.vx    -- a read after the write
  return y, math.type(y)
end

-- a missing key reads 10.5; each write is logged in the table's log, then done
local logged = {
  __index = function(t, k) return 10.5 end,
  __newindex = function(t, k, v)
    if rawget(t, "log") then t.log[#t.log + 1] = k end
    rawset(t, k, v)
  end,
}

local function relax(v, w, n)
  for x = 2, n - 1 do v[x] = 0.25 * (w[x] + v[x - 1] + v[x + 1]) + 0.5 * v[x] end
  return v[2], v[n - 1]
end

test("the same place twice in a chain: one check, the interpreter's results", function()
  T.check(bump, function() return { vx = 1.5, vy = 2.5 }, { m = 2.0 }, 0.5 end)
  T.check(bump, function() return { vx = 1, vy = 2 }, { m = 3 }, 1 end)          -- integers
  T.check(bump, function() return { vx = "1.5", vy = 2.5 }, { m = 2.0 }, 0.5 end) -- a string
  T.check(bump, function() local t = { vx = 1.5, vy = 2.5, m = 4.0 }; return t, t, 0.25 end)   -- one table twice
  -- vx missing: __index gives it, __newindex sees the writes (the
  -- metatable made once: both runs' tables share its functions)
  T.check(bump, function() return setmetatable({ vy = 1.5, log = {} }, logged), { m = 1.0 }, 2.0 end)
  -- vx removed, its key made dead by a collection (the node keeps the
  -- string's address, its key tag changed): __index again
  T.check(bump, function()
    local t = { vx = 1.5, vy = 2.5, log = {} }
    t.vx = nil
    collectgarbage()
    return setmetatable(t, logged), { m = 1.0 }, 2.0
  end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'vx')", bump,
                function() return { vy = 1.5 }, { m = 1.0 }, 2.0 end)
  T.check(relax, function() return { 1.0, 2.0, 3.0, 4.0, 5.0 }, { 0.5, 0.5, 0.5, 0.5, 0.5 }, 5 end)
  T.check(relax, function() return { 1, 2, 3, 4, 5 }, { 1, 1, 1, 1, 1 }, 5 end)
  -- v[x] in the hash part (a table made with holes), and nil past the end
  T.check(relax, function()
    local v = { 1.0, 2.0 }
    v[4] = 4.0; v[3] = 3.0; v[5] = 5.0
    return v, { 0.5, 0.5, 0.5, 0.5, 0.5 }, 5
  end)
  T.check_error("attempt to perform arithmetic on a nil value (field '?')", relax,
                function() return { 1.0, 2.0, 3.0 }, { 0.5, 0.5, 0.5, 0.5, 0.5 }, 5 end)
  T.check(relax, function() return setmetatable({ 1.0, 2.0, 3.0 }, logged), { 0.5, 0.5, 0.5, 0.5, 0.5 }, 5 end)
  for _, mode in ipairs(G.modes) do
    G.with_gc(mode, function()
      T.check(bump, function() return { vx = 1.5, vy = 2.5 }, { m = 2.0 }, 0.5 end)
      T.check(relax, function() return { 1.0, 2.0, 3.0, 4.0, 5.0 }, { 0.5, 0.5, 0.5, 0.5, 0.5 }, 5 end)
    end)
  end
  if os.getenv("KJIT_NO_CHAINS") then return end
  -- the same compiled code, its sites warm (each name's node found), then a
  -- table made alike whose vx was removed and its key made dead
  local fb = kjit.jit(bump)
  local function warm() return setmetatable({ vx = 1.5, vy = 2.5, log = {} }, logged) end
  local function dead()
    local t = warm()
    rawset(t, "vx", nil)
    collectgarbage()
    return t
  end
  eq(fb(warm(), { m = 1.0 }, 2.0), bump(warm(), { m = 1.0 }, 2.0), "warm sites")
  local ti, tc = dead(), dead()
  eq(fb(tc, { m = 1.0 }, 2.0), bump(ti, { m = 1.0 }, 2.0), "a dead key where the site looks")
  eq(table.concat(tc.log, ","), table.concat(ti.log, ","), "the writes __newindex saw")
  eq(tc.vx, ti.vx, "vx written")
  -- the fact: bump's chain (one) looks for each of its three places once
  -- (the site's remembered node loaded once each: nine accesses)
  local f = kjit.jit(bump)
  f({ vx = 1.5, vy = 2.5 }, { m = 2.0 }, 0.5)
  local ir = f:inspect("llvm")
  local _, chains = ir:gsub("call i32 @kjit_lv_chain", "")
  local _, probes = ir:gsub("@kcg%.site[%.%d]*, i64 0, i32 1%)", "")
  eq(chains, 1, "one chain")
  eq(probes, 3, "one probe per place")
end)

-- A value an earlier float chain gave (nbody's dx, d2, and bivx carried
-- around the inner loop) is checked as a float where a later chain uses
-- it, without the conversion of an integer in the fast path
-- (cg_chain.c floaty_values): where the earlier chain took its call and
-- left an integer (integer fields, a string, a metamethod), the later
-- chain takes its call too. Every such path against the interpreter.
local function advance(bs, nbody, dt, steps)
  for _ = 1, steps do
    for i = 1, nbody do
      local bi = bs[i]
      local bix, biy, biz, bimass = bi.x, bi.y, bi.z, bi.mass
      local bivx, bivy, bivz = bi.vx, bi.vy, bi.vz
      for j = i + 1, nbody do
        local bj = bs[j]
        local dx, dy, dz = bix - bj.x, biy - bj.y, biz - bj.z
        local d2 = dx * dx + dy * dy + dz * dz
        local mag = dt / (d2 * math.sqrt(d2))
        local bm = bj.mass * mag
        bivx = bivx - dx * bm
        bivy = bivy - dy * bm
        bivz = bivz - dz * bm
        bm = bimass * mag
        bj.vx = bj.vx + dx * bm
        bj.vy = bj.vy + dy * bm
        bj.vz = bj.vz + dz * bm
      end
      bi.vx, bi.vy, bi.vz = bivx, bivy, bivz
      bi.x = bix + dt * bivx
      bi.y = biy + dt * bivy
      bi.z = biz + dt * bivz
    end
  end
  return bs[1].vx, math.type(bs[1].vx), bs[2].x, math.type(bs[2].x)
end

-- (shared by both runs: tablediff compares functions by identity)
local mass_index = function(t, k) return k == "mass" and 3 or nil end
local Vsub = {}
Vsub.__sub = function(a, c) return (type(a) == "table" and a.v or a) - (type(c) == "table" and c.v or c) end
local grow_index = function(t, k)
  for n = 1, 40 do rawset(t, "k" .. n, n) end
  return 2.5
end

local function bodies(kind)
  local b = {}
  for i = 1, 5 do
    b[i] = { x = i * 1.5, y = -i * 0.75, z = i * 0.125, vx = 0.5 / i, vy = -0.25, vz = 0.0, mass = 1.0 + i / 8 }
  end
  if kind == "sun" then   -- integer fields that turn to floats after a step
    b[1].x, b[1].y, b[1].z, b[1].vx, b[1].vy, b[1].vz, b[1].mass = 0, 0, 0, 0, 0, 0, 40
  elseif kind == "ints" then   -- integers everywhere: every chain's call
    for i = 1, 5 do
      local p = b[i]
      p.x, p.y, p.z, p.vx, p.vy, p.vz, p.mass = i * 3, -i, 2 * i, i, 0, -i, i + 1
    end
  elseif kind == "huge" then   -- integers a float cannot hold exactly
    b[2].x, b[3].y = 9007199254740993, -9007199254740995
  elseif kind == "string" then   -- a string that converts, mid-loop
    b[3].x, b[4].vy = "2.5", "-1"
  elseif kind == "index" then   -- a mass found through __index; a metatable appears
    b[4].mass = nil
    setmetatable(b[4], { __index = mass_index })
  elseif kind == "arith" then   -- a position with __sub: a table in dx
    b[5].x = setmetatable({ v = 7 }, Vsub)
  elseif kind == "grow" then   -- __index that resizes the table it serves
    b[3].mass = nil
    setmetatable(b[3], { __index = grow_index })
  elseif kind == "nil" then   -- a missing field mid-loop: the error and its line
    b[4].z = nil
  end
  return b
end

test("values of earlier float chains checked as floats: the interpreter's results on every path", function()
  for _, kind in ipairs({ "floats", "sun", "ints", "huge", "string", "index", "arith", "grow", "nil" }) do
    T.check(advance, function() return bodies(kind), 5, 0.01, 3 end)
  end
  -- a float chain's value turning into an integer after the loop began:
  -- the carried sum is a phi of two chains' values
  local function carry(t, w, n)
    local s = t[1] * w
    for i = 2, n do s = s + t[i] * w end
    local d = s - t[1]
    return s, math.type(s), d, math.type(d)
  end
  T.check(carry, function() return { 1.5, 2.25, 3.0, 0.5 }, 2.0, 4 end)
  T.check(carry, function() return { 1, 2, 3, 4 }, 2.0, 4 end)
  T.check(carry, function() return { 1.5, 2, "3", 4.5 }, 0.5, 4 end)
  T.check(carry, function() return { 1, 2, {}, 4 }, 0.5, 4 end)
  -- with a collection at every allocation
  collectgarbage("generational", 0, 0)
  local ok, err = pcall(function()
    for _, kind in ipairs({ "sun", "string", "index", "grow" }) do
      T.check(advance, function() return bodies(kind), 5, 0.01, 2 end)
    end
  end)
  collectgarbage("incremental", 200, 100, 13)
  if not ok then error(err, 0) end
end)

test("values of earlier float chains: no integer conversion in nbody's inner loop", function()
  if os.getenv("KJIT_NO_CHAINS") then skip("chains are off (KJIT_NO_CHAINS)") end
  local f = kjit.jit(advance)
  f(bodies("floats"), 5, 0.01, 1)
  local ir = f:inspect("llvm")
  -- d2, dx, dy, dz, bivx, bivy, bivz and bimass: each a float chain's
  -- value (bimass a read before the loop that goes on past its chain), so
  -- none is converted where `mag` and the velocities are computed
  local _, conversions = ir:gsub("%%chint", "")
  eq(conversions, 0, "integer conversions in the fast paths")
end)

-- A write to a place an earlier access of the chain checked (a number of
-- the chain's kind there) or wrote writes the number's bits only
-- (cg_chain.c kept_kind): the kind byte there is already the form's.
-- Where the place holds another kind (an integer under a float chain, a
-- string, a table, a boolean overwritten), the check fails or the first
-- write sets the kind: the interpreter's values and subtypes either way.
test("writes over a place the chain checked: the value's kind kept, or set", function()
  local function bump(p, dt)
    p.vx = p.vx + p.ax * dt
    p.vy = p.vy + p.ay * dt
    return p.vx, math.type(p.vx), p.vy, math.type(p.vy)
  end
  T.check(bump, function() return { vx = 1.5, vy = 2.5, ax = 0.5, ay = 0.25 }, 0.1 end)
  T.check(bump, function() return { vx = 1, vy = 2.5, ax = 0.5, ay = 0.25 }, 0.1 end)
  T.check(bump, function() return { vx = 1.5, vy = "2", ax = 0.5, ay = 0.25 }, 0.1 end)
  T.check(bump, function() return { vx = 1.5, vy = 2.5, ax = 0.5, ay = 0.25 }, 1 end)
  -- two writes to one place: the first sets the kind over a string, a
  -- table or a boolean that was there, the second writes the bits only
  local function twice(p, q, dt)
    p.x = q.a * dt
    p.x = q.b * dt
    return p.x, math.type(p.x)
  end
  for _, old in ipairs({ 7, 7.5, "s", true, false }) do
    T.check(twice, function() return { x = old }, { a = 1.5, b = 2.5 }, 0.5 end)
  end
  T.check(twice, function() return { x = {} }, { a = 1.5, b = 2.5 }, 0.5 end)
  T.check(twice, function() return { x = 1 }, { a = 1, b = 2 }, 0.5 end)
  -- elements: SOR's update and an integer counter (the integer form)
  local function sor(v, w, n)
    for x = 2, n - 1 do v[x] = w * (v[x - 1] + v[x + 1]) * 0.25 + (1 - w) * v[x] end
    return v[2], math.type(v[2]), v[n - 1]
  end
  T.check(sor, function() return { 1.0, 2.0, 3.0, 4.0, 5.0 }, 1.25, 5 end)
  T.check(sor, function() return { 1, 2, 3, 4, 5 }, 1.25, 5 end)
  T.check(sor, function() return { 1.0, 2.0, "3", 4.0, 5.0 }, 1.25, 5 end)
  local function count(t, keys, n)
    for i = 1, n do local k = keys[i]; t[k] = t[k] + 1 end
    return t[1], math.type(t[1]), t[2], math.type(t[2])
  end
  T.check(count, function() return { 0, 0, 0 }, { 1, 2, 1, 3, 1 }, 5 end)
  T.check(count, function() return { 0, 0.5, 0 }, { 1, 2, 1, 3, 2 }, 5 end)
  T.check(count, function() return { 0, math.maxinteger, 0 }, { 2, 1 }, 2 end)
  if os.getenv("KJIT_NO_CHAINS") then return end
  -- the fact: two writes of a float chain store no kind byte (a float's
  -- tag, 19; bump's returns make its chain flat, with a float version)
  local function push(p, dt) p.vx = p.vx + p.ax * dt; p.vy = p.vy + p.ay * dt end
  T.check(push, function() return { vx = 1.5, vy = 2, ax = 0.5, ay = 0.25 }, 0.1 end)
  local f = kjit.jit(push)
  f({ vx = 1.5, vy = 2.5, ax = 0.5, ay = 0.25 }, 0.1)
  local _, kinds = f:inspect("llvm"):gsub("store i8 19,", "")
  eq(kinds, 0, "kind bytes stored by the writes")
end)

-- A frozen constant read between two operations (`local sqrt =
-- math.sqrt` read in the loop, `math.abs` through the global `math`)
-- emits no code, so the chain goes on across it (cg_chain.c quiet):
-- programs/nbody's `bix - bj.x` and `dx * dx + ...` are one chain. Every
-- kind of value the one chain's call then meets, as interpreted.
local sqrt = math.sqrt
local function dist(a, b, dt)
  local dx, dy = a.x - b.x, a.y - b.y
  local d = sqrt(dx * dx + dy * dy)
  local ex = a.x * dt
  local e = math.abs(ex - b.y * dt)
  return d, dx, dy, e, math.type(dx), math.type(ex)
end

test("a chain across a frozen constant's read: the interpreter's results on every path", function()
  T.check(dist, function() return { x = 4.5, y = 1.0 }, { x = 1.5, y = -3.0 }, 0.5 end)
  T.check(dist, function() return { x = 4, y = 1 }, { x = 1, y = -3 }, 2 end)
  T.check(dist, function() return { x = 4.5, y = 1 }, { x = 1, y = -3.0 }, 0.5 end)
  T.check(dist, function() return { x = "4.5", y = 1.0 }, { x = 1.5, y = "-3" }, 0.5 end)
  T.check(dist, function() return setmetatable({ y = 1.0 }, { __index = { x = 2.5 } }), { x = 1.5, y = 0.5 }, 0.5 end)
  -- __index (a function logging each key, in the tables' own log): read
  -- in the program's order by the chain's call
  T.check(dist, function()
    local log = {}
    return setmetatable({ y = 1.0, log = log }, Logged), setmetatable({ x = 1.5, log = log }, Logged), 0.5
  end)
  local V = {}
  V.__sub = function(p, q) return 3.0 end
  V.__mul = function(p, q) return 2.0 end
  T.check(dist, function() return { x = setmetatable({}, V), y = 1.0 }, { x = 1.5, y = 0.5 }, 0.5 end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'y')", dist,
                function() return { x = 1.5 }, { x = 1.5, y = 0.5 }, 0.5 end)
  T.check_error("attempt to perform arithmetic on a table value", dist,
                function() return { x = 1.5, y = {} }, { x = 1.5, y = 0.5 }, 0.5 end)
  -- a metamethod's table reaching sqrt: its argument error, located
  local W = {}
  local function w() return setmetatable({}, W) end
  W.__sub, W.__mul, W.__add = w, w, w
  T.check_error("bad argument #1 to 'sqrt' (number expected, got table)", dist,
                function() return { x = w(), y = 1 }, { x = 1.5, y = 0.5 }, 0.5 end)
  -- in a loop, the fields rewritten between calls
  local function walk(ps, n, dt)
    local s = 0.0
    for i = 1, n do
      local p = ps[i]
      local dx, dy = p.x - p.ox, p.y - p.oy
      s = s + sqrt(dx * dx + dy * dy) * dt
      p.ox, p.oy = p.x, p.y
    end
    return s
  end
  T.check(walk, function()
    local ps = {}
    for i = 1, 20 do ps[i] = { x = i * 1.5, y = -i, ox = 0.5, oy = i % 3 == 0 and "2" or 0.25 } end
    ps[7].x = 7
    return ps, 20, 0.125
  end)
end)

test("a chain across a frozen constant's read: one chain, one helper", function()
  if os.getenv("KJIT_NO_CHAINS") then skip("chains are off (KJIT_NO_CHAINS)") end
  local f = kjit.jit(function(a, b)
    local dx, dy = a.x - b.x, a.y - b.y
    return sqrt(dx * dx + dy * dy)
  end)
  eq(f({ x = 4.5, y = 1.0 }, { x = 1.5, y = -3.0 }), 5.0)
  local _, calls = f:inspect("llvm"):gsub("call i32 @kjit_lv_chain", "")
  eq(calls, 1, "chain helpers (the sqrt upvalue's read split the chain in two)")
end)

-- math.sqrt of a Lua value and float arithmetic on its result are members
-- of the chain that computes the argument (cg_chain.c issqrt,
-- native_member): `local d = sqrt(dx*dx + dy*dy); local mag = dt / (d *
-- d * d)` and the velocities after it are one chain, checked once. Its
-- call computes sqrt as luaL_checknumber takes the argument (an integer,
-- a string that converts) or raises sqrt's argument error.
local function pull(p, q, dt)
  local dx, dy = p.x - q.x, p.y - q.y
  local d = sqrt(dx * dx + dy * dy)
  local mag = dt / (d * d * d)
  p.vx = p.vx - dx * q.m * mag
  p.vy = p.vy - dy * q.m * mag
  q.d = d * 2.0
  return d, mag, -d, math.type(dx)
end

test("math.sqrt in a chain: every kind of argument, as interpreted", function()
  local function make(px, py, qx, qy, m)
    return { x = px, y = py, vx = 0.5, vy = -0.5 }, { x = qx, y = qy, m = m or 2.0 }, 0.01
  end
  T.check(pull, function() return make(4.5, 1.0, 1.5, -3.0) end)
  T.check(pull, function() return make(4, 1, 1, -3, 2) end)             -- integers: sqrt(25)
  T.check(pull, function() return make(4, 1.0, 1, -3.0) end)
  T.check(pull, function() return make("4.5", 1.0, 1.5, "-3") end)      -- strings convert
  T.check(pull, function() return make(1.5, 2.5, 1.5, 2.5) end)         -- d = 0: mag inf
  T.check(pull, function() return make(3.0, 0.0, 0.0, 0.0, "2") end)
  T.check(pull, function()
    local log = {}
    return setmetatable({ y = 1.0, vx = 0.5, vy = 0.5, log = log }, Logged),
           setmetatable({ x = 1.5, m = 1.0, log = log }, Logged), 0.5
  end)
  -- a metamethod's number: the chain's call runs it, then sqrt
  local N = { __sub = function() return 16 end, __mul = function(a, b) return 9 end }
  T.check(pull, function() return make(setmetatable({}, N), 1.0, 1.5, 2.0) end)
  -- sqrt's own errors, and errors after it (the writes before them left done)
  local W = {}
  local function w() return setmetatable({}, W) end
  W.__sub, W.__mul, W.__add = w, w, w
  T.check_error("bad argument #1 to 'sqrt' (number expected, got table)", pull,
                function() return make(w(), 1.0, 1.5, 2.0) end)
  local S = {}
  S.__sub = function() return setmetatable({}, S) end
  S.__mul, S.__add = S.__sub, function() return "abc" end
  T.check_error("bad argument #1 to 'sqrt' (number expected, got string)", pull,
                function() return make(setmetatable({}, S), 1.0, 1.5, 2.0) end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'm')", pull,
                function() local p, q, dt = make(4.5, 1.0, 1.5, -3.0); q.m = nil; return p, q, dt end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'vy')", pull,
                function() local p, q, dt = make(4.5, 1.0, 1.5, -3.0); p.vy = nil; return p, q, dt end)
  -- through the global math, the name Lua gives in the error
  local function g(p) return math.sqrt(p.a * p.b) + p.c end
  T.check(g, function() return { a = 2.0, b = 8.0, c = 0.5 } end)
  T.check(g, function() return { a = 2, b = 8, c = 1 } end)
  T.check_error("bad argument #1 to 'sqrt' (number expected, got table)", g,
                function() return { a = setmetatable({}, W), b = 8.0, c = 0.5 } end)
end)

test("math.sqrt in a chain: loops, fields changing kind, collections at every allocation", function()
  local function steps(ps, n, dt, k)
    local e = 0.0
    for _ = 1, k do
      for i = 1, n do
        local p = ps[i]
        for j = i + 1, n do
          local q = ps[j]
          local dx, dy = p.x - q.x, p.y - q.y
          local d = sqrt(dx * dx + dy * dy + 0.01)
          local mag = dt / (d * d * d)
          p.vx = p.vx - dx * q.m * mag
          q.vx = q.vx + dx * p.m * mag
          e = e + d
        end
        p.x = p.x + dt * p.vx
      end
    end
    return e
  end
  local P = { __index = function(t, k) return k == "m" and 1.5 or nil end }
  local function make()
    local ps = {}
    for i = 1, 8 do ps[i] = { x = i * 1.25, y = -i * 0.5, vx = 0.0, m = 1.0 + i / 8 } end
    ps[3].x, ps[5].y = 3, "2.5"                      -- an integer, a string
    ps[6] = setmetatable({ x = 0.5, y = 0.25, vx = 0.0 }, P)   -- m from __index
    return ps, 8, 0.01, 6
  end
  T.check(steps, make)
  collectgarbage("generational", 0, 0)
  local ok, err = pcall(T.check, steps, make)
  collectgarbage("incremental", 200, 100, 13)
  if not ok then error(err, 0) end
end)

-- sqrt through an upvalue the function assigns (another function there
-- mid-loop): a call of a value, not a chain's sqrt
local sq = math.sqrt
local function swapped(p, n)
  local s = 0.0
  for i = 1, n do
    s = s + sq(p.x * p.x + p.y) * p.k
    if i == 2 then sq = math.abs end
  end
  sq = math.sqrt
  return s
end

test("math.sqrt through an upvalue the function assigns: as interpreted", function()
  T.check(swapped, function() return { x = 3.0, y = 16.0, k = 0.5 }, 4 end)
  T.check(swapped, function() return { x = 3, y = 16, k = 1 }, 4 end)
end)

test("math.sqrt in a chain: one chain, no conversion call", function()
  if os.getenv("KJIT_NO_CHAINS") then skip("chains are off (KJIT_NO_CHAINS)") end
  local f = kjit.jit(pull)
  f({ x = 4.5, y = 1.0, vx = 0.5, vy = -0.5 }, { x = 1.5, y = -3.0, m = 2.0 }, 0.01)
  local ir = f:inspect("llvm")
  local _, calls = ir:gsub("call i32 @kjit_lv_chain", "")
  eq(calls, 1, "chain helpers (sqrt ended the chain: two)")
  truthy(not ir:find("kjit_lv_tonum", 1, true), "sqrt's argument converted by a call of its own")
end)
