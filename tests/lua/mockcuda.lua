-- mockcuda.lua: runs a plain Lua script (no harness, so lua.c closes the
-- state at the end) in a child process against the mock CUDA driver
-- (tests/c/mock_libcuda.c), for the cuda tests.
local M = {}

-- s quoted for the shell
function M.q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local q = M.q

-- Runs code (kjit and cuda are globals there) with the module directory
-- moddir first on package.cpath, the interpreter lua and the environment
-- env (a table) added; returns the mock's exit report (key -> number), the
-- output and whether the child succeeded.
function M.run_script(moddir, lua, code, env)
  local report = os.tmpname()
  local parts = { "MOCK_CUDA_REPORT=" .. q(report), "KJIT_CUDASIM=" }
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. q(v) end
  local prelude = "package.cpath = " .. string.format("%q", moddir .. "/?.so;")
    .. " .. package.cpath; kjit = require 'kjit'; cuda = kjit.cuda; "
  local cmd = table.concat(parts, " ") .. " " .. q(lua) .. " -e " .. q(prelude .. code) .. " 2>&1"
  local p = io.popen(cmd)
  local out = p:read("a")
  local ok = p:close()
  local got = {}
  local f = io.open(report)
  if f then
    for k, v in f:read("a"):gmatch("([%w_]+)=(%d+)") do got[k] = tonumber(v) end
    f:close()
  end
  os.remove(report)
  return got, out, ok
end

return M
