-- test_cuda_const.lua: constant arrays and reshape in kjit.cuda kernels
-- (issue 25, item 3): kjit arrays read from upvalues and globals, and
-- cuda.const.array_like of them, are frozen into the kernel (constant
-- memory on the GPU, .const in the PTX); a:reshape is a view in kernels.
-- Every kernel runs in both simulators, results compared with each other
-- and with plain Lua; PTX is checked by ptxas for sm_75, sm_80 and sm_90.
local kjit = require "kjit"
local cuda = kjit.cuda
local both, errors = require("simboth").both, require("simboth").errors
local ptxas = require "ptxas"




local function ptx_ok(k, sig)
  local ptx
  for _, cc in ipairs{ 75, 80, 90 } do
    k:compile(sig, cc)
    ptx = k:inspect("ptx")
    ptxas.check(ptx, sig, cc)
  end
  return ptx
end

-- ---- constant arrays ----------------------------------------------------------------------

local WEIGHTS = kjit.array({ 0.25, 0.5, 0.25 })
local TABLE2 = kjit.array({ { 1, -2, 3 }, { 400, 5, -60000 } }, "i32")
local SMALL = kjit.array({ 250, 7, 1 }, "u8")
local F32 = kjit.array({ 0.1, 1e30, -2.5 }, "f32")
KJIT_TEST_GLOBAL_CONST = kjit.array({ 10, 20, 30, 40 }, "i64")

local function stencil(x, out)
  local i = cuda.grid(1)
  if i < 2 or i >= #x then return end
  local s = 0.0
  for k = 1, #WEIGHTS do s = s + WEIGHTS[k] * x[i + k - 2] end
  out[i] = s
end

test("upvalue arrays in kernels are constants: both simulators agree with plain Lua", function()
  local x = kjit.zeros(100)
  for i = 1, #x do x[i] = (i * 37 % 11) * 0.5 end
  local out = both("stencil", cuda.jit(stencil), function(k) return k:forall(100) end, { x, kjit.zeros(100) })
  for i = 2, 99 do
    local want = 0.0
    for k = 1, 3 do want = want + WEIGHTS[k] * x[i + k - 2] end
    eq(out[2][i], want, "out[" .. i .. "]")
  end
end)

test("every dtype and rank, globals, and cuda.const.array_like", function()
  local k = cuda.jit(function(out, out32)
    local i = cuda.grid(1)
    local t = cuda.const.array_like(TABLE2)
    local r, c = (i - 1) // 3 + 1, (i - 1) % 3 + 1
    out[i] = t[r][c] + TABLE2[r][c] * 1000 + SMALL[c] + KJIT_TEST_GLOBAL_CONST[c + 1]
             + #TABLE2 + TABLE2.shape[2] * 0.5
    out32[i] = F32[c]   -- f32 arithmetic in kernels is CUDA C's: stored apart
  end)
  local out = both("dtypes", k, function(kk) return kk[{ 1, 6 }] end, { kjit.zeros(6), kjit.zeros(6) })
  for i = 1, 6 do
    local r, c = (i - 1) // 3 + 1, (i - 1) % 3 + 1
    local want = TABLE2[r][c] + TABLE2[r][c] * 1000 + SMALL[c] + KJIT_TEST_GLOBAL_CONST[c + 1]
                 + 2 + 1.5
    eq(out[1][i], want, "out[" .. i .. "]")
    eq(out[2][i], F32[c], "out32[" .. i .. "]")
  end
end)

