// Compile-time floor: what any MPI + Boost.MultiArray program pays.
#include <mpi.h>

#include <boost/multi_array.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  boost::multi_array<double, 2> a(boost::extents[3][3]);
  a[1][1] = 2;
  MPI_Finalize();
  return a[1][1] > 1 ? 0 : 1;
}
