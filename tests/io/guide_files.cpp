// The user guide's "Files" section, compiled and checked (docs/user-guide.md): the examples
// are copied here verbatim between the markers.
#include "io/io_support.hpp"

#include <cstdio>

using garray::idx, garray::range, garray::all, garray::_;

TEST_CASE("user guide files: write, read into another distribution, restart") {
  garray::Context ctx;
  const std::string path = "guide_np" + std::to_string(ctx.size()) + ".h5";
  {
    garray::GlobalArray<double, 2> a(ctx, {600, 400}, garray::Distribution<2>::slab(0), {1, 1});
    iotest::fill_bits(a);
    auto* pa = &a;
    // --- guide: write ---
    namespace io = garray::io;
    {
      io::File f(ctx, path, io::Mode::create);   // collective; MPI-IO on ctx's communicator
      io::write(f, "u", a);                       // dataset /u: 600x400 float64, C order
      io::write(f, "fields/u_rev", a[idx[range(_, _, -1)]]);  // a view writes its section
      f.set_attribute("step", std::int64_t{250}); // user metadata: numbers or strings
      f.set_attribute("units", std::string("K"), "u");        // ... on any object
      io::WriteOptions chunked;
      chunked.chunk = {100, 400};                 // chunked storage
      chunked.transfer = io::Transfer::independent;
      io::write(f, "u_chunked", a, chunked);
    }                                             // closed (collective) here
    // --- end ---
    // --- guide: read ---
    io::File f(ctx, path);                        // read-only
    garray::GlobalArray<double, 2> b(ctx, {600, 400}, garray::Distribution<2>::blocked());
    io::read(f, "u", b);                          // any distribution, any rank count
    auto c = io::read_array<double, 2>(f, "u", garray::Distribution<2>::slab(1));
    garray::GlobalArray<double, 2> corner(ctx, {100, 50});
    io::read(f, "u", idx[range(0, 100)][range(_, 50)], corner.view());  // a selection of /u
    const auto step = f.attribute<std::int64_t>("step");
    const io::DatasetInfo info = io::info(f, "u");  // shape, type, recorded layout
    // --- end ---
    CHECK(iotest::bitwise_equal(iotest::all_of(b), iotest::all_of(*pa)));
    CHECK(iotest::bitwise_equal(iotest::all_of(c), iotest::all_of(*pa)));
    const auto m = pa->get(idx[range(0, 100)][range(_, 50)]);
    CHECK(iotest::bitwise_equal(iotest::all_of(corner), std::vector<double>(m.data(), m.data() + m.num_elements())));
    CHECK(step == 250);
    CHECK(info.distribution == "slab");
    CHECK(info.process_grid == std::vector<garray::Index>{ctx.size(), 1});
    CHECK(info.ghost == std::vector<garray::Index>{1, 1});
    if (ctx.size() == 1 || ctx.size() >= 1) {
      // --- guide: recorded ---
      auto same = io::read_array<double, 2>(f, "u");  // the writer's blocks and ghosts
      // --- end ---
      CHECK(same.local_box() == pa->local_box());
      CHECK(same.ghost() == pa->ghost());
    }
    // --- guide: errors ---
    garray::GlobalArray<float, 2> wrong(ctx, {600, 400});
    try {
      io::read(f, "u", wrong);
    } catch (const garray::TypeMismatch& e) {
      // on every rank: "garray::io::read<float,2>: file 'guide.h5', dataset '/u' holds
      // float64, the array holds float (float32) [rank 0/4]"; `wrong` is unchanged
    }
    // --- end ---
  }
  iotest::remove_file(ctx, path);
}
