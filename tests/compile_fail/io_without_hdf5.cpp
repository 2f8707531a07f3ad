// Must compile without HDF5's include directory (issue 17: garray_io is compiled, HDF5 is
// private to it): io.hpp declares the whole interface and brings no HDF5 header with it.
#include <garray/array/io.hpp>

#ifdef H5_VERS_MAJOR
#error "io.hpp includes an HDF5 header"
#endif

namespace io = garray::io;

void f(garray::GlobalArray<double, 2>& a) {
  io::File file(a.context(), "x.h5", io::Mode::create);
  io::write(file, "u", a);
  io::write(file, "v", a[garray::idx[garray::range(garray::_, garray::_, -1)]]);
  file.set_attribute("step", std::int64_t{250});
  file.set_attribute("name", "laplace");
  io::read(file, "u", a);
  io::read(file, "u", garray::idx[garray::range(0, 2)][garray::all], a[garray::idx[garray::range(0, 2)]]);
  auto b = io::read_array<float, 3>(file, "w");
  const auto s = file.attribute<std::string>("name");
  (void)b;
  (void)s;
}
