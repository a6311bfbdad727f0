-- test_fft.lua: kjit.fft (FFTW on host arrays) and kjit.cuda.fft in the
-- simulator (FFTW on the simulator's memory), against a direct DFT written
-- here in plain Lua; round trips; plans; errors. The cuFFT path runs in a
-- child process against the mock driver and a mock cuFFT
-- (tests/c/mock_libcufft.c, a direct DFT over the mock's memory).
--
-- Tolerance: the largest error over all elements, divided by the largest
-- magnitude of the reference, is at most 1e-12 * log2(n) + 1e-13 for f64 and
-- 2e-6 * log2(n) + 2e-7 for f32 (n: the transform's size), about 20 times
-- what FFTW's rounding gives on these sizes.
local kjit = require "kjit"
local fft, cuda = kjit.fft, kjit.cuda

local CHILD = os.getenv("KJIT_TEST_FFT_CHILD")
local MODDIR, HARNESS, THIS, LUA = arg[1], arg[0], arg[2], arg[-1]

local have_fftw = not fft.backend():find("^none")

local function prod(s) local n = 1 for _, d in ipairs(s) do n = n * d end return n end

-- A deterministic pseudo-random array (an LCG, so the test needs no generator).
local seed = 12345
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 * 2 - 1
end
local function random_array(shape, dtype)
  local a = kjit.empty(prod(shape), dtype)
  for i = 1, #a do a[i] = rnd() end
  return a:reshape(shape)
end

-- Complex arrays as flat Lua tables of {re, im}, with the complex shape.
local function to_complex(a)
  local s = a.shape
  local cs = {}
  for k = 1, #s - 1 do cs[k] = s[k] end
  local f = a:reshape({ a.size })
  local t = {}
  for i = 1, a.size // 2 do t[i] = { f[2 * i - 1], f[2 * i] } end
  return t, cs
end
local function to_real(a)
  local f = a:reshape({ a.size })
  local t = {}
  for i = 1, a.size do t[i] = { f[i], 0.0 } end
  return t, a.shape
end

local function strides(shape)
  local st, s = {}, 1
  for k = #shape, 1, -1 do st[k] = s; s = s * shape[k] end
  return st
end

-- The direct DFT of the complex table t (shape cs) along axis ax (1-based),
-- into length n (cut or zero-padded first); sign -1 forward, +1 inverse.
local function dft_axis(t, cs, ax, n, sign)
  local ns = {}
  for k = 1, #cs do ns[k] = cs[k] end
  ns[ax] = n
  local ist, ost = strides(cs), strides(ns)
  local out = {}
  local total = prod(ns)
  for o = 0, total - 1 do
    -- o's multi-index
    local idx, r = {}, o
    for k = 1, #ns do idx[k] = r // ost[k]; r = r % ost[k] end
    local kk = idx[ax]
    local re, im = 0.0, 0.0
    for j = 0, math.min(n, cs[ax]) - 1 do
      local base = 0
      for k = 1, #cs do base = base + (k == ax and j or idx[k]) * ist[k] end
      local x = t[base + 1]
      local a = sign * 2 * math.pi * ((j * kk) % n) / n
      local c, s = math.cos(a), math.sin(a)
      re = re + x[1] * c - x[2] * s
      im = im + x[1] * s + x[2] * c
    end
    out[o + 1] = { re, im }
  end
  return out, ns
end

-- compares the complex result array got (last dim 2) with table want
local function check_complex(got, want, n, dtype, what)
  local g = to_complex(got)
  eq(#g, #want, what .. ": size")
  local err, mag = 0, 0
  for i = 1, #want do
    mag = math.max(mag, math.abs(want[i][1]), math.abs(want[i][2]))
    err = math.max(err, math.abs(g[i][1] - want[i][1]), math.abs(g[i][2] - want[i][2]))
  end
  local lg = math.log(math.max(n, 2), 2)
  local tol = dtype == "f64" and 1e-12 * lg + 1e-13 or 2e-6 * lg + 2e-7
  if err > tol * math.max(mag, 1e-300) then
    error(string.format("%s: error %.3g (relative %.3g) above the tolerance %.3g", what, err,
      err / mag, tol), 2)
  end
end

local function check_real(got, want, n, dtype, what)
  local f = got:reshape({ got.size })
  eq(got.size, #want, what .. ": size")
  local err, mag = 0, 0
  for i = 1, #want do
    mag = math.max(mag, math.abs(want[i]))
    err = math.max(err, math.abs(f[i] - want[i]))
  end
  local lg = math.log(math.max(n, 2), 2)
  local tol = dtype == "f64" and 1e-12 * lg + 1e-13 or 2e-6 * lg + 2e-7
  if err > tol * math.max(mag, 1e-300) then
    error(string.format("%s: error %.3g above the tolerance %.3g", what, err, tol * mag), 2)
  end
end

local function shape_eq(got, want, what)
  eq(#got, #want, what .. " ndim")
  for k = 1, #want do eq(got[k], want[k], what .. " shape[" .. k .. "]") end
end

local function scale_t(t, s) for _, x in ipairs(t) do x[1] = x[1] * s; x[2] = x[2] * s end return t end

-- The two places the same calls run: kjit.fft on host arrays, kjit.cuda.fft
-- on simulator device arrays (copied in and out here).
local PLACES = {
  { name = "kjit.fft", lib = fft, put = function(a) return a end, get = function(a) return a end },
  { name = "kjit.cuda.fft (simulator)", lib = cuda.fft, sim = true,
    put = function(a) return cuda.to_device(a) end, get = function(d) return d:copy_to_host() end },
}

local function each_place(name, fn)
  for _, P in ipairs(PLACES) do
    test(P.name .. ": " .. name, function()
      if not have_fftw then skip("kjit built without FFTW: " .. fft.backend()) end
      local prev = P.sim and cuda.simulate(true)
      local ok, err = pcall(fn, P)
      if P.sim then cuda.simulate(prev) end
      if not ok then error(err, 0) end
    end)
  end
end

if CHILD == nil then

each_place("fft and ifft of 1-D signals, every norm, against the direct DFT", function(P)
  for _, dt in ipairs { "f64", "f32" } do
    for _, n in ipairs { 1, 2, 3, 5, 8, 17, 64, 100 } do
      local x = random_array({ n, 2 }, dt)
      local t = to_complex(x)
      local want = dft_axis(t, { n }, 1, n, -1)
      local X = P.get(P.lib.fft(P.put(x)))
      shape_eq(X.shape, { n, 2 }, "fft")
      eq(X.dtype, dt, "dtype")
      check_complex(X, want, n, dt, dt .. " fft n=" .. n)
      check_complex(P.get(P.lib.fft(P.put(x), { norm = "ortho" })), scale_t(dft_axis(t, { n }, 1, n, -1), 1 / math.sqrt(n)), n, dt, "ortho")
      check_complex(P.get(P.lib.fft(P.put(x), { norm = "forward" })), scale_t(dft_axis(t, { n }, 1, n, -1), 1 / n), n, dt, "forward")
      check_complex(P.get(P.lib.ifft(P.put(x))), scale_t(dft_axis(t, { n }, 1, n, 1), 1 / n), n, dt, "ifft")
      check_complex(P.get(P.lib.ifft(P.put(x), { norm = "forward" })), dft_axis(t, { n }, 1, n, 1), n, dt, "ifft forward")
      -- round trip
      check_complex(P.get(P.lib.ifft(P.lib.fft(P.put(x)))), t, n, dt, "ifft(fft(x))")
      check_complex(P.get(P.lib.ifft(P.lib.fft(P.put(x), { norm = "ortho" }), { norm = "ortho" })), t, n, dt, "ortho round trip")
    end
  end
end)

each_place("fft along each axis of 2-D and 3-D arrays, n cuts and pads", function(P)
  for _, cs in ipairs { { 3, 4 }, { 6, 5 }, { 2, 3, 4 }, { 1, 7 } } do
    local shape = { table.unpack(cs) }
    shape[#shape + 1] = 2
    local x = random_array(shape, "f64")
    local t = to_complex(x)
    for ax = 1, #cs do
      local want = dft_axis(t, cs, ax, cs[ax], -1)
      check_complex(P.get(P.lib.fft(P.put(x), { axis = ax })), want, cs[ax], "f64", "axis " .. ax)
      check_complex(P.get(P.lib.fft(P.put(x), { axis = ax - #cs - 1 })), want, cs[ax], "f64", "negative axis")
      for _, n in ipairs { 1, cs[ax] + 3, math.max(1, cs[ax] - 1) } do
        local w, ns = dft_axis(t, cs, ax, n, -1)
        local got = P.get(P.lib.fft(P.put(x), { axis = ax, n = n }))
        ns[#ns + 1] = 2
        shape_eq(got.shape, ns, "n=" .. n)
        check_complex(got, w, n, "f64", "axis " .. ax .. " n=" .. n)
      end
    end
  end
end)

each_place("fft2 and fftn over axes, with s, forward and inverse", function(P)
  for _, dt in ipairs { "f64", "f32" } do
    local cs = { 3, 4, 5 }
    local x = random_array({ 3, 4, 5, 2 }, dt)
    local t = to_complex(x)
    local function multi(axes, sign, lens)
      local cur, s = t, cs
      for i, ax in ipairs(axes) do cur, s = dft_axis(cur, s, ax, lens and lens[i] or s[ax], sign) end
      return cur, s
    end
    check_complex(P.get(P.lib.fft2(P.put(x))), multi({ 2, 3 }, -1), 20, dt, "fft2")
    check_complex(P.get(P.lib.fft2(P.put(x), { axes = { 1, 3 } })), multi({ 1, 3 }, -1), 15, dt, "fft2 axes 1,3")
    check_complex(P.get(P.lib.fftn(P.put(x))), multi({ 1, 2, 3 }, -1), 60, dt, "fftn")
    check_complex(P.get(P.lib.fftn(P.put(x), { axes = { 3, 1 } })), multi({ 1, 3 }, -1), 15, dt, "fftn axes {3, 1}")
    check_complex(P.get(P.lib.fftn(P.put(x), { axes = { 2 } })), multi({ 2 }, -1), 4, dt, "fftn one axis")
    check_complex(P.get(P.lib.fftn(P.put(x), { inverse = true })), scale_t(multi({ 1, 2, 3 }, 1), 1 / 60), 60, dt, "ifftn")
    local got = P.get(P.lib.fftn(P.put(x), { axes = { 1, 2 }, s = { 5, 2 } }))
    local w, ns = multi({ 1, 2 }, -1, { 5, 2 })
    ns[4] = 2
    shape_eq(got.shape, ns, "fftn s")
    check_complex(got, w, 10, dt, "fftn s")
    -- round trip over all axes
    check_complex(P.get(P.lib.fftn(P.lib.fftn(P.put(x)), { inverse = true })), t, 60, dt, "fftn round trip")
  end
end)

each_place("rfft and irfft: against the DFT, round trips, odd and even n", function(P)
  for _, dt in ipairs { "f64", "f32" } do
    for _, n in ipairs { 1, 2, 5, 8, 9, 64 } do
      local x = random_array({ n }, dt)
      local t = to_real(x)
      local full = dft_axis(t, { n }, 1, n, -1)
      local want = {}
      for k = 1, n // 2 + 1 do want[k] = full[k] end
      local X = P.get(P.lib.rfft(P.put(x)))
      shape_eq(X.shape, { n // 2 + 1, 2 }, "rfft shape")
      check_complex(X, want, n, dt, "rfft n=" .. n)
      -- irfft: the Hermitian spectrum back to n reals
      local back = P.get(P.lib.irfft(P.put(X), { n = n }))
      shape_eq(back.shape, { n }, "irfft shape")
      local xs = {}
      for i = 1, n do xs[i] = x[i] end
      check_real(back, xs, n, dt, "irfft(rfft(x), n) n=" .. n)
    end
    -- irfft against its definition, on a spectrum that is not Hermitian at 1
    local m = 5
    local X = random_array({ m, 2 }, dt)
    for _, n in ipairs { 8, 9, 4, 12 } do
      local Y = {}
      local xt = to_complex(X)
      for k = 0, n - 1 do
        local src = k < m and k or (n - k < m and n - k) or nil
        if k <= n // 2 then
          Y[k + 1] = k < m and { xt[k + 1][1], xt[k + 1][2] } or { 0.0, 0.0 }
        else
          local c = n - k < m and xt[n - k + 1] or { 0.0, 0.0 }
          Y[k + 1] = { c[1], -c[2] }
        end
        local _ = src
      end
      -- numpy ignores the imaginary parts of Y[0] and (n even) Y[n/2]
      Y[1][2] = 0.0
      if n % 2 == 0 then Y[n // 2 + 1][2] = 0.0 end
      local inv = dft_axis(Y, { n }, 1, n, 1)
      local want = {}
      for i = 1, n do want[i] = inv[i][1] / n end
      check_real(P.get(P.lib.irfft(P.put(X), { n = n })), want, n, dt, "irfft n=" .. n)
    end
    -- default n = 2 * (m - 1); the input is left as it was
    local Xd = P.put(X)
    local before = P.get(Xd)
    eq(P.get(P.lib.irfft(Xd)).shape[1], 8, "irfft default n")
    local after = P.get(Xd)
    for i = 1, m do eq(after[i][1], before[i][1], "irfft keeps its input") end
  end
end)

each_place("rfft and irfft along an axis of a 2-D array", function(P)
  local x = random_array({ 6, 4 }, "f64")
  local t = to_real(x)
  local full = dft_axis(t, { 6, 4 }, 1, 6, -1)
  local want = {}
  for i = 1, 4 * 4 do want[i] = full[i] end   -- rows 1..4 of 6 (row-major: k*4 + j)
  local X = P.get(P.lib.rfft(P.put(x), { axis = 1 }))
  shape_eq(X.shape, { 4, 4, 2 }, "rfft axis 1")
  check_complex(X, want, 6, "f64", "rfft axis 1")
  local back = P.get(P.lib.irfft(P.put(X), { axis = 1, n = 6 }))
  local xs = x:reshape({ 24 })
  local wx = {}
  for i = 1, 24 do wx[i] = xs[i] end
  check_real(back, wx, 6, "f64", "irfft axis 1")
  -- along the last axis, with a batch of 6 rows
  local X2 = P.get(P.lib.rfft(P.put(x)))
  shape_eq(X2.shape, { 6, 3, 2 }, "rfft last axis")
  check_real(P.get(P.lib.irfft(P.put(X2), { n = 4 })), wx, 4, "f64", "irfft last axis")
end)

each_place("out= and explicit plans", function(P)
  local x = random_array({ 16, 2 }, "f64")
  local ref = P.get(P.lib.fft(P.put(x)))
  local o = P.put(kjit.zeros({ 16, 2 }))
  local r = P.lib.fft(P.put(x), { out = o })
  eq(rawequal(r, o), true, "out is returned")
  check_complex(P.get(o), to_complex(ref), 16, "f64", "out")
  local p = P.lib.plan("fft", P.put(x))
  truthy(tostring(p):find("plan(fft, f64 {16, 2})", 1, true), tostring(p))
  shape_eq(p.shape, { 16, 2 }, "plan shape")
  shape_eq(p.out_shape, { 16, 2 }, "plan out_shape")
  eq(p.kind, "fft", "plan kind")
  for _ = 1, 3 do
    local y = random_array({ 16, 2 }, "f64")
    check_complex(P.get(p:exec(P.put(y))), dft_axis(to_complex(y), { 16 }, 1, 16, -1), 16, "f64", "plan exec")
  end
  local o2 = P.put(kjit.zeros({ 16, 2 }))
  eq(rawequal(p:exec(P.put(x), o2), o2), true, "exec into out")
  check_complex(P.get(o2), to_complex(ref), 16, "f64", "exec out")
  local pr = P.lib.plan("irfft", P.put(kjit.zeros({ 5, 2 }, "f32")), { n = 9 })
  shape_eq(pr.out_shape, { 9 }, "irfft plan out_shape")
  eq(pr.dtype, "f32", "plan dtype")
  near(pr.scale, 1 / 9, 1e-15, "irfft plan scale")
end)

-- real data over several axes: the DFT along every axis, then the last
-- transformed axis cut to n//2 + 1 (NumPy's rfftn)
local function cut_last(t, cs, ax)
  local ns = {}
  for k = 1, #cs do ns[k] = cs[k] end
  ns[ax] = cs[ax] // 2 + 1
  local ist, ost = strides(cs), strides(ns)
  local out = {}
  for o = 0, prod(ns) - 1 do
    local base, r = 0, o
    for k = 1, #ns do base = base + (r // ost[k]) * ist[k]; r = r % ost[k] end
    out[o + 1] = t[base + 1]
  end
  return out, ns
end

each_place("rfftn and irfftn: against the direct DFT, axes, s, round trips", function(P)
  for _, dt in ipairs { "f64", "f32" } do
    for _, shape in ipairs { { 3, 4, 5 }, { 6, 7 }, { 4, 2, 6 } } do
      local x = random_array(shape, dt)
      local t = to_real(x)
      local function rdft(axes, lens)
        local cur, s = t, shape
        for i, ax in ipairs(axes) do cur, s = dft_axis(cur, s, ax, lens and lens[i] or s[ax], -1) end
        return cut_last(cur, s, axes[#axes])
      end
      local all = {}
      for k = 1, #shape do all[k] = k end
      local axsets = { all, { #shape }, { 1, #shape }, { 1 } }
      if #shape == 3 then axsets[#axsets + 1] = { 1, 2 } end
      for _, axes in ipairs(axsets) do
        local want, ws = rdft(axes)
        local X = P.get(P.lib.rfftn(P.put(x), { axes = axes }))
        ws[#ws + 1] = 2
        shape_eq(X.shape, ws, "rfftn shape")
        local n = 1
        for _, ax in ipairs(axes) do n = n * shape[ax] end
        check_complex(X, want, n, dt, dt .. " rfftn axes {" .. table.concat(axes, ",") .. "}")
        -- irfftn back, with s the lengths of the axes (odd last lengths need it)
        local lens = {}
        for i, ax in ipairs(axes) do lens[i] = shape[ax] end
        local back = P.get(P.lib.irfftn(P.put(X), { axes = axes, s = lens }))
        shape_eq(back.shape, shape, "irfftn shape")
        local xs = x:reshape({ x.size })
        local wx = {}
        for i = 1, x.size do wx[i] = xs[i] end
        check_real(back, wx, n, dt, dt .. " irfftn(rfftn(x)) axes {" .. table.concat(axes, ",") .. "}")
      end
      -- the default axes are all of them, the default s from the shape
      local X = P.lib.rfftn(P.put(x))
      check_complex(P.get(X), (rdft(all)), prod(shape), dt, "rfftn default axes")
      if shape[#shape] % 2 == 0 then
        local xs = x:reshape({ x.size })
        local wx = {}
        for i = 1, x.size do wx[i] = xs[i] end
        check_real(P.get(P.lib.irfftn(X)), wx, prod(shape), dt, "irfftn default s")
      end
      -- s cuts and pads before the transform
      local lens = { 2 }
      for k = 2, #shape do lens[k] = shape[k] + 1 end
      local got = P.get(P.lib.rfftn(P.put(x), { s = lens }))
      local want, ws = rdft(all, lens)
      ws[#ws + 1] = 2
      shape_eq(got.shape, ws, "rfftn s shape")
      check_complex(got, want, prod(lens), dt, dt .. " rfftn s")
    end
  end
end)

each_place("in place: out = x for fft, ifft, fft2, fftn and plans", function(P)
  for _, dt in ipairs { "f64", "f32" } do
    local x = random_array({ 4, 6, 2 }, dt)
    local t = to_complex(x)
    for _, c in ipairs {
      { "fft", {}, dft_axis(t, { 4, 6 }, 2, 6, -1), 6 },
      { "fft", { axis = 1 }, dft_axis(t, { 4, 6 }, 1, 4, -1), 4 },
      { "ifft", { norm = "forward" }, dft_axis(t, { 4, 6 }, 2, 6, 1), 6 },
      { "fft2", {}, (dft_axis(dft_axis(t, { 4, 6 }, 1, 4, -1), { 4, 6 }, 2, 6, -1)), 24 },
      { "fftn", { inverse = true, norm = "forward" },
        (dft_axis(dft_axis(t, { 4, 6 }, 1, 4, 1), { 4, 6 }, 2, 6, 1)), 24 },
    } do
      local d = P.put(x:copy())
      c[2].out = d
      local r = P.lib[c[1]](d, c[2])
      eq(rawequal(r, d), true, c[1] .. " returns x")
      check_complex(P.get(d), c[3], c[4], dt, dt .. " " .. c[1] .. " in place")
    end
    local d = P.put(x:copy())
    local p = P.lib.plan("fft", d)
    eq(rawequal(p:exec(d, d), d), true, "plan:exec(x, x) returns x")
    check_complex(P.get(d), dft_axis(t, { 4, 6 }, 2, 6, -1), 6, dt, dt .. " plan in place")
    -- the same plan out of place again: still right
    local y = P.put(x:copy())
    check_complex(P.get(p:exec(y)), dft_axis(t, { 4, 6 }, 2, 6, -1), 6, dt, dt .. " plan out of place")
  end
end)

each_place("planner = \"measure\": plans on scratch arrays, same results", function(P)
  for _, dt in ipairs { "f64", "f32" } do
    local x = random_array({ 6, 10, 2 }, dt)
    local keep = x:copy()
    local want = to_complex(P.get(P.lib.fft2(P.put(x))))
    local dx = P.put(x)
    local o = P.put(kjit.zeros({ 6, 10, 2 }, dt))
    P.lib.fft2(dx, { planner = "measure", out = o })
    check_complex(P.get(o), want, 60, dt, "measure")
    local p = P.lib.plan("fft2", dx, { planner = "patient" })
    check_complex(P.get(p:exec(dx)), want, 60, dt, "patient")
    local back = P.get(dx):reshape({ x.size })
    local k = keep:reshape({ x.size })
    for i = 1, x.size do eq(back[i], k[i], "input untouched by the planner") end
  end
  raises("option planner: \"estimate\", \"measure\" or \"patient\" expected, got exhaustive",
    function() P.lib.fft(P.put(kjit.zeros({ 4, 2 })), { planner = "exhaustive" }) end)
end)

each_place("empty batches and length-1 transforms", function(P)
  local z = P.get(P.lib.fft(P.put(kjit.zeros({ 0, 4, 2 })), { axis = 2 }))
  shape_eq(z.shape, { 0, 4, 2 }, "empty batch")
  local one = P.get(P.lib.fft(P.put(kjit.array({ { 3.0, -1.0 } }))))
  eq(one[1][1], 3.0, "fft of one value"); eq(one[1][2], -1.0, "imaginary part")
end)

each_place("errors name the call and the user's line", function(P)
  local L = P.lib
  local pre = P.sim and "kjit.cuda.fft." or "kjit.fft."
  local m = raises(pre .. "fft: argument #1: a complex array expected (its last dimension 2: re, im), got shape {4, 3}",
    function() L.fft(P.put(kjit.zeros({ 4, 3 }))) end)
  truthy(m:find("test_fft.lua:%d+:"), "location in: " .. m)
  raises(pre .. "fft: argument #1: an f32 or f64 array expected, got i32", function() L.fft(P.put(kjit.zeros({ 4, 2 }, "i32"))) end)
  raises(pre .. "fft: axis 3 out of range for 2 dimensions (1..2 or -2..-1)", function() L.fft(P.put(kjit.zeros({ 4, 4, 2 })), { axis = 3 }) end)
  raises(pre .. "fftn: option axes: axis 1 given twice", function() L.fftn(P.put(kjit.zeros({ 4, 4, 2 })), { axes = { 1, -2 } }) end)
  raises(pre .. "fft: option axes: fft transforms one axis (use axis)", function() L.fft(P.put(kjit.zeros({ 4, 2 })), { axes = { 1 } }) end)
  raises(pre .. "fft2: argument #1: fft2 needs 2 complex dimensions, got 1", function() L.fft2(P.put(kjit.zeros({ 4, 2 }))) end)
  raises(pre .. "fft: option n: a length of at least 1 expected, got 0", function() L.fft(P.put(kjit.zeros({ 4, 2 })), { n = 0 }) end)
  raises(pre .. "irfft: a transform of length 0 along axis 1 (give n, the output's length)", function() L.irfft(P.put(kjit.zeros({ 1, 2 }))) end)
  raises(pre .. "fft: option norm: \"backward\", \"ortho\" or \"forward\" expected, got unit", function() L.fft(P.put(kjit.zeros({ 4, 2 })), { norm = "unit" }) end)
  raises(pre .. "fft: out: f64 array of shape {3, 2}, but the result is f64 {4, 2}", function() L.fft(P.put(kjit.zeros({ 4, 2 })), { out = P.put(kjit.zeros({ 3, 2 })) }) end)
  local x = P.put(kjit.zeros({ 4, 2 }))
  local y = P.put(kjit.zeros({ 5, 2 }))
  raises(pre .. "fft: out overlaps the input (only fft, ifft, fft2 and fftn transform in place, with out = x itself)",
    function() L.fft(y:slice(1, 4), { out = y:slice(2, 5) }) end)
  raises(pre .. "rfftn: option axes: increasing axes expected (the last one is the halved one), got axis 1 after axis 2",
    function() L.rfftn(P.put(kjit.zeros({ 4, 4 })), { axes = { 2, 1 } }) end)
  raises(pre .. "irfftn: option axis: irfftn takes axes", function() L.irfftn(x, { axis = 1 }) end)
  raises(pre .. "rfft: argument #1: at most 3 dimensions, got 4", function() L.rfft(P.put(kjit.zeros({ 2, 2, 2, 2 }))) end)
  raises(pre .. "fft: argument #2: an options table expected, got number", function() L.fft(x, 4) end)
  local p = L.plan("fft", x)
  raises(pre .. "plan:exec: argument #1: f64 array of shape {5, 2}, but the plan is for f64 {4, 2}", function() p:exec(P.put(kjit.zeros({ 5, 2 }))) end)
  raises("bad argument #1 to 'plan' (invalid option 'dct')", function() L.plan("dct", x) end)
  if P.sim then
    raises("kjit.cuda.fft.fft: argument #1: a device array expected, got a kjit array", function() L.fft(kjit.zeros({ 4, 2 })) end)
  else
    raises("kjit.fft.fft: option stream: kjit.fft runs on the CPU", function() L.fft(x, { stream = 1 }) end)
  end
end)

test("kjit.fft refuses device arrays; simulator plans are refused with it off", function()
  if not have_fftw then skip("no FFTW") end
  local prev = cuda.simulate(true)
  local d = cuda.to_device(kjit.zeros({ 4, 2 }))
  local p = cuda.fft.plan("fft", d)
  raises("kjit.fft.fft: argument #1: a kjit array expected, got a device array (use kjit.cuda.fft)", function() fft.fft(d) end)
  cuda.simulate(false)
  raises("this plan was made in simulator mode", function() p:exec(d) end)
  cuda.simulate(prev)
end)

test("simulator results are FFTW's, bit for bit", function()
  if not have_fftw then skip("no FFTW") end
  local prev = cuda.simulate(true)
  local x = random_array({ 12, 10, 2 }, "f32")
  local a = fft.fft2(x)
  local b = cuda.fft.fft2(cuda.to_device(x)):copy_to_host()
  local fa, fb = a:reshape({ a.size }), b:reshape({ b.size })
  for i = 1, a.size do eq(fb[i], fa[i], "element " .. i) end
  truthy(cuda.fft.backend():find("(the simulator)", 1, true), cuda.fft.backend())
  cuda.simulate(prev)
end)

test("backend names the library", function()
  local b = fft.backend()
  truthy(b:find("^FFTW") or b:find("libfftw3%-dev"), b)
end)

test("kjit.cuda.fft without a GPU or the simulator is a clear error", function()
  local prev = cuda.simulate(false)
  if cuda.is_available() then cuda.simulate(prev); skip("a GPU is present") end
  raises("kjit.cuda: no CUDA driver", function() cuda.fft.fft(cuda.device_array({ 4, 2 })) end)
  cuda.simulate(prev)
end)

test("GPU: cuFFT against FFTW (runs where a GPU is)", function()
  local prev = cuda.simulate(false)
  local ok, why = cuda.is_available()
  if not ok then cuda.simulate(prev); skip("no GPU: " .. tostring(why)) end
  if not have_fftw then cuda.simulate(prev); skip("no FFTW") end
  local s = cuda.stream()
  for _, dt in ipairs { "f64", "f32" } do
    local x = random_array({ 6, 8, 10, 2 }, dt)
    for _, c in ipairs {
      { "fft", {} }, { "ifft", {} }, { "fft", { axis = 2, norm = "ortho" } }, { "fft2", {} },
      { "fftn", {} }, { "fftn", { axes = { 1, 3 }, inverse = true } }, { "fft", { n = 13 } },
      { "fftn", { axes = { 2, 3 }, s = { 5, 12 } } },
    } do
      local want = fft[c[1]](x, c[2])
      local o = {}
      for k, v in pairs(c[2]) do o[k] = v end
      o.stream = s
      local got = cuda.fft[c[1]](cuda.to_device(x), o):copy_to_host(nil, s)
      s:synchronize()
      shape_eq(got.shape, want.shape, c[1] .. " shape")
      check_complex(got, to_complex(want), 480, dt, "GPU " .. dt .. " " .. c[1])
    end
    local r = random_array({ 6, 10 }, dt)
    for _, ax in ipairs { 1, 2 } do
      local X = fft.rfft(r, { axis = ax })
      check_complex(cuda.fft.rfft(cuda.to_device(r), { axis = ax }):copy_to_host(), to_complex(X), 10, dt, "GPU rfft")
      local want = fft.irfft(X, { axis = ax, n = r.shape[ax] })
      local got = cuda.fft.irfft(cuda.to_device(X), { axis = ax, n = r.shape[ax] }):copy_to_host()
      local t = {}
      local wf = want:reshape({ want.size })
      for i = 1, want.size do t[i] = wf[i] end
      check_real(got, t, 10, dt, "GPU irfft")
    end
  end
  cuda.simulate(prev)
end)

-- the cuFFT path: a child process with the mock driver and the mock cuFFT
local MOCK, MOCKFFT = MODDIR .. "/libmockcuda.so", MODDIR .. "/libmockcufft.so"
local function file_exists(p) local f = io.open(p) if f then f:close() return true end return false end
local function child(suite, env)
  test("cuFFT path (mock driver, mock cuFFT): " .. suite, function()
    if not (file_exists(MOCK) and file_exists(MOCKFFT)) then skip("no mock libraries") end
    local e = { "KJIT_TEST_FFT_CHILD=" .. suite, "KJIT_CUDASIM=0" }
    for k, v in pairs(env) do e[#e + 1] = k .. "=" .. v end
    local cmd = string.format("env %s %s %s %s %s 2>&1", table.concat(e, " "), LUA, HARNESS, MODDIR, THIS)
    local p = io.popen(cmd)
    local out = p:read("a")
    local ok = p:close()
    if not ok or not out:find(", 0 failed") then error("child failed:\n" .. out, 0) end
    if out:find(" 0 passed") then error("child ran nothing:\n" .. out, 0) end
  end)
end
child("main", { KJIT_LIBCUDA = MOCK, KJIT_CUFFT = MOCKFFT })
child("execfail", { KJIT_LIBCUDA = MOCK, KJIT_CUFFT = MOCKFFT, MOCK_CUFFT_FAIL = "exec" })
child("missing", { KJIT_LIBCUDA = MOCK, KJIT_CUFFT = "/nonexistent/libcufft.so.12" })

-- FFTW is opened on first use (src/libs/fft_host.c): `require "kjit"` maps
-- neither of its libraries, the first transform maps them and computes.
test("require maps no FFTW; the first transform loads it", function()
  if not have_fftw then skip("no FFTW") end
  local script = [[
local function fftw_mapped()
  local f = assert(io.open("/proc/self/maps"))
  local m = f:read("a"):find("libfftw3", 1, true) ~= nil
  f:close()
  return m
end
local kjit = require "kjit"
local before = fftw_mapped()
local X = kjit.fft.rfft(kjit.array({ 1.0, 2.0, 3.0, 4.0 }, "f64"))
io.write(string.format("%s %s %g %g", before, fftw_mapped(), X[1][1], X[3][1]))
]]
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(script)
  f:close()
  local p = io.popen(string.format("LUA_CPATH=%q %s %s 2>&1", MODDIR .. "/?.so;;", LUA, path))
  local out = p:read("a")
  p:close()
  os.remove(path)
  eq(out, "false true 10 -2", "maps before and after, X[1] and X[3] (real parts)")
end)

else   -- a child: the driver path

local function mock_test(name, fn) test(CHILD .. ": " .. name, fn) end

if CHILD == "main" then
  mock_test("fft, fft2, fftn, rfft on device arrays match FFTW", function()
    truthy(cuda.fft.backend():find("mock", 1, true), cuda.fft.backend())
    for _, dt in ipairs { "f64", "f32" } do
      local x = random_array({ 3, 4, 5, 2 }, dt)
      for _, c in ipairs {
        { "fft", {} }, { "fft", { axis = 1 } }, { "fft", { axis = 2 } }, { "fft2", {} },
        { "fftn", {} }, { "fftn", { axes = { 1, 3 } } }, { "fft2", { axes = { 1, 2 } } },
        { "fft", { norm = "backward" } }, { "ifft", { norm = "forward" } },
      } do
        local want = fft[c[1]](x, c[2])
        local got = cuda.fft[c[1]](cuda.to_device(x), c[2]):copy_to_host()
        local cs = want.shape
        check_complex(got, to_complex(want), 60, dt, dt .. " " .. c[1])
        shape_eq(got.shape, cs, c[1] .. " shape")
      end
      local r = random_array({ 4, 6, 5 }, dt)
      for _, ax in ipairs { 1, 2, 3 } do
        local want = fft.rfft(r, { axis = ax })
        local got = cuda.fft.rfft(cuda.to_device(r), { axis = ax }):copy_to_host()
        shape_eq(got.shape, want.shape, "rfft shape")
        check_complex(got, to_complex(want), 6, dt, dt .. " rfft axis " .. ax)
      end
    end
  end)
  mock_test("rfftn and irfftn on device arrays match FFTW", function()
    for _, dt in ipairs { "f64", "f32" } do
      local r = random_array({ 4, 6, 5 }, dt)
      for _, axes in ipairs { { 1, 2, 3 }, { 1, 3 }, { 2, 3 }, { 1, 2 }, { 3 } } do
        local want = fft.rfftn(r, { axes = axes })
        local got = cuda.fft.rfftn(cuda.to_device(r), { axes = axes }):copy_to_host()
        shape_eq(got.shape, want.shape, "rfftn shape")
        check_complex(got, to_complex(want), 120, dt, dt .. " rfftn axes {" .. table.concat(axes, ",") .. "}")
        -- irfftn unnormalized (norm = forward: the mock runs no scaling kernel)
        local lens = {}
        for i, ax in ipairs(axes) do lens[i] = r.shape[ax] end
        local wb = fft.irfftn(want, { axes = axes, s = lens, norm = "forward" })
        local gb = cuda.fft.irfftn(cuda.to_device(want), { axes = axes, s = lens, norm = "forward" }):copy_to_host()
        shape_eq(gb.shape, wb.shape, "irfftn shape")
        local wt = {}
        local wf = wb:reshape({ wb.size })
        for i = 1, wb.size do wt[i] = wf[i] end
        check_real(gb, wt, 120, dt, dt .. " irfftn axes {" .. table.concat(axes, ",") .. "}")
      end
    end
  end)
  mock_test("in place on device arrays (out = x)", function()
    local x = random_array({ 3, 4, 2 }, "f64")
    for _, c in ipairs { { "fft", {} }, { "fft2", {} }, { "fftn", { axes = { 1 } } } } do
      local d = cuda.to_device(x)
      c[2].out = d
      cuda.fft[c[1]](d, c[2])
      c[2].out = nil
      check_complex(d:copy_to_host(), to_complex(fft[c[1]](x, c[2])), 12, "f64", c[1] .. " in place")
    end
  end)
  mock_test("plans, streams, and the normalization kernel launch", function()
    local x = random_array({ 8, 2 }, "f64")
    local s = cuda.stream()
    local p = cuda.fft.plan("fft", cuda.to_device(x))
    local got = p:exec(cuda.to_device(x), nil, s):copy_to_host()
    check_complex(got, to_complex(fft.fft(x)), 8, "f64", "plan on a stream")
    -- ifft with the default norm launches the scaling kernel (the mock runs none)
    cuda.fft.ifft(cuda.to_device(x), { stream = s })
    s:synchronize()
  end)
  mock_test("resizing (n) and irfft copy through cuMemcpy2DAsync", function()
    local x = random_array({ 6, 2 }, "f64")
    local got = cuda.fft.fft(cuda.to_device(x), { n = 9 }):copy_to_host()
    check_complex(got, to_complex(fft.fft(x, { n = 9 })), 9, "f64", "n = 9")
    got = cuda.fft.fft(cuda.to_device(x), { n = 4 }):copy_to_host()
    check_complex(got, to_complex(fft.fft(x, { n = 4 })), 4, "f64", "n = 4")
    local y = random_array({ 3, 4, 2 }, "f64")
    got = cuda.fft.fftn(cuda.to_device(y), { s = { 5, 2 } }):copy_to_host()
    check_complex(got, to_complex(fft.fftn(y, { s = { 5, 2 } })), 10, "f64", "s = {5, 2}")
    -- irfft unnormalized (norm = forward), since the mock runs no kernel
    local X = fft.rfft(random_array({ 8 }, "f64"))
    got = cuda.fft.irfft(cuda.to_device(X), { norm = "forward" }):copy_to_host()
    check_real(got, (function()
      local w = fft.irfft(X, { norm = "forward" })
      local t = {}
      for i = 1, #w do t[i] = w[i] end
      return t
    end)(), 8, "f64", "irfft")
  end)
elseif CHILD == "execfail" then
  mock_test("a failing cuFFT call is a Lua error naming the call and the status", function()
    local m = raises("kjit.cuda.fft.fft: cufftExecZ2Z: CUFFT_EXEC_FAILED (6)",
      function() cuda.fft.fft(cuda.device_array({ 4, 2 })) end)
    truthy(m:find("test_fft.lua:%d+:"), "location in: " .. m)
    raises("kjit.cuda.fft.rfft: cufftExecR2C: CUFFT_EXEC_FAILED (6)",
      function() cuda.fft.rfft(cuda.device_array({ 4 }, "f32")) end)
  end)
elseif CHILD == "missing" then
  mock_test("a missing cuFFT is a clear error", function()
    raises("kjit.cuda.fft.fft: cuFFT is not available: KJIT_CUFFT=/nonexistent/libcufft.so.12 could not be loaded",
      function() cuda.fft.fft(cuda.device_array({ 4, 2 })) end)
    truthy(cuda.fft.backend():find("could not be loaded", 1, true), cuda.fft.backend())
    -- the host side is unaffected
    if have_fftw then eq(fft.fft(kjit.zeros({ 4, 2 }))[1][1], 0.0, "kjit.fft still works") end
  end)
end

end
