# laplace --reproducible prints the same error= bits at np 1, 2, 3 and 4, for every variant
# and for several process grids (issue 15). Run with cmake -P:
#   -DMPIEXEC=... -DNPFLAG=-n -DPREFLAGS="--oversubscribe;--allow-run-as-root" -DLAPLACE=path
#   [-DMAXNP=k: only the runs with at most k ranks (GARRAY_TEST_RANKS' largest)]
# Also checks (--check) that every step's error equals the serial exact reference.
set(runs
  "1|auto" "2|auto" "2|1x2" "3|auto" "3|1x3" "4|auto" "4|4x1" "4|1x4")
foreach(variant IN ITEMS kernel fused numpy)
  set(first "")
  foreach(run IN LISTS runs)
    string(REPLACE "|" ";" parts "${run}")
    list(GET parts 0 np)
    list(GET parts 1 grid)
    if(DEFINED MAXNP AND np GREATER MAXNP)
      continue()
    endif()
    execute_process(
      COMMAND ${MPIEXEC} ${NPFLAG} ${np} ${PREFLAGS} ${LAPLACE} --nx 41 --ny 29 --iters 25 --init hash
              --variant ${variant} --grid ${grid} --reproducible --check --quiet
      OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "laplace ${variant} np=${np} grid=${grid} failed (${rc}):\n${out}\n${err}")
    endif()
    string(REGEX MATCH "error=[^\n]*" e "${out}")
    string(REGEX MATCH "check=[^\n]*" c "${out}")
    if(NOT c STREQUAL "check=pass")
      message(FATAL_ERROR "laplace ${variant} np=${np} grid=${grid}: ${c}")
    endif()
    message(STATUS "${variant} np=${np} grid=${grid}: ${e}")
    if(first STREQUAL "")
      set(first "${e}")
      if(NOT DEFINED all_first)
        set(all_first "${e}")
      elseif(NOT e STREQUAL all_first)
        message(FATAL_ERROR "laplace ${variant}: ${e} but kernel printed ${all_first}")
      endif()
    elseif(NOT e STREQUAL first)
      message(FATAL_ERROR "laplace ${variant} np=${np} grid=${grid}: ${e} but np=1 printed ${first}")
    endif()
  endforeach()
endforeach()
message(STATUS "laplace_reproducible: pass (${all_first} everywhere)")
