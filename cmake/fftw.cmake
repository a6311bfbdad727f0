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
    list(APPEND KJIT_LINK_LIBS ${FFTW_LIBRARY} ${FFTWF_LIBRARY})
  endif()
endif()
message(STATUS "kjit: FFTW for kjit.fft: ${KJIT_HAVE_FFTW} (${FFTW_LIBRARY})")
