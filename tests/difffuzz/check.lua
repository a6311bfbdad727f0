-- check.lua: runs one generated program on one argument tuple interpreted
-- and compiled, and classifies the outcome (tests/difffuzz/).
--
-- Self-contained (only the kjit module, passed in): repro.lua copies this
-- file's text into every reproducer, so a reproducer runs on its own.
--
-- Classes of one case:
--   same         results (count, values, subtypes: NaN == NaN, -0.0 ~= 0.0)
--                and arrays and Lua tables after the call equal (tables key
--                by key, metatables and aliasing included: C.state), and
--                the same output (print and io.write, in order), or
--                both raised the same
--                message (file:line included; Lua 5.4.4's stale line for
--                integer // and % by zero and a NaN's sign in messages
--                aside: README, Differences 9. and 10.) with equal arrays;
--   unsupported  the compile raised a documented refusal (README "What
--                does not"): counted, not a failure;
--   skip         the interpreted run went past the time limit (a generator
--                problem, not kjit's): counted;
--   wrong        another result, other arrays, other output, or an error on one side only
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
  if type(a) == "table" and a.lua or type(b) == "table" and b.lua then
    return type(a) == "table" and type(b) == "table" and a.lua == b.lua
  end
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
  if type(v) == "table" and v.lua then return v.lua end
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

-- A Lua table argument from its spec { luatable = data, alias = { {key,
-- other key}, ... } }: data is a tree of numbers, strings, booleans, plain
-- tables and array specs, built afresh for each run (keys set in sorted
-- order, C.sorted_keys_any, so that both runs and a reproducer build the
-- same table); then t[key] = t[other key] for each alias (two names for
-- one value).
local function make_array(kjit, v)
  local a = kjit.zeros(#v.shape == 1 and v.shape[1] or v.shape, v.dtype)
  local k = 0
  local function fill(x, d)
    for j = 1, v.shape[d] do
      if d == #v.shape then k = k + 1; x[j] = v.vals[k] else fill(x[j], d + 1) end
    end
  end
  fill(a, 1)
  return a
end

local function make_data(kjit, d)
  if type(d) ~= "table" then return d end
  if d.array then return make_array(kjit, d) end
  local t = {}
  for _, k in ipairs(C.sorted_keys_any(d)) do t[k] = make_data(kjit, d[k]) end
  return t
end

local function make_luatable(kjit, v)
  local t = make_data(kjit, v.luatable)
  for _, a in ipairs(v.alias or {}) do t[a[1]] = t[a[2]] end
  return t
end

function C.make_args(kjit, spec)
  local t = { n = spec.n }
  for i = 1, spec.n do
    local v = spec[i]
    if type(v) == "table" and v.luatable then
      v = make_luatable(kjit, v)
    elseif type(v) == "table" and v.record then
      v = make_records(kjit, v)
    elseif type(v) == "table" and v.array then
      v = make_array(kjit, v)
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
    elseif type(v) == "table" and v.luatable then t[i] = "table"
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

-- Lua values that are not numbers, as canonical text: tables key by key
-- (keys sorted; the metatable as a last entry "<mt>"), each table numbered
-- when first met and written "@N" when met again, with one numbering over
-- a whole run's arguments, results and error value, so that aliasing (two
-- names for one table, a result that is an argument) shows; strings
-- quoted; functions by the line that defines them (C functions as "C");
-- kjit arrays by dtype, shape and elements. Never runs a metamethod.
function C.state(v, seen)
  local tv = type(v)
  if tv == "number" then return C.fmt(v) .. (math.type(v) == "integer" and "" or "f") end
  if tv == "string" then return string.format("%q", v) end
  if tv == "function" then
    local info = debug.getinfo(v, "S")
    return "fn@" .. (info.what == "C" and "C" or tostring(info.linedefined))
  end
  if tv ~= "table" and tv ~= "userdata" then return tostring(v) end
  if seen[v] then return "@" .. seen[v] end
  seen.n = (seen.n or 0) + 1
  seen[v] = seen.n
  if tv == "userdata" then
    local snap = C.snapshot(v)
    return "#" .. seen[v] .. (type(snap) == "table" and C.fmt(snap) or "userdata")
  end
  local parts = {}
  for _, k in ipairs(C.sorted_keys_any(v)) do
    parts[#parts + 1] = "[" .. (type(k) == "table" and "table" or C.state(k, seen)) .. "]=" ..
                        C.state(rawget(v, k), seen)
  end
  local mt = debug.getmetatable(v)
  if mt then parts[#parts + 1] = "<mt>=" .. C.state(mt, seen) end
  return "#" .. seen[v] .. "{" .. table.concat(parts, ", ") .. "}"
end

-- A table's keys in an order that does not depend on where they sit:
-- numbers, then strings, then the rest (by type name)
function C.sorted_keys_any(t)
  local keys = {}
  for k in next, t do keys[#keys + 1] = k end
  local RANK = { number = 1, string = 2, boolean = 3 }
  table.sort(keys, function(x, y)
    local rx, ry = RANK[type(x)] or 4, RANK[type(y)] or 4
    if rx ~= ry then return rx < ry end
    if rx == 3 then return (not x) and y end
    if rx == 4 then return false end
    return x < y
  end)
  return keys
end

C.SEED = 42   -- math.random is reseeded with it before every run

-- Output. What a run writes with print and io.write is kept (o.out) and
-- compared, order and bytes: io.write writes to io.output(), set to a
-- temporary file for the run; print is made kjit.testing.print_to_output,
-- Lua's print writing to io.output() (a C function, so that compiled code
-- knows it as print: it is the global print when the function compiles),
-- so both land in one file in the order written. Set once, before the
-- first run of the process; without it (an older build) print writes to
-- stdout, uncompared. At most OUT_LIMIT bytes are read back.
local OUT_LIMIT = 1 << 20
local function capture_print()
  if C.print_set ~= nil then return end
  local ok, t = pcall(require, "kjit.testing")
  C.print_set = ok and type(t) == "table" and t.print_to_output ~= nil
  if C.print_set then print = t.print_to_output end
end

-- Runs f on fresh arguments under a CPU-time limit.
function C.run(kjit, f, spec)
  capture_print()
  local args = C.make_args(kjit, spec)
  math.randomseed(C.SEED)
  local out, stdout = io.tmpfile(), io.output()
  io.output(out)
  local deadline = os.clock() + C.TIME_LIMIT
  debug.sethook(function()
    if os.clock() > deadline then debug.sethook(); error("difffuzz: time limit", 0) end
  end, "", 100000)
  local r = table.pack(pcall(f, table.unpack(args, 1, args.n)))
  debug.sethook()
  io.output(stdout)
  out:seek("set")
  local o = { ok = r[1], arrays = {}, tables = {}, out = out:read(OUT_LIMIT) or "" }
  out:close()
  -- Lua tables: the arguments first, then the results or the error value
  -- (one numbering: C.state)
  local seen = {}
  for i = 1, args.n do
    if type(spec[i]) == "table" and spec[i].luatable then o.tables[#o.tables + 1] = C.state(args[i], seen) end
  end
  local function value(v)
    if type(v) == "table" or type(v) == "function" or type(v) == "string" then return { lua = C.state(v, seen) } end
    return C.snapshot(v)
  end
  if r[1] then
    o.vals = { n = r.n - 1 }
    for k = 2, r.n do o.vals[k - 1] = value(r[k]) end
  elseif type(r[2]) == "table" then o.err = "error value " .. C.state(r[2], seen)
  else o.err = tostring(r[2]) end
  o.timeout = not r[1] and o.err == "difffuzz: time limit"
  for i = 1, args.n do
    if type(spec[i]) == "table" and spec[i].luatable then -- (in o.tables)
    elseif type(spec[i]) == "table" and spec[i].record then o.arrays[#o.arrays + 1] = flatten_records(args[i], spec[i])
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
  if #o.tables > 0 then s = s .. "; tables after: " .. table.concat(o.tables, " ") end
  if o.out ~= "" then s = s .. "; output: " .. string.format("%q", o.out) end
  return s
end

local function same_arrays(x, y)
  if #x.arrays ~= #y.arrays or #x.tables ~= #y.tables then return false end
  for i = 1, #x.tables do if x.tables[i] ~= y.tables[i] then return false end end
  for i = 1, #x.arrays do
    local a, b = x.arrays[i], y.arrays[i]
    if #a ~= #b then return false end
    for k = 1, #a do if not C.same_value(a[k], b[k]) then return false end end
  end
  return true
end

-- The same output, but for a NaN's sign (README, Differences 9.)
function C.same_output(a, b)
  return a == b or (a:gsub("%-nan", "nan")) == (b:gsub("%-nan", "nan"))
end

-- same | wrong | message
function C.compare(io, co)
  if io.ok ~= co.ok or not C.same_output(io.out, co.out) then return "wrong" end
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
                      "define it first", "initialize it", "one type",
                      -- a table the function writes, read frozen by a callee
                      -- (docs/guide/table-speed.md)
                      "pass the table as an argument" }
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
-- How many specializations a kjit.jit object has (0 for a stand-in).
local function nsigs(j)
  local ok, s = pcall(function() return j.signatures end)
  return ok and type(s) == "table" and #s or 0
end

local function has_luatable(spec)
  for i = 1, spec.n do
    if type(spec[i]) == "table" and spec[i].luatable then return true end
  end
  return false
end

local function classify_run(io, co)
  if co.timeout then return "hang", co end
  if not co.ok and C.is_internal(co.err) then return "internal", co end
  return C.compare(io, co), co
end

function C.case(kjit, j, spec, io)
  if io.timeout then return "skip", io end
  local cerr
  if has_luatable(spec) then
    -- no signature names a Lua table: the call compiles; a compile error
    -- is an error of the call that added no specialization
    local before = nsigs(j)
    local co = C.run(kjit, j, spec)
    if co.ok or co.timeout or nsigs(j) ~= before or not co.err:find("compile error for (", 1, true) then
      return classify_run(io, co)
    end
    cerr = co.err
  else
    local okc, e = pcall(j.compile, j, C.types(spec), table.unpack(C.layouts(kjit, spec)))
    if okc then return classify_run(io, C.run(kjit, j, spec)) end
    cerr = tostring(e)
  end
  local co = { ok = false, err = cerr, arrays = {}, compile_error = true }
  -- nothing ran: the arrays and tables are as passed
  local untouched = C.run(kjit, function() end, spec)
  co.arrays, co.tables, co.out = untouched.arrays, untouched.tables, untouched.out
  if C.is_internal(cerr) then return "internal", co end
  if C.compare(io, co) == "same" then return "same", co end
  if C.is_unsupported(cerr) then return "unsupported", co end
  return "compile", co
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
    return kind(io) .. " vs " .. kind(co) .. (C.same_output(io.out, co.out) and "" or " (output differs)")
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
