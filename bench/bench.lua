-- bench/bench.lua: the benchmark driver (bash bench/run.sh builds what it
-- needs and runs this). Run from the repository root:
--   lua5.4 bench/bench.lua [--runs N] [--only k1,k2] [--build DIR] [--kjit DIR] [--out DIR]
-- --build: where the C runners are (DIR/bench-c/kernels-*); --kjit: where
-- kjit.so is (default: the --build directory).
-- Each kernel of bench/kernels.lua runs in a fresh process per
-- implementation (bench/run_lua.lua, bench/c/kernels.c, bench/numba_kernels.py):
-- one warm-up call, then N timed calls (median; process CPU time). Prints the
-- machine, the times, the ratios against each peer with their targets
-- (the project's speed goals), call and compile overheads; writes
-- <out>/latest.json and <out>/latest.svg (bench/svg.lua).
local here = arg[0]:match("^(.*[/\\])") or "./"
local W = dofile(here .. "workload.lua")

local opts = { runs = 7, interp_runs = 3, build = "build-bench", out = here .. "results" }
do
  local i = 1
  while i <= #arg do
    local a, v = arg[i], arg[i + 1]
    if a == "--runs" then opts.runs = assert(tonumber(v), "--runs N"); i = i + 1
    elseif a == "--only" then opts.only = v; i = i + 1
    elseif a == "--build" then opts.build = v; i = i + 1
    elseif a == "--kjit" then opts.kjit = v; i = i + 1
    elseif a == "--out" then opts.out = v; i = i + 1
    else io.stderr:write("bench.lua: unknown argument " .. a .. "\n"); os.exit(2) end
    i = i + 1
  end
end

local function sh(cmd)           -- stdout of cmd (stderr discarded), trimmed
  local p = io.popen(cmd .. " 2>/dev/null")
  local s = p:read("a")
  p:close()
  return (s:gsub("%s+$", ""))
end
local function exists(path) local f = io.open(path) if f then f:close() return true end return false end
local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

---------------------------------------------------------------------------
-- implementations: id, label, command prefix; unavailable ones say why
---------------------------------------------------------------------------
local B = opts.build
local KD = opts.kjit or B
local lua_env = "LUA_CPATH=" .. q(KD .. "/?.so;;") .. " "
local venv_py = here .. ".venv/bin/python"
local impls = {
  { id = "kjit", label = "kjit", cmd = lua_env .. "lua5.4 " .. here .. "run_lua.lua kjit" },
  { id = "kjit_nobc", label = "kjit nobc", cmd = lua_env .. "lua5.4 " .. here .. "run_lua.lua kjit-nobounds",
    note = "kjit with boundscheck = false" },
  -- C: clang without FMA contraction is the fair peer (kjit keeps Lua's
  -- rounding of every * and +); with it, and gcc (which fuses by
  -- default), show what fusing a*b+c is worth
  { id = "clang_nofma", label = "clang noFMA", cmd = B .. "/bench-c/kernels-clang-nofma",
    note = "clang-14 -O3 -march=native -ffp-contract=off" },
  { id = "clang", label = "clang FMA", cmd = B .. "/bench-c/kernels-clang-fma",
    note = "clang-14 -O3 -march=native -ffp-contract=on" },
  { id = "gcc", label = "gcc -O3", cmd = B .. "/bench-c/kernels-gcc",
    note = "gcc -O3 -march=native (-ffp-contract=fast)" },
  { id = "numba", label = "Numba", cmd = venv_py .. " " .. here .. "numba_kernels.py" },
  { id = "luajit", label = "LuaJIT FFI", cmd = "luajit " .. here .. "run_lua.lua luajit" },
  { id = "lua", label = "Lua 5.4", cmd = "lua5.4 " .. here .. "run_lua.lua lua", interp = true,
    note = "the interpreter over Lua tables" },
  { id = "lua_karr", label = "Lua5.4 karr", cmd = lua_env .. "lua5.4 " .. here .. "run_lua.lua lua-kjitarrays",
    interp = true, note = "the interpreter over kjit arrays (before kjit.jit)" },
}
local by_id = {}
for _, im in ipairs(impls) do by_id[im.id] = im end

if not exists(KD .. "/kjit.so") then
  for _, id in ipairs({ "kjit", "kjit_nobc", "lua_karr" }) do by_id[id].skip = KD .. "/kjit.so not built" end
end
for _, id in ipairs({ "clang", "gcc", "clang_nofma" }) do
  local bin = by_id[id].cmd
  if not exists(bin) then by_id[id].skip = bin .. " not built" end
end
if sh("luajit -v") == "" then by_id.luajit.skip = "luajit not found" end
local numba_version = exists(venv_py) and not os.getenv("BENCH_NO_NUMBA")
  and sh(q(venv_py) .. " -c 'import numba; print(numba.__version__)'") or ""
if numba_version == "" then
  by_id.numba.skip = os.getenv("BENCH_NUMBA_SKIP") or ("no Numba in " .. here .. ".venv")
end

---------------------------------------------------------------------------
-- the machine
---------------------------------------------------------------------------
local function first_line(s) return (s:match("[^\n]*")) end
-- The CPU the numbers come from, from /proc/cpuinfo: a VM's model name
-- may be as vague as "AMD EPYC", so the family and model numbers follow,
-- with the microarchitecture where this short table knows them.
local function cpu_name()
  local info = {}
  for _, k in ipairs({ "model name", "vendor_id", "cpu family", "model", "stepping", "cpu MHz" }) do
    info[k] = sh("sed -n 's/^" .. k .. "[[:space:]]*: //p' /proc/cpuinfo | head -1")
  end
  if info["model name"] == "" then return sh("uname -m") end
  local fam, mod = tonumber(info["cpu family"]), tonumber(info.model)
  local uarch
  if info.vendor_id == "AuthenticAMD" and fam == 25 then
    uarch = (mod and mod >= 0x10 and mod <= 0x1f or mod and mod >= 0x60 and mod <= 0xaf) and "Zen 4" or "Zen 3"
  elseif info.vendor_id == "AuthenticAMD" and fam == 26 then uarch = "Zen 5"
  elseif info.vendor_id == "AuthenticAMD" and fam == 23 then uarch = "Zen 1/2"
  elseif info.vendor_id == "GenuineIntel" and fam == 6 then
    uarch = ({ [85] = "Skylake-SP/Cascade Lake", [106] = "Ice Lake-SP", [143] = "Sapphire Rapids",
               [207] = "Emerald Rapids", [173] = "Granite Rapids" })[mod]
  end
  return string.format("%s (%s family %s model %s stepping %s%s, %s MHz)", info["model name"],
    info.vendor_id, info["cpu family"], info.model, info.stepping, uarch and (": " .. uarch) or "",
    (info["cpu MHz"]:match("^%d+")) or "?")
end
local machine = {
  date = os.date("!%Y-%m-%d %H:%M UTC"),
  cpu = cpu_name(),
  cores = tonumber(sh("nproc")) or 0,
  simd = (sh("grep -m1 -o -w avx512f /proc/cpuinfo") ~= "" and "AVX-512")
         or (sh("grep -m1 -o -w avx2 /proc/cpuinfo") ~= "" and "AVX2") or "",
  os = sh("uname -sr"),
  lua = sh("lua5.4 -v"):match("^Lua %S+") or "?",
  luajit = sh("luajit -v"):match("^LuaJIT %S+") or "?",
  clang = first_line(sh("clang-14 --version")),
  gcc = first_line(sh("gcc --version")),
  llvm = sh("llvm-config-14 --version"),
  numba = numba_version ~= "" and (numba_version .. " (numpy "
          .. sh(q(venv_py) .. " -c 'import numpy; print(numpy.__version__)'") .. ", "
          .. sh(q(venv_py) .. " -V") .. ")") or ("not run: " .. by_id.numba.skip),
  kjit = os.getenv("BENCH_KJIT_REV")
         or (sh("git rev-parse --short HEAD") .. (sh("git status --porcelain src include") ~= ""
             and " + uncommitted changes in src/" or "")) .. " (" .. KD .. "/kjit.so)",
}
print(string.format("kjit benchmarks, %s", machine.date))
print(string.format("  CPU     %s, %d cores, %s", machine.cpu, machine.cores, machine.simd))
print(string.format("  OS      %s", machine.os))
for _, k in ipairs({ "lua", "luajit", "clang", "gcc", "llvm", "numba", "kjit" }) do
  print(string.format("  %-7s %s", k, machine[k]))
end
for _, im in ipairs(impls) do
  if im.skip then print(string.format("  (%s not run: %s)", im.label, im.skip)) end
end
print(string.format("  times: median of %d runs after a warm-up call (the Lua 5.4 interpreter: %d runs"
  .. " at smaller sizes, *), process CPU time",
  opts.runs, opts.interp_runs))

---------------------------------------------------------------------------
-- run the kernels
---------------------------------------------------------------------------
local only
if opts.only then
  only = {}
  for k in opts.only:gmatch("[^,]+") do only[k] = true end
end

local results = {}      -- results[kernel] = { params, work, times = {id = {...}} }
for _, name in ipairs(W.order) do
  if not only or only[name] then
    local spec = W.spec[name]
    local r = { params = spec.full, param_names = spec.params, impl = {} }
    results[#results + 1] = r
    r.name = name
    io.write(string.format("  %-11s", name)); io.flush()
    for _, im in ipairs(impls) do
      if not im.skip then
        local p = im.interp and spec.interp or spec.full
        local runs = im.interp and opts.interp_runs or opts.runs
        local cmd = string.format("%s %s %d %s", im.cmd, name, runs, table.concat(p, " "))
        local out = sh(cmd)
        local med, min, _, check = out:match("result (%S+) (%S+) (%S+) (%S+)")
        local e = { cmd = cmd }
        if med then
          local scale = W.spec[name].work(spec.full) / W.spec[name].work(p)
          e.median_s, e.min_s, e.check = tonumber(med) * scale, tonumber(min) * scale, tonumber(check)
          e.runs, e.params, e.scaled = runs, p, scale ~= 1 and scale or nil
        else
          e.error = "no result from: " .. cmd
        end
        r.impl[im.id] = e
        io.write(med and "." or "x"); io.flush()
      end
    end
    io.write("\n")
  end
end

---------------------------------------------------------------------------
-- overheads (fresh processes)
---------------------------------------------------------------------------
local overhead = {}
if not by_id.kjit.skip then
  for line in sh(lua_env .. "lua5.4 " .. here .. "call_overhead.lua --raw"):gmatch("[^\n]+") do
    local k, v = line:match("^(%S+) (%S+)$")
    if k then overhead[k] = tonumber(v) end
  end
  local function median_compile(which)
    local t = {}
    for i = 1, 5 do
      t[i] = tonumber(sh(lua_env .. "lua5.4 " .. here .. "compile_time.lua " .. which):match("compile_ms (%S+)"))
      if not t[i] then return nil end
    end
    table.sort(t)
    return t[3]
  end
  overhead.first_compile_small_ms = median_compile("small")
  overhead.first_compile_loop_ms = median_compile("loop")
  overhead.first_compile_mandelbrot_ms = median_compile("mandelbrot")
  overhead.first_compile_stencil_ms = median_compile("stencil")
  -- the disk cache: one process stores, then fresh processes load (each
  -- must report a hit, else the figure would be a compile's)
  local cdir = os.tmpname()
  os.remove(cdir)
  sh("mkdir -p " .. q(cdir))
  for _, which in ipairs{ "small", "mandelbrot", "stencil" } do
    sh(lua_env .. "lua5.4 " .. here .. "compile_time.lua " .. which .. " " .. q(cdir))
    local t, tn = {}, {}
    for i = 1, 5 do
      local out = sh(lua_env .. "lua5.4 " .. here .. "compile_time.lua " .. which .. " " .. q(cdir))
      t[i] = out:find("cache_hits 2", 1, true) and tonumber(out:match("compile_ms (%S+)"))
      tn[i] = tonumber(out:match("next_ms (%S+)"))
      if not (t[i] and tn[i]) then t = nil break end
    end
    if t then
      table.sort(t) table.sort(tn)
      overhead["cache_load_" .. which .. "_ms"] = t[3]
      overhead.cache_load_next_ms = tn[3]
    end
  end
  sh("rm -rf " .. q(cdir))
end

---------------------------------------------------------------------------
-- the tables
---------------------------------------------------------------------------
local function ms(e)
  if not e then return "-" end
  if e.error then return "error" end
  local t = e.median_s * 1e3
  local s = t >= 100 and string.format("%.0f", t) or t >= 10 and string.format("%.1f", t)
            or string.format("%.2f", t)
  return s .. (e.scaled and "*" or "")
end

local cols = {}
for _, im in ipairs(impls) do if not im.skip then cols[#cols + 1] = im end end

local function size_text(r, p)
  local t = {}
  for i, v in ipairs(p) do t[i] = r.param_names[i] .. "=" .. v end
  return table.concat(t, " ")
end
print("\nSizes (the Lua 5.4 interpreter columns run the second, smaller size; their times are scaled by work):")
for _, r in ipairs(results) do
  local e = r.impl.lua or r.impl.lua_karr
  print(string.format("  %-11s %-26s %s", r.name, size_text(r, r.params),
    e and e.params and ("Lua 5.4: " .. size_text(r, e.params)) or ""))
end
for _, im in ipairs(cols) do
  if im.note then print(string.format("  %-11s %s", im.label, im.note)) end
end

print("\nTime per call, ms (median; * = scaled from the smaller size)")
local hdr = string.format("%-11s", "kernel")
for _, im in ipairs(cols) do hdr = hdr .. string.format(" %11s", im.label) end
print(hdr)
for _, r in ipairs(results) do
  local line = string.format("%-11s", r.name)
  for _, im in ipairs(cols) do line = line .. string.format(" %11s", ms(r.impl[im.id])) end
  print(line)
end

-- ratios: peer time / kjit time (above 1: kjit faster), with the targets
local ratio_defs = {
  { peer = "clang_nofma", title = "noFMA/kj", target = 1 / 1.1,
    text = ">= 0.91 (within 1.1x of clang C without FMA contraction, which rounds as Lua and kjit do)" },
  { peer = "clang", title = "FMA/kj", text = "(no target: clang with FMA contraction, a*b+c rounded once)" },
  { peer = "gcc", title = "gcc/kj", text = "(no target; gcc fuses a*b+c too)" },
  { peer = "numba", title = "Numba/kj", target = 1.0, text = ">= 1 (as fast as Numba)" },
  { peer = "luajit", title = "LuaJIT/kj", target = 2.0, text = ">= 2 geomean (2x faster than LuaJIT)", geomean_target = true },
  { peer = "lua", title = "Lua/kj", target = 50, text = ">= 50 (50x faster than the interpreter, Lua tables)" },
  { peer = "lua_karr", title = "Luakarr/kj", target = 50, text = ">= 50 (the interpreter over kjit arrays)" },
}
local active = {}
for _, d in ipairs(ratio_defs) do if not by_id[d.peer].skip and not by_id.kjit.skip then active[#active + 1] = d end end

local ratios = {}
for _, r in ipairs(results) do
  ratios[r.name] = {}
  local k = r.impl.kjit
  for _, d in ipairs(active) do
    local p = r.impl[d.peer]
    if k and k.median_s and p and p.median_s then ratios[r.name][d.peer] = p.median_s / k.median_s end
  end
end
local geomean = {}
for _, d in ipairs(active) do
  local s, n = 0, 0
  for _, r in ipairs(results) do
    local v = ratios[r.name][d.peer]
    if v then s, n = s + math.log(v), n + 1 end
  end
  if n > 0 then geomean[d.peer] = math.exp(s / n) end
end

print("\nPeer time / kjit time (kj); above 1: kjit is faster; ! = misses the target")
hdr = string.format("%-11s", "kernel")
for _, d in ipairs(active) do hdr = hdr .. string.format(" %11s", d.title) end
print(hdr)
local function cell(v, d, is_geo)
  if not v then return "-" end
  local miss = d.target and v < d.target and (is_geo or not d.geomean_target)
  return string.format("%.2f%s", v, miss and "!" or " ")
end
for _, r in ipairs(results) do
  local line = string.format("%-11s", r.name)
  for _, d in ipairs(active) do line = line .. string.format(" %11s", cell(ratios[r.name][d.peer], d, false)) end
  print(line)
end
local line = string.format("%-11s", "geomean")
for _, d in ipairs(active) do line = line .. string.format(" %11s", cell(geomean[d.peer], d, true)) end
print(line)
print("targets:")
for _, d in ipairs(active) do print(string.format("  %-12s %s", d.title, d.text)) end

-- checksums: every implementation at full size against kjit
print("\nChecksums against kjit (same inputs; relative difference):")
local nmis = 0
for _, r in ipairs(results) do
  local k = r.impl.kjit
  for _, im in ipairs(cols) do
    local e = r.impl[im.id]
    if k and k.check and e and e.check and not e.scaled and im.id ~= "kjit" then
      local d = math.abs(e.check - k.check) / math.max(1, math.abs(k.check))
      e.check_reldiff = d
      if d > 1e-9 then
        nmis = nmis + 1
        print(string.format("  %-11s %-12s %.3g (%.17g vs %.17g)%s", r.name, im.label, d, e.check, k.check,
          (im.id == "clang" or im.id == "gcc") and ": FMA contraction in C" or ""))
      end
    end
    if e and e.error then print("  " .. r.name .. " " .. im.label .. ": " .. e.error) end
  end
end
if nmis == 0 then print("  all agree to 1e-9") end

if overhead.call0_jit_ns then
  print("\nOverheads (kjit, each against its target)")
  for _, c in ipairs({ { "0", "0 arguments", 1.5 }, { "4", "4 numbers", 2 }, { "a", "4 arrays", 3 } }) do
    local j, n, cc = overhead["call" .. c[1] .. "_jit_ns"], overhead["call" .. c[1] .. "_native_ns"],
      overhead["call" .. c[1] .. "_c_ns"]
    local cr = overhead["call" .. c[1] .. "_creads_ns"]
    -- the ratios call_overhead.lua computes round by round (both times from
    -- the same round: steadier on a loaded machine than a ratio of medians)
    local jr = overhead["call" .. c[1] .. "_jit_ratio"] or (j and cc and j / cc)
    local nr = overhead["call" .. c[1] .. "_native_ratio"] or (n and cc and n / cc)
    if j and cc then
      print(string.format("  call, %-11s f(...) %6.1f ns, f:native %6.1f ns, empty C function %5.1f ns:"
        .. " %.2fx / %.2fx (target <= %gx); a C function reading them %5.1f ns", c[2] .. ":", j,
        n or 0 / 0, cc, jr or 0 / 0, nr or 0 / 0, c[3], cr or 0 / 0))
    end
  end
  print(string.format("  first compile, small function (fresh process, median of 5): %6.1f ms (target < 15 ms)",
    overhead.first_compile_small_ms or 0 / 0))
  print(string.format("  first compile, small loop     (fresh process, median of 5): %6.1f ms (target <= 5 ms)",
    overhead.first_compile_loop_ms or 0 / 0))
  print(string.format("  first compile, mandelbrot     (fresh process, median of 5): %6.1f ms",
    overhead.first_compile_mandelbrot_ms or 0 / 0))
  print(string.format("  first compile, 2-D stencil    (fresh process, median of 5): %6.1f ms",
    overhead.first_compile_stencil_ms or 0 / 0))
  print(string.format("  disk-cache load, small function (fresh process, median of 5): %6.2f ms (target < 1 ms)",
    overhead.cache_load_small_ms or 0 / 0))
  print(string.format("  disk-cache load, mandelbrot     (fresh process, median of 5): %6.2f ms",
    overhead.cache_load_mandelbrot_ms or 0 / 0))
  print(string.format("  disk-cache load, 2-D stencil    (fresh process, median of 5): %6.2f ms",
    overhead.cache_load_stencil_ms or 0 / 0))
  print(string.format("  disk-cache load, a later small function in the same process:  %6.2f ms",
    overhead.cache_load_next_ms or 0 / 0))
end

---------------------------------------------------------------------------
-- JSON and SVG
---------------------------------------------------------------------------
local function json(v, ind)
  ind = ind or ""
  local t = type(v)
  if t == "table" then
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    if n == 0 then return "{}" end
    local inner, parts = ind .. "  ", {}
    if #v == n then
      for i = 1, #v do parts[i] = inner .. json(v[i], inner) end
      return "[\n" .. table.concat(parts, ",\n") .. "\n" .. ind .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for i, k in ipairs(keys) do
      local val = v[k]
      if val == nil then val = v[tonumber(k)] end
      parts[i] = inner .. json(k) .. ": " .. json(val, inner)
    end
    return "{\n" .. table.concat(parts, ",\n") .. "\n" .. ind .. "}"
  elseif t == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c)
      return ({ ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t" })[c]
             or string.format("\\u%04x", c:byte())
    end) .. '"'
  elseif t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return "null" end
    if math.type(v) == "integer" then return tostring(v) end
    return string.format("%.9g", v)
  elseif t == "boolean" then
    return tostring(v)
  end
  return "null"
end

local doc = { machine = machine, runs = opts.runs, interp_runs = opts.interp_runs,
              timing = "median process CPU time per call, seconds, after one warm-up call",
              implementations = {}, kernels = {}, ratios = ratios, geomean = geomean,
              overhead = overhead, targets = {} }
for _, im in ipairs(impls) do
  doc.implementations[#doc.implementations + 1] = { id = im.id, label = im.label, skipped = im.skip }
end
for _, d in ipairs(ratio_defs) do doc.targets[d.peer] = d.text end
for _, r in ipairs(results) do
  local k = { name = r.name, params = {}, impl = r.impl }
  for i, nm in ipairs(r.param_names) do k.params[nm] = r.params[i] end
  doc.kernels[#doc.kernels + 1] = k
end

os.execute("mkdir -p " .. q(opts.out))
local f = assert(io.open(opts.out .. "/latest.json", "w"))
f:write(json(doc), "\n")
f:close()
local svg = dofile(here .. "svg.lua")
f = assert(io.open(opts.out .. "/latest.svg", "w"))
f:write(svg(doc))
f:close()
print(string.format("\nwrote %s/latest.json and %s/latest.svg", opts.out, opts.out))
