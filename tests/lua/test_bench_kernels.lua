-- The benchmark kernels (bench/kernels.lua) compute, compiled by kjit, what
-- they compute interpreted: on the same kjit arrays bit for bit (every
-- output array element, the checksum, the return value), and, up to the
-- f32 rounding of saxpy, what the Lua 5.4 benchmark column computes on Lua
-- tables. Small sizes (W.spec[k].small): this is no timing test.
local kjit = require "kjit"
local W = dofile("bench/workload.lua")
local K = W.kernels

local function kjit_arrays(prep)
  return {
    vector = function(n, dtype) return kjit.zeros(n, dtype) end,
    matrix = function(r, c, dtype) return kjit.zeros({ r, c }, dtype) end,
    prep = prep,
    tonumber = tonumber,
  }
end

local tables = {
  vector = function(n, dtype)
    local z = (dtype == "i32" or dtype == "i64") and 0 or 0.0
    local t = {}
    for i = 1, n do t[i] = z end
    return t
  end,
  prep = function(f) return f end,
  tonumber = tonumber,
}
tables.matrix = function(r, c, dtype)
  local t = {}
  for i = 1, r do t[i] = tables.vector(c, dtype) end
  return t
end

-- run kernel `name` once on fresh inputs; returns state, result, checksum
local function run(name, f, A)
  local spec = W.spec[name]
  local st = spec.setup(A, spec.small)
  spec.reset(st)
  local ret = spec.run(f, st)
  return st, ret, spec.check(st, ret)
end

local function same_arrays(a, b, what)
  local ta, tb = a:totable(), b:totable()
  local function cmp(x, y, where)
    if type(x) == "table" then
      eq(#x, #y, where .. " length")
      for i = 1, #x do cmp(x[i], y[i], where .. "[" .. i .. "]") end
    else
      eq(x, y, where)
    end
  end
  cmp(ta, tb, what)
end

for _, name in ipairs(W.order) do
  test(name .. ": compiled equals interpreted on kjit arrays", function()
    local f = kjit.jit(K[name])
    local st_c, ret_c, sum_c = run(name, f, kjit_arrays(kjit.jit))
    local st_i, ret_i, sum_i = run(name, K[name], kjit_arrays(function(g) return g end))
    if ret_i ~= nil or ret_c ~= nil then eq(ret_c, ret_i, name .. " result") end
    eq(sum_c, sum_i, name .. " checksum")
    local narrays = 0
    for k, v in pairs(st_c) do
      -- the kjit arrays (st also holds jit-compiled helper loops)
      if type(v) == "userdata" and pcall(function() return v.dtype end) then
        same_arrays(v, st_i[k], name .. "." .. k)
        narrays = narrays + 1
      end
    end
    truthy(narrays > 0 or name == "fib", name .. " compared no array")
    truthy(#f.signatures == 1, name .. " compiled once")
  end)

  test(name .. ": compiled equals the Lua 5.4 benchmark column (Lua tables)", function()
    local _, _, sum_c = run(name, kjit.jit(K[name]), kjit_arrays(kjit.jit))
    local _, _, sum_t = run(name, K[name], tables)
    -- saxpy stores into f32 arrays (tables hold doubles): 1e-6 relative
    if name == "saxpy" then near(sum_c, sum_t, 1e-6, "saxpy checksum")
    else eq(sum_c + 0.0, sum_t + 0.0, name .. " checksum") end
  end)
end

test("checksums are not trivially zero", function()
  for _, name in ipairs(W.order) do
    local _, _, s = run(name, kjit.jit(K[name]), kjit_arrays(kjit.jit))
    truthy(s ~= 0 and s == s, name .. " checksum is " .. tostring(s))
  end
end)

test("fib: compiled result and the interpreter's", function()
  local f = kjit.jit(K.fib)
  eq(f(20), 6765)
  eq(f(20), K.fib(20))
  eq(f(1), 1)
  eq(f(0), 0)
end)
