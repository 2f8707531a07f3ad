# Global Arrays (Debian: libglobalarrays-dev libarmci-mpi-dev libscalapack-openmpi-dev), used
# by bench/ as a peer column and by tests/ for the "Coming from Global Arrays" table. GA's
# static libraries are per MPI flavour. Defines the INTERFACE target garray_ga (with
# ScaLAPACK, LAPACK, BLAS and gfortran on its link line) when everything is found;
# GARRAY_HAVE_GA tells whether it was.
if(TARGET garray_ga)  # already included by another directory
  set(GARRAY_HAVE_GA ON)
  return()
endif()
if(MPI_CXX_HEADER_DIR MATCHES "openmpi" OR MPI_CXX_LIBRARY_VERSION_STRING MATCHES "Open MPI")
  set(_ga_flavour openmpi)
else()
  set(_ga_flavour mpich)
endif()
find_library(GARRAY_GA_LIB ga-${_ga_flavour})
find_library(GARRAY_ARMCI_LIB armci-${_ga_flavour})
find_library(GARRAY_SCALAPACK_LIB scalapack-${_ga_flavour})
find_library(GARRAY_LAPACK_LIB lapack)
find_library(GARRAY_BLAS_LIB blas)
find_library(GARRAY_GFORTRAN_LIB gfortran PATHS /usr/lib/gcc/x86_64-linux-gnu/12)
find_path(GARRAY_GA_INCLUDE ga.h)
if(GARRAY_GA_LIB AND GARRAY_ARMCI_LIB AND GARRAY_SCALAPACK_LIB AND GARRAY_LAPACK_LIB AND GARRAY_BLAS_LIB
   AND GARRAY_GFORTRAN_LIB AND GARRAY_GA_INCLUDE)
  add_library(garray_ga INTERFACE)
  target_include_directories(garray_ga INTERFACE ${GARRAY_GA_INCLUDE})
  target_link_libraries(garray_ga INTERFACE ${GARRAY_GA_LIB} ${GARRAY_ARMCI_LIB} ${GARRAY_SCALAPACK_LIB}
                        ${GARRAY_LAPACK_LIB} ${GARRAY_BLAS_LIB} ${GARRAY_GFORTRAN_LIB})
  set(GARRAY_HAVE_GA ON)
else()
  set(GARRAY_HAVE_GA OFF)
  set(_ga_missing "")
  foreach(_v GARRAY_GA_LIB GARRAY_ARMCI_LIB GARRAY_SCALAPACK_LIB GARRAY_LAPACK_LIB GARRAY_BLAS_LIB
             GARRAY_GFORTRAN_LIB GARRAY_GA_INCLUDE)
    if(NOT ${_v})
      list(APPEND _ga_missing ${_v})
    endif()
  endforeach()
  # said once per configure: test_ga_compat then runs its garray half only, and bench/ has
  # no GA column (Debian 12 has libscalapack-mpich-dev, not among the packages README installs)
  get_property(_ga_said GLOBAL PROPERTY GARRAY_GA_SAID)
  if(NOT _ga_said)
    set_property(GLOBAL PROPERTY GARRAY_GA_SAID ON)
    message(STATUS "garray: Global Arrays (${_ga_flavour}) not usable, missing ${_ga_missing}: "
                   "test_ga_compat checks garray's half only, bench/ runs without the GA column")
  endif()
endif()
