-- test_records_cuda.lua: record dtypes (kjit.struct) in cuda.jit kernels
-- and the array functions. Kernels run in the interpreted simulator (the
-- Lua function) and the compiled simulator (the GPU's code generator on the
-- CPU); both must leave the same records. Kernels over records compile to
-- PTX that ptxas accepts (libNVVM), given the layout: k:compile(sig, P).
-- Device arrays of records: to_device, device_array(n, P), copy_to_host.
-- vectorize and guvectorize refuse records, as NumPy's ufuncs do.
local kjit = require "kjit"
local cuda = kjit.cuda
local ptxas = require "ptxas"

local P = kjit.struct{ {"x", "f32"}, {"y", "f32"}, {"vx", "f32"}, {"vy", "f32"} }
local B = kjit.struct{ {"id", "i32"}, {"pos", "f64", 3}, {"p", P}, {"tag", "u8"} }

local function particles(n)
  local p = kjit.zeros(n, P)
  for i = 1, n do p[i].x = i * 0.5; p[i].y = -i; p[i].vx = 1 / i; p[i].vy = i % 3 - 1 end
  return p
end

local function bodies(n)
  local b = kjit.zeros(n, B)
  for i = 1, n do b[i].id = i; b[i].pos[1] = i; b[i].pos[3] = -i; b[i].p.vx = i / 4 end
  return b
end

local function step(p, dt)
  local i = cuda.grid(1)
  if i <= #p then
    local r = p[i]
    r.x = r.x + r.vx * dt
    r.y = r.y + r.vy * dt
    if r.y < 0 then r.y = -r.y; r.vy = -r.vy end
  end
end

local function nested(b)
  local i = cuda.grid(1)
  if i <= #b then
    local r = b[i]
    r.pos[2] = r.pos[1] * r.p.vx - r.pos[3]
    r.p.y = r.id + r.pos[2]
    r.tag = r.tag + 200 + i
    if i > 1 then b[i - 1].p.x = r.p.vx end
  end
end

-- The records of a and b, field by field, must be equal.
local function same_records(a, b, what)
  eq(#a, #b, what .. " length")
  local ta, tb = a:totable(), b:totable()
  local function cmp(x, y, path)
    if type(x) == "table" then
      for k, v in pairs(x) do cmp(v, y[k], path .. "." .. tostring(k)) end
    else
      same_value(y, x)
    end
  end
  for i = 1, #ta do cmp(ta[i], tb[i], what .. "[" .. i .. "]") end
end

-- The kernel in both simulators on copies of the arrays; same records.
local function both(fn, cfg, make, ...)
  local out = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local a = make()
    local ok, err = pcall(function(...) cuda.jit(fn, { fma = false })[cfg](a, ...) end, ...)
    cuda.simulate(prev)
    if not ok then error(err, 0) end
    out[#out + 1] = a
  end
  same_records(out[2], out[1], "records")
  return out[2]
end

test("a particle step over records (compiled simulator vs interpreted)", function()
  local p = both(step, {3, 32}, function() return particles(70) end, 0.25)
  truthy(p[70].x ~= particles(70)[70].x, "the kernel moved the particles")
end)

test("array fields and nested records in a kernel", function()
  both(nested, {2, 16}, function() return bodies(29) end)
end)

test("device arrays of records", function()
  local prev = cuda.simulate(true)
  local p = particles(50)
  local d = cuda.to_device(p)
  eq(d.dtype, P); eq(d.size, 50); eq(d.ndim, 1)
  truthy(tostring(d):find("records", 1, true), tostring(d))
  cuda.jit(step)[{2, 32}](d, 0.5)
  local h = d:copy_to_host()
  local want = particles(50)
  cuda.jit(step)[{2, 32}](want, 0.5)   -- a host array: copied in and out
  same_records(h, want, "device vs host")
  local q = kjit.zeros(50, P)
  d:copy_to_host(q)
  same_records(q, want, "copy_to_host(q)")
  local e = cuda.device_array(4, P)
  eq(e:copy_to_host()[4].vy, 0.0)
  local l = cuda.device_array_like(p)
  eq(l.dtype, P)
  raises("dtype mismatch", function() d:copy_to_host(kjit.zeros(50, B)) end)
  raises("dtype mismatch", function() d:copy_to_host(kjit.zeros(50, "f32")) end)
  cuda.simulate(prev)
end)

test("kernel errors with records: bounds, a single record, fields", function()
  local prev = cuda.simulate(true)
  local p = particles(10)
  raises("index 11 out of bounds [1, 10]", function()
    cuda.jit(function(p) local i = cuda.grid(1); p[i + 1].x = 1 end)[{1, 10}](p)
  end)
  raises("a record: pass the array of records", function() cuda.jit(step)[{1, 1}](p[1], 0.5) end)
  raises("record has no field 'w'", function()
    cuda.jit(function(p) local i = cuda.grid(1); p[i].w = 1 end)[{1, 1}](p)
  end)
  cuda.simulate(prev)
end)

test("kernels over records compile to PTX that ptxas accepts", function()
  local k = cuda.jit(step)
  k:compile("void(record[:], f64)", P)
  local ptx = k:inspect("ptx")
  truthy(ptx:find(".entry", 1, true), "PTX has an .entry")
  local k2 = cuda.jit(nested)
  k2:compile("void(record[:])", B, 80)
  ptxas.check(ptx)
  ptxas.check(k2:inspect("ptx"))
end)

test("k:compile needs the layout of each record", function()
  raises("give its layout (a kjit.struct) after the signature",
         function() cuda.jit(step):compile("void(record[:], f64)") end)
  raises("kernels take arrays of records", function() cuda.jit(step):compile("void(record, f64)", P) end)
end)

test("vectorize and guvectorize refuse records", function()
  local v = kjit.vectorize(function(x) return x * 2 end, { "f64(f64)" })
  raises("argument #1 is an array of records", v, particles(3))
  local g = kjit.guvectorize(function(a, out) out[1] = a[1] end, { "void(f64[:], f64[:])" }, "(n)->(n)")
  raises("argument #1 is an array of records", g, particles(3))
  raises("'record' at column 5 is not a dtype", kjit.vectorize, function(x) return x end, { "f64(record)" })
end)
