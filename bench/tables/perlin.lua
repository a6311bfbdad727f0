-- A Perlin gradient-noise module with its permutation table, in the style
-- of a game's terrain module: Noise.new(seed) shuffles 0..255 with the
-- module's own generator and doubles the table to 512 entries;
-- Noise:noise2 is 2-D gradient noise (fade curve 6t^5 - 15t^4 + 10t^3, one
-- of eight gradients picked by the hash); Noise:fbm sums octaves. Written
-- for kjit's benchmark (bench/lua_programs.lua runs it like the public
-- programs).
--   lua5.4 bench/tables/perlin.lua [size] [octaves]
local SIZE, OCTAVES = tonumber(arg and arg[1]) or 128, tonumber(arg and arg[2]) or 4

local Noise = {}
Noise.__index = Noise

-- eight unit-ish gradient directions
local GX = { 1, -1, 1, -1, 1, -1, 0, 0 }
local GY = { 1, 1, -1, -1, 0, 0, 1, -1 }

function Noise.new(seed)
  local perm = {}
  for i = 0, 255 do perm[i + 1] = i end
  local s = seed
  for i = 256, 2, -1 do      -- Fisher-Yates with the minimal standard generator
    s = (s * 16807) % 2147483647  -- Park-Miller: exact in floats too
    local j = s % i + 1
    perm[i], perm[j] = perm[j], perm[i]
  end
  for i = 1, 256 do perm[i + 256] = perm[i] end
  return setmetatable({ perm = perm }, Noise)
end

local function fade(t) return t * t * t * (t * (t * 6 - 15) + 10) end
local function lerp(a, b, t) return a + t * (b - a) end

function Noise:grad(h, x, y)
  local g = h % 8 + 1
  return GX[g] * x + GY[g] * y
end

function Noise:noise2(x, y)
  local p = self.perm
  local xf, yf = math.floor(x), math.floor(y)
  local xi, yi = xf % 256, yf % 256
  x, y = x - xf, y - yf
  local u, v = fade(x), fade(y)
  local a, b = p[xi + 1] + yi, p[xi + 2] + yi
  local n00 = self:grad(p[a + 1], x, y)
  local n10 = self:grad(p[b + 1], x - 1, y)
  local n01 = self:grad(p[a + 2], x, y - 1)
  local n11 = self:grad(p[b + 2], x - 1, y - 1)
  return lerp(lerp(n00, n10, u), lerp(n01, n11, u), v)
end

function Noise:fbm(x, y, octaves)
  local sum, amp, freq = 0, 1, 1
  for _ = 1, octaves do
    sum = sum + amp * self:noise2(x * freq, y * freq)
    amp, freq = amp * 0.5, freq * 2
  end
  return sum
end

local n = Noise.new(1234)
local total, hi = 0, -math.huge
for j = 0, SIZE - 1 do
  for i = 0, SIZE - 1 do
    local h = n:fbm(i / 16, j / 16, OCTAVES)
    total = total + h
    if h > hi then hi = h end
  end
end
print(string.format("%.6f %.6f", total, hi))
