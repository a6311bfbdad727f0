-- gc_harness.lua: run a test body with the collector working at (about)
-- every allocation, the way the table, frame and closure tests check that
-- compiled code anchors every collectable value it holds.
--   local G = require "gc_harness"
--   for _, mode in ipairs(G.modes) do G.with_gc(mode, function() ... end) end
-- Whatever the body does, the collector is set back to Lua's defaults and a
-- full collection runs before its error (if any) is raised again.
local M = {}

M.modes = { "incremental", "generational" }

function M.with_gc(mode, fn)
  if mode == "incremental" then
    collectgarbage("incremental", 0, 1000, 0)   -- no pause, the smallest steps
  elseif mode == "generational" then
    collectgarbage("generational", 0, 0)        -- a minor collection at every step
  else
    error("gc_harness: unknown mode " .. tostring(mode), 2)
  end
  local ok, err = pcall(fn)
  collectgarbage("incremental", 200, 100, 13)   -- Lua's defaults
  collectgarbage("collect")
  if not ok then error(err, 0) end
end

return M
