-- test_jit_fuzz.lua: deterministic random differential testing of kjit.jit
-- against the Lua 5.4 interpreter (DESIGN.md §3).
--
-- With fixed seeds, random Lua functions are generated as source text and
-- loaded with load(src) (the chunk name is the source itself, which is how
-- kjit finds the text; interpreted and compiled errors both start with
-- [string "..."]:line:). Two families:
--   * expression functions  `return function(a, b, c) return <expr> end`
--     over every operator, math.* function and constant, with literals and
--     arguments at the edges (0, -0.0, NaN, inf, maxinteger, 2^53, ...);
--   * statement functions   `return function(a, b, n, A, B, C) ... end`
--     with locals, if/elseif/else, while, numeric for (int and float,
--     negative and zero steps), repeat-until, break, goto continue,
--     multiple assignment, early returns, reads and writes of f64/i32/u8
--     kjit arrays with indices that are sometimes out of bounds or floats.
-- Each function runs on several argument tuples, interpreted and compiled
-- (pcall both). They must both return the same values (same count, same
-- subtype, NaN == NaN, -0.0 ~= 0.0) and leave the arrays identical, or both
-- raise the same message (D.same_error: the Lua 5.4.4 stale-line rule for
-- division and modulo by zero) and leave the arrays identical.
--
-- Recognised documented differences (counted, not failures):
--   unsupported  the compiled side raised a compile error for a construct or
--                type combination kjit does not compile ("not supported in
--                compiled code", "holds both", "mixes", "cannot", ...);
--   static       a compile-time type error for code the interpreter did not
--                run on that input ("bad argument #..."; a built-in given a
--                boolean now raises when it runs, as interpreted);
--                a boolean in arithmetic, a bitwise operation, an ordering
--                comparison or `#` raises Lua's error when it runs, as
--                interpreted, so those must agree like any other error;
--   documented   the compiled result differs from the interpreter's but
--                equals the result of a "kjit-semantics oracle": the same
--                source run by the interpreter with kjit's documented typing
--                rules made explicit: math.floor/ceil raise "number has no
--                integer representation" outside the integer range; a local
--                kjit types as f64 holds floats (FLT() around every value
--                assigned to it); `c and x or y`, math.max and math.min with
--                an integer and a float operand give a float; each result a
--                function returns is converted to the type joined over all
--                its return statements. The oracle is built from kjit's own
--                f:inspect("types") for the specialization.
-- Anything else is a failure printing the full source, the arguments and
-- the interpreted, oracle and compiled outcomes.
--
-- Environment (for fuzzing by hand; the default run takes about 30 s):
--   KJIT_FUZZ_SCALE=k      k times as many functions per seed
--   KJIT_FUZZ_SEEDS="1,2"  only these seed blocks (1-8 expressions, 101-108
--                          statements)
--   KJIT_FUZZ_MINIMIZE=1   shrink every failing case (source and arguments)
--                          keeping the same kind of mismatch; prints it
--   KJIT_FUZZ_REPORTS=n    show up to n failure reports per seed (default 4)
--   KJIT_FUZZ_TALLY=1      print counts of the unsupported/static messages
--   KJIT_FUZZ_SHOW=documented|unsupported|static  print those cases too
--   KJIT_FUZZ_VERBOSE=1    print each source and argument tuple to stderr
--                          before running it (to find a crash)
-- Minimized repros of the bugs found are at the end of the file.
local D = require "difftest"
local kjit = D.real_kjit

local SCALE = tonumber(os.getenv("KJIT_FUZZ_SCALE") or "1") or 1
local VERBOSE = os.getenv("KJIT_FUZZ_VERBOSE") == "1"
local ONLY = nil
if os.getenv("KJIT_FUZZ_SEEDS") then
  ONLY = {}
  for s in os.getenv("KJIT_FUZZ_SEEDS"):gmatch("%d+") do ONLY[tonumber(s)] = true end
end

local MAXI, MINI = math.maxinteger, math.mininteger
local NAN, HUGE = 0 / 0, math.huge

local R = math.random
local function pick(t) return t[R(#t)] end
local function chance(p) return R() < p end

---------------------------------------------------------------------------
-- Expression ASTs and their emission (precedence-aware, so that the parser
-- is exercised; extra parentheses are chosen at generation time).
---------------------------------------------------------------------------
local PREC = {
  ["or"] = 1, ["and"] = 2,
  ["<"] = 3, [">"] = 3, ["<="] = 3, [">="] = 3, ["~="] = 3, ["=="] = 3,
  ["|"] = 4, ["~"] = 5, ["&"] = 6, ["<<"] = 7, [">>"] = 7,
  ["+"] = 9, ["-"] = 9, ["*"] = 10, ["/"] = 10, ["//"] = 10, ["%"] = 10,
  ["^"] = 12,
}
local UNARY, ATOM = 11, 13
local CMP = { ["<"] = true, [">"] = true, ["<="] = true, [">="] = true, ["~="] = true, ["=="] = true }
local BITW = { ["&"] = true, ["|"] = true, ["~"] = true, ["<<"] = true, [">>"] = true }

-- literals: text, type
local INT_LITS = {
  "0", "1", "2", "3", "5", "7", "10", "31", "32", "63", "64", "65", "100", "255", "256",
  "1000", "-1", "-2", "-7", "-64", "2147483648", "4294967295", "9007199254740992",
  "9007199254740993", "0x7fffffffffffffff", "0xffffffffffffffff", "0x8000000000000000",
  "9223372036854775807", "-9223372036854775807", "0xff", "3",
}
local FLT_LITS = {
  "0.0", "-0.0", "0.5", "1.5", "-2.5", "3.0", "1e308", "-1e308", "1e-310", "0.1",
  "9007199254740992.0", "9223372036854775808", "-9223372036854775808.0", "1e15", "1e100",
  "0x1p-1074", "-0x1p63", "2.5e-3", "4.0", "-1.0", "1e19", "0.75",
}
local CONSTS = {
  { "math.huge", "flt" }, { "math.pi", "flt" }, { "math.maxinteger", "int" },
  { "math.mininteger", "int" }, { "-math.huge", "flt" },
}

local function lit(s, t) return { k = "lit", s = s, t = t } end
local function var(s) return { k = "var", s = s } end
local function bin(op, a, b) return { k = "bin", op = op, a = a, b = b } end
local function un(op, a) return { k = "un", op = op, a = a } end
local function call(f, args) return { k = "call", f = f, args = args } end

-- Static types as this fuzzer models them (after the retired src/types.c): "int", "flt", "bool",
-- "maybe:int", "maybe:flt", "arr:<dtype>", "err", "?".
local function isnum(t) return t == "int" or t == "flt" end
local function numview(t)
  if t and t:sub(1, 6) == "maybe:" then return t:sub(7) end
  return t
end
local function join(a, b)
  if a == "int" and b == "int" then return "int" end
  return "flt"
end

local function ty(e, tenv)
  local k = e.k
  if k == "lit" then return e.t end
  if k == "var" then
    local t = tenv[e.s]
    if t == nil or t == "maybe" then return "?" end
    return t
  end
  if k == "idx" then return tenv[e.arr] == "arr:f64" and "flt" or "int" end
  if k == "len" then return "int" end
  if k == "paren" then return ty(e.a, tenv) end
  if k == "un" then
    local a = ty(e.a, tenv)
    if e.op == "not" then return "bool" end
    a = numview(a)
    if not isnum(a) then return "err" end
    if e.op == "-" then return a end
    return "int"
  end
  if k == "bin" then
    local op = e.op
    if CMP[op] then return "bool" end
    local a, b = ty(e.a, tenv), ty(e.b, tenv)
    if op == "and" or op == "or" then
      if a == "?" or b == "?" then return "?" end
      local truthy = isnum(a) or (a:sub(1, 4) == "arr:")
      if op == "and" then
        if truthy then return b end
        if b == "bool" then return "bool" end
        if isnum(b) then return "maybe:" .. b end
        if b:sub(1, 6) == "maybe:" then return b end
        return "err"
      else
        if truthy then return a end
        if a == "bool" and b == "bool" then return "bool" end
        if a:sub(1, 6) == "maybe:" then
          local s = a:sub(7)
          if isnum(b) then return join(s, b) end
          if b:sub(1, 6) == "maybe:" then return "maybe:" .. join(s, b:sub(7)) end
        end
        return "err"
      end
    end
    a, b = numview(a), numview(b)
    if a == "?" or b == "?" then return "?" end
    if not isnum(a) or not isnum(b) then return "err" end
    if BITW[op] then return "int" end
    if op == "/" or op == "^" then return "flt" end
    return join(a, b)
  end
  if k == "call" then
    local ts = {}
    for i, x in ipairs(e.args) do ts[i] = numview(ty(x, tenv)) end
    local f = e.f
    if f == "math.ult" then return "bool" end
    for i = 1, #ts do if not isnum(ts[i]) then return ts[i] == "?" and "?" or "err" end end
    if f == "math.floor" or f == "math.ceil" then return "int" end
    if f == "math.abs" then return ts[1] end
    if f == "math.sqrt" then return "flt" end
    if f == "math.fmod" then return join(ts[1], ts[2]) end
    if f == "math.tointeger" then return ts[1] == "int" and "int" or "maybe:int" end
    if f == "math.max" or f == "math.min" then
      local r = ts[1]
      for i = 2, #ts do r = join(r, ts[i]) end
      return r
    end
  end
  return "?"
end

-- emit(e, O) -> text, precedence. O is nil for the real source, or the
-- oracle description { tenv = {...} } for the kjit-semantics oracle.
local emit
local function wrap_flt(s) return "FLT(" .. s .. ")", ATOM end
emit = function(e, O)
  local s, p
  local k = e.k
  if k == "lit" then
    s = e.s
    p = (s:sub(1, 1) == "-") and UNARY or ATOM
  elseif k == "var" then
    s, p = e.s, ATOM
  elseif k == "idx" then
    s, p = e.arr .. "[" .. (emit(e.i, O)) .. "]", ATOM
  elseif k == "len" then
    s, p = "#" .. e.arr, UNARY
  elseif k == "un" then
    local a, ap = emit(e.a, O)
    if ap < UNARY then a = "(" .. a .. ")" end
    if e.op == "not" then s = "not " .. a
    elseif e.op == "-" and a:sub(1, 1) == "-" then s = "- " .. a
    else s = e.op .. a end
    p = UNARY
  elseif k == "bin" then
    local op = e.op
    local pp = PREC[op]
    local a, ap = emit(e.a, O)
    local b, bp = emit(e.b, O)
    local right = (op == "^")
    if (right and ap <= pp) or (not right and ap < pp) then a = "(" .. a .. ")" end
    if (right and bp < pp) or (not right and bp <= pp) then b = "(" .. b .. ")" end
    s, p = a .. " " .. op .. " " .. b, pp
    if O and op == "or" then
      local t = ty(e, O.tenv)
      local at = ty(e.a, O.tenv)
      if (t == "flt" or t == "maybe:flt") and at:sub(1, 6) == "maybe:" then s, p = wrap_flt(s) end
    end
  elseif k == "call" then
    local parts = {}
    for i, x in ipairs(e.args) do parts[i] = (emit(x, O)) end
    s, p = e.f .. "(" .. table.concat(parts, ", ") .. ")", ATOM
    if O and (e.f == "math.max" or e.f == "math.min") and ty(e, O.tenv) == "flt" then
      s, p = wrap_flt(s)
    end
  else
    error("bad node " .. tostring(k))
  end
  if e.paren then s, p = "(" .. s .. ")", ATOM end
  return s, p
end

---------------------------------------------------------------------------
-- Random expressions. ctx: nums (names of numeric variables), bools (names
-- of boolean variables), arrays ({name, dtype, size}), loopvars.
---------------------------------------------------------------------------
local gen_num, gen_bool

local function gen_index(ctx, arr, d)
  local size = arr[3]
  local r = R()
  if r < 0.55 then return lit(tostring(R(size)), "int") end
  if r < 0.62 then return lit(pick({ "0", tostring(size + 1), "-1" }), "int") end
  if r < 0.68 then return { k = "len", arr = arr[1] } end
  if r < 0.72 then
    return lit(pick({ "1.0", "2.0", "1.5", "1.0", "2.0", "-0.0", "1e308", "9223372036854775808",
                      "math.huge", "-1e19" }), "flt")
  end
  if r < 0.86 and #ctx.loopvars > 0 then
    local v = var(pick(ctx.loopvars))
    if chance(0.5) then
      -- (i % #A) + 1: in bounds for integers
      return bin("+", bin("%", v, { k = "len", arr = arr[1] }), lit("1", "int"))
    end
    return v
  end
  return bin("+", bin("%", gen_num(ctx, math.min(d, 1)), { k = "len", arr = arr[1] }), lit("1", "int"))
end

local function leaf_num(ctx)
  local r = R()
  if ctx.arrays and #ctx.arrays > 0 and r < 0.15 then
    local arr = pick(ctx.arrays)
    if chance(0.85) then return { k = "idx", arr = arr[1], i = gen_index(ctx, arr, 0) } end
    return { k = "len", arr = arr[1] }
  end
  r = R()
  if r < 0.55 and #ctx.nums > 0 then return var(pick(ctx.nums)) end
  if r < 0.75 then return lit(pick(INT_LITS), "int") end
  if r < 0.95 then return lit(pick(FLT_LITS), "flt") end
  local c = pick(CONSTS)
  return lit(c[1], c[2])
end

local ARITH = { "+", "-", "*", "/", "//", "%", "^", "+", "-", "*", "//", "%" }
local BITOPS = { "&", "|", "~", "<<", ">>" }
local CMPOPS = { "<", ">", "<=", ">=", "~=", "==" }

gen_num = function(ctx, d)
  if d <= 0 or chance(0.12) then return leaf_num(ctx) end
  local e
  local r = R()
  if r < 0.38 then
    e = bin(pick(ARITH), gen_num(ctx, d - 1), gen_num(ctx, d - 1))
  elseif r < 0.52 then
    e = bin(pick(BITOPS), gen_num(ctx, d - 1), gen_num(ctx, d - 1))
  elseif r < 0.60 then
    e = un(chance(0.6) and "-" or "~", gen_num(ctx, d - 1))
  elseif r < 0.78 then
    local f = pick({ "floor", "ceil", "abs", "max", "min", "fmod", "sqrt", "tointeger",
                     "floor", "max", "min", "fmod" })
    if f == "max" or f == "min" then
      local args = { gen_num(ctx, d - 1), gen_num(ctx, d - 1) }
      if chance(0.3) then args[3] = gen_num(ctx, d - 1) end
      e = call("math." .. f, args)
    elseif f == "fmod" then
      e = call("math.fmod", { gen_num(ctx, d - 1), gen_num(ctx, d - 1) })
    elseif f == "tointeger" then
      -- (math.tointeger(x) or y): a number either way
      e = bin("or", call("math.tointeger", { gen_num(ctx, d - 1) }), gen_num(ctx, d - 1))
    else
      e = call("math." .. f, { gen_num(ctx, d - 1) })
    end
  elseif r < 0.88 then
    -- c and x or y
    e = bin("or", bin("and", gen_bool(ctx, d - 1), gen_num(ctx, d - 1)), gen_num(ctx, d - 1))
  elseif r < 0.93 then
    -- x or y / x and y with a number on the left (always truthy)
    e = bin(chance(0.5) and "or" or "and", gen_num(ctx, d - 1), gen_num(ctx, d - 1))
  elseif r < 0.95 then
    -- a boolean where a number is expected: an error both ways
    if chance(ctx.boolnum or 0.1) then
      ctx.used_boolnum = true
      e = bin(pick(ARITH), gen_num(ctx, d - 1), gen_bool(ctx, 0))
    else
      e = bin(pick(ARITH), gen_num(ctx, d - 1), gen_num(ctx, d - 1))
    end
  else
    e = gen_num(ctx, d - 1)
    e.paren = true
    return e
  end
  if chance(0.1) then e.paren = true end
  return e
end

gen_bool = function(ctx, d)
  local r = R()
  if d <= 0 then
    if r < 0.15 and #ctx.bools > 0 then return var(pick(ctx.bools)) end
    if r < 0.2 then return lit(chance(0.5) and "true" or "false", "bool") end
    return bin(pick(CMPOPS), leaf_num(ctx), leaf_num(ctx))
  end
  local e
  if r < 0.5 then
    e = bin(pick(CMPOPS), gen_num(ctx, d - 1), gen_num(ctx, d - 1))
  elseif r < 0.62 then
    e = un("not", chance(0.8) and gen_bool(ctx, d - 1) or gen_num(ctx, d - 1))
  elseif r < 0.82 then
    e = bin(chance(0.5) and "and" or "or", gen_bool(ctx, d - 1), gen_bool(ctx, d - 1))
  elseif r < 0.85 then
    e = call("math.ult", { gen_num(ctx, d - 1), gen_num(ctx, d - 1) })
  elseif r < 0.88 then
    -- a false-or-number value as a truth value: (c and x), (c and x) and y,
    -- math.tointeger(x), (c and x) or (c2 and y)
    local m = bin("and", gen_bool(ctx, d - 1), gen_num(ctx, d - 1))
    local r2 = R()
    if r2 < 0.3 then e = m
    elseif r2 < 0.55 then e = bin("and", m, gen_num(ctx, d - 1))
    elseif r2 < 0.7 then e = call("math.tointeger", { gen_num(ctx, d - 1) })
    elseif r2 < 0.85 then e = bin("or", m, bin("and", gen_bool(ctx, d - 1), gen_num(ctx, d - 1)))
    else e = un("not", m) end
    e.paren = true
  elseif r < 0.94 and #ctx.bools > 0 then
    e = var(pick(ctx.bools))
  elseif r < 0.97 then
    e = bin(chance(0.5) and "==" or "~=", gen_bool(ctx, d - 1), gen_bool(ctx, d - 1))
  elseif chance(ctx.boolnum or 0.1) then
    ctx.used_boolnum = true
    e = bin(pick(CMPOPS), gen_bool(ctx, 0), gen_num(ctx, d - 1))   -- mostly an error
  else
    e = bin(pick(CMPOPS), gen_num(ctx, d - 1), gen_num(ctx, d - 1))
  end
  if chance(0.1) then e.paren = true end
  return e
end

---------------------------------------------------------------------------
-- Expression functions
---------------------------------------------------------------------------
local INT_ARGS = { 0, 1, -1, 2, 3, 7, -7, 63, 64, 100, -100, 1 << 31, 1 << 53, MAXI, MINI,
                   MAXI - 1, MINI + 1, 255, 5 }
local FLT_ARGS = { 0.0, -0.0, 0.5, -0.5, 1.0, 2.5, -3.0, 1e308, -1e308, 2.0 ^ 53, 2.0 ^ 63,
                   -2.0 ^ 63, 1e-310, NAN, HUGE, -HUGE, 0.1, 3.0, 7.0, -1.0 }
local function rand_num_arg()
  if chance(0.5) then return pick(INT_ARGS) end
  return pick(FLT_ARGS)
end

local function gen_expr_fn()
  local ctx = { nums = { "a", "b", "c" }, bools = {}, loopvars = {}, boolnum = 0.15 }
  local depth = R(5)
  local rets = {}
  local r = R()
  local nret = r < 0.8 and 1 or (r < 0.93 and 2 or 3)
  for i = 1, nret do
    if chance(0.75) then rets[i] = gen_num(ctx, depth) else rets[i] = gen_bool(ctx, depth) end
  end
  return { kind = "expr", params = { "a", "b", "c" }, rets = rets, boolnum = ctx.used_boolnum }
end

-- The values of a return statement, with the oracle's result conversions
-- (O: the documented-difference rewrite, or nil for the plain source).
local function emit_returns(exprs, O)
  local parts = {}
  for i, e in ipairs(exprs) do
    local s = emit(e, O)
    if O and O.rets[i] == "flt" then s = "FLT(" .. s .. ")" end
    if O and O.rets[i] == "maybe" then s = "FLTM(" .. s .. ")" end
    if O then s = "(" .. s .. ")" end   -- no tail call in the oracle
    parts[i] = s
  end
  return parts
end

local function expr_fn_source(fn, O)
  local parts = emit_returns(fn.rets, O)
  return "return function(a, b, c) return " .. table.concat(parts, ", ") .. " end"
end

---------------------------------------------------------------------------
-- Statement functions: function(a, b, n, A, B, C) with A f64[6], B i32[4],
-- C u8[3]. Every loop body starts with a guard on a shared counter, so any
-- loop (limits up to maxinteger, math.huge) stops after a few hundred
-- iterations overall.
---------------------------------------------------------------------------
local ARRAYS = { { "A", "f64", 6 }, { "B", "i32", 4 }, { "C", "u8", 3 } }
local LOOP_LIMIT = 60

local function new_scope(ctx)
  return { nums = #ctx.nums, bools = #ctx.bools, locals = #ctx.locals, loopvars = #ctx.loopvars }
end
local function close_scope(ctx, sc)
  for _, key in ipairs({ "nums", "bools", "locals", "loopvars" }) do
    local t = ctx[key]
    for i = #t, sc[key] + 1, -1 do t[i] = nil end
  end
end

local gen_block

local function for_bound(ctx, what)
  local r = R()
  if what == "start" then
    if r < 0.5 then return lit(pick({ "1", "0", "-3", "10", "2", "1" }), "int") end
    if r < 0.65 then return lit(pick({ "0.5", "1.0", "-2.5", "1e308", "-0.0", "0.1" }), "flt") end
    if r < 0.75 then
      return lit(pick({ "math.maxinteger", "math.mininteger", "9223372036854775805",
                        "-9223372036854775806" }), "int")
    end
    if r < 0.9 then return var(pick(ctx.nums)) end
    return gen_num(ctx, 1)
  elseif what == "limit" then
    if r < 0.4 then return lit(pick({ "5", "3", "0", "-2", "10", "1" }), "int") end
    if r < 0.5 then return lit(pick({ "2.5", "-1.5", "1e308", "-1e308", "4.0" }), "flt") end
    if r < 0.6 then
      local c = pick({ { "math.maxinteger", "int" }, { "math.mininteger", "int" },
                       { "math.huge", "flt" }, { "-math.huge", "flt" } })
      return lit(c[1], c[2])
    end
    if r < 0.66 then return bin("/", lit("0", "int"), lit("0", "int")) end   -- NaN
    if r < 0.74 then return { k = "len", arr = pick(ctx.arrays)[1] } end
    if r < 0.9 then return var(pick(ctx.nums)) end
    return gen_num(ctx, 1)
  else
    if r < 0.35 then return nil end
    if r < 0.6 then return lit(pick({ "1", "2", "-1", "-2", "3", "-3" }), "int") end
    if r < 0.66 then return lit("0", "int") end
    if r < 0.78 then return lit(pick({ "0.5", "-0.5", "0.25", "-1.0", "1.5", "0.0", "0.1" }), "flt") end
    if r < 0.84 then return lit(pick({ "math.maxinteger", "math.mininteger" }), "int") end
    if r < 0.94 then return var(pick(ctx.nums)) end
    return gen_num(ctx, 1)
  end
end

local function new_name(ctx, prefix)
  ctx.nid = ctx.nid + 1
  return prefix .. ctx.nid
end

local function gen_stmt(ctx, d)
  local r = R()
  local ed = R(3)
  local inloop = #ctx.loops > 0
  if r < 0.16 then
    local name = new_name(ctx, "x")
    local st = { k = "local", names = { name }, exprs = { gen_num(ctx, ed) } }
    ctx.nums[#ctx.nums + 1] = name
    ctx.locals[#ctx.locals + 1] = name
    return st
  elseif r < 0.20 then
    local name = new_name(ctx, "f")
    local st = { k = "local", names = { name }, exprs = { gen_bool(ctx, ed) } }
    ctx.bools[#ctx.bools + 1] = name
    ctx.blocals = ctx.blocals or {}
    return st
  elseif r < 0.34 and #ctx.locals > 0 then
    local name = pick(ctx.locals)
    if #ctx.loopvars > 0 and chance(0.15) then name = pick(ctx.loopvars) end  -- the copy
    if chance(0.1) then name = pick({ "a", "b", "n" }) end                    -- a parameter
    return { k = "assign", names = { name }, exprs = { gen_num(ctx, ed) } }
  elseif r < 0.40 and #ctx.locals > 1 then
    local x, y = pick(ctx.locals), pick(ctx.locals)
    if x == y then return { k = "assign", names = { x }, exprs = { gen_num(ctx, ed) } } end
    if chance(0.4) then return { k = "assign", names = { x, y }, exprs = { var(y), var(x) } } end
    if chance(0.3) then
      -- targets that are array elements (Lua 5.4 assigns right to left)
      local t = {}
      for i = 1, R(2) + 1 do
        if chance(0.6) then
          local arr = pick(ctx.arrays)
          t[i] = { k = "idx", arr = arr[1], i = gen_index(ctx, arr, 1) }
        else
          t[i] = var(pick(ctx.locals))
        end
      end
      local ex = {}
      for i = 1, #t do ex[i] = gen_num(ctx, ed) end
      return { k = "massign", targets = t, exprs = ex }
    end
    return { k = "assign", names = { x, y }, exprs = { gen_num(ctx, ed), gen_num(ctx, ed) } }
  elseif r < 0.52 then
    local arr = pick(ctx.arrays)
    return { k = "store", arr = arr[1], i = gen_index(ctx, arr, 1), e = gen_num(ctx, ed) }
  elseif r < 0.62 and d > 0 then
    local st = { k = "if", conds = {}, blocks = {} }
    local n = chance(0.4) and R(2) + 1 or 1
    for i = 1, n do
      st.conds[i] = chance(0.9) and gen_bool(ctx, ed) or gen_num(ctx, 1)
      st.blocks[i] = gen_block(ctx, d - 1, R(3))
    end
    if chance(0.5) then st.els = gen_block(ctx, d - 1, R(3)) end
    return st
  elseif r < 0.72 and d > 0 then
    local name = new_name(ctx, "i")
    local st = { k = "for", var = name, start = for_bound(ctx, "start"),
                 limit = for_bound(ctx, "limit"), step = for_bound(ctx, "step") }
    local sc = new_scope(ctx)
    ctx.nums[#ctx.nums + 1] = name
    ctx.loopvars[#ctx.loopvars + 1] = name
    local loop = { label = chance(0.4) and new_name(ctx, "cont") or nil }
    ctx.loops[#ctx.loops + 1] = loop
    st.body = gen_block(ctx, d - 1, R(4))
    st.label = loop.used and loop.label or nil
    ctx.loops[#ctx.loops] = nil
    close_scope(ctx, sc)
    return st
  elseif r < 0.78 and d > 0 then
    local st = { k = "while", cond = gen_bool(ctx, ed) }
    local loop = { label = chance(0.4) and new_name(ctx, "cont") or nil }
    ctx.loops[#ctx.loops + 1] = loop
    st.body = gen_block(ctx, d - 1, R(4))
    st.label = loop.used and loop.label or nil
    ctx.loops[#ctx.loops] = nil
    return st
  elseif r < 0.83 and d > 0 then
    local st = { k = "repeat" }
    local loop = {}    -- no continue label: `until` may see the body's locals
    ctx.loops[#ctx.loops + 1] = loop
    local sc = new_scope(ctx)
    st.body = gen_block(ctx, d - 1, R(4))
    st.cond = gen_bool(ctx, ed)   -- may use the body's locals
    close_scope(ctx, sc)
    ctx.loops[#ctx.loops] = nil
    return st
  elseif r < 0.89 and inloop then
    return { k = "breakif", cond = gen_bool(ctx, ed) }
  elseif r < 0.93 and inloop then
    local targets = {}
    for _, l in ipairs(ctx.loops) do if l.label then targets[#targets + 1] = l end end
    if #targets > 0 then
      local l = pick(targets)
      l.used = true
      return { k = "gotoif", cond = gen_bool(ctx, ed), label = l.label }
    end
    return { k = "breakif", cond = gen_bool(ctx, ed) }
  elseif r < 0.96 and d > 0 then
    local st = { k = "retif", cond = gen_bool(ctx, ed), exprs = {} }
    st.exprs = "pending"   -- filled in once the function's result count is known
    ctx.pending[#ctx.pending + 1] = { st = st, nums = { table.unpack(ctx.nums) },
                                      bools = { table.unpack(ctx.bools) },
                                      loopvars = { table.unpack(ctx.loopvars) } }
    return st
  elseif r < 0.975 then
    -- `local x` (nil), then assigned
    local name = new_name(ctx, "x")
    local st = { k = "localnil", name = name, e = gen_num(ctx, ed) }
    ctx.nums[#ctx.nums + 1] = name
    ctx.locals[#ctx.locals + 1] = name
    return st
  elseif d > 0 then
    -- a loop made of a backward goto, in its own do ... end
    local st = { k = "gotoloop", label = new_name(ctx, "top") }
    local sc = new_scope(ctx)
    st.body = gen_block(ctx, d - 1, R(3))
    st.cond = gen_bool(ctx, ed)
    close_scope(ctx, sc)
    return st
  else
    local name = new_name(ctx, "x")
    local st = { k = "local", names = { name }, exprs = { gen_num(ctx, ed) } }
    ctx.nums[#ctx.nums + 1] = name
    ctx.locals[#ctx.locals + 1] = name
    return st
  end
end

gen_block = function(ctx, d, n)
  local sc = new_scope(ctx)
  local body = {}
  for i = 1, n do body[i] = gen_stmt(ctx, d) end
  close_scope(ctx, sc)
  return body
end

local function gen_ret_exprs(ctx, kinds)
  local t = {}
  for i, kd in ipairs(kinds) do
    if kd == "num" then
      if #ctx.locals > 0 and chance(0.5) then t[i] = var(pick(ctx.locals)) else t[i] = gen_num(ctx, R(2)) end
    else
      t[i] = gen_bool(ctx, 1)
    end
  end
  return t
end

local function gen_stmt_fn()
  local ctx = { nums = { "a", "b", "n", "cnt" }, bools = {}, locals = {}, loopvars = {},
                arrays = ARRAYS, loops = {}, nid = 0, pending = {}, boolnum = 0.03 }
  local body = {}
  local nst = R(3) + 2
  for i = 1, nst do body[i] = gen_stmt(ctx, 2) end
  local nret = R(3) - 1      -- 0, 1 or 2 results
  local kinds = {}
  for i = 1, nret do kinds[i] = chance(0.85) and "num" or "bool" end
  local fn = { kind = "stmt", body = body, ret = gen_ret_exprs(ctx, kinds) }
  for _, p in ipairs(ctx.pending) do
    local c2 = { nums = p.nums, bools = p.bools, locals = {}, loopvars = p.loopvars, arrays = ARRAYS,
                 boolnum = ctx.boolnum }
    p.st.exprs = gen_ret_exprs(c2, kinds)
    fn.boolnum = fn.boolnum or c2.used_boolnum
  end
  fn.boolnum = fn.boolnum or ctx.used_boolnum
  return fn
end

local function emit_block(lines, body, ind, O)
  for _, st in ipairs(body) do
    local k = st.k
    local function rhs(names, exprs)
      local parts = {}
      for i, e in ipairs(exprs) do
        local s = emit(e, O)
        if O and O.tenv[names[i]] == "flt" then s = "FLT(" .. s .. ")" end
        if O and O.tenv[names[i]] == "maybe" then s = "FLTM(" .. s .. ")" end
        parts[i] = s
      end
      return table.concat(parts, ", ")
    end
    if k == "local" then
      lines[#lines + 1] = ind .. "local " .. table.concat(st.names, ", ") .. " = " .. rhs(st.names, st.exprs)
    elseif k == "assign" then
      lines[#lines + 1] = ind .. table.concat(st.names, ", ") .. " = " .. rhs(st.names, st.exprs)
    elseif k == "massign" then
      local tt, parts = {}, {}
      for i, t in ipairs(st.targets) do
        tt[i] = (emit(t, O))
        local s = emit(st.exprs[i], O)
        if O and t.k == "var" and O.tenv[t.s] == "flt" then s = "FLT(" .. s .. ")" end
        if O and t.k == "var" and O.tenv[t.s] == "maybe" then s = "FLTM(" .. s .. ")" end
        parts[i] = s
      end
      lines[#lines + 1] = ind .. table.concat(tt, ", ") .. " = " .. table.concat(parts, ", ")
    elseif k == "localnil" then
      lines[#lines + 1] = ind .. "local " .. st.name
      lines[#lines + 1] = ind .. st.name .. " = " .. rhs({ st.name }, { st.e })
    elseif k == "gotoloop" then
      lines[#lines + 1] = ind .. "do"
      lines[#lines + 1] = ind .. "  ::" .. st.label .. "::"
      lines[#lines + 1] = ind .. "  cnt = cnt + 1"
      emit_block(lines, st.body, ind .. "  ", O)
      lines[#lines + 1] = ind .. "  if cnt <= " .. LOOP_LIMIT .. " and (" .. (emit(st.cond, O)) .. ") then goto " .. st.label .. " end"
      lines[#lines + 1] = ind .. "end"
    elseif k == "store" then
      lines[#lines + 1] = ind .. st.arr .. "[" .. emit(st.i, O) .. "] = " .. emit(st.e, O)
    elseif k == "if" then
      for i, c in ipairs(st.conds) do
        lines[#lines + 1] = ind .. (i == 1 and "if " or "elseif ") .. emit(c, O) .. " then"
        emit_block(lines, st.blocks[i], ind .. "  ", O)
      end
      if st.els then
        lines[#lines + 1] = ind .. "else"
        emit_block(lines, st.els, ind .. "  ", O)
      end
      lines[#lines + 1] = ind .. "end"
    elseif k == "for" then
      local h = ind .. "for " .. st.var .. " = " .. emit(st.start, O) .. ", " .. emit(st.limit, O)
      if st.step then h = h .. ", " .. emit(st.step, O) end
      lines[#lines + 1] = h .. " do"
      lines[#lines + 1] = ind .. "  cnt = cnt + 1; if cnt > " .. LOOP_LIMIT .. " then break end"
      emit_block(lines, st.body, ind .. "  ", O)
      if st.label then lines[#lines + 1] = ind .. "  ::" .. st.label .. "::" end
      lines[#lines + 1] = ind .. "end"
    elseif k == "while" then
      lines[#lines + 1] = ind .. "while " .. emit(st.cond, O) .. " do"
      lines[#lines + 1] = ind .. "  cnt = cnt + 1; if cnt > " .. LOOP_LIMIT .. " then break end"
      emit_block(lines, st.body, ind .. "  ", O)
      if st.label then lines[#lines + 1] = ind .. "  ::" .. st.label .. "::" end
      lines[#lines + 1] = ind .. "end"
    elseif k == "repeat" then
      lines[#lines + 1] = ind .. "repeat"
      lines[#lines + 1] = ind .. "  cnt = cnt + 1; if cnt > " .. LOOP_LIMIT .. " then break end"
      emit_block(lines, st.body, ind .. "  ", O)
      lines[#lines + 1] = ind .. "until " .. emit(st.cond, O)
    elseif k == "breakif" then
      lines[#lines + 1] = ind .. "if " .. emit(st.cond, O) .. " then break end"
    elseif k == "gotoif" then
      lines[#lines + 1] = ind .. "if " .. emit(st.cond, O) .. " then goto " .. st.label .. " end"
    elseif k == "retif" then
      local parts = emit_returns(st.exprs, O)
      lines[#lines + 1] = ind .. "if " .. emit(st.cond, O) .. " then return" ..
        (#parts > 0 and " " .. table.concat(parts, ", ") or "") .. " end"
    else
      error("bad statement " .. tostring(k))
    end
  end
end

local function stmt_fn_source(fn, O)
  local header = "return function(a, b, n, A, B, C)"
  if O then
    -- a parameter kjit types f64 (assigned a float somewhere) is converted
    -- on entry (on the header line, so that line numbers stay the same)
    for _, p in ipairs({ "a", "b", "n" }) do
      if O.tenv[p] == "flt" then header = header .. " " .. p .. " = FLT(" .. p .. ")" end
      if O.tenv[p] == "maybe" then header = header .. " " .. p .. " = FLTM(" .. p .. ")" end
    end
  end
  local lines = { header, "  local cnt = 0" }
  emit_block(lines, fn.body, "  ", O)
  local parts = emit_returns(fn.ret, O)
  if #parts > 0 then lines[#lines + 1] = "  return " .. table.concat(parts, ", ") end
  lines[#lines + 1] = "end"
  return table.concat(lines, "\n")
end

local ARRAY_INIT = {
  A = { 0.5, -1.0, 2.0, 1e300, -0.0, 0 / 0 },
  B = { 3, -1, 7, 2147483647 },
  C = { 0, 255, 9 },
}
local STMT_A = { 0, 1, -1, 2, 3, 5, 100, MAXI, MINI, 0.5, -2.5, 3.0, 0.0, -0.0, NAN, HUGE, 1e308, 2.0 ^ 63 }
local STMT_N = { 0, 1, 2, 3, 5, 10, -1, 2.5, 4.0, 0.0, -3 }

---------------------------------------------------------------------------
-- Running and comparing
---------------------------------------------------------------------------
local fmt = D.fmt

local function sig_of(args)
  local t = {}
  for i = 1, args.n do
    local v = args[i]
    local mt = math.type(v)
    if mt == "integer" then t[i] = "i64"
    elseif mt == "float" then t[i] = "f64"
    elseif type(v) == "boolean" then t[i] = "bool"
    else t[i] = v.dtype .. "[:]" end
  end
  return "(" .. table.concat(t, ", ") .. ")"
end

local function fmt_arr(t)
  local p = {}
  for i = 1, #t do p[i] = fmt(t[i]) end
  return "{" .. table.concat(p, ", ") .. "}"
end

local function fmt_args(args)
  local t = {}
  for i = 1, args.n do
    local v = args[i]
    if D.is_array(v) then
      local c = {}
      for k = 1, #v do c[k] = v[k] end
      t[i] = v.dtype .. fmt_arr(c)
    else
      t[i] = fmt(v)
    end
  end
  return "(" .. table.concat(t, ", ") .. ")"
end

-- Runs f on fresh arguments; returns an outcome.
local function outcome(f, mkargs)
  local args = mkargs()
  -- a generated function always terminates (loop guards); the step limit
  -- on interpreted runs turns a generator bug into a failure, not a hang
  if type(f) == "function" then
    debug.sethook(function() error("fuzz: interpreted run exceeded the step limit", 2) end, "", 20000000)
  end
  local r = table.pack(pcall(f, table.unpack(args, 1, args.n)))
  debug.sethook()
  local o = { ok = r[1] }
  if r[1] then
    o.vals = { n = r.n - 1, table.unpack(r, 2, r.n) }
  else
    o.err = tostring(r[2])
  end
  o.arrays = {}
  for i = 1, args.n do
    local v = args[i]
    if D.is_array(v) then
      local c = {}
      for k = 1, #v do c[k] = v[k] end
      o.arrays[#o.arrays + 1] = c
    end
  end
  return o
end

local function fmt_outcome(o)
  local s
  if o.ok then
    local p = {}
    for i = 1, o.vals.n do p[i] = fmt(o.vals[i]) end
    s = "returned (" .. table.concat(p, ", ") .. ")"
  else
    s = "raised: " .. o.err
  end
  if #o.arrays > 0 then
    local p = {}
    for i, a in ipairs(o.arrays) do p[i] = fmt_arr(a) end
    s = s .. "\n      arrays after: " .. table.concat(p, " ")
  end
  return s
end

-- The chunk name differs between the real and the oracle source; compare
-- errors without it.
local function strip_chunk(m) return (m:gsub('^%[string ".-"%]', "@", 1)) end

local function same_arrays(x, y)
  if #x.arrays ~= #y.arrays then return false end
  for i = 1, #x.arrays do
    local a, b = x.arrays[i], y.arrays[i]
    if #a ~= #b then return false end
    for k = 1, #a do if not same_value(a[k], b[k]) then return false end end
  end
  return true
end

local function same_outcome(x, y, strip)
  if x.ok ~= y.ok then return false end
  if x.ok then
    if x.vals.n ~= y.vals.n then return false end
    for i = 1, x.vals.n do
      if not same_value(x.vals[i], y.vals[i]) then return false end
    end
  else
    local xm, ym = x.err, y.err
    if strip then xm, ym = strip_chunk(xm), strip_chunk(ym) end
    if not D.same_error(xm, ym) then return false end
  end
  return same_arrays(x, y)
end

local UNSUPPORTED = { "not supported in compiled code", "holds both", "mixes", "cannot",
                      "compiled functions must return", "one type", "is not supported",
                      "elsewhere" }   -- "return value #k is T1 here but T2 elsewhere"
local function is_unsupported(m)
  for _, p in ipairs(UNSUPPORTED) do if m:find(p, 1, true) then return true end end
  return false
end
local STATIC = { "bad argument #" }
local function is_static(m)
  for _, p in ipairs(STATIC) do if m:find(p, 1, true) then return true end end
  return false
end

-- Oracle environment: kjit's documented semantics made explicit.
local function FLT(v)
  if math.type(v) == "integer" then return v + 0.0 end
  return v
end
local omath = {}
for k, v in pairs(math) do omath[k] = v end
local function strict_round(f)
  return function(x, ...)
    local r = f(x, ...)
    if math.type(r) == "float" then error("number has no integer representation", 2) end
    return r
  end
end
omath.floor = strict_round(math.floor)
omath.ceil = strict_round(math.ceil)
-- A slot kjit types "false-or-number" may be an integer or a float number
-- inside (inspect does not say which): the oracle runs both ways.
local ORACLE_ENV = setmetatable({ FLT = FLT, FLTM = FLT, math = omath }, { __index = _G })
local ORACLE_ENV2 = setmetatable({ FLT = FLT, FLTM = function(v) return v end, math = omath },
                                 { __index = _G })

local MAPTYPE = { i64 = "int", f64 = "flt", boolean = "bool", ["false-or-number"] = "maybe" }
local function parse_types(text)
  local tenv, rets = {}, {}
  local header = text:match("[^\n]*")
  local r = header:match("%->%s*(.*)$") or ""
  r = r:gsub("^%(", ""):gsub("%)$", "")
  for t in r:gmatch("[^,%s]+") do rets[#rets + 1] = MAPTYPE[t] or t end
  for name, t in text:gmatch("local ([%w_]+): ([^\n]+)") do
    if t:match("^%w+%[") then tenv[name] = "arr:" .. t:match("^(%w+)")
    else tenv[name] = MAPTYPE[t] or "?" end
  end
  return tenv, rets
end

local function new_stats()
  return { fns = 0, cases = 0, same = 0, documented = 0, unsupported = 0, static = 0,
           failed = 0, loadfail = 0 }
end
local TOTAL = new_stats()
local MAX_REPORTS = tonumber(os.getenv("KJIT_FUZZ_REPORTS") or "4") or 4
local SHOW = os.getenv("KJIT_FUZZ_SHOW")
local TALLY = os.getenv("KJIT_FUZZ_TALLY") == "1" and {} or nil

-- Checks one generated function on a list of argument makers. Returns a
-- list of failure reports.
local function snapshot_args(mk)
  local o = outcome(function() return end, mk)
  return o.arrays
end

-- One function on one argument tuple: verdict ("same", "documented",
-- "unsupported", "static" or "failed") and the outcomes.
local function eval_case(fn, src, f, j, mk)
  local args0 = mk()
  local io_ = outcome(f, mk)
  local sig = sig_of(args0)
  local okc, cerr = pcall(j.compile, j, sig)
  local verdict, co, oo
  if not okc then
    cerr = tostring(cerr)
    -- nothing ran: the arrays are as passed
    co = { ok = false, err = cerr, arrays = snapshot_args(mk), compile_error = true }
    if same_outcome(io_, co) then
      verdict = "same"
    elseif is_unsupported(cerr) then
      verdict = "unsupported"
    elseif is_static(cerr) and fn.boolnum then
      -- a type error found at compile time in code the interpreter did not
      -- run on this input (or ran after writing to arrays): compiled code is
      -- statically typed. Only for functions the generator deliberately put
      -- a boolean into arithmetic or an ordering comparison.
      verdict = "static"
    else
      verdict = "failed"
    end
  else
    co = outcome(j, mk)
    if same_outcome(io_, co) then
      verdict = "same"
    else
      -- the kjit-semantics oracle
      local okt, types = pcall(function() j:compile(sig); return j:inspect("types") end)
      if okt then
        local tenv, rets = parse_types(types)
        local O = { tenv = tenv, rets = rets }
        local osrc = fn.kind == "expr" and expr_fn_source(fn, O) or stmt_fn_source(fn, O)
        local ochunk, oerr = load(osrc, osrc, "t", ORACLE_ENV)
        if ochunk then
          oo = outcome(ochunk(), mk)
          oo.src = osrc
          if same_outcome(oo, co, true) then verdict = "documented" end
          if not verdict and osrc:find("FLTM(", 1, true) then
            local oo2 = outcome(load(osrc, osrc, "t", ORACLE_ENV2)(), mk)
            if same_outcome(oo2, co, true) then verdict = "documented" end
          end
        else
          oo = { ok = false, err = "oracle source does not load: " .. oerr, arrays = {} }
        end
      else
        oo = { ok = false, err = "no types: " .. tostring(types), arrays = {} }
      end
      verdict = verdict or "failed"
    end
  end
  return verdict, io_, co, oo, cerr
end

local function report(src, args0, io_, co, oo)
  local rep = { "MISMATCH\n    source:\n      " .. src:gsub("\n", "\n      ") }
  rep[#rep + 1] = "    args: " .. fmt_args(args0)
  rep[#rep + 1] = "    interpreter: " .. fmt_outcome(io_)
  rep[#rep + 1] = "    compiled:    " .. fmt_outcome(co) .. (co.compile_error and "   [compile error]" or "")
  if oo then
    rep[#rep + 1] = "    oracle:      " .. fmt_outcome(oo)
    if oo.src and oo.src ~= src then
      rep[#rep + 1] = "    oracle source:\n      " .. oo.src:gsub("\n", "\n      ")
    end
  end
  return table.concat(rep, "\n")
end

local minimize   -- defined below (KJIT_FUZZ_MINIMIZE=1)

local function deepcopy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = deepcopy(v) end
  return c
end

-- Checks one generated function on a list of argument makers. Returns a
-- list of failure reports.
local function check_fn(fn, mkargs_list, st)
  local src = fn.kind == "expr" and expr_fn_source(fn) or stmt_fn_source(fn)
  if VERBOSE then io.stderr:write("---- fuzz source\n", src, "\n") end
  local chunk, lerr = load(src)
  if not chunk then
    st.loadfail = st.loadfail + 1
    return { "generated source does not load (" .. lerr .. "):\n" .. src }
  end
  st.fns = st.fns + 1
  local f = chunk()
  local ok_j, j = pcall(kjit.jit, f)
  if not ok_j then return { "kjit.jit(fn) raised " .. tostring(j) .. "\n" .. src } end
  local reports = {}
  for _, mk in ipairs(mkargs_list) do
    st.cases = st.cases + 1
    if VERBOSE then io.stderr:write("  args ", fmt_args(mk()), "\n") end
    local verdict, io_, co, oo, cerr = eval_case(fn, src, f, j, mk)
    st[verdict] = st[verdict] + 1
    if TALLY and (verdict == "static" or verdict == "unsupported") then
      local key = verdict .. ": " .. strip_chunk(cerr):gsub("^@:%d+: ", ""):gsub("'[%w_]+'", "'?'")
      TALLY[key] = (TALLY[key] or 0) + 1
    end
    if verdict == "failed" or verdict == SHOW then
      local rep = report(src, mk(), io_, co, oo)
      if verdict == "failed" then
        if minimize then rep = rep .. "\n" .. minimize(deepcopy(fn), mk, io_, co) end
        reports[#reports + 1] = rep
      else
        print("[" .. verdict .. "] " .. rep)
      end
    end
  end
  return reports
end

---------------------------------------------------------------------------
-- Minimizer (KJIT_FUZZ_MINIMIZE=1): greedy shrinking of a failing function
-- and its arguments, keeping the same kind of mismatch.
---------------------------------------------------------------------------
if os.getenv("KJIT_FUZZ_MINIMIZE") == "1" then
  local function norm_msg(m)
    m = strip_chunk(m):gsub("^@:[%d?]+: ", "")
    return (m:gsub("%-?%d[%w%.%+]*", "N"))
  end
  local function okey(o)
    if o.ok then
      local t = {}
      for i = 1, o.vals.n do t[i] = math.type(o.vals[i]) or type(o.vals[i]) end
      return "returned(" .. table.concat(t, ",") .. ")"
    end
    return "raised(" .. norm_msg(o.err) .. ")"
  end
  local function key(io_, co)
    local k = okey(io_) .. " vs " .. okey(co)
    if io_.ok == co.ok and not same_arrays(io_, co) then k = k .. " arrays" end
    return k
  end
  local EXPR_KEYS = { "a", "b", "i", "e", "cond", "start", "limit", "step" }
  local LIST_KEYS = { "args", "exprs", "conds", "rets", "ret", "targets" }
  local function children(n)
    local t = {}
    for _, k in ipairs({ "a", "b", "i" }) do if type(n[k]) == "table" then t[#t + 1] = n[k] end end
    if n.k == "call" then for _, x in ipairs(n.args) do t[#t + 1] = x end end
    return t
  end
  local function collect(node, slots, lists)
    if type(node) ~= "table" then return end
    if node.k ~= nil or node.kind ~= nil then
      for _, k in ipairs(EXPR_KEYS) do
        if type(node[k]) == "table" and node[k].k then
          slots[#slots + 1] = { node, k }
          collect(node[k], slots, lists)
        end
      end
      for _, k in ipairs(LIST_KEYS) do
        if type(node[k]) == "table" then
          for i, x in ipairs(node[k]) do
            slots[#slots + 1] = { node[k], i }
            collect(x, slots, lists)
          end
        end
      end
      for _, k in ipairs({ "body", "els" }) do
        if type(node[k]) == "table" then
          lists[#lists + 1] = node[k]
          for _, st in ipairs(node[k]) do collect(st, slots, lists) end
        end
      end
      if type(node.blocks) == "table" then
        for _, b in ipairs(node.blocks) do
          lists[#lists + 1] = b
          for _, st in ipairs(b) do collect(st, slots, lists) end
        end
      end
    end
  end

  minimize = function(fn, mk, io0, co0)
    local want = key(io0, co0)
    local args0 = mk()
    local vals = {}
    for i = 1, args0.n do
      local v = args0[i]
      if D.is_array(v) then
        local c = {}
        for k = 1, #v do c[k] = v[k] end
        vals[i] = { dtype = v.dtype, c }
      else
        vals[i] = v
      end
    end
    local function mkv()
      local t = { n = args0.n }
      for i = 1, args0.n do
        local v = vals[i]
        if type(v) == "table" then v = kjit.array(v[1], v.dtype) end
        t[i] = v
      end
      return t
    end
    local function source() return fn.kind == "expr" and expr_fn_source(fn) or stmt_fn_source(fn) end
    local budget = 4000
    local last
    local function still_fails()
      budget = budget - 1
      local src = source()
      local chunk = load(src)
      if not chunk then return false end
      local f = chunk()
      local j = kjit.jit(f)
      local verdict, io_, co, oo = eval_case(fn, src, f, j, mkv)
      if verdict == "failed" and key(io_, co) == want then
        last = { src, io_, co, oo }
        return true
      end
      return false
    end
    if not still_fails() then return "  (minimizer: the failure does not reproduce alone)" end
    local changed = true
    while changed and budget > 0 do
      changed = false
      -- statements: remove, or inline a compound statement's body
      local slots, lists = {}, {}
      collect(fn, slots, lists)
      if fn.body then table.insert(lists, 1, fn.body) end
      for _, list in ipairs(lists) do
        local i = 1
        while i <= #list and budget > 0 do
          local st = list[i]
          local size = #source()
          table.remove(list, i)
          if #source() < size and still_fails() then
            changed = true
          else
            table.insert(list, i, st)
            local inner = st.body or (st.blocks and st.blocks[1]) or st.els
            local ok = false
            if inner then
              table.remove(list, i)
              for k = #inner, 1, -1 do table.insert(list, i, inner[k]) end
              if still_fails() then ok = true; changed = true
              else
                for _ = 1, #inner do table.remove(list, i) end
                table.insert(list, i, st)
              end
            end
            if not ok then i = i + 1 end
          end
        end
      end
      -- expressions: replace by a child or a leaf
      slots, lists = {}, {}
      collect(fn, slots, lists)
      for _, sl in ipairs(slots) do
        if budget <= 0 then break end
        local parent, k = sl[1], sl[2]
        local node = parent[k]
        if node and node.k then
          local size = #source()
          local cands = children(node)
          if node.paren then
            local c = {}
            for kk, vv in pairs(node) do c[kk] = vv end
            c.paren = nil
            cands[#cands + 1] = c
          end
          for _, l in ipairs({ var("a"), var("b"), lit("0", "int"), lit("1", "int"), lit("0.5", "flt"),
                               lit("true", "bool") }) do
            cands[#cands + 1] = l
          end
          for _, c in ipairs(cands) do
            parent[k] = c
            if #source() < size and still_fails() then changed = true; break end
            parent[k] = node
          end
        end
      end
      -- arguments: simpler values
      for i = 1, args0.n do
        if type(vals[i]) == "number" and budget > 0 then
          local old = vals[i]
          for _, v in ipairs({ 0, 1, 2, -1, 0.0, 1.0, 0.5, -0.5 }) do
            if same_value(v, old) then break end
            vals[i] = v
            if still_fails() then changed = true; break end
            vals[i] = old
          end
        end
      end
    end
    still_fails()
    local src, io_, co = last[1], last[2], last[3]
    return "  minimized:\n      " .. src:gsub("\n", "\n      ") .. "\n    args: " .. fmt_args(mkv()) ..
      "\n    interpreter: " .. fmt_outcome(io_) .. "\n    compiled:    " .. fmt_outcome(co)
  end
end

local function summary(name, st)
  return string.format("%s: %d functions, %d cases: %d same, %d documented, %d unsupported, %d static, %d FAILED%s",
    name, st.fns, st.cases, st.same, st.documented, st.unsupported, st.static, st.failed,
    st.loadfail > 0 and (", " .. st.loadfail .. " did not load") or "")
end

local function add_stats(st)
  for k, v in pairs(st) do TOTAL[k] = TOTAL[k] + v end
end

local function run_block(name, seed, nfns, gen, mkargs_gen)
  if ONLY and not ONLY[seed] then return end
  test(name, function()
    if kjit == nil or kjit.jit == nil then skip("kjit.jit not available") end
    math.randomseed(seed)
    local st = new_stats()
    local reports = {}
    for _ = 1, nfns do
      local fn = gen()
      local mks = mkargs_gen(fn)
      local reps = check_fn(fn, mks, st)
      for _, r in ipairs(reps) do reports[#reports + 1] = r end
      if st.fns % 25 == 0 then collectgarbage() end
    end
    add_stats(st)
    local line = summary(name, st)
    print("  " .. line)
    if #reports > 0 or st.loadfail > 0 then
      local shown = {}
      for i = 1, math.min(#reports, MAX_REPORTS) do shown[i] = reports[i] end
      error(line .. "\n" .. table.concat(shown, "\n") ..
        (#reports > MAX_REPORTS and ("\n  ... and " .. (#reports - MAX_REPORTS) .. " more") or ""), 0)
    end
  end)
end

-- argument makers
local function expr_args(_)
  local list = {}
  local ncase = 6
  for i = 1, ncase do
    local a = { n = 3 }
    local pattern = R(4)
    for k = 1, 3 do
      if pattern == 1 then a[k] = pick(INT_ARGS)
      elseif pattern == 2 then a[k] = pick(FLT_ARGS)
      else a[k] = rand_num_arg() end
    end
    list[i] = function() return { n = 3, a[1], a[2], a[3] } end
  end
  return list
end

local function stmt_args(_)
  local list = {}
  for i = 1, 4 do
    local a, b, n = pick(STMT_A), pick(STMT_A), pick(STMT_N)
    if i == 1 then a, b, n = pick({ 1, 2, 3 }), pick({ 0, 5, -1 }), 3 end
    list[i] = function()
      return { n = 6, a, b, n, kjit.array(ARRAY_INIT.A, "f64"), kjit.array(ARRAY_INIT.B, "i32"),
               kjit.array(ARRAY_INIT.C, "u8") }
    end
  end
  return list
end

local N_EXPR = math.floor(70 * SCALE)
local N_STMT = math.floor(45 * SCALE)

local t0 = os.clock()
for seed = 1, 8 do
  run_block("fuzz expressions seed " .. seed, seed, N_EXPR, gen_expr_fn, expr_args)
end
for seed = 101, 108 do
  run_block("fuzz statements seed " .. seed, seed, N_STMT, gen_stmt_fn, stmt_args)
end
if TALLY then
  local keys = {}
  for k in pairs(TALLY) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y) return TALLY[x] > TALLY[y] end)
  for _, k in ipairs(keys) do print(string.format("  %5d  %s", TALLY[k], k)) end
end
if TOTAL.fns > 0 then
  print("  " .. summary("fuzz total", TOTAL) .. string.format(" (%.1f s CPU)", os.clock() - t0))
end

---------------------------------------------------------------------------
-- Minimized repros of bugs the fuzzer found (see the end of the file).
---------------------------------------------------------------------------
local function repro(name, src, ...)
  local args = table.pack(...)
  test("fuzz repro: " .. name, function()
    if kjit == nil or kjit.jit == nil then skip("kjit.jit not available") end
    local fn = load(src)()
    local j = kjit.jit(fn)
    local function mk()
      local t = { n = args.n }
      for i = 1, args.n do
        local v = args[i]
        if type(v) == "table" then v = kjit.array(v[2], v[1]) end
        t[i] = v
      end
      return t
    end
    local io_, co = outcome(fn, mk), outcome(j, mk)
    if not same_outcome(io_, co) then
      error(string.format("\n    source: %s\n    args: %s\n    interpreter: %s\n    compiled:    %s",
        src, fmt_args(mk()), fmt_outcome(io_), fmt_outcome(co)), 0)
    end
  end)
end

-- REPROS
-- Each repro: the smallest source and arguments the minimizer (and hand
-- reduction) left, most severe first. Arrays are given as {dtype, {values}}.
-- They are plain differential checks: interpreted and compiled outcomes
-- (results, errors, array contents) must be the same.

-- 1. c and x and y with c a boolean, x a float and y an integer (or the
--    other way round): the false-or-number chain makes a PHI of i64 and
--    double, and LLVM rejects the module ("PHI node operands are not the
--    same type as the result"): valid code fails to compile.
repro("c and x and n (boolean, float, integer)",
  "return function(c, x, n) return c and x and n end", true, 0.5, 1)
repro("true and 0.5 and n",
  "return function(n) return true and 0.5 and n end", 1)
repro("c and x and n as a condition",
  "return function(c, x, n) if c and x and n then return 1 end return 0 end", true, 0.5, 1)
repro("(c and a) and 2 with a float",
  "return function(a, c) return (c and a) and 2 end", 0.5, true)
repro("local x (nil) then a float, x and 0",
  "return function(a) local x; x = a; return x and 0 end", 0.5)

-- 1b. Integer numeric for with a NaN limit and a negative step: Lua clips
--    the limit to mininteger (forlimit: NaN is not > 0) and runs the loop;
--    compiled code skipped it.
repro("for with NaN limit, negative step",
  "return function(a) local n = 0 for i = 1, a, -1 do n = n + 1 if n == 3 then break end end return n end",
  0 / 0)
repro("for with constant NaN limit, step mininteger",
  "return function(a) local n = 0 for i = a, 0 / 0, math.mininteger do n = n + 1 end return n end",
  1)

-- 2. Float index with an integral value outside the i64 range (or +-inf):
--    the buffers say "index X out of bounds [1, n]", compiled code said
--    "index X is not an integer".
repro("read at float index 1e308",
  "return function(A, i) return A[i] end", { "f64", { 0.5, 1.5 } }, 1e308)
repro("write at float index 2^63",
  "return function(A, i) A[i] = 1 end", { "i32", { 1, 2 } }, 2.0 ^ 63)
repro("read at float index -inf",
  "return function(A, i) return A[i] end", { "u8", { 1, 2 } }, -math.huge)
repro("constant float index -1e19",
  "return function(A) return A[-1e19] end", { "f64", { 0.5 } })

-- 3. math.ult with an argument that has no integer representation: Lua says
--    "bad argument #k to 'ult' (number has no integer representation)".
repro("math.ult float argument #1",
  "return function(a, b) return math.ult(a, b) end", 0.5, 1)
repro("math.ult float argument #2",
  "return function(a, b) return math.ult(a, b) end", 1, 2.0 ^ 63)

-- 4. "number has no integer representation" without Lua's variable info.
repro("bitwise on math.huge names the field",
  "return function(a) return a | math.huge end", 1)
repro("bitwise on math.pi names the field",
  "return function(a) return math.pi << a end", 1)
repro("bitwise on an array element at a constant index",
  "return function(A) return ~A[1] end", { "f64", { 0.5 } })
repro("bitwise on an array element at a variable index",
  "return function(A, i) return A[i] & 1 end", { "f64", { 0.5 } }, 1)
repro("bitwise on (k and x), which Lua folds to x",
  "return function(a, c) return (0 and c) | a end", 1, 0.5)
repro("bitwise on (-k and x), which Lua folds to x",
  "return function(a, b) return (-64 and b) & a end", 1, 0.5)

-- 5. NaN sign: Lua computes 0.5 % 0 at run time (x86 gives -nan); compiled
--    code folds it to +nan, visible only in messages. Documented (docs/reference/differences.md,
--    Differences #12): the messages must agree apart from the NaN's sign.
local function nan_sign_repro(name, src)
  test("fuzz repro: " .. name .. " (documented NaN sign)", function()
    if kjit == nil or kjit.jit == nil then skip("kjit.jit not available") end
    local fn = load(src)()
    local ok1, m1 = pcall(fn, kjit.array({ 0.5 }))
    local ok2, m2 = pcall(kjit.jit(fn), kjit.array({ 0.5 }))
    eq(ok1, false); eq(ok2, false)
    eq((m2:gsub("%-?nan", "nan")), (m1:gsub("%-?nan", "nan")), "message apart from the NaN sign")
  end)
end
nan_sign_repro("index error message for a constant-folded NaN",
  "return function(A) A[0.5 % 0] = 1 end")
nan_sign_repro("index error message for a constant-folded math.fmod NaN",
  "return function(A) A[math.fmod(0.5, 0)] = 1 end")
