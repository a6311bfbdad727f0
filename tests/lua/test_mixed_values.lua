-- Differential tests: a local or expression that is a boolean on one path
-- and a number on another (`local v = c and x or (y > 2)`, a number-or-false
-- that may also be nil), issue 29. Such a value has no native type: it is a
-- Lua value (ir_type.c t_phi), and every use follows Lua's rules. The
-- interpreted function is the specification: results with subtypes, errors
-- with messages and file:line, tables key by key (tablediff.lua).
local T = require "tablediff"
local kjit = require "kjit"

local check = T.check_args
local check_error = T.check_error_args
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

---------------------------------------------------------------------------
-- nil or a boolean concatenated with a Lua value: its __concat decides
---------------------------------------------------------------------------
local Cat = { __concat = function(a, b)
  return "cat(" .. (type(a) == "table" and "t" or tostring(a)) .. "," ..
         (type(b) == "table" and "t" or tostring(b)) .. ")"
end }

test("nil .. t and t .. false call t's __concat; without one, Lua's error", function()
  local function nl(t) return nil .. t end
  local function nr(t) return t .. nil end
  local function bl(t) return true .. t end
  local function inner(t) return "a" .. (t .. false) end
  local function loc(t) local z = nil return z .. t end
  local function field(t) return nil .. t.s end
  for _, f in ipairs({ nl, nr, bl, inner, loc }) do
    T.check(f, function() return setmetatable({}, Cat) end)
  end
  check_error("attempt to concatenate a nil value", nl, {})
  check_error("attempt to concatenate a table value (local 't')", nr, {})
  check_error("attempt to concatenate a nil value (local 'z')", loc, {})
  check_error("attempt to concatenate a nil value", field, { s = "x" })
  check_error("attempt to concatenate a nil value", field, { s = 3 })
end)

---------------------------------------------------------------------------
-- kjit.full and a:fill with a Lua value (read from a table or an upvalue
-- the function assigns)
---------------------------------------------------------------------------
local function arr_result(f, ...)
  local ok, a = pcall(f, ...)
  if not ok then return false, a end
  local vals = {}
  for i = 1, #a do vals[i] = a[i] end
  return true, a.dtype, vals
