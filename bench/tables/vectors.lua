-- A class-based 2-D vector loop, as a game module writes one: a Vec class
-- (setmetatable, methods found through __index, each operation returning a
-- new Vec), entities holding a position and a velocity, steered toward the
-- flock's centre and away from the walls. Written for kjit's benchmark
-- (bench/lua_programs.lua runs it like the public programs).
--   lua5.4 bench/tables/vectors.lua [entities] [steps]
local N, STEPS = tonumber(arg and arg[1]) or 200, tonumber(arg and arg[2]) or 100

local Vec = {}
Vec.__index = Vec

function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
function Vec:sub(o) return Vec.new(self.x - o.x, self.y - o.y) end
function Vec:scale(s) return Vec.new(self.x * s, self.y * s) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end
function Vec:length() return math.sqrt(self:dot(self)) end
function Vec:clamp(maxlen)
  local l = self:length()
  if l > maxlen then return self:scale(maxlen / l) end
  return self
end

local function spawn(n)
  local es = {}
  for i = 1, n do
    es[i] = { pos = Vec.new((i * 37) % 100, (i * 53) % 80),
              vel = Vec.new(((i * 7) % 11) - 5, ((i * 13) % 9) - 4) }
  end
  return es
end

local function centre(es)
  local c = Vec.new(0, 0)
  for i = 1, #es do c = c:add(es[i].pos) end
  return c:scale(1 / #es)
end

local function step(es, dt)
  local c = centre(es)
  for i = 1, #es do
    local e = es[i]
    local toc = c:sub(e.pos):scale(0.01)
    local v = e.vel:add(toc)
    local p = e.pos
    if p.x < 0 or p.x > 100 then v = Vec.new(-v.x, v.y) end
    if p.y < 0 or p.y > 80 then v = Vec.new(v.x, -v.y) end
    e.vel = v:clamp(10)
    e.pos = p:add(e.vel:scale(dt))
  end
end

local es = spawn(N)
for _ = 1, STEPS do step(es, 0.05) end
local sx, sy, sv = 0, 0, 0
for i = 1, #es do
  sx = sx + es[i].pos.x
  sy = sy + es[i].pos.y
  sv = sv + es[i].vel:length()
end
print(string.format("%.6f %.6f %.6f", sx, sy, sv))
