-- test_interrupt_hooks.lua: Lua hooks reach compiled code (issue 15 item 7).
-- (Not test_interrupt.lua: its results file would be the C test's,
-- build/test-results/test_interrupt.txt.)
--
-- Compiled code polls every ~65536 loop iterations or calls; a poll calls
-- the running thread's count hook (debug.sethook with a count), as the
-- interpreter would after some instructions. A hook that raises stops the
-- compiled function with its error value; one that returns lets it go on.
-- A hook set with a huge count never fires in the few interpreted
-- instructions of these tests, so each hook call seen here came from a
-- poll (the code generator emits them: src/codegen/, runtime_poll.h).
-- tests/c/test_interrupt.c covers kjit_interrupt, watchdog threads and signal handlers.
local kjit = require "kjit"
local cuda = kjit.cuda
local HUGE = 1 << 30   -- a count the interpreted parts never reach

local function sum(n) local s = 0 for i = 1, n do s = s + i % 7 end return s end
local function forever(n) local s = 0 while s >= 0 do s = (s + n) % 1000 end return s end
local jsum, jforever = kjit.jit(sum), kjit.jit(forever)

-- A 2^22-iteration compiled loop calls a count hook only if compiled code
-- polls.
test("compiled loops poll: a count hook is called", function()
  jsum(10)   -- compiled before the hook is set
  local called = false
  debug.sethook(function() called = true end, "", HUGE)
  jsum(1 << 22)
  debug.sethook()
  truthy(called, "compiled code calls the count hook (kjit_rt_poll)")
end)

local function ptest(name, fn)
  test(name, function()
    local ok, err = pcall(fn)
    debug.sethook()   -- never leave a hook behind for the next test
    if not ok then error(err, 0) end
  end)
end

-- A hook that removes itself and raises msg on its k-th call.
local function raise_on(k, msg)
  local calls = 0
  return function()
    calls = calls + 1
    if calls >= k then debug.sethook(); error(msg, 0) end
  end, function() return calls end
end

ptest("a raising count hook stops an endless compiled loop", function()
  debug.sethook(raise_on(1, "stopped by the hook"), "", HUGE)
  raises("stopped by the hook", jforever, 1)
end)

ptest("the hook's error value comes back as it was raised", function()
  local token = setmetatable({}, { __tostring = function() return "token" end })
  debug.sethook(function() debug.sethook(); error(token) end, "", HUGE)
  local ok, e = pcall(jforever, 1)
  truthy(not ok and rawequal(e, token), "the same table")
end)

ptest("a hook that returns: compiled code goes on, same results", function()
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local n = 1 << 22
  local got = jsum(n)
  debug.sethook()
  eq(got, sum(n), "compiled sum with a permanent hook")
  truthy(calls > 0, "the hook was called")
end)

ptest("an instruction budget: the hook raises on its 5th call", function()
  local h, calls = raise_on(5, "budget exceeded")
  debug.sethook(h, "", HUGE)
  raises("budget exceeded", jforever, 3)
  eq(calls(), 5, "hook calls")
end)

ptest("a hook on a coroutine stops compiled code running in it", function()
  local co = coroutine.create(function() return jforever(1) end)
  debug.sethook(co, raise_on(1, "coroutine stopped"), "", HUGE)
  local ok, err = coroutine.resume(co)
  truthy(not ok and tostring(err):find("coroutine stopped", 1, true), "resume: " .. tostring(err))
end)

ptest("a line hook alone is not called by compiled code", function()
  local lines = 0
  local n = 1 << 22
  debug.sethook(function() lines = lines + 1 end, "l")
  local got = jsum(n)
  debug.sethook()
  eq(got, sum(n), "result")
  truthy(lines < 10, "line hook calls: " .. lines .. " (only the interpreted lines)")
end)

-- Strip-mined loops (innermost integer for loops, run in chunks of 65536
-- iterations with a poll between chunks): each chunk goes on where the
-- last one stopped, so the iterations are the interpreter's, also with
-- steps whose chunk of steps wraps around and where a chunk ends at the
-- limit.
local function steps(a, b, c)
  local h, cnt, last = 0, 0, 0
  for i = a, b, c do
    h = (h * 31) ~ i
    cnt = cnt + 1
    last = i
  end
  return h, cnt, last
end
local jsteps = kjit.jit(steps)
-- a nest whose inner loop alone is long: it polls while it runs
local function rows(m, n, x)
  for i = 1, m do
    for j = 1, n do x[j] = x[j] + i end
  end
end
local jrows = kjit.jit(rows)

ptest("strip-mined loops: the interpreter's iterations, with hooks polled", function()
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local C = 65536
  for _, c in ipairs({
    { math.mininteger, math.maxinteger, 1 << 47 }, { math.maxinteger, math.mininteger, -(1 << 47) },
    { math.mininteger, math.maxinteger, (1 << 46) + 12345 }, { -5, 300000, 3 }, { 300000, -5, -7 },
    { 1, 3 * C, 1 }, { 1, 3 * C + 1, 1 }, { 1, 3 * C - 1, 1 }, { 0, 2 * C, 2 },
    { math.maxinteger - 2 * C, math.maxinteger, 1 }, { math.mininteger + 2 * C, math.mininteger, -1 },
  }) do
    local h1, n1, l1 = steps(c[1], c[2], c[3])
    local h2, n2, l2 = jsteps(c[1], c[2], c[3])
    local what = string.format("for i = %d, %d, %d", c[1], c[2], c[3])
    eq(n2, n1, what .. ": iterations")
    eq(l2, l1, what .. ": last")
    eq(h2, h1, what .. ": hash of every i")
  end
  calls = 0
  local n = 1 << 20
  local x = kjit.zeros(n, "i64")
  jrows(2, n, x)
  debug.sethook()
  eq(x[1], 3, "x[1]")
  eq(x[n], 3, "x[n]")
  truthy(calls >= 16, "polls in two 2^20-iteration inner loops: " .. calls)
end)

