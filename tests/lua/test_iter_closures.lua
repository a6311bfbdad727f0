-- Differential tests: a generic for over a Lua closure iterator in compiled
-- code (runtime/luatfor.c's path through kjit_lc_call), upvalues holding
-- numbers read and written in place (luacall.c kjit_lc_getupv/setupv), the
-- loop's end test `x == nil` (cg_lua.c eq_nil), small callees that write
-- tables and call assert compiled by default (host/callval.c
-- is_small_leaf), and field reads copied inline (a method called next, a
-- field only tested). bench/programs/array3d.lua's shapes, in general.
-- The interpreted function is the specification: results with subtypes,
-- tables key by key, errors with file:line.
local T = require "tablediff"
local testing = require "kjit.testing"

local function compiled_count() return select(2, testing.callees()) end

-- runs body under the default callee policy; checks that at least `want`
-- callee specializations were made during it (so that the iterator or the
-- method did run compiled, not interpreted under its trampoline)
local function compiles(want, body)
  local old = testing.callees("leaves")
  local before = compiled_count()
  local ok, err = pcall(body)
  testing.callees(old)
  if not ok then error(err, 0) end
  truthy(compiled_count() - before >= want,
         "callees compiled: " .. (compiled_count() - before) .. ", wanted " .. want)
end

-- array3d's iterator: x in the control variable, y and z in upvalues it
-- assigns, three values a turn, nil, nil, nil at the end
local function points(nx, ny, nz)
  local y, z = 0, 0
  return function(self, x)
    x = x + 1
    if x >= self.nx then
      x = 0
      y = y + 1
      if y >= self.ny then
        y = 0
        z = z + 1
        if z >= self.nz then return nil, nil, nil end
      end
    end
    return x, y, z
  end, { nx = nx, ny = ny, nz = nz }, -1
end

test("a closure iterator assigning its upvalues: every turn's values, compiled", function()
  compiles(1, function()
    T.check(function(out, n)
      local s = 0
      for x, y, z in points(n, 3, 2) do
        out[#out + 1] = x * 100 + y * 10 + z
        s = s + x + y * 0.5 + z
      end
      return s
    end, function() return {}, 4 end)
  end)
end)

test("iterators ending with one nil, giving fewer or more values than the loop takes", function()
  compiles(1, function()
    T.check(function(n)   -- one value a turn into three variables: y, z nil
      local i = 0
      local function it() i = i + 1; if i <= n then return i end end
      local s, nils = 0, 0
      for x, y, z in it do
        s = s + x
        if y == nil and z == nil then nils = nils + 1 end
      end
      return s, nils, i
    end, function() return 5 end)
  end)
  T.check(function(n)   -- four values a turn into two variables
    local i = 0
    local function it() i = i + 1; if i <= n then return i, i * 2, i * 3, i * 4 end end
    local s = 0
    for a, b in it do s = s + a + b end
    return s
  end, function() return 6 end)
  T.check(function(n)   -- a float, then nil: the end test on a number and on nil
    local k = 0.5
    local function it() k = k + 1; if k < n then return k end return nil end
    local s = 0
    for x in it do s = s + x end
    return s, k
  end, function() return 5 end)
  T.check(function(t)   -- values that are not numbers: false does not end it
    local i = 0
    local function it() i = i + 1; return t[i] end
    local n = 0
    for v in it do n = n + 1 end
    return n
  end, function() return { 1, false, "s", {}, 2.5 } end)
end)

test("the control variable after the loop, break, and an iterator used twice", function()
  T.check(function(n)
    local f, s, c = points(n, 2, 1)
    local last
    for x, y in f, s, c do
      last = x
      if y == 1 and x == 1 then break end
    end
    local after = 0
    for x in f, s, c do after = after + 1 end   -- the same closure, y left at 1
    return last, after
  end, function() return 3 end)
end)

test("upvalues shared between the iterator and the enclosing function", function()
  T.check(function(n)
    local count, total = 0, 0.0
    local function it(_, x)
      count = count + 1
      if x >= n then return nil end
      total = total + x * 0.25
      return x + 1
    end
    local seen = 0
    for x in it, nil, 0 do
      seen = seen + x
      count = count + 10   -- the enclosing function writes the iterator's upvalue
    end
    return count, total, seen
  end, function() return 7 end)
  T.check(function(n)   -- an upvalue that goes from integer to float to a string
    local v = 0
    local function it(_, i)
      if i >= n then return nil end
      if i == 2 then v = v + 0.5 elseif i == 4 then v = "s" .. i else v = v + 1 end
      return i + 1
    end
    for _ in it, nil, 0 do end
    return v
  end, function() return 5 end)
end)

test("an error inside the iterator: its message and its line", function()
  T.check_error("iterator failed at 3", function(n)
    local function it(_, i)
      if i == 3 then error("iterator failed at " .. i) end
      return i + 1
    end
    local s = 0
    for i in it, nil, 0 do s = s + i; if i > n then break end end
    return s
  end, function() return 10 end)
  T.check_error("attempt to perform arithmetic on a nil value", function(t)
    local function it(s, i)
      i = i + 1
      local v = s[i]
      if v == nil then return nil end
      return i, v + s.missing
    end
    local s = 0
    for _, v in it, t, 0 do s = s + v end
    return s
  end, function() return { 1, 2 } end)
  T.check_error("attempt to call a nil value", function(t)   -- nil only at run time
    for x in t.it do return x end
  end, function() return {} end)
end)

test("iterators that are C functions or callable tables", function()
  T.check(function(t)
    local s = 0
    for k, v in next, t do if math.type(v) then s = s + v end end
    return s
  end, function() return { 1, 2, x = 3.5, y = "no" } end)
  T.check(function(s)
    local out = {}
    for w in string.gmatch(s, "%a+") do out[#out + 1] = w end
    return out
  end, function() return "one two  three" end)
  T.check(function(n)
    local it = setmetatable({ i = 0 }, { __call = function(self, _, x)
      self.i = self.i + 1
      if x >= n then return nil end
      return x + 1, self.i
    end })
    local s = 0
    for x, c in it, nil, 0 do s = s + x * c end
    return s, it.i
  end, function() return 4 end)
end)

-- array3d's method: asserts, fields read, a table keyed from 0 written
-- (hash part, then array part as it grows), fields written
local function array_set(self, x, y, z, p)
  assert(x >= 0 and x < self.nx, "x outside PA")
  assert(y >= 0 and y < self.ny, "y outside PA")
  local pos = (z * self.ny + y) * self.nx + x
  local image = self.image
  if self.packed then
    local maxv = self.max_voltage
    if p > maxv then self.max_voltage = p * 2.0 end
    local oldp = image[pos] or 0.0
    if oldp > maxv then p = p + maxv * 2.0 end
    image[pos] = p
  else
    image[pos] = p
  end
  self.changed = true
end

local function array_new(n, packed)
  return { nx = n, ny = n, nz = n, packed = packed, max_voltage = 0.0, changed = false,
           image = {}, set = array_set }
end

test("a method with asserts writing a table from key 0 compiles, table state as interpreted", function()
  for _, packed in ipairs({ false, true }) do
    compiles(1, function()
      T.check(function(arr, n)
        for x, y, z in points(n, n, n) do arr:set(x, y, z, x * x) end
        for x, y, z in points(n, n, n) do arr:set(x, y, z, x + 0.5) end   -- existing keys
        return arr.max_voltage
      end, function() return array_new(4, packed), 4 end)
    end)
  end
  T.check(function(arr, n)   -- packed nil: a field absent, only tested
    for x = 0, n - 1 do arr:set(x, 0, 0, x) end
    return #arr.image
  end, function() local a = array_new(5); a.packed = nil; return a, 5 end)
  T.check_error("y outside PA", function(arr, n)   -- the assert's message, the writes before it
    for x, y, z in points(n, n, n) do arr:set(x, y * 2, z, x) end
  end, function() return array_new(3, true), 3 end)
end)

local flag_mt = { __index = function(_, k) return k == "flag" end }
test("a field only tested: booleans, nil, numbers, and a metatable's __index", function()
  T.check(function(list)
    local n = 0
    for i = 1, #list do
      local o = list[i]
      if o.flag then n = n + 1 end
      if not o.flag then n = n + 100 end
    end
    return n
  end, function()
    return { { flag = true }, { flag = false }, {}, { flag = 0 }, { flag = "s" },
             setmetatable({}, flag_mt), { flag = nil, other = 1 } }
  end)
end)

local Class = { f = function(self, x) return self.k * x end }
Class.__index = Class
local callable = setmetatable({}, { __call = function(_, self, x) return x + 1 end })
local function add_k(self, x) return self.k + x end
test("methods read to be called: Lua functions, C functions, callable tables, through __index", function()
  T.check(function(list, x)
    local s = 0
    for i = 1, #list do s = s + list[i]:f(x) end
    return s
  end, function()
    return { { k = 2, f = add_k },
             { k = 3, f = rawlen },
             { f = callable },
             setmetatable({ k = 5 }, Class) }, 4
  end)
  T.check_error("attempt to call a number value", function(o) return o:f(1) end,
                function() return { f = 1 } end)
end)

-- An upvalue's site cache (luacall.h KlcUpvCache) names its Lua state and
-- kjit_lc_epoch, as the other caches do, read under its seqlock: the
-- compiled read and write check the epoch (the IR's form), and a bumped
-- epoch (kjit.testing.callees(mode) bumps it) empties every cache, which
-- the next use fills again: the values stay the interpreter's throughout.
-- (What the epoch adds cannot fail a test on its own: a later Lua state at
-- a closed one's address; the IR's form fails on the start.)
test("an upvalue's site cache checks kjit_lc_epoch; a bumped epoch refills it", function()
  local n = 0
  local function body(k) for i = 1, k do n = n + i * 0.5 end return n end
  local f = require("kjit").jit(body)
  f(1)
  local ir = f:inspect("llvm")
  truthy(ir:find("kcg.upv", 1, true), "a site cache in the IR")
  truthy(ir:find("@kjit_lc_epoch", 1, true), "the site cache reads kjit_lc_epoch")
  truthy(ir:find("fence acquire", 1, true), "the seqlock's fence")
  local want, got = {}, {}
  n = 0
  for r = 1, 6 do want[r] = body(r); if r % 2 == 0 then n = n + 1 end end
  n = 0
  for r = 1, 6 do
    if r == 3 or r == 5 then testing.callees(testing.callees()) end   -- (bumps the epoch)
    got[r] = f(r)
    if r % 2 == 0 then n = n + 1 end   -- (an interpreted write between calls)
  end
  for r = 1, 6 do eq(got[r], want[r], "call " .. r) end
end)
