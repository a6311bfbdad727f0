-- test_reduce.lua: kjit.reduce (CPU, sequential and parallel) and
-- kjit.cuda.reduce (in the simulator, plus ptxas on the generated kernels).
--
-- The reference is plain Lua folding fn over the elements in row-major
-- order: fn(...fn(fn(init, a1), a2)..., an), or fn(...fn(a1, a2)..., an).
-- The sequential CPU reducer folds in exactly that order, so it must match
-- bit for bit (even for a non-associative fn). The parallel and GPU
-- reducers fold in another order: they are compared exactly on integer
-- operations (+ wraps modulo 2^64 in any order; min, max, band, bor, bxor)
-- and on f64 data whose sums are exact in any order, and with a tolerance
-- for rounded float sums.
local kjit = require "kjit"
local cuda = kjit.cuda
local THIS = "test_reduce.lua"

-- ---- helpers -----------------------------------------------------------------

local function ref(fn, arr, init)
  local a = arr.ndim > 1 and arr:reshape(arr.size) or arr
  local acc, first = init, 1
  if acc == nil then acc, first = a[1], 2 end
  for i = first, a.size do acc = fn(acc, a[i]) end
  return acc
end

-- deterministic data: an LCG, values in [lo, hi] (integers) or [0, 1) floats
local seed = 12345
local function rnd()
  seed = (seed * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff
  return seed >> 11
end
local function ints(n, dtype, lo, hi)
  local a = kjit.empty(n, dtype)
  for i = 1, n do a[i] = lo + rnd() % (hi - lo + 1) end
  return a
end
local function floats(n, dtype, scale)
  local a = kjit.empty(n, dtype)
  for i = 1, n do a[i] = (rnd() % 1000003) / 1000003 * (scale or 1) - (scale or 1) / 3 end
  return a
end
-- f64 values that are multiples of 1/8 below 2^20: every partial sum of a
-- few million of them is exact, so any summation order gives the same f64
local function eighths(n)
  local a = kjit.empty(n, "f64")
  for i = 1, n do a[i] = (rnd() % (1 << 23)) / 8 - (1 << 19) end
  return a
end

local function add(a, b) return a + b end
local function mul(a, b) return a * b end
local function min2(a, b) return math.min(a, b) end
local function max2(a, b) return math.max(a, b) end
local function lesser(a, b) if b < a then return b end return a end
local function bxor(a, b) return a ~ b end
local function first(a, b) return a end             -- associative, not commutative
local function last(a, b) return b end              -- associative, not commutative
local function sub(a, b) return a - b end           -- neither
local function affine(a, b) return 3 * a + b end    -- neither: the order shows in every digit

-- the line of the next call in this file (for error position checks)
local function here() return debug.getinfo(2, "l").currentline end

-- ---- kjit.reduce: sequential CPU ------------------------------------------------

test("cpu: + on i32 and i64 equals the Lua fold exactly (64-bit wrap included)", function()
  local r = kjit.reduce(add)
  for _, n in ipairs{ 1, 2, 3, 17, 1000, 4099 } do
    local a = ints(n, "i32", -2147483648, 2147483647)     -- sums leave the i32 range
    eq(r(a), ref(add, a), "i32 n=" .. n)
    eq(r(a, 5), ref(add, a, 5), "i32 init n=" .. n)
    local b = ints(n, "i64", math.mininteger // 2, math.maxinteger // 2)   -- sums wrap
    eq(r(b), ref(add, b), "i64 n=" .. n)
    eq(r(b, math.maxinteger), ref(add, b, math.maxinteger), "i64 init n=" .. n)
  end
  local w = kjit.array({ math.maxinteger, 1, 1 }, "i64")
  eq(r(w), math.mininteger + 1, "maxinteger + 2 wraps")
end)

test("cpu: a function from a chunk without source text (\"=name\") folds like Lua", function()
  -- kjit compiles the function's bytecode: the chunk name does not matter
  local mul = assert(load("return function(a, b) return a * b % 1000003 end", "=nosource"))()
  local a = ints(50, "i64", 1, 999)
  eq(kjit.reduce(mul)(a), ref(mul, a), "=nosource")
  local f = assert(load("return function(a, b) return a - b / 3 end", "@/no/such/file.lua"))()
  local x = kjit.arange(1.0, 40.0)
  eq(kjit.reduce(f)(x, 0.5), ref(f, x, 0.5), "@/no/such/file.lua")
end)

test("cpu: every dtype, f64 and f32 sums in the documented order", function()
  local r = kjit.reduce(add)
  for _, t in ipairs{ "i8", "u8", "i16", "u16", "u32", "u64" } do
    local a = ints(777, t, 0, 100)
    eq(r(a), ref(add, a), t)
  end
  local d = floats(5001, "f64", 1e3)
  eq(r(d), ref(add, d), "f64 is bit-identical to the sequential fold")
  eq(r(d, 0.25), ref(add, d, 0.25), "f64 with init")
  local f = floats(5001, "f32")
  -- compiled code adds in f32, the interpreter in double
  near(r(f), ref(add, f), 1e-4, "f32")
  eq(math.type(r(f)), "float", "f32 gives a float")
  eq(math.type(r(ints(5, "u8", 0, 9))), "integer", "u8 gives an integer")
  local p = floats(50, "f64")
  eq(kjit.reduce(mul)(p), ref(mul, p), "f64 product")
end)

test("cpu: min, max, xor, and functions that are not commutative or not associative", function()
  local a = ints(3001, "i64", -1000000, 1000000)
  local d = floats(3001, "f64")
  for name, fn in pairs{ min2 = min2, max2 = max2, lesser = lesser, bxor = bxor,
                         first = first, last = last, sub = sub, affine = affine } do
    local r = kjit.reduce(fn)
    eq(r(a), ref(fn, a), name .. " i64")
    eq(r(a, 7), ref(fn, a, 7), name .. " i64 with init")
    if name ~= "bxor" then
      eq(r(d), ref(fn, d), name .. " f64")
      eq(r(d, 0.5), ref(fn, d, 0.5), name .. " f64 with init")
    end
  end
end)

test("cpu: n-D arrays fold in row-major order", function()
  local m = kjit.array({ { 1, 2, 3 }, { 4, 5, 6 } }, "i32")
  eq(kjit.reduce(affine)(m), ref(affine, m), "2-D affine")
  eq(kjit.reduce(affine)(m), ((((1 * 3 + 2) * 3 + 3) * 3 + 4) * 3 + 5) * 3 + 6, "2-D by hand")
  local c = floats(2 * 3 * 5 * 7, "f64"):reshape({ 2, 3, 5, 7 })
  eq(kjit.reduce(sub)(c, 1.0), ref(sub, c, 1.0), "4-D sub with init")
  local v = m[2]                       -- a row view
  eq(kjit.reduce(add)(v), 15, "row view")
end)

test("cpu: empty arrays and size 1", function()
  local r = kjit.reduce(add)
  eq(r(kjit.zeros(0, "i32"), 42), 42, "empty with init gives init")
  eq(r(kjit.zeros({ 3, 0 }), -1.5), -1.5, "empty 2-D with init")
  eq(r(kjit.zeros(0), 42), 42, "init keeps its subtype")
  local line = here() + 1
  local msg = raises("reduction of an empty array needs an initial value", function() local v = r(kjit.zeros(0)); return v end)
  truthy(msg:find(THIS .. ":" .. line, 1, true), "error at the caller's line: " .. msg)
  eq(r(kjit.array({ 9 }, "i16")), 9, "size 1")
  eq(r(kjit.array({ 9 }, "i16"), 1), 10, "size 1 with init")
  eq(kjit.reduce(sub)(kjit.array({ 2.5 })), 2.5, "size 1 never calls fn")
  local div = function(a, b) return a / b end
  eq(kjit.reduce(div)(kjit.array({ 7 }, "i32")), 7, "size 1 is the element itself (an integer)")
  eq(kjit.reduce(div)(kjit.array({ 7, 2 }, "i32")), 3.5, "a float result from integer elements")
end)

test("cpu: options, kjit.jit objects, a reducer is reusable", function()
  local j = kjit.jit(max2)
  local r = kjit.reduce(j)
  local a = ints(100, "i64", -50, 50)
  eq(r(a), ref(max2, a), "kjit.jit object as fn")
  eq(r.lua, max2, "r.lua is the Lua function")
  eq(r.target, "cpu", "target")
  local fm = kjit.reduce(add, { fastmath = true, boundscheck = false, opt = 2 })
  local d = floats(10000, "f64")
  near(fm(d), ref(add, d), 1e-12, "fastmath sum")
  for _ = 1, 3 do eq(r(a, 1000), 1000, "reuse") end
end)

test("cpu: errors point at the caller", function()
  local line = here() + 1
  local msg = raises("bad argument #1 to 'kjit.reduce' (function expected, got number)", function() local v = kjit.reduce(5); return v end)
  truthy(msg:find(THIS .. ":" .. line, 1, true), msg)
  raises("Lua function expected, got C function", function() local v = kjit.reduce(math.max); return v end)
  raises("unknown option 'parallel'", function() local v = kjit.reduce(add, { parallel = true }); return v end)
  raises("unknown target 'gpu'", function() local v = kjit.reduce(add, { target = "gpu" }); return v end)
  raises("options table expected", function() local v = kjit.reduce(add, "cpu"); return v end)
  local r = kjit.reduce(add)
  line = here() + 1
  msg = raises("bad argument #1 to 'reducer' (kjit array expected, got table)", function() local v = r({ 1, 2 }); return v end)
  truthy(msg:find(THIS .. ":" .. line, 1, true), msg)
  raises("kjit array expected, got number", function() local v = r(3); return v end)
  line = here() + 1
  msg = raises("bad argument #2 to 'reducer' (number or boolean expected as the initial value, got string)", function() local v = r(kjit.zeros(2), "0"); return v end)
  truthy(msg:find(THIS .. ":" .. line, 1, true), msg)
  raises("got a device array (use kjit.cuda.reduce)", function()
    local prev = cuda.simulate(true)
    local ok, e = pcall(function() local v = r(cuda.to_device(kjit.zeros(3))); return v end)
    cuda.simulate(prev)
    error(e, 0)
  end)
end)

-- errors raised inside fn carry fn's own file:line
local BOOM_LINE = here() + 2
local function boom(a, b)
  if b > 50 then error("boom") end
  return a + b
end
local DIV_LINE = here() + 1
local function idiv(a, b) return a // b end

test("cpu: a run-time error inside fn is reported at fn's line", function()
  local a = kjit.arange(100)
  raises(THIS .. ":" .. BOOM_LINE .. ": boom", kjit.reduce(boom), a)
  raises(THIS .. ":" .. DIV_LINE .. ": attempt to divide by zero", kjit.reduce(idiv), kjit.zeros(3, "i64"))
  local r = kjit.reduce(boom)
  eq(r(kjit.arange(10)), 45, "still usable after an error")
end)

-- functions the generated loops cannot use: the error is located at the
-- function (never in kjit's generated chunk) and keeps fn's own message
local ALWAYS_LINE = here() + 1
local function always(a, b) error("always boom") end
local BOOL_LINE = here() + 1
local function lt(a, b) return a < b end
local NOTHING_LINE = here() + 1
local function nothing(a, b) end
local function no_generated(msg) truthy(not msg:find("[string", 1, true), "no generated chunk in: " .. msg) end

test("cpu: unusable functions: errors at fn's line, with fn's message", function()
  local a = kjit.arange(1, 101)
  no_generated(raises(THIS .. ":" .. ALWAYS_LINE .. ": always boom", kjit.reduce(always), a))
  -- (a boolean accumulator is a Lua value now: the next `a < b` raises
  -- Lua's own "attempt to compare boolean with number" at fn's line)
  local msg = raises(THIS .. ":" .. BOOL_LINE .. ": ", kjit.reduce(lt), a)
  no_generated(msg)
  truthy(msg:find("boolean", 1, true), "names the type: " .. msg)
  no_generated(raises(THIS .. ":" .. BOOL_LINE .. ": ", kjit.reduce(lt), a, 0))
end)

-- ---- kjit.reduce: target = "parallel" (needs compiled kjit.prange) ------------------

local function parallel(fn)
  local ok, r = pcall(kjit.reduce, fn, { target = "parallel" })
  if not ok then
    if tostring(r):find("not available yet", 1, true) then skip("parallel target: " .. tostring(r)) end
    error(r, 0)
  end
  return r
end

test("parallel: integer and exact-f64 reductions equal the sequential fold", function()
  local r = parallel(add)
  eq(r.target, "parallel", "target")
  -- below, at and above the chunking thresholds (16384 per chunk, at most 256 chunks)
  for _, n in ipairs{ 1, 100, 16384, 16385, 50001, 16384 * 256 + 7 } do
    local a = ints(n, "i64", math.mininteger // 2, math.maxinteger // 2)
    eq(r(a), ref(add, a), "i64 + n=" .. n)
    eq(r(a, 3), ref(add, a, 3), "i64 + init n=" .. n)
  end
  local e = eighths(300000)
  eq(r(e), ref(add, e), "exact f64 sum")
  local d = floats(300000, "f64")
  near(r(d), ref(add, d), 1e-10, "f64 sum (chunk order)")
  local f = floats(300000, "f32")
  near(r(f), ref(add, f), 1e-3, "f32 sum")
  local m = ints(3 * 50000, "i32", -100000, 100000):reshape({ 3, 50000 })
  for name, fn in pairs{ min2 = min2, max2 = max2, bxor = bxor } do
    eq(parallel(fn)(m), ref(fn, m), name .. " 2-D i32")
  end
end)

test("parallel: unusable functions: errors at fn's line, with fn's message", function()
  local a = kjit.arange(1, 100001)
  no_generated(raises(THIS .. ":" .. ALWAYS_LINE .. ": always boom", parallel(always), a))
  no_generated(raises(THIS .. ":" .. NOTHING_LINE .. ": kjit.reduce: ", parallel(nothing), a))
  no_generated(raises(THIS .. ":" .. BOOL_LINE .. ": kjit.reduce: ", parallel(lt), a))
end)

test("parallel: chunks combine in array order (associative, non-commutative fn)", function()
  local a = ints(200003, "i64", -1000, 1000)
  eq(parallel(first)(a), a[1], "first")
  eq(parallel(last)(a), a[#a], "last")
  eq(parallel(last)(a, 5), a[#a], "last with init")
  eq(parallel(first)(a, 5), 5, "first with init")
  eq(parallel(add)(kjit.zeros(0), 4), 4, "empty with init")
  raises("needs an initial value", parallel(add), kjit.zeros(0))
  raises(THIS .. ":" .. BOOM_LINE .. ": boom", parallel(boom), kjit.arange(100000))
end)

test("parallel: the result does not depend on the number of threads", function()
  local r = parallel(add)
  if not kjit.set_num_threads then skip("kjit.set_num_threads is missing") end
  local before = kjit.get_num_threads()
  local d = floats(1000003, "f64")
  local got = {}
  local ok, err = pcall(function()
    for nt = 1, 8 do   -- as many as the pool has (the machine's cores)
      if not pcall(kjit.set_num_threads, nt) then break end
      got[#got + 1] = r(d)
    end
  end)
  kjit.set_num_threads(before)
  if not ok then error(err, 0) end
  for i = 2, #got do eq(got[i], got[1], "threads run " .. i) end
  near(got[1], ref(add, d), 1e-10, "sum")
end)

-- ---- kjit.cuda.reduce in the simulator -------------------------------------------

-- runs fn in the compiled simulator (or mode), restoring the mode after
local function sim(fn, mode)
  local prev = cuda.simulate(mode or true)
  local ok, err = pcall(fn)
  cuda.simulate(prev)
  if not ok then error(err, 0) end
end

test("cuda (simulator): + on host arrays, block-size edges, with and without init", function()
  sim(function()
    local r = cuda.reduce(add)
    eq(r.target, "cuda", "target")
    -- 1 thread; one partial block; exactly a block; one more; several
    -- blocks; more elements than threads (the grid-stride and unrolled
    -- loops run: the simulator runs 2 blocks of 256)
    for _, n in ipairs{ 1, 2, 255, 256, 257, 513, 70001 } do
      local a = ints(n, "i32", -2147483648, 2147483647)
      eq(r(a), ref(add, a), "i32 n=" .. n)
    end
    local b = ints(40000, "i64", math.mininteger // 2, math.maxinteger // 2)
    eq(r(b), ref(add, b), "i64 (wraps)")
    eq(r(b, 11), ref(add, b, 11), "i64 with init")
    local e = eighths(30001)
    eq(r(e), ref(add, e), "exact f64")
    local f = floats(30001, "f32")
    local got = r(f)
    near(got, ref(add, f), 1e-4, "f32")
    eq(math.type(got), "float", "f32 gives a float")
    eq(math.type(r(ints(10, "u16", 0, 10))), "integer", "u16 gives an integer")
    near(r(f, 2.5), ref(add, f, 2.5), 1e-4, "f32 with init")
  end)
end)

test("cuda (simulator): min, max, xor, other dtypes, n-D host arrays", function()
  sim(function()
    local a = ints(9000, "i64", -10 ^ 12, 10 ^ 12)
    for name, fn in pairs{ min2 = min2, max2 = max2, lesser = lesser, bxor = bxor } do
      local r = cuda.reduce(fn)
      eq(r(a), ref(fn, a), name .. " i64")
      eq(r(a, 0), ref(fn, a, 0), name .. " with init")
    end
    -- threads and blocks that own no element must not contribute (the
    -- simulator zeroes shared memory: 0 would win these)
    for _, n in ipairs{ 3, 300, 700 } do
      local pos, neg = ints(n, "i32", 1, 1000), ints(n, "i32", -1000, -1)
      eq(cuda.reduce(min2)(pos), ref(min2, pos), "min of positives n=" .. n)
      eq(cuda.reduce(max2)(neg), ref(max2, neg), "max of negatives n=" .. n)
    end
    local d = floats(3000, "f64")
    eq(cuda.reduce(max2)(d), ref(max2, d), "f64 max")
    local r = cuda.reduce(add)
    for _, t in ipairs{ "i8", "u32", "u64" } do
      local x = ints(1000, t, 0, 100)
      eq(r(x), ref(add, x), t)
    end
    local m = ints(3 * 4 * 101, "i32", -5000, 5000):reshape({ 3, 4, 101 })
    eq(r(m), ref(add, m), "3-D host array")
  end)
end)

test("cuda (simulator): device arrays (1-D to 4-D), streams, empty and size 1", function()
  sim(function()
    local r = cuda.reduce(add)
    local a = ints(6000, "i64", -10 ^ 9, 10 ^ 9)
    eq(r(cuda.to_device(a)), ref(add, a), "1-D device array")
    for _, shape in ipairs{ { 60, 100 }, { 7, 3, 5 }, { 2, 3, 1, 1000 } } do
      local n = 1
      for _, s in ipairs(shape) do n = n * s end
      local x = ints(n, "i32", -10 ^ 6, 10 ^ 6):reshape(shape)
      eq(r(cuda.to_device(x)), ref(add, x), #shape .. "-D device array")
    end
    local s = cuda.stream()
    eq(r(cuda.to_device(a), 1, s), ref(add, a, 1), "on a stream")
    eq(r(a, nil, s), ref(add, a), "host array on a stream")
    eq(r(cuda.device_array(0, "f32"), 3.5), 3.5, "empty device array with init")
    eq(r(kjit.zeros(0), 3), 3, "empty host array with init")
    local line = here() + 1
    local msg = raises("reduction of an empty array needs an initial value", function() local v = r(cuda.device_array(0)); return v end)
    truthy(msg:find(THIS .. ":" .. line, 1, true), msg)
    eq(r(kjit.array({ 7 }, "i8")), 7, "size 1")
    eq(r(cuda.to_device(kjit.array({ -2.5 }))), -2.5, "size 1 device")
  end)
end)

test("cuda (interpreted simulator) agrees with the compiled one", function()
  local a = ints(3000, "i64", -10 ^ 9, 10 ^ 9)
  local got = {}
  for _, mode in ipairs{ "interpret", true } do
    sim(function()
      got[#got + 1] = cuda.reduce(add)(a)
      got[#got + 1] = cuda.reduce(min2)(cuda.to_device(a:reshape({ 30, 100 })), 0)
    end, mode)
  end
  eq(got[1], ref(add, a), "interpreted +")
  eq(got[2], ref(min2, a, 0), "interpreted min, 2-D device array")
  eq(got[3], got[1], "compiled +")
  eq(got[4], got[2], "compiled min")
end)

test("cuda (simulator): errors", function()
  sim(function()
    local line = here() + 1
    local msg = raises("bad argument #1 to 'kjit.cuda.reduce' (function expected, got table)", function() local v = cuda.reduce({}); return v end)
    truthy(msg:find(THIS .. ":" .. line, 1, true), msg)
    raises("unknown option 'target'", function() local v = cuda.reduce(add, { target = "cpu" }); return v end)
    local r = cuda.reduce(add)
    line = here() + 1
    msg = raises("kjit array or device array expected, got string", function() local v = r("x"); return v end)
    truthy(msg:find(THIS .. ":" .. line, 1, true), msg)
    line = here() + 1
    msg = raises("bad argument #3 to 'reducer' (kjit.cuda stream expected, got string)", function() local v = r(kjit.zeros(2), 0, "s"); return v end)
    truthy(msg:find(THIS .. ":" .. line, 1, true), msg)
    raises("bad argument #2 to 'reducer' (number or boolean expected as the initial value, got table)", function() local v = r(kjit.zeros(2), {}); return v end)
    raises(THIS .. ":" .. BOOM_LINE .. ": boom", cuda.reduce(boom), kjit.arange(1000, "i32"))
    raises(THIS .. ":" .. DIV_LINE .. ": attempt to divide by zero", cuda.reduce(idiv), kjit.zeros(300, "i64"))
    eq(cuda.reduce(boom)(kjit.arange(10)), 45, "usable after an error")
    -- functions the kernel cannot use: fn's line and message, never the kernel's
    local a = kjit.arange(1, 1001)
    no_generated(raises(THIS .. ":" .. ALWAYS_LINE .. ": always boom", cuda.reduce(always), a))
    no_generated(raises(THIS .. ":" .. ALWAYS_LINE .. ": always boom", cuda.reduce(always), cuda.to_device(a)))
    no_generated(raises(THIS .. ":" .. NOTHING_LINE .. ": kjit.cuda.reduce: ", cuda.reduce(nothing), a))
    no_generated(raises(THIS .. ":" .. BOOL_LINE .. ": kjit.cuda.reduce: ", cuda.reduce(lt), a))
  end)
end)

-- ---- the generated kernels through ptxas ----------------------------------------

local ptxas = require "ptxas"

test("cuda: kernels are cached per function and options", function()
  local k = cuda.reduce(add):kernel("f32")
  eq(cuda.reduce(add):kernel("f32"), k, "the same function: the same kernel")
  eq(cuda.reduce(add):kernel("f32", 1), k, "ndim 1 is the default")
  truthy(cuda.reduce(add):kernel("i32") ~= k, "another accumulator dtype")
  eq(cuda.reduce(add):kernel("u8"), cuda.reduce(add):kernel("i64"), "integers share the i64 kernel")
  truthy(cuda.reduce(add, { fastmath = true }):kernel("f32") ~= k, "other options")
  truthy(cuda.reduce(function(a, b) return a + b end):kernel("f32") ~= k, "another function")
  raises("unknown dtype 'c64'", function() local v = cuda.reduce(add):kernel("c64"); return v end)
end)

test("cuda: the reduction kernels compile to PTX that ptxas accepts", function()
  local cases = {
    { add, "f32", "void(f32[:], f32[:], i64)" },
    { add, "f64", "void(f64[:], f64[:], i64)" },
    { add, "i32", "void(i32[:], i64[:], i64)" },
    { add, "i64", "void(i64[:], i64[:], i64)" },      -- stage 2 of every integer reduction
    { max2, "u8", "void(u8[:], i64[:], i64)" },
    { min2, "f32", "void(f32[:,:], f32[:], i64)", 2 },
    { add, "f64", "void(f64[:,:,:,:], f64[:], i64)", 4 },
  }
  local ptxs = {}
  for _, c in ipairs(cases) do
    local k = cuda.reduce(c[1]):kernel(c[2], c[4])
    k:compile(c[3], 90)
    local ptx = k:inspect("ptx")
    truthy(ptx:find(".entry", 1, true), "PTX has an .entry")
    truthy(ptx:find("bar.sync", 1, true), "the block tree synchronizes")
    -- no atomic accumulation (the only atom. allowed is the error word's cas)
    truthy(not ptx:find("atom%.[%w.]*add") and not ptx:find("%sred%."), "no atomic adds")
    if c[2] == "f32" and not c[4] then
      truthy(not ptx:find("%.f64"), "an f32 reduction has no f64 instruction")
    end
    ptxs[#ptxs + 1] = ptx
  end
  for i, ptx in ipairs(ptxs) do ptxas.check(ptx, "case " .. i) end
end)

-- ---- on a GPU -----------------------------------------------------------------

test("cuda (GPU): large reductions agree with the reference", function()
  local ok, why = cuda.is_available()
  if not ok then skip("no GPU: " .. tostring(why)) end
  local prev = cuda.simulate(false)
  local pok, err = pcall(function()
    local r = cuda.reduce(add)
    local a = ints(3000017, "i64", math.mininteger // 2, math.maxinteger // 2)
    eq(r(cuda.to_device(a)), ref(add, a), "i64 on the GPU")
    local e = eighths(1 << 22)
    eq(r(e), ref(add, e), "exact f64 on the GPU")
    local f = floats(1 << 22, "f32")
    near(r(f), ref(add, f), 1e-3, "f32 on the GPU")
    eq(cuda.reduce(max2)(a, math.mininteger), ref(max2, a), "max on the GPU")
  end)
  cuda.simulate(prev)
  if not pok then error(err, 0) end
end)
