// The user guide's "Files" section, compiled and checked (docs/user-guide.md): the examples
// are copied here verbatim between the markers (tests/docs/check_examples.py checks them).
#include <cstdio>
#include <filesystem>
#include <string>

#include "io/io_support.hpp"

using garray::idx, garray::range, garray::all, garray::_;

TEST_CASE("user guide files: write, read into another distribution, restart") {
  garray::Context ctx;
  const std::string path = "guide_np" + std::to_string(ctx.size()) + ".h5";
  {
    garray::GlobalArray<double, 2> a(ctx, {600, 400}, garray::Distribution<2>::slab(0), {1, 1});
    iotest::fill_bits(a);
    auto* pa = &a;
    // clang-format off
    // guide-example: files, writing
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
    // end guide-example
    // clang-format on
    // clang-format off
    // guide-example: files, reading
    io::File f(ctx, path);                        // read-only
    garray::GlobalArray<double, 2> b(ctx, {600, 400}, garray::Distribution<2>::blocked());
    io::read(f, "u", b);                          // any distribution, any rank count
    auto c = io::read_array<double, 2>(f, "u", garray::Distribution<2>::slab(1));
    garray::GlobalArray<double, 2> corner(ctx, {100, 50});
    io::read(f, "u", idx[range(0, 100)][range(_, 50)], corner.view());  // a selection of /u
    const auto step = f.attribute<std::int64_t>("step");
    const io::DatasetInfo info = io::info(f, "u");  // shape, type, recorded layout
    // end guide-example
    // clang-format on
    CHECK(iotest::bitwise_equal(iotest::all_of(b), iotest::all_of(*pa)));
    CHECK(iotest::bitwise_equal(iotest::all_of(c), iotest::all_of(*pa)));
    const auto m = pa->get(idx[range(0, 100)][range(_, 50)]);
    CHECK(iotest::bitwise_equal(iotest::all_of(corner), std::vector<double>(m.data(), m.data() + m.num_elements())));
    CHECK(step == 250);
    CHECK(info.distribution == "slab");
    CHECK(info.process_grid == std::vector<garray::Index>{ctx.size(), 1});
    CHECK(info.ghost == std::vector<garray::Index>{1, 1});
    if (ctx.size() == 1 || ctx.size() >= 1) {
      // clang-format off
      // guide-example: files, the writer's layout
      auto same = io::read_array<double, 2>(f, "u");  // the writer's blocks and ghosts
      // end guide-example
      // clang-format on
      CHECK(same.local_box() == pa->local_box());
      CHECK(same.ghost() == pa->ghost());
    }
    // clang-format off
    // guide-example: files, errors
    garray::GlobalArray<float, 2> wrong(ctx, {600, 400});
    try {
      io::read(f, "u", wrong);
    } catch (const garray::TypeMismatch& e) {
      // on every rank: "garray::io::read<float,2>: file 'guide.h5', dataset '/u' holds
      // float64, the array holds float (float32) [rank 0/4]"; `wrong` is unchanged
    }
    // end guide-example
    // clang-format on
    CHECK_THROWS_AS(io::read(f, "u", wrong), garray::TypeMismatch);  // the error the guide's catch expects
    CHECK(iotest::all_of(wrong) == std::vector<float>(600 * 400, 0.0f));  // unchanged
  }
  iotest::remove_file(ctx, path);
}

TEST_CASE("README: files (write an array, read it into another distribution)") {
  // The README's file name is fixed ("out.h5") and the test binaries at every rank count run
  // at once in one directory: run the example in a directory of this rank count's own.
  garray::Context ctx;
  namespace fs = std::filesystem;
  const fs::path dir = fs::absolute("readme_files_np" + std::to_string(ctx.size()));
  if (ctx.rank() == 0) fs::create_directories(dir);
  ctx.barrier();
  garray::GlobalArray<double, 2> a(ctx, {60, 40}, garray::Distribution<2>::slab(0), {1, 1});
  garray::GlobalArray<double, 2> b(ctx, {60, 40}, garray::Distribution<2>::slab(1));
  iotest::fill_bits(a);
  {
    struct Cwd {  // back to the test's directory, also when a check throws
      fs::path old = fs::current_path();
      ~Cwd() { fs::current_path(old); }
    } restore;
    fs::current_path(dir);
    {
      // clang-format off
      // guide-example: README, files
      garray::io::File f(ctx, "out.h5", garray::io::Mode::create);  // collective
      garray::io::write(f, "a", a);                                   // dataset /a + layout attributes
      garray::io::read(f, "a", b);                                    // b: any distribution
      // end guide-example
      // clang-format on
    }
    CHECK(iotest::bitwise_equal(iotest::all_of(b), iotest::all_of(a)));
    {
      const garray::io::File f(ctx, "out.h5");
      const garray::io::DatasetInfo info = garray::io::info(f, "a");  // the layout attributes
      CHECK(info.shape == std::vector<garray::Index>{60, 40});
      CHECK(info.distribution == "slab");
      CHECK(info.ghost == std::vector<garray::Index>{1, 1});
    }
    iotest::remove_file(ctx, "out.h5");
  }
  ctx.barrier();
  if (ctx.rank() == 0) fs::remove_all(dir);
  ctx.barrier();
}
