-- test_tooling.lua: the debugging and introspection tools of jit objects and
-- kernels: KJIT_DISABLE_JIT, f.compile_ms, k.signatures.
local kjit = require "kjit"
local cuda = kjit.cuda

-- Runs a Lua script in a fresh lua5.4 with the given environment
-- assignments; returns its output (stdout and stderr) and whether it exited 0.
local function run_child(env, script)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(script)
  f:close()
  local interp = arg and arg[-1] or "lua5.4"
  local cmd = string.format("env %s LUA_CPATH=%q %q %q 2>&1", env, package.cpath, interp, path)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  return out, ok
end

-- A function kjit cannot compile (it returns a module table), a kernel that
-- prints (only the interpreting simulator can), and a traceback through
-- both: all interpreted under KJIT_DISABLE_JIT=1.
local child = [[
local kjit = require "kjit"
local cuda = kjit.cuda
local f = kjit.jit(function(x) return math, x .. "!" end)
print("f", select(2, f(1)), #f.signatures)
local k = cuda.jit(function(out)
  local i = cuda.grid(1)
  out[i] = i * 10
  if i == 2 then print("thread", i) end
end)
local o = kjit.zeros(3)
k[{1, 3}](o)
print("k", o[1], o[2], o[3])
local g = kjit.jit(function(x) error("boom at " .. x) end)
local ok, tb = xpcall(g, debug.traceback, 7)
print("g", tb:match("boom at 7") ~= nil, tb:find("in function", 1, true) ~= nil)
]]

test("KJIT_DISABLE_JIT=1: jit functions and kernels run interpreted", function()
  local out, ok = run_child("KJIT_DISABLE_JIT=1", child)
  truthy(ok, "the script failed:\n" .. out)
  truthy(out:find("f\t1!\t0", 1, true), "the jit function ran in Lua, nothing compiled:\n" .. out)
  truthy(out:find("thread\t2", 1, true), "print ran in the kernel (interpreting simulator):\n" .. out)
  truthy(out:find("k\t10.0\t20.0\t30.0", 1, true), "the kernel's results:\n" .. out)
  truthy(out:find("g\ttrue\ttrue", 1, true), "the error and a Lua traceback:\n" .. out)
end)

test("without KJIT_DISABLE_JIT (or with 0) the same script fails to compile", function()
  for _, env in ipairs({ "-u KJIT_DISABLE_JIT", "KJIT_DISABLE_JIT=0" }) do
    local out, ok = run_child(env, child)
    truthy(not ok, "the script ran with '" .. env .. "'")
    truthy(out:find("cannot return a table from compiled code", 1, true),
           "the compile error:\n" .. out)
  end
end)

test("f.compile_ms: the compile time of the last specialization", function()
  local f = kjit.jit(function(x) return x * 2 end)
  eq(f.compile_ms, nil, "nothing compiled yet")
  f(1)
  local ms = f.compile_ms
  truthy(math.type(ms) == "float" and ms > 0, "compile_ms " .. tostring(ms))
  f(1.5)
  truthy(f.compile_ms > 0, "second specialization")
  f:compile("(i64)")   -- already compiled: no new time
  eq(#f.signatures, 2)
  raises("kjit function has no field 'compile_time'", function() return f.compile_time end)
end)

test("k.signatures: the argument types compiled, newest first, each once", function()
  local k = cuda.jit(function(x, s)
    local i = cuda.grid(1)
    if i <= #x then x[i] = x[i] * s end
  end)
  eq(#k.signatures, 0, "nothing compiled yet")
  k:compile("void(f64[:], f64)")
  k:compile("void(f32[:], f64)")
  k:compile("void(f32[:], f64)", 80)   -- another device: the same signature
  local sigs = k.signatures
  eq(#sigs, 2)
  eq(sigs[1], "(f32[:], f64)")
  eq(sigs[2], "(f64[:], f64)")
  truthy(k.compile_ms > 0, "compile_ms of kernels")
end)

test('f:inspect("parallel"): what parallel = true did with each loop', function()
  -- line numbers are those of this file, counted from `start`
  local start = debug.getinfo(1, "l").currentline
  local function body(m, out)
    local total, biggest = 0.0, -math.huge
    for i in kjit.prange(1, m.shape[1]) do
      local row, s = m[i], 0.0
      for j = 1, #row do s = s + row[j] end
      for k in kjit.prange(1, 2) do s = s + k end
      out[i] = s
      total = total + s
      biggest = math.max(biggest, s)
    end
    local w = 0
    while w < 3 do w = w + 1 end
    return total, biggest
  end
  local f = kjit.jit(body, { parallel = true })
  raises("nothing compiled yet", function() return f:inspect("parallel") end)
  local t, b = f(kjit.full({ 8, 4 }, 1.0), kjit.zeros(8))
  eq(t, 8 * 7.0); eq(b, 7.0)
  local text = f:inspect("parallel")
  local function has(line, what)
    local want = string.format("line %d: %s", start + line, what)
    truthy(text:find(want, 1, true), "'" .. want .. "' in:\n" .. text)
  end
  has(3, "kjit.prange loop: parallel, its iterations split in chunks over the thread pool; "
      .. "reductions: total (s + e), biggest (math.max(s, e)); shared, read only: m, out")
  has(5, "for loop: sequential (only kjit.prange loops run in parallel)")
  has(6, "kjit.prange loop: sequential, inside each iteration of the enclosing parallel loop")
  has(12, "while loop: sequential")
  local _, nlines = text:gsub("\n", "")
  eq(nlines, 4, "one line per loop")

  local g = kjit.jit(body)   -- no parallel = true
  g(kjit.full({ 2, 2 }, 1.0), kjit.zeros(2))
  text = g:inspect("parallel")
  has(3, "kjit.prange loop: sequential (the function does not have parallel = true)")
  local h = kjit.jit(function(x) return x + 1 end)
  h(1)
  eq(h:inspect("parallel"), "no loops\n")
  raises("bad argument #1 to 'inspect' (invalid option 'paralel')", function() return h:inspect("paralel") end)
end)
