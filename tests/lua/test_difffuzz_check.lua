-- test_difffuzz_check.lua: the differential fuzzer's classifier
-- (tests/difffuzz/check.lua) on stand-ins for compiled functions, so that
-- each class it reports is seen to be reported (a fuzzer whose comparison
-- cannot fail would pass every program), and the generator makes programs
-- that load.
package.path = "tests/difffuzz/?.lua;" .. package.path
local C = require "check"
local G = require "gen"
local kjit = require "kjit"

-- A stand-in for a kjit.jit object: compile(sig) raises cerr if given,
-- calling it runs fn.
local function fake(fn, cerr)
  return setmetatable({ compile = function() if cerr then error(cerr, 0) end end },
                      { __call = function(_, ...) return fn(...) end })
end

local function class_of(interp, compiled, spec)
  spec = spec or { n = 1, 1 }
  local io = C.run(kjit, interp, spec)
  return (C.case(kjit, compiled, spec, io))
end

local function one(v) return function() return v end end

test("same results, subtypes, NaN, -0.0", function()
  eq(class_of(one(1), fake(one(1))), "same")
  eq(class_of(one(0 / 0), fake(one(0 / 0))), "same")
  eq(class_of(one(1), fake(one(1.0))), "wrong")
  eq(class_of(one(0.0), fake(one(-0.0))), "wrong")
  eq(class_of(function() return 1, 2 end, fake(one(1))), "wrong")
end)

test("errors: same message, other message, one side only", function()
  local function raise(m) return function() error(m, 0) end end
  eq(class_of(raise("x:1: boom"), fake(raise("x:1: boom"))), "same")
  eq(class_of(raise("x:1: boom"), fake(raise("x:2: boom"))), "message")
  eq(class_of(raise("x:1: boom"), fake(one(1))), "wrong")
  -- Lua 5.4.4's stale line for integer division by zero is not a difference
  eq(class_of(raise("x:1: attempt to divide by zero"), fake(raise("x:7: attempt to divide by zero"))), "same")
end)

test("arrays after the call", function()
  local spec = { n = 1, { array = true, dtype = "i32", shape = { 2 }, vals = { 1, 2 } } }
  local function store(v) return function(A) A[1] = v end end
  eq(class_of(store(5), fake(store(5)), spec), "same")
  eq(class_of(store(5), fake(store(6)), spec), "wrong")
  -- both raise the same message, but one stored first
  local function store_raise(v) return function(A) A[2] = v; error("x:1: boom", 0) end end
  eq(class_of(store_raise(9), fake(function() error("x:1: boom", 0) end), spec), "wrong")
  eq(class_of(store_raise(9), fake(store_raise(9)), spec), "same")
end)

test("bool arrays and arrays of records after the call", function()
  local q = { n = 1, { array = true, dtype = "bool", shape = { 2 }, vals = { true, false } } }
  local function setq(v) return function(Q) Q[2] = v end end
  eq(class_of(setq(true), fake(setq(true)), q), "same")
  eq(class_of(setq(true), fake(setq(false)), q), "wrong")
  local rec = { n = 1, { record = G.RECORD, shape = { 2 },
    vals = { { x = 1.5, k = 2, c = 3, b = true, v = { 1, 2, 3 } },
             { x = -0.0, k = 0, c = 255, b = false, v = { 0.5, 0, 0 } } } } }
  local function setv(e, v) return function(p) p[2].v[e] = v end end
  eq(class_of(setv(3, 7), fake(setv(3, 7)), rec), "same")
  eq(class_of(setv(3, 7), fake(setv(2, 7)), rec), "wrong")
  local function setb(v) return function(p) p[1].b = v end end
  eq(class_of(setb(false), fake(setb(true)), rec), "wrong")
  -- the reproducer's text of a record spec reads back as the same spec
  local P = require "repro"
  local back = load("return " .. P.spec_text(rec))()
  eq(C.show(C.run(kjit, function() end, back)), C.show(C.run(kjit, function() end, rec)))
end)

