-- bench/svg.lua: the benchmark chart as a self-contained SVG, from the
-- document bench/bench.lua writes to latest.json. No plotting library:
-- grouped bars, one group per kernel, each bar an implementation's time
-- divided by clang's without FMA contraction, the fair peer (log scale,
-- lower is better; the line at 1 is that clang).
--   local svg = dofile("bench/svg.lua"); io.write(svg(doc))
local SHOW = {   -- implementations drawn, in order, with their colours
  { id = "kjit", color = "#d62728" },
  { id = "gcc", color = "#8c8c8c" },
  { id = "clang", color = "#c7b42c" },   -- with FMA contraction
  { id = "numba", color = "#1f77b4" },
  { id = "luajit", color = "#2ca02c" },
  { id = "lua", color = "#9467bd" },
}

local function esc(s) return (tostring(s):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")) end
local function fmt(v) return v >= 10 and string.format("%.0f", v) or string.format("%.2g", v) end

return function(doc)
  local labels = {}
  for _, im in ipairs(doc.implementations) do labels[im.id] = im.label end
  -- the bars present, and the value range
  local shown = {}
  for _, s in ipairs(SHOW) do
    for _, k in ipairs(doc.kernels) do
      local e, c = k.impl[s.id], k.impl.clang_nofma
      if e and e.median_s and c and c.median_s then shown[#shown + 1] = s break end
    end
  end
  local lo, hi = 0.5, 2
  for _, k in ipairs(doc.kernels) do
    local c = k.impl.clang_nofma
    for _, s in ipairs(shown) do
      local e = k.impl[s.id]
      if c and c.median_s and e and e.median_s then
        local v = e.median_s / c.median_s
        lo, hi = math.min(lo, v), math.max(hi, v)
      end
    end
  end
  local lmin = math.floor(math.log(lo, 10) * 2) / 2
  local lmax = math.ceil(math.log(hi, 10) * 2) / 2

  local ngroups = math.max(#doc.kernels, 1)
  local barw, gap = 11, 18
  local groupw = #shown * barw + gap
  local left, right, top, bottom = 64, 20, 78, 54
  local plotw = ngroups * groupw
  local ploth = 300
  local width, height = left + plotw + right, top + ploth + bottom
  width = math.max(width, 640)
  local function y(v) return top + ploth * (lmax - math.log(v, 10)) / (lmax - lmin) end

  local o = {}
  local function add(...) o[#o + 1] = string.format(...) end
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d"'
      .. ' font-family="sans-serif" font-size="11">\n',
    width, height, width, height)
  add('<rect width="100%%" height="100%%" fill="white"/>\n')
  add('<text x="%d" y="18" font-size="14" font-weight="bold">kjit CPU benchmarks: time relative to'
      .. ' clang -O3 -march=native -ffp-contract=off (log scale, lower is better)</text>\n', left)
  local m = doc.machine
  add('<text x="%d" y="34" fill="#555">%s, %d cores; %s; LLVM %s; %s</text>\n', left,
    esc(m.cpu), m.cores, esc(m.lua), esc(m.llvm), esc(m.date))
  -- legend
  local lx = left
  for _, s in ipairs(shown) do
    add('<rect x="%d" y="46" width="10" height="10" fill="%s"/>', lx, s.color)
    add('<text x="%d" y="55">%s</text>\n', lx + 14, esc(labels[s.id] or s.id))
    lx = lx + 24 + 7 * #(labels[s.id] or s.id)
  end
  -- grid and axis
  for _, t in ipairs({ 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000 }) do
    local l = math.log(t, 10)
    if l >= lmin - 1e-9 and l <= lmax + 1e-9 then
      local yy = y(t)
      add('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"/>', left, left + plotw,
        yy, yy, t == 1 and "#000" or "#ddd", t == 1 and "1.2" or "1")
      add('<text x="%d" y="%.1f" text-anchor="end">%s</text>\n', left - 6, yy + 4, fmt(t) .. "x")
    end
  end
  add('<text x="%d" y="%.1f" text-anchor="start" fill="#000">clang noFMA = 1</text>\n', left + plotw - 90, y(1) - 4)
  -- bars
  local base = y(10 ^ lmin)
  for gi, k in ipairs(doc.kernels) do
    local gx = left + (gi - 1) * groupw + gap / 2
    local c = k.impl.clang_nofma
    for bi, s in ipairs(shown) do
      local e = k.impl[s.id]
      if c and c.median_s and e and e.median_s then
        local v = e.median_s / c.median_s
        local x, yy = gx + (bi - 1) * barw, y(v)
        add('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %.3g ms, %.2fx clang noFMA%s</title></rect>',
          x, yy, barw - 1, base - yy, s.color, esc(k.name), esc(labels[s.id] or s.id), e.median_s * 1e3, v,
          e.scaled and " (scaled from a smaller size)" or "")
        if s.id == "kjit" then
          add('<text x="%d" y="%.1f" text-anchor="middle" font-size="9">%s</text>', x + barw // 2, yy - 3, fmt(v))
        end
      end
    end
    add('\n<text x="%d" y="%d" text-anchor="middle">%s</text>\n', gx + #shown * barw // 2, top + ploth + 16, esc(k.name))
  end
  add('<text x="%d" y="%d" fill="#555">Median of %d runs after a warm-up (process CPU time).'
      .. ' Lua 5.4 bars: smaller sizes, scaled by work. Data: latest.json.</text>\n',
    left, top + ploth + 40, doc.runs)
  add('</svg>\n')
  return table.concat(o)
end
