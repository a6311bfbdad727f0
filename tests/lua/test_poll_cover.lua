-- test_poll_cover.lua: a loop whose inner loops run in chunks, with
-- bounds it can compute before it starts (an integer for loop that stores
-- nothing, its operands invariant in it; a counted while loop), is
-- strip-mined itself and charges for their first chunks, once for a chunk
-- of its own iterations (src/codegen/cg_pollcover.c): the inner loops'
-- entries charge nothing (Mandelbrot's pixel loop: 1.023 -> 1.01 of polls
-- off in instructions). Compared with the interpreter (difftest): inner
-- loops that run no iteration, cross their own chunk ends (65535-65537,
-- 131073 iterations), outer loops across their chunk ends (chunks of
-- 65536 / W rows), bounds near math.maxinteger, negative steps, float
-- loops, an early return, errors raised in the middle (the arrays as the
-- interpreter leaves them), counted escape loops of 0 to 3000 iterations.
-- Plus the form (the chunk length 65536 / W in the IR of such a nest, not
-- in one whose inner bounds follow the row) and the polls: as often as
-- before in a long nest, and a raising hook stops an endless one.
local D = require "difftest"
local kjit = D.kjit
local HUGE = 1 << 30   -- a hook count the interpreted parts never reach

local grid = require("stencil_kernels").grid

-- sums of rows of m (an inner loop with invariant bounds that stores
-- nothing), from lo to hi by step
local function rowsums(lo, hi, step, m, A, out)
  local s = 0
  for i = lo, hi, step do
    local r = (i % 3) + 1
    local t = 0.0
    for j = 1, m do t = t + A[r][j] * i end
    out[r] = out[r] + t
    s = s + i
  end
  return s
end

-- the same rows, stored (an inner loop that stores is not charged by the
-- row loop: cg_pollcover.c)
local function rows(lo, hi, step, m, A, B)
  local s = 0
  for i = lo, hi, step do
    local r = (i % 3) + 1
    for j = 1, m do B[r][j] = A[r][j] * 2.0 + i end
    s = s + i
  end
  return s
end

-- two inner loops (both charged by the row loop), one of negative step
local function two(n, m, k, A, B)
  local t = 0.0
  for i = 1, n do
    local u = 0.0
    for j = m, 1, -2 do u = u + A[i][j] * j end
    for j = 1, k do t = t + A[i][j] * i end
    B[i][1] = u
  end
  return t
end

-- a float outer loop (not strip-mined) around an integer inner loop
local function floats(x0, x1, dx, m, A)
  local s = 0.0
  for x = x0, x1, dx do
    for j = 1, m do A[j] = A[j] + x end
    s = s + x
  end
  return s
end

-- the row loop left from inside the inner loop
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

-- an error in the middle: row `bad` reads past the end of its array
local function raises(n, m, bad, A, B)
  for i = 1, n do
    local w, t = m, 0.0
    if i == bad then w = m + 1 end
    for j = 1, m do t = t + A[i][j] + i end
    B[i][1] = A[i][w] + t
  end
end

-- bench/kernels.lua's Mandelbrot: escape loops (counted while loops) in a
-- pixel loop
local function mandel(w, h, maxiter, img)
  local scale = 3.0 / w
  for y = 1, h do
    local ci = (y - 1) * scale - 1.0
    for x = 1, w do
      local cr = (x - 1) * scale - 2.0
      local zr, zi, n = 0.0, 0.0, 0
      while n < maxiter and zr * zr + zi * zi <= 4.0 do
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n = n + 1
      end
      img[y][x] = n
    end
  end
end

-- an escape loop whose counter starts at the pixel's index (its charge
-- then the most a chunk can: the counter is not invariant in the loop)
local function escape_from(w, maxiter, out)
  for x = 1, w do
    local zr, n = 0.0, x
    while n < maxiter and zr <= 4.0 do
      zr = zr * zr + 0.25
      n = n + 1
    end
    out[x] = n
  end