test("returned arrays: dtype, shape and elements", function()
  local function mk(dt, shape, v) return function() return kjit.full(shape, v, dt) end end
  eq(class_of(mk("i32", 3, 1), fake(mk("i32", 3, 1))), "same")
  eq(class_of(mk("i32", 3, 1), fake(mk("i64", 3, 1))), "wrong")
  eq(class_of(mk("i32", 3, 1), fake(mk("i32", 4, 1))), "wrong")
  eq(class_of(mk("i32", { 2, 3 }, 1), fake(mk("i32", { 3, 2 }, 1))), "wrong")
  eq(class_of(mk("f64", 3, 0.0), fake(mk("f64", 3, -0.0))), "wrong")
  eq(class_of(mk("bool", 2, true), fake(mk("bool", 2, false))), "wrong")
  eq(class_of(mk("f64", 2, 1.0), fake(one(1.0))), "wrong")
end)

test("math.random is reseeded before every run", function()
  local function r() return math.random(1, 1000000) end
  eq(class_of(r, fake(r)), "same")
end)

test("compile errors: documented refusal, internal, others", function()
  eq(class_of(one(1), fake(one(1), "x:1: closures (function literals) are not supported in compiled code")),
     "unsupported")
  eq(class_of(one(1), fake(one(1), "kjit: LLVM failed to compile x: invalid LLVM module: PHI node")), "internal")
  eq(class_of(one(1), fake(one(1), "x:1: attempt to perform arithmetic on a nil value")), "compile")
end)

test("a compiled run that does not end is a hang", function()
  local saved = C.TIME_LIMIT
  C.TIME_LIMIT = 0.2
  local ok, class = pcall(class_of, one(1), fake(function() while true do end end))
  C.TIME_LIMIT = saved
  truthy(ok, tostring(class))
  eq(class, "hang")
end)

