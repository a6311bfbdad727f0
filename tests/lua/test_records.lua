local kjit = require "kjit"

-- test_records.lua: record dtypes (kjit.struct) in the interpreter: layouts,
-- arrays of records, record views, fields, errors, comparison, printing,
-- lifetimes. (Layouts against the C compiler: tests/c/test_records_layout.c;
-- compiled code: test_records_jit.lua.)

local NUMERIC = { "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64" }
local function f32(x) return (string.unpack("f", string.pack("f", x))) end

local P = kjit.struct{ {"x", "f32"}, {"y", "f32"}, {"vx", "f32"}, {"vy", "f32"} }

test("layout: size, align, offsets, fields", function()
  eq(P.size, 16); eq(P.align, 4)
  eq(P.offset.x, 0); eq(P.offset.vy, 12)
  local Q = kjit.struct{ {"id", "u8"}, {"pos", "f64", 3}, {"p", P}, {"n", "i16"} }
  eq(Q.offset.pos, 8); eq(Q.offset.p, 32); eq(Q.offset.n, 48); eq(Q.size, 56); eq(Q.align, 8)
  local f = Q.fields
  eq(#f, 4); eq(f[2].name, "pos"); eq(f[2].dtype, "f64"); eq(f[2].count, 3); eq(f[2].offset, 8)
  eq(f[3].dtype, P); eq(f[1].count, 0)
end)

test("layouts are interned: equal declarations are one value", function()
  local A = kjit.struct{ {"x", "f32"}, {"y", "f32"}, {"vx", "f32"}, {"vy", "f32"} }
  truthy(A == P, "same layout")
  truthy(kjit.struct{ {"y", "f32"}, {"x", "f32"} } ~= kjit.struct{ {"x", "f32"}, {"y", "f32"} },
         "field order matters")
  truthy(rawequal(kjit.zeros(1, A).dtype, P), "p.dtype is the layout")
end)

test("kjit.struct refuses bad declarations", function()
  raises("at least one field", kjit.struct, {})
  raises("unknown dtype 'c64'", kjit.struct, { {"x", "c64"} })
  raises("declared twice", kjit.struct, { {"x", "f32"}, {"x", "f64"} })
  raises("not a Lua identifier", kjit.struct, { {"a b", "f32"} })
  raises("count must be a positive integer", kjit.struct, { {"a", "f32", 0} })
  raises("must be a table", kjit.struct, { "x" })
  raises("dtype must be a dtype name or a kjit.struct", kjit.struct, { {"x", 3} })
end)

test("every numeric dtype as a field: reads, writes, store rules", function()
  local t = {}
  for _, d in ipairs(NUMERIC) do t[#t + 1] = { d, d } end
  local R = kjit.struct(t)
  local a = kjit.zeros(2, R)
  for _, d in ipairs(NUMERIC) do
    local ref = kjit.zeros(1, d)
    for _, v in ipairs{ 5, -3, 300, 2.0, 0.1, 1 << 40 } do
      local ok1, e1 = pcall(function() ref[1] = v end)
      local ok2, e2 = pcall(function() a[2][d] = v end)
      eq(ok2, ok1, d .. " store " .. tostring(v))
      if ok1 then same_value(a[2][d], ref[1]) else truthy(e2:find("no integer representation", 1, true), e2) end
    end
  end
  raises("number expected, got string", function() a[1].f64 = "1" end)
  raises("number expected, got boolean", function() a[1].i32 = true end)
end)

test("p[i] is a view: writes go to the array, and it keeps the array alive", function()
  local r
  do
    local p = kjit.zeros(3, P)
    p[2].x = 1.5
    r = p[2]
  end
  collectgarbage(); collectgarbage()
  eq(r.x, 1.5)
  r.vy = 2
  eq(r.vy, 2.0); eq(math.type(r.vy), "float")
  local p = kjit.zeros(2, P)
  local v = p[1]
  v.x = v.x + 3
  eq(p[1].x, 3.0)
  eq(f32(0.1), (function() p[2].y = 0.1; return p[2].y end)())
end)

test("unknown fields, bad keys, bounds: clear errors", function()
  local p = kjit.zeros(3, P)
  raises("record has no field 'z' (fields: x, y, vx, vy)", function() return p[1].z end)
  raises("record has no field 'z'", function() p[1].z = 1 end)
  raises("indexed by field names, not with a number", function() return p[1][1] end)
  raises("index 4 out of bounds [1, 3]", function() return p[4] end)
  raises("index 0 out of bounds [1, 3]", function() p[0] = {} end)
  raises("index 1.5 is not an integer", function() return p[1.5] end)
  raises("kjit.array has no field 'x'", function() return p.x end)
  raises("attempt to get length of a record", function() return #p[1] end)
  local ok, e = pcall(function() return p[1].z end)
  truthy(e:find("test_records.lua:%d+:"), "located: " .. e)
end)

test("array fields and nested records", function()
  local Q = kjit.struct{ {"id", "u8"}, {"pos", "f64", 3}, {"p", P}, {"ps", P, 2} }
  local q = kjit.zeros(2, Q)
  q[2].pos[3] = 7
  eq(q[2].pos[3], 7.0); eq(#q[2].pos, 3); eq(q[2].pos.dtype, "f64")
  raises("index 4 out of bounds [1, 3]", function() return q[2].pos[4] end)
  raises("cannot assign to array field 'pos'", function() q[1].pos = 1 end)
  q[1].p.vx = 2
  eq(q[1].p.vx, 2.0)
  q[1].ps[2].y = 5
  eq(q[1].ps[2].y, 5.0); eq(#q[1].ps, 2)
  q[2].p = q[1].p          -- a record of the same layout: copied
  eq(q[2].p.vx, 2.0)
  q[2].p = { y = 1 }       -- a table: the fields named, the others zero
  eq(q[2].p.vx, 0.0); eq(q[2].p.y, 1.0)
  raises("cannot assign a number value to a record", function() q[1].p = 3 end)
  local pos = q[2].pos
  q = nil
  collectgarbage(); collectgarbage()
  eq(pos[3], 7.0)   -- the field view keeps the memory alive
end)

test("assigning records: same layout, tables, atomic on error", function()
  local p = kjit.zeros(3, P)
  p[1] = { x = 1, y = 2, vx = 3, vy = 4 }
  p[2] = p[1]
  eq(p[2].vy, 4.0)
  p[3] = { x = 9 }
  eq(p[3].x, 9.0); eq(p[3].y, 0.0)
  raises("record has no field 'w'", function() p[3] = { y = 1, w = 2 } end)
  eq(p[3].x, 9.0)   -- unchanged by the failed assignment
  local Other = kjit.struct{ {"x", "f64"} }
  raises("a record of another layout", function() p[1] = kjit.zeros(1, Other)[1] end)
  raises("cannot assign a number value to a record of struct{x: f32", function() p[1] = 5 end)
end)

test("== compares records by content; arrays by identity", function()
  local p = kjit.zeros(3, P)
  p[1].x = 1; p[2].x = 1
  truthy(p[1] == p[2], "equal content")
  truthy(p[1] == p[1], "same record")
  p[2].y = -0.0
  truthy(p[1] == p[2], "0.0 == -0.0")
  p[2].y = 0 / 0
  truthy(p[2] == p[2], "a NaN field equals itself (r == r is reflexive, as Lua's identity shortcut)")
  truthy(p[1] ~= p[2], "NaN against a number differs")
  p[1].y = 0 / 0
  truthy(p[1] == p[2], "NaN fields in both")
  truthy(p ~= p:copy(), "arrays: identity")
  local O = kjit.struct{ {"x", "f32"}, {"y", "f32"}, {"vx", "f32"}, {"w", "f32"} }
  truthy(kjit.zeros(1, O)[1] ~= kjit.zeros(1, P)[1], "another layout")
end)

test("tostring", function()
  local p = kjit.zeros(2, P)
  p[1].x = 1.5; p[1].vy = 0.1
  eq(tostring(p[1]), "{x = 1.5, y = 0.0, vx = 0.0, vy = 0.1}")
  eq(tostring(p), "kjit.array(struct{x: f32 @0, y: f32 @4, vx: f32 @8, vy: f32 @12; size 16}, {2}) "
     .. "[{x = 1.5, y = 0.0, vx = 0.0, vy = 0.1}, {x = 0.0, y = 0.0, vx = 0.0, vy = 0.0}]")
  eq(tostring(P), "kjit.struct{x: f32 @0, y: f32 @4, vx: f32 @8, vy: f32 @12; size 16}")
  local Q = kjit.struct{ {"n", "i32"}, {"v", "f64", 2} }
  local q = kjit.zeros(20, Q)
  q[1].n = -3
  eq(tostring(q[1]), "{n = -3, v = [0.0, 0.0]}")
  truthy(tostring(q):find("}, ..., {", 1, true), "summarized")
end)

test("constructors take a record dtype", function()
  local a = kjit.zeros({2, 3}, P)
  eq(a.ndim, 2); eq(a.size, 6); eq(#a, 2); eq(a[2][3].x, 0.0)
  a[2][3].x = 4
  eq(a:reshape(6)[6].x, 4.0)
  local e = kjit.empty(4, P)
  eq(e[4].vy, 0.0)
  local f = kjit.full(3, { vx = 2 }, P)
  eq(f[3].vx, 2.0); eq(f[3].x, 0.0)
  local g = kjit.full(2, f[1], P)
  eq(g[2].vx, 2.0)
  local l = kjit.array({ { x = 1 }, { y = 2 }, f[1] }, P)
  eq(#l, 3); eq(l[2].y, 2.0); eq(l[3].vx, 2.0)
  local c = kjit.array(l, P)
  eq(c[2].y, 2.0); truthy(c ~= l, "a copy")
  local c2 = kjit.array(l)   -- the layout of l
  eq(c2[3].vx, 2.0); truthy(c2.dtype == P and c2 ~= l, "a copy, same layout")
  raises("a list of records", kjit.array, l[1])
  local m = kjit.array({ { { x = 1 }, { x = 2 } }, { { x = 3 }, { x = 4 } } }, P)
  eq(m.ndim, 2); eq(m[2][1].x, 3.0)
  raises("ragged", kjit.array, { { { x = 1 } }, { { x = 3 }, { x = 4 } } }, P)
  raises("no numeric values", kjit.arange, 3, P)
  raises("no numeric values", kjit.linspace, 0, 1, 3, P)
  truthy(kjit.isarray(l), "isarray")
  eq(kjit.zeros(0, P).size, 0)
end)

test("methods: copy, fill, slice, reshape, totable", function()
  local p = kjit.zeros(4, P)
  p:fill({ x = 1, y = 2 })
  eq(p[4].y, 2.0)
  local c = p:copy()
  c[1].x = 7
  eq(p[1].x, 1.0)
  local s = p:slice(2, 3)
  eq(#s, 2); s[1].vx = 5; eq(p[2].vx, 5.0)
  local t = p:totable()
  eq(#t, 4); eq(t[2].vx, 5.0); eq(t[1].y, 2.0)
  raises("record has no field 'copy'", function() return p[1]:copy() end)
  raises("cannot reshape", function() return p:reshape(3) end)
  raises("out of bounds", function() return p:slice(2, 5) end)
end)

test("bool fields print as booleans", function()
  local B = kjit.struct{ {"b", "bool"}, {"f", "bool", 3}, {"x", "i32"} }
  local p = kjit.zeros(1, B)
  p[1].b = true; p[1].f[2] = true; p[1].x = 7
  eq(tostring(p[1]), "{b = true, f = [false, true, false], x = 7}")
end)

test("ipairs over an array of records ends after #p, as over a table", function()
  local p = kjit.zeros(3, P)
  local n = 0
  for i, r in ipairs(p) do n = n + i; r.x = i end
  eq(n, 6)
  eq(p[3].x, 3.0)
  local ok, err = pcall(function() return p[4] end)
  truthy(not ok and err:find("index 4 out of bounds [1, 3]", 1, true), err)
  local m = kjit.zeros({2, 2}, P)
  local c = 0
  for _, row in ipairs(m) do for _ in ipairs(row) do c = c + 1 end end
  eq(c, 4)
end)
