-- Differential tests: small refusals of issue 29 removed (item 6): `..`
-- where only the second operand has __concat, a constant key held in a
-- local (`local k = "x"; r[k]`, records included), math.type of a
-- number-or-nil, a method call on a string read from a table.
local T = require "tablediff"
local kjit = require "kjit"

local cat = { __concat = function(a, b)
  return (type(a) == "table" and "T" or tostring(a)) .. "+" .. (type(b) == "table" and "T" or tostring(b))
end }

test("__concat of the second operand only", function()
  T.check(function(a, b) return a .. b end, function() return {}, setmetatable({}, cat) end)
  T.check(function(a, b) return a .. b end, function() return setmetatable({}, cat), {} end)
  T.check(function(b) return 1 .. b, "s" .. b, 2.5 .. b end,
          function() return setmetatable({}, cat) end)
  T.check(function(a, b, c) return a .. b .. c end,
          function() return "x", {}, setmetatable({}, cat) end)
  T.check_error("attempt to concatenate a table value (local 'a')",
                function(a, b) return a .. b end, function() return {}, {} end)
  T.check_error("attempt to concatenate a table value (local 'b')",
                function(a, b) return a .. b end, function() return "s", {} end)
end)

test("a constant key held in a local: tables and records", function()
  T.check(function(t)
    local k = "x"
    t[k] = t[k] + 1
    return t[k]
  end, function() return { x = 1 } end)
  T.check_error("attempt to index a nil value (field '?')", function(t)
    local k = "x"
    return t[k].y
  end, function() return {} end)
  T.check_error("attempt to perform arithmetic on a nil value (field '?')", function(t)
    local k = "x"
    return t[k] + 1
  end, function() return {} end)
  local P = kjit.struct{ { "x", "f64" }, { "n", "i32" } }
  local f = function(a)
    local r = a[2]
    local k, j = "x", "n"
    r[k] = 2.5
    r[j] = r[j] + 3
    return r[k], r[j]
  end
  local a1, a2 = kjit.zeros(3, P), kjit.zeros(3, P)
  local x1, n1 = f(a1)
  local x2, n2 = kjit.jit(f)(a2)
  eq(x2, x1, "r[k]")
  eq(n2, n1, "r[j]")
  eq(a2[2].x, a1[2].x, "stored")
end)

test("math.type of a number-or-nil", function()
  local function mt(c, f)
    local v
    if c then v = f and 2.5 or 2 end
    return math.type(v), math.type(v) == "float", math.type(v) == nil
  end
  T.check(mt, function() return true, true end)
  T.check(mt, function() return true, false end)
  T.check(mt, function() return false, false end)
end)

test("a method call on a string read from a table", function()
  T.check(function(t) return t.s:upper(), t.s:rep(2, "-"), t.s:sub(2) end,
          function() return { s = "abc" } end)
end)

test("concatenating a number-or-nil", function()
  local function cat(c, x)
    local v
    if c then v = x end
    return "v=" .. v
  end
  T.check(cat, function() return true, 2 end)
  T.check(cat, function() return true, 2.5 end)
  T.check_error("attempt to concatenate a nil value (local 'v')", cat, function() return false, 1 end)
  local function cat2(c, x) return (c and x) .. "!" .. x end
  T.check(cat2, function() return true, 3 end)
  T.check_error("attempt to concatenate a boolean value", cat2, function() return false, 3 end)
end)
