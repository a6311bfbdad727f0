-- test_messages.lua: messages that say what to do (issue 26, item 3).
-- Every compile error says it is one and names the argument types being
-- compiled; the common mistakes carry a hint (a C function in compiled
-- code, Numba's decorator shape kjit.jit{...}(f), arithmetic on arrays,
-- index 0). Run-time messages are differential: interpreted and compiled
-- code raise the same text.
local kjit = require "kjit"
local cuda = kjit.cuda
local D = require "difftest"

local THIS = "test_messages.lua:"

local function line_of(fn, off) return debug.getinfo(fn, "S").linedefined + (off or 0) end

local function concat(x) return math end
local function return_table(v, s) return v[1] + s, math end
local function kernel_returns(a) return a[1] end

test("a compile error says so, after its place, with the argument types", function()
  raises(THIS .. line_of(concat) .. ": compile error for (i64): cannot return a table",
         kjit.jit(concat), 1)
  raises(THIS .. line_of(concat) .. ": compile error for (f64): cannot return a table",
         kjit.jit(concat), 2.5)
  raises(THIS .. line_of(return_table) .. ": compile error for (f32[:], f64): cannot return a table",
         kjit.jit(return_table), kjit.zeros(2, "f32"), 2.5)
  -- a signature compiled ahead names its own types
  local f = kjit.jit(return_table)
  raises("compile error for (i64[:], i64): cannot return a table",
         function() f:compile("(i64[:], i64)") end)
  -- kernels too (no GPU needed: compile only)
  raises(THIS .. line_of(kernel_returns) .. ": compile error for (f64[:]): a kernel cannot return values",
         function() cuda.jit(kernel_returns):compile("void(f64[:])") end)
  -- a run-time error is not called one
  local g = kjit.jit(function(a) return a[5] end)
  local ok, msg = pcall(g, kjit.zeros(2))
  truthy(not ok, "raised")
  truthy(not tostring(msg):find("compile error", 1, true), "run-time error: " .. tostring(msg))
end)

