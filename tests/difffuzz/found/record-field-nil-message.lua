-- difffuzz reproducer: program 9003623, case 6, opt 3
-- class: message (attempt to perform arithmetic on a nil value)
-- families: - without -
-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while
-- the interpreted and compiled runs differ.
package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local C = (function()
-- check.lua: runs one generated program on one argument tuple interpreted
-- and compiled, and classifies the outcome (tests/difffuzz/).
--
-- Self-contained (only the kjit module, passed in): repro.lua copies this
-- file's text into every reproducer, so a reproducer runs on its own.
--
-- Classes of one case:
--   same         results (count, values, subtypes: NaN == NaN, -0.0 ~= 0.0)
--                and arrays after the call equal, or both raised the same
--                message (file:line included; Lua 5.4.4's stale line for
--                integer // and % by zero and a NaN's sign in messages
--                aside: README, Differences 9. and 10.) with equal arrays;
--   unsupported  the compile raised a documented refusal (README "What
--                does not"): counted, not a failure;
--   skip         the interpreted run went past the time limit (a generator
--                problem, not kjit's): counted;
--   wrong        another result, other arrays, or an error on one side only
--                (a compile error for code the interpreter runs included);
--   message      both raised, other messages;
--   compile      the compile raised an error (not a documented refusal)
--                where the interpreter did something else: an error found
--                statically in code that did not run, or raised before
--                stores the interpreter makes (issue 22 item 8);
--   internal     an internal error or an invalid LLVM module;
--   hang         the compiled run went past the time limit (a count hook
--                stops it: compiled code polls and calls the hook);
-- crash and compile hangs are seen by run.lua (the process dies or is
-- killed by `timeout`).
local C = {}

C.TIME_LIMIT = 5   -- CPU seconds per run

-- an array returned by a run: kept as a snapshot { arr = true, dtype,
-- shape, flat } (C.snapshot), compared element by element
local function same_snapshot(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  if a.dtype ~= b.dtype or a.shape ~= b.shape or #a.flat ~= #b.flat then return false end
  for k = 1, #a.flat do if not C.same_value(a.flat[k], b.flat[k]) then return false end end
  return true
end

function C.same_value(a, b)
  if type(a) == "table" or type(b) == "table" then return same_snapshot(a, b) end
  if math.type(a) ~= math.type(b) then return false end
  if math.type(a) == "float" then
    if a ~= a then return b ~= b end
    if a == 0 and b == 0 then return 1 / a == 1 / b end
  end
  return a == b
end

local STALE = { "attempt to divide by zero", "attempt to perform 'n%%0'" }
function C.same_error(im, cm)
  if im == cm then return true end
  local function unsign(m) return (m:gsub("%-nan", "nan")) end
  if unsign(im) == unsign(cm) then return true end
  for _, t in ipairs(STALE) do
    if im:find(t .. "$") then
      local function strip(m) return (m:gsub("^(.-):%d+: ", "%1:?: ", 1)) end
      return strip(im) == strip(cm)
    end
  end
  return false
end

function C.fmt(v)
  if type(v) == "table" and v.arr then
    local e = {}
    for k, x in ipairs(v.flat) do e[k] = C.fmt(x) end
    return "array(" .. v.dtype .. ", {" .. v.shape .. "}) [" .. table.concat(e, ", ") .. "]"
  end
  local mt = math.type(v)
  if mt == "float" then
    if v ~= v then return "nan" end
    local s = string.format("%.17g", v)
    if not s:find("[%.eni]") then s = s .. ".0" end
    return s
  end
  return tostring(v)
end

-- Arguments: numbers as they are, arrays as specs {array=true, dtype, shape, vals}.
-- The layout of a record spec (gen.lua's G.RECORD: { name, dtype [, count] }).
function C.layout(kjit, v) return kjit.struct(v.record) end

-- An array of records from its spec { record = fields, shape = {n}, vals = { {field = value, v = {...}} } }.
local function make_records(kjit, v)
  local a = kjit.zeros(v.shape[1], C.layout(kjit, v))
  for i = 1, v.shape[1] do
    for _, f in ipairs(v.record) do
      local x = v.vals[i][f[1]]
      if f[3] then for e = 1, f[3] do a[i][f[1]][e] = x[e] end else a[i][f[1]] = x end
    end
  end
  return a
end

-- A record array flattened field by field, record by record.
local function flatten_records(a, v)
  local out = {}
  for i = 1, #a do
    for _, f in ipairs(v.record) do
      if f[3] then for e = 1, f[3] do out[#out + 1] = a[i][f[1]][e] end
      else out[#out + 1] = a[i][f[1]] end
    end
  end
  return out
end

function C.make_args(kjit, spec)
  local t = { n = spec.n }
  for i = 1, spec.n do
    local v = spec[i]
    if type(v) == "table" and v.record then
      v = make_records(kjit, v)
    elseif type(v) == "table" and v.array then
      local a = kjit.zeros(#v.shape == 1 and v.shape[1] or v.shape, v.dtype)
      local k = 0
      local function fill(x, d)
        for j = 1, v.shape[d] do
          if d == #v.shape then k = k + 1; x[j] = v.vals[k] else fill(x[j], d + 1) end
        end
      end
      fill(a, 1)
      v = a
    end
    t[i] = v
  end
  return t
end

function C.types(spec)
  local t = {}
  for i = 1, spec.n do
    local v = spec[i]
    if type(v) == "table" and v.record then t[i] = "record[:]"
    elseif type(v) == "table" then t[i] = v.dtype .. "[" .. string.rep(":", #v.shape, ",") .. "]"
    elseif math.type(v) == "integer" then t[i] = "i64"
    elseif math.type(v) == "float" then t[i] = "f64"
    else t[i] = "bool" end
  end
  return "(" .. table.concat(t, ", ") .. ")"
end

-- The layouts f:compile takes after the signature, one per record[:].
function C.layouts(kjit, spec)
  local t = {}
  for i = 1, spec.n do
    if type(spec[i]) == "table" and spec[i].record then t[#t + 1] = C.layout(kjit, spec[i]) end
  end
  return t
end

local function flatten(a, out)
  for i = 1, #a do
    local x = a[i]
    if type(x) == "number" or type(x) == "boolean" then out[#out + 1] = x else flatten(x, out) end
  end
  return out
end

-- A returned kjit array as a snapshot (its elements copied now: a view of
-- an argument would change with it); other values as they are.
function C.snapshot(v)
  if type(v) ~= "userdata" then return v end
  local ok, shape = pcall(function() return v.shape end)
  if not ok or type(shape) == "nil" then return v end
  local dims = {}
  for d = 1, v.ndim do dims[d] = tostring(shape[d]) end
  return { arr = true, dtype = tostring(v.dtype), shape = table.concat(dims, ", "), flat = flatten(v, {}) }
end

C.SEED = 42   -- math.random is reseeded with it before every run

-- Runs f on fresh arguments under a CPU-time limit.
function C.run(kjit, f, spec)
  local args = C.make_args(kjit, spec)
  math.randomseed(C.SEED)
  local deadline = os.clock() + C.TIME_LIMIT
  debug.sethook(function()
    if os.clock() > deadline then debug.sethook(); error("difffuzz: time limit", 0) end
  end, "", 100000)
  local r = table.pack(pcall(f, table.unpack(args, 1, args.n)))
  debug.sethook()
  local o = { ok = r[1], arrays = {} }
  if r[1] then
    o.vals = { n = r.n - 1 }
    for k = 2, r.n do o.vals[k - 1] = C.snapshot(r[k]) end
  else o.err = tostring(r[2]) end
  o.timeout = not r[1] and o.err == "difffuzz: time limit"
  for i = 1, args.n do
    if type(spec[i]) == "table" and spec[i].record then o.arrays[#o.arrays + 1] = flatten_records(args[i], spec[i])
    elseif type(args[i]) ~= "number" and type(args[i]) ~= "boolean" then o.arrays[#o.arrays + 1] = flatten(args[i], {}) end
  end
  return o
end

function C.show(o)
  local s
  if o.ok then
    local p = {}
    for i = 1, o.vals.n do
      local v = o.vals[i]
      p[i] = C.fmt(v) .. ((type(v) == "table") and "" or (" (" .. (math.type(v) or type(v)) .. ")"))
    end
    s = "returned " .. (#p > 0 and table.concat(p, ", ") or "nothing")
  else
    s = "raised: " .. o.err
  end
  local p = {}
  for i, a in ipairs(o.arrays) do
    local e = {}
    for k, x in ipairs(a) do e[k] = C.fmt(x) end
    p[i] = "{" .. table.concat(e, ", ") .. "}"
  end
  if #p > 0 then s = s .. "; arrays after: " .. table.concat(p, " ") end
  return s
end

local function same_arrays(x, y)
  if #x.arrays ~= #y.arrays then return false end
  for i = 1, #x.arrays do
    local a, b = x.arrays[i], y.arrays[i]
    if #a ~= #b then return false end
    for k = 1, #a do if not C.same_value(a[k], b[k]) then return false end end
  end
  return true
end

-- same | wrong | message
function C.compare(io, co)
  if io.ok ~= co.ok then return "wrong" end
  if io.ok then
    if io.vals.n ~= co.vals.n then return "wrong" end
    for i = 1, io.vals.n do
      if not C.same_value(io.vals[i], co.vals[i]) then return "wrong" end
    end
    return same_arrays(io, co) and "same" or "wrong"
  end
  if not same_arrays(io, co) then return "wrong" end
  return C.same_error(io.err, co.err) and "same" or "message"
end

-- Compile errors for constructs kjit documents as not compiled.
local UNSUPPORTED = { "not supported in compiled code", "is not supported", "holds both", "mixes",
                      "must return the same number of values", "elsewhere", "cannot ",
                      "define it first", "initialize it", "one type" }
local INTERNAL = { "internal error", "invalid LLVM module", "LLVM optimizer", "LLVM ERROR" }
function C.is_internal(m)
  for _, p in ipairs(INTERNAL) do if m:find(p, 1, true) then return true end end
  return false
end
function C.is_unsupported(m)
  for _, p in ipairs(UNSUPPORTED) do if m:find(p, 1, true) then return true end end
  return false
end

-- One case: io is the interpreted outcome (C.run of the Lua function), j
-- the kjit.jit object. Returns class, compiled outcome.
function C.case(kjit, j, spec, io)
  if io.timeout then return "skip", io end
  local okc, cerr = pcall(j.compile, j, C.types(spec), table.unpack(C.layouts(kjit, spec)))
  if not okc then
    cerr = tostring(cerr)
    local co = { ok = false, err = cerr, arrays = {}, compile_error = true }
    -- nothing ran: the arrays are as passed
    local untouched = C.run(kjit, function() end, spec)
    co.arrays = untouched.arrays
    if C.is_internal(cerr) then return "internal", co end
    if C.compare(io, co) == "same" then return "same", co end
    if C.is_unsupported(cerr) then return "unsupported", co end
    return "compile", co
  end
  local co = C.run(kjit, j, spec)
  if co.timeout then return "hang", co end
  if not co.ok and C.is_internal(co.err) then return "internal", co end
  return C.compare(io, co), co
end

-- A failure's signature, to group the failures of one bug: the class's
-- kind of outcome and the message without positions, names and numbers.
function C.signature(class, io, co)
  local function norm(m)
    m = m:gsub("^[^:]*:%d+: ", ""):gsub("'[%w_]+'", "'?'"):gsub("%-?%d[%w%.%+%-]*", "N")
    return (m:gsub("%s+", " "):sub(1, 90))
  end
  if class == "wrong" then
    local function kind(o)
      if o.ok then return "value" end
      return (o.compile_error and "compile error: " or "error: ") .. norm(o.err)
    end
    return kind(io) .. " vs " .. kind(co)
  end
  if class == "hang" or class == "same" or class == "skip" then return class end
  return norm(co.err or "?")
end

-- What a reproducer runs: prints both outcomes and the class; returns the
-- exit status (1 unless the two agree or the compile was refused as
-- documented).
function C.repro(kjit, src, chunk, spec, opt)
  local f = assert(load(src, chunk))()
  local io = C.run(kjit, f, spec)
  local j = kjit.jit(f, { opt = opt })
  print("arguments:   " .. C.types(spec))
  print("interpreted: " .. C.show(io))
  local class, co = C.case(kjit, j, spec, io)
  print("compiled:    " .. C.show(co) .. (co.compile_error and " [at compile time]" or "") ..
        " (opt " .. opt .. ")")
  print("CLASS " .. class)
  print("SIGNATURE " .. C.signature(class, io, co))
  return (class == "same" or class == "unsupported") and 0 or 1
end

return C
end)()
local SRC = [[
local kjit = require "kjit"
local c1 = 1e308
local function h1(p1)
  local cnt = 0
  for i1 = 0, 2.5 do
    cnt = cnt + 1; if cnt > 60 then break end
    if ((0/0) >= 63) then break end
  end
  if (not ((p1 % p1) <= 1e308)) then return p1, p1 end
  while ((-9223372036854775807) ~= p1) do
    cnt = cnt + 1; if cnt > 60 then break end
    local z3
    if ((-1) >= p1) then z3 = math.max((1 // 2.0), 2147483647, (c1 - 3.0)) end
  end
  return p1, ((p1 ^ p1))
end
local H = { h1 = h1 }
return function(a, b, n, A, B, C, M, p)
  local cnt = 0
  local T1 = kjit.zeros(2, "i64")
  local T0 = kjit.zeros(2, "u64")
  T0:fill(math.min(c1, h1(a)))
  local z4 = math.tointeger(b)
  p[1].x = z4
  M[2] = T0
  if (c1 < ((-3.0) + a)) then
    while true do
      cnt = cnt + 1; if cnt > 60 then break end
      C[1] = C[1]
      if (z4 ~= nil) then break end
      local f5 = (a >= p[2].v[1])
    end
    while true do
      cnt = cnt + 1; if cnt > 60 then break end
      M[2][2] = (((z4 + b) ^ a) ^ ((c1 * a) + c1))
      if (b == b) then break end
      local x6 = math.min(((C[1] * (-2.5)) * math.log(0.0)), (math.tointeger(n) or (n ^ T1[3])))
    end
    local x7 = math.min(H.h1(n), (C[1] % a), p[2].x)
  end
  local x8 = (a - (~b))
  for i9 = 2, math.maxinteger do
    cnt = cnt + 1; if cnt > 60 then break end
    x8 = p[2].x
    x8 = n
  end
  local _11 = h1(a)
  return T1, a, (h1(b))
end
]]
local ARGS = { n = 8, 7, 0x1.999999999999ap-4, 7, { array = true, dtype = "u16", shape = { 6 }, vals = { 0, 65535, 2147483647, 3, 128, 128 } }, { array = true, dtype = "i16", shape = { 3 }, vals = { -5, 1, 0 } }, { array = true, dtype = "f64", shape = { 1 }, vals = { 0x1.8p+1 } }, { array = true, dtype = "u64", shape = { 2, 2 }, vals = { 65535, 3, 5, 255 } }, { record = { { "x", "f64" }, { "k", "i32" }, { "c", "u8" }, { "b", "bool" }, { "v", "f64", 3 } }, shape = { 4 }, vals = { { x = 0x1.8p+1, k = 1, c = 7, b = false, v = { 0x1.cp+2, -0x1p+0, 0x1.cp+2 } }, { x = 0x1.7e43c8800759cp+996, k = -128, c = 127, b = false, v = { 0x1.999999999999ap-4, math.huge, 0x1p+1 } }, { x = 0x1.7e43c8800759cp+996, k = 2147483647, c = 255, b = true, v = { 0x1p+1, 0x1.8p+1, 0x1p-1 } }, { x = (0/0), k = 0, c = 255, b = true, v = { (0/0), (0/0), 0x1.999999999999ap-4 } } } } }
os.exit(C.repro(kjit, SRC, "=fz9003623", ARGS, 3))
