-- Compiled by other Lua releases into the .luac files next to this one
-- (see make.sh); tests/c/test_bytecode.c checks that each 5.4 chunk builds
-- the same IR as the Lua it is linked with compiles from this file.
local kjit = { prange = function() end }
local scale = 2.0

local function saxpy(a, x, y, out)
  for i = 1, #x do out[i] = a * x[i] + y[i] end
end

local function mandel(cr, ci, maxit)
  local zr, zi, n = 0.0, 0.0, 0
  while n < maxit and zr * zr + zi * zi <= 4.0 do
    zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
    n = n + 1
  end
  return n
end

local function stencil(a, b, n)
  for i = 2, n - 1 do
    for j = 2, n - 1 do
      b[i][j] = (a[i - 1][j] + a[i + 1][j] + a[i][j - 1] + a[i][j + 1]) * 0.25
    end
  end
end

local function par(out, n)
  for i in kjit.prange(1, n) do out[i] = i * scale end
end

local function sign(x)
  if x < 0 then return -1 elseif x > 0 then return 1 else return 0 end
end

local function collatz(n)
  local steps = 0
  repeat
    if n % 2 == 0 then n = n // 2 else n = 3 * n + 1 end
    steps = steps + 1
  until n == 1
  return steps
end

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function divmod(a, b) return a // b, a % b end

local function pick(c, x, y) return c and x or y, math.max(x, y), math.floor(x / y) end

local function check(x) if x ~= x then error("nan") end return x end

local f1, f2 = function(a) return a + 1 end, function(a) return a - 1 end

return saxpy, mandel, stencil, par, sign, collatz, fib, divmod, pick, check, f1, f2
