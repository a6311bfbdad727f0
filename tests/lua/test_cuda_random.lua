-- test_cuda_random.lua: kjit.cuda.random, numba-cuda's xoroshiro128+ module
-- (issue 25, item 6). The expected numbers below were computed by numba-cuda
-- 0.30 itself (numba.cuda.random's init_xoroshiro128p_states_cpu and its
-- device functions called on the CPU, numba 0.68): the sequence must be
-- numba-cuda's, bit for bit. Kernels calling the functions run in the
-- interpreted simulator (the reference) and the compiled one, results and
-- advanced states compared with a plain-Lua loop over a host copy of the
-- states; the kernel compiles to PTX that ptxas accepts for sm_75/80/90.
local kjit = require "kjit"
local cuda = kjit.cuda
local R = cuda.random
local ptxas = require "ptxas"

local function hex(v) return string.format("%x", v) end

test("states are numba-cuda's: SplitMix64 seeding and 2^64 jumps", function()
  local st = kjit.zeros(4, R.xoroshiro128p_dtype)
  R.init_xoroshiro128p_states(st, 1)
  local want = {
    { "910a2dec89025cc1", "910a2dec89025cc1" }, { "73c19a5348fc9098", "6c96c932f21d71ee" },
    { "b3d0cd6ddfa7a4c", "d3c2c33e9b8e707a" }, { "3b80c389fcd31ee7", "b43c70624d182bbb" },
  }
  for i = 1, 4 do
    eq(hex(st[i].s0), want[i][1], "s0 of state " .. i)
    eq(hex(st[i].s1), want[i][2], "s1 of state " .. i)
  end
  -- subsequence_start jumps the first state that many times
  local st2 = kjit.zeros(2, R.xoroshiro128p_dtype)
  R.init_xoroshiro128p_states(st2, 12345, 3)
  eq(hex(st2[1].s0), "81677962ecc05fc7"); eq(hex(st2[1].s1), "6ad0e4dab75ad20b")
  eq(hex(st2[2].s0), "befa25f3118b9bbf"); eq(hex(st2[2].s1), "6c72b22d7db22783")
  eq(R.xoroshiro128p_dtype.size, 16)
end)

test("uniform and normal values are numba-cuda's", function()
  local st = kjit.zeros(4, R.xoroshiro128p_dtype)
  R.init_xoroshiro128p_states(st, 1)
  local want = {
    { R.xoroshiro128p_uniform_float64, 1, { 0.1331231503445619, 0.37805969057650834, 0.23055169997131642 } },
    { R.xoroshiro128p_uniform_float32, 2, { 0.8763487339019775, 0.21028068661689758, 0.41908127069473267 } },
    { R.xoroshiro128p_normal_float32, 3, { -0.5036907196044922, -0.4430192708969116, -0.2263726145029068 } },
    { R.xoroshiro128p_normal_float64, 4, { 0.3258065761194501, 0.13793550976349273, -0.42477900745688435 } },
  }
  for _, w in ipairs(want) do
    for j = 1, 3 do eq(w[1](st, w[2]), w[3][j], "state " .. w[2] .. " value " .. j) end
  end
  -- f32 results are f32 values
  for _ = 1, 100 do
    local u = R.xoroshiro128p_uniform_float32(st, 1)
    eq(cuda.float32(u), u)
    truthy(u >= 0 and u <= 1)
  end
end)

test("the functions compile for the CPU (kjit.jit) with the same sequence", function()
  local draw = kjit.jit(function(st, out)
    for i = 1, #out, 4 do
      out[i] = R.xoroshiro128p_uniform_float64(st, 1)
      out[i + 1] = R.xoroshiro128p_uniform_float32(st, 2)
      out[i + 2] = R.xoroshiro128p_normal_float32(st, 3)
      out[i + 3] = R.xoroshiro128p_normal_float64(st, 4)
    end
  end)
  local a = kjit.zeros(4, R.xoroshiro128p_dtype)
  R.init_xoroshiro128p_states(a, 99, 1)
  local b = a:copy()
  local out = kjit.zeros(400, "f64")
  draw(a, out)
  for i = 1, 400, 4 do
    eq(out[i], R.xoroshiro128p_uniform_float64(b, 1), "uniform64 " .. i)
    eq(out[i + 1], R.xoroshiro128p_uniform_float32(b, 2), "uniform32 " .. i)
    eq(out[i + 2], R.xoroshiro128p_normal_float32(b, 3), "normal32 " .. i)
    eq(out[i + 3], R.xoroshiro128p_normal_float64(b, 4), "normal64 " .. i)
  end
  for i = 1, 4 do eq(a[i].s0, b[i].s0); eq(a[i].s1, b[i].s1) end
end)

-- every thread draws from its own state (1-based, as cuda.grid counts)
local function draws(states, out, m)
  local i = cuda.grid(1)
  if i <= #states then
    local o = (i - 1) * 4 * m
    for j = 0, m - 1 do
      out[o + 4 * j + 1] = R.xoroshiro128p_uniform_float64(states, i)
      out[o + 4 * j + 2] = R.xoroshiro128p_uniform_float32(states, i)
      out[o + 4 * j + 3] = R.xoroshiro128p_normal_float32(states, i)
      out[o + 4 * j + 4] = R.xoroshiro128p_normal_float64(states, i)
    end
  end
end

