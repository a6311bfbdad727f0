-- run1.lua: runs one program of bench/programs/ once, as its author wrote
-- it, interpreted or compiled whole by kjit; written for Lua 5.1 to 5.4
-- and LuaJIT (the peers run it too).
--   lua5.4 bench/programs/run1.lua lua|kjit PROGRAM.lua [ARGS...]
--   luajit bench/programs/run1.lua lua PROGRAM.lua [ARGS...]
-- The program's output goes to stdout unchanged; stderr gets one line,
-- "time <seconds>" (CPU time of the run, load and compile included), or
-- "refused <message>" with exit status 3 when kjit will not compile the
-- program (its main chunk and everything it calls: kjit.jit(loadfile(p))),
-- and before it "interpreted" when kjit leaves the main chunk to the
-- interpreter (docs/guide/functions.md "Main chunks that run interpreted").
-- The only help a program gets is Lua 5.1's `unpack` where the running
-- Lua lacks it, and its own folder on package.path (scimark's library).
local mode, path = arg[1], arg[2]
if (mode ~= "lua" and mode ~= "kjit") or not path then
  io.stderr:write("usage: run1.lua lua|kjit PROGRAM.lua [ARGS...]\n")
  os.exit(2)
end
unpack = unpack or table.unpack
local dir = path:match("^(.*[/\\])") or "./"
package.path = dir .. "?.lua;" .. package.path
-- the program sees the arguments after its own name, as when run directly
local args = { [0] = path }
for i = 3, #arg do args[#args + 1] = arg[i] end
arg = args

local t0 = os.clock()
local chunk = assert(loadfile(path))
if mode == "kjit" then
  local kjit = require "kjit"
  local f = kjit.jit(chunk)
  -- compile first, so that a refusal is told apart from the program's own
  -- errors (the main chunk takes no arguments: it reads `arg`)
  local ok, err = pcall(f.compile, f, "()")
  if not ok then
    io.stderr:write("refused ", (tostring(err):gsub("\n.*", "")), "\n")
    os.exit(3)
  end
  if f.tier == 0 then io.stderr:write("interpreted\n") end
  chunk = f
end
-- the programs read the global `arg`; the main chunk gets no arguments (a
-- vararg of strings would be a string argument to compile for)
chunk()
io.stdout:flush()
io.stderr:write(string.format("time %.6f\n", os.clock() - t0))
