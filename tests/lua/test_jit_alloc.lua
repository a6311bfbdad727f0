-- Differential tests: arrays made and returned by compiled code (issue 24,
-- items 1 and 2). Constructors for every dtype and 1 to 4 dimensions,
-- returned arrays (compared by dtype, shape, elements and identity:
-- difftest.lua), views of arguments, callees, array methods, row
-- assignment, error paths, allocation failure injected, the scratch rule
-- (a loop's scratch array is freed when its site runs again), GC pressure
-- and kjit.prange bodies that allocate.
local D = require "difftest"
local kjit = D.kjit

local DTYPES = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64" }

local testing = package.loaded["kjit.testing"]   -- kjit's own test helpers (require "kjit" made it)

local function need()
  if not (kjit and kjit.jit and testing) then skip("needs kjit.jit with allocation") end
end

---------------------------------------------------------------------------
-- returned arrays
---------------------------------------------------------------------------

local function ret_same(a) return a end
local function ret_two(a, b) return b, a, a end
local function ret_pick(a, b, c) if c then return a end return b end
local function ret_slice(a, i, j) return a:slice(i, j) end
local function ret_slice_open(a, i) return a:slice(i) end
local function ret_row(m, i) return m[i] end
local function ret_reshape(a) return a:reshape({2, #a // 2}) end
local function ret_reshape_same(a) return a:reshape(#a) end
local function ret_fill(a, v) return a:fill(v) end
local function ret_with_values(a) return 1, a, 2.5, true end

test("an argument returned is the same array (f(a) == a)", function()
  need()
  local f = kjit.jit(ret_same)
  local a = kjit.zeros(3)
  assert(f(a) == a, "f(a) == a")
  local m = kjit.zeros({2, 3}, "i32")
  assert(f(m) == m, "2-D")
  D.check(ret_same, kjit.arange(5))
  D.check(ret_two, kjit.arange(5), kjit.zeros({2, 2}))
  D.check(ret_pick, kjit.arange(5), kjit.arange(4), true)
  D.check(ret_pick, kjit.arange(5), kjit.arange(4), false)
  D.check(ret_with_values, kjit.arange(3.0))
  local g = kjit.jit(ret_two)
  local x, y = kjit.zeros(2), kjit.zeros(2)
  local r1, r2, r3 = g(x, y)
  assert(r1 == y and r2 == x and r3 == x, "identity of several results")
  -- the same array passed twice
  local r4, r5 = g(x, x)
  assert(r4 == x and r5 == x, "an argument passed twice")
end)

test("views of arguments returned: slice, row, reshape, fill", function()
  need()
  for _, dt in ipairs(DTYPES) do
    D.check(ret_slice, kjit.arange(6, dt), 2, 4)
    D.check(ret_slice, kjit.arange(6, dt), 7, 6)          -- empty
    D.check(ret_slice_open, kjit.arange(6, dt), 3)
    D.check(ret_row, kjit.arange(12, dt):reshape({3, 4}), 2)
    D.check(ret_row, kjit.arange(24, dt):reshape({2, 3, 4}), 2)
    D.check(ret_reshape, kjit.arange(6, dt))
    D.check(ret_fill, kjit.zeros(4, dt), 7)
  end
  D.check(ret_slice, kjit.arange(24):reshape({4, 3, 2}), 2, 3)
  D.check(ret_reshape_same, kjit.arange(6))   -- a new view, not the argument
  local f = kjit.jit(ret_fill)
  local a = kjit.zeros(3)
  assert(f(a, 1) == a, "a:fill(v) returns a")
end)

test("a returned view keeps its argument alive and shares its memory", function()
  need()
  local f = kjit.jit(ret_slice)
  local v = f(kjit.arange(10.0), 3, 5)
  collectgarbage(); collectgarbage()
  eq(v[1], 2.0, "view after GC"); eq(#v, 3, "#v")
  local base = kjit.arange(10.0)
  local w = f(base, 2, 3)
  w[1] = 42
  eq(base[2], 42.0, "the view writes through")
  local g = kjit.jit(ret_row)
  local m = kjit.zeros({3, 2})
  local row = g(m, 3)
  m = nil
  collectgarbage(); collectgarbage()
  row[2] = 5
  eq(row[2], 5.0, "row after its matrix was dropped")
end)

---------------------------------------------------------------------------
-- constructors: every dtype, 1 to 4 dimensions
---------------------------------------------------------------------------

local function mk_zeros1(n, fill) local a = kjit.zeros(n, "i32"); for i = 1, n do a[i] = fill + i end; return a end
local function mk_all(dt_ignored)
  -- every dtype at once (the dtype must be a constant in compiled code)
  return kjit.zeros(2, "i8"), kjit.zeros(2, "u8"), kjit.zeros(2, "i16"), kjit.zeros(2, "u16"),
         kjit.zeros(2, "i32"), kjit.zeros(2, "u32"), kjit.zeros(2, "i64"), kjit.zeros(2, "u64"),
         kjit.zeros(2, "f32"), kjit.zeros(2)
end
local function mk_full_all(v)
  return kjit.full(3, v, "i8"), kjit.full(3, v, "u8"), kjit.full(3, v, "i16"), kjit.full(3, v, "u16"),
         kjit.full(3, v, "i32"), kjit.full(3, v, "u32"), kjit.full(3, v, "i64"), kjit.full(3, v, "u64"),
         kjit.full(3, v, "f32"), kjit.full(3, v, "f64")
end
local function mk_empty_dims(n)
  return kjit.empty(n, "f32"), kjit.empty({n, 2}, "u16"), kjit.empty({2, n, 3}), kjit.empty({1, 2, n, 2}, "i64")
end
local function mk_zeros_dims(n, m)
  local a, b, c, d = kjit.zeros(n), kjit.zeros({n, m}, "i16"), kjit.zeros({n, m, 2}, "f32"),
                     kjit.zeros({2, n, m, 2}, "u64")
  a[n] = 1; b[n][m] = -2; c[1][m][2] = 0.5; d[2][n][1][2] = 7
  return a, b, c, d, #a, b.size, c.ndim, d.shape[4]
end
local function mk_full_dims(v)
  return kjit.full(4, v), kjit.full({2, 3}, v, "i32"), kjit.full({2, 2, 2}, v, "f32"),
         kjit.full({1, 2, 1, 2}, v, "i8")
end
local function mk_like(a) return kjit.zeros(a.shape, "u8"), kjit.full(a.shape, 3, "f32") end
local function mk_array1(x) return kjit.array({x, 2, x + 1, 4}), kjit.array({1, x}, "i16") end
local function mk_array2(x) return kjit.array({{1, x}, {x, 4}, {5, 6}}, "i32") end
local function mk_array3(x) return kjit.array({{{1, 2}, {3, x}}, {{5, 6}, {7, 8}}}, "f32") end
local function mk_array_of(a) return kjit.array(a), kjit.array(a, "f32"), kjit.array(a, "i64") end
local function mk_copy(a) local b = a:copy(); b:reshape(b.size)[1] = 99; return b, a end
local function mk_arange_i(n) return kjit.arange(n), kjit.arange(2, n), kjit.arange(n, 0, -3), kjit.arange(n, "u8") end
local function mk_arange_f(x) return kjit.arange(x), kjit.arange(0.5, x, 0.25), kjit.arange(1, x, 1, "f32") end
local function mk_linspace(a, b, n) return kjit.linspace(a, b, n), kjit.linspace(a, b, n, "f32"), kjit.linspace(b, a, n) end
local function mk_linspace_int(n) return kjit.linspace(0, 2 * (n - 1), n, "i32") end

test("kjit.zeros, empty, full: every dtype, 1 to 4 dimensions", function()
  need()
  D.check(mk_all, 0)
  for _, v in ipairs({ 0, 3, -1, 300, 2.0, 2.5, 1e10 }) do
    local ok = pcall(mk_full_all, v)   -- a non-integral value raises in integer arrays
    if ok then D.check(mk_full_all, v) else D.check_error("no integer representation", mk_full_all, v) end
  end
  D.check(mk_empty_dims, 3)
  D.check(mk_empty_dims, 0)
  D.check(mk_zeros_dims, 3, 4)
  D.check(mk_zeros_dims, 1, 1)
  D.check(mk_full_dims, 5)
  D.check(mk_full_dims, -1.0)
  D.check(mk_like, kjit.zeros({2, 3, 4}))
  D.check(mk_zeros1, 5, 10)
end)

-- bool arrays made by compiled code: the allocator's element sizes must
-- cover bool (found by difffuzz, branch fuzzext: a division by a zero size,
-- SIGFPE, killed the host)
local function mk_bool(n) return kjit.zeros(n, "bool"), kjit.empty({2, n}, "bool") end
local function mk_bool_store(n) local q = kjit.zeros(n, "bool"); q[n] = n > 1; return q end
local function mk_bool_copy(q) local c = q:copy(); c[1] = not c[1]; return c, q end

test("bool arrays made and returned by compiled code", function()
  need()
  D.check(mk_bool, 3)
  D.check(mk_bool, 0)
  D.check(mk_bool_store, 2)
  D.check(mk_bool_copy, kjit.array({ true, false }))
end)

test("kjit.array from constructors and arrays, a:copy()", function()
  need()
  D.check(mk_array1, 3)
  D.check(mk_array1, 1.5)
  D.check(mk_array2, 7)
  D.check(mk_array3, 2.5)
  D.check_error("no integer representation", mk_array2, 1.5)
  for _, dt in ipairs(DTYPES) do
    D.check(mk_array_of, kjit.arange(5, dt))
    D.check(mk_copy, kjit.arange(6, dt):reshape({3, 2}))
  end
  D.check_error("no integer representation", mk_array_of, kjit.linspace(0, 1, 3))
  local f = kjit.jit(mk_copy)
  local a = kjit.arange(3)
  local b, a2 = f(a)
  assert(b ~= a and a2 == a, "a copy is a new array")
end)

test("kjit.arange and kjit.linspace", function()
  need()
  for _, n in ipairs({ 0, 1, 7, 10 }) do D.check(mk_arange_i, n) end
  for _, x in ipairs({ 0.5, 3.0, 4.75 }) do D.check(mk_arange_f, x) end
  for _, n in ipairs({ 0, 1, 2, 5 }) do
    D.check(mk_linspace, 0, 1, n)
    D.check(mk_linspace, -2.5, 7, n)
    D.check(mk_linspace_int, n)
  end
  D.check_error("step must not be zero", function(n) return kjit.arange(0, n, 0) end, 5)
  D.check_error("must be finite", function(x) return kjit.arange(0.0, x) end, math.huge)
  D.check_error("must not be negative", function(n) return kjit.linspace(0, 1, n) end, -1)
  D.check_error("no integer representation", function(n) return kjit.linspace(0, 1, n, "i32") end, 3)
end)

---------------------------------------------------------------------------
-- callees, several results
---------------------------------------------------------------------------

local function callee_make(n, v) local t = kjit.full({n, 2}, v, "f32"); return t, n end
local function callee_sum(a) local s = 0; for i = 1, #a do s = s + a[i] end; return s end
local function callee_scratch(n) local t = kjit.arange(n); return callee_sum(t) end
local function caller(n)
  local t, k = callee_make(n, 1.5)
  local u = kjit.zeros(k)
  for i = 1, k do u[i] = t[i][1] + callee_scratch(i) end
  return u, t, callee_sum(u)
end
local function callee_id(a) return a end
local function caller_id(n) local t = kjit.zeros(n); local r = callee_id(t); r[1] = 5; return t, r end

test("callees make arrays, take them and return them", function()
  need()
  D.check(caller, 4)
  D.check(caller, 0)
  D.check(caller_id, 3)
  local f = kjit.jit(caller_id)
  local t, r = f(2)
  assert(t == r, "an array a callee returned is the same array")
end)

---------------------------------------------------------------------------
-- methods and fields in compiled code
---------------------------------------------------------------------------

local function fields(a) return #a, a.size, a.ndim, a.shape[1], a.dtype == "f32", a.dtype ~= "i8" end
local function fill_int(a, v) a:fill(v); return a[1] end
local function row_assign(m, i, r) m[i] = r; return m end
local function row_assign_made(n)
  local m = kjit.zeros({n, 3}, "i16")
  for i = 1, n do m[i] = kjit.full(3, i, "i16") end
  return m
end
local function reshape_bad(a) return a:reshape({4, 4}) end
local function slice_bad(a, i, j) return a:slice(i, j) end

test("#a, a.shape, a.size, a.ndim, a.dtype; a:fill", function()
  need()
  for _, dt in ipairs(DTYPES) do
    D.check(fields, kjit.zeros(5, dt))
    D.check(fields, kjit.zeros({2, 3}, dt))
    D.check(fill_int, kjit.zeros(3, dt), 7)
  end
  D.check_error("no integer representation", fill_int, kjit.zeros(3, "i32"), 2.5)
  D.check(fill_int, kjit.zeros(3, "u8"), 300)
  D.check(fill_int, kjit.zeros(0), 1)
end)

test("row assignment m[i] = row copies the elements (interpreter and compiled)", function()
  need()
  D.check(row_assign, kjit.zeros({2, 3}), 2, kjit.arange(3.0))
  D.check(row_assign, kjit.zeros({2, 2, 2}, "i32"), 1, kjit.arange(4, "i32"):reshape({2, 2}))
  D.check(row_assign_made, 3)
  D.check_error("cannot assign a number to a row", row_assign, kjit.zeros({2, 3}), 1, 5)
  D.check_error("extent 4 to a row of extent 3", row_assign, kjit.zeros({2, 3}), 1, kjit.arange(4.0))
  D.check_error("out of bounds", row_assign, kjit.zeros({2, 3}), 3, kjit.arange(3.0))
  D.check_error("cannot assign a 2-D kjit.array to a row", row_assign, kjit.zeros({2, 3}), 1,
                kjit.zeros({1, 3}))
  -- the interpreter converts between dtypes (compiled code refuses it)
  local m = kjit.zeros({2, 2}, "i32")
  m[1] = kjit.array({1.0, 2.0})
  eq(m[1][2], 2, "converted")
  raises("no integer representation", function() m[2] = kjit.array({1.5, 2.0}) end)
  -- a row of itself (overlapping memory)
  local r = kjit.arange(6.0):reshape({3, 2})
  D.check(function(m) m[2] = m[3]; m[1] = m[2]; return m end, r)
end)

test("reshape and slice errors are the interpreter's", function()
  need()
  D.check_error("cannot reshape", reshape_bad, kjit.zeros(6))
  D.check_error("out of bounds", slice_bad, kjit.zeros(6), 0, 2)
  D.check_error("out of bounds", slice_bad, kjit.zeros(6), 2, 7)
  D.check_error("first > last + 1", slice_bad, kjit.zeros(6), 4, 1)
  D.check_error("negative dimension", function(a, n) return a:reshape({n, 2}) end, kjit.zeros(4), -2)
end)

---------------------------------------------------------------------------
-- errors: sizes, memory
---------------------------------------------------------------------------

local function alloc_n(n) return kjit.zeros(n) end
local function alloc_2d(n, m) return kjit.zeros({n, m}, "i16") end

test("sizes asked for are checked, with the interpreter's words and the user's line", function()
  need()
  D.check_error("negative dimension -1", alloc_n, -1)
  D.check_error("negative dimension -2", alloc_2d, 3, -2)
  D.check_error("array too large", alloc_2d, 1 << 40, 1 << 20)
  -- more than the machine has: Lua's "not enough memory", located, with the
  -- size (under ASan, which aborts on such a request unless told to return
  -- NULL, the injected failure below stands in for it)
  local asan = os.getenv("ASAN_OPTIONS")
  if asan and not asan:find("allocator_may_return_null=1", 1, true) then return end
  D.check_error("not enough memory (a kjit array of 8796093022208 bytes)", alloc_n, 1 << 40)
  local ok, e = pcall(function() return kjit.zeros(1 << 40) end)
  assert(not ok and e:find("test_jit_alloc.lua:%d+: not enough memory %(a kjit array of 8796093022208 bytes%)"), e)
end)

test("an allocation that fails (injected) raises at the user's line and leaks nothing", function()
  need()
  local f = kjit.jit(caller)
  f(3)   -- compiled
  collectgarbage(); collectgarbage()
  local live0 = testing.alloc_stats()
  for k = 1, 5 do   -- caller(3) makes 5 arrays
    testing.alloc_fail_after(k)
    local ok, e = pcall(f, 3)
    testing.alloc_fail_after(0)
    assert(not ok, "allocation " .. k .. " should have failed")
    assert(e:find("test_jit_alloc.lua:%d+: not enough memory %(a kjit array of %d+ bytes%)"), e)
  end
  collectgarbage(); collectgarbage()
  eq(testing.alloc_stats(), live0, "blocks alive after the failures")
  local u = f(3)   -- and it still works
  eq(u[1], 1.5, "after")
end)

---------------------------------------------------------------------------
-- memory: scratch arrays, GC pressure, threads
---------------------------------------------------------------------------

local function scratch_loop(n)
  local acc = 0
  for i = 1, n do
    local t = kjit.full({2, 2}, i, "i32")
    local r = t[2]
    acc = acc + r[1] + callee_scratch(3)
  end
  return acc
end

local function grow_loop(n)
  local acc = 0
  for i = 1, n do
    local t = kjit.zeros((i * 7) % 13 + 1, "i64")   -- grows and shrinks: reused or renewed
    t[#t] = i
    for k = 1, #t do acc = acc + t[k] end
  end
  return acc
end

local function keep_loop(n)
  local last = kjit.zeros(3)
  for i = 1, n do last = kjit.full(3, i) end
  return last
end

test("a scratch array per iteration is freed when its site runs again", function()
  need()
  D.check(scratch_loop, 50)
  local f = kjit.jit(scratch_loop)
  f(1)
  collectgarbage(); collectgarbage()
  local live0 = testing.alloc_stats(true)
  f(1000)
  local live, peak = testing.alloc_stats()
  eq(live, live0, "nothing left after the call")
  assert(peak <= live0 + 3, "peak " .. peak .. " with " .. live0 .. " alive before: the loop kept its arrays")
  D.check(grow_loop, 100)
  local h = kjit.jit(grow_loop)
  h(1)
  testing.alloc_stats(true)
  h(500)
  local _, peak2 = testing.alloc_stats()
  assert(peak2 <= live0 + 2, "peak " .. peak2 .. ": a growing scratch array was kept")
  -- a site whose array is kept past its iteration frees nothing early
  D.check(keep_loop, 20)
  local g = kjit.jit(keep_loop)
  eq(g(100)[1], 100.0, "the last one")
end)

local function small_scratch(n)
  local acc = 0
  for i = 1, n do
    local t = kjit.zeros(4)            -- constant and small: on the stack
    local u = kjit.full({2, 3}, i, "i16")
    local w = kjit.array({i, 2 * i}, "f32")
    t[i % 4 + 1] = i
    acc = acc + t[1] + t[2] + t[3] + t[4] + u[2][3] + w[2]
  end
  return acc
end

test("small scratch arrays of constant shape live on the stack, zeroed each time", function()
  need()
  D.check(small_scratch, 30)
  local f = kjit.jit(small_scratch)
  f(1)
  collectgarbage(); collectgarbage()
  local live0 = testing.alloc_stats(true)
  eq(f(1000), small_scratch(1000), "sum")
  local live, peak = testing.alloc_stats()
  eq(peak, live0, "no block allocated")
end)

test("GC pressure while compiled code allocates", function()
  need()
  local f = kjit.jit(caller)
  local want = { caller(7) }
  for i = 1, 300 do
    collectgarbage("step", 1)
    local u, t, s = f(7)
    if i % 50 == 0 then collectgarbage() end
    eq(s, want[3], "sum")
    eq(u[7], want[1][7], "u[7]")
    eq(t[7][2], 1.5, "t[7][2]")
  end
  collectgarbage(); collectgarbage()
  local live = testing.alloc_stats()
  assert(live < 50, live .. " blocks still alive after collecting: returned arrays leak")
end)

local function par_scratch(out)
  for i in kjit.prange(1, #out) do
    local t = kjit.arange(i)
    local s = 0
    for k = 1, #t do s = s + t[k] end
    out[i] = s
  end
  return out
end

test("kjit.prange bodies allocate (thread-safe list)", function()
  need()
  local out = kjit.zeros(2000, "i64")
  local f = kjit.jit(par_scratch, { parallel = true })
  f(out)
  for i = 1, #out, 97 do eq(out[i], i * (i - 1) // 2, "out[" .. i .. "]") end
  D.check(par_scratch, kjit.zeros(50, "i64"))
end)

---------------------------------------------------------------------------
-- refusals
---------------------------------------------------------------------------

test("kernels refuse allocation, pointing at local and shared arrays", function()
  need()
  local cuda = kjit.cuda
  if not (cuda and cuda.simulate) then skip("no kjit.cuda") end
  local prev = cuda.simulate(true)
  local ok, e = pcall(function()
    cuda.jit(function(out) local t = kjit.zeros(4); out[1] = t[1] end)[{1, 1}](kjit.zeros(1))
  end)
  cuda.simulate(prev)
  assert(not ok and e:find("kernels do not allocate", 1, true) and e:find("cuda.local_array", 1, true), e)
end)

test("a dtype that is not a constant, and a:totable(), are clear compile errors", function()
  need()
  local f = kjit.jit(function(n, d) return kjit.zeros(n, d) end)
  raises("the dtype is a constant name", function() return f(3, 1) end)
  local g = kjit.jit(function(a) return a:totable() end)
  raises("a:totable() makes a Lua table", function() return g(kjit.zeros(2)) end)
end)

---------------------------------------------------------------------------
-- the disk cache, kernels' device functions
---------------------------------------------------------------------------

local function cached_make(n) local t = kjit.arange(n); return t:reshape({2, n // 2}), t, t:slice(2, 3) end

test("code loaded from the disk cache allocates and returns arrays as compiled code does", function()
  need()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local before = kjit.cache_dir()
  kjit.cache_dir(dir)
  kjit.cache_stats(true)
  local ok, err = pcall(function()
    local g = kjit.jit(cached_make, { cache = true })
    local h = kjit.jit(cached_make, { cache = true })
    local a1, b1, c1 = g(6)
    local a2, b2, c2 = h(6)
    eq(kjit.cache_stats().hits, 1, "cache hits")
    eq(a2[2][3], a1[2][3], "reshape"); eq(#b2, 6, "#t"); eq(c2[2], 2, "slice")
    b2[6] = 60
    eq(a2[2][3], 60, "the views share the array's memory")
    D.check(cached_make, 8)
  end)
  kjit.cache_dir(before)
  os.execute("rm -rf '" .. dir .. "'")
  assert(ok, err)
end)

local function kernel_row(m, i) return m[i] end

test("a kernel's device function may return a view of an array", function()
  need()
  local cuda = kjit.cuda
  if not (cuda and cuda.simulate) then skip("no kjit.cuda") end
  local prev = cuda.simulate(true)
  local ok, err = pcall(function()
    local k = cuda.jit(function(m, out)
      local i = cuda.grid(1)
      if i <= #out then local r = kernel_row(m, i); out[i] = r[1] + r[2] end
    end)
    local out = kjit.zeros(3)
    k[{1, 32}](kjit.arange(6.0):reshape({3, 2}), out)
    eq(out[3], 9.0, "out[3]")
  end)
  cuda.simulate(prev)
  assert(ok, err)
end)

---------------------------------------------------------------------------
-- ipairs over arrays
---------------------------------------------------------------------------

local function ip_sum(a) local s = 0; for i, x in ipairs(a) do s = s + i * x end; return s end
local function ip_rows(m)
  local s, n = 0, 0
  for i, row in ipairs(m) do s = s + row[#row]; n = i end
  for i in ipairs(m) do n = n + i end
  return s, n
end
local function ip_break(a, stop)
  local last = 0
  for i, x in ipairs(a) do if x == stop then break end; last = i end
  return last
end
local function ip_nested(n)
  local t = kjit.arange(n)
  local s = 0
  for _, x in ipairs(t) do for _, y in ipairs(t) do s = s + x * y end end
  return s
end

test("ipairs(a) iterates over 1..#a, interpreted and compiled", function()
  need()
  local seen = {}
  for i, x in ipairs(kjit.arange(3)) do seen[#seen + 1] = i .. "=" .. x end
  eq(table.concat(seen, " "), "1=0 2=1 3=2", "interpreted")
  raises("index 4 out of bounds [1, 3]", function() return kjit.arange(3)[4] end)
  for _, dt in ipairs(DTYPES) do D.check(ip_sum, kjit.arange(7, dt)) end
  D.check(ip_sum, kjit.zeros(0))
  D.check(ip_rows, kjit.arange(12):reshape({4, 3}))
  D.check(ip_rows, kjit.arange(24.0):reshape({2, 3, 4}))
  D.check(ip_break, kjit.arange(10), 4)
  D.check(ip_break, kjit.arange(10), 99)
  D.check(ip_nested, 6)
  -- a frozen table: the table itself, a Lua value (refused until 2026-11-28)
  local T = { 1, 2 }
  D.check(function() local s = 0; for _, v in ipairs(T) do s = s + v end; return s end)
end)

---------------------------------------------------------------------------
-- a call that allocates while another one runs (a count hook's)
---------------------------------------------------------------------------

local function outer_alloc(n)
  local keep = kjit.zeros(n)
  local acc = 0
  for i = 1, 2000000 do
    local t = kjit.full(3, i % 7)    -- scratch (on the heap: not constant)
    acc = acc + t[(i % 3) + 1]
    keep[i % n + 1] = acc
  end
  return keep, acc
end
local function inner_alloc(k) local t = kjit.arange(k); return t, t:slice(2, k) end

test("a hook's jit call that allocates, while compiled code that allocates runs", function()
  need()
  local outer = kjit.jit(outer_alloc)
  local inner = kjit.jit(inner_alloc)
  inner(3); outer(2)   -- compiled
  local calls, bad = 0, nil
  debug.sethook(function()
    calls = calls + 1
    local t, s = inner(5)
    if t[5] ~= 4 or #s ~= 4 or s[1] ~= 1 then bad = "inner results" end
  end, "", 1000)
  local ok, keep, acc = pcall(outer, 5)
  debug.sethook()
  assert(ok, keep)
  assert(bad == nil, bad)
  assert(calls > 0, "the hook never ran")
  local ik, iacc = outer_alloc(5)
  eq(acc, iacc, "acc")
  for i = 1, 5 do eq(keep[i], ik[i], "keep[" .. i .. "]") end
  collectgarbage(); collectgarbage()
end)

local function fail_after_alloc(n, i)
  local keep = kjit.zeros(n)
  for k = 1, n do
    local t = kjit.arange(k)
    keep[k] = t[k]
  end
  return keep[i]   -- out of bounds when i > n
end

test("an error after allocations frees them; a non-number value is the interpreter's error", function()
  need()
  local f = kjit.jit(fail_after_alloc)
  f(3, 1)
  collectgarbage(); collectgarbage()
  local live0 = testing.alloc_stats()
  D.check_error("index 9 out of bounds [1, 5]", fail_after_alloc, 5, 9)
  for _ = 1, 10 do pcall(f, 50, 99) end
  eq(testing.alloc_stats(), live0, "blocks alive after the errors")
  D.check_error("number expected, got boolean", function(n) return kjit.full(n, true, "f64") end, 3)
  D.check_error("number expected, got nil", function(a) return a:fill(nil) end, kjit.zeros(2))
end)

-- bool arrays made in compiled code: one byte per element (the element size
-- comes from karray.h's table: a size of 8 wrote past the array, a size of
-- 0 divided by zero), booleans only, and no bool arange/linspace
test("bool arrays made in compiled code, as interpreted", function()
  need()
  for _, n in ipairs({0, 1, 3, 70}) do
    D.check(function(k) return kjit.full(k, true) end, n)
    D.check(function(k) return kjit.full(k, false, "bool") end, n)
    D.check(function(k) local a = kjit.zeros(k, "bool"); if k > 0 then a[k] = true end; return a:copy() end, n)
    D.check(function(k) local a = kjit.zeros({k, 2}, "bool"); a:fill(true); return a end, n)
  end
  D.check_error("boolean expected, got number", function(k) return kjit.full(k, 5, "bool") end, 3)
  D.check_error("boolean expected, got nil", function(k) return kjit.full(k, nil, "bool") end, 3)
  D.check_error("bool is not a numeric dtype", function(k) return kjit.arange(k, "bool") end, 3)
  D.check_error("bool is not a numeric dtype", function(k) return kjit.linspace(0, 1, k, "bool") end, 3)
end)
