-- test_cache.lua: the disk cache, kjit.jit(fn, {cache = true}).
-- Most scenarios run child lua5.4 processes (the environment variable
-- KJIT_CACHE_DIR cannot be set from Lua) on a fresh temporary cache
-- directory, and read back what they print: results and the process's
-- kjit.cache_stats() counters; the last ones use kjit.cache_dir in this
-- process. Children inherit the environment, so under
-- the sanitizer build they run with the sanitizer runtimes preloaded too.
local kjit = require "kjit"

local moddir = arg and arg[1] or "build"
local lua_exe = "lua5.4"

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- write_file, read_file: harness.lua

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok, how, code = p:close()
  return out, ok, how, code
end

local root = os.tmpname()
os.remove(root)
assert(os.execute("mkdir -p " .. sh_quote(root)))
local ndirs = 0
local function fresh_dir()
  ndirs = ndirs + 1
  local d = root .. "/c" .. ndirs
  assert(os.execute("mkdir -p " .. sh_quote(d)))
  return d
end

-- Files in dir (names), sorted.
local function list(dir)
  local out = run("ls -A " .. sh_quote(dir))
  local t = {}
  for name in out:gmatch("[^\n]+") do t[#t + 1] = name end
  table.sort(t)
  return t
end

local function cache_files(dir)
  local t = {}
  for _, n in ipairs(list(dir)) do if n:match("%.kjc$") then t[#t + 1] = n end end
  return t
end

-- The prologue of every child: load kjit from the build, and `emit` to
-- record results with their Lua subtypes.
local PROLOGUE = ([[
package.cpath = %q .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local __out = {}
local function emit(...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    local s = math.type(v) == "float" and string.format("%%.17g", v) or tostring(v)
    __out[#__out + 1] = s .. ":" .. (math.type(v) or type(v))
  end
end
]]):format(moddir)

local EPILOGUE = [[
local s = kjit.cache_stats()
print("R " .. table.concat(__out, " "))
print(string.format("S %d %d %d %d %d", s.hits, s.misses, s.rejected, s.stores, s.failures))
]]

-- Writes the child script `name` (the prologue, then body) and returns its
-- path.
local function script(dir, name, body)
  local path = dir .. "/" .. name
  write_file(path, PROLOGUE .. body .. "\n" .. EPILOGUE)
  return path
end

-- Runs a child script with KJIT_CACHE_DIR=cachedir (or the given env
-- prefix); returns results text and stats table. Fails on a nonzero exit
-- or any unexpected output (warnings included).
local function child(path, cachedir, env)
  env = env or ("KJIT_CACHE_DIR=" .. sh_quote(cachedir))
  local out, ok = run(env .. " " .. lua_exe .. " " .. sh_quote(path))
  local r, h, m, x, st, fl = out:match("^R ([^\n]*)\nS (%d+) (%d+) (%d+) (%d+) (%d+)\n$")
  if not ok or not r then error("child " .. path .. " failed or printed extra text:\n" .. out, 2) end
  return r, { hits = tonumber(h), misses = tonumber(m), rejected = tonumber(x),
              stores = tonumber(st), failures = tonumber(fl) }
end

local function stats_eq(got, want, what)
  for _, k in ipairs({ "hits", "misses", "rejected", "stores", "failures" }) do
    if want[k] and got[k] ~= want[k] then
      error(string.format("%s: %s = %d, want %d (hits %d misses %d rejected %d stores %d failures %d)",
        what or "stats", k, got[k], want[k], got.hits, got.misses, got.rejected, got.stores, got.failures), 2)
    end
  end
end

-- A child exercising several kinds of code: scalars, arrays, several
-- results, a callee, a function argument, false/nil results, fastmath,
-- and a run-time error message (chunk name and line from cached code).
local MANY = [[
local function callee(x) return x * 3 + 1 end
local function sumsq(a) local s = 0.0 for i = 1, #a do s = s + a[i] * a[i] end return s end
local function two(a, b) return a // b, a % b, a / b end
local function usecallee(n) local s = 0 for i = 1, n do s = s + callee(i) end return s end
local function apply(g, x) return g(x) + g(x + 1) end
local function maybe(x) return x > 0 and x or nil end
local function dot(x, y) local s = 0.0 for i = 1, #x do s = s + x[i] * y[i] end return s end
local function oob(a, i) return a[i] end
local function mathy(x, n)
  local s = 0.0
  for i = 1, n do if i < x then s = s + math.sin(i) + math.sqrt(i) + i ^ 3 + x ^ 0.5 + math.exp(-i) end end
  return s, math.floor(x)
end
local function boom(x) if x > 1 then error("boom: too big") end return x end
local f1 = kjit.jit(sumsq, {cache = true})
local f2 = kjit.jit(two, {cache = true})
local f3 = kjit.jit(usecallee, {cache = true})
local f4 = kjit.jit(apply, {cache = true})
local f5 = kjit.jit(maybe, {cache = true})
local f6 = kjit.jit(dot, {cache = true, fastmath = true})
local f7 = kjit.jit(oob, {cache = true})
local a = kjit.linspace(0, 1, 101)
emit(f1(a))
emit(f2(17, 5))
emit(f2(17.5, 4))
emit(f3(100))
emit(f4(callee, 7))
emit(f5(3), f5(-2), f5(2.5))
emit(f6(a, a))
local ok, msg = pcall(f7, a, 102)
emit(ok, msg)
local f8 = kjit.jit(mathy, {cache = true})
emit(f8(7.5, 10.5))
local f9 = kjit.jit(boom, {cache = true})
emit(f9(1), pcall(f9, 2))
]]

test("a second process loads the code and gets identical results", function()
  local d = fresh_dir()
  local path = script(d, "many.lua", MANY)
  local r1, s1 = child(path, d)
  stats_eq(s1, { hits = 0, misses = 11, rejected = 0, stores = 11, failures = 0 }, "first run")
  local _, plines = PROLOGUE:gsub("\n", "")
  truthy(r1:find("many.lua:" .. (plines + 8) .. ": index 102 out of bounds", 1, true),
         "error names the line: " .. r1)
  eq(#cache_files(d), 11, "one file per specialization")
  local r2, s2 = child(path, d)
  stats_eq(s2, { hits = 11, misses = 0, rejected = 0, stores = 0, failures = 0 }, "second run")
  eq(r2, r1, "results from the cache")
  -- and the interpreter agrees on a few (the compiled results are checked
  -- against Lua elsewhere; here only that cached code is the same code)
  truthy(r1:find("3:integer 2:integer 3.3999999999999999:float", 1, true), "17 // 5 etc: " .. r1)
  truthy(r1:find("many.lua:" .. (plines + 14) .. ": boom: too big:string", 1, true), "error(): " .. r1)
  -- the interpreter's mathy (libm, pow and the runtime helpers from cached code)
  local s = 0.0
  for i = 1, 10.5 do if i < 7.5 then s = s + math.sin(i) + math.sqrt(i) + i ^ 3 + 7.5 ^ 0.5 + math.exp(-i) end end
  local want = string.format("%.17g:float 7:integer", s)
  truthy(r1:find(want, 1, true), "mathy: want " .. want .. " in " .. r1)
end)

test("two objects of one function in one process: the second is a hit", function()
  local d = fresh_dir()
  local path = script(d, "twice.lua", [[
local function f(x, y) return x * y + 1 end
local a = kjit.jit(f, {cache = true})
local b = kjit.jit(f, {cache = true})
emit(a(3, 4), b(3, 4), a(1.5, 2), b(1.5, 2))
a = nil collectgarbage() collectgarbage()
emit(b(5, 6))
]])
  local r, s = child(path, d)
  eq(r, "13:integer 13:integer 4:float 4:float 31:integer")
  stats_eq(s, { hits = 2, misses = 2, stores = 2 })
end)

test("a cached specialization keeps its cannot-fail fact (kjit.testing.noraise)", function()
  local d = fresh_dir()
  local path = script(d, "noraise.lua", [[
local T = require "kjit.testing"
local function level(fn, ...) local f = kjit.jit(fn, {cache = true}) f(...) return T.noraise(f) end
emit(level(function(a, b) return a * b + 1 end, 3, 4))
emit(level(function(a, b, c, d) end, 1, 2.5, 3, 4.5))
emit(level(function(a, b) return a // b end, 7, 2))
]])
  local r, s = child(path, d)
  eq(r, "1:integer 2:integer 0:integer", "compiled"); stats_eq(s, { hits = 0, misses = 3, stores = 3 })
  r, s = child(path, d)
  eq(r, "1:integer 2:integer 0:integer", "loaded from the cache"); stats_eq(s, { hits = 3, misses = 0 })
end)

test("changing the source text misses", function()
  local d = fresh_dir()
  local path = script(d, "src.lua", [[
local function f(x, y) return x * y + 1 end
emit(kjit.jit(f, {cache = true})(3, 4))
]])
  local r, s = child(path, d)
  eq(r, "13:integer"); stats_eq(s, { misses = 1, stores = 1 })
  r, s = child(path, d)
  eq(r, "13:integer"); stats_eq(s, { hits = 1, misses = 0 })
  script(d, "src.lua", [[
local function f(x, y) return x * y + 2 end
emit(kjit.jit(f, {cache = true})(3, 4))
]])
  r, s = child(path, d)
  eq(r, "14:integer", "new source, new result"); stats_eq(s, { hits = 0, misses = 1, stores = 1 })
  -- the same function one line lower: error messages name other lines
  script(d, "src.lua", [[

local function f(x, y) return x * y + 2 end
emit(kjit.jit(f, {cache = true})(3, 4))
]])
  r, s = child(path, d)
  eq(r, "14:integer"); stats_eq(s, { hits = 0, misses = 1 })
end)

test("a callee's source is part of the key", function()
  local d = fresh_dir()
  write_file(d .. "/callee_mod.lua", "return { g = function(x) return x + 1 end }\n")
  local path = script(d, "caller.lua", ([[
package.path = %q .. "/?.lua;" .. package.path
local m = require "callee_mod"
local g = m.g
local function f(x) return g(x) * 2 end
emit(kjit.jit(f, {cache = true})(10))
]]):format(d))
  local r, s = child(path, d)
  eq(r, "22:integer"); stats_eq(s, { misses = 1, stores = 1 })
  write_file(d .. "/callee_mod.lua", "return { g = function(x) return x + 5 end }\n")
  r, s = child(path, d)
  eq(r, "30:integer", "changed callee"); stats_eq(s, { hits = 0, misses = 1 })
  r, s = child(path, d)
  eq(r, "30:integer"); stats_eq(s, { hits = 1, misses = 0 })
end)

test("argument types and options are part of the key", function()
  local d = fresh_dir()
  local path = script(d, "opts.lua", [[
local function f(a, x) local s = 0 for i = 1, #a do s = s + a[i] * x end return s end
local a64, a32 = kjit.arange(1, 11), kjit.full(10, 2, "f32")
emit(kjit.jit(f, {cache = true})(a64, 2))
emit(kjit.jit(f, {cache = true})(a64, 2.5))
emit(kjit.jit(f, {cache = true})(a32, 2))
emit(kjit.jit(f, {cache = true, opt = 1})(a64, 2))
emit(kjit.jit(f, {cache = true, boundscheck = false})(a64, 2))
emit(kjit.jit(f, {cache = true, fastmath = true})(a64, 2.5))
]])
  local r1, s1 = child(path, d)
  stats_eq(s1, { hits = 0, misses = 6, stores = 6 })
  eq(#cache_files(d), 6, "six keys")
  local r2, s2 = child(path, d)
  eq(r2, r1); stats_eq(s2, { hits = 6, misses = 0, stores = 0 })
end)

test("a bool array and a u8 array are different keys", function()
  local d = fresh_dir()
  local path = script(d, "bool.lua", [[
local function f(a) return a[1], a[2] end
emit(kjit.jit(f, {cache = true})(kjit.array({1, 0}, "u8")))
emit(kjit.jit(f, {cache = true})(kjit.array({true, false}, "bool")))
]])
  local r1, s1 = child(path, d)
  eq(r1, "1:integer 0:integer true:boolean false:boolean")
  stats_eq(s1, { hits = 0, misses = 2, stores = 2 })
  eq(#cache_files(d), 2, "two keys")
  local r2, s2 = child(path, d)
  eq(r2, r1); stats_eq(s2, { hits = 2, misses = 0, stores = 0 })
end)

test("upvalue, global and table values folded in are part of the key", function()
  local d = fresh_dir()
  local path = script(d, "upv.lua", [[
local K = tonumber(os.getenv("KJIT_TEST_K"))
local cfg = { scale = tonumber(os.getenv("KJIT_TEST_S")) }
OFFSET = tonumber(os.getenv("KJIT_TEST_O"))
local function f(x) return x * K + cfg.scale + OFFSET end
emit(kjit.jit(f, {cache = true})(10))
]])
  local function go(k, s, o)
    return child(path, d, ("KJIT_CACHE_DIR=%s KJIT_TEST_K=%s KJIT_TEST_S=%s KJIT_TEST_O=%s")
                            :format(sh_quote(d), k, s, o))
  end
  local r, s = go(2, 100, 1000); eq(r, "1120:integer"); stats_eq(s, { misses = 1 })
  r, s = go(2, 100, 1000); eq(r, "1120:integer"); stats_eq(s, { hits = 1 })
  r, s = go(3, 100, 1000); eq(r, "1130:integer", "upvalue"); stats_eq(s, { hits = 0, misses = 1 })
  r, s = go(3, 200, 1000); eq(r, "1230:integer", "table field"); stats_eq(s, { hits = 0, misses = 1 })
  r, s = go(3, 200, 5000); eq(r, "5230:integer", "global"); stats_eq(s, { hits = 0, misses = 1 })
  r, s = go(3, 200, 5000.5); eq(r, "5230.5:float", "float global"); stats_eq(s, { hits = 0, misses = 1 })
  r, s = go(2, 100, 1000); eq(r, "1120:integer", "back to the first"); stats_eq(s, { hits = 1 })
end)

test("a kjit.struct read when compiling is part of the key by its layout", function()
  local d = fresh_dir()
  -- layout ids are per process: A is made first in both runs, so P has
  -- another layout under the same id when KJIT_TEST_W changes
  local path = script(d, "layout.lua", [[
local A = kjit.struct{ {"x", "f64"} }
local B = kjit.struct{ {"a", "i8"}, {"x", "f64"} }
local P = os.getenv("KJIT_TEST_W") == "a" and A or B
local q = kjit.jit(function(n) local q = kjit.zeros(n, P) q[n].x = 5 return q end, {cache = true})(2)
emit(q.dtype.size, q[2].x)
]])
  local function go(w)
    return child(path, d, ("KJIT_CACHE_DIR=%s KJIT_TEST_W=%s"):format(sh_quote(d), w))
  end
  local r, s = go("a"); eq(r, "8:integer 5:float"); stats_eq(s, { misses = 1 })
  r, s = go("b"); eq(r, "16:integer 5:float", "another layout"); stats_eq(s, { hits = 0, misses = 1 })
  r, s = go("a"); eq(r, "8:integer 5:float"); stats_eq(s, { hits = 1 })
end)

test("code that makes arrays of records holds the layout's id: the same layout under another id misses", function()
  local d = fresh_dir()
  -- KJIT_TEST_W=b interns another layout first, so P (the same text) gets
  -- another id; the code allocates by that id (runtime/alloc.c)
  local path = script(d, "layout_id.lua", [[
if os.getenv("KJIT_TEST_W") == "b" then kjit.struct{ {"a", "i8"}, {"y", "f64"}, {"z", "f64"} } end
local P = kjit.struct{ {"x", "f64"} }
local q = kjit.jit(function(n) local q = kjit.zeros(n, P) q[n].x = 5 return q end, {cache = true})(2)
emit(q.dtype.size, q[2].x, #q)
]])
  local function go(w)
    return child(path, d, ("KJIT_CACHE_DIR=%s KJIT_TEST_W=%s"):format(sh_quote(d), w))
  end
  local r, s = go("a"); eq(r, "8:integer 5:float 2:integer"); stats_eq(s, { misses = 1 })
  r, s = go("b"); eq(r, "8:integer 5:float 2:integer", "another id"); stats_eq(s, { hits = 0, misses = 1 })
  r, s = go("a"); eq(r, "8:integer 5:float 2:integer"); stats_eq(s, { hits = 1 })
end)

-- Damages the only cache file in dir with fn(bytes) -> new bytes.
local function damage(dir, fn)
  local files = cache_files(dir)
  eq(#files, 1, "one cache file")
  local p = dir .. "/" .. files[1]
  write_file(p, fn(read_file(p)))
  return p
end

local ONE = [[
local function f(a) local s = 0.0 for i = 1, #a do s = s + a[i] end return s end
emit(kjit.jit(f, {cache = true})(kjit.linspace(0, 1, 11)))
]]

test("corrupt, truncated and foreign files are rebuilt", function()
  local d = fresh_dir()
  local path = script(d, "one.lua", ONE)
  local want, s = child(path, d)
  stats_eq(s, { misses = 1, stores = 1 })
  local cases = {
    { "a flipped payload byte", function(b)
        local i = #b - 40
        return b:sub(1, i - 1) .. string.char((b:byte(i) ~ 0x5a)) .. b:sub(i + 1) end },
    { "a flipped key byte", function(b)
        local i = 200
        return b:sub(1, i - 1) .. string.char((b:byte(i) ~ 1)) .. b:sub(i + 1) end },
    { "truncated to half", function(b) return b:sub(1, #b // 2) end },
    { "truncated by one byte", function(b) return b:sub(1, #b - 1) end },
    { "one byte too many", function(b) return b .. "x" end },
    { "empty", function() return "" end },
    { "only the header", function(b) return b:sub(1, 56) end },
    { "wrong magic", function(b) return "XJITCACH" .. b:sub(9) end },
    { "another format version", function(b) return b:sub(1, 8) .. string.char(b:byte(9) + 1) .. b:sub(10) end },
    { "not ours at all", function() return ("hello, world\n"):rep(50) end },
    { "a damaged object with a valid checksum", function(b)
        -- break the ELF magic of the object, then fix the checksum (FNV-1a
        -- over key and payload, offset 48) so only the loader can refuse it
        local keylen = string.unpack("<i8", b, 33)
        -- header, key, name length, name, cannot-fail fact, extra length, extra bytes
        local xl = string.unpack("<I4", b, 56 + keylen + 4 + 23 + 4 + 1)
        local obj = 56 + keylen + 4 + 23 + 4 + 4 + xl + 1
        truthy(b:sub(obj, obj + 3) == "\127ELF", "object starts with the ELF magic")
        b = b:sub(1, obj - 1) .. "\127ELG" .. b:sub(obj + 4)
        local h = -3750763034362895579             -- 0xcbf29ce484222325
        for i = 57, #b do h = (h ~ b:byte(i)) * 0x100000001b3 end
        return b:sub(1, 48) .. string.pack("<i8", h) .. b:sub(57) end },
  }
  for _, c in ipairs(cases) do
    if c[2] then
      damage(d, c[2])
      local r, st = child(path, d)
      eq(r, want, c[1] .. ": result")
      stats_eq(st, { hits = 0, rejected = 1, stores = 1 }, c[1])
      r, st = child(path, d)
      eq(r, want, c[1] .. ": rebuilt file")
      stats_eq(st, { hits = 1, rejected = 0 }, c[1] .. ": rebuilt file is used")
    end
  end
end)

test("a FIFO or a directory under a cache file's name is refused, never waited on", function()
  local d = fresh_dir()
  local path = script(d, "one.lua", ONE)
  local want, s = child(path, d)
  stats_eq(s, { misses = 1, stores = 1 })
  local file = d .. "/" .. cache_files(d)[1]
  for _, make in ipairs({ "mkfifo", "mkdir" }) do
    assert(os.remove(file))
    assert(os.execute(make .. " " .. sh_quote(file)))
    -- opening a FIFO for reading waits for a writer: the child would hang
    -- (timeout turns a hang into a failure instead of stalling the suite;
    -- a hang guard only: the child takes well under a second)
    local r, st = child(path, d, "KJIT_CACHE_DIR=" .. sh_quote(d) .. " timeout 600")
    eq(r, want, make .. ": result")
    stats_eq(st, { hits = 0, rejected = 1 }, make)
    if make == "mkfifo" then
      stats_eq(st, { stores = 1 }, "the FIFO is replaced by a regular file")
      r, st = child(path, d)
      stats_eq(st, { hits = 1 }, "the rebuilt file is used")
    else
      os.execute("rmdir " .. sh_quote(file))
    end
  end
end)

test("a valid file for another key under this key's name is a miss", function()
  local d = fresh_dir()
  local pa = script(d, "ka.lua", [[
local function f(x) return x + 1 end
emit(kjit.jit(f, {cache = true})(1))
]])
  local ra = child(pa, d)
  local fa = cache_files(d)[1]
  local pb = script(d, "kb.lua", [[
local function f(x) return x + 2 end
emit(kjit.jit(f, {cache = true})(1))
]])
  local rb = child(pb, d)
  eq(ra, "2:integer"); eq(rb, "3:integer")
  local files = cache_files(d)
  eq(#files, 2)
  local fb = files[1] == fa and files[2] or files[1]
  -- put a's file under b's name: b must not run a's code
  write_file(d .. "/" .. fb, read_file(d .. "/" .. fa))
  local r, s = child(pb, d)
  eq(r, "3:integer", "b's own code"); stats_eq(s, { hits = 0, rejected = 1, stores = 1 })
  r, s = child(pa, d)
  eq(r, "2:integer"); stats_eq(s, { hits = 1 })
end)

test("concurrent writers leave a valid cache", function()
  local d = fresh_dir()
  local path = script(d, "conc.lua", MANY)
  local n = 6
  local cmd = {}
  for i = 1, n do
    cmd[#cmd + 1] = ("KJIT_CACHE_DIR=%s %s %s > %s 2>&1 &"):format(sh_quote(d), lua_exe,
      sh_quote(path), sh_quote(d .. "/out" .. i))
  end
  cmd[#cmd + 1] = "wait"
  assert(os.execute(table.concat(cmd, " ")))
  local first
  for i = 1, n do
    local out = read_file(d .. "/out" .. i)
    local r, st = out:match("^R ([^\n]*)\nS ([^\n]*)\n$")
    truthy(r, "writer " .. i .. " output: " .. out)
    first = first or r
    eq(r, first, "writer " .. i .. " results")
    os.remove(d .. "/out" .. i)
  end
  for _, name in ipairs(list(d)) do
    truthy(not name:find(".tmp.", 1, true), "temporary file left behind: " .. name)
  end
  eq(#cache_files(d), 11, "one file per specialization")
  local r, s = child(path, d)
  eq(r, first)
  stats_eq(s, { hits = 11, misses = 0, rejected = 0, stores = 0 })
end)

test("cache_clear removes kjit's files only and counts them", function()
  local d = fresh_dir()
  local path = script(d, "clr.lua", ONE .. [[
emit(kjit.cache_clear())
emit(kjit.cache_clear())
]])
  write_file(d .. "/notes.txt", "keep me")
  write_file(d .. "/cpu-123.kjc", "keep me: not our name")
  write_file(d .. "/cpu-0123456789abcdef.kjc.tmp.99.1", "a leftover temporary file")
  write_file(d .. "/ptx-fedcba9876543210.kjc", "another kind's file")
  local r = child(path, d)
  truthy(r:match(" 3:integer 0:integer$"), "removed 3 then 0: " .. r)
  local left = list(d)
  eq(table.concat(left, ","), "clr.lua,cpu-123.kjc,notes.txt")
end)

test("an unusable cache directory compiles silently without a cache", function()
  local d = fresh_dir()
  write_file(d .. "/afile", "x")
  local path = script(d, "nodir.lua", ONE)
  -- a directory below a regular file cannot exist (even for root)
  local r, s = child(path, d .. "/afile/sub")
  local want = child(script(d, "plain.lua", ONE:gsub("cache = true", "cache = false")), d)
  eq(r, want)
  stats_eq(s, { hits = 0, stores = 0, failures = 1 })
  r, s = child(path, d .. "/afile")   -- the "directory" is a file
  eq(r, want)
  stats_eq(s, { hits = 0, stores = 0, failures = 1 })
end)

test("XDG_CACHE_HOME and HOME locate the directory", function()
  local d = fresh_dir()
  local path = script(d, "xdg.lua", ONE .. "emit(kjit.cache_dir())\n")
  local r = child(path, nil, ("env -u KJIT_CACHE_DIR XDG_CACHE_HOME=%s"):format(sh_quote(d .. "/xdg")))
  truthy(r:find(d .. "/xdg/kjit:string", 1, true), r)
  eq(#cache_files(d .. "/xdg/kjit"), 1)
  r = child(path, nil, ("env -u KJIT_CACHE_DIR -u XDG_CACHE_HOME HOME=%s"):format(sh_quote(d .. "/home")))
  truthy(r:find(d .. "/home/.cache/kjit:string", 1, true), r)
  eq(#cache_files(d .. "/home/.cache/kjit"), 1)
end)

-- In this process: kjit.cache_dir sets the directory.
test("kjit.cache_dir, inspect on cached code, option checks", function()
  local d = fresh_dir()
  local before = kjit.cache_dir()
  eq(kjit.cache_dir(d), d)
  local function f(x, y) return x * y - 1 end
  kjit.cache_stats(true)
  local g = kjit.jit(f, { cache = true })
  eq(g(6, 7), 41)
  local h = kjit.jit(f, { cache = true })
  eq(h(6, 7), 41)
  local s = kjit.cache_stats()
  stats_eq(s, { hits = 1, misses = 1, stores = 1 })
  truthy(s.load_ms > 0, "load time measured")
  eq(#cache_files(d), 1)
  truthy(h:inspect("types"):find("(i64, i64) -> (i64)", 1, true), h:inspect("types"))
  truthy(h:inspect("llvm"):find("mul", 1, true), "inspect recompiles for the text")
  truthy(#h:inspect("asm") > 0)
  eq(h(6, 7), 41)
  -- f:compile goes through the cache too
  local k = kjit.jit(f, { cache = true })
  k:compile("i64(i64, i64)")
  eq(k(6, 7), 41)
  stats_eq(kjit.cache_stats(), { hits = 2, misses = 1, stores = 1 }, "after f:compile")
  -- compile errors are the same with a cache
  local function bad(x) return x, math end
  local m1 = raises("cannot return a table", kjit.jit(bad), 1)
  local m2 = raises("cannot return a table", kjit.jit(bad, { cache = true }), 1)
  eq(m2, m1, "same compile error")
  raises("option 'cache' must be a boolean", kjit.jit, f, { cache = "yes" })
  raises("string or false expected", kjit.cache_dir, 42)
  -- an empty path (read past its one-byte copy, ASan) and an embedded NUL
  raises("must not be empty", kjit.cache_dir, "")
  raises("must not contain", kjit.cache_dir, "a\0b")
  eq(kjit.cache_dir(), d, "a refused directory changes nothing")
  eq(kjit.cache_dir(false), before, "back to the environment's directory")
  local n = 0
  kjit.cache_dir(d)
  n = kjit.cache_clear()
  eq(n, 1)
  kjit.cache_dir(false)
end)

-- LLVM is loaded on the first compile, never by `require "kjit"`, and not
-- at all in a process whose code all comes from the cache: kjit's own
-- loader links the cached object (src/backend/objload.c). Facts about
-- /proc/self/maps, in builds that load LLVM with dlopen (the shared
-- libLLVM, or the static build's kjit_llvm.so: tests.cmake and
-- tests/sh/test_static.sh set KJIT_TEST_LLVM_DLOPEN); elsewhere LLVM is
-- linked into kjit.
local LLVM_MAPPED = [[
local function llvm_mapped()
  local f = io.open("/proc/self/maps")
  if not f then return "unknown" end
  local maps = f:read("a")   -- the shared libLLVM, or the static build's kjit_llvm.so
  local m = maps:find("libLLVM", 1, true) ~= nil or maps:find("kjit_llvm.so", 1, true) ~= nil
  f:close()
  return m
end
]]

test("require loads no LLVM; cached code runs without LLVM, correctly", function()
  if os.getenv("KJIT_TEST_LLVM_DLOPEN") ~= "1" then
    skip("LLVM is linked into this build of kjit")
  end
  local d = fresh_dir()
  local path = script(d, "nollvm.lua", LLVM_MAPPED .. [[
emit(llvm_mapped())   -- after require "kjit"
local function sum(a, x) local s = 0.0 for i = 1, #a do s = s + a[i] * x end return s end
local function poly(x) return 3 * x * x - 2 * x + 1 end
local function quad(a) return poly(a[1]) + math.sqrt(a[2]) end   -- a callee, libm
local function par(a, b)
  for i in kjit.prange(1, #a) do b[i] = a[i] * 2 + 1 end
end
local a = kjit.linspace(0, 1, 9)
local b = kjit.zeros(9)
local f1 = kjit.jit(sum, {cache = true})
local f2 = kjit.jit(quad, {cache = true})
local f3 = kjit.jit(par, {cache = true, parallel = true})
local f4 = kjit.jit(poly, {cache = true})
emit(f1(a, 2.5), f2(a), f4(7), f4(0.5))
f3(a, b)
emit(b[1], b[9], (f3:inspect("parallel"):gsub("%s+", "_")))
emit(llvm_mapped())   -- after the calls
]])
  local r1, s1 = child(path, d)
  stats_eq(s1, { hits = 0, misses = 5, stores = 5 }, "first run")
  truthy(r1:find("^false:boolean "), "require maps no LLVM: " .. r1)
  truthy(r1:find(" true:boolean$"), "compiling maps LLVM: " .. r1)
  local r2, s2 = child(path, d)
  stats_eq(s2, { hits = 5, misses = 0, rejected = 0, stores = 0 }, "second run")
  truthy(r2:find(" false:boolean$"), "cache hits map no LLVM: " .. r2)
  eq(r2:gsub(" [^ ]*$", ""), (r1:gsub(" [^ ]*$", "")), "the same results and notes from the cache")
  -- and they are the interpreter's
  local function poly(x) return 3 * x * x - 2 * x + 1 end
  local s = 0.0
  for i = 0, 8 do s = s + (i / 8) * 2.5 end
  local want = string.format("%.17g:float %.17g:float 134:integer 0.75:float", s, poly(0) + math.sqrt(1 / 8))
  truthy(r2:find(want, 1, true), "want " .. want .. " in " .. r2)
  truthy(r2:find("1:float 3:float ", 1, true), "prange body: " .. r2)
end)

-- Patches the type of the object's entry symbol (STT_FUNC) to STT_NOTYPE
-- in a cache file's bytes and fixes the checksum: kjit's loader then
-- refuses the object ("no entry function"), the LLVM JIT does not care.
local function entry_to_notype(b)
  local keylen = string.unpack("<i8", b, 33)
  local xl = string.unpack("<I4", b, 56 + keylen + 4 + 23 + 4 + 1)
  local o = 56 + keylen + 4 + 23 + 4 + 4 + xl  -- the object's offset (0-based)
  local patched
  b, patched = require("elfpatch").entry_to_notype(b, o)
  eq(patched, 1, "the entry symbol patched")
  local h = -3750763034362895579             -- 0xcbf29ce484222325
  for i = 57, #b do h = (h ~ b:byte(i)) * 0x100000001b3 end
  return b:sub(1, 48) .. string.pack("<i8", h) .. b:sub(57)
end

test("an object kjit's loader refuses is loaded by the LLVM JIT", function()
  local d = fresh_dir()
  local path = script(d, "fallback.lua", LLVM_MAPPED .. [[
local function f(a, x) local s = 0.0 for i = 1, #a do s = s + math.sin(a[i]) * x end return s end
emit(kjit.jit(f, {cache = true})(kjit.linspace(0, 1, 11), 3), llvm_mapped())
]])
  local r1, s1 = child(path, d)
  stats_eq(s1, { misses = 1, stores = 1 })
  damage(d, entry_to_notype)
  local r2, s2 = child(path, d)
  stats_eq(s2, { hits = 1, rejected = 0, stores = 0 }, "the refused object is still a hit")
  eq(r2:match("^%S+"), r1:match("^%S+"), "same result")
  if os.getenv("KJIT_TEST_LLVM_DLOPEN") == "1" then
    truthy(r2:find(" true:boolean$"), "LLVM was loaded for it: " .. r2)
  end
end)

test("code bound to its process (pairs, pcall, next, closures, getmetatable) stays off the disk", function()
  -- its key holds a salt of the process (the code holds registry
  -- references), so no later process could hit it: it was written anew
  -- on every run, and the directory grew without end
  local d = fresh_dir()
  local path = script(d, "local.lua", [[
local function f1(t) local s = 0 for _, v in pairs(t) do s = s + v end return s end
local function f2(t) local k, v = next(t) return v end
local function f3(x) local ok = pcall(error, "no") return ok and x or -x end
local function f4(x) local g = function() return x * 2 end return g end
-- (setmetatable is done by compiled code itself: not bound, test_ctor.lua)
local function f5(t) local m = setmetatable({}, t) return getmetatable(m).__index.k end
local function plain(x) return x * 3 + 1 end
local t = { 4, 5, 6 }
emit(kjit.jit(f1, {cache = true})(t), kjit.jit(f2, {cache = true})(t), kjit.jit(f3, {cache = true})(7))
emit(kjit.jit(f4, {cache = true})(2.5)(), kjit.jit(f5, {cache = true})({ __index = { k = "idx" } }))
emit(kjit.jit(plain, {cache = true})(4))
]])
  local r1, s1 = child(path, d)
  eq(r1, "15:integer 4:integer -7:integer 5:float idx:string 13:integer", "results as interpreted")
  eq(#cache_files(d), 1, "only the plain function's code is on disk")
  stats_eq(s1, { hits = 0, stores = 1 }, "first run")
  local r2, s2 = child(path, d)
  eq(r2, r1, "the same results")
  eq(#cache_files(d), 1, "the directory did not grow")
  stats_eq(s2, { hits = 1, stores = 0 }, "second run: the plain function from the disk")
  child(path, d)
  eq(#cache_files(d), 1, "nor after a third run")
end)

-- Whether numbers have a metatable changes compiled code (indexing or
-- calling a number: Lua's error without one, its __index or __call with
-- one; differences.md item 13), so it is part of the key: code cached
-- without it is not reused with it (on the start it was: the second
-- compile was a hit, and raised "attempt to index a number value").
test("a number metatable is part of the key", function()
  local d = fresh_dir()
  kjit.cache_dir(d)
  kjit.cache_stats(true)
  -- (x(2) through __call would hold a trampoline: never on disk)
  local function f(x, k) if k > 0 then return x.y end return x + 1 end
  local ok, err = pcall(function()
    local g1 = kjit.jit(f, {cache = true})
    eq(g1(5, 0), 6, "without a metatable")
    raises("attempt to index a number value (local 'x')", g1, 5, 1)
    debug.setmetatable(0, { __index = function(n, key) return n * 10 end })
    local g2 = kjit.jit(f, {cache = true})
    eq(g2(5, 1), f(5, 1), "x.y through numbers' __index")
    stats_eq(kjit.cache_stats(), { hits = 0, misses = 2, stores = 2 }, "two keys")
    local g3 = kjit.jit(f, {cache = true})   -- with the metatable again: a hit
    eq(g3(6, 1), 60, "the cached code with the metatable")
    stats_eq(kjit.cache_stats(), { hits = 1, misses = 2, stores = 2 }, "a hit for the same")
  end)
  debug.setmetatable(0, nil)
  kjit.cache_dir(false)   -- (the environment's directory again)
  if not ok then error(err, 0) end
end)

-- How long a warm-cache first call takes in a fresh process, against a
-- compile: printed only (speeds live in the benchmarks); what is checked is
-- that the warm runs were cache hits and the others compiled.
test("timing: first call in a fresh process, warm cache vs compile", function()
  local d = fresh_dir()
  local path = script(d, "time.lua", [[
local function f(n, b) local s = 0 for i = 1, n do s = s + i * b end return s end
local g = kjit.jit(f, {cache = os.getenv("KJIT_TEST_NOCACHE") == nil})
local t0 = os.clock()
local r = g(10, 2.5)
emit(r, (os.clock() - t0) * 1e3)
]])
  local function t(env)
    local r, s = child(path, d, "KJIT_CACHE_DIR=" .. sh_quote(d) .. (env or ""))
    return tonumber(r:match(" ([%d.e+-]+):float$")), s.hits, s.misses
  end
  local _, h0, m0 = t()   -- fill the cache
  eq(h0 .. "/" .. m0, "0/1", "the first process compiles (hits/misses)")
  local best_hit, best_compile = math.huge, math.huge
  for _ = 1, 5 do
    local ms, h, m = t()
    eq(h .. "/" .. m, "1/0", "a later process loads from the cache (hits/misses)")
    best_hit = math.min(best_hit, ms)
  end
  for _ = 1, 3 do
    local ms, h, m = t(" KJIT_TEST_NOCACHE=1")
    eq(h .. "/" .. m, "0/0", "cache = false neither loads nor looks up")
    best_compile = math.min(best_compile, ms)
  end
  print(string.format("  first call, fresh process: %.2f ms from the cache, %.2f ms compiling (best of 5 and 3)",
    best_hit, best_compile))
end)

os.execute("rm -rf " .. sh_quote(root))
