-- test_signatures.lua: kjit's one signature grammar (src/host/signature.c)
-- and one option parser (src/host/options.c), through every API that
-- reads them: f:compile (kjit.jit), k:compile (cuda.jit), kjit.vectorize,
-- kjit.guvectorize, kjit.reduce, kjit.cuda.reduce. Each error the grammar
-- or the parser can give is raised here at least once, and the texts that
-- are accepted compile to code that agrees with the interpreter.
local kjit = require "kjit"
local cuda = kjit.cuda

local function sum2(a, n)   -- a: a 2-D array
  local s = 0.0
  for i = 1, n do s = s + a[i][1] * i end
  return s
end

local function id(x) return x end

-- The message of f:compile(text) (kjit.jit).
local function jit_err(text, fn)
  local f = kjit.jit(fn or id)
  local ok, msg = pcall(f.compile, f, text)
  truthy(not ok, "compile('" .. text .. "') raised")
  return msg
end

-- The message of k:compile(text) (cuda.jit).
local function kernel_err(text)
  local k = cuda.jit(function(a, x) end)
  local ok, msg = pcall(k.compile, k, text)
  truthy(not ok, "k:compile('" .. text .. "') raised")
  return msg
end

local function has(msg, part, what)
  truthy(msg:find(part, 1, true), (what or "message") .. " has '" .. part .. "': " .. msg)
end

-- ---- the grammar: each syntax error, the same detail in every API ------------------------

-- text, the detail every API gives (after its own prefix)
local SYNTAX = {
  { "(i64,)", "cannot read argument #2: expected a type name, found ')' at column 6" },
  { "(i64", "missing ')' at the end of the text (after argument #1)" },
  { "(", "missing ')' at the end of the text (after '(')" },
  { "(f64[3])", "cannot read argument #1: expected ':' or '::1' in the brackets of 'f64[...]', found '3' at column 6" },
  { "(f64[:; :])", "cannot read argument #1: expected ',' or ']' in the brackets of 'f64[...]', found ';' at column 7" },
  { "(f64[::1, ::1])", "cannot read argument #1: 'f64[...]' has two '::1' dimensions" },
  { "(f64[:, ::1, :])", "cannot read argument #1: '::1' marks the contiguous dimension, the first (F layout) or the last (C layout), not dimension 2 of 3" },
  { "(f64[:,:,:,:,:])", "cannot read argument #1: 'f64' has 5 dimensions (kjit arrays have at most 4)" },
  { "(f64 f64)", "cannot read argument #1: expected ',' or ')' after 'f64', found 'f' at column 6" },
  { "(f64) extra", "unexpected 'e' at column 7 after the closing ')'" },
  { "(" .. ("i64,"):rep(32) .. "i64)", "cannot read argument #33: at most 32 arguments" },
  { "(" .. ("q"):rep(40) .. ")", "cannot read argument #1: 'qqqqqqqqqqqq...' at column 2 is not a type (names are at most 15 characters)" },
  { "f64 f64", "expected '(' after the result type 'f64', found 'f' at column 5" },
  { "5", "expected a signature like \"f64(f32[:], i64)\", found '5' at column 1" },
}

test("syntax errors: one detail, each API's prefix", function()
  for _, c in ipairs(SYNTAX) do
    local text, detail = c[1], c[2]
    has(jit_err(text), "bad signature '" .. text .. "': " .. detail, "kjit.jit")
    local vmsg = select(2, pcall(kjit.vectorize, function(x) return x end, text))
    has(vmsg, "malformed signature '" .. text .. "': " .. detail, "kjit.vectorize")
    if text ~= "5" and text ~= "f64 f64" then   -- kernels: no parentheses is an argument list
      has(kernel_err(text), "bad kernel signature '" .. text .. "': " .. detail, "cuda.jit")
    end
  end
end)

test("errors point at the caller's line", function()
  local f = kjit.jit(id)
  local line = debug.getinfo(1, "l").currentline + 1
  local ok, msg = pcall(function() return f:compile("(i64,)") end)
  truthy(not ok and msg:find("test_signatures.lua:" .. line .. ":", 1, true), "position: " .. tostring(msg))
  line = debug.getinfo(1, "l").currentline + 1
  ok, msg = pcall(function() return kjit.vectorize(id, "f64(f64,)") end)
  truthy(not ok and msg:find("test_signatures.lua:" .. line .. ":", 1, true), "position: " .. tostring(msg))
end)

-- ---- the types each API accepts ------------------------------------------------------------

