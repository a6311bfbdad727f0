-- Tiered compiles (host/jit.c "Tiered compiles", backend/cpu.c "the first
-- tier"): a call's first compile of a specialization with loops is the
-- cheap first tier; once the dispatcher has counted enough work (calls,
-- and interrupt polls made during calls) the same LLVM module is compiled
-- at full tier and replaces it. Both tiers must compute what the
-- interpreter computes, raise the same errors at the same file:line, and
-- the disk cache must only ever hold full-tier code. Facts only (f.tier,
-- the cache's files), never times.
local D = require "difftest"
local kjit = require "kjit"
local T = require "kjit.testing"

local mode = os.getenv("KJIT_TIER")
local function tiering_on()
  if mode == "0" or mode == "first" then skip("KJIT_TIER=" .. mode) end
end

-- f compiled twice from one function: once held at the first tier (the
-- tier-up threshold out of reach), once at full tier ({tiered = false});
-- both must give what the interpreter gives (D.check compares values,
-- subtypes, errors and arrays).
local function both_tiers(fn, ...)
  local old = T.tier_after(math.maxinteger)
  local ok, err = pcall(function(...)
    D.check(fn, ...)
    -- (and the first tier is what ran: a fact about these functions)
    local p = kjit.jit(fn)
    p(...)
    if mode ~= "0" then eq(p.tier, 1, "first tier") end
  end, ...)
  T.tier_after(old)
  if not ok then error(err, 0) end
  D.check_opts({ tiered = false }, fn, ...)
end

local function loop_sum(x, n)
  local s = 0.0
  for i = 1, n do s = s + x * i end
  return s
end

local function mixed(a, n)   -- integer and float paths, several results
  local si, sf, m = 0, 0.0, math.mininteger
  for i = 1, n do
    local v = a[i]
    si = si + (i * 7) // 3 - i % 5
    sf = sf + v / i
    if v > m then m = v end
  end
  return si, sf, m
end

local function saxpy(a, x, y, out)
  for i = 1, #x do out[i] = a * x[i] + y[i] end
end

local function stencil(n, A, B)
  for i = 2, n - 1 do
    for j = 2, n - 1 do
      B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1])
    end
  end
end

local function oob(a, n)     -- reads past the end: the bounds error
  local s = 0.0
  for i = 1, n do s = s + a[i] end
  return s
end

local function idiv0(n, d)   -- integer division by zero inside a loop
  local s = 0
  for i = 1, n do s = s + i // d end
  return s
end

local function raises_at(n)  -- error() with a message built in the loop
  local s = 0
  for i = 1, n do
    s = s + i
    if s > 20 then error("sum " .. s .. " too big at " .. i) end
  end
  return s
end

local function collatz(n)    -- a while loop, integers only
  local steps = 0
  while n ~= 1 do
    if n % 2 == 0 then n = n // 2 else n = 3 * n + 1 end
    steps = steps + 1
  end
  return steps
end

