-- test_seams.lua: differential tests where separately built features meet
-- (records with strings as Lua values, function values, made arrays,
-- export, the libraries). The interpreted function is the specification.
local D = require "difftest"
local kjit = D.kjit
local P = kjit.struct{ {"x", "f64"}, {"v", "f64"} }

test("a record indexed with a string value: refused at compile time, not raised", function()
  -- interpreted, r[k] with k == "x" reads the field; compiled code needs
  -- the name in the source, so it refuses (a compile error), never raises
  -- buffer.c's "indexed by field names" at a call that would succeed
  for _, f in ipairs{
    function(p, k) return p[1][k] end,
    function(p, k) p[1][k] = 1 end,
    function(p, t) return p[1][t.k] end,
  } do
    local ok, e = pcall(kjit.jit(f), kjit.zeros(3, P), "x")
    assert(not ok and e:find("compile error", 1, true) and e:find("named by a string value", 1, true), e)
  end
  -- keys that are not strings still raise as interpreted
  D.check_error("indexed by field names, not with a number", function(p, k) return p[1][k] end,
                kjit.zeros(3, P), 1)
  D.check_error("indexed by field names, not with a boolean", function(p, k) p[1][k] = 2 end,
                kjit.zeros(3, P), true)
end)

test("an array of records indexed with a string value raises record.c's words", function()
  D.check_error("has no field", function(p, k) return p[k] end, kjit.zeros(3, P), "x")
  D.check_error("has no field", function(p, t) return p[t.k] end, kjit.zeros(3, P), { k = "x" })
  D.check_error("cannot assign", function(p, t) p[t.k] = p[1] end, kjit.zeros(3, P), { k = "x" })
  D.check_error("cannot assign", function(p, t) p[t.k] = p[1] end, kjit.zeros(3, P), { k = "shape" })
  D.check_error("has no field", function(p, t) return p[t.k] end, kjit.zeros(3), { k = "x" })
end)

