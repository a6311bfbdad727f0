-- Differential tests: function literals that escape compiled code (issue 29
-- item 2): stored in tables, returned, captured by literals that store
-- them. Each is a real Lua closure made where the literal is made
-- (runtime/luaclosure.c), so calling it later from Lua, its upvalues, its
-- errors and debug information are the interpreter's.
local kjit = require "kjit"
local T = require "tablediff"

-- runs fn interpreted and compiled on fresh arguments from make(), then
-- use(result...) on each side: the uses' results must be the same
local function both(fn, make, use)
  local jf = kjit.jit(fn)
  local ir = table.pack(pcall(function() return use(fn(make())) end))
  local cr = table.pack(pcall(function() return use(jf(make())) end))
  if not ir[1] then
    truthy(not cr[1], "compiled run raised too: " .. tostring(ir[2]))
    eq(tostring(cr[2]), tostring(ir[2]), "error")
    return
  end
  truthy(cr[1], "compiled run: " .. tostring(cr[2]))
  eq(cr.n, ir.n, "number of results")
  for i = 2, ir.n do
    local e = T.compare(ir[i], cr[i], {}, {}, "result #" .. (i - 1))
    if e then error(e, 2) end
  end
end

test("a returned closure captures numbers, strings and tables by value", function()
  both(function(k, name, t)
    return function(x) return x * k, name .. "!", t.v + x end
  end, function() return 3, "n", { v = 10 } end, function(f) return f(2) end)
  both(function(a, b)   -- two literals over the same locals
    return function() return a + b end, function() return a - b end
  end, function() return 7, 2.5 end, function(f, g) return f(), g(), f ~= g end)
end)

test("closures stored in tables, called from compiled and interpreted code", function()
  both(function(k)
    local obj = { k = k }
    obj.scale = function(self, x) return self.k * x end
    obj.add = function(self, x) return self.k + x end
    return obj, obj:scale(3), obj.add(obj, 1)
  end, function() return 4 end, function(o, a, b) return o:scale(5), o:add(2), a, b end)
  both(function(n)
    local t = {}
    for i = 1, n do t[i] = function() return i * i end end
    return t
  end, function() return 5 end, function(t)
    local s = {}
    for i = 1, #t do s[i] = t[i]() end
    return s
  end)
end)

test("a local function captured by a literal that stores it (array3d's pattern)", function()
  both(function(n)
    local function set(self, i, v) self.data[i] = v * self.scale end
    local function get(self, i) return self.data[i] end
    local function new(scale) return { scale = scale, data = {}, set = set, get = get } end
    local o = new(2)
    for i = 1, n do o:set(i, i) end
    local p = new(3)
    return o, o.set == p.set, o:get(n)
  end, function() return 4 end, function(o, same, last)
    o:set(9, 1)
    return o.data, same, last, o:get(9)
  end)
end)

test("recursion through the closure's own name, stored in a table", function()
  both(function()
    local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
    return { fact = fact }, fact(5)
  end, function() end, function(t, r) return t.fact(10), r end)
end)

local counter = 0
local function make_counter()
  return function(by) counter = counter + by; return counter end
end

test("an upvalue shared with the compiled function's own closure is the same variable", function()
  local jm = kjit.jit(make_counter)
  counter = 0
  local inc = jm()
  eq(inc(2), 2)
  eq(inc(3), 5)
  eq(counter, 5, "the real upvalue was assigned")
  counter = 100
  eq(inc(1), 101, "and is read live")
end)

test("globals read by a returned closure are the environment's", function()
  both(function()
    return function(x) return math.floor(x) + tonumber("1") end
  end, function() end, function(f) return f(2.5) end)
end)

test("errors inside an escaped closure: the interpreter's message and line", function()
  both(function(k)
    return function(x)
      if x > k then error("too big: " .. x) end
      return x
    end
  end, function() return 3 end, function(f) return f(1), f(5) end)
  both(function()
    return { f = function(t) return t.missing.x end }
  end, function() end, function(o) return o.f({}) end)
end)

test("debug information of an escaped closure is the literal's", function()
  local function mk() return function(a, b) return a end end
  local f = kjit.jit(mk)()
  local g = mk()
  local fi, gi = debug.getinfo(f, "Su"), debug.getinfo(g, "Su")
  eq(fi.short_src, gi.short_src, "short_src")
  eq(fi.linedefined, gi.linedefined, "linedefined")
  eq(fi.lastlinedefined, gi.lastlinedefined, "lastlinedefined")
  eq(fi.nparams, gi.nparams, "nparams")
  eq(fi.nups, gi.nups, "nups")
end)

test("collections at every allocation while closures are made", function()
  collectgarbage("incremental", 0, 1000, 0)
  local ok, err = pcall(function()
    both(function(n, src)
      local out = {}
      for i = 1, n do
        local tag = "k" .. i
        out[i] = { f = function(x) return tag .. x .. src.s end, junk = { i } }
      end
      return out
    end, function() return 60, { s = "!" } end, function(out)
      collectgarbage("collect")
      local r = {}
      for i = 1, #out do r[i] = out[i].f(i) end
      return r
    end)
  end)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  if not ok then error(err, 0) end
end)

test("an escaping literal captures an array made here", function()
  -- (refused until refuse2: the array is its userdata now, runtime/luaarray.c)
  local function mk(n) local a = kjit.full(n, 2.5) return function(i) a[i] = i return a[1], #a end end
  local fi, fc = mk(3), kjit.jit(mk)(3)
  collectgarbage("collect")
  eq(select(1, fc(1)), select(1, fi(1)))
  eq(select(2, fc(2)), select(2, fi(2)))
end)