end

test("rows with invariant inner bounds: the interpreter's results and arrays", function()
  local big = math.maxinteger
  for _, m in ipairs({ 0, 1, 3, 17 }) do
    D.check(rowsums, 1, 10, 1, m, grid(3, 17), kjit.zeros(3))
    D.check(rowsums, 10, 1, -3, m, grid(3, 17), kjit.zeros(3))
    D.check(rowsums, 5, 4, 1, m, grid(3, 17), kjit.zeros(3))   -- no row
    D.check(rowsums, big - 6, big, 2, m, grid(3, 17), kjit.zeros(3))   -- at the top
    D.check(rowsums, math.mininteger + 3, math.mininteger, -1, m, grid(3, 17), kjit.zeros(3))
    D.check(rows, 1, 10, 1, m, grid(3, 17), kjit.zeros({ 3, 17 }))
    D.check(rows, 10, 1, -3, m, grid(3, 17), kjit.zeros({ 3, 17 }))
    D.check(rows, 5, 4, 1, m, grid(3, 17), kjit.zeros({ 3, 17 }))   -- no row
    D.check(rows, big - 6, big, 2, m, grid(3, 17), kjit.zeros({ 3, 17 }))   -- at the top
    D.check(rows, math.mininteger + 3, math.mininteger, -1, m, grid(3, 17), kjit.zeros({ 3, 17 }))
  end
  -- rows that cross the row loop's chunk ends: chunks of 65536 / (m + 1) rows
  D.check(rowsums, 1, 3000, 1, 40, grid(3, 40), kjit.zeros(3))
  D.check(rowsums, 1, 70000, 1, 0, grid(3, 1), kjit.zeros(3))   -- W = 1: chunks of 65536
  D.check(rows, 1, 3000, 1, 40, grid(3, 40), kjit.zeros({ 3, 40 }))
  -- inner loops across their own chunk ends (later chunks charge at their latch)
  for _, m in ipairs({ 65535, 65536, 65537, 131073 }) do
    D.check(rowsums, 1, 3, 1, m, grid(3, m), kjit.zeros(3))
    D.check(rowsums, 1, 7, 3, m, grid(3, m), kjit.zeros(3))
  end
end)

test("two inner loops, negative steps, float loops: the interpreter's", function()
  for _, c in ipairs({ { 4, 9, 5 }, { 4, 0, 5 }, { 4, 9, 0 }, { 0, 9, 5 }, { 700, 100, 100 } }) do
    D.check(two, c[1], c[2], c[3], grid(math.max(c[1], 1), 100), kjit.zeros({ math.max(c[1], 1), 100 }))
  end
  D.check(two, 2, 65537, 65537, grid(2, 65537), kjit.zeros({ 2, 65537 }))
  D.check(floats, 0.5, 3.0, 0.5, 10, grid(1, 10)[1])
  D.check(floats, 3.0, 0.5, -0.25, 7, grid(1, 10)[1])
  D.check(floats, 0.0, 1.0, 0.5, 0, grid(1, 10)[1])
end)

test("an early return and an error in the middle: the interpreter's", function()
  D.check(early, 50, 30, grid(50, 30), 40.0)
  D.check(early, 50, 30, grid(50, 30), 1e30)
  D.check(early, 50, 0, grid(50, 30), 1.0)
  D.check_error("index", raises, 6, 8, 4, grid(6, 8), kjit.zeros({ 6, 8 }))
  D.check(raises, 6, 8, 7, grid(6, 8), kjit.zeros({ 6, 8 }))
end)

test("escape loops in a pixel loop: the interpreter's image", function()
  for _, it in ipairs({ 0, 1, 2, 64, 1023, 1024, 1025, 3000 }) do
    D.check(mandel, 12, 8, it, kjit.zeros({ 8, 12 }, "i32"))
  end
  D.check(mandel, 0, 8, 64, kjit.zeros({ 8, 12 }, "i32"))
  for _, it in ipairs({ 0, 5, 1030, 2100 }) do D.check(escape_from, 40, it, kjit.zeros(40, "i64")) end
end)

