# garray::io tests (issue 14), included by tests/CMakeLists.txt when parallel HDF5 was found.
garray_test_binary(test_io io/roundtrip.cpp io/bad_input.cpp)
target_link_libraries(test_io PRIVATE garray_io)
garray_add_mpi_test(test_io TIMEOUT 120)
