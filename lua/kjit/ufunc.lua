-- kjit/ufunc.lua: kjit.vectorize and kjit.guvectorize.
--
-- A ufunc object holds the user's scalar (or core) function and its
-- signatures. A call goes through these steps, one function each:
--   split_call      inputs and the trailing options table {out =, stream =}
--   classify        each input: Lua number, kjit array or device array
--   choose_sig      the first signature that fits exactly, else safely
--   convert         inputs to the signature's dtypes (scalars become
--                   1-element arrays, so the compiled code sees exactly
--                   the signature's types: an f32 scalar is an f32)
--   broadcast       NumPy rules over up to 4 dimensions
--   pattern         what the generated loop depends on (ranks, which
--                   dimensions broadcast): the key of the wrapper cache
--   generate        Lua source of a loop (CPU) or kernel (CUDA) around
--                   the user's function, compiled by kjit.jit/cuda.jit
-- On the CPU targets that work is then kept as a plan per input dtypes and
-- shapes, and a repeated call runs the plan directly (see "plans").
-- kjit compiles the generated function's bytecode (the chunk name is only
-- used in messages).
-- provides: kjit.vectorize kjit.guvectorize
local kjit, std = ...   -- std: kjit's own copies of the libraries (src/host/lua_parts.c)
local cuda = kjit.cuda
-- the library functions used, fixed when kjit is opened (a script that
-- replaces globals later does not change this module)
local assert, error, ipairs, next, pairs, pcall, select, setmetatable, tostring, type =
  assert, error, ipairs, next, pairs, pcall, select, setmetatable, tostring, type
local debug, math, string, table, load = std.debug, std.math, std.string, std.table, std.load

local SOURCE = debug.getinfo(1, "S").source
local THIS = debug.getinfo(1, "S").short_src   -- also that of code loaded with SOURCE

-- The position of the first Lua frame outside this file: the user's call
-- (of vectorize, or of the ufunc), whatever the depth of our helpers.
local function where()
  local level = 2
  while true do
    local info = debug.getinfo(level, "Sl")
    if not info then return "" end
    if info.what ~= "C" and info.short_src ~= THIS and info.currentline > 0 then
      return info.short_src .. ":" .. info.currentline .. ": "
    end
    level = level + 1
  end
end

local function fail(fmt, ...)
  error(where() .. string.format(fmt, ...), 0)
end

-- ---- dtypes -----------------------------------------------------------------

local DTYPES = {}
for _, t in ipairs(kjit.dtypes) do DTYPES[t] = true end
local DTYPE_LIST = table.concat(kjit.dtypes, ", ")

