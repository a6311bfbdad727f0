-- test_sources.lua: functions compiled however their code was loaded
-- (issue 14, item 7). The bytecode pipeline
-- compiles the bytecode the interpreter runs, so neither the chunk name nor
-- any file it names matters: chunk names that name a device (/dev/zero,
-- /dev/stdin) or a file holding other code, scripts read from standard
-- input, `lua5.4 -e` and `lua5.4 -i`, stripped chunks (`luac5.4 -s`,
-- string.dump(f, true)), modules edited on disk after loading; and
-- run-time error messages equal to the interpreter's, "file:line:" and all.
-- Every check is differential: the compiled result (or error message) must
-- equal the interpreted one exactly.
--
-- Scenarios that need their own process (standard input, -e, -i, limits)
-- run child lua5.4 processes through sh; a child prints one line per case
-- (CASE <name> <interpreted> <compiled>) and the parent compares them and
-- counts them, so a child that dies early cannot pass.
-- The C host loading with luaL_loadbuffer is tests/c/test_loadbuffer.c.
local kjit = require "kjit"


---------------------------------------------------------------------------
-- helpers
---------------------------------------------------------------------------
local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok, how, code = p:close()
  return out, ok, how, code
end

-- write_file, read_file: harness.lua

-- the directory of kjit.so (the harness's first argument), made absolute
-- because children run in other directories
local moddir = arg and arg[1] or "build"
if moddir:sub(1, 1) ~= "/" then
  moddir = run("pwd"):gsub("\n", "") .. "/" .. moddir
end
local lua_exe = "lua5.4"
local child_env = "LUA_CPATH=" .. sh_quote(moddir .. "/?.so;;") .. " "

local root = os.tmpname()
os.remove(root)
assert(os.execute("mkdir -p " .. sh_quote(root)))

-- The values a call returned, as text: subtypes shown ("2.5/f"), so that
-- an integer and a float of the same value differ; newlines and tabs of
-- messages escaped (one case per line).
local function ser(ok, ...)
  local t = { tostring(ok) }
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if math.type(v) == "float" then t[#t + 1] = string.format("%.17g/f", v)
    else t[#t + 1] = tostring(v) end
  end
  return (table.concat(t, "|"):gsub("[\n\t]", { ["\n"] = "\\n", ["\t"] = "\\t" }))
end

-- interpreted == compiled for f(...); returns the interpreted results
local function diff(f, ...)
  local i = ser(pcall(f, ...))
  local c = ser(pcall(kjit.jit(f), ...))
  eq(c, i, "compiled vs interpreted")
  return i
end

-- The same in a child: CHECK(name, f, ...) prints one CASE line. Globals,
-- because `lua5.4 -i` runs each input line as its own chunk.
local CHILD_PRELUDE = [[
kjit = require "kjit"
local function ser(ok, ...)
  local t = { tostring(ok) }
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if math.type(v) == "float" then t[#t + 1] = string.format("%.17g/f", v)
    else t[#t + 1] = tostring(v) end
  end
  return (table.concat(t, "|"):gsub("[\n\t]", { ["\n"] = "\\n", ["\t"] = "\\t" }))
end
function CHECK(name, f, ...)
  local i = ser(pcall(f, ...))
  local c = ser(pcall(kjit.jit(f), ...))
  io.write("CASE\t", name, "\t", i, "\t", c, "\n")
end
]]

-- Reads the CASE lines of a child's output: each must agree, every name in
-- `want` must be there. `patterns` maps a case name to plain text its
-- interpreted result must contain (a message's "stdin:9:"), so that the
-- check is not vacuous. Returns the table name -> interpreted result.
local function check_cases(out, want, patterns)
  local got = {}
  for name, i, c in out:gmatch("CASE\t([^\t\n]*)\t([^\t\n]*)\t([^\t\n]*)") do
    if c ~= i then
      error(string.format("case %s: compiled %s, interpreted %s", name, c, i), 2)
    end
    got[name] = i
  end
  for _, name in ipairs(want) do
    if not got[name] then error("case " .. name .. " missing; child output:\n" .. out, 2) end
  end
  for name, p in pairs(patterns or {}) do
    if not got[name]:find(p, 1, true) then
      error(string.format("case %s: '%s' not in %s", name, p, got[name]), 2)
    end
  end
  return got
end

-- The code the children and the loaded chunks compile: loops, integer and
-- float arithmetic, a callee, and errors at known lines: 'bad' errs at
-- line 7 of this text (the `+`, whose operand is on line 8) when t is nil,
-- which only the run time knows (callbad's t is a number-or-nil).
local FUNCS = [[
local function sum(n, x)
  local s = 0
  for i = 1, n do s = s + i * x end
  return s
end
local function bad(a, t)
  return a +
    t
end
local function callbad(a)
  local t
  if a > 100 then t = a end
  return bad(a, t) + 1
end
local function idiv(a, b) return a // b, a % b end
]]

---------------------------------------------------------------------------
-- 2. chunk names naming a device or another file: no file is read
---------------------------------------------------------------------------
-- Resource limits for children: a compile that reads /dev/zero to the end
-- would hit the address-space limit, one that reads /dev/stdin (a FIFO
-- whose writer never writes) would block until `timeout` kills it. Under
-- the sanitizer build (LD_PRELOAD of libasan) the address-space limit is
-- left out: the sanitizer reserves terabytes of shadow memory.
local function limits()
  local pre = os.getenv("LD_PRELOAD") or ""
  if pre:find("asan", 1, true) then return "" end
  return "ulimit -v 4000000; "
end

-- Runs a child script with standard input a FIFO that stays open and
-- empty: reading it blocks (the child is killed after 120 s: status 124).
local function run_with_blocking_stdin(script)
  local dir = root .. "/fifo" .. math.random(1 << 30)
  assert(os.execute("mkdir -p " .. sh_quote(dir) .. " && mkfifo " .. sh_quote(dir .. "/in")))
  write_file(dir .. "/child.lua", script)
  local cmd = table.concat({
    "cd " .. sh_quote(dir) .. " && (" .. limits(),
    child_env .. "timeout 120 " .. lua_exe .. " child.lua < in > out 2>&1 & pid=$!;",
    "exec 3> in;",          -- a writer that never writes: stdin stays open
    "wait $pid; rc=$?; exec 3>&-; cat out; echo \"STATUS $rc\")" }, " ")
  local out = run("sh -c " .. sh_quote(cmd))
  os.execute("rm -rf " .. sh_quote(dir))
  return out
end

test("load(src, '@/dev/zero') and '@/dev/stdin': no file is read", function()
  local script = CHILD_PRELUDE .. [[
for _, name in ipairs({ "@/dev/zero", "@/dev/stdin", "@/dev/urandom", "@/proc/self/mem" }) do
  local src = ]] .. string.format("%q", FUNCS) .. [[ .. "return sum, callbad, idiv"
  local sum, callbad, idiv = assert(load(src, name))()
  CHECK(name .. " sum", sum, 10, 3)
  CHECK(name .. " sum float", sum, 4, 0.25)
  CHECK(name .. " callbad", callbad, 1)
  CHECK(name .. " idiv", idiv, 7, 2)
end
io.write("DONE\n")
]]
  local out = run_with_blocking_stdin(script)
  truthy(out:find("DONE\nSTATUS 0", 1, true), "the child finished (output:\n" .. out .. ")")
  local want, pats = {}, {}
  for _, name in ipairs({ "@/dev/zero", "@/dev/stdin", "@/dev/urandom", "@/proc/self/mem" }) do
    for _, c in ipairs({ " sum", " sum float", " callbad", " idiv" }) do want[#want + 1] = name .. c end
    pats[name .. " callbad"] = name:sub(2) .. ":7: attempt to perform arithmetic on a nil value"
  end
  check_cases(out, want, pats)
end)

test("a chunk name naming a file that holds other code", function()
  -- the file at the chunk name has the same line span and other bodies:
  -- compiling from it would return 10 times the interpreted results
  local path = root .. "/other.lua"
  write_file(path, (FUNCS:gsub("s = s %+ i %* x", "s = s + 10 * i * x")))
  local sum, callbad = assert(load(FUNCS .. "return sum, callbad", "@" .. path))()
  eq(diff(sum, 10, 3), "true|165")
  diff(sum, 3, 0.5)
  truthy(diff(callbad, 2):find(path .. ":7: attempt to perform arithmetic", 1, true), "message")
  -- a directory and an unreadable file as chunk names
  assert(os.execute("chmod 000 " .. sh_quote(path)))
  for _, name in ipairs({ "@" .. root, "@" .. path, "@" }) do
    local f = assert(load(FUNCS .. "return sum", name))()
    diff(f, 6, 2)
  end
  os.remove(path)
end)

---------------------------------------------------------------------------
-- 3. scripts on standard input (lua5.4 -) and on the command line (-e)
---------------------------------------------------------------------------
local SCRIPT = CHILD_PRELUDE .. FUNCS .. [[
CHECK("sum", sum, 100, 7)
CHECK("sum float", sum, 5, 1.5)
CHECK("callbad", callbad, 3)
CHECK("idiv", idiv, -7, 2)
CHECK("idiv0", idiv, 7, 0)
CHECK("idiv float", idiv, 7.5, 0)
io.write("DONE\n")
]]
local SCRIPT_CASES = { "sum", "sum float", "callbad", "idiv", "idiv0", "idiv float" }
-- the line of 'bad's error in SCRIPT (FUNCS starts after the prelude;
-- `a +` on FUNCS's line 7, not the operand `t` on line 8: the
-- interpreter's line is the operator's)
local BAD_LINE = select(2, CHILD_PRELUDE:gsub("\n", "")) + 7

test("a script piped to lua5.4 - (chunk 'stdin')", function()
  local path = root .. "/piped.lua"
  write_file(path, SCRIPT)
  local out = run("cat " .. sh_quote(path) .. " | (" .. limits() .. child_env
                  .. "timeout 120 " .. lua_exe .. " -)")
  truthy(out:find("DONE", 1, true), "the child finished (output:\n" .. out .. ")")
  check_cases(out, SCRIPT_CASES,
              { callbad = "stdin:" .. BAD_LINE .. ": attempt to perform arithmetic on a nil value" })
  os.remove(path)
end)

test("a script given as lua5.4 -e '...' (chunk '(command line)')", function()
  local out = run(limits() .. child_env .. "timeout 120 " .. lua_exe .. " -e " .. sh_quote(SCRIPT)
                  .. " < /dev/null")
  truthy(out:find("DONE", 1, true), "the child finished (output:\n" .. out .. ")")
  check_cases(out, SCRIPT_CASES,
              { callbad = "(command line):" .. BAD_LINE .. ": attempt to perform arithmetic" })
end)

---------------------------------------------------------------------------
-- 7. an interactive session: lua5.4 -i with its input piped
---------------------------------------------------------------------------
test("lua5.4 -i: functions typed at the prompt compile", function()
  -- each complete statement is its own chunk "stdin"; a function typed
  -- over several lines is one chunk, its lines counted from its first
  local input = table.concat({
    "function tri(n)",
    "  local s = 0",
    "  for i = 1, n do s = s + i end",
    "  return s",
    "end",
    "function half(a) return a / 2 end",
    "function nilarith(a)",
    "  local t = a > 100 and a or nil",
    "  return a",
    "    * t",
    "end",
    "CHECK('tri', tri, 100)",
    "CHECK('tri0', tri, 0)",
    "CHECK('half', half, 7)",
    "CHECK('nilarith', nilarith, 2)",
    "io.write('DONE\\n')",
    "" }, "\n")
  local path = root .. "/input.txt"
  write_file(path, input)
  local out = run("cat " .. sh_quote(path) .. " | (" .. limits() .. child_env .. "timeout 120 "
                  .. lua_exe .. " -e " .. sh_quote(CHILD_PRELUDE) .. " -i)")
  truthy(out:find("DONE", 1, true), "the session finished (output:\n" .. out .. ")")
  check_cases(out, { "tri", "tri0", "half", "nilarith" },
              { nilarith = "stdin:4: attempt to perform arithmetic on a nil value",
                tri = "true|5050" })
  os.remove(path)
end)

---------------------------------------------------------------------------
-- 4. stripped chunks: luac5.4 -s files and string.dump(f, true)
---------------------------------------------------------------------------
-- `luac` may be Lua 5.3's here: only luac5.4 writes chunks lua5.4 loads.
local function find_luac()
  local out, ok = run("command -v luac5.4")
  if ok then return (out:gsub("\n", "")) end
  return nil
end

local STRIPPED_CASES = {
  { "sum", 10, 3 }, { "sum", 4, 0.5 }, { "callbad", 1 }, { "idiv", 7, 2 },
  { "idiv", 7, 0 }, { "idiv", -7.5, 0 },
}

-- f loaded again from string.dump(f, true): load leaves its upvalues nil
-- (the first one the globals), so they are joined to f's
local function strip(f)
  local g = assert(load(string.dump(f, true), "=ignored", "b"))
  local i = 1
  while debug.getupvalue(f, i) ~= nil do
    debug.upvaluejoin(g, i, f, i)
    i = i + 1
  end
  return g
end

-- m: the table of functions of a stripped chunk. Results equal; error
-- messages equal and without a line (the interpreter's "?:-1:").
local function check_stripped(m)
  local nerr = 0
  for _, c in ipairs(STRIPPED_CASES) do
    local i = diff(m[c[1]], table.unpack(c, 2))
    if i:sub(1, 5) == "false" then
      nerr = nerr + 1
      -- luaG_runerror's position for a function without line information
      truthy(i:find("false|?:-1: attempt", 1, true) == 1, "a stripped chunk's message: " .. i)
      truthy(not i:find("sources.lua", 1, true), "no file name: " .. i)
    end
  end
  eq(nerr, 2, "errors checked")
end

test("a luac5.4 -s file compiles; its messages have no line", function()
  local luac = find_luac()
  if not luac then skip("luac5.4 is not installed") end
  local src, out = root .. "/mod.lua", root .. "/mod.luac"
  write_file(src, FUNCS .. "return { sum = sum, callbad = callbad, idiv = idiv }\n")
  local msg, ok = run(sh_quote(luac) .. " -s -o " .. sh_quote(out) .. " " .. sh_quote(src))
  truthy(ok, "luac5.4 -s: " .. msg)
  os.remove(src)             -- nothing left to read but the binary chunk
  local m = assert(loadfile(out, "b"))()
  check_stripped(m)
  -- the stand-alone interpreter running the file: an error raised by the
  -- compiled function prints as the interpreted one does
  local runner = root .. "/run_stripped.lua"
  for _, jit in ipairs({ false, true }) do
    write_file(runner, "local kjit = require 'kjit'\nlocal m = dofile(" .. string.format("%q", out)
               .. ")\nlocal f = m.callbad\n" .. (jit and "f = kjit.jit(f)\n" or "")
               .. "print(f(1))\n")
    local text = run(child_env .. "timeout 120 " .. lua_exe .. " " .. sh_quote(runner) .. " < /dev/null")
    local first = text:match("^[^\n]*")
    if not jit then
      truthy(first:find("?:-1: attempt to perform arithmetic on a nil value", 1, true)
             or first:find("?: attempt to perform arithmetic on a nil value", 1, true),
             "interpreter's message: " .. first)
      msg = first
    else
      eq(first, msg, "uncaught error, compiled vs interpreted")
    end
  end
  os.remove(runner)
  os.remove(out)
end)

test("string.dump(f, true) + load compiles; its messages have no line", function()
  -- the whole chunk stripped: callbad's callee 'bad' too
  local main = assert(load(FUNCS .. "return { sum = sum, callbad = callbad, idiv = idiv }", "@stripped.lua"))
  check_stripped(assert(load(string.dump(main, true), "=ignored", "b"))())
end)

---------------------------------------------------------------------------
-- 5. hot reload: a module edited on disk after it was loaded
---------------------------------------------------------------------------
test("a module edited on disk after require: the old code compiles", function()
  local dir = root .. "/mods"
  assert(os.execute("mkdir -p " .. sh_quote(dir)))
  local file = dir .. "/kjit_hot_mod.lua"
  local V1 = [[
local M = {}
function M.f(a, n)
  local s = 0
  for i = 1, n do s = s + a * i end
  return s
end
function M.g(a)
  local t
  return a + t
end
return M
]]
  -- same lines, other bodies (and the error moved to another line)
  local V2 = [[
local M = {}
function M.f(a, n)
  local s = 1000
  for i = 1, n do s = s - a // i end
  return s
end
function M.g(a)
  local t = 1
  return a + t end
return M
]]
  write_file(file, V1)
  local saved = package.path
  package.path = dir .. "/?.lua;" .. package.path
  package.loaded.kjit_hot_mod = nil
  local M = require "kjit_hot_mod"
  write_file(file, V2)
  -- the old functions, compiled now: the interpreted (old) results
  eq(diff(M.f, 2, 3), "true|12")
  diff(M.f, 1.5, 4)
  local i = diff(M.g, 1)
  truthy(i:find(file .. ":9: attempt to perform arithmetic on a nil value", 1, true), i)
  -- reloaded: the new code, compiled equal to interpreted too
  package.loaded.kjit_hot_mod = nil
  local M2 = require "kjit_hot_mod"
  eq(diff(M2.f, 2, 3), "true|997")
  eq(diff(M2.g, 1), "true|2")
  -- the old module again, after the reload compiled the new one
  eq(diff(M.f, 2, 3), "true|12")
  package.loaded.kjit_hot_mod = nil
  package.path = saved
  os.execute("rm -rf " .. sh_quote(dir))
end)

---------------------------------------------------------------------------
-- 6. run-time error messages equal to the interpreter's, lines included
---------------------------------------------------------------------------
local ERRORS = [[
local A = ...
local function oob(a, i)
  return a[i]
end
local function oob2(a, i, j)
  return a[i]
    +
    a[j]
end
local function err1(a)
  if a > 0 then
    error("x")
  end
  return a
end
local function err2(a)
  if a > 0 then
    error("x", 2)
  end
  return a
end
local function via(f, a)
  local r = f(a)
  return r
end
local function as(a)
  assert(a < 0, "too big")
  return a
end
local function as2(a)
  assert(a < 0)
  return a
end
local function callee(a, t)
  return a * 2 + t
end
local function caller(a)
  local t = a > 100 and a or nil
  local r = 1 +
    callee(a,
      t)
  return r
end
local function three(a, b, c)
  local t = a > 100 and a or nil
  return a +
    b *
    c + t
end
local function cmpnil(a)
  local t = a > 100 and a or nil
  return a <
     t
end
local function forstep0(a)
  local s = 0
  for i = 1, 3, a - 1 do s = s + i end return s
end
local function idiv(a, b)
  local c = a + 1
  return c // b
end
local function imod(a, b)
  local c = a + 1
  return c % b
end
local function fmod0(a, b)
  return math.fmod(a, b)
end
local function ult(a, b)
  return math.ult(a, b)
end
local function bor(a)
  return a | 1
end
local function store(a, i, v)
  a[i] = v
  return a[i]
end
return { oob = oob, oob2 = oob2, err1 = err1, err2 = err2, via = via, as = as,
  as2 = as2, caller = caller, three = three, cmpnil = cmpnil, forstep0 = forstep0,
  idiv = idiv, imod = imod, fmod0 = fmod0, ult = ult, bor = bor, store = store }
]]

-- name, args, the line of the interpreter's message (checked too, so a
-- wrong line on both sides cannot pass)
local ERROR_CASES = {
  { "oob", { "A", 4 }, 3 }, { "oob", { "A", 0 }, 3 },
  { "oob2", { "A", 1, 5 }, 8 }, { "oob2", { "A", 9, 1 }, 7 },
  { "err1", { 1 }, 12 }, { "as", { 1 }, 27 }, { "as2", { 1 }, 31 },
  { "caller", { 1 }, 35 }, { "three", { 1, 2, 3 }, 48 },
  { "forstep0", { 1 }, 57 }, { "fmod0", { 7, 0 }, 68 }, { "ult", { 1.5, 2 }, 71 },
  { "bor", { 1.5 }, 74 }, { "store", { "I", 1, 2.5 }, 77 }, { "store", { "I", 4, 1 }, 77 },
}

-- ERRORS loaded under chunk name `name`; stripped: the whole chunk
-- through string.dump(main, true) (callees stripped too)
local function error_chunk(name, stripped)
  local A = kjit.array({ 1, 2, 3 }, "f64")
  local main = assert(load(ERRORS, name))
  if stripped then main = assert(load(string.dump(main, true), "=ignored", "b")) end
  return main(A), A
end

-- the arguments of a case, "A" standing for an f64 array, "I" for an i64
-- one (fresh for each call: the interpreted run may store into it)
local function case_args(c, A)
  local t = {}
  for k, v in ipairs(c[2]) do
    if v == "A" then v = A elseif v == "I" then v = kjit.array({ 1, 2, 3 }, "i64") end
    t[k] = v
  end
  return table.unpack(t, 1, #c[2])
end

-- the signature of a call with these arguments: "(i64, f64[:])"
local function signature(...)
  local t = {}
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if math.type(v) == "integer" then t[i] = "i64"
    elseif math.type(v) == "float" then t[i] = "f64"
    elseif type(v) == "boolean" then t[i] = "bool"
    else t[i] = v.dtype .. "[:]" end
  end
  return "(" .. table.concat(t, ", ") .. ")"
end

-- interpreted and compiled messages of a call that must raise
local function both_errors(f, ...)
  local ok1, m1 = pcall(f, ...)
  local jf = kjit.jit(f)
  -- compiled first: the error must come from the compiled code, not be a
  -- compile error of the same text (a nil known when compiling)
  local okc, mc = pcall(jf.compile, jf, signature(...))
  truthy(okc, "compiles for " .. signature(...) .. ": " .. tostring(mc))
  local ok2, m2 = pcall(jf, ...)
  truthy(not ok1, "the interpreted call raises")
  truthy(not ok2, "the compiled call raises (it returned " .. tostring(m2) .. ")")
  return tostring(m1), tostring(m2)
end

local function check_error_lines(m, A, prefix, what)
  for _, c in ipairs(ERROR_CASES) do
    local im, cm = both_errors(m[c[1]], case_args(c, A))
    eq(cm, im, what .. " " .. c[1])
    truthy(im:sub(1, #prefix + 1) == prefix .. ":", "chunk name in " .. im)
    eq(tonumber(im:match("^.-:(%d+):")), c[3], "line of " .. im)
  end
end

test("run-time error lines equal the interpreter's: a file on disk", function()
  -- `a[i] + a[j]` over lines: the interpreter's message names the line of
  -- the `+` (a source-text front end once gave a[i]'s line)
  local path = root .. "/errors.lua"
  write_file(path, ERRORS)
  local A = kjit.array({ 1, 2, 3 }, "f64")
  check_error_lines(assert(loadfile(path))(A), A, path, path)
  os.remove(path)
end)

test("run-time error lines equal the interpreter's: chunks from memory", function()
  for _, name in ipairs({ "@assets/errors.lua", "=errors", "errors" }) do
    local m, A = error_chunk(name)
    check_error_lines(m, A, name == "errors" and '[string "errors"]' or name:sub(2), name)
  end
end)

test("error(msg, 2) and a compiled callee's error name the caller's line", function()
  local m = error_chunk("@assets/errors.lua")
  -- via (interpreted) calls err2 (interpreted or compiled): level 2 is via's line 23
  local ok1, m1 = pcall(m.via, m.err2, 1)
  local ok2, m2 = pcall(m.via, kjit.jit(m.err2), 1)
  truthy(not ok1 and not ok2, "both raise")
  eq(m2, m1)
  eq(m1, "assets/errors.lua:23: x")
  -- a compiled callee erring inside a compiled caller (callee on line 35)
  local im, cm = both_errors(m.caller, 5)
  eq(cm, im)
  eq(im, "assets/errors.lua:35: attempt to perform arithmetic on a nil value (local 't')")
end)

test("integer // and % by zero: the operator's line", function()
  -- Lua 5.4.0-5.4.4 report these at a stale line (the last instruction
  -- that saved its position: here the function's first line); 5.4.5 and
  -- later save the position first and report the operator's line.
  -- Compiled code reports the operator's line with every release (docs/reference/differences.md,
  -- Differences #13): the same message as 5.4.5+, and on 5.4.0-5.4.4 the
  -- same message but for the line number.
  local m = error_chunk("@assets/errors.lua")
  for _, c in ipairs({ { "idiv", 61, "attempt to divide by zero" },
                       { "imod", 65, "attempt to perform 'n%%0'" } }) do
    local im, cm = both_errors(m[c[1]], 1, 0)
    truthy(im:find("^assets/errors%.lua:%d+: " .. c[3] .. "$"), "interpreted: " .. im)
    eq(cm, "assets/errors.lua:" .. c[2] .. ": " .. c[3]:gsub("%%%%", "%%"), c[1] .. " compiled")
    -- the interpreter: the operator's line (5.4.5+) or an earlier one
    local il = tonumber(im:match("^assets/errors%.lua:(%d+):"))
    truthy(il <= c[2], c[1] .. ": interpreted line " .. il .. " after the operator's")
  end
end)

test("comparing a number with a nil: the interpreter's message", function()
  for _, stripped in ipairs({ false, true }) do
    local m = error_chunk("@assets/errors.lua", stripped)
    local im, cm = both_errors(m.cmpnil, 1)
    local at = stripped and "?:-1: " or "assets/errors.lua:53: "
    eq(im, at .. "attempt to compare number with nil", "interpreted")
    eq(cm, im, "compiled")
  end
end)

test("error messages from a stripped chunk equal the interpreter's", function()
  -- Errors the interpreter raises from C functions (luaL_error: error,
  -- assert, array bounds, library arguments) have no position there, those
  -- of the VM have "?:-1:".
  local m, A = error_chunk("@assets/errors.lua", true)
  for _, c in ipairs(ERROR_CASES) do
    local im, cm = both_errors(m[c[1]], case_args(c, A))
    truthy(not im:find("assets/errors", 1, true), "no file name in " .. im)
    eq(cm, im, "stripped " .. c[1])
  end
end)

os.execute("rm -rf " .. sh_quote(root))
