-- samearray.lua: compares a result with the expected value, for the array
-- programming tests: a number (exactly, or within tol relative as near()
-- does), or a kjit array (dtype, shape, then every element).
--   local same = require "samearray"
--   same(got, want, tol_or_nil, what)
local kjit = require "kjit"

return function(got, want, tol, what)
  if math.type(want) then
    truthy(math.type(got), what .. " is a number (got " .. tostring(got) .. ")")
    if tol then near(got, want, tol, what) else eq(got, want, what) end
    return
  end
  truthy(kjit.isarray(got), what .. " is a kjit array (got " .. tostring(got) .. ")")
  eq(got.dtype, want.dtype, what .. " dtype")
  eq(table.concat(got.shape, "x"), table.concat(want.shape, "x"), what .. " shape")
  local g, w = got:reshape(got.size), want:reshape(want.size)
  for i = 1, w.size do
    if tol then near(g[i], w[i], tol, what .. "[" .. i .. "]")
    else eq(g[i], w[i], what .. "[" .. i .. "]") end
  end
end
