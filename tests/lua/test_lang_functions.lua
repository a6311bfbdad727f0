-- Differential tests: functions as values in compiled code (issue 29 item
-- 2): upvalues that compiled code assigns (written through to the real
-- upvalue, shared with interpreted code in any order), functions read from
-- tables and called, C functions and callable tables called through the
-- Lua API, function values passed to and returned from compiled functions.
-- The interpreted function is the specification: results with subtypes,
-- the state of tables and upvalues afterwards, errors with file:line.
local T = require "tablediff"
local kjit = require "kjit"

-- U.check(factory, ...): factory() makes a fresh set of closures over fresh
-- upvalues and returns (fn, state), state() giving those upvalues' values
-- as a table. fn runs interpreted on one set and compiled on another with
-- the same arguments; results (or errors) and the state afterwards must
-- agree. Returns the interpreted results.
local function ucheck(factory, ...)
  local fi, si = factory()
  local ir = table.pack(pcall(fi, ...))
  local fc, sc = factory()
  local cr = table.pack(pcall(kjit.jit(fc), ...))
  if ir[1] ~= cr[1] then
    error("interpreted " .. (ir[1] and "returned" or "raised " .. tostring(ir[2])) ..
          ", compiled " .. (cr[1] and "returned" or "raised " .. tostring(cr[2])), 2)
  end
  if not ir[1] then eq(tostring(cr[2]), tostring(ir[2]), "error") end
  if ir[1] then
    eq(cr.n, ir.n, "number of results")
    for k = 2, ir.n do
      local e = T.compare(ir[k], cr[k], {}, {}, "result #" .. (k - 1))
      if e then error(e, 2) end
    end
  end
  local e = T.compare(si(), sc(), {}, {}, "upvalues")
  if e then error(e, 2) end
  return table.unpack(ir, 2, ir.n)
end

test("a seeded generator in an upvalue, called from a compiled loop", function()
  local function factory()
    local seed = 42
    local function rand(n)
      seed = (seed * 16807) % 2147483647
      return seed % n + 1
    end
    return function(n)
      local s = 0
      for _ = 1, n do s = s + rand(100) end
      return s
    end, function() return { seed = seed } end
  end
  ucheck(factory, 1000)
  ucheck(factory, 0)
  -- float state: the subtype follows what is assigned
  ucheck(function()
    local x = 0.5
    local function step() x = 3.9 * x * (1 - x); return x end
    return function(n) local s = 0; for _ = 1, n do s = s + step() end; return s end,
           function() return { x = x } end
  end, 50)
end)

