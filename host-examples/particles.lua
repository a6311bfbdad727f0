-- particles.lua: the per-frame update of particles.c, written once in
-- plain Lua. particles.c owns the particle arrays and hands them to Lua
-- once; each backend below wraps them in an update(dt) that the C program
-- calls every frame. No frame copies anything: every backend reads and
-- writes the host's memory in place.
local kjit = require "kjit"

local M = {}

local W, H = 100.0, 100.0      -- the box; frozen into compiled code as constants

-- pos and vel are n x 2 f32 arrays (x, y per row). g and bounce come in as
-- arguments (f64), so every computation is in f64 and the single rounding
-- to f32 happens at the store, in compiled code as in the interpreter: the
-- backends agree bit for bit.
-- One particle: shared by the CPU loop and the GPU kernel.
function M.move(pos, vel, i, dt, g, bounce)
  local vx = vel[i][1]
  local vy = vel[i][2] + g * dt
  local x = pos[i][1] + vx * dt
  local y = pos[i][2] + vy * dt
  if x < 0 then x = -x; vx = -vx * bounce
  elseif x > W then x = 2 * W - x; vx = -vx * bounce end
  if y < 0 then y = -y; vy = -vy * bounce
  elseif y > H then y = 2 * H - y; vy = -vy * bounce end
  pos[i][1] = x; pos[i][2] = y
  vel[i][1] = vx; vel[i][2] = vy
end

function M.step(pos, vel, dt, g, bounce)
  for i = 1, #pos do M.move(pos, vel, i, dt, g, bounce) end
end

-- The GPU version: one thread per particle.
local cuda = kjit.cuda
function M.step_kernel(pos, vel, dt, g, bounce)
  local i = cuda.grid(1)
  if i <= #pos then M.move(pos, vel, i, dt, g, bounce) end
end

M.G, M.BOUNCE = -9.81, 0.8
M.SIGNATURE = "void(f32[:,:], f32[:,:], f64, f64, f64)"

-- Backends, in the order particles.c runs them. make(pos, vel) returns
-- update(dt), or nil and the reason the backend cannot run here.
M.backends = {
  { name = "interpreted", make = function(pos, vel)
      local step, g, b = M.step, M.G, M.BOUNCE
      return function(dt) step(pos, vel, dt, g, b) end
    end },

  { name = "CPU (kjit.jit)", make = function(pos, vel)
      local step, g, b = kjit.jit(M.step), M.G, M.BOUNCE
      step:compile(M.SIGNATURE)              -- compile now, not in frame 1
      return function(dt) step(pos, vel, dt, g, b) end
    end },

  -- A cuda.jit kernel over device copies made once here; each frame
  -- launches it and copies the positions back into the host's array (what
  -- a renderer needs); velocities stay on the device. fma = false keeps
  -- every rounding as the interpreter has it (bit-for-bit agreement).
  -- Without a GPU it runs in kjit's simulator, and says so.
  { name = (cuda and cuda.is_available()) and "GPU (kjit.cuda)" or "GPU kernel, simulated",
    make = function(pos, vel)
      if cuda == nil then return nil, "kjit.cuda is not in this build" end
      local sim = not cuda.is_available()
      local prev = cuda.simulate(sim)
      local k = cuda.jit(M.step_kernel, { fma = false })
      local launch = k[{(#pos + 127) // 128, 128}]
      local g, b = M.G, M.BOUNCE
      launch(cuda.to_device(pos), cuda.to_device(vel), 0.0, g, b)   -- compile now, on copies
      local dpos, dvel = cuda.to_device(pos), cuda.to_device(vel)
      cuda.simulate(prev)
      return function(dt)
        local p = cuda.simulate(sim)
        launch(dpos, dvel, dt, g, b)
        dpos:copy_to_host(pos)
        cuda.simulate(p)
      end
    end },
}

return M
