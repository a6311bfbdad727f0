-- kernels.lua: numeric kernels shared by several differential test files
-- (and a natural home for the benchmark kernels). Plain Lua: each is run
-- interpreted and compiled, on f64, f32 and under several kjit options.
local K = {}

function K.saxpy(alpha, x, y, out)
  for i = 1, #x do out[i] = alpha * x[i] + y[i] end
end

function K.dot(x, y)
  local s = 0.0
  for i = 1, #x do s = s + x[i] * y[i] end
  return s
end

-- C = A * B for 2-D arrays, sizes read from .shape
function K.matmul(A, B, C)
  for i = 1, A.shape[1] do
    for j = 1, B.shape[2] do
      local s = 0.0
      for k = 1, A.shape[2] do s = s + A[i][k] * B[k][j] end
      C[i][j] = s
    end
  end
end

return K
