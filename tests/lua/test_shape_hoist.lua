-- test_shape_hoist.lua: loop bounds read from an argument array's extents
-- (`x.shape[k]` with a constant k, `x.size`, `#x`) inside a loop body are
-- invariant in the enclosing nest (src/ir/ir_facts.c kfa_nest_invariant,
-- kfa_shape_read; cg_version.c nest_val computes them again before the
-- nest): a `for j = 1, a.shape[2]` or `kjit.prange(1, a.shape[2])` inside a
-- parallel kjit.prange body is a loop of the worker's nest, so the checks
-- of its accesses are tested once per chunk and leave the fast worker
-- (IR facts: no check in it; the checked worker keeps them). Differential
-- (difftest): the results, the arrays, and the out-of-bounds errors with
-- their file:line equal the interpreter's, on one thread and on every one.
local D = require "difftest"
local kjit = D.kjit
local P = { parallel = true }
local H = require "hoist_harness"
local ramp, mat, on_threads = H.ramp, H.mat, H.on_threads
local worker_ir, has_checks = H.worker_ir, H.has_checks
-- the out-of-bounds errors are located in this file
local function oob(opts, fn, ...) H.oob(opts, "test_shape_hoist.lua:%d+:", fn, ...) end

---------------------------------------------------------------------------
-- the bodies: each reads its inner bound from an extent in the body
---------------------------------------------------------------------------
-- row sums: `for j = 1, a.shape[2]` (extra: columns past the end)
local function rowsums(a, out, extra)
  for i in kjit.prange(1, a.shape[1]) do
    local s = 0.0
    for j = 1, a.shape[2] + extra do s = s + a[i][j] end
    out[i] = s
  end
  return out[1]
end

-- the inner loop a serial prange (inside a parallel body)
local function rowsums_prange(a, out, extra)
  for i in kjit.prange(1, a.shape[1]) do
    local s = 0.0
    for j in kjit.prange(1, a.shape[2] + extra) do s = s + a[i][j] end
    out[i] = s
  end
  return out[1]
end

-- row-major over a flat array: x.size and #x as bounds, keys (i - 1) * w + j
local function flat(x, w, rows, extra)
  local s = 0.0
  for i in kjit.prange(1, rows) do
    for j = 1, x.size - (rows - 1) * w + extra do s = s + x[(i - 1) * w + j] end
  end
  return s
end

local function flat_len(x, w, rows, extra)
  local s = 0.0
  for i in kjit.prange(1, rows) do
    for j = 1, #x - (rows - 1) * w + extra do s = s + x[(i - 1) * w + j] end
  end
  return s
end

-- a 2-D stencil whose columns come from the output's extents, writing
local function stencil(out, x, extra)
  for i in kjit.prange(2, x.shape[1] - 1) do
    for j = 2, out.shape[2] - 1 + extra do
      out[i][j] = x[i - 1][j] + x[i + 1][j] + x[i][j - 1] + x[i][j + 1] - 4 * x[i][j]
    end
  end
  return out[2][2]
end

-- a bound from an array made in the body (a row): not invariant, stays
-- checked, still right
local function rowlen(a, extra)
  local s = 0.0
  for i in kjit.prange(1, a.shape[1]) do
    local row = a[i]
    for j = 1, row.shape[1] + extra do s = s + row[j] end
  end
  return s
end

-- a serial nest (no parallel option): a.shape[2] in the outer body
local function serial(a, extra)
  local s = 0.0
  for i = 1, a.shape[1] do
    for j = 1, a.shape[2] + extra do s = s + a[i][j] * j end
  end
  return s
end