test("interpreted and compiled calls interleaved see one upvalue", function()
  local seed = 7
  local function rand() seed = (seed * 1103515245 + 12345) % 2147483648; return seed end
  local draw = kjit.jit(function(k) local s = 0; for _ = 1, k do s = s + rand() % 1000 end; return s end)
  local got = {}
  got[#got + 1] = draw(3); got[#got + 1] = rand(); got[#got + 1] = draw(2)
  seed = 99                     -- the interpreter assigns: compiled code sees it
  got[#got + 1] = draw(4)
  local after = seed
  -- the same sequence, all interpreted
  seed = 7
  local function idraw(k) local s = 0; for _ = 1, k do s = s + rand() % 1000 end; return s end
  local want = {}
  want[#want + 1] = idraw(3); want[#want + 1] = rand(); want[#want + 1] = idraw(2)
  seed = 99
  want[#want + 1] = idraw(4)
  for i = 1, #want do eq(got[i], want[i], "draw " .. i) end
  eq(after, seed, "the upvalue afterwards")
end)

test("the compiled function's own upvalues, assigned: counters, totals, flags", function()
  ucheck(function()
    local count, total, seen = 0, 0.0, false
    return function(x)
      count = count + 1
      total = total + x
      if x > 10 then seen = true end
      return count, total, seen
    end, function() return { count = count, total = total, seen = seen } end
  end, 12)
  ucheck(function()
    local best = nil
    return function(t)
      for i = 1, #t do if best == nil or t[i] > best then best = t[i] end end
      return best
    end, function() return { best = best } end
  end, { 3, 9.5, 2 })
  -- a table made here, kept in an upvalue
  ucheck(function()
    local last
    return function(x) last = { v = x, w = x * 2 }; return last.w end,
           function() return { last = last } end
  end, 4)
end)

test("a closure that only reads an upvalue another compiled function assigns", function()
  ucheck(function()
    local n = 0
    local function bump() n = n + 2 end
    local function peek() return n end   -- reads only: live, since bump assigns it
    return function(k)
      local s = 0
      for _ = 1, k do bump(); s = s + peek() end
      return s, peek()
    end, function() return { n = n } end
  end, 5)
end)

test("an error after upvalue writes leaves them written", function()
  ucheck(function()
    local n = 0
    return function(t) n = n + 1; local v = t.x * 2; n = n + 10; return v end,
           function() return { n = n } end
  end, {})
end)

test("functions read from tables and called: H.h1(x), obj.f(x), ops[i](a, b)", function()
  -- (the functions are made once: the checker compares them by identity)
  local sq, half = function(x) return x * x end, function(x) return x / 2 end
  local add, mul = function(a, b) return a + b end, function(a, b) return a * b end
  local sub, div = function(a, b) return a - b end, function(a, b) return a / b end
  local two, triple = function(x) return x, x + 1 end, function(self) self.n = self.n * 3 end
  local H = { h1 = function(x) return x * 2 end, h2 = function(x) return x + 0.5 end }
  T.check(function(x) return H.h1(x) + H.h2(x) end, function() return 3 end)
  T.check(function(t, x) local r = t.f(x); return r end,
          function() return { f = sq }, 7 end)
  T.check(function(t, x) return t.f(x) end, function() return { f = half }, 7 end)
  T.check(function(ops, a, b)
    local s = 0
    for i = 1, #ops do s = s + ops[i](a, b) end
    return s
  end, function()
    return { add, mul, sub, div }, 6, 4
  end)
  -- several results, fewer and more than the callee gives
  T.check(function(t, x)
    local a, b = t.f(x)
    local c, d, e = t.f(x)
    return a, b, c, d, e
  end, function() return { f = two }, 2 end)
  -- a callee that writes into a table the caller then reads
  T.check(function(t) t.inc(t); t.inc(t); return t.n end,
          function() return { n = 1, inc = triple } end)
end)

test("method calls through __index classes, and __call", function()
  local Vec = {}
  Vec.__index = Vec
  function Vec.len2(v) return v.x * v.x + v.y * v.y end
  function Vec:scale(k) self.x = self.x * k; self.y = self.y * k; return self end
  T.check(function(v, k) v:scale(k); return v:len2() end,
          function() return setmetatable({ x = 3, y = 4 }, Vec), 2 end)
  local callable = setmetatable({ k = 5 }, { __call = function(self, x) return self.k * x end })
  T.check(function(c, x) local r = c(x); return r end, function() return callable, 3 end)
end)

test("C functions as values: math.cos in a table, passed in, called through a local", function()
  T.check(function(t, x) return t.f(x) end, function() return { f = math.cos }, 0.5 end)
  T.check(function(t, x) local f = t.f; local r = f(x) + f(x + 1); return r end,
          function() return { f = math.sin }, 0.5 end)
  T.check(function(t) local lo, hi = t.f(3, 9, 1); return lo, hi end,
          function() return { f = math.max } end)
  T.check(function(t, x) local r = t.f(x); return r end,
          function() return { f = tostring }, 12 end)
end)

test("function values passed to and returned from compiled functions", function()
  local function apply(f, x) return f(x) end
  local inc, ten, neg = function(x) return x + 1 end, function(x) return x * 10 end, function(x) return -x end
  T.check(function(t, x) return apply(t.f, x) + apply(t.g, x) end,
          function() return { f = inc, g = ten }, 2 end)
  local g = function(x) return x end
  local got = kjit.jit(function(t) return t.f end)({ f = g })
  truthy(got == g, "the same function comes back")
  T.check(function(t) t.h = t.f; return t.h(4) end, function() return { f = neg } end)
end)

test("errors: calling nil and non-functions, errors raised by the callee", function()
  T.check_error("attempt to call a nil value (field 'f')", function(t, x) local r = t.f(x); return r end,
                function() return {}, 1 end)
  T.check_error("attempt to call a number value", function(t) local r = t[1](2); return r end,
                function() return { 5 } end)
  local boom, tbl = function(x) error("boom " .. x) end, function() return {} end
  T.check_error("boom", function(t, x) t.n = 1; local r = t.f(x); t.n = 2; return r end,
                function() return { f = boom }, 3 end)
  T.check_error("attempt to perform arithmetic", function(t, x) local r = t.f(x) + 1; return r end,
                function() return { f = tbl }, 3 end)
  -- error(msg, 2) in the callee names the compiled caller's line; a C
  -- function's luaL_error and luaL_argerror carry the position and the name
  local function check(x) if x < 0 then error("negative", 2) end return x end
  T.check_error("negative", function(t, x) local r = t.check(x); return r end,
                function() return { check = check }, -1 end)
  T.check_error("bad argument #2 to 'rep'", function(t, x)
    local r = t.rep("a", x)
    return r
  end, function() return { rep = string.rep }, {} end)
  T.check_error("in table for 'concat'", function(t, u)
    local s = t.concat(u)
    return s
  end, function() return { concat = table.concat }, { {} } end)
end)

test("an open call that gives other than one value: all of them passed on", function()
  -- (`return t.f()` passes on every value: test_varargs.lua; g(t.f()) runs g
  -- through lua_call with as many: test_varargs_counts.lua)
  local function g(a, b) return a, b end
  local f = function(t) return g(t.f()) end
  local one, two, none = function() return 8 end, function() return 1, 2 end, function() end
  T.check(f, function() return { f = one } end)
  T.check(f, function() return { f = two } end)
  T.check(f, function() return { f = none } end)
end)

test("functions known when compiling, as values: stored, passed, compared, returned", function()
  local function sq(x) return x * x end
  local function apply(f, x) return f(x) + 1 end
  T.check(function(t) t.f = sq; t.g = math.floor; t[1] = print; t.h = t.f end, function() return {} end)
  T.check(function(t, x) local r = t.apply(sq, x) + t.apply(math.abs, -x); return r end,
          function() return { apply = apply }, 3 end)
  T.check(function(t) return t.f == sq, t.f == math.cos, t.g == math.cos, t.g ~= sq end,
          function() return { f = sq, g = math.cos } end)
  T.check(function(x) local t = { sq, math.sin, f = sq }; return t[1](x) + t[2](0) + t.f(1), t end,
          function() return 3 end)
  T.check(function(k) if k > 0 then return sq end return math.cos end, function() return 1 end)
  T.check(function(k) if k > 0 then return sq end return math.cos end, function() return 0 end)
  -- a library function passed to a compiled Lua function: compiled for it
  local function integrate(fn, a, b, n)
    local h, s = (b - a) / n, 0
    for i = 0, n - 1 do s = s + fn(a + (i + 0.5) * h) end
    return s * h
  end
  T.check(function(n) return integrate(math.sin, 0, math.pi, n), integrate(math.exp, 0, 1, n) end,
          function() return 100 end)
  -- C functions as arguments of the compiled function itself
  T.check(function(f, x) return f(x), f(x + 1) end, function() return math.cos, 0.25 end)
  T.check(function(f, t) local r = f(t); return r end, function() return rawlen, { 1, 2, 3 } end)
end)

test("collections during calls of function values and upvalue writes lose nothing", function()
  local function mk(i) collectgarbage("collect"); return { v = i, w = { i * 2 } } end
  local last
  local function keep(t) last = t; return t end   -- a table kept in an upvalue compiled code assigns
  local f = kjit.jit(function(t, n)
    local out = {}
    for i = 1, n do
      local r = t.mk(i)          -- lua_call: a full collection inside
      out[i] = keep(r)
      out[i].sum = r.w[1] + last.v
    end
    return out
  end)
  collectgarbage("generational", 0, 0)
  local ok, out = pcall(f, { mk = mk }, 30)
  collectgarbage("incremental", 200, 100, 13)
  truthy(ok, tostring(out))
  for i = 1, 30 do eq(out[i].v, i); eq(out[i].w[1], 2 * i); eq(out[i].sum, 3 * i) end
  truthy(last == out[30], "the upvalue holds the last table")
end)

test("C functions kjit does not compile are called through the Lua API", function()
  local unpack, concat, getenv = table.unpack, table.concat, os.getenv
  T.check(function(t) local a, b, c = unpack(t); return a + b + c end, function() return { 1, 2.5, 3 } end)
  T.check(function(t) local s = concat(t, ","); return s end, function() return { 1, 2, 3 } end)
  T.check(function(x) return x + #getenv("HOME") end, function() return 1 end)
  T.check(function(t, u) local r = rawequal(t, u); return r end, function() local t = {}; return t, t end)
  T.check(function(t) local mt = getmetatable(t); return mt.k end,
          function() return setmetatable({}, { k = 4 }) end)
  -- their errors are the interpreter's
  T.check_error("bad argument #1 to 'concat'", function(t) local s = concat(t); return s end,
                function() return 5 end)
  -- coroutine.yield, coroutine.isyieldable and the debug functions stay refused, located
  raises("field 'getinfo' is a C function: " .. "compiled code cannot call coroutine.yield, coroutine.isyieldable or the debug functions",
         kjit.jit(function(x) return x + debug.getinfo(1).currentline end), 1)
  raises("field 'yield' is a C function", kjit.jit(function(x) coroutine.yield(x); return x end), 1)
end)

test("all the values of an open call passed on to a function value", function()
  local unpack, char, write = table.unpack, string.char, io.write
  local function count(...) return select('#', ...), ... end
  local three = function(x) return x, x + 1, x + 2 end
  T.check(function(t, k) local n, a, b, c = k.count(unpack(t)); return n, a, b, c end,
          function() return { 1, 2.5, 3 }, { count = count } end)
  T.check(function(t, n) local s = char(unpack(t, 1, n)); return s end, function() return { 72, 105, 33 }, 3 end)
  T.check(function(t, n) local s = char(unpack(t, 1, n)); return s end, function() return { 72, 105, 33 }, 0 end)
  T.check(function(t) local n = t.count(t.three(5)); return n end,
          function() return { count = count, three = three } end)
  T.check(function(t) local m = math.max(unpack(t)); return m end, function() return { 4, 9.5, 2 } end)
  T.check_error("attempt to call a nil value (field 'nope')",
                function(t) local r = t.count(t.nope(1)); return r end, function() return { count = count } end)
  -- two levels: the inner one's single value is checked
  T.check(function(t, k) local n = k.count(char(unpack(t))); return n end,
          function() return { 65, 66 }, { count = count } end)
  local f = kjit.jit(function(t) write(unpack(t)) end)
  f({})   -- (nothing written: no values)
end)

test("a table of functions known when compiling, indexed at run time", function()
  local add, mul = function(a, b) return a + b end, function(a, b) return a * b end
  local ops = { add, mul, math.max, function(a, b) return b - a end }
  T.check(function(a, b)
    local s = 0
    for i = 1, #ops do s = s + ops[i](a, b) end
    return s
  end, function() return 6, 4.5 end)
  T.check(function(i, a, b) local r = ops[i](a, b); return r end, function() return 3, 2, 9 end)
  T.check_error("attempt to call a nil value (field '?')", function(i, a, b) local r = ops[i](a, b); return r end,
                function() return 5, 2, 9 end)
  local names = { "x", "y", k = "z" }
  T.check(function(i, t) local a, b = names[i], names[t.k]; return a, b end, function() return 2, { k = "k" } end)
end)

-- difffuzz (class family, tests/difffuzz/found/function-choice-refused.lua):
-- two different known functions, tables or library functions meeting at a
-- join (`c and g or h`, `local f = g; if c then f = math.abs end`) were
-- refused ("local 'f' holds both function and function values"); the join
-- now holds a Lua value, each path boxing its own constant.
test("a local that is one of several known functions, tables or library functions", function()
  local function g(x) return x + 1 end
  local function h(x) return x * 2 end
  local K, L = { 1, 2, x = 1 }, { 3 }
  for _, n in ipairs({ 0, 1, 2, 2.5, 3 }) do
    T.check(function(n) local f = (n > 1) and g or h; return f(3), f == g, type(f) end, function() return n end)
    T.check(function(n) local f = (n > 1) and g or math.abs; return f(-n), f == math.abs end, function() return n end)
    T.check(function(n) local f = g; if n > 2 then f = math.floor end; return f(n + 0.5) end, function() return n end)
    T.check(function(n) local f = (n > 1) and g or nil; if f then return f(n) end return 0 end, function() return n end)
    -- (a number on the other path: calling it raises, as interpreted)
    T.check(function(n) local f = (n > 1) and g or 5; return f(n) end, function() return n end)
    T.check(function(n)
      local s = 0
      for i = 1, 4 do local f = (i % 2 == 0) and g or h; s = s + f(i + n) end
      return s
    end, function() return n end)
    -- known tables: the same table, aliasing kept; written through the join
    T.check(function(n) local t = (n > 1) and K or L; return #t, t[1], t == K, rawequal(t, L) end,
            function() return n end)
    T.check(function(t, n) K.x = 1; local u = (n > 1) and K or t; u.x = n; return K.x, t.x end,
            function() return { x = 7 }, n end)
    T.check(function(n) if n > 1 then return g end return h end, function() return n end)
    T.check(function(t, n) local f = g; if n > 2 then f = h end; t.fn = f; return t.fn(n), t end,
            function() return {}, n end)
  end
end)
