-- difftest.lua: differential testing of kjit.jit against the Lua 5.4
-- interpreter (DESIGN.md §3: "the interpreted function is the
-- specification").
--
--   local D = require "difftest"
--   local kjit = D.kjit            -- the kjit module (or a stand-in, below)
--   test("name", function() D.check(fn, 1, 2.5, kjit.zeros(4)) end)
--
-- D.check(fn, ...)
--   Runs fn(...) in the interpreter on deep copies of the arguments (kjit
--   arrays copied with a:copy(), aliasing between arguments preserved),
--   then runs kjit.jit(fn) on other copies. Every return value must be the
--   same value with the same subtype (same_value: integer vs float, NaN ==
--   NaN, -0.0 ~= 0.0), the number of results must match, and every array
--   argument must hold exactly the same elements afterwards. If the
--   interpreted run raises, the compiled run must raise the same message
--   (both carry the "file:line:" of the test source), and the arrays must
--   hold the same contents (the writes done before the error). Returns the
--   interpreted results (or nil, message when it raised). One exception:
--   Lua 5.4.4 reports integer '//' and '%' by zero at a stale line, so for
--   those two messages the line number is not compared (see same_error).
-- D.check_f32(tol, fn, ...)
--   The same, but float results and float array elements are compared with
--   relative tolerance tol, absolute below magnitude 1 as near() does (f32
--   arithmetic stays f32 in compiled code while the interpreter computes in
--   double). Integers and booleans stay exact; NaN matches NaN, inf inf.
-- D.check_error(phrase, fn, ...)
--   Like D.check, but the interpreted run must raise an error containing
--   phrase (so a test meant to check an error cannot pass silently); the
--   compiled message must equal the interpreted one exactly.
-- D.check_error_loose(phrase, fn, ...)
--   Both runs must raise and both messages contain phrase; they may differ
--   otherwise. For errors whose exact wording is not pinned down by Lua.
-- D.check_fresh(make, fn)
--   make() builds the arguments anew for each run (for views whose aliasing
--   with a base array matters); returns args (with n) [, arrays to compare].
-- D.check_opts(opts, fn, ...)
--   D.check with kjit.jit(fn, opts) (opt levels, boundscheck = false, ...).
-- D.cases(fn, {args}, {args}, ...), D.cases_error(phrase, fn, {args}, ...),
-- D.cases_f32(tol, fn, {args}, ...), D.cases_opts(opts, fn, {args}, ...):
-- the same on several argument lists.
-- D.jit(fn [, opts])   kjit.jit(fn, opts) (fn itself in fake mode or when
--                      kjit.jit does not exist yet, so top-level code runs).
--
-- Environment switches (to validate the corpus itself without a compiler):
--   KJIT_FAKE_JIT=1     D.jit returns fn: both halves run interpreted; every
--                       D.check must pass. If the kjit module has no arrays
--                       yet, a pure-Lua stand-in for kjit.array/zeros/full is
--                       used (store rules included), so buffer tests run too.
--   KJIT_FAKE_ARRAYS=1  use the pure-Lua arrays even if kjit has real ones
--                       (only meaningful together with KJIT_FAKE_JIT=1).
-- Without a compiler (kjit.jit nil) and without KJIT_FAKE_JIT, every
-- D.check calls skip(), so the test files run (and SKIP) today.

local D = {}

local ok_kjit, real = pcall(require, "kjit")
if not ok_kjit or type(real) ~= "table" then real = nil end

local FAKE_JIT = os.getenv("KJIT_FAKE_JIT") == "1"
local has_real_arrays = real ~= nil and real.zeros ~= nil and real.array ~= nil
local use_fake_arrays = FAKE_JIT and (os.getenv("KJIT_FAKE_ARRAYS") == "1" or not has_real_arrays)

D.fake = FAKE_JIT
D.real_kjit = real

------------------------------------------------------------------------
-- Pure-Lua stand-in arrays (validation mode only). Same observable rules
-- as the real buffers: 1-based, row views, exact-integer store check,
-- C-cast wrap for narrow integers, f32 rounding, bounds errors.
------------------------------------------------------------------------
local fake = {}
do
  local DT = {
    i8 = { bits = 8, signed = true }, u8 = { bits = 8, signed = false },
    i16 = { bits = 16, signed = true }, u16 = { bits = 16, signed = false },
    i32 = { bits = 32, signed = true }, u32 = { bits = 32, signed = false },
    i64 = { bits = 64, signed = true }, u64 = { bits = 64, signed = false },
    f32 = { float = true }, f64 = { float = true },
  }
  local mt = {}
  fake.mt = mt

  local function convert(dtype, v, level)
    if math.type(v) == nil then
      error("kjit array: cannot store a " .. type(v) .. " value", level + 1)
    end
    local d = DT[dtype]
    if dtype == "f64" then return v + 0.0 end
    if dtype == "f32" then return (string.unpack("<f", string.pack("<f", v + 0.0))) end
    local iv = math.tointeger(v)
    if iv == nil then error("number has no integer representation", level + 1) end
    if d.bits < 64 then
      iv = iv & ((1 << d.bits) - 1)
      if d.signed and iv >= (1 << (d.bits - 1)) then iv = iv - (1 << d.bits) end
    end
    return iv
  end

  local function new(dtype, shape, data, off)
    local strides, size = {}, 1
    for k = #shape, 1, -1 do strides[k] = size; size = size * shape[k] end
    local sh = {}
    for k = 1, #shape do sh[k] = shape[k] end
    return setmetatable({ shape = sh, size = size, ndim = #shape, dtype = dtype,
                          _data = data, _off = off, _strides = strides }, mt)
  end

  local function checkindex(a, i, level)
    local ii = math.tointeger(i)
    if ii == nil then error("index " .. tostring(i) .. " is not an integer", level + 1) end
    if ii < 1 or ii > a.shape[1] then
      error(string.format("index %d out of bounds [1, %d]", ii, a.shape[1]), level + 1)
    end
    return ii
  end

  local methods = {}
  function methods.copy(a)
    local b = new(a.dtype, a.shape, {}, 0)
    for k = 1, a.size do b._data[k] = a._data[a._off + k] end
    return b
  end
  function methods.fill(a, v)
    v = convert(a.dtype, v, 2)
    for k = 1, a.size do a._data[a._off + k] = v end
  end
  function methods.slice(a, first, last)
    if first < 1 or last > a.shape[1] or last < first - 1 then
      error("slice out of bounds", 2)
    end
    local sh = {}
    for k = 1, a.ndim do sh[k] = a.shape[k] end
    sh[1] = last - first + 1
    return new(a.dtype, sh, a._data, a._off + (first - 1) * a._strides[1])
  end
  function methods.reshape(a, shape)
    local sh = type(shape) == "number" and { shape } or shape
    local v = new(a.dtype, sh, a._data, a._off)
    if v.size ~= a.size then error("reshape: size mismatch", 2) end
    return v
  end
  function methods.totable(a)
    local t = {}
    for i = 1, a.shape[1] do
      local x = a[i]
      if a.ndim > 1 then x = x:totable() end
      t[i] = x
    end
    return t
  end

  mt.__index = function(a, i)
    if type(i) == "string" then return methods[i] end
    i = checkindex(a, i, 2)
    if a.ndim == 1 then return a._data[a._off + i] end
    local sub = {}
    for k = 2, a.ndim do sub[k - 1] = a.shape[k] end
    return new(a.dtype, sub, a._data, a._off + (i - 1) * a._strides[1])
  end
  mt.__newindex = function(a, i, v)
    i = checkindex(a, i, 2)
    if a.ndim ~= 1 then error("cannot assign to a row of a " .. a.ndim .. "-D kjit array", 2) end
    a._data[a._off + i] = convert(a.dtype, v, 2)
  end
  mt.__len = function(a) return a.shape[1] end
  mt.__tostring = function(a) return "fake kjit.array(" .. a.dtype .. ")" end

  local function shape_of(s)
    if type(s) == "number" then return { s } end
    local t = {}
    for k = 1, #s do t[k] = s[k] end
    return t
  end
  function fake.zeros(shape, dtype)
    dtype = dtype or "f64"
    local sh = shape_of(shape)
    local a = new(dtype, sh, {}, 0)
    local z = convert(dtype, 0, 1)
    for k = 1, a.size do a._data[k] = z end
    return a
  end
  fake.empty = fake.zeros
  function fake.full(shape, v, dtype)
    local a = fake.zeros(shape, dtype)
    a:fill(v)
    return a
  end
  function fake.array(t, dtype)
    dtype = dtype or "f64"
    local sh, x = {}, t
    while type(x) == "table" do sh[#sh + 1] = #x; x = x[1] end
    local a = new(dtype, sh, {}, 0)
    local k = 0
    local function walk(u, depth)
      for i = 1, sh[depth] do
        if depth == #sh then k = k + 1; a._data[k] = convert(dtype, u[i], 3)
        else walk(u[i], depth + 1) end
      end
    end
    walk(t, 1)
    return a
  end
end

-- The module the test files build arrays with.
if use_fake_arrays then
  D.kjit = fake
  D.arrays = "fake"
elseif has_real_arrays then
  D.kjit = real
  D.arrays = "real"
else
  -- No arrays anywhere: any constructor call skips the test.
  D.arrays = nil
  D.kjit = setmetatable({}, { __index = function(_, k)
    if real and real[k] ~= nil then return real[k] end
    return function() skip("kjit arrays (kjit." .. tostring(k) .. ") not available yet") end
  end })
end

local array_mt
local function is_array(v)
  local mt = getmetatable(v)
  if mt == nil then return false end
  if mt == fake.mt then return true end
  if type(v) ~= "userdata" then return false end
  if array_mt == nil and has_real_arrays then
    local ok, z = pcall(real.zeros, 1)
    if ok then array_mt = getmetatable(z) end
  end
  -- a record view (p[i] of an array of records) is one record, not an
  -- array: it has fields only (its .ndim is a field error)
  return mt == array_mt and pcall(function() return v.ndim end)
end
D.is_array = is_array

------------------------------------------------------------------------
-- jit
------------------------------------------------------------------------
local function jit_available()
  return FAKE_JIT or (real ~= nil and type(real.jit) ~= "nil")
end
D.jit_available = jit_available

function D.jit(fn, opts)
  if FAKE_JIT or real == nil or real.jit == nil then return fn end
  return real.jit(fn, opts)
end

-- One dispatcher per (function, opts) so that several argument sets reuse
-- (and so test) the specialization cache.
local cache = setmetatable({}, { __mode = "k" })
local function jitted(fn, opts)
  local per = cache[fn]
  if not per then per = {}; cache[fn] = per end
  local key = opts or per
  local j = per[key]
  if j == nil then
    local ok, r = pcall(D.jit, fn, opts)
    if not ok then return nil, r end
    j = r
    per[key] = j
  end
  return j
end

------------------------------------------------------------------------
-- helpers
------------------------------------------------------------------------
local function fmt(v)
  local mt = math.type(v)
  if mt == "float" then
    if v ~= v then return "nan (float)" end
    local s = string.format("%.17g", v)
    if not s:find("[%.eni]") then s = s .. ".0" end
    return s .. " (float)"
  elseif mt == "integer" then
    return string.format("%d (integer)", v)
  elseif is_array(v) then
    return "array(" .. tostring(v.dtype) .. ", " .. table.concat(v.shape, "x") .. ")"
  end
  return tostring(v)
end
D.fmt = fmt

local function fmt_args(args)
  local t = {}
  for k = 1, args.n do t[k] = fmt(args[k]) end
  return "(" .. table.concat(t, ", ") .. ")"
end

local function fname(fn)
  local info = debug.getinfo(fn, "S")
  if info and info.what == "Lua" then
    return string.format("function at %s:%d", info.short_src, info.linedefined)
  end
  return tostring(fn)
end

local function copy_args(args)
  local out, memo = { n = args.n }, {}
  for k = 1, args.n do
    local v = args[k]
    if is_array(v) then
      if memo[v] == nil then memo[v] = v:copy() end
      v = memo[v]
    end
    out[k] = v
  end
  return out
end

-- Flat list of elements of an array: { {path, value}, ... } in row-major order.
local function elements(a)
  local list = {}
  -- a record (kjit.struct layout P): its fields, array fields and nested
  -- records included, in declaration order
  local function walk_record(r, P, path)
    for _, f in ipairs(P.fields) do
      local p, v = path .. "." .. f.name, r[f.name]
      local nested = type(f.dtype) == "userdata"
      if f.count > 0 then
        for j = 1, f.count do
          if nested then walk_record(v[j], f.dtype, p .. "[" .. j .. "]")
          else list[#list + 1] = { p .. "[" .. j .. "]", v[j] } end
        end
      elseif nested then walk_record(v, f.dtype, p)
      else list[#list + 1] = { p, v } end
    end
  end
  local function walk(x, path)
    local n = #x
    local rec = type(x.dtype) == "userdata" and x.ndim == 1 and x.dtype   -- records
    for i = 1, n do
      local p = path .. "[" .. i .. "]"
      local v = x[i]
      if rec then walk_record(v, rec, p)
      elseif is_array(v) then walk(v, p) else list[#list + 1] = { p, v } end
    end
  end
  walk(a, "")
  return list
end

local function close(a, b, tol)
  if math.type(a) ~= "float" or math.type(b) ~= "float" then return same_value(a, b) end
  if a ~= a or b ~= b then return a ~= a and b ~= b end
  if a == b then return true end
  if a == math.huge or a == -math.huge or b == math.huge or b == -math.huge then return false end
  -- relative to the larger magnitude; below 1 in magnitude the tolerance is
  -- absolute (as the harness's near()), since f32 rounding errors scale
  -- with the operands, which cancellation can make much larger than the result
  return math.abs(a - b) <= tol * math.max(math.abs(a), math.abs(b), 1.0)
end

local function cmp(a, b, tol)
  if tol then return close(a, b, tol) end
  return same_value(a, b)
end

-- Where the D.check call is, for messages: the first Lua frame outside
-- this file (robust to tail calls).
local function callsite()
  local me = debug.getinfo(1, "S").source
  for level = 2, 50 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    if info.source ~= me and info.what ~= "C" then
      return info.short_src .. ":" .. tostring(info.currentline)
    end
  end
  return "?"
end

-- Lua 5.4.4 (the Debian lua5.4 these tests run with) reports integer
-- division and modulo by zero at a stale line: the VM does not save the pc
-- before raising them, so the line is that of the last instruction that
-- did (often the function header). Compiled code reports the operator's
-- line, as DESIGN.md §4 asks; for these two messages only, the line number
-- is left out of the comparison (source name and text must still match).
local STALE_LINE_MESSAGES = { "attempt to divide by zero", "attempt to perform 'n%0'" }
local function same_error(im, cm)
  if im == cm then return true end
  -- documented (docs/reference/differences.md, #12): the sign of a NaN folded by LLVM
  -- may differ; "index -nan" and "index nan" are the same message
  local function unsign(m) return (m:gsub("%-nan", "nan")) end
  if unsign(im) == unsign(cm) then return true end
  -- documented (docs/reference/differences.md, #13): a few type errors are
  -- found when compiling; their message is the interpreter's, after the
  -- words every compile error starts with ("compile error for (f64[:]): ")
  local place, rest = cm:match("^(.-:%-?%d+: )compile error for %b(): (.*)$")
  if place and place .. rest == im then return true end
  for _, t in ipairs(STALE_LINE_MESSAGES) do
    if im:sub(-#t) == t then
      local function strip(m) return (m:gsub("^(.-):%d+: ", "%1:?: ", 1)) end
      return strip(im) == strip(cm)
    end
  end
  return false
end
D.same_error = same_error

-- make() returns the argument list (with field n) for one run, and
-- optionally a list of extra arrays to compare afterwards (e.g. the base of
-- a view passed as an argument). It is called once per run.
D.count = 0   -- argument sets checked so far (for reports)
local function core_make(tol, phrase, loose, opts, fn, make)
  if not jit_available() then skip("kjit.jit not available yet") end
  D.count = D.count + 1
  local where = callsite()
  local ia, iwatch = make()
  local what = fname(fn) .. fmt_args(ia)
  local function fail(msg)
    error(string.format("%s: %s: %s", where, what, msg), 0)
  end

  local ir = table.pack(pcall(fn, table.unpack(ia, 1, ia.n)))

  local j, jerr = jitted(fn, opts)
  if j == nil then fail("kjit.jit(fn) raised: " .. tostring(jerr)) end
  local ca, cwatch = make()
  local cr = table.pack(pcall(j, table.unpack(ca, 1, ca.n)))

  if phrase then
    if ir[1] then fail("interpreted run did not raise (expected an error containing '" .. phrase .. "')") end
    local im = tostring(ir[2])
    if not im:find(phrase, 1, true) then
      fail("interpreted error '" .. im .. "' does not contain '" .. phrase .. "'")
    end
    if cr[1] then fail("compiled run did not raise; interpreted raised: " .. im) end
    local cm = tostring(cr[2])
    if loose then
      if not cm:find(phrase, 1, true) then
        fail("compiled error '" .. cm .. "' does not contain '" .. phrase .. "' (interpreted: '" .. im .. "')")
      end
    elseif not same_error(im, cm) then
      fail("error messages differ:\n    interpreted: " .. im .. "\n    compiled:    " .. cm)
    end
  elseif not ir[1] then
    local im = tostring(ir[2])
    if cr[1] then
      fail("interpreted run raised '" .. im .. "' but the compiled run returned normally")
    end
    local cm = tostring(cr[2])
    if not same_error(im, cm) then
      fail("error messages differ:\n    interpreted: " .. im .. "\n    compiled:    " .. cm)
    end
  else
    if not cr[1] then fail("compiled run raised: " .. tostring(cr[2])) end
    if ir.n ~= cr.n then
      fail(string.format("number of results differ: interpreted %d, compiled %d", ir.n - 1, cr.n - 1))
    end
    for k = 2, ir.n do
      local a, b = ir[k], cr[k]
      if is_array(a) and is_array(b) then
        -- returned arrays: dtype, shape, then the elements
        if a.dtype ~= b.dtype then
          fail(string.format("result #%d: interpreted dtype %s, compiled %s", k - 1, a.dtype, b.dtype))
        end
        local sa, sb = table.concat(a.shape, "x"), table.concat(b.shape, "x")
        if sa ~= sb then
          fail(string.format("result #%d: interpreted shape %s, compiled %s", k - 1, sa, sb))
        end
        local ea, eb = elements(a), elements(b)
        for e = 1, #ea do
          if not cmp(ea[e][2], eb[e] and eb[e][2], tol) then
            fail(string.format("result #%d%s: interpreted %s, compiled %s", k - 1, ea[e][1], fmt(ea[e][2]), fmt(eb[e] and eb[e][2])))
          end
        end
      elseif not cmp(a, b, tol) then
        fail(string.format("result #%d: interpreted %s, compiled %s", k - 1, fmt(a), fmt(b)))
      end
    end
  end

  -- identity: a result that is an argument, or an earlier result, in one
  -- run is the same one in the other (f(a) == a, as interpreted)
  if ir[1] then
    local function ident(r, args, k)
      local v = r[k]
      if not is_array(v) then return "" end
      for j = 1, args.n do if rawequal(v, args[j]) then return "argument #" .. j end end
      for j = 2, k - 1 do if rawequal(v, r[j]) then return "result #" .. (j - 1) end end
      return "a new array"
    end
    for k = 2, ir.n do
      local x, y = ident(ir, ia, k), ident(cr, ca, k)
      if x ~= y then fail(string.format("result #%d: interpreted %s, compiled %s", k - 1, x, y)) end
    end
  end

  -- array arguments must hold the same elements afterwards
  local after = ir[1] and "" or " (after the error)"
  local function same_contents(x, y, name)
    local ea, eb = elements(x), elements(y)
    if #ea ~= #eb then fail(name .. ": sizes differ") end
    for e = 1, #ea do
      if not cmp(ea[e][2], eb[e][2], tol) then
        fail(string.format("%s%s%s: interpreted %s, compiled %s", name, ea[e][1], after, fmt(ea[e][2]), fmt(eb[e][2])))
      end
    end
  end
  for k = 1, ia.n do
    if is_array(ia[k]) then same_contents(ia[k], ca[k], "argument #" .. k) end
  end
  for k = 1, iwatch and #iwatch or 0 do
    same_contents(iwatch[k], cwatch[k], "watched array #" .. k)
  end

  if ir[1] then return table.unpack(ir, 2, ir.n) end
  return nil, ir[2]
end

local function core(tol, phrase, loose, opts, fn, ...)
  local args = table.pack(...)
  return core_make(tol, phrase, loose, opts, fn, function() return copy_args(args) end)
end

function D.check(fn, ...) return core(nil, nil, false, nil, fn, ...) end
function D.check_f32(tol, fn, ...) return core(tol, nil, false, nil, fn, ...) end
function D.check_error(phrase, fn, ...) return core(nil, phrase, false, nil, fn, ...) end
function D.check_error_loose(phrase, fn, ...) return core(nil, phrase, true, nil, fn, ...) end
-- D.check_opts(opts, fn, ...): D.check with kjit.jit(fn, opts).
function D.check_opts(opts, fn, ...) return core(nil, nil, false, opts, fn, ...) end
-- D.check_fresh(make, fn): D.check where make() builds the arguments anew
-- for each run (returning an argument list with field n, and optionally a
-- list of arrays to compare afterwards): for views (a:slice, rows) whose
-- aliasing with a base array must survive, which copying would lose.
function D.check_fresh(make, fn) return core_make(nil, nil, false, nil, fn, make) end

-- core on each argument list {args...} (a field n counts trailing nils).
local function each(tol, phrase, opts, fn, ...)
  for k = 1, select("#", ...) do
    local a = select(k, ...)
    core(tol, phrase, false, opts, fn, table.unpack(a, 1, a.n or #a))
  end
end

-- D.cases(fn, {args1}, {args2}, ...): D.check on each argument list.
function D.cases(fn, ...) each(nil, nil, nil, fn, ...) end
-- D.cases_opts(opts, fn, {args1}, ...): D.check_opts on each argument list.
function D.cases_opts(opts, fn, ...) each(nil, nil, opts, fn, ...) end
-- D.cases_error(phrase, fn, {args1}, ...): D.check_error on each argument list.
function D.cases_error(phrase, fn, ...) each(nil, phrase, nil, fn, ...) end
-- D.cases_f32(tol, fn, {args1}, ...): D.check_f32 on each argument list.
function D.cases_f32(tol, fn, ...) each(tol, nil, nil, fn, ...) end

-- D.check_float_results(fn, ...): once a documented difference (compiled
-- code returned a float where Lua's result subtype depends on the path
-- taken); compiled code now keeps Lua's subtype, so this is D.check.
function D.check_float_results(fn, ...)
  if not jit_available() then skip("kjit.jit not available yet") end
  return D.check(fn, ...)
end

return D
