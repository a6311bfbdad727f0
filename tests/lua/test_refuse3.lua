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

test("arrays of records: identity too", function()
  local P = kjit.struct{ { "x", "f64" } }
  local Q = kjit.struct{ { "y", "f64" } }
  local ps = kjit.zeros(2, P)
  check(function(a) return a == a, a ~= a end, ps)
  check(function(a, b) return a == b end, ps, kjit.zeros(2, Q))
  check(function(a, b) return a == b, a ~= b end, ps, kjit.zeros(2, P))
  check(function(a, b) return a == b, a ~= b end, ps, ps)
  check(function(a, t) return t.p == a, a == t.q end, ps, { p = ps, q = kjit.zeros(2, P) })
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

test("a metamethod that cannot be called: the VM's error, located, naming it", function()
  local function mt(ev) return setmetatable({}, { [ev] = 5 }) end
  check_error("attempt to call a number value (metamethod 'add')", function(t) return t + 1 end, mt("__add"))
  check_error("attempt to call a number value (metamethod 'sub')", function(t) return 2 - t end, mt("__sub"))
  check_error("attempt to call a number value (metamethod 'unm')", function(t) return -t end, mt("__unm"))
  check_error("attempt to call a number value (metamethod 'band')", function(t) return t & 1 end, mt("__band"))
  check_error("attempt to call a number value (metamethod 'lt')", function(t) return t < t end, mt("__lt"))
  check_error("attempt to call a number value (metamethod 'le')", function(t, u) return t <= u end, mt("__le"), {})
  check_error("attempt to call a number value (metamethod 'eq')", function(t, u) return t == u end, mt("__eq"), {})
  -- a metamethod that is a table with __call runs, as interpreted
  local callable = setmetatable({}, { __call = function(_, a, b) return 42 end })
  check(function(t) return t + 1, t < t end, setmetatable({}, { __add = callable, __lt = callable }))
end)

test("an __index loop: the interpreter's words, located", function()
  local loop = {}
  setmetatable(loop, { __index = loop, __newindex = loop })
  check_error("chain too long", function(t) return t.x end, setmetatable({}, { __index = loop }))
  check_error("chain too long", function(t) t.x = 1 end, setmetatable({}, { __newindex = loop }))
end)

-- ---- coroutines around compiled code ----------------------------------------

test("a function value that yields: the VM's error, at the caller's line, with advice", function()
  local f = kjit.jit(function(t, x)
    local a = t.g(x)
    return a + 1
  end)
  local line = debug.getinfo(1, "l").currentline - 3   -- the line of t.g(x)
  local t = { g = function(x) return coroutine.yield(x) end }
  local ok, err = pcall(coroutine.wrap(function() return f(t, 1) end))
  assert(not ok)
  local want = "test_refuse3.lua:" .. line .. ": attempt to yield across a C-call boundary ("
  assert(tostring(err):find(want, 1, true), err)
  assert(tostring(err):find("yield in an interpreted function", 1, true), err)
  -- on the main thread: the interpreter's own error, unlocated in both
  check_error("attempt to yield from outside a coroutine", function(t, x) local a = t.g(x) return a + 1 end, t, 1)
  -- other errors in a coroutine come through unchanged: values, positions
  local co = coroutine.wrap(function() return f({ g = function() error({ code = 7 }) end }, 1) end)
  local ok2, e2 = pcall(co)
  assert(not ok2 and type(e2) == "table" and e2.code == 7)
  local interp = function(t, x) local a = t.g(x) return a + 1 end
  local bad = { g = function() error("boom") end }
  local _, ei = pcall(coroutine.wrap(function() return interp(bad, 1) end))
  local _, ec = pcall(coroutine.wrap(function() return kjit.jit(interp)(bad, 1) end))
  assert(ei == ec, tostring(ei) .. " / " .. tostring(ec))
end)

test("a coroutine.wrap generator called from compiled code, and compiled code inside a coroutine", function()
  local function gen() return coroutine.wrap(function() for i = 1, 5 do coroutine.yield(i * 1.5) end end) end
  -- (each run gets a generator of its own)
  local function sum3(t) local s = 0 for _ = 1, 3 do s = s + t.g() end return s end
  local function two(g) return g() + g() end
  local a, b = sum3({ g = gen() }), kjit.jit(sum3)({ g = gen() })
  assert(a == b and math.type(a) == math.type(b) and a == 9.0, tostring(b))
  assert(two(gen()) == kjit.jit(two)(gen()))
  -- a compiled function called between yields of an interpreted coroutine
  local sq = kjit.jit(function(x) return x * x end)
  local co = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(sq(i)) end end)
  assert(co() == 1 and co() == 4 and co() == 9)
end)

