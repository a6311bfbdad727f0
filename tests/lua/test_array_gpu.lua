-- test_array_gpu.lua: the array-programming layer on a real GPU
-- (kjit.vectorize and kjit.guvectorize with target = "cuda"), checked
-- against the interpreted scalar function. test_vectorize.lua and
-- test_guvectorize.lua run the same targets in the simulators; this file
-- is for the GPU machine (bench/gpu/run_gpu.sh runs it) and skips, with
-- the reason, anywhere else.
local kjit = require "kjit"
local cuda = kjit.cuda

local function need_gpu()
  local ok, why = cuda.is_available()
  if not ok then skip("no GPU: " .. tostring(why)) end
  local prev = cuda.simulate(false)
  return prev
end

local function close(a, b, tol)
  if a == b then return true end
  return math.abs(a - b) <= tol * math.max(1, math.abs(b))
end

test("vectorize on the GPU: host arrays, broadcasting, every dtype pair", function()
  local prev = need_gpu()
  local f = kjit.vectorize(function(x, y) return x * y - x // 3 end,
                           { "i32(i32, i32)", "i64(i64, i64)", "f64(f64, f64)", "f32(f32, f32)" },
                           { target = "cuda" })
  for _, dt in ipairs({ "i32", "i64", "f64", "f32" }) do
    local n, m = 1000, 7
    local a = kjit.empty({ n, 1 }, dt)
    local b = kjit.empty({ 1, m }, dt)
    for i = 1, n do a[i][1] = i - 500 end
    for j = 1, m do b[1][j] = j * 3 end
    local r = f(a, b)
    eq(r.dtype, dt)
    eq(r.shape[1], n); eq(r.shape[2], m)
    local tol = dt == "f32" and 1e-6 or 0
    for i = 1, n, 37 do
      for j = 1, m do
        local want = a[i][1] * b[1][j] - a[i][1] // 3
        truthy(close(r[i][j], want, tol), string.format("%s [%d][%d]: %s vs %s", dt, i, j, r[i][j], want))
      end
    end
  end
  cuda.simulate(prev)
end)

test("vectorize on the GPU: device arrays in, a device array out, large", function()
  local prev = need_gpu()
  local f = kjit.vectorize(function(x, a) return a * x + 1 end, "f32(f32, f32)", { target = "cuda" })
  local n = 1 << 22
  local x = kjit.empty(n, "f32")
  for i = 1, n do x[i] = (i % 1000) * 0.5 end
  local d = f(cuda.to_device(x), 2.0)
  truthy(not kjit.isarray(d), "a device array")
  local h = d:copy_to_host()
  for i = 1, n, 4099 do eq(h[i], x[i] * 2 + 1) end
  cuda.simulate(prev)
end)

test("guvectorize on the GPU: row dot products", function()
  local prev = need_gpu()
  local dot = kjit.guvectorize(function(x, y, out)
    local s = 0.0
    for i = 1, #x do s = s + x[i] * y[i] end
    out[1] = s
  end, "void(f64[:], f64[:], f64[:])", "(n),(n)->()", { target = "cuda" })
  local rows, n = 3000, 64
  local x = kjit.empty({ rows, n })
  local y = kjit.empty(n)
  for j = 1, n do y[j] = j end
  for i = 1, rows do for j = 1, n do x[i][j] = (i + j) % 5 end end
  local r = dot(x, y)
  eq(r.shape[1], rows)
  for i = 1, rows, 97 do
    local s = 0.0
    for j = 1, n do s = s + x[i][j] * y[j] end
    eq(r[i], s)
  end
  cuda.simulate(prev)
end)

test("vectorize on the GPU: a run-time error in fn is raised with its line", function()
  local prev = need_gpu()
  local f = kjit.vectorize(function(x) return 10 // x end, "i64(i64)", { target = "cuda" })
  local ok, msg = pcall(f, kjit.arange(-3, 4))
  truthy(not ok and tostring(msg):find("test_array_gpu.lua:%d+:"), tostring(msg))
  cuda.simulate(prev)
end)
