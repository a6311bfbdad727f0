-- Differential tests for the entry wrapper's Lua-value paths (codegen/
-- cg_entry.c): the slots of a compiled function's results of Lua type are
-- opened inline (cg_lua.c cg_lua_open_at) and a table argument's address
-- is read in place (cg_lua_table_at) where the stack probe agreed, else
-- through kjit_lv_open / kjit_lv_ptr (lua.test_entry_frames_api:
-- KJIT_NO_STACK_READS=1). The shape is bench/programs/array3d.lua's: a
-- generic for over a closure that returns an integer and two values, and
-- a method that writes its object, both called natively from a compiled
-- loop. Each case runs interpreted and compiled, under every callee
-- policy and with the collector at (about) every allocation; results,
-- table states (key by key) and error messages must agree.
local kjit = require "kjit"
local testing = require "kjit.testing"
local G = require "gc_harness"
local stack_reads = os.getenv("KJIT_NO_STACK_READS") == nil

-- t's entries as one string, keys sorted (values by type where they are
-- tables or functions: each pass makes its own)
local function state(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = t[k]
    local s = (type(v) == "table" or type(v) == "function") and type(v)
      or math.type(v) and (math.type(v) .. ":" .. tostring(v)) or tostring(v)
    parts[#parts + 1] = tostring(k) .. "=" .. s
  end
  return table.concat(parts, " ")
end

-- fresh state for one pass: an object with a method and an iterator over
-- a grid whose other coordinates are upvalues (strings, tables or numbers
-- by `kind`), and the loop that drives them
local function build(kind)
  local function points(self)
    local y, z = 0, 0
    if kind == "string" then y, z = "0", "0" end
    if kind == "table" then y, z = { n = 0 }, { n = 0 } end
    return function(self, x)
      x = x + 1
      if x >= self.nx then
        x = 0
        if kind == "table" then
          y = { n = y.n + 1, prev = y }
          if y.n >= self.ny then y = { n = 0 }; z = { n = z.n + 1 } end
          if z.n >= self.nz then return nil, nil, nil end
        else
          y = y + 1
          if kind == "string" then y = tostring(y) end
          if y + 0 >= self.ny then
            y = kind == "string" and "0" or 0
            z = z + 1
            if kind == "string" then z = tostring(z) end
            if z + 0 >= self.nz then return nil, nil, nil end
          end
        end
      end
      return x, y, z
    end, self, -1
  end
  local function set(self, x, y, z, p)
    local image = self.image
    image[#image + 1] = p
    self.last = y
    self.count = self.count + 1
    if self.fail and self.count == self.fail then error("set failed at " .. self.count) end
  end
  local obj = { nx = 3, ny = 4, nz = 2, image = {}, count = 0, points = points, set = set }
  local function loop(o)
    for x, y, z in o:points() do
      local yv = type(y) == "table" and y.n or y
      o:set(x, y, z, x * 10 + yv * 2)
    end
    return o.count, o.last
  end
  return obj, loop
end

local function pass(kind, compiled, fail)
  local obj, loop = build(kind)
  obj.fail = fail
  local f = compiled and kjit.jit(loop) or loop
  local log = {}
  for _ = 1, 3 do   -- (the first compiles; the later ones call natively)
    obj.image, obj.count = {}, 0
    local r = table.pack(pcall(f, obj))
    for i = 1, r.n do
      local v = r[i]
      log[#log + 1] = type(v) == "table" and "table" or tostring(v)
    end
    log[#log + 1] = state(obj.image) .. " | " .. state(obj)
  end
  return table.concat(log, "\n")
end

local function native_calls() return (select(3, testing.callees())) end

for _, kind in ipairs { "number", "string", "table" } do
  for _, fail in ipairs { false, 7 } do
    test(string.format("array3d's shape, %s upvalues%s, interpreted against compiled",
                       kind, fail and ", an error in the method" or ""), function()
      for _, policy in ipairs { "all", "leaves", "none" } do
        for _, mode in ipairs(G.modes) do
          local old = testing.callees(policy)
          local before = native_calls()
          local ok, err = pcall(G.with_gc, mode, function()
            eq(pass(kind, true, fail), pass(kind, false, fail), policy .. ", " .. mode)
          end)
          local made = native_calls() - before
          testing.callees(old)
          if not ok then error(err, 0) end
          -- (a native call gives only numbers: luacall.c "Native calls";
          -- other results come through the entry by the slow path)
          if policy == "all" and stack_reads and kind == "number" then
            truthy(made > 0, "native calls under \"all\"")
          end
        end
      end
    end)
  end
end

test("an error inside the iterator is located as interpreted", function()
  local function run(compiled)
    local function it(s, x)
      if x >= 3 then error("past " .. x) end
      return x + 1, "v" .. x, s
    end
    local function loop(t)
      local n = 0
      for x, a, b in it, t, 0 do n = n + x + #a + #b.name end
      return n
    end
    local f = compiled and kjit.jit(loop) or loop
    local old = testing.callees("all")
    local r = table.pack(pcall(f, { name = "abc" }))
    testing.callees(old)
    return tostring(r[1]) .. " " .. tostring(r[2])
  end
  eq(run(true), run(false))
end)

-- A fact: where the stack is read in place, an entry whose results are
-- Lua values opens their slots without a call (the helper stays only on
-- its cold path) and reads a table argument's address in place.
test("the entry opens its results' slots inline (a fact: the LLVM module)", function()
  if not stack_reads then return end
  local f = kjit.jit(function(t, x) return t, x .. "" end, { tiered = false })
  local a, b = f({ 1 }, 5)
  eq(type(a), "table")
  eq(b, "5")
  local ir = f:inspect("llvm")
  local entry = ir:match("define i32 @kjit_entry[^\n]*\n(.-)\n}")
  truthy(entry ~= nil, "an entry wrapper")
  -- every call of kjit_lv_open is on an inline open's cold side
  local opens = 0
  for block in ("\n" .. entry .. "\n\n"):gmatch("\n([%w._]+:.-)\n\n") do
    if block:find("@kjit_lv_open(", 1, true) then
      opens = opens + 1
      truthy(block:match("^lopenslow") ~= nil, "kjit_lv_open only where the stack has no room: " .. block)
    end
  end
  truthy(opens > 0, "the frames' cold paths")
  truthy(entry:find("tabat", 1, true), "the in-place read of the table's address")
end)