-- A loop that only carries float recurrences (no memory, no calls) is not
-- strip-mined: LLVM vectorizes nothing there, so it charges each
-- iteration instead (codegen/cg_func.c, float_recurrence). It still polls
-- at the same rate (one poll per 65536 iterations), computes the
-- interpreter's sums, and a raising hook stops it. Loops that carry an
-- integer (an integer reduction may vectorize) stay strip-mined.
local function fsum(x, n) local s = 0.0 for i = 1, n do s = s + x * i end return s end
local function fpair(x, n)
  local s, p = 0.0, 1.0
  for i = 1, n do
    if i % 3 == 0 then s = s - x / i else s = s + x * i end
    p = p * 1.0000001
  end
  return s, p
end
local function fendless(x) local s = 0.0 for i = 1, math.maxinteger do s = s + x * i end return s end
local jfsum, jfpair, jfendless = kjit.jit(fsum), kjit.jit(fpair), kjit.jit(fendless)

ptest("float-recurrence loops: the interpreter's results, polled at the usual rate", function()
  for _, n in ipairs({ 0, 1, 5, 65535, 65536, 65537, 300001 }) do
    eq(jfsum(1.5, n), fsum(1.5, n), "fsum(1.5, " .. n .. ")")
    local s1, p1 = fpair(0.25, n)
    local s2, p2 = jfpair(0.25, n)
    eq(s2, s1, "fpair s, n = " .. n)
    eq(p2, p1, "fpair p, n = " .. n)
  end
  eq(math.type(jfsum(1.5, 0)), "float", "a float when the loop does not run")
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local n = 1 << 22
  local got = jfsum(0.5, n)
  debug.sethook()
  eq(got, fsum(0.5, n), "sum under a hook")
  -- 2^22 iterations charge 64 periods; the call's entry starts a fresh one
  truthy(calls >= 60 and calls <= 70, "one poll per 65536 iterations: " .. calls)
end)

test("float-recurrence loops are not strip-mined; integer sums are (the IR)", function()
  jfsum(1.0, 10)
  local fir = jfsum:inspect("llvm")
  truthy(not fir:find("chunk", 1, true), "no chunk blocks in the float loop:\n" .. fir)
  truthy(fir:find("kjit_rt_poll", 1, true), "but a poll:\n" .. fir)
  jsum(10)
  local iir = jsum:inspect("llvm")
  truthy(iir:find("chunk", 1, true), "the integer loop runs in chunks:\n" .. iir)
end)

ptest("a raising hook stops an endless float-recurrence loop", function()
  debug.sethook(raise_on(3, "float loop stopped"), "", HUGE)
  raises("float loop stopped", jfendless, 1.0)
end)

-- Recursion without loops: recursive calls charge the countdown (calls
-- outside recursion cycles do not: their callees end or poll on their own).
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local jfib = kjit.jit(fib)
local ev, od
function ev(n) if n < 2 then return n end return od(n - 1) + od(n - 2) end
function od(n) if n < 2 then return 1 - n end return ev(n - 1) + ev(n - 2) end
local jev = kjit.jit(ev)
local function walk(a, n)   -- not pure: writes an array
  if n < 2 then a[1] = a[1] + 1 return end
  walk(a, n - 1)
  walk(a, n - 2)
end
local jwalk = kjit.jit(walk)
local function leaf(x) return x * 2 + 1 end
local function loopcalls(n) local s = 0 while s >= 0 do s = (s + leaf(n)) % 1000 end return s end
local jloopcalls = kjit.jit(loopcalls)

ptest("a raising hook stops exponential recursion (pure, no loops)", function()
  debug.sethook(raise_on(1, "fib stopped"), "", HUGE)
  raises("fib stopped", jfib, 80)
end)

ptest("a raising hook stops mutual recursion", function()
  debug.sethook(raise_on(1, "ev stopped"), "", HUGE)
  raises("ev stopped", jev, 80)
end)

ptest("a raising hook stops a recursion that writes an array", function()
  local a = kjit.zeros(1, "i64")
  debug.sethook(raise_on(1, "walk stopped"), "", HUGE)
  raises("walk stopped", jwalk, a, 80)
end)

ptest("a raising hook stops a loop calling a non-recursive function", function()
  debug.sethook(raise_on(1, "loop stopped"), "", HUGE)
  raises("loop stopped", jloopcalls, 3)
end)

