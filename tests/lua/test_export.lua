-- test_export.lua: compiled code as bytes, f:export(sig) / k:export(sig)
-- and kjit.load(bytes) (src/host/export.c).
--
-- Each function is exported here and loaded in a fresh lua5.4 process,
-- which runs it and prints what it returned (values with their Lua
-- subtypes, arrays element by element, the arguments' arrays after the
-- call, error messages); that must equal what the interpreted function
-- gives here. The functions and their arguments come from one chunk of
-- source (CASES) that both processes load, so the child builds the same
-- arguments; the code's file:line in errors is that chunk's.
local kjit = require "kjit"
local cuda = kjit.cuda

local moddir = arg and arg[1] or "build"
local lua_exe = "lua5.4"

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

local root = os.tmpname()
os.remove(root)
assert(os.execute("mkdir -p " .. sh_quote(root)))

-- The cases: name, signature (and record layouts), options, the function,
-- and its arguments (made anew for each call). `show` writes results.
local CASES = [=[
local kjit = ...
local C = {}
local P = kjit.struct{ { "x", "f32" }, { "y", "f64" }, { "n", "i32" } }
local K, SCALE = 3, 0.25                -- upvalues: frozen into the code
local function poly(x) return K * x * x - 2 * x + 1 end   -- a callee
local function add(name, sig, fn, args, opts, layouts)
  C[#C + 1] = { name = name, sig = sig, fn = fn, args = args, opts = opts, layouts = layouts }
end
local function fill(n, dt, f)
  local a = kjit.zeros(n, dt)
  for i = 1, n do a[i] = f(i) end
  return a
end

add("arith", "(i64, f64)", function(a, b)
  return a // 3, a % -5, a / 2, b * a, b // 1, math.floor(b), -a, a == 17, b < 0
end, function() return 17, -2.5 end)
add("intwrap", "(i64)", function(a) return a * a * a * a, a << 62, a >> 1 end,
  function() return 123456789 end)
add("sum", "f64(f64[:], i64)", function(a, n)
  local s = 0.0
  for i = 1, n do s = s + a[i] * SCALE end
  return s
end, function() return fill(10, "f64", function(i) return i * 1.5 end), 10 end)
add("sum_oob", "f64(f64[:], i64)", function(a, n)
  local s = 0.0
  for i = 1, n do s = s + a[i] end
  return s
end, function() return fill(10, "f64", function(i) return i end), 11 end)
add("user_error", "(i64)", function(n)
  if n > 2 then error("n is too big: " .. n) end
  return n
end, function() return 5 end)
add("callee_upvalues", "(f64)", function(x) return poly(x) + poly(x + 1) * SCALE end,
  function() return 1.25 end)
add("closure", "(i64)", function(n)
  local acc = 0
  local function step(i) return i * K + n end   -- a function literal capturing n
  for i = 1, n do acc = acc + step(i) end
  return acc
end, function() return 10 end)
add("writes_i32", "(i32[:], i64)", function(a, k)
  for i = 1, #a do a[i] = a[i] * k + i end
  return #a
end, function() return fill(6, "i32", function(i) return i - 3 end), 1000 end)
add("makes_arrays", "(i64)", function(n)
  local a = kjit.zeros(n)
  for i = 1, n do a[i] = i / 4 end
  return a, a:slice(2, 3), n
end, function() return 5 end)
add("matrix", "(f32[:,:])", function(m)
  local s = 0.0
  for i = 1, #m do for j = 1, #m[i] do s = s + m[i][j] * (i - j) end end
  return s
end, function()
  local m = kjit.zeros({ 3, 4 }, "f32")
  for i = 1, 3 do for j = 1, 4 do m[i][j] = i * 10 + j + 0.5 end end
  return m
end)
add("records", "f64(record[:], f64)", function(p, w)
  local s = 0.0
  for i = 1, #p do
    p[i].y = p[i].x * w
    s = s + p[i].y + p[i].n
  end
  return s
end, function()
  local p = kjit.zeros(4, P)
  for i = 1, 4 do p[i].x = i + 0.5; p[i].n = -i end
  return p, 2.0
end, nil, function() return P end)
add("records_views", "(record[:])", function(p)   -- returned arrays of records: their layouts travel
  p[3].n = 7
  return p:slice(2, 3), p, #p
end, function()
  local p = kjit.zeros(4, P)
  for i = 1, 4 do p[i].x = i + 0.5; p[i].n = -i end
  return p
end, nil, function() return P end)
add("records_made", "(i64)", function(n)   -- arrays of records made: their layouts travel
  local p = kjit.zeros(n, P)
  for i = 1, n do p[i].x = i + 0.5; p[i].y = i * 2; p[i].n = -i end
  local q = p:copy()
  q[1].n = 99
  return p, q:reshape({ 1, n }), kjit.full(2, p[2], P)
end, function() return 3 end)
add("parallel", "(f64[:], f64[:])", function(a, b)
  for i in kjit.prange(1, #a) do b[i] = a[i] * 2 + 1 end
end, function() return fill(1000, "f64", function(i) return i end), kjit.zeros(1000) end,
  { parallel = true })
local inner = kjit.jit(function(x) return x * 2 + K end)   -- another jit function
local W = { 0.5, 0.25, 0.125 }                               -- a table only read: frozen
add("calls_jit_reads_table", "(i64)", function(i)
  return inner(i) + 1, W[i] * i, #W
end, function() return 3 end)
add("nil_false", "(i64)", function(x)
  if x > 0 then return nil, false end
  return x, true
end, function() return 3 end)

-- Results as text: values with subtypes, arrays (with dtype and shape),
-- then the arrays among the arguments after the call.
function C.show(args, ok, ...)
  local out = { tostring(ok) }
  local function one(v)
    if kjit.isarray(v) then
      local flat = v.ndim == 0 and v or v:copy():reshape({ v.size })
      local t = {}
      if type(v.dtype) == "string" then
        for i = 1, #flat do t[#t + 1] = string.format("%.17g", flat[i]) end
      else
        for i = 1, #flat do
          t[#t + 1] = string.format("%.17g/%.17g/%d", flat[i].x, flat[i].y, flat[i].n)
        end
      end
      return "array(" .. tostring(v.dtype) .. "," .. table.concat(v.shape, "x") .. "){" ..
        table.concat(t, ",") .. "}"
    end
    if math.type(v) == "float" then return string.format("%.17g:float", v) end
    return tostring(v) .. ":" .. (math.type(v) or type(v))
  end
  for i = 1, select("#", ...) do out[#out + 1] = one((select(i, ...))) end
  out[#out + 1] = "|"
  for i = 1, args.n do
    if kjit.isarray(args[i]) then out[#out + 1] = one(args[i]) end
  end
  return table.concat(out, " ")
end

-- Calls fn on the case's arguments; the text of what happened.
function C.try(case, fn)
  local args = table.pack(case.args())
  return C.show(args, pcall(fn, table.unpack(args, 1, args.n)))
end
return C
]=]

local CHUNK = "@export_cases.lua"
local C = assert(load(CASES, CHUNK))(kjit)
write_file(root .. "/cases.lua", CASES)

-- A child: loads kjit from the build, the cases, and runs body.
local PROLOGUE = ([[
package.cpath = %q .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local C = assert(load(io.open(%q, "rb"):read("a"), %q))(kjit)
local function bytes(name) local f = assert(io.open(%q .. "/" .. name, "rb")); local s = f:read("a"); f:close(); return s end
local function llvm_mapped()
  local f = io.open("/proc/self/maps")
  if not f then return "unknown" end
  local maps = f:read("a")   -- the shared libLLVM, or the static build's kjit_llvm.so
  local m = maps:find("libLLVM", 1, true) ~= nil or maps:find("kjit_llvm.so", 1, true) ~= nil
  f:close()
  return m
end
]]):format(moddir, root .. "/cases.lua", CHUNK, root)

local function child(body, env)
  local path = root .. "/child.lua"
  write_file(path, PROLOGUE .. body)
  local out, ok = run((env or "") .. " " .. lua_exe .. " " .. sh_quote(path))
  if not ok then error("child failed:\n" .. out, 2) end
  return out
end

-- Lines "name\ttext" of a child's output, by name.
local function lines_by_name(out)
  local t = {}
  for name, text in out:gmatch("([^\t\n]+)\t([^\n]*)") do t[name] = text end
  return t
end

test("exported specializations run in a fresh process as interpreted", function()
  local compiled = {}
  for _, c in ipairs(C) do
    local f = kjit.jit(c.fn, c.opts)
    local b
    if c.layouts then b = f:export(c.sig, c.layouts()) else b = f:export(c.sig) end
    truthy(type(b) == "string" and #b > 0, c.name .. ": bytes")
    write_file(root .. "/" .. c.name .. ".kjx", b)
    compiled[c.name] = f
  end
  local out = child([[
local llvm0 = llvm_mapped()
for _, c in ipairs(C) do
  local g = kjit.load(bytes(c.name .. ".kjx"))
  print(c.name .. "\t" .. C.try(c, g))
end
print("llvm\t" .. tostring(llvm0) .. " " .. tostring(llvm_mapped()))
]])
  local got = lines_by_name(out)
  for _, c in ipairs(C) do
    local want = C.try(c, c.fn)                 -- the interpreter
    eq(C.try(c, compiled[c.name]), want, c.name .. ": compiled here")
    eq(got[c.name], want, c.name .. ": loaded in a fresh process")
  end
  -- run-time errors from loaded code name the original chunk and line
  truthy(got.sum_oob:find("export_cases.lua:%d+: index 11 out of bounds"), got.sum_oob)
  truthy(got.user_error:find("export_cases.lua:%d+: n is too big: 5"), got.user_error)
  -- the loading process never needed LLVM (where kjit loads it lazily)
  if os.getenv("KJIT_TEST_LLVM_DLOPEN") == "1" then
    eq(got.llvm, "false false", "LLVM mapped in the loading process (before, after)")
  end
end)

test("arrays of records made by exported code get the loading process's layout", function()
  -- layouts are numbered per process: here R comes after several others,
  -- and the child numbers other layouts first, so R's number there is
  -- another layout's (code holding the number would make arrays of it)
  for i = 1, 6 do kjit.struct{ { "pad" .. i, "i16" }, { "w", "f32" } } end
  local R = kjit.struct{ { "x", "f64" }, { "tag", "i32" }, { "v", "f32", 3 } }
  local mk = kjit.jit(function(n)
    local p = kjit.zeros(n, R)
    for i = 1, n do p[i].x = i * 1.5; p[i].tag = -i; p[i].v[2] = i + 0.25 end
    return p, p:copy():reshape({ n, 1 })
  end)
  write_file(root .. "/made_records.kjx", mk:export("(i64)"))
  local function show(p, q)
    local t = { tostring(#p), tostring(q.shape[1]) .. "x" .. tostring(q.shape[2]) }
    for i = 1, #p do
      t[#t + 1] = ("%s %s %s %s"):format(p[i].x, p[i].tag, p[i].v[2], q[i][1].tag)
    end
    return table.concat(t, ";")
  end
  local want = show(mk(3))
  eq(want, show(mk.lua(3)), "compiled here as interpreted")
  local out = child([[
for i = 1, 12 do kjit.struct{ { "q" .. i, "u8" } } end   -- other layouts take the small numbers
local g = kjit.load(bytes("made_records.kjx"))
local p, q = g(3)
local function show(p, q)
  local t = { tostring(#p), tostring(q.shape[1]) .. "x" .. tostring(q.shape[2]) }
  for i = 1, #p do
    t[#t + 1] = ("%s %s %s %s"):format(p[i].x, p[i].tag, p[i].v[2], q[i][1].tag)
  end
  return table.concat(t, ";")
end
print("made	" .. show(p, q))
-- the layout is an equal kjit.struct here: arrays of it pass to other code
local R2 = kjit.struct{ { "x", "f64" }, { "tag", "i32" }, { "v", "f32", 3 } }
local a = kjit.zeros(2, R2)
a[1] = p[3]
print("same	" .. tostring(a[1].tag) .. " " .. tostring(p.dtype == R2 or p.dtype == a.dtype))
]])
  local got = lines_by_name(out)
  eq(got.made, want, "loaded in a fresh process")
  eq(got.same, "-3 true", "the loaded layout is this process's equal layout")
end)

test("a loaded function: its one signature only; tostring, inspect", function()
  local f = kjit.jit(C[3].fn)
  local g = kjit.load(f:export("f64(f64[:], i64)"))
  eq(g(kjit.full(4, 2.0), 4), f(kjit.full(4, 2.0), 4), "same result")
  raises("loaded from exported code, compiled for (f64[:], i64) only: it cannot compile for (f32[:], i64)",
         g, kjit.full(4, 2.0, "f32"), 4)
  raises("cannot compile for (f64[:], f64)", g, kjit.full(4, 2.0), 4.0)
  truthy(tostring(g):find("kjit.jit(loaded: export_cases.lua:", 1, true), tostring(g))
  truthy(g:inspect("types"):find("-> (f64)", 1, true), "types kept")
  raises('exported code keeps only "types" and "parallel"', g.inspect, g, "asm")
  raises("this function was loaded from exported code: export the original", g.export, g)
  eq(g.lua, nil, "no Lua function")
  -- f:export() with no signature: the last one used
  f(kjit.full(3, 1.0), 3)
  eq(kjit.load(f:export())(kjit.full(3, 1.0), 3), f(kjit.full(3, 1.0), 3), "last spec")
  raises("nothing compiled yet", kjit.jit(function() end).export, kjit.jit(function() end))
end)

test("what cannot be exported is refused at export, saying why", function()
  -- a global (or table upvalue) the code writes into: a value of this process
  local T = { n = 0 }
  local w = kjit.jit(function(x) T.n = T.n + x; return T.n end)
  raises("uses a table upvalue or global that compiled code writes into", w.export, w, "(i64)")
  -- a function argument
  local h = kjit.jit(function(g, x) return g(x) end)
  h(function(x) return x + 1 end, 2)
  raises("argument #1 of this specialization is a function", h.export, h)
  -- a signature that does not compile: the compile error
  local bad = kjit.jit(function(a) return a.nope end)
  raises("compile error", bad.export, bad, "(f64[:])")
  -- a table argument (read through the Lua API) is fine
  local tab = kjit.jit(function(t) return t.x + t[1] end)
  tab({ x = 1, 2 })
  eq(kjit.load(tab:export())({ x = 5, 7 }), 12, "table argument")
end)

-- FNV-1a, 64 bits (export.c's checksum), to make bytes that pass it.
local function fnv(s)
  local h = -3750763034362895579   -- 0xcbf29ce484222325
  for i = 1, #s do h = (h ~ s:byte(i)) * 0x100000001b3 end
  return h
end
-- The bytes with their body replaced (header's length and checksum made
-- right again).
local function reseal(b, body)
  return b:sub(1, 16) .. string.pack("=I8i8", #body, fnv(body)) .. body
end

test("damaged or foreign bytes are refused with a clear error", function()
  local f = kjit.jit(function(a, b) return a * b + 1 end)
  local b = f:export("(i64, i64)")
  eq(kjit.load(b)(6, 7), 43, "intact")
  local mid = #b // 2
  local flipped = b:sub(1, mid - 1) .. string.char(b:byte(mid) ~ 0x10) .. b:sub(mid + 1)
  raises("kjit.load: damaged exported code (checksum mismatch)", kjit.load, flipped)
  local last = b:sub(1, -2) .. string.char(b:byte(#b) ~ 1)
  raises("checksum mismatch", kjit.load, last)
  raises("kjit.load: damaged exported code: truncated", kjit.load, b:sub(1, #b - 1))
  raises("truncated", kjit.load, b:sub(1, 40))
  raises("bytes after its end", kjit.load, b .. "x")
  raises("not code exported by kjit", kjit.load, b:sub(1, 20))
  raises("not code exported by kjit", kjit.load, "X" .. b:sub(2))
  raises("not code exported by kjit", kjit.load, "")
  raises("string expected", kjit.load, {})
  -- another format of the envelope
  local fmt = b:sub(1, 8) .. string.pack("=I4", 99) .. b:sub(13)
  raises("exported in format 99, this kjit reads format 4", kjit.load, fmt)
  -- another build: the kjit version in the identity (checksum made right)
  local body = b:sub(33)
  local ver = body:match("kjit ([^\n]+)\n")
  truthy(ver, "identity names kjit's version")
  local other = reseal(b, (body:gsub("kjit " .. ver:gsub("%p", "%%%0") .. "\n", "kjit 9.9.9\n", 1)))
  -- (a different length: the identity's own length must follow)
  local idlen = string.unpack("=I4", body)
  local newid = body:sub(5, 4 + idlen):gsub("kjit [^\n]+\n", "kjit 9.9.9\n", 1)
  other = reseal(b, string.pack("=I4", #newid) .. newid .. body:sub(5 + idlen))
  raises("incompatible build: it was made by 'kjit 9.9.9', this is 'kjit " .. ver .. "'",
         kjit.load, other)
  -- another LLVM, another Lua number layout
  for _, what in ipairs({ "llvm", "lua" }) do
    local id = body:sub(5, 4 + idlen):gsub(what .. " ([^\n]+)\n", what .. " 0 other\n", 1)
    raises("incompatible build: it was made by '" .. what .. " 0 other'", kjit.load,
           reseal(b, string.pack("=I4", #id) .. id .. body:sub(5 + idlen)))
  end
  -- another build of the same version (other sources, compiler or flags:
  -- cmake/build_hash.cmake's hash differs)
  local hash = body:sub(5, 4 + idlen):match("\nbuild (%x+)\n")
  truthy(hash and #hash == 16, "identity carries the build hash")
  local other_hash = hash:sub(1, 15) .. (hash:sub(16) == "0" and "1" or "0")
  local bid = body:sub(5, 4 + idlen):gsub("\nbuild %x+\n", "\nbuild " .. other_hash .. "\n", 1)
  raises("kjit.load: the code comes from another build of kjit " .. ver .. " ('build " ..
         other_hash .. "', this is 'build " .. hash .. "': other sources, compiler or flags",
         kjit.load, reseal(b, string.pack("=I4", #bid) .. bid .. body:sub(5 + idlen)))
  -- bytes from before builds were told apart (no build line): refused too
  local nob = body:sub(5, 4 + idlen):gsub("\nbuild %x+\n", "\n", 1)
  raises("another build of kjit " .. ver .. " ('build ?'", kjit.load,
         reseal(b, string.pack("=I4", #nob) .. nob .. body:sub(5 + idlen)))
  -- a CPU with a feature this one lacks: every bit of a feature word set
  local feats = body:sub(5 + idlen, 4 + idlen + 40)
  local w = { string.unpack("=" .. string.rep("I4", 10), feats) }
  if w[3] ~= 0 then   -- x86-64 (cpuid leaf 7 ebx): compared by features
    w[3] = 0xffffffff
    local nf = string.pack("=" .. string.rep("I4", 10), table.unpack(w, 1, 10))
    raises("compiled for a CPU with features this one lacks (cpuid 7.0.ebx", kjit.load,
           reseal(b, body:sub(1, 4 + idlen) .. nf .. body:sub(5 + idlen + 40)))
  end
  -- a damaged payload that passes the checksum: refused, not run
  local bad = reseal(b, body:sub(1, #body - 200))
  raises("kjit.load:", kjit.load, bad)
  -- the intact bytes still load after all that
  eq(kjit.load(b)(2, 3), 7, "intact again")
end)

-- The bytes with the object's entry symbol made STT_NOTYPE (checksum made
-- right again): kjit's own object loader refuses such an object ("no entry
-- function"), the LLVM JIT does not care, so kjit.load takes the fallback.
local function entry_to_notype(b)
  local body = b:sub(33)
  local o = assert(body:find("\127ELF\2\1\1", 1, true), "an ELF object in the bytes") - 1
  local patched
  body, patched = require("elfpatch").entry_to_notype(body, o)
  eq(patched, 1, "the entry symbol patched")
  return reseal(b, body)
end

test("exported code that kjit's object loader refuses: the LLVM JIT links its record layouts", function()
  -- (was: "the object code could not be loaded in this process": the
  -- LLVM JIT never asked for the layouts' globals of the loading process)
  for i = 1, 5 do kjit.struct{ { "pad" .. i, "i8" }, { "w", "f64" } } end
  local R = kjit.struct{ { "x", "f64" }, { "tag", "i32" } }
  local mk = kjit.jit(function(n)
    local p = kjit.zeros(n, R)
    for i = 1, n do p[i].x = i * 0.5; p[i].tag = -i end
    return p, p:copy()
  end)
  local function show(p, q)
    local t = {}
    for i = 1, #p do t[#t + 1] = ("%s %s %s"):format(p[i].x, p[i].tag, q[i].tag) end
    return table.concat(t, ";")
  end
  local want = show(mk.lua(3))
  eq(show(mk(3)), want, "compiled here as interpreted")
  local b = mk:export("(i64)")
  write_file(root .. "/fallback.kjx", entry_to_notype(b))
  local out = child([[
-- this process numbers other layouts first, and compiles code that makes
-- arrays of them: the JIT holds their globals under the numbers that the
-- exported code's layouts had where they were exported
local Q = {}
for i = 1, 10 do Q[i] = kjit.struct{ { "q" .. i, "u8" }, { "r", "i16" } } end
local src = { "local kjit, Q = ..." }
for i = 1, 10 do src[#src + 1] = ("local Q%d = Q[%d]"):format(i, i) end
src[#src + 1] = "return function(n) local s = 0"
for i = 1, 10 do src[#src + 1] = ("s = s + #kjit.zeros(n + %d, Q%d)"):format(i, i) end
src[#src + 1] = "return s end"
local other = kjit.jit(load(table.concat(src, "\n"))(kjit, Q))
print("other\t" .. other(1))
local g = kjit.load(bytes("fallback.kjx"))
local p, q = g(3)
local t = {}
for i = 1, #p do t[#t + 1] = ("%s %s %s"):format(p[i].x, p[i].tag, q[i].tag) end
print("made\t" .. table.concat(t, ";"))
local R2 = kjit.struct{ { "x", "f64" }, { "tag", "i32" } }
print("same\t" .. tostring(p.dtype == R2) .. " " .. tostring(q.dtype == R2))
local g2 = kjit.load(bytes("fallback.kjx"))   -- a second load: the same names, bound again
print("again\t" .. g2(2)[2].tag .. " " .. other(2))
]])
  local got = lines_by_name(out)
  eq(got.other, "65", "the child's own code")
  eq(got.made, want, "loaded by the LLVM JIT in a fresh process")
  eq(got.same, "true true", "arrays of the loading process's equal layout")
  eq(got["again"], "-2 75", "loaded twice")
end)

-- A record layout as export.c writes it (kexp_record): u32 field count,
-- i64 size, i64 alignment, then per field u32 name length, name, u32
-- dtype, i64 count, i64 offset (non-nested fields only, here).
local function record_bytes(L)
  local t = { string.pack("=I4i8i8", L.n or #L.fields, L.size, L.align) }
  for _, f in ipairs(L.fields) do
    t[#t + 1] = string.pack("=s4I4i8i8", f.name, f.dtype, f.count, f.offset)
  end
  return table.concat(t)
end

test("forged record layouts in exported bytes (checksum made right) are refused, saying what is wrong", function()
  local R = kjit.struct{ { "x", "f64" }, { "tag", "i32" } }
  eq(R.size, 16); eq(R.align, 8)
  local get = kjit.jit(function(p) return p[1].x + p[2].tag end)
  local mk = kjit.jit(function(n) local p = kjit.zeros(n, R); p[1].tag = 7; return p end)
  local sources = {
    { bytes = get:export("(record[:])", R), what = "the specialization's description" },
    { bytes = mk:export("(i64)"), what = "the layouts of the arrays of records it makes" },
  }
  -- a kernel for the simulator: its description (after its code) too
  local was = cuda.simulating()
  cuda.simulate(true)
  local kern = cuda.jit(function(p, out)
    local i = cuda.grid(1)
    if i <= #p then out[i] = p[i].x + p[i].tag end
  end)
  sources[3] = { bytes = kern:export("void(record[:], f64[:])", R), what = "the kernel's description" }
  local function layout(b)   -- R's bytes in b: where, and its fields
    local head = string.pack("=I4i8i8I4", 2, 16, 8, 1) .. "x"
    local at = assert(b:find(head, 33, true), "R's layout in the bytes")
    local n, size, align, pos = string.unpack("=I4i8i8", b, at)
    local L = { size = size, align = align, fields = {} }
    for i = 1, n do
      local f = {}
      f.name, f.dtype, f.count, f.offset, pos = string.unpack("=s4I4i8i8", b, pos)
      L.fields[i] = f
    end
    return at, pos, L
  end
  local dt_f64 = select(3, layout(sources[1].bytes)).fields[1].dtype
  local forged = {
    { "size 8: a field past the end", function(L) L.size = 8 end,
      "field 'tag' (4 bytes at offset 8) does not fit in a record of 8 bytes" },
    { "size 2^62", function(L) L.size = 1 << 62 end, "record size 4611686018427387904 is out of range" },
    { "size 0", function(L) L.size = 0 end, "record size 0 is out of range" },
    { "size -16", function(L) L.size = -16 end, "record size -16 is out of range" },
    { "size 24 (padding after the fields)", function(L) L.size = 24 end, nil },   -- valid: loads
    { "size 20", function(L) L.size = 20 end, "record size 20 is not a multiple of its alignment 8" },
    { "alignment 0", function(L) L.align = 0 end, "record alignment 0 is not its largest field alignment 8" },
    { "alignment 3", function(L) L.align = 3 end, "record alignment 3 is not its largest field alignment 8" },
    { "alignment 4", function(L) L.align = 4 end, "record alignment 4 is not its largest field alignment 8" },
    { "alignment 16", function(L) L.align = 16 end, "record alignment 16 is not its largest field alignment 8" },
    { "alignment -8", function(L) L.align = -8 end, "record alignment -8 is not its largest field alignment 8" },
    { "dtype 99", function(L) L.fields[1].dtype = 99 end, "field 'x': invalid dtype 99" },
    { "dtype 2^32-1", function(L) L.fields[1].dtype = 0xffffffff end, "field 'x': invalid dtype -1" },
    { "tag's dtype f64 (8 bytes at 8 of 16: fits)", function(L) L.fields[2].dtype = dt_f64 end, nil },
    { "offset 4: overlaps x", function(L) L.fields[2].offset = 4 end, "fields 'x' and 'tag' overlap" },
    { "offset 6: misaligned", function(L) L.fields[2].offset = 6 end,
      "field 'tag' at offset 6 is not aligned to 4 bytes" },
    { "offset 14", function(L) L.fields[2].offset = 14 end, "field 'tag' (4 bytes at offset 14) does not fit" },
    { "offset -8", function(L) L.fields[2].offset = -8 end, "field 'tag' (4 bytes at offset -8) does not fit" },
    { "offset 2^62", function(L) L.fields[2].offset = 1 << 62 end, "does not fit in a record of 16 bytes" },
    { "count -1", function(L) L.fields[1].count = -1 end, "field 'x': bad element count -1" },
    { "count 3", function(L) L.fields[1].count = 3 end, "field 'x' (3 elements of 8 bytes) does not fit" },
    { "count 2^32", function(L) L.fields[1].count = 1 << 32 end,
      "field 'x' (4294967296 elements of 8 bytes) does not fit in a record of 16 bytes" },
    { "count 2^32, size 2^40", function(L) L.fields[1].count = 1 << 32; L.size = 1 << 40 end,
      "fields 'x' and 'tag' overlap" },
    { "count 2^32 + 1", function(L) L.fields[1].count = (1 << 32) + 1 end, "field 'x': bad element count 4294967297" },
    { "a name not an identifier", function(L) L.fields[2].name = "t-g" end, "name 't-g' is not a Lua identifier" },
    { "a name twice", function(L) L.fields[2].name = "x" end, "field 'x' is declared twice" },
    { "no fields", function(L) L.n = 0; L.fields = {} end, "a record needs at least one field" },
    { "5000 fields", function(L) L.n = 5000 end, "with more than 4096 fields" },
  }
  for _, src in ipairs(sources) do
    local b = src.bytes
    local at, stop, L0 = layout(b)
    local function with(change)
      local L = { size = L0.size, align = L0.align, fields = {} }
      for i, f in ipairs(L0.fields) do
        L.fields[i] = { name = f.name, dtype = f.dtype, count = f.count, offset = f.offset }
      end
      change(L)
      local rec = record_bytes(L)
      local nb = b:sub(1, at - 1) .. rec .. b:sub(stop)
      -- in the specialization's description, which the object's payload
      -- holds as extra bytes after their length (cache.c's CPU payload:
      -- the name, the cannot-fail fact, the length)
      local e = assert(b:find("kjit_c_", 33, true), "the entry's name")
      local xl = string.unpack("=I4", b, e + 27)
      if at > e and at < e + 31 + xl then
        nb = nb:sub(1, e + 26) .. string.pack("=I4", xl + #rec - (stop - at)) .. nb:sub(e + 31)
      end
      return reseal(b, nb:sub(33))
    end
    truthy(pcall(kjit.load, with(function() end)), src.what .. ": the same bytes written again load")
    for _, c in ipairs(forged) do
      local ok, err = pcall(kjit.load, with(c[2]))
      if c[3] == nil then
        truthy(ok, src.what .. ": " .. c[1] .. " is a valid layout: " .. tostring(err))
      else
        truthy(not ok and type(err) == "string", src.what .. ": " .. c[1] .. " refused")
        local want = "kjit.load: damaged exported code (" .. src.what .. ": a record layout"
        truthy(err:find(want, 1, true) and err:find(c[3], 1, true),
               src.what .. ": " .. c[1] .. ": want '" .. c[3] .. "', got: " .. err)
      end
    end
  end
  -- the intact bytes, after all that (a valid forged layout interned no
  -- other R): the results of compiled code
  local p = kjit.zeros(2, R); p[1].x = 1.5; p[2].tag = 2
  eq(kjit.load(sources[1].bytes)(p), 3.5)
  eq(kjit.load(sources[2].bytes)(2)[1].tag, 7)
  local out = kjit.zeros(2)
  kjit.load(sources[3].bytes)[{ 1, 32 }](p, out)
  eq(out[2], 2.0)
  cuda.simulate(was)
end)

test("a kernel exported, loaded in a fresh process and run in the simulator", function()
  local was = cuda.simulating()
  cuda.simulate(true)
  local k = cuda.jit(load([[
return function(a, x, out, n)
  local i = cuda.grid(1)
  if i <= n then
    local s = cuda.shared.array(32, "f64")
    s[cuda.threadIdx.x + 1] = a * x[i]
    cuda.syncthreads()
    out[i] = s[cuda.threadIdx.x + 1] + 1
    if x[i] < 0 then error("negative input") end
  end
end]], "@kernel_src.lua", "t", { cuda = cuda, error = error })())
  local sig = "void(f64, f64[:], f64[:], i64)"
  write_file(root .. "/kernel.kjx", k:export(sig))
  local x, out = kjit.arange(100, "f64"), kjit.zeros(100)
  k[{ 4, 32 }](2.5, x, out, 100)
  local want = {}
  for i = 1, 100 do want[#want + 1] = string.format("%.17g", out[i]) end
  x[50] = -1
  local ok, werr = pcall(function() k[{ 4, 32 }](2.5, x, out, 100) end)
  truthy(not ok, "the kernel raises here")
  -- PTX, for a GPU (libNVVM or LLVM's NVPTX backend: no GPU needed)
  cuda.simulate(false)
  local okp, ptxbytes = pcall(k.export, k, sig, 80)
  cuda.simulate(was)
  if okp then write_file(root .. "/kernel_ptx.kjx", ptxbytes) end
  local got = lines_by_name(child([[
local cuda = kjit.cuda
cuda.simulate(true)
local k = kjit.load(bytes("kernel.kjx"))
local x, out = kjit.arange(100, "f64"), kjit.zeros(100)
k[{ 4, 32 }](2.5, x, out, 100)
local t = {}
for i = 1, 100 do t[#t + 1] = string.format("%.17g", out[i]) end
print("out\t" .. table.concat(t, " "))
x[50] = -1
print("err\t" .. select(2, pcall(function() k[{ 4, 32 }](2.5, x, out, 100) end)))
print("other\t" .. select(2, pcall(function() k[{ 4, 32 }](2.5, x, out, 1.5) end)))
local dx, dout = cuda.to_device(kjit.arange(64, "f64")), cuda.device_array(64, "f64")
k[{ 2, 32 }](1.0, dx, dout, 64)
print("device\t" .. dout:copy_to_host()[64])
if io.open(]] .. string.format("%q", root .. "/kernel_ptx.kjx") .. [[) then
  local kp = kjit.load(bytes("kernel_ptx.kjx"))
  print("ptx\t" .. select(2, pcall(function() kp[{ 4, 32 }](2.5, x, out, 100) end)))
  print("ptxtext\t" .. tostring(kp:inspect("ptx"):find(".target sm_80", 1, true) ~= nil))
end
]]))
  eq(got.out, table.concat(want, " "), "loaded kernel's results")
  eq(got.err, werr, "the same error, file:line and thread")
  truthy(got.err:find("kernel_src.lua:8: negative input (in thread", 1, true), got.err)
  truthy(got.other:find("loaded from exported code, compiled for the simulator and " ..
    "(f64, f64[:], f64[:], i64) only", 1, true), got.other)
  eq(got.device, "64.0", "device arrays in the simulator")
  if okp then
    truthy(got.ptx:find("compiled for the GPU and (f64, f64[:], f64[:], i64) only: it cannot " ..
      "compile for the simulator", 1, true), got.ptx)
    eq(got.ptxtext, "true", "PTX for the compute capability asked")
  end
end)

test("a kernel's PTX loaded in a fresh process, launched through the mock driver", function()
  local mock = moddir .. "/libmockcuda.so"
  if not io.open(mock) then skip("no " .. mock .. " (build target mockcuda)") end
  local k = cuda.jit(load([[
return function(x, out)
  local i = cuda.grid(1)
  if i <= #x then
    out[i] = x[i] * 2
    if x[i] < 0 then error("negative input") end
  end
end]], "@ptx_src.lua", "t", { cuda = cuda, error = error })())
  local ok, b = pcall(k.export, k, "void(f32[:], f32[:])", 80)
  if not ok then skip("no PTX backend: " .. tostring(b)) end
  write_file(root .. "/mock.kjx", b)
  local report = root .. "/mock_report.txt"
  -- the mock plays a thread that failed: kind 6 (error(msg)), line 5,
  -- message 1, thread (17,0,0) of block (1,0,0)
  local env = "KJIT_CUDASIM= KJIT_LIBCUDA=" .. sh_quote(mock) .. " MOCK_CUDA_REPORT=" ..
    sh_quote(report) .. " MOCK_CUDA_ERRREC=6,5,0,0,0,1,0,17,0,0,1,0,0"
  local got = lines_by_name(child([[
local cuda = kjit.cuda
local k = kjit.load(bytes("mock.kjx"))
local dx, dout = cuda.to_device(kjit.arange(64, "f32")), cuda.device_array(64, "f32")
print("err\t" .. select(2, pcall(function() k[{ 2, 32 }](dx, dout); cuda.synchronize() end)))
]], env))
  eq(got.err, "ptx_src.lua:5: negative input (in thread (17,0,0) of block (1,0,0))",
     "the error site and message travel with the PTX")
  local rep = read_file(report) or ""
  eq(rep:match("launches=(%d+)"), "1", "one launch: " .. rep)
  eq(rep:match("live_modules=(%d+)"), "0", "module unloaded at exit")
end)

os.execute("rm -rf " .. sh_quote(root))
