-- test_jit_regress.lua: regression tests for bugs found by review and
-- fuzzing. Each differential case failed (or crashed) once.
local kjit = require "kjit"
local D = require "difftest"
-- kjit compiles the function's bytecode (issue 14): what a source-text
-- front end limited (expression depth, functions sharing a line) is
-- checked against the interpreter instead.

local function find(a, v)
  for i = 1, #a do if a[i] == v then return i end end
  return nil
end
local function lookup(a, v)
  local k = find(a, v)
  if k == nil then return -1 end
  return k
end
local function reset()
  local x = 5
  x = nil
  return x == nil
end
local function best_of(a)
  local best
  for i = 1, #a do if best == nil or a[i] > best then best = a[i] end end
  return best
end

test("nil results and nil-assigned locals stay nil", function()
  local a = kjit.arange(5)
  D.cases(find, {a, 3}, {a, 42})
  D.cases(lookup, {a, 3}, {a, 42})
  D.check(reset)
  D.cases(best_of, {kjit.array({3, 9, 2})}, {kjit.zeros(0)})
end)

local function default_or(a, b) b = b or 5 return a + b end
local function default_if(a, b) if b == nil then b = 5 end return a + b end
local function calls_default(x) return default_or(x) end
local function use_missing(a, b) return a + b end

test("missing and nil parameters are nil", function()
  D.cases(default_or, {1}, {1, 2}, {1, nil})
  D.cases(default_if, {1}, {1, 2})
  D.cases(calls_default, {1})
  D.check_error("attempt to perform arithmetic on a nil value", use_missing, 1)
end)

local function get(a, i)
  return a[i]
end
local function get_caller(a)
  return get(a, 11)
end
local function shape_of(a, k) return a.shape[k] end
local function shape_caller(a) return shape_of(a, 5) end

test("errors in a callee keep their own line and operands", function()
  D.check_error("index 11 out of bounds [1, 10]", get_caller, kjit.zeros(10))
  D.check(shape_caller, kjit.zeros({2, 3}))          -- a.shape[5] is nil, as in Lua
  D.cases(shape_of, {kjit.zeros({2, 3}), 2}, {kjit.zeros({2, 3}), 3}, {kjit.zeros({2, 3}), 0})
end)

local function nan_limit(lim)
  local n, last = 0, 0
  for i = 1, lim, -1 do
    n = n + 1; last = i
    if n == 5 then break end
  end
  return n, last
end

test("integer loop with a NaN limit and a negative step runs (as Lua)", function()
  D.cases(nan_limit, {0 / 0}, {-3.5}, {1 / 0}, {-1 / 0})
end)

test("jit metamethods are hidden and refuse other values", function()
  local f = kjit.jit(function(x) return x end)
  eq(getmetatable(f), "kjit.jit")
  local mt = debug.getmetatable(f)
  raises("kjit.jit expected", mt.__call, 1)
  -- userdata of other kinds, of every size (the call path reads a tag)
  raises("kjit.jit expected", mt.__call, io.stdout)
  raises("kjit.jit expected", mt.__call, kjit.zeros(2))
  raises("kjit.jit expected", mt.__call, kjit.zeros(2):slice(1, 1))
  raises("kjit.jit expected", mt.__call, kjit.jit(function() end):native("()"))
  eq(mt.__call(f, 7), 7, "a jit object")
  raises("kjit.jit expected", mt.__tostring, 12345)
end)

test("specializations compiled inside a coroutine outlive it", function()
  local function cb(x) return x + 1 end
  local f = kjit.jit(function(g, x) return g(x) end)
  local co = coroutine.wrap(function() return f(cb, 1) end)
  eq(co(), 2)
  co = nil
  collectgarbage(); collectgarbage()
  eq(f(cb, 2), 3)
  f = nil
  collectgarbage(); collectgarbage()
end)

