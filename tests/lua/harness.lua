-- harness.lua: the kjit Lua test runner.
--   lua5.4 tests/lua/harness.lua <dir of kjit.so> <test file> [results file]
-- A test file calls test(name, fn); fn fails by raising an error. Helpers
-- (eq, near, raises, same_value) are globals. The last line printed is
-- "<file>: N passed, N failed"; the exit status is 1 if any test failed.
local moddir, file, results = arg[1], arg[2], arg[3]
package.cpath = moddir .. "/?.so;" .. package.cpath
package.path = moddir .. "/../lua/?.lua;" .. "lua/?.lua;tests/lua/?.lua;" .. package.path

local passed, failed, skipped = 0, 0, 0
local current

local function fmt(v)
  if math.type(v) == "float" then return string.format("%.17g (float)", v) end
  return tostring(v)
end

-- Same value, same Lua subtype, NaN equal to NaN, -0.0 distinct from 0.0.
function same_value(a, b)
  if math.type(a) ~= math.type(b) then return false end
  if math.type(a) == "float" then
    if a ~= a then return b ~= b end
    if a == 0 and b == 0 then return 1 / a == 1 / b end
  end
  return a == b
end

function eq(got, want, what)
  if not same_value(got, want) then
    error(string.format("%s: got %s, want %s", what or "value", fmt(got), fmt(want)), 2)
  end
end

function near(got, want, reltol, what)
  reltol = reltol or 1e-6
  local ok = (got == want) or (got ~= got and want ~= want)
    or math.abs(got - want) <= reltol * math.max(1, math.abs(want))
  if not ok then
    error(string.format("%s: got %s, want %s (tolerance %g)", what or "value", fmt(got), fmt(want), reltol), 2)
  end
end

function truthy(v, what) if not v then error((what or "condition") .. " is false", 2) end end

-- raises(pattern, fn, ...): fn(...) must raise an error whose message
-- contains pattern (plain text, not a Lua pattern). Returns the message.
function raises(pattern, fn, ...)
  local ok, msg = pcall(fn, ...)
  if ok then error("expected an error containing '" .. pattern .. "', got none", 2) end
  msg = tostring(msg)
  if not msg:find(pattern, 1, true) then
    error("expected an error containing '" .. pattern .. "', got: " .. msg, 2)
  end
  return msg
end

-- Returns what make() returns after their __gc ran: another object's
-- finalizer keeps them (resurrection, no debug library needed). Objects
-- unreachable together are all finalized in the same collection.
function resurrected(make)
  local saved = {}
  local function setup()
    local objs = table.pack(make())
    setmetatable({}, { __gc = function() saved.v = objs end })
  end
  setup()
  collectgarbage(); collectgarbage()
  truthy(saved.v, "the keeper's finalizer ran")
  return table.unpack(saved.v, 1, saved.v.n)
end

-- write_file(path, text) and read_file(path) (nil when it cannot be read),
-- bytes as they are.
function write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

function skip(reason) error({ skip = reason }, 0) end

function test(name, fn)
  current = name
  local ok, err = xpcall(fn, function(e)
    if type(e) == "table" and e.skip then return e end
    return debug.traceback(tostring(e), 2)
  end)
  if ok then
    passed = passed + 1
  elseif type(err) == "table" and err.skip then
    skipped = skipped + 1
    print("SKIP " .. name .. ": " .. err.skip)
  else
    failed = failed + 1
    print("FAIL " .. name .. ": " .. tostring(err))
  end
end

local chunk, lerr = loadfile(file)
if not chunk then
  print("FAIL loading " .. file .. ": " .. lerr)
  failed = failed + 1
else
  local ok, err = xpcall(chunk, debug.traceback)
  if not ok then
    failed = failed + 1
    print("FAIL (top level of " .. file .. "): " .. tostring(err))
  end
end
collectgarbage()
local name = file:match("([^/]+)%.lua$") or file
print(string.format("%s: %d passed, %d failed, %d skipped", name, passed, failed, skipped))
if results then
  local f = io.open(results, "w")
  if f then f:write(string.format("%d %d %d\n", passed, failed, skipped)); f:close() end
end
os.exit(failed == 0 and 0 or 1)
