-- test_call_path.lua: calling compiled code from Lua. A call whose
-- arguments match the last specialization reads them on a fast path
-- (host/jit.c read_args), and f:native(sig) is a C function bound to one
-- specialization; both must give exactly what the interpreted function
-- gives (values with their subtypes, errors with their messages and the
-- caller's file:line), and route anything else through the full dispatch.
-- ctest runs this file twice: reading the arguments from the stack
-- directly (host/lua_stack.h, validated by a probe at require time) and,
-- as lua.test_call_path_api, with KJIT_NO_STACK_READS=1 (the Lua API).
local kjit = require "kjit"

local NO_STACK_READS = (os.getenv("KJIT_NO_STACK_READS") or "0") ~= "0" and os.getenv("KJIT_NO_STACK_READS") ~= ""

local THIS = "test_call_path.lua:"

-- Calls fn(...) and the interpreted reference ref(...) and compares: both
-- succeed with the same results (same_value: subtypes, NaN, -0.0), or
-- both fail with the same message.
local function agree(fn, ref, what, ...)
  local r1 = table.pack(pcall(fn, ...))
  local r2 = table.pack(pcall(ref, ...))
  eq(r1[1], r2[1], what .. ": success")
  if not r1[1] then
    eq(tostring(r1[2]), tostring(r2[2]), what .. ": error")
    return
  end
  eq(r1.n, r2.n, what .. ": result count")
  for i = 2, r1.n do eq(r1[i], r2[i], what .. ": result " .. (i - 1)) end
end

local function add(a, b) return a + b end
local function idiv(a, b) return a // b end

-- Argument lists that the fast path must tell apart: subtypes, integral
-- floats, values beyond the integers, NaN and infinities, -0.0, and the
-- extremes of the integers.
local NUMS = { 1, 2.5, 3.0, -0.0, 0, math.maxinteger, math.mininteger, 2^63, -2^63,
               1e300, -1e300, 1/0, -1/0, 0/0, 0.1, -7, 2^53, 2^53 + 1.0 }

test("number arguments pick the specialization of their subtypes", function()
  local f = kjit.jit(add)
  -- every pair, each call right after another pair of subtypes: the fast
  -- path sees the previous call's specialization first
  for _, a in ipairs(NUMS) do
    for _, b in ipairs(NUMS) do
      agree(f, add, string.format("add(%s, %s)", a, b), a, b)
    end
  end
  local g = kjit.jit(idiv)
  for _, a in ipairs(NUMS) do
    for _, b in ipairs({ 2, 2.0, -3, 0.5, 0, 0.0 }) do
      local ok, m = pcall(g, a, b)
      local ok2, m2 = pcall(idiv, a, b)
      eq(ok, ok2, "idiv success")
      if ok then eq(m, m2, string.format("idiv(%s, %s)", a, b)) end
    end
  end
end)

test("native: a bound specialization gives what f gives, for any arguments", function()
  local f = kjit.jit(add)
  local fi = f:native("(i64, i64)")
  local ff = f:native("(f64, f64)")
  local fm = f:native("(i64, f64)")
  eq(type(fi), "function", "a plain function")
  for _, n in ipairs({ fi, ff, fm }) do
    for _, a in ipairs(NUMS) do
      for _, b in ipairs(NUMS) do
        agree(n, add, string.format("add(%s, %s)", a, b), a, b)
      end
    end
    -- other counts and types: f's ordinary route, its messages
    agree(n, f, "one argument", 1)
    agree(n, f, "three arguments", 1, 2, 3)
    agree(n, f, "booleans", true, 1)
    agree(n, f, "a string", "1", 2)
  end
end)

test("wrong types on the fast path still dispatch, compile or raise like the slow path", function()
  local f = kjit.jit(add)
  eq(f(1, 2), 3)                        -- (i64, i64) is now the last one
  eq(f(1.5, 2), 3.5)                    -- a float where the last had an integer
  eq(f(1, 2), 3)
  eq(f(2.0, 2), 4.0)                    -- an integral float is still a float
  eq(f(2, 2.0), 4.0)
  -- strings and tables are Lua values (issue 29): their own specializations,
  -- Lua's coercion and errors
  truthy(same_value(f("1", 2), add("1", 2)), "a string argument: Lua's coercion")
  truthy(same_value(f(1, "2.5"), add(1, "2.5")), "a string argument: Lua's coercion")
  raises("attempt to perform arithmetic on a table value", function() return f({}, 2) end)
  local m = raises("argument #2 is a userdata", function() return f(1, io.stdout) end)
  truthy(m:find(THIS, 1, true), "the caller's line in: " .. m)
  eq(#f.signatures, 6, "six specializations")
  -- a run-time error of compiled code keeps the function's own line
  local g = kjit.jit(idiv)
  local n = g:native("(i64, i64)")
  eq(n(7, 2), 3)
  for _, h in ipairs({ g, n }) do
    m = raises("attempt to divide by zero", function() return h(1, 0) end)
    truthy(m:find(THIS, 1, true), "the function's line in: " .. m)
  end
  m = raises("argument #1 is a thread", function() return n(coroutine.create(print), 2) end)
  truthy(m:find(THIS, 1, true), "native: the caller's line in: " .. m)
  eq(n("7", 2), idiv("7", 2))   -- a string: f's own route (issue 29: a Lua value)
end)

test("booleans, nil and trailing nils", function()
  local function pick(c, a, b) if c then return a end return b end
  local f = kjit.jit(pick)
  local cases = { { true, 1, 2 }, { false, 1, 2 }, { nil, 1, 2 }, { true, 1.5, 2.5 },
                  { false, 1.5 }, { true, 1 }, { true, 1, nil }, { 1, 2, 3 } }
  for round = 1, 2 do
    for i, c in ipairs(cases) do
      agree(f, pick, "pick case " .. i .. " round " .. round, table.unpack(c, 1, 3))
    end
  end
  local n = f:native("(bool, i64, i64)")
  for i, c in ipairs(cases) do
    agree(n, pick, "native pick case " .. i, table.unpack(c, 1, 3))
  end
end)

test("arrays: other dtypes and ranks are other specializations", function()
  local function sum(x)
    local s = 0
    for i = 1, #x do s = s + x[i] end
    return s
  end
  local f = kjit.jit(sum)
  local n = f:native("(f64[:])")
  local arrays = {
    kjit.array({ 1, 2, 3 }, "f64"), kjit.array({ 1, 2, 3 }, "i32"), kjit.array({ 1.5, 2 }, "f32"),
    kjit.array({ 1, 2, 3 }, "u8"), kjit.array({ 4, 5 }, "i64"), kjit.zeros({ 2, 2 }),
    kjit.array({ 0.25, 0.5 }, "f64"),
  }
  for round = 1, 2 do
    for i, a in ipairs(arrays) do
      if a.ndim == 1 then
        agree(f, sum, "sum of array " .. i .. " round " .. round, a)
        agree(n, sum, "native sum of array " .. i, a)
      end
    end
  end
  -- a 2-D array where a 1-D one was last: #x is its first extent, x[i] a row
  local rows = kjit.jit(function(x) return #x end)
  eq(rows(arrays[1]), 3)
  eq(rows(arrays[6]), 2)
  eq(rows(arrays[1]), 3)
  -- a view is an array like any other
  eq(f(arrays[1]:slice(2, 3)), 5.0)
  eq(n(arrays[1]:slice(2, 3)), 5.0)
  -- and values that are not arrays are refused on both paths
  for _, h in ipairs({ f, n }) do
    raises("argument #1 is a userdata", function() return h(io.stdout) end)
    eq(h({ 1, 2 }), 3)   -- a table is a Lua value (issue 29)
    local m = raises("attempt to get length of a number value", function() return h(1) end)
    truthy(m:find(THIS, 1, true), "the function's line in: " .. m)
  end
end)

test("other userdata with an array's fields are not arrays", function()
  local f = kjit.jit(function(x) return #x end)
  local n = f:native("(f64[:])")
  eq(f(kjit.zeros(3)), 3)
  local others = { io.stdout, f }
  local cuda = kjit.cuda
  if cuda and cuda.simulate then   -- a device array: shape, dtype, no host data
    cuda.simulate(true)            -- in host memory: no GPU needed
    others[#others + 1] = cuda.device_array(3, "f64")
  end
  for i, u in ipairs(others) do
    for _, h in ipairs({ f, n }) do
      local ok, m = pcall(h, u)
      truthy(not ok, "userdata " .. i .. " refused")
      truthy(tostring(m):find("argument #1 is a", 1, true) or tostring(m):find("attempt to get length", 1, true),
             "userdata " .. i .. ": " .. tostring(m))
    end
  end
end)

test("functions as arguments take the full dispatch", function()
  local function apply(g, x) return g(x) end
  local sq = kjit.jit(function(x) return x * x end)
  local inc = kjit.jit(function(x) return x + 1 end)
  local f = kjit.jit(apply)
  for round = 1, 3 do
    eq(f(sq, 3), 9, "sq round " .. round)
    eq(f(inc, 3), 4, "inc round " .. round)
    eq(f(sq, 1.5), 2.25, "sq of a float round " .. round)
  end
end)

test("native: the specialization survives inspect's recompile", function()
  local f = kjit.jit(add)
  local n = f:native("(i64, i64)")
  eq(n(2, 3), 5)
  truthy(f:inspect("asm"):len() > 0, "asm text")   -- recompiles (i64, i64) with text
  eq(n(2, 3), 5, "after the recompile")
  eq(n(2.5, 3), 5.5, "other types after the recompile")
  eq(#f.signatures, 2)
end)

-- f:native("()") of a specialization that takes no argument and makes no
-- array is a C function of its own (host/jit.c native_call0): the same
-- answers as the interpreted function, with extra arguments, errors,
-- several results, nested calls, vararg functions and arrays made
test("native without arguments: what the interpreted function gives", function()
  local function boom() error("boom") end
  local function fib(k) if k < 2 then return k end return fib(k - 1) + fib(k - 2) end
  local cases = {
    function() end,
    function() return 42 end,
    function() return 2.5, -0.0, 7, 0/0 end,
    function() return nil, false, true end,
    boom,
    function() local s = 0 for i = 1, 10 do s = s + i end return s end,
    function() return fib(15) end,
    function(...) return select("#", ...) end,
    function(a) return a end,
  }
  for i, fn in ipairs(cases) do
    local f = kjit.jit(fn)
    local n = f:native("()")
    for round = 1, 2 do
      local what = "case " .. i .. " round " .. round
      agree(n, fn, what)
      agree(n, fn, what .. " an extra argument", 1.5)
      agree(n, fn, what .. " an extra nil", nil)
      agree(n, fn, what .. " again")
      agree(f, fn, what .. " through f")
    end
  end
  -- one that makes an array: native_call's route
  local z = kjit.jit(function() local a = kjit.zeros(3) a[2] = 1.5 return a end):native("()")
  for _ = 1, 2 do
    local a = z()
    eq(#a, 3); eq(a[1], 0.0); eq(a[2], 1.5)
  end
  local m = raises("boom", function() return kjit.jit(boom):native("()")() end)
  truthy(m:find(THIS, 1, true), "the error's line in: " .. m)
end)

test("native without arguments: boxes swapped with the debug library, finalized objects", function()
  local f0 = kjit.jit(function() return 1 end)
  local f2 = kjit.jit(add)
  -- a box of the other kind: runs the box's own specialization (its
  -- arity checked), never the closure's assumptions
  local n0, n2 = f0:native("()"), f2:native("(i64, i64)")
  debug.setupvalue(n0, 1, select(2, debug.getupvalue(f2:native("(i64, i64)"), 1)))
  eq(n0(5, 3), 8, "a two-argument box in the zero-argument function")
  local ok, err = pcall(n0)
  eq(ok, false, "its arity is the box's")
  truthy(tostring(err):find("number", 1, true) or tostring(err):find("nil", 1, true), tostring(err))
  debug.setupvalue(n2, 1, select(2, debug.getupvalue(f0:native("()"), 1)))
  eq(n2(), 1, "a zero-argument box in the two-argument function")
  eq(n2(7), 1, "an extra argument: f0's own route")
  for _, v in ipairs({ io.stdout, kjit.zeros(8), f0, 42, debug.upvalueid(n2, 1) }) do
    local m = f0:native("()")
    debug.setupvalue(m, 1, v)
    local ok2, r = pcall(m)
    eq(ok2, false, "a replaced upvalue " .. tostring(v))
    truthy(tostring(r):find("upvalue was replaced", 1, true), tostring(r))
  end
  local g, n = resurrected(function()
    local h = kjit.jit(function() return 2 end)
    h()
    return h, h:native("()")
  end)
  raises("kjit function used after it was finalized", function() return g() end)
  raises("kjit function used after it was finalized", function() return n() end)
  raises("kjit function used after it was finalized", function() return n(1) end)
end)

test("native: signatures are checked like f:compile's", function()
  local f = kjit.jit(add)
  raises("bad signature", function() f:native("(i64") end)
  raises("declares result", function() f:native("bool(i64, i64)") end)
  local n = f:native("i64(i64, i64)")
  eq(n(1, 2), 3)
end)

test("native and f after the object's finalizer: an error, never a crash", function()
  local f, n = resurrected(function()
    local g = kjit.jit(add)
    g(1, 2)
    return g, g:native("(i64, i64)")
  end)
  raises("kjit function used after it was finalized", function() return f(1, 2) end)
  raises("kjit function used after it was finalized", function() return n(1, 2) end)
  raises("kjit function used after it was finalized", function() return n(1.5, 2) end)
end)

test("native keeps its function alive", function()
  local n = kjit.jit(add):native("(i64, i64)")
  collectgarbage(); collectgarbage()
  eq(n(40, 2), 42)
end)

test("KJIT_DISABLE_JIT is honoured by the fast path (checked in a child)", function()
  local lua = arg and arg[-1] or "lua5.4"
  local cpath = package.cpath:gsub("'", "")
  local code = "package.cpath = '" .. cpath .. "' local kjit = require 'kjit' " ..
    "local f = kjit.jit(function(a, b) return a + b end) f(1, 2) " ..
    "local n = f:native('(i64, i64)') " ..
    "local ok1, e1 = pcall(f, 1, {}) local ok2, e2 = pcall(n, 1, {}) " ..
    "io.write(tostring(ok1), ' ', tostring(ok2), ' ', tostring(f(1, 2)), ' ', tostring(n(1, 2)))"
  local p = io.popen("KJIT_DISABLE_JIT=1 " .. lua .. " -e \"" .. code .. "\" 2>&1")
  local out = p:read("a")
  p:close()
  -- interpreted: a table operand raises the VM's arithmetic error
  eq(out, "false false 3 3", "child output")
end)

test("native: an upvalue replaced with the debug library is refused, never trusted", function()
  local f = kjit.jit(add)
  local n = f:native("(i64, i64)")
  local other = kjit.jit(function(a, b) return a - b end):native("(i64, i64)")
  eq(debug.getupvalue(other, 1) ~= nil, true, "one upvalue")
  -- a light userdata (debug.upvalueid) is refused before any read
  for _, v in ipairs({ io.stdout, kjit.zeros(8), f, 42, debug.upvalueid(other, 1),
                       select(2, debug.getupvalue(other, 1)) }) do
    local m = f:native("(i64, i64)")
    debug.setupvalue(m, 1, v)
    local ok, r = pcall(m, 5, 3)
    if ok then
      -- another native function's box: a real one, kept alive by m now
      eq(r, 2, "the other box's function")
    else
      truthy(tostring(r):find("upvalue was replaced", 1, true), tostring(r))
    end
  end
  eq(n(5, 3), 8, "the original is untouched")
  -- the jit object's own __call, handed a light userdata: a type error
  local call = debug.getmetatable(f).__call
  local ok, err = pcall(call, debug.upvalueid(other, 1), 5, 3)
  eq(ok, false, "light userdata as the jit object")
  truthy(tostring(err):find("kjit.jit", 1, true), tostring(err))
end)

test("stack reads: on where the probe agreed, off when KJIT_NO_STACK_READS is set", function()
  if NO_STACK_READS then
    eq(kjit.stack_reads, "off: KJIT_NO_STACK_READS is set")
  else
    -- every Lua this suite runs with (Debian's 5.4, 5.4.8 from source) has
    -- the layout lua_stack.h assumes: the probe must agree there
    eq(kjit.stack_reads, "on", "the probe's verdict")
  end
end)

test("the extremes of every subtype, on f and native, in every position", function()
  local function pass4(a, b, c, d) return d, c, b, a end
  local f = kjit.jit(pass4)
  local sigs = { "(i64, i64, i64, i64)", "(f64, f64, f64, f64)", "(i64, f64, i64, f64)",
                 "(bool, i64, f64, bool)" }
  local vals = { math.mininteger, math.maxinteger, -1, 0, 0.0, -0.0, 0/0, 1/0, -1/0, 2^63,
                 -2^63, 5e-324, true, false }
  for _, sig in ipairs(sigs) do
    local n = f:native(sig)
    for _, v in ipairs(vals) do
      for pos = 1, 4 do
        local args = { 1, 2.5, 3, 4.5 }
        args[pos] = v
        agree(f, pass4, sig .. " f pos " .. pos .. " " .. tostring(v), table.unpack(args, 1, 4))
        agree(n, pass4, sig .. " native pos " .. pos .. " " .. tostring(v), table.unpack(args, 1, 4))
      end
    end
  end
end)

test("too few, too many, nil-padded arguments on both paths", function()
  local function count(a, b) if b == nil then return a end return a + b end
  local f = kjit.jit(count)
  local n = f:native("(i64, i64)")
  for _, h in ipairs({ f, n }) do
    agree(h, count, "two", 1, 2)
    agree(h, count, "one", 1)
    agree(h, count, "nil second", 1, nil)
    agree(h, count, "two and nils", 1, 2, nil, nil)
    agree(h, count, "two again", 1, 2)
  end
  local many = {}
  for i = 1, 300 do many[i] = i end
  for _, h in ipairs({ f, n }) do
    local m = raises("too many arguments to a kjit function", function() return h(table.unpack(many)) end)
    truthy(m:find(THIS, 1, true), "the caller's line in: " .. m)
  end
  eq(n(1, 2), 3, "still bound after the errors")
end)

test("arrays of other dtypes and ranks where the bound one is expected", function()
  local function first(x) return x[1] end
  local function len(x) return #x end
  local fl = kjit.jit(len)
  local ff = kjit.jit(first)
  local nl = { fl:native("(i32[:, :])"), fl:native("(f64[:])"), fl:native("(u8[:, :, :])") }
  local nf = { ff:native("(f64[:])"), ff:native("(i64[:])"), ff:native("(f32[:])") }
  local arrays = { kjit.array({ 1.5, 2 }, "f64"), kjit.array({ 1, 2 }, "i32"), kjit.array({ 7, 8, 9 }, "i64"),
                   kjit.array({ 0.5, 2 }, "f32"), kjit.zeros({ 2, 3 }, "i32"), kjit.zeros({ 4, 3 }, "f64"),
                   kjit.zeros({ 5, 2, 2 }, "u8"), kjit.array({ 3, 4 }, "u8"),
                   kjit.array({ 1, 2, 3, 4 }, "f64"):slice(2, 3) }
  for round = 1, 2 do
    for i, a in ipairs(arrays) do
      for k, h in ipairs(nl) do agree(h, len, "len native " .. k .. " array " .. i .. " round " .. round, a) end
      agree(fl, len, "len f array " .. i, a)
      if a.ndim == 1 then
        for k, h in ipairs(nf) do agree(h, first, "first native " .. k .. " array " .. i, a) end
        agree(ff, first, "first f array " .. i, a)
      end
    end
  end
end)

test("userdata of other kinds (0, 1, 2 user values, small, large) are not arrays", function()
  local f = kjit.jit(function(x) return #x end)
  local n = f:native("(f64[:])")
  eq(n(kjit.zeros(4)), 4)
  local others = { io.stdout, io.stderr, f, n and select(2, debug.getupvalue(n, 1)) }
  local cuda = kjit.cuda
  if cuda and cuda.simulate then
    cuda.simulate(true)
    others[#others + 1] = cuda.device_array(3, "f64")
    if cuda.dim3 then others[#others + 1] = cuda.dim3(1, 2, 3) end
  end
  for i, u in ipairs(others) do
    truthy(type(u) == "userdata", "a userdata " .. i)
    for _, h in ipairs({ f, n }) do
      local ok, m = pcall(h, u)
      truthy(not ok, "userdata " .. i .. " refused")
      truthy(tostring(m):find("argument #1 is a", 1, true) or tostring(m):find("attempt to get length", 1, true),
             "userdata " .. i .. ": " .. tostring(m))
    end
    eq(n(kjit.zeros(2)), 2, "an array after userdata " .. i)
  end
end)

test("deep and moving stacks, coroutines, pcall: the arguments are the caller's", function()
  local f = kjit.jit(add)
  local n = f:native("(i64, f64)")
  -- recursion deep enough for the Lua stack to be reallocated (moved)
  -- between calls: every level calls both at a different stack depth
  local function deep(k)
    if k == 0 then return 0 end
    local a, b = n(k, 0.5), f(k, 0.25)
    eq(a, k + 0.5, "native at depth " .. k)
    eq(b, k + 0.25, "f at depth " .. k)
    return deep(k - 1) + 1
  end
  eq(deep(3000), 3000)
  -- another Lua thread: its own stack
  local co = coroutine.wrap(function(x)
    local y = coroutine.yield(n(x, 1.5))
    return f(y, 2.5), n(y, -0.0)
  end)
  eq(co(1), 2.5)
  local r1, r2 = co(4)
  eq(r1, 6.5); eq(r2, 4.0)
  -- through pcall and as a metamethod
  local ok, v = pcall(n, 2, 0.5)
  eq(ok, true); eq(v, 2.5)
  local t = setmetatable({}, { __call = function(_, a, b) return n(a, b) end })
  eq(t(3, 0.5), 3.5)
  -- with a count hook running
  local hits = 0
  debug.sethook(function() hits = hits + 1 end, "", 1)
  for i = 1, 100 do eq(n(i, 0.5), i + 0.5) end
  debug.sethook()
  truthy(hits > 0, "the hook ran")
end)

test("a probe that disagrees turns the direct reads off; calls still agree (in a child)", function()
  local lua = arg and arg[-1] or "lua5.4"
  local cpath = package.cpath:gsub("'", "")
  local code = "package.cpath = '" .. cpath .. "' local kjit = require 'kjit' " ..
    "local f = kjit.jit(function(a, b) return a + b end) " ..
    "local n = f:native('(i64, f64)') local x = kjit.array({1, 2}, 'f64') " ..
    "local g = kjit.jit(function(x) return x[2] end) " ..
    "local t = tostring io.write(kjit.stack_reads, '|', t(f(1, 2)), ' ', t(n(1, 2.5)), ' ', t(n(1, 2)), ' ', " ..
    "t(g(x)), ' ', t(g(x)))"
  -- the skew makes the probe read every argument one slot off
  local p = io.popen("KJIT_NO_STACK_READS=0 KJIT_TEST_PROBE_SKEW=1 " .. lua .. " -e \"" .. code .. "\" 2>&1")
  local out = p:read("a")
  p:close()
  eq(out, "off: the probe read the stack differently from the Lua API|3 3.5 3 2.0 2.0", "child output")
end)
