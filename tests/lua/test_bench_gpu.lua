-- The GPU benchmark kernels (bench/gpu/bench_gpu.lua) compute the right
-- results: the script checks each kernel's output against values worked out
-- on the host and prints "# MISMATCH ..." when one is wrong. Here it runs
-- in the compiled CUDA simulator (KJIT_BENCH_SIM=1: small sizes, no GPU
-- needed); on the GPU machine bench/gpu/run_gpu.sh runs it for real and
-- shows the same lines. CUDA C and numba-cuda peers check the same values.
-- This is no timing test: the timings printed in the simulator mean nothing.
local moddir = arg[1]

local function run_sim()
  local cmd = string.format("KJIT_BENCH_SIM=1 LUA_CPATH=%q lua5.4 bench/gpu/bench_gpu.lua 2>&1; echo \"exit $?\"",
    moddir .. "/?.so;;")
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

local out = run_sim()

test("the GPU benchmark script runs to the end in the simulator", function()
  truthy(out:find("\nexit 0\n$"), "exit status 0; output:\n" .. out)
end)

test("every GPU benchmark kernel's result is checked and right", function()
  truthy(not out:find("# MISMATCH"), "no mismatch; output:\n" .. out)
  for _, name in ipairs{ "saxpy_2^28_f32", "mandelbrot_4096_f32", "stencil_8192_f32",
                         "block_reduce_2^26_f32", "reduce_sum_2^28_f64", "vectorize_saxpy_2^28_f32" } do
    truthy(out:find("\n" .. name:gsub("%^", "%%^") .. "\t"), name .. " was measured; output:\n" .. out)
  end
end)

-- bench/gpu/libs.lua (run_libs.sh's kjit side): gemm and the FFTs checked
-- against kjit.blas and kjit.fft on the host, in the simulator
test("the GPU library benchmark runs and its results are right in the simulator", function()
  local cmd = string.format("KJIT_BENCH_SIM=1 LUA_CPATH=%q lua5.4 bench/gpu/libs.lua 2>&1; echo \"exit $?\"",
    moddir .. "/?.so;;")
  local p = assert(io.popen(cmd))
  local o = p:read("a")
  p:close()
  truthy(o:find("\nexit 0\n$"), "exit status 0; output:\n" .. o)
  truthy(not o:find("# MISMATCH"), "no mismatch; output:\n" .. o)
  for _, name in ipairs{ "gemm_f32_16", "gemm_f64_16", "fft_f32_1d_64", "rfft_f32_1d_64_plan",
                         "rfftn_f32_3d_8" } do
    truthy(o:find("\n" .. name .. "\t"), name .. " was measured; output:\n" .. o)
  end
end)
