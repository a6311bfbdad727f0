-- test_tools.lua: the tools users expect (issue 26, item 4): f:inspect("ir")
-- and ("bytecode"), kjit.sysinfo(), the perf map of JIT code
-- (KJIT_PERF_MAP) and the parallel = true performance warning. The
-- environment-dependent ones run in a child lua5.4.
local kjit = require "kjit"

local BUILD = assert(arg and arg[1], "harness passes the build dir")
local LUA = "lua5.4"

-- Runs a Lua chunk in a fresh lua5.4 with kjit from the build, with the
-- environment assignments env (a string) and interpreter flags; returns
-- its stdout and stderr together, and whether it succeeded.
local function child(env, flags, code)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(code)
  f:close()
  local p = io.popen(string.format("LUA_CPATH='%s/?.so;;' %s %s %s %s 2>&1", BUILD, env, LUA,
                                   flags, path))
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  return out, ok
end

local function sq(x) return x * x end
local function sum_sq(a, s)
  local t = 0.0
  for i = 1, #a do t = t + sq(a[i]) * s end
  return t
end

test("inspect('ir'): kjit's SSA with a type per value, callees included", function()
  local f = kjit.jit(sum_sq)
  eq(f(kjit.arange(4, "f32"), 2), sum_sq(kjit.arange(4, "f32"), 2))
  local ir = f:inspect("ir")
  truthy(ir:find("spec 0 (f32[:], i64) -> f64", 1, true), ir)
  truthy(ir:find("= param 0  ; a", 1, true), "parameters named: " .. ir)
  truthy(ir:find(":f32 = index", 1, true), "the read of a[i] is f32: " .. ir)
  truthy(ir:find("spec 1 (f32) -> f32", 1, true), "the callee's specialization: " .. ir)
  truthy(ir:find("loop 0: fornum", 1, true), ir)
  -- another specialization, by signature
  local ir2 = f:inspect("ir", "(f64[:], f64)")
  truthy(ir2:find("spec 0 (f64[:], f64) -> f64", 1, true), ir2)
  raises("nothing compiled yet", function() kjit.jit(sum_sq):inspect("ir") end)
end)

test("inspect('bytecode'): the Lua bytecode compiled, with source lines", function()
  local f = kjit.jit(sum_sq)
  f(kjit.arange(4, "f32"), 2)
  local bc = f:inspect("bytecode")
  local line = debug.getinfo(sum_sq, "S").linedefined
  truthy(bc:find("function .-test_tools.lua:" .. line .. " %(%d+ instructions, 2 params"), bc)
  truthy(bc:find("FORPREP", 1, true) and bc:find("FORLOOP", 1, true), bc)
  truthy(bc:find("%[" .. line + 2 .. "%]%s+GETTABLE"), "a[i] at its line: " .. bc)
  local sqline = debug.getinfo(sq, "S").linedefined
  truthy(bc:find("test_tools.lua:" .. sqline .. " (", 1, true), "the callee listed: " .. bc)
  -- the instruction count is the function's own
  local n = tonumber(bc:match("%((%d+) instructions"))
  local count = 0
  for l in bc:gmatch("[^\n]+") do
    if l:match("^  %d+\t") then count = count + 1 end
    if l:match("^function") and count > 0 then break end
  end
  eq(count, n)
end)