test("f:export refuses code bound to this process: assigned upvalues, ...", function()
  -- a made array of records: its layout travels with the code, which
  -- reads the layout's number from a global the loader fills (in another
  -- process test_export.lua checks it)
  local mk = kjit.jit(function(n) local p = kjit.zeros(n, P); p[1].x = 2; return p end)
  eq(mk(3)[1].x, 2.0)
  eq(kjit.load(mk:export("(i64)"))(3)[1].x, 2.0)
  local cp = kjit.jit(function(p) return p:copy() end)
  local src = kjit.zeros(2, P)
  src[2].x = 5
  eq(kjit.load(cp:export("(record[:])", P))(src)[2].x, 5.0)
  local ok, e
  -- an assigned upvalue is a variable of this process: the loaded code
  -- had no upvalue to write (it raised "arithmetic on a nil value")
  local cnt = 0
  local bump = kjit.jit(function(n) cnt = cnt + n; return cnt end)
  eq(bump(2), 2)
  ok, e = pcall(bump.export, bump, "(i64)")
  assert(not ok and e:find("test_seams.lua:%d+: .*f:export: this function assigns an upvalue"), e)
  -- registry references of this process: a frozen C function called, a
  -- table of non-numbers indexed by a computed key, a function value's
  -- trampoline (exported, they named whatever the loading process held
  -- under the same number)
  -- (select('#', ...) is compiled in place now: utf8.char is not)
  local sel, W = utf8.char, { "a", "bb", "ccc" }
  for _, c in ipairs{
    { function(n) return sel(n + 64) end, "(i64)", "calls utf8.char %(a C function%), which kjit does not compile" },
    { function(n) return #W[n] end, "(i64)", "indexes a table upvalue or global with a computed key" },
    { function(t, n) return t.f(n) end, nil, "calls a function value through a Lua function" },
  } do
    local f = kjit.jit(c[1])
    if c[2] then eq(f(2), c[1](2)) else eq(f({ f = math.abs }, -2), 2) end
    ok, e = pcall(f.export, f, c[2])   -- (no signature: the last one used)
    assert(not ok and e:find("test_seams.lua:%d+: .*f:export: this function " .. c[3]), e)
  end
  -- C functions of Lua that compiled code calls through the Lua state:
  -- the message names them and what to do (was: "calls a C function that
  -- kjit does not compile")
  for _, c in ipairs{
    { function(t) local s = 0 for _, v in pairs(t) do s = s + v end return s end, "pairs",
      "or loop over arrays with a numeric for" },
    { function(t) local _, v = next(t) return v end, "next", "or loop over arrays with a numeric for" },
    { function(t) local ok = pcall(error, "x") return ok end, "pcall", "pass in what it gives%)" },
    { function(t) local m = getmetatable(t) return m and 1 or 0 end, "getmetatable", "pass in what it gives%)" },
  } do
    local f = kjit.jit(c[1])
    eq(f({ 5 }), c[1]({ 5 }), c[2] .. " runs compiled")
    ok, e = pcall(f.export, f)
    assert(not ok and e:find("test_seams.lua:%d+: .*f:export: this function calls " .. c[2] ..
      " %(a C function%), which kjit does not compile: compiled code calls it through this " ..
      "process's Lua state, which exported code cannot take along %(call it outside the " ..
      "exported function and .*" .. c[3]), e)
  end
  -- views of the arguments return with their layout (kjit.load'ed here)
  local v = kjit.load(kjit.jit(function(p) return p[2], p:slice(2, 3) end):export("(record[:])", P))
  local p = kjit.zeros(3, P); p[2].x = 5
  local r, s = v(p)
  eq(r.x, 5.0); eq(#s, 2); eq(s[1].x, 5.0); truthy(s.dtype == P)
end)

test("an array of records made by compiled code, given to kjit.blas / kjit.fft: a clear refusal", function()
  local mk = kjit.jit(function(n) return kjit.zeros(n, P) end)
  local p = mk(4)
  -- (was: "x must be a kjit array, got kjit.array" / "a kjit array expected, got userdata")
  raises("kjit.blas.dot: x is an array of records; BLAS takes f32 or f64 arrays", kjit.blas.dot, p, p)
  raises("kjit.blas.axpy: x is an array of records", kjit.blas.axpy, 1.0, p, kjit.zeros(4))
  if kjit.fft then
    raises("a kjit array of numbers expected, got an array of records", kjit.fft.fft, p)
  end
  local g = kjit.random.generator{ seed = 1 }
  raises("uniform: argument #1: a kjit array of numbers expected, got an array of records",
         g.uniform, g, p)
  -- in compiled code (since refuse3: an array of records is a Lua value) the
  -- library's own error, at the line, as interpreted
  local f = function(q) return kjit.blas.dot(q, q) end
  local ok, e = pcall(kjit.jit(f), p)
  local ok2, e2 = pcall(f, p)
  assert(not ok and not ok2 and e == e2, tostring(e) .. " / " .. tostring(e2))
end)

test("a parallel prange body that assigns an upvalue or calls a function value: refused, saying why", function()
  local cnt = 0
  local inc = function() cnt = cnt + 1 end
  for _, f in ipairs{
    function(n) for _ in kjit.prange(1, n) do cnt = cnt + 1 end return cnt end,
    function(n) for _ in kjit.prange(1, n) do inc() end return cnt end,
  } do
    local ok, e = pcall(kjit.jit(f, { parallel = true }), 1000)
    assert(not ok and e:find("test_seams.lua:%d+: .*cannot run inside a parallel kjit.prange loop .*Hoist it out of the loop"), e)
    eq(cnt, 0, "nothing ran")
  end
  -- without parallel = true the loop runs in order, as interpreted
  local function make()
    local s = 0
    local g = function(i) s = s + i * i end
    return function(n) for i in kjit.prange(1, n) do g(i) end; s = s + 1; return s end
  end
  local fi, fc = make(), kjit.jit(make())
  eq(fc(100), fi(100)); eq(fc(7), fi(7))
end)

test("a callable table (__call) read from an upvalue or a global is called, as interpreted", function()
  local acc = { n = 2 }
  local scale = setmetatable({ k = 10 }, { __call = function(self, x) return x * self.k, "s" end })
  CALLABLE_G = setmetatable({}, { __call = function(_, a, b) return a - b end })
  D.check(function(n) local a = scale(n); return a end, 3)
  D.check(function(n) local s = 0; for i = 1, n do s = s + scale(i) + CALLABLE_G(i, 1) end; return s end, 5)
  D.check(function(n) local a, b = scale(n); return b, a + scale.k + acc.n end, 4)   -- its fields too
  local bad = setmetatable({}, { __call = function(_, x) if x > 2 then error("too big: " .. x) end return x end })
  D.check_error("too big: 3", function(n) local s = 0; for i = 1, n do s = s + bad(i) end; return s end, 3)
  -- only read (never called), it stays frozen: a parallel loop may read it
  local cfg = setmetatable({ k = 3 }, { __call = function() end })
  D.check_opts({ parallel = true }, function(a) for i in kjit.prange(1, #a) do a[i] = cfg.k * i end end,
               kjit.zeros(100))
  -- a table without __call still raises as interpreted
  local plain = {}
  D.check_error("attempt to call a table value", function(n) return plain(n) end, 3)
  CALLABLE_G = nil
end)

test("a dtype read from a table argument: refused, saying the dtype must be known", function()
  local t = { P = P, d = "f32" }
  for _, f in ipairs{
    function(tt, n) return kjit.zeros(n, tt.P) end,
    function(tt, n) return kjit.empty(n, tt.d) end,
    function(tt, n) return kjit.full(n, 1, tt.d) end,
  } do
    eq(#f(t, 2), 2)   -- interpreted
    local ok, e = pcall(kjit.jit(f), t, 2)
    assert(not ok and e:find("test_seams.lua:%d+: compile error .*the dtype %(argument #%d%) must be known when compiling"), e)
  end
end)

test("f:export of a function making an escaping closure: refused as such, not as an assigned upvalue", function()
  -- (luatab's closures hold their maker's registry reference in the
  -- instruction's upvidx: read as an assigned upvalue, the message named
  -- one the function does not have)
  for _, c in ipairs{
    { function(k) return function(x) return x * k end end, function(f) return f(2) end },
    { function(k) local t = { f = function(x) return x + k end } return t end, function(t) return t.f(2) end },
    { function(...) local n = select('#', ...) return function() return n end end, function(f) return f() end },
  } do
    local f = kjit.jit(c[1])
    eq(c[2](f(3)), c[2](c[1](3)))
    local ok, e = pcall(f.export, f)
    assert(not ok and e:find("test_seams.lua:%d+: .*f:export: this function makes a function literal that escapes"), e)
  end
end)

test("a prange reduction over values read from a table: refused naming them, not 'it is value'", function()
  local f = function(a, t) local s = 0 for i in kjit.prange(1, #a) do s = s + a[i] * t.w end return s end
  eq(f(kjit.full(4, 1.0), { w = 2 }), 8.0)   -- interpreted
  local ok, e = pcall(kjit.jit(f, { parallel = true }), kjit.full(4, 1.0), { w = 2 })
  assert(not ok and e:find("test_seams.lua:%d+: compile error .*reduction variable 's' must be a number, but it takes Lua values"), e)
  assert(not e:find("it is value", 1, true), e)
end)

test("select in a function a kernel calls: refused saying kernels call no C function of Lua", function()
  -- (the message was the CPU's, about the coroutine and debug functions)
  local function sum(...) local s = 0 for i = 1, select('#', ...) do s = s + select(i, ...) end return s end
  local k = function(r, x) local i = kjit.cuda.grid(1) if i <= #r then r[i] = sum(x[i], 1.0) end end
  local ok, e = pcall(kjit.cuda.compile_ptx, k, "(f32[:], f32[:])")
  assert(not ok and e:find("test_seams.lua:%d+: compile error .*global 'select' is a C function: a cuda.jit kernel has no Lua state"), e)
  assert(not e:find("coroutine", 1, true), e)
  -- '...' itself works there (taken into locals), on the CPU as interpreted
  local function sum2(...) local a, b = ... return a + b end
  local k2 = function(r, x) local i = kjit.cuda.grid(1) if i <= #r then r[i] = sum2(x[i], 1.0) end end
  truthy(type((kjit.cuda.compile_ptx(k2, "(f32[:], f32[:])"))) == "string")
end)

test("an escaping vararg literal given values counted when the call runs gets them all", function()
  -- (closures2's direct call of an escaping literal meets luamv's values of
  -- varying number: compiled directly, the literal was specialized on one
  -- value and the call raised "returned other than one value")
  local T = require "tablediff"
  local function g(x) if x > 0 then return x, x + 1 end if x < -1 then return end return x end
  local fns = {
    function(x) local t = table.pack(x, nil, x); local s = 0
      local h = function(...) s = s + select('#', ...) end
      local keep = { h }; h(table.unpack(t, 1, t.n)); return s, #keep end,
    function(x) local h = function(...) return select('#', ...), ... end
      local keep = { h }; local t = { f = g }; return h(t.f(x)) end,
    function(x) local h = function(...) return select('#', ...) end
      local keep = { h }; return h(pcall(g, x)) end,
    function(x) local s = 0; local h = function(...) s = s + select('#', ...); return ... end
      local keep = { h }; return s, h(g(x)) end,
    function(x) local h = function(...) return select('#', ...) end
      local keep = { h }; local k = function(y) local t = { f = g }; return h(t.f(y)) end
      return k(x) end,
  }
  for _, f in ipairs(fns) do
    for _, x in ipairs{ 3, -7, 0, 2.5 } do T.check(f, function() return x end) end
  end
end)
