-- bench/records.lua: records in compiled code against C on the same struct.
--
--   lua5.4 bench/records.lua [N [STEPS [RUNS]]]
--
-- Two kernels: "bounce" (the particles bounce off y = 0: a conditional
-- store) and "move" (no branch).
-- A particle update over an array of kjit.struct records
-- { x, y, vx, vy: f32 } (local r = p[i]; r.x = r.x + r.vx * dt ...), bounds
-- checks on, timed in process (median of RUNS runs of STEPS steps, after a
-- warm-up), against bench/c/records.c: the same loop on the same C struct,
-- compiled here with clang-14 -O3 -march=native -ffp-contract=off (the
-- fair peer: kjit keeps Lua's rounding). Both print a checksum, which must
-- agree (same arithmetic: doubles rounded to float on each store).
package.cpath = "build/?.so;" .. package.cpath
local kjit = require "kjit"

local N, STEPS, RUNS = tonumber(arg[1]) or 1000000, tonumber(arg[2]) or 20, tonumber(arg[3]) or 7

local P = kjit.struct{ {"x", "f32"}, {"y", "f32"}, {"vx", "f32"}, {"vy", "f32"} }

local kernels = {
  bounce = function(p, dt)
    for i = 1, #p do
      local r = p[i]
      r.x = r.x + r.vx * dt
      r.y = r.y + r.vy * dt
      if r.y < 0 then r.y = -r.y; r.vy = -r.vy end
    end
  end,
  move = function(p, dt)
    for i = 1, #p do
      local r = p[i]
      r.x = r.x + r.vx * dt
      r.y = r.y + r.vy * dt
    end
  end,
}

local exe = os.tmpname()
assert(os.execute("clang-14 -O3 -march=native -ffp-contract=off bench/c/records.c -o " .. exe),
       "clang-14 failed")
print(string.format("particles: %d records of %d bytes, %d steps x %d runs (median)", N, P.size, STEPS, RUNS))
for _, name in ipairs{ "bounce", "move" } do
  local step = kjit.jit(kernels[name])
  local p = kjit.zeros(N, P)
  for i = 1, N do
    local r = p[i]
    r.x = i % 1000; r.y = i % 777; r.vx = i % 13 - 6; r.vy = i % 7 - 3
  end
  step(p, 0.01)   -- compile, warm up
  local t = {}
  for r = 1, RUNS do
    local t0 = os.clock()
    for _ = 1, STEPS do step(p, 0.01) end
    t[r] = (os.clock() - t0) * 1e3 / STEPS
  end
  table.sort(t)
  local sum = 0.0
  for i = 1, N do sum = sum + p[i].x + p[i].y end

  local h = io.popen(string.format("%s %d %d %d %d", exe, N, STEPS, RUNS, name == "bounce" and 1 or 0))
  local cms, csum = h:read("n", "n")
  h:close()

  local km = t[(RUNS + 1) // 2]
  print(name .. ":")
  print(string.format("kjit  %8.3f ms/step   checksum %.6e", km, sum))
  print(string.format("C     %8.3f ms/step   checksum %.6e", cms, csum))
  print(string.format("kjit / C = %.3f   checksums %s", km / cms,
                      string.format("%.6e", sum) == string.format("%.6e", csum) and "agree" or "DIFFER"))
end
os.remove(exe)
