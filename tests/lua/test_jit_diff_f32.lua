-- Differential tests on f32 buffers. Documented difference (DESIGN.md §3):
-- values read from f32 buffers and arithmetic between them stay f32 in
-- compiled code (float literals are weakly typed: x * 2.5 stays f32), while
-- the interpreter computes in double. Floats are therefore compared with a
-- relative tolerance (D.check_f32); integer results (counts, indices) stay
-- exact, so the inputs are chosen where f32 and f64 agree on them (the
-- mandelbrot grid below was checked with an f32-rounding emulation).
local D = require "difftest"
local K = require "kernels"
local saxpy, dot, matmul = K.saxpy, K.dot, K.matmul
local kjit = D.kjit

local TOL = 1e-5

---------------------------------------------------------------------------
-- the functions under test
---------------------------------------------------------------------------

local function saxpy_literal(x, y, out)
  for i = 1, #x do out[i] = 2.5 * x[i] + y[i] end
end


local function sum(x)
  local s = 0.0
  for i = 1, #x do s = s + x[i] end
  return s
end

local function mandelbrot(xs, ys, out, maxit)
  for i = 1, #ys do
    local ci = ys[i]
    for j = 1, #xs do
      local cr = xs[j]
      local zr, zi = 0.0, 0.0
      local k = 0
      while k < maxit and zr * zr + zi * zi <= 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        k = k + 1
      end
      out[i][j] = k
    end
  end
end

local function norm(x)
  local s = 0.0
  for i = 1, #x do s = s + x[i] * x[i] end
  return math.sqrt(s)
end

local function blur1d(x, out)
  for i = 2, #x - 1 do out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3 end
end

local function horner(x, out)
  for i = 1, #x do
    local v = x[i]
    out[i] = ((0.5 * v - 1.25) * v + 2.0) * v - 0.75
  end
end


local function count_above(x, t)
  local c, c_lit = 0, 0
  for i = 1, #x do
    if x[i] > t then c = c + 1 end
    if x[i] >= 0.5 then c_lit = c_lit + 1 end
  end
  return c, c_lit
end

local function scale_inplace(x, k)
  for i = 1, #x do x[i] = x[i] * k end
end

local function lerp(a, b, t, out)
  for i = 1, #a do out[i] = a[i] + (b[i] - a[i]) * t end
end

local function normalize3(v)
  for i = 1, #v do
    local x, y, z = v[i][1], v[i][2], v[i][3]
    local inv = 1.0 / math.sqrt(x * x + y * y + z * z)
    v[i][1], v[i][2], v[i][3] = x * inv, y * inv, z * inv
  end
end

local function softmax(x, out)
  local m = x[1]
  for i = 2, #x do
    if x[i] > m then m = x[i] end
  end
  local s = 0.0
  for i = 1, #x do
    local e = math.exp(x[i] - m)
    out[i] = e
    s = s + e
  end
  for i = 1, #x do out[i] = out[i] / s end
  return s
end

local function to_f64(x, out)
  for i = 1, #x do out[i] = x[i] * 0.1 end
end

local function mixed_f32_f64(x32, y64, out64)
  for i = 1, #x32 do out64[i] = x32[i] * y64[i] + x32[i] end
end

local function argmax(x)
  local m, mi = x[1], 1
  for i = 2, #x do
    if x[i] > m then m, mi = x[i], i end
  end
  return mi, m
end

local function nbody_f32(pos, vel, dt)
  local n = #pos
  for i = 1, n do
    local ax, ay = 0.0, 0.0
    for j = 1, n do
      if j ~= i then
        local dx = pos[j][1] - pos[i][1]
        local dy = pos[j][2] - pos[i][2]
        local d2 = dx * dx + dy * dy + 0.5
        local inv = 1.0 / (d2 * math.sqrt(d2))
        ax, ay = ax + dx * inv, ay + dy * inv
      end
    end
    vel[i][1] = vel[i][1] + dt * ax
    vel[i][2] = vel[i][2] + dt * ay
  end
  for i = 1, n do
    pos[i][1] = pos[i][1] + dt * vel[i][1]
    pos[i][2] = pos[i][2] + dt * vel[i][2]
  end
end

---------------------------------------------------------------------------
-- inputs
---------------------------------------------------------------------------
local function ramp(n, a, b, dtype)
  local x = kjit.zeros(n, dtype or "f32")
  for i = 1, n do x[i] = a + (b - a) * (i - 1) / math.max(n - 1, 1) end
  return x
end