test("coroutine and debug functions in compiled code: refused, located, with advice", function()
  local e1 = refused(function() return coroutine.isyieldable() end)
  assert(e1:find("call them in an interpreted function around the compiled one", 1, true), e1)
  local e2 = refused(function() return debug.traceback("x") end)
  assert(e2:find("debug.traceback's results in", 1, true), e2)
  local e3 = refused(function(x) coroutine.yield(x) return x end, 1)
  assert(e3:find("yield there, between its calls", 1, true), e3)
end)

-- ---- parallel prange: what to do instead -----------------------------------------

test("Lua values and library calls in a parallel prange loop: refused, saying what to hoist", function()
  local par = { parallel = true }
  local function refused_par(words, fn, ...)
    local ok, err = pcall(kjit.jit(fn, par), ...)
    assert(not ok)
    err = tostring(err)
    assert(err:find("test_refuse3.lua:%d+: compile error"), err)
    for _, w in ipairs(words) do assert(err:find(w, 1, true), w .. " not in: " .. err) end
  end
  local out = kjit.zeros(8)
  refused_par({ "reading field 'x' of a table cannot run inside a parallel kjit.prange loop",
                "Hoist it out of the loop", "`local x = t.x`", "plain for loop" },
              function(t, o) for i in kjit.prange(1, #o) do o[i] = t.x end end, { x = 1 }, out)
  refused_par({ "calling a function value", "call the function before or after it" },
              function(t, o) local f = t.f for i in kjit.prange(1, #o) do o[i] = f(i) end end,
              { f = function(i) return i end }, out)
  refused_par({ "making a table" }, function(o) for i in kjit.prange(1, #o) do local t = { i } o[i] = t[1] end end, out)
  refused_par({ "comparing two arrays ('==')" },
              function(o, p) for i in kjit.prange(1, #o) do if o == p then o[i] = 1 end end end, out, kjit.zeros(8))
  refused_par({ "math.random cannot run inside a kjit.prange loop", "Hoist it out of the loop (call it before or after" },
              function(o) for i in kjit.prange(1, #o) do o[i] = math.random() end end, out)
  refused_par({ "reduction variable 's'", "Hoist the reads out of the loop" },
              function(t, o) local s = 0 for i in kjit.prange(1, #o) do s = s + t.w end return s end, { w = 2 }, out)
  -- the same loops without parallel = true compile and run as interpreted
  check(function(t, o) for i in kjit.prange(1, #o) do o[i] = t.x end return o[3] end, { x = 1.5 }, kjit.zeros(4))
  check(function(o, p) local c = 0 for i in kjit.prange(1, #o) do if o == p then c = c + 1 end end return c end,
        out, out)
end)

-- ---- dtype objects beside Lua values --------------------------------------------

test("t.x .. kjit.f32: t.x's __concat first, else the dtype object's, as interpreted", function()
  local C = setmetatable({}, { __concat = function(a, b) return "C(" .. type(a) .. "," .. tostring(b) .. ")" end })
  local function cat(t) return t.x .. kjit.f32 end
  check(cat, { x = "a" })
  check(cat, { x = 1.5 })
  check(cat, { x = 3 })
  check(cat, { x = C })
  check(function(t) return "p" .. t.x .. kjit.f32 end, { x = C })
  check(function(t) return "<" .. t.x .. kjit.i64 .. ">" end, { x = 7 })
  check(function(t) return t .. kjit.u8 end, C)
  check_error("attempt to concatenate a nil value", cat, {})
  check_error("attempt to concatenate a table value", cat, { x = {} })
  check_error("attempt to concatenate a boolean value", cat, { x = true })
  -- right of a Lua value the object's own __concat runs first
  check_error("attempt to concatenate a table value", function(t) return kjit.f32 .. t.x end, { x = C })
  check(function(t) return kjit.f32 .. t.x end, { x = "s" })
end)

-- ---- arrays of records as Lua values ------------------------------------------

test("arrays of records stored in tables, passed to and returned from function values", function()
  local P = kjit.struct{ { "x", "f64" }, { "y", "i32" } }
  local function ps3() local p = kjit.zeros(3, P); p[2].x = 5; p[3].y = -4 return p end
  -- an argument stored into a table: the same array (rawequal), its records readable
  check(function(t, ps) t.ps = ps return rawequal(t.ps, ps), t.ps[2].x, #t.ps end, {}, ps3())
  -- made in compiled code, stored, read back, returned inside a table
  check(function(t, n)
    local q = kjit.zeros(n, P)
    q[1].y = 7
    t.q = q
    t.q[2].x = 1.5
    return t.q[1].y, #t.q, q[2].x
  end, {}, 3)
  local r = kjit.jit(function(n) local q = kjit.zeros(n, P) q[2].x = 3 return { q, k = q } end)(2)
  assert(rawequal(r[1], r.k) and r[1][2].x == 3.0 and #r[1] == 2)
  -- passed to a function value, returned from one
  local ps = ps3()
  check(function(t, p) return t.f(p) end, { f = function(p) return p[2].x + #p end }, ps)
  check(function(t) local q = t.g() return q[1].x, #q end,
        { g = function() local q = kjit.zeros(2, P) q[1].x = 9 return q end })
  check(function(t, p) return t.f(p, p[3]) end, { f = function(p, r) return rawequal(p, p), r.y end }, ps)
  -- one record (a view) and a slice as values
  check(function(t, p) t.r = p[2] return t.r.x, t.r.y end, {}, ps)
  check(function(t, p) t.s = p:slice(2, 3) return t.s[1].x, #t.s, t.s[2].y end, {}, ps)
  -- in a table constructor, and a write through the table seen by the caller
  check(function(p) local t = { p, n = #p } t[1][1].x = 2.5 return t[1][1].x, p[1].x, t.n end, ps3())
end)

test("a record array held by a table, written in a loop through the table", function()
  local P = kjit.struct{ { "x", "f64" }, { "v", "f64" } }
  local function step(world, dt)
    local ps = world.particles
    for i = 1, #ps do ps[i].x = ps[i].x + ps[i].v * dt end
    world.steps = (world.steps or 0) + 1
    return world.particles[#ps].x
  end
  local function mk()
    local ps = kjit.zeros(4, P)
    for i = 1, 4 do ps[i].v = i end
    return { particles = ps }
  end
  local w1, w2 = mk(), mk()
  local f = kjit.jit(step)
  for _ = 1, 3 do assert(step(w1, 0.5) == f(w2, 0.5)) end
  for i = 1, 4 do assert(w1.particles[i].x == w2.particles[i].x) end
  assert(w1.steps == w2.steps)
end)

-- ---- dtype objects as arguments ---------------------------------------------------

test("kjit.f32 passed to a compiled function: a specialization per dtype", function()
  local function mk(n, d)
    local a = kjit.zeros(n, d)
    a[1] = 2
    return tostring(d), a.dtype, a[1], "<" .. d .. ">", d == kjit.f32, rawequal(d, kjit.f32), #a
  end
  check(mk, 2, kjit.f32)
  check(mk, 3, kjit.i32)
  check(mk, 2, kjit.f32)   -- the f32 specialization again
  check(mk, 1, kjit.u8)
  check_error("number has no integer representation", function(d) local a = kjit.zeros(1, d) a[1] = 2.5 end, kjit.i64)
  -- returned and stored: the object itself
  check(function(d, t) t.d = d return d, t.d == d end, kjit.f64, {})
  local same = kjit.jit(function(d) return d end)
  assert(rawequal(same(kjit.f64), kjit.f64) and rawequal(same(kjit.bool), kjit.bool))
  -- passed on to a compiled callee, which is specialized on it too
  local function g(d, n) return tostring(d), kjit.zeros(n, d).dtype end
  check(function(n) local a, b = g(kjit.i32, n) local c, e = g(kjit.f32, n) return a, b, c, e end, 2)
  check(function(d, n) return g(d, n) end, kjit.u16, 2)
end)

-- ---- function values compiled with their caller's options ----------------------

test("a Lua function called as a value compiles with its caller's options", function()
  local testing = require "kjit.testing"
  local old = testing.callees("all")
  local function count() return select(2, testing.callees()) end
  local function work(a, n) local s = 0 for i = 1, n do s = s + a[i] * i end return s end
  local t = { f = work }
  local A = kjit.full(8, 1.5)
  local plain = kjit.jit(function(t, a) return t.f(a, 8) end)
  local nobc = kjit.jit(function(t, a) return t.f(a, 8) end, { boundscheck = false })
  local fm = kjit.jit(function(t, a) return t.f(a, 8) end, { fastmath = true })
  local c0 = count()
  assert(plain(t, A) == work(A, 8) and count() == c0 + 1)
  assert(plain(t, A) == work(A, 8) and count() == c0 + 1)   -- compiled once for these options
  assert(nobc(t, A) == work(A, 8) and count() == c0 + 2)    -- once more for boundscheck = false
  assert(nobc(t, A) == work(A, 8) and count() == c0 + 2)
  assert(fm(t, A) == work(A, 8) and count() == c0 + 3)      -- and for fastmath = true
  assert(plain(t, A) == work(A, 8) and count() == c0 + 3)
  -- the default caller's callee keeps its bounds checks: the interpreter's error
  check_error("out of bounds", function(t, a) return t.f(a, 8) end, t, kjit.full(4, 1.5))
  testing.callees(old)
end)

test("several arrays, strings and functions passed to one function value: each its own", function()
  -- (two arrays once shared one boxing slot: the callee got the second twice)
  local t = { f = function(a, b, c, d) return a[1], b[1], rawequal(a, b), c, d end }
  local A, B = kjit.full(2, 1.0), kjit.full(2, 2.0)
  check(function(t, a, b) return t.f(a, b, "s", 3) end, t, A, B)
  check(function(t, n) local a, b = kjit.full(n, 1.0), kjit.full(n, 2.0) return t.f(a, b, a, b) end, t, 2)
  local sq = function(x) return x * x end
  check(function(t, a) return t.f(a, sq, a, "x") end, { f = function(a, g, b, s) return g(a[1]) + #b, s end }, A)
  -- past four such arguments: refused, saying what to do
  local err = refused(function(t, a) return t.f(a, a, a, "s", a) end, { f = print }, A)
  assert(err:find("pass the rest in a table", 1, true), err)
end)

test("function values taking arrays of records or functions compile too (keyed by identity)", function()
  local testing = require "kjit.testing"
  local old = testing.callees("all")
  local function count() return select(2, testing.callees()) end
  local P = kjit.struct{ { "x", "f64" }, { "v", "f64" } }
  local Q = kjit.struct{ { "v", "f64" }, { "x", "f64" } }   -- another layout: another specialization
  local function move(ps, dt)
    local s = 0
    for i = 1, #ps do ps[i].x = ps[i].x + ps[i].v * dt s = s + ps[i].x end
    return s
  end
  local function apply(g, a, n) local s = 0 for i = 1, n do s = s + g(a[i]) end return s end
  local lib = { move = move, apply = apply }
  local function mk(R) local p = kjit.zeros(3, R) for i = 1, 3 do p[i].v = i p[i].x = 10 * i end return p end
  local c0 = count()
  T.check(function(t, ps) return t.move(ps, 0.5) end, function() return lib, mk(P) end)
  local c1 = count()
  assert(c1 > c0, "compiled")
  T.check(function(t, ps) return t.move(ps, 0.5) end, function() return lib, mk(Q) end)
  assert(count() > c1, "compiled again for the other layout")
  local sq = function(x) return x * x end
  local A = kjit.full(4, 1.5)
  check(function(t, g, a) return t.apply(g, a, #a) end, lib, sq, A)
  check(function(t, g, a) return t.apply(g, a, #a) end, lib, math.sqrt, A)
  check_error("bad 1.5", function(t, g, a) return t.apply(g, a, #a) end, lib,
              function(x) error("bad " .. x) end, A)
  testing.callees(old)
end)