test("kjit.jit: types, results and their errors", function()
  has(jit_err("(c64[:])"), "cannot read argument #1: 'c64' at column 2 is not a dtype (one of i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, bool, f16)")
  has(jit_err("(quux)"), "cannot read argument #1: 'quux' at column 2 is not a type (scalars: i64, f64, bool;")
  has(jit_err("(f32)"), "cannot read argument #1: 'f32' at column 2: kjit.jit functions take i64, f64 and bool scalars")
  has(jit_err("(i64, u8)"), "cannot read argument #2: 'u8' at column 7: kjit.jit functions take")
  has(jit_err("garbage(i64)"), "cannot read the result type: 'garbage' at column 1 is not a type")
  has(jit_err("f64[:](i64)"), "declares result f64[:]")
  has(jit_err("void(i64)"), "says no result")
  -- every spelling of the scalars and the array layouts compiles, and the
  -- compiled function agrees with the interpreter
  for _, sig in ipairs{ "i64(i64)", "int64(int)", "(int)" } do
    local f = kjit.jit(id):compile(sig)
    eq(f(7), id(7), sig)
  end
  for _, sig in ipairs{ "f64(f64)", "float64(float)", "double(double)" } do
    local f = kjit.jit(id):compile(sig)
    eq(f(2.5), id(2.5), sig)
  end
  for _, sig in ipairs{ "bool(bool)", "boolean(boolean)", "b1(b1)" } do
    local f = kjit.jit(id):compile(sig)
    eq(f(true), id(true), sig)
  end
  local a = kjit.array({ { 1.5, 2 }, { 3, 4 }, { 5.25, 6 } })
  for _, sig in ipairs{ "f64(f64[:, :], i64)", "f64(f64[:, ::1], i64)", "f64(f64[::1, :], i64)",
                        "float64(float64[:,:],int64)", "  f64 ( f64 [ : , : ] , i64 )  " } do
    local f = kjit.jit(sum2):compile(sig)
    eq(#f.signatures, 1, sig .. ": one specialization")
    eq(f.signatures[1], "(f64[:,:], i64)", sig .. ": the types")
    eq(f(a, 3), sum2(a, 3), sig)
  end
  -- f32 results may be declared (arguments cannot be f32 scalars)
  local g = kjit.jit(function(x) return x[1] end):compile("f32(f32[:])")
  eq(g(kjit.array({ 0.5 }, "f32")), 0.5, "f32 result")
  g = kjit.jit(function(x) return x[1] end):compile("float32(float32[:])")
  eq(g(kjit.array({ 0.25 }, "f32")), 0.25, "float32 result")
end)

test("cuda.jit: types and their errors", function()
  has(kernel_err("void(quux)"), "bad kernel signature 'void(quux)': cannot read argument #1: 'quux' at column 6 is not a type (scalars: i64, f64, f32, bool;")
  has(kernel_err("f64(f32[:])"), "bad kernel signature 'f64(f32[:])': a kernel returns nothing: write \"void(...)\", not 'f64(...)'")
  has(kernel_err("void(c64[:])"), "cannot read argument #1: 'c64' at column 6 is not a dtype")
  has(kernel_err("f32[:], f32 f32"), "cannot read argument #2: expected ',' or the end of the text after 'f32', found 'f' at column 13")
  -- accepted forms: all the same argument types
  for _, sig in ipairs{ "void", "void()", "()", "" } do
    local k = cuda.jit(function() end)
    k:compile(sig)
    eq(k.signatures[1], "()", "no arguments: '" .. sig .. "'")
  end
  local forms = { "void(f32[:], f32)", "(f32[:], f32)", "f32[:], f32", "none(float32[::1], float32)" }
  for _, sig in ipairs(forms) do
    local k = cuda.jit(function(a, x) a[1] = x end)
    k:compile(sig)
    eq(k.signatures[1], "(f32[:], f32)", sig)
  end
end)

test("ufuncs: dtypes only, aliases read as dtypes", function()
  local function add(x, y) return x + y end
  local vf = kjit.vectorize(add, "float64(float64, int64)")
  eq(vf(1.5, 2), add(1.5, 2), "aliases")
  local msg = select(2, pcall(kjit.vectorize, add, "f64(f64, c64)"))
  has(msg, "malformed signature 'f64(f64, c64)': cannot read argument #2: 'c64' at column 10 is not a dtype (one of i8,")
  msg = select(2, pcall(kjit.vectorize, add, "f64(f64, int)"))
  has(msg, "'int' at column 10 is not a dtype")
  msg = select(2, pcall(kjit.guvectorize, add, "f64[:](f64[:], f64[:])", "(n),(n)->(n)"))
  has(msg, "malformed signature 'f64[:](f64[:], f64[:])': the result must be a dtype, not an array ('f64[...]')")
  -- guvectorize: marked and unmarked arrays, '::1' layouts
  local function dot(a, b, out)
    local s = 0.0
    for i = 1, #a do s = s + a[i] * b[i] end
    out[1] = s
  end
  for _, sig in ipairs{ "void(f64[:], f64[:], f64)", "void(f64[::1], f64[:], f64[:])", "(f64, f64, f64)" } do
    local g = kjit.guvectorize(dot, sig, "(n),(n)->()")
    local x, y = kjit.array({ 1, 2, 3 }), kjit.array({ 4, 5, 6 })
    local want = kjit.zeros(1)
    dot(x, y, want)
    eq(g(x, y), want[1], sig)
  end
end)

test("guvectorize layouts: the grammar's limits", function()
  local function f(a, out) end
  local sig = "void(f64[:], f64[:])"
  local msg = select(2, pcall(kjit.guvectorize, f, sig, "(" .. ("n"):rep(20) .. ")->()"))
  has(msg, "dimension name '" .. ("n"):rep(20) .. "' is too long (at most 15 characters)")
  msg = select(2, pcall(kjit.guvectorize, f, sig, "(a,b,c,d,e)->()"))
  has(msg, "malformed layout '(a,b,c,d,e)->()': a group has more than 4 dimensions (kjit arrays have at most 4)")
  msg = select(2, pcall(kjit.guvectorize, f, sig, ("(n),"):rep(40) .. "(n)->()"))
  has(msg, "more than 32 inputs")
  msg = select(2, pcall(kjit.guvectorize, f, sig, "(" .. ("n,"):rep(300) .. "n)->()"))
  has(msg, "': too long (at most 500 characters)")
  -- blanks anywhere, the last '->' separates
  local lay_ok = kjit.guvectorize(function(a, out) out[1] = a[1] end, sig, " ( n ) -> ( ) ")
  eq(lay_ok(kjit.array({ 9.5, 1 })), 9.5, "blanks in the layout")
end)

-- ---- options --------------------------------------------------------------------------------

test("options: one parser, each API named", function()
  local f = function(x) return x end
  local function msg(fn, ...) local ok, m = pcall(fn, ...); truthy(not ok, "raised"); return m end
  has(msg(kjit.jit, f, { bogus = 1 }), "kjit.jit: unknown option 'bogus' (known: boundscheck, fastmath, opt, cache, parallel, tiered)")
  has(msg(kjit.jit, f, { fastmath = 1 }), "kjit.jit: option 'fastmath' must be a boolean, got number")
  has(msg(kjit.jit, f, { opt = 3.0 }), "kjit.jit: option 'opt' must be an integer from 0 to 3, got 3.0")
  has(msg(kjit.jit, f, { opt = 4 }), "kjit.jit: option 'opt' must be an integer from 0 to 3, got 4")
  has(msg(kjit.jit, f, "fast"), "bad argument #2 to 'jit' (options table expected, got string)")
  has(msg(cuda.jit, f, { bogus = 1 }), "unknown option 'bogus' to 'cuda.jit' (known: boundscheck, fastmath, fma, opt, cache, device, lineinfo, debug, max_registers, launch_bounds, maxThreadsPerBlock, inline, forceinline)")
  has(msg(cuda.jit, f, { cache = "yes" }), "bad option 'cache' to 'cuda.jit' (boolean expected, got string)")
  has(msg(cuda.jit, f, { opt = -1 }), "bad option 'opt' to 'cuda.jit' (an integer from 0 to 3 expected, got -1)")
  has(msg(kjit.vectorize, f, "f64(f64)", { target = "gpu" }),
    "kjit.vectorize: unknown target 'gpu' (target must be \"cpu\", \"parallel\" or \"cuda\")")
  has(msg(kjit.vectorize, f, "f64(f64)", { [true] = 1 }), "kjit.vectorize: unknown option 'true' (known: target, fastmath, boundscheck, cache)")
  has(msg(kjit.vectorize, f, "f64(f64)", 5), "bad argument #3 to 'vectorize' (options table expected, got number)")
  has(msg(kjit.guvectorize, f, "void(f64[:], f64[:])", "(n)->(n)", { cache = 0 }),
    "kjit.guvectorize: option 'cache' must be a boolean, got number")
  has(msg(kjit.reduce, f, { target = "cuda" }), "kjit.reduce: unknown target 'cuda' (target must be \"cpu\" or \"parallel\")")
  has(msg(kjit.reduce, f, { opt = "2" }), "kjit.reduce: option 'opt' must be an integer from 0 to 3, got string")
  has(msg(cuda.reduce, f, { fma = 1 }), "kjit.cuda.reduce: option 'fma' must be a boolean, got number")
  has(msg(cuda.reduce, f, { target = "cpu" }), "kjit.cuda.reduce: unknown option 'target' (known: fastmath, fma, cache, opt)")
  -- the values reach the objects: kjit.jit with opt = 0 still agrees
  local g = kjit.jit(function(a, b) return a * b + 1 end, { opt = 0, fastmath = false, boundscheck = true })
  eq(g(6, 7), 43, "opt = 0")
  local r = kjit.reduce(function(a, b) return a + b end, { opt = 1, target = "cpu" })
  eq(r(kjit.array({ 1, 2, 3 })), 6.0, "reduce with options")
end)
