-- Differential tests for issue 29's refusals (branch refuse6): each
-- construct below was a compile error and now computes what the
-- interpreter computes (results with subtypes and count, errors with
-- message and file:line, tables key by key afterwards: tablediff.lua);
-- the refusals that stay are located and say what to write instead.
local T = require "tablediff"
local kjit = require "kjit"

local check, check_error = T.check_args, T.check_error_args

local K = { s = "hello", n = 3, b = true, t = { 1, 2 } }

-- A field of a constant string: the string library's, read when the
-- function compiles (as strings' metatable is); any other key is nil.
test("indexing a constant string: its methods, nil for other keys", function()
  local function q(x) return K.s.q, K.s[1], K.s[x] end
  local function len(x) return K.s.len(K.s), ("abc").len("xy"), K.s:rep(x) end
  local function computed(x) return K.s[x](K.s) end
  local function count(n) local c = 0 for i = 1, n do if K.s[i] == nil then c = c + 1 end end return c end
  local function use_nil(x) if x > 1 then return K.s.q.z end return K.s.q == nil, K.s.q or x end
  local function arith(x) return K.s.q + x end
  local function call(x) return K.s.q(x) end
  for _, x in ipairs({ 1, 2, 2.5 }) do check(q, x); check(len, math.floor(x)) end
  check(q, "upper")
  check(computed, "upper"); check(computed, "len")
  check_error("attempt to call a nil value", computed, "nope")
  check(count, 4)
  check(use_nil, 1)
  check_error("attempt to index a nil value (field 'q')", use_nil, 2)
  check_error("attempt to perform arithmetic on a nil value (field 'q')", arith, 1)
  check_error("attempt to call a nil value (field 'q')", call, 1)
  check_error("attempt to index a number value (field 'n')", function(x) return K.n.q end, 1)
  check_error("attempt to index a boolean value (field 'b')", function(x) return K.b[x] end, 1)
end)

test("a method the program adds to the string library", function()
  string.refuse6_twice = function(s) return s .. s end
  local ok, err = pcall(function()
    check(function(x) return K.s:refuse6_twice(), ("ab"):refuse6_twice() .. x end, 1)
  end)
  string.refuse6_twice = nil
  if not ok then error(err, 0) end
end)

-- Numbers with a metatable (debug.setmetatable): an index calls __index
-- as interpreted (differences.md item 13 said: a compile error).
test("indexing a number while numbers have a metatable", function()
  local function idx(x) return x.foo, x[1] end
  local function loop(n) local s = "" for i = 1, n do s = s .. i.k end return s end
  local function method(x) return x:floor(), x.pi end
  debug.setmetatable(0, { __index = function(n, k) return k .. n end })
  local ok, err = pcall(function()
    check(idx, 2); check(idx, 2.5); check(loop, 3)
    check_error("attempt to concatenate a boolean value (local 'k')",
                function(x) return x[true] end, 2)
  end)
  debug.setmetatable(0, { __index = math })
  if ok then ok, err = pcall(check, method, 2.5) end
  debug.setmetatable(0, nil)
  if not ok then error(err, 0) end
  check_error("attempt to index a number value (local 'x')", function(x) return x.foo end, 2)
end)

-- Calling a frozen string or a table without __call raises Lua's error
-- when the call runs (a compile error before, even where it did not run).
local S = "str"
G_REFUSE6 = {}
test("calling a string or a table without __call", function()
  local function s(x) if x > 0 then return K.s() end return 0 end
  local function t(x) if x > 0 then return K.t(x) end return 0 end
  local function up(x) if x > 0 then return S(x) end return 0 end
  local function glob(x) if x > 0 then return G_REFUSE6(x) end return 0 end
  for _, f in ipairs({ s, t, up, glob }) do check(f, 0) end
  check_error("attempt to call a string value (field 's')", s, 1)
  check_error("attempt to call a table value (field 't')", t, 1)
  check_error("attempt to call a string value (upvalue 'S')", up, 1)
  check_error("attempt to call a table value (global 'G_REFUSE6')", glob, 1)
end)

-- A table reached through constant fields of a frozen table (M.cache)
-- that the function writes into is read when it runs, as an upvalue's
-- table is (before: "cannot index a table").
test("writes into a field of a frozen table", function()
  local M = { cache = {}, state = { items = {} } }
  local function put(k, v) M.cache[k] = v return M.cache[k], #M.cache end
  local function nested(n)
    for i = 1, n do M.state.items[i] = i * 2 end   -- (both runs write the same)
    M.state.items.last = n
    return #M.state.items, M.state.items.last
  end
  for i = 1, 3 do check(put, i, i * 1.5) end
  check(put, "k", "v")
  check(nested, 3)
  -- the interpreted runs and the compiled runs wrote into the same tables
  assert(M.cache[1] == 1.5 and M.cache.k == "v", "M.cache")
  assert(#M.state.items == 3 and M.state.items[3] == 6 and M.state.items.last == 3, "M.state.items")
end)

test("constant keys of any kind on a frozen table", function()
  local F = { [true] = "yes", [2] = "two", [2.5] = "half" }
  check(function(x) return F[true], F[false], F[2.0], F[2.5], K.t[true] end, 1)
end)

-- What stays refused says what to write instead, at the user's line.
local function refused(phrase, f, ...)
  local ok, err = pcall(kjit.jit(f), ...)
  assert(not ok, "expected a compile error")
  local line = debug.getinfo(f, "S").linedefined
  assert(err:find("test_refuse6.lua:" .. line .. ":", 1, true), "not located: " .. err)
  assert(err:find(phrase, 1, true), "expected '" .. phrase .. "', got: " .. err)
end

test("frozen tables where compiled code needs a Lua value: pass them as arguments", function()
  local C = {}
  local hint = "pass the table as an argument"
  refused(hint, function(x) return tostring(C) end, 1)
  refused(hint, function(x) return assert(C) end, 1)
  refused(hint, function(x) if x > 5 then return "a" .. C end return 0 end, 1)
  refused(hint, function(x) local n = 0 for _, v in ipairs(K.t) do n = n + v end return n end, 1)
  -- and as arguments they compile
  check(function(t) return tostring(t) == tostring(t), assert(t) == t end, C)
  check(function(t) local n = 0 for _, v in ipairs(t) do n = n + v end return n end, { 1, 2, 3 })
end)