test("a device function reads a constant array passed to it; views of one read too", function()
  local function dot3(w, x, i) return w[1] * x[i - 1] + w[2] * x[i] + w[3] * x[i + 1] end
  local k = cuda.jit(function(x, out)
    local i = cuda.grid(1)
    if i < 2 or i >= #x then return end
    local row = TABLE2[2]
    out[i] = dot3(WEIGHTS, x, i) + row[3] + WEIGHTS:slice(2, 3)[2] + TABLE2:reshape({ 3, 2 })[3][1]
  end)
  local x = kjit.arange(1, 33)
  local out = both("device fn", k, function(kk) return kk[{ 1, 32 }] end, { x, kjit.zeros(32) })
  for i = 2, 31 do eq(out[2][i], 0.25 * (i - 1) + 0.5 * i + 0.25 * (i + 1) - 60000 + 0.25 + 5) end
end)

test("constant arrays are frozen when the kernel compiles (numba-cuda's globals)", function()
  local coef = kjit.array({ 1, 2 }, "i64")
  local k = cuda.jit(function(out) out[cuda.grid(1)] = coef[cuda.grid(1)] end)
  local prev = cuda.simulate(true)
  local o = kjit.zeros(2, "i64")
  k[{ 1, 2 }](o)
  eq(o[2], 2)
  coef[2] = 99
  k[{ 1, 2 }](o)
  eq(o[2], 2, "the compiled kernel keeps the values it compiled with")
  cuda.simulate(prev)
end)

test("constant arrays are read-only; the limits are compile errors", function()
  local function refused(fn, what)
    raises("cannot write to a constant array in a kernel", function()
      cuda.jit(fn):compile("void(float64[:])")
    end)
  end
  refused(function(x) WEIGHTS[1] = x[1] end)
  refused(function(x) TABLE2[1][2] = 3 end)
  refused(function(x) WEIGHTS:slice(1, 2)[1] = 0 end)
  refused(function(x) TABLE2:reshape(6)[1] = 0 end)
  refused(function(x) cuda.atomic.add(KJIT_TEST_GLOBAL_CONST, 1, 1) end)
  refused(function(x) cuda.atomic.xor(KJIT_TEST_GLOBAL_CONST, 1, 1) end)
  local function poke(w) w[1] = 0 end
  refused(function(x) poke(WEIGHTS) end)
  -- a local holding a constant array or an argument has no one type
  raises("local 'a' holds both constant f64[:] and f64[:] values", function()
    cuda.jit(function(x, c)
      local a
      if c > 0 then a = x else a = WEIGHTS end
      x[1] = a[1]
    end):compile("void(float64[:], int64)")
  end)
  local big = kjit.zeros(8193)
  raises("a kjit array larger than the GPU's 64 KiB of constant memory", function()
    cuda.jit(function(x) x[1] = big[1] end):compile("void(float64[:])")
  end)
  local h1, h2 = kjit.zeros(5000), kjit.zeros(5000)
  raises("the kernel's constant arrays total 80000 bytes, above the GPU's 64 KiB", function()
    cuda.jit(function(x) x[1] = h1[1] + h2[1] end):compile("void(float64[:])")
  end)
  local P = kjit.struct{ { "a", "f64" } }
  local recs = kjit.zeros(3, P)
  raises("upvalue 'recs' is a userdata", function()
    cuda.jit(function(x) x[1] = recs[1].a end):compile("void(float64[:])")
  end)
  raises("cuda.const.array_like takes a kjit array known when the kernel compiles", function()
    cuda.jit(function(x) local c = cuda.const.array_like(x); x[1] = c[1] end):compile("void(float64[:])")
  end)
  raises("cuda.const.array_like can only be called inside a kernel", function() cuda.const.array_like(WEIGHTS) end)
  -- on the CPU, kjit.jit uses a global array in place, frozen (refuse2)
  eq(kjit.jit(function() return WEIGHTS[1] end)(), WEIGHTS[1])
end)

