-- bench/lua_programs.lua's summary counts a program whose main chunk kjit
-- runs interpreted (its chunk policy: vectors) apart from the programs it
-- compiled (recursive-fib), and gives the geometric means over each set.
-- One round of two short programs, run as a child process with this
-- build's module; no time is checked, only what the lines say. (On the
-- start: "compiled by kjit: 2 of 2 programs".)
test("interpreted programs are counted apart in the summary", function()
  local lua = arg and arg[-1] or "lua5.4"
  local cpath = package.cpath:gsub("'", "")
  local root = debug.getinfo(1, "S").source:match("^@(.*)tests/lua/[^/]*$") or "./"
  local p = io.popen("LUA_CPATH='" .. cpath .. "' " .. lua .. " " .. root ..
                     "bench/lua_programs.lua 1 vectors recursive-fib 2>&1")
  local out = p:read("a")
  p:close()
  truthy(out:find("compiled by kjit: 1 of 2 programs; run interpreted (its chunk policy): 1 (vectors)",
                  1, true), "the count line:\n" .. out)
  truthy(out:find("geometric mean over the 1 compiled: lua/kjit [%d.]+"), "the compiled programs' mean:\n" .. out)
  truthy(out:find("geometric mean over all 2 kjit ran: lua/kjit [%d.]+"), "all programs' mean:\n" .. out)
  truthy(out:find("vectors: kjit ran its main chunk interpreted", 1, true), "the note:\n" .. out)
end)
