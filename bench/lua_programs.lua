-- bench/lua_programs.lua: public Lua programs, as their authors wrote them
-- (bench/programs/, SOURCES.md there), run by the interpreter, by kjit
-- (the whole program compiled: kjit.jit(loadfile(p))) and by LuaJIT.
--   LUA_CPATH="build/?.so;;" lua5.4 bench/lua_programs.lua [ROUNDS] [NAME...]
-- Rounds are interleaved (lua, kjit, luajit, lua, ...); each time is the
-- CPU time of one whole run (bench/programs/run1.lua: load, compile and
-- run); the report gives medians and the ratios interpreter/kjit and
-- LuaJIT/kjit (above 1: kjit faster), their geometric means, and for the
-- programs kjit refused the first thing it refused. A program whose main
-- chunk kjit leaves to the interpreter (run1.lua's "interpreted":
-- docs/guide/functions.md) is counted apart from those it compiled, with a
-- note; the summary gives the means over the programs it compiled and
-- over all it ran (those too).
-- kjit's output must equal the interpreter's byte for byte (a difference is
-- reported and the program counts as failed); LuaJIT's is only compared.
-- Our own cases (bench/tables/: the issue's class-based vector loop and
-- Perlin noise module, written for this benchmark) run the same way, after
-- the public programs, marked "*" in the report.
local here = arg[0]:match("^(.*[/\\])") or "./"
local dir = here .. "programs/"
local rounds = tonumber(arg[1]) or 3

-- name, arguments (sized so that the interpreter takes about 0.3-1 s here)
local programs = {
  { "nbody", "200000" }, { "spectral-norm", "300" }, { "fannkuch", "9" },
  { "mandelbrot", "800" }, { "nsieve", "8" }, { "partialsums", "1000000" },
  { "binary-trees", "13" }, { "recursive-fib", "30" }, { "recursive-ack", "9" },
  { "array3d", "120" }, { "ray", "4 96" }, { "scimark-fft", "300" },
  { "scimark-sor", "600" }, { "scimark-lu", "100" }, { "scimark-sparse", "6000" },
  -- ours (third field: the folder under bench/)
  { "vectors", "200 1000", "tables/" }, { "perlin", "384 4", "tables/" },
}
if arg[2] then
  local want = {}
  for i = 2, #arg do want[arg[i]] = true end
  local kept = {}
  for _, p in ipairs(programs) do if want[p[1]] then kept[#kept + 1] = p end end
  programs = kept
end

local function have(exe)
  local p = io.popen("command -v " .. exe .. " 2>/dev/null")
  local s = p:read("a")
  p:close()
  return s ~= ""
end
local peers = { { "lua", "lua5.4", "lua" }, { "kjit", "lua5.4", "kjit" } }
if have("luajit") then peers[#peers + 1] = { "luajit", "luajit", "lua" } end

-- one run: output, seconds (or nil), refusal message (or nil)
local function run(exe, mode, name, args, sub)
  local errf = os.tmpname()
  local pdir = sub and here .. sub or dir
  local cmd = string.format("%s %srun1.lua %s %s%s.lua %s 2>%s", exe, dir, mode, pdir, name, args, errf)
  local p = io.popen(cmd, "r")
  local out = p:read("a")
  p:close()
  local f = io.open(errf)
  local err = f:read("a")
  f:close()
  os.remove(errf)
  local t = err:match("time ([%d.]+)")
  local refused = err:match("refused ([^\n]*)")
  if not t and not refused then refused = "failed: " .. (err:gsub("\n.*", "")) end
  return out, tonumber(t), refused, err:match("^interpreted\n") ~= nil
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  if n == 0 then return nil end
  return n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
end

print(string.format("%-15s %9s %9s %9s %9s %9s", "program", "lua s", "kjit s", "luajit s",
                    "lua/kjit", "luajit/kjit"))
local ran, notes = {}, {}   -- ran: per program kjit ran, its ratios and how
for _, prog in ipairs(programs) do
  local name, args = prog[1], prog[2]
  local times, outs, refusal, interpreted = {}, {}, nil, false
  for _ = 1, rounds do
    for _, peer in ipairs(peers) do
      local key = peer[1]
      if not (key == "kjit" and refusal) then
        local out, t, refused, interp = run(peer[2], peer[3], name, args, prog[3])
        if key == "kjit" and interp then interpreted = true end
        if key == "kjit" and refused then refusal = refused
        elseif t then
          times[key] = times[key] or {}
          table.insert(times[key], t)
          outs[key] = out
        end
      end
    end
  end
  local ml, mk, mj = median(times.lua or {}), median(times.kjit or {}), median(times.luajit or {})
  if mk and outs.kjit ~= outs.lua then
    refusal = "WRONG OUTPUT: kjit's output differs from the interpreter's"
    mk = nil
  end
  if outs.luajit and outs.luajit ~= outs.lua then
    notes[#notes + 1] = name .. ": LuaJIT's output differs from Lua 5.4's (not kjit's concern)"
  end
  local function s(x) return x and string.format("%.3f", x) or "-" end
  local function r(a, b) return (a and b) and string.format("%.2f", a / b) or "-" end
  print(string.format("%-15s %9s %9s %9s %9s %9s", name .. (prog[3] and " *" or ""), s(ml), s(mk),
                      s(mj), r(ml, mk), r(mj, mk)))
  if refusal then notes[#notes + 1] = name .. ": " .. refusal end
  if interpreted then
    notes[#notes + 1] = name .. ": kjit ran its main chunk interpreted (its loops call only "
                        .. "functions that run interpreted)"
  end
  if mk and ml then
    ran[#ran + 1] = { name = name, lua = ml / mk, luajit = mj and mj / mk, interpreted = interpreted }
  end
end

-- the geometric mean of field key over the programs in ran that pick
-- accepts and have it; nil where none
local function geomean(key, pick)
  local s, n = 0, 0
  for _, r in ipairs(ran) do
    if pick(r) and r[key] then s, n = s + math.log(r[key]), n + 1 end
  end
  return n > 0 and math.exp(s / n) or nil
end
local function means(pick)
  local function f(x) return x and string.format("%.2f", x) or "-" end
  return string.format("lua/kjit %s, luajit/kjit %s", f(geomean("lua", pick)), f(geomean("luajit", pick)))
end
local compiled, interpreted = {}, {}
for _, r in ipairs(ran) do table.insert(r.interpreted and interpreted or compiled, r.name) end
print(string.format("compiled by kjit: %d of %d programs; run interpreted (its chunk policy): %d%s",
                    #compiled, #programs, #interpreted,
                    #interpreted > 0 and " (" .. table.concat(interpreted, ", ") .. ")" or ""))
if #compiled > 0 then
  print(string.format("geometric mean over the %d compiled: %s", #compiled,
                      means(function(r) return not r.interpreted end)))
end
if #interpreted > 0 then
  print(string.format("geometric mean over all %d kjit ran: %s", #ran, means(function() return true end)))
end
for _, n in ipairs(notes) do print("  " .. n) end
