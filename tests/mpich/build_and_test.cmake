# mpich.build_and_test's body (cmake -P): configure the MPICH tree, build it at -j2, run its
# MPI tests. Not `ctest --build-and-test`: that runs the make program itself with MAKEFLAGS
# cleared, so the tree built serially (measured: one compiler at a time, ~550 s in CI,
# twice the -j2 time). Variables: SRC, BIN, GEN, MAKE, JOBS, and OPTIONS (configure options,
# separated by '|').
string(REPLACE "|" ";" opts "${OPTIONS}")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -G ${GEN} -DCMAKE_MAKE_PROGRAM=${MAKE} ${opts}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpich tree: configure failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN} --parallel ${JOBS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpich tree: build failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${BIN} --output-on-failure -L mpi -j${JOBS}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpich tree: tests failed (${rc})")
endif()