test("shape hoist: extents in a prange body leave the fast worker's loops (IR facts)", function()
  if not D.jit_available() then skip("kjit.jit not available") end
  local a = mat(3, 4, function(i, j) return i + j end)
  local cases = {
    { "rowsums", rowsums, { a, kjit.zeros(3), 0 } },
    { "rowsums_prange", rowsums_prange, { a, kjit.zeros(3), 0 } },
    { "flat (x.size)", flat, { ramp(12), 4, 3, 0 } },
    { "flat_len (#x)", flat_len, { ramp(12), 4, 3, 0 } },
    { "stencil", stencil, { kjit.zeros({ 4, 5 }), mat(4, 5, function(i, j) return i * j end), 0 } },
  }
  for _, c in ipairs(cases) do
    local f = kjit.jit(c[2], P)
    f(table.unpack(c[3]))
    local ir = f:inspect("llvm")
    local fast, slow = worker_ir(ir, 1), worker_ir(ir, 0)
    truthy(fast and slow, c[1] .. ": a fast and a checked worker:\n" .. ir)
    truthy(not has_checks(fast), c[1] .. ": no check in the fast worker:\n" .. fast)
    truthy(has_checks(slow), c[1] .. ": the checked worker checks:\n" .. slow)
  end
  -- the row's own extent is read in the body (the row is made there): the
  -- inner loop is no loop of the nest, its check stays in the fast worker
  local g = kjit.jit(rowlen, P)
  g(a, 0)
  local fast = worker_ir(g:inspect("llvm"), 1)
  truthy(fast and has_checks(fast), "rowlen: row[j] stays checked:\n" .. tostring(fast))
end)

-- (the serial nest's facts, one test before the outer loop for the inner
-- loop's checks, are in tests/c/irfacts_cases.txt: nest_shape_limits)

---------------------------------------------------------------------------
-- differential: in range, and out of range at the first, last, middle
---------------------------------------------------------------------------
test("shape hoist: results and errors as interpreted", function()
  local a = mat(5, 6, function(i, j) return i * 10 + j end)
  for _, threads in ipairs({ 1, kjit.get_num_threads() }) do
    on_threads(threads, function()
      D.check_opts(P, rowsums, a, kjit.zeros(5), 0)
      D.check_opts(P, rowsums, a, kjit.zeros(5), -6)              -- the inner loop never runs
      D.check_opts(P, rowsums_prange, a, kjit.zeros(5), 0)
      D.check_opts(P, rowsums_prange, a, kjit.zeros(5), -3)
      D.check_opts(P, flat, ramp(30), 6, 5, 0)
      D.check_opts(P, flat, ramp(30), 5, 5, 0)                    -- rows overlap: still in range
      D.check_opts(P, flat_len, ramp(30), 6, 5, 0)
      D.check_opts(P, stencil, kjit.zeros({ 6, 7 }), mat(6, 7, function(i, j) return i * 10 + j * j end), 0)
      D.check_opts(P, stencil, kjit.zeros({ 6, 7 }), mat(6, 7, function(i, j) return i - j end), -4)
      D.check_opts(P, rowlen, a, 0)
      D.check_opts({}, serial, a, 0)
      D.check_opts({}, serial, a, -6)
      D.check_opts({}, serial, mat(0, 3, function() return 0 end), 0)
    end)
  end
  -- errors on one thread (chunks run in order: the first failing one raises)
  on_threads(1, function()
    oob(P, rowsums, a, kjit.zeros(5), 1)                 -- a[1][7]: row 1's last column
    oob(P, rowsums_prange, a, kjit.zeros(5), 1)
    oob(P, rowsums, a, kjit.zeros(4), 0)                 -- out[5]: the last row
    oob(P, flat, ramp(30), 6, 5, 1)                      -- x[31] on the last row
    oob(P, flat_len, ramp(30), 6, 5, 1)
    oob(P, stencil, kjit.zeros({ 6, 7 }), mat(6, 7, function(i, j) return i + j end), 1)   -- x[2][8]
    oob(P, stencil, kjit.zeros({ 6, 8 }), mat(6, 7, function(i, j) return i + j end), 0)   -- x's columns
    oob(P, stencil, kjit.zeros({ 4, 7 }), mat(6, 7, function(i, j) return i + j end), 0)   -- out[5]: the last row
    oob(P, rowlen, a, 1)
    oob({}, serial, a, 1)
  end)
end)
