// Boost's assertion handler for -DGARRAY_ENABLE_BOUNDS_CHECK=ON (compiled into garray_array
// only then). The option defines BOOST_ENABLE_ASSERT_HANDLER for garray and its consumers, so
// Boost.MultiArray's index checks in access() views run in every build type, NDEBUG
// included, and a failed one throws garray::BoundsError naming the rank instead of aborting.
// A program that defines its own boost::assertion_failed keeps its own.
#include <boost/assert.hpp>
#include <garray/runtime/error.hpp>

namespace boost {

void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  garray::detail::raise<garray::BoundsError>("bounds check failed: ", expr, " in ", function, " (", file, ":",
                                             line, ")");
}

void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file,
                          long line) {
  garray::detail::raise<garray::BoundsError>("bounds check failed: ", expr, " (", msg, ") in ", function,
                                             " (", file, ":", line, ")");
}

}  // namespace boost
