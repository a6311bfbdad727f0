-- Differential tests for issue 29's refusals and differences (branch
-- refuse5): assert's results, the arguments a library function ignores,
-- and array methods and kjit functions given values whose count varies
-- (test_varargs_counts.lua). Each case is compiled and computes what the
-- interpreter computes: results with subtypes and count, errors with
-- message and file:line (tablediff.lua).
local T = require "tablediff"
local kjit = require "kjit"

local check, check_error = T.check_args, T.check_error_args
local K = { s = "text", n = 2, t = {} }

-- luaB_assert returns all its arguments when the first is true: compiled
-- code returned the first only (a silent difference until 2026-11-28)
test("assert returns all its arguments", function()
  local function ret(x) return assert(x, "m", 3) end
  local function locals(x) local a, b, c, d = assert(x, "m", 3) return d, c, b, a end
  local function count(x) return select('#', assert(x, 1, 2)) end
  local function kinds(x, A) return assert(x, nil, true, A[1], 2.5, "s", K.n) end
  local function into(x) return math.max(assert(x, 7, 9)) end
  local function loop(n)
    local s = 0
    for i = 1, n do local a, b = assert(i, i * 2) s = s + a + b end
    return s
  end
  local function built(x) return assert(x, "value " .. tostring(x) .. " bad", x and x + 1) end
  local function one(x) return assert(x) end
  for _, x in ipairs({ 1, 2.5, -3 }) do
    check(ret, x); check(locals, x); check(count, x); check(kinds, x, kjit.arange(3))
    check(into, x); check(built, x); check(one, x)
  end
  check(loop, 5)
  check_error("m", ret, false)
  check_error("m", locals, false)
  check_error("value false bad", built, false)
  check_error("assertion failed!", one, false)
end)

-- Arguments past those a library function reads are evaluated and then
-- ignored, as its C function ignores them (kty_builtin_reads: the one
-- place that cuts them, for the typer and the code generator both);
-- a function that counts them still counts them.
test("arguments a library function ignores: ignored, of any kind", function()
  local fs = {
    function(x) return math.floor(x, K.s) end,
    function(x) return math.floor(x, nil, true) end,
    function(x) return math.abs(x, "zz") end,
    function(x) return math.sqrt(x, K.t) end,
    function(x) return math.fmod(x, 3, K) end,
    function(x) return math.tointeger(x, K) end,
    function(x) return math.type(x, K.t) end,
    function(x) return math.ult(1, 2, K) end,
    function(x) return math.modf(x, K.s) end,
    function(x) return math.log(x, 2, K.t) end,
    function(x) return type(x, K) end,
    function(x) return tostring(x, 5) end,
    function(x) return math.max(x, 2, 3) end,
    function(x) local t = kjit.zeros(3) t:fill(x, K.t) return t[2] end,
    function(x) return kjit.zeros(2, "f64", K)[1] end,
    function(x) return string.byte("abcdef", 2, 4) end,
    function(x) if x > 100 then error("e", 1, K) end return x end,
  }
  for i, f in ipairs(fs) do
    for _, x in ipairs({ 1.5, 4, 200 }) do
      local ok, err = pcall(check, f, x)
      if not ok then error("function " .. i .. ", x = " .. x .. ": " .. tostring(err), 0) end
    end
  end
  check_error("wrong number of arguments", function(x) return math.random(1, x, 3) end, 2)
  check_error("wrong number of arguments to 'insert'",
              function(x) local t = {} table.insert(t, 1, x, 3) return #t end, 2)
end)
