-- hello_embed.lua: run by hello_embed.c. Returns a jit function; the C
-- program calls it through Lua, and compiles and calls it straight from C.
local kjit = require "kjit"

return kjit.jit(function(x)
  local s = 0.0
  for i = 1, #x do s = s + x[i] * x[i] end
  return s
end)
