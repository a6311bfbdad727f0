-- simboth.lua: runs a kernel launch in both kjit.cuda simulators (the
-- interpreted one, the reference, and the compiled one) on fresh copies of
-- its arguments, for the cuda tests (test_cuda_numba, _cg, _const).
local kjit = require "kjit"
local cuda = kjit.cuda

local M = {}

local function copy(b) return type(b) == "userdata" and b:copy() or b end

-- cfg(k)(args) in each simulator, interpreted first: the copies of args
-- of each run, or the errors (ok false) of each run.
local function run_each(k, cfg, args)
  local runs = {}
  for _, mode in ipairs{ "interpret", true } do
    local prev = cuda.simulate(mode)
    local a = {}
    for i = 1, #args do a[i] = copy(args[i]) end
    local ok, err = pcall(function() cfg(k)(table.unpack(a, 1, #args)) end)
    cuda.simulate(prev)
    runs[#runs + 1] = { ok = ok, err = err, args = a }
  end
  return runs
end

-- Runs cfg(k)(args) in both simulators; checks that every array argument
-- agrees exactly (name in the message); returns the compiled simulator's
-- copies, then the interpreted one's.
function M.both(name, k, cfg, args)
  local runs = run_each(k, cfg, args)
  for _, r in ipairs(runs) do if not r.ok then error(r.err, 0) end end
  local w, g = runs[1].args, runs[2].args
  for i = 1, #args do
    if type(args[i]) == "userdata" then
      local gi, wi = g[i]:reshape(g[i].size), w[i]:reshape(w[i].size)
      for j = 1, wi.size do eq(gi[j], wi[j], name .. ": argument " .. i .. "[" .. j .. "]") end
    end
  end
  return g, w
end

-- The error of cfg(k)(args) in each simulator (interpreted first); both
-- must fail.
function M.errors(k, cfg, args)
  local runs = run_each(k, cfg, args)
  for _, r in ipairs(runs) do eq(r.ok, false, "the launch fails") end
  return runs[1].err, runs[2].err
end

return M
