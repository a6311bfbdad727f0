-- kjit/random.lua: numba-cuda's random module (numba.cuda.random) as
-- kjit.cuda.random: the xoroshiro128+ generator with SplitMix64 seeding
-- and 2^64-step jumps between the states of consecutive threads.
--
-- Design: the device functions are PLAIN LUA. Lua integers are 64-bit and
-- wrap, `>>` is a logical shift and `~` is xor, so xoroshiro128+ is
-- exactly its C text; a kernel that calls them compiles them as device
-- functions (PTX through libNVVM, the compiled simulator), the interpreted
-- simulator and plain Lua run them as they are, and kjit.jit compiles them
-- for the CPU. One text, so the sequence is the same everywhere, and it is
-- numba-cuda's, bit for bit, for the same seed (tests/lua/test_cuda_random.lua
-- checks values computed by numba-cuda itself).
--
-- The state array is an array of records {s0: u64, s1: u64}
-- (random.xoroshiro128p_dtype, numba's xoroshiro128p_dtype). The state
-- index counts from 1, as cuda.grid does.
--
-- Floats: every f32 step is written as an f64 operation rounded by
-- cuda.float32. f32 products and square roots are exact in f64 before the
-- rounding, so this is what an f32 operation gives, in kernels (where
-- cuda.float32 yields an f32 value) and in plain Lua (where numbers are
-- doubles) alike. log and cos are taken in f64 and rounded: the normal
-- values are numba-cuda's formula (Box-Muller, the second value dropped),
-- equal to numba-cuda's where its f32 logf/cosf are correctly rounded and
-- at most an f32 ulp apart elsewhere (numba-cuda's own CPU and GPU results
-- differ there too).
--
-- The table is shared: other modules add their functions to kjit.cuda.random
-- (the host-API generators); this one only adds its own names.
-- provides: kjit.cuda.random.xoroshiro128p_dtype kjit.cuda.random.xoroshiro128p_next
-- provides: kjit.cuda.random.xoroshiro128p_jump kjit.cuda.random.init_xoroshiro128p_state
-- provides: kjit.cuda.random.xoroshiro128p_uniform_float32 kjit.cuda.random.xoroshiro128p_uniform_float64
-- provides: kjit.cuda.random.xoroshiro128p_normal_float32 kjit.cuda.random.xoroshiro128p_normal_float64
-- provides: kjit.cuda.random.init_xoroshiro128p_states kjit.cuda.random.create_xoroshiro128p_states
local kjit, std = ...   -- std: kjit's own copies of the libraries (src/host/lua_parts.c)
local cuda = kjit.cuda
local math = std.math
local error, type, string = error, type, std.string
local f32, f64 = cuda.float32, cuda.float64

local random = cuda.random or {}
cuda.random = random

local dtype = kjit.struct{ { "s0", "u64" }, { "s1", "u64" } }
random.xoroshiro128p_dtype = dtype

-- SplitMix64 of the seed, into both halves of states[index]
local function init_xoroshiro128p_state(states, index, seed)
  local z = seed + 0x9E3779B97F4A7C15
  z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
  z = (z ~ (z >> 27)) * 0x94D049BB133111EB
  z = z ~ (z >> 31)
  local s = states[index]
  s.s0 = z
  s.s1 = z
end

-- the next 64-bit value of states[index] (an integer: the bits of numba's uint64)
local function xoroshiro128p_next(states, index)
  local s = states[index]
  local s0, s1 = s.s0, s.s1
  local result = s0 + s1
  s1 = s1 ~ s0
  s.s0 = ((s0 << 55) | (s0 >> 9)) ~ s1 ~ (s1 << 14)
  s.s1 = (s1 << 36) | (s1 >> 28)
  return result
end

local JUMP1, JUMP2 = 0xBEAC0467EBA5FACB, 0xD86B048B86AA9922

-- advance states[index] by 2^64 steps
local function xoroshiro128p_jump(states, index)
  local s = states[index]
  local s0, s1 = 0, 0
  for w = 1, 2 do
    local jump = w == 1 and JUMP1 or JUMP2
    for b = 0, 63 do
      if (jump >> b) & 1 ~= 0 then
        s0 = s0 ~ s.s0
        s1 = s1 ~ s.s1
      end
      xoroshiro128p_next(states, index)
    end
  end
  s.s0 = s0
  s.s1 = s1
end

local TWO_M53 = 1.0 / (1 << 53)
local TWO_PI_F32 = f32(2 * math.pi)
local TWO_PI_F64 = 2 * math.pi

-- the top 53 bits as a float in [0, 1)
local function xoroshiro128p_uniform_float64(states, index)
  return (xoroshiro128p_next(states, index) >> 11) * TWO_M53
end

-- numba's float32(uint64_to_unit_float64(x)): may round up to 1.0, as numba's
local function xoroshiro128p_uniform_float32(states, index)
  return f32((xoroshiro128p_next(states, index) >> 11) * TWO_M53)
end

local function xoroshiro128p_normal_float32(states, index)
  local u1 = xoroshiro128p_uniform_float32(states, index)
  local u2 = xoroshiro128p_uniform_float32(states, index)
  local r = f32(math.sqrt(f64(f32(-2.0 * f64(f32(math.log(f64(u1))))))))
  local c = f32(math.cos(f64(f32(TWO_PI_F32 * f64(u2)))))
  return f32(f64(r) * f64(c))
end

-- as numba-cuda's: two f32 uniforms, the log in f32, the rest in f64
local function xoroshiro128p_normal_float64(states, index)
  local u1 = xoroshiro128p_uniform_float32(states, index)
  local u2 = xoroshiro128p_uniform_float32(states, index)
  return math.sqrt(-2.0 * f64(f32(math.log(f64(u1))))) * math.cos(TWO_PI_F64 * f64(u2))
end

random.xoroshiro128p_next = xoroshiro128p_next
random.xoroshiro128p_jump = xoroshiro128p_jump
random.init_xoroshiro128p_state = init_xoroshiro128p_state
random.xoroshiro128p_uniform_float32 = xoroshiro128p_uniform_float32
random.xoroshiro128p_uniform_float64 = xoroshiro128p_uniform_float64
random.xoroshiro128p_normal_float32 = xoroshiro128p_normal_float32
random.xoroshiro128p_normal_float64 = xoroshiro128p_normal_float64

-- Host side: the states are made on the CPU (as numba-cuda does: faster than
-- a kernel) by a kjit.jit function, compiled at its first use. State i is
-- state i-1 jumped 2^64 steps ahead; the first is jumped subsequence_start
-- times.
local init_cpu = kjit.jit(function(states, seed, subsequence_start)
  local n = #states
  if n >= 1 then
    init_xoroshiro128p_state(states, 1, seed)
    for _ = 1, subsequence_start do xoroshiro128p_jump(states, 1) end
    for i = 2, n do
      local p, s = states[i - 1], states[i]
      s.s0 = p.s0
      s.s1 = p.s1
      xoroshiro128p_jump(states, i)
    end
  end
end)

local function int_arg(v, k, who, what)
  local i = math.tointeger(v)
  if i == nil then
    error(string.format("bad argument #%d to '%s' (%s: an integer expected, got %s)",
      k, who, what, type(v) == "number" and "a non-integral number" or type(v)), 3)
  end
  return i
end

-- stream 0 or nil: the default stream (numba's stream=0)
local function stream_of(stream)
  if stream == 0 then return nil end
  return stream
end

local function check_sub(sub, k, who)
  sub = sub == nil and 0 or int_arg(sub, k, who, "subsequence_start")
  if sub < 0 then
    error(string.format("bad argument #%d to '%s' (subsequence_start must not be negative)", k, who), 3)
  end
  return sub
end

-- numba's init_xoroshiro128p_states(states, seed [, subsequence_start, stream]):
-- states is a device array of random.xoroshiro128p_dtype (filled through a
-- copy) or a kjit array of it (filled in place, for use on the CPU).
function random.init_xoroshiro128p_states(states, seed, subsequence_start, stream)
  local who = "init_xoroshiro128p_states"
  seed = int_arg(seed, 2, who, "seed")
  local sub = check_sub(subsequence_start, 3, who)
  if cuda.is_device_array(states) then
    if states.dtype ~= dtype or states.ndim ~= 1 then
      error("bad argument #1 to '" .. who .. "' (a 1-D array of cuda.random.xoroshiro128p_dtype expected)", 2)
    end
    local host = kjit.zeros(#states, dtype)
    init_cpu(host, seed, sub)
    states:copy_to_device(host, stream_of(stream))
  else
    if not kjit.isarray(states) or states.dtype ~= dtype or states.ndim ~= 1 then
      error("bad argument #1 to '" .. who .. "' (a 1-D array of cuda.random.xoroshiro128p_dtype expected)", 2)
    end
    init_cpu(states, seed, sub)
  end
end

-- numba's create_xoroshiro128p_states(n, seed [, subsequence_start, stream]):
-- a new device array of n states.
function random.create_xoroshiro128p_states(n, seed, subsequence_start, stream)
  local who = "create_xoroshiro128p_states"
  n = int_arg(n, 1, who, "n")
  if n < 1 then error("bad argument #1 to '" .. who .. "' (n must be at least 1)", 2) end
  seed = int_arg(seed, 2, who, "seed")
  local sub = check_sub(subsequence_start, 3, who)
  local host = kjit.zeros(n, dtype)
  init_cpu(host, seed, sub)
  local s = stream_of(stream)
  if s then return cuda.to_device(host, s) end
  return cuda.to_device(host)
end
