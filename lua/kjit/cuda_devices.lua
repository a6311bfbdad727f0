-- kjit/cuda_devices.lua: numba-cuda's device list and context calls in
-- kjit.cuda: cuda.gpus (#cuda.gpus, cuda.gpus[i] with i the 0-based device
-- id as cuda.select_device takes it, cuda.gpus.current); cuda.close() is
-- src/host/cudadrv.c's.
-- The list is read when asked (simulator mode shows its one device).
-- provides: kjit.cuda.gpus
local kjit, std = ...   -- std: kjit's own copies of the libraries (src/host/lua_parts.c)
local cuda = kjit.cuda
local error, setmetatable, tostring = error, setmetatable, tostring
local math, string = std.math, std.string

cuda.gpus = setmetatable({}, {
  __len = function() return #cuda.list_devices() end,
  __index = function(_, k)
    if k == "current" then return cuda.list_devices()[cuda.current_device() + 1] end
    if math.type(k) == "integer" then
      local d = cuda.list_devices()[k + 1]
      if d == nil then
        error(string.format("cuda.gpus[%d]: no such device (%d devices; ids count from 0)", k,
          #cuda.list_devices()), 2)
      end
      return d
    end
    error("cuda.gpus has no field '" .. tostring(k) .. "' (index it with a device id, or .current)", 2)
  end,
  __newindex = function() error("cuda.gpus is read-only", 2) end,
})
