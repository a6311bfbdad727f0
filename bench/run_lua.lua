-- bench/run_lua.lua: time one kernel of bench/kernels.lua in one process.
--   lua5.4 bench/run_lua.lua kjit   <kernel> <runs> <params...>   (LUA_CPATH finds kjit.so)
--   lua5.4 bench/run_lua.lua lua    <kernel> <runs> <params...>   (Lua tables)
--   luajit bench/run_lua.lua luajit <kernel> <runs> <params...>   (FFI arrays)
-- Modes kjit-nobounds and kjit-fastmath compile the kernel with
-- {boundscheck = false} or {fastmath = true} (for finding where time goes);
-- lua-kjitarrays runs the kernel interpreted over kjit arrays (what the
-- function does before kjit.jit, indexing through the arrays' metamethods).
-- One warm-up call (it compiles, for kjit; LuaJIT records its traces), then
-- <runs> timed calls, each after an untimed reset of the inputs. Prints
--   result <median s> <min s> <runs> <checksum>
-- Times are process CPU time (os.clock), as in the C and Numba runners, so
-- a neighbour process on a shared machine does not inflate them.
local mode, name, runs = arg[1], arg[2], tonumber(arg[3])
local params = {}
for i = 4, #arg do params[#params + 1] = tonumber(arg[i]) end

local here = arg[0]:match("^(.*[/\\])") or ""
local W = dofile(here .. "workload.lua")
local spec = W.spec[name]
if not spec or not runs or #params ~= #spec.params then
  io.stderr:write("usage: run_lua.lua kjit|lua|luajit <kernel> <runs> <params...>\n")
  os.exit(2)
end

local A = {}
local kopts = ({ ["kjit-nobounds"] = { boundscheck = false }, ["kjit-fastmath"] = { fastmath = true } })[mode]
if mode == "kjit" or kopts or mode == "lua-kjitarrays" then
  local kjit = require "kjit"
  A.vector = function(n, dtype) return kjit.zeros(n, dtype) end
  A.matrix = function(r, c, dtype) return kjit.zeros({ r, c }, dtype) end
  A.prep = kjit.jit
  A.tonumber = tonumber
  A.kernel = function(f) return kjit.jit(f, kopts) end
  if mode == "lua-kjitarrays" then A.kernel = function(f) return f end end
elseif mode == "lua" then
  A.vector = function(n, dtype)
    local z = (dtype == "i32" or dtype == "i64") and 0 or 0.0
    local t = {}
    for i = 1, n do t[i] = z end
    return t
  end
  A.matrix = function(r, c, dtype)
    local t = {}
    for i = 1, r do t[i] = A.vector(c, dtype) end
    return t
  end
  A.prep = function(f) return f end
  A.tonumber = tonumber
  A.kernel = function(f) return f end
elseif mode == "luajit" then
  -- Zero-filled C memory (malloc'd: a non-GC64 LuaJIT cannot hold 64 MB
  -- arrays on its own heap). One extra leading element per dimension makes
  -- the kernels' 1-based indices valid without changing their text:
  -- a vector of n is T[n + 1], a matrix r x c is T[r + 1][c + 1] (one
  -- padding column per row).
  local ffi = require "ffi"
  ffi.cdef [[ void *calloc(size_t n, size_t size); void free(void *p); ]]
  local ctype = { f32 = "float", f64 = "double", i32 = "int32_t", i64 = "int64_t" }
  local function alloc(count, ct)
    local p = ffi.C.calloc(count, ffi.sizeof(ct))
    assert(p ~= nil, "out of memory")
    return ffi.gc(p, ffi.C.free)
  end
  local keep = {}     -- the owning pointers (the casts below do not own)
  A.vector = function(n, dtype)
    local ct = ctype[dtype]
    local p = alloc(n + 1, ct)
    keep[#keep + 1] = p
    return ffi.cast(ct .. "*", p)
  end
  A.matrix = function(r, c, dtype)
    local ct = ctype[dtype]
    local p = alloc((r + 1) * (c + 1), ct)
    keep[#keep + 1] = p
    return ffi.cast(ffi.typeof("$(*)[$]", ffi.typeof(ct), c + 1), p)
  end
  A.prep = function(f) return f end
  A.tonumber = tonumber
  A.kernel = function(f) return f end
else
  io.stderr:write("run_lua.lua: unknown mode '" .. tostring(mode) .. "'\n")
  os.exit(2)
end

local f = A.kernel(W.kernels[name])
local st = spec.setup(A, params)
local clock = os.clock

spec.reset(st)
local ret = spec.run(f, st)          -- warm-up: compiles (kjit), records traces (LuaJIT)
local times = {}
for r = 1, runs do
  spec.reset(st)
  local t0 = clock()
  ret = spec.run(f, st)
  times[r] = clock() - t0
end
table.sort(times)
local median = times[math.floor((runs + 1) / 2)]
if runs % 2 == 0 then median = (times[runs / 2] + times[runs / 2 + 1]) / 2 end
print(string.format("result %.9g %.9g %d %.17g", median, times[1], runs, spec.check(st, ret)))
