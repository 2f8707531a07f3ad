// The error paths of slice normalisation (slice.hpp): out of line so that user translation
// units do not instantiate the message builders for every slice they write.
#include <garray/array/slice.hpp>

namespace garray::detail {

void slice_step_zero(std::string_view what, std::size_t dim) {
  raise<InvalidSlice>(what, ": slice step cannot be zero (dim ", dim, ")");
}
void index_out_of_range(std::string_view what, Index i, Index len, std::size_t dim) {
  raise<BoundsError>(what, ": index ", i, " out of range for extent ", len, " in dim ", dim);
}
void slice_two_ellipses(std::string_view what) {
  raise<InvalidSlice>(what, ": a slice can only have a single ellipsis");
}
void slice_too_many_indices(std::string_view what, std::size_t k, std::size_t kept) {
  raise<InvalidSlice>(what, ": ", k, " indices for a selection with ", kept, " dimensions");
}
void slice_step_overflow(std::string_view what, Index step, std::size_t dim) {
  raise<InvalidSlice>(what, ": slice step ", step, " overflows (dim ", dim, ")");
}

}  // namespace garray::detail
