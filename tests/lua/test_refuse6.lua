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

-- Numbers with a metatable (debug.setmetatable): an index calls __index,
-- a call __call, as interpreted (differences.md item 13 said: a compile
-- error).
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
  -- and a call of a number calls its __call
  debug.setmetatable(0, { __call = function(n, a) return n * a end })
  if ok then
    ok, err = pcall(function()
      check(function(x) return x(2), x(0.5) end, 3)
      check(function(n) local s = 0 for i = 1, n do s = s + i(i) end return s end, 4)
      check(function(x) if x > 5 then return x(2) end return 0 end, 1)
    end)
  end
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

-- A table whose __call cannot be called (a number, or a chain of __call
-- ending in one) raises Lua's message: the type of the value that cannot
-- be called, the callee named as the source names it (upvalue, local,
-- field, method); before, the trampoline's parameter: "(local 'C2')". A
-- chain ending in a function calls it.
local C2 = setmetatable({}, { __call = 42 })
local C3 = setmetatable({}, { __call = setmetatable({}, { __call = "no" }) })
local C4 = setmetatable({}, { __call = setmetatable({}, { __call = function(_, _, a) return a * 2 end }) })
local OBJ = { m = C2 }
test("a __call that cannot be called: Lua's message and name", function()
  local function up(x) if x > 0 then return C2(x) end return 0 end
  local function chain(x) if x > 0 then return C3(x) + 1 end return 0 end
  local function loc(x) local c = C2; if x > 0 then return c(x) end return 0 end
  local function fld(x) if x > 0 then return OBJ.m(x) end return 0 end
  local function meth(x) if x > 0 then return OBJ:m(x) end return 0 end
  local function spread(x) if x > 0 then return math.max(C2(x)) end return 0 end
  local function called(x) return C4(x) + 1 end
  for _, f in ipairs({ up, chain, loc, fld, meth, spread }) do check(f, 0) end
  check(called, 5)
  check_error("attempt to call a number value (upvalue 'C2')", up, 1)
  check_error("attempt to call a string value (upvalue 'C3')", chain, 1)
  check_error("attempt to call a number value (local 'c')", loc, 1)
  check_error("attempt to call a number value (field 'm')", fld, 1)
  check_error("attempt to call a number value (method 'm')", meth, 1)
  check_error("attempt to call a number value (upvalue 'C2')", spread, 1)
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

-- A frozen table where compiled code needs the table itself ('..', '#' with
-- a __len, a library function that reads it) is the table, a Lua value;
-- table.insert/remove into an upvalue's table make it live, as t[k] = v.
test("frozen tables as Lua values: '..', __len, tostring, ipairs, print, table.concat", function()
  local C = { 1, 2, 3 }
  local L = setmetatable({}, { __len = function() return 7 end })
  local CC = setmetatable({}, { __concat = function(a, b) return "cat" end })
  check(function(x) return tostring(C) == tostring(C), assert(C) == C, assert(C, "m", x) end, 1)
  check(function(x) local n = 0 for i, v in ipairs(C) do n = n + i * v end return n end, 1)
  check(function(x) local f, t, i = ipairs(C) return t == C, i end, 1)
  check(function(x) return #L + x, "a" .. CC, CC .. x end, 1)
  check(function(x) return table.concat(C, ","), string.format("%d", #C) end, 1)
  check(function(x) if x > 5 then return "a" .. C end return 0 end, 1)
  check_error("attempt to concatenate a table value (upvalue 'C')",
              function(x) if x > 5 then return "a" .. C end return 0 end, 6)
  check(function(x) return tonumber(C), tonumber(K.t), tonumber(print) end, 1)
end)

test("table.insert and table.remove on an upvalue's table", function()
  local log = {}
  -- (each check runs the function twice, interpreted then compiled, on
  -- the one table: results that do not depend on its length)
  local function add(x) table.insert(log, x) table.insert(log, 1, -x) return log[1], log[#log] end
  local function pop(x) local v = table.remove(log) return v end
  check(add, 1); check(add, 2.5)
  check(pop, 0)
  -- both runs wrote into the same table: interpreted then compiled, each call
  assert(#log == 6 and log[1] == -2.5 and log[6] == 1, "log: " .. #log)
end)

-- Userdata kjit has no type for (a host's object; files here) and arrays
-- of records kept in upvalues: Lua values (before: "upvalue 'u' is a userdata").
test("userdata and arrays of records in upvalues", function()
  local P = kjit.struct{ { "x", "f64" }, { "y", "f64" } }
  local R = kjit.zeros(4, P)
  local function sumx(r) local s = 0 for i = 1, #r do s = s + r[i].x end return s end
  local function pass(x) return sumx(R) + x, #R, R[2].y end
  local function write(x) R[x].x = x * 1.5 return R[x].x end
  check(pass, 1)
  check(write, 2)
  check_error("index 9 out of bounds", write, 9)
  assert(R[2].x == 3.0, "R[2].x")
  local out = io.stdout
  check(function(x) out:write("") return io.write("") == out end, 1)
  check_error("attempt to call a FILE* value (upvalue 'out')",
              function(x) if x > 0 then return out(x) end return 0 end, 1)
  check(function(x) if x > 0 then return out(x) end return 0 end, 0)
end)

test("library functions given what Lua converts: strings to math, numbers to format", function()
  check(function(x) return math.floor("3.5"), math.sqrt("4"), math.abs("-3") + x end, 1)
  check_error("bad argument #1 to 'floor' (number expected, got string)",
              function(x) return math.floor("x" .. x) end, 1)
  check(function(x) if x > 5 then return math.floor("zz") end return 0 end, 1)
  check(function(x) return string.format(x), string.format(2.5) end, 12)
  check(function(x) return string.rep("a", 2, "-", K.t), tostring(x, K.t) end, 1)
  check(function(x) local a, b = math.randomseed(x) return math.type(a), math.random(1, 100) end, 7)
end)

test("math.type of an integer-or-float returned, stored, concatenated", function()
  local function f(x) local v = x if x > 5 then v = x / 2 end return math.type(v), "t=" .. math.type(v) end
  local function g(x) local v = x if x > 5 then v = x / 2 end local t = { math.type(v) } return t[1] end
  for _, x in ipairs({ 3, 12 }) do check(f, x); check(g, x) end
end)

test("coroutines made, resumed and closed from compiled code", function()
  local gen = function(n) for i = 1, n do coroutine.yield(i) end return "done" end
  check(function(n) local g = coroutine.wrap(gen) local s = 0 for i = 1, n do s = s + g(n) end return s end, 4)
  check(function(n)
    local co, out = coroutine.create(gen), {}
    repeat local ok, v = coroutine.resume(co, n) out[#out + 1] = tostring(v)
    until coroutine.status(co) == "dead"
    return table.concat(out, ","), coroutine.resume(co)
  end, 3)
  check(function(n) local co = coroutine.create(gen) coroutine.resume(co, 3) return coroutine.close(co), coroutine.status(co) end, 1)
  check(function(n) local _, main = coroutine.running() return main end, 1)
  check_error("boom", function(n) return coroutine.wrap(function() error("boom") end)() end, 1)
end)

test("still refused: located, with what to write instead", function()
  refused("call them in an interpreted function around the compiled one",
          function(x) return debug.traceback("m") end, 1)
  refused("call them in an interpreted function around the compiled one",
          function(x) coroutine.yield(x) end, 1)
  refused("call them in an interpreted function around the compiled one",
          function(x) return coroutine.isyieldable() end, 1)
  refused("kept in an upvalue (local out = io.stderr",
          function(x) io.stderr:write("") return x end, 1)
  refused("error() level must be an integer constant",
          function(x) if x > 5 then error("m", x) end return 0 end, 1)
end)
