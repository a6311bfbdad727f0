-- test_bool.lua: the bool dtype (one byte per element, Lua booleans).
-- The interpreter's arrays (constructors, store rule, conversions,
-- printing); compiled code against the interpreter (reads, stores,
-- wrong-type stores with equal messages, bool arrays as arguments and in
-- callees, signatures); cuda.jit kernels in the compiled simulator against
-- the interpreted one, and their PTX through ptxas; vectorize, guvectorize
-- and reductions against plain Lua loops.
local D = require "difftest"
local kjit = require "kjit"
local cuda = kjit.cuda
local ptxas = require "ptxas"

local function B(t) return kjit.array(t, "bool") end

-- every element as a Lua value, row-major
local function flat(a)
  local r, f = {}, a:reshape(a.size)
  for i = 1, f.size do r[i] = f[i] end
  return r
end

local function same_elems(got, want, what)
  eq(got.dtype, want.dtype, what .. " dtype")
  eq(got.size, want.size, what .. " size")
  local g, w = flat(got), flat(want)
  for i = 1, #w do eq(g[i], w[i], what .. "[" .. i .. "]") end
end

---------------------------------------------------------------------------
-- the interpreter's arrays
---------------------------------------------------------------------------

test("constructors take bool and read booleans", function()
  local z = kjit.zeros(3, "bool")
  eq(z.dtype, "bool"); eq(z[1], false); eq(#z, 3)
  eq(kjit.empty({2, 2}, "bool")[2][2], false)
  local f = kjit.full(4, true, "bool")
  for i = 1, 4 do eq(f[i], true) end
  eq(kjit.full(2, true).dtype, "bool", "full infers bool from a boolean")
  eq(kjit.full(2, 1).dtype, "f64", "and f64 from a number, as before")
  local a = kjit.array({true, false, true})
  eq(a.dtype, "bool", "array infers bool from its first leaf")
  eq(a[1], true); eq(a[2], false); eq(a[3], true)
  local m = kjit.array({{true, false}, {false, true}})
  eq(m.dtype, "bool"); eq(m[2][2], true); eq(m[1][2], false)
  eq(kjit.array({1, 0}).dtype, "f64")
  local rows = kjit.array({B({true, false}), B({false, false})})
  eq(rows.dtype, "bool", "rows of bool arrays make a bool array")
  eq(rows[1][1], true); eq(rows[2][1], false)
  eq(kjit.array({kjit.zeros(2, "u8")}).dtype, "f64", "rows of numbers: f64, as before")
  eq(B({false, true})[2], true)
  eq(tostring(kjit.bool), "bool", "the dtype object kjit.bool")
  eq(kjit.dtypes[11], "bool", "appended after the numbers (f16 came later: test_f16.lua)")
end)

test("copy, views, fill, totable and tostring", function()
  local a = B({true, false, true, false, false, true})
  local c = a:copy()
  c[1] = false
  eq(a[1], true, "copy is a copy"); eq(c.dtype, "bool")
  eq(kjit.array(a)[3], true, "kjit.array of a bool array")
  eq(kjit.array(a, "bool")[2], false)
  local m = a:reshape({2, 3})
  eq(m[2][3], true); m[2][1] = true; eq(a[4], true, "reshape is a view")
  local s = a:slice(2, 3)
  eq(#s, 2); eq(s[1], false); s[1] = true; eq(a[2], true, "slice is a view")
  eq(a:fill(false), a); eq(a[6], false)
  local t = B({{true, false}, {false, true}}):totable()
  eq(t[1][1], true); eq(t[1][2], false); eq(t[2][2], true)
  eq(tostring(B({true, false})), "kjit.array(bool, {2}) [true, false]")
  eq(tostring(kjit.zeros(12, "bool")),
     "kjit.array(bool, {12}) [false, false, false, ..., false, false, false]")
end)

test("stores take booleans only, with the same message as compiled code", function()
  local a = kjit.zeros(2, "bool")
  a[1] = true
  eq(a[1], true)
  local here = debug.getinfo(1, "S").short_src
  for _, v in ipairs{ 1, 0, 1.5, "true", {}, a } do
    local m = raises("boolean expected, got ", function() a[2] = v end)
    truthy(m:find(here, 1, true) == 1, "located at the store: " .. m)
  end
  raises("boolean expected, got nil", function() a[2] = nil end)
  raises("boolean expected, got kjit.array", function() a[2] = a end)
  raises("boolean expected, got number", function() a:fill(1) end)
  raises("boolean expected, got number", kjit.full, 2, 0, "bool")
  raises("number expected, got boolean", function() kjit.zeros(2)[1] = true end)
  eq(a[2], false, "nothing stored by a refused store")
end)

test("conversions between bool and numbers raise (a read, then a store)", function()
  raises("number expected, got boolean", kjit.array, B({true}), "u8")
  raises("boolean expected, got number", kjit.array, kjit.zeros(1, "u8"), "bool")
  raises("kjit.array: boolean expected, got number at [2]", kjit.array, {true, 1})
  raises("kjit.array: number expected, got boolean at [2]", kjit.array, {1, true})
  raises("kjit.array: boolean expected, got number at [1]", kjit.array, {1}, "bool")
  raises("ragged nested table (table at [2] where a boolean was expected)",
         kjit.array, {true, {false}})
  raises("bool is not a numeric dtype", kjit.arange, 3, "bool")
  raises("bool is not a numeric dtype", kjit.linspace, 0, 1, 3, "bool")
  eq(kjit.array({}, "bool").size, 0)
end)

---------------------------------------------------------------------------
-- compiled code against the interpreter
---------------------------------------------------------------------------

local function read3(a) return a[1], a[2], a[#a] end
local function count(a)
  local c = 0
  for i = 1, #a do if a[i] then c = c + 1 end end
  return c
end
local function negate(a, out)
  for i = 1, #a do out[i] = not a[i] end
  return out[1]
end
local function threshold(x, lo, out)
  for i = 1, #x do out[i] = x[i] > lo end
end
local function logic(a, b, out)
  local eqs = 0
  for i = 1, #a do
    out[i] = a[i] and not b[i] or (b[i] and not a[i])   -- xor
    if a[i] == b[i] then eqs = eqs + 1 end
    if a[i] == true then eqs = eqs + 10 end
    if a[i] ~= false then eqs = eqs + 100 end
  end
  return eqs
end
local function grid(m)
  local c = 0
  for i = 1, m.shape[1] do
    for j = 1, m.shape[2] do
      m[i][j] = (i + j) % 2 == 0
      if m[i][j] then c = c + i * j end
    end
  end
  return c, m[1][1], m[m.shape[1]][m.shape[2]]
end
local function store_at(a, i, v) a[i] = v end
local function store_maybe(a, c, x) a[1] = c and x or false end
local function store_maybe_nil(a, c, x) a[1] = c and x or nil end
local function arith(a) return a[1] + 1 end
local function compare(a) return a[1] < a[2] end
local function pick(a, i, x, y) if a[i] then return x end return y end

test("reads, counts and stores of computed booleans", function()
  D.cases(read3, {B({true, false, true})}, {B({false, false, true, false})})
  D.cases(count, {B({true, false, true, true})}, {kjit.zeros(7, "bool")}, {B({})})
  D.check(negate, B({true, false, false}), kjit.zeros(3, "bool"))
  D.check(threshold, kjit.array({1, 5, -2, 3.5}), 2, kjit.zeros(4, "bool"))
  D.check(threshold, kjit.array({1, 5, -2, 3}, "i32"), 2.5, kjit.full(4, true))
  D.check(logic, B({true, true, false, false}), B({true, false, true, false}), kjit.zeros(4, "bool"))
  D.cases(pick, {B({true, false}), 1, 10, 2.5}, {B({true, false}), 2, 10, 2.5})
  D.check(grid, kjit.zeros({3, 4}, "bool"))
  D.check(store_at, kjit.zeros(3, "bool"), 2, true)
  D.check(store_at, B({true, true}), 1, false)
  D.check(store_at, B({true, true}), 2.0, false)
  D.check(store_maybe, B({true}), false, 1)
end)

test("wrong-type stores raise the interpreter's message", function()
  local z = function() return kjit.zeros(3, "bool") end
  D.check_error("boolean expected, got number", store_at, z(), 1, 1)
  D.check_error("boolean expected, got number", store_at, z(), 2, 0.5)
  D.check_error("boolean expected, got nil", store_at, z(), 3, nil)
  D.check_error("boolean expected, got kjit.array", store_at, z(), 1, z())
  D.check_error("boolean expected, got number", store_maybe, z(), true, 7)
  D.check_error("boolean expected, got number", store_maybe_nil, z(), true, 7)
  D.check_error("boolean expected, got nil", store_maybe_nil, z(), false, 7)
  -- the index is checked first, as the interpreter's __newindex does
  D.check_error("index 4 out of bounds [1, 3]", store_at, z(), 4, 1)
  D.check_error("index 1.5 is not an integer", store_at, z(), 1.5, nil)
  -- a number array refuses a boolean when the store runs, as interpreted
  D.check_error("number expected, got boolean", store_at, kjit.zeros(2), 1, true)
  -- a boolean element is not a number
  D.check_error("attempt to perform arithmetic on a boolean value", arith, B({true}))
  D.check_error("attempt to compare two boolean values", compare, B({true, false}))
end)

local function inner(a, i) return a[i] end
local function outer(a) return inner(a, 1), not inner(a, #a) end
local jinner = D.jit(inner)
local function via_jit(a) return jinner(a, 2) end

test("bool arrays through callees and kjit.jit objects", function()
  D.check(outer, B({true, true, false}))
  D.check(via_jit, B({false, true}))
end)

test("signatures and specializations keep bool apart from u8", function()
  local f = kjit.jit(function(a) return a[1] end)
  eq(f(B({true})), true)
  eq(f(kjit.array({1}, "u8")), 1, "a u8 array is another specialization")
  eq(f(B({false})), false)
  local g = kjit.jit(function(a) return a[1] end)
  g:compile("bool(bool[:])")
  eq(g(B({true})), true)
  local h = kjit.jit(inner)
  h:compile("(boolean[:], i64)")
  h:compile("b1(b1[:], i64)")
  eq(#h.signatures, 1, "boolean[:] and b1[:] are the same bool arrays")
  h:compile("(u8[:], i64)")
  eq(#h.signatures, 2, "u8[:] is another")
  eq(h(B({false, true}), 2), true)
  raises("cannot read", function() kjit.jit(inner):compile("(bogus[:], i64)") end)
  local sig = kjit.signature and kjit.signature("(bool[:, :])")
  if sig then eq(sig.args[1].dtype, "bool") end
end)

---------------------------------------------------------------------------
-- kernels: the interpreted simulator is the reference
---------------------------------------------------------------------------

local function kflip(a, out, v)
  local i = cuda.grid(1)
  if i <= #a then
    out[i] = not a[i]
    if a[i] and i == 1 then out[i] = v end
  end
end
local function kbad(a, out)
  local i = cuda.grid(1)
  if i <= #a then out[i] = i end
end
local function kshared(out)
  local s = cuda.shared.array(4, "bool")
  local t = cuda.threadIdx.x + 1
  s[t] = t % 2 == 0
  cuda.syncthreads()
  out[t] = s[5 - t]
end

-- runs kernel fn[cfg] on copies of args in the interpreted and the compiled
-- simulator; the arrays (or the error messages) must agree
local function sim_both(fn, cfg, args)
  local res = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local a = {}
    for i = 1, #args do a[i] = kjit.isarray(args[i]) and args[i]:copy() or args[i] end
    local ok, err = pcall(function() cuda.jit(fn)[cfg](table.unpack(a, 1, #args)) end)
    cuda.simulate(prev)
    res[#res + 1] = { ok = ok, err = err, a = a }
  end
  local i, c = res[1], res[2]
  eq(c.ok, i.ok, "both raise or neither: " .. tostring(i.err) .. " / " .. tostring(c.err))
  if not i.ok then eq(c.err, i.err, "error message") end
  for k = 1, #args do
    if kjit.isarray(args[k]) then same_elems(c.a[k], i.a[k], "argument " .. k) end
  end
  return i
end

test("kernels: compiled simulator against the interpreted one", function()
  local a = B({true, false, true, false, true})
  sim_both(kflip, {1, 8}, {a, kjit.zeros(5, "bool"), false})
  sim_both(kflip, {2, 4}, {a, kjit.full(5, true), true})
  local r = sim_both(kbad, {1, 8}, {a, kjit.zeros(5, "bool")})
  truthy(not r.ok and r.err:find("boolean expected, got number", 1, true), tostring(r.err))
  sim_both(kshared, {1, 4}, {kjit.zeros(4, "bool")})
end)

test("kernels on bool arrays compile to PTX that ptxas accepts", function()
  for _, c in ipairs{ {kflip, "void(bool[:], bool[:], bool)"}, {kbad, "void(bool[:], bool[:])"},
                      {kshared, "void(bool[:])"} } do
    local k = cuda.jit(c[1])
    k:compile(c[2], 90)
    local ptx = k:inspect("ptx")
    truthy(ptx:find(".entry", 1, true), "PTX has an .entry")
    ptxas.check(ptx, c[2])
  end
end)

test("atomics refuse bool arrays", function()
  local function kat(a) cuda.atomic.add(a, 1, true) end
  local ok, err = pcall(function() cuda.jit(kat):compile("void(bool[:])", 90) end)
  truthy(not ok and tostring(err):find("not bool", 1, true), tostring(err))
end)

---------------------------------------------------------------------------
-- vectorize, guvectorize, reductions: against plain Lua loops
---------------------------------------------------------------------------

local function elementwise(fn, ...)
  local args, n = { ... }, 0
  for _, a in ipairs(args) do if kjit.isarray(a) then n = a.size end end
  local out = {}
  for i = 1, n do
    local v = {}
    for k, a in ipairs(args) do
      if kjit.isarray(a) then v[k] = a[i] else v[k] = a end   -- (a[i] may be false)
    end
    out[i] = fn(table.unpack(v, 1, #args))
  end
  return out
end

local function same_list(got, want, what)
  local g = flat(got)
  eq(#g, #want, what .. " size")
  for i = 1, #want do eq(g[i], want[i], what .. "[" .. i .. "]") end
end

test("vectorize: bool inputs and outputs", function()
  local pos = function(x) return x > 0 end
  local xor = function(a, b) return a ~= b end
  local sel = function(c, x, y) if c then return x end return y end
  local x = kjit.array({-1, 2, 0, 3.5})
  local a, b = B({true, true, false, false}), B({true, false, true, false})
  for _, target in ipairs{ "cpu", "parallel" } do
    local vpos = kjit.vectorize(pos, "bool(f64)", {target = target})
    local r = vpos(x)
    eq(r.dtype, "bool")
    same_list(r, elementwise(pos, x), target .. " pos")
    local vxor = kjit.vectorize(xor, "bool(bool, bool)", {target = target})
    same_list(vxor(a, b), elementwise(xor, a, b), target .. " xor")
    same_list(vxor(a, true), elementwise(xor, a, true), target .. " xor scalar")
    same_list(vxor(a, b), elementwise(xor, a, b), target .. " xor again (a plan)")
    local vsel = kjit.vectorize(sel, {"f64(bool, f64, f64)"}, {target = target})
    same_list(vsel(a, 1.5, x), elementwise(sel, a, 1.5, x), target .. " select")
    local out = kjit.full(4, true)
    eq(vxor(a, b, {out = out}), out)
    same_list(out, elementwise(xor, a, b), target .. " out =")
  end
  local vxor = kjit.vectorize(xor, "bool(bool, bool)")
  raises("no signature matches", vxor, a, 1)
  raises("no signature matches", vxor, kjit.array({1, 0, 1, 0}), b)
  raises("boolean expected, got number", kjit.vectorize(function(v) return v end, "bool(f64)"), x)
end)

test("vectorize on the simulated GPU: bool in and out", function()
  local prev = cuda.simulate(true)
  local ok, err = pcall(function()
    local xor = function(p, q) return p ~= q end
    local a, b = B({true, true, false, false}), B({true, false, true, false})
    local v = kjit.vectorize(xor, "bool(bool, bool)", {target = "cuda"})
    same_list(v(a, b), elementwise(xor, a, b), "cuda xor")
    same_list(v(a, true), elementwise(xor, a, true), "cuda xor with a Lua boolean")
    local da, db = cuda.to_device(a), cuda.to_device(b)
    eq(da.dtype, "bool")
    same_list(v(da, db):copy_to_host(), elementwise(xor, a, b), "cuda xor of device arrays")
  end)
  cuda.simulate(prev)
  if not ok then error(err, 0) end
end)

test("guvectorize: bool core arrays", function()
  local cnt = kjit.guvectorize(function(a, out)
    local c = 0
    for i = 1, #a do if a[i] then c = c + 1 end end
    out[1] = c
  end, "void(bool[:], i64[:])", "(n)->()")
  local m = B({{true, false, true}, {false, false, true}})
  same_list(cnt(m), {2, 1}, "counts")
  local pos = kjit.guvectorize(function(a, out)
    for i = 1, #a do out[i] = a[i] > 0 end
  end, "void(f64[:], bool[:])", "(n)->(n)")
  local r = pos(kjit.array({{1, -1}, {0, 2}}))
  eq(r.dtype, "bool")
  same_list(r, {true, false, false, true}, "positives")
  local sel = kjit.guvectorize(function(a, flag, out)
    for i = 1, #a do if flag then out[i] = a[i] else out[i] = not a[i] end end
  end, "void(bool[:], bool, bool[:])", "(n),()->(n)")
  same_list(sel(B({true, false}), false), {false, true}, "a Lua boolean core scalar")
  same_list(sel(B({true, false}), true), {true, false}, "a Lua boolean core scalar")
end)

test("reductions: any and all over bool arrays", function()
  local function lua_fold(f, a, init)
    local acc = init
    local s = 1
    if acc == nil then acc, s = a[1], 2 end
    for i = s, #a do acc = f(acc, a[i]) end
    return acc
  end
  local por = function(p, q) return p or q end
  local pand = function(p, q) return p and q end
  local n = 40000
  local cases = { kjit.zeros(n, "bool"), kjit.full(n, true), B({false, true}), B({true}) }
  cases[5] = kjit.zeros(n, "bool"); cases[5][n - 1] = true
  cases[6] = kjit.full(n, true); cases[6][17] = false
  for _, target in ipairs{ "cpu", "parallel" } do
    local any, all = kjit.reduce(por, {target = target}), kjit.reduce(pand, {target = target})
    for k, a in ipairs(cases) do
      eq(any(a), lua_fold(por, a), target .. " any #" .. k)
      eq(all(a), lua_fold(pand, a), target .. " all #" .. k)
      eq(all(a, false), lua_fold(pand, a, false), target .. " all with init #" .. k)
    end
  end
  eq(kjit.reduce(por)(kjit.zeros(0, "bool"), true), true, "empty with an initial value")
  local prev = cuda.simulate(true)
  local ok, err = pcall(function()
    local any, all = cuda.reduce(por), cuda.reduce(pand)
    for k, a in ipairs(cases) do
      eq(any(a), lua_fold(por, a), "cuda any #" .. k)
      eq(all(a), lua_fold(pand, a), "cuda all #" .. k)
    end
  end)
  cuda.simulate(prev)
  if not ok then error(err, 0) end
  raises("attempt to perform arithmetic on a boolean value",
         kjit.reduce(function(p, q) return p + q end), B({true, false}))
end)

test("ipairs over a bool array gives booleans, compiled as interpreted", function()
  local function count(a) local n = 0 for i, x in ipairs(a) do if x then n = n + i end end return n end
  local function first(a) for _, x in ipairs(a) do return x end return false end
  local a = kjit.array({true, false, true, true}, "bool")
  D.check(count, a)
  D.check(first, a)
  D.check(first, kjit.array({false}, "bool"))
end)

test("kjit.array of a bool array in another dtype raises, compiled as interpreted", function()
  for _, d in ipairs({ "f64", "u8", "i32" }) do
    D.check_error("number expected, got boolean", function(a) return kjit.array(a, d) end,
                  kjit.array({ true, false }, "bool"))
  end
  D.check(function(a) return kjit.array(a, "bool") end, kjit.array({ true, false }, "bool"))
  D.check_error("boolean expected, got number", function(a) return kjit.array(a, "bool") end,
                kjit.array({ 1.5 }))
end)
