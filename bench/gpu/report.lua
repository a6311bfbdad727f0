-- bench/gpu/report.lua: the GPU benchmark results as JSON and as an SVG chart.
--   lua5.4 bench/gpu/report.lua KJIT.tsv CUDA.tsv NUMBA.tsv DEVICE OUT.json OUT.svg
-- Each .tsv holds "name<TAB>value<TAB>unit" lines (bench_gpu.lua, peers.cu,
-- peers_numba.py). The chart draws, for every measurement that CUDA C also
-- made, kjit's and numba-cuda's time relative to CUDA C's (a bandwidth is
-- turned into a time ratio: CUDA C's GB/s over theirs). Log scale; lower is
-- better; the line at 1 is CUDA C. run_gpu.sh calls it.
local kfile, cfile, nfile, device, jsonfile, svgfile = table.unpack(arg)

local function read(file)
  local t, order = {}, {}
  local f = io.open(file)
  if not f then return t, order end
  for line in f:lines() do
    local name, v, unit = line:match("^([^#\t][^\t]*)\t([^\t]+)\t(%S+)$")
    if name and tonumber(v) then
      t[name] = { value = tonumber(v), unit = unit }
      order[#order + 1] = name
    end
  end
  f:close()
  return t, order
end

local K, korder = read(kfile)
local C, corder = read(cfile)
local N = read(nfile)
local names, seen = {}, {}
for _, list in ipairs{ korder, corder } do
  for _, n in ipairs(list) do if not seen[n] then seen[n] = true; names[#names + 1] = n end end
end

local function js(s) return '"' .. tostring(s):gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"' end
local function num(r) return r and string.format("%.6g", r.value) or "null" end

-- JSON
local rows = {}
for _, n in ipairs(names) do
  local unit = (K[n] or C[n]).unit
  rows[#rows + 1] = string.format('    {"name": %s, "unit": %s, "kjit": %s, "cuda_c": %s, "numba_cuda": %s}',
    js(n), js(unit), num(K[n]), num(C[n]), num(N[n]))
end
local jf = assert(io.open(jsonfile, "w"))
jf:write("{\n", '  "date": ', js(os.date("!%Y-%m-%d %H:%M UTC")), ",\n", '  "device": ', js(device), ",\n",
  '  "peers": {"cuda_c": "nvcc -O3 -arch=sm_90", "numba_cuda": "numba-cuda @cuda.jit"},\n',
  '  "rows": [\n', table.concat(rows, ",\n"), "\n  ]\n}\n")
jf:close()

-- SVG: time relative to CUDA C
local function rel(r, c)
  if not (r and c) or r.value <= 0 or c.value <= 0 then return nil end
  if r.unit == "GB/s" or r.unit == "TB/s" then return c.value / r.value end
  return r.value / c.value
end
local bars = {}
for _, n in ipairs(names) do
  local c = C[n]
  -- bandwidth rows derived from a timed row are drawn once, as the time
  if c and not (n:match("_bandwidth$") and n ~= "copy_bandwidth") and n ~= "copy_bandwidth" then
    bars[#bars + 1] = { name = n, kjit = rel(K[n], c), numba = rel(N[n], c) }
  end
end
local W, rowh, left = 760, 34, 250
local H = 70 + #bars * rowh + 30
local lo, hi = 0.5, 16
local function x(v) return left + (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo)) * (W - left - 20) end
local out = {}
local function put(...) out[#out + 1] = string.format(...) end
put('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">', W, H)
put('<rect width="100%%" height="100%%" fill="white"/>')
put('<text x="10" y="20" font-size="14" font-weight="bold">kjit.cuda and numba-cuda: time relative to CUDA C (lower is better, log scale)</text>')
put('<text x="10" y="38" fill="#555">%s, %s</text>', device:gsub("&", "&amp;"):gsub("<", "&lt;"), os.date("!%Y-%m-%d"))
put('<rect x="%d" y="46" width="12" height="12" fill="#d62728"/><text x="%d" y="57">kjit</text>', left, left + 16)
put('<rect x="%d" y="46" width="12" height="12" fill="#1f77b4"/><text x="%d" y="57">numba-cuda</text>', left + 70, left + 86)
for _, t in ipairs{ 0.5, 1, 2, 4, 8, 16 } do
  put('<line x1="%.1f" y1="64" x2="%.1f" y2="%d" stroke="%s"/>', x(t), x(t), H - 24, t == 1 and "#000" or "#ddd")
  put('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%gx</text>', x(t), H - 10, t)
end
for i, b in ipairs(bars) do
  local y = 66 + (i - 1) * rowh
  put('<text x="%d" y="%d" text-anchor="end">%s</text>', left - 6, y + 20, b.name)
  for j, s in ipairs{ { b.kjit, "#d62728" }, { b.numba, "#1f77b4" } } do
    local v = s[1]
    if v then
      local vv = math.max(lo, math.min(hi, v))
      local x0, x1 = x(math.min(1, vv)), x(math.max(1, vv))
      put('<rect x="%.1f" y="%d" width="%.1f" height="13" fill="%s"/>', x0, y + 2 + (j - 1) * 15, math.max(1, x1 - x0), s[2])
      put('<text x="%.1f" y="%d" font-size="10">%.2fx</text>', x1 + 3, y + 13 + (j - 1) * 15, v)
    end
  end
end
put('</svg>')
local sf = assert(io.open(svgfile, "w"))
sf:write(table.concat(out, "\n"), "\n")
sf:close()
