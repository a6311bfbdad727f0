# tests.cmake: every tests/lua/test_*.lua file and every tests/c/test_*.c
# program is one ctest test. Lua tests run with lua5.4 (never `lua`, which
# LuaRocks may point at 5.1) and write their counts to test-results/.
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/test-results)
file(GLOB KJIT_LUA_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/lua/test_*.lua)
set(KJIT_TEST_ENV "")
if(KJIT_SANITIZE)
  # lua5.4 itself is not instrumented: preload the sanitizer runtimes.
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                  OUTPUT_VARIABLE ASAN_LIB OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libubsan.so
                  OUTPUT_VARIABLE UBSAN_LIB OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(KJIT_TEST_ENV "LD_PRELOAD=${ASAN_LIB}:${UBSAN_LIB}"
      "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
      "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()
foreach(t ${KJIT_LUA_TESTS})
  get_filename_component(n ${t} NAME_WE)
  add_test(NAME lua.${n}
           COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/lua/harness.lua
                   ${CMAKE_BINARY_DIR} ${t} ${CMAKE_BINARY_DIR}/test-results/${n}.txt
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(lua.${n} PROPERTIES ENVIRONMENT "${KJIT_TEST_ENV}" TIMEOUT 900)
endforeach()

# The bytecode pipeline (src/codegen/, switched on by KJIT_PIPELINE=bytecode):
# the test files that pass fully under it run a second time as ir.<name>.
# An explicit list: it grows until the switch-over. (test_jit_errors and
# test_jit_regress check refusals of the source-text front end that the
# bytecode pipeline does not have.) test_ir_codegen skips under the old
# pipeline.
set(KJIT_IR_TESTS test_jit_diff_arith test_jit_diff_buffers test_jit_diff_calls
    test_jit_diff_control test_jit_diff_f32 test_jit_diff_loops test_jit_diff_math
    test_jit_diff_multret test_jit_diff_opts test_jit_fuzz test_jit_api test_ir_codegen
    test_prange test_jit_pure test_reduce test_vectorize test_guvectorize test_tooling
    test_readme test_cache test_sources test_ir_versioning test_jit_errors test_jit_regress
    test_hostile)
set(KJIT_IR_ENV ${KJIT_TEST_ENV} KJIT_PIPELINE=bytecode)
# cuda.jit kernels through the bytecode pipeline (NVPTX checked by ptxas, the simulator run)
list(APPEND KJIT_IR_TESTS test_cuda_kernels test_cuda_host test_array_gpu test_bench_gpu
     test_bench_kernels)
# hooks reach compiled code (polls: the bytecode pipeline's generator only)
list(APPEND KJIT_IR_TESTS test_interrupt_hooks)
list(APPEND KJIT_IR_TESTS test_signatures)
foreach(n ${KJIT_IR_TESTS})
  add_test(NAME ir.${n}
           COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/lua/harness.lua
                   ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}/tests/lua/${n}.lua
                   ${CMAKE_BINARY_DIR}/test-results/ir.${n}.txt
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(ir.${n} PROPERTIES ENVIRONMENT "${KJIT_IR_ENV}" TIMEOUT 900)
endforeach()

# C tests that compile through kjit.jit or kjit_compile, run a second time
# under the bytecode pipeline (test_interrupt's end-to-end part needs its
# polls; test_loadbuffer sets the switch itself)
set(KJIT_IR_C_TESTS test_interrupt test_threads test_capi test_alloc_fail test_cpu)
file(GLOB KJIT_C_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/c/test_*.c)
foreach(t ${KJIT_C_TESTS})
  get_filename_component(n ${t} NAME_WE)
  # C tests link the objects directly, so they can test internal stages.
  add_executable(${n} ${t} $<TARGET_OBJECTS:kjit_objs>)
  target_link_libraries(${n} PRIVATE ${LUA_LINK_LIBRARIES} ${KJIT_LINK_LIBS})
  target_include_directories(${n} PRIVATE ${CMAKE_SOURCE_DIR}/include ${LUA_INCLUDE_DIRS})
  target_include_directories(${n} SYSTEM PRIVATE ${LLVM_INCLUDE_DIR})
  set_target_properties(${n} PROPERTIES BUILD_RPATH "${KJIT_RPATH}")
  target_include_directories(${n} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(${n} PRIVATE -Wall -Wextra)
  if(KJIT_SANITIZE)
    target_compile_options(${n} PRIVATE ${KJIT_SAN_FLAGS})
    target_link_options(${n} PRIVATE ${KJIT_SAN_FLAGS})
  endif()
  add_test(NAME c.${n} COMMAND ${n} ${CMAKE_BINARY_DIR}/test-results/${n}.txt
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # C tests of compiled code run under the bytecode pipeline too (ir.<name>)
  if(n IN_LIST KJIT_IR_C_TESTS)
    add_test(NAME ir.${n} COMMAND ${n} ${CMAKE_BINARY_DIR}/test-results/ir.${n}.txt
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(ir.${n} PROPERTIES ENVIRONMENT "KJIT_PIPELINE=bytecode")
  endif()
endforeach()

# A fake CUDA driver over host memory (libmockcuda.so in the build dir):
# tests/lua/test_cuda_host.lua loads it through KJIT_LIBCUDA in a
# subprocess, so the driver path runs and is checked without a GPU.
add_library(mockcuda SHARED ${CMAKE_SOURCE_DIR}/tests/c/mock_libcuda.c)
target_compile_options(mockcuda PRIVATE -Wall -Wextra)
target_link_libraries(mockcuda PRIVATE pthread)
set_target_properties(mockcuda PROPERTIES C_VISIBILITY_PRESET hidden)
if(KJIT_SANITIZE)
  target_compile_options(mockcuda PRIVATE ${KJIT_SAN_FLAGS})
  target_link_options(mockcuda PRIVATE ${KJIT_SAN_FLAGS})
endif()

# The longest tests start first (ctest learns costs from earlier runs in
# the same build dir; a fresh build has none), so that -j keeps every core
# busy to the end instead of waiting on one long test started last.
set_tests_properties(lua.test_jit_fuzz lua.test_prange c.test_alloc_fail
                     lua.test_bench_gpu lua.test_reduce lua.test_hostile
                     lua.test_guvectorize lua.test_jit_api
                     ir.test_jit_errors ir.test_hostile
                     PROPERTIES COST 1000)
