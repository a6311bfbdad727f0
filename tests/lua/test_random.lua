-- test_random.lua: kjit.random (host arrays) and kjit.cuda.random.generator
-- (the simulator here; on a GPU cuRAND's device generator).
--
-- Golden values: the first numbers of cuRAND's philox generator for seed
-- 1234 (curandCreateGeneratorHost, cuRAND 10.4, CUDA 13), which kjit's own
-- Philox must reproduce without libcurand; sobol32's first points. Moments:
-- means and variances within 5 standard errors (a false alarm about once in
-- 3 million runs; the seeds are fixed, so a run is reproducible anyway).
-- Child processes run without libcurand (KJIT_CURAND pointing nowhere),
-- with the mock driver (a device generator then fails in cuRAND), and with
-- the mock driver and the mock cuRAND (tests/c/mock_libcurand.c: device
-- generators, and cuda.close() under them).
local kjit = require "kjit"
local cuda = kjit.cuda
local random = kjit.random

local CHILD = os.getenv("KJIT_TEST_RANDOM_CHILD")
local MODDIR, HARNESS, THIS, LUA = arg[1], arg[0], arg[2], arg[-1]
local have_curand = random.backend():find("^cuRAND") ~= nil

local BITS_1234 = { 546353992, 3665621163, 1140953199, 3419031310, 3507855656, 1392278645,
  3354607383, 253049307, 2336459095, 3966386679, 1896250878, 1109236389 }
local UNIFORM_1234 = { "0.12720795", "0.853468955", "0.265648872", "0.796055257" }
local NORMAL_1234 = { -1.61649048, 1.22915542, -1.56054044, 0.464621365, 0.568455219,
  -0.285896361, 0.254342854, 0.655383945 }

local function moments(a)
  local n, s, s2 = #a, 0, 0
  for i = 1, n do local x = a[i] + 0.0; s = s + x; s2 = s2 + x * x end
  local m = s / n
  return m, s2 / n - m * m
end

-- mean within 5 standard errors of mu; variance within 5 of its own error
-- (kurtosis k: var of the sample variance is (k - 1) var^2 / n)
local function check_moments(a, mu, var, kurt, what)
  local n = #a
  local m, v = moments(a)
  local se = math.sqrt(var / n)
  if math.abs(m - mu) > 5 * se then
    error(string.format("%s: mean %.6g, want %.6g (standard error %.3g)", what, m, mu, se), 2)
  end
  local sev = math.sqrt((kurt - 1) * var * var / n)
  if math.abs(v - var) > 5 * sev then
    error(string.format("%s: variance %.6g, want %.6g (standard error %.3g)", what, v, var, sev), 2)
  end
end

local BACKENDS = { "kjit" }
if have_curand then BACKENDS[2] = "curand" end

if CHILD == nil then

test("backend names the library", function()
  local b = random.backend()
  truthy(b:find("^cuRAND %d+%.%d+%.%d+") or b:find("^kjit philox4x32%-10 %(no cuRAND"), b)
end)

for _, be in ipairs(BACKENDS) do
  test(be .. ": philox golden values for seed 1234", function()
    local g = random.generator { seed = 1234, backend = be }
    eq(g.kind, "philox", "kind"); eq(g.seed, 1234, "seed")
    local a = g:bits(kjit.zeros(#BITS_1234, "u32"))
    for i, v in ipairs(BITS_1234) do eq(a[i], v, "bits " .. i) end
    local u = random.generator { seed = 1234, backend = be }:uniform(kjit.zeros(4, "f32"))
    for i, v in ipairs(UNIFORM_1234) do eq(string.format("%.9g", u[i]), v, "uniform " .. i) end
    local z = random.generator { seed = 1234, backend = be }:normal(kjit.zeros(8, "f32"))
    for i, v in ipairs(NORMAL_1234) do near(z[i], v, 1e-6, "normal " .. i) end
    -- the second round of cuRAND's 65536 subsequences
    local big = random.generator { seed = 1234, backend = be, offset = 262144 }:bits(kjit.zeros(2, "u32"))
    eq(big[1], 2666454581, "value 262144"); eq(big[2], 482218876, "value 262145")
    -- offsets skip values one by one
    local o = random.generator { seed = 1234, backend = be, offset = 5 }:bits(kjit.zeros(3, "u32"))
    for i = 1, 3 do eq(o[i], BITS_1234[5 + i], "offset 5: " .. i) end
  end)

  test(be .. ": moments of every distribution", function()
    local g = random.generator { seed = 99, backend = be }
    for _, dt in ipairs { "f32", "f64" } do
      local n = 200001
      local u = g:uniform(kjit.zeros(n, dt))
      for i = 1, n do truthy(u[i] > 0 and u[i] <= 1, "uniform in (0, 1]") end
      check_moments(u, 0.5, 1 / 12, 1.8, dt .. " uniform")
      check_moments(g:normal(kjit.zeros(n, dt), 2.0, 3.0), 2.0, 9.0, 3, dt .. " normal")
      check_moments(g:normal(kjit.zeros(n, dt)), 0.0, 1.0, 3, dt .. " standard normal")
      local s2 = 0.25
      local lm, lv = math.exp(0.5 + s2 / 2), (math.exp(s2) - 1) * math.exp(1 + s2)
      local ln = g:lognormal(kjit.zeros(n, dt), 0.5, 0.5)
      for i = 1, n do truthy(ln[i] > 0, "lognormal > 0") end
      check_moments(ln, lm, lv, math.exp(4 * s2) + 2 * math.exp(3 * s2) + 3 * math.exp(2 * s2) - 3, dt .. " lognormal")
    end
    for _, lam in ipairs { 0.5, 4.5, 30, 1000 } do
      local p = g:poisson(kjit.zeros(100000, "u32"), lam)
      check_moments(p, lam, lam, 3 + 1 / lam, "poisson " .. lam)
    end
    local b = g:bits(kjit.zeros(100000, "u32"))
    check_moments(b, 2 ^ 31 - 0.5, (2 ^ 64 - 1) / 12, 1.8, "bits")
    for bit = 0, 31, 7 do
      local ones = 0
      for i = 1, #b do ones = ones + ((b[i] >> bit) & 1) end
      truthy(math.abs(ones - 50000) < 5 * math.sqrt(25000), "bit " .. bit .. " balanced: " .. ones)
    end
  end)

  test(be .. ": a seed gives one stream; calls continue it", function()
    local a = random.generator { seed = 7, backend = be }:uniform(kjit.zeros(10, "f64"))
    local b = random.generator { seed = 7, backend = be }:uniform(kjit.zeros(10, "f64"))
    local c = random.generator { seed = 8, backend = be }:uniform(kjit.zeros(10, "f64"))
    for i = 1, 10 do eq(a[i], b[i], "same seed") end
    local diff = 0
    for i = 1, 10 do if a[i] ~= c[i] then diff = diff + 1 end end
    truthy(diff == 10, "another seed differs")
    local g = random.generator { seed = 1234, backend = be }
    local x, y = g:bits(kjit.zeros(5, "u32")), g:bits(kjit.zeros(7, "u32"))
    for i = 1, 5 do eq(x[i], BITS_1234[i], "first call") end
    for i = 1, 7 do eq(y[i], BITS_1234[5 + i], "second call continues") end
    -- an empty array draws nothing
    g:bits(kjit.zeros(0, "u32"))
    eq(g:bits(kjit.zeros(1, "u32"))[1], 2835017892, "after an empty draw (value 13)")
  end)
end

test("kjit's Philox is cuRAND's: bits, f32 uniforms and f32 normals, call by call", function()
  if not have_curand then skip("no libcurand: " .. random.backend()) end
  for _, case in ipairs { { 16, 0, 2 }, { 1000, 5, 3 }, { 7, 3, 5 }, { 70001, 11, 2 } } do
    local n, off, calls = case[1], case[2], case[3]
    local g1 = random.generator { seed = 42, offset = off, backend = "curand" }
    local g2 = random.generator { seed = 42, offset = off, backend = "kjit" }
    for c = 1, calls do
      local a, b = g1:bits(kjit.zeros(n, "u32")), g2:bits(kjit.zeros(n, "u32"))
      for i = 1, n do if a[i] ~= b[i] then eq(b[i], a[i], "bits " .. i) end end
      a, b = g1:uniform(kjit.zeros(n, "f32")), g2:uniform(kjit.zeros(n, "f32"))
      for i = 1, n do if a[i] ~= b[i] then eq(b[i], a[i], "uniform " .. i) end end
      a, b = g1:normal(kjit.zeros(n, "f32"), 1, 2), g2:normal(kjit.zeros(n, "f32"), 1, 2)
      local err = 0
      for i = 1, n do err = math.max(err, math.abs(a[i] - b[i])) end
      truthy(err <= 1e-5, string.format("normals within 1e-5 (n %d, call %d): %g", n, c, err))
    end
  end
end)

test("cuRAND's other kinds: first sobol32 points, moments", function()
  if not have_curand then skip("no libcurand") end
  local s = random.generator { kind = "sobol32" }:uniform(kjit.zeros(5, "f32"))
  for i, v in ipairs { "1.16415322e-10", "0.5", "0.75", "0.25", "0.375" } do
    eq(string.format("%.9g", s[i]), v, "sobol32 " .. i)
  end
  for _, k in ipairs { "xorwow", "mrg32k3a", "sobol32" } do
    local g = random.generator { kind = k, seed = 3 }
    eq(g.kind, k, "kind")
    check_moments(g:uniform(kjit.zeros(100000, "f64")), 0.5, 1 / 12, 1.8, k .. " uniform")
    check_moments(g:normal(kjit.zeros(100001, "f32")), 0, 1, 3, k .. " normal (odd count)")
  end
end)

test("odd normal counts are the first n of n + 1 draws", function()
  for _, be in ipairs(BACKENDS) do
    local a = random.generator { seed = 5, backend = be }:normal(kjit.zeros(7, "f32"))
    local b = random.generator { seed = 5, backend = be }:normal(kjit.zeros(8, "f32"))
    for i = 1, 7 do eq(a[i], b[i], be .. " " .. i) end
  end
end)

test("kjit.cuda.random in the simulator gives kjit.random's numbers", function()
  local prev = cuda.simulate(true)
  local g = cuda.random.generator { seed = 1234 }
  truthy(tostring(g):find("kjit.cuda.random.generator(philox, seed 1234", 1, true), tostring(g))
  local d = g:bits(cuda.device_array(12, "u32"))
  eq(cuda.is_device_array(d), true, "returns the device array")
  local h = d:copy_to_host()
  for i, v in ipairs(BITS_1234) do eq(h[i], v, "bits " .. i) end
  local x = g:normal(cuda.device_array(9, "f64"), 1, 2):copy_to_host()
  local y = random.generator { seed = 1234 }
  y:bits(kjit.zeros(12, "u32"))
  local z = y:normal(kjit.zeros(9, "f64"), 1, 2)
  for i = 1, 9 do eq(x[i], z[i], "normal " .. i) end
  local s = cuda.stream()
  cuda.random.generator { seed = 1, stream = s }:uniform(cuda.device_array(4, "f32"))
  g:set_stream(s)
  cuda.simulate(false)
  raises("this generator was made in simulator mode", function() g:bits(d) end)
  cuda.simulate(prev)
end)

test("errors name the call and the user's line", function()
  local g = random.generator { seed = 1 }
  local m = raises("kjit.random.generator:bits: argument #1: a u32 array expected, got f32",
    function() g:bits(kjit.zeros(4, "f32")) end)
  truthy(m:find("test_random.lua:%d+:"), "location in: " .. m)
  raises("kjit.random.generator:uniform: argument #1: an f32 or f64 array expected, got i32",
    function() g:uniform(kjit.zeros(4, "i32")) end)
  raises("kjit.random.generator:poisson: lambda must be > 0", function() g:poisson(kjit.zeros(4, "u32"), 0) end)
  raises("kjit.random.generator:normal: std must be >= 0", function() g:normal(kjit.zeros(4), 0, -1) end)
  raises("kjit.random.generator: option kind: \"philox\", \"xorwow\", \"mrg32k3a\" or \"sobol32\" expected, got mt19937",
    function() random.generator { kind = "mt19937" } end)
  raises("kjit.random.generator: option seed: a non-negative integer expected",
    function() random.generator { seed = -1 } end)
  raises("kjit.random.generator: option backend: \"curand\" or \"kjit\" expected",
    function() random.generator { backend = "numpy" } end)
  raises("kjit.random.generator: backend \"kjit\" has kind \"philox\" only, not \"xorwow\"",
    function() random.generator { kind = "xorwow", backend = "kjit" } end)
  raises("kjit.random.generator: streams are for kjit.cuda.random",
    function() random.generator { stream = 1 } end)
  local prev = cuda.simulate(true)
  local d = cuda.device_array(4)
  raises("kjit.random.generator:uniform: argument #1: a kjit array expected, got a device array",
    function() g:uniform(d) end)
  raises("kjit.cuda.random.generator:uniform: argument #1: a device array expected, got a kjit array",
    function() cuda.random.generator {}:uniform(kjit.zeros(4)) end)
  cuda.simulate(false)
  if not cuda.is_available() then
    raises("kjit.cuda: no CUDA driver", function() cuda.random.generator {} end)
  end
  cuda.simulate(prev)
end)

test("GPU: the device generators give the host generators' numbers (runs where a GPU is)", function()
  local prev = cuda.simulate(false)
  local ok, why = cuda.is_available()
  if not ok then cuda.simulate(prev); skip("no GPU: " .. tostring(why)) end
  if not have_curand then cuda.simulate(prev); skip("no libcurand") end
  for _, k in ipairs { "philox", "xorwow", "mrg32k3a", "sobol32" } do
    local opts = { kind = k, seed = 77, offset = 3 }
    local h = random.generator(opts)
    local d = cuda.random.generator(opts)
    eq(d.backend, "cuRAND (device)", "backend")
    for _, n in ipairs { 1000, 65536 * 4 + 10 } do
      local a, b = h:bits(kjit.zeros(n, "u32")), d:bits(cuda.device_array(n, "u32")):copy_to_host()
      for i = 1, n do if a[i] ~= b[i] then eq(b[i], a[i], k .. " bits " .. i) end end
      a, b = h:uniform(kjit.zeros(n, "f32")), d:uniform(cuda.device_array(n, "f32")):copy_to_host()
      for i = 1, n do if a[i] ~= b[i] then eq(b[i], a[i], k .. " uniform " .. i) end end
      a, b = h:normal(kjit.zeros(n, "f32")), d:normal(cuda.device_array(n, "f32")):copy_to_host()
      local err = 0
      for i = 1, n do err = math.max(err, math.abs(a[i] - b[i])) end
      truthy(err <= 1e-5, k .. " normals within 1e-5: " .. err)
    end
  end
  cuda.simulate(prev)
end)

local MOCK = MODDIR .. "/libmockcuda.so"
local function file_exists(p) local f = io.open(p) if f then f:close() return true end return false end
local function child(suite, env, need_curand)
  test("child: " .. suite, function()
    if need_curand and not have_curand then skip("no libcurand") end
    if env.KJIT_LIBCUDA and not file_exists(env.KJIT_LIBCUDA) then skip("no mock driver") end
    local e = { "KJIT_TEST_RANDOM_CHILD=" .. suite, "KJIT_CUDASIM=0" }
    for k, v in pairs(env) do e[#e + 1] = k .. "=" .. v end
    local p = io.popen(string.format("env %s %s %s %s %s 2>&1", table.concat(e, " "), LUA, HARNESS, MODDIR, THIS))
    local out = p:read("a")
    local ok = p:close()
    if not ok or not out:find(", 0 failed") or out:find(" 0 passed") then error("child failed:\n" .. out, 0) end
  end)
end
child("nocurand", { KJIT_CURAND = "/nonexistent/libcurand.so.10" })
child("mockdriver", { KJIT_LIBCUDA = MOCK }, true)

-- the device path with the mock driver and the mock cuRAND
-- (tests/c/mock_libcurand.c), which counts every call on a generator whose
-- context is not the current one (cuda.close() destroyed it), out of range,
-- or on a dead stream: none may happen, the finalizers' included
local MOCKRAND = MODDIR .. "/libmockcurand.so"
test("child: mockcurand (device generators and cuda.close, mock driver and mock cuRAND)", function()
  if not (file_exists(MOCK) and file_exists(MOCKRAND)) then skip("no mock libraries") end
  local report = os.tmpname()
  local e = { "KJIT_TEST_RANDOM_CHILD=mockcurand", "KJIT_CUDASIM=0", "KJIT_LIBCUDA=" .. MOCK,
              "KJIT_CURAND=" .. MOCKRAND, "MOCK_CURAND_REPORT=" .. report }
  local p = io.popen(string.format("env %s %s %s %s %s 2>&1", table.concat(e, " "), LUA, HARNESS, MODDIR, THIS))
  local out = p:read("a")
  local ok = p:close()
  local got = {}
  local f = io.open(report)
  if f then
    for k, v in f:read("a"):gmatch("([%w_]+)=(%d+)") do got[k] = tonumber(v) end
    f:close()
  end
  os.remove(report)
  if not ok or not out:find(", 0 failed") or out:find(" 0 passed") then error("child failed:\n" .. out, 0) end
  eq(got.driver_checks, 1, "the mock cuRAND found the mock driver's checks")
  for _, k in ipairs{ "bad_handles", "bad_contexts", "bad_ranges", "bad_streams" } do
    eq(got[k], 0, "mock cuRAND: " .. k)
  end
  truthy(got.device_creates >= 5 and got.calls > 20, "device generators were made and used")
end)

elseif CHILD == "nocurand" then
  test("without libcurand: kjit's Philox, and clear errors for the rest", function()
    truthy(random.backend():find("kjit philox4x32-10 (no cuRAND: KJIT_CURAND=/nonexistent/libcurand.so.10 could not be loaded", 1, true), random.backend())
    local g = random.generator { seed = 1234 }
    eq(g.backend, "kjit philox4x32-10", "backend")
    local a = g:bits(kjit.zeros(12, "u32"))
    for i, v in ipairs(BITS_1234) do eq(a[i], v, "bits " .. i) end
    raises("kjit.random.generator: kind \"xorwow\" needs cuRAND, which is not available (KJIT_CURAND=",
      function() random.generator { kind = "xorwow" } end)
    raises("kjit.random.generator: cuRAND is not available: KJIT_CURAND=",
      function() random.generator { backend = "curand" } end)
  end)
elseif CHILD == "mockcurand" then
  test("the mock cuRAND is the backend", function()
    truthy(random.backend():find("libmockcurand.so", 1, true), random.backend())
    eq(cuda.random.generator { seed = 1 }.backend, "cuRAND (device)")
  end)

  -- a device fill against a host fill of the same kind, seed and offset
  -- (the mock, as cuRAND, gives both the same numbers)
  local function same(dev, host, what)
    local d = dev:copy_to_host()
    eq(d.size, host.size, what .. " size")
    for i = 1, host.size do if d[i] ~= host[i] then eq(d[i], host[i], what .. " " .. i) end end
  end

  test("device generators fill device arrays with the host generator's numbers", function()
    for _, kind in ipairs{ "philox", "xorwow", "mrg32k3a" } do
      local d = cuda.random.generator { kind = kind, seed = 7, offset = 3 }
      local h = random.generator { kind = kind, seed = 7, offset = 3, backend = "curand" }
      same(d:bits(cuda.device_array(33, "u32")), h:bits(kjit.zeros(33, "u32")), kind .. " bits")
      same(d:uniform(cuda.device_array(10, "f32")), h:uniform(kjit.zeros(10, "f32")), kind .. " uniform f32")
      same(d:uniform(cuda.device_array(10)), h:uniform(kjit.zeros(10)), kind .. " uniform f64")
      -- an odd count: the first n of n + 1 draws (through a device scratch array)
      same(d:normal(cuda.device_array(7, "f32"), 1, 2), h:normal(kjit.zeros(7, "f32"), 1, 2), kind .. " normal")
      same(d:lognormal(cuda.device_array(8)), h:lognormal(kjit.zeros(8)), kind .. " lognormal")
      same(d:poisson(cuda.device_array(9, "u32"), 3), h:poisson(kjit.zeros(9, "u32"), 3), kind .. " poisson")
    end
    local s = cuda.stream()
    local d = cuda.random.generator { seed = 5, stream = s }
    local out = d:uniform(cuda.device_array(64, "f32"))
    s:synchronize()
    same(out, random.generator { seed = 5, backend = "curand" }:uniform(kjit.zeros(64, "f32")), "on a stream")
  end)

  test("cuda.close(): generators made before raise the documented error; fresh ones work", function()
    local before = cuda.random.generator { seed = 11 }
    local streamed = cuda.random.generator { seed = 12, stream = cuda.stream() }
    local first = before:uniform(cuda.device_array(16, "f32")):copy_to_host()
    local host = random.generator { seed = 11, backend = "curand" }   -- the host's own
    cuda.close()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() return before:uniform(cuda.device_array(16, "f32")) end)
    eq(ok, false, "a generator made before cuda.close() is dead")
    truthy(err:find("test_random.lua:" .. line .. ": kjit.cuda.random: this generator was made before "
                    .. "cuda.close(), which released it with the device's context: make it again", 1, true), err)
    raises("was made before cuda.close()", function() streamed:set_stream(cuda.stream()) end)
    raises("was made before cuda.close()", function() streamed:bits(cuda.device_array(4, "u32")) end)
    -- made again, the same numbers; the host generator made before still works
    local again = cuda.random.generator { seed = 11 }
    same(again:uniform(cuda.device_array(16, "f32")), first, "a fresh generator after the close")
    local h = host:uniform(kjit.zeros(16, "f32"))
    for i = 1, 16 do eq(h[i], first[i], "the host generator " .. i) end
    -- their finalizers must not call cuRAND on the dead context (the
    -- parent reads the mock's count of such calls)
    before, streamed = nil, nil
    collectgarbage(); collectgarbage()
    same(again:uniform(cuda.device_array(16, "f32")), host:uniform(kjit.zeros(16, "f32")), "after the finalizers")
    -- and a second close: the fresh one dies in turn
    cuda.close()
    raises("was made before cuda.close()", function() again:normal(cuda.device_array(4)) end)
  end)
elseif CHILD == "mockdriver" then
  test("a device generator's cuRAND failure names the call and the status", function()
    -- the mock driver is no GPU for cuRAND's own runtime: creation fails
    local ok, m = pcall(function() return cuda.random.generator { seed = 1 } end)
    if ok then skip("cuRAND made a device generator") end
    truthy(m:find("kjit.cuda.random.generator: curandCreateGenerator: CURAND_STATUS_[A-Z_]+ %(%d+%)"), m)
    truthy(m:find("test_random.lua:%d+:"), "location in: " .. m)
    raises("kjit.cuda.random.generator: backend \"kjit\" runs on the CPU",
      function() cuda.random.generator { backend = "kjit" } end)
  end)
end
