# tests/mpi/tests.cmake: kjit.mpi under mpirun at 1, 2, 3 and 4 ranks, each
# with a time limit (a hang is a failure, never a stuck CI). Oversubscribed
# (Open MPI's --oversubscribe: more ranks than cores), and allowed as root
# (Open MPI's documented OMPI_ALLOW_RUN_AS_ROOT variables: CI containers).
# Without an MPI, one test says why nothing ran (ctest shows it skipped).
if(NOT KJIT_MPI_BUILT)
  add_test(NAME mpi.skipped
           COMMAND sh -c "echo 'kjit.mpi tests skipped: ${KJIT_MPI_WHY}'; exit 77")
  set_tests_properties(mpi.skipped PROPERTIES SKIP_RETURN_CODE 77)
  return()
endif()
execute_process(COMMAND ${KJIT_MPIEXEC} --version OUTPUT_VARIABLE mpiexec_v ERROR_QUIET)
set(KJIT_MPI_OPTS "")
if(mpiexec_v MATCHES "Open MPI|OpenRTE")
  set(KJIT_MPI_OPTS --oversubscribe)
endif()
set(KJIT_MPI_ENV ${KJIT_TEST_ENV} "LUA_CPATH=${CMAKE_BINARY_DIR}/?.so\;\;"
    "LUA_PATH=${CMAKE_BINARY_DIR}/?.lua\;\;" OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    "KJIT_TEST_MPI_CACHE=${CMAKE_BINARY_DIR}/mpi-cache")
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/mpi-cache)
foreach(np 1 2 3 4)
  # every call on every dtype, Lua values, requests through full GCs,
  # device arrays (simulator), pool, compile_once
  add_test(NAME mpi.calls.np${np}
           COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np ${np} ${LUA_EXE} -l kjit.mpi.run
                   ${CMAKE_SOURCE_DIR}/tests/mpi/test_calls.lua
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # the heat example against the one-rank run, bit for bit
  add_test(NAME mpi.heat.np${np}
           COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np ${np} ${LUA_EXE} -l kjit.mpi.run
                   ${CMAKE_SOURCE_DIR}/examples/heat_mpi.lua 61 37 40 --check
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # the same with the exchange overlapped (isend/irecv while the inner rows
  # are computed) and the time split printed (--profile)
  add_test(NAME mpi.heat_overlap.np${np}
           COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np ${np} ${LUA_EXE} -l kjit.mpi.run
                   ${CMAKE_SOURCE_DIR}/examples/heat_mpi.lua 61 37 40 --check --overlap --profile
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # an error on one rank ends the job with the rank and the message
  add_test(NAME mpi.failure.np${np}
           COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/mpi/check_failure.lua ${CMAKE_BINARY_DIR}
                   ${np} run ${KJIT_MPI_OPTS}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # the GPU variant (device arrays, cuda.jit stencil; the simulator here)
  add_test(NAME mpi.heat_gpu.np${np}
           COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np ${np} ${LUA_EXE} -l kjit.mpi.run
                   ${CMAKE_SOURCE_DIR}/examples/heat_mpi.lua 23 19 6 --check --gpu
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # device arrays of the driver path (the mock driver), staged through host memory
  add_test(NAME mpi.device_mock.np${np}
           COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np ${np} ${LUA_EXE} -l kjit.mpi.run
                   ${CMAKE_SOURCE_DIR}/tests/mpi/test_device_mock.lua
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(mpi.calls.np${np} mpi.heat.np${np} mpi.heat_overlap.np${np}
                       mpi.failure.np${np} mpi.heat_gpu.np${np}
                       PROPERTIES ENVIRONMENT "${KJIT_MPI_ENV}" TIMEOUT 180)
  # (KJIT_NCCL=0: without NCCL, whatever this machine has: the fallback)
  set_tests_properties(mpi.device_mock.np${np} PROPERTIES TIMEOUT 180 ENVIRONMENT
                       "${KJIT_MPI_ENV};KJIT_LIBCUDA=${CMAKE_BINARY_DIR}/libmockcuda.so;KJIT_NCCL=0")
  set_tests_properties(mpi.heat.np${np} mpi.heat_gpu.np${np} PROPERTIES
                       PASS_REGULAR_EXPRESSION "bit-identical")
  set_tests_properties(mpi.heat_overlap.np${np} PROPERTIES
                       PASS_REGULAR_EXPRESSION "bit-identical")
endforeach()
# overlapped with one or two rows per rank: no inner rows, the edge rows
# of the grid on the first and last ranks
add_test(NAME mpi.heat_overlap_thin.np4
         COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np 4 ${LUA_EXE} -l kjit.mpi.run
                 ${CMAKE_SOURCE_DIR}/examples/heat_mpi.lua 6 9 12 --check --overlap
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mpi.heat_overlap_thin.np4 PROPERTIES ENVIRONMENT "${KJIT_MPI_ENV}" TIMEOUT 180
                     PASS_REGULAR_EXPRESSION "bit-identical")
# the same when the driver gives no page-locked memory: ordinary memory
add_test(NAME mpi.device_mock_nopin.np2
         COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np 2 ${LUA_EXE} -l kjit.mpi.run
                 ${CMAKE_SOURCE_DIR}/tests/mpi/test_device_mock.lua
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mpi.device_mock_nopin.np2 PROPERTIES TIMEOUT 180 ENVIRONMENT
                     "${KJIT_MPI_ENV};KJIT_LIBCUDA=${CMAKE_BINARY_DIR}/libmockcuda.so;KJIT_NCCL=0;MOCK_CUDA_FAIL=cuMemHostAlloc")
# NCCL collectives on device arrays: the mock driver and the mock NCCL
# (tests/c/mock_libnccl.c: files as its transport, in build/mock-nccl)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/mock-nccl)
foreach(np 2 3)
  add_test(NAME mpi.nccl_mock.np${np}
           COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np ${np} ${LUA_EXE} -l kjit.mpi.run
                   ${CMAKE_SOURCE_DIR}/tests/mpi/test_nccl_mock.lua
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(mpi.nccl_mock.np${np} PROPERTIES FIXTURES_REQUIRED mock_nccl TIMEOUT 180 ENVIRONMENT
                       "${KJIT_MPI_ENV};KJIT_LIBCUDA=${CMAKE_BINARY_DIR}/libmockcuda.so;KJIT_NCCL=${CMAKE_BINARY_DIR}/libmocknccl.so;MOCK_NCCL_DIR=${CMAKE_BINARY_DIR}/mock-nccl;MOCK_NCCL_LOG=${CMAKE_BINARY_DIR}/mock-nccl/log.np${np};MOCK_NCCL_TIMEOUT=60;MOCK_NCCL_FAIL_COUNT=7777")
endforeach()
# NCCL that loads but cannot make a communicator: MPI instead, on every rank
add_test(NAME mpi.nccl_mock_initfail.np2
         COMMAND ${KJIT_MPIEXEC} ${KJIT_MPI_OPTS} -np 2 ${LUA_EXE} -l kjit.mpi.run
                 ${CMAKE_SOURCE_DIR}/tests/mpi/test_nccl_mock.lua
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mpi.nccl_mock_initfail.np2 PROPERTIES FIXTURES_REQUIRED mock_nccl TIMEOUT 180 ENVIRONMENT
                     "${KJIT_MPI_ENV};KJIT_LIBCUDA=${CMAKE_BINARY_DIR}/libmockcuda.so;KJIT_NCCL=${CMAKE_BINARY_DIR}/libmocknccl.so;MOCK_NCCL_DIR=${CMAKE_BINARY_DIR}/mock-nccl;MOCK_NCCL_LOG=${CMAKE_BINARY_DIR}/mock-nccl/log.initfail;MOCK_NCCL_FAIL=ncclCommInitRank")
# the mock's files (a folder per NCCL communicator), once both have run
add_test(NAME mpi.nccl_mock.cleanup
         COMMAND sh -c "rm -rf '${CMAKE_BINARY_DIR}/mock-nccl'/mocknccl.*")
set_tests_properties(mpi.nccl_mock.cleanup PROPERTIES FIXTURES_CLEANUP mock_nccl)
# the same through the kjit-mpirun script
add_test(NAME mpi.failure.kjit-mpirun
         COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/mpi/check_failure.lua ${CMAKE_BINARY_DIR}
                 3 script ${KJIT_MPI_OPTS}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# and without the launcher: the failed rank exits with status 1 without
# finalizing MPI, and mpirun ends the job
add_test(NAME mpi.failure.plain
         COMMAND ${LUA_EXE} ${CMAKE_SOURCE_DIR}/tests/mpi/check_failure.lua ${CMAKE_BINARY_DIR}
                 3 plain ${KJIT_MPI_OPTS}
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mpi.failure.kjit-mpirun mpi.failure.plain PROPERTIES
                     ENVIRONMENT "${KJIT_MPI_ENV}" TIMEOUT 180)
