-- make_corpus.lua: regenerates tests/fuzz/corpus/ from the test suite.
--   lua5.4 tests/fuzz/make_corpus.lua <dir of kjit.so> <out dir> <test files...>
-- Runs each test file with the real kjit and records every compiled call:
-- the function's source (cut out of its file, or the load() string for
-- generated functions) and the types of its arguments. Writes one seed per
-- (function, signature) in fuzz_compile's input format:
--   <signature line>\n<chunk returning the function>
local moddir, outdir = arg[1], arg[2]
package.cpath = moddir .. "/?.so;" .. package.cpath
package.path = "tests/lua/?.lua;" .. package.path
local kjit = require "kjit"

local seen, seeds, nseeds = {}, {}, 0
local MAX_PER_FN = 2
local lines_of = {}
local function file_lines(path)
  if lines_of[path] then return lines_of[path] end
  local t = {}
  local f = io.open(path)
  if f then for l in f:lines() do t[#t + 1] = l end f:close() end
  lines_of[path] = t
  return t
end

local function argtype(v)
  local mt = math.type(v)
  if mt == "integer" then return "i64" elseif mt == "float" then return "f64" end
  if type(v) == "boolean" then return "bool" elseif v == nil then return "nil" end
  if kjit.isarray(v) then return v.dtype .. "[" .. (":,"):rep(v.ndim):sub(1, -2) .. "]" end
  if type(v) == "function" then return "fn" end
  return "jfn"
end

-- Finds "function ... end" in the text of lines a..b that loads as a
-- function with nparams parameters; returns "return function(...) ... end".
local function cut(lines, a, b, nparams)
  local first, last = lines[a], lines[b]
  if not first or not last then return nil end
  local mid = table.concat(lines, "\n", a + 1, b - 1)
  local starts, ends = {}, {}
  for p in first:gmatch("()function") do starts[#starts + 1] = p end
  for p in last:gmatch("end()") do table.insert(ends, 1, p) end
  for _, s in ipairs(starts) do
    for _, e in ipairs(ends) do
      local text
      if a == b then
        if e > s then text = first:sub(s, e - 1) end
      else
        text = first:sub(s) .. "\n" .. (b > a + 1 and mid .. "\n" or "") .. last:sub(1, e - 1)
      end
      if text then
        text = text:gsub("^function%s+[%w_%.:]+%s*%(", "function(")
        local chunk = load("return " .. text, "=probe")
        if chunk then
          local ok, fn = pcall(chunk)
          if ok and type(fn) == "function" and debug.getinfo(fn, "u").nparams == nparams then
            return "return " .. text
          end
        end
      end
    end
  end
  return nil
end

local function record(f, ...)
  local fn = f.lua
  local info = debug.getinfo(fn, "Su")
  local key = info.source .. ":" .. info.linedefined
  local n = select("#", ...)
  local sig = {}
  for i = 1, math.min(n, 8) do sig[i] = argtype((select(i, ...))) end
  local sigline = table.concat(sig, ", ")
  local skey = key .. "|" .. sigline
  seen[key] = seen[key] or 0
  if seen[skey] or seen[key] >= MAX_PER_FN then return end
  seen[skey] = true
  local text
  if info.source:sub(1, 1) == "@" then
    text = cut(file_lines(info.source:sub(2)), info.linedefined, info.lastlinedefined, info.nparams)
  elseif info.source:match("^%s*return%s+function") then
    text = info.source
  end
  if not text then return end
  seen[key] = seen[key] + 1
  nseeds = nseeds + 1
  seeds[nseeds] = sigline .. "\n" .. text .. "\n"
end

-- Every call of a jit object goes through its metatable's __call.
local mt = debug.getmetatable(kjit.jit(function() end))
local real_call = mt.__call
mt.__call = function(f, ...)
  pcall(record, f, ...)
  return real_call(f, ...)
end

-- Minimal harness globals: run every test, ignore outcomes.
function same_value(a, b) return a == b end
function eq() end
function near() end
function truthy() end
function raises(_, fn, ...) local ok, m = pcall(fn, ...) return tostring(m) end
function skip(r) error({ skip = r }, 0) end
function test(_, fn) pcall(fn) end

for i = 3, #arg do
  local chunk = loadfile(arg[i])
  if chunk then pcall(chunk) end
end

os.execute("mkdir -p '" .. outdir .. "'")
for i, s in ipairs(seeds) do
  local f = assert(io.open(string.format("%s/seed_%04d", outdir, i), "w"))
  f:write(s)
  f:close()
end
print(string.format("make_corpus: %d seeds written to %s", nseeds, outdir))
