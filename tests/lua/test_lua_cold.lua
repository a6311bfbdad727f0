-- Differential tests of Lua-value code that runs once (codegen/cg_lua.c,
-- "Where inline paths pay"): a main chunk compiled whole (kjit.jit of a
-- loaded chunk, as bench/programs/run1.lua does) and the functions only it
-- calls outside its loops open their frames and access tables through the
-- run-time helpers, not the inline paths; code inside loops, and every
-- function called from a loop, recursive or called from Lua, keeps them.
-- A cold function without loops is compiled optnone (LLVM's fast
-- instruction selection, no machine passes: it runs once), and so is one
-- whose every innermost loop calls a compiled function that loops or
-- recurses (the work is the callees'). Both ways must give the interpreter's answers: results, tables' state
-- key by key, errors with their messages and lines (tablediff).
local T = require "tablediff"
local kjit = require "kjit"

local function chunk(src, name)
  return assert(load(src, "=" .. (name or "cold")))
end

test("a main chunk's table work outside its loops, as interpreted", function()
  local src = [[
    local t = ...
    local r = { x = 1, y = 2.5, name = "r" }
    r.x = r.x + t.a            -- present fields, numbers of both kinds
    r.z = t.b * 2              -- a new key
    t.c = r.y - r.x            -- a write into the caller's table
    t.list[2] = t.list[1] + 0.5
    t.list[#t.list + 1] = r.name
    local p = t.points[2]
    p.x = p.x * 3              -- a table read then indexed (the inline copy's case)
    local s = 0
    for i = 1, #t.list - 1 do s = s + t.list[i] end   -- in a loop: inline
    local mt = setmetatable({}, { __index = function(_, k) return k .. "!" end })
    return r.x, r.z, s, t.missing, mt.foo, t.flag and 1 or 2, r
  ]]
  T.check(chunk(src), function()
    return { a = 2, b = 0.25, list = { 1, 2, 3 }, points = { { x = 1 }, { x = 2.5 } }, flag = false }
  end)
  -- integer keys of every kind: absent, past the array part, a float key
  T.check(chunk([[
    local t = ...
    t[1] = 10; t[5] = 50; t[2.0] = 20; t[-1] = "neg"
    local k = t.k
    t[k] = t[1] + t[2]
    return t[1], t[2], t[3], t[5], t[-1], t[k], #t
  ]]), function() return { k = 3 } end)
end)

test("errors in cold code keep their messages and lines", function()
  T.check_error("attempt to index a nil value", chunk([[
    local t = ...
    t.before = 1
    return t.nope.x
  ]], "cold_err1"), function() return {} end)
  T.check_error("attempt to index a number value", chunk([[
    local t = ...
    t.n = 4
    local n = t.n
    n.x = 2
  ]], "cold_err2"), function() return {} end)
  T.check_error("attempt to add", chunk([[
    local t = ...
    return t.s + 1
  ]], "cold_err3"), function() return { s = "abc" } end)
  -- __newindex raising: the writes before it stay done
  T.check_error("read-only", chunk([[
    local t = ...
    t.a = 1
    local ro = setmetatable({}, { __newindex = function() error("read-only") end })
    t.b = 2
    ro.x = 3
    t.c = 3
  ]], "cold_err4"), function() return {} end)
end)

test("a function the main chunk calls outside its loops, and from a loop", function()
  -- f is cold where only the chunk's straight code calls it; g is hot (a
  -- loop calls it); h recursive; all give the interpreter's answers
  T.check(chunk([[
    local t = ...
    local function f(o, k) o[k] = (o[k] or 0) + 1; return o.w * 2, o[k] end
    local function g(o, i) o.sum = o.sum + o.vals[i]; return o.sum end
    local function h(o, n) if n == 0 then return o.w end return h(o, n - 1) + o.vals[n] end
    local a, b = f(t, "hits")
    local c = f(t, "hits")
    for i = 1, #t.vals do g(t, i) end
    return a, b, c, t.sum, h(t, #t.vals)
  ]]), function() return { w = 1.5, sum = 0, vals = { 1, 2.5, 3, 4 } } end)
  -- the cold callee raising at its own line
  T.check_error("attempt to index a nil value", chunk([[
    local t = ...
    local function f(o) return o.inner.x end
    t.y = 1
    return f(t)
  ]], "cold_err5"), function() return { y = 0 } end)
end)

test("the inline paths only where code may run often (the IR)", function()
  -- the same body as a function (called from Lua: hot) and as a main
  -- chunk (cold); "lopenfast" is the inline frame's block, "ltmiss" an
  -- inline access's miss block (cg_lua.c open_inline, inline_get)
  local body = [[
    local t = ...
    t.x = t.x + t.y
    return t.x
  ]]
  local hot = kjit.jit(chunk("return function(...) " .. body .. " end")())
  local cold = kjit.jit(chunk(body))
  local function args() return { x = 1, y = 2 } end
  eq(hot(args()), 3)
  eq(cold(args()), 3)
  local hir, cir = hot:inspect("llvm"), cold:inspect("llvm")
  if hir:find("ltmiss", 1, true) then   -- (absent where the layout probe is off)
    assert(not cir:find("ltmiss", 1, true), "a main chunk's straight code has inline table paths")
  end
  if hir:find("lopenfast", 1, true) then
    assert(not cir:find("lopenfast", 1, true), "a main chunk opens its frame inline")
  end
  -- a cold function without loops gets LLVM's fast code generation
  -- (optnone); one called from Lua does not
  assert(cir:find("optnone", 1, true), "a main chunk without loops is not compiled as optnone")
  assert(not hir:find("optnone", 1, true), "a function called from Lua is compiled as optnone")
  -- a loop in the main chunk keeps its inline paths
  local loop = kjit.jit(chunk([[
    local t = ...
    local s = 0
    for i = 1, #t do s = s + t[i] end
    return s
  ]]))
  eq(loop({ 1, 2, 3 }), 6)
  if hir:find("ltmiss", 1, true) then
    assert(loop:inspect("llvm"):find("ltmiss", 1, true), "a main chunk's loop lost its inline paths")
  end
end)

-- The attributes of the function named by the Lua source line it is
-- defined at (0: the main chunk) in f:inspect("llvm"), "" when it has none.
local function attrs_of(ir, line)
  local group = ir:match("\ndefine [^\n]*@kjit_f%d+_s%d+_[%w_]-_" .. line .. "%([^\n]*%) #(%d+) {")
  if not group then return "" end
  return ir:match("\nattributes #" .. group .. " = { ([^}]*) }") or ""
end

test("a cold loop whose work is in recursive callees: fast code generation", function()
  -- binary-trees' shape: the main chunk's loops call recursive functions
  -- (hot: called from a loop) that build and check trees; the chunk runs
  -- once, so its own code gets optnone, the callees full optimization
  local src = [[
    local t = ...
    local function build(d) if d == 0 then return { 1 } end return { d, build(d - 1), build(d - 1) } end
    local function count(n) if n[2] then return n[1] + count(n[2]) - count(n[3]) end return n[1] end
    local s, last = 0, nil
    for k = 1, t.rounds do
      for i = 1, t.n do last = build(i % 4); s = s + count(last) end
    end
    t.s = s
    return s, last[1], #last
  ]]
  T.check(chunk(src, "cold_rec"), function() return { n = 9, rounds = 2 } end)
  local f = kjit.jit(chunk(src, "cold_rec"))
  eq(f({ n = 9, rounds = 2 }), select(1, chunk(src, "cold_rec")({ n = 9, rounds = 2 })))
  local ir = f:inspect("llvm")
  assert(attrs_of(ir, 0):find("optnone", 1, true), "the main chunk's call loops are not optnone")
  assert(not attrs_of(ir, 2):find("optnone", 1, true), "a recursive callee called from a loop is optnone")
  assert(not attrs_of(ir, 3):find("optnone", 1, true), "a recursive callee called from a loop is optnone")
  -- an error in the recursive callee, raised from inside the optnone loop
  T.check_error("attempt to add", chunk([[
    local t = ...
    local function count(n) if n[2] then return n[1] + count(n[2]) end return n[1] end
    local s = 0
    for i = 1, 3 do s = s + count({ i, { t.bad } }) end
    return s
  ]], "cold_rec_err"), function() return { bad = "x" } end)
end)

test("a cold loop that calls a method or a function value gets the fast code generator", function()
  -- the call through the Lua API costs more than the loop's own code
  -- (cg_lua.c work_in_callees: bench/tables/vectors.lua, perlin.lua)
  local srcs = {
    [[
      local t = ...
      local s = 0
      for i = 1, t.n do s = s + t:m(i) end
      return s
    ]],
    [[
      local t = ...
      local s = 0
      for i = 1, t.n do s = s + t.m(t, i) * 2 end
      return s
    ]],
  }
  local function m(self, i) return i + self.k end
  local function args() return { n = 10, k = 3, m = m } end
  for i, src in ipairs(srcs) do
    T.check(chunk(src, "cold_value" .. i), args)
    local f = kjit.jit(chunk(src, "cold_value" .. i))
    f(args())
    assert(attrs_of(f:inspect("llvm"), 0):find("optnone", 1, true),
           "case " .. i .. ": a main chunk loop calling through a value is not optnone")
  end
end)

test("a cold loop whose own code is the work keeps full code generation", function()
  -- a loop calling a loop-free function, or no function at all
  local srcs = {
    [[
      local t = ...
      local function f(x) return x * 2 + t.k end
      local s = 0
      for i = 1, t.n do s = s + f(i) end
      return s
    ]],
    [[
      local t = ...
      local function rec(n) if n == 0 then return 0 end return 1 + rec(n - 1) end
      local s = rec(3)
      for i = 1, t.n do s = s + i * t.k end   -- this loop calls nothing
      for i = 1, 2 do s = s + rec(i) end
      return s
    ]],
  }
  local function m(self, i) return i + self.k end   -- one function: tablediff compares by identity
  local function args() return { n = 10, k = 3, m = m } end
  for i, src in ipairs(srcs) do
    T.check(chunk(src, "cold_own" .. i), args)
    local f = kjit.jit(chunk(src, "cold_own" .. i))
    f(args())
    assert(not attrs_of(f:inspect("llvm"), 0):find("optnone", 1, true),
           "case " .. i .. ": a main chunk loop doing its own work is optnone")
  end
end)

test("Lua-value code: the specialization inlined into its entry (the IR)", function()
  -- backend/cpu.c kc_pipeline_lua_inline: a loop over table values (the
  -- Lua-value pipeline) leaves one function, the entry, with the body in it
  local function body(self, n)
    local s = 0
    for i = 1, n do
      local p = self.pts[i]
      s = s + p.x * p.y - self.k
      p.z = s
    end
    self.sum = s
    return s
  end
  local function args() return { pts = { { x = 1, y = 2 }, { x = 3, y = 4.5 } }, k = 1 }, 2 end
  T.check(body, args)
  local f = kjit.jit(body)
  eq(f(args()), body(args()))
  local ir = f:inspect("llvm")
  eq(select(2, ir:gsub("\ndefine ", "")), 1)
  assert(ir:find("\ndefine i32 @kjit_entry_", 1, true), "the entry is not the one function defined")
end)
