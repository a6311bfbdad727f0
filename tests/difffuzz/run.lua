-- run.lua: the differential fuzzer's driver (tests/difffuzz/, README there).
--
--   lua5.4 tests/difffuzz/run.lua [options]
--     --build DIR       kjit build directory (default build)
--     --seed S          first program id (default 1)
--     --count N         number of programs (default 1000)
--     --jobs J          worker processes at a time (default 2)
--     --batch B         programs per worker process (default 100)
--     --opts LIST       opt levels, e.g. 0123 (default 0123)
--     --levels K        opt levels tried per program, rotating (default 1)
--     --with LIST       only these construct families (comma list; gen.lua)
--     --without LIST    leave these families out
--     --out DIR         save reproducers there (default: none)
--     --minimize K      shrink up to K failures (one per signature, default 0)
--     --results FILE    write "passed failed skipped" there (for run_all.sh)
--     --cpu S           CPU seconds a worker batch may use (default 30 + 3*B;
--                       a typical program takes 0.1 to 0.2 s, 10 times that
--                       under ASan)
--     --timeout S       wall-clock seconds a worker batch may take (default
--                       3600: a worker stuck without using the CPU)
--     --lua EXE         Lua interpreter for workers and reproducers (lua5.4)
--     --shrink FILE     only minimize that reproducer (writes FILE-min.lua)
-- Programs are run in worker processes (worker.lua) under a CPU-time limit
-- (ulimit -t: a busy machine does not make it fire) and `timeout`: a
-- worker that dies is a crash at the case it was running, one that is
-- killed a hang (a compile that does not end, or compiled code that stops
-- polling); the rest of its batch is run by a new worker. Exit status 1 if
-- anything failed.
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
package.path = here .. "?.lua;" .. package.path
local G = require "gen"
local P = require "repro"

local O = { build = "build", seed = 1, count = 1000, jobs = 2, batch = 100, opts = "0123", levels = 1,
            with = "-", without = "-", out = "-", minimize = 0, lua = "lua5.4" }
do
  local i = 1
  while i <= #arg do
    local k = arg[i]:match("^%-%-(.+)$")
    if not k or O[k] == nil and k ~= "results" and k ~= "timeout" and k ~= "cpu" and k ~= "shrink" then
      io.stderr:write("run.lua: unknown option " .. arg[i] .. "\n"); os.exit(2)
    end
    O[k] = arg[i + 1]
    i = i + 2
  end
end
for _, k in ipairs({ "seed", "count", "jobs", "batch", "levels", "minimize" }) do O[k] = tonumber(O[k]) end
O.cpu = tonumber(O.cpu) or (30 + 3 * O.batch)
O.timeout = tonumber(O.timeout) or 3600
local F = G.flags(O.with ~= "-" and O.with or nil, O.without ~= "-" and O.without or nil)
local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
if O.out ~= "-" then os.execute("mkdir -p " .. sh_quote(O.out)) end
local tmp = os.tmpname()   -- a directory for the workers' output
os.remove(tmp)
os.execute("mkdir -p " .. sh_quote(tmp))

local counts, unsupported, failures = {}, {}, {}
local function count(class) counts[class] = (counts[class] or 0) + 1 end