-- NumPy's 'safe' casting: from -> set of dtypes that hold every value
local SAFE = {}
for from, tos in pairs{
  i8 = "i8 i16 i32 i64 f16 f32 f64",  u8 = "u8 u16 i16 u32 i32 u64 i64 f16 f32 f64",
  i16 = "i16 i32 i64 f32 f64",    u16 = "u16 u32 i32 u64 i64 f32 f64",
  i32 = "i32 i64 f64",            u32 = "u32 u64 i64 f64",
  i64 = "i64 f64",                u64 = "u64 f64",
  f32 = "f32 f64",                f64 = "f64",
  f16 = "f16 f32 f64",
  bool = "bool",   -- booleans are not numbers (kjit's store rules)
} do
  SAFE[from] = {}
  for t in tos:gmatch("%S+") do SAFE[from][t] = true end
end

local function shape_text(shape)
  return "{" .. table.concat(shape, ", ") .. "}"
end

-- ---- signatures ---------------------------------------------------------------

-- "f32(f32, f32)" -> {text =, ret = "f32", args = {{dtype =, dims =}, ...}}.
-- dims: the number of dimensions of an optional "[:, :]" suffix, or nil
-- without one (guvectorize signatures may mark array arguments, as in
-- Numba). Read by kjit's one signature grammar (src/host/signature.c).
local function parse_sig(s)
  if type(s) ~= "string" then
    fail("signature must be a string like \"f64(f64, f64)\", got %s", type(s))
  end
  local sig, err = std.signature(s)
  if not sig then fail("%s", err) end
  return sig
end

-- sigs: a string or a list of strings -> list of parsed signatures
local function parse_sigs(sigs)
  if type(sigs) == "string" then sigs = { sigs } end
  if type(sigs) ~= "table" or #sigs == 0 then
    fail("signatures must be a string or a non-empty list of strings")
  end
  local out = {}
  for i = 1, #sigs do out[i] = parse_sig(sigs[i]) end
  return out
end

-- ---- options ----------------------------------------------------------------

-- {target =, fastmath =, boundscheck =, cache =}, defaults filled, read
-- by kjit's one option parser (src/host/options.c)
local function check_opts(opts, what)
  local o, err = std.options(what, opts)
  if not o then fail("%s", err) end
  return o
end

-- ---- one call's arguments -------------------------------------------------------

-- The inputs, and the trailing plain table of call options if present.
local function split_call(self, ...)
  local n = select("#", ...)
  local args = { ... }
  local copts
  if n > 0 and type(args[n]) == "table" then
    copts = args[n]
    if copts[1] ~= nil then
      fail("argument #%d is a Lua table: pass a kjit array (kjit.array(t)); "
        .. "call options are named fields ({out = ...})", n)
    end
    args[n] = nil
    n = n - 1
  end
  if n ~= self.nin then
    fail("%s expects %d argument%s, got %d", self.kind, self.nin, self.nin == 1 and "" or "s", n)
  end
  copts = copts or {}
  for k in pairs(copts) do
    if k ~= "out" and not (k == "stream" and self.opts.target == "cuda") then
      fail("%s: unknown call option '%s' (%s)", self.kind, tostring(k),
        self.opts.target == "cuda" and "out, stream" or "out")
    end
  end
  return args, copts
end

-- Each input as {kind = "scalar"|"host"|"device", value, dtype, shape}.
-- A scalar's dtype is "integer" or "float" (Lua subtypes), or "boolean",
-- until converted.
local function classify(self, args)
  local ins = {}
  for i = 1, self.nin do
    local v = args[i]
    if math.type(v) then
      ins[i] = { kind = "scalar", value = v, dtype = math.type(v), shape = {} }
    elseif type(v) == "boolean" then
      ins[i] = { kind = "scalar", value = v, dtype = "boolean", shape = {} }
    elseif kjit.isarray(v) then
      if type(v.dtype) ~= "string" then   -- records (kjit.struct): refused, as NumPy's ufuncs do
        fail("argument #%d is an array of records: vectorized functions take numbers and "
             .. "numeric arrays (loop over the records in a kjit.jit function instead)", i)
      end
      ins[i] = { kind = "host", value = v, dtype = v.dtype, shape = v.shape }
    elseif cuda.is_device_array(v) then
      if self.opts.target ~= "cuda" then
        fail("argument #%d is a device array: use target = \"cuda\"", i)
      end
      ins[i] = { kind = "device", value = v, dtype = v.dtype, shape = v.shape }
    else
      fail("argument #%d is a %s (expected a number, a boolean or a kjit array)", i, type(v))
    end
  end
  return ins
end

-- A Lua integer fits any numeric dtype, a Lua float fits f16, f32 and f64, a
-- Lua boolean fits bool only.
local function scalar_fits(lua_type, dt)
  if lua_type == "boolean" or dt == "bool" then return lua_type == "boolean" and dt == "bool" end
  return lua_type == "integer" or dt == "f32" or dt == "f64" or dt == "f16"
end

local function describe_types(ins)
  local t = {}
  for i, a in ipairs(ins) do
    t[i] = a.kind == "scalar" and ("Lua " .. a.dtype) or (a.dtype .. " " .. shape_text(a.shape))
  end
  return "(" .. table.concat(t, ", ") .. ")"
end

-- The first signature whose array dtypes match exactly, else the first to
-- which every array converts safely (NumPy's 'safe' casting).
local function choose_sig(self, ins)
  local key = {}
  for i, a in ipairs(ins) do key[i] = a.dtype end
  key = table.concat(key, ",")
  local hit = self.sig_memo[key]
  if hit then return hit end
  for pass = 1, 2 do
    for _, sig in ipairs(self.sigs) do
      local ok = true
      for i, a in ipairs(ins) do
        local want = sig.args[i].dtype
        if a.kind == "scalar" then ok = scalar_fits(a.dtype, want)
        elseif pass == 1 then ok = a.dtype == want
        else ok = SAFE[a.dtype][want] end
        if not ok then break end
      end
      if ok then
        self.sig_memo[key] = sig
        return sig
      end
    end
  end
  local list = {}
  for i, s in ipairs(self.sigs) do list[i] = s.text end
  fail("%s: no signature matches the argument types %s (signatures: %s)",
    self.kind, describe_types(ins), table.concat(list, "; "))
end

-- Inputs in the signature's dtypes: arrays of another dtype are copied
-- (kjit.array(buf, dtype)), scalars become 1-element arrays (converted
-- as a store into that dtype would convert them).
local function convert(ins, sig)
  for i, a in ipairs(ins) do
    local want = sig.args[i].dtype
    if a.kind == "scalar" then
      a.value = kjit.full(1, a.value, want)
    elseif a.dtype ~= want then
      if a.kind == "device" then
        fail("argument #%d is a device array of %s, the signature '%s' needs %s "
          .. "(convert it, or add a signature)", i, a.dtype, sig.text, want)
      end
      a.value = kjit.array(a.value, want)
    end
    a.dtype = want
  end
end

-- NumPy broadcasting: shapes aligned on the right; extents equal or 1.
-- shapes[i] may be {} (a scalar); errors name it "argument #i".
local function broadcast(shapes)
  local nd = 0
  for _, s in ipairs(shapes) do nd = math.max(nd, #s) end
  local result, from = {}, {}
  for k = 1, nd do
    result[k] = 1
    for i, s in ipairs(shapes) do
      local d = s[#s - nd + k]
      if d and d ~= 1 then
        if result[k] == 1 then
          result[k], from[k] = d, i
        elseif result[k] ~= d then
          local j = from[k]
          fail("shapes do not broadcast: argument #%d has shape %s and argument #%d has shape %s",
            j, shape_text(shapes[j]), i, shape_text(s))
        end
      end
    end
  end
  return result
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for k = 1, #a do if a[k] ~= b[k] then return false end end
  return true
end

-- How an array argument is indexed inside a loop nest of rank R: one
-- letter per own loop dimension, "i" (the loop's index) or "1" (the
-- argument's extent is 1 where the loop's is not: broadcast).
local function index_code(shape, nloop, loop)
  local code = {}
  for j = 1, nloop do
    local r = #loop - nloop + j
    code[j] = (shape[j] == 1 and loop[r] ~= 1) and "1" or "i"
  end
  return table.concat(code)
end

-- The index suffix "[i2][1]" for an argument indexed by code (aligned
-- right in a loop nest of rank R).
local function index_expr(code, R)
  local parts = {}
  for j = 1, #code do
    local r = R - #code + j
    parts[j] = code:sub(j, j) == "1" and "[1]" or ("[i" .. r .. "]")
  end
  return table.concat(parts)
end

-- The first element of a classified vectorize input (a host copy of a
-- device array's), or nil for an empty one.
local function first_value(a)
  local v = a.value   -- an array (convert makes scalars 1-element arrays)
  if type(v) ~= "userdata" then return v end
  if a.kind == "device" then v = v:copy_to_host() end
  if v.size == 0 then return nil end
  return (v.ndim > 1 and v:reshape(v.size) or v)[1]
end

-- Errors raised by the generated code itself (only the store of a result
-- into the output array can fail there, e.g. a float with no integer
-- value stored in an i32 array) are reported at the user's function.
-- A function that raises on every path compiles as one returning nothing
-- (the store of nil then fails): when self.probe_ins holds this call's
-- inputs, fn is first called in Lua on their first elements, and an error
-- it raises is reported instead (fn's own file:line and message).
local function run(self, fn, ...)
  local ok, err = pcall(fn, ...)
  local ins = self.probe_ins
  self.probe_ins = nil
  if ok then return end
  if type(err) == "string" and err:find('[string "-- kjit.', 1, true) == 1 then
    if ins then
      local vals = {}
      for i, a in ipairs(ins) do vals[i] = first_value(a) end
      local pok, perr = pcall(self.lua, table.unpack(vals, 1, #ins))
      if not pok then error(perr, 0) end
    end
    local msg = err:match('^%[string "[^"]*"%]:%d+: (.*)$') or err
    error(self.where .. msg .. " (storing the function's result in the output array)", 0)
  end
  error(err, 0)
end

-- The compiled wrapper for a pattern, generated and compiled once.
local function wrapper(self, key, gen)
  local w = self.wrappers[key]
  if w then return w end
  local src = gen()
  local chunk = assert(load(src))
  local fn = chunk(self.fn, self.opts.target == "cuda" and cuda or kjit)
  local ok, res
  if self.opts.target == "cuda" then
    ok, res = pcall(cuda.jit, fn, { fastmath = self.opts.fastmath,
      boundscheck = self.opts.boundscheck, cache = self.opts.cache })
  else
    ok, res = pcall(kjit.jit, fn, { fastmath = self.opts.fastmath,
      boundscheck = self.opts.boundscheck, cache = self.opts.cache,
      parallel = self.opts.target == "parallel" or nil })
  end
  if not ok then fail("%s", tostring(res)) end
  self.wrappers[key] = res
  self.sources[key] = src
  return res
end

local function params(prefix, n)
  local t = {}
  for i = 1, n do t[i] = prefix .. i end
  return t
end

-- ---- plans: the fast path of a repeated call ----------------------------------
--
-- Everything a CPU call works out (signature, broadcast shape, pattern,
-- output shapes, compiled wrapper) depends only on each input's dtype (or
-- Lua number subtype) and shape. The general path, after a call that
-- needed no array conversion, stores that work as a *plan*; the next call
-- with the same dtypes and shapes finds it with a few table lookups and
-- runs it: no argument tables, no strings built, no signature search.
-- Anything unusual (no plan, an out of the wrong shape or dtype, a table
-- among the inputs, extra arguments, CUDA) takes the general path, which
-- keeps every rule and error message.
--
-- An array's dtype and shape never change (reshape makes a new view), so
-- a record of them is kept per array, weakly (the array's lifetime): its
-- dtype, code (dtype index 1..#kjit.dtypes) and S, the interned object of its shape
-- (equal shapes have the same S, so comparing shapes is one ==).

local DTCODE = {}
for i, t in ipairs(kjit.dtypes) do DTCODE[t] = i end
local NOSHAPE = {}                       -- the S of a Lua number
local NUM = {   -- codes after the dtypes' (a Lua boolean has no plan)
  integer = { dt = "integer", code = #kjit.dtypes + 1, S = NOSHAPE },
  float = { dt = "float", code = #kjit.dtypes + 2, S = NOSHAPE },
}
assert(NUM.float.code < 16, "plan keys have 4 bits per input")
local MAXFAST = 8                        -- inputs: a plan key is sum code_i * 16^(i-1)
local MAXPLANS = 512                     -- per function; more drops them all
local INFO = setmetatable({}, { __mode = "k" })
-- n or "3,4" -> S. Weak values: an S lives while a record or a plan
-- holds it, so one shape has one S at any time (identity stays exact)
-- and shapes no longer used are dropped.
local SHAPES = setmetatable({}, { __mode = "v" })
local mtype = math.type

local function shape_obj(shape)
  local key = #shape == 1 and shape[1] or table.concat(shape, ",")
  local S = SHAPES[key]
  if not S then
    local size = 1
    for _, d in ipairs(shape) do size = size * d end
    S = { shape = shape, ndim = #shape, size = size }
    SHAPES[key] = S
  end
  return S
end

-- The record of an array seen for the first time (nil for anything else:
-- device arrays, tables, ... go the general path).
local function info_slow(a)
  if not kjit.isarray(a) then return nil end
  local dt, S = a.dtype, nil
  if type(dt) ~= "string" then return nil end   -- records: the general path refuses them
  if a.ndim == 1 then        -- the common case, without a shape table or string
    local n = #a
    S = SHAPES[n] or shape_obj({ n })
  else
    S = shape_obj(a.shape)
  end
  local r = { dt = dt, code = DTCODE[dt], S = S }
  INFO[a] = r
  return r
end

local function record(a)
  return INFO[a] or NUM[mtype(a)] or info_slow(a)
end

-- A 1-D view of an array with a record, made once per array.
local function flat_of(a)
  local r = INFO[a]
  local f = r.flat
  if not f then
    f = a:reshape(r.S.size)
    r.flat = f
  end
  return f
end

-- Stores a plan under its key (the records of the inputs).
local function store_plan(self, recs, plan)
  if self.nplans >= MAXPLANS then self.plans, self.nplans = {}, 0 end
  local key = 0
  for i = #recs, 1, -1 do key = key * 16 + recs[i].code end
  local t = self.plans
  local p = t[key]
  if not p then p = {}; t[key] = p end
  for i = 1, #recs - 1 do
    t = p
    p = t[recs[i].S]
    if not p then p = {}; t[recs[i].S] = p end
  end
  p[recs[#recs].S] = plan
  self.nplans = self.nplans + 1
end

-- The __call of a ufunc with nin inputs (and nout outputs for
-- guvectorize, else 0): finds the plan of the inputs and runs it as
--   plan.run(given, o1..onout, a1..anin)        guvectorize
--   plan.run(out, a1..anin)                     vectorize
-- with the outputs of {out = ...} when each has the plan's shape and
-- dtype; everything else goes to general(self, ...).
local function gen_dispatch(nin, nout, general)
  if nin > MAXFAST then return general end
  local a, L = params("a", nin), {}
  L[#L + 1] = "local INFO, NUM, mtype, info_slow, select, type, next, general = ..."
  L[#L + 1] = "return function(self, ...)"
  L[#L + 1] = "  local " .. table.concat(a, ", ") .. ", o, x = ..."
  local conds, key = {}, {}
  for i = 1, nin do
    L[#L + 1] = ("  local r%d = INFO[a%d] or NUM[mtype(a%d)] or info_slow(a%d)"):format(i, i, i, i)
    conds[i] = "r" .. i
    key[i] = i == 1 and "r1.code" or ("r%d.code * %d"):format(i, 1 << (4 * (i - 1)))
  end
  L[#L + 1] = "  if " .. table.concat(conds, " and ") .. " and x == nil then"
  L[#L + 1] = "    local p = self.plans[" .. table.concat(key, " + ") .. "]"
  for i = 1, nin do L[#L + 1] = ("    if p then p = p[r%d.S] end"):format(i) end
  L[#L + 1] = "    if p then"
  local ins = table.concat(a, ", ")
  local nils = nout > 0 and ("false, " .. string.rep("nil, ", nout)) or "nil, "
  L[#L + 1] = "      if o == nil then"
  L[#L + 1] = ("        if select('#', ...) == %d then return p.run(%s%s) end"):format(nin, nils, ins)
  L[#L + 1] = "      elseif type(o) == 'table' then"
  L[#L + 1] = "        local out = o.out"
  L[#L + 1] = ("        if out ~= nil and next(o) == 'out' and next(o, 'out') == nil and select('#', ...) == %d then")
    :format(nin + 1)
  if nout == 0 then
    L[#L + 1] = "          local ro = INFO[out] or info_slow(out)"
    L[#L + 1] = ("          if ro and ro.S == p.outS and ro.dt == p.ret then return p.run(out, %s) end"):format(ins)
  else
    local os, checks = params("o", nout), {}
    L[#L + 1] = "          local " .. table.concat(os, ", ")
    if nout == 1 then
      L[#L + 1] = "          if type(out) == 'table' then if #out == 1 then o1 = out[1] end else o1 = out end"
    else
      local get = {}
      for j = 1, nout do get[j] = "out[" .. j .. "]" end
      L[#L + 1] = ("          if type(out) == 'table' and #out == %d then %s = %s end")
        :format(nout, table.concat(os, ", "), table.concat(get, ", "))
    end
    for j = 1, nout do
      L[#L + 1] = ("          local ro%d = o%d ~= nil and (INFO[o%d] or info_slow(o%d))"):format(j, j, j, j)
      checks[j] = ("ro%d and ro%d.S == p.outS[%d] and ro%d.dt == p.odts[%d]"):format(j, j, j, j, j)
    end
    L[#L + 1] = "          if " .. table.concat(checks, " and ") .. " then"
    L[#L + 1] = ("            return p.run(true, %s, %s)"):format(table.concat(os, ", "), ins)
    L[#L + 1] = "          end"
  end
  L[#L + 1] = "        end"
  L[#L + 1] = "      end"
  L[#L + 1] = "    end"
  L[#L + 1] = "  end"
  L[#L + 1] = "  return general(self, ...)"
  L[#L + 1] = "end"
  return assert(load(table.concat(L, "\n"), SOURCE))(
    INFO, NUM, mtype, info_slow, select, type, next, general)
end

-- CUDA: blocks of 256 threads, at most 1024 blocks; a grid-stride loop
-- covers larger arrays (fewer, longer-lived threads amortize the index
-- arithmetic and keep launches small).
local BLOCK, MAX_BLOCKS = 256, 1024

local function launch(k, n, stream, ...)
  if n == 0 then return end
  local blocks = math.min((n + BLOCK - 1) // BLOCK, MAX_BLOCKS)
  if stream then k[{ blocks, BLOCK, stream }](...) else k[{ blocks, BLOCK }](...) end
end



-- Where the result of the call lives on the CUDA target: with the given
-- out, else on the device if any input is a device array.
local function on_device(ins, out)
  if out ~= nil then return cuda.is_device_array(out) end
  for _, a in ipairs(ins) do if a.kind == "device" then return true end end
  return false
end

local function to_device(a, stream)
  if a.kind == "device" then return a.value end
  return cuda.to_device(a.value, stream)
end

-- ---- generated code ----------------------------------------------------------------

-- Hoists the scalar inputs (read once from their 1-element arrays) into L
-- and returns the expressions that hand each input to f at loop indices
-- i1..iR.
local function input_exprs(L, codes, R)
  local call = {}
  for i, c in ipairs(codes) do
    if c == "s" then
      L[#L + 1] = ("  local s%d = a%d[1]"):format(i, i)
      call[i] = "s" .. i
    else
      call[i] = "a" .. i .. index_expr(c, R)
    end
  end
  return call
end

-- Lines (inside one loop level) that turn the 1-based flat index named
-- var into indices i1..iK over extents n1..nK (row-major: the last index
-- varies fastest).
local function decompose(L, var, K)
  if K == 1 then
    L[#L + 1] = "    local i1 = " .. var
    return
  end
  L[#L + 1] = "    local r = " .. var .. " - 1"
  for k = K, 2, -1 do
    L[#L + 1] = ("    local i%d = r %% n%d + 1"):format(k, k)
    L[#L + 1] = ("    r = r // n%d"):format(k)
  end
  L[#L + 1] = "    local i1 = r + 1"
end

-- The skeleton of every generated function: parameters, the loop extents
-- (the first R extents of array g.extents), scalar inputs, then the
-- iteration over loop indices i1..iR around g.body(L, indent, call):
--   CPU: a loop nest; "parallel" runs the outermost loop with kjit.prange,
--        or with R >= 2 a prange over the rows p of the first R - 1
--        dimensions (decomposed into i1..iR-1) around a loop over iR
--   CUDA: a grid-stride loop over the flat index t, decomposed into
--         i1..iR
local function generate(g)
  local cudat = g.target == "cuda"
  local R = g.R
  local L = { "-- kjit." .. g.title .. (cudat and " kernel" or " wrapper"),
    cudat and "local f, cuda = ..." or "local f, kjit = ...",
    "return function(" .. table.concat(g.params, ", ") .. ")" }
  if R > 0 then
    local names, vals = {}, {}
    for k = 1, R do names[k] = "n" .. k; vals[k] = g.extents .. ".shape[" .. k .. "]" end
    L[#L + 1] = "  local " .. table.concat(names, ", ") .. " = " .. table.concat(vals, ", ")
  end
  local call = input_exprs(L, g.codes, R)
  if cudat then
    L[#L + 1] = "  local total = " .. (R == 0 and "1" or table.concat(params("n", R), " * "))
    L[#L + 1] = "  local t, stride = cuda.grid(1), cuda.gridsize(1)"
    L[#L + 1] = "  while t <= total do"
    if R > 0 then decompose(L, "t", R) end
    g.body(L, "    ", call)
    L[#L + 1] = "    t = t + stride"
    L[#L + 1] = "  end"
  elseif g.target == "parallel" and R >= 2 then
    -- one prange over the rows of all leading dimensions (so a (4, 3, n)
    -- shape gives 12 parallel iterations, not 4), an inner loop per row
    L[#L + 1] = "  local rows = " .. table.concat(params("n", R - 1), " * ")
    L[#L + 1] = "  for p in kjit.prange(1, rows) do"
    decompose(L, "p", R - 1)
    L[#L + 1] = ("    for i%d = 1, n%d do"):format(R, R)
    g.body(L, "      ", call)
    L[#L + 1] = "    end"
    L[#L + 1] = "  end"
  else
    for k = 1, R do
      local ind = string.rep("  ", k)
      if k == 1 and g.target == "parallel" then
        L[#L + 1] = ind .. "for i1 in kjit.prange(1, n1) do"
      else
        L[#L + 1] = ind .. ("for i%d = 1, n%d do"):format(k, k)
      end
    end
    g.body(L, string.rep("  ", R + 1), call)
    for k = R, 1, -1 do L[#L + 1] = string.rep("  ", k) .. "end" end
  end
  L[#L + 1] = "end"
  return table.concat(L, "\n")
end

-- vectorize: out[i1]...[iR] = f(inputs)
local function gen_vectorize(target, R, codes)
  local ps = { "out" }
  for i = 1, #codes do ps[#ps + 1] = "a" .. i end
  return generate { title = "vectorize", target = target, R = R, params = ps,
    extents = "out", codes = codes,
    body = function(L, ind, call)
      L[#L + 1] = ind .. "out" .. index_expr(string.rep("i", R), R)
        .. " = f(" .. table.concat(call, ", ") .. ")"
    end }
end

-- The scratch row of a "()" output on the CPU: one per prange iteration
-- (i1, or the row p of the collapsed parallel loop), so that parallel
-- iterations never share one; scratch_rows gives the scratch's length.
local function scratch_slot(target, R)
  return (target == "parallel" and R >= 2) and "p" or "i1"
end

local function scratch_rows(target, loop)
  local n = loop[1]
  if target == "parallel" and #loop >= 2 then
    for k = 2, #loop - 1 do n = n * loop[k] end
  end
  return math.max(n, 1)
end

-- guvectorize: f(inputs, outputs) with views of the outputs. A "()"
-- output with loop dimensions (scalar_outs[j] = its dtype) is written by
-- f into a 1-element array that is copied to the output after the call:
-- on the CPU a row of a scratch array wj, on CUDA a cuda.local_array.
local function gen_gu(target, R, codes, nout, scalar_outs)
  local ps = params("o", nout)
  for i = 1, #codes do ps[#ps + 1] = "a" .. i end
  local scratch = {}
  for j = 1, nout do
    if scalar_outs[j] and R > 0 then
      scratch[j] = true
      if target ~= "cuda" then ps[#ps + 1] = "w" .. j end
    end
  end
  return generate { title = "guvectorize", target = target, R = R, params = ps,
    extents = "o1", codes = codes,
    body = function(L, ind, call)
      local full = index_expr(string.rep("i", R), R)
      local after = {}
      for j = 1, nout do
        if scratch[j] then
          L[#L + 1] = ind .. (target == "cuda" and ("local r%d = cuda.local_array(1, %q)"):format(j, scalar_outs[j])
            or ("local r%d = w%d[%s]"):format(j, j, scratch_slot(target, R)))
          call[#codes + j] = "r" .. j
          after[#after + 1] = ind .. ("o%d%s = r%d[1]"):format(j, full, j)
        else
          call[#codes + j] = "o" .. j .. full
        end
      end
      L[#L + 1] = ind .. "f(" .. table.concat(call, ", ") .. ")"
      for _, l in ipairs(after) do L[#L + 1] = l end
    end }
end

-- ---- vectorize ------------------------------------------------------------------



-- The pattern of a call: per input "s" or its index code. When every
-- array has the result's shape the loop is flat (rank 1) over views
-- reshaped to 1-D: one loop, no index arithmetic, vectorizable, and the
-- parallel target splits it evenly. Device arrays cannot be reshaped, so
-- CUDA kernels keep the rank and decompose the flat index.
local function vectorize_pattern(ins, shape, flat_ok)
  local flat = flat_ok
  for _, a in ipairs(ins) do
    if a.kind ~= "scalar" and not same_shape(a.shape, shape) then flat = false end
  end
  local codes = {}
  if flat then
    for i, a in ipairs(ins) do codes[i] = a.kind == "scalar" and "s" or "i" end
    return 1, codes, true
  end
  for i, a in ipairs(ins) do
    codes[i] = a.kind == "scalar" and "s" or index_code(a.shape, #a.shape, shape)
  end
  return #shape, codes, false
end

local function check_out(self, out, shape, dtype, what)
  local okkind = kjit.isarray(out) or (self.opts.target == "cuda" and cuda.is_device_array(out))
  if not okkind then
    fail("%s: %s must be a kjit array%s, got %s", self.kind, what,
      self.opts.target == "cuda" and " or a device array" or "", type(out))
  end
  if not same_shape(out.shape, shape) then
    fail("%s: %s has shape %s, the result's shape is %s", self.kind, what,
      shape_text(out.shape), shape_text(shape))
  end
  if out.dtype ~= dtype then
    fail("%s: %s has dtype %s, the signature's result is %s", self.kind, what, out.dtype, dtype)
  end
end

-- CPU: a flat pattern runs on 1-D views of every array (reshape is free).
local function vec_run_cpu(self, key, sig, ins, out, shape, R, codes, flat)
  out = out or kjit.empty(shape, sig.ret)
  local w = wrapper(self, key, function()
    return gen_vectorize(self.opts.target, R, codes)
  end)
  local reshape = flat and #shape > 1
  local size = out.size
  local vals = {}
  for i, a in ipairs(ins) do
    vals[i] = (reshape and a.kind ~= "scalar") and a.value:reshape(size) or a.value
  end
  self.probe_ins = ins
  run(self, w, reshape and out:reshape(size) or out, table.unpack(vals, 1, #ins))
  return out
end

-- CUDA: inputs on the device (host ones copied in), the kernel writes a
-- device array; the result is copied out when it lives on the host.
local function vec_run_cuda(self, key, sig, ins, out, shape, R, codes, stream)
  local k = wrapper(self, key, function() return gen_vectorize("cuda", R, codes) end)
  local dev = on_device(ins, out)
  local dvals = {}
  for i, a in ipairs(ins) do dvals[i] = to_device(a, stream) end
  local dout = (out ~= nil and dev) and out or cuda.device_array(shape, sig.ret)
  local size = 1
  for _, d in ipairs(shape) do size = size * d end
  self.probe_ins = ins
  run(self, launch, k, size, stream, dout, table.unpack(dvals, 1, #ins))
  if dev then return dout end
  out = out or kjit.empty(shape, sig.ret)
  run(self, dout.copy_to_host, dout, out, stream)
  if stream then stream:synchronize() end
  return out
end

-- Whether a call's work can be stored as a plan: a CPU target, and every
-- array already in the signature's dtype (conversions copy the array, per
-- call, and stay on the general path).
local function plannable(self, ins, sig)
  if self.opts.target == "cuda" or self.nin > MAXFAST then return false end
  for i, a in ipairs(ins) do
    if a.kind ~= "scalar" and a.dtype ~= sig.args[i].dtype then return false end
    if a.dtype == "boolean" then return false end   -- no record (NUM) for a Lua boolean
  end
  return true
end

-- The records of the inputs, and per number input a 1-element array of
-- its signature dtype that each run of the plan stores the number into
-- (the conversion of convert(): Lua integers into any dtype, floats into
-- f32/f64, which cannot fail). The runs skip the store when the number is
-- the one stored last (the plan fixes its subtype, so == is identity;
-- zero is always stored: 0.0 == -0.0).
local function plan_inputs(self, args, sig)
  local recs, sc = {}, {}
  for i = 1, self.nin do
    recs[i] = record(args[i])
    if recs[i].S == NOSHAPE then sc[i] = kjit.empty(1, sig.args[i].dtype) end
  end
  return recs, sc
end

-- The Lua source of a vectorize plan's run(out, a1..an): what
-- vec_run_cpu does, for one pattern. A result dtype that is an integer
-- can fail to store a float result, so that store is reported as run()
-- reports it; a float result dtype cannot fail there.
local function gen_vec_runner(nin, sc, reshape, scalar_result, protect)
  local a = params("a", nin)
  local L = { "local w, sc, empty, oshape, ret, size, flat_of, prun, self = ...",
    "local " .. table.concat(params("last", nin), ", "),
    "return function(out, " .. table.concat(a, ", ") .. ")" }
  local pass = {}
  for i = 1, nin do
    if sc[i] then
      L[#L + 1] = ("  local s%d = sc[%d]"):format(i, i)
      L[#L + 1] = ("  if a%d ~= last%d or a%d == 0 then s%d[1] = a%d; last%d = a%d end"):format(i, i, i, i, i, i, i)
      pass[i] = "s" .. i
    else
      pass[i] = reshape and ("flat_of(a" .. i .. ")") or ("a" .. i)
    end
  end
  L[#L + 1] = "  local res = out or empty(oshape, ret)"
  local dest = "res"
  if reshape then
    L[#L + 1] = "  local dest = out and flat_of(out) or res:reshape(size)"
    dest = "dest"
  end
  local argl = dest .. ", " .. table.concat(pass, ", ")
  L[#L + 1] = protect and ("  prun(self, w, " .. argl .. ")") or ("  w(" .. argl .. ")")
  if scalar_result then L[#L + 1] = "  if out == nil then return res[1] end" end
  L[#L + 1] = "  return res"
  L[#L + 1] = "end"
  return table.concat(L, "\n")
end

local function vec_plan(self, args, sig, key, shape, flat, scalar_result)
  local recs, sc = plan_inputs(self, args, sig)
  local S = shape_obj(shape)
  local reshape = flat and #shape > 1
  local protect = not (sig.ret == "f32" or sig.ret == "f64")
  local src = gen_vec_runner(self.nin, sc, reshape, scalar_result, protect)
  local plan = { outS = S, ret = sig.ret }
  plan.run = assert(load(src, SOURCE))(self.wrappers[key], sc, kjit.empty, S.shape,
    sig.ret, S.size, flat_of, run, self)
  store_plan(self, recs, plan)
end

local function vectorize_call(self, ...)
  local args, copts = split_call(self, ...)
  local ins = classify(self, args)
  local sig = choose_sig(self, ins)
  local plan_ok = plannable(self, ins, sig)
  convert(ins, sig)
  local shapes = {}
  for i, a in ipairs(ins) do shapes[i] = a.shape end
  local shape = broadcast(shapes)
  local scalar_result = #shape == 0
  if scalar_result then shape = { 1 } end      -- all scalars: one element
  if copts.out ~= nil then check_out(self, copts.out, shape, sig.ret, "out") end

  local cudat = self.opts.target == "cuda"
  local R, codes, flat = vectorize_pattern(ins, shape, not cudat)
  local key = sig.text .. "|" .. R .. "|" .. table.concat(codes, ",")
  local out
  if cudat then
    out = vec_run_cuda(self, key, sig, ins, copts.out, shape, R, codes, copts.stream)
  else
    out = vec_run_cpu(self, key, sig, ins, copts.out, shape, R, codes, flat)
    if plan_ok then vec_plan(self, args, sig, key, shape, flat, scalar_result) end
  end
  if scalar_result and copts.out == nil then return out[1] end
  return out
end

local function user_fn(fn, what)
  if type(fn) == "function" then return fn end
  -- a kjit.jit object: compiled in as a callee; .lua is the function
  local ok, lua = pcall(function() return fn.lua end)
  if ok and type(lua) == "function" then return lua end
  fail("%s: expected a Lua function, got %s", what, type(fn))
end

local function defined_at(fn)
  local info = debug.getinfo(fn, "S")
  return info.short_src .. ":" .. info.linedefined .. ": "
end

-- The object kjit.vectorize / kjit.guvectorize return: its state, and a
-- generated __call of fixed arity (see gen_dispatch) that ends in call.
local function new_ufunc(what, fn, lua, parsed, opts, nin, nout, layout, call)
  local names = {}
  for i, s in ipairs(parsed) do names[i] = s.text end
  local self = {
    kind = what == "vectorize" and "vectorized function" or "guvectorized function",
    fn = fn, lua = lua, sigs = parsed, signatures = names,
    nin = nin, nout = nout > 0 and nout or nil, layout = layout,
    opts = check_opts(opts, "kjit." .. what),
    wrappers = {}, sources = {}, sig_memo = {}, where = defined_at(lua), plans = {}, nplans = 0,
  }
  self.target = self.opts.target
  return setmetatable(self, { __call = gen_dispatch(nin, nout, call), __name = "kjit." .. what })
end

function kjit.vectorize(fn, sigs, opts)
  local lua = user_fn(fn, "kjit.vectorize")
  local parsed = parse_sigs(sigs)
  for _, s in ipairs(parsed) do
    if not DTYPES[s.ret] then
      fail("malformed signature '%s': the result must be a dtype (one of %s)", s.text, DTYPE_LIST)
    end
    if #s.args == 0 then fail("signature '%s' has no argument", s.text) end
    if #s.args ~= #parsed[1].args then
      fail("signatures '%s' and '%s' have different numbers of arguments", parsed[1].text, s.text)
    end
    for _, a in ipairs(s.args) do
      if a.dims then fail("signature '%s': vectorize arguments are scalars ('%s[...]' given)", s.text, a.dtype) end
    end
  end
  return new_ufunc("vectorize", fn, lua, parsed, opts, #parsed[1].args, 0, nil, vectorize_call)
end

-- ---- guvectorize ------------------------------------------------------------------

-- "(n),()->(n)" -> {ins = {{"n"}, {}}, outs = {{"n"}}, text =}, read by
-- kjit's one signature grammar (src/host/signature.c)
local function parse_layout(s)
  if type(s) ~= "string" then fail("layout must be a string like \"(n),()->(n)\", got %s", type(s)) end
  local lay, err = std.layout(s)
  if not lay then fail("%s", err) end
  return lay
end

-- Core dimensions of the inputs: bound by name, equal wherever they occur.
local function bind_core(self, ins)
  local lay = self.layout
  local size, from = {}, {}
  local loops = {}
  for i, a in ipairs(ins) do
    local core = lay.ins[i]
    local nd = #a.shape
    if nd < #core then
      fail("%s: argument #%d has %d dimension%s, the layout '%s' needs at least %d",
        self.kind, i, nd, nd == 1 and "" or "s", lay.text, #core)
    end
    local loop = {}
    for k = 1, nd - #core do loop[k] = a.shape[k] end
    loops[i] = loop
    for j, name in ipairs(core) do
      local d = a.shape[nd - #core + j]
      if size[name] == nil then
        size[name], from[name] = d, i
      elseif size[name] ~= d then
        fail("%s: core dimension '%s' is %d in argument #%d but %d in argument #%d (layout '%s')",
          self.kind, name, size[name], from[name], d, i, lay.text)
      end
    end
  end
  return size, loops
end



-- Output shapes: loop dimensions, then core dimensions; a "()" output has
-- the loop shape ({1} with no loop dimension). scalar_outs[j]: the dtype
-- of output j when it is a "()" output.
local function gu_output_shapes(self, sig, size, loop)
  local shapes, scalar_outs = {}, {}
  for j, core in ipairs(self.layout.outs) do
    local shape = {}
    for _, d in ipairs(loop) do shape[#shape + 1] = d end
    for _, name in ipairs(core) do shape[#shape + 1] = size[name] end
    if #shape == 0 then shape = { 1 } end
    if #shape > 4 then
      fail("%s: output %d would have %d dimensions (at most 4)", self.kind, j, #shape)
    end
    shapes[j] = shape
    if #core == 0 then scalar_outs[j] = sig.args[self.nin + j].dtype end
  end
  return shapes, scalar_outs
end

-- The outputs given with {out = o} or {out = {o1, o2}}, checked.
local function gu_given_outs(self, given, sig, shapes)
  local nout = self.nout
  if given == nil then return {} end
  if nout == 1 and type(given) ~= "table" then given = { given } end
  if type(given) ~= "table" or #given ~= nout then
    fail("%s: out must be %s", self.kind, nout == 1 and "an array" or ("a list of " .. nout .. " arrays"))
  end
  for j = 1, nout do
    check_out(self, given[j], shapes[j], sig.args[self.nin + j].dtype,
      nout == 1 and "out" or ("out[" .. j .. "]"))
  end
  return { table.unpack(given, 1, nout) }
end

local function gu_run_cpu(self, key, sig, ins, outs, shapes, scalar_outs, codes, loop)
  local R, nout = #loop, self.nout
  local w = wrapper(self, key, function()
    return gen_gu(self.opts.target, R, codes, nout, scalar_outs)
  end)
  local all = {}
  for j = 1, nout do
    outs[j] = outs[j] or kjit.empty(shapes[j], sig.args[self.nin + j].dtype)
    all[j] = outs[j]
  end
  for i, a in ipairs(ins) do all[nout + i] = a.value end
  if R > 0 then      -- scratch rows for "()" outputs
    for j = 1, nout do
      if scalar_outs[j] then
        all[#all + 1] = kjit.empty({ scratch_rows(self.opts.target, loop), 1 }, scalar_outs[j])
      end
    end
  end
  run(self, w, table.unpack(all))
  return outs
end

local function gu_run_cuda(self, key, sig, ins, outs, shapes, scalar_outs, codes, loop, stream)
  local R, nout = #loop, self.nout
  local k = wrapper(self, key, function() return gen_gu("cuda", R, codes, nout, scalar_outs) end)
  local dev = on_device(ins, outs[1])
  local all = {}
  for j = 1, nout do
    local o = outs[j]
    all[j] = (o ~= nil and cuda.is_device_array(o)) and o
      or cuda.device_array(shapes[j], sig.args[self.nin + j].dtype)
  end
  for i, a in ipairs(ins) do all[nout + i] = to_device(a, stream) end
  local total = 1
  for _, d in ipairs(loop) do total = total * d end
  run(self, launch, k, total, stream, table.unpack(all, 1, nout + #ins))
  local results = {}
  for j = 1, nout do
    if dev and (outs[j] == nil or cuda.is_device_array(outs[j])) then
      results[j] = all[j]
    else
      results[j] = outs[j] or kjit.empty(shapes[j], sig.args[self.nin + j].dtype)
      run(self, all[j].copy_to_host, all[j], results[j], stream)
    end
  end
  if stream then stream:synchronize() end
  return results
end

-- The Lua source of a guvectorize plan's run(given, o1..onout, a1..anin):
-- what gu_run_cpu does, for one pattern, with the scratch arrays of "()"
-- outputs made once per plan. The wrapper's own code only copies
-- elements between arrays of one dtype, in bounds: it cannot fail.
local function gen_gu_runner(nin, nout, sc, nscratch, number_outs)
  local a, o = params("a", nin), params("o", nout)
  local L = { "local w, sc, empty, oshapes, odts, scr = ...",
    "local " .. table.concat(params("last", nin), ", "),
    "return function(given, " .. table.concat(o, ", ") .. ", " .. table.concat(a, ", ") .. ")" }
  local pass = {}
  for j = 1, nout do
    L[#L + 1] = ("  o%d = o%d or empty(oshapes[%d], odts[%d])"):format(j, j, j, j)
    pass[#pass + 1] = "o" .. j
  end
  for i = 1, nin do
    if sc[i] then
      L[#L + 1] = ("  local s%d = sc[%d]"):format(i, i)
      L[#L + 1] = ("  if a%d ~= last%d or a%d == 0 then s%d[1] = a%d; last%d = a%d end"):format(i, i, i, i, i, i, i)
      pass[#pass + 1] = "s" .. i
    else
      pass[#pass + 1] = "a" .. i
    end
  end
  for k = 1, nscratch do pass[#pass + 1] = "scr[" .. k .. "]" end
  L[#L + 1] = "  w(" .. table.concat(pass, ", ") .. ")"
  if next(number_outs) then
    local r = {}
    for j = 1, nout do r[j] = number_outs[j] and ("o" .. j .. "[1]") or ("o" .. j) end
    L[#L + 1] = "  if not given then return " .. table.concat(r, ", ") .. " end"
  end
  L[#L + 1] = "  return " .. table.concat(o, ", ")
  L[#L + 1] = "end"
  return table.concat(L, "\n")
end

local function gu_plan(self, args, sig, key, shapes, scalar_outs, loop)
  local recs, sc = plan_inputs(self, args, sig)
  local plan = { outS = {}, odts = {} }
  local oshapes, scr, number_outs = {}, {}, {}
  for j = 1, self.nout do
    local S = shape_obj(shapes[j])
    plan.outS[j], oshapes[j] = S, S.shape
    plan.odts[j] = sig.args[self.nin + j].dtype
    if scalar_outs[j] then
      if #loop > 0 then
        scr[#scr + 1] = kjit.empty({ scratch_rows(self.opts.target, loop), 1 }, scalar_outs[j])
      else
        number_outs[j] = true
      end
    end
  end
  local src = gen_gu_runner(self.nin, self.nout, sc, #scr, number_outs)
  plan.run = assert(load(src, SOURCE))(self.wrappers[key], sc, kjit.empty, oshapes, plan.odts, scr)
  store_plan(self, recs, plan)
end

local function guvectorize_call(self, ...)
  local args, copts = split_call(self, ...)
  local lay = self.layout
  local ins = classify(self, args)
  for i, a in ipairs(ins) do
    if a.kind == "scalar" and #lay.ins[i] > 0 then
      fail("%s: argument #%d is a number, the layout '%s' needs an array with %d core dimension%s",
        self.kind, i, lay.text, #lay.ins[i], #lay.ins[i] == 1 and "" or "s")
    end
  end
  local sig = choose_sig(self, ins)
  local plan_ok = plannable(self, ins, sig)
  convert(ins, sig)
  local size, loops = bind_core(self, ins)
  local loop = broadcast(loops)
  local shapes, scalar_outs = gu_output_shapes(self, sig, size, loop)
  local outs = gu_given_outs(self, copts.out, sig, shapes)

  local codes = {}
  for i, a in ipairs(ins) do
    codes[i] = a.kind == "scalar" and "s" or index_code(a.shape, #loops[i], loop)
  end
  local key = sig.text .. "|" .. #loop .. "|" .. table.concat(codes, ",")
  local results
  if self.opts.target == "cuda" then
    results = gu_run_cuda(self, key, sig, ins, outs, shapes, scalar_outs, codes, loop, copts.stream)
  else
    results = gu_run_cpu(self, key, sig, ins, outs, shapes, scalar_outs, codes, loop)
    if plan_ok then gu_plan(self, args, sig, key, shapes, scalar_outs, loop) end
  end
  -- a "()" output with no loop dimension is a number (unless it was given
  -- or lives on the device)
  if #loop == 0 and copts.out == nil then
    for j in pairs(scalar_outs) do
      if kjit.isarray(results[j]) then results[j] = results[j][1] end
    end
  end
  return table.unpack(results, 1, self.nout)
end

function kjit.guvectorize(fn, sigs, layout, opts)
  local lua = user_fn(fn, "kjit.guvectorize")
  local parsed = parse_sigs(sigs)
  local lay = parse_layout(layout)
  local nin, nout = #lay.ins, #lay.outs
  for _, s in ipairs(parsed) do
    if s.ret ~= "" and s.ret ~= "void" then
      fail("signature '%s': guvectorize functions return nothing (write \"void(...)\")", s.text)
    end
    if #s.args ~= nin + nout then
      fail("signature '%s' has %d argument%s, the layout '%s' has %d (%d input%s, %d output%s)",
        s.text, #s.args, #s.args == 1 and "" or "s", lay.text, nin + nout,
        nin, nin == 1 and "" or "s", nout, nout == 1 and "" or "s")
    end
    -- array markers, when given, must agree with the layout ("()" outputs
    -- may be written f64 or f64[:], as Numba writes them)
    for i, a in ipairs(s.args) do
      local core = i <= nin and lay.ins[i] or lay.outs[i - nin]
      local ok = a.dims == nil or a.dims == #core or (i > nin and #core == 0 and a.dims == 1)
      if not ok then
        fail("signature '%s': argument %d has %d dimension%s, the layout '%s' gives it %d",
          s.text, i, a.dims, a.dims == 1 and "" or "s", lay.text, #core)
      end
    end
  end
  return new_ufunc("guvectorize", fn, lua, parsed, opts, nin, nout, lay, guvectorize_call)
end
