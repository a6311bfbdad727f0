# kjit.mpi (src/mpi/): the MPI binding, a Lua module of its own
# (<build>/kjit/mpi.so, require "kjit.mpi"), compiled with the flags of the
# MPI found by find_package(MPI), which asks the MPI compiler wrapper
# (mpicc -showme / -show): MPI implementations differ in ABI, so the module
# is built for one of them. It links nothing of kjit (kjit_ext.h).
# Optional: without an MPI it is skipped, with a message saying so.
option(KJIT_MPI "Build kjit.mpi when an MPI is found" ON)
set(KJIT_MPI_BUILT OFF)
set(KJIT_MPI_WHY "")
if(NOT KJIT_MPI)
  set(KJIT_MPI_WHY "KJIT_MPI=OFF")
else()
  find_package(MPI COMPONENTS C QUIET)
  if(NOT MPI_C_FOUND)
    set(KJIT_MPI_WHY "no MPI found (Debian: apt-get install openmpi-bin libopenmpi-dev, or "
        "bash tools/setup.sh; or pass -DMPI_C_COMPILER=<path of mpicc>)")
    string(CONCAT KJIT_MPI_WHY ${KJIT_MPI_WHY})
  endif()
endif()
if(KJIT_MPI_WHY)
  message(STATUS "kjit: kjit.mpi not built: ${KJIT_MPI_WHY}")
else()
  set(KJIT_MPI_BUILT ON)
  find_program(KJIT_MPIEXEC NAMES ${MPIEXEC_EXECUTABLE} mpiexec mpirun)
  add_library(kjit_mpi MODULE ${CMAKE_SOURCE_DIR}/src/mpi/lmpi.c
              ${CMAKE_SOURCE_DIR}/src/mpi/lmpi_coll.c ${CMAKE_SOURCE_DIR}/src/mpi/lmpi_pack.c
              ${CMAKE_SOURCE_DIR}/src/mpi/lmpi_lua.c ${CMAKE_SOURCE_DIR}/src/mpi/lmpi_stage.c
              ${CMAKE_SOURCE_DIR}/src/mpi/lmpi_nccl.c
              # kjit's one search for CUDA libraries (stateless C): NCCL is found as
              # cuBLAS is (KJIT_NCCL, CUDA_HOME, /usr/local/cuda, pip's nvidia/nccl)
              ${CMAKE_SOURCE_DIR}/src/libs/libfind.c)
  target_include_directories(kjit_mpi PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
                             ${LUA_INCLUDE_DIRS})
  target_link_libraries(kjit_mpi PRIVATE MPI::MPI_C dl)
  target_compile_options(kjit_mpi PRIVATE -Wall -Wextra)
  # never unloaded (lua_close dlcloses C modules): MPI is finalized at
  # exit, by code of this module (src/mpi/lmpi.c, exit_handler)
  target_link_options(kjit_mpi PRIVATE -Wl,-z,nodelete)
  set_target_properties(kjit_mpi PROPERTIES OUTPUT_NAME mpi PREFIX ""
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/kjit
                        C_VISIBILITY_PRESET hidden)
  # kjit.mpi.run (the launcher module) and kjit-mpirun, next to it in the build
  configure_file(${CMAKE_SOURCE_DIR}/src/mpi/run.lua ${CMAKE_BINARY_DIR}/kjit/mpi/run.lua COPYONLY)
  configure_file(${CMAKE_SOURCE_DIR}/src/mpi/kjit-mpirun ${CMAKE_BINARY_DIR}/kjit-mpirun COPYONLY)
  set(KJIT_INSTALL_CMODDIR "lib/lua/5.4" CACHE STRING
      "Where kjit.so goes, relative to the prefix or absolute (Lua's default: lib/lua/5.4)")
  set(KJIT_INSTALL_LMODDIR "share/lua/5.4" CACHE STRING
      "Where kjit/mpi/run.lua goes, relative to the prefix or absolute")
  # OPTIONAL: a build that made only some targets (--target kjit_module)
  # still installs; tests/sh/test_install.sh expects mpi.so where it was built
  install(TARGETS kjit_mpi LIBRARY DESTINATION ${KJIT_INSTALL_CMODDIR}/kjit OPTIONAL)
  install(FILES ${CMAKE_SOURCE_DIR}/src/mpi/run.lua DESTINATION ${KJIT_INSTALL_LMODDIR}/kjit/mpi)
  install(PROGRAMS ${CMAKE_SOURCE_DIR}/src/mpi/kjit-mpirun DESTINATION bin)
endif()
