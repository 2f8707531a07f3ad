// The error paths of views and user buffers (global_array.hpp, view.hpp): out of line so
// that user translation units do not instantiate the message builders for every view type.
#include <garray/array/global_array.hpp>

namespace garray::detail {

void view_of_dead_array(std::string_view what, std::uint64_t id) {
  raise<InvalidArgument>(what, ": a view of ", array_label(id),
                         ", which was destroyed, moved from or assigned to");
}
void moved_from_array(std::string_view what, std::string_view which, std::uint64_t id) {
  raise<InvalidArgument>(what, ": ", which, " is empty (moved from): ", array_label(id),
                         " is held by another object now, or was destroyed");
}
void view_rank_mismatch(std::string_view what, std::size_t rank, std::size_t m) {
  raise<InvalidSlice>(what, ": a selection keeping ", rank, " dimensions cannot be a ", m,
                      "-d view (slice items disagree with the slice type)");
}
void view_buffer_mismatch(std::string_view what, std::span<const Index> got, std::span<const Index> want) {
  raise<SizeMismatch>(what, ": buffer of shape ", seq(got), " (row-major required) for a view of shape ", seq(want));
}

}  // namespace garray::detail
