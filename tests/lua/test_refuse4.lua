-- Differential tests for issue 29's last concatenation refusals (branch
-- refuse4): `..` of a number-or-nil wherever it stands, and of Lua values
-- whose __concat runs first. Each case is compiled and computes what the
-- interpreter computes: results with subtypes, errors with message,
-- variable name and file:line (tablediff.lua).
local T = require "tablediff"
local kjit = require "kjit"

local check = T.check_args

-- Operands: a table whose __concat gives a string, one whose __concat
-- gives a table (which then meets the operands on its left), one with a
-- __name and no __concat, a plain table, a string, a number.
local Cstr = setmetatable({}, { __concat = function(a, b) return "C(" .. type(a) .. "," .. type(b) .. ")" end })
local Ctab = setmetatable({}, { __concat = function() return {} end })
local Named = setmetatable({}, { __name = "Thing" })
local operands = { Cstr, Ctab, Named, {}, "str", 7, 2.5 }

-- fn(c, t) for c = 0 (x nil), 1 and 2 (x a number), t every operand.
local function each(fn)
  for _, c in ipairs({ 0, 1, 2 }) do
    for _, t in ipairs(operands) do check(fn, c, t) end
  end
end

test("a number-or-nil beside a nil or a boolean: checked when it runs, the VM's operand named", function()
  each(function(c) local x; if c > 0 then x = c end; local n; return x .. n end)
  each(function(c) local x; if c > 0 then x = c end; return x .. true end)
  each(function(c) local x; if c > 0 then x = c end; return false .. x end)
  each(function(c) local x; if c > 0 then x = c end; return x .. "k" .. nil end)
  each(function(c) local x; if c > 0 then x = c end; return nil .. "k" .. x end)
  each(function(c) local x; if c > 1 then x = c + 0.5 end; return "a" .. x .. "b" .. false end)
end)

test("a number-or-nil left of a Lua value: its __concat first, its result meets the rest", function()
  each(function(c, t) local x; if c > 0 then x = c end; return x .. t .. "s" end)
  each(function(c, t) local x; if c > 0 then x = c end; return "a" .. x .. t end)
  each(function(c, t) local x; if c > 0 then x = c end; return "a" .. x .. t .. "b" end)
  each(function(c, t) local x, y; if c > 0 then x = c end; if c > 1 then y = 2.5 end; return x .. y .. t end)
  each(function(c, t) local x; if c > 0 then x = c end; local s = x .. t; return s end)
  each(function(c, t) local x; if c > 0 then x = c end; return t .. x .. t end)
end)

test("a known nil or boolean left of a Lua value: the value's __concat may take it", function()
  local NilOk = setmetatable({}, { __concat = function(a, b)
    return setmetatable({}, { __concat = function(p, q) return "took " .. type(p) .. " " .. type(q) end })
  end })
  check(function(t) return nil .. "a" .. t end, NilOk)
  check(function(t) return nil .. "a" .. t end, Cstr)
  check(function(t) return true .. "a" .. t end, Ctab)
  check(function(t) local n; return n .. t .. 1 end, NilOk)
  check(function(t) local n; return n .. t .. 1 end, {})
end)

test("Lua values from tables among strings and numbers, long chains", function()
  local function row(t) return "x=" .. t.x .. " y=" .. t.y .. " " .. t.n .. "/" .. #t.s .. t.s end
  check(row, { x = 1, y = 2.5, n = "n", s = "abc" })
  check(row, { x = -0.0, y = 1e300, n = 3, s = "" })
  check(row, { x = Cstr, y = 2, n = "n", s = "abc" })
  check(row, { x = 1, y = Ctab, n = "n", s = "abc" })
  check(row, { x = 1, y = 2, n = Named, s = "abc" })
  check(row, { x = 1, y = 2, s = "abc" })
  check(function(t) local a = t[1] return a .. a .. a, t[2] .. t[1] end, { "", 0 })
end)

-- ---- metamethods that cannot be called, C functions as metamethods ------------

