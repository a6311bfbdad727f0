-- bench/pool_busy.lua: a compute-bound kjit.prange loop on 1 and on 2
-- threads, first as the machine is, then with another process spinning
-- (`yes > /dev/null`), which on a 2-core machine holds one core.
--   lua5.4 bench/pool_busy.lua [kjit.so dir (default build)] [rounds]
-- Each round times the loop on 1 thread then on 2 (wall clock, kjit.clock);
-- the speed-up is the median of the rounds' ratios, so a machine whose
-- speed drifts between rounds still compares like with like. The load
-- average is printed with each figure: the numbers only mean what they
-- say on a machine with no other work.
local dir = arg[1] or "build"
package.cpath = dir .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local ROUNDS = tonumber(arg[2] or 15)

local function mandel(img, maxit)
  local h, w = img.shape[1], img.shape[2]
  for r in kjit.prange(1, h) do
    local row = img[r]
    for c = 1, w do
      local cx, cy = -2.0 + (c - 1) * 3.0 / w, -1.5 + (r - 1) * 3.0 / h
      local x, y, n = 0.0, 0.0, 0
      while n < maxit and x * x + y * y <= 4.0 do
        x, y = x * x - y * y + cx, 2.0 * x * y + cy
        n = n + 1
      end
      row[c] = n
    end
  end
end

local f = kjit.jit(mandel, { parallel = true })
local img = kjit.zeros({ 512, 512 }, "i32")
local threads = kjit.get_num_threads()
if threads < 2 then
  print("pool_busy: the pool has one thread (KJIT_NUM_THREADS or one core): nothing to measure")
  return
end

local function loadavg()
  local fh = io.open("/proc/loadavg")
  local l = fh and fh:read("l") or "?"
  if fh then fh:close() end
  return (l:match("^(%S+)")) or "?"
end

local function median(t) table.sort(t) return t[(#t + 1) // 2] end

local function measure(what)
  kjit.set_num_threads(2); f(img, 200)   -- warm-up: compile, wake the pool
  local t1, t2, ratio = {}, {}, {}
  for r = 1, ROUNDS do
    kjit.set_num_threads(1)
    local t = kjit.clock(); f(img, 200); t1[r] = kjit.clock() - t
    kjit.set_num_threads(2)
    t = kjit.clock(); f(img, 200); t2[r] = kjit.clock() - t
    ratio[r] = t1[r] / t2[r]
  end
  kjit.set_num_threads(threads)
  print(string.format("%-32s 1 thread %7.1f ms, 2 threads %7.1f ms: speed-up %.2fx (load average %s)",
    what, median(t1) * 1e3, median(t2) * 1e3, median(ratio), loadavg()))
end

measure("as the machine is:")
local p = io.popen("yes > /dev/null & echo $!")
local pid = p:read("l")
p:close()
local ok, err = pcall(measure, "another process spinning:")
os.execute("kill " .. pid)
if not ok then error(err, 0) end