-- A pure self-recursive function whose calls charge at sampled depths
-- checks its depth limit there only (codegen/cg_func.c, emit_lua_call): a
-- recursion too deep still ends in "stack overflow", whether the call
-- that goes deeper charges (one call a block) or is charged for by the
-- block's first recursive call (at the same depth), and with any depth
-- modulo the sampling.
local function deep(n) if n == 0 then return 0 end return 1 + deep(n - 1) end
local function deep2(n) if n <= 0 then return 0 end return deep2(-1) + deep2(n - 1) + 1 end
test("sampled recursion: too deep still raises stack overflow", function()
  local jd, jd2 = kjit.jit(deep), kjit.jit(deep2)
  for _, n in ipairs({ 0, 7, 8, 9, 1000 }) do
    eq(jd(n), deep(n), "deep(" .. n .. ")")
    eq(jd2(n), deep2(n), "deep2(" .. n .. ")")
  end
  for _, n in ipairs({ 2000000, 2000003, 2000007 }) do
    raises("stack overflow", jd, n)
    raises("stack overflow", jd2, n)
  end
  eq(jd(100000), 100000, "deep again after the overflows")
end)

ptest("a returning hook: recursion polls and gives the same results", function()
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local got, gotev = jfib(27), jev(24)   -- 635621 and 75025 calls: several polls each
  local a = kjit.zeros(1, "i64")
  jwalk(a, 24)
  debug.sethook()
  eq(got, fib(27), "fib")
  eq(gotev, ev(24), "ev")
  local b = { [1] = 0 }
  walk(b, 24)
  eq(a[1], b[1], "walk's leaves")
  truthy(calls >= 10, "the hook was called " .. calls .. " times")
end)

