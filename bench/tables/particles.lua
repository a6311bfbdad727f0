-- A particle list of {x, y, vx, vy} tables: gravity, drag, bounces.
--   lua5.4 bench/tables/particles.lua jit|interp [n] [steps]   (luajit: interp only)
local mode, n, steps = arg[1] or "interp", tonumber(arg[2]) or 10000, tonumber(arg[3]) or 200

local function make(n)
  local ps = {}
  for i = 1, n do
    ps[i] = { x = (i * 37) % 100, y = (i * 11) % 50 + 10, vx = (i % 7) - 3, vy = 0.0 }
  end
  return ps
end

local function step(ps, dt, steps)
  local g, drag = -9.81, 0.999
  for _ = 1, steps do
    for i = 1, #ps do
      local p = ps[i]
      local vy = (p.vy + g * dt) * drag
      local y = p.y + vy * dt
      if y < 0 then y = -y; vy = -vy end
      p.vy = vy
      p.y = y
      p.vx = p.vx * drag
      p.x = p.x + p.vx * dt
    end
  end
end

local run = step
if mode == "jit" then
  package.cpath = "build/?.so;" .. package.cpath
  run = require("kjit").jit(step)
  run(make(2), 0.01, 1)
end
local ps = make(n)
local t0 = os.clock()
run(ps, 0.01, steps)
local t = os.clock() - t0
local sx, sy = 0, 0
for i = 1, #ps do sx = sx + ps[i].x; sy = sy + ps[i].y end
print(string.format("%.6f %.6f", sx, sy), string.format("%.3f s", t))
