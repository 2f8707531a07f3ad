# garray::io against an HDF5 built WITHOUT MPI (issue 14, bad input "HDF5 built without
# MPI"): test_io_serial_hdf5 compiles garray_io's sources against the serial HDF5 (Debian: libhdf5-dev,
# headers in /usr/include/hdf5/serial) instead of the parallel one garray_io uses, and runs at
# np 2 under mpiexec: every way into garray::io throws io::FileError naming the file and
# saying HDF5 lacks MPI, on every rank, with files and arrays unchanged.
#
# The serial HDF5 is looked up on its own (the main FindHDF5 result is the parallel one and
# stays so): pkg-config's hdf5-serial (Debian, Ubuntu) first, then hdf5.h under
# GARRAY_SERIAL_HDF5_ROOT or the usual places; a header whose H5pubconf.h defines
# H5_HAVE_PARALLEL is rejected. Not found: a configure message and the test reports itself
# skipped. Set GARRAY_SERIAL_HDF5_INCLUDE_DIR / GARRAY_SERIAL_HDF5_LIBRARY to choose one.
option(GARRAY_TEST_SERIAL_HDF5 "Test garray::io against a serial HDF5 (libhdf5-dev) when installed" ON)
if(NOT GARRAY_TEST_SERIAL_HDF5)
  return()
endif()

set(garray_h5s_hint_inc)
set(garray_h5s_hint_lib)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(GARRAY_H5S QUIET hdf5-serial)
  if(GARRAY_H5S_FOUND)
    set(garray_h5s_hint_inc ${GARRAY_H5S_INCLUDE_DIRS})
    set(garray_h5s_hint_lib ${GARRAY_H5S_LIBRARY_DIRS})
  endif()
endif()
set(GARRAY_SERIAL_HDF5_ROOT "" CACHE PATH "Prefix of an HDF5 built without MPI (for test_io_serial_hdf5)")
# Only the hinted places first: a default search could return the parallel headers.
find_path(GARRAY_SERIAL_HDF5_INCLUDE_DIR hdf5.h
          HINTS ${garray_h5s_hint_inc} ${GARRAY_SERIAL_HDF5_ROOT}/include
          PATHS /usr/include/hdf5/serial
          NO_DEFAULT_PATH)
find_path(GARRAY_SERIAL_HDF5_INCLUDE_DIR hdf5.h)  # e.g. /usr/include/hdf5.h elsewhere (checked below)
find_library(GARRAY_SERIAL_HDF5_LIBRARY NAMES hdf5 hdf5_serial
             HINTS ${garray_h5s_hint_lib} ${GARRAY_SERIAL_HDF5_ROOT}/lib
             PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/hdf5/serial
             NO_DEFAULT_PATH)
find_library(GARRAY_SERIAL_HDF5_LIBRARY NAMES hdf5_serial hdf5)

set(garray_h5s_why "")
if(NOT GARRAY_SERIAL_HDF5_INCLUDE_DIR OR NOT GARRAY_SERIAL_HDF5_LIBRARY)
  set(garray_h5s_why "serial HDF5 not found (apt-get install libhdf5-dev)")
elseif(NOT EXISTS ${GARRAY_SERIAL_HDF5_INCLUDE_DIR}/H5pubconf.h)
  set(garray_h5s_why "${GARRAY_SERIAL_HDF5_INCLUDE_DIR} has no H5pubconf.h")
else()
  file(STRINGS ${GARRAY_SERIAL_HDF5_INCLUDE_DIR}/H5pubconf.h garray_h5s_par REGEX "^#define H5_HAVE_PARALLEL ")
  if(garray_h5s_par)
    set(garray_h5s_why "the HDF5 in ${GARRAY_SERIAL_HDF5_INCLUDE_DIR} is built with MPI")
  endif()
endif()

if(garray_h5s_why)
  message(STATUS "garray: ${garray_h5s_why}: test_io_serial_hdf5 (garray::io without parallel HDF5) skipped")
  add_test(NAME test_io_serial_hdf5.np2
           COMMAND ${CMAKE_COMMAND} -E echo "test_io_serial_hdf5: ${garray_h5s_why}: skipped")
  set_tests_properties(test_io_serial_hdf5.np2 PROPERTIES SKIP_REGULAR_EXPRESSION "skipped" LABELS mpi)
  return()
endif()
message(STATUS "garray: test_io_serial_hdf5 uses the serial HDF5 ${GARRAY_SERIAL_HDF5_INCLUDE_DIR} "
               "(${GARRAY_SERIAL_HDF5_LIBRARY})")

# Not linked with garray_io (that is the parallel HDF5): garray_io's own sources
# (GARRAY_IO_SOURCES: array/src/io.cpp and the per-type instantiation units) are compiled
# into the test against the serial HDF5, with the array layer and the serial library.
garray_test_binary(test_io_serial_hdf5 io/serial_hdf5.cpp ${GARRAY_IO_SOURCES})
target_include_directories(test_io_serial_hdf5 SYSTEM BEFORE PRIVATE ${GARRAY_SERIAL_HDF5_INCLUDE_DIR})
target_include_directories(test_io_serial_hdf5 PRIVATE ${PROJECT_SOURCE_DIR}/array/src)
target_link_libraries(test_io_serial_hdf5 PRIVATE ${GARRAY_SERIAL_HDF5_LIBRARY})
garray_add_mpi_test(test_io_serial_hdf5 RANKS 2 TIMEOUT 60)