test("both tiers compute what the interpreter computes", function()
  both_tiers(loop_sum, 1.5, 100)
  both_tiers(loop_sum, 3, 0)
  both_tiers(collatz, 27)
  local a = kjit.linspace(-3, 5, 37)
  both_tiers(mixed, a, #a)
  local ai = kjit.arange(50, "i64")
  both_tiers(mixed, ai, #ai)
  local x, y = kjit.linspace(0, 1, 67, "f32"), kjit.full(67, 2.5, "f32")
  both_tiers(saxpy, 1.25, x, y, kjit.zeros(67, "f32"))
  local A = kjit.array({ { 1, 2, 3, 4, 5 }, { 6, 7, 8, 9, 10 }, { 11, 12, 13, 14, 15 },
                         { 16, 17, 18, 19, 20 }, { 21, 22, 23, 24, 25 } })
  both_tiers(stencil, 5, A, kjit.zeros({ 5, 5 }))
end)

test("both tiers raise the interpreter's errors at the same file:line", function()
  local a = kjit.linspace(0, 1, 8)
  local old = T.tier_after(math.maxinteger)
  local ok, err = pcall(function()
    D.check_error("out of bounds", oob, a, 9)
    D.check_error("zero", idiv0, 5, 0)
    D.check_error("too big at", raises_at, 100)
  end)
  T.tier_after(old)
  if not ok then error(err, 0) end
  D.check_error("out of bounds", oob, a, 9)
  D.check_error("zero", idiv0, 5, 0)
  D.check_error("too big at", raises_at, 100)
  -- and one object across its tier-up: the same message before and after
  old = T.tier_after(3)
  local f = kjit.jit(raises_at)
  local msgs = {}
  for k = 1, 6 do
    local ok2, m = pcall(f, 100)
    truthy(not ok2, "raised")
    msgs[k] = m
  end
  T.tier_after(old)
  for k = 2, 6 do eq(msgs[k], msgs[1], "message of call " .. k) end
  truthy(msgs[1]:find("test_tier.lua:%d+: sum 21 too big at 6"), msgs[1])
end)

test("calls tier a specialization up, and its results do not change", function()
  tiering_on()
  local old = T.tier_after(5)
  local f = kjit.jit(loop_sum)
  local want = loop_sum(1.5, 10)
  eq(f(1.5, 10), want, "first call")
  eq(f.tier, 1, "first tier after the first compile")
  for _ = 1, 4 do eq(f(1.5, 10), want, "first-tier call") end
  eq(f.tier, 1, "5 units of work done: not yet")
  eq(f(1.5, 10), want, "the call that tiers up")
  eq(f.tier, 2, "full tier")
  eq(f(2, 7), loop_sum(2, 7), "a new signature")
  eq(f.tier, 1, "... starts at the first tier again")
  T.tier_after(old)
end)

test("loop work (interrupt polls) in one call tiers up the next call", function()
  tiering_on()
  if os.getenv("KJIT_BENCH_NOPOLL") then skip("polls off") end
  local f = kjit.jit(loop_sum)
  eq(f(1.5, 3), loop_sum(1.5, 3), "a short call")
  eq(f.tier, 1, "first tier")
  local n = 400 * 1000   -- 6 polls (one per 65536 iterations): 1501 units of work
  eq(f(1.5, n), loop_sum(1.5, n), "one long call")
  eq(f.tier, 1, "a long call stays at the first tier")
  eq(f(1.5, 3), loop_sum(1.5, 3), "the next call")
  eq(f.tier, 2, "full tier")
end)

test("a first call on large data compiles at full tier at once", function()
  tiering_on()
  local big = 1 << 16   -- jit.c TIER_BIG_CALL
  local f = kjit.jit(loop_sum)
  eq(f(1.5, big), loop_sum(1.5, big), "a loop bound of 2^16")
  eq(f.tier, 2, "an integer argument of 2^16: full tier")
  f = kjit.jit(loop_sum)
  eq(f(1.5, -big), loop_sum(1.5, -big), "-2^16")
  eq(f.tier, 2, "-2^16: full tier")
  f = kjit.jit(loop_sum)
  f(1.5, big - 1)
  eq(f.tier, 1, "2^16 - 1: first tier")
  f = kjit.jit(loop_sum)
  f(big + 0.0, 10)
  eq(f.tier, 1, "a float argument is not a bound")
  local s = kjit.jit(saxpy)
  local h = big // 2
  s(2.0, kjit.full(h, 1.0), kjit.full(h, 2.0), kjit.zeros(h))
  eq(s.tier, 2, "three arrays of 2^15: 2^16 elements or more in all, full tier")
  s = kjit.jit(saxpy)
  local x, y, o = kjit.full(100, 1.0), kjit.full(100, 2.0), kjit.zeros(100)
  s(2.0, x, y, o)
  eq(s.tier, 1, "small arrays: first tier")
  eq(o[100], 4.0, "computed")
end)

test("upvalues stay frozen as at the first compile across the tier-up", function()
  tiering_on()
  local k = 2
  local function scaled(n)
    local s = 0
    for i = 1, n do s = s + i * k end
    return s
  end
  local old = T.tier_after(2)
  local f = kjit.jit(scaled)
  eq(f(4), 20, "k = 2")
  k = 3   -- frozen: the compiled function keeps 2 (the documented rule)
  for _ = 1, 3 do eq(f(4), 20, "k frozen") end
  eq(f.tier, 2, "tiered up")
  T.tier_after(old)
end)

test("a tier-up while a first-tier frame of the same code is running", function()
  tiering_on()
  if os.getenv("KJIT_BENCH_NOPOLL") then skip("polls off") end
  -- a count hook, which compiled code's polls call in place, calls f again
  -- from inside f's long first-tier call: the inner call tiers f up, and
  -- the outer frame goes on in the first tier's code (kept alive)
  local old = T.tier_after(3)
  local f = kjit.jit(loop_sum)
  eq(f(1.5, 10), loop_sum(1.5, 10), "first call")
  eq(f.tier, 1, "first tier")
  local seen = {}
  debug.sethook(function()
    if #seen < 6 then seen[#seen + 1] = { f(1.5, 10), f.tier } end
  end, "", 1000)
  local n = 3 * 1000 * 1000
  local r = f(1.5, n)
  debug.sethook()
  T.tier_after(old)
  eq(r, loop_sum(1.5, n), "the outer call")
  truthy(#seen >= 4, "the hook ran inside the call")
  for k = 1, #seen do eq(seen[k][1], loop_sum(1.5, 10), "inner call " .. k) end
  eq(seen[1][2], 1, "inner calls start at the first tier")
  eq(seen[#seen][2], 2, "and tier f up")
end)

test("what is never first tier", function()
  tiering_on()
  -- a small function without loops: the first tier does not pay
  local g = kjit.jit(function(a, b) return a * b + 1 end)
  eq(g(3, 4), 13, "small")
  eq(g.tier, 2, "small: full tier at once")
  -- recursion: the full tier turns accumulator recursion into a loop, so
  -- the depth where it overflows would differ between tiers
  local function count(n) if n == 0 then return 0 end return 1 + count(n - 1) end
  local r = kjit.jit(count)
  eq(r(300000), 300000, "deep accumulator recursion")
  eq(r.tier, 2, "recursive: full tier at once")
  local function outer(n) local s = 0 for i = 1, n do s = s + i end return s end
  local function uses(n) local s = 0 for i = 1, n do s = s + outer(i) end return s end
  local u = kjit.jit(uses)
  eq(u(10), uses(10), "a loop calling a compiled callee")
  eq(u.tier, 1, "a callee without recursion: first tier")
  -- {tiered = false}
  local f = kjit.jit(loop_sum, { tiered = false })
  eq(f(1.5, 10), loop_sum(1.5, 10), "tiered = false")
  eq(f.tier, 2, "tiered = false: full tier")
  -- f:compile and f:native: full tier, and a first-tier spec they name
  -- is tiered up
  local h = kjit.jit(loop_sum)
  h(1.5, 10)
  eq(h.tier, 1, "by a call: first tier")
  local nat = h:native("f64(f64, i64)")
  eq(h.tier, 2, "f:native tiers it up")
  eq(nat(1.5, 10), loop_sum(1.5, 10), "native")
  local c = kjit.jit(loop_sum)
  c:compile("f64(f64, i64)")
  eq(c.tier, 2, "f:compile: full tier")
end)

test("the disk cache holds full-tier code only", function()
  tiering_on()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p '" .. dir .. "'")
  local before = kjit.cache_dir()
  kjit.cache_dir(dir)
  local function files()
    local p = io.popen("ls -A '" .. dir .. "' 2>/dev/null | wc -l")
    local n = tonumber(p:read("a"))
    p:close()
    return n
  end
  local ok, err = pcall(function()
    -- a tiered object without cache: nothing on disk, before or after its tier-up
    local old = T.tier_after(2)
    local t = kjit.jit(loop_sum)
    for _ = 1, 4 do t(1.5, 10) end
    T.tier_after(old)
    eq(t.tier, 2, "tiered up")
    eq(files(), 0, "no file from tiered code")
    -- {cache = true}: full tier at once, stored
    local hits0 = kjit.cache_stats().hits
    local f = kjit.jit(loop_sum, { cache = true })
    eq(f(1.5, 10), loop_sum(1.5, 10), "cached compile")
    eq(f.tier, 2, "cache = true compiles the full tier")
    truthy(files() > 0, "stored")
    -- a hit: full tier at once
    local g = kjit.jit(loop_sum, { cache = true })
    eq(g(1.5, 10), loop_sum(1.5, 10), "cache hit")
    eq(kjit.cache_stats().hits, hits0 + 1, "one hit")
    eq(g.tier, 2, "a hit runs the full tier")
  end)
  kjit.cache_clear()
  kjit.cache_dir(before or false)
  os.execute("rm -rf '" .. dir .. "'")
  if not ok then error(err, 0) end
end)
