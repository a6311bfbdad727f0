-- Constant folding and run-time code against the interpreter, exhaustively
-- on a table of edge values (issue 22, deliverable 3). For every operator
-- and every folding math built-in, and every pair (or single) of edge
-- values, the expression is computed four ways and each must equal the
-- interpreter's result exactly (value, subtype, -0.0, NaN; or the error
-- with its message):
--   folded, upvalues: both operands are upvalues holding the constants;
--   folded, locals:   both operands are locals loaded from literals (the
--                     bytecode's LOADI/LOADF/LOADK);
--   mixed:            one operand a constant (upvalue), the other an
--                     argument (LLVM sees one constant operand);
--   run time:         both operands are arguments.
-- The folded functions compute one left operand against every right
-- operand that does not raise, in one function (one compile); an operand
-- pair that raises gets a function of its own.
local kjit = require "kjit"

local MAXI, MINI = math.maxinteger, math.mininteger
local EDGES = {
  0, 1, -1, 2, 3, -3, 10, 9007199254740992, 9007199254740993, -9007199254740993, MAXI, MINI,
  0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -3.0, 2.0 ^ 53, 2.0 ^ 63, -2.0 ^ 63,
  1 / 0, -1 / 0, 0 / 0, 1e308, 5e-324, -5e-324,
}

-- Source text of a number that reads back as exactly v (same subtype).
local function lit(v)
  if math.type(v) == "integer" then
    if v == MINI then return "math.mininteger" end
    return string.format("%d", v)
  end
  if v ~= v then return "(0/0)" end
  if v == 1 / 0 then return "(1/0)" end
  if v == -1 / 0 then return "(-1/0)" end
  if v == 0 and 1 / v < 0 then return "(-0.0)" end
  return string.format("%a", v)
end

local function show(v)
  if math.type(v) == "float" then return string.format("%a(float)", v) end
  if math.type(v) == "integer" then return string.format("%d(int)", v) end
  return tostring(v)
end

-- same_value (harness.lua) on packed results, or on error messages.
local function same(ok1, r1, ok2, r2)
  if ok1 ~= ok2 then return false end
  if not ok1 then return r1 == r2 end
  if r1.n ~= r2.n then return false end
  for i = 1, r1.n do if not same_value(r1[i], r2[i]) then return false end end
  return true
end

local function run(f, ...)
  local r = table.pack(pcall(f, ...))
  if not r[1] then return false, tostring(r[2]) end
  return true, table.pack(table.unpack(r, 2, r.n))
end

local function fmt(ok, r)
  if not ok then return "error: " .. r end
  local t = {}
  for i = 1, r.n do t[i] = show(r[i]) end
  return table.concat(t, ", ")
end

-- Documented differences (docs/reference/differences.md): none on this table so
-- far; an entry would be  key = "reason"  with key "expr|a|b".
local KNOWN = {}

-- Checks one expression template `e` (with `A` and `B` for the operands;
-- unary ones use only `A`) over the edge table; returns the list of
-- disagreements.
local function check_expr(e, unary)
  local bad = {}
  local function report(how, a, b, want, wok, got, gok)
    local key = e .. "|" .. show(a) .. "|" .. (unary and "" or show(b))
    if KNOWN[key] then return end
    bad[#bad + 1] = string.format("%s [%s] A=%s%s: interpreter %s, compiled %s", e, how, show(a),
      unary and "" or " B=" .. show(b), fmt(wok, want), fmt(gok, got))
  end
  local code = function(x, y)
    return (e:gsub("A", x):gsub("B", y or ""))
  end
  local interp = load("local A, B = ... return " .. code("A", "B"), "=fold")
  local rhs = unary and { false } or EDGES
  -- the interpreter's answers
  local want = {}
  for i, a in ipairs(EDGES) do
    want[i] = {}
    for j, b in ipairs(rhs) do want[i][j] = { run(interp, a, b) } end
  end
  -- f(...) interpreted and compiled (the interpreted closure is the
  -- reference: its error messages name the same upvalues and locals)
  local function diff(how, f, a, b, ...)
    local wok, w = run(f, ...)
    local gok, got = run(kjit.jit(f), ...)
    if not same(wok, w, gok, got) then report(how, a, b, w, wok, got, gok) end
  end
  -- run time: both operands arguments (one compile per pair of subtypes)
  local rt = load("return function(A, B) return " .. code("A", "B") .. " end", "=fold")()
  local rtc = kjit.jit(rt)
  for _, a in ipairs(EDGES) do
    for _, b in ipairs(rhs) do
      local wok, w = run(rt, a, b)
      local gok, got = run(rtc, a, b)
      if not same(wok, w, gok, got) then report("run time", a, b, w, wok, got, gok) end
    end
  end
  -- folded: one function per left operand and up to 16 right operands that
  -- do not raise (upvalues B1..Bn, or locals from literals); one per
  -- raising pair
  local function batch(a, js)
    local names, vals, lits, exprs = {}, {}, {}, {}
    for k, j in ipairs(js) do
      names[k], vals[k] = "B" .. j, rhs[j]
      exprs[k] = code("A", "B" .. j)
      lits[k] = unary and "false" or lit(rhs[j])
    end
    local list = table.concat(exprs, ", ")
    local fu = load("local A, " .. table.concat(names, ", ") .. " = ... return function() return " ..
                    list .. " end", "=fold")(a, table.unpack(vals))
    local fl = load("return function() local A, " .. table.concat(names, ", ") .. " = " .. lit(a) ..
                    ", " .. table.concat(lits, ", ") .. " return " .. list .. " end", "=fold")()
    for how, f in pairs({ ["folded upvalues"] = fu, ["folded locals"] = fl }) do
      local wok, w = run(f)
      local gok, got = run(kjit.jit(f))
      if not (wok and gok and w.n == got.n) then
        report(how, a, rhs[js[1]], w, wok, got, gok)
      else
        for k, j in ipairs(js) do
          if not same_value(w[k], got[k]) then
            report(how, a, rhs[j], table.pack(w[k]), true, table.pack(got[k]), true)
          end
        end
      end
    end
  end
  for i, a in ipairs(EDGES) do
    local js = {}
    for j, b in ipairs(rhs) do
      if want[i][j][1] then
        js[#js + 1] = j
        if #js == 16 then batch(a, js); js = {} end
      else
        diff("folded upvalues", load("local A, B = ... return function() return " .. code("A", "B") ..
                                     " end", "=fold")(a, b), a, b)
        diff("folded locals", load("return function() local A, B = " .. lit(a) .. ", " ..
                                   (unary and "false" or lit(b)) .. " return " .. code("A", "B") ..
                                   " end", "=fold")(), a, b)
      end
    end
    if #js > 0 then batch(a, js) end
  end
  -- mixed: a constant on one side, an argument on the other
  if not unary then
    for _, k in ipairs(EDGES) do
      local fl = load("local A = ... return function(B) return " .. code("A", "B") .. " end", "=fold")(k)
      local fr = load("local B = ... return function(A) return " .. code("A", "B") .. " end", "=fold")(k)
      local flc, frc = kjit.jit(fl), kjit.jit(fr)
      for _, x in ipairs(EDGES) do
        local wok, w = run(fl, x)
        local gok, got = run(flc, x)
        if not same(wok, w, gok, got) then report("constant A", k, x, w, wok, got, gok) end
        wok, w = run(fr, x)
        gok, got = run(frc, x)
        if not same(wok, w, gok, got) then report("constant B", x, k, w, wok, got, gok) end
      end
    end
  end
  return bad
end

-- KJIT_FOLD_ONLY=text runs only the expressions containing text.
local ONLY = os.getenv("KJIT_FOLD_ONLY")

local function check(list, unary)
  for _, e in ipairs(list) do
    if ONLY and not e:find(ONLY, 1, true) then goto continue end
    test(e, function()
      local bad = check_expr(e, unary)
      if #bad > 0 then
        error(#bad .. " disagreements:\n  " .. table.concat(bad, "\n  ", 1, math.min(#bad, 40)), 0)
      end
    end)
    ::continue::
  end
end

check({ "A + B", "A - B", "A * B", "A / B", "A // B", "A % B", "A ^ B",
        "A & B", "A | B", "A ~ B", "A << B", "A >> B",
        "A < B", "A <= B", "A == B", "A ~= B", "A > B", "A >= B",
        "math.max(A, B)", "math.min(A, B)", "math.fmod(A, B)", "math.atan(A, B)",
        "math.log(A, B)", "math.ult(A, B)" })
check({ "-A", "~A", "math.floor(A)", "math.ceil(A)", "math.abs(A)", "math.sqrt(A)",
        "math.sin(A)", "math.cos(A)", "math.tan(A)", "math.asin(A)", "math.acos(A)",
        "math.exp(A)", "math.atan(A)", "math.log(A)", "math.tointeger(A)",
        "math.max(A)", "math.min(A)", "math.type(A) == 'float'" }, true)
