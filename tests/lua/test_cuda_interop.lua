-- test_cuda_interop.lua: kjit.cuda next to CUDA C code (src/host/interop.c,
-- src/host/kernel_link.c, src/libs/nvrtc.c; common/cuda_extern.h):
--   cuda.declare_device + cuda.jit's link option: in the simulator (the sim
--   implementations, compiled and interpreted, differential against plain
--   Lua), as PTX (ptxas on each, nvlink of the kernel with the link file:
--   the real toolkit's linker), and against the mock driver's linker (child
--   processes: tests/c/mock_libcuda.c) with NVRTC compiling the .cu;
--   raw device pointers: d:device_ptr, d:cuda_array_interface,
--   cuda.from_device_ptr, cuda.from_cuda_array_interface in the simulator
--   and on the mock driver.
local kjit = require "kjit"
local cuda = kjit.cuda

local MODDIR, LUA = arg[1], arg[-1]
local MOCK = MODDIR .. "/libmockcuda.so"
local CU = "tests/cuda/functions.cu"
local CUDA_BIN = (os.getenv("CUDA_HOME") or "/usr/local/cuda") .. "/bin/"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function file_exists(p) local f = io.open(p) if f then f:close() return true end return false end
local function write_file(p, s) local f = assert(io.open(p, "w")); f:write(s); f:close() end
-- (the toolkit's programs without the sanitizer build's LD_PRELOAD: nvcc
-- crashes under libasan)
local function sh(cmd)
  local p = io.popen("env -u LD_PRELOAD " .. cmd .. " 2>&1")
  local out = p:read("a")
  return p:close(), out
end
local function tool(name)
  if file_exists(CUDA_BIN .. name) then return CUDA_BIN .. name end
  local p = io.popen("command -v " .. name .. " 2>/dev/null")
  local found = p:read("a")
  p:close()
  return found ~= "" and name or nil
end

local function with_sim(mode, fn)
  cuda.simulate(mode)
  local ok, err = pcall(fn)
  cuda.simulate(false)
  if not ok then error(err, 0) end
end

-- the declarations the tests use (their sim functions: what functions.cu does)
local mul = cuda.declare_device("mul_f32_f32", "float32(float32, float32)",
  { sim = function(x, y) return x * y end })
local sum_reduce = cuda.declare_device("sum_reduce", "float32(CPointer(float32), int32)",
  { sim = function(a, n)
      local s = 0.0
      for i = 1, n do s = s + a[i] end
      return s
    end })
local mix = cuda.declare_device("mix_ints", "int64(int32, int64, uint8)",
  { sim = function(a, b, c) return a * 1000 + b * 10 + c end })
local scale = cuda.declare_device("scale_inplace", "void(float64[:], int32, float64)",
  { sim = function(a, n, s) for i = 1, n do a[i] = a[i] * s end end })
local nosim = cuda.declare_device("mul_f32_f32", "float32(float32, float32)")

local function k_mul(r, x, y)
  local i = cuda.grid(1)
  if i <= #r then r[i] = mul(x[i], y[i]) end
end
local function k_sum(r, x)
  local i = cuda.grid(1)
  if i <= #r then r[i] = sum_reduce(x, i) end
end
local function k_mix(r)
  local i = cuda.grid(1)
  if i <= #r then r[i] = mix(i, i * 3, 250 + i) end
end
local function k_scale(a, s)
  if cuda.grid(1) == 1 then scale(a, #a, s) end
end
local function k_nosim(r, x, y)
  local i = cuda.grid(1)
  if i <= #r then r[i] = nosim(x[i], y[i]) end
end

----------------------------------------------------------------------
-- declarations
----------------------------------------------------------------------

test("declare_device: fields, tostring, and the sim function called from Lua", function()
  eq(mul.name, "mul_f32_f32", "name")
  eq(mul.signature, "float32(float32, float32)", "signature")
  eq(tostring(mul), "cuda.declare_device('mul_f32_f32', 'float32(float32, float32)')", "tostring")
  eq(mul(2.0, 3.5), 7.0, "interpreted call runs sim")
  eq(mix(1, 2, 3), 1023, "integers")
  raises("external device function 'mul_f32_f32' (cuda.declare_device) runs only in kernels "
    .. "compiled for the GPU", function() return nosim(1.0, 2.0) end)
  raises("{sim = function(...) ... end}", function() return nosim(1.0, 2.0) end)
end)

test("declare_device: bad names, signatures and options are refused", function()
  raises("cuda.declare_device: bad function name 'a-b'", cuda.declare_device, "a-b", "void()")
  raises("cuda.declare_device: bad function name '1x'", cuda.declare_device, "1x", "void()")
  raises("the name 'kjit_kernel' is reserved", cuda.declare_device, "kjit_kernel", "void()")
  raises("the name '__nv_sinf' is reserved", cuda.declare_device, "__nv_sinf", "float32(float32)")
  raises("bad signature '(float32)': the result type comes first", cuda.declare_device, "f", "(float32)")
  raises("bad signature 'float32(float32': ", cuda.declare_device, "f", "float32(float32")
  raises("argument #2: 'bool' is not a number type", cuda.declare_device, "f", "void(int32, bool)")
  raises("argument #1: 'f16' is not a number type", cuda.declare_device, "f", "void(f16)")
  raises("the result must be a number type (int32, float32, ...) or void, not 'float32[...]'",
    cuda.declare_device, "f", "float32[:](int32)")
  raises("unknown option 'link' (known: sim)", cuda.declare_device, "f", "void()", { link = 1 })
  raises("option 'sim' must be a Lua function, got number", cuda.declare_device, "f", "void()",
    { sim = 3 })
  raises("option 'sim' must be a Lua function, got function", cuda.declare_device, "f", "void()",
    { sim = print })
  raises("bad argument #2 to '?' (string expected, got no value)",
    cuda.declare_device, "f")
end)

----------------------------------------------------------------------
-- the simulator: sim implementations, compiled and interpreted
----------------------------------------------------------------------

local function sim_cases()
  local n = 37
  local x = kjit.arange(n, "f32")
  local y = kjit.linspace(-3, 3, n, "f32")
  -- plain Lua models, stored through f32 arrays as the kernels store
  local want_mul, want_sum, want_mix = kjit.zeros(n, "f32"), kjit.zeros(n, "f32"), kjit.zeros(n, "i64")
  for i = 1, n do
    want_mul[i] = x[i] * y[i]
    local s = 0.0
    for j = 1, i do s = s + x[j] end
    want_sum[i] = s
    want_mix[i] = i * 1000 + i * 3 * 10 + 250 + i
  end
  return n, x, y, want_mul, want_sum, want_mix
end

for _, mode in ipairs({ true, "interpret" }) do
  test("simulator (" .. tostring(mode) .. "): external functions run their sim implementation",
    function()
    with_sim(mode, function()
      local n, x, y, want_mul, want_sum, want_mix = sim_cases()
      local r = cuda.device_array(n, "f32")
      cuda.jit(k_mul, { link = { CU } })[{ 2, 32 }](r, cuda.to_device(x), cuda.to_device(y))
      local got = r:copy_to_host()
      for i = 1, n do eq(got[i], want_mul[i], "mul " .. i) end
      cuda.jit(k_sum, { link = { CU } })[{ 2, 32 }](r, cuda.to_device(x))
      got = r:copy_to_host()
      for i = 1, n do eq(got[i], want_sum[i], "sum_reduce " .. i) end
      local ri = cuda.device_array(n, "i64")
      cuda.jit(k_mix, { link = { CU } })[{ 2, 32 }](ri)
      got = ri:copy_to_host()
      for i = 1, n do eq(got[i], want_mix[i], "mix " .. i) end
      local a = cuda.to_device(kjit.arange(5, "f64"))
      cuda.jit(k_scale)[{ 1, 4 }](a, 2.5)
      got = a:copy_to_host()
      for i = 1, 5 do eq(got[i], (i - 1) * 2.5, "scale " .. i) end
    end)
  end)
end

local function k_nosim_dead(r, x, y)
  local i = cuda.grid(1)
  if i <= #r then r[i] = x[i] + y[i] end
  if i > 1000 then r[1] = nosim(x[1], y[1]) end   -- never runs here
end

test("simulator: a call without a sim implementation raises when it runs, as interpreted", function()
  local msgs = {}
  for _, mode in ipairs({ true, "interpret" }) do
    with_sim(mode, function()
      local r, x = cuda.device_array(4, "f32"), cuda.to_device(kjit.full(4, 1, "f32"))
      local m = raises("external device function 'mul_f32_f32' (cuda.declare_device) runs only in "
        .. "kernels compiled for the GPU; give the declaration a Lua implementation to run it in "
        .. "the simulator and on the CPU: cuda.declare_device(name, signature, {sim = "
        .. "function(...) ... end})", function() cuda.jit(k_nosim, { link = { CU } })[{ 1, 4 }](r, x, x) end)
      msgs[#msgs + 1] = m:match("test_cuda_interop.lua:%d+:")
      truthy(msgs[#msgs], "located: " .. m)
      cuda.jit(k_nosim_dead)[{ 1, 4 }](r, x, x)   -- the call never runs: no error
      eq(r:copy_to_host()[4], 2.0, "the rest ran")
    end)
  end
  eq(msgs[1], msgs[2], "compiled and interpreted simulators: the same line")
end)

test("kjit.jit calls the sim implementation, as the interpreter does", function()
  local function f(x, y, n)
    local s = 0.0
    for i = 1, n do s = s + mul(x[i], y[i]) + mix(i, i, 1) end
    return s
  end
  local x, y = kjit.arange(9, "f32"), kjit.full(9, 0.5, "f32")
  eq(kjit.jit(f)(x, y, 9), f(x, y, 9), "compiled = interpreted")
  -- the value stays the declaration (a userdata), passed around as one
  local function call(fn, a, b) return fn(a, b) end
  local function h(a, b) return type(mul), type(nosim), call(mul, a, b) end
  local t1, t2, v = kjit.jit(h)(3.0, 4.0)
  eq(t1, "userdata", "type(mul)"); eq(t2, "userdata", "type(nosim)"); eq(v, 12.0, "through a parameter")
  eq(select(3, h(3.0, 4.0)), v, "interpreted")
  local g = function(n) if n > 0 then return nosim(1.0, 2.0) end return n end
  eq(kjit.jit(g)(0), 0, "the call never runs: no error")
  local ok1, e1 = pcall(g, 1)
  local ok2, e2 = pcall(kjit.jit(g), 1)
  eq(ok1, false, "interpreted raises"); eq(ok2, false, "compiled raises")
  eq(e2, e1, "the same message at the same line")
end)

test("kernels: wrong argument counts and types are compile errors naming the declaration", function()
  local function bad_count(r) r[1] = mul(1.0) end
  local function bad_int(r) r[1] = mix(1.5, 2, 3) end
  local function bad_ptr(r, x) r[1] = sum_reduce(r, 3) end
  local function bad_ptr2(r, x) r[1] = sum_reduce(1.0, 3) end
  local function ok_weak(r) r[1] = mul(2, 3) end
  local sig = "void(float32[:], float64[:])"
  raises("external device function 'mul_f32_f32' (float32(float32, float32)) takes 2 arguments, got 1",
    cuda.compile_ptx, bad_count, sig, 80)
  raises("argument #1 of external device function 'mix_ints' (int64(int32, int64, uint8)) is i32: "
    .. "pass an integer (math.floor(x) converts a float), not f64", cuda.compile_ptx, bad_int, sig, 80)
  raises("argument #1 of external device function 'sum_reduce' (float32(CPointer(float32), int32)) "
    .. "is a pointer to f32: pass a f32 array, not f64[:]", cuda.compile_ptx, bad_ptr,
    "void(float64[:], float64[:])", 80)
  raises("is a pointer to f32: pass a f32 array, not f64", cuda.compile_ptx, bad_ptr2, sig, 80)
  local m = raises("takes 2 arguments, got 1", cuda.compile_ptx, bad_count, sig, 80)
  truthy(m:find("test_cuda_interop.lua:%d+:"), "located: " .. m)
  truthy(cuda.compile_ptx(ok_weak, sig, 80):find("mul_f32_f32", 1, true), "integer literals convert")
end)

----------------------------------------------------------------------
-- PTX: numba-cuda's ABI, checked by ptxas and linked by nvlink
----------------------------------------------------------------------

local PTXAS, NVLINK, NVCC = tool("ptxas"), tool("nvlink"), tool("nvcc")
local KERNELS = {
  { k_mul, "void(float32[:], float32[:], float32[:])", "mul_f32_f32", 3 },
  { k_sum, "void(float32[:], float32[:])", "sum_reduce", 3 },
  { k_mix, "void(int64[:])", "mix_ints", 4 },
  { k_scale, "void(float64[:], float64)", "scale_inplace", 4 },
}

test("PTX: each external function is an .extern .func with the result pointer first", function()
  for _, c in ipairs(KERNELS) do
    local ptx = cuda.compile_ptx(c[1], c[2], 80)
    local decl = ptx:match("%.extern %.func%s*%(%.param %.b32 func_retval0%)%s*" .. c[3] .. "%s*(%b())")
    truthy(decl, c[3] .. " declared in:\n" .. ptx:sub(1, 600))
    local np = select(2, decl:gsub("%.param", ""))
    eq(np, c[4], c[3] .. " parameters (result pointer + arguments)")
    truthy(decl:match("^%(%s*%.param %.b64"), c[3] .. ": the result pointer is 64-bit")
  end
end)

if not (PTXAS and NVLINK and NVCC) then
  test("PTX: ptxas and nvlink", function() skip("no CUDA toolkit (ptxas, nvlink, nvcc)") end)
else
  test("PTX: ptxas (sm_75, sm_80, sm_90; CUDA 13 has no sm_70) and nvlink with the .cu's PTX resolve every call", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(sh("mkdir -p " .. q(dir)))
    for _, cc in ipairs({ 75, 80, 90 }) do
      local fptx = dir .. "/functions_" .. cc .. ".ptx"
      local ok, out = sh(q(NVCC) .. " -ptx -rdc=true -arch=sm_" .. cc .. " " .. q(CU) .. " -o " .. q(fptx))
      truthy(ok, "nvcc: " .. out)
      ok, out = sh(q(PTXAS) .. " -c -arch=sm_" .. cc .. " " .. q(fptx) .. " -o " .. q(dir .. "/f.o"))
      truthy(ok, "ptxas functions: " .. out)
      for i, c in ipairs(KERNELS) do
        local kp, ko = dir .. "/k" .. i .. ".ptx", dir .. "/k" .. i .. ".o"
        write_file(kp, cuda.compile_ptx(c[1], c[2], cc))
        ok, out = sh(q(PTXAS) .. " -c -arch=sm_" .. cc .. " " .. q(kp) .. " -o " .. q(ko))
        truthy(ok, "ptxas " .. c[3] .. " sm_" .. cc .. ": " .. out)
        ok, out = sh(q(NVLINK) .. " -arch=sm_" .. cc .. " " .. q(ko) .. " " .. q(dir .. "/f.o")
          .. " -o " .. q(dir .. "/linked.cubin"))
        truthy(ok, "nvlink " .. c[3] .. " sm_" .. cc .. ": " .. out)
        if i == 1 then   -- without the link file: the reference is undefined
          ok, out = sh(q(NVLINK) .. " -arch=sm_" .. cc .. " " .. q(ko) .. " -o " .. q(dir .. "/bad.cubin"))
          truthy(not ok and out:find("Undefined reference to 'mul_f32_f32'", 1, true),
            "nvlink without the link file: " .. out)
        end
      end
    end
    sh("rm -rf " .. q(dir))
  end)
end

if PTXAS and NVLINK and NVCC then
  test("PTX: the kernel links with nvcc's .cubin, .fatbin, .o and .a of the .cu (nvlink)", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(sh("mkdir -p " .. q(dir)))
    local make = {
      cubin = "-cubin", fatbin = "-fatbin", o = "-c", a = "-lib",
    }
    local kp, ko = dir .. "/k.ptx", dir .. "/k.o"
    write_file(kp, cuda.compile_ptx(k_mul, "void(float32[:], float32[:], float32[:])", 90))
    local ok, out = sh(q(PTXAS) .. " -c -arch=sm_90 " .. q(kp) .. " -o " .. q(ko))
    truthy(ok, "ptxas: " .. out)
    for ext, flag in pairs(make) do
      local f = dir .. "/functions." .. ext
      ok, out = sh(q(NVCC) .. " " .. flag .. " -rdc=true -arch=sm_90 " .. q(CU) .. " -o " .. q(f))
      truthy(ok, "nvcc " .. flag .. ": " .. out)
      truthy(cuda.jit(k_mul, { link = f }), "cuda.jit takes the ." .. ext)
      ok, out = sh(q(NVLINK) .. " -arch=sm_90 " .. q(ko) .. " " .. q(f) .. " -o " .. q(dir .. "/l.cubin"))
      truthy(ok, "nvlink with the ." .. ext .. ": " .. out)
    end
    sh("rm -rf " .. q(dir))
  end)
end

----------------------------------------------------------------------
-- link files: checked when the kernel is made
----------------------------------------------------------------------

test("cuda.jit link: missing files and other kinds are refused at cuda.jit, located", function()
  local m = raises("cuda.jit: link[1]: cannot open 'tests/cuda/nothere.cu': No such file",
    function() return cuda.jit(k_mul, { link = { "tests/cuda/nothere.cu" } }) end)
  truthy(m:find("test_cuda_interop.lua:%d+:"), "located: " .. m)
  raises("cuda.jit: link[2] 'functions.so': kjit links .ptx, .cu, .cubin, .fatbin, .o and .a files",
    cuda.jit, k_mul, { link = { CU, "functions.so" } })
  raises("cuda.jit: link[2]: cannot open 'functions.o'", cuda.jit, k_mul, { link = { CU, "functions.o" } })
  raises("cuda.jit: option 'link' must be a list of files (.ptx, .cu, .cubin, .fatbin, .o, .a), got number",
    cuda.jit, k_mul, { link = 3 })
  -- binary files must be what their name says (the format's magic bytes)
  local base = os.tmpname()
  for ext, what in pairs({ cubin = "an ELF cubin", fatbin = "a fat binary", o = "an ELF object",
                           a = "an ar archive" }) do
    write_file(base .. "." .. ext, "not a binary at all\n")
    m = raises("cuda.jit: link[1] '" .. base .. "." .. ext .. "' is not " .. what,
      function() return cuda.jit(k_mul, { link = base .. "." .. ext }) end)
    truthy(m:find("test_cuda_interop.lua:%d+:"), "located: " .. m)
    os.remove(base .. "." .. ext)
  end
  os.remove(base)
  raises("cuda.jit: link[1] must be a file name (a string), got boolean",
    cuda.jit, k_mul, { link = { true } })
  raises("unknown option 'links' to 'cuda.jit'", cuda.jit, k_mul, { links = { CU } })
  -- a single name is a list of one; the other options still read
  truthy(cuda.jit(k_mul, { link = CU, fastmath = true }), "link = 'file.cu'")
  raises("bad option 'fastmath' to 'cuda.jit'", cuda.jit, k_mul, { link = CU, fastmath = 1 })
end)

test("cuda.compile_ptx: cuda.jit's options and cc in a table; link is refused, located", function()
  local f = function(x) local i = cuda.grid(1); if i <= #x then x[i] = x[i] / 3 end end
  local sig = "void(float32[:])"
  local m = raises("cuda.compile_ptx: option 'link' is not supported: the PTX is the kernel's own",
    function() return cuda.compile_ptx(k_mul, "void(float32[:], float32[:], float32[:])", { link = CU }) end)
  truthy(m:find("test_cuda_interop.lua:%d+:"), "located: " .. m)
  truthy(m:find("cuda.jit(fn, {link = ...})", 1, true), m)
  local plain, fast = cuda.compile_ptx(f, sig, 80), cuda.compile_ptx(f, sig, { cc = 80, fastmath = true })
  eq(fast:match("%.target (%S+)"), "sm_80", "cc from the table")
  truthy(plain:find("div.rn.f32", 1, true) and fast:find(".ftz.f32", 1, true), "fastmath reached libNVVM")
  truthy(cuda.compile_ptx(f, sig, { lineinfo = true }):find(".loc", 1, true), "lineinfo")
  eq(cuda.compile_ptx(f, sig, { cc = 80 }), plain, "the same PTX as the cc argument")
end)

----------------------------------------------------------------------
-- raw pointers in the simulator
----------------------------------------------------------------------

test("simulator: device_ptr, cuda_array_interface, from_device_ptr inside its owner", function()
  with_sim(true, function()
    local d = cuda.to_device(kjit.arange(10, "f32"))
    local p = d:device_ptr()
    eq(math.type(p), "integer", "device_ptr is an integer")
    local cai = d:cuda_array_interface()
    eq(cai.typestr, "<f4", "typestr"); eq(cai.version, 3, "version")
    eq(cai.shape[1], 10, "shape"); eq(cai.data[1], p, "data[1]"); eq(cai.data[2], false, "data[2]")
    eq(cai.strides, nil, "strides (C order)")
    eq(cuda.to_device(kjit.zeros({ 2, 3 }, "u8")):cuda_array_interface().typestr, "|u1", "u8")
    eq(cuda.device_array(2, "i64"):cuda_array_interface().typestr, "<i8", "i64")
    -- a view of elements 3..8 as 2x3, through the raw pointer
    local w = cuda.from_device_ptr(p + 2 * 4, { 2, 3 }, "float32", { owner = d })
    eq(tostring(w), "kjit.devarray(f32, {2, 3}) in the simulator", "tostring")
    local h = w:copy_to_host()
    eq(h[1][1], 2.0, "w[1][1]"); eq(h[2][3], 7.0, "w[2][3]")
    -- a kernel writes through the wrap (compiled, then interpreted: twice
    -- negated is the same); the owner sees it
    local neg = function(a) local i, j = cuda.grid(2); if i <= 2 and j <= 3 then a[i][j] = -a[i][j] end end
    cuda.jit(neg)[{ 1, { 2, 3 } }](w)
    cuda.simulate("interpret")
    cuda.jit(neg)[{ 1, { 2, 3 } }](w)
    eq(d:copy_to_host()[3], 2.0, "interpreted simulator through the wrap")
    cuda.simulate(true)
    cuda.jit(neg)[{ 1, { 2, 3 } }](w)
    local back = d:copy_to_host()
    for i = 1, 10 do eq(back[i], (i >= 3 and i <= 8) and -(i - 1.0) or i - 1.0, "owner[" .. i .. "]") end
    local v = cuda.from_cuda_array_interface(cai, { owner = d })
    eq(v:copy_to_host()[3], -2.0, "from_cuda_array_interface")
    eq(cuda.from_device_ptr(p, 0, "f32").size, 0, "empty needs no owner")
    eq(cuda.from_device_ptr(0, { 3, 0 }, "f32").size, 0, "empty at NULL")
    raises("null device pointer for a non-empty array", cuda.from_device_ptr, 0, 1, "f32")
    raises("in the simulator a device pointer is a host address: wrap one only inside the device "
      .. "array it comes from, given as {owner = d} (no owner given)", cuda.from_device_ptr, p, 2, "f32")
    raises("(this one lies outside it)", cuda.from_device_ptr, p + 32, 3, "f32", { owner = d })
    raises("(this one lies outside it)", cuda.from_device_ptr, p - 4, 1, "f32", { owner = d })
    raises("not aligned to its 4-byte elements", cuda.from_device_ptr, p + 2, 1, "f32", { owner = d })
    raises("unknown option 'own' (known: owner)", cuda.from_device_ptr, p, 1, "f32", { own = d })
    raises("unsupported typestr '>f4'", cuda.from_device_ptr, p, 1, ">f4", { owner = d })
    raises("strides are not C-contiguous", cuda.from_cuda_array_interface,
      { shape = { 2, 5 }, typestr = "<f4", data = { p, false }, strides = { 4, 8 } }, { owner = d })
    raises("'data' must be {ptr, readonly}", cuda.from_cuda_array_interface, { shape = { 1 } })
  end)
end)

test("simulator: the wrap keeps its owner alive", function()
  with_sim(true, function()
    local w
    do
      local d = cuda.to_device(kjit.full(4, 7, "i32"))
      w = cuda.from_device_ptr(d:device_ptr(), 4, "i32", { owner = d })
    end
    collectgarbage(); collectgarbage()
    local h = w:copy_to_host()
    for i = 1, 4 do eq(h[i], 7, "after GC " .. i) end
  end)
end)

----------------------------------------------------------------------
-- the mock driver: the link step, NVRTC, pointers (child processes)
----------------------------------------------------------------------

local function run_script(code, env) return require("mockcuda").run_script(MODDIR, LUA, code, env) end

local DECL = [[
  mul = cuda.declare_device("mul_f32_f32", "float32(float32, float32)")
  function k(r, x, y) local i = cuda.grid(1); if i <= #r then r[i] = mul(x[i], y[i]) end end
  x, r = cuda.to_device(kjit.arange(8, "f32")), cuda.device_array(8, "f32")
]]

if not file_exists(MOCK) then
  test("mock driver: linking", function() skip("no " .. MOCK .. " (build target mockcuda)") end)
else
  test("mock driver: a .cu link file goes through NVRTC and the driver's linker", function()
    local got, out, ok = run_script(DECL .. [[
      local kk = cuda.jit(k, { link = { "]] .. CU .. [[" } })
      kk[{ 1, 8 }](r, x, x); kk[{ 1, 8 }](r, x, x)
      -- another kernel, the same file (NVRTC's PTX is kept for the process)
      cuda.jit(k, { link = { "]] .. CU .. [[" } })[{ 1, 8 }](r, x, x)
      cuda.synchronize()
      print("done")
    ]], { KJIT_LIBCUDA = MOCK })
    if out:find("NVRTC not found", 1, true) then skip("no NVRTC on this machine") end
    truthy(ok and out:find("done", 1, true), "output: " .. out)
    eq(got.links, 2, "one link per module"); eq(got.link_inputs, 4, "kernel + .cu, twice")
    eq(got.launches, 3, "launches"); eq(got.live_links, 0, "link states destroyed")
    eq(got.live_modules, 0, "modules unloaded"); eq(got.bad_handles, 0, "bad handles")
  end)

  if PTXAS and NVLINK then
    test("mock driver: what kjit hands the driver's linker (NVRTC's PTX too) links with nvlink", function()
      local dir = os.tmpname()
      os.remove(dir)
      assert(sh("mkdir -p " .. q(dir)))
      local _, out, ok = run_script([[
        local x = cuda.to_device(kjit.arange(8, "f32"))
        sum_reduce = cuda.declare_device("sum_reduce", "float32(float32[:], int32)")
        mix = cuda.declare_device("mix_ints", "int64(int32, int64, uint8)")
        local k = cuda.jit(function(r, x, ri)
          local i = cuda.grid(1)
          if i <= #r then r[i] = sum_reduce(x, i); ri[i] = mix(i, i, i) end
        end, { link = "]] .. CU .. [[" })
        k[{ 1, 8 }](cuda.device_array(8, "f32"), x, cuda.device_array(8, "i64"))
        print("done")
      ]], { KJIT_LIBCUDA = MOCK, MOCK_CUDA_LINK_DUMP = dir })
      if out:find("NVRTC not found", 1, true) then sh("rm -rf " .. q(dir)); skip("no NVRTC") end
      truthy(ok and out:find("done", 1, true), "output: " .. out)
      local objs = {}
      for i = 0, 1 do   -- the mock's device is sm_90
        local p, o = dir .. "/link" .. i .. ".ptx", dir .. "/link" .. i .. ".o"
        local ok2, out2 = sh(q(PTXAS) .. " -c -arch=sm_90 " .. q(p) .. " -o " .. q(o))
        truthy(ok2, "ptxas " .. p .. ": " .. out2)
        objs[#objs + 1] = q(o)
      end
      local ok3, out3 = sh(q(NVLINK) .. " -arch=sm_90 " .. table.concat(objs, " ") .. " -o "
        .. q(dir .. "/linked.cubin"))
      truthy(ok3, "nvlink: " .. out3)
      sh("rm -rf " .. q(dir))
    end)
  end

  test("mock driver: a .ptx link file; an undefined function is the linker's error", function()
    local dir = os.tmpname()
    write_file(dir .. ".ptx", ".version 8.0\n.target sm_90\n.address_size 64\n"
      .. ".visible .func (.param .b32 func_retval0) mul_f32_f32(.param .b64 p, .param .b32 x, "
      .. ".param .b32 y)\n{\n\tret;\n}\n")
    write_file(dir .. "_other.ptx", ".version 8.0\n.target sm_90\n.address_size 64\n"
      .. ".visible .func (.param .b32 func_retval0) other(.param .b64 p)\n{\n\tret;\n}\n")
    local got, out, ok = run_script(DECL .. [[
      cuda.jit(k, { link = { "]] .. dir .. [[.ptx" } })[{ 1, 8 }](r, x, x)
      print("linked")
      local ok, e = pcall(function() cuda.jit(k, { link = "]] .. dir .. [[_other.ptx" })[{ 1, 8 }](r, x, x) end)
      print(e)
      ok, e = pcall(function() cuda.jit(k)[{ 1, 8 }](r, x, x) end)
      print(e)
    ]], { KJIT_LIBCUDA = MOCK })
    os.remove(dir .. ".ptx"); os.remove(dir .. "_other.ptx"); os.remove(dir)
    truthy(ok and out:find("linked", 1, true), "output: " .. out)
    truthy(out:find(":%d+: kjit.cuda: cuLinkComplete: CUDA_ERROR_INVALID_IMAGE: device kernel "
      .. "image is invalid\nerror   : Undefined reference to 'mul_f32_f32' in 'kjit_kernel.ptx'"),
      "undefined reference: " .. out)
    truthy(out:find(":%d+: kjit.cuda: the kernel calls the external device function 'mul_f32_f32' "
      .. "%(cuda.declare_device%) but has no link files to find it in"), "no link files: " .. out)
    eq(got.links, 1, "links"); eq(got.live_links, 0, "link states destroyed")
    eq(got.live_modules, 0, "modules")
  end)

  -- binary link files go to the linker with their CUjitInputType (the mock
  -- checks each one's magic bytes); k:export carries every link file's
  -- bytes, so kjit.load links them where the files are gone
  test("mock driver: .cubin, .fatbin, .o and .a link files; k:export carries them", function()
    local base = os.tmpname()
    local files = {
      cubin = "\127ELF\2\1\1A" .. string.rep("\0", 56),
      fatbin = "\x50\xed\x55\xba\1\0\16\0" .. string.rep("\0", 24),
      o = "\127ELF\2\1\1\0" .. string.rep("\0", 56),
      a = "!<arch>\n",
      ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .func (.param .b32 func_retval0) "
        .. "mul_f32_f32(.param .b64 p, .param .b32 x, .param .b32 y)\n{\n\tret;\n}\n",
    }
    local list = {}
    for _, ext in ipairs({ "cubin", "fatbin", "o", "a" }) do
      write_file(base .. "." .. ext, files[ext]); list[#list + 1] = string.format("%q", base .. "." .. ext)
    end
    write_file(base .. ".ptx", files.ptx)
    local got, out, ok = run_script(DECL .. [[
      local kk = cuda.jit(k, { link = { ]] .. table.concat(list, ", ") .. [[ } })
      kk[{ 1, 8 }](r, x, x)
      local kp = cuda.jit(k, { link = "]] .. base .. [[.ptx" })
      local bytes = kp:export("void(float32[:], float32[:], float32[:])")
      os.remove("]] .. base .. [[.ptx")     -- gone: the export has its bytes
      local loaded = kjit.load(bytes)
      loaded[{ 1, 8 }](r, x, x)
      local bad = cuda.jit(k, { link = "]] .. base .. [[.ptx" })   -- checked at cuda.jit
      print("done")
    ]], { KJIT_LIBCUDA = MOCK })
    for _, ext in ipairs({ "cubin", "fatbin", "o", "a", "ptx" }) do os.remove(base .. "." .. ext) end
    os.remove(base)
    truthy(not ok and out:find("cannot open '" .. base .. ".ptx'", 1, true) and not out:find("done"),
      "the file is gone, the export linked: " .. out)
    eq(got.links, 2, "two links"); eq(got.link_binary_inputs, 4, "binary inputs")
    eq(got.link_inputs, 7, "kernel + 4, loaded kernel + its .ptx")
    eq(got.link_types, 31, "types cubin 0, ptx 1, fatbin 2, object 3, library 4")
    eq(got.bad_link_inputs, 0, "magic bytes as the driver wants")
    eq(got.launches, 2, "launches"); eq(got.bad_handles, 0, "bad handles")
  end)

  test("mock driver: NVRTC missing (KJIT_NVRTC pointing nowhere) or a .cu that does not compile", function()
    local _, out = run_script(DECL .. [[
      print(select(2, pcall(function() cuda.jit(k, { link = "]] .. CU .. [[" })[{ 1, 8 }](r, x, x) end)))
    ]], { KJIT_LIBCUDA = MOCK, KJIT_NVRTC = "/nonexistent/libnvrtc.so.13" })
    truthy(out:find(":%d+: kjit.cuda: link: 'tests/cuda/functions.cu': KJIT_NVRTC=/nonexistent/"
      .. "libnvrtc.so.13 could not be loaded"), "missing NVRTC: " .. out)
    truthy(out:find("pip install nvidia-cuda-nvrtc, or the CUDA toolkit", 1, true), "what to install: " .. out)
    local bad = os.tmpname() .. ".cu"
    write_file(bad, 'extern "C" __device__ int mul_f32_f32(float *r, float x, float y) { *r = x * ; return 0; }\n')
    local _, out2 = run_script(DECL .. [[
      print(select(2, pcall(function() cuda.jit(k, { link = "]] .. bad .. [[" })[{ 1, 8 }](r, x, x) end)))
    ]], { KJIT_LIBCUDA = MOCK })
    os.remove(bad)
    if out2:find("NVRTC not found", 1, true) then skip("no NVRTC on this machine") end
    truthy(out2:find("kjit.cuda: link: '" .. bad .. "': nvrtcCompileProgram: NVRTC_ERROR_COMPILATION", 1, true)
      and out2:find("expected an expression", 1, true), "NVRTC's log: " .. out2)
  end)

  test("mock driver: raw pointers shared with C code; wraps are never freed by kjit", function()
    local got, out, ok = run_script([[
      local d = cuda.to_device(kjit.arange(10, "f64"))
      local p = d:device_ptr()
      local w = cuda.from_device_ptr(p + 8 * 4, { 2, 2 }, "f64")
      local h = w:copy_to_host()
      assert(h[1][1] == 4.0 and h[2][2] == 7.0, "read through the wrap")
      w:copy_to_device(kjit.full({ 2, 2 }, -1.0))
      local back = d:copy_to_host()
      for i = 1, 10 do assert(back[i] == ((i >= 5 and i <= 8) and -1.0 or i - 1.0), "owner " .. i) end
      local v = cuda.from_cuda_array_interface(d:cuda_array_interface())
      assert(v:copy_to_host()[5] == -1.0, "from_cuda_array_interface")
      w, v = nil, nil
      collectgarbage(); collectgarbage()
      back = d:copy_to_host()
      assert(back[5] == -1.0, "the wrap's GC freed nothing")
      cuda.synchronize()
      print("done")
    ]], { KJIT_LIBCUDA = MOCK })
    truthy(ok and out:find("done", 1, true), "output: " .. out)
    eq(got.bad_frees, 0, "bad frees"); eq(got.bad_copies, 0, "bad copies")
    eq(got.allocs, 1, "one allocation"); eq(got.frees, 1, "freed once, by its owner")
    eq(got.live_allocs, 0, "live")
  end)
end
