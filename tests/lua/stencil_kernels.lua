-- stencil_kernels.lua: the kernels that the interrupt-poll tests share
-- (test_poll_rows.lua: rows through chunk-local copies; test_interrupt_
-- hooks.lua: strip-mined rows and escape loops; test_poll_latch.lua:
-- escape loops), each test keeping its own assertions.
--   local K = require "stencil_kernels"
--   K.stencil(n, m, A, B)   -- B's inner points: the 5-point average of A's
--   K.grid(n, m)            -- an n x m f64 array of distinct values
--   K.escape(cr, ci, maxiter) -- Mandelbrot's escape loop: n, zr, zi
local kjit = require "kjit"
local M = {}

-- A five-point stencil over the inner points of an n x m array: a nest
-- whose inner loop stores to an element (the shape the row copies and the
-- strip-mining are for).
function M.stencil(n, m, A, B)
  for i = 2, n - 1 do
    for j = 2, m - 1 do
      B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1])
    end
  end
end

-- Mandelbrot's escape loop for the point (cr, ci): a while loop counting
-- n against an invariant bound beside a second test (test_poll_latch.lua:
-- the latch's values used past a chunk's end; test_interrupt_hooks.lua:
-- chunks through the counter's test). Returns n and the last z.
function M.escape(cr, ci, maxiter)
  local zr, zi, n = 0.0, 0.0, 0
  while n < maxiter and zr * zr + zi * zi <= 4.0 do
    zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
    n = n + 1
  end
  return n, zr, zi
end

-- An n x m f64 array whose elements differ (a wrong row or column shows).
function M.grid(n, m)
  local A = kjit.zeros({ n, m }, "f64")
  for i = 1, n do for j = 1, m do A[i][j] = (i * 7919 + j * 104729) % 1000003 / 7.0 end end
  return A
end

return M