local function polls(f, ...)
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  f(...)
  debug.sethook()
  return calls
end

test("the form: the row loop's chunk is 65536 / W (the IR)", function()
  local f = kjit.jit(mandel)
  f(12, 8, 64, kjit.zeros({ 8, 12 }, "i32"))
  local ir = f:inspect("llvm")
  truthy(ir:find("udiv i%d+ 65536,"), "the pixel loop's chunk, 65536 / W:\n" .. ir)
  local g = kjit.jit(rowsums)
  g(1, 3, 1, 4, grid(3, 4), kjit.zeros(3))
  truthy(g:inspect("llvm"):find("udiv i%d+ 65536,"), "the row loop's chunk")
  -- an inner loop that stores: not so
  local r = kjit.jit(rows)
  r(1, 3, 1, 4, grid(3, 4), kjit.zeros({ 3, 4 }))
  truthy(not r:inspect("llvm"):find("udiv i%d+ 65536,"), "no chunk of rows that store")
  -- a triangular inner loop (its bounds follow the row): not so
  local h = kjit.jit(function(n, A)
    local s = 0.0
    for i = 1, n do for j = i, n do s = s + A[j] end end
    return s
  end)
  h(3, kjit.full(3, 1.0))
  truthy(not h:inspect("llvm"):find("udiv i%d+ 65536,"), "no chunk of rows in a triangle")
end)

test("polls: as often as before in a long nest, and a raising hook stops an endless one", function()
  -- 2^22 rows of 3: W = 4 (the row, and 3 for the inner loop's chunk),
  -- chunks of 16384 rows charged 65536: a poll every other chunk (the
  -- countdown polls below zero, as a strip-mined loop's 65536-iteration
  -- chunks do), 2^22 / 32768 = 128
  local f = kjit.jit(rowsums)
  local A, B = grid(3, 3), kjit.zeros(3)
  f(1, 2, 1, 3, A, B)
  local n = polls(f, 1, 1 << 22, 1, 3, A, B)
  truthy(n >= 120 and n <= 136, "polls of 2^22 rows of 3: " .. n)
  -- Mandelbrot 400 x 300, 64 iterations: W = 66 (the pixel, 65 for the
  -- escape loop's chunk), each row a chunk of 400 pixels charged 26400:
  -- the countdown (65536 after a poll) runs out at every third row, 100
  -- polls (charged at each pixel before: 118)
  local g = kjit.jit(mandel)
  g(4, 3, 64, kjit.zeros({ 3, 4 }, "i32"))
  n = polls(g, 400, 300, 64, kjit.zeros({ 300, 400 }, "i32"))
  truthy(n >= 95 and n <= 105, "polls of 120000 pixels: " .. n)
  -- endless row loops, stopped by a hook that raises
  local function endless(m, A)
    local s = 0.0
    for i = 1, math.maxinteger do
      for j = 1, m do s = s + A[j] end
    end
    return s
  end
  local function endless_store(m, A)
    for i = 1, math.maxinteger do
      for j = 1, m do A[j] = A[j] + i end
    end
  end
  local function endless_escape(w, maxiter)
    local s = 0
    for x = 1, math.maxinteger do
      local zr, k = 0.0, 0
      while k < maxiter and zr <= 4.0 do zr = zr * zr + 0.25; k = k + 1 end
      s = s + k + w
    end
    return s
  end
  for _, c in ipairs({ { endless, 0, kjit.full(4, 1.0) }, { endless, 3, kjit.full(4, 1.0) },
                       { endless_store, 3, kjit.full(4, 1.0) },
                       { endless_escape, 1, 0 }, { endless_escape, 1, 5 },
                       { endless_escape, 1, math.maxinteger } }) do
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
