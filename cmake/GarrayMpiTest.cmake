# garray_add_mpi_test(<target> [RANKS 1 2 3 4] [VARIANT name ENV "A=B;C=D"] [TIMEOUT s] [ARGS a b]
#                     [FAIL_REGEX re])
#
# Registers <target> under ctest once per rank count (default: GARRAY_TEST_RANK_LIST, from
# the cache string GARRAY_TEST_RANKS, "1,2,3,4"), launched with mpiexec. The environment
# lets Open MPI run as root and oversubscribe the 2-core CI machine; MPICH ignores these
# variables. With VARIANT, the tests are named <target>.<variant>.np<n> and get
# the extra environment (e.g. GARRAY_WINDOW=rma to exercise the MPI RMA path). ARGS go to
# the test binary (e.g. a doctest filter). FAIL_REGEX: output matching it fails the test even
# when every check passed (e.g. "HDF5-DIAG": an HDF5 error stack garray should have kept quiet).
# Under MPICH, runs at more ranks than 2 also get GARRAY_TEST_YIELD_ENV (tests/CMakeLists.txt:
# the yield-when-idle module, without which 3-4 busy-polling ranks on 2 cores take minutes).
# garray_yield_env(<var> <np>): sets <var> to GARRAY_TEST_YIELD_ENV for a run at more than 2
# ranks, else to nothing (also for launches that are not garray_add_mpi_test's).
function(garray_yield_env var np)
  set(${var} "" PARENT_SCOPE)
  if(np GREATER 2)
    set(${var} "${GARRAY_TEST_YIELD_ENV}" PARENT_SCOPE)
  endif()
endfunction()

function(garray_add_mpi_test target)
  cmake_parse_arguments(ARG "" "VARIANT;TIMEOUT;FAIL_REGEX" "RANKS;ENV;ARGS" ${ARGN})
  if(NOT ARG_RANKS)
    set(ARG_RANKS ${GARRAY_TEST_RANK_LIST})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set(name ${target})
  if(ARG_VARIANT)
    set(name ${target}.${ARG_VARIANT})
  endif()
  foreach(np IN LISTS ARG_RANKS)
    set(env "${ARG_ENV}")
    garray_yield_env(yield ${np})
    if(yield AND NOT env MATCHES "LD_PRELOAD")
      list(APPEND env "${yield}")
      add_dependencies(${target} garray_mpich_yield)  # building one test target builds the module
    endif()
    add_test(NAME ${name}.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
                     $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
    set_tests_properties(${name}.np${np} PROPERTIES
      PROCESSORS ${np} TIMEOUT ${ARG_TIMEOUT} LABELS mpi
      ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;${env}")
    # doctest exits 0 when a -tc/-sf filter matches nothing: a renamed test case must not
    # turn its registration into a silent pass
    set(fail "\\[doctest\\] test cases: +0 \\|")
    if(ARG_FAIL_REGEX)
      list(APPEND fail "${ARG_FAIL_REGEX}")
    endif()
    set_tests_properties(${name}.np${np} PROPERTIES FAIL_REGULAR_EXPRESSION "${fail}")
  endforeach()
endfunction()
