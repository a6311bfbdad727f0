-- test_guvectorize.lua: kjit.guvectorize on every target, differentially.
--
-- The reference calls the interpreted core function in plain Lua once per
-- loop index, on views taken here (independently of kjit/ufunc.lua):
-- broadcast loop dimensions read at 1, "()" inputs as numbers, "()"
-- outputs as 1-element arrays. Targets: arraytest.lua's TARGETS (cpu,
-- parallel, cuda in both simulators).
local kjit = require "kjit"
local cuda = kjit.cuda

local AT = require "arraytest"
local TARGETS, T, on_target = AT.TARGETS, AT.opts, AT.on_target
local THIS = debug.getinfo(1, "S").short_src


local function shape_of(v) return math.type(v) and {} or v.shape end

-- Takes loop index idx (length R) of an argument whose first nloop
-- dimensions are loop dimensions (aligned right): a view, or an element.
local function at(a, nloop, idx)
  local s = a.shape
  local v = a
  for j = 1, nloop do
    local i = idx[#idx - nloop + j]
    v = v[s[j] == 1 and 1 or i]
  end
  return v
end

-- ins: core-dim counts of the inputs; outs: {dtype, core extents} of the
-- outputs; argtypes: the chosen signature's input dtypes.
local function reference(fn, args, incore, outs, argtypes)
  local conv, loops = {}, {}
  for i, a in ipairs(args) do
    if math.type(a) then conv[i] = kjit.full(1, a, argtypes[i])[1]
    elseif a.dtype ~= argtypes[i] then conv[i] = kjit.array(a, argtypes[i])
    else conv[i] = a end
    local s = shape_of(a)
    loops[i] = #s - incore[i]
  end
  local loop = {}
  local R = 0
  for i = 1, #args do R = math.max(R, loops[i]) end
  for k = 1, R do
    loop[k] = 1
    for i, a in ipairs(args) do
      local d = shape_of(a)[k - (R - loops[i])]
      if k - (R - loops[i]) >= 1 and d ~= 1 then loop[k] = d end
    end
  end
  -- outputs; a "()" output gets a 1-element scratch array per call whose
  -- value goes to element t (flat, row-major) of the loop-shaped result
  local results, flat = {}, {}
  for j, o in ipairs(outs) do
    local shape = {}
    for _, d in ipairs(loop) do shape[#shape + 1] = d end
    for _, d in ipairs(o.core) do shape[#shape + 1] = d end
    if #shape == 0 then shape = { 1 } end
    results[j] = kjit.zeros(shape, o.dtype)
    flat[j] = results[j]:reshape(results[j].size)
  end
  local total = 1
  for _, d in ipairs(loop) do total = total * d end
  local idx = {}
  for t = 1, total do
    local r = t - 1
    for k = R, 1, -1 do idx[k] = r % loop[k] + 1; r = r // loop[k] end
    local call, scratch = {}, {}
    for i, a in ipairs(conv) do
      call[i] = math.type(a) and a or at(a, loops[i], idx)
    end
    for j, o in ipairs(outs) do
      if #o.core == 0 then
        scratch[j] = kjit.zeros(1, o.dtype)
        call[#args + j] = scratch[j]
      else
        call[#args + j] = at(results[j], R, idx)
      end
    end
    fn(table.unpack(call, 1, #args + #outs))
    for j in pairs(scratch) do flat[j][t] = scratch[j][1] end
  end
  if R == 0 then
    for j, o in ipairs(outs) do
      if #o.core == 0 then results[j] = results[j][1] end
    end
  end
  return results
end

local same = AT.same

local function copy_arg(a) return math.type(a) and a or a:copy() end

local function case(name, fn, sigs, layout, args, incore, outs, argtypes, tol)
  for _, target in ipairs(TARGETS) do
    test(name .. " [" .. target .. "]", function()
      local want = reference(fn, args, incore, outs, argtypes)
      local gf = kjit.guvectorize(fn, sigs, layout, T(target))
      local a = {}
      for i = 1, #args do a[i] = copy_arg(args[i]) end
      local got = table.pack(on_target(target, gf, table.unpack(a, 1, #args)))
      eq(got.n, #outs, "number of results")
      for j = 1, #outs do same(got[j], want[j], tol, "output " .. j) end
      for i = 1, #args do
        if not math.type(args[i]) then same(a[i], args[i], nil, "input " .. i) end
      end
    end)
  end
end

-- ---- core functions ---------------------------------------------------------------

local function add_scalar(x, y, out)
  for i = 1, #x do out[i] = x[i] + y end
end
local function dot(x, y, out)
  local s = 0
  for i = 1, #x do s = s + x[i] * y[i] end
  out[1] = s
end
local function row_sums(m, out)
  for i = 1, m.shape[1] do
    local s = 0
    for j = 1, m.shape[2] do s = s + m[i][j] end
    out[i] = s
  end
end
local function matvec(m, v, out)
  for i = 1, #m do
    local s = 0
    local row = m[i]
    for j = 1, #v do s = s + row[j] * v[j] end
    out[i] = s
  end
end
local function minmax(x, lo, hi)
  local a, b = x[1], x[1]
  for i = 2, #x do
    if x[i] < a then a = x[i] end
    if x[i] > b then b = x[i] end
  end
  lo[1] = a
  hi[1] = b
end
local function scale_add(a, x, b, out)   -- "(),(n),()->(n)"
  for i = 1, #x do out[i] = a * x[i] + b end
end

local F = function(dt, ...) return { dtype = dt, core = { ... } } end

case("(n),()->(n) f64, scalar", add_scalar, { "void(f64[:], f64, f64[:])", "void(f32[:], f32, f32[:])" },
  "(n),()->(n)", { kjit.linspace(0, 1, 12):reshape({ 3, 4 }), 2.5 }, { 1, 0 }, { F("f64", 4) }, { "f64", "f64" })
case("(n),()->(n) f32, scalar converted", add_scalar, { "void(f64[:], f64, f64[:])", "void(f32[:], f32, f32[:])" },
  "(n),()->(n)", { kjit.linspace(0, 1, 12, "f32"):reshape({ 3, 4 }), 0.1 }, { 1, 0 }, { F("f32", 4) }, { "f32", "f32" }, 1e-6)
case("(n),()->(n) with an array of scalars, broadcast", add_scalar, "void(i64[:], i64, i64[:])",
  "(n),()->(n)", { kjit.arange(12):reshape({ 3, 4 }), kjit.array({ 10, 20 }, "i64"):reshape({ 2, 1 }) },
  { 1, 0 }, { F("i64", 4) }, { "i64", "i64" })
case("(n),(n)->() dot over a loop dimension", dot, "void(f64[:], f64[:], f64[:])",
  "(n),(n)->()", { kjit.linspace(-1, 1, 15):reshape({ 5, 3 }), kjit.array({ 1, 2, 3 }) },
  { 1, 1 }, { F("f64") }, { "f64", "f64" })
case("(n),(n)->() no loop dimension gives a number", dot, "void(f64[:], f64[:], f64)",
  "(n),(n)->()", { kjit.array({ 1, 2, 3 }), kjit.array({ 4, 5, 6 }) }, { 1, 1 }, { F("f64") }, { "f64", "f64" })
case("(n),(n)->() i32 inputs converted to i64", dot, { "void(i64[:], i64[:], i64[:])" },
  "(n),(n)->()", { kjit.arange(12, "i32"):reshape({ 2, 2, 3 }), kjit.arange(3, "i32") },
  { 1, 1 }, { F("i64") }, { "i64", "i64" })
case("(n,m)->(n) row sums, loop of 2", row_sums, "void(f64[:,:], f64[:])",
  "(n,m)->(n)", { kjit.arange(24, "f64"):reshape({ 2, 3, 4 }) }, { 2 }, { F("f64", 3) }, { "f64" })
case("(n,m)->(n) u8 wraps on store", row_sums, "void(u8[:,:], u8[:])",
  "(n,m)->(n)", { kjit.full({ 2, 3, 4 }, 200, "u8") }, { 2 }, { F("u8", 3) }, { "u8" })
case("(n,m),(m)->(n) matvec with a broadcast vector", matvec, "void(f64[:,:], f64[:], f64[:])",
  "(n,m),(m)->(n)", { kjit.linspace(0, 1, 24):reshape({ 2, 3, 4 }), kjit.linspace(1, 2, 8):reshape({ 2, 1, 4 }) },
  { 2, 1 }, { F("f64", 3) }, { "f64", "f64" })
case("(n)->(),() two outputs", minmax, "void(i32[:], i32[:], i32[:])",
  "(n)->(),()", { kjit.array({ { 3, -1, 7 }, { 0, 9, 2 }, { 5, 5, 5 } }, "i32") }, { 1 },
  { F("i32"), F("i32") }, { "i32" })
case("(),(n),()->(n) scalars around an array, 4-D output", scale_add, "void(f64, f64[:], f64, f64[:])",
  "(),(n),()->(n)", { kjit.array({ 1, 2 }):reshape({ 2, 1, 1 }), kjit.arange(18, "f64"):reshape({ 3, 2, 3 }), 1 },
  { 0, 1, 0 }, { F("f64", 3) }, { "f64", "f64", "f64" })
local function clamp(x, lo, hi, out)
  out[1] = math.min(math.max(x, lo), hi)
end
case("()->() over 4 loop dimensions", clamp, "void(f64, f64, f64, f64)",
  "(),(),()->()", { kjit.linspace(-2, 2, 48):reshape({ 2, 2, 3, 4 }), -1, kjit.array({ 0.5, 1, 1.5, 3 }) },
  { 0, 0, 0 }, { F("f64") }, { "f64", "f64", "f64" })
case("size 0 loop dimension", add_scalar, "void(f64[:], f64, f64[:])",
  "(n),()->(n)", { kjit.zeros({ 0, 4 }), 1 }, { 1, 0 }, { F("f64", 4) }, { "f64", "f64" })
case("size 0 core dimension", dot, "void(f64[:], f64[:], f64[:])",
  "(n),(n)->()", { kjit.zeros({ 3, 0 }), kjit.zeros(0) }, { 1, 1 }, { F("f64") }, { "f64", "f64" })

for _, target in ipairs(TARGETS) do
  test("out= given, one and two outputs [" .. target .. "]", function()
    local gf = kjit.guvectorize(add_scalar, "void(f64[:], f64, f64[:])", "(n),()->(n)", T(target))
    local x = kjit.linspace(0, 1, 6):reshape({ 2, 3 })
    local out = kjit.full({ 2, 3 }, -1)
    local want = reference(add_scalar, { x, 3 }, { 1, 0 }, { F("f64", 3) }, { "f64", "f64" })
    truthy(rawequal(on_target(target, gf, x, 3, { out = out }), out), "returns out")
    same(out, want[1], nil, "out")
    -- in place
    truthy(rawequal(on_target(target, gf, x, 3, { out = x }), x), "returns x")
    same(x, want[1], nil, "in place")
    local mm = kjit.guvectorize(minmax, "void(i32[:], i32[:], i32[:])", "(n)->(),()", T(target))
    local m = kjit.array({ { 3, -1, 7 }, { 0, 9, 2 } }, "i32")
    local lo, hi = kjit.zeros(2, "i32"), kjit.zeros(2, "i32")
    local r1, r2 = on_target(target, mm, m, { out = { lo, hi } })
    truthy(rawequal(r1, lo) and rawequal(r2, hi), "returns the outs")
    eq(lo[1], -1, "lo[1]"); eq(lo[2], 0, "lo[2]"); eq(hi[1], 7, "hi[1]"); eq(hi[2], 9, "hi[2]")
  end)
end

test("cuda: device arrays in give device arrays out", function()
  AT.simulated(true, function()
    local gf = kjit.guvectorize(dot, "void(f32[:], f32[:], f32[:])", "(n),(n)->()", { target = "cuda" })
    local x, y = kjit.linspace(0, 1, 600, "f32"):reshape({ 200, 3 }), kjit.array({ 1, 2, 3 }, "f32")
    local want = reference(dot, { x, y }, { 1, 1 }, { F("f32") }, { "f32", "f32" })
    local d = gf(cuda.to_device(x), y)
    truthy(cuda.is_device_array(d), "device result")
    same(d:copy_to_host(), want[1], 1e-6, "result")
    local dout = cuda.device_array(200, "f32")
    truthy(rawequal(gf(cuda.to_device(x), cuda.to_device(y), { out = dout }), dout), "device out")
    same(dout:copy_to_host(), want[1], 1e-6, "device out")
  end)
end)

local ptxas = require "ptxas"

-- A kernel with loop dimensions, a broadcast input and two "()" outputs
-- (cuda.local_array scratch) compiles to PTX that ptxas accepts.
test("cuda: the generated kernel compiles to PTX that ptxas accepts", function()
  local gf = kjit.guvectorize(minmax, "void(f32[:], f32[:], f32[:])", "(n)->(),()", { target = "cuda" })
  local prev = cuda.simulate(true)
  local ok, err = pcall(gf, kjit.zeros({ 2, 3, 4 }, "f32"))
  cuda.simulate(prev)
  if not ok then error(err, 0) end
  local key, k = next(gf.wrappers)
  eq(key, "void(f32[:], f32[:], f32[:])|2|ii", "pattern")
  local sig = "void(f32[:,:], f32[:,:], f32[:,:,:])"
  k:compile(sig, 90)
  local ptx = k:inspect("ptx", sig)
  truthy(ptx:find(".entry", 1, true), "PTX has an .entry")
  ptxas.check(ptx)
end)

-- ---- errors --------------------------------------------------------------------------

test("malformed layouts", function()
  local sig = "void(f64[:], f64[:])"
  raises("malformed layout '(n)': no '->'", kjit.guvectorize, row_sums, sig, "(n)")
  raises("malformed layout '(n)->': no outputs", kjit.guvectorize, row_sums, sig, "(n)->")
  raises("malformed layout '->(n)': no inputs", kjit.guvectorize, row_sums, sig, "->(n)")
  raises("malformed layout '(n->(n)'", kjit.guvectorize, row_sums, sig, "(n->(n)")
  raises("malformed layout '((n))->(n)'", kjit.guvectorize, row_sums, sig, "((n))->(n)")
  raises("'' is not a dimension name", kjit.guvectorize, row_sums, sig, "(n,)->(n)")
  raises("'1' is not a dimension name", kjit.guvectorize, row_sums, sig, "(1)->(n)")
  raises("trailing comma", kjit.guvectorize, row_sums, sig, "(n),->(n)")
  raises("malformed layout '(n)(m)->(n)'", kjit.guvectorize, row_sums, sig, "(n)(m)->(n)")
  raises("dimension 'k' of output 1 appears in no input", kjit.guvectorize, row_sums, sig, "(n)->(k)")
  raises("layout must be a string", kjit.guvectorize, row_sums, sig, 3)
end)

test("signatures must match the layout", function()
  raises("signature 'void(f64[:], f64[:])' has 2 arguments, the layout '(n),()->(n)' has 3 (2 inputs, 1 output)",
    kjit.guvectorize, add_scalar, "void(f64[:], f64[:])", "(n),()->(n)")
  raises("argument 1 has 2 dimensions, the layout '(n),()->(n)' gives it 1",
    kjit.guvectorize, add_scalar, "void(f64[:,:], f64, f64[:])", "(n),()->(n)")
  raises("return nothing", kjit.guvectorize, add_scalar, "f64(f64[:], f64, f64[:])", "(n),()->(n)")
  raises("malformed signature 'void(f64[:, f64, f64[:])'", kjit.guvectorize, add_scalar, "void(f64[:, f64, f64[:])", "(n),()->(n)")
  raises("unknown option 'parallel'", kjit.guvectorize, add_scalar, "void(f64[:], f64, f64[:])", "(n),()->(n)", { parallel = true })
  -- "()" outputs may be written f64 or f64[:]
  kjit.guvectorize(dot, "void(f64[:], f64[:], f64)", "(n),(n)->()")
  kjit.guvectorize(dot, "void(f64[:], f64[:], f64[:])", "(n),(n)->()")
end)

test("core dimensions that disagree, arguments with too few dimensions", function()
  local gf = kjit.guvectorize(dot, "void(f64[:], f64[:], f64[:])", "(n),(n)->()")
  local line = debug.getinfo(1, "l").currentline + 1
  local msg = raises("core dimension 'n' is 3 in argument #1 but 4 in argument #2", function() return (gf(kjit.zeros(3), kjit.zeros(4))) end)
  truthy(msg:find(THIS .. ":" .. line .. ":", 1, true) == 1, "at the caller's line: " .. msg)
  raises("argument #1 is a number, the layout '(n),(n)->()' needs an array with 1 core dimension", gf, 1, kjit.zeros(4))
  local rs = kjit.guvectorize(row_sums, "void(f64[:,:], f64[:])", "(n,m)->(n)")
  raises("argument #1 has 1 dimension, the layout '(n,m)->(n)' needs at least 2", rs, kjit.zeros(3))
  raises("shapes do not broadcast: argument #1 has shape {2} and argument #2 has shape {3}", gf,
    kjit.zeros({ 2, 5 }), kjit.zeros({ 3, 5 }))
  raises("no signature matches the argument types (f32 {2, 5}, f64 {5})", kjit.guvectorize(dot,
    "void(i32[:], i32[:], i32[:])", "(n),(n)->()"), kjit.zeros({ 2, 5 }, "f32"), kjit.zeros(5))
  local outer = kjit.guvectorize(function(x, out) end, "void(f64[:], f64[:,:])", "(n)->(n,n)")
  raises("output 1 would have 5 dimensions (at most 4)", outer, kjit.zeros({ 1, 2, 3, 4 }))
end)

test("wrong outs", function()
  local gf = kjit.guvectorize(add_scalar, "void(f64[:], f64, f64[:])", "(n),()->(n)")
  raises("out has shape {2, 4}, the result's shape is {2, 3}", gf, kjit.zeros({ 2, 3 }), 1, { out = kjit.zeros({ 2, 4 }) })
  raises("out has dtype f32, the signature's result is f64", gf, kjit.zeros({ 2, 3 }), 1, { out = kjit.zeros({ 2, 3 }, "f32") })
  local mm = kjit.guvectorize(minmax, "void(i32[:], i32[:], i32[:])", "(n)->(),()")
  raises("out must be a list of 2 arrays", mm, kjit.zeros({ 2, 3 }, "i32"), { out = kjit.zeros(2, "i32") })
  raises("out[2] has shape {3}, the result's shape is {2}", mm, kjit.zeros({ 2, 3 }, "i32"),
    { out = { kjit.zeros(2, "i32"), kjit.zeros(3, "i32") } })
  raises("expects 1 argument, got 2", mm, kjit.zeros(3, "i32"), kjit.zeros(3, "i32"))
end)

for _, target in ipairs(TARGETS) do
  test("a run-time error in the core function is reported at its line [" .. target .. "]", function()
    local line = debug.getinfo(1, "l").currentline + 2
    local gf = kjit.guvectorize(function(x, out)
      for i = 1, #x do out[i] = 10 // x[i] end
    end, "void(i64[:], i64[:])", "(n)->(n)", T(target))
    local x = kjit.full({ 300, 2 }, 1, "i64")
    x[201][2] = 0
    local msg = raises("attempt to divide by zero", on_target, target, gf, x)
    truthy(msg:find(THIS .. ":" .. line .. ": attempt to divide by zero", 1, true) == 1, "at fn's line: " .. msg)
    local bad = kjit.guvectorize(function(x, out)
      out[#x + 1] = 1
    end, "void(i64[:], i64[:])", "(n)->(n)", T(target))
    raises("out of bounds", on_target, target, bad, kjit.zeros({ 2, 2 }, "i64"))
  end)
end

-- ---- repeated calls (the plan cache) ------------------------------------------------------
-- A call stores its work keyed by the inputs' dtypes and shapes; each
-- call below changes one thing the stored work depends on.

for _, target in ipairs({ "cpu", "parallel" }) do
  test("repeated calls: loop and core shapes, broadcasting, numbers, out [" .. target .. "]", function()
    local gf = kjit.guvectorize(dot, { "void(f64[:], f64[:], f64[:])", "void(i64[:], i64[:], i64[:])" },
      "(n),(n)->()", T(target))
    local function check(args, dt, what)
      local want = reference(dot, args, { 1, 1 }, { F(dt) }, { dt, dt })
      same(gf(table.unpack(args)), want[1], nil, what)
      same(gf(table.unpack(args)), want[1], nil, what .. " (again)")
    end
    check({ kjit.linspace(-1, 1, 15):reshape({ 5, 3 }), kjit.array({ 1, 2, 3 }) }, "f64", "5x3, 3")
    check({ kjit.linspace(-1, 1, 12):reshape({ 4, 3 }), kjit.array({ 1, 2, 3 }) }, "f64", "4x3, 3")
    check({ kjit.linspace(-1, 1, 20):reshape({ 5, 4 }), kjit.array({ 1, 2, 3, 4 }) }, "f64", "5x4, 4: core dimension")
    check({ kjit.linspace(-1, 1, 6):reshape({ 2, 1, 3 }), kjit.linspace(0, 1, 12):reshape({ 4, 3 }) }, "f64", "2x1x3, 4x3")
    check({ kjit.arange(12):reshape({ 4, 3 }), kjit.arange(3) }, "i64", "i64: another signature")
    check({ kjit.array({ 1, 2, 3 }), kjit.array({ 4, 5, 6 }) }, "f64", "no loop dimension: a number")
    check({ kjit.array({ 1, 2 }), kjit.array({ 4, 5 }) }, "f64", "no loop dimension, n = 2")
    -- out given, then not
    local m, v = kjit.linspace(-1, 1, 12):reshape({ 4, 3 }), kjit.array({ 1, 2, 3 })
    local want = reference(dot, { m, v }, { 1, 1 }, { F("f64") }, { "f64", "f64" })[1]
    local r = kjit.full(4, 9)
    truthy(rawequal(gf(m, v, { out = r }), r), "returns out")
    same(r, want, nil, "out")
    r:fill(9)
    truthy(rawequal(gf(m, v, { out = { r } }), r), "out as a list")
    same(r, want, nil, "out as a list")
    local r2 = gf(m, v)
    truthy(not rawequal(r2, r), "no out: a new array")
    same(r2, want, nil, "no out")
    -- no loop dimension with out: the array, not a number
    local one = kjit.zeros(1)
    truthy(rawequal(gf(v, v, { out = one }), one), "numbers with out")
    eq(one[1], 14.0, "one[1]")
    eq(gf(v, v), 14.0, "a number without out")
    -- numbers for "()" inputs
    local ga = kjit.guvectorize(add_scalar, "void(f64[:], f64, f64[:])", "(n),()->(n)", T(target))
    local x = kjit.arange(6, "f64"):reshape({ 2, 3 })
    for _, s in ipairs({ 2.5, 3, -1, 0.25 }) do
      same(ga(x, s), reference(add_scalar, { x, s }, { 1, 0 }, { F("f64", 3) }, { "f64", "f64" })[1], nil,
        "scalar " .. s)
    end
    same(ga(x, kjit.array({ 10, 20 }):reshape({ 2, 1 })),
      reference(add_scalar, { x, kjit.array({ 10, 20 }):reshape({ 2, 1 }) }, { 1, 0 }, { F("f64", 3) }, { "f64", "f64" })[1],
      nil, "an array of scalars after numbers")
    -- two outputs, given and not
    local mm = kjit.guvectorize(minmax, "void(i32[:], i32[:], i32[:])", "(n)->(),()", T(target))
    local a = kjit.array({ { 3, -1, 7 }, { 0, 9, 2 } }, "i32")
    for _ = 1, 2 do
      local lo, hi = mm(a)
      eq(lo[1], -1, "lo[1]"); eq(lo[2], 0, "lo[2]"); eq(hi[1], 7, "hi[1]"); eq(hi[2], 9, "hi[2]")
    end
    local lo, hi = kjit.zeros(2, "i32"), kjit.zeros(2, "i32")
    local r1, rr2 = mm(a, { out = { lo, hi } })
    truthy(rawequal(r1, lo) and rawequal(rr2, hi), "returns the outs")
    eq(lo[2], 0, "lo[2]"); eq(hi[2], 9, "hi[2]")
    a[2][2] = -50
    r1, rr2 = mm(a, { out = { lo, hi } })
    eq(lo[2], -50, "lo[2] after a change"); eq(hi[2], 2, "hi[2] after a change")
    local n1, n2 = mm(kjit.array({ 4, -4 }, "i32"))
    eq(n1, -4, "no loop dimension: lo"); eq(n2, 4, "no loop dimension: hi")
  end)
end

test("repeated calls: wrong calls after a stored one are still errors", function()
  local gf = kjit.guvectorize(add_scalar, "void(f64[:], f64, f64[:])", "(n),()->(n)")
  local x = kjit.zeros({ 2, 3 })
  gf(x, 1); gf(x, 1, { out = kjit.zeros({ 2, 3 }) })
  raises("out has shape {2, 4}, the result's shape is {2, 3}", gf, x, 1, { out = kjit.zeros({ 2, 4 }) })
  raises("out has dtype f32, the signature's result is f64", gf, x, 1, { out = kjit.zeros({ 2, 3 }, "f32") })
  raises("out must be an array", gf, x, 1, { out = { kjit.zeros({ 2, 3 }), kjit.zeros({ 2, 3 }) } })
  raises("unknown call option 'stream'", gf, x, 1, { out = kjit.zeros({ 2, 3 }), stream = 1 })
  raises("expects 2 arguments, got 3", gf, x, 1, nil)
  raises("argument #2 is a nil", gf, x, nil)
  local mm = kjit.guvectorize(minmax, "void(i32[:], i32[:], i32[:])", "(n)->(),()")
  local a = kjit.zeros({ 2, 3 }, "i32")
  mm(a, { out = { kjit.zeros(2, "i32"), kjit.zeros(2, "i32") } })
  raises("out must be a list of 2 arrays", mm, a, { out = kjit.zeros(2, "i32") })
  raises("out must be a list of 2 arrays", mm, a, { out = { kjit.zeros(2, "i32") } })
  raises("out[2] has dtype f64, the signature's result is i32", mm, a, { out = { kjit.zeros(2, "i32"), kjit.zeros(2) } })
  raises("out[1] has shape {3}, the result's shape is {2}", mm, a, { out = { kjit.zeros(3, "i32"), kjit.zeros(2, "i32") } })
  local line = debug.getinfo(1, "l").currentline + 1
  local msg = raises("out[1] has shape {3}", function() return (mm(a, { out = { kjit.zeros(3, "i32"), kjit.zeros(2, "i32") } })) end)
  truthy(msg:find(THIS .. ":" .. line .. ":", 1, true) == 1, "at the caller's line: " .. msg)
end)
