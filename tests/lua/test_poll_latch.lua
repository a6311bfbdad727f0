-- test_poll_latch.lua: a counted while loop (src/codegen/cg_countloop.c,
-- Mandelbrot's escape loop) leaves at each chunk's end with its values,
-- so the latch's new `zr` is also used outside the latch, and the machine
-- scheduler no longer placed it below the old `zr`'s last read (`2.0 *
-- zr`): the register allocator then copied one register into the other at
-- every iteration (a `vmovapd`, 14 instructions an iteration against 13
-- with polls off). src/backend/latch_order.c moves such values down after
-- the optimizer. Compared with the interpreter (difftest): escapes on the
-- first iteration, loops that never start, runs across chunk ends (1024
-- values of the counter), a bound near math.maxinteger, integer and float
-- recurrences, the second condition raising; plus the form (no register
-- copy in the escape loop) and the poll rate of a long escape loop.
local D = require "difftest"
local kjit = D.kjit
local HUGE = 1 << 30   -- a hook count the interpreted parts never reach

local escape = require("stencil_kernels").escape

-- the second condition reads lim: nil raises, but only when the first holds
local function escape_lim(cr, ci, maxiter, lim)
  local zr, zi, n = 0.0, 0.0, 0
  while n < maxiter and zr * zr + zi * zi <= lim do
    zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
    n = n + 1
  end
  return n, zr, zi
end

-- integers: the new x is made before the old x's last read
local function mix(a, b, m)
  local x, y, k = a, b, 0
  while k < m and x ~= 7 do
    x, y = x * 3 + y - (x >> 4), x * 2 - y
    k = k + 1
  end
  return k, x, y
end

-- bench/kernels.lua's Mandelbrot: the escape loop in a nest, into an array
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

test("escape loops with moved latch values: the interpreter's results", function()
  -- (0, 0), (-1, 0) and (0.3, 0.5) never escape; (3, 0) escapes at
  -- once, (-0.75, 0.1) after 33 iterations, (0.250001, 0) after 3140
  -- (across three chunk ends)
  local inside = { [0.0] = true, [-1.0] = true, [0.3] = true }
  for _, c in ipairs({ { 0.0, 0.0 }, { -1.0, 0.0 }, { 0.3, 0.5 }, { 3.0, 0.0 }, { -0.75, 0.1 },
                       { 0.250001, 0.0 } }) do
    for _, m in ipairs({ -5, 0, 1, 2, 1023, 1024, 1025, 2048, 2049, 5000, math.maxinteger }) do
      if m < 10000 or not inside[c[1]] then
        D.check(escape, c[1], c[2], m)
        D.check(escape_lim, c[1], c[2], m, 4.0)
      end
    end
  end
  for _, m in ipairs({ 0, 1, 1024, 1025, 3000 }) do
    D.check(mix, 1, 2, m)
    D.check(mix, -123456789, 987654321, m)
    D.check(mix, 7, 0, m)   -- leaves at once
  end
  D.check(mix, math.maxinteger, math.mininteger, 3000)   -- wrapping arithmetic
end)

test("escape loops: the second condition's error only when it runs", function()
  D.check_error("attempt to compare", escape_lim, 0.0, 0.0, 5, nil)
  D.check(escape_lim, 0.0, 0.0, 0, nil)   -- n < 0 fails first: no compare
end)

test("Mandelbrot's nest: the interpreter's image", function()
  for _, it in ipairs({ 0, 1, 64, 1100 }) do
    D.check(mandel, 12, 8, it, kjit.zeros({ 8, 12 }, "i32"))
  end
end)

test("the escape loop copies no register (the asm)", function()
  local f = kjit.jit(mandel)
  f(12, 8, 64, kjit.zeros({ 8, 12 }, "i32"))
  local asm = f:inspect("asm")
  local lines, seen = {}, 0
  for l in asm:gmatch("[^\n]+") do lines[#lines + 1] = l end
  for i, l in ipairs(lines) do
    if l:find("ucomisd", 1, true) then   -- the escape test, then the iteration
      seen = seen + 1
      for j = i, math.min(i + 12, #lines) do
        truthy(not lines[j]:find("movapd%s+%%xmm%d+,%s*%%xmm%d+"),
               "no register copy after the escape test:\n" .. table.concat(lines, "\n", i, math.min(i + 12, #lines)))
      end
    end
  end
  truthy(seen > 0, "the escape test in the asm:\n" .. asm)
end)

test("a long escape loop polls at the usual rate, and a raising hook stops it", function()
  local f = kjit.jit(escape)
  f(0.0, 0.0, 10)
  local calls = 0
  debug.sethook(function() calls = calls + 1 end, "", HUGE)
  local n = f(0.0, 0.0, 1 << 22)
  debug.sethook()
  eq(n, 1 << 22, "iterations")
  -- chunks of 1024 charged whole, one poll per 65536 iterations
  truthy(calls >= 60 and calls <= 70, "one poll per 65536 iterations: " .. calls)
  debug.sethook(function() debug.sethook(); error("escape stopped", 0) end, "", HUGE)
  local ok, e = pcall(f, 0.0, 0.0, math.maxinteger)
  debug.sethook()
  truthy(not ok and e == "escape stopped", "stopped: " .. tostring(e))
end)
