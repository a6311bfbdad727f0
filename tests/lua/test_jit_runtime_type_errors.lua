-- test_jit_runtime_type_errors.lua: type errors the interpreter raises only
-- when the operation runs are raised by compiled code at the same point
-- (issue 22, item 8). A value that is always nil (a local never assigned,
-- math.tointeger(2.5), the result of a callee that returns nothing), a
-- boolean or a kjit array used in arithmetic, a bitwise operation, an
-- ordering comparison, `#`, a call or an index: on a path that does not run
-- the function compiles and runs; on a path that runs the compiled code
-- raises the interpreter's message at the operation's line, after the
-- stores the interpreter made before it, naming the operation that ran
-- first. Every case is differential (D.check: values, errors, arrays).
local kjit = require "kjit"
local D = require "difftest"

local function nothing() end

-- the four reproducers of the issue: a statically nil value or an array in
-- arithmetic, on a path that runs only for large a
local function never_assigned(a)
  local x
  if a > 100 then return x + 1 end
  return a
end
local function tointeger_nil(a)
  if a > 100 then return math.tointeger(2.5) + 1 end
  return a
end
local function callee_nothing(a)
  if a > 100 then return nothing() * a end
  return a
end
local function array_arith(a, B)
  if a > 100 then return B + 1 end
  return a
end

test("a statically nil value or an array in arithmetic on a path not run compiles", function()
  D.cases(never_assigned, {1}, {2.5})
  D.cases(tointeger_nil, {1}, {-3})
  D.cases(callee_nothing, {1}, {0.5})
  D.cases(array_arith, {1, kjit.zeros(3, "u32")}, {7, kjit.zeros(2)})
end)

test("... and raises the interpreter's error where it runs", function()
  D.check_error("attempt to perform arithmetic on a nil value (local 'x')", never_assigned, 101)
  D.check_error("attempt to perform arithmetic on a nil value", tointeger_nil, 101)
  D.check_error("attempt to perform arithmetic on a nil value", callee_nothing, 101)
  D.check_error("attempt to perform arithmetic on a kjit.array value (kjit arrays have no arithmetic operators", array_arith,
                101, kjit.zeros(3, "u32"))
end)

-- stores before the error happen; the first error that runs is the one named
local function store_then_nil(a, A)
  A[1] = a
  local x
  A[2] = a + 1
  return x + a
end
local function two_uses(a)
  local x, y
  if a > 0 then return y * 2 end
  return x + 1
end
local function loop_then_raise(n, A)
  local z
  for i = 1, #A do
    A[i] = i * 2
    if i == n then A[i] = z % 2 end
  end
  return n
end
local function while_then_raise(n, A)
  local z, i = nil, 0
  while i < #A do
    i = i + 1
    A[i] = -i
    if i == n then return -z end
  end
  return n
end

test("stores before the error happen, the first error is named", function()
  D.check_error("(local 'x')", store_then_nil, 3, kjit.zeros(3))
  D.check_error("(local 'y')", two_uses, 1)
  D.check_error("(local 'x')", two_uses, -1)
  D.check_error("(local 'z')", loop_then_raise, 2, kjit.zeros(4))
  D.cases(loop_then_raise, {9, kjit.zeros(4)})
  D.check_error("(local 'z')", while_then_raise, 3, kjit.zeros(4))
  D.cases(while_then_raise, {9, kjit.zeros(4)})
end)

-- every operation kind, each on a path taken only when a > 100
local function bool_arith(a) local b = a > 1; if a > 100 then return b - 1 end return a end
local function bool_second(a) local b = true; if a > 100 then return a * b end return a end
local function both_nil(a) local x, y; if a > 100 then return x + y end return a end
local function nil_unm(a) local x; if a > 100 then return -x end return a end
local function array_unm(a, B) if a > 100 then return -B end return a end
local function nil_bnot(a) local x; if a > 100 then return ~x end return a end
local function nil_band(a) local x; if a > 100 then return x & 1 end return a end
local function nil_shl(a) local x; if a > 100 then return 1 << x end return a end
local function nil_idiv(a) local x; if a > 100 then return a // x end return a end
local function len_number(a) if a > 100 then return #a end return a end
local function len_bool(a) local b = a > 1; if a > 100 then return #b end return a end
local function len_nil(a) local x; if a > 100 then return #x end return a end
local function len_upvalue_fn() end
local function len_function(a) if a > 100 then return #len_upvalue_fn end return a end
local function len_literal(a) local h = function() return a end; if a > 100 then return #h end return h() end
local function cmp_nil(a) local x; if a > 100 then if x < a then return 1 end end return a end
local function cmp_bool(a) local b = a > 1; if a > 100 then if a <= b then return 1 end end return a end
local function cmp_arrays(a, B) if a > 100 then if B < B then return 1 end end return a end
local function cmp_value(a) local x; if a > 100 then local c = a > x; return c and 1 or 2 end return a end
local function call_nil(a) local f; if a > 100 then return f(a) end return a end
local function call_number(a) if a > 100 then return a(1) end return a end
local function index_nil(a) local t; if a > 100 then return t[1] end return a end
local function index_field(a) local t; if a > 100 then return t.x end return a end
local function store_into_nil(a) local t; if a > 100 then t[1] = a end return a end
local function index_bool(a) local t = a > 1; if a > 100 then return t[a] end return a end

