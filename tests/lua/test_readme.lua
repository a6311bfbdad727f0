-- test_readme.lua: every Lua example of README.md and of every page under
-- docs/ (*.md, any depth) runs as written.
--
-- The ```lua blocks under one heading are one session (a later block may use
-- the locals of an earlier one under the same heading, as the text reads);
-- each session runs in a fresh copy of the globals, from a file that keeps
-- the README's line numbers, so an error names README.md's own line. Kernels
-- run in the simulator when there is no GPU. Two kinds of comments are
-- checked, so the text cannot drift from what kjit does:
--   print(...)   --> 6  2  3      the printed values, words separated by any
--                                 space; a ": ..." or " (...)" after them is
--                                 commentary
--   statement    -- error: text   the statement raises an error containing text
local kjit = require "kjit"
local cuda = kjit.cuda

-- The pages: README.md, then docs/**/*.md in name order.
local pages = { "README.md" }
do
  local p = io.popen("find docs -name '*.md' 2>/dev/null | LC_ALL=C sort")
  for f in p:lines() do pages[#pages + 1] = f end
  p:close()
end

-- Sessions: { file, lines, heading, first line, { [line] = code } }.
local sessions = {}
local nblocks = 0
for _, file in ipairs(pages) do
  local lines = {}
  for l in io.lines(file) do lines[#lines + 1] = l end
  local cur, inlua, heading = nil, false, "top"
  for i, l in ipairs(lines) do
    if inlua then
      if l:match("^```") then inlua = false
      else cur.code[i] = l end
    elseif l:match("^```lua") then
      inlua = true
      nblocks = nblocks + 1
      if not cur or cur.heading ~= heading then
        cur = { file = file, lines = lines, heading = heading, first = i + 1, code = {} }
        sessions[#sessions + 1] = cur
      end
    elseif l:match("^#+ ") then
      heading = l:gsub("^#+ ", "")
    end
  end
end

-- The value a "-->" comment promises, without its commentary.
local function promised(c)
  c = c:gsub("^%s+", ""):gsub(":%s.*$", ""):gsub("%s+%(.*$", "")
  return (c:gsub("%s+$", ""):gsub("%s+", " "))
end

local function words(...)
  local t = table.pack(...)
  for i = 1, t.n do t[i] = tostring(t[i]) end
  return (table.concat(t, " "):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""))
end

-- One line of an example, rewritten on the same line (numbers stay right).
local function rewrite(file, i, l)
  local code, err = l:match("^(.-)%s*%-%- error: (.+)$")
  if code then
    local body = "return " .. code
    if not load(body) then body = code end
    return string.format("__raises(%q, %d, %q, function() %s end)", file, i, err, body)
  end
  local code2, want = l:match("^(%s*print%(.*%))%s*%-%->(.*)$")
  if code2 then
    return string.format("__expect(%q, %d, %q); %s", file, i, promised(want), code2)
  end
  return l
end

local function run(s)
  local env = {}
  for k, v in pairs(_G) do env[k] = v end
  local expect = {}   -- pending "-->" promises, in order
  env.__expect = function(file, line, want) expect[#expect + 1] = { file = file, line = line, want = want } end
  env.print = function(...)
    local e = table.remove(expect, 1)
    if e then
      local got = words(...)
      if got ~= e.want then
        error(string.format("%s:%d: prints '%s', the page says '%s'", e.file, e.line, got, e.want), 0)
      end
    end
  end
  env.__raises = function(file, line, want, fn)
    local ok, msg = pcall(fn)
    if ok then error(string.format("%s:%d: no error, the page says '%s'", file, line, want), 0) end
    if not tostring(msg):find(want, 1, true) then
      error(string.format("%s:%d: error '%s', the page says '%s'", file, line, tostring(msg), want), 0)
    end
  end
  local out = {}
  for i = 1, #s.lines do out[i] = s.code[i] and rewrite(s.file, i, s.code[i]) or "" end
  local base = os.tmpname()   -- creates an empty file: removed below
  os.remove(base)
  local path = base .. "-" .. s.file:gsub("/", "-")
  local f = assert(io.open(path, "w"))
  f:write(table.concat(out, "\n"), "\n")
  f:close()
  local chunk, err = loadfile(path, "t", env)
  if not chunk then os.remove(path); error(err) end
  local ok, rerr = pcall(chunk)
  os.remove(path)
  if not ok then error(rerr, 0) end
  if #expect > 0 then
    error(string.format("%s:%d: printed nothing, the page says '%s'", expect[1].file, expect[1].line, expect[1].want))
  end
end

if not cuda.is_available() then cuda.simulate(true) end

print(string.format("%d pages: %d Lua examples in %d sessions", #pages, nblocks, #sessions))

test("the README's Lua examples are found", function()
  truthy(nblocks >= 15, "at least 15 ```lua blocks (found " .. nblocks .. ")")
  truthy(#sessions >= 10, "at least 10 sessions (found " .. #sessions .. ")")
end)

-- Pages about kjit.mpi (docs/guide/mpi.md) run as rank 0 of 1; a build
-- without MPI has no kjit.mpi, and their sessions are skipped, saying so.
local has_mpi = package.searchpath("kjit.mpi", package.cpath) ~= nil
local function needs_mpi(s)
  for _, l in pairs(s.code) do
    if l:find('require "kjit.mpi', 1, true) then return true end
  end
  return false
end

for _, s in ipairs(sessions) do
  test(string.format("%s:%d (%s)", s.file, s.first, s.heading), function()
    if not has_mpi and needs_mpi(s) then skip("kjit.mpi was not built (no MPI found)") end
    run(s)
  end)
end

-- The checks themselves: a wrong promise and a missing error are caught.
test("a wrong --> or a missing error fails", function()
  local fake = { file = "fake.md", heading = "fake", first = 1, code = {} }
  fake.lines = { "print(1 + 1)   --> 3" }
  fake.code[1] = fake.lines[1]
  raises("the page says '3'", run, fake)
  fake.lines = { "local x = 1   -- error: boom" }
  fake.code[1] = fake.lines[1]
  raises("no error, the page says 'boom'", run, fake)
end)
