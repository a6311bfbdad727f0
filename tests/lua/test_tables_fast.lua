-- Differential tests of the fast paths of table code (issue 29's speed
-- work: codegen/cg_lua.c's inline reads and writes over runtime/luatable.c's
-- layout): each fast path next to the case where it must give way to Lua's
-- own behaviour (metamethods, missing keys, holes, float keys), the
-- interpreted run being the specification (tablediff compares results and
-- the tables' state key by key).
local T = require "tablediff"
local kjit = require "kjit"

test("keys read from a table (integers at run time) index the array part", function()
  -- q[q1] with q1 = p[1]: the integer path; a float, a string or a nil
  -- key read the same way takes the generic path
  T.check(function(p, q)
    local q1 = p[1]
    local s = 0
    for _ = 1, 4 do
      local qq = q[q1]
      q[q1] = q1 * 10
      s = s + qq
      q1 = p[q1]
    end
    return s, q1
  end, function() return { 2, 3, 4, 1 }, { 5, 6, 7, 8 } end)
  T.check(function(p, q) local k = p.k; q[k] = 1; return q[k], q[p.j] end,
          function() return { k = 2.0, j = 2 }, { 9, 9 } end)
  T.check(function(p, q) local k = p.k; q[k] = 1; return q[k] end,
          function() return { k = 2.5 }, {} end)
  T.check(function(p, q) local k = p.k; q[k] = 3; return q[k], q.name end,
          function() return { k = "name" }, {} end)
  T.check_error("index is nil", function(p, q) local k = p.k; q[k] = 3 end,
                function() return {}, {} end)
  T.check_error("index is NaN", function(p, q) local k = p.k; q[k] = 3 end,
                function() return { k = 0 / 0 }, {} end)
  -- a key past the array part, and a table whose __index/__newindex answer
  local mt = { __index = function(_, k) return k * 100 end,
               __newindex = function(t, k, v) rawset(t, k, v + 1) end }
  T.check(function(p, q) local k = p[1]; local a = q[k]; q[k] = 5; return a, q[k] end,
          function() return { 3 }, setmetatable({}, mt) end)
  T.check(function(p, q) local k = p[1]; return q[k] end,
          function() return { 1000 }, { 1, 2 } end)
end)

test("booleans stored and read in place (nsieve's flags)", function()
  T.check(function(p, m)
    for i = 2, m do p[i] = true end
    local count = 0
    for i = 2, m do
      if p[i] then
        for k = i + i, m, i do p[k] = false end
        count = count + 1
      end
    end
    return count
  end, function() return {}, 200 end)
  -- the same table again: every element present, written in place
  local P = {}
  for i = 1, 50 do P[i] = i % 3 == 0 end
  T.check(function(p, m)
    for i = 1, m do p[i] = not p[i] end
    return p[1], p[3], #p
  end, function() local c = {} for i = 1, 50 do c[i] = P[i] end return c, 50 end)
  T.check(function(t) t.flag = true; t.other = false; t.num = true; return t.flag, t.other end,
          function() return { flag = false, other = 1, num = 2 } end)
  -- a boolean in a field, read and tested
  T.check(function(t) local n = 0; for i = 1, #t do if t[i].on then n = n + 1 end end; return n end,
          function() return { { on = true }, { on = false }, { on = 1 }, {} } end)
end)

test("holes of the array part: written in place without a metatable, else __newindex", function()
  T.check(function(t)
    t[2] = 5; t[3] = true; t[4] = 1.5
    return t[2], t[3], t[4], #t
  end, function() local t = { 1, 2, 3, 4 }; t[2] = nil; t[3] = nil; t[4] = nil; return t end)
  local log = {}
  local mt = { __newindex = function(t, k, v) log[#log + 1] = k; rawset(t, k, v) end }
  T.check(function(t)
    t[2] = 5; t[3] = true
    return t[2], t[3]
  end, function()
    local t = { 1, 2, 3 }
    t[2] = nil; t[3] = nil
    return setmetatable(t, mt)
  end)
  -- the metamethod ran for both holes, interpreted then compiled
  eq(#log, 4, "__newindex ran for each hole")
  local strict = { __newindex = function() error("no writes here") end }
  T.check_error("no writes here", function(t)
    t[2] = 5
    return t[2]
  end, function()
    local t = { 1, 2 }
    t[2] = nil
    return setmetatable(t, strict)
  end)
end)

test("present values that are not numbers: strings, tables, functions read raw", function()
  local function triple(x) return x * 3 end
  T.check(function(t) return t.name, t[1], t[2][1], t.sub.x, t.f(2) end,
          function() return { "a", { 4 }, name = "n", sub = { x = 3 }, f = triple } end)
  -- __index never runs for a present key; it does for a missing one
  local mt = { __index = function(_, k) return "mm:" .. tostring(k) end }
  T.check(function(t) return t.name, t.other, t[1], t[5] end,
          function() return setmetatable({ "one", name = "n" }, mt) end)
end)

test("constructors sized as the VM sizes them", function()
  T.check(function(n)
    local list = {}
    for i = 1, n do list[i] = { i, i * 2, i * 3, x = i, y = -i } end
    local s = 0
    for i = 1, n do local e = list[i]; s = s + e[1] + e[3] + e.x - e.y end
    return s, #list[n]
  end, function() return 100 end)
  -- binary-trees' shape: { item, left, right } and { item }
  local function tree(item, depth)
    if depth > 0 then
      local i = item + item
      local left, right = tree(i - 1, depth - 1), tree(i, depth - 1)
      return { item, left, right }
    end
    return { item }
  end
  local function check(t)
    if t[2] then return t[1] + check(t[2]) - check(t[3]) end
    return t[1]
  end
  local function run(d) return check(tree(1, d)), #tree(0, d) end
  T.check(run, function() return 8 end)
end)

test("a collection at every allocation while compiled code holds what it read", function()
  local function f(n)
    local out = {}
    for i = 1, n do
      local e = { name = "e" .. i, sub = { i }, on = i % 2 == 0 }
      out[i] = e
      local s = e.sub          -- a table read raw from a field, anchored in a slot
      local nm = out[i].name   -- a string read raw
      if e.on then s[2] = nm end
    end
    return out
  end
  local pause = collectgarbage("setpause", 0)
  local stepmul = collectgarbage("setstepmul", 1000)
  local ok, err = pcall(T.check, f, function() return 60 end)
  collectgarbage("setpause", pause)
  collectgarbage("setstepmul", stepmul)
  if not ok then error(err, 0) end
end)

test("fields off their main position (collision chains) read and written inline", function()
  -- many fields in one hash part: some keys sit away from their main
  -- position; every one must be found, and a missing one must not be
  local function make()
    local t = {}
    for i = 1, 40 do t["f" .. i] = i * 1.5 end
    t.x, t.y, t.z, t.vx, t.vy, t.vz, t.mass = 1, 2, 3, 4, 5, 6, 7
    return t
  end
  T.check(function(t)
    local s = t.x + t.y + t.z + t.vx + t.vy + t.vz + t.mass + t.f1 + t.f17 + t.f40
    t.vx = t.vx + 1; t.mass = t.mass * 2; t.f33 = -1
    return s, t.missing, t.f41
  end, function() return make() end)
end)

test("arithmetic and comparisons off the number path: metamethods, strings, errors", function()
  local V = {}
  V.__index = V
  V.__add = function(a, b) return setmetatable({ x = a.x + b.x }, V) end
  V.__lt = function(a, b) return a.x < b.x end
  V.__le = function(a, b) return a.x <= b.x end
  V.__unm = function(a) return setmetatable({ x = -a.x }, V) end
  local function vec(x) return setmetatable({ x = x }, V) end
  T.check(function(t) local c = t.a + t.b; local d = -t.a; return c.x, d.x, t.a < t.b, t.b <= t.a end,
          function() return { a = vec(1), b = vec(2.5) } end)
  T.check(function(t) return t.s + 1, t.s * t.n, t.n .. "", t.i // t.j, t.i % t.j end,
          function() return { s = "10", n = 3, i = 7, j = 2 } end)
  T.check_error("attempt to perform arithmetic on a nil value (field 'missing')",
                function(t) return t.x + t.missing end, function() return { x = 1 } end)
  T.check_error("attempt to perform arithmetic on a table value",
                function(t) return t.x * t.sub end, function() return { x = 1, sub = {} } end)
  T.check_error("attempt to perform bitwise operation on a boolean value",
                function(t) return t.x & t.b end, function() return { x = 1, b = true } end)
  T.check_error("has no integer representation", function(t) return t.x | t.f end,
                function() return { x = 1, f = 1.5 } end)
  T.check_error("attempt to divide by zero", function(t) return t.x // t.z end,
                function() return { x = 1, z = 0 } end)
  T.check_error("attempt to perform 'n%0'", function(t) return t.x % t.z end,
                function() return { x = 1, z = 0 } end)
  T.check_error("attempt to compare number with nil", function(t) return t.x < t.missing end,
                function() return { x = 1 } end)
  T.check_error("attempt to compare two table values", function(t) return t.a <= t.b end,
                function() return { a = {}, b = {} } end)
  T.check_error("attempt to add a 'string' with a 'number'", function(t) return t.s + 1 end,
                function() return { s = "abc" } end)
end)

test("a site's remembered node: other shapes, resized tables, deleted fields", function()
  -- one read site over objects whose key x sits in different nodes, a
  -- table that grows between reads (its nodes move), a field set to nil
  T.check(function(list)
    local s = 0
    for i = 1, #list do s = s + (list[i].x or 0) end
    local t = list[1]
    for k = 1, 30 do t["g" .. k] = k end   -- rehash: x moves
    s = s + t.x
    t.x = nil
    return s, t.x, list[2].x
  end, function()
    return { { x = 1, y = 2 }, { a = 1, b = 2, c = 3, x = 4 }, { y = 5, x = 6.5 }, { z = 1 },
             setmetatable({}, { __index = { x = 100 } }) }
  end)
end)

test("one read site over every kind of value (the C path after an inline miss)", function()
  -- ps[i] and p.v at one site each, over integers, floats, booleans,
  -- strings, tables, holes (nil, or __index answering) and a field moved
  -- to another node: the inline check takes only numbers at the
  -- remembered node, the C helper everything else
  local function f(ps)
    local out, n = {}, 0
    for i = 1, #ps + 2 do
      local e = ps[i]
      n = n + 1; out[n] = e
      if type(e) == "table" then
        local v = e.v
        n = n + 1; out[n] = v == nil and "nil" or v
        e.v = i            -- a number over whatever was there (or a new key)
        n = n + 1; out[n] = e.v
      end
    end
    return out, n
  end
  local function args()
    local mtv = setmetatable({}, { __index = { v = 7.5 } })
    return { { v = 1 }, { a = 1, b = 2, v = 2.5 }, true, "s", false, { v = "str" },
             { v = { 1 } }, { v = true }, mtv, { w = 1 }, 3, 4.25,
             setmetatable({ v = 1 }, { __newindex = error }) }
  end
  T.check(f, args)
  -- holes of the array part with __index
  local ten = function(_, k) return k * 10 end
  T.check(function(p) return p[1], p[2], p[3] end,
          function() return setmetatable({ 1, nil, "x" }, { __index = ten }) end)
  local pause = collectgarbage("setpause", 0)
  local stepmul = collectgarbage("setstepmul", 1000)
  local ok, err = pcall(T.check, f, args)
  collectgarbage("setpause", pause)
  collectgarbage("setstepmul", stepmul)
  if not ok then error(err, 0) end
end)

test("one write site over tables whose field sits in different nodes", function()
  T.check(function(list, dv)
    for r = 1, 3 do
      for i = 1, #list do
        local t = list[i]
        t.x = t.x + dv * r
        t.y = (t.y or 0) + 1
      end
    end
    return list
  end, function()
    return { { x = 1, y = 2 }, { a = 1, b = 2, c = 3, x = 4 }, { y = 5, x = 6.5 },
             { x = 0, z = 1 } }, 0.5
  end)
end)

test("+ - * / on values read from tables: every mix of integers and floats", function()
  -- one compiled site per operator, run over pairs of each kind: the
  -- integer result wraps, a float operand makes a float (an integer
  -- converted as Lua converts it, 2^53 + 1 rounding), / is a float
  local vals = { 3, -7, 0, math.maxinteger, math.mininteger, (1 << 53) + 1, 2.5, -0.0, 0.0,
                 1 / 0, -1 / 0, 1e308, 3.0 }
  local function f(t, u)
    local out = {}
    for i = 1, #t do
      local a, b = t[i], u[i]
      out[#out + 1] = a + b
      out[#out + 1] = a - b
      out[#out + 1] = a * b
      out[#out + 1] = a / b
      out[#out + 1] = a * 2 + b / 4 - 1.5 * a
      out[#out + 1] = math.type(a - b)
    end
    return out
  end
  T.check(f, function()
    local t, u = {}, {}
    for i = 1, #vals do
      for j = 1, #vals do t[#t + 1] = vals[i]; u[#u + 1] = vals[j] end
    end
    return t, u
  end)
  -- NaN: compared by the harness as NaN
  T.check(function(t) local x = t.a - t.b; return x ~= x, t.n * 0 end,
          function() return { a = 1 / 0, b = 1 / 0, n = 0 / 0 } end)
end)

test("a number indexed where a table was expected: the site's helper boxes it", function()
  -- the inline path gives way for a value that is not a table it knows;
  -- the site's helper then does what Lua does with the number, and raises
  -- the access's error itself at its line
  T.check_error("attempt to index a number value (field 'n')",
                function(t) return t.n.x end, function() return { n = 3 } end)
  T.check_error("attempt to index a number value (local 'p')",
                function(t) local p = t[1]; return p[2] end, function() return { 2.5 } end)
  T.check_error("attempt to index a number value (field 'n')",
                function(t) t.n.x = 1 end, function() return { n = 3 } end)
  T.check_error("attempt to index a number value (local 'p')",
                function(t) local p = t[1]; p[2] = true end, function() return { 7 } end)
  T.check_error("attempt to index a nil value (field 'missing')",
                function(t) return t.missing[1] end, function() return {} end)
  -- one site seeing a table, then a number, then a table again
  T.check(function(ps)
    local s = 0
    for i = 1, #ps do
      local ok, v = pcall(function() return ps[i].x end)
      s = s + (ok and v or 100)
    end
    return s
  end, function() return { { x = 1 }, 5, { x = 2.5 }, {} and { x = 4 } } end)
  -- numbers with a metatable (debug.setmetatable): __index and __newindex
  -- run for a number read from a table
  local old = debug.getmetatable(0)
  local log = {}
  debug.setmetatable(0, { __index = function(n, k) return n * 10 + #k end,
                          __newindex = function(n, k, v) log[#log + 1] = n + v end })
  local ok, err = pcall(function()
    T.check(function(t) local a = t.n.abc; t.n.zz = 5; t[1][1] = 2; return a, t[1].q end,
            function() return { n = 4, 1.5 } end)
  end)
  debug.setmetatable(0, old)
  assert(ok, err)
  assert(#log == 4 and log[1] == 9 and log[2] == 3.5, "__newindex ran for both runs")
end)

test("truth of values read from tables: tables without a call, the rest as Lua says", function()
  -- `if t[2]` on a table read is true from its address; false, nil, 0,
  -- strings and functions keep Lua's truth
  T.check(function(xs)
    local n = 0
    for i = 1, 8 do
      local v = xs[i]
      if v then n = n + i end
      if xs[i] then n = n + 100 * i end
    end
    return n
  end, function() return { {}, false, 0, "s", print, setmetatable({}, {}), 0.0, nil } end)
  -- binary-trees' ItemCheck: leaves hold one element, nodes three
  local function tree(d) if d == 0 then return { 1 } end return { d, tree(d - 1), tree(d - 1) } end
  T.check(function(t)
    local function check(n) if n[2] then return n[1] + check(n[2]) - check(n[3]) end return n[1] end
    return check(t)
  end, function() return tree(5) end)
end)

test("writes into a table made in the same block call the site's helper directly", function()
  -- constructors with fields, duplicate keys, fields written twice, an
  -- index written into a fresh table, all in one block; then read back
  T.check(function(a, b)
    local t = { x = a, y = b, x = b, [1] = a, [2.0] = b, z = { a, b } }
    t.x = t.x + 1; t.w = "s"; t.w = false; t[3] = a; t[3] = t[3] * 2
    local u = {}
    u.k = t; u[1] = u; u.k.y = 0.5
    return t, u, t.x, t[2], #t
  end, function() return 3, 4.5 end)
  -- the same under a collection at every allocation
  local pause = collectgarbage("setpause", 0)
  local stepmul = collectgarbage("setstepmul", 1000)
  local ok, err = pcall(T.check, function(n)
    local list = {}
    for i = 1, n do list[i] = { i = i, name = "p" .. i, sub = { v = i * 0.5 } } end
    return list
  end, function() return 40 end)
  collectgarbage("setpause", pause)
  collectgarbage("setstepmul", stepmul)
  assert(ok, err)
end)