test("every operation kind: compiles when not run, Lua's error when run", function()
  local all = {
    { bool_arith, "arithmetic on a boolean value (local 'b')" },
    { bool_second, "arithmetic on a boolean value (local 'b')" },
    { both_nil, "arithmetic on a nil value (local 'x')" },
    { nil_unm, "arithmetic on a nil value (local 'x')" },
    { nil_bnot, "bitwise operation on a nil value (local 'x')" },
    { nil_band, "bitwise operation on a nil value (local 'x')" },
    { nil_shl, "bitwise operation on a nil value (local 'x')" },
    { nil_idiv, "arithmetic on a nil value (local 'x')" },
    { len_number, "attempt to get length of a number value (local 'a')" },
    { len_bool, "attempt to get length of a boolean value (local 'b')" },
    { len_nil, "attempt to get length of a nil value (local 'x')" },
    -- a function value (a frozen upvalue, a literal): was a compile error
    -- even where the length is never taken (the reviewer's probe)
    { len_function, "attempt to get length of a function value (upvalue 'len_upvalue_fn')" },
    { len_literal, "attempt to get length of a function value (local 'h')" },
    { cmp_nil, "attempt to compare nil with number" },
    { cmp_bool, "attempt to compare number with boolean" },
    { cmp_value, "attempt to compare nil with number" },
    { call_nil, "attempt to call a nil value (local 'f')" },
    { call_number, "attempt to call a number value (local 'a')" },
    { index_nil, "attempt to index a nil value (local 't')" },
    { index_field, "attempt to index a nil value (local 't')" },
    { store_into_nil, "attempt to index a nil value (local 't')" },
    { index_bool, "attempt to index a boolean value (local 't')" },
  }
  for _, c in ipairs(all) do
    D.cases(c[1], {1}, {2.5})
    D.check_error(c[2], c[1], 101)
  end
  local B = kjit.zeros(2, "i32")
  D.cases(array_unm, {1, B})
  D.check_error("arithmetic on a kjit.array value (kjit arrays have no arithmetic operators", array_unm, 101, B)
  D.cases(cmp_arrays, {1, B})
  D.check_error("attempt to compare two kjit.array values", cmp_arrays, 101, B)
end)

-- a raising operation whose value flows on: into a call, a phi, a return of
-- several values, a store
local function id(v) return v end
local function into_call(a) local x; if a > 100 then return id(x + 1) end return a end
local function into_phi(a) local x; local y = a; if a > 100 then y = x - 1 end return y end
local function into_results(a) local x; if a > 100 then return a, x + 1 end return a, a end
local function into_store(a, A) local x; if a > 100 then A[1] = x * 2 end A[2] = a return a end
local function chained(a) local x; if a > 100 then local y = x + 1; local z = y * 2; return z end return a end

test("what uses a raising operation never runs", function()
  for _, f in ipairs{ into_call, into_phi, into_results, chained } do
    D.cases(f, {1}, {2.5})
    D.check_error("attempt to perform arithmetic on a nil value (local 'x')", f, 101)
  end
  D.cases(into_store, {1, kjit.zeros(2)})
  D.check_error("attempt to perform arithmetic on a nil value (local 'x')", into_store, 101, kjit.zeros(2))
end)

-- in callees: an ordinary one, a pure one (a float result, no loops)
function KJIT_TEST_PURE_NIL(b)
  local z
  if b > 5 then return z + b end
  return b * 0.5
end
local function calls_pure(a) return KJIT_TEST_PURE_NIL(a) + 1 end
local function raiser(a, A)
  A[1] = 7
  local z
  if a > 5 then return z + a end
  return a
end
local function calls_raiser(a, A) A[2] = 1 return raiser(a, A) + raiser(a - 10, A) end

test("in a callee, pure or not", function()
  D.cases(calls_pure, {1}, {2.5})
  D.check_error("attempt to perform arithmetic on a nil value (local 'z')", calls_pure, 6)
  D.cases(calls_raiser, {1, kjit.zeros(2)})
  D.check_error("attempt to perform arithmetic on a nil value (local 'z')", calls_raiser, 6, kjit.zeros(2))
end)

test("a stripped chunk: the position and names Lua gives there", function()
  local f = load(string.dump(never_assigned, true), "=?", "b")
  D.cases(f, {1})
  D.check_error("attempt to perform arithmetic on a nil value", f, 101)
end)

-- kernels: the simulator (compiled) raises at run time too, as the
-- interpreting simulator does; the kernel compiles to PTX
local cuda = kjit.cuda
local function kernel_nil(out, n)
  local t = cuda.grid(1)
  local z
  if t > n then out[t] = z + 1 else out[t] = t end
end

-- The kernel run over 4 threads with n = 8 then n = 2 (and extra
-- arguments), in the interpreting simulator then the compiled one: each
-- run's outcome and output, in that order.
local function kernel_runs(kernel, ...)
  local results = {}
  for _, mode in ipairs{ "interpret", true } do
    for _, n in ipairs{ 8, 2 } do
      local prev = cuda.simulate(mode)
      local out = kjit.zeros(4)
      local ok, err = pcall(cuda.jit(kernel)[{1, 4}], out, n, ...)
      cuda.simulate(prev)
      results[#results + 1] = (ok and "ok" or tostring(err)) .. " " .. table.concat(out:totable(), ",")
    end
  end
  return results
end

test("a kernel with a raising operation: compiles, raises when it runs", function()
  local results = kernel_runs(kernel_nil)
  eq(results[3], results[1], "n = 8: no error, same output")
  eq(results[4], results[2], "n = 2: the same error")
  truthy(results[2]:find("attempt to perform arithmetic on a nil value (local 'z')", 1, true), results[2])
  local k = cuda.jit(kernel_nil)
  local ok, err = pcall(k.compile, k, "void(f64[:], i64)")
  truthy(ok, "the kernel compiles for the GPU: " .. tostring(err))
end)

-- a number-or-nil indexed in a kernel: the same, naming what it holds
local function kernel_index(out, n, m)
  local t = cuda.grid(1)
  local z
  if t > m then z = t end
  if t > n then out[t] = z.y else out[t] = t end
end

test("a kernel indexing a number-or-nil: compiles, raises what it holds when it runs", function()
  for _, m in ipairs{ 1, 8 } do
    local results = kernel_runs(kernel_index, m)
    eq(results[3], results[1], "n = 8: no error, same output")
    eq(results[4], results[2], "n = 2: the same error")
    local want = m == 1 and "attempt to index a number value (local 'z')"
                 or "attempt to index a nil value (local 'z')"
    truthy(results[2]:find(want, 1, true), results[2])
  end
end)

-- in loops the code generator copies (a peeled first iteration, a checked
-- and an unchecked version, a kjit.prange loop)
local function in_peeled(x, n)
  local z
  local s = 0
  for i = 1, #x do
    s = s + x[i]
    if i > n then s = s + z end
  end
  return s
end
local function in_versioned(x, n)
  local z
  for i = 1, #x do
    x[i] = x[i] * 2
    if i == n then x[i + 1] = z * 2 end
  end
  return #x
end
local function in_prange(x, n)
  local z
  for i in kjit.prange(1, #x) do
    x[i] = i
    if i == n then x[i] = z + 1 end
  end
  return 0
end

test("in loops, at every opt level", function()
  for _, opts in ipairs{ {}, { opt = 0 }, { opt = 1 } } do
    D.cases_opts(opts, in_peeled, {kjit.full(8, 1.5), 100})
    D.cases_opts(opts, in_versioned, {kjit.full(8, 1.5), 100})
    D.cases_opts(opts, in_prange, {kjit.zeros(16), 100})
    D.check_opts(opts, in_peeled, kjit.full(8, 1.5), 3)
    D.check_opts(opts, in_versioned, kjit.full(8, 1.5), 3)
    D.check_opts(opts, in_prange, kjit.zeros(16), 7)
  end
end)

-- a numeric for whose bound is nil, a boolean or an array: Lua 5.4's "bad
-- 'for' limit (number expected, got nil)" when the loop starts (the limit
-- checked first, then the step, then the initial value)
local function for_limit_nil(a) local x; local s = 0; if a > 100 then for i = 1, x do s = s + i end end return s end
local function for_init_nil(a) local x; local s = 0; if a > 100 then for i = x, 3 do s = s + i end end return s end
local function for_step_bool(a) local b = a > 1; local s = 0; if a > 100 then for i = 1, 3, b do s = s + i end end return s end
local function for_two_bad(a) local x; local s = 0; if a > 100 then for i = x, x do s = s + i end end return s end
local function for_float_step_nil(a) local x; local s = 0; if a > 100 then for i = 1.5, 3, x do s = s + i end end return s end
local function for_array_limit(a, B) local s = 0; if a > 100 then for i = 1, B do s = s + i end end return s end

test("a nil, boolean or array 'for' bound raises when the loop starts", function()
  local B = kjit.zeros(2)
  for _, opts in ipairs{ {}, { opt = 0 }, { opt = 1 } } do
    for _, c in ipairs{
      { for_limit_nil, "bad 'for' limit (number expected, got nil)" },
      { for_init_nil, "bad 'for' initial value (number expected, got nil)" },
      { for_step_bool, "bad 'for' step (number expected, got boolean)" },
      { for_two_bad, "bad 'for' limit (number expected, got nil)" },
      { for_float_step_nil, "bad 'for' step (number expected, got nil)" },
      { for_array_limit, "bad 'for' limit (number expected, got kjit.array)" },
    } do
      D.cases_opts(opts, c[1], {1, B})
      D.check_opts(opts, c[1], 101, B)
      D.check_error(c[2], c[1], 101, B)
    end
  end
end)

-- math.max and math.min compare their arguments in C: Lua's order error,
-- without a position, for the first comparison that fails
local function max_nil(a) local x; if a > 100 then return math.max(a, x) end return a end
local function max_nil_first(a) local x; if a > 100 then return math.max(x, a) end return a end
local function min_nil(a) local x; if a > 100 then return math.min(a, x) end return a end
local function min_nil_first(a) local x; if a > 100 then return math.min(x, a, 3) end return a end
local function max_two_nil(a) local x; if a > 100 then return math.max(x, x) end return a end
local function max_bool_third(a) local b = a > 1; if a > 100 then return math.max(1, 2.5, b) end return a end
local function max_array(a, B) if a > 100 then return math.max(a, B) end return a end

test("math.max and math.min given nil, a boolean or an array", function()
  local B = kjit.zeros(2)
  for _, c in ipairs{
    { max_nil, "attempt to compare number with nil" },
    { max_nil_first, "attempt to compare nil with number" },
    { min_nil, "attempt to compare nil with number" },
    { min_nil_first, "attempt to compare number with nil" },
    { max_two_nil, "attempt to compare two nil values" },
    { max_bool_third, "attempt to compare number with boolean" },
    { max_array, "attempt to compare number with kjit.array" },
  } do
    D.cases(c[1], {1, B})
    D.check_error(c[2], c[1], 101, B)
  end
end)

-- a callee whose later results are never produced (the return raises
-- before them): the call that expands them never runs
local function h2r(a) return 2.5, a + 1, -a end
local function h1r(a) return math.max(h2r(a)) end
local function expands_raising(a)
  local _, q = h1r(a)
  return math.max(a, h1r(q))
end

test("results a callee never produces", function()
  D.check_error("attempt to perform arithmetic on a nil value (local 'a')", expands_raising, 3)
end)

-- a value that is a number or nil (or false), found nil when it runs: the
-- interpreter's message for the operation that uses it (difffuzz found/:
-- bitwise-nil-message, for-limit-nil-message, math-nil-argument-message)
local function nb(a) local z; if a > 0 then z = a end return z end   -- integer or nil
local function nf(a) local z; if a > 0 then z = a + 0.5 end return z end   -- float or nil
local function maybe_band(a) local z = nb(a); return z & 3 end
local function maybe_bnot(a) local z = nf(a); return ~z end
local function maybe_shl(a) local z = nb(a); return 1 << z end
local function maybe_false_bor(a) local z = a > 0 and a; return z | 1 end
local function maybe_add(a) local z = nb(a); return z + 1 end
local function maybe_for_limit(a) local z, s = nb(a), 0; for i = 1, z do s = s + i end return s end
local function maybe_for_init(a) local z, s = nf(a), 0; for i = z, 3 do s = s + i end return s end
local function maybe_for_step(a) local z, s = nb(a), 0; for i = 1, 3, z do s = s + i end return s end
local function maybe_for_order(a) local z, s = nb(a), 0; for i = z, z, z do s = s + i end return s end
local function maybe_sqrt(a) local z = nf(a); return math.sqrt(z) end
local function maybe_floor(a) local z = nf(a); return math.floor(z) end
local function maybe_abs(a) local z = nb(a); return math.abs(z) end
local function maybe_fmod(a) local z = nb(a); return math.fmod(7, z) end
local function maybe_ult(a) local z = nb(a); return math.ult(1, z) end
local function maybe_false_exp(a) local z = a > 0 and a; return math.exp(z) end
local function maybe_max_first(a) local z = nb(a); return math.max(z, 1) end
local function maybe_max_second(a) local z = nf(a); return math.max(1, z, 2) end
local function maybe_min_first(a) local z = nb(a); return math.min(z, 1) end
local function maybe_min_second(a) local z = nb(a); return math.min(1, z) end
local function maybe_max_two(a) local z, w = nb(a), nb(a); return math.max(z, w) end
local function maybe_min_two(a) local z, w = nb(a), a > 0 and a; return math.min(z, w) end

-- math.max/min of one argument compare nothing: that argument, nil too
local function max_one_maybe(a) local z = nb(a); local y = math.max(z); return y == nil, y end
local function min_one_static(a, B) local x; local b = a > 1
  return math.min(x) == nil, math.max(b), #math.min(B), math.max(a) end

test("math.max and math.min of one argument return it", function()
  D.cases(max_one_maybe, {3}, {-1}, {2.5})
  D.cases(min_one_static, {3, kjit.zeros(2)}, {0.5, kjit.zeros(1)})
end)

test("a number-or-nil operand found nil raises the operation's own message", function()
  for _, opts in ipairs{ {}, { opt = 0 } } do
    for _, c in ipairs{
      { maybe_band, "attempt to perform bitwise operation on a nil value (local 'z')" },
      { maybe_bnot, "attempt to perform bitwise operation on a nil value (local 'z')" },
      { maybe_shl, "attempt to perform bitwise operation on a nil value (local 'z')" },
      { maybe_false_bor, "attempt to perform bitwise operation on a boolean value (local 'z')" },
      { maybe_add, "attempt to perform arithmetic on a nil value (local 'z')" },
      { maybe_for_limit, "bad 'for' limit (number expected, got nil)" },
      { maybe_for_init, "bad 'for' initial value (number expected, got nil)" },
      { maybe_for_step, "bad 'for' step (number expected, got nil)" },
      { maybe_for_order, "bad 'for' limit (number expected, got nil)" },
      { maybe_sqrt, "bad argument #1 to 'sqrt' (number expected, got nil)" },
      { maybe_floor, "bad argument #1 to 'floor' (number expected, got nil)" },
      { maybe_abs, "bad argument #1 to 'abs' (number expected, got nil)" },
      { maybe_fmod, "bad argument #2 to 'fmod' (number expected, got nil)" },
      { maybe_ult, "bad argument #2 to 'ult' (number expected, got nil)" },
      { maybe_false_exp, "bad argument #1 to 'exp' (number expected, got boolean)" },
      { maybe_max_first, "attempt to compare nil with number" },
      { maybe_max_second, "attempt to compare number with nil" },
      { maybe_min_first, "attempt to compare number with nil" },
      { maybe_min_second, "attempt to compare nil with number" },
      { maybe_max_two, "attempt to compare two nil values" },
      { maybe_min_two, "attempt to compare boolean with nil" },
    } do
      D.cases_opts(opts, c[1], {3}, {2.5})
      D.check_opts(opts, c[1], -1)
      D.check_error(c[2], c[1], -1)
    end
  end
end)

-- a statically nil or boolean argument of a math function: luaL_checknumber's
-- error when the call runs, the function named as the call names it
local function static_nil_sqrt(a) local x; if a > 100 then return math.sqrt(x) end return a end
local function static_bool_fmod(a) local b = a > 1; if a > 100 then return math.fmod(a, b) end return a end
local function static_array_floor(a, B) if a > 100 then return math.floor(B) end return a end

test("a statically nil, boolean or array argument of a math function", function()
  local B = kjit.zeros(2)
  for _, c in ipairs{
    { static_nil_sqrt, "bad argument #1 to 'sqrt' (number expected, got nil)" },
    { static_bool_fmod, "bad argument #2 to 'fmod' (number expected, got boolean)" },
    { static_array_floor, "bad argument #1 to 'floor' (number expected, got kjit.array)" },
  } do
    D.cases(c[1], {1, B})
    D.check_error(c[2], c[1], 101, B)
  end
end)

-- math.tointeger returns fail (nil) for anything but a number with an
-- integer value, nil and booleans included (difffuzz found/tointeger-nil)
local function toint_maybe(a) local z = nb(a); local y = math.tointeger(z); return y == nil, y end
local function toint_maybe_float(a) local z = nf(a); return math.tointeger(z) end
local function toint_maybe_false(a) local z = a > 0 and a; return math.tointeger(z) end
local function toint_static(a, B) local x; local b = a > 1
  return math.tointeger(x), math.tointeger(b), math.tointeger(B), math.tointeger(a) end

test("math.tointeger of nil, a boolean, an array or a number-or-nil", function()
  D.cases(toint_maybe, {3}, {-1}, {2.0}, {2.5}, {-0.5})
  D.cases(toint_maybe_float, {3}, {-1}, {1.5}, {-2.5})
  D.cases(toint_maybe_false, {3}, {-1}, {2.0}, {2.5})
  D.cases(toint_static, {3, kjit.zeros(2)}, {0.5, kjit.zeros(1)})
end)

-- `z and 5` with z a float or nil: z reaches the join only as nil (difffuzz
-- found/nilable-float-and-int: an invalid LLVM module)
local function and_float_nil(a) local z; if a > 0 then z = -a end local y = z and 5; return y == nil, y end
local function and_false(a) local z = a > 0 and a + 0.5; local y = z and 5; return y end
local function or_float_nil(a) local z; if a > 0 then z = -a end local y = z or 5; return y end

test("'and' of a float-or-nil and an integer", function()
  for _, opts in ipairs{ {}, { opt = 0 }, { opt = 1 } } do
    D.cases_opts(opts, and_float_nil, {2.5}, {-1.5}, {3}, {0})
    D.cases_opts(opts, and_false, {2.5}, {-1.5}, {3}, {0})
    D.cases_opts(opts, or_float_nil, {2.5}, {-1.5}, {3}, {0})
  end
end)

-- a number-or-nil found nil as a kjit array's index or stored value: the
-- messages of the array's __index and __newindex (difffuzz program 1529)
local function maybe_index(a, A) local z = nb(a); return A[z] end
local function maybe_store_key(a, A) local z = nb(a); A[z] = 1 end
local function maybe_store_both(a, A) local z = nb(a); A[z] = z end
local function maybe_store_value(a, A) local z = nb(a); A[1] = 5; A[2] = z end
local function maybe_store_false(a, A) local z = a > 0 and a; A[2] = z end
local function maybe_row(a, M) local z = nb(a); return M[z][1] end
local function maybe_col_store(a, M) local z = nb(a); M[1][z] = 2 end

test("a number-or-nil found nil as an array index or a stored value", function()
  local A, M = kjit.zeros(3), kjit.zeros({2, 2})
  for _, c in ipairs{
    { maybe_index, A, "kjit.array cannot be indexed with a nil value" },
    { maybe_store_key, A, "kjit.array cannot be indexed with a nil value" },
    { maybe_store_both, A, "kjit.array cannot be indexed with a nil value" },
    { maybe_store_value, A, "number expected, got nil" },
    { maybe_store_false, A, "number expected, got boolean" },
    { maybe_row, M, "kjit.array cannot be indexed with a nil value" },
    { maybe_col_store, M, "kjit.array cannot be indexed with a nil value" },
  } do
    D.cases(c[1], {1, c[2]}, {2, c[2]})
    D.check_error(c[3], c[1], -1, c[2])
  end
end)

-- ... and an index that is always nil or a boolean (`a[z]` with z a local
-- never assigned, `a[i > 2]`): buffer.c's message when the read or store
-- runs (session 22, branch fuzzF: was a compile error, also where the
-- code never runs; found probing the raiseop family's positions)
local function nil_key_read(c, A) local z; if c > 1 then return A[z] end return 0 end
local function bool_key_read(c, A) if c > 1 then return A[c > 2] end return 0 end
local function nil_key_store(c, A) local z; A[1] = c; if c > 1 then A[z] = 5 end return A[1] end
local function bool_key_store(c, A) if c > 1 then A[c > 2] = 5 end return 0 end
local function bool_key_row(c, M) if c > 1 then return M[c == 3][1] end return 0 end

test("an index always nil or a boolean: compiles, raises when it runs", function()
  local A, M = kjit.zeros(3), kjit.zeros({2, 2})
  for _, c in ipairs{
    { nil_key_read, A, "kjit.array cannot be indexed with a nil value" },
    { bool_key_read, A, "kjit.array cannot be indexed with a boolean value" },
    { nil_key_store, A, "kjit.array cannot be indexed with a nil value" },
    { bool_key_store, A, "kjit.array cannot be indexed with a boolean value" },
    { bool_key_row, M, "kjit.array cannot be indexed with a boolean value" },
  } do
    D.cases(c[1], {1, c[2]}, {0.5, c[2]})
    D.check_error(c[3], c[1], 3, c[2])
  end
end)

-- a number-or-nil ordered with a value that is nil (or a boolean) on every
-- path raises when the comparison runs, naming what each operand holds
-- then (difffuzz found/static-nil-callee-compare.lua: it was a compile
-- error, also where the comparison never runs)
local function cmp_maybe_nil(x, c)
  local z = math.tointeger(x)   -- an integer, or nil
  local w                       -- nil
  if c == 1 then return z < w end
  if c == 2 then return w <= z end
  if c == 3 then return z < true end
  return false
end
local function callee_cmp(p1, p2) local z = math.tointeger(p1) if z <= p2 then return 1 end return 2 end
local function early_return(n)
  local nothing = math.tointeger(0.5)   -- nil, folded
  if n > -3 then return 3 end
  return callee_cmp(n, nothing)
end
test("ordering a number-or-nil with nil or a boolean raises when it runs", function()
  D.cases(cmp_maybe_nil, {2, 0}, {2.5, 0})
  D.cases_error("attempt to compare number with nil", cmp_maybe_nil, {2, 1})
  D.cases_error("attempt to compare two nil values", cmp_maybe_nil, {2.5, 1})
  D.cases_error("attempt to compare nil with number", cmp_maybe_nil, {2, 2})
  D.cases_error("attempt to compare number with boolean", cmp_maybe_nil, {2, 3})
  D.cases_error("attempt to compare nil with boolean", cmp_maybe_nil, {2.5, 3})
  D.cases(early_return, {0}, {5.5})
  D.cases_error("attempt to compare number with nil", early_return, {-4})
  D.cases_error("attempt to compare two nil values", early_return, {-4.5})
end)

-- A boolean, nil, an array or a string stored into a number element or a
-- record field: buffer.c's "number expected, got ..." when the store runs,
-- after the index checks; a path that does not run compiles (difffuzz: it
-- was a compile-time refusal)
test("stores of non-numbers into number arrays and fields raise when they run", function()
  local P = kjit.struct{ {"x", "f64"}, {"k", "i32"} }
  local function f(A, p, w, i)
    local b, s = w > 10, "1"
    A[2] = 7
    if w == 1 then A[i] = b elseif w == 2 then p[i].x = b
    elseif w == 3 then A[i] = nil elseif w == 4 then p[i].k = nil
    elseif w == 5 then A[i] = A elseif w == 6 then p[i].x = s
    elseif w == 7 then A[i] = s end
    return A[2]
  end
  for w = 0, 7 do
    D.check(f, kjit.zeros(3), kjit.zeros(3, P), w, 1)
    D.check(f, kjit.zeros(3, "u8"), kjit.zeros(3, P), w, 9)   -- the index error first
  end
end)

-- Indexing or calling a number, or a number-or-nil (-false), raises Lua's
-- error when it runs, naming what the value holds then (number, nil,
-- boolean) and the variable as Lua names it; code that does not run
-- compiles (differences.md item 13: until 2026-11-28 a compile error).
-- Reads, stores (field, integer and computed keys), calls, method calls;
-- locals, upvalues, fields of a constant table, elements of arrays.
local K = { n = 3 }
local U = 7
local maybe_forms = {
  function(a) local x; if a > 1 then x = a end; if a > 100 then return x.y end return 1 end,
  function(a) local x; if a > 1 then x = a end; if a > 100 then return x[1] end return 1 end,
  function(a) local x; if a > 1 then x = a end; if a > 100 then return x[a] end return 1 end,
  function(a) local x; if a > 1 then x = a end; if a > 100 then x.y = 1 end return 1 end,
  function(a) local x; if a > 1 then x = a end; if a > 100 then x[2] = a end return 1 end,
  function(a) local x; if a > 1 then x = a end; if a > 100 then x[a] = a end return 1 end,
  function(a) local x; if a > 1 then x = a end; if a > 100 then return x(a) end return 1 end,
  function(a) local x; if a > 1 then x = a end; if a > 100 then return x:m(a) end return 1 end,
  function(a) local x = a > 1 and a; if a > 100 then return x.y end return 1 end,
  function(a) local x = a > 1 and a; if a > 100 then return x(1) end return 1 end,
  function(a) local x = a > 1 and a or nil; return x and x.y end,
  function(a) local x = a; if a > 100 then return x.y end return 1 end,
  function(a) if a > 100 then a.f = 2 end return a end,
  function(a) if a > 100 then return a:m() end return a end,
  function(a) if a > 100 then return K.n.x end return a end,
  function(a) if a > 100 then return U[1] end return a end,
  function(a) if a > 100 then U.z = a end return a end,
  function(a, A) if a > 100 then return A[1].x end return a end,
  function(a, A) if a > 100 then A[2][1] = 5 end return a end,
  function(a) local t; if a > 100 then t = 1 end; return (t or {}).x end,
}

test("indexing or calling a number or a number-or-nil: compiles, Lua's error when run", function()
  local A = kjit.arange(3)
  for i, f in ipairs(maybe_forms) do
    for _, a in ipairs { 1, 2.5, 101, 101.5, 1e300 } do
      local ok, err = pcall(D.check, f, a, A)
      if not ok then error("form " .. i .. ", a = " .. a .. ": " .. tostring(err), 0) end
    end
  end
  -- the messages themselves (D.check compares them with the interpreter's)
  D.check_error("attempt to index a number value (local 'x')", maybe_forms[1], 101)
  local function nil_side(a) local x; if a > 200 then x = a end; if a > 100 then return x.y end return 1 end
  local function false_side(a) local x = a > 200 and a; if a > 100 then return x.y end return 1 end
  local function false_call(a) local x = a > 200 and a; if a > 100 then return x(a) end return 1 end
  D.check_error("attempt to index a nil value (local 'x')", nil_side, 150)
  D.check_error("attempt to index a number value (local 'x')", nil_side, 250)
  D.check_error("attempt to index a boolean value (local 'x')", false_side, 150)
  D.check_error("attempt to call a boolean value (local 'x')", false_call, 150)
  D.check_error("attempt to call a number value (local 'x')", false_call, 250.5)
  D.check_error("attempt to index a number value (field 'n')", maybe_forms[15], 101)
  D.check_error("attempt to index a number value (upvalue 'U')", maybe_forms[16], 101)
  D.check_error("attempt to index a number value (upvalue 'U')", maybe_forms[17], 101)
  D.check_error("attempt to index a number value (local 'a')", maybe_forms[13], 101)
end)

-- difffuzz (session 19, the dynamic and tablib families; found/
-- string-number-order-compile-error.lua, found/too-few-arguments-compile-error.lua):
-- a string ordered with a number, and a library function given too few
-- arguments, were compile errors ("attempt to compare string with number",
-- "bad argument #2 to 'table.insert' (number expected, got no value)")
-- even where the code does not run; they raise Lua's own message where it runs
local function str_lt(a) if a > 100 then return "10" < a end return a end
local function str_ge(a) if a > 100 then return a >= "10" end return a end
local function str_gt_bool(a) local b = a > 1; if a > 100 then return "a" > b end return a end
local function str_le_array(a, B) if a > 100 then return "a" <= B end return a end
local function insert_one(a, A) A[1] = a; if a > 100 then table.insert({}) end return a end
local function sqrt_none(a) if a > 100 then return math.sqrt() end return a end
local function remove_none(a) if a > 100 then return table.remove() end return a end
local function rep_one(a) if a > 100 then return #string.rep("x") end return a end
local function tonumber_none(a) if a > 100 then return tonumber() end return a end
local function assert_none(a) if a > 100 then assert() end return a end
local function max_none(a) if a > 100 then return math.max() end return a end

test("a string ordered with a number, too few arguments: raised where they run", function()
  for _, f in ipairs({ str_lt, str_ge, str_gt_bool, insert_one, sqrt_none, remove_none, rep_one,
                       tonumber_none, assert_none, max_none }) do
    D.cases(f, {1, kjit.zeros(2)}, {2.5, kjit.zeros(2)})
  end
  D.cases(str_le_array, {1, kjit.zeros(2)})
  D.check_error("attempt to compare string with number", str_lt, 101)
  D.check_error("attempt to compare string with number", str_ge, 101.5)
  D.check_error("attempt to compare boolean with string", str_gt_bool, 101)
  D.check_error("attempt to compare string with kjit.array", str_le_array, 101, kjit.zeros(2))
  D.check_error("wrong number of arguments to 'insert'", insert_one, 101, kjit.zeros(2))
  D.check_error("bad argument #1 to 'sqrt' (number expected, got no value)", sqrt_none, 101)
  D.check_error("bad argument #1 to 'remove' (table expected, got no value)", remove_none, 101)
  D.check_error("bad argument #2 to 'rep' (number expected, got no value)", rep_one, 101)
  D.check_error("bad argument #1 to 'tonumber' (value expected)", tonumber_none, 101)
  D.check_error("bad argument #1 to 'assert' (value expected)", assert_none, 101)
  D.check_error("bad argument #1 to 'max' (value expected)", max_none, 101)
end)

-- difffuzz (session 19, the dynamic family; found/function-arith-compile-error.lua,
-- found/string-arith-bool-message.lua): arithmetic or an order comparison
-- on a known function (math.abs, a local function) was a compile error
-- where the code does not run; a constant string with nil or a boolean
-- said "attempt to perform arithmetic on a boolean value" where the string
-- library's metamethod says "attempt to idiv a 'boolean' with a 'string'"
local function g_fn() end
local function fn_add(a) if a > 100 then return math.abs + a end return a end
local function fn_unm(a) if a > 100 then return -g_fn end return a end
local function fn_lt(a) if a > 100 then return "10" < math.abs end return a end
local function fn_le(a) if a > 100 then return a <= g_fn end return a end
local function fn_two(a) if a > 100 then return math.abs < math.max end return a end
local function str_bool(a) local b = a > 1; if a > 100 then return b // "2" end return a end
local function str_nil(a) local z; if a > 100 then return "2" - z end return a end
local function str_fn(a) if a > 100 then return "2" * math.abs end return a end
-- (difffuzz program 1291: a function first, a number-or-nil second)
local function fn_maybe(a) local z = a > 1 and a or nil; if a > 100 then return math.abs ^ z end return a end

test("arithmetic and order on known functions; a string with nil or a boolean", function()
  for _, f in ipairs({ fn_add, fn_unm, fn_lt, fn_le, fn_two, str_bool, str_nil, str_fn, fn_maybe }) do
    D.cases(f, {1}, {2.5})
  end
  D.check_error("attempt to perform arithmetic on a function value (field 'abs')", fn_add, 101)
  D.check_error("attempt to perform arithmetic on a function value (upvalue 'g_fn')", fn_unm, 101)
  D.check_error("attempt to compare string with function", fn_lt, 101)
  D.check_error("attempt to compare number with function", fn_le, 101)
  D.check_error("attempt to compare two function values", fn_two, 101)
  D.check_error("attempt to idiv a 'boolean' with a 'string'", str_bool, 101)
  D.check_error("attempt to sub a 'string' with a 'nil'", str_nil, 101)
  D.check_error("attempt to mul a 'string' with a 'function'", str_fn, 101)
  D.check_error("attempt to perform arithmetic on a function value (field 'abs')", fn_maybe, 101)
end)

-- The rules above raise Lua's error only where neither operand's type has
-- the metamethod: debug.setmetatable can give numbers, nil, booleans and
-- functions one, which the interpreter then calls (luaT_trybinTM,
-- luaT_callorderTM; a string's arithmetic through lstrlib.c trymt). Under
-- such metatables each function must compute the interpreter's result
-- compiled, or be refused (a compile error): never raise what the
-- interpreter does not. (On a0c3f0f: "attempt to compare string with
-- number" where the numbers' __lt ran, and the like.)
local function nil_lt(a) local z; if a > 100 then return z < a end return a end
local function num_lt_fn(a) if a > 100 then return a < g_fn end return a end
local function nil_add(a) local z; if a > 100 then return a + z end return a end
local function bool_unm(a) local b = a > 1; if a > 100 then return -b end return a end
local function num_len(a) if a > 100 then return #a end return a end

test("type metatables (debug.setmetatable): their metamethods run, as interpreted", function()
  local function tag(name) return function(x, y) return name end end
  local function mt(events)
    local m = {}
    for _, e in ipairs(events) do m["__" .. e] = tag(e) end
    return m
  end
  local all = { "add", "sub", "mul", "div", "mod", "pow", "idiv", "unm", "lt", "le", "len" }
  local setups = {
    { "numbers", 0 }, { "nil", nil }, { "booleans", true }, { "functions", print },
  }
  local cases = { str_lt, str_ge, str_gt_bool, fn_add, fn_unm, fn_lt, fn_le, fn_two, str_bool,
                  str_nil, str_fn, fn_maybe, nil_lt, num_lt_fn, nil_add, bool_unm, num_len }
  for _, s in ipairs(setups) do
    local ok, err = pcall(function()
      debug.setmetatable(s[2], mt(all))
      for i, f in ipairs(cases) do
        for _, a in ipairs({ 101, 101.5 }) do
          local want = table.pack(pcall(f, a))
          local got = table.pack(pcall(kjit.jit(f), a))
          local what = s[1] .. " with a metatable, case " .. i .. "(" .. a .. ")"
          if got[1] then
            truthy(want[1], what .. ": compiled returned, interpreted raised " .. tostring(want[2]))
            eq(got.n, want.n, what .. ": results")
            for k = 2, want.n do truthy(same_value(got[k], want[k]), what .. ": result " .. (k - 1)) end
          else
            -- refused, or the interpreter's own error
            truthy(tostring(got[2]):find("compile error", 1, true) or
                   (not want[1] and tostring(got[2]) == tostring(want[2])),
                   what .. ": compiled raised " .. tostring(got[2]) .. "; interpreted " ..
                   tostring(want[2]))
          end
        end
      end
    end)
    debug.setmetatable(s[2], nil)
    if not ok then error(err, 0) end
  end
end)

-- difffuzz (session 20, found/string-maybe-order-compile-error.lua): a
-- constant string or a known function ordered with a number-or-nil (or
-- -false) was a compile error ("attempt to compare string with number")
-- even where the code does not run; it raises Lua's message where it runs,
-- naming what the number-or-nil holds then
local function str_maybe_lt(a) local z; if a > 1 then z = a end if a < 0 or a > 100 then return "a" < z end return a end
local function maybe_ge_str(a) local z; if a > 1 then z = a end if a < 0 or a > 100 then return z >= "a" end return a end
local function fn_maybe_lt(a) local z; if a > 1 then z = a end if a < 0 or a > 100 then return z < math.abs end return a end
local function maybe_le_fn(a) local z; if a > 1 then z = a end if a < 0 or a > 100 then return g_fn <= z end return a end
local function false_le_str(a) local z = a > 1 and a; if a < 0 or a > 100 then return z <= "x" end return a end

test("a string or a function ordered with a number-or-nil: raised where it runs", function()
  for _, f in ipairs({ str_maybe_lt, maybe_ge_str, fn_maybe_lt, maybe_le_fn, false_le_str }) do
    D.cases(f, {1}, {2.5}, {101}, {-1}, {-0.5})
  end
  D.check_error("attempt to compare string with number", str_maybe_lt, 101)
  D.check_error("attempt to compare string with nil", str_maybe_lt, -1)
  D.check_error("attempt to compare string with nil", maybe_ge_str, -0.5)
  D.check_error("attempt to compare number with function", fn_maybe_lt, 101.5)
  D.check_error("attempt to compare nil with function", fn_maybe_lt, -1)
  D.check_error("attempt to compare function with nil", maybe_le_fn, -1)
  D.check_error("attempt to compare boolean with string", false_le_str, -1)
  D.check_error("attempt to compare number with string", false_le_str, 101)
end)

-- ... and under type metatables (debug.setmetatable gives nil and numbers
-- an __lt and __le, which the interpreter then calls): compiled, the same
-- results, or refused; never Lua's order error where the metamethod runs
test("a string or a function ordered with a number-or-nil, under type metatables", function()
  local mt = { __lt = function() return true end, __le = function() return false end }
  for _, v in ipairs({ 0, nil }) do
    local ok, err = pcall(function()
      debug.setmetatable(v, mt)
      for i, f in ipairs({ str_maybe_lt, maybe_ge_str, fn_maybe_lt, maybe_le_fn, false_le_str }) do
        for _, a in ipairs({ 101, 101.5, -1 }) do
          local want = table.pack(pcall(f, a))
          local got = table.pack(pcall(kjit.jit(f), a))
          local what = tostring(v) .. "'s metatable, case " .. i .. "(" .. a .. ")"
          if got[1] then
            truthy(want[1], what .. ": compiled returned, interpreted raised " .. tostring(want[2]))
            eq(got.n, want.n, what .. ": results")
            for k = 2, want.n do eq(got[k], want[k], what .. ": result " .. (k - 1)) end
          else
            truthy(tostring(got[2]):find("compile error", 1, true) or
                   (not want[1] and tostring(got[2]) == tostring(want[2])),
                   what .. ": compiled raised " .. tostring(got[2]) .. "; interpreted " ..
                   tostring(want[2]))
          end
        end
      end
    end)
    debug.setmetatable(v, nil)
    if not ok then error(err, 0) end
  end
end)

-- Indexing, assigning into and calling nil, a boolean or a number-or-nil
-- while debug.setmetatable gave its type __index, __newindex or __call:
-- the interpreter calls the metamethod; compiled code raised Lua's "attempt
-- to index a nil value" (session 21, found/nil-index-metamethod.lua). Now
-- refused where the type has the metamethod, compiled as before where it
-- has none (then the same error as interpreted)
local function nil_index(a) local u; if a > 100 then return u.f end return a end
local function bool_index(a) local u = a > 1; if a > 100 then return u[a] end return a end
local function maybe_index(a) local u; if a < 0 then u = a end if a > 100 then return u.f end return a end
local function nil_call(a) local u; if a > 100 then return u(a) end return a end
local function bool_call(a) local u = a > 1; if a > 100 then return u(a) end return a end
local function nil_newindex(a) local u; if a > 100 then u.f = a end return a end
local function bool_method(a) local u = a > 1; if a > 100 then return u:m(a) end return a end

test("nil and booleans under type metatables: indexed and called as interpreted, or refused", function()
  local cases = { nil_index, bool_index, maybe_index, nil_call, bool_call, nil_newindex, bool_method }
  local mt = { __index = function(t, k) if k == "m" then return function(s, x) return x * 3 end end return 42 end,
               __call = function(s, x) return x + 1 end,
               __newindex = function(t, k, v) rawset(_G, "kjit_test_newindex", v) end }
  for vi = 1, 2 do
    local v = ({ [2] = false })[vi]   -- nil, then false
    for _, with in ipairs({ true, false }) do
      local ok, err = pcall(function()
        if with then debug.setmetatable(v, mt) end
        for i, f in ipairs(cases) do
          for _, a in ipairs({ 101, 101.5, 2 }) do
            local want = table.pack(pcall(f, a))
            local got = table.pack(pcall(kjit.jit(f), a))
            local what = tostring(v) .. (with and "'s metatable" or " without one") .. ", case " .. i .. "(" .. a .. ")"
            if got[1] then
              truthy(want[1], what .. ": compiled returned, interpreted raised " .. tostring(want[2]))
              eq(got.n, want.n, what .. ": results")
              for k = 2, want.n do eq(got[k], want[k], what .. ": result " .. (k - 1)) end
            else
              truthy(tostring(got[2]):find("compile error", 1, true) or
                     (not want[1] and tostring(got[2]) == tostring(want[2])),
                     what .. ": compiled raised " .. tostring(got[2]) .. "; interpreted " ..
                     tostring(want[2]))
              -- without a metatable nothing is refused: the same error as interpreted
              if not with then eq(tostring(got[2]), tostring(want[2]), what) end
            end
          end
        end
      end)
      debug.setmetatable(v, nil)
      if not ok then error(err, 0) end
    end
  end
end)

-- difffuzz (session 20, found/ipairs-nil-refused.lua): ipairs() said "bad
-- argument #0 to 'ipairs'" when compiling, and ipairs of nil, a number, a
-- boolean, a string, a function or a table read from an upvalue was
-- refused; the library function is called where it runs: ipairs() raises
-- "bad argument #1", the iterator "attempt to index a nil value" (no
-- position: a C function raises it) on the loop's first turn
local IP = { 3, 4.5, 5, x = 1 }
local function ipairs_none(a) if a > 100 then for _ in ipairs() do end end return a end
local function ipairs_nil(a) local s = 0; if a > 100 then for i in ipairs(nil) do s = s + i end end return s end
local function ipairs_num(a) local s = 0; if a > 100 then for i in ipairs(a) do s = s + i end end return s end
local function ipairs_bool(a) local s = 0; if a > 100 then for i in ipairs(a > 1) do s = s + i end end return s end
local function ipairs_str(a) local s = 0; for i, v in ipairs("abc") do s = s + i end return s + a end
local function ipairs_fn(a) if a > 100 then for _ in ipairs(math.abs) do end end return a end
local function ipairs_maybe(a) local z; if a > 1 then z = a end; if a > 100 or a < 0 then for _ in ipairs(z) do end end return a end
local function ipairs_upval(a) local s = 0; for i, v in ipairs(IP) do s = s + i * v end return s + a end
local function ipairs_value(a) if a > 100 then local f, t, i = ipairs(nil); return i end return a end

test("ipairs of no value, nil, a number, a string, an upvalue table: as interpreted", function()
  for _, f in ipairs({ ipairs_none, ipairs_nil, ipairs_num, ipairs_bool, ipairs_str, ipairs_fn,
                       ipairs_maybe, ipairs_upval, ipairs_value }) do
    D.cases(f, {1}, {2.5}, {-1})
  end
  D.check_error("bad argument #1 to 'ipairs' (value expected)", ipairs_none, 101)
  D.check_error("attempt to index a nil value", ipairs_nil, 101)
  D.check_error("attempt to index a number value", ipairs_num, 101.5)
  D.check_error("attempt to index a boolean value", ipairs_bool, 101)
  D.check_error("attempt to index a function value", ipairs_fn, 101)
  D.check_error("attempt to index a number value", ipairs_maybe, 101)
  D.check_error("attempt to index a nil value", ipairs_maybe, -1)
  D.check(ipairs_value, 101)
  assert(ipairs_upval(0) == 3 + 9 + 15 and D.jit(ipairs_upval)(0) == 27)
end)
