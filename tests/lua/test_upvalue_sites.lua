-- Differential tests for upvalues that compiled code assigns, read and
-- written in place (runtime/luacall.c's head, codegen/cg_callvalue.c
-- getupv/setupv): a hot site keeps the closure in a cache of its own and
-- reads or writes a number through closure->upvals[n]->v. The interpreted
-- function is the specification: each scenario runs once interpreted and
-- once compiled (calls_harness.differential), and the logs of results,
-- subtypes and error messages must agree, whatever the upvalue holds
-- (numbers of both kinds, a string, a table, nil), whether it is still open
-- (its function running, its stack moved by a deep recursion) or closed,
-- and after debug.upvaluejoin gave the closure another upvalue. Also run
-- through the Lua API only (lua.test_upvalue_sites_api:
-- KJIT_NO_STACK_READS=1, the helpers' path).
local differential = require("calls_harness").differential

test("a counter upvalue read and written in a loop, other code changing it between calls", function()
  differential(function()
    local c = 0
    local function f(n, step)
      for _ = 1, n do c = c + step end
      return c
    end
    local function set(v) c = v end
    return f, function(run, note)
      run(10, 1)
      run(10, 1)
      run(5, 0.5)         -- the integer becomes a float
      set(7)
      run(3, 2)           -- an integer again
      set("12")           -- a string: Lua's arithmetic converts it
      run(2, 1)
      set({})             -- a table: the error, at its line
      run(2, 1)
      set(nil)
      run(1, 1)
      set(math.maxinteger)
      run(1, 1)           -- wraps
      note(c)
    end
  end)
end)

test("an upvalue that holds a table, then a number, read in a loop", function()
  differential(function()
    local acc = { 1, 2, 3 }
    local function f(n)
      local s = 0
      for i = 1, n do
        if type(acc) == "table" then s = s + #acc else s = s + acc end
        if i == 2 then acc = 5 end
      end
      acc = { 4 }
      return s
    end
    return f, function(run)
      run(4)
      run(4)
      run(1)
    end
  end)
end)

test("an open upvalue, its function running and its stack moved between calls", function()
  differential(function()
    local function deep(k) if k == 0 then return 0 end return 1 + deep(k - 1) end
    local function outer(n)
      local x = 1
      local function bump(m)   -- compiled in the second pass: x is open
        for _ = 1, m do x = x * 2 + 1 end
        return x
      end
      local g = bump
      local log = {}
      log[#log + 1] = g(n)
      log[#log + 1] = deep(5000)   -- grows (and moves) the Lua stack
      log[#log + 1] = g(n)
      x = 0.5
      log[#log + 1] = g(n)
      return table.concat(log, " "), x
    end
    return function(n) return outer(n) end, function(run)
      run(3)
      run(4)
    end
  end)
end)

test("the upvalue an iterator closure keeps its position in (array3d's points)", function()
  differential(function()
    local function points(t)
      local y, z = 0, 0
      return function(s, x)
        x = x + 1
        if x >= s.nx then
          x = 0
          y = y + 1
          if y >= s.ny then
            y = 0
            z = z + 1
            if z >= s.nz then return nil, nil, nil end
          end
        end
        return x, y, z
      end, t, 0
    end
    local function f(nx, ny, nz)
      local t = { nx = nx, ny = ny, nz = nz }
      local s, n = 0, 0
      for x, y, z in points(t) do
        s = s + x * 100 + y * 10 + z
        n = n + 1
      end
      return s, n
    end
    return f, function(run)
      run(3, 4, 5)
      run(2, 2, 2)
      run(1, 1, 1)
    end
  end)
end)

test("debug.upvaluejoin gives the closure another upvalue between calls", function()
  differential(function()
    local a, b = 10, 1000
    local function f(n)
      for _ = 1, n do a = a + 1 end
      return a
    end
    local function other() b = b + 0.25; return b end
    return f, function(run, note, call)
      run(3)
      run(3)
      debug.upvaluejoin(f, 1, other, 1)   -- f's `a` is now other's `b`
      run(2)
      note(other())
      run(2)
      note(b)
      note(a)
    end
  end)
end)
