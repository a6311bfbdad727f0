-- test_prange_hoist.lua: bounds checks hoisted out of parallel kjit.prange
-- bodies (src/codegen/cg_prange.c, cg_version.c's cg_version_worker_test).
-- Each call of a worker tests once, for its chunk of i and the whole
-- range of the inner loops whose bounds the body does not change, that
-- every affine access of the body is in bounds, and runs a body without
-- those checks; when the test fails the worker with every check runs the
-- chunk and raises at the exact iteration. Compared with the interpreter
-- (difftest): results, arrays, and the error message with its file:line
-- when an index leaves its array at the first, the last or a middle
-- iteration, with negative steps, empty loops, inner loops left by break,
-- on one thread and on every thread of the pool, and over several poll
-- chunks (65536 iterations). Plus the IR facts: the fast worker's loops
-- hold no check (they vectorize or unroll), the checked one stays.
local D = require "difftest"
local kjit = D.kjit
local P = { parallel = true }
local H = require "hoist_harness"
local ramp, mat, on_threads, every_threads = H.ramp, H.mat, H.on_threads, H.every_threads
local worker_ir, has_checks = H.worker_ir, H.has_checks
local K = H.kernels
local dot, shifted, guarded, saxpy, matmul, stencil = K.dot, K.shifted, K.guarded, K.saxpy, K.matmul, K.stencil
local function oob(fn, ...) H.oob(P, nil, fn, ...) end

---------------------------------------------------------------------------
-- bodies that only read (the arrays stay comparable after an error: no
-- chunk writes past the failing iteration): dot, shifted, guarded from
-- hoist_harness, and these; the bodies that write (saxpy, matmul, stencil)
-- have their errors checked on one thread, where chunks run in order and
-- the first failing one ends the loop
---------------------------------------------------------------------------
-- an inner loop over invariant bounds, row-major keys in both variables
local function rowsum(x, n, m, w)
  local s = 0.0
  for i in kjit.prange(1, n) do
    for j = 1, m do s = s + x[(i - 1) * w + j] end
  end
  return s
end

-- an inner loop left by break (its range is tested whole; the test may
-- fail where the loop never gets there: then the checked worker runs)
local function find_rows(m, lim, cols)
  local c = 0
  for i in kjit.prange(1, m.shape[1]) do
    local row = m[i]
    for j = 1, cols do
      if row[j] > lim then c = c + j break end
    end
  end
  return c
end

test("prange hoist: a reduction in and out of range, steps, empty loops", function()
  every_threads(function()
    local x, y = ramp(50), ramp(50)
    D.check_opts(P, dot, x, y, 1, 50, 1)
    D.check_opts(P, dot, x, y, 7, 31, 3)
    D.check_opts(P, dot, x, y, 50, 1, -1)            -- negative step
    D.check_opts(P, dot, x, y, 49, 2, -5)
    D.check_opts(P, dot, x, y, 5, 4, 1)              -- empty
    D.check_opts(P, dot, x, y, 4, 5, -1)             -- empty
    D.check_opts(P, dot, x, ramp(49), 1, 49, 1)
    oob(dot, x, y, 0, 50, 1)                         -- the first iteration
    oob(dot, x, y, 1, 51, 1)                         -- the last
    oob(dot, x, ramp(49), 1, 50, 1)                  -- the other array
    oob(dot, x, y, 51, 1, -1)                        -- the first, stepping down
    oob(dot, x, y, 50, 0, -1)                        -- the last, stepping down
    oob(dot, x, y, 1, 52, 3)                         -- 1, 4, ..., 52
    oob(dot, x, y, math.mininteger, 3, 1)
    D.check_opts(P, dot, x, y, 1, 51, 3)             -- 1, 4, ..., 49: in range
  end)
end)

test("prange hoist: +-i plus invariant sums, first and last iteration", function()
  every_threads(function()
    local x, z = ramp(40), ramp(40)
    D.check_opts(P, shifted, x, z, 1, 30, 5, 35)
    D.check_opts(P, shifted, x, z, 1, 34, 5, 34)     -- both ends exactly
    oob(shifted, x, z, 1, 35, 5, 35)                 -- x[41] at the last
    oob(shifted, x, z, 0, 30, 5, 40)                 -- z[41] at the first
    oob(shifted, x, z, 1, 30, -2, 35)                -- x[0] at the first
    oob(shifted, x, z, 1, 30, 5, 29)                 -- z[0] at the last
    oob(shifted, x, z, 1, 30, math.maxinteger, 35)   -- the key wraps
    oob(shifted, x, z, 1, 30, 5, math.mininteger)
    D.check_opts(P, shifted, x, z, 1, 30, math.maxinteger - 34, 35)   -- wraps into range
  end)
end)

test("prange hoist: an error at a middle iteration", function()
  every_threads(function()
    local x = ramp(5000)
    for _, k in ipairs({ 1, 2, 2500, 4999, 5000 }) do oob(guarded, x, 5000, k) end
    D.check_opts(P, guarded, x, 5000, 5001)          -- never taken: no error
  end)
end)

test("prange hoist: inner loops, row-major keys, break", function()
  every_threads(function()
    local x = ramp(60)
    D.check_opts(P, rowsum, x, 6, 10, 10)
    D.check_opts(P, rowsum, x, 6, 0, 10)             -- the inner loop never runs
    oob(rowsum, x, 7, 10, 10)                        -- the last row leaves x
    oob(rowsum, x, 6, 11, 10)                        -- the last row's 11th column: x[61]
    oob(rowsum, x, 6, 10, -1)                        -- negative scale
    oob(rowsum, x, 6, 10, math.maxinteger)           -- products beyond an i64
    local m = mat(5, 8, function(i, j) return i * j end)
    D.check_opts(P, find_rows, m, 12, 8)
    D.check_opts(P, find_rows, m, 12, 9)             -- past a row, after the break: no error
    oob(find_rows, m, 1000, 9)                       -- reaches column 9: error
  end)
end)

test("prange hoist: writing bodies", function()
  local a, b = mat(7, 5, function(i, j) return i + 2 * j end), mat(5, 6, function(i, j) return i * j - 3 end)
  every_threads(function()
    D.check_opts(P, matmul, a, b, kjit.zeros({ 7, 6 }))
    D.check_opts(P, matmul, a, mat(5, 0, function() return 0 end), kjit.zeros({ 7, 0 }))
    local x = mat(6, 7, function(i, j) return i * 10 + j * j end)
    D.check_opts(P, stencil, kjit.zeros({ 6, 7 }), x, 6, 2, 6)
    D.check_opts(P, stencil, kjit.zeros({ 6, 7 }), x, 6, 3, 2)   -- empty rows
    local n = 70000                                    -- two poll chunks
    D.check_opts(P, saxpy, 2.0, ramp(n), ramp(n), kjit.zeros(n), 1, n)
    D.check_opts(P, saxpy, 2.0, ramp(n), ramp(n), kjit.zeros(n), 3, n - 2)
  end)
  on_threads(1, function()   -- errors: chunks in order, the first failing one raises
    oob(matmul, a, b, kjit.zeros({ 7, 5 }))          -- c's columns: row 1's last j
    oob(matmul, a, b, kjit.zeros({ 6, 6 }))          -- c's rows: the last i
    local x = mat(6, 7, function(i, j) return i * 10 + j * j end)
    oob(stencil, kjit.zeros({ 6, 7 }), x, 6, 1, 6)   -- x[i][0] at the first
    oob(stencil, kjit.zeros({ 6, 7 }), x, 7, 2, 6)   -- x[7] at the last row
    oob(saxpy, 2.0, ramp(20), ramp(20), kjit.zeros(20), 1, 21)
    oob(saxpy, 2.0, ramp(20), ramp(19), kjit.zeros(20), 1, 20)
    oob(saxpy, 2.0, ramp(20), ramp(20), kjit.zeros(20), 0, 20)
  end)
end)

-- random ranges, steps and offsets around the arrays' ends (a fixed seed):
-- whatever the interpreter does, in range or raising, the compiled
-- parallel loop does
local function stepped(x, z, a, b, c, off, k)
  local s = 0
  for i in kjit.prange(a, b, c) do s = s + (x[i + off] - z[k - i]) end
  return s
end

test("prange hoist: random ranges, steps and offsets", function()
  local x, z = ramp(30, "i64"), ramp(20, "i64")
  local seed = 12345
  local function rnd(lo, hi)   -- a small LCG: the same cases on every run
    seed = (seed * 1103515245 + 12345) % 2147483648
    return lo + seed % (hi - lo + 1)
  end
  every_threads(function()
    local raised = 0
    for _ = 1, 60 do
      local c = rnd(1, 4) * (rnd(0, 1) == 0 and -1 or 1)
      local a, b = rnd(-3, 33), rnd(-3, 33)
      local r, msg = D.check_opts(P, stepped, x, z, a, b, c, rnd(-3, 3), rnd(15, 35))
      if r == nil and msg then raised = raised + 1 end
    end
    truthy(not D.jit_available() or (raised > 5 and raised < 55), "both kinds of case: " .. raised .. " raised")
  end)
end)


test("prange hoist: the fast worker's loops hold no checks (IR facts)", function()
  local function isaxpy(x, y, out)
    for i in kjit.prange(1, #x) do out[i] = 3 * x[i] + y[i] end
  end
  local cases = {
    { dot, { ramp(8), ramp(8), 1, 8, 1 } },
    { shifted, { ramp(8), ramp(8), 1, 4, 1, 6 } },
    { rowsum, { ramp(12), 3, 4, 4 } },
    { matmul, { kjit.zeros({ 3, 3 }), kjit.zeros({ 3, 3 }), kjit.zeros({ 3, 3 }) } },
    { stencil, { kjit.zeros({ 4, 4 }), kjit.zeros({ 4, 4 }), 4, 2, 3 } },
    { isaxpy, { ramp(8, "i64"), ramp(8, "i64"), kjit.zeros(8, "i64") } },
  }
  for n, c in ipairs(cases) do
    local f = kjit.jit(c[1], P)
    f(table.unpack(c[2]))
    local ir = f:inspect("llvm")
    -- two workers: the fast one (made second) calls the checked one when
    -- its test fails
    local nworkers = 0
    for _ in ir:gmatch("\ndefine internal[^\n]*@kcg_spec%d+_prange%d+%(") do nworkers = nworkers + 1 end
    eq(nworkers, 2, "case " .. n .. ": two workers:\n" .. ir)
    truthy(ir:find("tail call [%w ]*i32 @kcg_spec%d+_prange0%("), "case " .. n .. ": the fast worker calls the checked one:\n" .. ir)
    local fast, slow = worker_ir(ir, 1), worker_ir(ir, 0)
    truthy(fast and slow, "case " .. n .. ": both workers:\n" .. ir)
    truthy(not has_checks(fast), "case " .. n .. ": no check in the fast worker:\n" .. fast)
    truthy(has_checks(slow), "case " .. n .. ": the checked worker checks:\n" .. slow)
  end
  -- with the checks gone the integer saxpy's body vectorizes
  local g = kjit.jit(isaxpy, P)
  g(ramp(8, "i64"), ramp(8, "i64"), kjit.zeros(8, "i64"))
  truthy(worker_ir(g:inspect("llvm"), 1):find("<%d+ x i64>"), "the fast worker vectorized")
  -- boundscheck = false: one worker, nothing to test
  local h = kjit.jit(isaxpy, { parallel = true, boundscheck = false })
  h(ramp(8, "i64"), ramp(8, "i64"), kjit.zeros(8, "i64"))
  local nworkers = 0
  for _ in h:inspect("llvm"):gmatch("\ndefine internal[^\n]*@kcg_spec%d+_prange%d+%(") do nworkers = nworkers + 1 end
  eq(nworkers, 1, "one worker without bounds checks")
end)