---------------------------------------------------------------------------
-- tests
---------------------------------------------------------------------------
test("saxpy f32", function()
  local n = 257
  D.check_f32(TOL, saxpy, 2.5, ramp(n, 0.5, 1.5), ramp(n, 2.0, -1.0), kjit.zeros(n, "f32"))
  D.check_f32(TOL, saxpy, -0.1, ramp(n, -3, 3), ramp(n, 1, 2), kjit.zeros(n, "f32"))
end)

test("saxpy f32 with a weakly typed literal", function()
  local n = 64
  D.check_f32(TOL, saxpy_literal, ramp(n, 0.5, 1.5), ramp(n, 2.0, 3.0), kjit.zeros(n, "f32"))
end)

test("dot f32", function()
  D.check_f32(TOL, dot, ramp(64, 0.5, 1.5), ramp(64, 1.5, 0.5))
  D.check_f32(TOL, dot, ramp(100, 0.1, 0.2), ramp(100, 1.0, 1.1))
end)

test("sum f32", function()
  D.check_f32(TOL, sum, ramp(100, 0.5, 1.5))
  D.check_f32(TOL, sum, kjit.array({0.1, 0.2, 0.3}, "f32"))
end)

test("mandelbrot f32", function()
  local W, H = 32, 24
  local xs, ys = kjit.zeros(W, "f32"), kjit.zeros(H, "f32")
  for j = 1, W do xs[j] = -2.0 + (j - 1) * (2.6 / W) end
  for i = 1, H do ys[i] = -1.2 + (i - 1) * (2.4 / H) end
  D.check_f32(TOL, mandelbrot, xs, ys, kjit.zeros({H, W}, "i32"), 30)
end)

test("norm f32 with math.sqrt", function()
  D.check_f32(TOL, norm, ramp(50, -2, 3))
end)

test("blur 1-D f32", function()
  D.check_f32(TOL, blur1d, ramp(40, 1, 5), kjit.zeros(40, "f32"))
end)

test("horner polynomial f32", function()
  D.check_f32(TOL, horner, ramp(33, 1, 3), kjit.zeros(33, "f32"))
end)

test("matmul f32", function()
  local A, B = kjit.zeros({4, 5}, "f32"), kjit.zeros({5, 3}, "f32")
  for i = 1, 4 do for k = 1, 5 do A[i][k] = 0.5 + (i * k) % 7 * 0.25 end end
  for k = 1, 5 do for j = 1, 3 do B[k][j] = 1.0 + (k + j) % 3 * 0.125 end end
  D.check_f32(TOL, matmul, A, B, kjit.zeros({4, 3}, "f32"))
end)

test("count above a threshold f32 (exact counts)", function()
  local x = kjit.array({0.25, 0.5, 0.75, 1.0, -0.5, 0.5, 2.0}, "f32")
  D.check_f32(TOL, count_above, x, 0.5)
  D.check_f32(TOL, count_above, x, 0.75)
end)

test("scale in place f32", function()
  D.check_f32(TOL, scale_inplace, ramp(20, -1, 1), 3.7)
  D.check_f32(TOL, scale_inplace, ramp(20, -1, 1), 2)
end)

test("lerp f32", function()
  D.check_f32(TOL, lerp, ramp(16, 0, 1), ramp(16, 5, 9), 0.3, kjit.zeros(16, "f32"))
end)

test("normalize 3-vectors f32", function()
  local v = kjit.zeros({6, 3}, "f32")
  for i = 1, 6 do
    v[i][1], v[i][2], v[i][3] = i * 0.5, 2.0 - i * 0.25, 1.5
  end
  D.check_f32(TOL, normalize3, v)
end)

test("softmax f32 with math.exp", function()
  D.check_f32(TOL, softmax, ramp(10, -2, 3), kjit.zeros(10, "f32"))
end)

test("f32 values stored into f64", function()
  D.check_f32(TOL, to_f64, ramp(10, 1, 2), kjit.zeros(10, "f64"))
end)

test("f32 mixed with f64", function()
  D.check_f32(TOL, mixed_f32_f64, ramp(10, 1, 2), ramp(10, 3, 4, "f64"), kjit.zeros(10))
end)

test("argmax f32", function()
  D.check_f32(TOL, argmax, kjit.array({0.5, 2.25, -1.0, 2.25, 1.0}, "f32"))
end)

test("n-body step f32", function()
  local n = 4
  local pos, vel = kjit.zeros({n, 2}, "f32"), kjit.zeros({n, 2}, "f32")
  for i = 1, n do
    pos[i][1], pos[i][2] = i * 1.5, (i % 2) * 2.0 + 1.0
    vel[i][1], vel[i][2] = 1.0 + 0.25 * i, 2.0 - 0.25 * i
  end
  D.check_f32(TOL, nbody_f32, pos, vel, 0.01)
end)
