-- test_poll_rows.lua: strip-mined inner loops of nests that store to an
-- array element read the row's integers (the index of the loop around and
-- what it computes) through a copy made at each chunk's head
-- (src/codegen/cg_func.c, chunk_locals), so that LLVM computes the row's
-- addresses and its vector loop's alias tests there, under the chunk loop,
-- not above it where they stayed live across it (bench jacobi: 1.14 ->
-- 1.10 of polls off in instructions). Compared with the interpreter
-- (difftest): rows that cross chunk ends, the copies' values used after
-- the inner loop and in its bounds errors, a nest inside a nest, a
-- kjit.prange body. Plus the
-- form: the copy in the chunk head with the row's multiplications after
-- it, and none in a nest that only reads.
local D = require "difftest"
local kjit = D.kjit

local K = require "stencil_kernels"   -- (shared with test_interrupt_hooks.lua)
local grid = K.grid

-- the row's integers in every role: an index, arithmetic, a key, a value
-- carried out of the inner loop and returned
local function rows(n, m, A, B, off)
  local last, lastk = 0, 0
  for i = 1, n do
    local k = i * 3 - 1
    for j = 1, m - off do
      B[i][j + off] = A[i][j] + k * 0.5 + i
      last = k + j
      lastk = k
    end
  end
  return last, lastk
end

-- a stencil inside a sweep loop, its rows reversed, a step of 2
local function sweeps(s, n, m, A, B)
  for t = 1, s do
    for i = n - 1, 2, -1 do
      local w = t + i
      for j = 2, m - 1, 2 do
        B[i][j] = 0.25 * (A[i - 1][j] + A[i + 1][j] + A[i][j - 1] + A[i][j + 1]) + w
      end
    end
    A, B = B, A
  end
  return A[2][2]
end

test("rows of a nest through chunk-local copies: the interpreter's results and arrays", function()
  for _, m in ipairs({ 1, 2, 3, 40, 65538 }) do   -- (65538: a second chunk)
    D.check(rows, 3, m, grid(3, m), kjit.zeros({ 3, m }, "f64"), 0)
    D.check(rows, 2, m, grid(2, m), kjit.zeros({ 2, m }, "f64"), 1)
  end
  for _, m in ipairs({ 3, 40, 131077 }) do   -- (131077: a step of 2, a second chunk)
    D.check(sweeps, 2, 4, m, grid(4, m), grid(4, m))
  end
end)

-- a kjit.prange body (run serially, and by the pool's workers, whose
-- chunk heads are their own: cg_prange.c)
local function prows(n, m, A, B)
  for i in kjit.prange(1, n) do
    local k = i * 2 + 1
    for j = 1, m do B[i][j] = A[i][j] * 0.5 + k - i end
  end
end

test("rows of a prange body through chunk-local copies: the interpreter's arrays", function()
  for _, m in ipairs({ 3, 40, 65538 }) do
    D.check(prows, 4, m, grid(4, m), kjit.zeros({ 4, m }, "f64"))
    D.check_opts({ parallel = true }, prows, 4, m, grid(4, m), kjit.zeros({ 4, m }, "f64"))
  end
end)

test("rows of a nest through chunk-local copies: bounds errors at the interpreter's line", function()
  -- B[i][j + off] past the row's end: the nest's checked copy raises
  D.check_error("out of bounds", rows, 2, 65540, grid(2, 65540), kjit.zeros({ 2, 65539 }, "f64"), 0)
  D.check_error("out of bounds", rows, 3, 40, grid(3, 40), kjit.zeros({ 2, 40 }, "f64"), 0)
end)

-- the form, at the full tier (the first tier's optnone code runs no passes)
local stencil = K.stencil
local function rowsums(n, m, A, s)
  for i = 1, n do
    local acc = 0.0
    for j = 1, m do acc = acc + A[i][j] end
    s[i] = acc
  end
end

test("rows of a nest through chunk-local copies: the copy at the chunk's head (the IR)", function()
  local f = kjit.jit(stencil, { tiered = false })
  f(4, 40, grid(4, 40), kjit.zeros({ 4, 40 }, "f64"))
  local ir = f:inspect("llvm")
  -- the row index through an empty asm that also reads the chunk's length
  local copy = ir:match('\n%s*(%%[%w._]+) = [%w ]*call i64 asm "", "=r,0,r"%(i64 %%i[%w._]*, i64')
  truthy(copy, "the row index copied at the chunk's head:\n" .. ir)
  -- the row's addresses are computed from the copy, after it, in the chunk
  local at = ir:find('asm "", "=r,0,r"', 1, true)
  local check = ir:find("\nvector.memcheck:", at, true)
  truthy(check, "the vector loop's alias tests after the copy:\n" .. ir)
  local between = ir:sub(at, check)
  truthy(between:find("mul i64 [^\n]*" .. copy:gsub("%p", "%%%0")) or
         between:find("add i64 " .. copy:gsub("%p", "%%%0") .. ",", 1),
         "the row's addresses from the copy, before the alias tests:\n" .. between)
  local g = kjit.jit(rowsums, { tiered = false })
  g(3, 40, grid(3, 40), kjit.zeros(3, "f64"))
  local gir = g:inspect("llvm")
  truthy(not gir:find('"=r,0,r"', 1, true), "no copy in a nest that only reads:\n" .. gir)
end)
