-- test_cuda_kernels.lua: cuda.jit kernels without a GPU.
--
-- Every kernel here runs twice: in the interpreted simulator (the Lua
-- function itself, one coroutine per thread: the reference) and in the
-- compiled simulator (the same code generator as the GPU, targeting the
-- CPU); results must agree (exactly for integers and f64, to f32 rounding
-- for f32). Every kernel is also compiled to PTX through libNVVM and checked
-- with ptxas -arch=sm_90. With a GPU (cuda.is_available()), the GPU run is
-- compared with the simulator too.
local kjit = require "kjit"
local cuda = kjit.cuda

local ptxas = require "ptxas"
local BACKEND, WHY = cuda.ptx_backend()
local GPU, GPU_WHY = cuda.is_available()

local function copy(b)
  if b == nil or type(b) ~= "userdata" then return b end
  return b:copy()
end

local function same_buffers(got, want, tol, what)
  eq(got.size, want.size, what .. " size")
  got, want = got:reshape(got.size), want:reshape(want.size)
  for i = 1, got.size do
    local g, w = got[i], want[i]
    if tol then near(g, w, tol, what .. "[" .. i .. "]")
    else eq(g, w, what .. "[" .. i .. "]") end
  end
end

-- Runs kernel fn with config cfg on fresh copies of args in each mode and
-- compares every array argument. tol: relative tolerance (f32 kernels).
local function check_kernel(name, fn, cfg, args, tol)
  test(name .. " (compiled simulator vs interpreted)", function()
    local results = {}
    for _, mode in ipairs{ "interpret", true } do
      local prev = cuda.simulate(mode)
      local a = {}
      for i = 1, #args do a[i] = copy(args[i]) end
      local ok, err = pcall(function() cuda.jit(fn)[cfg](table.unpack(a, 1, #args)) end)
      cuda.simulate(prev)
      if not ok then error(err, 0) end
      results[#results + 1] = a
    end
    for i = 1, #args do
      if type(args[i]) == "userdata" then
        same_buffers(results[2][i], results[1][i], tol, "argument " .. i)
      end
    end
  end)
end

-- for sm_75, sm_80 and sm_90 (CUDA 13's ptxas and libNVVM have no sm_70)
local function ptx_check(name, fn, sig)
  test(name .. " compiles to PTX that ptxas accepts", function()
    local k = cuda.jit(fn)
    for _, cc in ipairs{ 75, 80, 90 } do
      k:compile(sig, cc)
      local ptx = k:inspect("ptx")
      truthy(ptx:find(".entry", 1, true), "PTX has an .entry")
      ptxas.check(ptx, name, cc)
    end
  end)
end

-- ---- The classics ----------------------------------------------------------------

local function saxpy(a, x, y, out)
  local i = cuda.grid(1)
  if i <= #x then out[i] = a * x[i] + y[i] end
end

local function scale_f64(x, out, s)
  local i = cuda.grid(1)
  if i <= #x then out[i] = s * x[i] - 1 end
end

local function mandel(img, xmin, ymin, dx, dy, maxit)
  local c, r = cuda.grid(2)
  if r <= img.shape[1] and c <= img.shape[2] then
    local cx, cy = xmin + (c - 1) * dx, ymin + (r - 1) * dy
    local x, y, n = 0.0, 0.0, 0
    while n < maxit and x * x + y * y <= 4.0 do
      x, y = x * x - y * y + cx, 2.0 * x * y + cy
      n = n + 1
    end
    img[r][c] = n
  end
end

local function block_sum(x, out)
  local s = cuda.shared.array(128, "f64")
  local t = cuda.threadIdx.x + 1
  local i = cuda.grid(1)
  s[t] = i <= #x and x[i] or 0
  cuda.syncthreads()
  local step = cuda.blockDim.x // 2
  while step > 0 do
    if t <= step then s[t] = s[t] + s[t + step] end
    cuda.syncthreads()
    step = step // 2
  end
  if t == 1 then out[cuda.blockIdx.x + 1] = s[1] end
end

local function stencil(a, b)
  local j, i = cuda.grid(2)
  local n, m = a.shape[1], a.shape[2]
  if i > 1 and i < n and j > 1 and j < m then
    b[i][j] = 0.25 * (a[i - 1][j] + a[i + 1][j] + a[i][j - 1] + a[i][j + 1])
  end
end

local function histogram(x, h)
  local i = cuda.grid(1)
  local stride = cuda.gridsize(1)
  while i <= #x do
    cuda.atomic.add(h, x[i] % #h + 1, 1)
    i = i + stride
  end
end

local function dyn_reverse(x)
  local s = cuda.shared.array(0, "i32")
  local t = cuda.threadIdx.x + 1
  local n = cuda.blockDim.x
  local base = cuda.blockIdx.x * n
  s[t] = x[base + t]
  cuda.syncthreads()
  x[base + t] = s[n - t + 1]
end

local function clamp(v, lo, hi) return math.max(lo, math.min(hi, v)) end
local function uses_device_fn(x, out)
  local i = cuda.grid(1)
  if i <= #x then out[i] = clamp(x[i] * 3 - 50, 0, 100) end
end

local function local_scratch(out)
  local i = cuda.grid(1)
  local l = cuda.local_array(4, "i64")
  for k = 1, 4 do l[k] = i * k end
  out[i] = l[1] + l[2] + l[3] + l[4] + l[4] // 3
end

local function ids(out)
  local i = cuda.grid(1)
  out[i][1] = cuda.threadIdx.x
  out[i][2] = cuda.blockIdx.x
  out[i][3] = cuda.blockDim.x
  out[i][4] = cuda.gridDim.x
end

local function ids3(out)
  local x, y, z = cuda.grid(3)
  local sx, sy, sz = cuda.gridsize(3)
  out[x][y][z] = ((x * 7 + y) * 5 + z) + sx * 1000 + sy * 100 + sz * 10
    + cuda.threadIdx.z + cuda.blockIdx.y * 3
end

local function atomics_all(a, b, c, d, e, f)
  local i = cuda.grid(1)
  local v = i % 7 - 3
  cuda.atomic.add(a, 1, v)
  cuda.atomic.max(a, 2, v * 10)
  cuda.atomic.min(a, 3, v * 10)
  cuda.atomic.sub(b, 1, 2)
  cuda.atomic.max(b, 2, i)
  cuda.atomic.add(c, 1, 1)
  cuda.atomic.min(c, 2, i)
  cuda.atomic.add(d, 1, 0.5)
  cuda.atomic.max(d, 2, v * 1.5)
  cuda.atomic.min(d, 3, v * 1.5)
  cuda.atomic.sub(e, 1, 0.25)
  cuda.atomic.max(e, 2, i * 1.0)
  if cuda.atomic.cas(f, 1, 0, i) == 0 then cuda.atomic.add(f, 2, 1) end
  cuda.atomic.exch(f, 3, 7)
end

-- integer/float comparisons and a float loop limit (run-time helpers on the GPU)
local function lua_corners(x, lim, out)
  local t = cuda.grid(1)
  local s = 0
  for i = 1, lim / 2 do
    if i < x[i] then s = s + 1 end
    if i == x[i] then s = s + 100 end
  end
  for i = 10, lim, -0.5 do s = s + 1 end
  out[t] = s + t // 3 + t % 3 + (-t) // 2
end

-- loops whose checks are hoisted with general affine keys (a row of a
-- convolution per thread: j + s + 1, i - j - s) and a nest over #z
-- (z[#z + 1 - p]): the range tests computed again before each loop
local function conv_rows(a, z, out, out2)
  local i = cuda.grid(1)
  if i <= #out then
    local s = math.max(i - #z, 0)
    local acc = 0.0
    for j = 0, math.min(i, #a) - s - 1 do acc = acc + a[j + s + 1] * z[i - j - s] end
    out[i] = acc
    local t = 0.0
    for p = 1, #z do
      for q = 1, #z do t = t + z[#z + 1 - p] * z[q] * q end
    end
    out2[i] = t + i
  end
end

local N = 1000
do
  local a, z = kjit.zeros(40, "f64"), kjit.zeros(7, "f64")
  for k = 1, 40 do a[k] = (k * 5 % 9) - 3.5 end
  for k = 1, 7 do z[k] = k * 0.25 - 1 end
  check_kernel("convolution rows: hoisted affine keys", conv_rows, {2, 32},
    { a, z, kjit.zeros(46, "f64"), kjit.zeros(46, "f64") })
end
check_kernel("saxpy f32", saxpy, {(N + 127) // 128, 128},
  { 2.5, kjit.arange(N, "f32"), kjit.full(N, 0.1, "f32"), kjit.zeros(N, "f32") }, 1e-6)
check_kernel("element-wise f64", scale_f64, {8, 128}, { kjit.arange(N, "f64"), kjit.zeros(N, "f64"), 0.5 })
check_kernel("mandelbrot f32 2-D", mandel, {{5, 4}, {16, 16}},
  { kjit.zeros({60, 70}, "f32"), -2.0, -1.2, 3.0 / 70, 2.4 / 60, 100 })
check_kernel("block reduction with syncthreads", block_sum, {8, 128},
  { kjit.arange(N, "f64"), kjit.zeros(8, "f64") })
do
  local a = kjit.zeros({20, 30}, "f64")
  for i = 1, 20 do for j = 1, 30 do a[i][j] = (i * 31 + j * 17) % 13 end end
  check_kernel("2-D stencil with cuda.grid(2)", stencil, {{2, 4}, {16, 8}}, { a, kjit.zeros({20, 30}, "f64") })
end
check_kernel("histogram with atomics", histogram, {4, 64}, { kjit.arange(N, "i32"), kjit.zeros(16, "i32") })
check_kernel("dynamic shared memory", dyn_reverse, {4, 32, 0, 32 * 4}, { kjit.arange(128, "i32") })
check_kernel("device function call", uses_device_fn, {8, 128}, { kjit.arange(N, "i64"), kjit.zeros(N, "i64") })
check_kernel("local_array", local_scratch, {4, 32}, { kjit.zeros(128, "i64") })
check_kernel("threadIdx/blockIdx/blockDim/gridDim", ids, {3, 32}, { kjit.zeros({96, 4}, "i64") })
check_kernel("3-D grid", ids3, {{2, 1, 2}, {2, 3, 2}}, { kjit.zeros({4, 3, 4}, "i64") })
do
  local x = kjit.zeros(40, "f64")
  for i = 1, 40 do x[i] = (i * 7 % 11) - 0.5 * (i % 3) end
  check_kernel("Lua integer/float semantics", lua_corners, {2, 16}, { x, 39.0, kjit.zeros(32, "i64") })
end
check_kernel("atomics of every kind", atomics_all, {4, 32},
  { kjit.zeros(3, "i32"), kjit.zeros(2, "u32"), kjit.full(2, 1000, "i64"), kjit.zeros(3, "f64"),
    kjit.zeros(2, "f32"), kjit.zeros(3, "u64") })

-- ---- PTX -------------------------------------------------------------------------------

ptx_check("saxpy", saxpy, "void(f32, f32[:], f32[:], f32[:])")
ptx_check("element-wise f64", scale_f64, "void(f64[:], f64[:], f64)")
ptx_check("mandelbrot", mandel, "void(f32[:,:], f32, f32, f32, f32, i64)")
ptx_check("block reduction", block_sum, "void(f64[:], f64[:])")
ptx_check("stencil", stencil, "void(f64[:,:], f64[:,:])")
ptx_check("histogram", histogram, "void(i32[:], i32[:])")
ptx_check("dynamic shared memory", dyn_reverse, "void(i32[:])")
ptx_check("device function", uses_device_fn, "void(i64[:], i64[:])")
ptx_check("local_array", local_scratch, "void(i64[:])")
ptx_check("ids", ids, "void(i64[:,:])")
ptx_check("3-D grid", ids3, "void(i64[:,:,:])")
ptx_check("atomics", atomics_all, "void(i32[:], u32[:], i64[:], f64[:], f32[:], u64[:])")
ptx_check("convolution rows", conv_rows, "void(f64[:], f64[:], f64[:], f64[:])")
ptx_check("Lua integer/float semantics", lua_corners, "void(f64[:], f64, i64[:])")
ptx_check("math through libdevice", function(x)
  local i = cuda.grid(1)
  x[i] = math.sin(x[i]) + math.exp(x[i]) ^ 0.5 + math.floor(x[i]) + math.fmod(x[i], 3)
end, "void(f32[:])")

test("fastmath and fma options compile", function()
  local k = cuda.jit(saxpy, { fastmath = true })
  k:compile("void(f32, f32[:], f32[:], f32[:])")
  truthy(k:inspect("ptx"):find(".entry", 1, true), "fastmath PTX")
  local f = cuda.jit(mandel, { fma = false })
  f:compile("void(f32[:,:], f32, f32, f32, f32, i64)")
  if BACKEND == "libNVVM" then
    truthy(not f:inspect("ptx"):find("fma.rn", 1, true), "no fma with fma = false")
    local g = cuda.jit(mandel)
    g:compile("void(f32[:,:], f32, f32, f32, f32, i64)")
    truthy(g:inspect("ptx"):find("fma.rn", 1, true), "fma contraction by default")
  end
  raises("unknown option 'fast' to 'cuda.jit'", cuda.jit, saxpy, { fast = true })
  raises("bad option 'fma' to 'cuda.jit' (boolean expected", cuda.jit, saxpy, { fma = 1 })
end)

test("f32 mandelbrot written naturally has no f64 instruction in its PTX", function()
  local k = cuda.jit(mandel)
  k:compile("void(f32[:,:], f32, f32, f32, f32, i64)")
  local ptx = k:inspect("ptx")
  for line in ptx:gmatch("[^\n]+") do
    if not line:match("^%s*//") and line:find("%.f64") then error("f64 instruction: " .. line) end
  end
end)

test("math.* in f32 kernels calls libdevice's f32 routines", function()
  local k = cuda.jit(function(x) local i = cuda.grid(1); x[i] = math.sin(x[i]) end)
  k:compile("void(f32[:])")
  truthy(k:inspect("llvm"):find("__nv_sinf", 1, true), "__nv_sinf in the IR")
  local k2 = cuda.jit(function(x) local i = cuda.grid(1); x[i] = math.sin(x[i]) end)
  k2:compile("void(f64[:])")
  truthy(k2:inspect("llvm"):find("__nv_sin(", 1, true), "__nv_sin in the IR")
end)

test("compile_ptx compiles a plain function", function()
  local ptx, name = cuda.compile_ptx(saxpy, "void(f32, f32[:], f32[:], f32[:])", 80)
  truthy(ptx:find(".entry " .. name, 1, true), "entry named " .. name)
  truthy(ptx:find(".target sm_80", 1, true) or ptx:find("compute_80", 1, true), "targets 8.0")
end)

test("inspect types shows the kernel and its device functions", function()
  local k = cuda.jit(uses_device_fn)
  k:compile("void(i64[:], i64[:])")
  local t = k:inspect("types")
  truthy(t:find("kernel", 1, true) and t:find("device", 1, true), t)
end)

test("the LLVM NVPTX fallback makes PTX too", function()
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write("package.cpath = ", string.format("%q", package.cpath), "\n",
    "local c = require('kjit').cuda\n",
    "local function k(x) local i = c.grid(1); x[i] = x[i] * 2 end\n",
    "local p = c.compile_ptx(k, 'void(f32[:])')\n",
    "io.write(p:find('.entry', 1, true) and 'ok' or p)\n")
  f:close()
  local p = io.popen("KJIT_FORCE_NVPTX=1 " .. (arg and arg[-1] or "lua5.4") .. " " .. script .. " 2>&1")
  local out = p:read("a")
  p:close()
  os.remove(script)
  eq(out, "ok", "fallback output")
end)

-- ---- Errors -------------------------------------------------------------------------

test("bounds error names file:line, index, thread and block (both simulators)", function()
  for _, mode in ipairs{ true, "interpret" } do
    local prev = cuda.simulate(mode)
    local k = cuda.jit(function(a)
      local i = cuda.grid(1)
      a[i + 1] = 1
    end)
    local ok, err = pcall(function() k[{2, 4}](kjit.zeros(8)) end)
    cuda.simulate(prev)
    truthy(not ok, "raised")
    truthy(err:find("test_cuda_kernels.lua:%d+: index 9 out of bounds %[1, 8%]"), err)
    truthy(err:find("thread (3,0,0) of block (1,0,0)", 1, true), err)
  end
end)

-- ---- Narrow loop counters: a while loop's `k < e` counter runs
-- in 32 bits when k and e fit at entry, else the 64-bit loop runs. Both
-- copies must give the interpreter's results, at the edges of int32 too.
local I32MAX, I32MIN = 2147483647, -2147483648

local function counters(out, start, limit, stop_at)
  local t = cuda.grid(1)
  local k = start + t - 1
  local n = 0
  while k < limit and n < 50 do
    if k == stop_at then break end
    n = n + 1
    k = k + 1
  end
  out[t] = k
  out[t + 4] = n
end

for _, c in ipairs{
  { 0, 10, -1 }, { 0, 10, 5 }, { I32MAX - 10, I32MAX - 1, -1 }, { I32MAX - 10, I32MAX, -1 },
  { I32MAX - 10, 1 << 40, -1 }, { I32MAX - 60, 1 << 40, I32MAX - 30 }, { I32MIN, I32MIN + 5, -1 },
  { I32MIN - 3, I32MIN + 5, -1 }, { 7, 3, -1 }, { -(1 << 40), 0, -1 },
} do
  check_kernel(string.format("narrow counter: k from %d, k < %d, break at %d", c[1], c[2], c[3]), counters,
    {1, 4}, { kjit.zeros(8, "i64"), c[1], c[2], c[3] })
end

local function bounds_and_index(out, x, a)
  local t = cuda.grid(1)
  local k = t
  while 100 >= k do k = k + 1 end          -- mirrored, constant bound
  out[t] = k
  local j, stop = t * a, a + 3
  while j <= 2147483641 and j < stop do j = j + 1 end
  out[t + 4] = j
  local i, n, s = 1, #x, 0
  while i <= n do s = s + x[i] * t; i = i + 1 end   -- the counter indexes
  out[t + 8] = s + i
  local m = 0
  while m < 20 do m = m + 1; m = m + 1 end  -- two steps: stays 64-bit
  out[t + 12] = m
end
check_kernel("narrow counters: constant and mirrored bounds, a counter used as index", bounds_and_index,
  {1, 4}, { kjit.zeros(16, "i64"), kjit.arange(10, "i64"), 1 })
check_kernel("narrow counters: a bound beyond int32", bounds_and_index,
  {1, 4}, { kjit.zeros(16, "i64"), kjit.arange(10, "i64"), 1 << 33 })

test("narrow counters: the values, spelled out", function()
  local prev = cuda.simulate(true)
  local out = kjit.zeros(8, "i64")
  cuda.jit(counters)[{1, 4}](out, I32MAX - 10, I32MAX, -1)
  local out2 = kjit.zeros(8, "i64")
  cuda.jit(counters)[{1, 4}](out2, I32MAX - 60, 1 << 40, I32MAX - 30)
  cuda.simulate(prev)
  for t = 1, 4 do
    eq(out[t], I32MAX, "k ends at the bound")
    eq(out[t + 4], 11 - t, "steps")
    eq(out2[t], I32MAX - 30, "break")
  end
end)

test("mandelbrot's counter is 32-bit in PTX, with the 64-bit loop beside it", function()
  if BACKEND ~= "libNVVM" then skip("needs libNVVM: " .. tostring(WHY)) end
  local ptx = cuda.compile_ptx(mandel, "void(f32[:,:], f32, f32, f32, f32, i64)")
  truthy(ptx:find("setp%.lt%.s32") and ptx:find("add%.s32"), "a 32-bit counter loop:\n" .. ptx)
  truthy(ptx:find("setp%.lt%.s64"), "and the 64-bit one:\n" .. ptx)
  -- `k < maxit and zx * zx + zy * zy <= 4.0`: the second test cannot raise,
  -- so both are tested by one branch (src/codegen/cg_fuse.c)
  truthy(ptx:find("and%.pred"), "one branch on both tests:\n" .. ptx)
  ptxas.check(ptx)
end)

-- `while a and b` where b can raise (an array read) keeps two tests: b
-- runs only when a holds, on the GPU as in the simulators
local function guarded_scan(out, x, n)
  local t = cuda.grid(1)
  local i = t
  while i <= n and x[i] > 0.0 do i = i + 1 end
  out[t] = i
end

test("`while a and b`: b is not run when a fails, if it can raise", function()
  local n = 6
  local x = kjit.array({ 1.0, 2.0, 0.0, 4.0, 5.0, 6.0 })
  -- in the simulator, and on the GPU when there is one (where a read of
  -- x[n + 1] run ahead of `i <= n` would raise "out of bounds")
  for _, simulated in ipairs(GPU and { true, false } or { true }) do
    local out = kjit.zeros(n, "i64")
    local prev = cuda.simulate(simulated)
    local dx = simulated and x or cuda.to_device(x)
    local dout = simulated and out or cuda.to_device(out)
    cuda.jit(guarded_scan)[{1, n}](dout, dx, n)
    if not simulated then out = dout:copy_to_host() end
    cuda.simulate(prev)
    for t = 1, n do
      local i = t
      while i <= n and x[i] > 0.0 do i = i + 1 end
      eq(out[t], i, "thread " .. t .. (simulated and " (simulated)" or " (GPU)"))
    end
  end
  if BACKEND == "libNVVM" then
    ptxas.check(cuda.compile_ptx(guarded_scan, "void(i64[:], f64[:], i64)"))
  end
end)

-- A narrow counter read after the loop, and a loop with two exits: each
-- exit of the 32-bit copy copies the counter back to its 64-bit value.
local function counter_after(out, start, limit, brk)
  local t = cuda.grid(1)
  local k, acc = start, 0
  while k <= limit do
    if k - start == brk + t then break end
    acc = acc + (k - start)
    k = k + 1
  end
  out[t] = k
  out[t + 4] = acc
  out[t + 8] = k - start
end
for _, c in ipairs{
  { 5, 30, 7 }, { 5, 30, 100 }, { I32MAX - 20, I32MAX - 1, 3 }, { I32MAX - 20, I32MAX - 1, 100 },
  { I32MAX - 20, I32MAX, 100 }, { I32MIN, I32MIN + 9, 100 }, { I32MIN - 1, I32MIN + 9, 100 },
  { -(1 << 40), -(1 << 40) + 12, 100 }, { 9, 3, 0 },
} do
  check_kernel(string.format("narrow counter read after the loop: k from %d, k <= %d, break at +%d", c[1], c[2], c[3]),
    counter_after, {1, 4}, { kjit.zeros(12, "i64"), c[1], c[2], c[3] })
end

-- ---- Loop nests in kernels (cg_version.c): one range test before a
-- rectangular nest; when it fails, the checked copy, which must raise the
-- interpreter's error (same line, index, thread). The arrays are compared
-- when no thread raises (after an error, which other threads ran differs
-- between the two simulators).
local function check_kernel_error(name, fn, cfg, args)
  test(name .. " (compiled simulator vs interpreted, errors)", function()
    local results, errs = {}, {}
    for _, mode in ipairs{ "interpret", true } do
      local prev = cuda.simulate(mode)
      local a = {}
      for i = 1, #args do a[i] = copy(args[i]) end
      local ok, err = pcall(function() cuda.jit(fn)[cfg](table.unpack(a, 1, #args)) end)
      cuda.simulate(prev)
      errs[#errs + 1] = ok and "no error" or tostring(err)
      results[#results + 1] = a
    end
    eq(errs[2], errs[1], "the error")
    for i = 1, errs[1] == "no error" and #args or 0 do
      if type(args[i]) == "userdata" then same_buffers(results[2][i], results[1][i], nil, "argument " .. i) end
    end
  end)
end

local function kernel_nest(out, x, n, m, di)
  local t = cuda.grid(1)
  local s = 0.0
  for i = 1, n do
    for j = 1, m do s = s + x[i + di][j] * t end
    out[t][i] = s
  end
end
local function kernel_tri(out, x, n)
  local t = cuda.grid(1)
  for i = 1, n do
    for j = i, n do out[t][j] = out[t][j] + x[i][j] end
  end
end
local function kernel_cube(out, x, n)
  local t = cuda.grid(1)
  local s = 0
  for i = 1, n do
    for j = 1, n do
      for k = 1, n do
        if t + i + j + k < 12 then s = s + x[i][j][k] else s = s - x[k][j][i] end
      end
    end
  end
  out[t] = s
end
do
  local x = kjit.zeros({5, 6})
  for i = 1, 5 do for j = 1, 6 do x[i][j] = i * 10 + j end end
  local c = kjit.zeros({3, 3, 3}, "i64")
  for i = 1, 3 do for j = 1, 3 do for k = 1, 3 do c[i][j][k] = i * 9 + j * 3 + k end end end
  for _, a in ipairs{ { 5, 6, 0 }, { 4, 6, 1 }, { 5, 0, 0 }, { 0, 6, 9 }, { 5, 6, 1 }, { 5, 7, 0 },
                      { 6, 6, 0 }, { 4, 6, -1 } } do
    check_kernel_error(string.format("nest in a kernel: n %d, m %d, rows + %d", a[1], a[2], a[3]), kernel_nest,
      {1, 4}, { kjit.zeros({4, 6}), x, a[1], a[2], a[3] })
  end
  for _, n in ipairs{ 5, 6, 3 } do
    check_kernel_error("triangular nest in a kernel: n " .. n, kernel_tri, {1, 4}, { kjit.zeros({4, 6}), x, n })
  end
  for _, n in ipairs{ 3, 2, 4 } do
    check_kernel_error("three-level nest in a kernel: n " .. n, kernel_cube, {1, 4}, { kjit.zeros(4, "i64"), c, n })
  end
end
ptx_check("a nest in a kernel", kernel_nest, "void(f64[:,:], f64[:,:], i64, i64, i64)")
ptx_check("a three-level nest in a kernel", kernel_cube, "void(i64[:], i64[:,:,:], i64)")
ptx_check("a narrow counter read after the loop", counter_after, "void(i64[:], i64, i64, i64)")

-- Random while loops and reads at the edges of int32, compiled simulator
-- against the interpreted one (same outputs, or the same error): the two
-- kernel-only code paths above, narrow counters and deferred checks, with
-- the cases that must not narrow mixed in. Fixed seed: reproducible.
test("narrow counters and deferred checks: random kernels agree with the interpreter", function()
  local edges = { 0, 1, -1, 5, 37, I32MAX - 3, I32MAX - 1, I32MAX, I32MAX + 1, I32MIN, I32MIN + 2, I32MIN - 1,
                  1 << 40, -(1 << 40) }
  local inits = { "t", "p1 + t", "p1 - t", "0", "p1" }
  local conds = { "k < p2 and n < 40", "k <= p2 and n < 40", "p2 > k and n < 40", "p2 >= k and n < 40",
                  "n < 40 and k < 2147483646", "(k < p2) and (n < 40)", "k < 100 and n < 40" }
  local bodies = {
    "n = n + 1\n k = k + 1",
    "k = k + 1\n n = n + 1\n if k == p3 then break end",
    "if n % 2 == 0 then k = k + 1 end\n n = n + 1",
    "k = 1 + k\n n = n + 1\n k = k + 1",                     -- two steps: 64-bit
    "n = n + 1\n for j = 1, 2 do k = k + 1 end",              -- step in an inner loop: 64-bit
    "n = n + 1\n k = k + 1\n p2 = p2 + 0",                   -- bound assigned: 64-bit
  }
  local reads = { "a[t + p1 % 9] + a[t + 1]", "a[t + p3 % 5] + a[t * 2] - a[9 - t]", "a[t] * 2 + a[p3 % 11]",
                  "-a[t + 4] + a[(p1 % 3) + t] + a[t + p2 % 8]" }
  local rng = 20261122
  local function pick(list)
    rng = (rng * 1103515245 + 12345) % 2147483648
    return list[(rng >> 16) % #list + 1]   -- the high bits: an LCG's low bits cycle
  end
  local cases, errors, mismatches = 0, 0, {}
  for _ = 1, 60 do
    local src = string.format([[
      local cuda = ...
      return function(out, a, p1, p2, p3)
        local t = cuda.grid(1)
        local k = %s
        local n = 0
        while %s do
          %s
        end
        out[t] = k
        out[t + 4] = n
        out[t + 8] = %s
      end]], pick(inits), pick(conds), pick(bodies), pick(reads))
    local kernel = assert(load(src))(cuda)   -- the chunk is its own source
    local p1, p2, p3 = pick(edges), pick(edges), pick(edges)
    local got = {}
    for m, mode in ipairs{ "interpret", true } do
      local prev = cuda.simulate(mode)
      local out = kjit.zeros(12, "i64")
      local ok, err = pcall(function() cuda.jit(kernel)[{1, 4}](out, kjit.arange(10, "i64"), p1, p2, p3) end)
      cuda.simulate(prev)
      got[m] = ok and table.concat(out:totable(), ",") or ("error: " .. tostring(err))
    end
    cases = cases + 1
    if got[1]:find("^error") then errors = errors + 1 end
    if got[1] ~= got[2] then
      mismatches[#mismatches + 1] = string.format("p1=%d p2=%d p3=%d\n%s\ninterpreted: %s\ncompiled:    %s",
        p1, p2, p3, src, got[1], got[2])
    end
  end
  truthy(#mismatches == 0, table.concat(mismatches, "\n\n"))
  eq(cases, 60, "cases")
  truthy(errors > 5 and errors < 55, "both results and errors among the cases (" .. errors .. " errors)")
end)

-- In a kernel, the bounds checks of a statement's values wait for one branch
-- after them (src/codegen/cg_defer.c); the error must still be
-- the interpreter's: the first failing read in evaluation order.
test("deferred bounds checks report the first failing read of a statement", function()
  local function reads(a, out, p, q)
    local i = cuda.grid(1)
    local j = i // 4                     -- only thread 4 reads out of bounds
    out[i] = a[i] + a[i + p * j] * 2 + a[i + q * j]
  end
  for _, case in ipairs{ { 10, 20, 14 }, { 20, 10, 24 }, { 2, 30, 34 }, { 1 << 40, 3, (1 << 40) + 4 } } do
    for _, mode in ipairs{ true, "interpret" } do
      local prev = cuda.simulate(mode)
      local ok, err = pcall(function() cuda.jit(reads)[{1, 4}](kjit.arange(8), kjit.zeros(4), case[1], case[2]) end)
      cuda.simulate(prev)
      truthy(not ok, "raised")
      truthy(err:find("test_cuda_kernels.lua:%d+: index " .. case[3] .. " out of bounds %[1, 8%]"),
        tostring(mode) .. " p=" .. case[1] .. ": " .. err)
      truthy(err:find("thread (3,0,0) of block (0,0,0)", 1, true), err)
    end
  end
end)

test("deferred bounds checks: 2-D reads, local statements, and in-bounds results", function()
  local function rows(m, out, r)
    local i = cuda.grid(1)
    local v = m[i][1] + m[1][i] - m[i * r][2]
    out[i] = v
  end
  local m = kjit.zeros({4, 4})
  for i = 1, 4 do for j = 1, 4 do m[i][j] = i * 10 + j end end
  local want = { 11 + 11 - 12, 21 + 12 - 22, 31 + 13 - 32, 41 + 14 - 42 }
  for _, mode in ipairs{ true, "interpret" } do
    local prev = cuda.simulate(mode)
    local out = kjit.zeros(4)
    cuda.jit(rows)[{1, 4}](m, out, 1)
    local ok, err = pcall(function() cuda.jit(rows)[{1, 4}](m, kjit.zeros(4), 2) end)
    cuda.simulate(prev)
    for i = 1, 4 do eq(out[i], want[i] + 0.0, tostring(mode) .. " out[" .. i .. "]") end
    truthy(not ok and err:find("index [68] out of bounds %[1, 4%]"), tostring(err))
  end
end)

local function sum2(s, t) return s[t] + s[t + 1] end
local function shared_reads(x, out, p)
  local s = cuda.shared.array(64, "f64")
  local t = cuda.threadIdx.x + 1
  s[t] = x[t]
  cuda.syncthreads()
  if t < 64 then out[t] = sum2(s, t) end             -- a device function: not deferred
  if t + p <= 64 then out[t + 64] = s[t] * 2 + s[t + p] end   -- deferred, own fallback
  out[t + 128] = s[t] - s[t + p]                     -- p = 1: out of bounds at t = 64 only
end
check_kernel("deferred checks on a shared array and through a device function", shared_reads, {1, 64},
  { kjit.arange(64, "f64"), kjit.zeros(192, "f64"), 0 })
test("deferred checks on a shared array: the first failing read", function()
  for _, mode in ipairs{ true, "interpret" } do
    local prev = cuda.simulate(mode)
    local ok, err = pcall(function() cuda.jit(shared_reads)[{1, 64}](kjit.arange(64, "f64"), kjit.zeros(192, "f64"), 1) end)
    cuda.simulate(prev)
    truthy(not ok and err:find("index 65 out of bounds %[1, 64%]"), tostring(mode) .. ": " .. tostring(err))
  end
end)

test("deferred reads of a shared array stay shared-memory loads (PTX)", function()
  if BACKEND ~= "libNVVM" then skip("needs libNVVM: " .. tostring(WHY)) end
  local ptx = cuda.compile_ptx(shared_reads, "void(f64[:], f64[:], i64)")
  truthy(ptx:find("ld%.shared%.f64"), "shared loads:\n" .. ptx)
  truthy(not ptx:find("ld%.f64"), "no generic loads:\n" .. ptx)
  ptxas.check(ptx)
end)

test("a statement's array reads issue with no branch between them (PTX)", function()
  if BACKEND ~= "libNVVM" then skip("needs libNVVM: " .. tostring(WHY)) end
  local ptx = cuda.compile_ptx(stencil, "void(f32[:,:], f32[:,:])")
  local first, last = ptx:find("ld%.global%.f32"), nil
  for at in ptx:gmatch("()ld%.global%.f32") do last = at end
  truthy(first and last and last > first, "four loads in:\n" .. ptx)
  local between = ptx:sub(first, last)
  truthy(not between:find("bra"), "no branch between the loads:\n" .. between)
  truthy(ptx:find("kjit_safe", 1, true), "reads fall back to kjit_safe while a check is pending")
end)

test("error() in a kernel is raised with its message", function()
  local prev = cuda.simulate(true)
  local k = cuda.jit(function(a)
    if cuda.grid(1) == 3 then error("bad thread") end
  end)
  local ok, err = pcall(function() k[{1, 4}](kjit.zeros(8)) end)
  cuda.simulate(prev)
  truthy(not ok and err:find("bad thread", 1, true), tostring(err))
end)

test("boundscheck = false removes the checks", function()
  if BACKEND ~= "libNVVM" then skip("needs libNVVM: " .. tostring(WHY)) end
  local function f(a) local i = cuda.grid(1); a[i] = 1 end
  local k = cuda.jit(f)
  k:compile("void(f64[:])")
  truthy(k:inspect("ptx"):find("atom.global.cas", 1, true), "checked kernel claims the error record")
  local u = cuda.jit(f, { boundscheck = false })
  u:compile("void(f64[:])")
  truthy(not u:inspect("ptx"):find("atom.global.cas", 1, true), "unchecked kernel cannot fail")
end)

test("kernel misuse gives clear errors", function()
  raises("can only be called inside a kernel", cuda.grid, 1)
  raises("can only be called inside a kernel", cuda.syncthreads)
  raises("cuda.threadIdx can only be called inside a kernel", function() return cuda.threadIdx.x end)
  raises("function expected, got number", cuda.jit, 42)
  local k = cuda.jit(saxpy)
  raises("needs a launch config", function() k(1) end)
  raises("grid must be an integer or {x, y, z}", function() return k[{"a", 1}] end)
  raises("grid[1] must be a positive integer", function() return k[{{0}, 1}] end)
  raises("bad kernel signature", function() k:compile("void(quux)") end)
  raises("nothing compiled yet", function() cuda.jit(saxpy):inspect("ptx") end)
  local line = debug.getinfo(1, "l").currentline + 1
  local r = cuda.jit(function(a) return 1 end)
  raises("test_cuda_kernels.lua:" .. line .. ": compile error for (f64[:]): a kernel cannot return values", function() r:compile("void(f64[:])") end)
  local j = kjit.jit(function(a) return cuda.grid(1) end)
  raises("cuda.grid can only be used in a kernel compiled by cuda.jit", j, 1)
  local bad = cuda.jit(function(a) cuda.atomic.add(a, 1, 1) end)
  raises("atomics work on i32, u32, i64, u64, f32 and f64 arrays, not i8", function() bad:compile("void(i8[:])") end)
  local sh = cuda.jit(function(a, n) local s = cuda.shared.array(n, "f32") end)
  raises("a constant size", function() sh:compile("void(f32[:], i64)") end)
  local prev = cuda.simulate(true)
  raises("bad argument #2 to kernel", function() k[{1, 1}](1, "x") end)
  raises("at most 1024", function() k[{1, 2048}](1, kjit.zeros(1, "f32"), kjit.zeros(1, "f32"), kjit.zeros(1, "f32")) end)
  cuda.simulate(prev)
end)

test("a launch without a GPU or simulator is a clear error", function()
  if GPU then skip("a GPU is present") end
  local prev = cuda.simulate(false)
  local ok, err = pcall(function() cuda.jit(saxpy)[{1, 32}](1, kjit.zeros(4, "f32"), kjit.zeros(4, "f32"), kjit.zeros(4, "f32")) end)
  cuda.simulate(prev)
  truthy(not ok and err:find("test_cuda_kernels.lua:%d+:") and err:find("CUDA", 1, true), tostring(err))
end)

test("the launcher of a config is cached", function()
  local k = cuda.jit(saxpy)
  eq(rawequal(k[{4, 128}], k[{4, 128}]), true, "same launcher")
  eq(rawequal(k[{4, 128}], k[{4, 64}]), false, "another config")
end)

-- ---- On a GPU: the device agrees with the simulator ------------------------------

test("GPU results match the simulator", function()
  if not GPU then skip("no GPU: " .. tostring(GPU_WHY)) end
  local prev = cuda.simulate(false)
  local x, y = kjit.arange(N, "f32"), kjit.full(N, 0.1, "f32")
  local out = kjit.zeros(N, "f32")
  cuda.jit(saxpy)[{(N + 127) // 128, 128}](2.5, x, y, out)
  for i = 1, N do near(out[i], 2.5 * x[i] + y[i], 1e-6, "saxpy") end
  local h = kjit.zeros(16, "i32")
  cuda.jit(histogram)[{4, 64}](kjit.arange(N, "i32"), h)
  local total = 0
  for i = 1, 16 do total = total + h[i] end
  eq(total, N, "histogram total")
  local ok, err = pcall(function() cuda.jit(function(a) a[cuda.grid(1) + 1] = 1 end)[{1, 8}](kjit.zeros(4)) end)
  truthy(not ok and err:find("out of bounds"), tostring(err))
  cuda.simulate(prev)
end)

test("deep recursion in a simulated kernel is a stack overflow error, not a crash", function()
  local function depth(n) if n == 0 then return 0 end return 1 + depth(n - 1) end
  local k = cuda.jit(function(out, n) out[cuda.grid(1)] = depth(n) end)
  local prev = cuda.simulate(true)
  local out = kjit.zeros(2, "i64")
  k[{1, 2}](out, 100)
  eq(out[2], 100, "shallow recursion works")
  local ok, err = pcall(function() k[{1, 2}](out, 100000000) end)
  cuda.simulate(prev)
  truthy(not ok and err:find("stack overflow", 1, true), tostring(err))
end)

test("repeated launches through a cached launcher allocate no Lua memory (simulator)", function()
  local prev = cuda.simulate(true)
  local k = cuda.jit(saxpy)
  local x, y, out = kjit.arange(64, "f32"), kjit.full(64, 1, "f32"), kjit.zeros(64, "f32")
  local launch = k[{2, 32}]
  launch(2.0, x, y, out)                      -- compiles
  collectgarbage("collect")
  collectgarbage("stop")
  local before = collectgarbage("count")
  for _ = 1, 1000 do launch(2.0, x, y, out) end
  local grew = collectgarbage("count") - before
  collectgarbage("restart")
  cuda.simulate(prev)
  truthy(grew < 1, string.format("Lua heap grew by %.2f KiB over 1000 launches", grew))
  eq(out[64], 2.0 * 63 + 1, "result")
end)

test("cuda.jit {cache = true} keeps the PTX on disk", function()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  local old = kjit.cache_dir(dir)
  local function k1(x) local i = cuda.grid(1); x[i] = x[i] * 3 end
  kjit.cache_stats(true)
  local a = cuda.jit(k1, { cache = true })
  a:compile("void(f32[:])")
  local s1 = kjit.cache_stats()
  local b = cuda.jit(k1, { cache = true })
  b:compile("void(f32[:])")
  local s2 = kjit.cache_stats()
  eq(s2.hits - s1.hits, 1, "second compile is a cache hit")
  eq(b:inspect("ptx"), a:inspect("ptx"), "same PTX")
  local c = cuda.jit(k1, { cache = true, fma = false })
  c:compile("void(f32[:])")
  eq(kjit.cache_stats().hits, s2.hits, "other options miss")
  truthy(kjit.cache_clear() >= 2, "cache files removed")
  kjit.cache_dir(old or false)
  os.execute("rmdir " .. dir)
end)

test("simulated results match plain Lua loops (grid indexing, reductions, atomics)", function()
  for _, mode in ipairs{ true, "interpret" } do
    local prev = cuda.simulate(mode)
    local x, y, out = kjit.arange(N, "f32"), kjit.full(N, 0.1, "f32"), kjit.zeros(N, "f32")
    cuda.jit(saxpy)[{(N + 127) // 128, 128}](2.5, x, y, out)
    local want = kjit.zeros(N, "f32")
    for i = 1, N do want[i] = 2.5 * x[i] + y[i] end
    for i = 1, N do near(out[i], want[i], 1e-6, "saxpy " .. i) end
    local sums = kjit.zeros(8, "f64")
    cuda.jit(block_sum)[{8, 128}](kjit.arange(N, "f64"), sums)
    for b = 1, 8 do
      local s = 0
      for i = (b - 1) * 128 + 1, math.min(b * 128, N) do s = s + (i - 1) end
      eq(sums[b], s + 0.0, "block " .. b)
    end
    local h = kjit.zeros(16, "i32")
    cuda.jit(histogram)[{4, 64}](kjit.arange(N, "i32"), h)
    for b = 1, 16 do
      local c = 0
      for v = 0, N - 1 do if v % 16 + 1 == b then c = c + 1 end end
      eq(h[b], c, "bin " .. b)
    end
    cuda.simulate(prev)
  end
end)

test("launch shapes a GPU refuses are refused in every mode, located", function()
  local k = cuda.jit(saxpy)
  local here = "test_cuda_kernels.lua:"
  for _, mode in ipairs{ true, "interpret", false } do
    local prev = cuda.simulate(mode)
    local cases = {
      { "grid y is 65536 (at most 65535)", function() return k[{{1, 65536}, 32}] end },
      { "grid z is 70000 (at most 65535)", function() return k[{{1, 1, 70000}, 32}] end },
      { "block x is 1025 (at most 1024)", function() return k[{1, 1025}] end },
      { "block y is 2048 (at most 1024)", function() return k[{1, {1, 2048}}] end },
      { "block z is 65 (at most 64)", function() return k[{1, {1, 1, 65}}] end },
      { "2048 threads per block (at most 1024)", function() return k[{1, {64, 32}}] end },
    }
    for _, c in ipairs(cases) do
      local m = raises(c[1], c[2])
      truthy(m:find(here, 1, true), "location in: " .. m)
    end
    -- the limits themselves are accepted
    truthy(k[{{1, 65535, 65535}, {1, 16, 64}}], "grid y, z 65535, block z 64")
    truthy(k[{{2 ^ 31 - 1 | 0}, 1024}], "grid x 2^31 - 1, 1024 threads")
    cuda.simulate(prev)
  end
end)

test("the simulator out of memory for shared arrays: an error, not a crash", function()
  -- a child process with a virtual memory limit; eight 128 MiB shared
  -- arrays cannot all be allocated (ASan's shadow memory needs no limit)
  if (os.getenv("LD_PRELOAD") or ""):find("asan", 1, true) then skip("ASan build") end
  local moddir = arg and arg[1] or "build"
  local decls, uses = {}, {}
  for j = 1, 8 do
    decls[#decls + 1] = ("  local s%d = cuda.shared.array(16777216, 'f64')"):format(j)
    uses[#uses + 1] = ("s%d[16777216 - t] = %d"):format(j, j)
  end
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(([[
package.cpath = %q .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local cuda = kjit.cuda
cuda.simulate(true)
local k = cuda.jit(function(out)
%s
  local t = cuda.threadIdx.x + 1
  %s
  out[t] = s1[16777216 - t] + s8[16777216 - t]
end)
print(pcall(k[{1, 4}], kjit.zeros(4)))
print(pcall(k[{1, 4}], kjit.zeros(4)))
print("done")
]]):format(moddir, table.concat(decls, "\n"), table.concat(uses, " ")))
  f:close()
  local p = io.popen("ulimit -v 600000 && lua5.4 " .. script .. " 2>&1")
  local out = p:read("a")
  local ok, how, code = p:close()
  os.remove(script)
  truthy(ok and out:find("done", 1, true), "the child ran to the end (" .. tostring(how) .. " "
    .. tostring(code) .. "): " .. out)
  -- the bytecode pipeline's typer refuses static shared memory above a
  -- GPU's 48 KiB per kernel before anything is allocated
  truthy(out:find("false\t[^\n]*above the limit of 49152 bytes"), "the shared memory limit: " .. out)
end)

test("k:compile(sig) with an f32 scalar binds launches that pass a Lua number", function()
  local function f32(v) return (string.unpack("f", string.pack("f", v))) end
  local k = cuda.jit(function(out, x) local i = cuda.grid(1) if i <= #out then out[i] = x * 3 end end)
  k:compile("void(f64[:], f32)")
  local prev = cuda.simulate(true)
  local out = kjit.zeros(4, "f64")
  k[{1, 4}](out, 0.1)
  eq(out[1], f32(f32(0.1) * 3), "f32 arithmetic, as on the GPU")
  k[{1, 4}](out, 2)   -- a Lua integer for the f32 parameter
  eq(out[4], 6.0, "integer argument")
  eq(k:inspect("types"):find("f32", 1, true) ~= nil, true, "types name f32")
  -- with an f64 and an f32 signature declared, a float takes the exact
  -- one, as the GPU's choice of a compiled specialization does
  local k2 = cuda.jit(function(out, x) local i = cuda.grid(1) if i <= #out then out[i] = x end end)
  k2:compile("void(f64[:], f64)")
  k2:compile("void(f64[:], f32)")
  k2[{1, 4}](out, 0.1)
  eq(out[1], 0.1, "the exact (f64) declared signature")
  cuda.simulate(prev)
end)

test("bad launches raise clear errors and the next launch works (both simulators)", function()
  for _, mode in ipairs{ true, "interpret" } do
    local prev = cuda.simulate(mode)
    local k = cuda.jit(saxpy)
    local x, y, out = kjit.arange(64, "f32"), kjit.full(64, 1, "f32"), kjit.zeros(64, "f32")
    raises("at most 1024", function() k[{1, {32, 32, 2}}](2.0, x, y, out) end)
    raises("grid[2] must be a positive integer", function() return k[{{1, 0}, 32}] end)
    raises("block must be an integer or {x, y, z}", function() return k[{1, "x"}] end)
    raises("bytes of dynamic shared memory (at most 49152)", function() return k[{1, 32, 0, 1 << 20}] end)
    raises("out of bounds", function() cuda.jit(function(a) a[cuda.grid(1) + 64] = 1 end)[{1, 2}](out) end)
    k[{2, 32}](2.0, x, y, out)
    eq(out[64], 2.0 * 63 + 1, "the next launch works")
    cuda.simulate(prev)
  end
end)
