-- Differential tests: pcall, xpcall and error inside compiled code (issue
-- 29 item 3). pcall is the library's, called through lua_call; a function
-- literal given to it is a real Lua closure (runtime/luaclosure.c), so
-- what is caught, the values returned and the writes done before the
-- error are the interpreter's.
local T = require "tablediff"
local kjit = require "kjit"

test("pcall of a literal: true and its results, or false and the error value", function()
  T.check(function(x)
    local ok, a, b = pcall(function() return x * 2, "two" end)
    return ok, a, b
  end, function() return 21 end)
  T.check(function(x)
    local ok, e = pcall(function() error("bad " .. x) end)
    return ok, e
  end, function() return 3 end)
  T.check(function(x)   -- error values of any type
    local ok1, e1 = pcall(function() error({ code = x }) end)
    local ok2, e2 = pcall(function() error(x) end)
    local ok3, e3 = pcall(function() error() end)
    local ok4, e4 = pcall(function() error(true) end)
    return ok1, e1.code, ok2, e2, ok3, e3, ok4, e4
  end, function() return 7 end)
end)

test("error levels: 1 (the default), 2, 0", function()
  T.check(function(x)
    local function check(v) if v > 1 then error("too big", 2) end return v end
    local ok1, e1 = pcall(function() return check(x) end)
    local ok2, e2 = pcall(function() error("plain", 0) end)
    local ok3, e3 = pcall(function() error("here", 1) end)
    return ok1, e1, ok2, e2, ok3, e3
  end, function() return 5 end)
end)

test("writes done before the error are kept", function()
  T.check(function(t)
    local ok, e = pcall(function()
      t.a = 1
      t[#t + 1] = "x"
      local y = t.missing.field
      t.b = 2
    end)
    t.after = ok
    return e
  end, function() return { 10 } end)
end)

local function inc(v) return v + 1 end
local function fails(v) error("g failed " .. v) end
test("pcall of a function value and of a library function", function()
  T.check(function(t, x)
    local ok1, e1 = pcall(t.f, x)
    local ok2, e2 = pcall(t.g, x)
    local ok3, e3 = pcall(error, "m", 0)
    local ok4, r4 = pcall(math.floor, 2.5)
    return ok1, e1, ok2, e2, ok3, e3, ok4, r4
  end, function() return { f = inc, g = fails }, 4 end)
end)

test("nested pcall, xpcall with a handler, errors after a pcall", function()
  T.check(function(x)
    local ok, e = pcall(function()
      local ok2, e2 = pcall(function() error("inner") end)
      error("outer after " .. tostring(ok2))
    end)
    return ok, e
  end, function() return 1 end)
  T.check(function(x)
    local ok, e = xpcall(function() error({ n = x }) end, function(err) return err.n * 10 end)
    return ok, e
  end, function() return 4 end)
  T.check_error("after", function(t)
    local ok = pcall(function() error("caught") end)
    t.ok = ok
    error("after")
  end, function() return {} end)
end)

test("table.sort with a comparator literal", function()
  T.check(function(t)
    table.sort(t, function(a, b) return a > b end)
    return t
  end, function() return { 3, 1, 4, 1, 5, 9, 2, 6 } end)
end)

test("collections at every allocation inside pcall", function()
  collectgarbage("incremental", 0, 1000, 0)
  local ok, err = pcall(function()
    T.check(function(n)
      local out = {}
      for i = 1, n do
        local ok, e = pcall(function() error({ i = i, s = "e" .. i }) end)
        out[i] = { ok = ok, e = e }
      end
      return out
    end, function() return 40 end)
  end)
  collectgarbage("incremental", 200, 100, 13)
  collectgarbage("collect")
  if not ok then error(err, 0) end
end)

test("a literal called directly and given to pcall", function()
  T.check(function(t, x)
    local function g(y) t.n = (t.n or 0) + 1; return y * 2 end
    local a = g(x)
    local ok, b = pcall(g, x + 1)
    return a, ok, b, g(3)
  end, function() return {}, 5 end)
end)