-- A crash or hang: write the reproducer from the regenerated program.
local function dead(class, id, opt, c, why)
  local prog = G.generate(id, F)
  local spec = prog.cases[c]
  local file = "-"
  if O.out ~= "-" then
    file = string.format("%s/%s-%d-o%d-c%d.lua", O.out, class, id, opt, c)
    P.write(file, P.text({ "difffuzz reproducer: program " .. id .. ", case " .. c .. ", opt " .. opt,
                           "class: " .. class .. " (" .. why .. ")",
                           "families: " .. O.with .. " without " .. O.without },
                         prog.src, prog.chunk, spec, opt))
  end
  count(class)
  failures[#failures + 1] = { id = id, class = class, opt = opt, case = c, file = file, sig = why }
end

-- Parses one worker's output; returns the id it stopped at (nil when done).
local function parse(path, first, last, status)
  local f = io.open(path, "r")
  local running, lastdone = nil, first - 1
  if f then
    for line in f:lines() do
      local w = {}
      for x in line:gmatch("%S+") do w[#w + 1] = x end
      if w[1] == "R" then
        running = { tonumber(w[2]), tonumber(w[3]), tonumber(w[4]) }
      elseif w[1] == "K" then
        running = nil
        lastdone = tonumber(w[2])
        count(w[5])
      elseif w[1] == "U" then
        local m = line:sub(3)
        unsupported[m] = (unsupported[m] or 0) + 1
      elseif w[1] == "F" then
        failures[#failures + 1] = { id = tonumber(w[2]), class = w[3], opt = tonumber(w[4]),
                                    case = tonumber(w[5]), file = w[6], sig = line:match("| (.*)$") or "" }
      end
    end
    f:close()
  end
  if status == 0 then return nil end
  -- status 1: a Lua error in the worker itself (its stderr says where)
  if running and status ~= 1 then
    -- killed by timeout (124), SIGKILL (137: the hard limits) or SIGXCPU (152)
    local hang = status == 124 or status == 137 or status == 152
    dead(hang and "hang" or "crash", running[1], running[2], running[3],
         hang and "worker killed at its time limit, status " .. status or "worker exit status " .. status)
    return running[1] + 1 <= last and running[1] + 1 or nil
  end
  -- a Lua error in the worker, or a death between cases (in the generator
  -- or the interpreter): not kjit's, but counted as a failure
  io.stderr:write(string.format("run.lua: worker for %d..%d stopped with status %d after program %d%s\n",
    first, last, status, lastdone, running and (" in program " .. running[1]) or ""))
  count("workerdied")
  local resume = running and running[1] + 1 or lastdone + 2
  return resume <= last and resume or nil
end

local t0 = os.time()
local queue = {}
for first = O.seed, O.seed + (O.shrink and 0 or O.count) - 1, O.batch do
  queue[#queue + 1] = { first, math.min(first + O.batch - 1, O.seed + O.count - 1) }
end
local nextjob = 1
while nextjob <= #queue do
  -- start up to J workers, then wait for each (io.popen returns at once;
  -- reading its exit status waits)
  local running = {}
  for j = 1, O.jobs do
    local b = queue[nextjob]
    if not b then break end
    nextjob = nextjob + 1
    local outf = string.format("%s/w%d.out", tmp, j)
    local cmd = string.format("(ulimit -t %d; timeout -k 5 %d %s %sworker.lua %s %d %d %s %s %s %d %s > %s 2>> %s/stderr); echo $?",
      O.cpu, O.timeout, O.lua, here, sh_quote(O.build), b[1], b[2], O.with, O.without, O.opts, O.levels,
      sh_quote(O.out), outf, tmp)
    running[#running + 1] = { b = b, p = io.popen(cmd, "r"), outf = outf }
  end
  for _, r in ipairs(running) do
    local status = tonumber(r.p:read("a"):match("%d+")) or -1
    r.p:close()
    local again = parse(r.outf, r.b[1], r.b[2], status)
    if again then table.insert(queue, nextjob, { again, r.b[2] }) end
  end
end
local secs = os.difftime(os.time(), t0)

-- Minimizing: drop lines and blocks of a failing program while its
-- reproducer still reports the same class.
local function classify_file(file)
  local p = io.popen(string.format("(ulimit -t 60; timeout -k 2 600 %s %s %s 2>&1); echo \"EXIT $?\"",
    O.lua, file, sh_quote(O.build)), "r")
  local text = p:read("a")
  p:close()
  local st = tonumber(text:match("EXIT (%d+)%s*$"))
  local class = text:match("CLASS (%w+)")
  if st == 124 or st == 137 or st == 152 then return "hang", "hang" end
  if not class and st ~= 0 and st ~= 1 then return "crash", "crash" end
  return class or "none", text:match("SIGNATURE ([^\n]*)")
end

local function block_end(lines, i)
  local ind = lines[i]:match("^(%s*)")
  local opener = lines[i]:match("^%s*(.-)%s*$")
  local opens = opener:match(" then$") or opener:match(" do$") or opener == "do" or opener == "repeat" or
    opener:match("^local function ") or opener:match("^if .* then$")
  if not opens or opener:match(" end$") then return nil end
  for j = i + 1, #lines do
    local l = lines[j]
    if l:match("^" .. ind .. "%S") then
      if l:match("^" .. ind .. "end$") or l:match("^" .. ind .. "until ") then return j end
      if not l:match("^" .. ind .. "else") then return nil end
    end
  end
  return nil
end

local function minimize(fl)
  local text = io.open(fl.file):read("a")
  local pre, src, post = text:match("^(.-local SRC = %[=*%[\n)(.-)(%]=*%]\nlocal ARGS.*)$")
  if not src then return end
  local lines = {}
  for l in src:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  local cand = tmp .. "/cand.lua"
  local budget = 200
  -- a candidate may not read or write globals other than the standard
  -- library's the generator uses (dropping `local x = ...` would turn x
  -- into a global)
  local srcfile = tmp .. "/cand-src.lua"
  local GLOBALS = {}
  for name in ("math error assert string table type tostring tonumber select pcall pairs ipairs " ..
               "next rawget rawset rawequal rawlen setmetatable getmetatable print"):gmatch("%S+") do
    GLOBALS[name] = true
  end
  local function only_known_globals(newlines)
    P.write(srcfile, table.concat(newlines, "\n") .. "\n")
    local p = io.popen("luac5.4 -p -l " .. sh_quote(srcfile) .. " 2>&1", "r")
    local listing = p:read("a")
    p:close()
    if listing:find("luac5.4:", 1, true) then return false end   -- does not compile
    for name in listing:gmatch('_ENV "([%w_]+)"') do
      if not GLOBALS[name] then return false end
    end
    return true
  end
  local function try(newlines)
    if not only_known_globals(newlines) then return false end
    budget = budget - 1
    P.write(cand, pre .. table.concat(newlines, "\n") .. "\n" .. post)
    local class, sig = classify_file(cand)
    return class == fl.class and (sig == fl.sig or class == "crash" or class == "hang")
  end
  local changed = true
  while changed and budget > 0 do
    changed = false
    local i = 1
    while i <= #lines and budget > 0 do
      local j = block_end(lines, i) or i
      local without = {}
      for k = 1, #lines do if k < i or k > j then without[#without + 1] = lines[k] end end
      if lines[i]:match("^return function") or lines[i]:match("^end$") or lines[i]:match("local cnt = 0$") then
        i = i + 1
      elseif try(without) then
        lines = without
        changed = true
      else
        -- keep a block's body, drop its opening and closing lines
        local ok = false
        if j > i and not lines[i]:match("^local function") then
          local body = {}
          for k = 1, #lines do
            if k ~= i and k ~= j then
              local l = lines[k]
              if k > i and k < j then l = l:sub(3) end
              body[#body + 1] = l
            end
          end
          if try(body) then lines = body; changed = true; ok = true end
        end
        if not ok then i = i + 1 end
      end
    end
  end
  local minfile = fl.file:gsub("%.lua$", "-min.lua")
  P.write(minfile, pre .. table.concat(lines, "\n") .. "\n" .. post)
  fl.min = minfile
end

-- --shrink FILE: only minimize that reproducer (its header names the class)
if O.shrink then
  local head = io.open(O.shrink):read("a")
  local class, sig = head:match("%-%- class: (%w+) %((.-)%)\n")
  local fl = { file = O.shrink, class = class, sig = sig }
  minimize(fl)
  print("minimized: " .. tostring(fl.min))
  os.execute("rm -rf " .. sh_quote(tmp))
  os.exit(0)
end

local bysig = {}
for _, fl in ipairs(failures) do
  local key = fl.class .. ": " .. fl.sig
  bysig[key] = bysig[key] or {}
  table.insert(bysig[key], fl)
end
local keys = {}
for k in pairs(bysig) do keys[#keys + 1] = k end
table.sort(keys, function(a, b) return #bysig[a] > #bysig[b] end)
local left = O.minimize
for _, k in ipairs(keys) do
  for _, fl in ipairs(bysig[k]) do
    if left > 0 and fl.file ~= "-" then left = left - 1; minimize(fl); break end
  end
end

-- Report
local programs = O.count
local failed = 0
local FAIL = { wrong = true, message = true, internal = true, compile = true, hang = true, crash = true }
local order = { "same", "unsupported", "skip", "wrong", "compile", "message", "internal", "hang", "crash",
                "genbug", "workerdied" }
local parts = {}
for _, c in ipairs(order) do
  if counts[c] then parts[#parts + 1] = c .. " " .. counts[c] end
  if FAIL[c] or c == "genbug" or c == "workerdied" then failed = failed + (counts[c] or 0) end
end
print(string.format("difffuzz: programs %d..%d (%d), %d s, %.1f programs/s; cases: %s",
  O.seed, O.seed + O.count - 1, programs, secs, programs / math.max(secs, 1), table.concat(parts, ", ")))
print("families: " .. (O.with ~= "-" and O.with or "all") .. (O.without ~= "-" and (" without " .. O.without) or ""))
local ulist = {}
for m, n in pairs(unsupported) do ulist[#ulist + 1] = { m, n } end
table.sort(ulist, function(a, b) return a[2] > b[2] end)
for i = 1, math.min(#ulist, 8) do print(string.format("  unsupported %5d  %s", ulist[i][2], ulist[i][1])) end
for _, k in ipairs(keys) do
  local l = bysig[k]
  local ids, seen = {}, {}
  for _, fl in ipairs(l) do
    if not seen[fl.id] then seen[fl.id] = true; ids[#ids + 1] = fl.id end
  end
  local n = #ids
  for i = 7, n do ids[i] = nil end
  print(string.format("FAIL %4d x %s  (%d programs: %s%s)", #l, k, n, table.concat(ids, " "), n > 6 and " ..." or ""))
  for _, fl in ipairs(l) do
    if fl.file ~= "-" then
      print("       " .. fl.file .. (fl.min and ("  minimized: " .. fl.min) or ""))
      break
    end
  end
end
local err = io.open(tmp .. "/stderr")
if err then
  local s = err:read("a")
  err:close()
  if #s > 0 then io.stderr:write(s:sub(1, 4000)) end
end
os.execute("rm -rf " .. sh_quote(tmp))
if O.results then
  local f = io.open(O.results, "w")
  if f then f:write(string.format("%d %d 0\n", failed == 0 and 1 or 0, failed == 0 and 0 or 1)); f:close() end
end
os.exit(failed == 0 and 0 or 1)