test("a C function in compiled code: why, and what to do instead", function()
  local f = kjit.jit(function(x) return x + debug.getinfo(1).currentline end)
  raises("field 'getinfo' is a C function: compiled code cannot call coroutine.yield, "
         .. "coroutine.isyieldable or the debug functions (they work on the interpreter's call "
         .. "stack, which compiled frames are not on): call them in an interpreted function "
         .. "around the compiled one (yield "
         .. "there, between its calls; pass debug.getinfo's or debug.traceback's results in), or "
         .. "run with KJIT_DISABLE_JIT=1", f, 1)
  local p = coroutine.isyieldable
  local g = kjit.jit(function(x) p() return x end)
  raises("upvalue 'p' is a C function: compiled code cannot call coroutine.yield, "
         .. "coroutine.isyieldable or the debug", g, 1)
  -- any other C function is called through the Lua API (test_lang_functions.lua)
  local h = kjit.jit(function(x) return x + #os.getenv("HOME") end)
  eq(h(1), 1 + #os.getenv("HOME"))
  -- other unusable values keep the list of what compiled code can use
  local co = coroutine.create(function() end)
  local h = kjit.jit(function(x) local c = co return x end)
  raises("compiled code can use only numbers, booleans, strings, functions and tables of them",
         h, 1)
end)

test("kjit.jit{opts}(f) (Numba's decorator shape): the options come second", function()
  raises("Lua function expected, got table; the options come second: kjit.jit(fn, {parallel = true})",
         kjit.jit, { parallel = true })
  -- (cuda.jit takes numba-cuda's decorator shapes: cuda.jit{opts}(fn) is one)
  -- other wrong arguments keep the plain message
  raises("bad argument #1 to 'jit' (Lua function expected, got number)", kjit.jit, 3)
end)

local HINT = "(kjit arrays have no arithmetic operators: write the loop in a kjit.jit function, "
  .. "or make an element-wise function with kjit.vectorize)"

local function add_arrays(A, B) return A + B end
local function number_plus_array(n, B) return n * B end
local function neg_array(B) return -B end
local function idiv_array(B) return B // 2 end
local function nil_plus_array(B) local n; return n + B end
local function bool_plus_array(B, c) return c + B end

test("arithmetic on arrays points at vectorize, interpreted and compiled alike", function()
  local a, b = kjit.zeros(3), kjit.zeros(3, "i32")
  raises("attempt to perform arithmetic on a kjit.array value " .. HINT,
         function() return a + b end)
  D.check_error("attempt to perform arithmetic on a kjit.array value " .. HINT, add_arrays, a, b)
  D.check_error("attempt to perform arithmetic on a kjit.array value " .. HINT, number_plus_array, 2, b)
  D.check_error("attempt to perform arithmetic on a kjit.array value " .. HINT, neg_array, a)
  D.check_error("attempt to perform arithmetic on a kjit.array value " .. HINT, idiv_array, a)
  -- the other operand is named when Lua names it (no variable name: the
  -- interpreter's metamethod cannot know it, and compiled code agrees)
  D.check_error("attempt to perform arithmetic on a nil value", nil_plus_array, a)
  D.check_error("attempt to perform arithmetic on a boolean value", bool_plus_array, a, true)
  -- the message names the place of the arithmetic
  local ok, msg = pcall(add_arrays, a, b)
  truthy(not ok, "raised")
  truthy(tostring(msg):find(THIS .. line_of(add_arrays) .. ":", 1, true), tostring(msg))
  -- a table with its own metamethod still gets its turn, as without kjit's
  local t = setmetatable({}, { __add = function(x, y) return "theirs" end,
                               __unm = function() return "unm" end })
  eq(a + t, "theirs")
  eq(t + a, "theirs")
  -- bitwise operations keep Lua's own message
  raises("attempt to perform bitwise operation on a kjit.array value", function() return a & 1 end)
end)

local function read_at(a, i) return a[i] end
local function write_at(a, i) a[i] = 1 end

test("index 0 says arrays are 1-based, interpreted and compiled alike", function()
  local a = kjit.zeros(3)
  local HINT0 = "index 0 out of bounds [1, 3] (kjit arrays are 1-based: the first element is a[1])"
  raises(HINT0, function() return a[0] end)
  raises(HINT0, function() a[0] = 1 end)
  D.check_error(HINT0, read_at, a, 0)
  D.check_error(HINT0, write_at, a, 0)
  -- other indices have no hint
  local ok, msg = pcall(read_at, a, 4)
  truthy(not ok, "raised")
  truthy(not tostring(msg):find("1-based", 1, true), tostring(msg))
  D.check_error("index 4 out of bounds [1, 3]", read_at, a, 4)
  -- a row of a 2-D array
  local m = kjit.zeros({ 2, 2 })
  raises("index 0 out of bounds [1, 2] (kjit arrays are 1-based", function() return m[1][0] end)
end)

-- Names of any length come out whole, as Lua writes them (compiled
-- messages were cut at about 90 characters: fixed buffers); only the chunk
-- name is cut, by Lua's own rule (luaO_chunkid, LUA_IDSIZE), for both.
test("long names in run-time messages: whole, as interpreted", function()
  local N = string.rep("n", 150)
  local src = ([[
local FLOORN = math.floor
local TBLN = {}
local UPN = nil
local function ok(x) return x end
return function(a, d)
  local LOCN = nil
  if d == 1 then return FLOORN(a) end                 -- bad argument #1 to 'FLOORN'
  if d == 2 then return a + TBLN.FIELDN end           -- arithmetic on a nil (field)
  if d == 3 then return UPN + 1 end                   -- (upvalue)
  if d == 4 then return LOCN .. "x" end               -- concatenate (local)
  if d == 5 then return TBLN.FIELDN.x end             -- index (field)
  if d == 6 then return TBLN.CALLN(a) end             -- call (field)
  if d == 7 then return #LOCN end                     -- length (local)
  if d == 8 then return TBLN:METHN(a) end             -- call (method)
  if d == 9 then return math.floor(TBLN.FIELDN) end   -- bad argument, 'floor'
  return ok(d)
end
]]):gsub("N([%s%.%(%):,=])", N .. "%1")
  for _, chunk in ipairs({ "=" .. string.rep("c", 100), "@" .. string.rep("d/", 50) .. "f.lua" }) do
    local f = assert(load(src, chunk))()
    local g = kjit.jit(f)
    for d = 1, 9 do
      local a = d == 1 and "s" or 2
      local ok1, e1 = pcall(f, a, d)
      local ok2, e2 = pcall(g, a, d)
      eq(ok1, false, "interpreted raises (" .. d .. ")")
      eq(ok2, false, "compiled raises (" .. d .. ")")
      eq(e2, e1, "case " .. d)
      truthy(d == 9 or e1:find(N, 1, true), "the long name in case " .. d)
    end
    eq(g(2, 0), 0)
  end
end)
