-- test_prange_hoist_serial.lua: bounds checks hoisted out of kjit.prange
-- loops compiled without parallel = true (serial: one test before a loop
-- without inner loops, over its whole range, src/codegen/cg_version.c's
-- nests; with inner loops, those are versioned at each entry), out of a prange
-- loop nested in a parallel body, and out of triangular inner loops of
-- prange bodies (`for j = 1, i`: the inner loop's range over all of i,
-- src/ir/ir_facts.c's nest_loop). Compared with the interpreter
-- (difftest): results, arrays, and the out-of-bounds error with its
-- file:line at the first, the last and a middle iteration, negative
-- steps, empty loops, break, wrapping bounds, on one thread and on every
-- thread of the pool. Plus IR facts: the fast copy holds no check.
local D = require "difftest"
local kjit = D.kjit
local S, P = {}, { parallel = true }
local H = require "hoist_harness"
local ramp, mat, on_threads = H.ramp, H.mat, H.on_threads
local K = H.kernels
local dot, shifted, guarded, saxpy, matmul, stencil = K.dot, K.shifted, K.guarded, K.saxpy, K.matmul, K.stencil
local function oob(opts, fn, ...) H.oob(opts, nil, fn, ...) end

---------------------------------------------------------------------------
-- serial prange loops (and dot, shifted, guarded, saxpy, matmul, stencil
-- from hoist_harness)
---------------------------------------------------------------------------

local function dot1(x, y, a, b)   -- no step: 1
  local s = 0.0
  for i in kjit.prange(a, b) do s = s + x[i] * y[i] end
  return s
end

local function find_first(x, lim, n)   -- break: the test may fail where the loop never gets
  local r = -1
  for i in kjit.prange(1, n) do
    if x[i] > lim then r = i break end
  end
  return r
end

-- a value of the loop used after it (a spill both copies write)
local function last_seen(x, n)
  local s, last = 0.0, 0
  for i in kjit.prange(1, n) do s = s + x[i] end
  for j = 1, 2 do last = last + j end
  return s, last
end

test("serial prange hoist: reductions, steps, empty loops, errors", function()
  local x, y = ramp(50), ramp(50)
  D.check_opts(S, dot, x, y, 1, 50, 1)
  D.check_opts(S, dot, x, y, 7, 31, 3)
  D.check_opts(S, dot, x, y, 50, 1, -1)
  D.check_opts(S, dot, x, y, 49, 2, -5)
  D.check_opts(S, dot, x, y, 5, 4, 1)
  D.check_opts(S, dot, x, y, 4, 5, -1)
  D.check_opts(S, dot, x, y, 1, 51, 3)
  D.check_opts(S, dot1, x, y, 1, 50)
  D.check_opts(S, dot1, x, y, 9, 3)
  oob(S, dot, x, y, 0, 50, 1)                        -- the first iteration
  oob(S, dot, x, y, 1, 51, 1)                        -- the last
  oob(S, dot, x, ramp(49), 1, 50, 1)
  oob(S, dot, x, y, 51, 1, -1)
  oob(S, dot, x, y, 50, 0, -1)
  oob(S, dot, x, y, 1, 52, 3)
  oob(S, dot, x, y, math.mininteger, 3, 1)
  oob(S, dot1, x, y, 1, 51)
  oob(S, dot1, x, y, -2, 1)
  local x40, z40 = ramp(40), ramp(40)
  D.check_opts(S, shifted, x40, z40, 1, 34, 5, 34)      -- both ends exactly
  oob(S, shifted, x40, z40, 1, 35, 5, 35)               -- x[41] at the last
  oob(S, shifted, x40, z40, 0, 30, 5, 40)               -- z[41] at the first
  oob(S, shifted, x40, z40, 1, 30, math.maxinteger, 35) -- the key wraps
  D.check_opts(S, shifted, x40, z40, 1, 30, math.maxinteger - 34, 35)
  local big = ramp(3000)
  for _, k in ipairs({ 1, 2, 1500, 2999, 3000 }) do oob(S, guarded, big, 3000, k) end
  D.check_opts(S, guarded, big, 3000, 3001)
  D.check_opts(S, find_first, x, 10, 60)             -- leaves at 11, before x's end
  oob(S, find_first, x, 100, 60)                     -- reaches 51
  D.check_opts(S, last_seen, x, 50)
  oob(S, last_seen, x, 51)
end)

test("serial prange hoist: writing bodies, inner loops, several poll chunks", function()
  local a, b = mat(7, 5, function(i, j) return i + 2 * j end), mat(5, 6, function(i, j) return i * j - 3 end)
  D.check_opts(S, matmul, a, b, kjit.zeros({ 7, 6 }))
  D.check_opts(S, matmul, a, mat(5, 0, function() return 0 end), kjit.zeros({ 7, 0 }))
  oob(S, matmul, a, b, kjit.zeros({ 7, 5 }))
  oob(S, matmul, a, b, kjit.zeros({ 6, 6 }))
  local x = mat(6, 7, function(i, j) return i * 10 + j * j end)
  D.check_opts(S, stencil, kjit.zeros({ 6, 7 }), x, 6, 2, 6)
  D.check_opts(S, stencil, kjit.zeros({ 6, 7 }), x, 6, 3, 2)
  oob(S, stencil, kjit.zeros({ 6, 7 }), x, 6, 1, 6)
  oob(S, stencil, kjit.zeros({ 6, 7 }), x, 7, 2, 6)
  local n = 140000                                   -- three poll chunks
  D.check_opts(S, saxpy, 2.0, ramp(n), ramp(n), kjit.zeros(n), 1, n)
  D.check_opts(S, saxpy, 2.0, ramp(n), ramp(n), kjit.zeros(n), 3, n - 2)
  oob(S, saxpy, 2.0, ramp(n), ramp(n), kjit.zeros(n), 1, n + 1)   -- in the last chunk
  oob(S, saxpy, 2.0, ramp(20), ramp(19), kjit.zeros(20), 1, 20)
  oob(S, saxpy, 2.0, ramp(20), ramp(20), kjit.zeros(20), 0, 20)
end)

---------------------------------------------------------------------------
-- a prange loop nested in a parallel body; triangular inner loops
---------------------------------------------------------------------------
local function nested(a, out, c0, c1)
  for i in kjit.prange(1, a.shape[1]) do
    local s = 0.0
    for j in kjit.prange(c0, c1) do s = s + a[i][j] end
    out[i] = s
  end
end

local function tri(x, out, n, k)          -- for j = 1, i + k
  for i in kjit.prange(1, n) do
    local s = 0.0
    for j = 1, i + k do s = s + x[j] end
    out[i] = s
  end
end

local function tri_upper(a, out, n, k)    -- for j = i + k, m and k - i downwards
  local m = a.shape[2]
  for i in kjit.prange(1, n) do
    local s, row = 0.0, a[i]
    for j = i + k, m do s = s + row[j] end
    for j = k - i, 1, -1 do s = s - row[j] end
    out[i] = s
  end
end

local function tri_down(x, n)             -- for j = i, 1, -1 (init i, stepping down)
  local s = 0
  for i in kjit.prange(1, n, 2) do
    for j = i, 1, -1 do s = s + x[j] * i end
  end
  return s
end

local function tri_rev(x, n, lo, m)     -- for j = m, i, -1 (the limit follows i)
  local s = 0.0
  for i in kjit.prange(n, lo, -1) do
    for j = m, i, -1 do s = s + x[j] * i end
  end
  return s
end

local function tri_mixed(x, n)            -- x[i - j + 1]: two variables, stays checked
  local s = 0.0
  for i in kjit.prange(1, n) do
    s = s + x[i]
    for j = 1, i do s = s + x[i - j + 1] * j end
  end
  return s
end

local function lower_sum(a, n)            -- break out of the triangular loop
  local s = 0.0
  for i in kjit.prange(1, n) do
    for j = 1, i do
      if a[i][j] < 0 then break end
      s = s + a[i][j]
    end
  end
  return s
end

local function both(f)
  on_threads(1, function() f(P) end)
  on_threads(kjit.get_num_threads(), function() f(P) end)
  f(S)
end

test("prange hoist: a prange loop nested in a parallel body", function()
  both(function(o)
    local a = mat(9, 6, function(i, j) return i * j - 5 end)
    D.check_opts(o, nested, a, kjit.zeros(9), 1, 6)
    D.check_opts(o, nested, a, kjit.zeros(9), 4, 3)    -- empty
    oob(o, nested, a, kjit.zeros(9), 1, 7)            -- the last column
    oob(o, nested, a, kjit.zeros(9), 0, 6)            -- the first
    oob(o, nested, a, kjit.zeros(8), 1, 6)            -- out's last row
  end)
end)

test("prange hoist: triangular inner loops", function()
  both(function(o)
    local x = ramp(40)
    D.check_opts(o, tri, x, kjit.zeros(40), 40, 0)
    D.check_opts(o, tri, x, kjit.zeros(40), 30, 10)   -- j up to exactly 40
    D.check_opts(o, tri, x, kjit.zeros(40), 30, -40)  -- the inner loop never runs
    oob(o, tri, x, kjit.zeros(40), 30, 11)            -- the last i reaches x[41]
    oob(o, tri, x, kjit.zeros(40), 41, 0)             -- out[41], x[41] at the last i
    D.check_opts(o, tri, x, kjit.zeros(40), 30, math.maxinteger)   -- i + k wraps: empty
    oob(o, tri, x, kjit.zeros(40), 30, math.maxinteger - 10)  -- wraps from i = 11 on
    local a = mat(8, 10, function(i, j) return i - j * 2 end)
    D.check_opts(o, tri_upper, a, kjit.zeros(8), 8, 1)
    D.check_opts(o, tri_upper, a, kjit.zeros(8), 8, 2)
    oob(o, tri_upper, a, kjit.zeros(8), 8, -1)        -- row[0] at the first i
    oob(o, tri_upper, a, kjit.zeros(8), 8, 20)        -- k - i = 19 > 10 at the first i
    D.check_opts(o, tri_upper, a, kjit.zeros(8), 8, 10)
    oob(o, tri_upper, a, kjit.zeros(8), 8, 12)        -- row[11]: k - i at the first i
    D.check_opts(o, tri_down, ramp(30, "i64"), 30)
    oob(o, tri_down, ramp(30, "i64"), 31)             -- i = 31, x[31]
    D.check_opts(o, tri_rev, x, 40, 1, 40)
    D.check_opts(o, tri_rev, x, 40, 1, 0)             -- never runs
    oob(o, tri_rev, x, 40, 1, 41)                     -- x[41] at the first i
    oob(o, tri_rev, x, 40, 0, 40)                     -- j down to i = 0 at the last i
    D.check_opts(o, tri_mixed, x, 40)
    oob(o, tri_mixed, x, 41)
    local m = mat(7, 7, function(i, j) return (i * 3 + j) % 5 - 1 end)
    D.check_opts(o, lower_sum, m, 7)
    D.check_opts(o, lower_sum, mat(8, 7, function() return -1 end), 8)   -- j = 1 breaks each row
    oob(o, lower_sum, mat(8, 7, function() return 1 end), 8)            -- row 8 reaches column 8
  end)
end)

---------------------------------------------------------------------------
-- IR facts
---------------------------------------------------------------------------

-- A worker's (or function's) text in the module.
local function func_ir(ir, pat)
  return ir:match("(\ndefine [^\n]*@" .. pat .. "%(.-\n}\n)")
