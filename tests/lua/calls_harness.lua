-- calls_harness.lua: the differential driver of the call-protocol tests
-- (test_callproto.lua, test_nativecall.lua): a scenario of steps run once
-- with the function interpreted and once compiled, whose logs must agree.
--   local H = require "calls_harness"
--   H.differential(function()
--     local fn = ...                          -- fresh state for each pass
--     return fn, function(run, note, call)
--       run(1, 2)       -- calls fn (interpreted, then compiled); logs what
--                       -- it returns or raises, subtypes included
--       note(v)         -- logs a value of the step's own
--     end
--   end)
-- A difference raises "step N: interpreted ..., compiled ..." at the caller.
local kjit = require "kjit"
local M = {}

-- A value as the logs show it: numbers with their subtype, tables and
-- functions by their type only (each pass makes its own).
function M.fmt(v)
  if math.type(v) == "float" then return string.format("%.17g(f)", v) end
  if math.type(v) == "integer" then return tostring(v) .. "(i)" end
  if type(v) == "table" or type(v) == "function" then return type(v) end
  return tostring(v)
end

-- build() makes fresh state and returns (fn, steps); steps(run, note, call)
-- drives it: run(...) calls the function under test (interpreted on the
-- first pass, compiled on the second) and logs what it returns or raises,
-- note(v) logs a value of the step's own. The two logs must agree.
function M.differential(build)
  local logs = {}
  for pass = 1, 2 do
    local fn, steps = build()
    local call = pass == 1 and fn or kjit.jit(fn)
    local log = {}
    local function run(...)
      local r = table.pack(pcall(call, ...))
      local parts = {}
      for i = 1, r.n do parts[#parts + 1] = M.fmt(r[i]) end
      log[#log + 1] = table.concat(parts, " ")
    end
    local function note(v) log[#log + 1] = "note " .. M.fmt(v) end
    steps(run, note, call)
    logs[pass] = log
  end
  for i = 1, math.max(#logs[1], #logs[2]) do
    if logs[1][i] ~= logs[2][i] then
      error(string.format("step %d: interpreted %s, compiled %s", i, tostring(logs[1][i]),
                          tostring(logs[2][i])), 2)
    end
  end
end

-- A class with one method, dot, found through __index (a fresh table each
-- call: a test may replace its method).
function M.class()
  local C = {}
  C.__index = C
  function C:dot(o) return self.x * o.x + self.y * o.y end
  return C
end

-- Two objects of class C and a loop summing p:dot(q) n times: the method
-- call site the call tests change things under.
function M.dot_pair(C)
  local a, b = setmetatable({ x = 1, y = 2 }, C), setmetatable({ x = 3.5, y = 4 }, C)
  local function f(p, q, n)
    local s = 0
    for _ = 1, n do s = s + p:dot(q) end
    return s
  end
  return a, b, f
end

return M
