-- ptxas.lua: checks PTX with NVIDIA's assembler, for the GPU test files.
--   local ptxas = require "ptxas"
--   ptxas.check(ptx [, what [, sm]])   (sm: 90 unless given, e.g. 80)
-- Skips the test (harness skip(), with the reason) when the PTX was made by
-- LLVM's NVPTX backend (libNVVM missing) or when ptxas is not installed
-- ($CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas); raises with
-- ptxas's own message when it refuses the PTX (-arch=sm_90).
local cuda = require("kjit").cuda

local M = {}

function M.path()
  for _, p in ipairs{ (os.getenv("CUDA_HOME") or "/usr/local/cuda") .. "/bin/ptxas", "/usr/local/cuda/bin/ptxas" } do
    local f = io.open(p, "r")
    if f then f:close(); return p end
  end
  return nil
end

function M.check(ptx, what, sm)
  local backend, why = cuda.ptx_backend()
  if backend ~= "libNVVM" then skip("PTX made by LLVM's NVPTX backend: " .. tostring(why)) end
  local exe = M.path()
  if not exe then skip("ptxas not found (CUDA_HOME/bin/ptxas)") end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(ptx)
  f:close()
  local p = io.popen(exe .. " -arch=sm_" .. (sm or 90) .. " " .. path .. " -o /dev/null 2>&1")
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  if not ok then error("ptxas refused the PTX" .. (what and " of " .. what or "") .. ": " .. out, 2) end
end

return M
