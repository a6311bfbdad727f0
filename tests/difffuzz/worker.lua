-- worker.lua: runs a range of generated programs in one process
-- (tests/difffuzz/; started by run.lua, one process per batch).
--   lua5.4 worker.lua BUILD FIRST LAST WITH WITHOUT OPTS LEVELS OUTDIR
-- For each program id in FIRST..LAST: generate it, run each argument tuple
-- interpreted, then compiled at LEVELS of the opt levels OPTS (a comma
-- list; the levels used rotate with the id), classify (check.lua) and save
-- a reproducer for each failure in OUTDIR ("-": none). One line per event
-- on stdout, flushed, so that run.lua knows which case was running when
-- this process crashed or was killed:
--   R id opt case          about to compile and run it
--   K id opt case class    its class
--   U message              an unsupported-construct message (for the tally)
--   F id class opt case signature file
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
package.path = here .. "?.lua;" .. package.path
local build, first, last, with, without, opts, levels, outdir = table.unpack(arg, 1, 8)
package.cpath = build .. "/?.so;" .. package.cpath
local kjit = require "kjit"
local G = require "gen"
local C = require "check"
local P = require "repro"

local F = G.flags(with ~= "-" and with or nil, without ~= "-" and without or nil)
local OPTS = {}
for o in opts:gmatch("%d") do OPTS[#OPTS + 1] = tonumber(o) end
levels = math.min(tonumber(levels), #OPTS)

local function out(...)
  io.stdout:write(table.concat({ ... }, " "), "\n")
  io.stdout:flush()
end

local saved = {}
for id = tonumber(first), tonumber(last) do
  local prog = G.generate(id, F)
  local chunk, lerr = load(prog.src, prog.chunk)
  if not chunk then
    out("K", id, "-", "-", "genbug")
    io.stderr:write("difffuzz: program " .. id .. " does not load: " .. lerr .. "\n" .. prog.src)
  else
    local f = chunk()
    local ios = {}
    for c, spec in ipairs(prog.cases) do ios[c] = C.run(kjit, f, spec) end
    for l = 1, levels do
      local opt = OPTS[(id + l - 1) % #OPTS + 1]
      local j = kjit.jit(f, { opt = opt })
      for c, spec in ipairs(prog.cases) do
        out("R", id, opt, c)
        local class, co = C.case(kjit, j, spec, ios[c])
        out("K", id, opt, c, class)
        if class == "unsupported" then
          out("U", (co.err:gsub("^[^:]*:%d+: ", ""):gsub("'[%w_]+'", "'?'"):gsub("%d+", "N")))
        elseif class ~= "same" and class ~= "skip" then
          local file = "-"
          local sig = C.signature(class, ios[c], co)
          saved[sig] = (saved[sig] or 0) + 1
          -- one reproducer per program, at most 10 per signature and process
          if outdir ~= "-" and not saved[id] and saved[sig] <= 10 then
            saved[id] = true
            file = string.format("%s/%s-%d-o%d-c%d.lua", outdir, class, id, opt, c)
            P.write(file, P.text({ "difffuzz reproducer: program " .. id .. ", case " .. c .. ", opt " .. opt,
                                   "class: " .. class .. " (" .. sig .. ")",
                                   "families: " .. (with or "-") .. " without " .. (without or "-") },
                                 prog.src, prog.chunk, spec, opt))
          end
          out("F", id, class, opt, c, file, "|", sig)
        end
      end
    end
  end
  if id % 20 == 0 then collectgarbage() end
end
