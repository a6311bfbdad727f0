-- Differential tests: pairs, next and generic for over Lua values in
-- compiled code (issue 29 item 5): `for k, v in pairs(t)`, `next(t, k)`,
-- `for k in next, t`, ipairs over a table, __pairs, an iterator function
-- passed in or returned by a call; the iterator is called through lua_call
-- each turn, so the order, the values and the errors are the interpreter's.
local T = require "tablediff"
local kjit = require "kjit"

local function mixed()
  local t = { 10, 20, 30.5, x = 1, y = 2.5, name = "n", flag = true }
  t[7] = 70
  return t
end

test("pairs: values, keys in the interpreter's order, counts", function()
  T.check(function(t)
    local s, n = 0, 0
    for _, v in pairs(t) do
      if math.type(v) then s = s + v end
      n = n + 1
    end
    return s, n
  end, function() return mixed() end)
  T.check(function(t)   -- the order itself, as a list of keys
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    return keys
  end, function() return mixed() end)
  T.check(function(t)
    local out = ""
    for k, v in pairs(t) do out = out .. tostring(k) .. "=" .. tostring(v) .. ";" end
    return out
  end, function() return mixed() end)
  T.check(function(t)   -- an empty table: the body never runs
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    return n
  end, function() return {} end)
end)

test("pairs: writes to existing keys while traversing, nested loops, break", function()
  T.check(function(t)
    for k, v in pairs(t) do t[k] = v * 2 end
    return t
  end, function() return { a = 1, b = 2.5, 3, 4 } end)
  T.check(function(t, u)
    local n = 0
    for k in pairs(t) do
      for j, w in pairs(u) do n = n + w * #k end
    end
    return n
  end, function() return { ab = 1, c = 2 }, { 1, 2, 3 } end)
  T.check(function(t)
    local found
    for k, v in pairs(t) do
      if v == 3 then found = k break end
    end
    return found
  end, function() return { a = 1, b = 3, c = 5 } end)
  T.check(function(t)   -- clearing fields while traversing is allowed
    for k in pairs(t) do t[k] = nil end
    return next(t) == nil
  end, function() return { a = 1, b = 2, 7, 8 } end)
end)

test("pairs in a compiled callee, over tables made in compiled code", function()
  local function count(t)
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    return n
  end
  T.check(function(n)
    local t = {}
    for i = 1, n do t["k" .. i] = i end
    local u = {}
    for k, v in pairs(t) do u[v] = k end
    return count(t), u
  end, function() return 12 end)
end)

test("next: as a call and as the iterator", function()
  T.check(function(t)
    local k, v = next(t)
    local k2 = next(t, k)
    return k, v, k2, next({}) == nil
  end, function() return { 5, 6 } end)
  T.check(function(t)
    local s = 0
    for k, v in next, t do s = s + k * v end
    return s
  end, function() return { 3, 4, 5 } end)
  T.check(function(t)
    local s = 0
    for k, v in next, t, nil do s = s + v end
    return s
  end, function() return { a = 1.5, b = 2 } end)
end)

test("__pairs is honoured", function()
  local mt = {
    __pairs = function(t)
      local i = 0
      return function(_, _)
        i = i + 1
        if i <= t.n then return i, i * i end
      end, t, nil
    end,
  }
  T.check(function(t)
    local s, n = 0, 0
    for k, v in pairs(t) do s = s + v; n = n + k end
    return s, n
  end, function() return setmetatable({ n = 4 }, mt) end)
end)

test("ipairs over a table, with holes and __index", function()
  T.check(function(t)
    local s = 0
    for i, v in ipairs(t) do s = s + i * v end
    return s
  end, function() return { 5, 6, 7, nil, 9 } end)
  local mt = { __index = function(_, i) if i < 4 then return i * 10 end end }
  T.check(function(t)   -- ipairs respects __index (Lua 5.4)
    local out = {}
    for i, v in ipairs(t) do out[i] = v end
    return out
  end, function() return setmetatable({ 1 }, mt) end)
end)

test("an iterator function passed in, or returned by a function value", function()
  local function range(n)
    local i = 0
    return function() i = i + 1; if i <= n then return i end end
  end
  local function sum(it)
    local s = 0
    for x in it do s = s + x end
    return s
  end
  eq(kjit.jit(sum)(range(5)), sum(range(5)), "sum over an iterator passed in")
  local f = kjit.jit(sum)
  eq(f(range(7)), sum(range(7)), "the same specialization, another iterator")
  raises("attempt to call a table value", f, {})
  local function step(st, c) c = c + 1; if st[c] then return c, st[c] end end
  local function iter(self) return step, self, 0 end
  T.check(function(o)
    local s = 0
    for x, y in o.iter(o) do s = s + x * y end
    return s
  end, function() return { 2, 3, 4, iter = iter } end)
end)

test("errors: the interpreter's messages at the for's line", function()
  T.check_error("bad argument #1 to 'for iterator' (table expected, got nil)", function(t)
    for k in pairs(t.missing) do end
  end, function() return {} end)
  T.check_error("attempt to call a nil value", function(t)
    for k in t.iter do end
  end, function() return {} end)
  T.check_error("boom", function(t)
    local n = 0
    for k, v in pairs(t) do
      n = n + 1
      t.count = n   -- a write kept after the error
      if n == 1 then error("boom") end
    end
  end, function() return { a = 1 } end)
  T.check_error("attempt to perform arithmetic", function(t)
    local s = 0
    for _, v in pairs(t) do s = s + v end
    return s
  end, function() return { a = 1, b = {} } end)
end)

test("collections at every allocation while traversing", function()
  collectgarbage("incremental", 0, 1000, 0)
  local ok, err = pcall(function()
    local mt = { __index = function(t, k) collectgarbage("collect"); return rawget(t, "_" .. k) end }
    T.check(function(src)
      local out = {}
      for k, v in pairs(src.items) do   -- src.items runs __index: a full collection
        out[#out + 1] = { k = k, v = { v, src.items } }
        local junk = { k, { v } }
        junk[1] = junk[2]
      end
      return out
    end, function()
      local items = {}
      for i = 1, 40 do items["k" .. i] = { i } end
      return setmetatable({ _items = items }, mt)
    end)
  end)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  if not ok then error(err, 0) end
end)

test("a C iterator: string.gmatch, as a method and as a library call", function()
  T.check(function(s)
    local n, out = 0, {}
    for w in s:gmatch("%a+") do n = n + 1; out[n] = w:upper() end
    for k, v in string.gmatch("a=1, b=2", "(%w+)=(%w+)") do out[k] = tonumber(v) end
    return n, out
  end, function() return "hello big world" end)
end)

test("a constructor of numbers given to ipairs or a library function is a table", function()
  T.check(function(a)
    local t3 = { 1.5, 3, a }
    local s = 0
    for k, v in ipairs(t3) do s = s + k * v end
    return s, table.concat({ 1, 2, a }, ","), #{ { 1 }, { 2 } }, #kjit.zeros({ 2, 3 })
  end, function() return 5 end)
end)

test("a constructor of numbers given to a compiled function is a table", function()
  local function norm(v) return math.sqrt(v[1] * v[1] + v[2] * v[2] + v[3] * v[3]), #v end
  T.check(function(x, y)
    local a, n = norm({ x, y, 2 })
    return a, n
  end, function() return 3, 6 end)
end)