test("callees with too many parameters are a compile error", function()
  local params = {}
  for i = 1, 40 do params[i] = "p" .. i end
  local g = load("return function(" .. table.concat(params, ", ") .. ") return p1 + p2 end")()
  local f = kjit.jit(function(x) return g(x, 2) end)
  raises("more than 32 parameters", f, 1)
  -- the compiled function itself: located at its header, in its chunk
  local h = load("\n\nreturn function(" .. table.concat(params, ", ") .. ") return p1 end",
                 "@big.lua")()
  local msg = raises("more than 32 parameters", kjit.jit(h))
  assert(msg:find("big.lua:3:", 1, true), msg)
end)

test("very long expressions compile, not a crash", function()
  local f = load("return function(x) return x" .. string.rep(" + x", 5999) .. " end")()
  eq(f(1), 6000)
  D.check(f, 1) D.check(f, 0.5)   -- Lua's registers: no tree to walk
  local g = load("return function(x) return x" .. string.rep(" + x", 300) .. " end")()
  eq(kjit.jit(g)(1), 301)
end)

test("many array parameters and maybe results", function()
  local params, rets = {}, {}
  for i = 1, 32 do params[i] = "a" .. i end
  for i = 1, 16 do rets[i] = "(a" .. i .. "[1][1][1][1] > 0 and 1)" end
  local f = load("return function(" .. table.concat(params, ", ") .. ") return " ..
                 table.concat(rets, ", ") .. " end")()
  local args = {}
  for i = 1, 32 do args[i] = kjit.zeros({1, 1, 1, 1}) end
  local want = table.pack(f(table.unpack(args)))
  local got = table.pack(kjit.jit(f)(table.unpack(args)))
  eq(got.n, want.n)
  for i = 1, want.n do eq(got[i], want[i]) end
end)

local function store_int_f32(a, n)
  local m = n + 0
  a[1] = m
  return a[1]
end

test("integers stored into f32 arrays round once", function()
  D.cases(store_int_f32, {kjit.zeros(1, "f32"), 9007199791611905}, {kjit.zeros(1, "f32"), 16777217})
end)

local function truthy_of(v) if v then return 1 end return 0 end
local function pass_tointeger(x) return truthy_of(math.tointeger(x)) end
local function pass_and(c) return truthy_of(c and 7) end

test("maybe-false values passed to callees keep their truth", function()
  D.cases(pass_tointeger, {2.5}, {2.0})
  D.cases(pass_and, {false}, {true})
end)

local function or_nil_false(x) return math.tointeger(x) or (false and 1) end
local function or_false_nil(x) return (false and 1) or math.tointeger(x) end

test("nil and false stay apart through and/or", function()
  D.cases(or_nil_false, {2.5}, {2.0})
  D.cases(or_false_nil, {2.5}, {2.0})
  -- nil on one path and true on another: a Lua value now (test_mixed_values.lua)
  local function and_true(x) return math.tointeger(x) and true end
  D.cases(and_true, {2.5}, {2.0})
end)

test("too many values is a compile error, not a truncation", function()
  local function two(x) return x, x + 1 end
  local f = kjit.jit(function(x) return 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, two(x) end)
  raises("too many values", f, 1)
end)

test("error levels must be constants", function()
  local f = kjit.jit(function(l) error("boom", l) end)
  raises("error() level must be an integer constant", f, 2)
end)

local N <const> = 10
local M <const> = -2.5 * 2
do local HIDDEN <const> = 99 end
local function uses_consts(x) return x * N + M end
local function uses_hidden() return HIDDEN end

test("<const> locals of enclosing functions are folded, as Lua does", function()
  D.cases(uses_consts, {2}, {2.5})
  -- a nil global returned is nil, as interpreted (not the hidden 99)
  D.check(uses_hidden)
  eq(kjit.jit(uses_hidden)(), nil, "global HIDDEN")
end)

test("f32 results can be declared in a signature", function()
  local f = kjit.jit(function(x) return x[1] * 2 end)
  f:compile("f32(f32[:])")
  truthy(f:inspect("types"):find("-> (f32)", 1, true), "f32 result")
  eq(f(kjit.full(1, 1.5, "f32")), 3.0)
end)