end

-- The unoptimized IR (opt = 0) of a serial function: each bounds check
-- ends its block in a branch to `ok` (go on) or `fail`, so a chain of
-- ok/fail blocks (and poll/polled blocks) starts in the block holding the first check; that
-- block is one of the fast copy's (named b<id>, the IR's block) or of the
-- checked copy's (nchecked<k>). Returns the number of checks in each.
local function serial_checks(fir)
  local preds = {}
  for label, rest in fir:gmatch("\n([%w._]+):([^\n]*)") do
    preds[label] = rest:match("preds = %%([%w._]+)")
  end
  local fast, checked = 0, 0
  for label in pairs(preds) do
    if label:match("^ok%d*$") then
      local at, guard = preds[label], 0
      while at and (at:match("^ok%d*$") or at:match("^poll%a*%d*$")) and guard < 10000 do
        at, guard = preds[at], guard + 1   -- (a poll at a header: its block's too)
      end
      if at and at:match("^b%d+$") then fast = fast + 1
      elseif at and at:match("^nchecked%d*$") then checked = checked + 1 end
    end
  end
  return fast, checked
end

local function has_checks(fir) return fir:find("\nok%d*:") ~= nil or fir:find("\nfail%d*:") ~= nil end

test("prange hoist: the fast copies hold no checks (IR facts)", function()
  if not D.jit_available() then return end
  local function isaxpy(x, y, out)
    for i in kjit.prange(1, #x) do out[i] = 3 * x[i] + y[i] end
  end
  -- (a serial loop with inner loops is left to them: each is versioned
  -- at its entry, cg_version.c's nest_candidate)
  local serial = {
    { isaxpy, { ramp(8, "i64"), ramp(8, "i64"), kjit.zeros(8, "i64") } },
    { dot1, { ramp(8), ramp(8), 1, 8 } },
    { shifted, { ramp(8), ramp(8), 1, 4, 1, 6 } },
    { saxpy, { 2.0, ramp(8), ramp(8), kjit.zeros(8), 1, 8 } },
  }
  for n, c in ipairs(serial) do
    local f = kjit.jit(c[1], { opt = 0 })
    f(table.unpack(c[2]))
    local fir = func_ir(f:inspect("llvm"), "kjit_f%d+_s%d+_[%w_]*")
    truthy(fir, "serial case " .. n .. ": the function")
    local fast, checked = serial_checks(fir)
    eq(fast, 0, "serial case " .. n .. ": no check in the fast copy:\n" .. fir)
    truthy(checked > 0, "serial case " .. n .. ": the checked copy checks:\n" .. fir)
  end
  -- parallel bodies: the fast worker (made second) holds no check
  local par = {
    { nested, { kjit.zeros({ 3, 3 }), kjit.zeros(3), 1, 3 } },
    { tri, { ramp(8), kjit.zeros(8), 8, 0 } },
    { tri_upper, { kjit.zeros({ 4, 6 }), kjit.zeros(4), 4, 1 } },
    { tri_down, { ramp(8, "i64"), 8 } },
    { tri_rev, { ramp(8), 8, 1, 8 } },
  }
  for n, c in ipairs(par) do
    local f = kjit.jit(c[1], P)
    f(table.unpack(c[2]))
    local ir = f:inspect("llvm")
    local fast, slow = func_ir(ir, "kcg_spec%d+_prange1"), func_ir(ir, "kcg_spec%d+_prange0")
    truthy(fast and slow, "parallel case " .. n .. ": both workers:\n" .. ir)
    truthy(not has_checks(fast), "parallel case " .. n .. ": no check in the fast worker:\n" .. fast)
    truthy(has_checks(slow), "parallel case " .. n .. ": the checked worker checks:\n" .. slow)
  end
  -- a key in i and j of a triangular loop stays checked in the fast worker
  local f = kjit.jit(tri_mixed, P)
  f(ramp(8), 8)
  truthy(has_checks(func_ir(f:inspect("llvm"), "kcg_spec%d+_prange1")), "x[i - j + 1] stays checked")
end)
