-- hello_embed.lua: run by hello_embed.c. Returns a function the C program calls.
local kjit = require "kjit"

local sum_squares = kjit.jit(function(x)
  local s = 0.0
  for i = 1, #x do s = s + x[i] * x[i] end
  return s
end)

return function(n)
  local x = kjit.arange(1, n + 1, "f64")   -- 1..n
  return sum_squares(x)
end