local k1, k2 = 3, 5
local fa, fb = function(x) return x * k1 end, function(x) return x * k2 end
local ga, gb = function(x) return x + 1 end, function(x) return x + 2 end

test("functions sharing a line are told apart by upvalues, else refused", function()
  D.cases(fa, {2}); D.cases(fb, {2})
  -- each function's own bytecode: lines do not matter
  D.cases(ga, {1}, {1.5}); D.cases(gb, {1}, {1.5})
end)

-- Found by fuzzing (tests/fuzz/regress/ub-parse-*): the parser computed
-- NULL + 0 (undefined behaviour, clang's UBSan stops) for a function
-- without parameters or statements and for an empty table constructor.
local function no_params() return 7 end
local function empty_body() end
local function empty_table(x) local t = {} return x end

test("no parameters, empty bodies and {} parse cleanly", function()
  eq(kjit.jit(no_params)(), 7)
  eq(select("#", kjit.jit(empty_body)()), 0)
  eq(kjit.jit(empty_table)(1), 1)   -- {} compiles now (issue 29: tables)
end)

-- A global read at compile time is the interpreter's read: an environment
-- whose __index is _G (a sandbox, a module) finds math and the host's
-- globals; a guard whose __index raises stops the compile with its error.
KJIT_REGRESS_SCALE = 3
test("globals are read through the environment's __index", function()
  local env = setmetatable({}, { __index = _G })
  local f = load("return function(x) return math.sqrt(x) * KJIT_REGRESS_SCALE end", nil, "t", env)()
  D.cases(f, {4}, {2.25})
  local strict = setmetatable({}, { __index = function(_, k) error("undeclared global '" .. k .. "'", 2) end })
  local g = load("return function(x) return x + undeclared end", nil, "t", strict)()
  raises("undeclared global 'undeclared'", kjit.jit(g), 1)
end)

-- A pure callee's error, then an index that is not an integer (or out of
-- bounds as a float) in the pure caller: the callee's error is the one
-- raised, as the interpreter stops there (the index error overwrote it;
-- difffuzz program 1001)
local function div0(a) return a // 0 end
local function nonint_bitwise(p) local x = (-math.huge) & 0.0; return p end
local function callee_then_huge_index(a, A) local x = div0(a); return A[math.huge] end
local function callee_then_float_index(a, A) local u = nonint_bitwise(a); return u + A[1.5] end
local function callee_then_var_index(a, A) local u = div0(a); return A[a + 0.5] end

test("a pure callee's error is not overwritten by a float index error after it", function()
  local A = kjit.array({1, 2, 3, 4}, "i32")
  for _, opts in ipairs{ {}, { opt = 0 } } do
    D.check_opts(opts, callee_then_huge_index, 1, A)
    D.check_opts(opts, callee_then_float_index, 0.5, A)
    D.check_opts(opts, callee_then_var_index, 2, A)
  end
  D.check_error("attempt to divide by zero", callee_then_huge_index, 1, A)
  D.check_error("number has no integer representation", callee_then_float_index, 0.5, A)
end)

-- LLVM 14's machine peephole pass recursed until the stack ran out on an
-- unoptimized module (opt 0 generated code at LLVM's default level): the
-- difffuzz reproducer, in a child process so a crash fails the test
-- instead of killing the suite.
test("opt 0 generates code with LLVM's -O0 code generator (no crash)", function()
  local moddir = arg and arg[1] or "build"
  local file = "tests/difffuzz/found/opt0-llvm-recursion-crash.lua"
  local p = assert(io.popen("lua5.4 " .. file .. " '" .. moddir .. "' 2>&1", "r"))
  local out = p:read("a")
  local ok, how, code = p:close()
  assert(ok and how == "exit" and code == 0,
         ("reproducer failed (%s %s):\n%s"):format(tostring(how), tostring(code), out))
  assert(out:find("CLASS same", 1, true), out)
end)
