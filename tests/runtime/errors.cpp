// The error hierarchy and element type mapping.
#include "support/test_support.hpp"

TEST_CASE("errors derive from garray::Error and carry the rank") {
  int wr = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  auto check = [&](auto e) {
    const garray::Error& base = e;
    CHECK(base.rank() == wr);
    CHECK(std::string(base.what()).find("[rank " + std::to_string(wr) + "/") != std::string::npos);
  };
  check(garray::BoundsError(garray::detail::message("x")));
  check(garray::SizeMismatch(garray::detail::message("x")));
  check(garray::InvalidSlice(garray::detail::message("x")));
  check(garray::InvalidArgument(garray::detail::message("x")));
  check(garray::TypeMismatch(garray::detail::message("x")));
  check(garray::CollectiveMismatch(garray::detail::message("x")));
  check(garray::MpiError(garray::detail::message("x"), 3));
}

TEST_CASE("element types map to predefined MPI types") {
  auto size_of = [](MPI_Datatype t) {
    int s = 0;
    MPI_Type_size(t, &s);
    return s;
  };
  CHECK(size_of(garray::mpi_type<float>()) == 4);
  CHECK(size_of(garray::mpi_type<double>()) == 8);
  CHECK(size_of(garray::mpi_type<std::int32_t>()) == 4);
  CHECK(size_of(garray::mpi_type<std::int64_t>()) == 8);
  CHECK(size_of(garray::mpi_type<std::complex<float>>()) == 8);
  CHECK(size_of(garray::mpi_type<std::complex<double>>()) == 16);
  static_assert(garray::Element<double> && !garray::Element<char> && !garray::Element<std::string>);
  static_assert(garray::IntegerElement<std::int64_t> && !garray::IntegerElement<double>);
  CHECK(garray::type_name<std::complex<double>>() == "complex<double>");
}
