-- gen.lua: the program generator of the differential fuzzer (tests/difffuzz/).
--
-- G.generate(id, flags) makes one random program from the number id (the
-- same id and flags always give the same program) over the language kjit
-- documents as compiled (README, "What compiles"):
--
--   local K = { 3, -0.5, ..., big = math.maxinteger }   -- constant table (upvalue)
--   local c1 = -0.5                                     -- upvalue constants
--   local function h1(p1, p2) ... return e1, e2 end     -- callees (several results)
--   local function r1(d, x) ... r1(d - 1, ...) ... end  -- recursion
--   return function(a, b, n, A, B, C) ... end           -- the compiled function
--
-- and the argument tuples to call it with. Source text only: one statement
-- per line, every block indented by two spaces, so that the minimizer
-- (run.lua) can drop lines and blocks without parsing Lua.
--
-- Termination: every function has a counter `cnt`; every loop body starts
-- with `cnt = cnt + 1; if cnt > LIMIT then break end` (a backward-goto loop
-- tests it in its condition), recursion goes down a small depth argument.
-- So every program ends when interpreted; a compiled run that does not is a
-- kjit bug (a hang).
--
-- Feature flags (G.FAMILIES) turn construct families on and off, so that a
-- family hitting a known bug can be left out of a run (--without) until the
-- fix lands, instead of skipping the seeds that hit it.
local G = {}

-- name -> what it generates. All are on by default.
G.FAMILIES = {
  { "arith", "+ - * and unary minus" },
  { "div", "/ and //" },
  { "mod", "%" },
  { "pow", "^" },
  { "bitwise", "& | ~ << >> and unary ~" },
  { "bitfloat", "bitwise operands as generated (off: floored with // 1, so that no local or upvalue holding a non-integral float reaches a bitwise operator)" },
  { "minmax", "math.max / math.min" },
  { "mathfn", "math.floor ceil abs fmod sqrt tointeger ult type" },
  { "transc", "math.sin cos tan asin acos atan exp log" },
  { "andor", "c and x or y, x or y, x and y on numbers" },
  { "consts", "upvalues holding constants" },
  { "ktable", "fields of a constant table held in an upvalue" },
  { "arrays", "array reads, stores, #A, A.size (every dtype)" },
  { "oob", "out-of-range array indices" },
  { "fltidx", "float array indices (1.0, 1.5, 2^63, ...)" },
  { "arr2d", "a 2-D array, M[i][j]" },
  { "numfor", "integer numeric for loops (odd steps, edge bounds)" },
  { "fltfor", "float numeric for loops (odd steps)" },
  { "prange", "some integer numeric for loops written as kjit.prange loops (run serially: bounds checks hoisted before them)" },
  { "while", "while loops" },
  { "repeat", "repeat ... until loops" },
  { "whiletrue", "while true do ... break ... end" },
  { "gotoloop", "loops made of a backward goto" },
  { "continue", "goto continue inside loops" },
  { "typechange", "locals assigned values of another subtype" },
  { "callee", "calls of other Lua functions (first result)" },
  { "calltable", "callees called through a constant table (H.h1(x))" },
  { "multret", "local u, v = h(...) and return h(...)" },
  { "callmid", "a call in the middle of a result list: return 1, h(), 3" },
  { "expand", "all results of a call as arguments: math.max(1, h(a))" },
  { "recursion", "recursive functions" },
  { "nilable", "locals that may be nil (local z; if c then z = 1 end), math.tointeger" },
  { "nilstatic", "a local that is always nil, used on a path that may not run" },
  { "errors", "error() and assert() with constant messages" },
  { "earlyret", "if c then return ... end" },
  { "boolarr", "a bool array argument Q: reads as conditions, stores of comparisons, rare stores of a number (both raise 'boolean expected')" },
  { "records", "a record array argument p (f64, i32, u8, bool and f64[3] fields): p[i].x reads and stores, local r = p[i], p[i] = p[j], p[i] == p[j]" },
  { "alloc", "arrays made in the function (kjit.zeros/full/arange, a:copy/slice/reshape), a:fill, row stores m[i] = row, arrays returned" },
  { "allocbool", "bool arrays made in the function (kjit.zeros/full with \"bool\") and a:fill on them" },
  { "libcall", "error and assert with built messages (.., string.format, tostring), math.random after math.randomseed" },
  { "fnvalue", "a generator g1 keeping its state in an upvalue it assigns (s1), and a table of functions FV (Lua and C; two with arithmetic loops, which run compiled) called by index: FV[k](x, y)" },
  { "strings", "string values: a local built with .., string.format, tostring, string.rep/sub/upper/char, compared and measured (#s, string.byte) into a number" },
  { "varargs", "vararg helpers v1/w1 (local q1, q2 = ..., select('#', ...), select(i, ...) in a loop, {...} and #, returns of different lengths, w1 passing ... on), called with 0-4 values (numbers, nil), their results taken into locals, or returned by the main function" },
  { "pairs", "a table made in the function, traversed by pairs, next or ipairs into a number" },
  { "closures", "function literals stored in a table and called through it, pcall of a literal that may raise, and captured locals assigned after the literal is made (shared cells), by the function, by the closure, or both" },
  { "counted", "values counted only when the code runs passed on where the count shows (with varargs): {v1(...)} and #, select('#', w1(...)), math.max(k, v1(...)), string.format of them, select('#', pcall(v1, ...))" },
  { "mixed", "a local that is a number on one path and a boolean (or nil) on another (local m = c and x or (y > z)): truthiness, ==, arithmetic that may raise" },
  { "refuse3", "what issue 29 refused until branch refuse3: == and ~= of two arrays (identity), arrays of records made in the function stored in a table and read back, t.x .. kjit.f32 with t.x a string, a number, nil or a table with __concat, a dtype object passed to a callee (dz), an __index chain ending at a number or a table" },
  { "lifted", "what issue 29 refused until branch refuse: a constructor with fields before v1(...)'s values, a local vararg literal given them, a local that is a string or a number, a number-or-nil .. a table with __concat, dtype objects (tostring, .., ==, a cast of a string)" },
  { "tabarg", "a Lua table argument T (numbers, strings, booleans, nested tables, a list of records, a kjit array, two keys naming one table): T.x, T[i], T.sub.y, T.list[i].x, a.b.c read and written, t[#t + 1] = v, new keys, keys built at run time, functions stored and called, nil stores; compared key by key after the call" },
  { "tabcall", "tables (T or made here) passed to callees that change them (tc1) or change them and then raise (tc2); two locals naming one table" },
  { "class", "the class pattern: Pt with __index = Pt, objects from Pt.new or setmetatable({...}, Sub/Dyn) (an __index function, an inherited override), o:method(...), a method replaced between calls (reset at the start of each run), a class counter its method bumps (Pt.ticks), objects stored into T" },
  { "metaops", "tables with metamethods: __add __sub __mul __unm __lt __le __eq __len __concat __index/__newindex functions, __tostring, an __newindex table" },
  { "raw", "rawget rawset rawequal rawlen on tables with and without metatables" },
  { "tablib", "table.insert (2 and 3 arguments, positions out of range), table.remove, table.unpack with ranges, table.concat with separators and ranges, on T's array part or a local table" },
  { "dynamic", "tostring, tonumber (with bases), type on mixed values (numbers, strings, booleans, nil, tables, functions), select with negative indices, pcall and error with table error values (caught, and uncaught: compared key by key)" },
  { "tabret", "the main function returns a table first (T itself or a constructor of computed values, nested), compared key by key" },
  { "strkeys", "strings built (.., string.format with %d %g %q %x ..., tostring, string.rep/sub/char/upper) from numbers, ordered and compared with each other, measured (#s, string.byte), converted back (tonumber), used as table keys, and returned" },
  { "numkeys", "integer and float keys: t[1.0] and t[1], t[-0.0], t[2^53], t[2^63], keys computed at run time (NaN: 'table index is NaN'), rawget, #t, next's key subtype" },
  { "order", "pairs and next order over tables the function builds and changes (string, integer and float keys added, deleted, table.insert/remove), folded into an order-sensitive number; deletion while traversing" },
  { "pcallerr", "pcall and error inside compiled code: table error values (read, changed, rethrown), error levels 1 and 2, nested pcall, values with __tostring, run-time errors caught with their position" },
  { "varnil", "varargs with nil holes: a helper vn(...) using table.pack and table.unpack with n, select('#', ...) with trailing nils, {...} of them" },
  { "randmix", "math.random drawn compiled, through a compiled helper, through a table of C functions and through pcall (the interpreter's generator, interleaved), math.randomseed with computed seeds, math.random(0), empty intervals and float arguments (errors)" },
  { "output", "print and io.write from compiled code (numbers of both subtypes, strings, booleans, nil; io.write of a nil: an error) mixed with prints of interpreted function values (PR[k](x)); check.lua compares the output, order and bytes" },
  { "upvloop", "closures made in a loop over a fresh local each turn and one shared upvalue they all write, called afterwards" },
  { "varlevels", "varargs passed through several levels of helpers (va1 -> va2 -> va3), truncated in the middle of a list, counted and picked with select" },
  { "strbuild", "strings built in loops with .. (integers, floats, built pieces) and with table.concat of the same pieces, compared and measured" },
  { "pcallmid", "pcall around compiled code (a literal or a helper wm) that writes a table and raises in the middle of its writes: the writes before the error stay" },
  { "coro", "coroutine.wrap and coroutine.create/resume of an interpreted body that calls a kjit.jit function and yields, driven from compiled code; errors inside them" },
  { "gotoout", "goto out of nested loops to a label after them (do ... end ::out::), and goto back to retry a block" },
  { "raiseop", "an operand that always raises (#NG of the nil global NG, an array read keyed by it, arithmetic on a local that is always nil, a comparison with a table, math.floor of nil) in every position: for bounds (integer, float, kjit.prange), while and repeat tests, if conditions, generic for iterators, array and table keys, call arguments, stored and returned values; reached on some runs and some turns only" },
}

