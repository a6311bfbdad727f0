-- test_vectorize.lua: kjit.vectorize on every target, differentially.
--
-- The reference is the interpreted scalar function applied element by
-- element in plain Lua: inputs converted to the signature's dtypes as the
-- ufunc converts them, the result shape computed here (independently of
-- kjit/ufunc.lua), each element stored into an array of the result dtype
-- (so u8 wraps, f32 rounds as the compiled store does). Targets:
-- arraytest.lua's TARGETS (cpu, parallel, cuda in both simulators).
local kjit = require "kjit"
local cuda = kjit.cuda

local AT = require "arraytest"
local TARGETS, T, on_target = AT.TARGETS, AT.opts, AT.on_target


-- ---- the reference -----------------------------------------------------------

local function shape_of(v)
  if math.type(v) then return {} end
  return v.shape
end

-- NumPy broadcasting, written out for the tests.
local function bshape(args)
  local nd = 0
  for _, a in ipairs(args) do nd = math.max(nd, #shape_of(a)) end
  local r = {}
  for k = 1, nd do
    r[k] = 1
    for _, a in ipairs(args) do
      local s = shape_of(a)
      local d = s[#s - nd + k]
      if d and d ~= 1 then r[k] = d end
    end
  end
  return r
end

-- Element of array a (ndim <= #idx, aligned right) at multi-index idx,
-- extent-1 dimensions read at 1.
local function elem(a, idx)
  local s = a.shape
  local v = a
  for j = 1, #s do
    local i = idx[#idx - #s + j]
    v = v[s[j] == 1 and 1 or i]
  end
  return v
end

-- sig: {ret, args = {dtypes}}: the signature the ufunc must choose.
local function reference(fn, args, ret, argtypes)
  local conv = {}
  for i, a in ipairs(args) do
    if math.type(a) then conv[i] = kjit.full(1, a, argtypes[i])[1]
    elseif a.dtype ~= argtypes[i] then conv[i] = kjit.array(a, argtypes[i])
    else conv[i] = a end
  end
  local shape = bshape(args)
  if #shape == 0 then
    local r = kjit.zeros(1, ret)
    r[1] = fn(table.unpack(conv, 1, #args))
    return r[1]
  end
  local out = kjit.zeros(shape, ret)
  local flat = out:reshape(out.size)
  local idx = {}
  for t = 1, out.size do
    local r = t - 1
    for k = #shape, 1, -1 do
      idx[k] = r % shape[k] + 1
      r = r // shape[k]
    end
    local vals = {}
    for i, a in ipairs(conv) do
      vals[i] = math.type(a) and a or elem(a, idx)
    end
    flat[t] = fn(table.unpack(vals, 1, #args))
  end
  return out
end

local function copy_arg(a)
  if math.type(a) then return a end
  return a:copy()
end

local same = AT.same

-- One differential case on every target. ret/argtypes: the signature the
-- ufunc must pick for these arguments.
local function case(name, fn, sigs, args, ret, argtypes, tol)
  for _, target in ipairs(TARGETS) do
    test(name .. " [" .. target .. "]", function()
      local want = reference(fn, args, ret, argtypes)
      local vf = kjit.vectorize(fn, sigs, T(target))
      local a = {}
      for i = 1, #args do a[i] = copy_arg(args[i]) end
      local got = on_target(target, vf, table.unpack(a, 1, #args))
      same(got, want, tol, "result")
      -- inputs untouched
      for i = 1, #args do
        if not math.type(args[i]) then same(a[i], args[i], nil, "input " .. i) end
      end
      -- a second call reuses the compiled wrapper
      local got2 = on_target(target, vf, table.unpack(a, 1, #args))
      same(got2, want, tol, "second call")
    end)
  end
end

local function muladd(x, y) return x * y + 1 end
local function mixed(x, y, z)
  if x > y then return x - y * z end
  return math.sqrt(x * x + y * y) + z
end
local function idiv(x, y) return x // y + x % y end
local function add(x, y) return x + y end
local function poly(x) return 3 * x * x - 2 * x + 7 end

local SIGS = { "f64(f64, f64)", "f32(f32, f32)", "i64(i64, i64)", "i32(i32, i32)" }

-- ---- dtypes, scalars ----------------------------------------------------------------

case("f64 array * integer scalar", muladd, SIGS,
  { kjit.linspace(-2, 3, 17), 3 }, "f64", { "f64", "f64" })
case("f64 array * float scalar", muladd, SIGS,
  { kjit.linspace(-2, 3, 17), 0.3 }, "f64", { "f64", "f64" })
case("f32 arrays compute in f32", muladd, SIGS,
  { kjit.linspace(-2, 3, 33, "f32"), kjit.linspace(0.1, 7, 33, "f32") }, "f32", { "f32", "f32" }, 1e-6)
case("f32 array, float scalar converted to f32", muladd, SIGS,
  { kjit.linspace(-2, 3, 33, "f32"), 0.1 }, "f32", { "f32", "f32" }, 1e-6)
case("i64 floor division and modulo", idiv, { "i64(i64, i64)" },
  { kjit.arange(-20, 20), kjit.array({ 3, -7, 5, 2 }, "i64"):reshape({ 4, 1 }) }, "i64", { "i64", "i64" })
case("i32 exact signature", muladd, SIGS,
  { kjit.arange(-50, 50, 3, "i32"), kjit.full(1, 7, "i32") }, "i32", { "i32", "i32" })
case("u8 result wraps on store", add, { "u8(u8, u8)" },
  { kjit.array({ 0, 100, 200, 255, 128 }, "u8"), kjit.array({ 1, 100, 100, 255, 128 }, "u8") }, "u8", { "u8", "u8" })
case("u8 scalar wraps when converted", add, { "u8(u8, u8)" },
  { kjit.array({ 0, 100, 200 }, "u8"), 300 }, "u8", { "u8", "u8" })
case("three arguments, math.sqrt", mixed, { "f64(f64, f64, f64)" },
  { kjit.linspace(-3, 3, 11), kjit.linspace(2, -2, 11), 0.5 }, "f64", { "f64", "f64", "f64" })
case("one argument", poly, { "i64(i64)", "f64(f64)" },
  { kjit.arange(-5, 6) }, "i64", { "i64" })
case("all scalars give a number", muladd, SIGS, { 3, 4 }, "f64", { "f64", "f64" })
case("all scalars, integer signature", muladd, { "i64(i64, i64)" }, { 3, 4 }, "i64", { "i64", "i64" })

-- signature choice: exact dtypes first, then NumPy's safe casting in order
case("exact match beats an earlier safe one", muladd, { "f64(f64, f64)", "i32(i32, i32)" },
  { kjit.arange(6, "i32"), kjit.arange(6, "i32") }, "i32", { "i32", "i32" })
case("i16 converts safely to i32 (first safe signature)", muladd, { "i32(i32, i32)", "f64(f64, f64)" },
  { kjit.arange(6, "i16"), 2 }, "i32", { "i32", "i32" })
case("u32 skips i32 (unsafe) for f64", muladd, { "i32(i32, i32)", "f64(f64, f64)" },
  { kjit.arange(6, "u32"), 2 }, "f64", { "f64", "f64" })
case("float scalar skips integer signatures", muladd, { "i64(i64, i64)", "f64(f64, f64)" },
  { kjit.arange(6), 0.5 }, "f64", { "f64", "f64" })
case("mixed f32 and i8 arrays meet at f32", muladd, { "f64(f64, f64)", "f32(f32, f32)" },
  { kjit.linspace(0, 1, 5, "f32"), kjit.arange(5, "i8") }, "f64", { "f64", "f64" })

-- ---- broadcasting ---------------------------------------------------------------------

case("(3,1) + (1,4)", muladd, SIGS,
  { kjit.arange(3, "f64"):reshape({ 3, 1 }), kjit.arange(4, "f64"):reshape({ 1, 4 }) }, "f64", { "f64", "f64" })
case("(2,3,4) + (4)", muladd, SIGS,
  { kjit.arange(24, "i64"):reshape({ 2, 3, 4 }), kjit.array({ 1, -1, 2, -2 }, "i64") }, "i64", { "i64", "i64" })
case("(2,3,4) + scalar, flat loop over a 3-D array", muladd, SIGS,
  { kjit.arange(24, "f64"):reshape({ 2, 3, 4 }), 2 }, "f64", { "f64", "f64" })
case("4-D (2,1,3,1) + (1,2,1,2)", muladd, SIGS,
  { kjit.arange(6, "f64"):reshape({ 2, 1, 3, 1 }), kjit.arange(4, "f64"):reshape({ 1, 2, 1, 2 }) }, "f64", { "f64", "f64" })
case("4-D same shapes (flat)", mixed, { "f32(f32, f32, f32)" },
  { kjit.linspace(-1, 1, 48, "f32"):reshape({ 2, 2, 3, 4 }), kjit.linspace(1, -1, 48, "f32"):reshape({ 2, 2, 3, 4 }), 2 },
  "f32", { "f32", "f32", "f32" }, 1e-6)
case("(1) + (5)", muladd, SIGS, { kjit.array({ 2.5 }), kjit.arange(5, "f64") }, "f64", { "f64", "f64" })
case("size 0: (0,3) + (3)", muladd, SIGS, { kjit.zeros({ 0, 3 }), kjit.arange(3, "f64") }, "f64", { "f64", "f64" })
case("size 0: (0) + (1)", muladd, SIGS, { kjit.zeros(0, "i32"), kjit.array({ 4 }, "i32") }, "i32", { "i32", "i32" })
case("i32 (2,1,3) + (4,1) + scalar", mixed, { "f64(f64, f64, f64)" },
  { kjit.arange(6, "i32"):reshape({ 2, 1, 3 }), kjit.arange(4, "i32"):reshape({ 4, 1 }), 1 }, "f64", { "f64", "f64", "f64" })

-- ---- out = ------------------------------------------------------------------------------

for _, target in ipairs(TARGETS) do
  test("out= writes in place, out may be an input [" .. target .. "]", function()
    local vf = kjit.vectorize(muladd, SIGS, T(target))
    local a = kjit.linspace(0, 1, 7)
    local want = reference(muladd, { a, 2 }, "f64", { "f64", "f64" })
    local got = on_target(target, vf, a, 2, { out = a })
    truthy(rawequal(got, a), "returns out")
    same(a, want, nil, "a")
  end)
  test("out= with broadcasting [" .. target .. "]", function()
    local vf = kjit.vectorize(muladd, SIGS, T(target))
    local x, y = kjit.arange(3, "i32"):reshape({ 3, 1 }), kjit.arange(4, "i32")
    local out = kjit.full({ 3, 4 }, 99, "i32")
    local got = on_target(target, vf, x, y, { out = out })
    truthy(rawequal(got, out), "returns out")
    same(out, reference(muladd, { x, y }, "i32", { "i32", "i32" }), nil, "out")
  end)
end

-- ---- CUDA specifics (simulator) ------------------------------------------------------------

test("cuda: device arrays in give a device array out", function()
  AT.simulated(true, function()
    local vf = kjit.vectorize(muladd, SIGS, { target = "cuda" })
    local x = kjit.linspace(0, 1, 1000, "f32")
    local dx = cuda.to_device(x)
    local dy = vf(dx, 3)
    truthy(cuda.is_device_array(dy), "device array result")
    eq(dy.dtype, "f32", "dtype")
    same(dy:copy_to_host(), reference(muladd, { x, 3 }, "f32", { "f32", "f32" }), 1e-6, "result")
    -- mixed: a host array and a device array -> device result
    local dz = vf(x, dx)
    truthy(cuda.is_device_array(dz), "mixed: device array result")
    same(dz:copy_to_host(), reference(muladd, { x, x }, "f32", { "f32", "f32" }), 1e-6, "mixed")
    -- device out given
    local dout = cuda.device_array(1000, "f32")
    truthy(rawequal(vf(dx, 2, { out = dout }), dout), "returns the given device out")
    same(dout:copy_to_host(), reference(muladd, { x, 2 }, "f32", { "f32", "f32" }), 1e-6, "device out")
    -- host out given with device inputs: copied to it
    local hout = kjit.zeros(1000, "f32")
    truthy(rawequal(vf(dx, 2, { out = hout }), hout), "returns the given host out")
    same(hout, reference(muladd, { x, 2 }, "f32", { "f32", "f32" }), 1e-6, "host out")
    -- a stream
    local s = cuda.stream()
    local r = vf(x, 2, { stream = s })
    same(r, reference(muladd, { x, 2 }, "f32", { "f32", "f32" }), 1e-6, "stream")
    -- larger than the grid cap: the grid-stride loop covers it
    local big = kjit.arange(256 * 1024 + 77, "i64")
    same(vf(big, 1), reference(muladd, { big, 1 }, "i64", { "i64", "i64" }), nil, "beyond 1024 blocks")
    raises("device array of i32", vf, cuda.to_device(kjit.arange(3, "i32")), 2.5)
  end)
end)

local ptxas = require "ptxas"

-- The generated kernels compile to PTX that ptxas accepts (the compiled
-- simulator shares the code generator, not the PTX path).
test("cuda: generated kernels compile to PTX that ptxas accepts", function()
  local vf = kjit.vectorize(mixed, { "f32(f32, f32, f32)", "f64(f64, f64, f64)" }, { target = "cuda" })
  AT.simulated(true, function()
    vf(kjit.zeros({ 2, 3 }, "f32"), kjit.zeros(3, "f32"), 1)      -- rank 2, broadcast
    vf(kjit.zeros(5), kjit.zeros(5), kjit.zeros(5))                -- rank 1
  end)
  local sigs = {
    ["f32(f32, f32, f32)|2|ii,i,s"] = "void(f32[:,:], f32[:,:], f32[:], f32[:])",
    ["f64(f64, f64, f64)|1|i,i,i"] = "void(f64[:], f64[:], f64[:], f64[:])",
  }
  local n = 0
  for key, sig in pairs(sigs) do
    local k = vf.wrappers[key]
    truthy(k, "kernel for " .. key)
    k:compile(sig, 90)
    local ptx = k:inspect("ptx", sig)
    truthy(ptx:find(".entry", 1, true), "PTX has an .entry")
    if key:sub(1, 3) == "f32" then
      truthy(not ptx:find("%.f64"), "f32 kernel has no f64 instruction")
    end
    ptxas.check(ptx, key)
    n = n + 1
  end
  eq(n, 2, "kernels checked")
end)

-- ---- errors ------------------------------------------------------------------------------

local THIS = debug.getinfo(1, "S").short_src

test("bad signature strings are errors naming the string", function()
  raises("malformed signature 'f64(f64, c64)'", kjit.vectorize, muladd, "f64(f64, c64)")
  raises("malformed signature 'f64 f64'", kjit.vectorize, muladd, "f64 f64")
  raises("malformed signature '(f64)': the result must be a dtype", kjit.vectorize, muladd, "(f64)")
  raises("malformed signature 'f64(f64,)'", kjit.vectorize, muladd, "f64(f64,)")
  raises("signature 'f64()' has no argument", kjit.vectorize, muladd, "f64()")
  raises("vectorize arguments are scalars", kjit.vectorize, muladd, "f64(f64[:], f64)")
  raises("different numbers of arguments", kjit.vectorize, muladd, { "f64(f64, f64)", "f64(f64)" })
  raises("signature must be a string", kjit.vectorize, muladd, { 42 })
  raises("non-empty list", kjit.vectorize, muladd, {})
  local line = debug.getinfo(1, "l").currentline + 1
  local msg = raises("malformed signature", function() return (kjit.vectorize(muladd, "i32(u9, i32)")) end)
  truthy(msg:find(THIS .. ":" .. line .. ":", 1, true) == 1, "error at the caller's line: " .. msg)
end)

test("options are checked", function()
  raises("unknown option 'targt'", kjit.vectorize, muladd, SIGS, { targt = "cpu" })
  raises("target must be", kjit.vectorize, muladd, SIGS, { target = "gpu" })
  raises("option 'fastmath' must be a boolean", kjit.vectorize, muladd, SIGS, { fastmath = 1 })
  raises("expected a Lua function", kjit.vectorize, 42, SIGS)
  local vf = kjit.vectorize(muladd, SIGS)
  raises("unknown call option 'stream'", vf, kjit.zeros(3), 1, { stream = 1 })
  raises("expects 2 arguments, got 1", vf, kjit.zeros(3))
  raises("argument #2 is a string", vf, kjit.zeros(3), "1")
  raises("argument #2 is a Lua table: pass a kjit array", vf, kjit.zeros(3), { 1, 2, 3 })
  local one = kjit.zeros(1)
  truthy(rawequal(vf(3, 4, { out = one }), one), "numbers with out: returns out")
  eq(one[1], 13.0, "out[1]")
  raises("out has shape {2}, the result's shape is {1}", vf, 3, 4, { out = kjit.zeros(2) })
  eq(vf.lua, muladd, "vf.lua")
  eq(vf.signatures[2], "f32(f32, f32)", "vf.signatures")
end)

test("no matching signature names the argument dtypes and the signatures", function()
  local vf = kjit.vectorize(muladd, { "i32(i32, i32)", "f32(f32, f32)" })
  local line = debug.getinfo(1, "l").currentline + 1
  local msg = raises("no signature matches the argument types (u64 {3}, Lua float)", function() return (vf(kjit.zeros(3, "u64"), 0.5)) end)
  truthy(msg:find("i32(i32, i32); f32(f32, f32)", 1, true), "lists the signatures: " .. msg)
  truthy(msg:find(THIS .. ":" .. line .. ":", 1, true) == 1, "at the caller's line: " .. msg)
  raises("(f64 {2}, Lua integer)", vf, kjit.zeros(2), 1)
end)

test("shapes that do not broadcast name both shapes", function()
  local vf = kjit.vectorize(muladd, SIGS)
  local line = debug.getinfo(1, "l").currentline + 1
  local msg = raises("argument #1 has shape {3, 2} and argument #2 has shape {3}", function() return (vf(kjit.zeros({ 3, 2 }), kjit.zeros(3))) end)
  truthy(msg:find(THIS .. ":" .. line .. ":", 1, true) == 1, "at the caller's line: " .. msg)
  raises("has shape {0} and argument #2 has shape {2}", vf, kjit.zeros(0), kjit.zeros(2))
end)

test("wrong out shape or dtype", function()
  local vf = kjit.vectorize(muladd, SIGS)
  raises("out has shape {4}, the result's shape is {3}", vf, kjit.zeros(3), 1, { out = kjit.zeros(4) })
  raises("out has dtype f32, the signature's result is f64", vf, kjit.zeros(3), 1, { out = kjit.zeros(3, "f32") })
  raises("out must be a kjit array", vf, kjit.zeros(3), 1, { out = 5 })
  local prev = cuda.simulate(true)
  local d = cuda.to_device(kjit.zeros(3))
  cuda.simulate(prev)
  raises("argument #1 is a device array: use target = \"cuda\"", vf, d, 1)
end)

for _, target in ipairs(TARGETS) do
  test("a run-time error inside the function is reported at the user's line [" .. target .. "]", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local vf = kjit.vectorize(function(x, y) return x // y end, "i64(i64, i64)", T(target))
    local big = kjit.full(10000, 1, "i64")
    big[7777] = 0
    local msg = raises("attempt to divide by zero", on_target, target, vf, kjit.arange(10000), big)
    truthy(msg:find(THIS .. ":" .. line .. ": attempt to divide by zero", 1, true) == 1, "at fn's line: " .. msg)
    eq(on_target(target, vf, kjit.arange(4), 2)[4], 1, "still usable")
    -- a result the output dtype cannot hold: at the function's line too
    local line2 = debug.getinfo(1, "l").currentline + 1
    local half = kjit.vectorize(function(x) return x / 2 end, "i32(i32)", T(target))
    msg = raises("number has no integer representation", on_target, target, half, kjit.arange(3, "i32"))
    truthy(msg:find(THIS .. ":" .. line2 .. ": number has no integer representation", 1, true) == 1,
      "at fn's line: " .. msg)
  end)
end

test("a compile error in the function names the user's line", function()
  local line = debug.getinfo(1, "l").currentline + 1
  local vf = kjit.vectorize(function(x) return x .. "!" end, "f64(f64)")
  raises(THIS .. ":" .. line .. ":", vf, kjit.zeros(2))
end)

test("a result that is not a number is an error at the function's line", function()
  local line = debug.getinfo(1, "l").currentline + 1
  local vf = kjit.vectorize(function(x) return x > 1 end, "f64(f64)")
  local msg = raises("number expected, got boolean", vf, kjit.zeros(3))
  truthy(msg:find(THIS .. ":" .. line .. ":", 1, true) == 1, "at fn's line: " .. msg)
end)

for _, target in ipairs(TARGETS) do
  test("a function that always raises: its own message at its line (" .. target .. ")", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local vf = kjit.vectorize(function(x) error("always boom") end, "f64(f64)", T(target))
    local msg = raises("always boom", on_target, target, vf, kjit.arange(3, "f64"))
    truthy(msg:find(THIS .. ":" .. line .. ": always boom", 1, true) == 1, "at fn's line: " .. msg)
  end)
end

test("a kjit.jit function can be vectorized", function()
  local jf = kjit.jit(muladd)
  local vf = kjit.vectorize(jf, "f64(f64, f64)")
  local one = kjit.zeros(1)
  truthy(rawequal(vf(3, 4, { out = one }), one), "numbers with out: returns out")
  eq(one[1], 13.0, "out[1]")
  raises("out has shape {2}, the result's shape is {1}", vf, 3, 4, { out = kjit.zeros(2) })
  eq(vf.lua, muladd, "vf.lua")
  same(vf(kjit.arange(4, "f64"), 2), reference(muladd, { kjit.arange(4, "f64"), 2 }, "f64", { "f64", "f64" }), nil, "result")
end)

test("options reach the compiled code: cache, fastmath, boundscheck", function()
  local dir = os.tmpname()
  os.remove(dir)
  kjit.cache_dir(dir)
  local ok, err = pcall(function()
    kjit.cache_stats(true)
    local vf = kjit.vectorize(mixed, "f64(f64, f64, f64)", { cache = true, fastmath = true, boundscheck = false })
    local x = kjit.linspace(-1, 1, 50)
    same(vf(x, 0.5, 2), reference(mixed, { x, 0.5, 2 }, "f64", { "f64", "f64", "f64" }), 1e-12, "result")
    truthy(kjit.cache_stats().stores >= 1, "the wrapper went to the disk cache")
  end)
  kjit.cache_clear()
  kjit.cache_dir(false)
  os.remove(dir)
  if not ok then error(err, 0) end
end)

-- ---- repeated calls (the plan cache) ------------------------------------------------------
-- A call stores its work keyed by the inputs' dtypes and shapes; each
-- call below changes one thing the stored work depends on, and must
-- compute afresh (checked against the reference), on the CPU targets.

for _, target in ipairs({ "cpu", "parallel" }) do
  test("repeated calls: shapes, broadcasting, signatures, numbers, out [" .. target .. "]", function()
    local vf = kjit.vectorize(muladd, SIGS, T(target))
    local function check(args, ret, argtypes, what)
      same(vf(table.unpack(args)), reference(muladd, args, ret, argtypes), nil, what)
      same(vf(table.unpack(args)), reference(muladd, args, ret, argtypes), nil, what .. " (again)")
    end
    local F64 = { "f64", "f64" }
    check({ kjit.arange(10, "f64"), kjit.arange(10, "f64") }, "f64", F64, "1-D 10")
    check({ kjit.arange(20, "f64"), kjit.arange(20, "f64") }, "f64", F64, "same dtypes, 1-D 20")
    check({ kjit.arange(20, "f64"):reshape({ 4, 5 }), kjit.arange(20, "f64"):reshape({ 4, 5 }) }, "f64", F64, "4x5")
    check({ kjit.arange(20, "f64"):reshape({ 5, 4 }), kjit.arange(20, "f64"):reshape({ 5, 4 }) }, "f64", F64, "5x4")
    check({ kjit.arange(4, "f64"):reshape({ 4, 1 }), kjit.arange(20, "f64"):reshape({ 4, 5 }) }, "f64", F64, "4x1 by 4x5")
    check({ kjit.arange(5, "f64"):reshape({ 1, 5 }), kjit.arange(20, "f64"):reshape({ 4, 5 }) }, "f64", F64, "1x5 by 4x5")
    check({ kjit.arange(20, "f64"):reshape({ 4, 5 }), kjit.arange(5, "f64") }, "f64", F64, "4x5 by 5")
    check({ kjit.arange(10, "f32"), kjit.arange(10, "f32") }, "f32", { "f32", "f32" }, "f32: another signature")
    check({ kjit.arange(10, "i32"), kjit.arange(10, "i32") }, "i32", { "i32", "i32" }, "i32: another signature")
    check({ kjit.arange(10, "i32"), kjit.arange(10, "i64") }, "f64", F64, "i32, i64 converted to f64")
    check({ kjit.arange(10, "f64"), 3 }, "f64", F64, "array, integer")
    check({ kjit.arange(10, "f64"), 2.5 }, "f64", F64, "array, float")
    check({ kjit.arange(10, "f64"), 7 }, "f64", F64, "array, another integer")
    check({ 3, kjit.arange(10, "f64") }, "f64", F64, "integer, array")
    check({ 3, 4 }, "f64", F64, "numbers")
    check({ 5, 6 }, "f64", F64, "other numbers")
    check({ 2.5, 4 }, "f64", F64, "float, integer")
    check({ kjit.arange(10, "i64"), 300 }, "i64", { "i64", "i64" }, "i64 array, integer")
    -- the same arrays, contents changed between calls
    local x, y = kjit.arange(6, "f64"):reshape({ 2, 3 }), kjit.full({ 2, 3 }, 2, "f64")
    check({ x, y }, "f64", F64, "2x3")
    x:fill(5)
    check({ x, y }, "f64", F64, "2x3 after fill")
    -- out given, then not, with the work stored either way
    local o = kjit.full({ 2, 3 }, -1, "f64")
    truthy(rawequal(vf(x, y, { out = o }), o), "returns out")
    same(o, reference(muladd, { x, y }, "f64", F64), nil, "out")
    x:fill(-3)
    truthy(rawequal(vf(x, y, { out = o }), o), "returns out again")
    same(o, reference(muladd, { x, y }, "f64", F64), nil, "out again")
    local r = vf(x, y)
    truthy(not rawequal(r, o), "no out: a new array")
    same(r, reference(muladd, { x, y }, "f64", F64), nil, "no out")
    -- numbers with out: an array of shape {1}, returned
    local one = kjit.zeros(1)
    truthy(rawequal(vf(3, 4, { out = one }), one), "numbers with out")
    eq(one[1], 13.0, "one[1]")
    eq(vf(3, 4), 13.0, "numbers without out: a number")
    -- out as an input of another shape of view
    local flat = kjit.arange(6, "f64")
    local v2 = flat:reshape({ 2, 3 })
    vf(v2, 1, { out = v2 })
    same(flat, reference(muladd, { kjit.arange(6, "f64"), 1 }, "f64", F64), nil, "in place through a view")
  end)
end

test("repeated calls: wrong calls after a stored one are still errors", function()
  local vf = kjit.vectorize(muladd, SIGS)
  local x, y = kjit.zeros(3), kjit.zeros(3)
  vf(x, y); vf(x, y, { out = kjit.zeros(3) })
  raises("out has shape {4}, the result's shape is {3}", vf, x, y, { out = kjit.zeros(4) })
  raises("out has shape {3, 1}, the result's shape is {3}", vf, x, y, { out = kjit.zeros({ 3, 1 }) })
  raises("out has dtype f32, the signature's result is f64", vf, x, y, { out = kjit.zeros(3, "f32") })
  raises("out must be a kjit array", vf, x, y, { out = 5 })
  raises("out must be a kjit array", vf, x, y, { out = {} })
  raises("unknown call option 'outt'", vf, x, y, { outt = x })
  raises("unknown call option 'stream'", vf, x, y, { out = kjit.zeros(3), stream = 1 })
  raises("argument #3 is a Lua table", vf, x, y, { x })
  raises("expects 2 arguments, got 3", vf, x, y, nil)
  raises("expects 2 arguments, got 3", vf, x, y, x)
  raises("expects 2 arguments, got 1", vf, x, { out = kjit.zeros(3) })
  raises("expects 2 arguments, got 4", vf, x, y, { out = kjit.zeros(3) }, nil)
  raises("argument #2 is a nil", vf, x, nil)
  raises("argument #2 is a string", vf, x, "1")
  raises("argument #2 has shape {4}", vf, x, kjit.zeros(4))
  vf(3, 4)
  raises("out has shape {2}, the result's shape is {1}", vf, 3, 4, { out = kjit.zeros(2) })
  local line = debug.getinfo(1, "l").currentline + 1
  local msg = raises("out has shape {4}", function() return (vf(x, y, { out = kjit.zeros(4) })) end)
  truthy(msg:find(THIS .. ":" .. line .. ":", 1, true) == 1, "at the caller's line: " .. msg)
end)

test("repeated calls: run-time errors and stores that fail, after stored calls", function()
  local line = debug.getinfo(1, "l").currentline + 1
  local vf = kjit.vectorize(function(x, y) return x // y end, "i64(i64, i64)")
  local a, b = kjit.arange(5), kjit.full(5, 2, "i64")
  same(vf(a, b), reference(function(x, y) return x // y end, { a, b }, "i64", { "i64", "i64" }), nil, "first")
  b[3] = 0
  local msg = raises("attempt to divide by zero", vf, a, b)
  truthy(msg:find(THIS .. ":" .. line .. ": attempt to divide by zero", 1, true) == 1, "at fn's line: " .. msg)
  local line2 = debug.getinfo(1, "l").currentline + 1
  local half = kjit.vectorize(function(x) return x / 2 end, "i32(i32)")
  local ev = kjit.array({ 2, 4, 6 }, "i32")
  same(half(ev), kjit.array({ 1, 2, 3 }, "i32"), nil, "even")
  ev[2] = 5
  msg = raises("number has no integer representation", half, ev)
  truthy(msg:find(THIS .. ":" .. line2 .. ": number has no integer representation (storing the function's result in the output array)", 1, true) == 1,
    "at fn's line: " .. msg)
  msg = raises("number has no integer representation", half, 7)
  eq(half(8), 4, "a number again")
end)

test("repeated calls: many shapes (the stored work is bounded and stays right)", function()
  local vf = kjit.vectorize(add, "i64(i64, i64)")
  for n = 1, 700 do
    local r = vf(kjit.full(n, n, "i64"), 1)
    eq(r.size, n, "size")
    eq(r[n], n + 1, "last")
  end
  eq(vf(kjit.full(3, 3, "i64"), 1)[3], 4, "an early shape again")
  -- shapes outlive the collection of the arrays that had them, or not
  local keep = kjit.full({ 2, 3 }, 5, "i64")
  eq(vf(keep, 1)[2][3], 6, "kept array")
  for round = 1, 3 do
    collectgarbage(); collectgarbage()
    local fresh = kjit.full({ 2, 3 }, round, "i64")
    local r = vf(fresh, keep, { out = kjit.zeros({ 2, 3 }, "i64") })
    eq(r[2][3], round + 5, "fresh array, round " .. round)
    eq(vf(keep, fresh)[1][1], round + 5, "kept and fresh, round " .. round)
    eq(vf(kjit.full({ 3, 2 }, round, "i64"), 1)[3][2], round + 1, "3x2, round " .. round)
  end
end)

test("repeated calls: numbers change between calls (0.0 and -0.0, NaN, wrapping)", function()
  local div = kjit.vectorize(function(x, y) return x / y end, "f64(f64, f64)")
  local ones = kjit.full(2, 1.0)
  eq(div(ones, 0.0)[1], math.huge, "1 / 0.0")
  eq(div(ones, -0.0)[1], -math.huge, "1 / -0.0")
  eq(div(ones, 0.0)[2], math.huge, "1 / 0.0 again")
  eq(div(1.0, -0.0), -math.huge, "numbers: 1 / -0.0")
  eq(div(1.0, 0.0), math.huge, "numbers: 1 / 0.0")
  local r = div(ones, 0 / 0)
  truthy(r[1] ~= r[1], "1 / NaN")
  eq(div(ones, 4.0)[1], 0.25, "1 / 4.0 after NaN")
  local wrap = kjit.vectorize(add, "u8(u8, u8)")
  local z = kjit.zeros(2, "u8")
  eq(wrap(z, 300)[1], 44, "300 wraps")
  eq(wrap(z, 44)[2], 44, "44")
  eq(wrap(z, 301)[1], 45, "301 wraps")
  eq(wrap(z, 300)[1], 44, "300 wraps again")
end)

test("arrays of records are refused with the remedy (vectorize and guvectorize)", function()
  local P = kjit.struct{ {"x", "f64"}, {"y", "f64"} }
  local p = kjit.zeros(3, P)
  local v = kjit.vectorize(function(x) return x end, "f64(f64)")
  local ok, err = pcall(v, p)
  truthy(not ok and tostring(err):find("argument #1 is an array of records: vectorized functions take numbers", 1, true), tostring(err))
  local g = kjit.guvectorize(function(x, out) out[1] = x[1] end, "(f64[:], f64[:])", "(n)->()")
  ok, err = pcall(g, p)
  truthy(not ok and tostring(err):find("records", 1, true), tostring(err))
end)
