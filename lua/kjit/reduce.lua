-- kjit/reduce.lua: reductions. kjit.reduce(fn [, opts]) folds a binary Lua
-- function over a kjit array on the CPU (sequentially, or in chunks on the
-- thread pool); kjit.cuda.reduce(fn [, opts]) does it on the GPU with a
-- two-stage kernel. Both GENERATE Lua source for a wrapper around fn (a
-- loop, or a kernel) and compile it with kjit.jit / kjit.cuda.jit: fn is an
-- upvalue of the generated function, so the compiler inlines it as a callee.
--
-- kjit compiles the generated function's bytecode (and fn's, whatever
-- chunk it came from). Errors about the caller's arguments are raised with the error
-- level of the user's frame, so they name the user's line; errors raised
-- inside fn carry fn's own file:line (kjit reports them so).
-- provides: kjit.reduce kjit.cuda.reduce
local kjit, std = ...   -- std: kjit's own copies of the libraries (src/host/lua_parts.c)
local cuda = kjit.cuda
local debug, math, string, table, load = std.debug, std.math, std.string, std.table, std.load
-- base functions, fixed when kjit is opened (a script that replaces or
-- removes globals later does not change this module)
local assert, error, pairs, pcall, setmetatable, tostring, type =
  assert, error, pairs, pcall, setmetatable, tostring, type

-- Accumulator dtype per element dtype. Integers are folded as Lua folds
-- them, in 64 bits (compiled code reads every integer element as an i64),
-- so a sum of i32 values does not wrap at 32 bits, exactly as the
-- interpreted reference; floats stay in their own precision.
local ACC = {
  i8 = "i64", u8 = "i64", i16 = "i64", u16 = "i64", i32 = "i64", u32 = "i64",
  i64 = "i64", u64 = "i64", f32 = "f32", f64 = "f64",
  f16 = "f64",     -- elements read as Lua floats (f64), folded as Lua folds them
  bool = "bool",   -- any/all: fn takes and returns booleans
}

local EMPTY = "reduction of an empty array needs an initial value"

-- fn may be a Lua function or a kjit.jit object (its .lua is the function).
local function check_fn(fn, who)
  local lfn = fn
  if type(fn) == "userdata" then
    local ok, l = pcall(function() return fn.lua end)
    lfn = ok and l or nil
  end
  if type(lfn) ~= "function" then
    error(string.format("bad argument #1 to '%s' (function expected, got %s)", who, type(fn)), 3)
  end
  local info = debug.getinfo(lfn, "S")
  if info.what == "C" then
    error(string.format("bad argument #1 to '%s' (Lua function expected, got C function; "
      .. "wrap it: function(a, b) return math.max(a, b) end)", who), 3)
  end
  return lfn
end

-- Every option of who's table, defaults filled; unknown names and wrongly
-- typed values are errors at the caller's line (kjit's one option parser,
-- src/host/options.c).
local function check_opts(opts, who)
  local o, err = std.options(who, opts)
  if not o then error(err, 3) end
  return o
end

-- Compiles generated source: `src` is the body of a chunk whose varargs
-- are the upvalues (fn first); it returns the wrapper.
local function generate(src, ...)
  local chunk = assert(load(src))
  return chunk(...)
end

-- Errors of the generated code. Its chunks are loaded from the text above,
-- so kjit locates their errors in it ('[string "local f = ..."]:4: ...'),
-- a place the user never wrote; and when fn raises on every path the
-- compiler sees only that it returns nothing, so the kernel fails to
-- compile and fn's own message is lost. Such errors come from fn (what it
-- returns, or that it always raises), so they are reported at fn's
-- definition, and if calling fn in Lua on the data's first elements
-- raises, that error is reported instead: fn's own file:line and message,
-- as the interpreter would give. Errors already located elsewhere (fn's
-- own run-time errors) pass unchanged. probe: nil, or a function calling
-- fn as the generated loop first does.
local function relocate(err, lfn, who, probe)
  if type(err) ~= "string" then return err end
  local body = err:match('^%[string "local f.-"%]:%d+: (.*)$')
  if body == nil then
    if err:find("^[^\n]-:%d+: ") then return err end   -- located: fn's own line
    body = err
  end
  if probe then
    local ok, e = pcall(probe)
    if not ok then return e end
  end
  local info = debug.getinfo(lfn, "S")
  return string.format("%s:%d: %s: %s (in the loop %s runs around this function, which "
    .. "must take two numbers and return one number of the array's kind)",
    info.short_src, info.linedefined, who, body, who)
