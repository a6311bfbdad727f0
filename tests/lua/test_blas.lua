-- test_blas.lua: kjit.blas (host arrays, OpenBLAS) and kjit.cuda.blas
-- (device arrays: cuBLAS, or OpenBLAS in the simulator), src/libs/.
--
-- Every call is checked against a plain-Lua reference on integer-valued
-- data (exact: the sums stay far below 2^24), for f32 and f64, in three
-- places: kjit.blas on host arrays, kjit.cuda.blas in the simulator, and
-- kjit.cuda.blas on the driver path against tests/c/mock_libcuda.c and
-- tests/c/mock_libcublas.c (a column-major cuBLAS that checks its handle,
-- the current context, streams and memory ranges), in child processes
-- (KJIT_TEST_BLAS_CHILD=<suite>) whose results and mock reports are checked
-- here. The mock's log checks the row-major to column-major mapping. On a
-- machine with a GPU the suite also runs against the real cuBLAS.
local kjit = require "kjit"
local cuda = kjit.cuda

local CHILD = os.getenv("KJIT_TEST_BLAS_CHILD")
local MODDIR, HARNESS, THIS, LUA = arg[1], arg[0], arg[2], arg[-1]
local MOCK_CUDA = MODDIR .. "/libmockcuda.so"
local MOCK_CUBLAS = MODDIR .. "/libmockcublas.so"

local host_ok, host_why = kjit.blas.backend()

-- deterministic integer-valued data in [-4, 4]
local seed = 12345
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return (seed >> 16) % 9 - 4
end

