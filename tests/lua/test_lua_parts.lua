-- test_lua_parts.lua: the Lua-written parts of kjit (lua/kjit/*.lua) run on
-- first use, not in require "kjit" (src/host/lua_parts.c): require runs
-- none; each entry point used first in a fresh state loads its part and
-- works as when the parts ran in require; errors at a first use are those
-- of a later use, at the user's line; what the parts see is fixed when
-- kjit is opened. Every case runs in a fresh lua5.4 (a fresh state).
local kjit = require "kjit"
local testing = require "kjit.testing"

local BUILD = assert(arg and arg[1], "harness passes the build dir")

-- Runs code in a fresh lua5.4 with kjit from the build; returns its output
-- (stdout and stderr) and whether it exited 0.
local function child(code, env)
  local path = os.tmpname()
  write_file(path, code)
  local p = io.popen(string.format("LUA_CPATH='%s/?.so;;' %s lua5.4 %s 2>&1", BUILD, env or "", path))
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  return out, ok, path
end

-- A child's prelude: ran() lists the parts that ran, as "a,b" in name order.
local PRELUDE = [[
local kjit = require "kjit"
local testing = require "kjit.testing"
local function ran()
  local names = {}
  for name, p in pairs(testing.lua_parts()) do if p.ran then names[#names + 1] = name end end
  table.sort(names)
  return table.concat(names, ",")
end
]]

local function run_ok(code, env)
  local out, ok = child(PRELUDE .. code, env)
  truthy(ok, "child failed:\n" .. out)
  return out
end

test("require 'kjit' runs no Lua part; a name no part provides loads none", function()
  local out = run_ok([[
    print("after require: [" .. ran() .. "]")
    print(kjit.no_such_name, kjit.cuda.no_such_name, kjit.cuda.random.no_such_name, kjit[1])
    print("after misses: [" .. ran() .. "]")
  ]])
  truthy(out:find("after require: []", 1, true), out)
  truthy(out:find("nil\tnil\tnil\tnil", 1, true), out)
  truthy(out:find("after misses: []", 1, true), out)
end)

test("each part declares every name it adds, and only those; one name loads one part", function()
  local parts = testing.lua_parts()
  local names = {}
  for name in pairs(parts) do names[#names + 1] = name end
  table.sort(names)
  truthy(#names >= 4, "the parts: " .. table.concat(names, " "))
  local seen = {}
  for _, name in ipairs(names) do
    local provides = parts[name].provides
    truthy(#provides > 0, name .. " provides names")
    for _, p in ipairs(provides) do
      truthy(not seen[p], p .. " provided by " .. name .. " and " .. tostring(seen[p]))
      seen[p] = name
    end
    -- in a fresh state: the keys of kjit's tables before and after the
    -- first read of the part's first name
    local out = run_ok(string.format([[
      local function keys()
        local k = {}
        for _, t in ipairs{ { "kjit", kjit }, { "kjit.cuda", kjit.cuda },
                            { "kjit.cuda.random", kjit.cuda.random } } do
          for key in pairs(t[2]) do k[t[1] .. "." .. tostring(key)] = true end
        end
        return k
      end
      local before = keys()
      local first = %q
      local v = kjit
      for step in first:gmatch("[^.]+") do if step ~= "kjit" then v = v[step] end end
      assert(v ~= nil, first .. " is nil")
      local added = {}
      for k in pairs(keys()) do if not before[k] then added[#added + 1] = k end end
      table.sort(added)
      print("added: " .. table.concat(added, " "))
      print("ran: [" .. ran() .. "]")
    ]], provides[1]))
    local want = {}
    for _, p in ipairs(provides) do want[#want + 1] = p end
    table.sort(want)
    truthy(out:find("added: " .. table.concat(want, " ") .. "\n", 1, true),
           name .. " adds exactly its provides lines' names:\n" .. out)
    truthy(out:find("ran: [" .. name .. "]", 1, true), name .. " alone ran:\n" .. out)
  end
end)

test("each entry point used first in a fresh state works (results as in plain Lua)", function()
  run_ok([[
    local f = kjit.vectorize(function(x, y) return x * y + 1 end, { "f64(f64, f64)" })
    local r = f(kjit.arange(4, "f64"), 2)
    assert(r[1] == 1 and r[4] == 7, "vectorize")
    assert(ran() == "kjit/ufunc.lua", ran())
  ]])
  run_ok([[
    local g = kjit.guvectorize(function(a, out) local s = 0.0 for i = 1, #a do s = s + a[i] end out[1] = s end,
                               "void(f64[:], f64[:])", "(n)->()")
    local r = g(kjit.arange(1, 7, "f64"):reshape({ 2, 3 }))
    assert(r[1] == 6 and r[2] == 15, "guvectorize " .. tostring(r[1]) .. " " .. tostring(r[2]))
  ]])
  run_ok([[
    local s = kjit.reduce(function(a, b) return a + b end)
    assert(s(kjit.arange(1, 101)) == 5050, "reduce")
    assert(ran() == "kjit/reduce.lua", ran())
  ]])
  run_ok([[
    kjit.cuda.simulate(true)
    local s = kjit.cuda.reduce(function(a, b) return a + b end)
    assert(s(kjit.arange(1, 1001)) == 500500, "cuda.reduce in the simulator")
  ]])
  run_ok([[
    assert(#kjit.cuda.gpus == #kjit.cuda.list_devices(), "#cuda.gpus")
    assert(ran() == "kjit/cuda_devices.lua", ran())
  ]])
  -- the in-kernel generator used from plain Lua, then the same steps again
  -- on a second array: the same sequence
  run_ok([[
    local R = kjit.cuda.random
    local function draws()
      local states = kjit.zeros(4, R.xoroshiro128p_dtype)
      R.init_xoroshiro128p_states(states, 1234)
      local t = {}
      for i = 1, 4 do t[i] = R.xoroshiro128p_uniform_float64(states, i) end
      return t
    end
    local a, b = draws(), draws()
    for i = 1, 4 do assert(a[i] == b[i] and a[i] >= 0 and a[i] < 1, "draw " .. i) end
    assert(ran() == "kjit/random.lua", ran())
  ]])
end)

test("a part's first use inside a compile (the typer reads the name) loads it", function()
  run_ok([[
    local R = kjit.cuda.random
    local step = kjit.jit(function(states, n)
      local s = 0.0
      for _ = 1, n do s = s + R.xoroshiro128p_uniform_float64(states, 1) end
      return s
    end)
    local dt = kjit.struct{ { "s0", "u64" }, { "s1", "u64" } }
    local a, b = kjit.zeros(1, dt), kjit.zeros(1, dt)
    a[1].s0, a[1].s1, b[1].s0, b[1].s1 = 7, 99, 7, 99
    assert(ran() == "", "nothing loaded before the compile: " .. ran())
    local got = step(a, 10)
    assert(ran() == "kjit/random.lua", ran())
    local want = 0.0
    for _ = 1, 10 do want = want + R.xoroshiro128p_uniform_float64(b, 1) end
    assert(got == want, string.format("compiled %.17g, interpreted %.17g", got, want))
  ]])
end)

-- The error of a call, first (the part loads) and second time, from the same line.
local SAME_ERROR = [[
local function use() local r = %s return r end   -- line %d of the chunk
local ok1, e1 = pcall(use)
local ok2, e2 = pcall(use)
assert(not ok1 and not ok2, "both raise")
assert(e1 == e2, "first use: " .. tostring(e1) .. "\nlater use: " .. tostring(e2))
print("ERR " .. e1)
]]

test("errors at a first use: message and user's line as at a later use", function()
  local line = select(2, PRELUDE:gsub("\n", "")) + 1
  for _, case in ipairs{
    { "kjit.vectorize(42)", "vectorize" },
    { "kjit.guvectorize(function() end, 5)", "signatures must be" },
    { "kjit.reduce('x')", "reduce" },
    { "kjit.cuda.gpus[99]", "cuda.gpus[99]" },
    { "kjit.cuda.random.init_xoroshiro128p_states(kjit.zeros(2), 1)", "init_xoroshiro128p_states" },
  } do
    local out, ok, path = child(PRELUDE .. string.format(SAME_ERROR, case[1], line))
    truthy(ok, case[1] .. ":\n" .. out)
    local err = out:match("ERR ([^\n]*)")
    truthy(err and err:find(case[2], 1, true), case[1] .. ": " .. out)
    truthy(err:find(":" .. line .. ": ", 1, true), case[1] .. " at the user's line " .. line .. ": " .. err)
    truthy(err:find(path:match("[^/]+$"), 1, true), case[1] .. " names the user's file: " .. err)
  end
end)

test("the parts see the base library as it was when kjit was opened", function()
  -- a script that removes globals after require: the parts still work
  local out = run_ok([[
    local pcall, print, tostring = pcall, print, tostring
    error, pairs, ipairs, next, select, setmetatable, type, assert, load =
      nil, nil, nil, nil, nil, nil, nil, nil, nil
    _G.pcall, _G.tostring = nil, nil
    local f = kjit.vectorize(function(x) return x + 1 end, { "f64(f64)" })
    local r = f(kjit.arange(3, "f64"))
    if r[3] ~= 3 then print("BAD vectorize") end
    local ok, e = pcall(kjit.reduce, 42)
    if ok or not tostring(e):find("reduce", 1, true) then print("BAD reduce error " .. tostring(e)) end
    if #kjit.cuda.gpus ~= #kjit.cuda.list_devices() then print("BAD gpus") end
    print("done")
  ]])
  truthy(out:find("done", 1, true) and not out:find("BAD", 1, true), out)
end)

test("a part that cannot load fails at its first use, at the user's line, and again later", function()
  -- cuda_devices.lua calls setmetatable as it loads: without it (removed
  -- before kjit was opened) the part cannot load
  local out, ok, path = child([[
rawset(_G, "setmetatable", nil)
local kjit = require "kjit"
local function use() return #kjit.cuda.gpus end
local ok1, e1 = pcall(use)
local ok2, e2 = pcall(use)
print(ok1, e1)
print(ok2, e2)
]])
  truthy(ok, out)
  local file = path:match("[^/]+$")
  truthy(out:find("false\t[^\n]*" .. file .. ":3: kjit: cannot load its part kjit/cuda_devices.lua"), out)
  truthy(select(2, out:gsub("cannot load its part", "")) == 2, "raised again at the second use:\n" .. out)
end)

test("the parts loaded in this state are still the same values (no second load)", function()
  local v = kjit.vectorize
  truthy(testing.lua_parts()["kjit/ufunc.lua"].ran, "ufunc ran")
  truthy(rawget(kjit, "vectorize") == v, "a plain field once loaded")
  eq(kjit.vectorize, v)
end)

test("require 'kjit' leaves little on the Lua heap (no part, no grown stack)", function()
  -- 42 KB here (2026-11-28): the module's C functions and tables; the
  -- parts run at require added about 120 KB, the stack-read probe run on
  -- the main thread 62 KB (its grown stack, kept: src/host/lua_stack.c)
  local out = child([[
    collectgarbage() collectgarbage()
    local c0 = collectgarbage("count")
    local kjit = require "kjit"
    collectgarbage() collectgarbage()
    print(string.format("KB %.1f %s", collectgarbage("count") - c0, kjit.stack_reads))
  ]])
  local kb, reads = out:match("KB ([%d.]+) (%S+)")
  truthy(kb, out)
  truthy(tonumber(kb) < 64, "require left " .. kb .. " KB on the heap (stack reads " .. reads .. ")")
end)
