# fftw.cmake: FFTW 3 (double and single precision) for kjit.fft and for
# kjit.cuda.fft in the simulator (src/libs/fft_host.c). Optional: found at
# configure time; without it (or with -DKJIT_FFTW=OFF) kjit builds and those
# calls raise an error that names the package to install.
option(KJIT_FFTW "Use FFTW 3 for kjit.fft when it is found" ON)
set(KJIT_HAVE_FFTW OFF)
if(KJIT_FFTW)
  find_path(FFTW_INCLUDE_DIR fftw3.h)
  find_library(FFTW_LIBRARY fftw3)
  find_library(FFTWF_LIBRARY fftw3f)
  if(FFTW_INCLUDE_DIR AND FFTW_LIBRARY AND FFTWF_LIBRARY)
    set(KJIT_HAVE_FFTW ON)
    target_compile_definitions(kjit_objs PRIVATE KJIT_HAVE_FFTW)
    target_include_directories(kjit_objs SYSTEM PRIVATE ${FFTW_INCLUDE_DIR})
    # not linked: fft_host.c opens these on the first transform (loading
    # them with kjit.so cost every require "kjit" 0.55 ms)
    get_filename_component(KJIT_FFTW_REAL ${FFTW_LIBRARY} REALPATH)
    get_filename_component(KJIT_FFTWF_REAL ${FFTWF_LIBRARY} REALPATH)
    set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/libs/fft_host.c APPEND PROPERTY COMPILE_DEFINITIONS
                 "KJIT_FFTW_LIB=\"${KJIT_FFTW_REAL}\"" "KJIT_FFTWF_LIB=\"${KJIT_FFTWF_REAL}\"")
  endif()
endif()
message(STATUS "kjit: FFTW for kjit.fft: ${KJIT_HAVE_FFTW} (${FFTW_LIBRARY})")