end

-- Calls f(...) and raises relocate's version of its error.
local function run(lfn, who, probe, f, ...)
  local ok, r = pcall(f, ...)
  if not ok then error(relocate(r, lfn, who, probe), 0) end
  return r
end

-- A probe calling fn as the fold starts: fn(a[1], a[2]) or fn(init, a[1])
-- (a: a 1-D host array of n >= 1 elements).
local function probe_of(lfn, a, n, init)
  if init ~= nil then return function() return lfn(init, a[1]) end end
  if n >= 2 then return function() return lfn(a[1], a[2]) end end
  return nil
end

-- init: nil or a number (reducers' error level: check_init, call, __call, user)
local function check_init(init)
  if init ~= nil and type(init) ~= "number" and type(init) ~= "boolean" then
    error(string.format("bad argument #2 to 'reducer' (number or boolean expected as the initial value, got %s)", type(init)), 4)
  end
end

-- The compiled wrappers and kernels are cached per function and options,
-- so kjit.reduce(add) written inside a loop compiles once. Weak keys: the
-- entry goes when the function does (values that refer back to their key
-- do not keep it alive: Lua 5.4 weak-key tables are ephemerons).
local memo = setmetatable({}, { __mode = "k" })
local function cached(key, tag, opts, make)
  local parts = { tag }
  for k, v in pairs(opts) do parts[#parts + 1] = tostring(k) .. "=" .. tostring(v) end
  table.sort(parts)
  local okey = table.concat(parts, ";")
  local per = memo[key]
  if not per then per = {}; memo[key] = per end
  local v = per[okey]
  if v == nil then v = make(); per[okey] = v end
  return v
end

-- A reducer is a table callable as r(arr, ...); r.lua is the user's fn.
local Reducer = {}
Reducer.__index = Reducer
-- not a tail call (the parentheses): call() -> __call -> the user's frame is
-- level 3 from call(), where error(msg, 3) points
Reducer.__call = function(self, ...) return (self._call(...)) end
Reducer.__tostring = function(self) return "kjit reducer (" .. self.target .. ")" end

-- =====================================================================
-- CPU: kjit.reduce
-- =====================================================================

-- fold(a, lo, hi): fn over a[lo..hi], starting from a[lo] (lo <= hi).
local FOLD = [[
local f = ...
return function(a, lo, hi)
  local acc = a[lo]
  for i = lo + 1, hi do acc = f(acc, a[i]) end
  return acc
end
]]

-- fold_init(a, init): fn over all of a starting from init: the exact order
-- of the specification, fn(...fn(fn(init, a1), a2)..., an).
local FOLD_INIT = [[
local f = ...
return function(a, init)
  local acc = init
  for i = 1, #a do acc = f(acc, a[i]) end
  return acc
end
]]

-- chunks(a, partials, chunk): chunk c (of #partials) is a[(c-1)*chunk+1 ..
-- min(c*chunk, #a)], folded sequentially into partials[c]. Chunks run on
-- the thread pool (each writes its own element: no locks); the caller
-- combines partials in chunk order, so fn only needs to be associative.
local CHUNKS = [[
local f, kjit = ...
return function(a, partials, chunk)
  local n = #a
  for c in kjit.prange(1, #partials) do
    local lo = (c - 1) * chunk + 1
    local hi = c * chunk
    if hi > n then hi = n end     -- no global math: the host may not have it
    local acc = a[lo]
    for i = lo + 1, hi do acc = f(acc, a[i]) end
    partials[c] = acc
  end
end
]]

-- The chunking depends only on the array's size (never on the number of
-- threads), so a parallel reduction gives the same result on every machine
-- and every run.
local MIN_CHUNK, MAX_CHUNKS = 16384, 256

-- The reducer's argument as a 1-D array (a view for n-D), or nil and what it is.
local function flat(arr)
  if not kjit.isarray(arr) then
    return nil, cuda.is_device_array(arr) and "a device array (use kjit.cuda.reduce)" or type(arr)
  end
  if arr.ndim > 1 then return arr:reshape(arr.size) end
  return arr
end

function kjit.reduce(fn, opts)
  -- a kjit.jit object is compiled into the generated loop like its Lua
  -- function, with the reducer's options (kjit.jit objects called from
  -- compiled code always take their caller's options)
  local callee = fn
  local lfn = check_fn(fn, "kjit.reduce")
  opts = check_opts(opts, "kjit.reduce")
  local target = opts.target
  local jopts = { fastmath = opts.fastmath, boundscheck = opts.boundscheck, cache = opts.cache, opt = opts.opt }
  -- kjit.jit compiles lazily, per argument types (dtype of the array, type
  -- of init): making these objects costs nothing until the first call.
  local w = cached(callee, "cpu", jopts, function()
    return { fold = kjit.jit(generate(FOLD, callee), jopts), fold_init = kjit.jit(generate(FOLD_INIT, callee), jopts) }
  end)
  local fold, fold_init = w.fold, w.fold_init
  local chunks
  if target == "parallel" then
    local popts = { parallel = true }
    for k, v in pairs(jopts) do popts[k] = v end
    -- not cached when kjit.jit refuses: the error is raised at every call
    local ok, res = pcall(cached, callee, "parallel", popts, function() return kjit.jit(generate(CHUNKS, callee, kjit), popts) end)
    if not ok then error("kjit.reduce: target 'parallel': " .. tostring(res), 2) end
    chunks = res
  end

  local function call(arr, init)
    local a, what = flat(arr)
    if not a then error("bad argument #1 to 'reducer' (kjit array expected, got " .. what .. ")", 3) end
    check_init(init)
    local n = a.size
    if n == 0 then
      if init == nil then error(EMPTY, 3) end
      return init
    end
    -- the element itself, as the Lua fold gives it (compiled code would
    -- make it a float if fn returns floats for integer elements)
    if n == 1 and init == nil then return a[1] end
    local probe = probe_of(lfn, a, n, init)
    if chunks and n > MIN_CHUNK then
      local chunk = math.max(MIN_CHUNK, (n + MAX_CHUNKS - 1) // MAX_CHUNKS)
      local partials = kjit.empty((n + chunk - 1) // chunk, ACC[a.dtype])
      -- a run-time error inside fn carries fn's own line: kept; errors of
      -- the generated code (storing a chunk's result, compiling) go to fn
      run(lfn, "kjit.reduce", probe_of(lfn, a, n), chunks, a, partials, chunk)
      a, n = partials, partials.size
    end
    if init == nil then return run(lfn, "kjit.reduce", probe, fold, a, 1, n) end
    return run(lfn, "kjit.reduce", probe, fold_init, a, init)
  end
  return setmetatable({ _call = call, lua = lfn, target = target }, Reducer)
end

-- =====================================================================
-- GPU: kjit.cuda.reduce
-- =====================================================================
--
-- Why two stages: blocks cannot wait for each other inside one launch, so
-- kernel 1 leaves one partial per block in a device array, and kernel 2 (the
-- same kernel, one block) reduces those partials; only the final value is
-- copied back. Kernel 1 makes a single pass over the data: a grid-stride
-- loop (sized for a few blocks per SM, so every SM streams memory) where each
-- thread folds its elements in a register, then a shared-memory tree in the
-- block. No atomics, no host round trips per element.
--
-- Threads that own no element: thread g (1-based over the grid) owns
-- x[g], x[g + stride], ...; it owns something iff g <= n, and it starts its
-- fold from its first element, so there is no identity value to invent (fn
-- is arbitrary). In block b, the threads that own something are a prefix
-- 1..m of the block, m = n - b * BLOCK; the tree combines slot t with slot
-- t + step only when t + step <= m, which keeps exactly the slots that hold
-- values (a has-value flag per slot, computed instead of stored). The host
-- never launches a block with m < 1.
--
-- Order: thread g folds x[g], x[g+stride], ... and the tree combines slots
-- t and t + step, so elements are not combined in array order: fn must be
-- associative AND commutative (as for CUB's DeviceReduce), e.g. +, *,
-- min, max, bitwise and/or/xor. Float sums round differently from a
-- sequential sum.
local BLOCK = 256           -- threads per block (a power of two: the tree halves it)
local BLOCKS_PER_SM = 8     -- 8 x 256 = 2048 threads: a full H100/A100 SM

-- Element access for an n-D device array seen as flat (1-based index v):
-- device arrays have no reshape, so the kernel computes the n-D index.
local function element(ndim, v)
  if ndim == 1 then return string.format("x[%s]", v) end
  local q = "(" .. v .. " - 1)"
  local parts, inner = {}, "1"
  for d = ndim, 1, -1 do
    local idx
    if d == 1 then idx = string.format("%s // (%s) + 1", q, inner)
    elseif d == ndim then idx = string.format("%s %% s%d + 1", q, d)
    else idx = string.format("%s // (%s) %% s%d + 1", q, inner, d) end
    parts[d] = "[" .. idx .. "]"
    inner = inner .. " * s" .. d
  end
  return "x" .. table.concat(parts)
end

local function kernel_source(acc_dtype, ndim)
  local shapes = {}
  for d = 2, ndim do shapes[#shapes + 1] = string.format("  local s%d = x.shape[%d]\n", d, d) end
  -- 1-D: four loads per iteration, written before the combining so that
  -- several loads per thread are in flight (memory-level parallelism is what
  -- reaches the copy bandwidth); each thread still folds in index order.
  local unrolled = ndim == 1 and [[
    while i + 3 * stride <= n do
      local v1, v2, v3, v4 = x[i], x[i + stride], x[i + 2 * stride], x[i + 3 * stride]
      acc = f(f(f(f(acc, v1), v2), v3), v4)
      i = i + 4 * stride
    end
]] or ""
  return string.format([[
local f, cuda = ...
return function(x, partials, n)
%s  local sh = cuda.shared.array(%d, "%s")
  local t = cuda.threadIdx.x + 1
  local stride = cuda.gridsize(1)
  local i = cuda.grid(1)
  if i <= n then
    local acc = %s
    i = i + stride
%s    while i <= n do
      acc = f(acc, %s)
      i = i + stride
    end
    sh[t] = acc
  end
  cuda.syncthreads()
  local m = n - cuda.blockIdx.x * %d
  local step = %d
  while step > 0 do
    if t <= step and t + step <= m then sh[t] = f(sh[t], sh[t + step]) end
    cuda.syncthreads()
    step = step // 2
  end
  if t == 1 then partials[cuda.blockIdx.x + 1] = sh[1] end
end
]], table.concat(shapes), BLOCK, acc_dtype, element(ndim, "i"), unrolled, element(ndim, "i"),
    BLOCK, BLOCK // 2)
end

local sm_count = {}   -- [device id] = multiprocessors

-- The most blocks kernel 1 is launched with on the current device.
local function max_blocks()
  -- The simulator runs blocks one after another, each thread of a block
  -- that synchronizes on an OS thread: more blocks only cost time there.
  -- Two still exercise the grid-stride loop and a stage 2 with partials.
  if cuda.simulating() then return 2 end
  local id = cuda.current_device()
  if not sm_count[id] then
    local dev = cuda.devices()[id + 1]
    sm_count[id] = dev and dev.multiprocessors or 1
  end
  return sm_count[id] * BLOCKS_PER_SM
end

-- Device scratch shared by every reducer: the block partials, the result
-- and its host copy, per mode, device and accumulator dtype. A call
-- finishes (it synchronizes to read its result) before the next one starts,
-- so one set is enough.
local scratch_sets = {}
local function scratch(acc_dtype)
  local key = tostring(cuda.simulating()) .. ":" .. cuda.current_device() .. ":" .. acc_dtype
  local s = scratch_sets[key]
  if not s then
    s = { partials = cuda.device_array(max_blocks(), acc_dtype), out = cuda.device_array(1, acc_dtype),
          host = kjit.empty(1, acc_dtype) }
    scratch_sets[key] = s
  end
  return s
end

function cuda.reduce(fn, opts)
  local lfn = check_fn(fn, "kjit.cuda.reduce")
  opts = check_opts(opts, "kjit.cuda.reduce")
  -- our own indices are in range by construction (i <= n, t + step <= m <= BLOCK)
  local kopts = { boundscheck = false, fastmath = opts.fastmath, fma = opts.fma, cache = opts.cache, opt = opts.opt }
  -- per fn and options: [acc dtype .. ndim] = cuda.jit kernel (which
  -- specializes itself per input dtype), and the CPU combine for init
  local state = cached(lfn, "cuda", kopts, function() return { kernels = {} } end)

  local function kernel(acc_dtype, ndim)
    local key = acc_dtype .. ndim
    local k = state.kernels[key]
    if not k then
      k = cuda.jit(generate(kernel_source(acc_dtype, ndim), lfn, cuda), kopts)
      state.kernels[key] = k
    end
    return k
  end

  local function call(arr, init, stream)
    local dx, ndim, n
    check_init(init)
    if stream ~= nil and not (type(stream) == "userdata"
        and debug.getmetatable(stream) == debug.getregistry()["kjit.cuda.stream"]) then
      error(string.format("bad argument #3 to 'reducer' (kjit.cuda stream expected, got %s)", type(stream)), 3)
    end
    if kjit.isarray(arr) then
      n = arr.size
      if n > 0 then
        dx = cuda.to_device(arr.ndim > 1 and arr:reshape(n) or arr, stream)
        ndim = 1
      end
    elseif cuda.is_device_array(arr) then
      dx, n, ndim = arr, arr.size, arr.ndim
    else
      error(string.format("bad argument #1 to 'reducer' (kjit array or device array expected, got %s)", type(arr)), 3)
    end
    if n == 0 then
      if init == nil then error(EMPTY, 3) end
      return init
    end
    local acc_dtype = ACC[dx.dtype]
    local s = scratch(acc_dtype)
    local nblocks = math.min((n + BLOCK - 1) // BLOCK, max_blocks())
    -- errors of the kernels go to fn (relocate); the probe reads the first
    -- elements on the host (a copy of a device array: only on an error)
    local function probe()
      local h = kjit.isarray(arr) and arr or arr:copy_to_host()
      h = h.ndim > 1 and h:reshape(h.size) or h
      if n >= 2 then return lfn(h[1], h[2]) end
    end
    local function stages()
      -- stage 1: one partial per block (every block owns at least one element)
      kernel(acc_dtype, ndim)[{ nblocks, BLOCK, stream }](dx, s.partials, n)
      -- stage 2: one block folds the partials (n = nblocks of them)
      kernel(acc_dtype, 1)[{ 1, BLOCK, stream }](s.partials, s.out, nblocks)
    end
    run(lfn, "kjit.cuda.reduce", probe, stages)
    s.out:copy_to_host(s.host, stream)
    if stream then stream:synchronize() end
    local r = s.host[1]
    if init ~= nil then
      state.combine = state.combine or kjit.jit(lfn)
      r = run(lfn, "kjit.cuda.reduce", nil, state.combine, init, r)
    end
    return r
  end

  local r = setmetatable({ _call = call, lua = lfn, target = "cuda" }, Reducer)
  -- r:kernel(dtype [, ndim]): the cuda.jit kernel used for arrays of that
  -- element dtype (to compile or inspect it: r:kernel("f32"):compile(...)).
  function r.kernel(_, dtype, nd)
    if type(dtype) == "userdata" then dtype = tostring(dtype) end   -- kjit.f32
    if not ACC[dtype] then error("kernel: unknown dtype '" .. tostring(dtype) .. "'", 2) end
    return kernel(ACC[dtype], nd or 1)
  end
  return r
end