test("PTX: constant arrays live in .const, accepted by ptxas", function()
  -- an index the optimizer cannot fold (constant indices become the values)
  local ptx = ptx_ok(cuda.jit(function(x, out)
    local i = cuda.grid(1)
    out[i] = WEIGHTS[i % 3 + 1] * x[i]
  end), "void(float64[:], float64[:])")
  -- 0.25, 0.5, 0.25 as little-endian bytes
  truthy(ptx:find(".const .align 16 .b8 kjit_const_%d+%[24%] = {0, 0, 0, 0, 0, 0, 208, 63, 0, 0, 0, 0, 0, 0, 224, 63, 0, 0, 0, 0, 0, 0, 208, 63}"), ptx)
  truthy(ptx:find("ld.const.f64", 1, true), "a constant-memory load")
end)

-- ---- reshape in kernels ------------------------------------------------------------------

test("a:reshape in kernels: views of global and shared arrays, errors alike", function()
  local k = cuda.jit(function(x, out, n)
    local i = cuda.grid(1)
    local m = x:reshape({ n, #x // n })
    local s = cuda.shared.array(12, "f64")
    local s2 = s:reshape({ 3, 4 })
    s[i] = i * i
    cuda.syncthreads()
    local r, c = (i - 1) // 4 + 1, (i - 1) % 4 + 1
    out[i] = m[(i - 1) % n + 1][1] + s2[r][c] * 1000 + m.shape[2]
    m[(i - 1) % n + 1][2] = -i
  end)
  local x = kjit.arange(1, 13)
  local out = both("reshape", k, function(kk) return kk[{ 1, 12 }] end, { x, kjit.zeros(12), 3 })
  for i = 1, 12 do eq(out[2][i], x[((i - 1) % 3) * 4 + 1] + i * i * 1000 + 4.0, "out[" .. i .. "]") end
  local a, b = errors(k, function(kk) return kk[{ 1, 12 }] end, { x, kjit.zeros(12), 5 })
  truthy(a:find("cannot reshape a kjit.array of size 12 into a shape of size 10 (in thread (0,0,0) of block (0,0,0))", 1, true), a)
  eq(b, a)
  a, b = errors(k, function(kk) return kk[{ 1, 12 }] end, { x, kjit.zeros(12), -3 })
  truthy(a:find("bad argument #1 to 'reshape' (negative dimension -3 in shape)", 1, true), a)
  eq(b, a)
  ptx_ok(k, "void(float64[:], float64[:], int64)")
end)

-- ---- eager signatures with records -----------------------------------------------------------

test("cuda.jit(fn, sig, layouts...) compiles records eagerly, in both targets", function()
  local P = kjit.struct{ { "x", "f64" }, { "n", "i32" } }
  local Q = kjit.struct{ { "w", "f32" } }
  local function body(ps, qs, s)
    local i = cuda.grid(1)
    if i <= #ps then ps[i].x = ps[i].x * s + ps[i].n + qs[i].w end
  end
  local ps = kjit.zeros(4, P)
  local qs = kjit.zeros(4, Q)
  for i = 1, 4 do ps[i].x = i; ps[i].n = 10 * i; qs[i].w = 0.5 * i end
  for _, mode in ipairs{ "interpret", true, false } do
    local prev = cuda.simulate(mode)
    local k = cuda.jit(body, "void(record[:], record[:], float64)", P, Q, { fastmath = false })
    cuda.simulate(prev)
    eq(k.signatures[1], "(record{x,n}[:], record{w}[:], f64)", tostring(mode))
  end
  local prev = cuda.simulate(true)
  local k = cuda.jit(body, "void(record[:], record[:], float64)", P, Q)
  local out = ps:copy()
  k[{ 1, 32 }](out, qs, 2)
  cuda.simulate(prev)
  for i = 1, 4 do eq(out[i].x, 2.0 * i + 10 * i + 0.5 * i, "x[" .. i .. "]") end
  raises("argument #1 is a record: give its layout (a kjit.struct) after the signature", function()
    cuda.jit(body, "void(record[:], record[:], float64)")
  end)
  raises("bad kernel signature 'void(f64[:])': more layouts than records (1)", function()
    cuda.jit(function(x) end, "void(f64[:])", P)
  end)
end)