test("'..' and '#' with a __concat or __len that cannot be called: located, as interpreted", function()
  local Bad = setmetatable({}, { __concat = 5, __len = "x" })
  check(function(t) return "a" .. t end, Bad)
  check(function(t) return t .. 1 .. "b" end, Bad)
  check(function(t) local x; if #"" > 0 then x = 1 end; return x .. t end, Bad)
  check(function(t) return #t end, Bad)
  check(function(t) return #t.inner + 1 end, { inner = Bad })
end)

test("'..' and '#' calling a C function or a callable table as the metamethod", function()
  local C = setmetatable({}, { __concat = string.rep, __len = string.len })
  check(function(t) return "a" .. t end, C)
  check(function(t) return t .. "a" .. t end, C)
  check(function(t) return 3 .. t end, setmetatable({}, { __concat = math.max }))
  check(function(t) return #t end, C)
  check(function(t) return #t end, setmetatable({}, { __len = rawlen }))
  local Callable = setmetatable({}, { __call = function(self, a, b) return type(a) .. type(b) end })
  local Lenable = setmetatable({}, { __call = function() return 42 end })
  local D = setmetatable({}, { __concat = Callable, __len = Lenable })
  check(function(t) return "a" .. t .. 1, #t end, D)
  check(function(t) return #t, #"abc", #{ 1, 2 } end, setmetatable({ 1, 2, 3 }, {}))
end)

test("__index and __newindex chains ending at a C function: its errors located, as interpreted", function()
  local mts = {
    { __index = string.rep, __newindex = rawset },
    { __index = setmetatable({}, { __index = string.rep }), __newindex = string.rep },
    { __index = rawget, __newindex = rawset },
  }
  for _, mt in ipairs(mts) do   -- a fresh object for each run (rawset changes it)
    local function obj(...) return setmetatable({}, mt), ... end
    T.check(function(o) return o.x end, obj)
    T.check(function(o, k) return o[k] end, function() return obj("k") end)
    T.check(function(o) return o[3] end, obj)
    T.check(function(o) o.y = 5; return rawget(o, "y") end, obj)
    T.check(function(o, k) o[k] = 6 end, function() return obj("q") end)
    T.check(function(o) o[2] = 7; return rawget(o, 2) end, obj)
  end
end)

-- ---- dtype objects and library functions given to function literals ------------

test("a dtype object passed to a function literal: the literal is specialized on it", function()
  check(function(n)
    local mk = function(d) return kjit.zeros(n, d) end
    return mk(kjit.f32).dtype, mk(kjit.i32).dtype, mk(kjit.f64)[1]
  end, 3)
  check(function(n, d)
    local f = function(m) return kjit.zeros(m, d) end
    return f(n).dtype, #f(n + 1)
  end, 2, kjit.u8)
  local function is(d)
    local f = function(x) return x == kjit.f32, tostring(x), "<" .. x .. ">" end
    return f(d)
  end
  check(is, kjit.f32)
  check(is, kjit.i16)
  check(function(n)
    local inner = function(d, k) return kjit.full(k, 2, d) end
    local outer = function(d) return inner(d, n) end
    local a = outer(kjit.i64)
    return a.dtype, a[1], #a
  end, 4)
  check(function(n)   -- a local function, called twice with two objects
    local function sum(d) local a = kjit.full(n, 1.5, d) local s = 0 for i = 1, #a do s = s + a[i] end return s end
    return sum(kjit.f64), sum(kjit.i32)
  end, 5)
end)

test("a library function passed to a function literal", function()
  local function apply(x)
    local ap = function(f, ...) return f(...) end
    return ap(math.floor, x), ap(math.abs, -x), ap(math.max, x, 7, -1), ap(tostring, x)
  end
  check(apply, 2.5)
  check(apply, 9)
  -- its argument errors name the parameter, 'f', as the interpreter's do
  T.check_error_args("bad argument #1 to 'f' (number expected, got nil)", apply, nil)
end)

-- ---- arithmetic metamethods: the event and order lcode.c writes ---------------

test("x - 1 calls __sub over (x, 1), 1 + x calls __add over (1, x): as interpreted", function()
  local function show(a) return math.type(a) or type(a) == "table" and "T" or tostring(a) end
  local mt = {}
  for _, e in ipairs({ "add", "sub", "mul", "div", "mod", "pow", "idiv", "band", "bor", "bxor", "shl", "shr" }) do
    mt["__" .. e] = function(a, b) return e .. "(" .. show(a) .. "," .. show(b) .. ")" end
  end
  mt.__lt = function(a, b) return type(a) == "table" end
  mt.__le = function(a, b) return type(b) == "table" end
  local A = setmetatable({}, mt)
  check(function(t) return t - 1, t - 1.5, t - (-3), t - 300, t + 1, 1 + t, t + 2.5, 2.5 + t end, A)
  check(function(t) return 2 * t, t * 2, 2.5 * t, 3 & t, t & 3, 5 | t, 6 ~ t, 1 << t, t << 1, t >> 2, 2 >> t end, A)
  check(function(t) return t / 2, 2 / t, t % 3, 3 % t, t ^ 2, 2 ^ t, t // 2, 7 // t end, A)
  check(function(t) return 1 < t, t < 1, 1 <= t, t <= 1, 2 > t, t > 2, 2 >= t, t >= 2, 1.5 < t, t >= 2.5 end, A)
  check(function(t) local s = 0 for i = 1, 3 do s = s .. (t.x - i) .. (i + t.x) end return s end, { x = A })
end)

test("a C function as an arithmetic metamethod: its errors located, as interpreted", function()
  local C = setmetatable({}, { __add = string.rep, __unm = string.len, __sub = rawlen, __mul = math.floor })
  check(function(t) return t + 1 end, C)
  check(function(t) return 1 + t end, C)
  check(function(t) return -t end, C)
  check(function(t) return t - 1, t - "x" end, C)
  check(function(t) return t * 2 end, C)
  check(function(t, u) return t * u end, C, C)
  local K = setmetatable({}, { __lt = string.rep, __le = string.len, __eq = string.rep })
  local K2 = setmetatable({}, getmetatable(K))
  check(function(t) return t < 1 end, K)
  check(function(t) return 2 > t end, K)
  check(function(t) return t <= 1.5 end, K)
  check(function(t, u) return t == u end, K, K2)
  check(function(t, u) return t ~= u, t == t end, K, K)
  local R = setmetatable({}, { __lt = rawequal, __le = rawequal })
  check(function(t, u) return t < u, t <= t, u < 1, "a" < t end, R, {})
end)

test("tonumber of a number-or-nil or a number-or-false: the number, else nil", function()
  local function f(c)
    local x; if c > 0 then x = c end
    local y = c > 1 and c + 0.5
    local a, b = tonumber(x), tonumber(y)
    return a, b, (tonumber(x) or 0) + 1, tonumber(y) == nil, math.type(tonumber(y))
  end
  for _, c in ipairs({ 0, 1, 2 }) do check(f, c) end
end)

test("a string in a bitwise operation: the VM's error naming the operand", function()
  local B = setmetatable({}, { __band = function(a, b) return "band " .. type(a) .. " " .. type(b) end })
  for _, s in ipairs({ "7", "x", "0x10", 3, 2.0 }) do
    check(function(t) return t.s & 1 end, { s = s })
    check(function(t) return 1 | t.s end, { s = s })
    check(function(t) return ~t.s, t.s << 1, t.s >> 1 end, { s = s })
    check(function(t, u) return t.s ~ u.s end, { s = s }, { s = 5 })
    check(function(t, b) return t.s & b, b & t.s end, { s = s }, B)
  end
  check(function(c) local x = c > 0 and "7" or 1 return x & 1 end, 1)
  check(function(c) local x = c > 0 and "7" or 1 return x & 1 end, 0)
end)