-- "a,b,-c": parse a comma list of family names; unknown names are errors.
function G.flags(with, without)
  local known = {}
  for _, f in ipairs(G.FAMILIES) do known[f[1]] = true end
  local on = {}
  local function list(s)
    local t = {}
    for name in (s or ""):gmatch("[%w_]+") do
      if not known[name] then error("difffuzz: unknown family '" .. name .. "'", 0) end
      t[#t + 1] = name
    end
    return t
  end
  if with and with ~= "" and with ~= "all" then
    for _, n in ipairs(list(with)) do on[n] = true end
  else
    for n in pairs(known) do on[n] = true end
  end
  for _, n in ipairs(list(without)) do on[n] = nil end
  return on
end

local LIMIT = 60          -- loop iterations per function call (all loops together)

local R = math.random
local function pick(t) return t[R(#t)] end
local function chance(p) return R() < p end

local INT_LITS = {
  "0", "1", "2", "3", "5", "7", "10", "-1", "-2", "-7", "63", "64", "100", "255", "256",
  "-128", "65535", "2147483647", "2147483648", "-2147483649", "4294967296",
  "9007199254740992", "9007199254740993", "math.maxinteger", "math.mininteger",
  "0x7fffffffffffffff", "-9223372036854775807", "0xff", "1", "2", "0",
}
local FLT_LITS = {
  "0.0", "-0.0", "0.5", "-0.5", "1.5", "-2.5", "3.0", "-3.0", "0.1", "1e308", "-1e308",
  "1e-310", "9007199254740992.0", "9223372036854775808.0", "-9223372036854775808.0",
  "1e19", "math.huge", "-math.huge", "math.pi", "0x1p-1074", "4.0", "-1.0", "1e15",
  "0.75", "(0/0)", "2.0", "0.25", "-0.0", "1.0",
}
local DTYPES = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64" }

local function paren(s)
  if s:sub(1, 1) == "-" then return "(" .. s .. ")" end
  return s
end

---------------------------------------------------------------------------
-- Expressions (text, fully parenthesised)
---------------------------------------------------------------------------
local gen_num, gen_bool, rec_field, ext_bool, gen_allocs

local function num_lit(F)
  if chance(0.5) then return paren(pick(INT_LITS)) end
  return paren(pick(FLT_LITS))
end

-- an array (1-D) that reads may use: f32 values are read only by copies
-- (f32 arithmetic stays f32 in compiled code: README, Differences 1.)
local function readable_arrays(ctx)
  local t = {}
  for _, a in ipairs(ctx.arrays) do
    if a.ndim == 1 and a.dtype ~= "f32" then t[#t + 1] = a end
  end
  return t
end

local function gen_index(ctx, a, d)
  local F = ctx.F
  local r = R()
  local size = a.size
  if r < 0.45 then return tostring(R(math.max(size, 1))) end
  if r < 0.55 and F.oob then return pick({ "0", tostring(size + 1), "-1", "(#" .. a.name .. " + 1)" }) end
  if r < 0.62 then return "(#" .. a.name .. ")" end
  if r < 0.68 and F.fltidx then
    return pick({ "1.0", "2.0", "1.5", "(-0.0)", "1e308", "9223372036854775808.0", "math.huge", "(0/0)" })
  end
  if r < 0.85 and #ctx.loopvars > 0 then
    local v = pick(ctx.loopvars)
    if chance(0.6) then return "(" .. v .. " % #" .. a.name .. " + 1)" end
    return v
  end
  if d > 0 and chance(0.7) then
    return "(" .. gen_num(ctx, d - 1) .. " % #" .. a.name .. " + 1)"
  end
  return tostring(R(math.max(size, 1)))
end

local function arr_read(ctx, d)
  local arrs = readable_arrays(ctx)
  if #arrs == 0 then return nil end
  local a = pick(arrs)
  local r = R()
  if r < 0.12 then return "(#" .. a.name .. ")" end
  if r < 0.15 then return a.name .. ".size" end
  return a.name .. "[" .. gen_index(ctx, a, d) .. "]"
end

local function m_read(ctx, d)
  local m = ctx.matrix
  local i = chance(0.85) and tostring(R(m.rows)) or pick({ "0", tostring(m.rows + 1) })
  local j = chance(0.85) and tostring(R(m.cols)) or pick({ "0", tostring(m.cols + 1) })
  if #ctx.loopvars > 0 and chance(0.4) then i = "(" .. pick(ctx.loopvars) .. " % " .. m.rows .. " + 1)" end
  if chance(0.1) then return "(#" .. m.name .. "[1])" end
  return m.name .. "[" .. i .. "][" .. j .. "]"
end

-- a call expression of a callee whose results are adjusted to one
local function call_expr(ctx, d, h)
  local args = {}
  for i = 1, #h.params do
    if h.params[i] == "arr" then
      local t = {}
      for _, x in ipairs(ctx.arrays1) do if x.dtype == h.arrdtype then t[#t + 1] = x end end
      args[i] = pick(t).name
    else args[i] = gen_num(ctx, math.max(d - 1, 0)) end
  end
  -- through the constant table of callees (README: callees found in
  -- constant tables) half the time where there is one
  local name = (h.via and chance(0.5)) and h.via or h.name
  return name .. "(" .. table.concat(args, ", ") .. ")"
end

local function callable(ctx)
  local t = {}
  for _, h in ipairs(ctx.callees) do
    local ok = not h.arrdtype
    for _, x in ipairs(ctx.arrays1) do if x.dtype == h.arrdtype then ok = true end end
    if h.nret >= 1 and ok then t[#t + 1] = h end
  end
  return t
end

local function rec_call(ctx, d)
  local r = ctx.rec
  -- a small depth: a literal, or n % 4 in the main function (n is finite
  -- there; NaN or inf would recurse until the stack overflows)
  local depth = (chance(0.7) or not ctx.main) and tostring(R(5) - 1) or "(n % 4)"
  return r.name .. "(" .. depth .. ", " .. gen_num(ctx, math.max(d - 1, 0)) .. ")"
end

local function leaf_num(ctx, d)
  local F = ctx.F
  local r = R()
  if r < 0.45 and #ctx.nums > 0 then return pick(ctx.nums) end
  if r < 0.52 and F.consts and #ctx.consts > 0 then return pick(ctx.consts) end
  if r < 0.58 and F.ktable and ctx.ktable then return pick(ctx.ktable) end
  if r < 0.70 and F.arrays then
    local s = arr_read(ctx, d)
    if s then return s end
  end
  if r < 0.73 and ctx.matrix then return m_read(ctx, d) end
  if r < 0.79 and ctx.parr then return rec_field(ctx, d, "num") end
  if r < 0.84 and ctx.tab then return pick(ctx.tab.numfields) end
  return num_lit(F)
end

local ARITH = { "+", "-", "*" }

gen_num = function(ctx, d)
  local F = ctx.F
  if d <= 0 or chance(0.15) then return leaf_num(ctx, d) end
  local r = R()
  local a, b = function() return gen_num(ctx, d - 1) end, nil
  if r < 0.22 and F.arith then
    return "(" .. a() .. " " .. pick(ARITH) .. " " .. a() .. ")"
  elseif r < 0.28 and F.div then
    return "(" .. a() .. " " .. pick({ "/", "//" }) .. " " .. a() .. ")"
  elseif r < 0.33 and F.mod then
    return "(" .. a() .. " % " .. a() .. ")"
  elseif r < 0.36 and F.pow then
    return "(" .. a() .. " ^ " .. a() .. ")"
  elseif r < 0.42 and F.bitwise then
    local x = F.bitfloat and a or function() return "(" .. a() .. " // 1)" end
    if chance(0.15) then return "(~" .. x() .. ")" end
    return "(" .. x() .. " " .. pick({ "&", "|", "~", "<<", ">>" }) .. " " .. x() .. ")"
  elseif r < 0.45 and F.arith then
    return "(-" .. a() .. ")"
  elseif r < 0.51 and F.minmax then
    local f = pick({ "math.max", "math.min" })
    local args = { a(), a() }
    if chance(0.3) then args[3] = a() end
    return f .. "(" .. table.concat(args, ", ") .. ")"
  elseif r < 0.59 and F.mathfn then
    local f = pick({ "floor", "ceil", "abs", "fmod", "sqrt", "tointeger", "floor", "abs" })
    if f == "fmod" then return "math.fmod(" .. a() .. ", " .. a() .. ")" end
    if f == "tointeger" then return "(math.tointeger(" .. a() .. ") or " .. a() .. ")" end
    return "math." .. f .. "(" .. a() .. ")"
  elseif r < 0.61 and F.transc then
    return "math." .. pick({ "sin", "cos", "tan", "asin", "acos", "atan", "exp", "log" }) .. "(" .. a() .. ")"
  elseif r < 0.68 and F.andor then
    local k = R(3)
    if k == 1 then return "(" .. gen_bool(ctx, d - 1) .. " and " .. a() .. " or " .. a() .. ")" end
    return "(" .. a() .. " " .. (k == 2 and "or" or "and") .. " " .. a() .. ")"
  elseif r < 0.76 and F.callee and #callable(ctx) > 0 then
    return call_expr(ctx, d, pick(callable(ctx)))
  elseif r < 0.79 and F.expand and #callable(ctx) > 0 then
    -- every result of the call becomes an argument
    local h = pick(callable(ctx))
    return pick({ "math.max", "math.min" }) .. "(" .. a() .. ", " .. call_expr(ctx, d, h) .. ")"
  elseif r < 0.82 and F.recursion and ctx.rec then
    return rec_call(ctx, d)
  elseif r < 0.86 and F.fnvalue and ctx.fv then
    -- the upvalue generator, or a function value read from a table
    if chance(0.4) then return "g1(" .. a() .. ")" end
    local k = chance(0.8) and tostring(R(6)) or "((n // 1) % 7 + 1)"   -- 7: nil, an error
    return "FV[" .. k .. "](" .. a() .. ", " .. a() .. ")"
  end
  return leaf_num(ctx, d)
end

local CMPOPS = { "<", ">", "<=", ">=", "~=", "==" }

-- The record layout of the records family (check.lua builds it with
-- kjit.struct from this list): no f32 field (f32 arithmetic stays f32 in
-- compiled code), an integer field whose stores of non-integral floats
-- raise, a u8 field whose stores wrap, a bool field, an array field.
G.RECORD = { { "x", "f64" }, { "k", "i32" }, { "c", "u8" }, { "b", "bool" }, { "v", "f64", 3 } }

-- p[i] or a record view local r
local function rec_ref(ctx, d)
  if #ctx.rvars > 0 and chance(0.35) then return pick(ctx.rvars) end
  return ctx.parr.name .. "[" .. gen_index(ctx, ctx.parr, d) .. "]"
end

-- a numeric field of a record: x, k, c or v[j]
rec_field = function(ctx, d, _)
  local f = pick({ "x", "k", "c", "v", "x" })
  local s = rec_ref(ctx, d) .. "." .. f
  if f == "v" then
    if chance(0.1) then return "(#" .. s .. ")" end
    s = s .. "[" .. (chance(0.9) and tostring(R(3)) or pick({ "0", "4" })) .. "]"
  end
  return s
end

-- a truth value from the new families: Q[i], p[i].b, p[i] == p[j]
ext_bool = function(ctx, d)
  local t = {}
  if ctx.barr then t[#t + 1] = function() return ctx.barr.name .. "[" .. gen_index(ctx, ctx.barr, d) .. "]" end end
  if ctx.parr then
    t[#t + 1] = function() return rec_ref(ctx, d) .. ".b" end
    t[#t + 1] = function() return "(" .. rec_ref(ctx, d) .. " " .. pick({ "==", "~=" }) .. " " .. rec_ref(ctx, d) .. ")" end
  end
  return pick(t)()
end

gen_bool = function(ctx, d)
  local F = ctx.F
  if (ctx.barr or ctx.parr) and chance(0.15) then return ext_bool(ctx, d) end
  local r = R()
  if d <= 0 then
    if r < 0.15 and #ctx.bools > 0 then return pick(ctx.bools) end
    if r < 0.2 then return pick({ "true", "false" }) end
    return "(" .. leaf_num(ctx, 0) .. " " .. pick(CMPOPS) .. " " .. leaf_num(ctx, 0) .. ")"
  end
  if r < 0.5 then
    return "(" .. gen_num(ctx, d - 1) .. " " .. pick(CMPOPS) .. " " .. gen_num(ctx, d - 1) .. ")"
  elseif r < 0.6 then
    return "(not " .. gen_bool(ctx, d - 1) .. ")"
  elseif r < 0.75 then
    return "(" .. gen_bool(ctx, d - 1) .. " " .. pick({ "and", "or" }) .. " " .. gen_bool(ctx, d - 1) .. ")"
  elseif r < 0.8 and F.mathfn then
    if chance(0.5) then return "math.ult(" .. gen_num(ctx, d - 1) .. ", " .. gen_num(ctx, d - 1) .. ")" end
    return "(math.type(" .. gen_num(ctx, d - 1) .. ") == \"" .. pick({ "integer", "float" }) .. "\")"
  elseif r < 0.85 and #ctx.bools > 0 then
    return pick(ctx.bools)
  elseif r < 0.9 and F.nilable and #ctx.nilables > 0 then
    -- a number-or-nil as a truth value
    return "(" .. pick(ctx.nilables) .. " " .. pick({ "~= nil", "== nil", "and true or false" }) .. ")"
  end
  return "(" .. gen_num(ctx, d - 1) .. " " .. pick(CMPOPS) .. " " .. gen_num(ctx, d - 1) .. ")"
end

---------------------------------------------------------------------------
-- Statements: each appends lines to ctx.out with the current indent.
---------------------------------------------------------------------------
local function emit(ctx, s) ctx.out[#ctx.out + 1] = ctx.ind .. s end
local function newname(ctx, p) ctx.ids.n = ctx.ids.n + 1; return p .. ctx.ids.n end

local function scope(ctx)
  return { #ctx.nums, #ctx.bools, #ctx.locals, #ctx.loopvars, #ctx.nilables, #ctx.rvars, #ctx.objs, #ctx.vobjs,
           #ctx.strs }
end
local function unscope(ctx, sc)
  local keys = { "nums", "bools", "locals", "loopvars", "nilables", "rvars", "objs", "vobjs", "strs" }
  for k, key in ipairs(keys) do
    local t = ctx[key]
    for i = #t, sc[k] + 1, -1 do t[i] = nil end
  end
end

local gen_block

-- Values that reach a result: a local just computed is often folded into
-- an enclosing local or parameter (which the final return often returns),
-- so that what inner blocks compute is seen. n stays finite (rec_call).
local function targets(ctx, except)
  local t = {}
  for _, v in ipairs(ctx.locals) do if v ~= except then t[#t + 1] = v end end
  for _, v in ipairs(ctx.params) do if not (v == "n" and ctx.main) then t[#t + 1] = v end end
  return t
end
local function observe(ctx, v)
  local t = targets(ctx, v)
  if #t == 0 or not chance(0.5) then return end
  local w = pick(t)
  if chance(0.5) then emit(ctx, w .. " = " .. v)
  else emit(ctx, w .. " = (" .. w .. " " .. pick({ "+", "-", "*" }) .. " " .. v .. ")") end
end

local function guard(ctx) emit(ctx, "  " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1; if " .. ctx.cnt .. " > " .. LIMIT .. " then break end") end

local function in_block(ctx, d, n, f)
  local sc = scope(ctx)
  local ind = ctx.ind
  ctx.ind = ind .. "  "
  if f then f() end
  gen_block(ctx, d, n)
  ctx.ind = ind
  unscope(ctx, sc)
end

local function loop_body(ctx, d, var, cont)
  local loop = { label = cont and ctx.F.continue and chance(0.4) and newname(ctx, "cont") or nil }
  ctx.loops[#ctx.loops + 1] = loop
  local sc = scope(ctx)
  if var then ctx.nums[#ctx.nums + 1] = var; ctx.loopvars[#ctx.loopvars + 1] = var end
  local ind = ctx.ind
  guard(ctx)
  ctx.ind = ind .. "  "
  gen_block(ctx, d - 1, R(4))
  if loop.used then emit(ctx, "::" .. loop.label .. "::") end
  ctx.ind = ind
  unscope(ctx, sc)
  ctx.loops[#ctx.loops] = nil
end

local INT_STEPS = { "1", "2", "3", "7", "-1", "-2", "-3", "0", "math.maxinteger", "math.mininteger" }
local FLT_STEPS = { "0.5", "-0.5", "0.25", "0.1", "-0.1", "0.3333333333333333", "1.5", "-1.0", "1e308", "0.0" }

local function for_stmt(ctx, d, float)
  local v = newname(ctx, "i")
  local start, limit, step
  if float then
    start = pick({ "0.5", "1.0", "-2.5", "0.1", "(-0.0)", "1e308", pick(ctx.nums), "0", "1" })
    limit = pick({ "3.2", "2.5", "-1.5", "1e308", "(-1e308)", "math.huge", "(0/0)", pick(ctx.nums), pick(ctx.nums), "4" })
    step = pick(FLT_STEPS)
  else
    start = pick({ "1", "0", "-3", "10", "2", "1", pick(ctx.nums), "math.maxinteger - 2", "math.mininteger",
                   pick(ctx.nums) })
    limit = pick({ "5", "3", "0", "-2", "10", pick(ctx.nums), "#" .. (ctx.arrays1[1] and ctx.arrays1[1].name or "A"),
                   "math.maxinteger", "math.mininteger", "2.5", "math.huge", "(0/0)", pick(ctx.nums) })
    if not ctx.arrays1[1] and limit:sub(1, 1) == "#" then limit = pick(ctx.nums) end
    step = chance(0.4) and pick(INT_STEPS) or nil
    if chance(0.1) then start = gen_num(ctx, 1) end
  end
  if not float and ctx.F.prange and chance(0.3) then
    -- the same loop as kjit.prange (integers only: its bounds may not be floats)
    local function int(x, dflt) return (x:match("^%-?%d+$") or x:match("^math%.m[ai][xn]integer") or x:match("^#")) and x or dflt end
    emit(ctx, "for " .. v .. " in kjit.prange(" .. int(start, "1") .. ", " .. int(limit, "5") ..
         (step and (", " .. step) or "") .. ") do")
    loop_body(ctx, d, v, true)
    emit(ctx, "end")
    return
  end
  emit(ctx, "for " .. v .. " = " .. start .. ", " .. limit .. (step and (", " .. step) or "") .. " do")
  loop_body(ctx, d, v, true)
  emit(ctx, "end")
end

local function store_stmt(ctx, d)
  local a = pick(ctx.arrays1)
  local rhs
  if a.dtype == "f32" and chance(0.3) then
    rhs = gen_num(ctx, d)
  else
    -- a copy from any array (f32 included: its values are exact doubles)
    local src = pick(ctx.arrays1)
    if chance(0.3) then rhs = src.name .. "[" .. gen_index(ctx, src, 1) .. "]" else rhs = gen_num(ctx, d) end
  end
  emit(ctx, a.name .. "[" .. gen_index(ctx, a, 1) .. "] = " .. rhs)
end

local function ret_values(ctx, nret)
  local F = ctx.F
  local t = {}
  -- in parentheses: a call last in the list would give all its results.
  -- Often a local, so that what the function computed is seen.
  for i = 1, nret do
    if chance(0.5) and #targets(ctx) > 0 then t[i] = pick(targets(ctx))
    else t[i] = "(" .. gen_num(ctx, R(3) - 1) .. ")" end
  end
  -- every return of the function returns the same array first (calls in
  -- the list could make the counts or types differ)
  if ctx.main and ctx.retarr and nret >= 1 then t[1] = ctx.retarr; return t end
  -- (tabret) a table first: T, or a constructor of what was computed
  if ctx.main and ctx.rettab and nret >= 1 then
    if ctx.tab and chance(0.4) then t[1] = "T"
    else
      t[1] = "{ " .. t[1] .. ", k = " .. gen_num(ctx, 0) .. ", sub = { " .. pick(targets(ctx)) .. " }" ..
             (ctx.tab and chance(0.3) and ", t = T" or "") .. " }"
    end
    return t
  end
  -- (strkeys) now and then a string built here, returned as the Lua value
  if ctx.main and #ctx.strs > 0 and nret >= 1 and chance(0.2) then t[R(nret)] = pick(ctx.strs) end
  if nret >= 1 then
    local hs = callable(ctx)
    local r = R()
    if r < 0.15 and F.multret then
      -- return ..., h(x) with h giving the remaining results
      for _, h in ipairs(hs) do
        if h.nret <= nret then
          local k = nret - h.nret + 1
          t[k] = call_expr(ctx, 1, h)
          for i = k + 1, nret do t[i] = nil end
          break
        end
      end
    elseif r < 0.3 and F.callmid and nret >= 2 and #hs > 0 then
      t[R(nret - 1)] = call_expr(ctx, 1, pick(hs))
    end
  end
  return t
end

-- Statements of the table families (tabarg, tabcall, class, metaops, raw,
-- tablib, dynamic): each adds to t a function that emits one, most often
-- ending in a number local that is observed.
local function number_local(ctx, x)
  ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
  observe(ctx, x)
end

-- a key built when the code runs (cnt is an integer: no NaN in the text)
local function runtime_key()
  return pick({ "\"k\" .. (cnt % 3)", "string.format(\"k%d\", cnt % 4)", "(\"s\" .. \"ub\")", "(\"x\" .. \"\")" })
end

-- an object of the class family or a table of T that may be one
local function some_obj(ctx)
  if #ctx.objs > 0 and (not ctx.tab or chance(0.8)) then return pick(ctx.objs) end
  if ctx.tab then return pick({ "T.list[1]", "T.sub", "T.list[1]", "T" }) end
  return nil
end

-- a value of any type, for the dynamic family
local function mixed_value(ctx)
  local t = { gen_num(ctx, 0), "\"12\"", "\"0x1p4\"", "\"ab\"", "\" 7 \"", "true", "nil", "\"10\"", "false",
              "\"1e2\"", "{}", "math.abs" }
  if ctx.tab then
    for _, v in ipairs({ "T.s", "T.f", "T.sub", "T.x", "T.fn", "T.A" }) do t[#t + 1] = v end
  end
  return pick(t)
end

local function table_stmt(ctx, d, t)
  local F = ctx.F
  local T = ctx.tab and "T" or nil
  if F.tabarg and T then
    t[#t + 1] = function()   -- writes
      local k = R(12)
      local v = gen_num(ctx, d)
      if k == 1 then emit(ctx, "T.x = " .. v)
      elseif k == 2 then emit(ctx, "T[" .. R(5) .. "] = " .. v)
      elseif k == 3 then emit(ctx, "T[#T + 1] = " .. v)
      elseif k == 4 then emit(ctx, "T[" .. runtime_key() .. "] = " .. v)
      elseif k == 5 then emit(ctx, "T.sub.y = " .. v)
      elseif k == 6 then
        local i = (#ctx.loopvars > 0 and chance(0.5)) and ("(" .. pick(ctx.loopvars) .. " % #T.list + 1)") or tostring(R(3))
        emit(ctx, "T.list[" .. i .. "].x = " .. v)
      elseif k == 7 then emit(ctx, "T." .. pick({ "y", "s", "k1", "sub", "f" }) .. " = nil")
      elseif k == 8 then emit(ctx, "T.s = \"v\" .. " .. v)
      elseif k == 9 then emit(ctx, "T.f = " .. gen_bool(ctx, 0))
      elseif k == 10 then emit(ctx, "T.new = { " .. v .. ", k = { " .. gen_num(ctx, 0) .. " } }")
      elseif k == 11 then emit(ctx, "T.fn = " .. pick({ "math.abs", "function(a) return a * 2 end", "nil" }))
      else emit(ctx, "T.sub.sub = { y = " .. v .. " }") end
    end
    t[#t + 1] = function()   -- reads into a number
      local x = newname(ctx, "x")
      local k = R(10)
      local e
      if k == 10 then   -- a traversal (the table's own order, the same in both runs)
        emit(ctx, "local " .. x .. " = 0")
        local it = pick({ "pairs(T)", "ipairs(T)", "pairs(T.sub)", "ipairs(T.list)" })
        emit(ctx, "for k, v in " .. it .. " do " .. x .. " = " .. x .. " + (type(v) == \"number\" and v or 1) + (type(k) == \"number\" and k or #k) end")
        number_local(ctx, x)
        return
      end
      if k == 1 then e = "#T + (T[" .. runtime_key() .. "] or 0)"
      elseif k == 2 then e = "(T.sub.sub and T.sub.sub.y or 0) + T.sub.y"
      elseif k == 3 then e = "(type(T.s) == \"string\") and #T.s or 0"
      elseif k == 4 then e = "T.s + " .. gen_num(ctx, 0)   -- raises for "ab", nil
      elseif k == 5 then e = "T.f and 1 or 2"
      elseif k == 6 then e = "T.A[" .. pick({ "1", "#T.A", "(#T.A + 1)" }) .. "] + #T.A"   -- a kjit array in a table
      elseif k == 7 then e = "T.fn(" .. gen_num(ctx, 0) .. ")"   -- a function stored in the table, or nil
      elseif k == 8 then e = "#T.list + T.list[#T.list].x"
      else e = "(T.new and T.new.k[1] or 0) + (T[" .. R(5) .. "] or 0)" end
      emit(ctx, "local " .. x .. " = " .. e)
      number_local(ctx, x)
    end
    t[#t + 1] = function()   -- aliasing: two names for one table
      local u, x = newname(ctx, "u"), newname(ctx, "x")
      emit(ctx, "local " .. u .. " = " .. pick({ "T.sub", "T.alias", "T.list[1]", "T" }))
      emit(ctx, u .. "." .. pick({ "y", "x" }) .. " = " .. gen_num(ctx, d))
      emit(ctx, "local " .. x .. " = (T.sub.y or 0) + (T.alias and T.alias.y or 0) + (T.list[1].x or 0)")
      number_local(ctx, x)
    end
  end
  if F.tabcall and ctx.tc then
    t[#t + 1] = function()
      local x = newname(ctx, "x")
      local target = T and chance(0.6) and pick({ "T", "T.sub", "T.list[1]" }) or nil
      if not target then
        target = newname(ctx, "l")
        emit(ctx, "local " .. target .. " = { " .. gen_num(ctx, 0) .. ", sub = { y = " .. gen_num(ctx, 0) .. " } }")
        local alias = newname(ctx, "l")
        emit(ctx, "local " .. alias .. " = " .. target)
        emit(ctx, "local " .. x .. " = " .. pick({ "tc1", "tc2" }) .. "(" .. alias .. ", " .. gen_num(ctx, d) .. ")")
        emit(ctx, x .. " = " .. x .. " + #" .. target .. " + (" .. target .. ".n or 0) + (" .. target .. ".m2 or 0)")
      else
        emit(ctx, "local " .. x .. " = " .. pick({ "tc1", "tc2" }) .. "(" .. target .. ", " .. gen_num(ctx, d) .. ")")
      end
      number_local(ctx, x)
    end
  end
  if F.class and ctx.cls then
    t[#t + 1] = function()   -- an object
      local o = newname(ctx, "o")
      if chance(0.5) then emit(ctx, "local " .. o .. " = Pt.new(" .. gen_num(ctx, 0) .. ", " .. gen_num(ctx, 0) .. ")")
      else
        emit(ctx, "local " .. o .. " = setmetatable({ x = " .. gen_num(ctx, 0) .. ", y = " .. gen_num(ctx, 0) ..
             " }, " .. pick({ "Sub", "Dyn", "Pt" }) .. ")")
      end
      ctx.objs[#ctx.objs + 1] = o
      if T and chance(0.3) then emit(ctx, "T." .. pick({ "o", "list[1]", "new" }) .. " = " .. o) end
    end
    t[#t + 1] = function()   -- a method call, a field, a method replaced
      local o = some_obj(ctx)
      if not o then return end
      local x = newname(ctx, "x")
      local k = R(8)
      if k == 8 then   -- the class's counter, bumped by a method, read here
        emit(ctx, "local " .. x .. " = " .. o .. ":tick(" .. gen_num(ctx, 0) .. ") + " ..
             pick({ "Pt.ticks", o .. ":ticks2()", "Pt.ticks2(" .. o .. ")" }))
      elseif k == 7 then   -- a function chosen when the code runs
        local f = newname(ctx, "m")
        emit(ctx, "local " .. f .. " = " .. gen_bool(ctx, 0) .. " and " .. pick({ "scale1", "Pt.len2", "math.max" }) ..
             " or " .. pick({ "scale2", "Sub.len2", "Pt.scale" }))
        emit(ctx, "local " .. x .. " = " .. f .. "(" .. o .. ", " .. gen_num(ctx, 0) .. ")")
      elseif k == 1 then emit(ctx, "local " .. x .. " = " .. o .. ":len2()")
      elseif k == 2 then emit(ctx, "local " .. x .. " = " .. o .. ":move(" .. gen_num(ctx, 0) .. ").x")
      elseif k == 3 then emit(ctx, "local " .. x .. " = " .. o .. ":scale(" .. gen_num(ctx, 0) .. ")")
      elseif k == 4 then
        emit(ctx, "Pt.scale = " .. pick({ "scale1", "scale2", "function(self, k) return k end" }))
        emit(ctx, "local " .. x .. " = " .. o .. ":scale(" .. gen_num(ctx, 0) .. ")")
      elseif k == 5 then emit(ctx, "local " .. x .. " = " .. o .. ".x + (" .. o .. ".z or 0) + (" .. o .. ".n or 0)")
      else
        emit(ctx, o .. ".x = " .. gen_num(ctx, d))
        emit(ctx, "local " .. x .. " = Pt.len2(" .. o .. ")")
      end
      number_local(ctx, x)
    end
  end
  if F.metaops and ctx.vmt then
    t[#t + 1] = function()   -- a value with metamethods
      local v = newname(ctx, "v")
      emit(ctx, "local " .. v .. " = setmetatable({ v = " .. gen_num(ctx, 0) .. " }, V)")
      ctx.vobjs[#ctx.vobjs + 1] = v
      if T and chance(0.3) then emit(ctx, "T.v = " .. v) end
    end
    t[#t + 1] = function()
      if #ctx.vobjs == 0 then return end
      local a, b = pick(ctx.vobjs), pick(ctx.vobjs)
      local n = gen_num(ctx, 0)
      local x = newname(ctx, "x")
      local e = pick({
        "(" .. a .. " + " .. n .. ").v", "(" .. n .. " - " .. a .. ").v", "(" .. a .. " * " .. b .. ").v",
        "(-" .. a .. ").v", "((" .. a .. " < " .. b .. ") and 1 or 0)", "((" .. n .. " <= " .. a .. ") and 1 or 0)",
        "((" .. a .. " == " .. b .. ") and 1 or 0)", "((" .. a .. " ~= " .. n .. ") and 1 or 0)", "#" .. a,
        "#(" .. a .. " .. \"s\")", "#(" .. n .. " .. " .. a .. ")", a .. ".w + (" .. a .. ".writes or 0)",
        "#tostring(" .. a .. ")", "((" .. a .. " > " .. n .. ") and 1 or 0)",
      })
      if chance(0.3) then emit(ctx, a .. "." .. pick({ "k", "v", "w" }) .. " = " .. gen_num(ctx, d)) end
      emit(ctx, "local " .. x .. " = " .. e)
      number_local(ctx, x)
    end
    t[#t + 1] = function()   -- an __newindex table
      local nt, w, x = newname(ctx, "n"), newname(ctx, "w"), newname(ctx, "x")
      emit(ctx, "local " .. nt .. " = {}")
      emit(ctx, "local " .. w .. " = setmetatable({}, { __newindex = " .. nt .. ", __index = " .. nt .. " })")
      emit(ctx, w .. ".a = " .. gen_num(ctx, d))
      emit(ctx, "local " .. x .. " = (" .. w .. ".a or 0) + (rawget(" .. w .. ", \"a\") or 0) + (" .. nt .. ".a or 0)")
      number_local(ctx, x)
    end
  end
  if F.raw then
    t[#t + 1] = function()
      local x = newname(ctx, "x")
      local objs = {}
      for _, o in ipairs(ctx.objs) do objs[#objs + 1] = o end
      for _, o in ipairs(ctx.vobjs) do objs[#objs + 1] = o end
      if T then objs[#objs + 1] = "T"; objs[#objs + 1] = "T.sub" end
      if #objs == 0 or chance(0.3) then
        local r = newname(ctx, "r")
        emit(ctx, "local " .. r .. " = setmetatable({ " .. gen_num(ctx, 0) .. " }, { __index = function() return 5 end, " ..
             "__newindex = function() end, __len = function() return 9 end, __eq = function() return true end })")
        objs = { r }
      end
      local a, b = pick(objs), pick(objs)
      local k = R(6)
      if k == 1 then emit(ctx, "rawset(" .. a .. ", " .. pick({ "\"q\"", "1", "\"x\"" }) .. ", " .. gen_num(ctx, d) .. ")")
        emit(ctx, "local " .. x .. " = (rawget(" .. a .. ", \"q\") or 0) + (rawget(" .. a .. ", 1) or 0)")
      elseif k == 2 then emit(ctx, "local " .. x .. " = rawequal(" .. a .. ", " .. b .. ") and 1 or 0")
      elseif k == 3 then emit(ctx, "local " .. x .. " = rawlen(" .. a .. ") + rawlen(\"abc\")")
      elseif k == 4 then emit(ctx, "local " .. x .. " = (rawget(" .. a .. ", \"len2\") == nil) and 1 or 2")
      elseif k == 5 then
        emit(ctx, "local " .. x .. " = ((" .. a .. " == " .. b .. ") and 1 or 0)" ..
             (T and " + (rawequal(T.sub, T.alias) and 2 or 0)" or ""))
      else emit(ctx, "local " .. x .. " = (" .. a .. ".q or 0) + #" .. a) end
      number_local(ctx, x)
    end
  end
  if F.tablib then
    t[#t + 1] = function()
      local l
      if T and chance(0.5) then l = pick({ "T", "T.list", "T.sub" })
      else
        l = newname(ctx, "l")
        local items = {}
        for i = 1, R(0, 4) do items[i] = gen_num(ctx, 0) end
        emit(ctx, "local " .. l .. " = { " .. table.concat(items, ", ") .. " }")
      end
      local x = newname(ctx, "x")
      local k = R(6)
      local pos = pick({ "1", "#" .. l, "#" .. l .. " + 1", "2", "0", "#" .. l .. " + 2" })
      if k == 1 then   -- (now and then without its value: "wrong number of arguments")
        emit(ctx, "table.insert(" .. l .. (chance(0.9) and (", " .. gen_num(ctx, d)) or "") .. ")")
        emit(ctx, "local " .. x .. " = #" .. l)
      elseif k == 2 then emit(ctx, "table.insert(" .. l .. ", " .. pos .. ", " .. gen_num(ctx, d) .. ")")
        emit(ctx, "local " .. x .. " = #" .. l)
      elseif k == 3 then
        emit(ctx, "local " .. x .. " = " .. (chance(0.5) and ("table.remove(" .. l .. ")") or ("table.remove(" .. l .. ", " .. pos .. ")")))
        emit(ctx, x .. " = (type(" .. x .. ") == \"number\") and " .. x .. " or #" .. l)
      elseif k == 4 then
        local a, b = newname(ctx, "u"), newname(ctx, "u")
        emit(ctx, "local " .. a .. ", " .. b .. " = table.unpack(" .. l .. (chance(0.7) and (", " .. R(0, 2) .. ", " .. pick({ "2", "3", "#" .. l })) or "") .. ")")
        emit(ctx, "local " .. x .. " = (" .. a .. " or 0) + (" .. b .. " or 0)")
      else
        emit(ctx, "local " .. x .. " = #table.concat(" .. l .. (chance(0.7) and (", " .. pick({ "\",\"", "\"\"", "\"--\"" }) ..
             (chance(0.5) and (", " .. R(1, 2) .. ", " .. pick({ "2", "#" .. l })) or "")) or "") .. ")")
      end
      number_local(ctx, x)
    end
  end
  if F.dynamic then
    t[#t + 1] = function()
      local x = newname(ctx, "x")
      local v = mixed_value(ctx)
      local k = R(11)
      if k == 11 then   -- arithmetic on a value of any type (strings convert; // and % by 0)
        emit(ctx, "local " .. x .. " = " .. mixed_value(ctx) .. " " .. pick({ "+", "-", "*", "/", "//", "%", "^" }) .. " " ..
             pick({ gen_num(ctx, 0), "0", "\"0\"", "\"2\"", "n" }))
      elseif k == 10 then   -- a string ordered with a value of any type (raises unless a string)
        emit(ctx, "local " .. x .. " = (" .. ((ctx.tab and chance(0.5)) and "T.s" or "\"10\"") .. " " .. pick({ "<", ">=" }) .. " " ..
             mixed_value(ctx) .. ") and 1 or 0")
      elseif k == 1 then emit(ctx, "local " .. x .. " = tonumber(" .. v .. ") or -1")
      elseif k == 2 then
        emit(ctx, "local " .. x .. " = tonumber(" .. pick({ "\"ff\"", "\"z\"", "\"8\"", "\" 11 \"", "\"\"", "\"7fffffffffffffff\"" }) ..
             ", " .. pick({ "16", "36", "8", "2", "10" }) .. ") or -1")
      elseif k == 3 then emit(ctx, "local " .. x .. " = #type(" .. v .. ") + (type(" .. v .. ") == \"table\" and 1 or 0)")
      elseif k == 4 then
        local w = pick({ gen_num(ctx, 0), "\"ab\"", "true", "nil", "1e15", "-0.0", "math.mininteger", "2^63", "(0/0)" })
        if w == "(0/0)" then w = "1.5" end   -- (a NaN's sign in text is not compared: README, Differences)
        emit(ctx, "local " .. x .. " = #tostring(" .. w .. ")")
      elseif k == 5 then
        local n = R(1, 4)
        emit(ctx, "local " .. x .. " = select(" .. pick({ "-1", "-2", "-3", "-4", "2", "'#'" }) .. ", " ..
             table.concat({ gen_num(ctx, 0), gen_num(ctx, 0), gen_num(ctx, 0) }, ", ", 1, n > 3 and 3 or n) .. ")")
        emit(ctx, x .. " = " .. x .. " or 0")
      elseif k == 6 then
        local ok, e = newname(ctx, "ok"), newname(ctx, "e")
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(" .. pick({ "error, { code = " .. gen_num(ctx, 0) .. " }",
             "function() error({ code = " .. gen_num(ctx, 0) .. " }) end",
             "function() if " .. gen_bool(ctx, 0) .. " then error({ code = 1 }) end return { code = 2 } end" }) .. ")")
        emit(ctx, "local " .. x .. " = (" .. ok .. " and 10 or 20) + " .. e .. ".code")
      elseif k == 7 then
        local ok, e = newname(ctx, "ok"), newname(ctx, "e")
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(" .. pick({ "error", "error, nil", "error, \"m\", 0", "error, 7" }) .. ")")
        emit(ctx, "local " .. x .. " = (" .. ok .. " and 1 or 2) + (" .. e .. " == nil and 4 or 8)")
      elseif k == 8 then
        emit(ctx, "if " .. gen_bool(ctx, d) .. " then error({ code = " .. gen_num(ctx, 0) .. ", what = \"t\" }) end")
        return
      else
        emit(ctx, "local " .. x .. " = (" .. v .. " and 1 or 0) + (" .. v .. " == " .. mixed_value(ctx) .. " and 2 or 0)")
      end
      number_local(ctx, x)
    end
  end
end

-- Statements of the families of session 20 (strkeys, numkeys, order,
-- pcallerr, varnil, randmix): Lua values issue 29 says compiled code must
-- handle as interpreted, each ending in a number local that is observed.

-- a number local that is never NaN (a NaN's sign in text may differ:
-- README, Differences 9.), for strings built from numbers
local function text_number(ctx)
  local v = newname(ctx, "v")
  emit(ctx, "local " .. v .. " = " .. gen_num(ctx, 0))
  emit(ctx, "if " .. v .. " ~= " .. v .. " then " .. v .. " = 0 end")
  return v
end

local STR_FORMATS = { "%d", "%g", "%.3f", "%5.1f", "%x", "%s", "%q", "%.14g", "%i", "%a", "%-4d|" }
local STR_LITS = { "\"\"", "\"10\"", "\"9\"", "\"a\"", "\"B\"", "\"ab\"", "\"1e1\"", "\" 5 \"", "\"0x10\"" }

-- a string built from the number local v (or a string local)
local function built_string(ctx, v)
  local k = R(10)
  if k == 1 then return "(\"k\" .. " .. v .. ")"
  elseif k == 2 then return "string.format(\"" .. pick(STR_FORMATS) .. "\", " .. v .. ")"
  elseif k == 3 then return "tostring(" .. v .. ")"
  elseif k == 4 then
    return "string.rep(" .. pick({ "\"ab\"", "\"-\"", "\"\"" }) .. ", " .. R(-1, 3) .. (chance(0.5) and ", \",\"" or "") .. ")"
  elseif k == 5 then return "string.char(" .. (64 + R(26)) .. (chance(0.5) and (", " .. (96 + R(26))) or "") .. ")"
  elseif k == 6 then return "(" .. v .. " .. \"\")"
  elseif k == 7 then return "(" .. v .. " .. \"x\"):" .. pick({ "upper", "lower" }) .. "()"
  elseif k == 8 and #ctx.strs > 0 then return "(" .. pick(ctx.strs) .. " .. " .. pick(STR_LITS) .. ")"
  elseif k == 9 then return "(\"ab\" .. " .. v .. "):sub(" .. R(-4, 3) .. ", " .. R(-3, 6) .. ")"
  end
  return pick(STR_LITS)
end

local NUM_KEYS = { "1", "1.0", "2", "2.0", "(-0.0)", "0", "3", "1.5", "2^53", "2^63", "math.maxinteger",
                   "math.mininteger", "(n // 1)", "(n / 2)", "(-1)", "3.0" }

local function luaval_stmts(ctx, d, slots)
  local F = ctx.F
  -- (all of them share one slot of ext_stmt's choice, so that they add
  -- about 10% to the difffuzz ctest's time, not a third: measured)
  local t = {}
  if F.strkeys then
    t[#t + 1] = function()
      local v = text_number(ctx)
      local s1, s2, x = newname(ctx, "s"), newname(ctx, "s"), newname(ctx, "x")
      emit(ctx, "local " .. s1 .. " = " .. built_string(ctx, v))
      emit(ctx, "local " .. s2 .. " = " .. built_string(ctx, v))
      local k = R(4)
      if k == 1 then   -- two strings built here, ordered and compared
        emit(ctx, "local " .. x .. " = (" .. s1 .. " < " .. s2 .. " and 1 or 0) + (" .. s1 .. " <= " .. s2 ..
             " and 2 or 0) + (" .. s1 .. " == " .. s2 .. " and 4 or 0) + #" .. s1 .. " * 8 + #" .. s2)
      elseif k == 2 then   -- as table keys
        local tv = newname(ctx, "t")
        emit(ctx, "local " .. tv .. " = { [" .. s1 .. "] = " .. v .. " }")
        emit(ctx, tv .. "[" .. s2 .. "] = (" .. tv .. "[" .. s2 .. "] or 0) + 1")
        emit(ctx, tv .. "[" .. s1 .. " .. " .. s2 .. "] = #" .. s2)
        emit(ctx, "local " .. x .. " = (" .. tv .. "[" .. s1 .. "] or -1) + (" .. tv .. "[" .. s2 .. "] or -1) + (rawget(" ..
             tv .. ", " .. s1 .. " .. " .. s2 .. ") or 0)")
        if ctx.tab and chance(0.5) then emit(ctx, "T[" .. s1 .. "] = " .. x) end
      elseif k == 3 then   -- bytes and pieces
        emit(ctx, "local " .. x .. " = (string.byte(" .. s1 .. ", " .. R(-3, 3) .. ") or 0) + #(" .. s1 .. " .. " .. s2 ..
             "):sub(" .. R(-4, 2) .. ", " .. R(-2, 6) .. ") + (" .. s2 .. ":byte(-1) or 0)")
      else   -- back to numbers (tonumber of "k1" is nil; a string in arithmetic converts or raises)
        emit(ctx, "local " .. x .. " = (tonumber(" .. s1 .. ") or -1) + " ..
             (chance(0.3) and (s2 .. " * 1") or ("(tonumber(" .. s2 .. ", " .. pick({ "10", "16", "36" }) .. ") or 0)")))
      end
      ctx.strs[#ctx.strs + 1] = s1
      ctx.strs[#ctx.strs + 1] = s2
      number_local(ctx, x)
    end
  end
  if F.numkeys then
    t[#t + 1] = function()
      local tv, x = newname(ctx, "t"), newname(ctx, "x")
      emit(ctx, "local " .. tv .. " = {" .. (chance(0.4) and (" " .. gen_num(ctx, 0) .. ", " .. gen_num(ctx, 0) .. " ") or "") .. "}")
      for _ = 1, R(2, 5) do
        local key = pick(NUM_KEYS)
        if chance(0.08) then key = gen_num(ctx, 0) end   -- (NaN raises "table index is NaN")
        emit(ctx, tv .. "[" .. key .. "] = " .. gen_num(ctx, 0))
      end
      local k = R(4)
      if k == 1 then
        emit(ctx, "local " .. x .. " = #" .. tv .. " + (" .. tv .. "[1] or 0) + (" .. tv .. "[2.0] or 0) + (" .. tv .. "[0] or 0)")
      elseif k == 2 then   -- the keys' subtypes (1.0 is stored as 1; 2^53 too; 1.5 stays a float)
        emit(ctx, "local " .. x .. " = 0")
        emit(ctx, "for k, w in pairs(" .. tv .. ") do " .. x .. " = " .. x .. " + (math.type(k) == \"integer\" and 1 or 100) end")
      elseif k == 3 then
        emit(ctx, "local " .. x .. " = (rawget(" .. tv .. ", 1.0) or 0) + (rawget(" .. tv .. ", 2^53) or 0) + (" .. tv ..
             "[-0.0] or 0) + (" .. tv .. "[2^63] or 0)")
      else
        local kk = newname(ctx, "k")
        emit(ctx, "local " .. kk .. " = next(" .. tv .. ")")
        emit(ctx, "local " .. x .. " = (" .. kk .. " == nil) and 0 or (math.type(" .. kk .. ") == \"float\" and 2 or 1)")
      end
      number_local(ctx, x)
    end
  end
  if F.order then
    t[#t + 1] = function()
      local tv, x = newname(ctx, "t"), newname(ctx, "x")
      local items = {}
      for i = 1, R(0, 3) do items[#items + 1] = gen_num(ctx, 0) end
      for i = 1, R(0, 3) do items[#items + 1] = "k" .. R(6) .. " = " .. gen_num(ctx, 0) end
      emit(ctx, "local " .. tv .. " = { " .. table.concat(items, ", ") .. " }")
      for _ = 1, R(1, 5) do
        local k = R(8)
        if k == 1 then emit(ctx, tv .. "[\"k\" .. " .. R(9) .. "] = " .. gen_num(ctx, 0))
        elseif k == 2 then emit(ctx, tv .. "[" .. R(9) .. "] = " .. gen_num(ctx, 0))
        elseif k == 3 then emit(ctx, tv .. "." .. "k" .. R(6) .. " = nil")
        elseif k == 4 then emit(ctx, tv .. "[#" .. tv .. " + 1] = " .. gen_num(ctx, 0))
        elseif k == 5 then emit(ctx, "table.insert(" .. tv .. ", " .. gen_num(ctx, 0) .. ")")
        elseif k == 6 then emit(ctx, "table.remove(" .. tv .. ")")
        elseif k == 7 then emit(ctx, tv .. "[" .. pick({ "1.5", "-0.5", "2^60" }) .. "] = " .. gen_num(ctx, 0))
        else emit(ctx, tv .. "[string.format(\"f%d\", cnt % 5)] = " .. gen_num(ctx, 0)) end
      end
      emit(ctx, "local " .. x .. " = 0")
      -- (a hash of the keys in the order met: any other order gives another number)
      local fold = x .. " = (" .. x .. " * 31 + (type(k) == \"string\" and #k + k:byte(-1) or k // 1)) % 1000003"
      local k = R(3)
      if k == 1 then emit(ctx, "for k in pairs(" .. tv .. ") do " .. fold .. " end")
      elseif k == 2 then
        emit(ctx, "do local k = next(" .. tv .. ") while k ~= nil do " .. fold .. "; k = next(" .. tv .. ", k) end end")
      else   -- deleting the string keys while traversing (allowed: assigning nil to a field met)
        emit(ctx, "for k, w in pairs(" .. tv .. ") do " .. fold .. "; if type(k) == \"string\" then " .. tv .. "[k] = nil end end")
        emit(ctx, x .. " = " .. x .. " + #" .. tv)
      end
      number_local(ctx, x)
    end
  end
  if F.pcallerr then
    t[#t + 1] = function()
      local ok, e, x = newname(ctx, "ok"), newname(ctx, "e"), newname(ctx, "x")
      local n = gen_num(ctx, 0)
      local k = R(6)
      if k == 1 then   -- a table error value, read after the pcall
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(function(y) if y " .. pick({ ">", "<", "~=" }) .. " " ..
             num_lit(F) .. " then error({ code = y, tag = \"t\" .. math.type(y) }) end return y * 2 end, " .. n .. ")")
        emit(ctx, "local " .. x .. " = " .. ok .. " and " .. e .. " or (" .. e .. ".code + #" .. e .. ".tag)")
      elseif k == 2 then   -- levels: 1 names the line, 2 the caller (pcall: no position)
        if ctx.lvh and chance(0.5) then   -- through lvh, called or tail-called (its frame replaced)
          emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(function(y) " ..
               pick({ "return lvh(y)", "local r = lvh(y) return r" }) .. " end, " .. n .. ")")
        else
          emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(function(y) if y " .. pick({ ">", "<" }) ..
               " 0 then error(\"lv\", " .. pick({ "1", "2", "0" }) .. ") end return y end, " .. n .. ")")
        end
        emit(ctx, "local " .. x .. " = " .. ok .. " and 0 or #" .. e)
      elseif k == 3 then   -- nested pcall, all its values
        emit(ctx, "local " .. x .. " = select('#', pcall(pcall, error, { code = " .. n .. " })) + " ..
             "(select(3, pcall(pcall, error, { code = 4 })).code)")
      elseif k == 4 then   -- an error value with a metatable (__tostring not called by pcall)
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(error, setmetatable({ v = " .. n .. " }, { __tostring = function() return \"E\" end }))")
        emit(ctx, "local " .. x .. " = (" .. ok .. " and 1 or 2) + (getmetatable(" .. e .. ") and #tostring(" .. e .. ") or 0) + " .. e .. ".v")
      elseif k == 5 then   -- a run-time error caught: its message names the line
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(function(y) local u; if y > 0 then return u.f end return y // " ..
             pick({ "0", "0.0", "1" }) .. " end, " .. n .. ")")
        emit(ctx, "local " .. x .. " = " .. ok .. " and 1 or #" .. e)
      else   -- changed and raised again (uncaught: compared key by key)
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(error, { code = " .. n .. " })")
        emit(ctx, e .. ".code = " .. e .. ".code + 1")
        emit(ctx, "if " .. gen_bool(ctx, 0) .. " then error(" .. e .. ") end")
        emit(ctx, "local " .. x .. " = " .. e .. ".code")
      end
      number_local(ctx, x)
    end
  end
  if F.varnil and ctx.vn then
    t[#t + 1] = function()
      local args = {}
      for i = 1, R(0, 5) do args[i] = chance(0.35) and "nil" or gen_num(ctx, 0) end
      local list = table.concat(args, ", ")
      local more = #args > 0 and (", " .. list) or ""   -- (after another argument)
      local x = newname(ctx, "x")
      local k = R(6)
      if k == 1 then emit(ctx, "local " .. x .. " = select('#', vn(" .. list .. "))")
      elseif k == 2 then
        local y = newname(ctx, "y")
        emit(ctx, "local " .. x .. ", " .. y .. " = vn(" .. list .. ")")
        emit(ctx, x .. " = " .. x .. " + " .. y)
      elseif k == 3 then
        local tp = newname(ctx, "t")
        emit(ctx, "local " .. tp .. " = table.pack(vn(" .. list .. "))")
        emit(ctx, "local " .. x .. " = " .. tp .. ".n + (" .. tp .. "[" .. R(4) .. "] or 0)")
      elseif k == 4 then
        emit(ctx, "local " .. x .. " = select('#', table.unpack({ " .. list .. " }, 1, " .. R(0, 6) .. "))")
      elseif k == 5 then   -- (a table with holes: its border is the one the VM's sizes give, both ways)
        emit(ctx, "local " .. x .. " = #{ " .. list .. " } + select('#'" .. more .. ")")
      else
        local tp = newname(ctx, "t")
        emit(ctx, "local " .. tp .. " = { n = select('#'" .. more .. ")" .. more .. " }")
        emit(ctx, "local " .. x .. " = " .. tp .. ".n + select('#', table.unpack(" .. tp .. ", 1, " .. tp .. ".n))")
      end
      number_local(ctx, x)
    end
  end
  if F.randmix and ctx.rn then
    t[#t + 1] = function()
      local x = newname(ctx, "x")
      if chance(0.2) then
        emit(ctx, "math.randomseed(" .. pick({ tostring(R(0, 99)), "cnt", gen_num(ctx, 0), R(0, 9) .. ", " .. R(0, 9) }) .. ")")
      end
      local m = R(6)
      local draws = {
        "math.random(" .. m .. ")", "RN.f(" .. m .. ")", "select(2, pcall(math.random, " .. m .. "))",
        "rnd(" .. m .. ")", "math.random(" .. R(-3, 3) .. ", " .. R(-3, 3) .. ")", "(math.random(0) % 7)",
        "math.random()", "RN[" .. R(2) .. "](" .. m .. ")",
      }
      if chance(0.1) then draws[#draws + 1] = "math.random(" .. gen_num(ctx, 0) .. ")" end   -- (2.5: no integer representation)
      emit(ctx, "local " .. x .. " = " .. pick(draws) .. " + " .. pick(draws))
      number_local(ctx, x)
    end
  end
  if F.output then
    t[#t + 1] = function()
      local x = newname(ctx, "x")
      local v = text_number(ctx)
      local k = R(7)
      if k == 1 then
        emit(ctx, "print(" .. v .. ", " .. gen_num(ctx, 0) .. ", " .. pick({ "\"s\"", "nil", "true", "false", "(" .. v .. " .. \"\")" }) .. ")")
      elseif k == 2 then
        emit(ctx, "io.write(" .. v .. ", \" \", " .. gen_num(ctx, 0) .. ", \"\\n\")")
      elseif k == 3 then   -- a float, an integer and a string from a number, written
        emit(ctx, "io.write(string.format(\"" .. pick(STR_FORMATS) .. "|\", " .. v .. "), " .. v .. " // 1, \";\")")
      elseif k == 4 and ctx.pr then   -- an interpreted function value's print, between compiled ones
        emit(ctx, "print(\"c\", " .. v .. ")")
        emit(ctx, "local " .. x .. " = PR[1 + cnt % 2](" .. v .. ", " .. gen_num(ctx, 0) .. ")")
        emit(ctx, "io.write(\"d\", " .. x .. ", \"\\n\")")
        number_local(ctx, x)
        return
      elseif k == 5 then   -- a number-or-nil written: nil raises "bad argument #1 to 'write'"
        local z = newname(ctx, "z")
        emit(ctx, "local " .. z .. " = " .. gen_bool(ctx, 0) .. " and " .. v .. " or nil")
        emit(ctx, "io.write(" .. pick({ z, "\"[\", " .. z .. ", \"]\"" }) .. ")")
      elseif k == 6 then
        emit(ctx, "print()")
      else
        emit(ctx, "print(" .. built_string(ctx, v) .. ", math.type(" .. v .. "), " .. v .. " == " .. v .. ")")
      end
      emit(ctx, "local " .. x .. " = " .. v)
      number_local(ctx, x)
    end
  end
  if F.upvloop then
    t[#t + 1] = function()
      local acc, fs, x, j = newname(ctx, "acc"), newname(ctx, "fs"), newname(ctx, "x"), newname(ctx, "j")
      local op = pick({ "+", "-", "*" })
      emit(ctx, "local " .. acc .. " = " .. gen_num(ctx, 0))
      emit(ctx, "local " .. fs .. " = {}")
      emit(ctx, "for i = 1, " .. R(1, 4) .. " do")
      emit(ctx, "  " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1; if " .. ctx.cnt .. " > " .. LIMIT .. " then break end")
      emit(ctx, "  local " .. j .. " = i " .. op .. " " .. gen_num(ctx, 0))
      emit(ctx, "  " .. fs .. "[i] = function(d) " .. acc .. " = " .. acc .. " " .. op .. " d + " .. j .. "; " ..
                j .. " = " .. j .. " + 1; return " .. acc .. " end")
      if chance(0.5) then emit(ctx, "  " .. acc .. " = " .. acc .. " + " .. fs .. "[i](i)") end
      emit(ctx, "end")
      emit(ctx, "local " .. x .. " = 0")
      emit(ctx, "for i = #" .. fs .. ", 1, -1 do " .. x .. " = " .. x .. " + " .. fs .. "[i](" .. gen_num(ctx, 0) ..
                ") + " .. fs .. "[1](i) end")
      emit(ctx, x .. " = " .. x .. " + " .. acc)
      number_local(ctx, x)
    end
  end
  if F.varlevels and ctx.vl then
    t[#t + 1] = function()
      local args = {}
      for i = 1, R(0, 4) do args[i] = chance(0.2) and "nil" or gen_num(ctx, 0) end
      local call = pick({ "va1", "va2", "va3" }) .. "(" .. table.concat(args, ", ") .. ")"
      local x = newname(ctx, "x")
      local k = R(4)
      if k == 1 then emit(ctx, "local " .. x .. " = select('#', " .. call .. ")")
      elseif k == 2 then emit(ctx, "local " .. x .. " = select('#', " .. call .. ", " .. call .. ") * 10 + (select(" ..
                               R(-2, 3) .. ", " .. call .. ") or 0.5)")
      elseif k == 3 then
        local tp = newname(ctx, "t")
        emit(ctx, "local " .. tp .. " = table.pack(" .. call .. ")")
        emit(ctx, "local " .. x .. " = " .. tp .. ".n + (" .. tp .. "[" .. R(4) .. "] or 0)")
      else emit(ctx, "local " .. x .. " = math.max(" .. num_lit(F) .. ", (va2(" .. gen_num(ctx, 0) .. ")))") end
      number_local(ctx, x)
    end
  end
  if F.strbuild then
    t[#t + 1] = function()
      local sb, parts, x = newname(ctx, "sb"), newname(ctx, "p"), newname(ctx, "x")
      local v = text_number(ctx)
      local piece = pick({ "i", "i / 2", "(" .. v .. " + i)", "tostring(i)", "string.format(\"%d,\", i)",
                           "(i % 2 == 0 and \"e\" or " .. v .. ")", "string.rep(\"-\", i)" })
      emit(ctx, "local " .. sb .. ", " .. parts .. " = " .. pick({ "\"\"", "\"<\"" }) .. ", {}")
      emit(ctx, "for i = " .. R(0, 1) .. ", " .. R(0, 5) .. " do")
      emit(ctx, "  " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1; if " .. ctx.cnt .. " > " .. LIMIT .. " then break end")
      emit(ctx, "  " .. sb .. " = " .. sb .. " .. " .. piece)
      emit(ctx, "  " .. parts .. "[#" .. parts .. " + 1] = " .. piece)
      emit(ctx, "end")
      local sep = pick({ "", "\",\"", "\"--\"" })
      emit(ctx, "local " .. x .. " = #" .. sb .. " * 100 + #table.concat(" .. parts .. (sep ~= "" and (", " .. sep) or "") ..
                ") + ((" .. sb .. " < table.concat(" .. parts .. ")) and 1 or 0) + (" .. sb .. ":byte(-1) or 0)")
      if chance(0.2) then ctx.strs[#ctx.strs + 1] = sb end
      number_local(ctx, x)
    end
  end
  if F.pcallmid then
    t[#t + 1] = function()
      local tv, ok, e, x = newname(ctx, "t"), newname(ctx, "ok"), newname(ctx, "e"), newname(ctx, "x")
      local target = (ctx.tab and chance(0.4)) and "T" or tv
      if target == tv then emit(ctx, "local " .. tv .. " = { k = " .. gen_num(ctx, 0) .. ", q = " .. pick({ "{}", "false", "{ r = 1 }" }) .. " }") end
      if ctx.wm and chance(0.5) then
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(wm, " .. target .. ", " .. gen_num(ctx, 0) .. ")")
      else
        local lit = num_lit(F)
        emit(ctx, "local " .. ok .. ", " .. e .. " = pcall(function(y) " .. target .. ".k = y; " .. target .. "[#" .. target ..
                  " + 1] = y * 2; if y " .. pick({ ">", "<", "~=" }) .. " " .. lit .. " then " ..
                  pick({ "error(\"mid\")", "error({ at = y })", "local _ = y .. {}", "local _ = " .. target .. ".q.r.s" }) ..
                  " end; " .. target .. ".after = (" .. target .. ".after or 0) + 1; return y end, " .. gen_num(ctx, 0) .. ")")
      end
      emit(ctx, "local " .. x .. " = (" .. ok .. " and 1 or 2) + (type(" .. e .. ") == \"string\" and #" .. e ..
                " or 0) + #" .. target .. " + (" .. target .. ".after or 0)")
      number_local(ctx, x)
    end
  end
  if F.coro and ctx.co then
    t[#t + 1] = function()
      local co, x = newname(ctx, "co"), newname(ctx, "x")
      local k = R(3)
      if k == 1 then
        emit(ctx, "local " .. co .. " = coroutine.wrap(CB)")
        emit(ctx, "local " .. x .. " = " .. co .. "(" .. gen_num(ctx, 0) .. ") + " .. co .. "(" .. gen_num(ctx, 0) .. ")")
        if chance(0.4) then
          emit(ctx, x .. " = " .. x .. " + " .. co .. "(" .. gen_num(ctx, 0) .. ")")   -- (CB's end)
          if chance(0.3) then emit(ctx, x .. " = " .. x .. " + " .. co .. "(1)") end   -- (dead: "cannot resume dead coroutine")
        end
      elseif k == 2 then
        local ok, r = newname(ctx, "ok"), newname(ctx, "r")
        emit(ctx, "local " .. co .. " = coroutine.create(CB)")
        emit(ctx, "local " .. ok .. ", " .. r .. " = coroutine.resume(" .. co .. ", " .. gen_num(ctx, 0) .. ")")
        emit(ctx, "local " .. x .. " = (" .. ok .. " and " .. r .. " or #" .. r .. ") + (coroutine.status(" .. co ..
                  ") == \"suspended\" and 1 or 0)")
      else   -- a compiled function value run inside a coroutine it is wrapped in
        emit(ctx, "local " .. co .. " = coroutine.wrap(function(y) return JH(y, " .. gen_num(ctx, 0) .. ") end)")
        emit(ctx, "local " .. x .. " = " .. co .. "(" .. gen_num(ctx, 0) .. ")")
      end
      number_local(ctx, x)
    end
  end
  if F.gotoout then
    t[#t + 1] = function()
      local x, lbl = newname(ctx, "x"), newname(ctx, "out")
      emit(ctx, "local " .. x .. " = " .. gen_num(ctx, 0))
      if chance(0.7) then
        emit(ctx, "do")
        emit(ctx, "  for i = 1, " .. R(1, 4) .. " do")
        emit(ctx, "    " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1; if " .. ctx.cnt .. " > " .. LIMIT .. " then break end")
        emit(ctx, "    for j = " .. R(0, 2) .. ", " .. R(1, 3) .. " do")
        emit(ctx, "      " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1; if " .. ctx.cnt .. " > " .. LIMIT .. " then break end")
        emit(ctx, "      " .. x .. " = " .. x .. " " .. pick({ "+", "-", "*" }) .. " i * j")
        emit(ctx, "      if " .. x .. " " .. pick({ ">", "<", "==" }) .. " " .. num_lit(F) .. " then goto " .. lbl .. " end")
        emit(ctx, "    end")
        emit(ctx, "  end")
        emit(ctx, "  " .. x .. " = -" .. x)
        emit(ctx, "end")
        emit(ctx, "::" .. lbl .. "::")
      else   -- back to retry a block, bounded by cnt
        emit(ctx, "::" .. lbl .. "::")
        emit(ctx, "do")
        emit(ctx, "  " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1")
        emit(ctx, "  " .. x .. " = " .. x .. " + " .. pick({ "1", "0.5", "2" }))
        emit(ctx, "  if " .. ctx.cnt .. " <= " .. LIMIT .. " and " .. x .. " < " .. num_lit(F) .. " then goto " .. lbl .. " end")
        emit(ctx, "end")
      end
      number_local(ctx, x)
    end
  end
  if #t > 0 then slots[#slots + 1] = function() pick(t)() end end
end

-- Statements of the families boolarr, records, alloc and libcall.
local FORMATS = { "%d", "%g", "%.3f", "%5.1f", "%s", "%x", "%.14g" }
local function ext_stmt(ctx, d)
  local F = ctx.F
  local t = {}
  if ctx.barr then
    t[#t + 1] = function()
      local q = ctx.barr
      -- a number stored into a bool array raises 'boolean expected' in both
      local rhs = chance(0.05) and gen_num(ctx, d) or gen_bool(ctx, d)
      emit(ctx, q.name .. "[" .. gen_index(ctx, q, 1) .. "] = " .. rhs)
    end
  end
  if ctx.parr then
    local p = ctx.parr
    t[#t + 1] = function()
      local f = pick({ "x", "k", "c", "b", "v", "x" })
      local lhs = rec_ref(ctx, 1) .. "." .. f
      if f == "v" then lhs = lhs .. "[" .. (chance(0.9) and tostring(R(3)) or "4") .. "]" end
      local rhs
      if f == "b" then rhs = chance(0.05) and gen_num(ctx, d) or gen_bool(ctx, d)
      else rhs = chance(0.03) and gen_bool(ctx, 0) or gen_num(ctx, d) end
      emit(ctx, lhs .. " = " .. rhs)
    end
    t[#t + 1] = function()
      local v = newname(ctx, "r")
      emit(ctx, "local " .. v .. " = " .. p.name .. "[" .. gen_index(ctx, p, 1) .. "]")
      ctx.rvars[#ctx.rvars + 1] = v
    end
    t[#t + 1] = function()
      emit(ctx, p.name .. "[" .. gen_index(ctx, p, 1) .. "] = " .. rec_ref(ctx, 1))
    end
  end
  if F.varargs and ctx.va then
    -- a call of a vararg helper with 0-4 values; its results (how many
    -- varies by path) into locals, made numbers
    t[#t + 1] = function()
      local args = {}
      for i = 1, R(0, 4) do args[i] = chance(0.15) and "nil" or gen_num(ctx, 0) end
      local f = pick({ "v1", "w1" })
      local u, w = newname(ctx, "x"), newname(ctx, "x")
      emit(ctx, "local " .. u .. ", " .. w .. " = " .. f .. "(" .. table.concat(args, ", ") .. ")")
      emit(ctx, u .. " = " .. u .. " or " .. num_lit(F))
      emit(ctx, w .. " = " .. w .. " or " .. num_lit(F))
      for _, v in ipairs({ u, w }) do
        ctx.nums[#ctx.nums + 1] = v; ctx.locals[#ctx.locals + 1] = v
        observe(ctx, v)
      end
    end
  end
  if F.counted and F.varargs and ctx.va then
    -- v1's values (their count varies by path) where the count shows
    t[#t + 1] = function()
      local args = {}
      for i = 1, R(0, 4) do args[i] = chance(0.15) and "nil" or gen_num(ctx, 0) end
      local call = pick({ "v1", "w1" }) .. "(" .. table.concat(args, ", ") .. ")"
      local x = newname(ctx, "x")
      local k = R(5)
      if k == 1 then
        local tv = newname(ctx, "t")
        emit(ctx, "local " .. tv .. " = {" .. (chance(0.3) and (gen_num(ctx, 0) .. ", ") or "") .. call .. "}")
        emit(ctx, "local " .. x .. " = #" .. tv .. " + (" .. tv .. "[1] or " .. num_lit(F) .. ")")
      elseif k == 2 then
        emit(ctx, "local " .. x .. " = select('#', " .. call .. ")")
      elseif k == 3 then   -- (raises for a nil among them, both ways)
        emit(ctx, "local " .. x .. " = math." .. pick({ "max", "min" }) .. "(" .. num_lit(F) .. ", " .. call .. ")")
      elseif k == 4 then
        emit(ctx, "local " .. x .. " = #string.format(" .. string.format("%q", string.rep("%s ", R(0, 3))) ..
             ", " .. call .. ")")
      else
        emit(ctx, "local " .. x .. " = select('#', pcall(" .. pick({ "v1", "w1" }) ..
             (#args > 0 and ", " or "") .. table.concat(args, ", ") .. "))")
      end
      ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
      observe(ctx, x)
    end
  end
  if F.mixed then
    -- a number on one path, a boolean or nil on another
    t[#t + 1] = function()
      local m, x = newname(ctx, "m"), newname(ctx, "x")
      local other = pick({ gen_bool(ctx, 0), "nil", "false", "true" })
      emit(ctx, "local " .. m .. " = " .. gen_bool(ctx, 0) .. " and " .. gen_num(ctx, 0) .. " or " .. other)
      if chance(0.3) then emit(ctx, "if " .. gen_bool(ctx, 0) .. " then " .. m .. " = " .. pick({ "true", "false", "nil" }) .. " end") end
      local k = R(4)
      if k == 1 then emit(ctx, "local " .. x .. " = " .. m .. " and 1 or 2")
      elseif k == 2 then emit(ctx, "local " .. x .. " = (" .. m .. " == true) and 3 or ((" .. m .. " == " .. num_lit(F) .. ") and 4 or 5)")
      elseif k == 3 then emit(ctx, "local " .. x .. " = 0; if " .. m .. " then " .. x .. " = " .. m .. " == true and 7 or " .. m .. " end")
      else emit(ctx, "local " .. x .. " = " .. m .. " + " .. gen_num(ctx, 0)) end   -- raises unless a number
      ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
      observe(ctx, x)
    end
  end
  if F.refuse3 then
    -- constructs compiled since branch refuse3 (issue 29), each made a number
    t[#t + 1] = function()
      local x = newname(ctx, "x")
      local k = R(5)
      if k == 1 and #ctx.arrays1 > 0 then   -- arrays compared: identity
        local a, b = pick(ctx.arrays1).name, pick(ctx.arrays1).name
        local tv = newname(ctx, "t")
        emit(ctx, "local " .. tv .. " = {" .. a .. "}")
        emit(ctx, "local " .. x .. " = ((" .. a .. " == " .. b .. ") and 1 or 0) + ((" .. tv .. "[1] ~= " .. b ..
             ") and 2 or 0)")
      elseif k == 2 then   -- an array of records made here, kept in a table
        local q, tv = newname(ctx, "q"), newname(ctx, "t")
        emit(ctx, "local " .. q .. " = kjit.zeros(" .. R(3) .. ", RS)")
        emit(ctx, q .. "[1].x = " .. gen_num(ctx, 0))
        emit(ctx, "local " .. tv .. " = {q = " .. q .. ", " .. q .. "[1]}")
        emit(ctx, "local " .. x .. " = " .. tv .. ".q[1].x + #" .. tv .. ".q + " .. tv .. "[1].k + ((" .. tv ..
             ".q == " .. q .. ") and 1 or 0)")
      elseif k == 3 then   -- a value read from a table .. a dtype object
        local tv = newname(ctx, "t")
        local v = pick({ "\"ab\"", gen_num(ctx, 0), "nil",
                         "setmetatable({}, {__concat = function(a, b) return \"c\" .. tostring(b) end})" })
        emit(ctx, "local " .. tv .. " = {x = " .. v .. "}")
        emit(ctx, "local " .. x .. " = #(" .. tv .. ".x .. kjit." .. pick({ "f32", "i64", "u8", "bool" }) .. ")")
      elseif k == 4 then   -- a dtype object as an argument
        emit(ctx, "local " .. x .. " = dz(kjit." .. pick({ "f32", "i32", "u8", "f64" }) .. ", " .. R(0, 4) .. ")")
      else   -- an __index chain
        local tv = newname(ctx, "t")
        local ix = pick({ "5", "{k = " .. num_lit(F) .. "}", "setmetatable({}, {__index = false})", "{}" })
        emit(ctx, "local " .. tv .. " = setmetatable({}, {__index = " .. ix .. "})")
        emit(ctx, "local " .. x .. " = (" .. tv .. ".k or 0) + " .. gen_num(ctx, 0))
      end
      ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
      observe(ctx, x)
    end
  end
  if F.lifted then
    -- constructs compiled since branch refuse (issue 29), each made a number
    t[#t + 1] = function()
      local x = newname(ctx, "x")
      local k = R(F.varargs and ctx.va and 6 or 4)
      if k == 1 then   -- a string on one path, a number on another
        local s = newname(ctx, "s")
        emit(ctx, "local " .. s .. " = " .. gen_bool(ctx, 0) .. " and " ..
             pick({ "\"ab\"", "\"12\"", "\"0x10\"", "\" 3.5 \"" }) .. " or " .. gen_num(ctx, 0))
        local u = R(3)
        if u == 1 then emit(ctx, "local " .. x .. " = #(" .. s .. " .. \"\")")
        elseif u == 2 then emit(ctx, "local " .. x .. " = " .. s .. " + " .. gen_num(ctx, 0))   -- "ab" raises
        else emit(ctx, "local " .. x .. " = (type(" .. s .. ") == \"string\") and #" .. s .. " or " .. s) end
      elseif k == 2 then   -- a number-or-nil .. a table with __concat
        local z, c = newname(ctx, "z"), newname(ctx, "t")
        emit(ctx, "local " .. z .. " = " .. gen_bool(ctx, 0) .. " and " .. gen_num(ctx, 0) .. " or nil")
        emit(ctx, "local " .. c .. " = setmetatable({}, {__concat = function(a, b) return \"c\" .. tostring(a) .. tostring(b) end})")
        emit(ctx, "local " .. x .. " = #(" .. (chance(0.5) and (z .. " .. " .. c) or (c .. " .. " .. z)) .. ")")
      elseif k == 3 then   -- dtype objects
        local d = pick({ "f32", "i32", "u8", "f64", "bool" })
        local u = R(3)
        if u == 1 then emit(ctx, "local " .. x .. " = #(tostring(kjit." .. d .. ") .. \"[\" .. kjit." .. d .. " .. " .. gen_num(ctx, 0) .. ")")
        elseif u == 2 then emit(ctx, "local " .. x .. " = (kjit." .. d .. " == kjit.f32) and 1 or 2")
        else emit(ctx, "local " .. x .. " = kjit." .. pick({ "i32", "u8", "f64" }) .. "(" .. pick({ "\"42\"", "\"300\"", "\"2.5\"", "\"1e3\"" }) .. ")") end
      elseif k == 4 then   -- a constructor of many items
        local tv = newname(ctx, "t")
        local items = {}
        for i = 1, R(45, 60) do items[i] = tostring(R(9)) end
        emit(ctx, "local " .. tv .. " = {" .. table.concat(items, ", ") .. "}")
        emit(ctx, "local " .. x .. " = #" .. tv .. " + " .. tv .. "[" .. R(#items) .. "]")
      else
        local args = {}
        for i = 1, R(0, 4) do args[i] = chance(0.15) and "nil" or gen_num(ctx, 0) end
        local call = pick({ "v1", "w1" }) .. "(" .. table.concat(args, ", ") .. ")"
        if k == 5 then   -- fields before the values
          local tv = newname(ctx, "t")
          emit(ctx, "local " .. tv .. " = {k = " .. gen_num(ctx, 0) .. ", " .. (chance(0.3) and (gen_num(ctx, 0) .. ", ") or "") .. call .. "}")
          emit(ctx, "local " .. x .. " = #" .. tv .. " + " .. tv .. ".k + (" .. tv .. "[2] or " .. num_lit(F) .. ")")
        else   -- a local vararg literal given them
          local h = newname(ctx, "h")
          emit(ctx, "local " .. h .. " = function(...) local a = ... return select('#', ...) + (a or 0) end")
          emit(ctx, "local " .. x .. " = " .. h .. "(" .. call .. ")")
        end
      end
      ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
      observe(ctx, x)
    end
  end
  if ctx.allocs and #ctx.allocs > 0 then
    t[#t + 1] = function()
      local a = pick(ctx.allocs)
      local v = (a.dtype == "bool") and gen_bool(ctx, d) or gen_num(ctx, d)
      if chance(0.5) then emit(ctx, a.name .. ":fill(" .. v .. ")")
      else emit(ctx, "local " .. newname(ctx, "_") .. " = #" .. a.name .. ":fill(" .. v .. ")") end
    end
    if ctx.matrix and ctx.rowsrc then
      t[#t + 1] = function()
        local m = ctx.matrix
        local i = chance(0.9) and tostring(R(m.rows)) or tostring(m.rows + 1)
        emit(ctx, m.name .. "[" .. i .. "] = " .. ctx.rowsrc)
      end
    end
  end
  if F.libcall then
    t[#t + 1] = function()
      local x = gen_num(ctx, 1)
      local msg
      local k = R(4)
      if k == 1 then msg = "\"bad \" .. " .. x
      elseif k == 2 then msg = "string.format(\"v=" .. pick(FORMATS) .. " at %d\", " .. x .. ", " .. tostring(R(9)) .. ")"
      elseif k == 3 then msg = "\"t=\" .. tostring(" .. x .. ")"
      else msg = "\"n=\" .. " .. x .. " .. \" m=\" .. " .. gen_num(ctx, 0) end
      if chance(0.5) then
        emit(ctx, "if " .. gen_bool(ctx, d) .. " then error(" .. msg .. (chance(0.3) and ", 0" or "") .. ") end")
      else
        emit(ctx, "assert(" .. gen_bool(ctx, d) .. ", " .. msg .. ")")
      end
    end
    t[#t + 1] = function()
      local v = newname(ctx, "x")
      local k = R(3)
      emit(ctx, "local " .. v .. " = " .. (k == 1 and "math.random()" or k == 2 and "math.random(1, 6)" or "math.random(10)"))
      ctx.nums[#ctx.nums + 1] = v; ctx.locals[#ctx.locals + 1] = v
      observe(ctx, v)
    end
  end
  if F.strings then
    t[#t + 1] = function()
      -- a string value from numbers, then a number from it (math.floor
      -- keeps the observed locals numeric)
      local function str(k)
        local x = gen_num(ctx, 0)
        if k == 1 then return "\"k\" .. " .. x
        elseif k == 2 then return "string.format(\"" .. pick(FORMATS) .. "\", " .. x .. ")"
        elseif k == 3 then return "tostring(" .. x .. ")"
        elseif k == 4 then return "string.rep(\"ab\", " .. R(0, 3) .. ", \",\")"
        else return "string.char(" .. (64 + R(26)) .. ", " .. (96 + R(26)) .. ")" end
      end
      local sv = newname(ctx, "s")
      local e = str(R(5))
      local m = R(4)
      if m == 1 then e = "(" .. e .. "):upper()"
      elseif m == 2 then e = "(" .. e .. "):sub(" .. R(-3, 3) .. ", " .. R(-2, 4) .. ")"
      elseif m == 3 then e = e .. " .. " .. str(R(5)) end
      emit(ctx, "local " .. sv .. " = " .. e)
      local v = newname(ctx, "x")
      local lit = pick({ "\"k1\"", "\"\"", "\"ab\"", "\"K\"", "\"1.5\"" })
      emit(ctx, "local " .. v .. " = math.floor(#" .. sv .. " + (" .. sv .. " " .. pick({ "<", "<=", "==", "~=" }) ..
                " " .. lit .. " and 1 or 0) + (string.byte(" .. sv .. ", " .. R(-2, 3) .. ") or 0))")
      ctx.nums[#ctx.nums + 1] = v; ctx.locals[#ctx.locals + 1] = v
      observe(ctx, v)
    end
  end
  if F.pairs then
    t[#t + 1] = function()
      -- a table of numbers traversed into a number (the order is the
      -- table's own: the same interpreted and compiled)
      local tv, x = newname(ctx, "t"), newname(ctx, "x")
      local items = {}
      for _ = 1, R(0, 3) do items[#items + 1] = gen_num(ctx, 0) end
      -- (a string key always: a constructor of numbers only is a shape)
      items[#items + 1] = "k" .. R(3) .. " = " .. gen_num(ctx, 0)
      if chance(0.3) then items[#items + 1] = "[" .. R(6) .. "] = " .. gen_num(ctx, 0) end
      emit(ctx, "local " .. tv .. " = { " .. table.concat(items, ", ") .. " }")
      emit(ctx, "local " .. x .. " = 0")
      local k = R(4)
      local body = x .. " = " .. x .. " + v * " .. pick({ "1", "0.5", "2" }) ..
                   " + (math.type(k) and k or #k)"
      if k == 1 then emit(ctx, "for k, v in pairs(" .. tv .. ") do " .. body .. " end")
      elseif k == 2 then emit(ctx, "for k, v in next, " .. tv .. " do " .. body .. " end")
      elseif k == 3 then emit(ctx, "for k, v in ipairs(" .. tv .. ") do " .. body .. " end")
      else
        emit(ctx, "do local k, v = next(" .. tv .. ") while k ~= nil do " .. body ..
                  "; k, v = next(" .. tv .. ", k) end end")
      end
      ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
      observe(ctx, x)
    end
  end
  if F.closures then
    t[#t + 1] = function()
      -- a literal capturing a fresh local, stored in a table, called through it
      local cv, ov, x = newname(ctx, "c"), newname(ctx, "o"), newname(ctx, "x")
      emit(ctx, "local " .. cv .. " = " .. gen_num(ctx, 0))
      local op = pick({ "+", "-", "*" })
      emit(ctx, "local " .. ov .. " = { f = function(a) return a " .. op .. " " .. cv .. " end }")
      if chance(0.5) then
        emit(ctx, "local " .. x .. " = " .. ov .. ".f(" .. gen_num(ctx, 0) .. ")")
      else   -- pcall of a literal that may raise: false and the message, or true and a number
        local ok = newname(ctx, "ok")
        emit(ctx, "local " .. ok .. ", " .. x .. " = pcall(function(a) if a " .. pick({ "<", ">" }) ..
                  " " .. R(-3, 3) .. " then error(\"neg\") end return " .. ov .. ".f(a) end, " ..
                  gen_num(ctx, 0) .. ")")
        emit(ctx, x .. " = " .. ok .. " and " .. x .. " or #" .. x)
      end
      ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
      observe(ctx, x)
    end
    t[#t + 1] = function()
      -- a captured local assigned after the literal is made: one variable
      -- shared by the function and the closure (compiled through a cell)
      local cv, gv, x = newname(ctx, "c"), newname(ctx, "g"), newname(ctx, "x")
      emit(ctx, "local " .. cv .. " = " .. gen_num(ctx, 0))
      local op = pick({ "+", "-", "*" })
      local k = R(4)
      if k == 4 then   -- declared just before a loop whose closure assigns it each turn
        local kv = newname(ctx, "k")
        emit(ctx, "local " .. x .. ", " .. kv .. " = 0, 0")
        emit(ctx, "local " .. cv .. "2 = " .. cv)
        emit(ctx, "repeat")
        emit(ctx, "  local function " .. gv .. "(a) " .. cv .. "2 = " .. cv .. "2 " .. op .. " a; return " .. cv .. "2 end")
        emit(ctx, "  " .. x .. " = " .. x .. " + " .. gv .. "(" .. gen_num(ctx, 0) .. "); " .. kv .. " = " .. kv .. " + 1")
        emit(ctx, "until " .. kv .. " >= " .. R(3))
        emit(ctx, x .. " = " .. x .. " + " .. cv .. "2")
        ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
        observe(ctx, x)
        return
      end
      if k == 1 then   -- the closure assigns it
        emit(ctx, "local function " .. gv .. "(a) " .. cv .. " = " .. cv .. " " .. op .. " a; return " .. cv .. " end")
      elseif k == 2 then   -- the closure only reads it
        emit(ctx, "local function " .. gv .. "(a) return " .. cv .. " " .. op .. " a end")
      else   -- an escaping closure, stored in a table and called through it
        local ov = newname(ctx, "o")
        emit(ctx, "local " .. ov .. " = {}")
        emit(ctx, ov .. ".f = function(a) " .. cv .. " = " .. cv .. " " .. op .. " a; return " .. cv .. " end")
        emit(ctx, "local function " .. gv .. "(a) return " .. ov .. ".f(a) end")
      end
      emit(ctx, "local " .. x .. " = " .. gv .. "(" .. gen_num(ctx, 0) .. ")")
      emit(ctx, cv .. " = " .. pick({ cv .. " + 1", cv .. " * 0.5", gen_num(ctx, 0), "-" .. cv }))
      emit(ctx, x .. " = " .. x .. " + " .. gv .. "(" .. pick({ "1", "2", "0.5", x }) .. ")")
      ctx.nums[#ctx.nums + 1] = cv; ctx.locals[#ctx.locals + 1] = cv
      ctx.nums[#ctx.nums + 1] = x; ctx.locals[#ctx.locals + 1] = x
      observe(ctx, cv)
      observe(ctx, x)
    end
  end
  luaval_stmts(ctx, d, t)
  if #t == 0 then return false end
  pick(t)()
  return true
end

-- One statement of the table families, if any is on and fits here.
local function tab_stmt(ctx, d)
  local t = {}
  table_stmt(ctx, d, t)
  if #t == 0 then return false end
  pick(t)()
  return true
end

-- (raiseop) an expression that raises whenever it runs: the typer and the
-- code generator must agree that what depends on it never runs (CI's
-- fuzz_compile crash: a for loop bounded by `B[... % #f64B + 1]` with f64B
-- a nil global). NG is never defined; zn is a local that is always nil.
local function raising(ctx)
  local arrs = readable_arrays(ctx)
  local t = { "(#NG)", "(zn + 1)", "(-zn)", "math.floor(zn)", "(" .. leaf_num(ctx, 0) .. " < {})", "(zn // 1)" }
  if #arrs > 0 then
    local a = pick(arrs).name
    t[#t + 1] = a .. "[#NG]"
    t[#t + 1] = a .. "[#NG % #" .. a .. " + 1]"
    t[#t + 1] = a .. "[zn + 1]"
    t[#t + 1] = "(" .. a .. "[#NG] + 0.5)"
  end
  return pick(t)
end

-- (raiseop) a statement with such an operand in one position, reached on
-- some runs (behind a random test) or some turns only
local function raise_stmt(ctx, d)
  local F = ctx.F
  local X = raising(ctx)
  local c = gen_bool(ctx, 0)
  local k = R(14)
  local function body(var)
    ctx.ind = ctx.ind .. "  "
    loop_body(ctx, math.max(d, 1), var, false)
    ctx.ind = ctx.ind:sub(3)
  end
  if k == 1 then   -- a bound of a numeric for loop (start, limit or step)
    local v = newname(ctx, "i")
    local b = { "1", pick({ "n", "3", "(-2)" }), nil }
    local at = R(3)
    b[at] = X
    if at ~= 1 and chance(0.3) then b[1] = "0.5" end   -- a float loop
    emit(ctx, "if " .. c .. " then")
    emit(ctx, "  for " .. v .. " = " .. b[1] .. ", " .. b[2] .. (b[3] and (", " .. b[3]) or "") .. " do")
    body(v)
    emit(ctx, "  end")
    emit(ctx, "end")
  elseif k == 2 and F.prange and #ctx.arrays1 > 0 then   -- a kjit.prange bound, in a loop
    local j, v = newname(ctx, "i"), newname(ctx, "i")
    local a = pick(ctx.arrays1).name
    emit(ctx, "for " .. j .. " = 1, " .. pick({ "n", "2", "#" .. a }) .. " do")
    guard(ctx)
    emit(ctx, "  if " .. c .. " then")
    emit(ctx, "    for " .. v .. " in kjit.prange(" .. (chance(0.5) and ("1, " .. X) or (X .. ", 3")) .. ") do")
    emit(ctx, "      " .. a .. "[" .. v .. " % #" .. a .. " + 1] = " .. j)
    emit(ctx, "    end")
    emit(ctx, "  end")
    emit(ctx, "end")
  elseif k == 3 then   -- a while test, after some turns
    emit(ctx, "while " .. ctx.cnt .. " < " .. R(2, 8) .. " or " .. X .. " " .. pick(CMPOPS) .. " 0 do")
    loop_body(ctx, math.max(d, 1), nil, false)
    emit(ctx, "end")
  elseif k == 4 then   -- repeat ... until
    emit(ctx, "if " .. c .. " then")
    emit(ctx, "  repeat")
    emit(ctx, "    " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1")
    emit(ctx, "  until " .. ctx.cnt .. " > " .. R(2, 8) .. " and " .. X .. " " .. pick(CMPOPS) .. " 1")
    emit(ctx, "end")
  elseif k == 5 then   -- an if condition, a loop behind it
    local v = newname(ctx, "i")
    emit(ctx, "if " .. c .. " and " .. X .. " " .. pick(CMPOPS) .. " 0 then")
    emit(ctx, "  for " .. v .. " = 1, " .. pick({ "n", "3" }) .. " do")
    body(v)
    emit(ctx, "  end")
    emit(ctx, "end")
  elseif k == 6 then   -- a generic for's iterator
    local kv = newname(ctx, "k")
    emit(ctx, "if " .. c .. " then")
    emit(ctx, "  for " .. kv .. " in " .. pick({ "ipairs(" .. X .. ")", "pairs({ " .. X .. " })",
                                                "ipairs({ 1, " .. X .. " })" }) .. " do")
    body(kv)
    emit(ctx, "  end")
    emit(ctx, "end")
  elseif k == 7 and #ctx.arrays1 > 0 then   -- a store's key, or its value
    local a = pick(ctx.arrays1)
    local st = chance(0.5) and (a.name .. "[" .. X .. "] = " .. gen_num(ctx, 0)) or
               (a.name .. "[" .. gen_index(ctx, a, 0) .. "] = " .. X)
    emit(ctx, "if " .. c .. " then " .. st .. " end")
  elseif k == 8 then   -- a table's key
    local tv, x = newname(ctx, "t"), newname(ctx, "x")
    emit(ctx, "local " .. tv .. " = { 1, 2, 3 }")
    emit(ctx, "local " .. x .. " = 0")
    emit(ctx, "if " .. c .. " then " .. x .. " = " .. tv .. "[" .. X .. "] or 1 end")
    number_local(ctx, x)
  elseif k == 9 then   -- an argument of a call
    local x = newname(ctx, "x")
    local hs = callable(ctx)
    local call = "math.max(1, " .. X .. ")"
    if #hs > 0 and chance(0.6) then
      local h = pick(hs)
      local args = {}
      for i = 1, #h.params do args[i] = h.params[i] == "arr" and "nil" or gen_num(ctx, 0) end
      local ok = true
      for i = 1, #h.params do if h.params[i] == "arr" then ok = false end end
      if ok and #args > 0 then
        args[R(#args)] = X
        call = h.name .. "(" .. table.concat(args, ", ") .. ")"
      end
    end
    emit(ctx, "local " .. x .. " = 0")
    emit(ctx, "if " .. c .. " then " .. x .. " = " .. call .. " end")
    number_local(ctx, x)
  elseif k == 10 and ctx.nret > 0 then   -- a returned value
    local vals = ret_values(ctx, ctx.nret)
    vals[R(#vals)] = X
    emit(ctx, "if " .. c .. " then return " .. table.concat(vals, ", ") .. " end")
  elseif k == 11 then   -- one arm of a choice
    local x = newname(ctx, "x")
    emit(ctx, "local " .. x .. " = " .. c .. " and " .. X .. " or " .. gen_num(ctx, 0))
    number_local(ctx, x)
  elseif k == 12 then   -- a bound of a nest's inner loop, on some turns
    local i, j = newname(ctx, "i"), newname(ctx, "i")
    emit(ctx, "for " .. i .. " = 1, " .. pick({ "n", "3", "4" }) .. " do")
    guard(ctx)
    emit(ctx, "  if " .. i .. " > " .. R(0, 3) .. " then")
    emit(ctx, "    for " .. j .. " = " .. (chance(0.5) and ("1, " .. X) or (X .. ", 2")) .. " do")
    emit(ctx, "      " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1; if " .. ctx.cnt .. " > " .. LIMIT .. " then break end")
    emit(ctx, "    end")
    emit(ctx, "  end")
    emit(ctx, "end")
  elseif k == 13 then   -- a while loop counted up to it
    local w = newname(ctx, "w")
    emit(ctx, "local " .. w .. " = 0")
    emit(ctx, "if " .. c .. " then")
    emit(ctx, "  while " .. w .. " < " .. X .. " do")
    emit(ctx, "    " .. w .. " = " .. w .. " + 1")
    emit(ctx, "    " .. ctx.cnt .. " = " .. ctx.cnt .. " + 1; if " .. ctx.cnt .. " > " .. LIMIT .. " then break end")
    emit(ctx, "  end")
    emit(ctx, "end")
    number_local(ctx, w)
  else   -- the operand alone, behind a test
    emit(ctx, "if " .. c .. " then local " .. newname(ctx, "_") .. " = " .. X .. " end")
  end
end

local function gen_stmt(ctx, d)
  local F = ctx.F
  if F.raiseop and chance(0.02) then raise_stmt(ctx, R(2)) return end
  if chance(0.15) and ext_stmt(ctx, R(3)) then return end
  if chance(0.2) and tab_stmt(ctx, R(3)) then return end
  local r = R()
  local ed = R(3)
  local inloop = #ctx.loops > 0
  if r < 0.14 then
    local v = newname(ctx, "x")
    -- a local holding a constant a quarter of the time (constant folding)
    emit(ctx, "local " .. v .. " = " .. (chance(0.25) and num_lit(F) or gen_num(ctx, ed)))
    observe(ctx, v)
    ctx.nums[#ctx.nums + 1] = v; ctx.locals[#ctx.locals + 1] = v
  elseif r < 0.17 then
    local v = newname(ctx, "f")
    emit(ctx, "local " .. v .. " = " .. gen_bool(ctx, ed))
    ctx.bools[#ctx.bools + 1] = v
  elseif r < 0.27 and #ctx.locals > 0 and F.typechange then
    local v = pick(ctx.locals)
    if chance(0.1) then v = pick(ctx.params) end
    if v == "n" and ctx.main then v = pick(ctx.locals) end   -- n stays finite (rec_call)
    local rhs = gen_num(ctx, ed)
    if chance(0.3) then rhs = pick({ "0.5", "1", "(-0.0)", "math.huge", v .. " + 0.5", v .. " // 1", "math.maxinteger" }) end
    emit(ctx, v .. " = " .. rhs)
  elseif r < 0.30 and #ctx.locals > 1 then
    local x, y = pick(ctx.locals), pick(ctx.locals)
    if x ~= y then emit(ctx, x .. ", " .. y .. " = " .. y .. ", " .. x)
    else emit(ctx, x .. " = " .. gen_num(ctx, ed)) end
  elseif r < 0.40 and F.arrays and #ctx.arrays1 > 0 then
    store_stmt(ctx, ed)
  elseif r < 0.42 and ctx.matrix then
    local m = ctx.matrix
    local i = chance(0.85) and tostring(R(m.rows)) or tostring(m.rows + 1)
    if #ctx.loopvars > 0 and chance(0.5) then i = "(" .. pick(ctx.loopvars) .. " % " .. m.rows .. " + 1)" end
    emit(ctx, m.name .. "[" .. i .. "][" .. R(m.cols + (chance(0.1) and 1 or 0)) .. "] = " .. gen_num(ctx, ed))
  elseif r < 0.50 and d > 0 then
    local n = chance(0.3) and R(2) + 1 or 1
    for i = 1, n do
      emit(ctx, (i == 1 and "if " or "elseif ") .. gen_bool(ctx, ed) .. " then")
      in_block(ctx, d - 1, R(3))
    end
    if chance(0.4) then emit(ctx, "else"); in_block(ctx, d - 1, R(3)) end
    emit(ctx, "end")
  elseif r < 0.56 and d > 0 and (F.numfor or F.fltfor) then
    local float = F.fltfor and (not F.numfor or chance(0.35))
    for_stmt(ctx, d, float)
  elseif r < 0.60 and d > 0 and F["while"] then
    emit(ctx, "while " .. gen_bool(ctx, ed) .. " do")
    loop_body(ctx, d, nil, true)
    emit(ctx, "end")
  elseif r < 0.63 and d > 0 and F["repeat"] then
    -- no continue label: `until` may see the body's locals
    emit(ctx, "repeat")
    ctx.loops[#ctx.loops + 1] = {}
    local sc = scope(ctx)
    local ind = ctx.ind
    guard(ctx)
    ctx.ind = ind .. "  "
    gen_block(ctx, d - 1, R(4))
    ctx.ind = ind
    emit(ctx, "until " .. gen_bool(ctx, ed))
    unscope(ctx, sc)
    ctx.loops[#ctx.loops] = nil
  elseif r < 0.66 and d > 0 and F.whiletrue then
    emit(ctx, "while true do")
    ctx.loops[#ctx.loops + 1] = {}
    local ind = ctx.ind
    guard(ctx)
    ctx.ind = ind .. "  "
    local sc = scope(ctx)
    gen_block(ctx, d - 1, R(2))
    emit(ctx, "if " .. gen_bool(ctx, ed) .. " then break end")
    gen_block(ctx, d - 1, R(2))
    unscope(ctx, sc)
    ctx.ind = ind
    ctx.loops[#ctx.loops] = nil
    emit(ctx, "end")
  elseif r < 0.69 and d > 0 and F.gotoloop then
    local l = newname(ctx, "top")
    emit(ctx, "do")
    local ind = ctx.ind
    ctx.ind = ind .. "  "
    emit(ctx, "::" .. l .. "::")
    emit(ctx, ctx.cnt .. " = " .. ctx.cnt .. " + 1")
    local sc = scope(ctx)
    gen_block(ctx, d - 1, R(3))
    emit(ctx, "if " .. ctx.cnt .. " <= " .. LIMIT .. " and " .. gen_bool(ctx, ed) .. " then goto " .. l .. " end")
    unscope(ctx, sc)
    ctx.ind = ind
    emit(ctx, "end")
  elseif r < 0.74 and inloop then
    local targets = {}
    for _, l in ipairs(ctx.loops) do if l.label then targets[#targets + 1] = l end end
    if #targets > 0 and chance(0.5) then
      local l = targets[#targets]   -- the innermost loop with a label (goto cannot leave a function)
      l.used = true
      emit(ctx, "if " .. gen_bool(ctx, ed) .. " then goto " .. l.label .. " end")
    else
      emit(ctx, "if " .. gen_bool(ctx, ed) .. " then break end")
    end
  elseif r < 0.78 and F.earlyret and d > 0 then
    emit(ctx, "if " .. gen_bool(ctx, ed) .. " then return" ..
      (ctx.nret > 0 and (" " .. table.concat(ret_values(ctx, ctx.nret), ", ")) or "") .. " end")
  elseif r < 0.82 and F.multret and #callable(ctx) > 0 then
    local h = pick(callable(ctx))
    local names = {}
    for i = 1, math.max(1, h.nret - (chance(0.3) and 1 or 0)) do names[i] = newname(ctx, "u") end
    emit(ctx, "local " .. table.concat(names, ", ") .. " = " .. call_expr(ctx, ed, h))
    for _, v in ipairs(names) do ctx.nums[#ctx.nums + 1] = v; ctx.locals[#ctx.locals + 1] = v end
  elseif r < 0.86 and F.nilable then
    local v = newname(ctx, "z")
    if chance(0.5) then
      emit(ctx, "local " .. v)
      emit(ctx, "if " .. gen_bool(ctx, ed) .. " then " .. v .. " = " .. gen_num(ctx, ed) .. " end")
    else
      emit(ctx, "local " .. v .. " = math.tointeger(" .. gen_num(ctx, ed) .. ")")
    end
    ctx.nilables[#ctx.nilables + 1] = v
    -- used as a number (an error where it is nil, in both runs)
    if chance(0.5) then ctx.nums[#ctx.nums + 1] = v end
  elseif r < 0.88 and F.nilstatic then
    -- a local that is always nil, used as a number on a path that may not run
    local v = newname(ctx, "z")
    emit(ctx, "local " .. v)
    emit(ctx, "if " .. gen_bool(ctx, ed) .. " then " .. pick(ctx.locals[1] and ctx.locals or ctx.params) ..
      " = " .. v .. " + " .. gen_num(ctx, 1) .. " end")
  elseif r < 0.91 and F.errors then
    if chance(0.5) then
      emit(ctx, "if " .. gen_bool(ctx, ed) .. " then error(\"" .. pick({ "boom", "bad value" }) .. "\"" ..
        (chance(0.2) and ", 0" or "") .. ") end")
    else
      emit(ctx, "assert(" .. gen_bool(ctx, ed) .. (chance(0.7) and ", \"assertion\"" or "") .. ")")
    end
  elseif r < 0.93 and F.callee and #callable(ctx) > 0 then
    emit(ctx, "local " .. newname(ctx, "_") .. " = " .. call_expr(ctx, ed, pick(callable(ctx))))
  else
    local v = newname(ctx, "x")
    emit(ctx, "local " .. v .. " = " .. gen_num(ctx, ed))
    ctx.nums[#ctx.nums + 1] = v; ctx.locals[#ctx.locals + 1] = v
  end
end

gen_block = function(ctx, d, n)
  local sc = scope(ctx)
  for _ = 1, n do gen_stmt(ctx, d) end
  unscope(ctx, sc)
end

---------------------------------------------------------------------------
-- Functions and programs
---------------------------------------------------------------------------
local function new_ctx(prog, F, params, nret)
  local ctx = {
    F = F, out = prog.lines, ind = "  ", ids = prog.ids, nret = nret, cnt = "cnt",
    nums = {}, bools = {}, locals = {}, loopvars = {}, nilables = {}, loops = {}, rvars = {}, objs = {}, vobjs = {},
    strs = {},
    params = {}, consts = prog.consts, ktable = prog.ktable, callees = prog.callees,
    arrays = {}, arrays1 = {}, rec = nil, fv = prog.fv,
  }
  for _, p in ipairs(params) do
    if type(p) == "table" and p.kind == "luatab" then ctx.tab = p
    elseif type(p) == "table" and p.kind == "bool" then ctx.barr = p
    elseif type(p) == "table" and p.kind == "rec" then ctx.parr = p
    elseif type(p) == "table" then
      ctx.arrays[#ctx.arrays + 1] = p
      if p.ndim == 1 then ctx.arrays1[#ctx.arrays1 + 1] = p else ctx.matrix = p end
    else
      ctx.nums[#ctx.nums + 1] = p; ctx.params[#ctx.params + 1] = p
    end
  end
  return ctx
end

local function param_names(params)
  local t = {}
  for i, p in ipairs(params) do t[i] = type(p) == "table" and p.name or p end
  return table.concat(t, ", ")
end

local function gen_callee(prog, F, k)
  local name = "h" .. k
  local np = R(3)
  local params = {}
  for i = 1, np do params[i] = "p" .. i end
  local arrp
  if F.arrays and #prog.arrays1 > 0 and chance(0.3) then
    local a = prog.arrays1[1]
    arrp = { name = "P", dtype = a.dtype, size = a.size, ndim = 1 }
    params[#params + 1] = arrp
  end
  local r = R()
  local nret = r < 0.5 and 1 or (r < 0.8 and 2 or (r < 0.93 and 3 or 0))
  local lines = prog.lines
  lines[#lines + 1] = "local function " .. name .. "(" .. param_names(params) .. ")"
  local ctx = new_ctx(prog, F, params, nret)
  lines[#lines + 1] = "  local cnt = 0"
  if F.raiseop then lines[#lines + 1] = "  local zn" end
  gen_block(ctx, 1, R(3))
  if nret > 0 then lines[#lines + 1] = "  return " .. table.concat(ret_values(ctx, nret), ", ") end
  lines[#lines + 1] = "end"
  local h = { name = name, params = {}, nret = nret, arrdtype = arrp and arrp.dtype }
  for i = 1, np do h.params[i] = "num" end
  if arrp then h.params[#h.params + 1] = "arr" end
  prog.callees[#prog.callees + 1] = h
end

-- The varargs family: v1(...) reads its values every way (their count, a
-- loop of select(i, ...), {...} and its length, the first two) and
-- returns a different number of values by path; w1(...) passes its values
-- on with one more in front. Numbers and nil reach them (ext_stmt).
local function gen_varargs(prog, F)
  local lines = prog.lines
  local ctx = new_ctx(prog, F, { "q1", "q2", "s" }, 1)
  local lit = function() return num_lit(F) end
  lines[#lines + 1] = "local function v1(...)"
  lines[#lines + 1] = "  local cnt = 0"
  if F.raiseop then lines[#lines + 1] = "  local zn" end
  lines[#lines + 1] = "  local q1, q2 = ..."
  lines[#lines + 1] = "  local s = select('#', ...)"
  lines[#lines + 1] = "  for i = 1, select('#', ...) do"
  lines[#lines + 1] = "    cnt = cnt + 1; if cnt > " .. LIMIT .. " then break end"
  lines[#lines + 1] = "    local x = select(i, ...)"
  lines[#lines + 1] = "    s = s + (x or " .. lit() .. ") * " .. lit()
  lines[#lines + 1] = "  end"
  if chance(0.5) then
    lines[#lines + 1] = "  local t = {...}"
    lines[#lines + 1] = "  s = s + #t"
  end
  lines[#lines + 1] = "  if (q1 or 0) > " .. lit() .. " then return s, ... end"
  lines[#lines + 1] = "  if (q2 or 0) < " .. lit() .. " then return end"
  local k = pick({ "1", "2", "-1", "'#'" })
  if chance(0.3) then lines[#lines + 1] = "  return " .. gen_num(ctx, 1) .. ", select(" .. k .. ", ...)"
  else lines[#lines + 1] = "  return select(" .. k .. ", ...)" end
  lines[#lines + 1] = "end"
  lines[#lines + 1] = "local function w1(...)"
  lines[#lines + 1] = "  return v1(" .. lit() .. ", ...)"
  lines[#lines + 1] = "end"
  prog.va = true
end

local function gen_rec(prog, F)
  local lines = prog.lines
  -- expressions inside r1 never call r1 (only the calls below, which go
  -- down the depth d)
  local ctx = new_ctx(prog, F, { "d", "x" }, 1)
  lines[#lines + 1] = "local function r1(d, x)"
  lines[#lines + 1] = "  if d <= 0 then return " .. gen_num(ctx, 1) .. " end"
  local k = R(3)
  if k == 1 then
    lines[#lines + 1] = "  local y = r1(d - 1, " .. gen_num(ctx, 1) .. ")"
    lines[#lines + 1] = "  return " .. "(y " .. pick({ "+", "-", "*" }) .. " " .. gen_num(ctx, 1) .. ")"
  elseif k == 2 then
    lines[#lines + 1] = "  return r1(d - 1, " .. gen_num(ctx, 1) .. ") + r1(d - 2, " .. gen_num(ctx, 1) .. ")"
  else
    lines[#lines + 1] = "  if " .. gen_bool(ctx, 1) .. " then return r1(d - 1, " .. gen_num(ctx, 1) .. ") end"
    lines[#lines + 1] = "  return " .. gen_num(ctx, 1)
  end
  lines[#lines + 1] = "end"
  prog.rec = { name = "r1" }
end

-- alloc: arrays made at the top of the main function (sizes are literals,
-- so that indices can be drawn as for the arguments); one of them or an
-- argument may be returned (ctx.retarr, by every return of the function so
-- that all return the same types).
local ALLOC_DT = { "i8", "u8", "i32", "i64", "u64", "f64", "f64", "bool" }
local function alloc_dtype(F)
  local dt = pick(ALLOC_DT)
  if dt == "bool" and not F.allocbool then dt = "i32" end
  return dt
end
gen_allocs = function(ctx)
  ctx.allocs = {}
  local src = ctx.arrays1
  for k = 1, R(3) do
    local name = "T" .. k
    local a = { name = name, ndim = 1 }
    local r = R()
    local code
    if r < 0.25 then
      a.dtype, a.size = alloc_dtype(ctx.F), R(6) - 1
      code = "kjit.zeros(" .. a.size .. ", \"" .. a.dtype .. "\")"
    elseif r < 0.45 then
      a.dtype, a.size = alloc_dtype(ctx.F), R(5)
      local v = a.dtype == "bool" and pick({ "true", "false" }) or num_lit(ctx.F)
      code = "kjit.full(" .. a.size .. ", " .. v .. ", \"" .. a.dtype .. "\")"
    elseif r < 0.6 then
      a.size = R(6)
      if chance(0.5) then a.dtype = "i64"; code = "kjit.arange(" .. a.size .. ")"
      else a.dtype = "f64"; code = "kjit.arange(0.5, " .. a.size .. ".5)" end
    elseif #src > 0 then
      local s = pick(src)
      a.dtype = s.dtype
      if r < 0.75 then a.size = s.size; code = s.name .. ":copy()"
      elseif r < 0.9 and s.size > 0 then
        local i = R(s.size)
        local j = R(i, s.size)
        a.size = j - i + 1
        code = s.name .. ":slice(" .. i .. (chance(0.7) and (", " .. j) or "") .. ")"
        if not code:find(",") then a.size = s.size - i + 1 end
      else a.size = s.size; code = s.name .. ":copy():reshape({ " .. s.size .. " })" end
    else
      a.dtype, a.size = "f64", 2
      code = "kjit.zeros(2)"
    end
    emit(ctx, "local " .. name .. " = " .. code)
    ctx.allocs[#ctx.allocs + 1] = a
    ctx.arrays[#ctx.arrays + 1] = a
    if a.dtype ~= "bool" then ctx.arrays1[#ctx.arrays1 + 1] = a end
  end
  if ctx.matrix then
    -- a row for m[i] = row: same dtype and extent (interpreted code also
    -- converts dtypes; compiled code needs the same: documented)
    local m = ctx.matrix
    ctx.rowsrc = "T0"
    emit(ctx, "local T0 = kjit.zeros(" .. m.cols .. ", \"" .. m.dtype .. "\")")
    ctx.allocs[#ctx.allocs + 1] = { name = "T0", dtype = m.dtype, size = m.cols, ndim = 1 }
    if chance(0.5) then emit(ctx, "T0:fill(" .. gen_num(ctx, 1) .. ")") end
  end
  if chance(0.6) then ctx.retarr = pick(ctx.allocs).name end
end

-- Initial values of an array of dtype dt (all representable).
local INIT_INT = { 0, 1, -1, 3, 7, 100, -128, 127, 255, 2147483647, -5, 65535 }
local INIT_FLT = { 0.5, -1.0, 2.0, 1e300, -0.0, 0 / 0, 3.0, math.huge, 0.1, 7.0 }
local function array_spec(name, dt, shape)
  local size = 1
  for _, e in ipairs(shape) do size = size * e end
  local vals = {}
  for i = 1, size do
    if dt == "f32" or dt == "f64" then vals[i] = pick(INIT_FLT)
    elseif dt:sub(1, 1) == "u" then vals[i] = math.abs(pick(INIT_INT))
    else vals[i] = pick(INIT_INT) end
  end
  return { array = true, dtype = dt, shape = shape, vals = vals, name = name }
end

local ARG_INT = { 0, 1, -1, 2, 3, 7, -7, 100, 255, 1 << 31, 1 << 53, math.maxinteger,
                  math.mininteger, 5 }
local ARG_FLT = { 0.0, -0.0, 0.5, -0.5, 1.0, 2.5, -3.0, 1e308, -1e308, 2.0 ^ 53, 2.0 ^ 63,
                  0 / 0, math.huge, -math.huge, 0.1, 3.0, 1e-310 }
local ARG_N = { 0, 1, 2, 3, 5, 10, -1, 2.5, 4.0, 0.0, -3, 7 }

-- Edge values, or (a third of the time) random ones with full mantissas:
-- last-bit differences show on those, rarely on the edges.
local function arg_int()
  if chance(0.3) then return R(-1000, 1000) end
  return pick(ARG_INT)
end
local function arg_flt()
  if chance(0.35) then return (R() - 0.5) * 2.0 ^ R(-3, 12) end
  return pick(ARG_FLT)
end

-- Returns { id, src, chunk, cases = { {n=, ...}, ... } } where array
-- arguments are specs { array = true, dtype, shape, vals }.
function G.generate(id, F)
  math.randomseed(id)
  local prog = { lines = {}, ids = { n = 0 }, consts = {}, callees = {}, arrays1 = {} }
  local lines = prog.lines
  -- arrays of the main function
  local arrays = {}
  local names = { "A", "B", "C" }
  if F.arrays then
    for i = 1, R(3) do
      local size = chance(0.08) and 0 or R(6)
      arrays[i] = array_spec(names[i], pick(DTYPES), { size })
      arrays[i].size, arrays[i].ndim = size, 1
      prog.arrays1[i] = arrays[i]
    end
    if F.arr2d and chance(0.3) then
      local rows, cols = R(3), R(3)
      local m = array_spec("M", pick(DTYPES), { rows, cols })
      if m.dtype == "f32" then m.dtype = "f64" end
      m.rows, m.cols, m.ndim, m.size = rows, cols, 2, rows * cols
      arrays[#arrays + 1] = m
    end
  end
  -- kjit as an upvalue, for the constructors of the alloc family
  if F.alloc or F.lifted or F.prange or F.refuse3 then lines[#lines + 1] = "local kjit = require \"kjit\"" end
  if F.refuse3 then   -- (refuse3's family: a record layout, a callee taking a dtype object)
    lines[#lines + 1] = "local RS = kjit.struct{ {\"x\", \"f64\"}, {\"k\", \"i32\"} }"
    lines[#lines + 1] = "local function dz(d, m) local z = kjit.zeros(m + 1, d) z[1] = 1 return #z + #tostring(d) + z[1] end"
  end
  -- upvalues: constants and a constant table
  if F.consts then
    for i = 1, R(3) - 1 do
      local c = "c" .. i
      lines[#lines + 1] = "local " .. c .. " = " .. num_lit(F)
      prog.consts[#prog.consts + 1] = c
    end
  end
  if F.ktable and chance(0.5) then
    local items, fields = {}, {}
    for i = 1, R(4) do items[i] = num_lit(F); fields[#fields + 1] = "K[" .. i .. "]" end
    for _, k in ipairs({ "big", "neg", "z" }) do
      if chance(0.5) then
        items[#items + 1] = k .. " = " .. num_lit(F)
        fields[#fields + 1] = "K." .. k
      end
    end
    lines[#lines + 1] = "local K = { " .. table.concat(items, ", ") .. " }"
    prog.ktable = fields
  end
  -- a generator whose state is an upvalue it assigns, and a table of
  -- function values (issue 29 item 2)
  if F.fnvalue and chance(0.5) then
    prog.fvseed = R(0, 1000)
    lines[#lines + 1] = "local s1 = " .. prog.fvseed
    lines[#lines + 1] = "local function g1(x) s1 = (s1 * 75 + 74 + x // 1) % 65537; return s1 end"
    -- (5 and 6: a mostly arithmetic loop, so that they run compiled when
    -- called through the table: host/callval.c; 6 raises for some x. 6's
    -- loop counts its turns: unbounded, FV[6](2^63, 7) ran past check.lua's
    -- time limit, a skipped case costing 5 s of the ctest's time)
    lines[#lines + 1] = "local FV = { function(x, y) return x + y end, function(x, y) return x * y end, "
                        .. "math.max, function(x, y) return y - x end, "
                        .. "function(x, y) local s = 0 for i = 1, 3 do s = s + x * i - y end return s end, "
                        .. "function(x, y) local s, c = y, 0 while s < x + 3 and c < 40 do s = s + 1.5; c = c + 1 end "
                        .. "if s > 1e15 then error('big ' .. s) end return s // 1 end }"
    prog.fv = true
  end
  if F.callee or F.multret or F.callmid or F.expand then
    for k = 1, R(3) - 1 do gen_callee(prog, F, k) end
  end
  if F.recursion and chance(0.35) then gen_rec(prog, F) end
  if F.varargs and chance(0.6) then gen_varargs(prog, F) end
  -- (varnil) a vararg helper reading its values through table.pack and
  -- giving them back through table.unpack with n, nil holes included
  if F.varnil and chance(0.5) then
    for _, l in ipairs({
      "local function vn(...)",
      "  local t = table.pack(...)",
      "  local s = t.n",
      "  for i = 1, t.n do s = s + (t[i] or 0.5) end",
      "  return s, select('#', ...), table.unpack(t, 1, t.n)",
      "end",
    }) do lines[#lines + 1] = l end
    prog.vn = true
  end
  -- (pcallerr) a helper raising at level 2 (the line of its caller, or
  -- of its caller's caller after a tail call)
  if F.pcallerr and chance(0.3) then
    lines[#lines + 1] = "local function lvh(y) if y > 0 then error(\"lvh\", 2) end return y end"
    prog.lvh = true
  end
  -- (randmix) math.random reached other ways than a direct call: through
  -- a table of functions (the C function itself, called as a value) and a
  -- helper compiled with the function
  if F.randmix and chance(0.5) then
    lines[#lines + 1] = "local RN = { f = math.random, math.random, function(m) return math.random(m) end }"
    lines[#lines + 1] = "local function rnd(m) return math.random(m) + math.random() end"
    prog.rn = true
  end
  -- (output) function values that print, called by a computed index:
  -- loop-free and printing, they run interpreted (host/callval.c)
  if F.output and chance(0.5) then
    lines[#lines + 1] = "local PR = { function(...) print(\"pr\", ...) return select('#', ...) end, " ..
                        "function(x, y) io.write(\"pw \", x, \" \", tostring(y), \"\\n\") return x end }"
    prog.pr = true
  end
  -- (varlevels) varargs through three levels (va1 truncates ... in the middle)
  if F.varlevels and chance(0.5) then
    lines[#lines + 1] = "local function va3(...) return select('#', ...), ... end"
    lines[#lines + 1] = "local function va2(...) return va3(...) end"
    lines[#lines + 1] = "local function va1(a, ...) return va2(a, ..., a) end"
    prog.vl = true
  end
  -- (pcallmid) a helper writing a table and raising in the middle of it
  if F.pcallmid and chance(0.5) then
    lines[#lines + 1] = "local function wm(t, y) t.k = y; t.w1 = (t.w1 or 0) + 1; if y > 1 then t.w2 = t.q.r .. y end; t.w3 = true; return y end"
    prog.wm = true
  end
  -- (coro) an interpreted coroutine body calling a kjit.jit function and
  -- yielding; JH is compiled in both runs (the main function's run is
  -- what differs)
  if F.coro and chance(0.5) then
    if not (F.alloc or F.lifted or F.prange or F.refuse3) then lines[#lines + 1] = "local kjit = require \"kjit\"" end
    lines[#lines + 1] = "local JH = kjit.jit(function(x, y) if x > 1e300 then error(\"jh big\") end return x * 2 + y end)"
    lines[#lines + 1] = "local function CB(y) local s = JH(y, 1); local z = coroutine.yield(s); s = s + JH(z, 2); z = coroutine.yield(s); return s + z end"
    prog.co = true
  end
  if F.calltable and #prog.callees > 0 and chance(0.4) then
    local items = {}
    for i, h in ipairs(prog.callees) do items[i] = h.name .. " = " .. h.name; h.via = "H." .. h.name end
    lines[#lines + 1] = "local H = { " .. table.concat(items, ", ") .. " }"
  end
  -- a bool array and an array of records
  if F.boolarr and chance(0.4) then
    local size = R(5)
    local vals = {}
    for i = 1, size do vals[i] = chance(0.5) end
    arrays[#arrays + 1] = { array = true, dtype = "bool", shape = { size }, vals = vals, name = "Q",
                            kind = "bool", size = size, ndim = 1 }
  end
  if F.records and chance(0.4) then
    local size = R(4)
    local vals = {}
    for i = 1, size do
      vals[i] = { x = pick(INIT_FLT), k = pick(INIT_INT), c = math.abs(pick(INIT_INT)) % 256, b = chance(0.5),
                  v = { pick(INIT_FLT), pick(INIT_FLT), pick(INIT_FLT) } }
    end
    arrays[#arrays + 1] = { record = G.RECORD, shape = { size }, vals = vals, name = "p", kind = "rec",
                            size = size, ndim = 1 }
  end
  -- a Lua table argument T (tabarg), compared key by key after the call
  if F.tabarg and chance(0.6) then
    local function v() return chance(0.5) and arg_int() or arg_flt() end
    local data = { x = v(), y = v(), sub = { y = v() }, list = {},
                   s = pick({ "12", "ab", " 3.5 ", "0x10", "1e2", "" }), f = chance(0.5) }
    for i = 1, R(0, 4) do data[i] = v() end
    for i = 1, R(3) do data.list[i] = { x = v() } end
    if chance(0.5) then data.sub[1] = v() end
    if chance(0.4) then data.sub.z = pick({ "z", "7" }) end
    if chance(0.5) then
      data.A = array_spec("A", pick({ "f64", "i32", "i64" }), { R(3) })
      data.A.name = nil
    end
    local alias = chance(0.5) and { { "alias", "sub" } } or nil
    arrays[#arrays + 1] = { luatable = data, alias = alias, name = "T", kind = "luatab",
                            numfields = { "T.x", "T.y", "T.sub.y", "(T[1] or 0)", "T.list[1].x" } }
  end
  -- callees that change the tables they are given (tc2 raises after a write)
  if F.tabcall then
    lines[#lines + 1] = "local function tc1(t, v) t.n = (t.n or 0) + 1; t[#t + 1] = v; local s = t.sub; if s then s.y = (s.y or 0) + v end; return #t + t.n end"
    lines[#lines + 1] = "local function tc2(t, v) t.m = v; if v ~= v or v > 2 then error(\"tc2 \" .. math.type(v)) end; t.m2 = v * 2; return t.m2 end"
    prog.tc = true
  end
  -- a class, a subclass through an __index function, a class whose
  -- __index function answers z (class family)
  if F.class and chance(0.6) then
    for _, l in ipairs({
      "local Pt = {}",
      "Pt.__index = Pt",
      "function Pt.new(x, y) return setmetatable({ x = x, y = y }, Pt) end",
      "function Pt:len2() return self.x * self.x + self.y * self.y end",
      "function Pt:move(d) self.x = self.x + d; self.n = (self.n or 0) + 1; return self end",
      -- a counter of the class its own method updates by the class's name
      -- (the class is live wherever it is read: ir_live.c)
      "function Pt:tick(k) Pt.ticks = Pt.ticks + k; return Pt.ticks end",
      "function Pt:ticks2() return Pt.ticks * 2 + self.x end",
      "local function scale1(self, k) return self.x * k end",
      "local function scale2(self, k) return self.y * k + 1 end",
      "local Sub = setmetatable({}, { __index = function(_, k) return Pt[k] end })",
      "Sub.__index = Sub",
      "function Sub:len2() return Pt.len2(self) + 1 end",
      "local Dyn = { __index = function(t, k) if k == \"z\" then return 7 end return Pt[k] end }",
    }) do lines[#lines + 1] = l end
    prog.cls = true
  end
  -- a metatable with arithmetic, comparison, length, concat, index,
  -- newindex and tostring metamethods (metaops family)
  if F.metaops and chance(0.6) then
    for _, l in ipairs({
      "local V = {}",
      "local function vv(a) if type(a) == \"table\" then return a.v end return a end",
      "V.__add = function(a, b) return setmetatable({ v = vv(a) + vv(b) }, V) end",
      "V.__sub = function(a, b) return setmetatable({ v = vv(a) - vv(b) }, V) end",
      "V.__mul = function(a, b) return setmetatable({ v = vv(a) * vv(b) }, V) end",
      "V.__unm = function(a) return setmetatable({ v = -a.v }, V) end",
      "V.__lt = function(a, b) return vv(a) < vv(b) end",
      "V.__le = function(a, b) return vv(a) <= vv(b) end",
      "V.__eq = function(a, b) return vv(a) == vv(b) end",
      "V.__len = function(a) return a.v end",
      "V.__concat = function(a, b) return \"V\" .. math.type(vv(a)) .. \"|\" .. type(vv(b)) end",
      "V.__index = function(t, k) if k == \"w\" then return 7 end return nil end",
      "V.__newindex = function(t, k, v) rawset(t, k, v); rawset(t, \"writes\", (rawget(t, \"writes\") or 0) + 1) end",
      "V.__tostring = function(a) return \"V(\" .. math.type(a.v) .. \")\" end",
    }) do lines[#lines + 1] = l end
    prog.vmt = true
  end
  -- the main function
  local params = { "a", "b", "n" }
  for _, a in ipairs(arrays) do params[#params + 1] = a end
  local nret = ({ 0, 1, 1, 1, 2, 2, 3 })[R(7)]
  lines[#lines + 1] = "return function(" .. param_names(params) .. ")"
  local ctx = new_ctx(prog, F, params, nret)
  ctx.rec, ctx.main, ctx.va = prog.rec, true, prog.va
  ctx.vn, ctx.rn, ctx.lvh = prog.vn, prog.rn, prog.lvh
  ctx.tc, ctx.cls, ctx.vmt = prog.tc, prog.cls, prog.vmt
  ctx.pr, ctx.vl, ctx.wm, ctx.co = prog.pr, prog.vl, prog.wm, prog.co
  lines[#lines + 1] = "  local cnt = 0"
  if F.raiseop then lines[#lines + 1] = "  local zn" end
  -- (a method the run may replace, set afresh: the checker calls the same
  -- closure interpreted and compiled)
  -- (by n: the method differs between calls of one compiled function)
  if prog.cls then
    lines[#lines + 1] = chance(0.5) and "  Pt.scale = (n % 2 == 0) and scale1 or scale2" or
                        "  if n % 2 == 0 then Pt.scale = scale1 else Pt.scale = scale2 end"
    lines[#lines + 1] = "  Pt.ticks = 0"
  end
  -- (every run starts the generator afresh: the checker calls the same
  -- closure interpreted and compiled)
  if prog.fv then lines[#lines + 1] = "  s1 = " .. prog.fvseed end
  if F.libcall and chance(0.3) then lines[#lines + 1] = "  math.randomseed(" .. R(0, 99) .. ")" end
  if F.alloc and chance(0.5) then gen_allocs(ctx) end
  ctx.rettab = F.tabret and not ctx.retarr and chance(0.5)
  gen_block(ctx, 3, R(5) + 2)
  if prog.va and not ctx.retarr and chance(0.25) then
    -- every value of a vararg helper, as many as its path gives (not where
    -- the other returns give an array: arrays do not mix with nil)
    lines[#lines + 1] = "  return " .. pick({ "v1", "w1" }) .. "(" ..
                        table.concat({ "a", "b", "n" }, ", ", 1, R(0, 3)) .. ")"
  elseif nret > 0 then lines[#lines + 1] = "  return " .. table.concat(ret_values(ctx, nret), ", ") end
  lines[#lines + 1] = "end"
  -- argument tuples: the first four of the same types (one specialization:
  -- more values cost little, compiling is what takes time), the last two
  -- of random types
  local cases = {}
  local ta, tb = chance(0.6), chance(0.6)
  for c = 1, 6 do
    if c >= 5 then ta, tb = chance(0.5), chance(0.5) end
    local t = { n = #params }
    t[1] = ta and arg_int() or arg_flt()
    t[2] = tb and arg_int() or arg_flt()
    t[3] = (c < 5) and ({ 0, 1, 2, 3, 5, 10, -1, 7 })[R(8)] or pick(ARG_N)
    for i, a in ipairs(arrays) do t[3 + i] = a end
    cases[c] = t
  end
  return { id = id, src = table.concat(lines, "\n") .. "\n", chunk = "=fz" .. id, cases = cases }
end

G.LIMIT = LIMIT
return G
