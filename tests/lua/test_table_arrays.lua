-- Differential tests of arrays indexed in loops through Lua values (issue
-- 29, numeric code over tables): kjit arrays read from tables
-- (`self.data[i]`, `local d = e.pos; d[i]`) indexed through a native view
-- (codegen/cg_luaview.c), booleans and numbers in tables' array parts, and
-- the SciMark kernels as written. The interpreted function is the
-- specification (tablediff compares results and every argument's state,
-- arrays element by element); the adversarial cases change the array or the
-- table inside the loop (by the loop, by a callee, by a metamethod), alias
-- two names of one table, raise errors, and run the collector at every
-- allocation while views are held. Run again with KJIT_NO_STACK_READS=1
-- (tests.cmake: lua.test_table_arrays_api), where views are off.
local T = require "tablediff"
local kjit = require "kjit"

local function arr(n, dtype, f)
  local a = kjit.zeros(n, dtype or "f64")
  for i = 1, n do a[i] = f and f(i) or i * 0.5 end
  return a
end

test("self.data[i]: f64 and i64 arrays read and written from a table", function()
  local function sum(self, n)
    local s = 0
    for r = 1, n do
      for i = 1, #self.data do s = s + self.data[i] * self.k end
      local d = self.data
      for i = 1, #d do d[i] = d[i] * 0.5 + i end
    end
    return s
  end
  T.check(sum, function() return { data = arr(37), k = 2 }, 3 end)
  T.check(sum, function() return { data = arr(37, "i64", function(i) return i * 3 end), k = 2 }, 1 end)
  -- i64: an integer stored stays one; a float goes to the helper (exact or error)
  T.check(function(t)
    local d = t.d
    for i = 1, #d do d[i] = d[i] * 2 end
    for i = 1, #d do d[i] = d[i] / 2 end   -- 3.0 etc.: integral floats are stored
    return d[1], math.type(d[2])
  end, function() return { d = arr(5, "i64", function(i) return i end) } end)
  T.check_error("number has no integer representation", function(t)
    local d = t.d
    for i = 1, #d do d[i] = i / 4 end
  end, function() return { d = arr(5, "i64", function(i) return i end) } end)
  -- other dtypes (no view): the helpers, as before
  T.check(sum, function() return { data = arr(9, "i32", function(i) return i end), k = 3 }, 2 end)
  T.check(sum, function() return { data = arr(9, "f32"), k = 0.5 }, 2 end)
end)

test("array views: bounds, keys and stored values that are not numbers", function()
  local function get(t, i) local s = 0; for k = 1, 2 do s = s + t.a[i] end; return s end
  T.check_error("out of bounds", get, function() return { a = arr(4) }, 5 end)
  T.check_error("out of bounds", get, function() return { a = arr(4) }, 0 end)
  T.check_error("out of bounds", get, function() return { a = arr(4) }, -1 end)
  T.check(get, function() return { a = arr(4) }, 4 end)
  -- a key read from a table (an integer, an integral float, a string)
  local function getk(t, ks) local s = 0; for k = 1, #ks do s = s + t.a[ks[k]] end; return s end
  T.check(getk, function() return { a = arr(4) }, { 1, 2, 4 } end)
  T.check(getk, function() return { a = arr(4) }, { 1, 2.0 } end)
  T.check_error("", getk, function() return { a = arr(4) }, { 1, 1.5 } end)
  local function put(t, v) for k = 1, 3 do t.a[k] = v end; return t.a[2] end
  T.check(put, function() return { a = arr(4) }, 7 end)
  T.check_error("number expected, got boolean", put, function() return { a = arr(4) }, true end)
  T.check_error("number expected, got string", put, function() return { a = arr(4) }, "1" end)
  T.check_error("out of bounds", function(t) for k = 1, 5 do t.a[k] = k end end,
                function() return { a = arr(4) } end)
end)

