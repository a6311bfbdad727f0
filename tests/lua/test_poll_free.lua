-- test_poll_free.lua: a loop nest whose whole charge is known before it
-- (inner loops with integer bounds invariant in it, or its variable plus a
-- constant: n-body's `for j = i + 1, nb`) gets a copy without polls,
-- entered when its iterations times the most an iteration charges fit one
-- poll period, charged that once (src/codegen/cg_pollfree.c). Compared
-- with the interpreter (difftest): nests that run no iteration, one, at
-- the period's edge (255 x 257 = 65535 fits, 256 x 257 does not), inner
-- loops of 65535-65537 iterations, bounds near math.maxinteger and
-- math.mininteger, negative steps, triangles both ways, errors raised in
-- the middle (the arrays as the interpreter leaves them), an early return
-- and a break, a bound that changes inside the nest (no copy then), a
-- kjit.prange body. Plus the form (the copy's blocks in the optimized IR
-- call no poll) and the polls: a raising hook stops an endless nest of
-- each shape.
local D = require "difftest"
local kjit = D.kjit
local HUGE = 1 << 30   -- a hook count the interpreted parts never reach

local grid = require("stencil_kernels").grid

-- rows stored (jacobi's shape: an inner loop that stores, invariant bounds)
local function rows(lo, hi, step, m, A, B)
  local s = 0
  for i = lo, hi, step do
    local r = (i % 3) + 1
    for j = 1, m do B[r][j] = A[r][j] * 2.0 + i end
    s = s + i
  end
  return s
end

-- a triangle (n-body's shape): j from i + c, stores to an invariant element;
-- left after 1000 runs (where i + c wraps, j runs from the other end)
local function tri(lo, hi, step, c, n, x, v)
  local k = 0
  for i = lo, hi, step do
    for j = i + c, n do
      local d = x[(i % #x) + 1] - x[(j % #x) + 1]
      v[(i % #v) + 1] = v[(i % #v) + 1] - d
      v[(j % #v) + 1] = v[(j % #v) + 1] + d
      k = k + 1
      if k > 1000 then return k, i, j end   -- (i + c wrapped: 2^64 runs)
    end
  end
  return k
end

-- the same with constant offsets (P's variable plus a constant: the copy)
local function tri1(lo, hi, step, n, x, v)
  local k = 0
  for i = lo, hi, step do
    for j = i + 1, n do
      v[(j % #v) + 1] = v[(j % #v) + 1] + x[(i % #x) + 1]
      k = k + 1
      if k > 1000 then return k, i, j end
    end
  end
  return k
end
local function trim2(lo, hi, step, n, x, v)
  local k = 0
  for i = lo, hi, step do
    for j = n, i - 2, -1 do
      v[(j % #v) + 1] = v[(j % #v) + 1] + x[(i % #x) + 1]
      k = k + 1
      if k > 1000 then return k, i, j end
    end
  end
  return k
end

-- the other triangle, downwards: j from n to i by -1, and a second loop
local function tri_down(n, m, x, out)
  local t = 0.0
  for i = 1, n do
    for j = m, i, -1 do t = t + x[j] * i end
    for j = 1, 3 do out[j] = out[j] + t end
  end
  return t
end

-- the bound changes inside the nest: not invariant, no copy
local function growing(n, m, x)
  local t = 0.0
  for i = 1, n do
    for j = 1, m do t = t + x[j] end
    m = m + 1
  end
  return t, m
end

-- left from the inner loop: a return, a break
local function early(n, m, A, stop)
  local s = 0.0
  for i = 1, n do
    for j = 1, m do
      s = s + A[i][j]
      if s > stop then return i, j, s end
    end
  end
  return s
end
local function breaks(n, m, A, stop)
  local s, rows = 0.0, 0
  for i = 1, n do
    for j = 1, m do
      if A[i][j] > stop then break end
      s = s + A[i][j]
    end
    rows = rows + 1
  end
  return s, rows
end

-- an error in the middle: row `bad` writes past the end of its array
local function raises(n, m, bad, A, B)
  for i = 1, n do
    local w = m
    if i == bad then w = m + 1 end
    for j = 1, m do B[i][j] = A[i][j] + i end
    B[i][w] = 1.0
  end
end

-- a deep nest (n-body's time steps: a triangle and a loop beside it, in
-- a loop whose copy charges each iteration), stepping down or up
local function steps(lo, hi, step, n, x, v)
  local t = 0.0
  for s = lo, hi, step do
    for i = 1, n do
      for j = i + 1, n do v[i] = v[i] - x[j] * s; v[j] = v[j] + x[i] end
    end
    for k = 1, n do x[k] = x[k] + v[k] * 0.001 end
    t = t + s
  end
  return t
end

-- a kjit.prange body (the parallel matmul's shape: a k loop around a j
-- loop that stores)
local function pmat(n, m, p, a, b, c)
  for i in kjit.prange(1, n) do
    local ci, ai = c[i], a[i]
    for j = 1, p do ci[j] = 0.0 end
    for k = 1, m do
      local aik, bk = ai[k], b[k]
      for j = 1, p do ci[j] = ci[j] + aik * bk[j] end
    end
  end
end

test("rows stored: the interpreter's results and arrays", function()
  local big, small = math.maxinteger, math.mininteger
  for _, m in ipairs({ 0, 1, 3, 17 }) do
    D.check(rows, 1, 10, 1, m, grid(3, 17), kjit.zeros({ 3, 17 }))
    D.check(rows, 10, 1, -3, m, grid(3, 17), kjit.zeros({ 3, 17 }))
    D.check(rows, 5, 4, 1, m, grid(3, 17), kjit.zeros({ 3, 17 }))   -- no row
    D.check(rows, 4, 4, 1, m, grid(3, 17), kjit.zeros({ 3, 17 }))   -- one row
    D.check(rows, big - 6, big, 2, m, grid(3, 17), kjit.zeros({ 3, 17 }))
    D.check(rows, small + 3, small, -1, m, grid(3, 17), kjit.zeros({ 3, 17 }))
  end
  -- the period's edge: 255 rows of 256 (W = 257) fit, 256 rows do not
  D.check(rows, 1, 255, 1, 256, grid(3, 256), kjit.zeros({ 3, 256 }))
  D.check(rows, 1, 256, 1, 256, grid(3, 256), kjit.zeros({ 3, 256 }))
  D.check(rows, 1, 65536, 1, 0, grid(3, 1), kjit.zeros({ 3, 1 }))   -- W = 1
  D.check(rows, 1, 65535, 1, 0, grid(3, 1), kjit.zeros({ 3, 1 }))
  for _, m in ipairs({ 65534, 65535, 65536 }) do   -- inner loops at a period
    D.check(rows, 1, 1, 1, m, grid(3, m), kjit.zeros({ 3, m }))
    D.check(rows, 1, 2, 1, m, grid(3, m), kjit.zeros({ 3, m }))
  end
end)

test("triangles, both ways, near the integers' ends: the interpreter's", function()
  local x, big, small = grid(1, 7)[1], math.maxinteger, math.mininteger
  for _, c in ipairs({ { 1, 5, 1, 1, 5 }, { 1, 5, 1, 0, 5 }, { 5, 1, -1, 1, 5 }, { 1, 0, 1, 1, 5 },
                       { 3, 3, 1, 1, 5 }, { 1, 5, 1, -2, 4 }, { 1, 300, 1, 1, 300 },
                       { 1, 400, 1, 1, 400 },   -- 400 x 400 does not fit
                       { big - 4, big, 1, 1, big }, { big - 4, big, 1, 2, big },
                       { big - 4, big, 1, -3, big }, { small, small + 3, 1, -1, small + 5 },
                       { small + 3, small, -1, 1, small + 5 } }) do
    D.check(tri, c[1], c[2], c[3], c[4], c[5], x, kjit.zeros(5))
    D.check(tri1, c[1], c[2], c[3], c[5], x, kjit.zeros(5))
    D.check(trim2, c[1], c[2], c[3], c[5], x, kjit.zeros(5))
    D.check(trim2, c[2], c[1], -c[3], c[5] - 3, x, kjit.zeros(5))
  end
  for _, c in ipairs({ { 4, 6 }, { 6, 4 }, { 0, 5 }, { 1, 0 }, { 200, 300 } }) do
    D.check(tri_down, c[1], c[2], grid(1, 300)[1], kjit.zeros(3))
  end
end)

test("deep nests (n-body's): the interpreter's results and arrays", function()
  local K = dofile("bench/kernels.lua")
  local function arrays(n) return kjit.full(n, 1.0), kjit.full(n, 2.0), kjit.full(n, 3.5), kjit.zeros(n),
                                   kjit.zeros(n), kjit.zeros(n), kjit.full(n, 1.0) end
  for _, c in ipairs({ { 0, 3 }, { 1, 3 }, { 2, 0 }, { 5, 1 }, { 5, 40 }, { 255, 2 }, { 300, 2 } }) do
    local n = math.max(c[1], 1)
    local x, y, z, vx, vy, vz, m = arrays(n)
    for i = 1, n do x[i] = i * 0.7; y[i] = i * i * 0.1; z[i] = -i * 0.3 end
    D.check(K.nbody, c[1], c[2], 0.01, x, y, z, vx, vy, vz, m)
  end
  local big = math.maxinteger
  for _, c in ipairs({ { 1, 10, 1, 4 }, { 10, 1, -3, 4 }, { 1, 0, 1, 4 }, { 1, 3, 1, 0 }, { 1, 3, 1, 255 },
                       { 1, 2, 1, 362 }, { big - 3, big, 1, 3 }, { math.mininteger + 2, math.mininteger, -1, 3 } }) do
    local n = math.max(c[4], 1)
    D.check(steps, c[1], c[2], c[3], c[4], grid(1, n)[1], kjit.zeros(n))
  end
end)

test("a bound that changes, an early return, a break, an error: the interpreter's", function()
  D.check(growing, 10, 3, grid(1, 20)[1])
  D.check(growing, 0, 3, grid(1, 20)[1])
  D.check(early, 50, 30, grid(50, 30), 40.0)
  D.check(early, 50, 30, grid(50, 30), 1e30)
  D.check(early, 50, 0, grid(50, 30), 1.0)
  D.check(breaks, 20, 30, grid(20, 30), 500.0)
  D.check(breaks, 20, 30, grid(20, 30), 1e30)
  D.check_error("out of bounds", raises, 6, 8, 4, grid(6, 8), kjit.zeros({ 6, 8 }))
  D.check(raises, 6, 8, 7, grid(6, 8), kjit.zeros({ 6, 9 }))
end)

test("a kjit.prange body: the interpreter's arrays", function()
  for _, s in ipairs({ { 3, 0, 4 }, { 3, 4, 0 }, { 4, 5, 6 }, { 2, 255, 256 }, { 2, 256, 256 } }) do
    local a, b = grid(s[1], math.max(s[2], 1)), grid(math.max(s[2], 1), math.max(s[3], 1))
    D.check(pmat, s[1], s[2], s[3], a, b, kjit.zeros({ s[1], math.max(s[3], 1) }))
    D.check_opts({ parallel = true }, pmat, s[1], s[2], s[3], a, b,
                 kjit.zeros({ s[1], math.max(s[3], 1) }))
  end
end)

-- the blocks of the copy (named free...) in f's optimized IR, and whether
-- any of them calls the poll or branches to a poll block
local function copy_blocks(f)
  local ir = f:inspect("llvm")
  local n, polls, cur = 0, 0, nil
  for line in ir:gmatch("[^\n]+") do
    local lab = line:match("^([%w%._]+):")
    if lab then
      cur = lab:match("^free%d*[%.]") or lab:match("^free%d*$")
      if cur then n = n + 1 end
    elseif cur and (line:find("kjit_rt_poll", 1, true) or line:find("label %%poll")) then
      polls = polls + 1
    end
  end
  return n, polls, ir
end

test("the form: the copy's blocks poll nowhere (the optimized IR)", function()
  local K = dofile("bench/kernels.lua")
  local function form(fn, ...)
    local f = kjit.jit(fn)
    f(...)
    return copy_blocks(f)
  end
  for _, c in ipairs({
    { "rows", rows, 1, 3, 1, 4, grid(3, 4), kjit.zeros({ 3, 4 }) },
    { "tri1", tri1, 1, 3, 1, 3, grid(1, 3)[1], kjit.zeros(3) },
    { "trim2", trim2, 1, 3, 1, 3, grid(1, 3)[1], kjit.zeros(3) },
    { "tri_down", tri_down, 2, 3, grid(1, 3)[1], kjit.zeros(3) },
    { "jacobi", K.jacobi, 6, 2, grid(6, 6), grid(6, 6) },
    { "steps", steps, 1, 2, 1, 3, grid(1, 3)[1], kjit.zeros(3) },
    { "nbody", K.nbody, 3, 2, 0.01, kjit.full(3, 1.0), kjit.full(3, 2.0), kjit.full(3, 3.0),
      kjit.zeros(3), kjit.zeros(3), kjit.zeros(3), kjit.full(3, 1.0) },
  }) do
    -- (a deep nest's copy charges at its header only: one poll branch)
    local n, polls, ir = form(table.unpack(c, 2))
    local most = (c[1] == "steps" or c[1] == "nbody") and 1 or 0
    truthy(n >= 2 and polls <= most, c[1] .. ": " .. n .. " blocks of the copy, " .. polls .. " polls:\n" .. ir)
  end
  -- a bound that changes inside the nest: no copy
  local n = form(growing, 3, 2, grid(1, 8)[1])
  truthy(n == 0, "growing: no copy (" .. n .. " blocks)")
end)

test("polls: a raising hook stops an endless nest of each shape", function()
  -- nests that fit a period, run again and again (each entry charged
  -- whole: the copy), and nests too long for it (the code with polls)
  local function forever_rows(m, A)
    while true do
      for i = 1, 10 do
        for j = 1, m do A[j] = A[j] + i end
      end
    end
  end
  local function forever_tri(n, v)
    while true do
      for i = 1, n do
        for j = i + 1, n do v[j] = v[j] + 1.0; v[i] = v[i] - 1.0 end
      end
    end
  end
  local function endless_rows(m, A)
    for i = 1, math.maxinteger do
      for j = 1, m do A[j] = A[j] + i end
    end
  end
  local function endless_tri(n, v)
    for i = 1, math.maxinteger do
      for j = i, i + n do v[1] = v[1] + 1.0 end
    end
  end
  local function endless_steps(n, v)
    for s = 1, math.maxinteger do
      for i = 1, n do
        for j = i + 1, n do v[j] = v[j] + 1.0; v[i] = v[i] - 1.0 end
      end
      for k = 1, n do v[k] = v[k] * 0.5 end
    end
  end
  local function endless_inner(A)
    for i = 1, 2 do
      for j = 1, math.maxinteger do A[1] = A[1] + j end
    end
  end
  local function forever_prange(m, A)
    for i in kjit.prange(1, 2) do
      while true do
        for k = 1, 3 do
          for j = 1, m do A[i][j] = A[i][j] + k end
        end
      end
    end
  end
  for _, c in ipairs({ { forever_rows, 0, kjit.full(4, 1.0) }, { forever_rows, 3, kjit.full(4, 1.0) },
                       { forever_tri, 4, kjit.full(4, 1.0) }, { endless_steps, 4, kjit.full(4, 1.0) }, { endless_rows, 3, kjit.full(4, 1.0) },
                       { endless_tri, 3, kjit.full(4, 1.0) }, { endless_inner, kjit.full(4, 1.0) },
                       { forever_prange, 3, kjit.zeros({ 2, 3 }) } }) do
    local e = kjit.jit(c[1])
    local ticks = 0
    debug.sethook(function()
      ticks = ticks + 1
      if ticks == 3 then debug.sethook(); error("nest stopped", 0) end
    end, "", HUGE)
    local ok, msg = pcall(e, c[2], c[3])
    debug.sethook()
    truthy(not ok and msg == "nest stopped", "stopped: " .. tostring(msg))
  end
end)
