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
  # allocator_may_return_null: a huge request (docs/guide/allocation.md's
  # big(1 << 40)) gets NULL, which kjit turns into "not enough memory", as
  # without ASan, instead of ASan's abort
  set(KJIT_TEST_ENV "LD_PRELOAD=${ASAN_LIB}:${UBSAN_LIB}"
      "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
      "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()
if(KJIT_LLVM_STUBS)
  # test_cache.lua: LLVM (libLLVM or kjit_llvm.so) must then be absent from
  # processes that never compile
  list(APPEND KJIT_TEST_ENV "KJIT_TEST_LLVM_DLOPEN=1")
endif()
foreach(t ${KJIT_LUA_TESTS})
  get_filename_component(n ${t} NAME_WE)
  add_test(NAME lua.${n}
           COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/lua/harness.lua
                   ${CMAKE_BINARY_DIR} ${t} ${CMAKE_BINARY_DIR}/test-results/${n}.txt
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(lua.${n} PROPERTIES ENVIRONMENT "${KJIT_TEST_ENV}" TIMEOUT 900)
endforeach()

# A Lua test file run again as test lua.<name> under extra environment
# settings (a switch that takes another route through kjit: the Lua API
# instead of direct stack access, a CPU feature off, a tier forced).
function(kjit_lua_test_again name file env)
  add_test(NAME lua.${name}
           COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/lua/harness.lua
                   ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}/tests/lua/${file}.lua
                   ${CMAKE_BINARY_DIR}/test-results/${name}.txt
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(lua.${name} PROPERTIES
                       ENVIRONMENT "${KJIT_TEST_ENV};${env}" TIMEOUT 900)
endfunction()

# Chains of table arithmetic (tests/lua/test_chains.lua) again with chains
# off (KJIT_NO_CHAINS=1): each operation alone, the same results.
kjit_lua_test_again(test_chains_off test_chains "KJIT_NO_CHAINS=1")
# Loops whose bounds' kind is known at run time only (tests/lua/
# test_for_kinds.lua) again as one copy (KJIT_NO_KIND_SPLIT=1).
kjit_lua_test_again(test_for_kinds_one test_for_kinds "KJIT_NO_KIND_SPLIT=1")
# Small numeric leaves called from table code (tests/lua/test_leaf_inline.lua)
# again as real calls (KJIT_NO_LEAF_INLINE=1, backend/cpu.c).
kjit_lua_test_again(test_leaf_inline_off test_leaf_inline "KJIT_NO_LEAF_INLINE=1")

# The call path again with its arguments read through the Lua API only
# (KJIT_NO_STACK_READS=1, host/lua_stack.h): both ways differential.
kjit_lua_test_again(test_call_path_api test_call_path "KJIT_NO_STACK_READS=1")

# The routes of specializations that cannot fail (host/jit.c native_call0,
# jit_call) again through the Lua API only: native_slow, jit_call_slow.
kjit_lua_test_again(test_native0_api test_native0 "KJIT_NO_STACK_READS=1")

# f16 again as for a CPU without F16C (KJIT_TEST_NO_F16C=1, backend/cpu.c):
# compiled code converts halves through runtime/halfrt.c's routines.
kjit_lua_test_again(test_f16_nof16c test_f16 "KJIT_TEST_NO_F16C=1")

# The table fast paths again with compiled code's slots written through
# the Lua API only (no direct stack writes: runtime/luatable.c copy_to_slot)
kjit_lua_test_again(test_tables_fast_api test_tables_fast "KJIT_NO_STACK_READS=1")

# Tiered compiles (host/jit.c): by default most test functions run their
# first tier (few calls each); these files again with the tier forced each
# way: KJIT_TIER=0 (every compile full tier) and KJIT_TIER=first (every
# compile the first tier, f:compile's included, never tiered up).
foreach(n test_jit_diff_loops test_jit_diff_buffers test_jit_errors test_jit_regress_loops)
  foreach(tier 0 first)
    add_test(NAME lua.${n}_tier${tier}
             COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/lua/harness.lua
                     ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}/tests/lua/${n}.lua
                     ${CMAKE_BINARY_DIR}/test-results/${n}_tier${tier}.txt
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(lua.${n}_tier${tier} PROPERTIES
                         ENVIRONMENT "${KJIT_TEST_ENV};KJIT_TIER=${tier}" TIMEOUT 900)
  endforeach()
endforeach()

# Nests without polls where they fit a period (src/codegen/cg_pollfree.c)
# at each tier forced: the copy at the full tier and in optnone code.
kjit_lua_test_again(test_poll_free_tier0 test_poll_free "KJIT_TIER=0")
kjit_lua_test_again(test_poll_free_tierfirst test_poll_free "KJIT_TIER=first")

file(GLOB KJIT_C_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/c/test_*.c)
foreach(t ${KJIT_C_TESTS})
  get_filename_component(n ${t} NAME_WE)
  # Both kinds write test-results/<name>.txt: one name, two tests, one file.
  if(TEST lua.${n})
    message(FATAL_ERROR "tests/c/${n}.c and tests/lua/${n}.lua share a name (and a results file): rename one")
  endif()
  # C tests link the objects directly, so they can test internal stages.
  # (and libLLVM, which tests such as test_cpu.c call themselves; kjit's
  # own calls still go through its stubs, KJIT_LLVM_DLOPEN; in the static
  # build the tests' calls go through them too, to kjit_llvm.so)
  add_executable(${n} ${t} $<TARGET_OBJECTS:kjit_objs> ${KJIT_STUB_OBJS})
  if(KJIT_LLVM_BACKEND)
    add_dependencies(${n} kjit_llvm)
  endif()
  target_link_libraries(${n} PRIVATE ${LUA_LINK_LIBRARIES} ${KJIT_LINK_LIBS} ${KJIT_TEST_LLVM_LIBS})
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

# A fake cuBLAS over the fake driver's memory (libmockcublas.so):
# tests/lua/test_blas.lua loads it through KJIT_CUBLAS in a subprocess, so
# src/libs/blas_cuda.c's argument mapping is checked without a GPU.
add_library(mockcublas SHARED ${CMAKE_SOURCE_DIR}/tests/c/mock_libcublas.c)
target_compile_options(mockcublas PRIVATE -Wall -Wextra)
target_link_libraries(mockcublas PRIVATE pthread m dl)
set_target_properties(mockcublas PROPERTIES C_VISIBILITY_PRESET hidden)
if(KJIT_SANITIZE)
  target_compile_options(mockcublas PRIVATE ${KJIT_SAN_FLAGS})
  target_link_options(mockcublas PRIVATE ${KJIT_SAN_FLAGS})
endif()

# A fake NCCL over the fake driver's memory (libmocknccl.so): the kjit.mpi
# tests under mpirun (tests/mpi/tests.cmake) load it through KJIT_NCCL.
add_library(mocknccl SHARED ${CMAKE_SOURCE_DIR}/tests/c/mock_libnccl.c)
target_compile_options(mocknccl PRIVATE -Wall -Wextra)
target_link_libraries(mocknccl PRIVATE pthread dl)
set_target_properties(mocknccl PROPERTIES C_VISIBILITY_PRESET hidden)

# The longest tests start first (ctest learns costs from earlier runs in
# the same build dir; a fresh build has none), so that -j keeps every core
# busy to the end instead of waiting on one long test started last.
set_tests_properties(lua.test_jit_fuzz lua.test_prange c.test_alloc_fail
                     lua.test_bench_gpu lua.test_reduce lua.test_hostile
                     lua.test_guvectorize lua.test_jit_api lua.test_jit_errors
                     PROPERTIES COST 1000)

# The differential fuzzer (tests/difffuzz/README.md): random programs run
# interpreted and compiled, in worker processes (crashes and hangs are
# caught). Fixed seeds, so a failure is a regression or a new bug. Every
# family runs ("-": none left out); a family that hits a bug being fixed
# goes in KJIT_DIFFFUZZ_WITHOUT (a comma list) with a comment naming the
# bug and a reproducer in tests/difffuzz/found/. Fewer programs under the
# sanitizers (about 10 times slower).
set(KJIT_DIFFFUZZ_WITHOUT "-")
if(KJIT_SANITIZE)
  set(KJIT_DIFFFUZZ_COUNT 300)
else()
  set(KJIT_DIFFFUZZ_COUNT 2000)
endif()
add_test(NAME difffuzz
         COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/difffuzz/run.lua
                 --build ${CMAKE_BINARY_DIR} --seed 1 --count ${KJIT_DIFFFUZZ_COUNT}
                 --jobs 2 --levels 1 --without ${KJIT_DIFFFUZZ_WITHOUT} --lua ${LUA_EXE}
                 --out ${CMAKE_BINARY_DIR}/difffuzz-failures
                 --results ${CMAKE_BINARY_DIR}/test-results/difffuzz.txt
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(difffuzz PROPERTIES ENVIRONMENT "${KJIT_TEST_ENV}" TIMEOUT 1800 COST 1000)
include(${CMAKE_SOURCE_DIR}/tests/mpi/tests.cmake)

# A fake cuFFT over the fake driver's memory (libmockcufft.so): a direct DFT
# over cuFFT's advanced layout, so tests/lua/test_fft.lua checks how
# kjit.cuda.fft maps a transform onto cuFFT plans without a GPU.
add_library(mockcufft SHARED ${CMAKE_SOURCE_DIR}/tests/c/mock_libcufft.c)
target_compile_options(mockcufft PRIVATE -Wall -Wextra)
target_link_libraries(mockcufft PRIVATE m)
set_target_properties(mockcufft PROPERTIES C_VISIBILITY_PRESET hidden)
if(KJIT_SANITIZE)
  target_compile_options(mockcufft PRIVATE ${KJIT_SAN_FLAGS})
  target_link_options(mockcufft PRIVATE ${KJIT_SAN_FLAGS})
endif()

# A fake cuRAND over the fake driver's memory (libmockcurand.so): its
# numbers are a hash of seed and position, the same for host and device
# generators, and it checks each call's context, stream and output range,
# so tests/lua/test_random.lua runs kjit.cuda.random.generator's device
# path, and cuda.close() under it, without a GPU.
add_library(mockcurand SHARED ${CMAKE_SOURCE_DIR}/tests/c/mock_libcurand.c)
target_compile_options(mockcurand PRIVATE -Wall -Wextra)
target_link_libraries(mockcurand PRIVATE pthread m dl)
set_target_properties(mockcurand PROPERTIES C_VISIBILITY_PRESET hidden)
if(KJIT_SANITIZE)
  target_compile_options(mockcurand PRIVATE ${KJIT_SAN_FLAGS})
  target_link_options(mockcurand PRIVATE ${KJIT_SAN_FLAGS})
endif()

# The inline table paths again without direct stack writes (kls_on 0): a
# table read where it is indexed next then takes its helper, not the
# inline copy (codegen/cg_lua.c inline_get)
kjit_lua_test_again(test_tables_inline_api test_tables_inline "KJIT_NO_STACK_READS=1")
kjit_lua_test_again(test_table_kept_tier0 test_table_kept "KJIT_TIER=0")

# Arrays indexed through Lua values (tests/lua/test_table_arrays.lua) again
# without direct stack reads (kls_on 0): no kjit array views
# (codegen/cg_luaview.c), the helpers for every element
kjit_lua_test_again(test_table_arrays_api test_table_arrays "KJIT_NO_STACK_READS=1")

# Integral float keys and live tables read once a call
# (tests/lua/test_table_keys.lua) again through the Lua API only
kjit_lua_test_again(test_table_keys_api test_table_keys "KJIT_NO_STACK_READS=1")

# Frames, constructors and tree walks (tests/lua/test_frames.lua) again
# through the Lua API only (KJIT_NO_STACK_READS=1: no direct frame opens,
# slot copies, constructor stores or reads; host/lua_stack.h).
kjit_lua_test_again(test_frames_api test_frames "KJIT_NO_STACK_READS=1")

# The call protocol of methods and function values (tests/lua/test_callproto.lua)
# again through the Lua API only (KJIT_NO_STACK_READS=1: no method hints, no
# direct calls read in place; host/lua_stack.h).
kjit_lua_test_again(test_callproto_api test_callproto "KJIT_NO_STACK_READS=1")

# The native call protocol (tests/lua/test_nativecall.lua) again through the
# Lua API only (KJIT_NO_STACK_READS=1: no native calls, the slow path alone).
kjit_lua_test_again(test_nativecall_api test_nativecall "KJIT_NO_STACK_READS=1")
# ... and the native calls of open calls, returns and spread calls
# (tests/lua/test_callsite_open.lua) the same way.
kjit_lua_test_again(test_callsite_open_api test_callsite_open "KJIT_NO_STACK_READS=1")
# ... and a call site's second native callee (tests/lua/test_callsite_classes.lua).
kjit_lua_test_again(test_callsite_classes_api test_callsite_classes "KJIT_NO_STACK_READS=1")

# The entry wrapper's frames and table arguments (tests/lua/test_entry_frames.lua)
# again through the Lua API only (KJIT_NO_STACK_READS=1: kjit_lv_open and
# kjit_lv_ptr, the inline paths' cold side).
kjit_lua_test_again(test_entry_frames_api test_entry_frames "KJIT_NO_STACK_READS=1")

# Upvalues compiled code assigns, read and written in place
# (tests/lua/test_upvalue_sites.lua) again through the Lua API only
# (KJIT_NO_STACK_READS=1: the helpers' path, no site cache filled).
kjit_lua_test_again(test_upvalue_sites_api test_upvalue_sites "KJIT_NO_STACK_READS=1")

# Function literals left to the interpreter (tests/lua/test_interp_literals.lua)
# again with the main-chunk rule off (KJIT_INTERP_CHUNKS=0,
# host/chunkpolicy.c): the chunks it would leave to the interpreter compile,
# so that their differential checks compare compiled code again.
kjit_lua_test_again(test_interp_literals_compiled test_interp_literals "KJIT_INTERP_CHUNKS=0")

# Small callers under the default callee policy (tests/lua/test_small_callers.lua)
# again through the Lua API only (KJIT_NO_STACK_READS=1: no native calls).
kjit_lua_test_again(test_small_callers_api test_small_callers "KJIT_NO_STACK_READS=1")

# Dead call results' slots (tests/lua/test_slowprogs.lua) again through the
# Lua API only (KJIT_NO_STACK_READS=1: slots cleared by kjit_lv_setnil,
# codegen/cg_lua.c cg_lua_kill_after).
kjit_lua_test_again(test_slowprogs_api test_slowprogs "KJIT_NO_STACK_READS=1")

# Generic for over closure iterators, upvalues written in place, inline
# field reads (tests/lua/test_iter_closures.lua) again through the Lua API
# only (KJIT_NO_STACK_READS=1: upvalues through lua_getupvalue and
# lua_setupvalue, x == nil through lua_isnil).
kjit_lua_test_again(test_iter_closures_api test_iter_closures "KJIT_NO_STACK_READS=1")

# Methods that make tables (tests/lua/test_ctor.lua) again through the Lua
# API only (KJIT_NO_STACK_READS=1: constructors and setmetatable without
# the in-place stack reads; host/lua_stack.h).
kjit_lua_test_again(test_ctor_api test_ctor "KJIT_NO_STACK_READS=1")

# The class pattern's short paths (tests/lua/test_class_paths.lua) again
# through the Lua API only (KJIT_NO_STACK_READS=1: no in-place setmetatable
# or method hints; the constructor's fields still laid out as interpreted).
kjit_lua_test_again(test_class_paths_api test_class_paths "KJIT_NO_STACK_READS=1")

# Tables made and walked inline (tests/lua/test_tables_made.lua) again
# without direct stack access (kls_on 0): every constructor's list, slot
# copy and read that goes on as a value takes its helper
kjit_lua_test_again(test_tables_made_api test_tables_made "KJIT_NO_STACK_READS=1")

# The cheaper call paths of function values (tests/lua/test_callpath.lua)
# again through the Lua API only (KJIT_NO_STACK_READS=1: no native calls,
# no interpreted-site marks; the fixed-parameter trampolines still).
kjit_lua_test_again(test_callpath_api test_callpath "KJIT_NO_STACK_READS=1")
# ... and with native calls made inline by the caller's code
# (KJIT_INLINE_CALLS=1: codegen/cg_callvalue.c native_inline, off by default).
kjit_lua_test_again(test_callpath_inline test_callpath "KJIT_INLINE_CALLS=1")
# Tables compiled code writes, read live across compiles (test_class_write)
# again through the Lua API (KJIT_NO_STACK_READS=1: the call-value caches'
# other route, which a retired specialization must leave too).
kjit_lua_test_again(test_class_write_api test_class_write "KJIT_NO_STACK_READS=1")