test("the array replaced in the loop: by the loop, by a callee, by __index", function()
  local other = arr(6, "f64", function(i) return 100 + i end)
  -- the field changes each iteration (the loop assigns it)
  T.check(function(t, b)
    local s = 0
    for i = 1, 6 do
      s = s + t.a[i]
      if i % 2 == 0 then t.a = b else t.a = t.keep end
    end
    return s
  end, function() local a = arr(6); return { a = a, keep = a }, arr(6, "f64", function(i) return -i end) end)
  -- a callee swaps the array (an interpreted function value and a compiled local function)
  local function swap(t) t.a, t.b = t.b, t.a end
  T.check(function(t, f)
    local s = 0
    for i = 1, 6 do s = s + t.a[i]; f(t) end
    return s
  end, function() return { a = arr(6), b = arr(6, "i64", function(i) return i * 10 end) }, swap end)
  T.check(function(t)
    local s = 0
    for i = 1, 6 do s = s + t.a[i]; swap(t) end
    return s
  end, function() return { a = arr(6), b = arr(6, "i64", function(i) return i * 10 end) } end)
  -- an __index function that gives another array on each read (one
  -- metatable for both runs: tablediff compares metatables too)
  local n = 0
  local mt = { __index = function(_, k)
    n = n + 1
    return n % 2 == 0 and other or arr(6, "i64", function(i) return i end)
  end }
  T.check(function(t)
    local s = 0
    for i = 1, 6 do s = s + t.a[i] end
    return s
  end, function() n = 0; return setmetatable({}, mt) end)
  -- a userdata that is no kjit array (a file handle: its __index gives nil)
  T.check(function(t)
    local r = 0
    for i = 1, 3 do if t.u[i] == nil then r = r + 1 end end
    return r
  end, function() return { u = io.stdout } end)
  -- one value that is an array, then a table, then a string (no array)
  T.check_error("attempt to index", function(list)
    local s = 0
    for k = 1, #list do
      local v = list[k].v
      for i = 1, 3 do s = s + v[i] end
    end
    return s
  end, function() return { { v = arr(3) }, { v = { 1, 2, 3 } }, { v = arr(3, "i64", function(i) return i end) }, { v = 5 } } end)
end)

test("arrays made and dropped in the loop, the collector at every allocation", function()
  local saved = collectgarbage("count")
  collectgarbage("generational", 0, 0)   -- a minor collection at every step
  local ok, err = pcall(function()
    T.check(function(t, n)
      local s = 0
      for r = 1, n do
        t.a = kjit.zeros(8)       -- the old array is garbage now
        local junk = { r, { r } }   -- allocations: collections
        for i = 1, 8 do t.a[i] = i * r + #junk end
        for i = 1, 8 do s = s + t.a[i] end
      end
      return s
    end, function() return {}, 40 end)
    T.check(function(list)
      local s = 0
      for k = 1, #list do
        local d = list[k].d
        for i = 1, #d do s = s + d[i]; list[k] = { d = d, n = i } end
      end
      return s
    end, function()
      local l = {}
      for k = 1, 20 do l[k] = { d = arr(5, k % 2 == 0 and "f64" or "i64", function(i) return i + k end) } end
      return l
    end)
  end)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  assert(ok, err)
  assert(saved)
end)

