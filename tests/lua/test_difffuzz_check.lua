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
