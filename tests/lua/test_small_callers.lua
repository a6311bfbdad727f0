-- Small callers under the default callee policy (host/callval.c
-- is_small_leaf with calls_ok): a small function that computes more than it
-- calls, and calls methods, local functions of an enclosing scope or math
-- functions with fixed arguments (perlin's Noise:fbm and Noise:noise2),
-- compiles, and its calls run natively from their sites. The interpreted
-- function is the specification: each scenario runs once interpreted and
-- once compiled (calls_harness.differential) and the logs of results,
-- subtypes and errors must agree: a method replaced between calls (the
-- site must notice), argument count mismatches, results of several kinds,
-- an error raised in a callee with its line, recursion. Facts: such
-- callers compile (kjit.testing.callees' second value) and their calls are
-- native (the third); a caller that computes less than it calls
-- (vectors' Vec:clamp) and one calling a field of another table
-- (`return Vec.new(...)`) stay interpreted.
local kjit = require "kjit"
local testing = require "kjit.testing"
local H = require "calls_harness"
local stack_reads = os.getenv("KJIT_NO_STACK_READS") == nil

local function counts() local _, c, n = testing.callees(); return c, n end

-- A small noise class in perlin's shape.
local function noise_class()
  local N = {}
  N.__index = N
  local GX = { 1, -1, 1, -1, 0, 0, 1, -1 }
  local function fade(t) return t * t * (3 - 2 * t) end
  local function lerp(a, b, t) return a + t * (b - a) end
  function N:grad(h, x, y) local g = h % 8 + 1 return GX[g] * x + y end
  function N:noise(x, y)
    local xf = math.floor(x)
    local u = fade(x - xf)
    local a = self:grad(xf + self.k, x - xf, y)
    local b = self:grad(xf + self.k + 1, x - xf - 1, y)
    return lerp(a, b, u)
  end
  function N:fbm(x, y, oct)
    local s, amp = 0, 1
    for i = 1, oct do
      s = s + amp * self:noise(x * i, y * i)
      amp = amp * 0.5
    end
    return s
  end
  return N
end

test("small callers compile and call natively (facts: compiled callees, native calls)", function()
  local N = noise_class()
  local o = setmetatable({ k = 3 }, N)
  local f = kjit.jit(function(p, n)
    local t = 0
    for j = 1, n do t = t + p:fbm(j / 7, j / 5, 3) end
    return t
  end)
  local c0, n0 = counts()
  local got = f(o, 50)
  local c1, n1 = counts()
  local want = 0
  for j = 1, 50 do want = want + o:fbm(j / 7, j / 5, 3) end
  eq(got, want)
  truthy(c1 - c0 >= 3, "fbm, noise and grad compiled: " .. (c1 - c0))
  if stack_reads then truthy(n1 - n0 >= 50 * 3 * 3, "native calls: " .. (n1 - n0)) end
end)

test("a small caller: methods replaced, counts mismatched, results of several kinds", function()
  H.differential(function()
    local N = noise_class()
    local o = setmetatable({ k = 3 }, N)
    local function f(p, n)
      local t = 0
      for j = 1, n do t = t + p:fbm(j / 7, j / 5, 3) end
      return t
    end
    return f, function(run)
      run(o, 20)
      run(o, 20)
      function N:grad(h, x) return h * 2 + x end          -- replaced: y not taken
      run(o, 20)
      function N:grad(h, x, y, z) return (z or 1) + h end -- one argument more than given
      run(o, 20)
      function N:grad(h) return h // 2 end                -- integer results
      run(o, 20)
      function N:grad() end                               -- nil: the arithmetic's error
      run(o, 20)
      function N:grad(h) return h > 5 end                 -- a boolean: the arithmetic's error
      run(o, 20)
      function N:grad(h) return h % 2 == 0 and 1.5 or 2 end
      run(o, 20)
      o.k = "x"                                           -- a string key offset: Lua converts
      run(o, 3)
      o.k = {}                                            -- a table: the error at its line
      run(o, 3)
    end
  end)
end)

test("a small caller whose callee raises: the callee's line, as interpreted", function()
  H.differential(function()
    local C = {}
    C.__index = C
    function C:check(x) if x > 3 then error("too big: " .. x) end return x * 2 end
    function C:sum(n)
      local s = 0
      for i = 1, n do s = s + self:check(i) + i end
      return s
    end
    local o = setmetatable({}, C)
    return function(p, n) return p:sum(n) end, function(run)
      run(o, 3)
      run(o, 3)
      run(o, 5)
      run(o, 2)
    end
  end)
end)

test("a small recursive caller through a method", function()
  H.differential(function()
    local C = {}
    C.__index = C
    function C:fib(n) if n < 2 then return n end return self:fib(n - 1) + self:fib(n - 2) end
    local o = setmetatable({}, C)
    return function(p, n) return p:fib(n) end, function(run)
      run(o, 10)
      run(o, 15)
      run(o, 1.5)
    end
  end)
end)

test("callers that compute less than they call, or call another table's field, stay interpreted", function()
  local V = {}
  V.__index = V
  function V.new(x, y) return setmetatable({ x = x, y = y }, V) end
  function V:scale(s) return V.new(self.x * s, self.y * s) end
  function V:dot(o) return self.x * o.x + self.y * o.y end
  function V:len() return math.sqrt(self:dot(self)) end
  function V:clamp(m)
    local l = self:len()
    if l > m then return self:scale(m / l) end
    return self
  end
  local f = kjit.jit(function(v, n)
    local s = 0
    for _ = 1, n do s = s + v:clamp(2).x end
    return s
  end)
  local v = V.new(3, 4)
  local c0 = counts()
  eq(f(v, 10), 10 * 1.2)
  local c1 = counts()
  eq(c1 - c0, 0, "callees compiled")
end)

test("a caller that calls a method for its effect alone stays interpreted (ray's ray_trace)", function()
  -- the method's result is not used (scene:intersect(...)): such a method
  -- is a procedure over tables that stays interpreted, and a compiled
  -- caller would reach it through its trampoline, dearer than the
  -- interpreter's own call
  local G = {}
  G.__index = G
  function G:hit(best, x)
    for _, c in ipairs(self.items) do if c < best[1] then best[1] = c + x end end
  end
  local best = { 0 }
  local function trace(scene, x, y)
    best[1] = math.huge
    scene:hit(best, x)
    local b = best[1]
    if b == math.huge then return 0 end
    return b * x + y * 2 - b / 3
  end
  local f = kjit.jit(function(T, scene, n)   -- trace called through a value
    local s = 0
    for i = 1, n do s = s + T.trace(scene, i, 0.5) end
    return s
  end)
  local scene = setmetatable({ items = { 3, 1, 2 } }, G)
  local want = 0
  for i = 1, 10 do want = want + trace(scene, i, 0.5) end
  local c0 = counts()
  eq(f({ trace = trace }, scene, 10), want)
  local c1 = counts()
  eq(c1 - c0, 0, "callees compiled")
end)
