-- test_spec_merge.lua: a function called with a table it is known to be
-- and elsewhere with a Lua value (binary-trees' ItemCheck: the tree its
-- caller made, then tree[2] in its recursion) compiles once, as the value
-- specialization (ir_type.c, merge_narrow_specs), and computes what the
-- interpreter computes: results, tables key by key, errors with their
-- messages and lines (tablediff).
local T = require "tablediff"
local kjit = require "kjit"

local function chunk(src, name)
  return assert(load(src, "=" .. (name or "merge")))
end

-- how many specializations of function f<fi> inspect("ir") shows
local function specs_of(f, fi)
  local n = 0
  for _ in f:inspect("ir"):gmatch("\nfunction f" .. fi .. " ") do n = n + 1 end
  return n
end

local TREES = [[
  local depth = ...
  local function make(d)
    if d == 0 then return { 1 } end
    return { d, make(d - 1), make(d - 1) }
  end
  local function check(tree)
    if tree[2] then return tree[1] + check(tree[2]) - check(tree[3]) end
    return tree[1]
  end
  local t = make(depth)
  return check(t), check({ 5, { 2 }, { 1 } })
]]

test("one specialization for a table argument and a value argument", function()
  local f = kjit.jit(chunk(TREES, "trees"))
  eq(f(6), chunk(TREES)(6))
  local ir = f:inspect("ir")
  local value, table_ = 0, 0
  for sig in ir:gmatch("spec %d+ (%b())") do
    if sig:match("^%(value") then value = value + 1 end
    if sig:match("^%(table, function") then table_ = table_ + 1 end
  end
  eq(value, 1, "the value specialization of check:\n" .. ir)
  eq(table_, 0, "no table specialization of check left:\n" .. ir)
  truthy(specs_of(f, 2) == 1, "check compiled once:\n" .. ir)
end)

test("the merged calls compute as interpreted (results, tables, errors)", function()
  T.check(chunk(TREES), function() return 5 end)
  -- the value path with what is not a table: the caller's table, then a
  -- number read from it, indexed in the callee (the error's line is the callee's)
  T.check_error("attempt to index a number value", chunk([[
    local t = ...
    local function first(x) return x[1] end
    local a = first(t)                 -- a table it made? no: the argument
    local u = { 7, 8 }
    local b = first(u)                 -- known to be a table here
    return a + b + first(u[2])         -- a value: 8, a number
  ]], "numval"), function() return { 3 } end)
  -- a callee that writes into its argument: both call sites' tables change
  T.check(chunk([[
    local t = ...
    local function bump(x, k) x[k] = (x[k] or 0) + 1 return x end
    local mine = { 1, 2 }
    bump(mine, 1)                      -- a table it made
    bump(t.inner, "n")                 -- a value read from a table
    bump(bump(mine, 3), 3)
    return mine, t
  ]], "writes"), function() return { inner = { n = 4 } } end)
  -- a string known to be one, then a value that is a string or a table
  T.check(chunk([[
    local t = ...
    local function len(x) return #x end
    return len("abc") + len(t.s) + len(t.list)
  ]], "strings"), function() return { s = "hello", list = { 1, 2, 3 } } end)
end)
