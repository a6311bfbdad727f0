
test("a record's array field of an array made here, returned (an internal error before)", function()
  local Body = kjit.struct{ { "id", "u8" }, { "pos", "f64", 3 } }
  local g = kjit.jit(function(k) local b = kjit.zeros(2, Body) b[1].pos[2] = k return b[1].pos end)
  local v = g(3)
  collectgarbage("collect")
  local w = kjit.full(100, 9)
  eq(v[2], 3.0)
  eq(#v, 3)
  eq(w[1], 9.0)
end)
