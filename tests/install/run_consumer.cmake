# cmake -P script: install, configure + build the consumer against the prefix, run it.
#   -DHAVE_IO=ON|OFF    whether garray was built with garray::io: the consumer then asks for
#                       the component (find_package(garray REQUIRED COMPONENTS io))
#   -DOTHER_MPI_CXX=... an MPI C++ wrapper of another MPI (may be empty): a consumer configured
#                       with it must stop at find_package with a message naming both MPIs (the
#                       libraries name the MPI's types in their symbols: they would not link)
# The consumer gets no MPI hint of its own: find_package(garray) must bring garray's MPI.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BUILD} ${CONSUMER_BUILD}-other-mpi)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
run(${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${CONSUMER_BUILD} -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${PREFIX}
    -DGARRAY_CONSUMER_WANT_IO=${HAVE_IO})
run(${CMAKE_COMMAND} --build ${CONSUMER_BUILD})
run(${MPIEXEC} -n 2 ${CONSUMER_BUILD}/consumer)
# A consumer configured with `option` (naming another MPI) must stop at find_package with
# the message naming garray's MPI.
function(expect_refused what option)
  file(REMOVE_RECURSE ${CONSUMER_BUILD}-other-mpi)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SRC} -B ${CONSUMER_BUILD}-other-mpi -G ${GENERATOR}
                          -DCMAKE_PREFIX_PATH=${PREFIX} ${option}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "garray was built with the MPI of")
    message(FATAL_ERROR "${what} was not stopped at find_package (exit ${rc}):\n${out}${err}")
  endif()
  message(STATUS "${what} is refused at find_package, as it must be")
endfunction()
if(OTHER_MPI_CXX AND EXISTS "${OTHER_MPI_CXX}")
  expect_refused("a consumer on another MPI (${OTHER_MPI_CXX})" -DMPI_CXX_COMPILER=${OTHER_MPI_CXX})
  # the other MPI's wrapper as the consumer's compiler, no MPI hint: FindMPI then finds
  # garray's MPI, but the compiler would include its own mpi.h first (audit of stop 43: this
  # configured, and failed at link time with undefined garray symbols)
  expect_refused("a consumer compiled by another MPI's wrapper (${OTHER_MPI_CXX})"
                 -DCMAKE_CXX_COMPILER=${OTHER_MPI_CXX})
endif()
