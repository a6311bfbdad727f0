-- test_prange.lua: kjit.prange and kjit.jit(fn, {parallel = true}).
-- Interpreted, prange is a sequential range, so every parallel loop is
-- checked against the interpreter (difftest): exactly for integers and for
-- float sums whose partial sums are exact, within a tolerance otherwise.
-- The whole file runs again in a child process with KJIT_NUM_THREADS=7
-- (more threads than this machine's cores, so chunks interleave).
local D = require "difftest"
local kjit = require "kjit"
local P = { parallel = true }

local function values(it)
  local t = {}
  for i in it do t[#t + 1] = i end
  return t
end

local function numfor(a, b, s)
  local t = {}
  for i = a, b, s or 1 do t[#t + 1] = i end
  return t
end

local function same_list(got, want, what)
  eq(#got, #want, what .. " length")
  for i = 1, #want do eq(got[i], want[i], what .. " [" .. i .. "]") end
end

-- ---- interpreted kjit.prange ------------------------------------------------

test("prange interpreted: the values of the numeric for", function()
  local maxi, mini = math.maxinteger, math.mininteger
  for _, c in ipairs({ {1, 5}, {1, 0}, {5, 5}, {10, 1, -3}, {1, 10, 4}, {-3, 3, 2},
                       {maxi - 2, maxi}, {mini, mini + 4, 2}, {mini + 2, mini, -1},
                       {maxi, maxi - 6, -3}, {0, -1}, {3, 1, 1} }) do
    same_list(values(kjit.prange(c[1], c[2], c[3])), numfor(c[1], c[2], c[3]),
              table.concat(c, ","))
  end
end)

test("prange interpreted: errors", function()
  raises("kjit.prange: the limit must be an integer (got a float)", function() kjit.prange(1, 2.5) end)
  raises("kjit.prange: the start must be an integer (got a float)", function() kjit.prange(1.0, 2) end)
  raises("kjit.prange: the step must be an integer (got string)", function() kjit.prange(1, 2, "x") end)
  raises("kjit.prange: the limit must be an integer (got no value)", function() kjit.prange(1) end)
  raises("'for' step is zero", function() kjit.prange(1, 2, 0) end)
end)

-- ---- compiled, differential ---------------------------------------------------

local function scale(x, out, k)
  for i in kjit.prange(1, #x) do out[i] = x[i] * k + i end
end

local function isum(x)
  local s = 0
  for i in kjit.prange(1, #x) do s = s + x[i] end
  return s
end

local function fsum(x)
  local s = 0.0            -- a float local: 0 would make it an integer in Lua
  for i in kjit.prange(1, #x) do s = s + x[i] end
  return s
end

local function iprod(x)
  local p = 1
  for i in kjit.prange(1, #x) do p = x[i] * p end
  return p
end

local function iminmax(x)
  local lo, hi = math.maxinteger, math.mininteger
  for i in kjit.prange(1, #x) do
    lo = math.min(lo, x[i])
    hi = math.max(x[i], hi)
  end
  return lo, hi
end

local function minmax(x)
  local lo, hi = math.huge, -math.huge
  for i in kjit.prange(1, #x) do
    lo = math.min(lo, x[i])
    hi = math.max(hi, x[i])      -- floats: this order (see below)
  end
  return lo, hi
end

local function stepped(x, out, a, b, s)
  local n = 0
  for i in kjit.prange(a, b, s) do
    out[i] = out[i] + x[i]
    n = n + 1
  end
  return n
end

local function sub_and_count(x, k)
  local s, cnt = 100, 0
  for i in kjit.prange(1, #x) do
    local v = x[i] % k          -- a private local
    if v == 0 then cnt = cnt + 1 end
    s = s - v
  end
  return s, cnt
end

local function rows(m, out)
  for i in kjit.prange(1, m.shape[1]) do
    local row = m[i]
    local acc = 0
    for j = 1, #row do acc = acc + row[j] * j end
    out[i] = acc
  end
end

local function inner_prange(m, out)
  local total = 0
  for i in kjit.prange(1, #m) do
    for j in kjit.prange(1, #m[i]) do   -- nested: runs as a plain loop
      m[i][j] = m[i][j] + i * j
      total = total + m[i][j]
    end
  end
  return total
end

local function helper(a, i) return a[i] * 2 end
local function with_call(x, out)
  for i in kjit.prange(1, #x) do out[i] = helper(x, i) + helper(x, #x - i + 1) end
end

local function callee_sum(x) return isum(x) end
local function prange_in_callee(m, out)
  for i in kjit.prange(1, #m) do out[i] = callee_sum(m[i]) end
end

local function loopvar_copy(out)
  for i in kjit.prange(1, #out) do
    local k = i
    i = i * 10                  -- the control variable is a copy
    out[k] = i
  end
end

local function ints(n, f, dtype)
  local a = kjit.empty(n, dtype or "i64")
  for i = 1, n do a[i] = f(i) end
  return a
end

for _, opts in ipairs({ { parallel = true }, { parallel = true, boundscheck = false },
                        { parallel = true, opt = 0 }, { parallel = false } }) do
  local tag = (opts.parallel and "parallel" or "sequential") ..
              (opts.boundscheck == false and ", no bounds checks" or "") ..
              (opts.opt == 0 and ", opt 0" or "")
  test("prange " .. tag .. ": element-wise writes", function()
    for _, n in ipairs({ 0, 1, 3, 7, 100, 10007 }) do
      D.check_opts(opts, scale, ints(n, function(i) return i * 7 - 50 end), kjit.zeros(n, "i64"), 3)
      D.check_opts(opts, scale, ints(n, function(i) return i end, "i32"), kjit.zeros(n, "f64"), 0.5)
    end
  end)
  test("prange " .. tag .. ": integer sum and product (wrapping)", function()
    for _, n in ipairs({ 0, 1, 2, 5, 64, 1000, 100003 }) do
      D.check_opts(opts, isum, ints(n, function(i) return i * 1000003 - 77 end))
      D.check_opts(opts, isum, ints(n, function(i) return math.maxinteger // 3 + i end))
      D.check_opts(opts, iprod, ints(n, function(i) return i % 5 == 0 and 3 or i % 7 + 1 end))
      D.check_opts(opts, iprod, ints(n, function(i) return 1000003 * i end))
    end
  end)
  test("prange " .. tag .. ": float sums whose partial sums are exact", function()
    for _, n in ipairs({ 0, 1, 9, 1000, 65536 }) do
      D.check_opts(opts, fsum, ints(n, function(i) return i * 0.25 end, "f64"))
      D.check_opts(opts, fsum, ints(n, function(i) return (i % 9) - 4.5 end, "f32"))
    end
  end)
  test("prange " .. tag .. ": min and max", function()
    for _, n in ipairs({ 0, 1, 4, 1000, 50001 }) do
      D.check_opts(opts, iminmax, ints(n, function(i) return (i * 7919) % 10007 - 5000 end))
      D.check_opts(opts, minmax, ints(n, function(i) return math.sin(i) * 1e6 end, "f64"))
      D.check_opts(opts, minmax, ints(n, function(i) return math.cos(i) end, "f32"))
    end
  end)
  test("prange " .. tag .. ": steps, empty and short ranges", function()
    local n = 1000
    local x = ints(n, function(i) return i end)
    for _, c in ipairs({ {1, n, 1}, {1, n, 2}, {n, 1, -1}, {n, 1, -7}, {5, 4, 1}, {4, 5, -1},
                         {3, 5, 1}, {1, n, 333}, {n, n, 5}, {2, n - 1, 3} }) do
      D.check_opts(opts, stepped, x, kjit.zeros(n, "i64"), c[1], c[2], c[3])
    end
  end)
  test("prange " .. tag .. ": subtraction, private locals and a second reduction", function()
    for _, n in ipairs({ 0, 1, 17, 4096 }) do
      D.check_opts(opts, sub_and_count, ints(n, function(i) return i * i end), 7)
    end
  end)
  test("prange " .. tag .. ": rows of a 2-D array, nested loops", function()
    local m = kjit.empty({ 37, 11 }, "i32")
    for i = 1, 37 do for j = 1, 11 do m[i][j] = i * 100 - j * 3 end end
    D.check_opts(opts, rows, m, kjit.zeros(37, "i64"))
    D.check_opts(opts, inner_prange, m, kjit.zeros(37, "i64"))
  end)
  test("prange " .. tag .. ": calls, and a prange inside a callee", function()
    D.check_opts(opts, with_call, ints(999, function(i) return i - 500 end), kjit.zeros(999, "i64"))
    local m = kjit.empty({ 23, 50 }, "i64")
    for i = 1, 23 do for j = 1, 50 do m[i][j] = i * j end end
    D.check_opts(opts, prange_in_callee, m, kjit.zeros(23, "i64"))
  end)
  test("prange " .. tag .. ": the control variable is a copy", function()
    D.check_opts(opts, loopvar_copy, kjit.zeros(100, "i64"))
  end)
end

-- math.min(a, b) keeps a unless b < a: the argument order decides which of
-- 0.0 and -0.0 survives a tie and what a NaN does, in both orders, at chunk
-- boundaries too (n = 1000: 32 chunks of 31-32 with 2 threads, the first
-- ending at 31; 112 of 8-9 with 7, the first ending at 8).
local function min_se(x, s) for i in kjit.prange(1, #x) do s = math.min(s, x[i]) end return s end
local function min_es(x, s) for i in kjit.prange(1, #x) do s = math.min(x[i], s) end return s end
local function max_se(x, s) for i in kjit.prange(1, #x) do s = math.max(s, x[i]) end return s end
local function max_es(x, s) for i in kjit.prange(1, #x) do s = math.max(x[i], s) end return s end

test("prange parallel: min/max reductions keep Lua's tie and NaN rules", function()
  local n = 1000
  local nan = 0 / 0
  local cases = {}
  for _, pos in ipairs({ { 1 }, { 31 }, { 32 }, { 8, 500 }, { 9, 501 }, { 999 }, { 1000 }, { 1, 1000 } }) do
    for _, v in ipairs({ -0.0, nan }) do
      local a = kjit.zeros(n)
      for _, p in ipairs(pos) do a[p] = v end
      cases[#cases + 1] = a
    end
  end
  local mixed = kjit.empty(n)
  for i = 1, n do mixed[i] = (i % 3 == 0) and -0.0 or ((i % 7 == 0) and 0.0 or (i % 5) * 1.0) end
  cases[#cases + 1] = mixed
  for _, f in ipairs({ min_se, max_se }) do
    for _, a in ipairs(cases) do
      for _, s0 in ipairs({ 0.0, -0.0, nan, math.huge, -math.huge }) do
        D.check_opts(P, f, a, s0)
      end
    end
  end
  -- integers: either argument order
  local ints_a = ints(n, function(i) return (i * 7919) % 1009 - 500 end)
  for _, f in ipairs({ min_se, min_es, max_se, max_es }) do
    for _, s0 in ipairs({ 0, -600, 600, math.maxinteger, math.mininteger }) do
      D.check_opts(P, f, ints_a, s0)
    end
  end
  -- floats in the order math.min(e, s): a NaN element restarts the
  -- reduction, which chunks cannot reproduce: refused, with the fix
  raises("write the float reduction of 's' as 's = math.min(s, e)', not 'math.min(e, s)'",
         function() kjit.jit(min_es, P)(cases[1], 0.0) end)
  raises("write the float reduction of 's' as 's = math.max(s, e)', not 'math.max(e, s)'",
         function() kjit.jit(max_es, P)(cases[1], 0.0) end)
  -- sequentially both orders compile and agree with the interpreter
  for _, f in ipairs({ min_es, max_es }) do
    for _, a in ipairs(cases) do D.check(f, a, 0.0) end
  end
end)

-- Run-time errors: every iteration reads, none writes, so the arrays stay
-- comparable; the error raised is the one the first failing iteration (in
-- sequential order) raises, whichever thread met it first.
local function bad_index(x, k)
  local s = 0
  for i in kjit.prange(1, #x) do
    if i >= k then s = s + x[i + 1000] else s = s + x[i] end
  end
  return s
end

local function idiv(x, k)
  local s = 0
  for i in kjit.prange(1, #x) do s = s + x[i] // (i - k) end
  return s
end

local function user_error(x, k)
  local s = 0
  for i in kjit.prange(1, #x) do
    if i == k then error("iteration k failed") end
    s = s + x[i]
  end
  return s
end

-- an error raised in a callee that is not inlined reaches the caller
-- through the callee's status (a return of that status from the body)
local function big_callee(x, i)
  local s = 0
  for k = 1, 40 do
    s = s + x[(i + k) % #x + 1] * k
    if s > 1e15 then error("too big") end
  end
  if i == 777 then s = s // (i - i) end
  return s
end
local function calls_big(x)
  local t = 0
  for i in kjit.prange(1, #x) do t = t + big_callee(x, i) end
  return t
end

test("prange parallel: run-time errors are raised once, with their location", function()
  D.check_opts(P, calls_big, ints(500, function(i) return i end))
  D.check_opts(P, calls_big, ints(1000, function(i) return i end))
  local x = ints(5000, function(i) return i end)
  for _, k in ipairs({ 1, 2, 700, 2501, 4999, 5000 }) do
    D.check_opts(P, bad_index, x, k)
    D.check_opts(P, user_error, x, k)
  end
  for _, k in ipairs({ 1, 1234, 5000 }) do
    D.check_opts(P, idiv, x, k)
  end
  -- the state is usable afterwards
  eq(kjit.jit(isum, P)(x), 5000 * 5001 // 2)
end)

test("prange parallel: a float sum within rounding of the sequential one", function()
  local n = 200001
  local x = ints(n, function(i) return 1 / i end, "f64")
  local want = fsum(x)
  local got = kjit.jit(fsum, P)(x)
  near(got, want, 1e-12, "harmonic sum")
  eq(kjit.jit(fsum, P)(x), got, "the same chunks give the same result every time")
  local f32 = kjit.array(x, "f32")
  near(kjit.jit(fsum, P)(f32), fsum(f32), 1e-5, "f32 harmonic sum")
end)

test("prange: set_num_threads and get_num_threads", function()
  local n0 = kjit.get_num_threads()
  truthy(math.type(n0) == "integer" and n0 >= 1, "get_num_threads is a positive integer")
  local x = ints(100001, function(i) return 1 / i end, "f64")
  local f = kjit.jit(fsum, P)
  kjit.set_num_threads(1)
  eq(kjit.get_num_threads(), 1)
  -- one chunk, started from the variable's own value: exactly the sequential sum
  eq(f(x), fsum(x), "one thread")
  kjit.set_num_threads(n0)
  eq(kjit.get_num_threads(), n0)
  near(f(x), fsum(x), 1e-12)
  raises("kjit.set_num_threads: 0 threads asked for, the pool has 1 to " .. n0,
         function() kjit.set_num_threads(0) end)
  raises("the pool has 1 to " .. n0, function() kjit.set_num_threads(n0 + 1) end)
  raises("number expected", function() kjit.set_num_threads("x") end)
end)

test("prange: the parallel loop calls the thread pool, a sequential one does not", function()
  local fp = kjit.jit(scale, P)
  fp:compile("void(f64[:], f64[:], f64)")
  truthy(fp:inspect("llvm"):find("kjit_rt_parallel_for", 1, true), "parallel IR calls the pool")
  local fs = kjit.jit(scale)
  fs:compile("void(f64[:], f64[:], f64)")
  truthy(not fs:inspect("llvm"):find("kjit_rt_parallel_for", 1, true), "sequential IR does not")
  -- the outlined body is vectorized like any loop
  truthy(fp:inspect("asm"):find("[xyz]mm"), "SIMD registers in the parallel body")
end)

test("kjit.jit(jit object, {parallel = true}) makes a parallel object", function()
  local plain = kjit.jit(isum)
  truthy(rawequal(kjit.jit(plain), plain), "no options: the object itself")
  local par = kjit.jit(plain, P)
  truthy(not rawequal(par, plain), "a new object")
  truthy(par.lua == isum, "for the same function")
  par:compile("i64(i64[:])")
  truthy(par:inspect("llvm"):find("kjit_rt_parallel_for", 1, true), "with the new options")
end)

test("prange parallel: from the disk cache", function()
  local dir = os.tmpname()
  os.remove(dir)
  kjit.cache_dir(dir)
  local x = ints(10000, function(i) return i * 3 end)
  local a = kjit.jit(isum, { parallel = true, cache = true })
  eq(a(x), isum(x))
  local b = kjit.jit(isum, { parallel = true, cache = true })
  local hits = kjit.cache_stats().hits
  eq(b(x), isum(x))
  eq(kjit.cache_stats().hits, hits + 1, "the second object loads the cached code")
  kjit.cache_clear()
  kjit.cache_dir(false)
  os.remove(dir)
end)

-- ---- compile errors -----------------------------------------------------------

local function assigns_outer(x)
  local last = 0
  for i in kjit.prange(1, #x) do last = x[i] end
  return last
end

local function reads_reduction(x)
  local s = 0
  for i in kjit.prange(1, #x) do s = s + x[i] * s end
  return s
end

local function mixed_ops(x)
  local s = 0
  for i in kjit.prange(1, #x) do
    if i % 2 == 0 then s = s + x[i] else s = s * x[i] end
  end
  return s
end

local function mixed_min_order(x)
  local s = 0
  for i in kjit.prange(1, #x) do
    if i % 2 == 0 then s = math.min(s, x[i]) else s = math.min(x[i], s) end
  end
  return s
end

local function returns_inside(x)
  for i in kjit.prange(1, #x) do if x[i] < 0 then return i end end
  return 0
end

local function breaks_inside(x)
  for i in kjit.prange(1, #x) do if x[i] < 0 then break end end
end

local function inner_break_is_fine(x)
  local s = 0
  for i in kjit.prange(1, #x) do
    for j = 1, 10 do if j > i then break end s = s + j end
  end
  return s
end

local function goto_out(x)
  for i in kjit.prange(1, #x) do if x[i] < 0 then goto done end end
  ::done::
end

local function float_bounds(x)
  for i in kjit.prange(1, #x / 2) do x[i] = 0 end
end

local function one_arg(x)
  for i in kjit.prange(#x) do x[i] = 0 end
end

local function two_vars(x)
  for i, j in kjit.prange(1, #x) do x[i] = j end
end

local function as_value(x)
  local r = kjit.prange(1, #x)
  return 0
end

local function bounds3(n) return n, 3 end
local function limit_call(x)
  local s = 0
  for i in kjit.prange(1, bounds3(#x)) do s = s + i end
  return s
end
local function limit_call_paren(x)
  local s = 0
  for i in kjit.prange(1, (bounds3(#x))) do s = s + i end
  return s
end

local function mul_reduction_of_array(x, y)
  for i in kjit.prange(1, #x) do x = y end
end

test("prange: compile errors name the construct and the line", function()
  local x = kjit.arange(1, 11)
  local function line_of(fn) return debug.getinfo(fn, "S").linedefined end
  raises("test_prange.lua:" .. line_of(assigns_outer) + 2 .. ": compile error for (i64[:]): kjit.prange loop (line " ..
         line_of(assigns_outer) + 2 .. "): local 'last' is assigned in the loop but not as a reduction",
         function() kjit.jit(assigns_outer, P)(x) end)
  raises("local 's' is a reduction (s = s + e) and may appear in the loop only in its reduction statements",
         function() kjit.jit(reads_reduction, P)(x) end)
  raises("local 's' is reduced as both s + e and s * e", function() kjit.jit(mixed_ops, P)(x) end)
  raises("local 's' is reduced as both math.min(s, e) and math.min(e, s)",
         function() kjit.jit(mixed_min_order, P)(x) end)
  raises("test_prange.lua:" .. line_of(returns_inside) + 1 .. ": compile error for (i64[:]): cannot return from inside a kjit.prange loop",
         function() kjit.jit(returns_inside, P)(x) end)
  raises("cannot break out of a kjit.prange loop", function() kjit.jit(breaks_inside, P)(x) end)
  eq(kjit.jit(inner_break_is_fine, P)(x), inner_break_is_fine(x))
  raises("cannot goto out of a kjit.prange loop", function() kjit.jit(goto_out, P)(x) end)
  raises("kjit.prange: the limit value must be an integer (it is f64)",
         function() kjit.jit(float_bounds, P)(x) end)
  raises("kjit.prange takes 2 or 3 arguments (start, limit [, step]), not 1",
         function() kjit.jit(one_arg, P)(x) end)
  raises("kjit.prange gives one loop variable, not 2", function() kjit.jit(two_vars, P)(x) end)
  eq(limit_call(x), 22, "interpreted: the call's second result is the step")
  -- the bytecode pipeline passes the call's second result as the step,
  -- as the interpreter does
  D.check_opts(P, limit_call, x)
  D.check_opts({}, limit_call, x)
  D.check_opts(P, limit_call_paren, x)
  raises("kjit.prange can only be the iterator of a for loop", function() kjit.jit(as_value, P)(x) end)
  raises("local 'x' is assigned in the loop but not as a reduction",
         function() kjit.jit(mul_reduction_of_array, P)(x, x) end)
  -- without parallel = true the same loops are sequential, so most of them compile
  eq(kjit.jit(assigns_outer)(x), 10)
  eq(kjit.jit(returns_inside)(kjit.arange(-3, 3)), 1)
  raises("kjit.jit: option 'parallel' must be a boolean", function() kjit.jit(isum, { parallel = 1 }) end)
end)

test("prange in a cuda kernel is a plain loop", function()
  local cuda = kjit.cuda
  local function k(x, out)
    local i = cuda.grid(1)
    if i <= #x then
      local s = 0
      for j in kjit.prange(1, i) do s = s + x[j] end
      out[i] = s
    end
  end
  local ok, ptx = pcall(cuda.compile_ptx, k, "void(i64[:], i64[:])")
  if not ok and tostring(ptx):find("libNVVM") then skip("no libNVVM: " .. tostring(ptx)) end
  truthy(ok, tostring(ptx))
  truthy(not ptx:find("parallel_for"), "no pool call in PTX")
end)

-- ---- interrupt polls: chunks of 65536 iterations --------------------------------
-- A prange loop (serial, or in its worker) runs in chunks of at most 65536
-- iterations charged to the poll countdown at their start, and a parallel
-- body's inner numeric loops are strip-mined (src/codegen/cg_prange.c): the
-- iterations around chunk ends, with steps, reductions and inner loops.
local function stepped_sum(x, a, b, s)
  local t, c = 0, 0.0
  for i in kjit.prange(a, b, s) do
    x[i] = x[i] + i
    t = t + x[i]
    c = c + 0.5
  end
  return t, c
end

local function inner_long(m, out)
  for i in kjit.prange(1, m.shape[1]) do
    local row, acc = m[i], 0
    for j = 1, m.shape[2] do row[j] = row[j] * 2 + j; acc = acc + row[j] end
    out[i] = acc
  end
end

test("prange: chunks of the poll countdown, at their boundaries", function()
  local C = 65536
  local n0 = kjit.get_num_threads()
  local ok, err = pcall(function()
  for _, threads in ipairs({ 1, n0 }) do
    kjit.set_num_threads(threads)
    for _, opts in ipairs({ { parallel = true }, { parallel = false } }) do
      for _, c in ipairs({ {1, C}, {1, C + 1}, {1, 2 * C + 3}, {2 * C + 1, 1, -1}, {1, 3 * C, 3},
                           {3 * C, 2, -2}, {C, C}, {5, 4} }) do
        local n = math.max(c[1], c[2])
        D.check_opts(opts, stepped_sum, kjit.arange(n, "i64"), c[1], c[2], c[3] or 1)
      end
      local m = kjit.zeros({ 3, 2 * C + 5 }, "i64")
      D.check_opts(opts, inner_long, m, kjit.zeros(3, "i64"))
    end
  end
  end)
  kjit.set_num_threads(n0)
  if not ok then error(err, 0) end
end)

-- A parallel body's inner loop has a single-chunk copy (src/codegen/
-- cg_version.c), entered when its iterations fit one chunk: rows of 65535,
-- 65536 (the largest that fits) and 65537 (two chunks) columns, a row
-- left early (break: a value made in the loop read after it), a row
-- that does not run, and a float row whose step is not one.
local function inner_fit(m, out, lim)
  for i in kjit.prange(1, m.shape[1]) do
    local row, acc, at = m[i], 0, 0
    for j = 1, m.shape[2] do
      local x = row[j] * 3 + j
      row[j] = x
      acc = acc + x
      if x > lim then at = j break end
    end
    out[i] = acc * 1000000 + at
  end
end
local function inner_fit_f(m, out)
  for i in kjit.prange(1, m.shape[1]) do
    local row, s = m[i], 0.0
    for j = m.shape[2], 1, -2 do s = s + row[j] * 0.5 end
    out[i] = s
  end
end

test("prange: a parallel body's inner loop in one chunk or in several", function()
  -- compiled once, against the interpreted function (each row interpreted
  -- once per size: the rows are long); the arrays are compared whole
  local C = 65536
  local fi, ff = kjit.jit(inner_fit, { parallel = true }), kjit.jit(inner_fit_f, { parallel = true })
  local function same(a, b, what)
    eq(a.size, b.size, what .. ": size")
    local fa, fb = a:reshape(a.size), b:reshape(b.size)
    for i = 1, a.size do
      if fa[i] ~= fb[i] then eq(fb[i], fa[i], what .. ": element " .. i) end
    end
  end
  local n0 = kjit.get_num_threads()
  local ok, err = pcall(function()
    for _, cols in ipairs({ C - 1, C, C + 1, 0, 7 }) do
      local function mat() return cols == 0 and kjit.zeros({ 2, 0 }, "i64") or kjit.arange(2 * cols, "i64"):reshape({ 2, cols }) end
      local function fmat() return cols == 0 and kjit.zeros({ 2, 0 }) or kjit.full({ 2, cols }, 1.5) end
      for _, lim in ipairs({ 1 << 40, 2 * C + 2 }) do
        local m, out = mat(), kjit.zeros(2, "i64")
        inner_fit(m, out, lim)
        local mf, outf = fmat(), kjit.zeros(2)
        inner_fit_f(mf, outf)
        for _, threads in ipairs({ 1, n0 }) do
          kjit.set_num_threads(threads)
          local what = cols .. " columns, limit " .. lim .. ", " .. threads .. " threads"
          local m2, out2 = mat(), kjit.zeros(2, "i64")
          fi(m2, out2, lim)
          same(m, m2, what .. ": the rows")
          same(out, out2, what .. ": the sums")
          local mf2, outf2 = fmat(), kjit.zeros(2)
          ff(mf2, outf2)
          same(outf, outf2, what .. ": the float sums")
        end
      end
    end
  end)
  kjit.set_num_threads(n0)
  if not ok then error(err, 0) end
end)

-- The polls leave the loops LLVM vectorizes without them vectorized: the
-- optimized IR of a prange body (parallel and serial), of its inner loops
-- and of a plain numeric loop holds vector arithmetic (<k x double>,
-- <k x float>: the target's width), and still polls.
local function saxpy(a, x, y, out)
  for i in kjit.prange(1, #x) do out[i] = a * x[i] + y[i] end
end
local function matmul(a, b, c)
  local n, m, p = a.shape[1], a.shape[2], b.shape[2]
  for i in kjit.prange(1, n) do
    local ci, ai = c[i], a[i]
    for j = 1, p do ci[j] = 0.0 end
    for k = 1, m do
      local aik, bk = ai[k], b[k]
      for j = 1, p do ci[j] = ci[j] + aik * bk[j] end
    end
  end
end
local function plain_axpy(a, x, y)
  for i = 1, #x do y[i] = a * x[i] + y[i] end
end
local function short_rows(m, v)   -- a nest with a short inner loop
  for i = 1, m.shape[1] do
    local row = m[i]
    for j = 1, #row do row[j] = row[j] + v[j] * 2.0 end
  end
end

test("prange: polls keep loops vectorized (the IR's vector types)", function()
  local function vector_ir(fn, opts, args, ty, what)
    local f = kjit.jit(fn, opts)
    f(table.unpack(args))
    local ir = f:inspect("llvm")
    truthy(ir:find("kjit_rt_poll", 1, true), what .. ": polls")
    truthy(ir:find("<%d+ x " .. ty .. ">"), what .. ": vector " .. ty .. " arithmetic")
  end
  local x, y, o = kjit.full(64, 1, "f32"), kjit.full(64, 1, "f32"), kjit.zeros(64, "f32")
  local a, b, c = kjit.full({ 8, 8 }, 1.0), kjit.full({ 8, 8 }, 1.0), kjit.zeros({ 8, 8 })
  for _, par in ipairs({ true, false }) do
    local tag = par and "parallel" or "serial"
    vector_ir(saxpy, { parallel = par }, { 2.0, x, y, o }, "float", tag .. " prange body")
    vector_ir(matmul, { parallel = par }, { a, b, c }, "double", tag .. " prange's inner loops")
  end
  -- the parallel body's inner loops: each has a single-chunk copy
  -- (cg_version.c), and that copy is the one vectorized as without polls
  -- (its scalar remainder's preheader follows a vector loop); the chunked
  -- copy stays for longer rows. The worker whose bounds checks are hoisted
  -- (test_prange_hoist.lua; the second one made) is the one that runs: its
  -- zeroing loop is a memset, its accumulating loop vectorized
  local pm = kjit.jit(matmul, { parallel = true })
  pm(a, b, c)
  local ir, n = pm:inspect("llvm"), 0
  local fast = ir:match("(\ndefine internal[^\n]*@kcg_spec%d+_prange1%(.-\n}\n)") or ""
  for preds in fast:gmatch("\nonechunk%d*%.preheader:([^\n]*)") do
    if preds:find("%vector.body", 1, true) or preds:find("%middle.block", 1, true) then n = n + 1 end
  end
  eq(n, 1, "a vectorized single-chunk copy of matmul's accumulating loop:\n" .. ir)
  truthy(fast:find("@llvm.memset", 1, true), "its zeroing loop a memset:\n" .. ir)
  truthy(fast:find("\nchunk%d*:"), "and chunked copies:\n" .. ir)
  vector_ir(plain_axpy, nil, { 2.0, kjit.full(64, 1.0), kjit.full(64, 1.0) }, "double", "a plain loop")
  vector_ir(short_rows, nil, { kjit.full({ 8, 16 }, 1.0), kjit.full(16, 1.0) }, "double",
            "a short inner loop")
end)

-- A loop charging the poll countdown each iteration (a while loop, here
-- the parallel mandelbrot's with its tests swapped: `n < maxit` first
-- would make it a counted loop, charged by chunks, cg_countloop.c) tests
-- the countdown's sign after the subtraction (src/codegen/cg_func.c,
-- cg_poll_charge): on x86 one decrement and a branch on its sign flag, no
-- separate compare; and LLVM makes that branch the loop's latch.
local function escape_rows(img, maxit)
  local h, w = img.shape[1], img.shape[2]
  for r in kjit.prange(1, h) do
    local row = img[r]
    for c = 1, w do
      local cx, cy = -2.0 + (c - 1) * 3.0 / w, -1.5 + (r - 1) * 3.0 / h
      local x, y, n = 0.0, 0.0, 0
      while x * x + y * y <= 4.0 and n < maxit do
        x, y = x * x - y * y + cx, 2.0 * x * y + cy
        n = n + 1
      end
      row[c] = n
    end
  end
end

test("prange: a per-iteration poll charge is a decrement and a sign branch (x86)", function()
  for _, par in ipairs({ true, false }) do
    local f = kjit.jit(escape_rows, { parallel = par })
    local img, want = kjit.zeros({ 6, 7 }, "i32"), kjit.zeros({ 6, 7 }, "i32")
    f(img, 50)
    escape_rows(want, 50)
    for i = 1, 6 do for j = 1, 7 do eq(img[i][j], want[i][j], "pixel " .. i .. "," .. j) end end
    local asm = f:inspect("asm")
    if asm:find("%rsp", 1, true) then   -- x86-64
      truthy(asm:find("kjit_rt_poll", 1, true), "polls")
      -- (decq, or addq $-1 / subq $1 where the CPU's tuning prefers it:
      -- LLVM 14 tunes for a CPU it does not know, Zen 5, as generic)
      local dec = asm:find("\n%s*decq%s+%%%w+\n%s*jns?%s") or asm:find("\n%s*addq%s+%$%-1,%s*%%%w+\n%s*jns?%s")
                  or asm:find("\n%s*subq%s+%$1,%s*%%%w+\n%s*jns?%s")
      truthy(dec, (par and "parallel" or "serial") .. ": a decrement and a sign branch:\n" .. asm)
    end
  end
end)

test("prange: the parallel benchmark's kernels agree with the plain loops", function()
  local p = assert(io.popen(string.format("lua5.4 bench/parallel.lua %q --check 2>&1", arg[1])))
  local out = p:read("a")
  local ok = p:close()
  truthy(ok, "bench/parallel.lua --check failed:\n" .. out)
  for _, k in ipairs({ "saxpy", "dot", "mandelbrot", "matmul", "vectorize", "reduce" }) do
    truthy(out:find(k .. ": same results", 1, true), k .. ":\n" .. out)
  end
end)

test("kjit.clock is a monotonic wall clock", function()
  local a = kjit.clock()
  local b = kjit.clock()
  truthy(math.type(a) == "float" and b >= a, "monotonic")
end)

-- ---- the same again with 7 threads --------------------------------------------

if os.getenv("KJIT_PRANGE_CHILD") == nil then
  test("prange: the whole file again with KJIT_NUM_THREADS=7", function()
    local cmd = string.format("KJIT_NUM_THREADS=7 KJIT_PRANGE_CHILD=1 lua5.4 tests/lua/harness.lua %q %q 2>&1",
                              arg[1], arg[2] or "tests/lua/test_prange.lua")
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    truthy(out:find("test_prange: %d+ passed, 0 failed"), "child run:\n" .. out)
    truthy(out:find("KJIT_NUM_THREADS=7 sees 7 threads", 1, true), "child saw 7 threads:\n" .. out)
  end)
else
  test("KJIT_NUM_THREADS sets the pool size", function()
    eq(kjit.get_num_threads(), 7)
    print("KJIT_NUM_THREADS=7 sees 7 threads")
  end)
end
