-- Differential tests: a local or expression that is a boolean on one path
-- and a number on another (`local v = c and x or (y > 2)`, a number-or-false
-- that may also be nil), issue 29. Such a value has no native type: it is a
-- Lua value (ir_type.c t_phi), and every use follows Lua's rules. The
-- interpreted function is the specification: results with subtypes, errors
-- with messages and file:line, tables key by key (tablediff.lua).
local T = require "tablediff"
local kjit = require "kjit"

local function check(fn, ...)
  local args = table.pack(...)
  return T.check(fn, function() return table.unpack(args, 1, args.n) end)
end
local function check_error(phrase, fn, ...)
  local args = table.pack(...)
  return T.check_error(phrase, fn, function() return table.unpack(args, 1, args.n) end)
end
local XS = { 3, -7, 0, 2.5, -0.5 }

-- v: x (a number) when x > 0, else a boolean (x < -5)
local function pick(x) local v = x > 0 and x or (x < -5) return v end
local function branchy(x)
  local v
  if x > 0 then v = x * 2 elseif x < -5 then v = true else v = x < 0 end
  return v
end
-- nil, false and a number
local function three(x)
  local v = x > 0 and x or nil
  if x < -5 then v = false end
  return v
end

test("the value itself, with its subtype", function()
  for _, x in ipairs(XS) do check(pick, x); check(branchy, x); check(three, x) end
end)

test("truthiness, not, ==, ~= and and/or on it", function()
  local function f(x)
    local v = x > 0 and x or (x < -5)
    local a = v and 1 or 2
    local b = not v
    local c = v == true, v == false, v == x, v ~= 3
    if v then a = a + 10 end
    return a, b, c, v == 3, v == 3.0, v ~= false
  end
  for _, x in ipairs(XS) do check(f, x) end
end)

test("arithmetic on it: a number computes, a boolean raises Lua's error", function()
  local function add(x) local v = x > 0 and x or (x < -5) return v + 1 end
  local function mul(x) local v = three(x) return 2 * v end
  check(add, 3); check(add, 2.5)
  check_error("attempt to perform arithmetic on a boolean value (local 'v')", add, -7)
  check_error("attempt to perform arithmetic on a boolean value (local 'v')", add, 0)
  check(mul, 4)
  check_error("attempt to perform arithmetic on a nil value (local 'v')", mul, 0)
  check_error("attempt to perform arithmetic on a boolean value (local 'v')", mul, -9)
end)

test("comparisons with it: numbers compare, a boolean raises Lua's error", function()
  local function lt(x) local v = x > 0 and x or (x < -5) return v < 2, 2 <= v end
  check(lt, 3); check(lt, 1.5)
  check_error("attempt to compare boolean with number", lt, 0)
  check_error("attempt to compare boolean with number", lt, -6)
end)

test("in a loop, stored in a table, passed on and returned", function()
  local function loop(n)
    local v = false
    local hits = 0
    for i = 1, n do
      if i % 3 == 0 then v = i elseif i % 3 == 1 then v = false else v = i > 4 end
      if v then hits = hits + 1 end
    end
    return v, hits
  end
  local function store(t, x)
    local v = x > 0 and x or (x < -5)
    t[1] = v
    t.v = v
    return t
  end
  local function id(a) return a end
  local function pass(x) local v = x > 0 and x or (x < -5) return id(v), tostring(v), type(v) end
  for n = 0, 7 do check(loop, n) end
  for _, x in ipairs(XS) do check(store, {}, x); check(pass, x) end
end)

test("math and string functions of it: the library's results and errors", function()
  local function fl(x) local v = x > 0 and x or (x < -5) return math.floor(v) end
  local function cat(x) local v = x > 0 and x or (x < -5) return "v=" .. v end
  check(fl, 2.5); check(fl, 3)
  check_error("bad argument #1 to 'floor' (number expected, got boolean)", fl, 0)
  check(cat, 3); check(cat, 2.5)
  check_error("attempt to concatenate a boolean value (local 'v')", cat, -6)
end)

test("a kernel still refuses it at compile time, located", function()
  local cuda = kjit.cuda
  local prev = cuda.simulate(true)   -- the compiled simulator: no GPU needed
  local ok, err = pcall(function()
    local k = cuda.jit(function(a)
      local i = cuda.grid(1)
      local v = a[i] > 0 and a[i] or (a[i] < -5)
      if v then a[i] = 1 end
    end)
    k[{1, 4}](kjit.zeros(4))
  end)
  cuda.simulate(prev)
  truthy(not ok, "the kernel compiled")
  truthy(tostring(err):find("test_mixed_values.lua:%d+:"), "located: " .. tostring(err))
end)