test("tables' array parts in loops: holes, growth, metatables, aliasing", function()
  local function sor(mat, m, n, cycles, omega)
    local om4, om1 = omega * 0.25, 1.0 - omega
    m = m - 1
    n = n - 1
    for i = 1, cycles do
      for y = 2, m do
        local v, vp, vn = mat[y], mat[y - 1], mat[y + 1]
        for x = 2, n do
          v[x] = om4 * ((vp[x] + vn[x]) + (v[x - 1] + v[x + 1])) + om1 * v[x]
        end
      end
    end
  end
  local function grid(n, f)
    local g = {}
    for y = 1, n do g[y] = {}; for x = 1, n do g[y][x] = f(x, y) end end
    return g
  end
  T.check(sor, function() return grid(12, function(x, y) return (x * 7 + y * 3) % 11 / 11 end), 12, 12, 5, 1.25 end)
  -- integers among the floats, and two names of one row (aliasing)
  T.check(sor, function()
    local g = grid(8, function(x, y) return (x + y) % 3 end)
    g[5] = g[4]
    return g, 8, 8, 3, 1.5
  end)
  -- a hole (nil) in a row: arithmetic on nil raises, at the same point
  T.check_error("attempt to perform arithmetic on a nil value", sor, function()
    local g = grid(6, function(x, y) return x * y end)
    g[3][4] = nil
    return g, 6, 6, 2, 1.0
  end)
  -- a row with __index for its missing elements, and one with __newindex
  local rowmt = { __index = function(_, k) return k * 10 end,
                  __newindex = function(t, k, v) rawset(t, k, -v) end }
  T.check(function(t, n)
    local s = 0
    for i = 1, n do s = s + t[i] end
    for i = 1, n do t[i] = i end
    return s
  end, function() return setmetatable({ 1, 2 }, rowmt), 5 end)
  -- a table growing inside the loop (its array part moves)
  T.check(function(t, n)
    local s = 0
    for i = 1, n do
      t[#t + 1] = i * 1.5
      s = s + t[i] + t[#t]
    end
    return s, #t
  end, function() return { 1, 2 }, 50 end)
  -- the table changed by a metamethod run from inside the loop
  local grow = { __add = function(o, i)
    local t = o.t
    for k = 1, 40 do t[#t + 1] = k end   -- rehash: t's array part moves
    t[i + 1] = 100
    return 0
  end }
  T.check(function(t, o, n)
    local s = 0
    for i = 1, n do s = s + t[i] + (o + i) end
    return s
  end, function()
    local t = { 1, 2, 3, 4, 5, 6 }
    return t, setmetatable({ t = t }, grow), 6
  end)
end)

test("booleans read from a table tested in a loop (nsieve)", function()
  local function nsieve(p, m)
    for i = 2, m do p[i] = true end
    local count = 0
    for i = 2, m do
      if p[i] then
        for k = i + i, m, i do p[k] = false end
        count = count + 1
      end
    end
    return count
  end
  T.check(nsieve, function() return {}, 2000 end)
  T.check(nsieve, function() return { 0, 0, false, "x" }, 300 end)
  -- values that are not booleans: numbers, strings, tables, nil holes
  T.check(function(t, n)
    local c = 0
    for i = 1, n do if t[i] then c = c + 1 end end
    for i = 1, n do if not t[i] then c = c + 100 end end
    return c
  end, function() return { true, false, 0, "", {}, nil, false, true, nil, 1.5 }, 12 end)
end)

test("a frozen table (an upvalue) passed to a compiled callee is the table itself", function()
  -- SciMark's shape: a closure over its matrix calls the kernel with it
  local function scale(m, k)
    for i = 1, #m do m[i] = m[i] * k end
    return m[1]
  end
  local mat = { 1, 2.5, 3 }
  local run = kjit.jit(function(k) return scale(mat, k) end)
  local ref = { 1, 2.5, 3 }
  eq(run(2), scale(ref, 2), "result")
  eq(run(0.5), scale(ref, 0.5), "second call")
  for i = 1, 3 do eq(mat[i], ref[i], "mat[" .. i .. "]") end
  eq(math.type(mat[1]), math.type(ref[1]), "subtype")
  -- the caller reading the table it passed on reads it live (before
  -- 2026-11-28 refused: "pass the table as an argument")
  local both = kjit.jit(function(k) local r = scale(mat, k); return r + mat[2] end)
  local rr = scale(ref, 2); rr = rr + ref[2]
  eq(both(2), rr, "caller reads the callee's writes")
  for i = 1, 3 do eq(mat[i], ref[i], "mat[" .. i .. "] after") end
  -- a global table, and the same table twice (aliasing)
  G_TABARR = { 4, 5 }
  local function swap2(a, b) a[1], b[2] = b[2], a[1] end
  local sw = kjit.jit(function() swap2(G_TABARR, G_TABARR) end)
  sw()
  eq(G_TABARR[1], 5, "G[1]"); eq(G_TABARR[2], 4, "G[2]")
  G_TABARR = nil
end)