local function prod(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- A host array of the shape filled with rnd(), and its flat Lua copy.
local function rand(shape, dt)
  local a = kjit.empty(prod(shape), dt)
  local t = {}
  for i = 1, #a do t[i] = rnd(); a[i] = t[i] end
  return a:reshape(shape), t
end

local function flat_table(a)
  local f, t = a:reshape({ a.size }), {}
  for i = 1, a.size do t[i] = f[i] end
  return t
end

-- element (i, j) of a row-major rows x cols flat table, op applied
local function at(t, cols, trans, i, j, rows)
  if trans then return t[(j - 1) * cols + i] end
  return t[(i - 1) * cols + j]
end

local function ref_gemm(A, ash, B, bsh, C, alpha, beta, ta, tb)
  local m, k = ash[ta and 2 or 1], ash[ta and 1 or 2]
  local n = bsh[tb and 1 or 2]
  local out = {}
  for i = 1, m do
    for j = 1, n do
      local s = 0
      for l = 1, k do s = s + at(A, ash[2], ta, i, l) * at(B, bsh[2], tb, l, j) end
      local c = C and C[(i - 1) * n + j] or 0
      out[(i - 1) * n + j] = alpha * s + (beta ~= 0 and beta * c or 0)
    end
  end
  return out
end

-- The places a BLAS call runs: how arrays get there and back.
local KINDS = {
  host = { blas = function() return kjit.blas end, to = function(a) return a end,
           back = function(a) return a end },
  device = { blas = function() return cuda.blas end, to = function(a) return cuda.to_device(a) end,
             back = function(d) return d:copy_to_host() end },
}

-- Exact, except for the sign of a zero: BLAS does not specify it, and
-- cuBLAS on a GPU starts a dot product from its first term, not from +0,
-- so a sum of -0 terms is -0 there and +0 in the reference (seen on an H100).
local function same(got, want, what)
  eq(#got, #want, what .. " size")
  for i = 1, #want do
    local g = got[i]
    if g == 0 and want[i] == 0 and math.type(g) == "float" then g = 0.0 end
    eq(g, want[i] + 0.0, what .. "[" .. i .. "]")
  end
end

-- The differential suite, for kind = "host" or "device" (simulator or driver).
local function suite(prefix, kindname)
  local K = KINDS[kindname]
  local function T(name, fn) test(prefix .. name, fn) end

  for _, dt in ipairs({ "f32", "f64" }) do
    T(dt .. " gemm, every transpose, alpha and beta, C given or not", function()
      local blas = K.blas()
      for _, dims in ipairs({ { 3, 4, 5 }, { 1, 1, 1 }, { 7, 2, 9 }, { 4, 1, 3 }, { 17, 33, 8 } }) do
        local m, n, k = dims[1], dims[2], dims[3]
        for _, ta in ipairs({ false, true }) do
          for _, tb in ipairs({ false, true }) do
            local ash = ta and { k, m } or { m, k }
            local bsh = tb and { n, k } or { k, n }
            local A, At = rand(ash, dt)
            local B, Bt = rand(bsh, dt)
            local C, Ct = rand({ m, n }, dt)
            local what = ("%s %dx%dx%d ta=%s tb=%s"):format(dt, m, n, k, ta, tb)
            local got = K.back(blas.gemm(K.to(A), K.to(B), { trans_a = ta, trans_b = tb }))
            eq(got.dtype, dt, what .. " dtype")
            eq(got.shape[1], m, what .. " rows")
            eq(got.shape[2], n, what .. " cols")
            same(flat_table(got), ref_gemm(At, ash, Bt, bsh, nil, 1, 0, ta, tb), what)
            local dC = K.to(C)
            local r = blas.gemm(K.to(A), K.to(B), dC, { alpha = 2, beta = -3, trans_a = ta, trans_b = tb })
            truthy(rawequal(r, dC), what .. ": returns the C given")
            same(flat_table(K.back(dC)), ref_gemm(At, ash, Bt, bsh, Ct, 2, -3, ta, tb), what .. " alpha beta")
          end
        end
      end
    end)

    T(dt .. " gemm on 3-D arrays: strided batched, one side may be a single matrix", function()
      local blas = K.blas()
      local b, m, n, k = 3, 4, 5, 2
      for _, case in ipairs({ { 3, 3 }, { 2, 3 }, { 3, 2 } }) do
        local ash = case[1] == 3 and { b, m, k } or { m, k }
        local bsh = case[2] == 3 and { b, k, n } or { k, n }
        local A, At = rand(ash, dt)
        local B, Bt = rand(bsh, dt)
        local C = K.back(blas.gemm(K.to(A), K.to(B)))
        eq(C.ndim, 3, "batched result ndim")
        eq(C.shape[1], b, "batch")
        local Ct = flat_table(C)
        for i = 1, b do
          local function slice(t, sh, nd)
            if nd == 2 then return t end
            local s, sz = {}, sh[2] * sh[3]
            for q = 1, sz do s[q] = t[(i - 1) * sz + q] end
            return s
          end
          local want = ref_gemm(slice(At, ash, #ash), { m, k }, slice(Bt, bsh, #bsh), { k, n }, nil, 1, 0)
          local got = {}
          for q = 1, m * n do got[q] = Ct[(i - 1) * m * n + q] end
          same(got, want, ("batch %d (A %dD, B %dD)"):format(i, #ash, #bsh))
        end
      end
      raises("batch sizes differ: A is 3x4x2 and B is 2x2x5", blas.gemm, K.to(rand({ 3, 4, 2 }, dt)),
        K.to(rand({ 2, 2, 5 }, dt)))
      raises("C is 4x5, expected 3x4x5", blas.gemm, K.to(rand({ 3, 4, 2 }, dt)),
        K.to(rand({ 2, 5 }, dt)), K.to(rand({ 4, 5 }, dt)))
    end)

    T(dt .. " gemm with an empty inner dimension is beta C; empty results", function()
      local blas = K.blas()
      local C, Ct = rand({ 2, 3 }, dt)
      local dC = K.to(C)
      blas.gemm(K.to(kjit.zeros({ 2, 0 }, dt)), K.to(kjit.zeros({ 0, 3 }, dt)), dC, { beta = 2 })
      local want = {}
      for i = 1, 6 do want[i] = 2 * Ct[i] end
      same(flat_table(K.back(dC)), want, "beta C")
      local E = K.back(blas.gemm(K.to(kjit.zeros({ 0, 4 }, dt)), K.to(kjit.zeros({ 4, 3 }, dt))))
      eq(E.shape[1], 0, "empty rows")
      eq(E.shape[2], 3, "cols")
    end)

    T(dt .. " gemv, transposed or not, y given or not", function()
      local blas = K.blas()
      for _, mn in ipairs({ { 3, 4 }, { 1, 5 }, { 6, 1 }, { 3, 0 } }) do
        local m, n = mn[1], mn[2]
        for _, ta in ipairs({ false, true }) do
          local A, At = rand({ m, n }, dt)
          local rows, cols = ta and n or m, ta and m or n
          local x, xt = rand({ cols }, dt)
          local y, yt = rand({ rows }, dt)
          local what = ("%s %dx%d ta=%s"):format(dt, m, n, ta)
          local want, want2 = {}, {}
          for i = 1, rows do
            local s = 0
            for l = 1, cols do s = s + at(At, n, ta, i, l) * xt[l] end
            want[i], want2[i] = s, -1 * s + 3 * yt[i]
          end
          if rows > 0 then
            same(flat_table(K.back(blas.gemv(K.to(A), K.to(x), { trans_a = ta }))), want, what)
          end
          local dy = K.to(y)
          truthy(rawequal(blas.gemv(K.to(A), K.to(x), dy, { alpha = -1, beta = 3, trans_a = ta }), dy),
            "gemv returns y")
          if rows > 0 then same(flat_table(K.back(dy)), want2, what .. " alpha beta") end
        end
      end
    end)

    T(dt .. " dot, axpy, scal, nrm2, asum, iamax", function()
      local blas = K.blas()
      for _, n in ipairs({ 1, 7, 100 }) do
        local x, xt = rand({ n }, dt)
        local y, yt = rand({ n }, dt)
        local d, ss, sa, best = 0, 0, 0, 1
        for i = 1, n do
          d = d + xt[i] * yt[i]
          ss = ss + xt[i] * xt[i]
          sa = sa + math.abs(xt[i])
          if math.abs(xt[i]) > math.abs(xt[best]) then best = i end
        end
        eq(blas.dot(K.to(x), K.to(y)), d + 0.0, "dot")
        near(blas.nrm2(K.to(x)), math.sqrt(ss), dt == "f32" and 1e-6 or 1e-14, "nrm2")
        eq(blas.asum(K.to(x)), sa + 0.0, "asum")
        eq(blas.iamax(K.to(x)), best, "iamax (1-based, the first largest)")
        local dy = K.to(y)
        truthy(rawequal(blas.axpy(-2, K.to(x), dy), dy), "axpy returns y")
        local want = {}
        for i = 1, n do want[i] = -2 * xt[i] + yt[i] end
        same(flat_table(K.back(dy)), want, "axpy")
        local dx = K.to(x)
        truthy(rawequal(blas.scal(3, dx), dx), "scal returns x")
        for i = 1, n do want[i] = 3 * xt[i] end
        same(flat_table(K.back(dx)), want, "scal")
      end
      -- any shape is a vector of its elements (row-major order)
      local m = K.to(kjit.array({ { 1, -5 }, { 9, 2 } }, dt))
      eq(blas.iamax(m), 3, "iamax of a matrix: the flat index")
      eq(blas.asum(m), 17.0, "asum of a matrix")
      eq(blas.iamax(K.to(kjit.zeros(0, dt))), 0, "iamax of an empty vector")
      eq(blas.dot(K.to(kjit.zeros(0, dt)), K.to(kjit.zeros(0, dt))), 0.0, "empty dot")
    end)

    T(dt .. " geam and transpose", function()
      local blas = K.blas()
      for _, ta in ipairs({ false, true }) do
        for _, tb in ipairs({ false, true }) do
          local m, n = 3, 5
          local A, At = rand(ta and { n, m } or { m, n }, dt)
          local B, Bt = rand(tb and { n, m } or { m, n }, dt)
          local C = K.back(blas.geam(K.to(A), K.to(B), { alpha = 2, beta = -1, trans_a = ta, trans_b = tb }))
          eq(C.shape[1], m, "rows")
          local want = {}
          for i = 1, m do
            for j = 1, n do
              want[(i - 1) * n + j] = 2 * at(At, ta and m or n, ta, i, j) - at(Bt, tb and m or n, tb, i, j)
            end
          end
          same(flat_table(C), want, ("geam ta=%s tb=%s"):format(ta, tb))
        end
      end
      local A, At = rand({ 4, 7 }, dt)
      local Tr = K.back(blas.transpose(K.to(A)))
      eq(Tr.shape[1], 7, "transpose rows")
      eq(Tr.shape[2], 4, "transpose cols")
      for i = 1, 7 do
        for j = 1, 4 do eq(Tr[i][j], At[(j - 1) * 7 + i] + 0.0, "transpose") end
      end
      local S = K.back(blas.geam(K.to(A), K.to(A)))
      eq(S[2][3], 2 * At[7 + 3] + 0.0, "geam's defaults: A + B")
    end)

    T(dt .. " trsm: lower, upper, transposed, unit diagonal, vector B", function()
      local blas = K.blas()
      local m, n = 4, 3
      for _, lower in ipairs({ true, false }) do
        for _, ta in ipairs({ false, true }) do
          for _, unit in ipairs({ false, true }) do
            -- a triangular A with a diagonal of powers of two and an integer X:
            -- B = op(A) X is exact, and so is the solve
            local A = kjit.zeros({ m, m }, dt)
            for i = 1, m do
              for j = 1, m do
                if i == j then A[i][j] = unit and 77 or 2 ^ (i % 3)
                elseif (i > j) == lower then A[i][j] = rnd() end
              end
            end
            local X, Xt = rand({ m, n }, dt)
            local B = kjit.zeros({ m, n }, dt)
            for i = 1, m do
              for j = 1, n do
                local s = 0
                for l = 1, m do
                  local a = ta and A[l][i] or A[i][l]
                  if l == i and unit then a = 1 end
                  s = s + a * Xt[(l - 1) * n + j]
                end
                B[i][j] = 2 * s   -- alpha = 1/2 below
              end
            end
            local dB = K.to(B)
            local r = blas.trsm(K.to(A), dB, { lower = lower, trans_a = ta, unit_diagonal = unit, alpha = 0.5 })
            truthy(rawequal(r, dB), "trsm returns B")
            same(flat_table(K.back(dB)), Xt, ("trsm lower=%s ta=%s unit=%s"):format(lower, ta, unit))
          end
        end
      end
      local A = kjit.array({ { 2, 0 }, { 1, 4 } }, dt)
      local b = K.to(kjit.array({ 6, 11 }, dt))
      blas.trsm(K.to(A), b)
      same(flat_table(K.back(b)), { 3, 2 }, "vector right-hand side")
    end)
  end

  T("errors name the call, the shapes and the dtypes", function()
    local blas = K.blas()
    local mod = kindname == "host" and "kjit.blas" or "kjit.cuda.blas"
    local A32, B32 = K.to(kjit.zeros({ 3, 2 }, "f32")), K.to(kjit.zeros({ 3, 4 }, "f32"))
    local m = raises(mod .. ".gemm: shapes do not match: A is 3x2 and B is 3x4 (A's columns must equal B's rows)",
      function() blas.gemm(A32, B32) end)
    truthy(m:find("test_blas.lua:%d+:"), "located at the caller: " .. m)
    raises("A (transposed) is 3x2 and B (transposed) is 3x4 (op(A)'s columns must equal op(B)'s rows)",
      blas.gemm, A32, B32, { trans_a = true, trans_b = true })
    raises(mod .. ".gemm: B has dtype i32; BLAS takes f32 or f64 arrays", blas.gemm, A32,
      K.to(kjit.zeros({ 2, 2 }, "i32")))
    raises(mod .. ".dot: x is f32 and y is f64: BLAS needs one dtype for both", blas.dot,
      K.to(kjit.zeros(3, "f32")), K.to(kjit.zeros(3, "f64")))
    raises(mod .. ".dot: shapes do not match: x is 3 and y is 4", blas.dot,
      K.to(kjit.zeros(3)), K.to(kjit.zeros(4)))
    raises(mod .. ".axpy: shapes do not match: x is 2x2 and y is 4", blas.axpy, 1,
      K.to(kjit.zeros({ 2, 2 })), K.to(kjit.zeros(4)))
    raises(mod .. ".axpy: alpha (argument 1) must be a number, got", blas.axpy, K.to(kjit.zeros(2)),
      K.to(kjit.zeros(2)))
    raises(mod .. ".gemm: C is 3x3, expected 3x4 (A is 3x2, B is 2x4)", blas.gemm, A32,
      K.to(kjit.zeros({ 2, 4 }, "f32")), K.to(kjit.zeros({ 3, 3 }, "f32")))
    raises(mod .. ".gemm: A and B must be matrices (2-D) or batches of matrices (3-D), got A 3 and B 3x4",
      blas.gemm, K.to(kjit.zeros(3, "f32")), B32)
    raises(mod .. ".gemv: shapes do not match: A is 3x2 and x is 3 (x needs 2 elements)", blas.gemv, A32,
      K.to(kjit.zeros(3, "f32")))
    raises(mod .. ".gemv: y is 2, expected 3 (A is 3x2)", blas.gemv, A32, K.to(kjit.zeros(2, "f32")),
      K.to(kjit.zeros(2, "f32")))
    raises(mod .. ".geam: shapes do not match: A is 3x2 and B is 3x4", blas.geam, A32, B32)
    raises(mod .. ".transpose: A must be a matrix (2-D), got 3", blas.transpose, K.to(kjit.zeros(3)))
    raises(mod .. ".trsm: A must be a square matrix, got 3x2", blas.trsm, A32, B32)
    raises(mod .. ".trsm: shapes do not match: A is 2x2 and B is 3x4 (B needs 2 rows)", blas.trsm,
      K.to(kjit.zeros({ 2, 2 }, "f32")), B32)
    raises(mod .. ".gemm: unknown option 'transa' (options: alpha, beta, trans_a, trans_b"
      .. (kindname == "host" and ")" or ", stream)"), blas.gemm, A32, A32, { transa = true })
    raises(mod .. ".gemm: unknown option '1' (options: alpha", blas.gemm, A32, A32, { true })
    raises(mod .. ".gemm: option 'trans_a' must be a boolean, got number", blas.gemm, A32, A32,
      { trans_a = 1 })
    raises(mod .. ".gemm: option 'alpha' must be a number, got string", blas.gemm, A32, A32,
      { alpha = "2" })
    raises(mod .. ".gemm: options must be a table, got number", blas.gemm, A32, A32, nil, 5)
    raises(mod .. ".dot: unknown option 'alpha' (options:", blas.dot, K.to(kjit.zeros(2)),
      K.to(kjit.zeros(2)), { alpha = 1 })
    -- outputs that share memory with an input
    local A = K.to(kjit.zeros({ 2, 2 }))
    raises(mod .. ".gemm: C shares memory with A", blas.gemm, A, K.to(kjit.zeros({ 2, 2 })), A)
    raises(mod .. ".trsm: B shares memory with A", blas.trsm, A, A)
    raises(mod .. ".gemv: y shares memory with x", function()
      local x = K.to(kjit.zeros(2))
      blas.gemv(A, x, x)
    end)
    if kindname == "host" then
      local big = kjit.zeros({ 4, 4 })
      raises("kjit.blas.gemm: C shares memory with B", blas.gemm, kjit.zeros({ 2, 4 }), big,
        big:reshape({ 2, 8 })[1]:reshape({ 2, 4 }))
      raises("kjit.blas.gemm: option 'stream' is for kjit.cuda.blas", blas.gemm, A, A, { stream = 0 })
      raises("kjit.blas.gemm: A must be a kjit array, got number", blas.gemm, 1, A)
    else
      raises("kjit.cuda.blas.gemm: A must be a device array, got kjit.array (copy it to the device "
        .. "with cuda.to_device, or use kjit.blas)", blas.gemm, kjit.zeros({ 2, 2 }), A)
      raises("kjit.cuda.blas.gemm: option 'stream' must be a kjit.cuda stream, got table", blas.gemm,
        A, A, { stream = {} })
    end
  end)
end

----------------------------------------------------------------------
-- child processes: the driver path against the mock driver and cuBLAS
----------------------------------------------------------------------

local function lines_of(path)
  local f = io.open(path)
  if not f then return {} end
  local t = {}
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

if CHILD then
  local log = os.getenv("MOCK_CUBLAS_LOG")
  if CHILD == "driver" then
    test("driver: backend() names cuBLAS and its version", function()
      local b = cuda.blas.backend()
      truthy(b:match("^cuBLAS %d+%.%d+%.%d+$"), "backend: " .. tostring(b))
    end)
    suite("driver: ", "device")
    test("driver: the row-major call is the column-major one on the transposes", function()
      local n0 = #lines_of(log)
      local A, B = cuda.to_device(kjit.zeros({ 3, 2 })), cuda.to_device(kjit.zeros({ 2, 5 }))
      cuda.blas.gemm(A, B, { trans_b = false, alpha = 3 })
      cuda.blas.gemm(cuda.to_device(kjit.zeros({ 4, 3, 2 }, "f32")), cuda.to_device(kjit.zeros({ 2, 5 }, "f32")))
      cuda.blas.gemv(A, cuda.to_device(kjit.zeros(2)))
      cuda.blas.trsm(cuda.to_device(kjit.zeros({ 3, 3 })), cuda.to_device(kjit.zeros({ 3, 4 })),
        { lower = true, alpha = 2 })
      cuda.blas.transpose(A)
      local l = lines_of(log)
      eq(l[n0 + 1], "cublasDgemm_v2_64 N N m=5 n=3 k=2 alpha=3 lda=5 ldb=2 beta=0 ldc=5 "
        .. "strides=0,0,0 batch=1 stream=default", "gemm: B first, m and n swapped")
      eq(l[n0 + 2], "cublasSgemmStridedBatched_64 N N m=5 n=3 k=2 alpha=1 lda=5 ldb=2 beta=0 ldc=5 "
        .. "strides=0,6,15 batch=4 stream=default", "batched: B's stride 0 (one matrix)")
      eq(l[n0 + 3], "cublasDgemv_v2_64 T m=2 n=3 alpha=1 lda=2 beta=0 stream=default",
        "gemv: the row-major A is the transposed column-major one")
      eq(l[n0 + 4], "cublasDtrsm_v2_64 side=R uplo=U N diag=N m=4 n=3 alpha=2 lda=3 ldb=4 "
        .. "stream=default", "trsm from the left: from the right, triangle flipped")
      eq(l[n0 + 5], "cublasDgeam_64 T N m=3 n=2 alpha=1 lda=2 beta=0 ldb=3 ldc=3 stream=default",
        "transpose")
    end)
    test("driver: calls queue on the stream given", function()
      local s = cuda.stream()
      local n0 = #lines_of(log)
      local x = cuda.to_device(kjit.array({ 1, 2, 3 }))
      cuda.blas.scal(2, x, { stream = s })
      eq(cuda.blas.nrm2(x, { stream = s }), math.sqrt(56), "nrm2 on the stream")
      s:synchronize()
      local l = lines_of(log)
      eq(l[n0 + 1], "cublasDscal_v2_64 n=3 stream=other", "scal on s")
      eq(l[n0 + 2], "cublasDnrm2_v2_64 n=3 stream=other", "nrm2 on s")
      cuda.blas.asum(x)
      eq(lines_of(log)[n0 + 3], "cublasDasum_v2_64 n=3 stream=default", "then the default stream again")
    end)
    test("driver: one handle per device, made with that device's context", function()
      local prev = cuda.select_device(1)
      local ok, err = pcall(function()
        local x = cuda.to_device(kjit.array({ 3, 4 }))
        eq(cuda.blas.nrm2(x), 5.0, "nrm2 on device 1")
        eq(cuda.blas.dot(x, x), 25.0, "dot on device 1")
      end)
      cuda.select_device(prev)
      if not ok then error(err, 0) end
      local creates = 0
      for _, l in ipairs(lines_of(log)) do
        if l:match("^cublasCreate_v2") then creates = creates + 1 end
      end
      eq(creates, 2, "handles made (device 0, device 1)")
      truthy(table.concat(lines_of(log), "\n"):find("cublasCreate_v2 dev=1", 1, true), "device 1's handle")
    end)
  elseif CHILD == "fail" then
    test("fail: a cuBLAS status is a Lua error naming the call and the status", function()
      local A = cuda.to_device(kjit.zeros({ 2, 2 }))
      local m = raises("kjit.cuda.blas.gemm: cublasDgemm_v2_64: CUBLAS_STATUS_EXECUTION_FAILED "
        .. "(the GPU program failed to execute)", cuda.blas.gemm, A, A)
      truthy(not m:find("cublasSgemm", 1, true), m)
      raises("kjit.cuda.blas.dot: cublasDdot_v2_64: CUBLAS_STATUS_INVALID_VALUE (an unsupported "
        .. "value or parameter was passed to the function)", cuda.blas.dot, cuda.to_device(kjit.zeros(2)),
        cuda.to_device(kjit.zeros(2)))
      eq(cuda.blas.asum(cuda.to_device(kjit.array({ -1, 2 }))), 3.0, "other calls still work")
    end)
  elseif CHILD == "nocreate" then
    test("nocreate: a failed cublasCreate is an error, then retried", function()
      raises("kjit.cuda.blas.nrm2: cublasCreate_v2: CUBLAS_STATUS_NOT_INITIALIZED",
        cuda.blas.nrm2, cuda.to_device(kjit.zeros(2)))
      raises("cublasCreate_v2", cuda.blas.nrm2, cuda.to_device(kjit.zeros(2)))
    end)
  elseif CHILD == "missing" then
    test("missing: no cuBLAS is a clear error, never a crash", function()
      local b, why = cuda.blas.backend()
      eq(b, nil, "backend()")
      truthy(why:find("KJIT_CUBLAS=/nonexistent/libcublas.so.13 could not be loaded", 1, true), why)
      raises("kjit.cuda.blas.gemm: KJIT_CUBLAS=/nonexistent/libcublas.so.13 could not be loaded",
        cuda.blas.gemm, cuda.to_device(kjit.zeros({ 2, 2 })), cuda.to_device(kjit.zeros({ 2, 2 })))
      -- the simulator does not need it
      cuda.simulate(true)
      eq(cuda.blas.dot(cuda.to_device(kjit.array({ 1, 2 })), cuda.to_device(kjit.array({ 3, 4 }))), 11.0,
        "simulator")
      cuda.simulate(false)
    end)
  elseif CHILD == "noopenblas" then
    test("noopenblas: no OpenBLAS is a clear error, in kjit.blas and in the simulator", function()
      local b, why = kjit.blas.backend()
      eq(b, nil, "backend()")
      truthy(why:find("KJIT_OPENBLAS=/nonexistent/libopenblas.so.0 could not be loaded", 1, true), why)
      raises("kjit.blas.dot: KJIT_OPENBLAS=/nonexistent/libopenblas.so.0 could not be loaded",
        kjit.blas.dot, kjit.zeros(2), kjit.zeros(2))
      cuda.simulate(true)
      raises("kjit.cuda.blas.gemm: KJIT_OPENBLAS=/nonexistent", cuda.blas.gemm,
        cuda.to_device(kjit.zeros({ 2, 2 })), cuda.to_device(kjit.zeros({ 2, 2 })))
      eq(cuda.blas.backend(), nil, "the simulator's backend()")
      cuda.simulate(false)
      -- geam needs no library (a loop)
      eq(kjit.blas.transpose(kjit.array({ { 1, 2 } }))[2][1], 2.0, "transpose without OpenBLAS")
    end)
  end
  return
end

----------------------------------------------------------------------
-- this process: host arrays and the simulator
----------------------------------------------------------------------

test("backend() names the host library and its version", function()
  if not host_ok then skip(host_why) end
  truthy(host_ok:match("^OpenBLAS %d+%.%d+"), "backend: " .. host_ok)
end)

if host_ok then
  suite("host: ", "host")
  local prev = cuda.simulate(true)
  test("simulator: backend() is the host library", function()
    eq(cuda.blas.backend(), host_ok .. " (simulator)", "backend")
  end)
  suite("simulator: ", "device")
  test("simulator: a device array of the other mode is refused", function()
    local A = cuda.to_device(kjit.zeros({ 2, 2 }))
    cuda.simulate(false)
    raises("this device array was made in simulator mode", cuda.blas.gemm, A, A)
    cuda.simulate(true)
  end)
  test("simulator: a stream from the simulator is taken", function()
    local s = cuda.stream()
    local x = cuda.to_device(kjit.array({ 1, 2, 3 }))
    cuda.blas.axpy(1, x, x, { stream = s })
    s:synchronize()
    eq(x:copy_to_host()[3], 6.0, "y = x + y with y = x")
  end)
  cuda.simulate(prev)
else
  test("kjit.blas without OpenBLAS says what to install", function()
    truthy(host_why:find("libopenblas", 1, true), host_why)
    raises("libopenblas", kjit.blas.gemm, kjit.zeros({ 2, 2 }), kjit.zeros({ 2, 2 }))
  end)
end

-- On a GPU machine: the same suite against the real cuBLAS.
if cuda.is_available() then
  local prev = cuda.simulate(false)
  test("gpu: backend() names cuBLAS", function()
    truthy(tostring(cuda.blas.backend()):match("^cuBLAS %d+%.%d+%.%d+$"), tostring(cuda.blas.backend()))
  end)
  suite("gpu: ", "device")
  cuda.simulate(prev)
else
  test("gpu: the suite against the real cuBLAS", function() skip("no GPU") end)
end

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs this file again as suite `name` with env; its tests are reported
-- here, and the mocks' exit reports compared with want (key = number).
local function child(name, env, want)
  local report, creport, log = os.tmpname(), os.tmpname(), os.tmpname()
  local parts = { "KJIT_TEST_BLAS_CHILD=" .. name, "KJIT_LIBCUDA=" .. q(MOCK_CUDA),
    "KJIT_CUBLAS=" .. q(MOCK_CUBLAS), "MOCK_CUDA_REPORT=" .. q(report),
    "MOCK_CUBLAS_REPORT=" .. q(creport), "MOCK_CUBLAS_LOG=" .. q(log), "KJIT_CUDASIM=" }
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. q(v) end
  local cmd = table.concat(parts, " ") .. " " .. q(LUA) .. " " .. q(HARNESS) .. " " .. q(MODDIR)
    .. " " .. q(THIS) .. " 2>&1"
  local p = io.popen(cmd)
  local out = p:read("a")
  local okexit = p:close()
  local summary
  for line in out:gmatch("[^\n]+") do
    local kind, rest = line:match("^(%u%u%u%u) (.*)$")
    if kind == "PASS" then test(rest, function() end)
    elseif kind == "SKIP" then test(rest, function() skip("in the child") end)
    elseif kind == "FAIL" then test(rest, function() error(rest, 0) end)
    elseif line:match("^test_blas: %d+ passed") then summary = line end
  end
  test(name .. ": child ran to the end", function()
    truthy(summary and summary:find(" 0 failed", 1, true) and okexit, "child output:\n" .. out)
  end)
  test(name .. ": the mocks' reports", function()
    local got = {}
    for _, path in ipairs({ report, creport }) do
      for _, l in ipairs(lines_of(path)) do
        local k, v = l:match("^(.-)=(%d+)$")
        if k then got[k] = tonumber(v) end
      end
    end
    for k, v in pairs(want) do eq(got[k], v, k) end
  end)
  os.remove(report); os.remove(creport); os.remove(log)
end

local function file_exists(p)
  local f = io.open(p)
  if f then f:close() end
  return f ~= nil
end

if not (file_exists(MOCK_CUDA) and file_exists(MOCK_CUBLAS)) then
  test("mock cuBLAS tests", function() skip("no " .. MOCK_CUBLAS .. " (build target mockcublas)") end)
else
  local CLEAN = { bad_handles = 0, bad_contexts = 0, bad_ranges = 0, bad_streams = 0,
    bad_copies = 0, bad_frees = 0, live_streams = 0, driver_checks = 1 }
  child("driver", {}, CLEAN)
  child("fail", { MOCK_CUBLAS_FAIL = "cublasDgemm_v2_64,cublasDdot_v2_64=7" }, CLEAN)
  child("nocreate", { MOCK_CUBLAS_FAIL = "cublasCreate_v2=1" }, { calls = 0, live_handles = 0 })
  child("missing", { KJIT_CUBLAS = "/nonexistent/libcublas.so.13" }, {})
  child("noopenblas", { KJIT_OPENBLAS = "/nonexistent/libopenblas.so.0" }, {})
end