test("generated programs load, and the same id gives the same program", function()
  local F = G.flags()
  for id = 1, 300 do
    local p = G.generate(id, F)
    local chunk, err = load(p.src, p.chunk)
    truthy(chunk, "program " .. id .. " loads: " .. tostring(err))
    eq(#p.cases, 6)
  end
  eq(G.generate(42, F).src, G.generate(42, F).src)
  -- a family left out does not appear
  for id = 1, 100 do
    local src = G.generate(id, G.flags(nil, "whiletrue,gotoloop")).src
    truthy(not src:find("while true do", 1, true) and not src:find("goto top", 1, true), "families off")
  end
end)

-- Lua table arguments (the tabarg family): built afresh for each run from
-- their spec, compared key by key after the call (C.state)
local TSPEC = { n = 1, { luatable = { 5, 6, x = 1.5, s = "ab", f = true, sub = { y = 2 }, list = { { x = 1 } },
                                      A = { array = true, dtype = "i32", shape = { 2 }, vals = { 3, 4 } } },
                         alias = { { "alias", "sub" } } } }

test("Lua table arguments: writes, subtypes, new keys, aliasing, metatables, arrays inside", function()
  local function w(k, v) return function(T) T[k] = v end end
  eq(class_of(w("x", 2), fake(w("x", 2)), TSPEC), "same")
  eq(class_of(w("x", 2), fake(w("x", 2.0)), TSPEC), "wrong")
  eq(class_of(w("new", 1), fake(function() end), TSPEC), "wrong")
  eq(class_of(w(3, "s"), fake(w(3, "s")), TSPEC), "same")
  eq(class_of(w(3, "s"), fake(w(4, "s")), TSPEC), "wrong")
  -- the two names of one table stay one table
  eq(class_of(function(T) T.alias.y = 9 end, fake(function(T) T.alias = { y = 9 } end), TSPEC), "wrong")
  eq(class_of(function(T) T.sub.y = 9 end, fake(function(T) T.alias.y = 9 end), TSPEC), "same")
  -- metatables are part of the state
  local mt = {}
  eq(class_of(function(T) setmetatable(T.sub, mt) end, fake(function() end), TSPEC), "wrong")
  eq(class_of(function(T) setmetatable(T.sub, mt) end, fake(function(T) setmetatable(T.sub, mt) end), TSPEC), "same")
  -- a kjit array held by the table
  eq(class_of(function(T) T.A[2] = 7 end, fake(function(T) T.A[1] = 7 end), TSPEC), "wrong")
  -- writes before an error stay
  local function wr(v) return function(T) T.list[1].x = v; error("x:1: boom", 0) end end
  eq(class_of(wr(2), fake(wr(2)), TSPEC), "same")
  eq(class_of(wr(2), fake(function() error("x:1: boom", 0) end), TSPEC), "wrong")
  -- each run gets its own table: the compiled run does not see the interpreted run's writes
  eq(class_of(function(T) T.x = T.x + 1 end, fake(function(T) T.x = T.x + 1 end), TSPEC), "same")
  -- the reproducer's text of a table spec reads back as the same spec
  local P = require "repro"
  local back = load("return " .. P.spec_text(TSPEC))()
  eq(C.show(C.run(kjit, function() end, back)), C.show(C.run(kjit, function() end, TSPEC)))
end)

test("results that are tables, strings, functions; table error values", function()
  local function ret(f) return function(T) return f(T) end end
  eq(class_of(ret(function() return { 1, k = "a" } end), fake(ret(function() return { 1, k = "a" } end))), "same")
  eq(class_of(ret(function() return { 1, k = "a" } end), fake(ret(function() return { 1, k = "b" } end))), "wrong")
  eq(class_of(ret(function() return { 1 } end), fake(ret(function() return { 1.0 } end))), "wrong")
  -- a result that is the argument is that table, not a copy
  eq(class_of(function(T) return T end, fake(function(T) return T end), TSPEC), "same")
  eq(class_of(function(T) return T end, fake(function(T) return T.sub end), TSPEC), "wrong")
  eq(class_of(function(T) local c = {} for k, v in pairs(T) do c[k] = v end return c end,
              fake(function(T) return T end), TSPEC), "wrong")
  eq(class_of(one("ab"), fake(one("ab"))), "same")
  eq(class_of(one("ab"), fake(one("ac"))), "wrong")
  eq(class_of(one(math.abs), fake(one(math.abs))), "same")
  eq(class_of(one(math.abs), fake(one(function() end))), "wrong")
  local function raise(v) return function() error(v) end end
  eq(class_of(raise({ code = 1 }), fake(raise({ code = 1 }))), "same")
  eq(class_of(raise({ code = 1 }), fake(raise({ code = 2 }))), "message")
end)

test("a Lua table argument: the compile happens at the call", function()
  -- no signature names a table: a refusal is an error of the call that
  -- adds no specialization
  local fk = fake(function() error("x:1: compile error for (table): compiled code cannot call debug.getinfo", 0) end)
  eq(class_of(function(T) T.x = 1 end, fk, TSPEC), "unsupported")
  local fk2 = fake(function() error("x:1: compile error for (table): attempt to index a nil value", 0) end)
  eq(class_of(function(T) T.x = 1 end, fk2, TSPEC), "compile")
  -- a real kjit.jit object
  local f = load("return function(a, b, n, T) T.y = a + #T.list return T.sub end", "=t")()
  local spec = { n = 4, 1, 2.5, 3, TSPEC[1] }
  local io = C.run(kjit, f, spec)
  eq((C.case(kjit, kjit.jit(f), spec, io)), "same")
end)

test("the table families make programs that load and differ by seed", function()
  local F = G.flags("tabarg,tabcall,class,metaops,raw,tablib,dynamic,tabret,arith,callee")
  local seen = {}
  for id = 1, 200 do
    local p = G.generate(id, F)
    truthy(load(p.src, p.chunk), "program " .. id .. " loads")
    for _, w in ipairs({ "tc1(", "Pt.new(", "setmetatable({ v", "rawlen(", "table.insert(", "tonumber(", "T.sub" }) do
      if p.src:find(w, 1, true) then seen[w] = true end
    end
  end
  for _, w in ipairs({ "tc1(", "Pt.new(", "setmetatable({ v", "rawlen(", "table.insert(", "tonumber(", "T.sub" }) do
    truthy(seen[w], w .. " appears in some program")
  end
end)

---------------------------------------------------------------------------
-- Output (session 21, fuzzE): what runs print and write is compared,
-- order and bytes (check.lua C.run: io.output() a temporary file, print
-- kjit.testing.print_to_output); until then a difference there was silent.
---------------------------------------------------------------------------
local SRC = [[
local PR = { function(...) print("pr", ...) return select('#', ...) end,
             function(x, y) io.write("pw ", x, " ", tostring(y), "\n") return x end }
return function(a, b, n)
  local cnt = 0
  print("start", a, b, a // 1, b * 0.5, nil, true, -0.0, 2^63, math.mininteger)
  for i = 1, n do
    cnt = cnt + 1
    io.write(i, " ", i / 2, ";")
    local k = PR[1 + cnt % 2](i, b)
    print("c", k, ("x"):rep(i), string.format("%5.2f|%d", b, i))
  end
  io.write()
  print()
  local z = a > 2 and a or nil
  io.write("[", z, "]\n")   -- nil: bad argument #2 to 'write'
  return a + b
end
]]

local function program() return assert(load(SRC, "=printer"))() end

test("print and io.write compiled, mixed with interpreted prints: the same output", function()
  local f = program()
  for _, spec in ipairs({ { n = 3, 3, 1.5, 4 }, { n = 3, 1, 0.25, 2 }, { n = 3, 5, -2.0, 0 } }) do
    for opt = 0, 3 do
      local io0 = C.run(kjit, f, spec)
      truthy(#io0.out > 0, "the interpreted run wrote something")
      local class, co = C.case(kjit, kjit.jit(f, { opt = opt }), spec, io0)
      if class ~= "same" then error(class .. "\ninterpreted: " .. C.show(io0) .. "\ncompiled: " .. C.show(co)) end
      eq(co.out, io0.out, "output")
    end
  end
end)

-- a stand-in computing what f computes, after writing what out writes
local function stand_in(f, out) return fake(function(...) out(...) return f(...) end) end

test("check.lua counts other output as a difference (wrong), not the same", function()
  local f = program()
  local spec = { n = 3, 1, 0.25, 2 }
  local io0 = C.run(kjit, f, spec)
  -- one print more, first: the results are the same, the output is not
  local class = C.case(kjit, stand_in(f, function() print("extra") end), spec, io0)
  eq(class, "wrong", "an extra print")
  -- the same bytes in another order (print and io.write swapped)
  local g = load("return function(a) print(a) io.write(a, ';') return a end", "=order")()
  local h = load("return function(a) io.write(a, ';') print(a) return a end", "=order")()
  local io1 = C.run(kjit, g, { n = 1, 7 })
  eq(C.case(kjit, stand_in(h, function() end), { n = 1, 7 }, io1), "wrong", "another order")
  -- the signature says so
  local co = C.run(kjit, stand_in(f, function() io.write("x") end), spec)
  truthy(C.signature("wrong", io0, co):find("output differs", 1, true), "signature")
  -- and the same output is the same
  eq(C.case(kjit, stand_in(f, function() end), spec, io0), "same", "no extra output")
end)

test("an error after output: both the output and the message are compared", function()
  local f = program()
  local spec = { n = 3, 1, 1.5, 1 }
  local io0 = C.run(kjit, f, spec)
  truthy(not io0.ok and io0.err:find("printer:15: bad argument #2 to 'write'", 1, true), io0.err)
  truthy(io0.out:find("^start\t1\t1.5\t1\t0.75\tnil\ttrue\t%-0.0\t9.2233720368548e%+18\t%-9223372036854775808\n"), io0.out)
  eq(C.case(kjit, kjit.jit(f), spec, io0), "same", "class")
  eq(C.case(kjit, stand_in(f, function() print("late") end), spec, io0), "wrong", "an extra print before the error")
end)