-- A pure function without loops (fib) keeps its countdown in the
-- dispatcher's error record instead of taking a pointer to its caller's
-- (codegen/cg_func.c, cg_poll_in_err): called from a loop of a pure
-- function, from a function that is not pure, and from a parallel loop's
-- body (whose record starts at zero: it polls at once, then as usual), it
-- still polls and gives the interpreter's results.
local function fibsum(n, m) local s = 0 for i = 1, m do s = s + fib(n - i % 2) end return s end
local function fibfill(a, n) for i = 1, #a do a[i] = fib(n - i % 3) end end
local function fibforever(n) local s = 0 while s >= 0 do s = (s + fib(n)) % 1000 end return s end
local jfibsum, jfibfill, jfibforever = kjit.jit(fibsum), kjit.jit(fibfill), kjit.jit(fibforever)
local pfibfill = kjit.jit(function(a, n)
  for i in kjit.prange(1, #a) do a[i] = fib(n - i % 3) end
end, { parallel = true })

ptest("a pure callee without loops: its own countdown, polled, same results", function()
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local got = jfibsum(22, 9)
  local a, b, c = kjit.zeros(7, "i64"), kjit.zeros(7, "i64"), kjit.zeros(7, "i64")
  jfibfill(a, 21)
  pfibfill(b, 21)
  debug.sethook()
  eq(got, fibsum(22, 9), "fibsum")
  fibfill(c, 21)
  for i = 1, 7 do
    eq(a[i], c[i], "fibfill " .. i)
    eq(b[i], c[i], "parallel fibfill " .. i)
  end
  truthy(calls >= 5, "the hook was called " .. calls .. " times")
  debug.sethook(raise_on(2, "fib loop stopped"), "", HUGE)
  raises("fib loop stopped", jfibforever, 12)
end)

-- A self-recursive pure function charges its calls at one depth in a few
-- (codegen/cg_func.c, sampled_levels), each for the calls below it: three
-- and five call sites per call (fewer charging depths than fib's).
local function trib(n) if n < 3 then return n end return trib(n - 1) + trib(n - 2) + trib(n - 3) end
local function pent(n)
  if n < 5 then return n end
  return pent(n - 1) + pent(n - 2) + pent(n - 3) + pent(n - 4) + pent(n - 5)
end
local jtrib, jpent = kjit.jit(trib), kjit.jit(pent)

ptest("a raising hook stops recursion with three and five call sites", function()
  debug.sethook(raise_on(1, "trib stopped"), "", HUGE)
  raises("trib stopped", jtrib, 90)
  debug.sethook(raise_on(1, "pent stopped"), "", HUGE)
  raises("pent stopped", jpent, 90)
end)

ptest("a returning hook: trib and pent poll and give the same results", function()
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local t, p = jtrib(20), jpent(11)   -- 128287 and 68785 calls
  debug.sethook()
  eq(t, trib(20), "trib")
  eq(p, pent(11), "pent")
  truthy(calls >= 2, "the hook was called " .. calls .. " times")
end)

-- An inner loop with a big body that stores to the same element each
-- iteration is not strip-mined (LLVM would not vectorize it): it charges
-- each iteration (codegen/cg_func.c, stores_invariant).
local function tally(a, x, n)
  for i = 1, #a do
    for j = 1, n do
      local k = (j & 3) + 1
      local p, q, r = x[k], x[5 - k], x[(k & 1) + 1]
      local u = (p * q + r) % 7 + (p ~ q) * 3 - (r | 1) + (q & 3) * (p - r)
      local w = (u * 5 - p) % 11 + (q * r) % 13 - (u ~ r) % 5
      a[i] = a[i] + p + (u - u) + (w - w)
    end
  end
end
local jtally = kjit.jit(tally)

ptest("an inner loop storing to one element polls while it runs", function()
  local a, x = kjit.zeros(2, "i64"), kjit.array({ 1, 2, 3, 4 }, "i64")
  debug.sethook(raise_on(1, "tally stopped"), "", HUGE)
  raises("tally stopped", jtally, a, x, math.maxinteger)
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local b = kjit.zeros(2, "i64")
  jtally(b, x, 1 << 20)
  debug.sethook()
  eq(b[1], 10 * (1 << 18), "b[1]")
  eq(b[2], 10 * (1 << 18), "b[2]")
  truthy(calls >= 16, "polls in two 2^20-iteration loops: " .. calls)
end)

-- kjit.prange: workers never touch Lua; the calling thread polls (in its
-- own chunks and while it waits) and stops them all.
local pforever = kjit.jit(function(a, n)
  for i in kjit.prange(1, n) do
    local s = 0
    while s >= 0 do s = (s + i) % 1000 end
    a[1] = s
  end
end, { parallel = true })

local function psum(a, n)
  local s = 0
  for i in kjit.prange(1, n) do s = s + a[(i % #a) + 1] end
  return s
end
local jpsum = kjit.jit(psum, { parallel = true })

ptest("kjit.prange: a raising hook stops an endless parallel loop", function()
  debug.sethook(raise_on(1, "prange stopped"), "", HUGE)
  raises("prange stopped", pforever, kjit.zeros(1, "i64"), 1 << 40)
  -- the pool is free again: a loop runs to its end
  local a = kjit.arange(100, "i64")
  eq(jpsum(a, 100000), psum(a, 100000), "next parallel loop")
end)

ptest("kjit.prange: a hook that returns changes nothing", function()
  local a = kjit.arange(1000, "i64")
  local n = 1 << 22
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local got = jpsum(a, n)
  debug.sethook()
  eq(got, psum(a, n), "parallel sum with a permanent hook")
end)

-- The charging forms of polls (src/codegen/cg_func.c, cg_prange.c): a
-- prange loop runs in chunks charged whole at their start, a parallel
-- body's inner loops are strip-mined. Endless loops of each form stop; and
-- the bound on the work between polls, counted: a hook that returns is
-- called once a poll, so W iterations on the Lua thread see about W / 65536
-- calls (at least half that is asked here; on one thread the caller runs
-- every chunk).
local function pbody(a, n)
  local s = 0
  for i in kjit.prange(1, n) do s = s + a[(i % #a) + 1] end
  return s
end
local function pinner(a, n)
  local s = 0
  for i in kjit.prange(1, n) do
    local acc = 0
    for j = 1, #a do acc = acc + a[j] * i end
    s = s + acc
  end
  return s
end
local function nest(a, n)
  local s = 0
  for i = 1, n do for j = 1, #a do s = s + a[j] + i end end
  return s
end

ptest("prange chunks, inner loops of prange bodies, short inner loops: endless loops stop", function()
  local a = kjit.arange(16, "i64")
  local cases = { { pbody, { parallel = true } }, { pbody, { parallel = false } },
                  { pinner, { parallel = true } }, { pinner, { parallel = false } }, { nest } }
  for k, c in ipairs(cases) do
    local f = kjit.jit(c[1], c[2])
    f(a, 10)
    debug.sethook(raise_on(1, "stopped " .. k), "", HUGE)
    raises("stopped " .. k, f, a, 1 << 50)
  end
end)

ptest("prange chunks, inner loops of prange bodies, short inner loops: polls every ~65536 iterations", function()
  local a = kjit.arange(16, "i64")
  local n0 = kjit.get_num_threads()
  local cases = { { pbody, { parallel = true }, 1 << 22, 1 << 22 },
                  { pbody, { parallel = false }, 1 << 22, 1 << 22 },
                  { pinner, { parallel = true }, 1 << 18, 1 << 22 },
                  { pinner, { parallel = false }, 1 << 18, 1 << 22 },
                  { nest, nil, 1 << 18, 1 << 22 } }
  kjit.set_num_threads(1)
  local ok, err = pcall(function()
    for k, c in ipairs(cases) do
      local f = kjit.jit(c[1], c[2])
      f(a, 10)
      local calls = 0
      debug.sethook(function() calls = calls + 1 end, "", HUGE)
      local got = f(a, c[3])
      debug.sethook()
      eq(got, c[1](a, c[3]), "case " .. k .. ": result")
      truthy(calls >= c[4] // 65536 // 2, "case " .. k .. ": " .. calls .. " hook calls for "
             .. c[4] .. " iterations")
    end
  end)
  kjit.set_num_threads(n0)
  if not ok then error(err, 0) end
end)

-- Simulated kernels: threads in turn run on the Lua thread; with
-- syncthreads they are fibers on the launching thread, which poll.
local function kseq(a)
  local s = 0
  while s >= 0 do s = (s + 1) % 1000 end
  a[1] = s
end
local function ksync(a)
  local s = 0
  cuda.syncthreads()
  while s >= 0 do s = (s + 1) % 1000 end
  a[1] = s
end

for _, c in ipairs({ { "threads in turn", kseq }, { "fibers (syncthreads)", ksync } }) do
  ptest("simulated kernel, " .. c[1] .. ": a raising hook stops it", function()
    local prev = cuda.simulate(true)
    local k = cuda.jit(c[2])
    debug.sethook(raise_on(1, "kernel stopped"), "", HUGE)
    local ok, err = pcall(function() k[{ 4, 8 }](kjit.zeros(1, "i64")) end)
    debug.sethook()
    cuda.simulate(prev)
    truthy(not ok and tostring(err):find("kernel stopped", 1, true), "error: " .. tostring(err))
  end)
end

-- While loops counted by an integer (src/codegen/cg_countloop.c): a loop
-- whose header tests `k < e` (e unchanged in the loop, k stepped by one
-- `k + 1` on every back edge) runs in chunks of at most 1024 values of k,
-- each charged whole at its start; the header tests k against the chunk's
-- end instead of e, so nothing is added to an iteration. The interpreter's
-- results for entries before, at and after e, runs of several chunks,
-- bounds whose difference overflows, early exits by the other test, by
-- break and by return; endless ones stop; long ones poll at the usual rate.
local D = require "difftest"
local escape = require("stencil_kernels").escape
local function counted(k, e, a)
  local s = 0
  while k < e do
    s = s + a[(k % #a) + 1]
    k = k + 1
  end
  return k, s
end
local function counted_break(k, e, a, stop)
  local s = 0
  while k < e do
    if a[(k % #a) + 1] == stop then break end
    s = s + k
    k = 1 + k
  end
  return k, s
end
local function counted_return(k, e, a, v)
  while k < e do
    if a[(k % #a) + 1] == v then return k end
    k = k + 1
  end
  return -1
end
local function counted_const(a)
  local k, s = 3, 0.0
  while k < 3000 do s = s + a[k % #a + 1] * k; k = k + 1 end
  return s, k
end
local function counted_rows(a, rows, cols)   -- a counted loop inside a for loop
  local t = 0
  for r = 1, rows do
    local c = r
    while c < cols do t = t + a[(c + r) % #a + 1]; c = c + 1 end
  end
  return t
end
local function counted_par(img, maxit)   -- as a kjit.prange body (bench/parallel.lua's mandelbrot)
  local h, w = img.shape[1], img.shape[2]
  for r in kjit.prange(1, h) do
    local row = img[r]
    for c = 1, w do
      local cx, cy = -2.0 + (c - 1) * 3.0 / w, -1.5 + (r - 1) * 3.0 / h
      local x, y, k = 0.0, 0.0, 0
      while k < maxit and x * x + y * y <= 4.0 do
        x, y = x * x - y * y + cx, 2.0 * x * y + cy
        k = k + 1
      end
      row[c] = k
    end
  end
end
local function counted_inside(n)   -- an endless loop charged by the counted loop it enters
  local s = 0
  while s >= 0 do
    local k = 0
    while k < n do k = k + 1 end
    s = (s + 1 + k) % 1000
  end
  return s
end
local function counted_endless(a)
  local k, s = math.mininteger, 0
  while k < math.maxinteger do s = (s + a[(k & 7) + 1]) % 1000; k = k + 1 end
  return s
end

test("counted while loops: the interpreter's results", function()
  local a = kjit.arange(37, "i64")
  for _, c in ipairs({ { 0.25, 0.5, 200 }, { -0.75, 0.1, 1000 }, { -0.1, 0.65, 5000 },
                       { 2.0, 2.0, 50 }, { 0.0, 0.0, 0 }, { 0.0, 0.0, -5 } }) do
    D.check(escape, c[1], c[2], c[3])
  end
  local MAXI, MINI = math.maxinteger, math.mininteger
  for _, r in ipairs({ { 0, 0 }, { 5, 4 }, { 4, 5 }, { 0, 1023 }, { 0, 1024 }, { 0, 1025 },
                       { -7, 3000 }, { 10, 70000 }, { MAXI - 3, MAXI }, { MAXI, MAXI },
                       { MINI, MINI + 2049 }, { MAXI - 1500, MINI } }) do
    D.check(counted, r[1], r[2], a)
    D.check(counted_break, r[1], r[2], a, 30)
    D.check(counted_return, r[1], r[2], a, 36)
  end
  D.check(counted_break, -5000, 5000, a, -1)
  D.check(counted_const, a)
  D.check(counted_rows, a, 40, 1500)
  D.check(counted_rows, a, 3, 0)
  D.check_error("attempt to get length of a nil value", counted, 0, 10, nil)
end)

test("counted while loops: a prange body's, the interpreter's image", function()
  for _, par in ipairs({ true, false }) do
    D.check_opts({ parallel = par }, counted_par, kjit.zeros({ 24, 40 }, "i32"), 300)
    D.check_opts({ parallel = par }, counted_par, kjit.zeros({ 3, 5 }, "i32"), 0)
  end
end)

test("counted while loops run in chunks of their counter (the IR)", function()
  local f = kjit.jit(counted)
  f(0, 10, kjit.arange(4, "i64"))
  local ir = f:inspect("llvm")
  truthy(ir:find("countend", 1, true), "the chunk's end tested at the header:\n" .. ir)
  local m = kjit.jit(counted_par, { parallel = true })
  m(kjit.zeros({ 4, 4 }, "i32"), 10)
  ir = m:inspect("llvm")
  truthy(ir:find("countend", 1, true), "in a parallel body too:\n" .. ir)
  -- a loop that also changes k otherwise is not counted
  local function skip(k, e) while k < e do if k % 3 == 0 then k = k + 2 end k = k + 1 end return k end
  local g = kjit.jit(skip)
  eq(g(0, 100), skip(0, 100))
  truthy(not g:inspect("llvm"):find("countend", 1, true), "k + 3: charged each iteration")
end)

ptest("counted while loops: endless ones stop", function()
  local a = kjit.arange(8, "i64")
  local cases = { { counted_endless, a }, { counted, 0, math.maxinteger, a },
                  { escape, 0.0, 0.0, math.maxinteger }, { counted_inside, 0 },
                  { counted_inside, 3 } }
  for k, c in ipairs(cases) do
    local f = kjit.jit(c[1])
    debug.sethook(raise_on(2, "counted " .. k), "", HUGE)
    raises("counted " .. k, f, table.unpack(c, 2))
  end
  for _, par in ipairs({ true, false }) do
    local f = kjit.jit(counted_par, { parallel = par })
    f(kjit.zeros({ 2, 2 }, "i32"), 5)
    debug.sethook(raise_on(1, "counted prange body"), "", HUGE)
    raises("counted prange body", f, kjit.zeros({ 2, 2 }, "i32"), math.maxinteger)
  end
end)

ptest("counted while loops: polls every ~65536 iterations", function()
  local a = kjit.arange(8, "i64")
  local f = kjit.jit(counted)
  f(0, 10, a)
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local n = 1 << 22
  local k = f(0, n, a)
  debug.sethook()
  eq(k, n, "k")
  -- 2^22 iterations in chunks of 1024, each charged one more: 64 periods
  truthy(calls >= 60 and calls <= 70, "one poll per 65536 iterations: " .. calls)
  -- an escape loop entered many times, each entry charged its bound (at most 1024)
  local rows = kjit.jit(counted_rows)
  rows(a, 2, 3)
  calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  eq(rows(a, 2000, 2000), counted_rows(a, 2000, 2000), "rows")
  debug.sethook()
  -- sum over r of (2000 - r) iterations: about 2e6, 30 periods
  truthy(calls >= 15 and calls <= 40, "rows: " .. calls)
end)

-- Between blocks the launching thread polls too (every 4096 simulated
-- threads): a kernel without loops on a large grid stops there even with
-- a generator that emits no polls.
local function kmark(a) a[cuda.grid(1)] = 1 end
local function ksmark(a) cuda.syncthreads(); a[cuda.grid(1)] = 1 end

for _, c in ipairs({ { "threads in turn", kmark }, { "fibers (syncthreads)", ksmark } }) do
  test("simulated kernel without loops, " .. c[1] .. ": a raising hook stops it between blocks",
       function()
    local prev = cuda.simulate(true)
    local k = cuda.jit(c[2])
    local a = kjit.zeros(8192, "i64")
    k[{ 8, 1 }](a)   -- compiled before the hook is set
    a:fill(0)
    debug.sethook(raise_on(1, "stopped between blocks"), "", HUGE)
    local ok, err = pcall(function() k[{ 8192, 1 }](a) end)
    debug.sethook()
    cuda.simulate(prev)
    truthy(not ok and tostring(err):find("stopped between blocks", 1, true), "error: " .. tostring(err))
    eq(a[1], 1, "the first block ran")
    eq(a[8192], 0, "the last block did not")
  end)
  test("simulated kernel without loops, " .. c[1] .. ": a hook that returns lets it finish",
       function()
    local prev = cuda.simulate(true)
    local k = cuda.jit(c[2])
    local a = kjit.zeros(8192, "i64")
    local calls = 0
    debug.sethook(function() calls = calls + 1 end, "", HUGE)
    local ok, err = pcall(function() k[{ 8192, 1 }](a) end)
    debug.sethook()
    cuda.simulate(prev)
    truthy(ok, "launch: " .. tostring(err))
    local n = 0
    for i = 1, 8192 do n = n + a[i] end
    eq(n, 8192, "every block ran")
    truthy(calls >= 1, "the hook was called between blocks (" .. calls .. ")")
  end)
end

-- Versioned loops charged whole at their test (codegen/cg_func.c,
-- cg_fit_version): an integer for loop with a big body that stores to an
-- element invariant in it (nbody's j loop: vx[i] = vx[i] - dx * mj) is
-- not strip-mined; its fast copy (bounds checks hoisted) is entered only
-- when its iterations fit a poll period, charged them all there, and polls
-- nowhere inside; longer runs, and runs that fail the hoisted test, take
-- the checked copy, which charges each iteration.
local function fitnest(x, y, z, vx, vy, vz, lo, hi, stop)
  for i = 1, #x do
    for j = i + lo, hi do
      local dx, dy, dz = x[i] - x[j], y[i] - y[j], z[i] - z[j]
      local d2 = dx * dx + dy * dy + dz * dz + 1.0
      local g = 1.0 / (d2 * math.sqrt(d2))
      vx[i] = vx[i] - dx * g
      vy[i] = vy[i] - dy * g
      vz[i] = vz[i] - dz * g
      vx[j] = vx[j] + dx * g * 0.5
      vy[j] = vy[j] + dy * g * 0.5
      vz[j] = vz[j] + dz * g * 0.5
      if j == stop then break end
      if j == -stop then return i, j end
    end
  end
  return vx[1], vy[#vy], vz[2]
end
-- the control variable near maxinteger (the range's last value exact),
-- indices taken back into the arrays
local function fitwrap(x, v, lo, hi, off)
  local s = 0.0
  for i = 1, 2 do
    for j = lo, hi do
      local k = j - off
      local d = x[k] - x[i]
      local d2 = d * d + 1.0
      local g = 1.0 / (d2 * math.sqrt(d2)) + d2 * 0.5 - d * 0.25 + g0
      v[i] = v[i] - d * g + 0.125 * d2 - 0.0625 * g * d
      v[k] = v[k] + d * g * 0.5 - 0.25 * d2 + 0.375 * g * d - 1.0 / d2
      s = s + v[i] * 0.5 - v[k] * 0.25
    end
  end
  return s, v[1]
end
g0 = 0.5
local function fitforever(x, v)   -- endless: each entry of the j loop fits a period
  local t = 0
  while t >= 0 do
    for j = 1, #x do
      local d = x[j] - x[1]
      local d2 = d * d + 1.0
      local g = 1.0 / (d2 * math.sqrt(d2)) + d2 * 0.5 - d * 0.25
      v[1] = v[1] - d * g + 0.125 * d2 - 0.0625 * g * d
      v[j] = v[j] + d * g * 0.5 - 0.25 * d2 + 0.375 * g * d - 1.0 / d2
      v[2] = v[2] + g * 0.5 - 0.25 * d + 0.375 * g * d2 - 1.0 / g
    end
    t = t + 1
  end
  return t
end
local function fitarrays(n)
  local x, y, z = kjit.empty(n), kjit.empty(n), kjit.empty(n)
  for i = 1, n do x[i], y[i], z[i] = i * 0.75, (i % 7) * 1.5, (i % 5) - 2.25 end
  return x, y, z, kjit.zeros(n), kjit.zeros(n), kjit.zeros(n)
end

test("fit-charged loops: the interpreter's results, errors and exits", function()
  local x, y, z, vx, vy, vz = fitarrays(12)
  for _, c in ipairs({ { 1, 12 }, { 0, 12 }, { 1, 11 }, { 5, 12 }, { 20, 12 }, { 1, 0 } }) do
    D.check(fitnest, x, y, z, vx, vy, vz, c[1], c[2], 0)
  end
  D.check(fitnest, x, y, z, vx, vy, vz, 1, 12, 7)     -- break
  D.check(fitnest, x, y, z, vx, vy, vz, 1, 12, -9)    -- return from inside
  D.check_error("index", fitnest, x, y, z, vx, vy, vz, 1, 13, 0)   -- past the end: checked copy
  D.check_error("index", fitnest, x, y, z, vx, vy, vz, -1, 12, 0)  -- before the start
  local MAXI, MINI = math.maxinteger, math.mininteger
  local xs, v = kjit.empty(9), kjit.zeros(9)
  for i = 1, 9 do xs[i] = i * 1.25 end
  D.check(fitwrap, xs, v, MAXI - 8, MAXI, MAXI - 9)   -- ends at maxinteger
  D.check(fitwrap, xs, v, MINI, MINI + 8, MINI - 1)   -- starts at mininteger
  D.check(fitwrap, xs, v, MAXI, MAXI - 1, 0)          -- empty
  D.check_error("index", fitwrap, xs, v, MAXI - 9, MAXI, MAXI - 9)
  -- runs longer than a poll period (the checked copy) and just within one
  local n = 65537
  local bx, by, bz, bvx, bvy, bvz = fitarrays(n)
  D.check(fitnest, bx, by, bz, bvx, bvy, bvz, n - 2, n, 0)     -- rows of 65537, 65536, 65535
  D.check(fitnest, bx, by, bz, bvx, bvy, bvz, n - 4, n - 2, 0)
end)

test("fit-charged loops: charged at the test, no poll in the fast copy (the IR)", function()
  local f = kjit.jit(fitnest)
  local x, y, z, vx, vy, vz = fitarrays(6)
  f(x, y, z, vx, vy, vz, 1, 6, 0)
  local ir = f:inspect("llvm")
  local preds, headers = {}, 0
  for blk, from in ir:gmatch("\n(poll[%w.]*):%s*; preds = ([^\n]*)") do
    preds[#preds + 1] = from
    if from:match("^%%b%d") then headers = headers + 1 end
  end
  local all = table.concat(preds, " | ")
  truthy(all:find("fitcharge", 1, true), "a poll after the fit test's charge: " .. all)
  truthy(all:find("checked", 1, true), "the checked copy charges each iteration: " .. all)
  -- neither the fast j loop's header nor the i loop's charges (the j
  -- loop's forprep charges for the i loop: see for_covers below)
  eq(headers, 0, "header charges: " .. all)
  truthy(all:find("skipcharge", 1, true), "the i loop charged where j's is skipped: " .. all)
end)

ptest("fit-charged loops: polls every ~65536 iterations; raising hooks stop them", function()
  local f = kjit.jit(fitnest)
  local x, y, z, vx, vy, vz = fitarrays(3000)
  f(x, y, z, vx, vy, vz, 1, 3000, 0)   -- compiled before the hook is set
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  f(x, y, z, vx, vy, vz, 1, 3000, 0)
  debug.sethook()
  -- 3000 * 2999 / 2 iterations, about 4.5e6: 69 periods (3000 outer
  -- iterations charged too)
  truthy(calls >= 60 and calls <= 80, "one poll per 65536 iterations: " .. calls)
  local ff = kjit.jit(fitforever)
  local fx, fv = kjit.full(500, 1.5), kjit.zeros(500)
  for i = 1, 500 do fx[i] = i * 0.5 end
  debug.sethook(raise_on(3, "fit loop stopped"), "", HUGE)
  raises("fit loop stopped", ff, fx, fv)
  -- one run of 200000 iterations (the checked copy) stops inside
  local bx, by, bz, bvx, bvy, bvz = fitarrays(200000)   -- (f is compiled for these types)
  local got
  debug.sethook(function() got = bvx[1]; debug.sethook(); error("long row stopped", 0) end, "", HUGE)
  raises("long row stopped", f, bx, by, bz, bvx, bvy, bvz, 1, 200000, 0)
  truthy(got ~= 0.0 and bvy[200000] == 0.0, "stopped in the first row, before its end")
end)

-- A loop each of whose iterations passes the forprep of an inner for loop
-- charged at its entry (strip-mined, or charged whole at its fit test) has
-- no charge of its own: the inner loop's entry charges, and its forprep
-- charges one when it skips the loop (codegen/cg_func.c, for_covers).
-- (An inner loop whose bounds are invariant in the outer one is charged by
-- the outer loop's chunks instead: codegen/cg_pollcover.c,
-- test_poll_cover.lua; skiprows' inner loop starts at the row's index.)
local function skiprows(a, rows, n)   -- row r: j = r .. n; n < r skips it
  local s = 0.0
  for r = 1, rows do
    for j = r, n do s = s + a[j] * r end
    s = s * 0.5
  end
  return s
end
local function skipforever(a, n)   -- endless; its inner loop runs n times
  local s, t = 0.0, 0
  while t >= 0 do
    for j = 1, n do s = s + a[j] end
    t = t + 1
  end
  return s, t
end
local function skipbreak(a, rows, n, stop)   -- the outer loop left from inside
  local s = 0
  for r = 1, rows do
    for j = 1, n do
      s = s + a[j]
      if s > stop then return r, j, s end
    end
    if r == stop then break end
  end
  return s
end

test("loops charged by an inner forprep: the interpreter's results", function()
  local a = kjit.arange(1, 101)
  for _, c in ipairs({ { 5, 100 }, { 5, 0 }, { 0, 10 }, { 3, -4 }, { 200, 37 } }) do
    D.check(skiprows, a, c[1], c[2])
  end
  D.check(skipbreak, a, 50, 100, 7)
  D.check(skipbreak, a, 50, 100, 123456)
  D.check(skipbreak, a, 50, 0, 20)
  D.check_error("index", skiprows, a, 3, 101)
end)

test("loops charged by an inner forprep: the skip charges (the IR)", function()
  local f = kjit.jit(skiprows)
  local a = kjit.arange(1, 11)
  f(a, 2, 10)
  local ir = f:inspect("llvm")
  truthy(ir:find("skipcharge", 1, true), "a charge where the inner loop is skipped:\n" .. ir)
end)

ptest("loops charged by an inner forprep: polled when the inner loop is skipped or runs", function()
  local f = kjit.jit(skipforever)
  local a = kjit.arange(1, 101)
  for _, n in ipairs({ 0, -3, 1, 100 }) do
    debug.sethook(raise_on(2, "skip " .. n), "", HUGE)
    raises("skip " .. n, f, a, n)
  end
  local g = kjit.jit(skiprows)
  g(a, 1, 1)
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local got = g(a, 1 << 22, 0)   -- 2^22 rows, each skipped: 64 periods
  debug.sethook()
  eq(got, skiprows(a, 1 << 22, 0), "result")
  truthy(calls >= 60 and calls <= 70, "one poll per 65536 skipped rows: " .. calls)
end)

-- Strip-mined inner loops of a nest (cg_func.c, strip_latch): the start of
-- each chunk after the first is an opaque value (an empty inline asm), so
-- that LLVM sets each row's vector loop up from that row's addresses, not
-- from a recurrence of the chunk loop (bench jacobi, 100 x 100: 1.21x the
-- instructions of polls off with it, 1.04x with the opaque start). The
-- rows are the interpreter's where they cross chunk ends (inner trip
-- counts 65535, 65536, 65537, 131073; steps 1 and -3), the inner loop is
-- still vectorized (packed adds), and polls come as often as before.
local K = require "stencil_kernels"   -- (shared with test_poll_rows.lua)
local stencil2 = K.stencil
local function stepped2(n, m, A, B)
  for i = 1, n do
    for j = m, 1, -3 do B[i][j] = A[i][j] * 2.0 + j end
  end
end
local grid = K.grid

test("strip-mined rows of a nest: the interpreter's elements across chunk ends", function()
  for _, m in ipairs({ 3, 65537, 65538, 65539, 131075 }) do
    D.check(stencil2, 4, m, grid(4, m), kjit.zeros({ 4, m }, "f64"))
    D.check(stepped2, 2, m, grid(2, m), kjit.zeros({ 2, m }, "f64"))
  end
end)

test("strip-mined rows of a nest: an opaque chunk start, a vectorized chunk (the IR, the asm)", function()
  local f = kjit.jit(stencil2)
  f(4, 40, grid(4, 40), kjit.zeros({ 4, 40 }, "f64"))
  local ir, asm = f:inspect("llvm"), f:inspect("asm")
  truthy(ir:find('asm "", "=r,0"', 1, true), "the next chunk's start through an empty asm:\n" .. ir)
  truthy(asm:find("addpd", 1, true), "packed adds in the strip-mined row:\n" .. asm)
  truthy(asm:find("kjit_rt_poll", 1, true), "and a poll:\n" .. asm)
end)

ptest("strip-mined rows of a nest: one poll a chunk", function()
  local f = kjit.jit(stencil2)
  local m = (1 << 20) + 2
  local A, B = grid(3, m), kjit.zeros({ 3, m }, "f64")
  f(3, 4, A, B)
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  f(3, m, A, B)   -- one row of 2^20 iterations: 16 chunks
  debug.sethook()
  -- each chunk charges 65536 and the countdown polls when it goes below
  -- zero: a poll every second chunk, as before the opaque start
  truthy(calls >= 7 and calls <= 9, "one poll per two chunks: " .. calls)
end)
