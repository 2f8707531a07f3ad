# garray::io tests (issue 14), included by tests/CMakeLists.txt when parallel HDF5 was found.
#
#   test_io.np1-4            round trips, bad input, the failure rule (tests/io/*.cpp); also
#                            test_io.rma.np2/3 (GARRAY_WINDOW=rma) and test_io.mixed (mixed windows)
#   io_interop               np 3 writes cross.h5; h5py/NumPy check it; h5dump -H shows the
#                            layout; h5py writes py.h5 and garray reads it (interop.sh)
#   io_cross_read.np1/2/4    cross.h5 (written at np 3) read at other rank counts (fixture)
#   laplace_checkpoint_restart  SIGKILLed laplace runs restarted from checkpoints (checkpoint.sh)
#
# Rank counts: GARRAY_TEST_IO_RANKS (tests/CMakeLists.txt). Under MPICH every one of them runs
# with the yield-when-idle module preloaded (GARRAY_TEST_YIELD_ENV).
garray_test_binary(test_io io/roundtrip.cpp io/bad_input.cpp io/interop.cpp io/guide_files.cpp io/node_local.cpp)
target_link_libraries(test_io PRIVATE garray_io)
# Bad input and injected faults make HDF5 fail on purpose: its error stack must never be
# printed (garray turns HDF5's printing off and reports through exceptions).
garray_add_mpi_test(test_io TIMEOUT 120 RANKS ${GARRAY_TEST_IO_RANK_LIST} ENV "${GARRAY_TEST_YIELD_ENV}"
                    FAIL_REGEX "HDF5-DIAG")
# ... over RMA windows and mixed windows too: on shared windows a put is a memory copy, so
# "io::write completes every rank's outstanding puts first" could not fail there
garray_add_mpi_test(test_io VARIANT rma TIMEOUT 120 RANKS 2 3 ENV "GARRAY_WINDOW=rma;${GARRAY_TEST_YIELD_ENV}"
                    FAIL_REGEX "HDF5-DIAG")
garray_add_mpi_test(test_io VARIANT mixed TIMEOUT 120 RANKS ${GARRAY_MIXED_TOP}
                    ENV "${GARRAY_MIXED_ENV};${GARRAY_TEST_YIELD_ENV}" FAIL_REGEX "HDF5-DIAG")
# Deferred cleanups at MPI_Finalize run in one order on every rank (a hang at finalize, caught
# by the timeout, otherwise): the case alone in its process (bad_input.cpp)
garray_add_mpi_test(test_io VARIANT finalize_order TIMEOUT 60 RANKS 2 ENV "${GARRAY_TEST_YIELD_ENV}"
                    ARGS "-tc=*left for MPI_Finalize*" "--no-skip" FAIL_REGEX "HDF5-DIAG")
if(TARGET garray_mpich_yield)
  add_dependencies(test_io garray_mpich_yield)
endif()

# The interpreter with h5py and NumPy: Debian's /usr/bin/python3 (another python3 may come
# first on PATH without them).
set(GARRAY_H5PY_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with h5py and NumPy for the garray::io interop tests")
execute_process(COMMAND ${GARRAY_H5PY_PYTHON} -c "import h5py, numpy" RESULT_VARIABLE garray_h5py_rc
                OUTPUT_QUIET ERROR_QUIET)
find_program(GARRAY_H5DUMP h5dump)
set(garray_io_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;${GARRAY_TEST_YIELD_ENV}")
set(garray_io_dir ${CMAKE_CURRENT_BINARY_DIR}/io_files)
if(NOT garray_h5py_rc EQUAL 0 OR NOT GARRAY_H5DUMP)
  message(STATUS "garray: no ${GARRAY_H5PY_PYTHON} with h5py and NumPy or no h5dump (apt-get install python3-h5py "
                 "python3-numpy hdf5-tools): io interop and checkpoint tests skipped")
elseif(NOT "3" IN_LIST GARRAY_TEST_IO_RANK_LIST)
  # (the np 3 writer is the fixture of the cross reads)
else()
  add_test(NAME io_interop
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/io/interop.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:test_io>
                   ${GARRAY_H5PY_PYTHON} ${GARRAY_H5DUMP} ${garray_io_dir})
  set_tests_properties(io_interop PROPERTIES TIMEOUT 180 PROCESSORS 3 LABELS mpi FIXTURES_SETUP garray_io_cross
                       PASS_REGULAR_EXPRESSION "interop: pass"
                       FAIL_REGULAR_EXPRESSION "${GARRAY_SANITIZER_FAIL_REGEX}" ENVIRONMENT "${garray_io_env}")
  foreach(np IN ITEMS 1 2 4)
    if(NOT np IN_LIST GARRAY_TEST_IO_RANK_LIST)
      continue()
    endif()
    add_test(NAME io_cross_read.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS} $<TARGET_FILE:test_io>
                     ${MPIEXEC_POSTFLAGS} "-tc=io fixture: read*")
    set_tests_properties(io_cross_read.np${np} PROPERTIES TIMEOUT 120 PROCESSORS ${np} LABELS mpi
                         FIXTURES_REQUIRED garray_io_cross
                         ENVIRONMENT "${garray_io_env};GARRAY_IO_STAGE=read;GARRAY_IO_DIR=${garray_io_dir}")
  endforeach()
  if(TARGET laplace AND "4" IN_LIST GARRAY_TEST_IO_RANK_LIST)
    add_test(NAME laplace_checkpoint_restart
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/io/checkpoint.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:laplace>
                     ${GARRAY_H5PY_PYTHON} ${CMAKE_CURRENT_BINARY_DIR}/checkpoint_files)
    set_tests_properties(laplace_checkpoint_restart PROPERTIES TIMEOUT 300 PROCESSORS 4 LABELS mpi
                         PASS_REGULAR_EXPRESSION "checkpoint/restart: pass"
                         FAIL_REGULAR_EXPRESSION "${GARRAY_SANITIZER_FAIL_REGEX}" ENVIRONMENT "${garray_io_env}")
  endif()
endif()