test("kjit.sysinfo(): versions, CPU, threads, cache, CUDA", function()
  local s = kjit.sysinfo()
  eq(s.kjit, kjit.version)
  eq(s.llvm, kjit.llvm_version)
  eq(s.lua, _VERSION:match("%d+%.%d+"))
  truthy(s.lua_headers:match("^Lua 5%.4%.%d+$"), s.lua_headers)
  truthy(type(s.target) == "string" and s.target:find("linux", 1, true), tostring(s.target))
  truthy(type(s.cpu) == "string" and #s.cpu > 0, "cpu")
  truthy(type(s.cpu_features) == "string", "features")
  eq(s.threads, kjit.get_num_threads())
  truthy(math.type(s.cores) == "integer" and s.cores >= 1, "cores")
  eq(s.stack_reads, kjit.stack_reads)
  eq(s.cache_dir, kjit.cache_dir())
  truthy(math.type(s.cache_files) == "integer" and math.type(s.cache_bytes) == "integer", "cache")
  local avail, why = kjit.cuda.is_available()
  eq(s.libcuda, avail)
  if not avail then truthy(s.cuda:find(why, 1, true), s.cuda) end
  truthy(type(s.cuda_devices) == "table", "device list")
  truthy(type(s.ptx_backend) == "string", "ptx backend")
  -- the cache counts kjit's files in its directory
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  local old = kjit.cache_dir()
  kjit.cache_dir(dir)
  local f = assert(io.open(dir .. "/cpu-0123456789abcdef.kjc", "w"))
  f:write("12345")
  f:close()
  local s2 = kjit.sysinfo()
  eq(s2.cache_dir, dir)
  eq(s2.cache_files, 1)
  eq(s2.cache_bytes, 5)
  kjit.cache_clear()
  kjit.cache_dir(old == s.cache_dir and false or old)
  os.remove(dir)
end)

test("the kjit table is public API only: its helpers for kjit's own tests are in kjit.testing", function()
  for k in pairs(kjit) do
    truthy(type(k) ~= "string" or k:sub(1, 1) ~= "_", "kjit." .. tostring(k) .. " is private")
  end
  local t = require "kjit.testing"
  truthy(type(t.nop) == "function" and type(t.alloc_stats) == "function", "kjit.testing's helpers")
end)

test("lua5.4 -l kjit -e 'kjit.sysinfo(true)' prints the report", function()
  local out = child("", "-l kjit -e 'kjit.sysinfo(true)'", "")
  truthy(out:find("kjit%s+" .. kjit.version:gsub("%.", "%%.")), out)
  for _, k in ipairs({ "lua", "llvm", "cpu", "cpu_features", "threads", "cache_dir", "cuda",
                       "ptx_backend" }) do
    truthy(out:find("\n" .. k .. "%s") or out:find("^" .. k .. "%s"), k .. " in:\n" .. out)
  end
end)

local PERF_CHILD = [[
local kjit = require "kjit"
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local f = kjit.jit(fib)
assert(f(15) == 610)
local pid = io.open("/proc/self/stat"):read("n")
local m = io.open("/tmp/perf-" .. pid .. ".map")
if not m then print("NOMAP") return end
local maps = {}
for l in io.lines("/proc/self/maps") do
  local a, b, perm = l:match("^(%x+)-(%x+) (%S+)")
  if perm:find("x", 1, true) then maps[#maps + 1] = { tonumber(a, 16), tonumber(b, 16) } end
end
for l in m:lines() do
  local a, n, name = l:match("^(%x+) (%x+) (.+)$")
  a, n = tonumber(a, 16), tonumber(n, 16)
  local inside = false
  for _, r in ipairs(maps) do if a >= r[1] and a + n <= r[2] then inside = true end end
  print(name, n > 0 and inside and "EXEC" or "BAD")
end
m:close()
os.remove("/tmp/perf-" .. pid .. ".map")
]]

test("KJIT_PERF_MAP=1: JIT code in /tmp/perf-<pid>.map, in executable memory", function()
  local out = child("KJIT_PERF_MAP=1", "", PERF_CHILD)
  truthy(not out:find("NOMAP", 1, true), "a perf map is written: " .. out)
  truthy(out:find("kjit_entry_%d+%s+EXEC"), "the entry: " .. out)
  -- the recursive function keeps its own symbol, named by its chunk and line
  truthy(out:find("kjit_f0_s0_[%w_]*_2%s+EXEC"), "fib, line 2 of the child's file: " .. out)
  truthy(not out:find("BAD", 1, true), out)
  -- off by default: no file
  local out2 = child("", "", PERF_CHILD)
  truthy(out2:find("NOMAP", 1, true), out2)
  local out3 = child("KJIT_PERF_MAP=0", "", PERF_CHILD)
  truthy(out3:find("NOMAP", 1, true), out3)
end)

local WARN_CHILD = [[
local kjit = require "kjit"
local f = kjit.jit(function(a)
  local s = 0
  for i = 1, #a do s = s + a[i] end
  return s
end, { parallel = true })
io.stderr:write("sum ", f(kjit.arange(4)), "\n")
local g = kjit.jit(function(a)
  local s = 0
  for i in kjit.prange(1, #a) do s = s + a[i] end
  return s
end, { parallel = true })
io.stderr:write("psum ", g(kjit.arange(4)), "\n")
]]

test("parallel = true with nothing parallel: a Lua warning (lua5.4 -W), off by default", function()
  local out = child("", "-W", WARN_CHILD)
  truthy(out:find("sum 6", 1, true) and out:find("psum 6", 1, true), out)
  local n = 0
  for _ in out:gmatch("has parallel = true, but none of its loops runs in parallel") do n = n + 1 end
  eq(n, 1, "one warning, for f only:\n" .. out)
  truthy(out:find("Lua warning: kjit: the function at [^\n]-:2 has parallel = true"), out)
  local quiet = child("", "", WARN_CHILD)
  truthy(not quiet:find("warning", 1, true), quiet)
end)

local KERNEL_CHILD = [[
local kjit = require "kjit"
local cuda = kjit.cuda
local k = cuda.jit(function(x)
  local i = cuda.grid(1)
  if i <= #x then x[i] = x[i] + 1 end
end)
local x = kjit.zeros(64, "f32")
local d = cuda.to_device(x)
for n = 1, 3 do k[{1, 64}](d) end   -- device arrays: no warning
io.stderr:write("device done\n")
for n = 1, 3 do k[{1, 64}](x) end   -- host arrays: warned at the second launch
io.stderr:write("host done\n")
]]

test("a kernel launched with host arrays again: a Lua warning (lua5.4 -W)", function()
  local mock = BUILD .. "/libmockcuda.so"
  if not io.open(mock) then skip("no " .. mock .. " (build target mockcuda)") end
  local out = child("KJIT_LIBCUDA=" .. mock, "-W", KERNEL_CHILD)
  truthy(out:find("host done", 1, true), out)
  local n = 0
  for _ in out:gmatch("is launched with host arrays again") do n = n + 1 end
  eq(n, 1, "one warning:\n" .. out)
  local dev_part = out:sub(1, out:find("device done", 1, true))
  truthy(not dev_part:find("warning", 1, true), "none for device arrays:\n" .. out)
  truthy(out:find("Lua warning: kjit: the kernel at [^\n]-:3 is launched with host arrays again"), out)
  local quiet = child("KJIT_LIBCUDA=" .. mock, "", KERNEL_CHILD)
  truthy(not quiet:find("warning", 1, true), quiet)
end)

local GDB_CHILD = [[
local kjit = require "kjit"
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local f = kjit.jit(fib)
assert(f(20) == 6765)
os.execute("kill -TRAP " .. io.open("/proc/self/stat"):read("n"))
]]

-- gdb runs a child that compiles, then stops itself; gdb lists the JIT's
-- functions only when kjit registered them (KJIT_GDB=1)
local function gdb_functions(env)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(GDB_CHILD)
  f:close()
  local p = io.popen(string.format(
    "LUA_CPATH='%s/?.so;;' %s timeout 120 gdb -nx -batch -ex run -ex 'info functions kjit_' --args %s %s 2>&1",
    BUILD, env, LUA, path))
  local out = p:read("a")
  p:close()
  os.remove(path)
  return out
end

test("KJIT_GDB=1: compiled functions registered with gdb (LLVM's GDB listener)", function()
  if not os.execute("command -v gdb >/dev/null 2>&1") then skip("no gdb") end
  -- the sanitizer runs preload libasan into every process, gdb included,
  -- which then never returns (the timeout above is the backstop)
  if os.getenv("ASAN_OPTIONS") then skip("gdb under the sanitizers' LD_PRELOAD") end
  local out = gdb_functions("KJIT_GDB=1")
  if not out:find("SIGTRAP", 1, true) then skip("gdb cannot run a program here:\n" .. out) end
  truthy(out:find("kjit_entry_%d+"), "the entry:\n" .. out)
  truthy(out:find("kjit_f0_s0[%w_.]*_2"), "fib, by name and line:\n" .. out)
  local off = gdb_functions("")
  truthy(off:find("SIGTRAP", 1, true), off)
  truthy(not off:find("kjit_entry_%d+"), "not registered by default:\n" .. off)
end)

test("kjit.sysinfo() lists the CUDA devices the driver reports (mock driver)", function()
  local mock = BUILD .. "/libmockcuda.so"
  if not io.open(mock) then skip("no " .. mock .. " (build target mockcuda)") end
  local out = child("KJIT_LIBCUDA=" .. mock, "-l kjit -e 'kjit.sysinfo(true)'", "")
  truthy(out:find("\ncuda%s+available\n"), out)
  truthy(out:find("\ncuda_devices%s+Mock GPU 0, Mock GPU 1\n"), out)
  truthy(out:find("\nlibcuda%s+true\n"), out)
  local t = child("KJIT_LIBCUDA=" .. mock, "",
    "local s = require('kjit').sysinfo() print(#s.cuda_devices, s.cuda_devices[2], s.libcuda)")
  truthy(t:find("2\tMock GPU 1\ttrue", 1, true), t)
end)