test("kernels draw numba-cuda's sequence in both simulators", function()
  local n, m = 80, 5
  local model = kjit.zeros(n, R.xoroshiro128p_dtype)
  R.init_xoroshiro128p_states(model, 2024, 2)
  local want = {}
  for i = 1, n do
    for _ = 1, m do
      want[#want + 1] = R.xoroshiro128p_uniform_float64(model, i)
      want[#want + 1] = R.xoroshiro128p_uniform_float32(model, i)
      want[#want + 1] = R.xoroshiro128p_normal_float32(model, i)
      want[#want + 1] = R.xoroshiro128p_normal_float64(model, i)
    end
  end
  local k = cuda.jit(draws)
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local ok, err = pcall(function()
      local states = R.create_xoroshiro128p_states(n, 2024, 2)
      eq(cuda.is_device_array(states), true)
      eq(states.dtype, R.xoroshiro128p_dtype)
      local out = cuda.device_array(n * 4 * m, "f64")
      k[{3, 32}](states, out, m)
      local h = out:copy_to_host()
      for j = 1, #want do eq(h[j], want[j], tostring(mode) .. " value " .. j) end
      local hs = states:copy_to_host()
      for i = 1, n do
        eq(hs[i].s0, model[i].s0, "s0 after, state " .. i)
        eq(hs[i].s1, model[i].s1, "s1 after, state " .. i)
      end
      -- init_xoroshiro128p_states refills a device array (through a stream too)
      local s = cuda.stream()
      R.init_xoroshiro128p_states(states, 2024, 2, s)
      s:synchronize()
      local fresh = kjit.zeros(n, R.xoroshiro128p_dtype)
      R.init_xoroshiro128p_states(fresh, 2024, 2)
      hs = states:copy_to_host()
      for i = 1, n do eq(hs[i].s0, fresh[i].s0); eq(hs[i].s1, fresh[i].s1) end
    end)
    cuda.simulate(prev)
    if not ok then error(err, 0) end
  end
end)

test("numba-cuda's compute_pi example ports with the index change only", function()
  local function compute_pi(rng_states, iterations, out)
    local thread_id = cuda.grid(1)
    local inside = 0
    for _ = 1, iterations do
      local x = R.xoroshiro128p_uniform_float32(rng_states, thread_id)
      local y = R.xoroshiro128p_uniform_float32(rng_states, thread_id)
      if x ^ 2 + y ^ 2 <= 1.0 then inside = inside + 1 end
    end
    out[thread_id] = 4.0 * inside / iterations
  end
  local k = cuda.jit(compute_pi)
  local results = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local ok, err = pcall(function()
      local tpb, blocks = 16, 4
      local rng_states = R.create_xoroshiro128p_states(tpb * blocks, 1)
      local out = kjit.zeros(tpb * blocks, "f32")
      k[{blocks, tpb}](rng_states, 200, out)
      results[#results + 1] = out
    end)
    cuda.simulate(prev)
    if not ok then error(err, 0) end
  end
  local mean = 0
  for i = 1, #results[1] do
    eq(results[2][i], results[1][i], "out[" .. i .. "]")
    mean = mean + results[1][i]
  end
  mean = mean / #results[1]
  truthy(math.abs(mean - math.pi) < 0.1, "pi estimate " .. mean)
end)

test("a kernel using the generator compiles to PTX that ptxas accepts", function()
  local k = cuda.jit(draws)
  for _, cc in ipairs{ 75, 80, 90 } do
    k:compile("void(record[:], f64[:], i64)", R.xoroshiro128p_dtype, cc)
    ptxas.check(k:inspect("ptx"), "random draws", cc)
  end
  local ptx = k:inspect("ptx")
  truthy(ptx:find("ld.global", 1, true), "the states are loaded from global memory")
end)

test("argument errors", function()
  raises("n must be at least 1", function() R.create_xoroshiro128p_states(0, 1) end)
  raises("seed: an integer expected, got a non-integral number", function()
    R.create_xoroshiro128p_states(4, 1.5)
  end)
  raises("subsequence_start must not be negative", function()
    R.init_xoroshiro128p_states(kjit.zeros(2, R.xoroshiro128p_dtype), 1, -1)
  end)
  raises("xoroshiro128p_dtype expected", function()
    R.init_xoroshiro128p_states(kjit.zeros(2, "f64"), 1)
  end)
  -- the message names the caller's line
  local ok, err = pcall(R.create_xoroshiro128p_states, "x", 1)
  eq(ok, false)
  truthy(err:find("n: an integer expected, got string", 1, true), err)
end)

test("numba's eager signature: xoroshiro128p_type[:] is the states' layout", function()
  local function draw(rng, out)
    local i = cuda.grid(1)
    if i <= #out then out[i] = R.xoroshiro128p_uniform_float32(rng, i) end
  end
  local SIG = "void(xoroshiro128p_type[:], float32[:])"
  local prev = cuda.simulate(true)
  local ok, err = pcall(function()
    local k = cuda.jit(draw, SIG)
    truthy(k.signatures[1]:find("record", 1, true), k.signatures[1])
    local states = R.create_xoroshiro128p_states(40, 5)
    local out = kjit.zeros(40, "f32")
    k:forall(40)(states, out)
    local model = kjit.zeros(40, R.xoroshiro128p_dtype)
    R.init_xoroshiro128p_states(model, 5)
    for i = 1, 40 do eq(out[i], R.xoroshiro128p_uniform_float32(model, i), "out[" .. i .. "]") end
    raises("not one record", function() cuda.jit(draw, "void(xoroshiro128p_type, float32[:])") end)
    raises("give its layout", function() cuda.jit(draw, "void(record[:], float32[:])") end)
  end)
  cuda.simulate(prev)
  if not ok then error(err, 0) end
  local k = cuda.jit(draw)
  k:compile(SIG, 80)
  ptxas.check(k:inspect("ptx"), "xoroshiro128p_type signature", 80)
end)
