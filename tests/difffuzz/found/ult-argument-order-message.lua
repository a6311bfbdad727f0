-- difffuzz reproducer: program 4002334, case 1, opt 2
-- class: message (bad argument #N to '?' (number expected, got nil))
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

function C.same_value(a, b)
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
function C.make_args(kjit, spec)
  local t = { n = spec.n }
  for i = 1, spec.n do
    local v = spec[i]
    if type(v) == "table" and v.array then
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
    if type(v) == "table" then t[i] = v.dtype .. "[" .. string.rep(":", #v.shape, ",") .. "]"
    elseif math.type(v) == "integer" then t[i] = "i64"
    elseif math.type(v) == "float" then t[i] = "f64"
    else t[i] = "bool" end
  end
  return "(" .. table.concat(t, ", ") .. ")"
end

local function flatten(a, out)
  for i = 1, #a do
    local x = a[i]
    if type(x) == "number" then out[#out + 1] = x else flatten(x, out) end
  end
  return out
end

-- Runs f on fresh arguments under a CPU-time limit.
function C.run(kjit, f, spec)
  local args = C.make_args(kjit, spec)
  local deadline = os.clock() + C.TIME_LIMIT
  debug.sethook(function()
    if os.clock() > deadline then debug.sethook(); error("difffuzz: time limit", 0) end
  end, "", 100000)
  local r = table.pack(pcall(f, table.unpack(args, 1, args.n)))
  debug.sethook()
  local o = { ok = r[1], arrays = {} }
  if r[1] then o.vals = { n = r.n - 1, table.unpack(r, 2, r.n) } else o.err = tostring(r[2]) end
  o.timeout = not r[1] and o.err == "difffuzz: time limit"
  for i = 1, args.n do
    if type(args[i]) ~= "number" and type(args[i]) ~= "boolean" then o.arrays[#o.arrays + 1] = flatten(args[i], {}) end
  end
  return o
end

function C.show(o)
  local s
  if o.ok then
    local p = {}
    for i = 1, o.vals.n do p[i] = C.fmt(o.vals[i]) .. " (" .. (math.type(o.vals[i]) or type(o.vals[i])) .. ")" end
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
  local okc, cerr = pcall(j.compile, j, C.types(spec))
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
local c1 = 100
local c2 = 3
local function h1(p1, P)
  local cnt = 0
  local z1 = math.tointeger(math.floor((p1 * 2.0)))
  return p1, (((p1 ^ P[0]) << P[5])), p1
end
local function h2(p1)
  local cnt = 0
  local x2 = p1
  p1 = x2
  return (p1), (((p1 + 1) * p1)), p1
end
return function(a, b, n, A, B, C)
  local cnt = 0
  local z3
  if (not (not (b == A[5]))) then z3 = (n and ((A[4] - (-9223372036854775808.0)) // (1e308 / B[1]))) end
  for i4 = -2.5, 1e308, -0.5 do
    cnt = cnt + 1; if cnt > 60 then break end
    repeat
      cnt = cnt + 1; if cnt > 60 then break end
      C[2] = B[1]
      if (not ((b > 256) and (9007199254740993 == 2))) then
        if (z3 and true or false) then break end
        local x5 = 5
        x5 = ((h1(0.75, A) // n) & h1((x5 + (#B)), A))
      end
      if ((b + math.ceil(C[2])) > (math.min(c2, a, (-0.0)) // 0.0)) then
        local f6 = ((math.pi + C[1]) ~= (c2 - b))
        local x7 = (a // math.floor((n | i4)))
        if (a < z3) then break end
      else
        local u8, u9 = h1((-2), A)
        local u10, u11, u12 = h1(b, A)
      end
      A[4] = math.abs((B[1] // B[1]))
    until (0.25 <= (-1.0))
  end
  if (9007199254740992 <= (C[2] / C[1])) then error("bad value") end
  if math.ult(a, z3) then return b, (c2), (h2((C[1] + (-0.0)))) end
  local z13
  if ((-0.5) ~= C[2]) then a = z13 + c1 end
  return b, b, b
end
]]
local ARGS = { n = 6, (-math.huge), 484, 7, { array = true, dtype = "i16", shape = { 6 }, vals = { 127, 255, -5, 3, 100, 0 } }, { array = true, dtype = "u32", shape = { 1 }, vals = { 0 } }, { array = true, dtype = "i64", shape = { 2 }, vals = { 1, 0 } } }
os.exit(C.repro(kjit, SRC, "=fz4002334", ARGS, 2))
