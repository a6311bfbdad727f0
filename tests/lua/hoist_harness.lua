-- hoist_harness.lua: what the bounds-check hoisting tests share
-- (test_prange_hoist.lua, test_prange_hoist_serial.lua, test_shape_hoist.lua):
-- test arrays, running on one thread and on every thread of the pool, the
-- out-of-bounds check of a differential call, the IR facts of a prange
-- worker, and the kernels more than one of them compiles.
local D = require "difftest"
local kjit = D.kjit
local M = {}

---------------------------------------------------------------------------
-- arrays
---------------------------------------------------------------------------
function M.ramp(n, dt)   -- 1, 2, ..., n
  local t = {}
  for i = 1, n do t[i] = i end
  return kjit.array(t, dt or "f64")
end

function M.mat(r, c, f)  -- an r x c f64 matrix with m[i][j] = f(i, j)
  local m = kjit.zeros({ r, c })
  for i = 1, r do for j = 1, c do m[i][j] = f(i, j) end end
  return m
end

---------------------------------------------------------------------------
-- threads and errors
---------------------------------------------------------------------------
function M.on_threads(threads, f)
  local n0 = kjit.get_num_threads()
  kjit.set_num_threads(math.min(threads, n0))
  local ok, err = pcall(f)
  kjit.set_num_threads(n0)
  if not ok then error(err, 0) end
end

function M.every_threads(f)
  M.on_threads(1, f)
  M.on_threads(kjit.get_num_threads(), f)
end

-- D.check_opts on arguments whose interpreted run raises out of bounds (so
-- an error case cannot pass as a normal return): the compiled error must be
-- the same. `where`, if given, is a pattern the message must also match
-- (the file:line of the access).
function M.oob(opts, where, fn, ...)
  local r, msg = D.check_opts(opts, fn, ...)
  if D.jit_available() then
    truthy(r == nil and type(msg) == "string" and msg:find("out of bounds", 1, true)
           and (not where or msg:find(where)),
           "the interpreted run raises out of bounds: " .. tostring(msg) .. "\n" .. debug.traceback())
  end
end

---------------------------------------------------------------------------
-- IR facts: a worker's optimized IR; its bounds checks branch to blocks
-- that cg_check names ok (in range) and fail (raise)
---------------------------------------------------------------------------
function M.worker_ir(ir, k)
  return ir:match("(\ndefine internal[^\n]*@kcg_spec%d+_prange" .. k .. "%(.-\n}\n)")
end

function M.has_checks(fir)
  return fir:find("\nok%d*:") ~= nil or fir:find("\nfail%d*:") ~= nil
end

---------------------------------------------------------------------------
-- kernels (compiled parallel by test_prange_hoist, serial by
-- test_prange_hoist_serial); D.check_opts compares the arrays they write
---------------------------------------------------------------------------
local K = {}
M.kernels = K

function K.dot(x, y, a, b, c)
  local s = 0.0
  for i in kjit.prange(a, b, c) do s = s + x[i] * y[i] end
  return s
end

-- +-i plus an invariant sum: x[i + off + 1] and z[k - i + 1]
function K.shifted(x, z, a, b, off, k)
  local s = 0.0
  for i in kjit.prange(a, b) do s = s + x[i + off + 1] * z[k - i + 1] end
  return s
end

-- a guarded access that leaves the array at iteration k only (a middle
-- one): the test fails, the checked code raises there
function K.guarded(x, n, k)
  local s = 0.0
  for i in kjit.prange(1, n) do
    if i == k then s = s + x[i + #x] else s = s + x[i] end
  end
  return s
end

function K.saxpy(a, x, y, out, lo, hi)
  for i in kjit.prange(lo, hi) do out[i] = a * x[i] + y[i] end
end

function K.matmul(a, b, c)
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

-- the 2-D five-point stencil on rows 2..n-1 (columns from the arguments)
function K.stencil(out, x, n, j0, j1)
  for i in kjit.prange(2, n - 1) do
    for j = j0, j1 do
      out[i][j] = x[i - 1][j] + x[i + 1][j] + x[i][j - 1] + x[i][j + 1] - 4 * x[i][j]
    end
  end
end

return M
