// A user program built against the installed package: create, put, get, check; the numeric
// layer (a reduction, an expression, matmul through the package's BLAS, printing); and, when
// the package has garray::io, write the array to a file and read it back.
#include <garray/garray.hpp>

// garray leaves the consumer's Boost assertion settings alone (it defined BOOST_DISABLE_ASSERTS
// for every consumer, silencing BOOST_ASSERT in their debug builds too)
#if defined(BOOST_DISABLE_ASSERTS) || defined(BOOST_ENABLE_ASSERT_HANDLER)
#error "garray::garray changed the consumer's Boost assertion settings"
#endif

#include <cstdio>
#include <string>
#include <vector>

int main() {
  int bad = 0;
  {
    garray::Context ctx;  // initialises MPI and finalises it when the last handle goes
    garray::GlobalArray<double, 2> a(ctx, {10, 10});
    std::vector<double> row(10);
    for (int j = 0; j < 10; ++j) row[j] = ctx.rank() + 0.5 * j;
    a.put(garray::idx[ctx.rank()], std::span<const double>(row));
    a.sync();
    std::vector<double> back(10);
    a.get(garray::idx[ctx.rank()], std::span<double>(back));
    bad = back != row;
    // the numeric layer: libgarray_numeric, and BLAS (cblas_dgemm) through the package's
    // find_dependency(BLAS)
    double want = 0;
    for (int r = 0; r < ctx.size(); ++r)
      for (int j = 0; j < 10; ++j) want += r + 0.5 * j;
    bad = bad || garray::sum(a) != want;
    auto c = garray::matmul(a, garray::eye<double>(ctx, 10));  // a times the identity: exact
    bad = bad || !garray::all_of(c == a);
    const std::string text = garray::array_str(a);  // NumPy's str(a) on rank 0
    bad = bad || (ctx.rank() == 0) != !text.empty();
#ifdef GARRAY_HAVE_IO
    // garray::io from the installed garray_io (no HDF5 headers needed here): a round trip.
    {
      garray::io::File f(ctx, "consumer.h5", garray::io::Mode::create);
      garray::io::write(f, "a", a);
    }
    garray::io::File g(ctx, "consumer.h5");
    auto b = garray::io::read_array<double, 2>(g, "a");
    b.get(garray::idx[ctx.rank()], std::span<double>(back));
    bad = bad || back != row;
#endif
    std::printf("consumer rank %d: %s\n", ctx.rank(), bad ? "MISMATCH" : "ok");
  }
  return bad;
}
