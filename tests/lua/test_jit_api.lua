-- test_jit_api.lua: the kjit.jit object: options, f.lua, inspect, compile,
-- specialization cache, code quality checks and bounded memory.
local kjit = require "kjit"

local function saxpy(a, x, y, out)
  for i = 1, #x do out[i] = a * x[i] + y[i] end
end

local function add(a, b) return a + b end

test("jit returns a callable with .lua", function()
  local f = kjit.jit(add)
  eq(f(2, 3), 5)
  eq(f(2.5, 3), 5.5)
  truthy(f.lua == add, "f.lua is the original function")
  truthy(tostring(f):find("kjit.jit(", 1, true), "tostring")
  truthy(kjit.jit(f) == f, "jit of a jit object is itself")
end)

test("specializations are cached per signature", function()
  local f = kjit.jit(add)
  f(1, 2); f(1.5, 2); f(1, 2); f(3, 4)
  local sigs = f.signatures
  eq(#sigs, 2, "two signatures")
end)

test("inspect types names the signature and locals", function()
  local f = kjit.jit(saxpy)
  local x, y, o = kjit.full(8, 1.5, "f32"), kjit.full(8, 2, "f32"), kjit.zeros(8, "f32")
  f(2.0, x, y, o)
  local t = f:inspect("types")
  truthy(t:find("(f64, f32[:], f32[:], f32[:])", 1, true), "signature in: " .. t)
  truthy(t:find("local i: i64", 1, true), "loop variable type")
  eq(o[3], 5.0)
end)

test("saxpy with default bounds checks is vectorized", function()
  for _, dt in ipairs({ "f32", "f64" }) do
    local f = kjit.jit(saxpy)
    local n = 1000
    local x, y, o = kjit.full(n, 1.5, dt), kjit.full(n, 2, dt), kjit.zeros(n, dt)
    f(2.0, x, y, o)
    local asm = f:inspect("asm")
    -- packed SSE/AVX/AVX-512 arithmetic on whole vectors
    local packed = asm:find("v?mulp[sd]%s+[^\n]*[xyz]mm") or asm:find("v?addp[sd]%s+[^\n]*[xyz]mm")
    truthy(packed, dt .. " saxpy has packed vector instructions")
    eq(o[n], 5.0)
  end
end)

test("inspect llvm returns IR, and compile checks signatures", function()
  local f = kjit.jit(add)
  f:compile("i64(i64, i64)")
  local ir = f:inspect("llvm")
  truthy(ir:find("define", 1, true), "IR text")
  raises("declares result f64", function() f:compile("f64(i64, i64)") end)
  f:compile("f64(f64, i64)")
  raises("bad signature", function() f:compile("nonsense") end)
  raises("cannot read argument #1", function() f:compile("f64(c64[:])") end)
  local g = kjit.jit(saxpy)
  g:compile("void(f64, f32[:], f32[:], f32[:])")
  truthy(g:inspect("types"):find("f32[:]", 1, true), "types after compile")
end)

test("inspect before any compile is an error", function()
  local f = kjit.jit(add)
  raises("nothing compiled yet", function() f:inspect("types") end)
  raises("invalid option", function() f:compile("i64(i64, i64)"); f:inspect("machinecode") end)
end)

test("options are checked", function()
  raises("unknown option 'boundcheck'", function() kjit.jit(add, { boundcheck = false }) end)
  raises("must be a boolean", function() kjit.jit(add, { fastmath = 1 }) end)
  raises("must be an integer from 0 to 3", function() kjit.jit(add, { opt = 7 }) end)
  raises("Lua function expected, got number", function() kjit.jit(3) end)
  raises("Lua function expected, got C function", function() kjit.jit(print) end)
  local f = kjit.jit(add, { opt = 0 })
  eq(f(40, 2), 42)
end)

test("boundscheck = false removes checks (in-bounds code still right)", function()
  local function sum(x) local s = 0.0 for i = 1, #x do s = s + x[i] end return s end
  local f = kjit.jit(sum, { boundscheck = false })
  eq(f(kjit.array({ 1, 2, 3 })), 6.0)
  local g = kjit.jit(sum)
  eq(g(kjit.array({ 1, 2, 3 })), 6.0)
end)

test("a hoisted check still raises at the exact iteration", function()
  local function fill(x, n) for i = 1, n do x[i] = i end end
  local f = kjit.jit(fill)
  local x = kjit.zeros(5, "i32")
  local msg = raises("index 6 out of bounds [1, 5]", f, x, 8)
  truthy(msg:find("test_jit_api.lua:", 1, true), "located: " .. msg)
  -- iterations before the failing one ran, as in the interpreter
  eq(x[5], 5)
end)

test("fastmath allows reassociation; default is exact", function()
  local function dot(x, y) local s = 0.0 for i = 1, #x do s = s + x[i] * y[i] end return s end
  local x = kjit.linspace(0, 1, 1001)
  local strict = kjit.jit(dot)
  local fast = kjit.jit(dot, { fastmath = true })
  eq(strict(x, x), dot(x, x))
  near(fast(x, x), dot(x, x), 1e-12)
  local asm = fast:inspect("asm")
  truthy(asm:find("addpd%s+[^\n]*[yz]mm") or asm:find("fmadd%d*pd"), "fast dot is vectorized")
end)

test("a function stays usable after run-time errors", function()
  local function div(a, b) return a // b end
  local f = kjit.jit(div)
  for _ = 1, 3 do raises("attempt to divide by zero", f, 1, 0) end
  eq(f(7, 2), 3)
end)

test("compile errors inside pcall, then compiling again", function()
  local function bad(x) return math end
  local f = kjit.jit(bad)
  for _ = 1, 3 do raises("cannot return a table from compiled code", f, 1) end
  local g = kjit.jit(add)
  eq(g(1, 2), 3)
end)

test("argument errors", function()
  local f = kjit.jit(add)
  -- a string is a Lua value now (issue 29): Lua's own coercion
  truthy(same_value(f("1", 2), add("1", 2)), "string arithmetic as interpreted")
  eq(select(2, pcall(f, "x", 2)), select(2, pcall(add, "x", 2)))
  -- a table is a Lua value now (issue 29): the interpreter's own error
  eq(select(2, pcall(f, 1, {})), select(2, pcall(add, 1, {})))
  local many = {}
  for i = 1, 40 do many[i] = i end
  raises("too many arguments", f, table.unpack(many))
end)

test("deep recursion raises stack overflow, not a crash", function()
  local function deep(n) if n == 0 then return 0 end return 1 + deep(n - 1) end
  local f = kjit.jit(deep)
  eq(f(10000), 10000)
  local msg = raises("stack overflow", f, 100000000)
  truthy(msg:find("test_jit_api.lua:", 1, true), "located: " .. msg)
  eq(f(100), 100)
end)

test("1000 distinct functions compile with bounded memory", function()
  local function rss_kb()
    local f = io.open("/proc/self/statm")
    if not f then return nil end
    local pages = f:read("n"); pages = f:read("n"); f:close()
    return pages * 4
  end
  local function batch(n, seed)
    for i = 1, n do
      local src = string.format("return function(a) return a * %d + %d end", i, seed)
      local fn = kjit.jit(load(src)())
      assert(fn(2) == 2 * i + seed)
    end
    collectgarbage(); collectgarbage()
  end
  batch(200, 1)
  local before = rss_kb()
  batch(1000, 2)
  local after = rss_kb()
  if before and after then
    local grown = (after - before) / 1024
    truthy(grown < 40, string.format("resident memory grew by %.1f MiB", grown))
  end
end)

test("upvalues and globals are frozen at compile time", function()
  local k = 10
  local function f(x) return x * k end
  local jf = kjit.jit(f)
  eq(jf(2), 20)
  k = 100       -- changes the interpreted function, not the compiled code
  eq(jf(2), 20)
  eq(f(2), 200)
end)

test("config tables are compile-time namespaces", function()
  local cfg = { scale = 3, inner = { offset = 0.5 } }
  local function f(x) return x * cfg.scale + cfg.inner.offset + math.pi end
  eq(kjit.jit(f)(2), f(2))
end)

test("returned false-or-number values keep their Lua value", function()
  local function f(x) return x > 0 and x, math.tointeger(x) end
  local jf = kjit.jit(f)
  local a, b = jf(-1.5)
  eq(a, false); eq(b, nil)
  a, b = jf(3.0)
  eq(a, 3.0); eq(b, 3)
end)

test("every documented option is accepted", function()
  -- cache (tests/lua/test_cache.lua) and parallel (tests/lua/test_prange.lua)
  eq(kjit.jit(add, { cache = false, parallel = false })(1, 2), 3)
  eq(kjit.jit(add, { parallel = true })(1, 2), 3)
end)

test("docs: index a number raises Lua's error, naming the local", function()
  local g = kjit.jit(function(v) return v[1] end)
  raises("attempt to index a number value (local 'v')", g, 2.5)
end)
