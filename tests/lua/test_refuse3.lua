-- Differential tests for the last refusals of issue 29 (items 6 and 7,
-- branch refuse3): what users still hit. Each case is either compiled
-- and computes what the interpreter computes (results with subtypes,
-- errors with messages and file:line, tables key by key: tablediff.lua),
-- or refused when it compiles, located, saying what to write instead.
local T = require "tablediff"
local kjit = require "kjit"

local check = T.check_args
local check_error = T.check_error_args

-- A compile error of fn for args: its message (which must be located at
-- this file) is returned.
local function refused(fn, ...)
  local ok, err = pcall(kjit.jit(fn), ...)
  assert(not ok, "compiled without a refusal")
  err = tostring(err)
  assert(err:find("test_refuse3.lua:%d+: compile error"), "not a located compile error: " .. err)
  return err
end

-- ---- == and ~= between kjit arrays, and arrays and tables ----------------

test("== of two arrays compares identity, as interpreted", function()
  local A, B = kjit.zeros(3), kjit.zeros(3)
  local function eq(a, b) return a == b, a ~= b, b == a end
  check(eq, A, B)
  check(eq, A, A)
  check(eq, A, kjit.zeros(3, "i32"))      -- other dtypes: never the same array
  check(eq, A, kjit.zeros({ 3, 1 }))      -- other ranks
  check(function(a) return a == a, a ~= a end, A)
  check(function(a) return a == 1, a ~= nil, a == "x", a == true end, A)
end)

test("arrays made in compiled code, views, a loop choosing one", function()
  check(function(n)
    local x = kjit.zeros(n)
    local y = x
    local z = kjit.zeros(n)
    return x == y, x == z, z ~= y
  end, 3)
  local A = kjit.zeros(4)
  check(function(a) local v = a:slice(1, 2) return v == a, v ~= a end, A)
  check(function(a, b)
    local c = 0
    for i = 1, 5 do
      local x = (i % 2 == 0) and a or b
      if x == a then c = c + 1 end
      if x ~= b then c = c + 10 end
    end
    return c
  end, A, kjit.zeros(4))
end)

test("an array against a table, a table read from one, frozen tables", function()
  local A = kjit.zeros(2)
  local F = {}
  local mt = { __eq = function() return true end }
  local G, H = setmetatable({}, mt), setmetatable({}, mt)
  check(function(a, t) return a == t, t.a == a, t.b == a, a ~= t.a end, A, { a = A, b = kjit.zeros(2) })
  check(function(a) return a == F, F == a end, A)
  check(function() return F == F, G == H, F == G, G ~= H end)   -- __eq of frozen tables runs
  check(function(t) t.x = G return t.x == H end, {})
end)

test("arrays of records: the same array, other layouts; two of one layout refused", function()
  local P = kjit.struct{ { "x", "f64" } }
  local Q = kjit.struct{ { "y", "f64" } }
  local ps = kjit.zeros(2, P)
  check(function(a) return a == a, a ~= a end, ps)
  check(function(a, b) return a == b end, ps, kjit.zeros(2, Q))
  local err = refused(function(a, b) return a == b end, ps, kjit.zeros(2, P))
  assert(err:find("compare them in the caller and pass the result in", 1, true), err)
end)

-- ---- errors the VM raises inside an API call: located --------------------

test("__index and __newindex chains ending at a non-indexable value", function()
  local function make5() return setmetatable({}, { __index = 5, __newindex = true }) end
  check_error("attempt to index a number value", function(t) return t.missing end, make5())
  check_error("attempt to index a number value", function(t) return t[3] end, make5())
  check_error("attempt to index a number value", function(t, k) return t[k] end, make5(), 2.5)
  check_error("attempt to index a boolean value", function(t) t.x = 1 end, make5())
  check_error("attempt to index a boolean value", function(t) t[1] = 1 end, make5())
  check_error("attempt to index a boolean value", function(t, k) t[k] = 1 end, make5(), "s")
  -- a deeper chain, a __name, a chain that ends well
  local named = setmetatable({}, { __name = "Thing", __index = false })
  check_error("attempt to index a", function(t) return t.q end,
              setmetatable({}, { __index = setmetatable({}, { __index = named }) }))
  check(function(t) return t.len, t.nope end,
        setmetatable({}, { __index = setmetatable({}, { __index = "abc" }) }))
  check(function(t) return t.x end, setmetatable({}, { __index = { x = 3 } }))
  check(function(t) return t.x end, setmetatable({}, { __index = function(_, k) return k .. "!" end }))
  check_error("no x", function(t) return t.x end,
              setmetatable({}, { __index = function(_, k) error("no " .. k, 0) end }))
  -- writes before the error stay done
  check_error("attempt to index a number value", function(t, u) u.a = 1; t.b = 2; return t.c end,
              setmetatable({}, { __index = 5 }), {})
end)

test("an __index loop: the interpreter's words, located", function()
  local loop = {}
  setmetatable(loop, { __index = loop, __newindex = loop })
  check_error("chain too long", function(t) return t.x end, setmetatable({}, { __index = loop }))
  check_error("chain too long", function(t) t.x = 1 end, setmetatable({}, { __newindex = loop }))
end)
