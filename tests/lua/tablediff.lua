-- tablediff.lua: differential checks of compiled code on Lua tables
-- (issue 29 item 1): the interpreted function is the specification.
--
--   local T = require "tablediff"
--   T.check(fn, make)      make() returns the arguments (fresh tables each
--                          call, aliasing built in); fn runs interpreted on
--                          one set and compiled (kjit.jit) on another. The
--                          results and then every argument are compared key
--                          by key, through one correspondence between the
--                          interpreted run's tables and the compiled run's:
--                          a result that is an argument (or a table reached
--                          from one) must be the same table on the compiled
--                          side, and two names for one table stay one table.
--                          Values keep their subtypes (same_value). When the
--                          interpreted run raises, the compiled run must
--                          raise the same message and leave the arguments in
--                          the same state (the writes done before the error).
--   T.check_error(phrase, fn, make)   the same; the interpreted run must
--                          raise a message containing phrase.
local kjit = require "kjit"

local T = {}

local function fmt(v)
  if math.type(v) == "float" then return string.format("%.17g", v) end
  return tostring(v)
end

local function is_array(v) return type(v) == "userdata" and kjit.isarray(v) end

-- Compares interpreted value a with compiled value b; map: interpreted
-- table -> compiled table (and back in rmap). Returns nil or a message.
local function compare(a, b, map, rmap, path)
  if type(a) ~= "table" or type(b) ~= "table" then
    if type(a) == "table" or type(b) == "table" then
      return path .. ": interpreted " .. fmt(a) .. ", compiled " .. fmt(b)
    end
    if is_array(a) and is_array(b) and a ~= b then
      -- two kjit arrays (each run makes its own): one correspondence, as
      -- for tables, and the same dtype, shape and elements
      if map[a] ~= nil or rmap[b] ~= nil then
        if map[a] ~= b then return path .. ": the array is not the one that corresponds (aliasing differs)" end
        return nil
      end
      map[a], rmap[b] = b, a
      if a.dtype ~= b.dtype or a.ndim ~= b.ndim or a.size ~= b.size then
        return path .. ": interpreted " .. tostring(a) .. ", compiled " .. tostring(b)
      end
      for k = 1, a.ndim do
        if a.shape[k] ~= b.shape[k] then return path .. ": shapes differ" end
      end
      local fa, fb = a:reshape(a.size), b:reshape(b.size)
      for i = 1, a.size do
        if not same_value(fa[i], fb[i]) then
          return path .. "[" .. i .. "]: interpreted " .. fmt(fa[i]) .. ", compiled " .. fmt(fb[i])
        end
      end
      return nil
    end
    if type(a) == "function" or type(a) == "userdata" then
      if a ~= b then return path .. ": different " .. type(a) .. "s" end
      return nil
    end
    if not same_value(a, b) then return path .. ": interpreted " .. fmt(a) .. ", compiled " .. fmt(b) end
    return nil
  end
  if map[a] ~= nil or rmap[b] ~= nil then
    if map[a] ~= b then return path .. ": the table is not the one that corresponds (aliasing differs)" end
    return nil
  end
  map[a], rmap[b] = b, a
  local ma, mb = getmetatable(a), getmetatable(b)
  if (ma == nil) ~= (mb == nil) then return path .. ": metatables differ" end
  if ma then
    local e = compare(ma, mb, map, rmap, path .. "<mt>")
    if e then return e end
  end
  local na, nb = 0, 0
  for k, v in next, a do
    na = na + 1
    if type(k) == "table" then return path .. ": table keys are not compared by this checker" end
    local e = compare(v, rawget(b, k), map, rmap, path .. "[" .. fmt(k) .. "]")
    if e then return e end
  end
  for _ in next, b do nb = nb + 1 end
  if na ~= nb then return path .. ": " .. na .. " keys interpreted, " .. nb .. " compiled" end
  return nil
end
T.compare = compare

local function callsite()
  local info = debug.getinfo(3, "Sl")
  return info and (info.short_src .. ":" .. info.currentline) or "?"
end

local function core(phrase, fn, make, opts)
  local where = callsite()
  local function fail(msg) error(where .. ": " .. msg, 0) end
  local ia = table.pack(make())
  local ir = table.pack(pcall(fn, table.unpack(ia, 1, ia.n)))
  local ok, j = pcall(kjit.jit, fn, opts)
  if not ok then fail("kjit.jit raised: " .. tostring(j)) end
  local ca = table.pack(make())
  local cr = table.pack(pcall(j, table.unpack(ca, 1, ca.n)))
  if phrase then
    if ir[1] then fail("the interpreted run did not raise (expected '" .. phrase .. "')") end
    if not tostring(ir[2]):find(phrase, 1, true) then
      fail("interpreted error '" .. tostring(ir[2]) .. "' lacks '" .. phrase .. "'")
    end
  end
  if not ir[1] then
    if cr[1] then fail("interpreted raised '" .. tostring(ir[2]) .. "', compiled returned") end
    if tostring(ir[2]) ~= tostring(cr[2]) then
      fail("errors differ:\n    interpreted: " .. tostring(ir[2]) .. "\n    compiled:    " .. tostring(cr[2]))
    end
  elseif not cr[1] then
    fail("compiled run raised: " .. tostring(cr[2]))
  elseif ir.n ~= cr.n then
    fail(string.format("%d results interpreted, %d compiled", ir.n - 1, cr.n - 1))
  end
  local map, rmap = {}, {}
  for k = 1, ia.n do   -- arguments correspond first: a returned argument is that argument
    if type(ia[k]) == "table" and type(ca[k]) == "table" and map[ia[k]] == nil then
      map[ia[k]], rmap[ca[k]] = ca[k], ia[k]
    end
  end
  if ir[1] then
    for k = 2, ir.n do
      local e = compare(ir[k], cr[k], map, rmap, "result #" .. (k - 1))
      if e then fail(e) end
    end
  end
  -- the arguments' state afterwards, key by key (map entries of arguments
  -- were seeded: compare their contents now)
  local m2, r2 = {}, {}
  for k = 1, ia.n do
    local e = compare(ia[k], ca[k], m2, r2, "argument #" .. k .. (ir[1] and "" or " (after the error)"))
    if e then fail(e) end
  end
  if ir[1] then return table.unpack(ir, 2, ir.n) end
  return nil, ir[2]
end

function T.check(fn, make, opts) return core(nil, fn, make, opts) end
function T.check_error(phrase, fn, make, opts) return core(phrase, fn, make, opts) end
-- T.check_args(fn, ...), T.check_error_args(phrase, fn, ...): the same
-- with the arguments given directly (the same values to both runs: pass
-- tables through make when each run needs its own)
function T.check_args(fn, ...)
  local args = table.pack(...)
  return core(nil, fn, function() return table.unpack(args, 1, args.n) end)
end
function T.check_error_args(phrase, fn, ...)
  local args = table.pack(...)
  return core(phrase, fn, function() return table.unpack(args, 1, args.n) end)
end

return T
