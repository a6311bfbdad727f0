-- arraytest.lua: helpers of the array-programming tests.
--   local AT = require "arraytest"
--   AT.same(got, want, tol_or_nil, what)
--     a number (exactly, or within tol relative as near() does), or a kjit
--     array (dtype, shape, then every element)
--   AT.simulated(mode, fn, ...)
--     fn(...) with cuda.simulate(mode), the previous mode restored even
--     when fn raises (the error is raised again, unchanged); fn's results
--   AT.TARGETS, AT.opts(target), AT.on_target(target, fn, ...)
--     the targets the array-function tests run on: "cpu", "parallel",
--     "cuda" (the compiled simulator) and "cuda-interpret" (target "cuda"
--     in the interpreted simulator); the options selecting one; fn(...)
--     run with the simulator that target needs
local kjit = require "kjit"

local T = {}

function T.same(got, want, tol, what)
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

function T.simulated(mode, fn, ...)
  local prev = kjit.cuda.simulate(mode)
  local res = table.pack(pcall(fn, ...))
  kjit.cuda.simulate(prev)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

T.TARGETS = { "cpu", "parallel", "cuda", "cuda-interpret" }

function T.opts(target) return { target = target == "cuda-interpret" and "cuda" or target } end

function T.on_target(target, fn, ...)
  if target ~= "cuda" and target ~= "cuda-interpret" then return fn(...) end
  return T.simulated(target == "cuda" or "interpret", fn, ...)
end

return T
