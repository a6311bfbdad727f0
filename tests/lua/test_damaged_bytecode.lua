-- test_damaged_bytecode.lua: binary chunks Lua's compiler never writes,
-- loaded with load(s, name, "b") (Lua does not check bytecode), given to
-- kjit.jit. kjit must refuse what its IR builder cannot handle with a
-- located compile error, as for any refusal, and never crash the host.
-- The shapes are what the fuzzers found (tests/fuzz/fuzz_bytecode.c; the
-- inputs are tests/c/bytecode_fixtures/regress-*.luac, whose IR
-- tests/c/test_bytecode.c checks); here the whole pipeline runs them.
local kjit = require "kjit"

local OP_FORLOOP, OP_FORPREP = 73, 74   -- lopcodes.h, every 5.4 release

-- f's chunk with register a as the A of its empty numeric for's FORPREP
-- (which = "FORPREP") or FORLOOP: instructions are dumped as native
-- 32-bit words, the opcode in bits 0-6 and A in bits 7-14.
local function patch(f, which, a)
  local s = string.dump(f)
  for at = 1, #s - 7 do
    local w, nxt = string.unpack("=I4I4", s, at)
    if w & 0x7f == OP_FORPREP and nxt & 0x7f == OP_FORLOOP and
       (w >> 7) & 0xff == (nxt >> 7) & 0xff then
      local pos, old = at, w
      if which == "FORLOOP" then pos, old = at + 4, nxt end
      local new = (old & ~(0xff << 7)) | (a << 7)
      return s:sub(1, pos - 1) .. string.pack("=I4", new) .. s:sub(pos + 4)
    end
  end
  error("no empty numeric for in the chunk")
end

-- x lives in a cell (captured, then assigned); registers: n 0, get 1, x 2,
-- the loop's state from 3
local function cellfor(n)
  local get
  local x = 0
  get = function() return x end
  x = n
  for i = 1, n do end
  return get()
end
local header = debug.getinfo(cellfor, "S").linedefined

test("a loop writing a captured local is refused where it is, not a crash", function()
  -- FORPREP and FORLOOP write their registers with the loop's own
  -- value, which exists only on the loop's edges; into a cell, the IR
  -- used it before it was made and LLVM crashed the process
  for _, shape in ipairs { { "FORPREP", 2 }, { "FORPREP", 1 }, { "FORLOOP", 2 } } do
    local g = assert(load(patch(cellfor, shape[1], shape[2]), "=damaged", "b"))
    local what = shape[1] .. " " .. shape[2]
    local msg = raises("compile error for (i64): bad bytecode (instruction ", kjit.jit(g), 3)
    truthy(msg:find("a loop writes the captured local 'x'", 1, true), what .. ": " .. msg)
    truthy(msg:find("test_damaged_bytecode.lua:" .. header .. ": ", 1, true),
           what .. ": at the function's header: " .. msg)
    -- a compiled caller: refused at its call
    local caller = kjit.jit(function(n) return g(n) + 1 end)
    local line = debug.getinfo(1, "l").currentline - 1
    msg = raises("a loop writes the captured local 'x'", caller, 3)
    truthy(msg:find("test_damaged_bytecode.lua:" .. line .. ": compile error for (i64)", 1, true),
           what .. ": at the call: " .. msg)
  end
end)

test("the same function undamaged compiles and computes what Lua does", function()
  local f = kjit.jit(cellfor)
  for _, n in ipairs { 0, 1, 3, -2 } do eq(f(n), cellfor(n), "n = " .. n) end
end)

test("the fuzzer's input: its main chunk refused, not a crash", function()
  local file = assert(io.open("tests/c/bytecode_fixtures/regress-forprep-cell-dominance.luac", "rb"))
  local bin = file:read("a")
  file:close()
  local main = assert(load(bin, "=fuzzed", "b"))
  raises("compile error for (): bad bytecode (instruction 21: a loop writes the captured local 'kjit')",
         kjit.jit(main))
end)

test("a closure with fewer or more upvalues than its prototype is refused", function()
  -- load() gives the closure as many upvalues as the chunk's header says,
  -- while Lua's lua_getupvalue trusts the prototype's count: with fewer,
  -- reading them while compiling read past the closure (a crash)
  local K = 5
  local function addk(x) return x + K end
  local s = string.dump(addk)
  local at = 32   -- the header's byte: 31 bytes of header before it in 5.4
  eq(s:byte(at), 1, "the dumped header's count")
  for _, n in ipairs { 0, 2 } do
    local g = assert(load(s:sub(1, at - 1) .. string.char(n) .. s:sub(at + 1), "=damaged", "b"))
    eq(debug.getinfo(g, "u").nups, n, "the closure's count")
    local msg = raises("bad bytecode (the function has " .. n .. " upvalues, its prototype 1)",
                       kjit.jit(g), 1)
    truthy(msg:find("compile error for (i64)", 1, true), msg)
  end
  eq(kjit.jit(addk)(1), 6, "undamaged")
end)

-- numeric for loops whose FORLOOP does not step its FORPREP's index: the
-- body writes the hidden index (ADD 3 2 7 for ADD 2 2 7), or FORPREP's A
-- moved (FORPREP 0 for FORPREP 2); code generation crashed on the value it
-- was given. Found by compiling chunks with damaged instructions (seeds
-- 702690 and 702250 of a scratch fuzzer, in this session's report).
test("a FORLOOP whose index is not its loop's is refused, not a crash", function()
  for _, file in ipairs { "regress-forloop-index-written.luac", "regress-forloop-a-mismatch.luac" } do
    local f = assert(io.open("tests/c/bytecode_fixtures/" .. file, "rb"))
    local bin = f:read("a")
    f:close()
    local g = assert(load(bin, "=damaged", "b"))
    for _, sig in ipairs { "(i64, i64, i64)", "(f64[:], i64)", "(f64, f64)" } do
      local jf = kjit.jit(g)
      local ok, msg = pcall(jf.compile, jf, sig)
      truthy(not ok, file .. " " .. sig .. ": compiled")
      truthy(tostring(msg):find("FORLOOP's index is not its loop's", 1, true), file .. ": " .. tostring(msg))
    end
  end
end)
