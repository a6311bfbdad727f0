-- particles.lua: the per-frame update of particles.c, written once in
-- plain Lua. particles.c owns its particles, an array of C structs
-- (struct Particle { float x, y, vx, vy; }), and hands it to Lua once as
-- an array of records (kjit_pushrecords); each backend below wraps it in
-- an update(dt) that the C program calls every frame. No CPU frame copies
-- anything: every CPU backend reads and writes the host's structs in place.
local kjit = require "kjit"

local M = {}

local W, H = 100.0, 100.0      -- the box; frozen into compiled code as constants

-- ps is an array of records {x, y, vx, vy: f32}. g and bounce come in as
-- arguments (f64), so every computation is in f64 and the single rounding
-- to f32 happens at the store, in compiled code as in the interpreter: the
-- backends agree bit for bit.
-- One particle (a record view, p = ps[i]): shared by the CPU loop and the
-- GPU kernel.
function M.move(p, dt, g, bounce)
  local vx = p.vx
  local vy = p.vy + g * dt
  local x = p.x + vx * dt
  local y = p.y + vy * dt
  if x < 0 then x = -x; vx = -vx * bounce
  elseif x > W then x = 2 * W - x; vx = -vx * bounce end
  if y < 0 then y = -y; vy = -vy * bounce
  elseif y > H then y = 2 * H - y; vy = -vy * bounce end
  p.x, p.y, p.vx, p.vy = x, y, vx, vy
end

function M.step(ps, dt, g, bounce)
  for i = 1, #ps do M.move(ps[i], dt, g, bounce) end
end

-- The GPU version: one thread per particle.
local cuda = kjit.cuda
function M.step_kernel(ps, dt, g, bounce)
  local i = cuda.grid(1)
  if i <= #ps then M.move(ps[i], dt, g, bounce) end
end

M.G, M.BOUNCE = -9.81, 0.8
-- For kjit_compile_records (particles.c) and step:compile: `record` is the
-- host's struct, whose layout comes with the signature.
M.SIGNATURE = "void(record[:], f64, f64, f64)"

-- Backends, in the order particles.c runs them. make(ps) returns
-- update(dt), or nil and the reason the backend cannot run here.
M.backends = {
  { name = "interpreted", make = function(ps)
      local step, g, b = M.step, M.G, M.BOUNCE
      return function(dt) step(ps, dt, g, b) end
    end },

  { name = "CPU (kjit.jit)", make = function(ps)
      local step, g, b = kjit.jit(M.step), M.G, M.BOUNCE
      step:compile(M.SIGNATURE, ps.dtype)    -- compile now, not in frame 1
      return function(dt) step(ps, dt, g, b) end
    end },

  -- A cuda.jit kernel over a device copy of the records made once here;
  -- each frame launches it and copies the records back into the host's
  -- array (what a renderer needs). fma = false keeps
  -- every rounding as the interpreter has it (bit-for-bit agreement).
  -- Without a GPU it runs in kjit's simulator, and says so.
  { name = (cuda and cuda.is_available()) and "GPU (kjit.cuda)" or "GPU kernel, simulated",
    make = function(ps)
      if cuda == nil then return nil, "kjit.cuda is not in this build" end
      local sim = not cuda.is_available()
      local prev = cuda.simulate(sim)
      local k = cuda.jit(M.step_kernel, { fma = false })
      local launch = k[{(#ps + 127) // 128, 128}]
      local g, b = M.G, M.BOUNCE
      launch(cuda.to_device(ps), 0.0, g, b)   -- compile now, on a copy
      local dps = cuda.to_device(ps)
      cuda.simulate(prev)
      return function(dt)
        local p = cuda.simulate(sim)
        launch(dps, dt, g, b)
        dps:copy_to_host(ps)
        cuda.simulate(p)
      end
    end },
}

return M
