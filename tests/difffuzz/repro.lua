-- repro.lua: the text of a standalone reproducer (tests/difffuzz/).
--
-- A reproducer is a Lua script holding one program, one argument tuple and
-- one opt level, with check.lua's code copied in:
--   lua5.4 <file> [build dir]
-- prints the interpreted and compiled outcomes and "CLASS <class>", and
-- exits 1 while they differ (a crash or hang shows as such).
local P = {}

local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end
local CHECK_TEXT = read(here .. "check.lua")

-- Lua text of a number that reads back as the same value and subtype.
local function num(v)
  if type(v) == "boolean" then return tostring(v) end
  if math.type(v) == "integer" then
    if v == math.mininteger then return "math.mininteger" end
    return string.format("%d", v)
  end
  if v ~= v then return "(0/0)" end
  if v == math.huge then return "math.huge" end
  if v == -math.huge then return "(-math.huge)" end
  return string.format("%a", v)
end
P.num = num

local function array_text(v)
  local vals, shape = {}, {}
  for k, x in ipairs(v.vals) do vals[k] = num(x) end
  for k, x in ipairs(v.shape) do shape[k] = tostring(x) end
  return string.format("{ array = true, dtype = %q, shape = { %s }, vals = { %s } }",
    v.dtype, table.concat(shape, ", "), table.concat(vals, ", "))
end

-- The data of a Lua table argument (check.lua's make_args): numbers,
-- strings, booleans, nested tables and array specs, keys in sorted order.
local function data_text(d)
  if type(d) == "string" then return string.format("%q", d) end
  if type(d) ~= "table" then return num(d) end
  if d.array then return array_text(d) end
  local keys = {}
  for k in next, d do keys[#keys + 1] = k end
  table.sort(keys, function(x, y)
    if type(x) ~= type(y) then return type(x) == "number" end
    return x < y
  end)
  local e = {}
  for i, k in ipairs(keys) do
    e[i] = "[" .. (type(k) == "string" and string.format("%q", k) or num(k)) .. "] = " .. data_text(d[k])
  end
  return "{ " .. table.concat(e, ", ") .. " }"
end

function P.spec_text(spec)
  local t = {}
  for i = 1, spec.n do
    local v = spec[i]
    if type(v) == "table" and v.luatable then
      local al = {}
      for k, a in ipairs(v.alias or {}) do al[k] = string.format("{ %q, %q }", a[1], a[2]) end
      t[i] = "{ luatable = " .. data_text(v.luatable) .. ", alias = { " .. table.concat(al, ", ") .. " } }"
    elseif type(v) == "table" and v.record then
      -- an array of records: the layout and one table of fields per record
      local fields, recs = {}, {}
      for k, f in ipairs(v.record) do
        fields[k] = string.format("{ %q, %q%s }", f[1], f[2], f[3] and (", " .. f[3]) or "")
      end
      for k, r in ipairs(v.vals) do
        local e = {}
        for _, f in ipairs(v.record) do
          local x = r[f[1]]
          if f[3] then
            local xs = {}
            for m = 1, f[3] do xs[m] = num(x[m]) end
            x = "{ " .. table.concat(xs, ", ") .. " }"
          else x = num(x) end
          e[#e + 1] = f[1] .. " = " .. x
        end
        recs[k] = "{ " .. table.concat(e, ", ") .. " }"
      end
      t[i] = string.format("{ record = { %s }, shape = { %d }, vals = { %s } }",
        table.concat(fields, ", "), v.shape[1], table.concat(recs, ", "))
    elseif type(v) == "table" then
      t[i] = array_text(v)
    else
      t[i] = type(v) == "number" and num(v) or tostring(v)
    end
  end
  return "{ n = " .. spec.n .. (spec.n > 0 and ", " or "") .. table.concat(t, ", ") .. " }"
end

-- header: comment lines (without "--") describing where it came from.
function P.text(header, src, chunk, spec, opt)
  local lvl = ""
  while src:find("]" .. lvl .. "]", 1, true) do lvl = lvl .. "=" end
  local lines = {}
  for _, h in ipairs(header) do lines[#lines + 1] = "-- " .. h end
  lines[#lines + 1] = "-- Run: lua5.4 <this file> [kjit build dir, default build]; exits 1 while"
  lines[#lines + 1] = "-- the interpreted and compiled runs differ."
  lines[#lines + 1] = 'package.cpath = ((arg and arg[1]) or "build") .. "/?.so;" .. package.cpath'
  lines[#lines + 1] = 'local kjit = require "kjit"'
  lines[#lines + 1] = "local C = (function()\n" .. CHECK_TEXT .. "end)()"
  lines[#lines + 1] = "local SRC = [" .. lvl .. "[\n" .. src .. "]" .. lvl .. "]"
  lines[#lines + 1] = "local ARGS = " .. P.spec_text(spec)
  lines[#lines + 1] = string.format("os.exit(C.repro(kjit, SRC, %q, ARGS, %d))", chunk, opt)
  return table.concat(lines, "\n") .. "\n"
end

function P.write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

return P