end
local function same_arrays(f, make)
  local wi = table.pack(arr_result(f, make()))
  local wc = table.pack(arr_result(kjit.jit(f), make()))
  eq(wc[1], wi[1], "both ran or both raised: " .. tostring(wi[2]) .. " / " .. tostring(wc[2]))
  eq(wc[2], wi[2], "dtype or error")
  if wi[1] then
    eq(#wc[3], #wi[3], "length")
    for i = 1, #wi[3] do eq(wc[3][i], wi[3][i], "element " .. i) end
  end
end

test("kjit.full(n, t.x): an f64 array of any number, checked when it runs", function()
  local full = function(t) return kjit.full(3, t.x) end
  local typed = function(t) return kjit.full(2, t.x, "i32") end
  local bools = function(t) return kjit.full(2, t.x, "bool") end
  for _, x in ipairs({ 2.5, 2, -0.0 }) do same_arrays(full, function() return { x = x } end) end
  same_arrays(full, function() return { x = "s" } end)   -- number expected, got string
  same_arrays(full, function() return {} end)            -- number expected, got nil
  same_arrays(typed, function() return { x = 7 } end)
  same_arrays(typed, function() return { x = 7.5 } end)  -- no integer representation
  same_arrays(bools, function() return { x = true } end)
  same_arrays(bools, function() return { x = 1 } end)    -- boolean expected, got number
  -- a boolean without a dtype: interpreted, a bool array; compiled, the
  -- array is f64 and the boolean a located error (lua-library.md)
  local ok, err = pcall(kjit.jit(full), { x = true })
  truthy(not ok and err:find("test_mixed_values.lua:%d+: number expected, got boolean"), tostring(err))
end)

test("a:fill(v) with v read from a table or a live upvalue, on bool and number arrays", function()
  local fb = function(a, t) a:fill(t.b) return a end
  same_arrays(fb, function() return kjit.zeros(3, "bool"), { b = true } end)
  same_arrays(fb, function() return kjit.zeros(3, "bool"), { b = 1 } end)
  same_arrays(fb, function() return kjit.zeros(3, "bool"), {} end)
  same_arrays(fb, function() return kjit.zeros(3), { b = 1.5 } end)
  same_arrays(fb, function() return kjit.zeros(3, "i64"), { b = false } end)
  local B, N = true, 3
  local fu = function(a) a:fill(B) B = not B return a end
  local fn = function(a) a:fill(N) N = N * 2 return a end
  -- (the upvalue is state: each run, interpreted then compiled, sees the
  -- value the one before left, as two interpreted runs would)
  local seq = {}
  for _, f in ipairs({ fu, kjit.jit(fu), fu, kjit.jit(fu) }) do seq[#seq + 1] = f(kjit.zeros(2, "bool"))[2] end
  eq(table.concat({ tostring(seq[1]), tostring(seq[2]), tostring(seq[3]), tostring(seq[4]) }, " "),
     "true false true false", "fills alternate")
  eq(B, true, "the upvalue written through (flipped four times)")
  local a = fn(kjit.zeros(2, "f32"))
  local b = kjit.jit(fn)(kjit.zeros(2, "f32"))
  eq(a[1], 3.0, "interpreted"); eq(b[1], 6.0, "compiled, after")
  eq(N, 12, "the upvalue written through")
end)

-- A Lua value (here a string on one path) among the results of a call
-- spread into a math function's arguments, `math.atan(h(5, s))`: checked to
-- be a number as a direct argument is (the fuzzer's program 140021: the
-- slot was passed to atan2 as if it were the number).
test("a Lua value spread from a call's results into math functions", function()
  local function h(p, q) return p, q end
  local function one(q) return q end
  local S = { 2, 0, -1, 1.5, 7 }
  local fs = {
    function(a) local s = (a > 1) and " 3.5 " or a return math.atan(h(5, s)) end,
    function(a) local s = (a > 1) and " 3.5 " or a return math.fmod(h(5, s)) end,
    function(a) local s = (a > 1) and " 3.5 " or a return math.floor(h(s, 5)) end,
    function(a) local s = (a > 1) and " 3.5 " or a return math.ult(h(5, s)) end,
    function(a) local s = (a > 1) and "4" or a return math.ult(h(5, s)) end,
    function(a) local s = (a > 1) and " 3.5 " or a return math.sqrt(one(s)) end,
    function(a) local s = (a > 1) and "abc" or a return math.atan(h(5, s)) end,
    function(a) local s = (a > 1) and "abc" or a return math.fmod(h(s, 5)) end,
    function(a) local s = (a > 1) and {} or a return math.exp(one(s)) end,
    function(a) local s = (a > 1) and "9" or a return math.log(h(s, 3)) end,
  }
  for _, f in ipairs(fs) do
    for _, a in ipairs(S) do check(f, a) end   -- results, or the same error
  end
  check_error("bad argument #2 to 'atan' (number expected, got string)", fs[7], 2)
  check_error("bad argument #1 to 'exp' (number expected, got table)", fs[9], 2)
end)

-- `#v` of a number-or-nil (or false) always raises when it runs, naming
-- what v holds then; in code that does not run it is no compile error
-- (the fuzzer's program 148204: `(type(s) == "string") and #s or s`).
test("# of a number-or-nil: Lua's error when it runs, nothing when it does not", function()
  local fs = {
    function(a) local v = a > 0 and a or nil return #v end,
    function(a) local v = a > 0 and a return #v end,
    function(a) local v = a > 0 and a * 0.5 or nil local n = (type(v) == "string") and #v or v return n end,
    function(a) local v = a > 0 and a or nil if a > 5 then return #v end return 0 end,
  }
  for _, f in ipairs(fs) do
    for _, a in ipairs({ 7, 3, -1 }) do check(f, a) end
  end
  check_error("attempt to get length of a number value (local 'v')", fs[1], 7)
  check_error("attempt to get length of a nil value (local 'v')", fs[1], -1)
  check_error("attempt to get length of a boolean value (local 'v')", fs[2], -1)
end)

-- Arguments past those a library function reads are ignored, whatever they
-- hold, as its C function ignores them (the fuzzer's program 160151:
-- `T1:fill(h1(x, b))` with h1 giving two results, refused at compile time;
-- math.floor(x, t.s) raised "bad argument #2" where Lua returns).
-- math.random counts its arguments: "wrong number of arguments".
test("extra arguments a library function ignores, Lua values among them", function()
  local function h(x) return x, "s" end
  local function g(x) return x, {} end
  local T = { s = "str", n = 2 }
  local fs = {
    function(a) return math.floor(a, T.s) end,
    function(a) return math.abs(h(a)) end,
    function(a) return math.sqrt(g(a)) end,
    function(a) return math.fmod(a, 3, T.s) end,
    function(a) return math.tointeger(a, T.s) end,
    function(a) return math.ult(1, 2, T.s) end,
    function(a) return math.type(a, T.s) end,
    function(a) return math.max(a, T.n) end,
    function(a) return math.random(1, 2, T.n) end,
    function(a) local x = kjit.zeros(3) x:fill(h(a)) return x[2] end,
    function(a) local x = kjit.zeros(3, "bool") x:fill(a > 0, T.s) return x[1] end,
  }
  for _, f in ipairs(fs) do
    for _, a in ipairs({ 2.5, 7, -1 }) do check(f, a) end
  end
  check_error("wrong number of arguments", fs[9], 2.5)
end)

-- A kjit.prange loop without `parallel` is a plain loop: one that carries a
-- table (or a value read from one) from iteration to iteration compiles as
-- such, checks and all (it was refused: "cannot carry a table value", the
-- fuzzer's most common refusal). With parallel = true it is still refused
-- as a race.
test("a serial prange carrying a table value from one iteration to the next", function()
  local function f(n, t, a)
    local x = t.x
    local s = 0
    for i in kjit.prange(1, n) do
      x = (i % 2 == 0) and t or x
      s = s + a[i] + a[i + 1]
      a[i] = s
    end
    return s, x == t, a[1], a[n > 10 and 10 or n]
  end
  for _, n in ipairs({ 0, 1, 9, 10, 11, 1000 }) do
    local wi = table.pack(pcall(f, n, { x = 1 }, kjit.arange(1, 11)))
    local wc = table.pack(pcall(kjit.jit(f), n, { x = 1 }, kjit.arange(1, 11)))
    eq(wc.n, wi.n, "count")
    for k = 1, wi.n do eq(wc[k], wi[k], "n = " .. n .. ", value " .. k) end
  end
  local ok, e = pcall(kjit.jit(f, { parallel = true }), 10, { x = 1 }, kjit.arange(1, 11))
  eq(ok, false, "parallel refuses")
  assert(tostring(e):find("the iterations would race for it", 1, true), e)
end)

-- math.max and math.min order their arguments with lua_compare (lmathlib.c):
-- strings compare as strings, and a boolean or nil raises the order error
-- only when the call runs. Arguments that are not all numbers (a
-- number-or-nil beside a boolean, strings) call the library function
-- itself (it was a compile error, "bad argument #2 to 'math.max' (number
-- expected, got boolean)", for code the interpreter never ran: fuzzer
-- program 272307).
test("math.max and math.min of values that are not all numbers: Lua's order, Lua's errors", function()
  local fs = {
    function(a) local m = a > 5 and (0 / 0) or nil return a > 100 and math.max(m, a > 50) or 1 end,
    function(a) local m = a > 5 and a or nil return math.max(m, a, 7) end,
    function(a) local m = a > 5 and a or nil return math.min(3, m) end,
    function(a) return math.max("a", a > 0 and "b" or "c"), math.min("x", "y", "w") end,
    function(a) local s = a > 0 and "10" or "9" return math.max(s, "2") end,
    function(a) return math.max(a, a > 0) end,
    function(a) local b = a > 0 and 1 or false return math.min(b, 2) end,
  }
  for i, f in ipairs(fs) do
    for _, a in ipairs({ 2.5, 7, -1, 200 }) do check(f, a) end
  end
  check_error("attempt to compare nil with number", fs[2], 2.5)
  check_error("attempt to compare number with boolean", fs[6], 2.5)
  check_error("attempt to compare number with boolean", fs[7], -1)
end)
