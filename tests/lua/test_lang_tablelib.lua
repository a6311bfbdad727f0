-- Differential tests (issue 29 item 1/5): table.insert, table.remove and
-- table.concat in compiled code. They call the real functions (the Lua
-- library's, through runtime_lib.c), so their results, their effect on
-- the table (compared key by key after the call) and their errors (at the
-- call's line) are the interpreter's.
local T = require "tablediff"

test("table.insert at the end and at a position; #t after", function()
  T.check(function(t, n)
    for i = 1, n do table.insert(t, i * i) end
    table.insert(t, 1, "first")
    table.insert(t, 3, 2.5)
    return #t, t[1], t[3]
  end, function() return { 7 }, 5 end)
  T.check(function(t) table.insert(t, { x = 1 }); return t[#t].x end, function() return {} end)
end)

test("table.remove: the value removed, from the end and a position", function()
  T.check(function(t)
    local a = table.remove(t)
    local b = table.remove(t, 1)
    local c = table.remove({})
    return a, b, c, #t
  end, function() return { 1, "two", 3.5, { 4 } } end)
  T.check(function(t)   -- a stack: push and pop in a loop
    local s = 0
    for i = 1, 10 do table.insert(t, i) end
    while #t > 0 do s = s + table.remove(t) end
    return s
  end, function() return {} end)
end)

test("table.concat of numbers and strings, with separators and ranges", function()
  T.check(function(t) return table.concat(t), table.concat(t, ", "), table.concat(t, "-", 2, 3) end,
          function() return { 1, "b", 2.5, "d" } end)
  T.check(function(n)
    local parts = {}
    for i = 1, n do parts[#parts + 1] = "p" .. i end
    return table.concat(parts, "/")
  end, function() return 4 end)
end)

test("errors are the library's, at the call's line", function()
  T.check_error("bad argument #2 to 'insert' (position out of bounds)",
                function(t) table.insert(t, 5, 1) end, function() return { 1 } end)
  T.check_error("in table for 'concat'",
                function(t) return table.concat(t) end, function() return { 1, {}, 3 } end)
  T.check_error("wrong number of arguments to 'insert'",
                function(t) table.insert(t, 1, 2, 3) end, function() return {} end)
end)
