#pragma once
// LocalBlock: RAII access to the block of a GlobalArray that this rank owns.
//
//   auto blk = a.access();                 // MPI_Win_sync on entry
//   auto& v = blk.view();                  // boost::multi_array_ref, GLOBAL indices
//   for (auto i = blk.lo(0); i < blk.hi(0); ++i) v[i][blk.lo(1)] = 0.0;
//                                          // MPI_Win_sync on exit (destructor)
//
// The view's index bases are the block's global low corner, so kernels index with global
// coordinates. Local loads and stores are consistent with remote get/put/accumulate after
// the next collective sync() (see docs/semantics.md). Bind views by reference or `auto&`:
// boost::multi_array_ref's operator= copies elements. A block keeps neither its array nor
// the array's context alive (dropping it is never a collective point): once the array
// object is destroyed, moved from or assigned to, view() and data() throw InvalidArgument
// (its window may already hold another array, or be gone).

#include <boost/multi_array.hpp>
#include <cstddef>
#include <cstdint>
#include <garray/array/box.hpp>
#include <garray/runtime/context.hpp>
#include <garray/runtime/datatype.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/window.hpp>
#include <memory>
#include <utility>

namespace garray {

/// What a view keeps of its array (GlobalArray::liveness()): whether the array object still
/// holds the array, and the array's context, valid even when it does not. A local block
/// only observes it (a weak reference): it does not hold the context.
struct ArrayLiveness {
  bool alive = false;  ///< false once the array object was destroyed, moved from or assigned to
  Context ctx;         ///< the array's context
  std::uint64_t id = 0;  ///< the array's GlobalArray::id(): errors name it ("array #3")
};

/// RAII access to the block of a GlobalArray that this rank owns (from
/// GlobalArray::access()): a boost::multi_array_ref over the block's window memory whose index
/// bases are global coordinates, bracketed by MPI_Win_sync on entry and exit. Local loads and
/// stores through it and remote get/put/accumulate agree after the next collective sync().
/// Every member is Local. Not copyable; bind view() by reference.
template <class T, std::size_t N>
class LocalBlock {
 public:
  /// The view's type: a multi_array_ref with the block's global low corner (minus ghosts) as
  /// index bases.
  using view_type = boost::multi_array_ref<T, N>;

  /// Local. MPI_Win_sync: this rank's stores through the view are ordered before the next
  /// synchronisation (sync() makes them visible to other ranks). Never throws; nothing when
  /// the array is gone (its window may be freed).
  ~LocalBlock() {
    if (win_ && valid()) win_->memory_sync_noexcept();  // both windows of a mixed one, as on entry
  }
  LocalBlock(const LocalBlock&) = delete;             ///< Not copyable.
  LocalBlock& operator=(const LocalBlock&) = delete;  ///< Not copyable.

  /// Local. The block (with its ghost cells, if any) as a multi_array_ref with global index
  /// bases: it spans [lo - ghost, hi + ghost) in each dimension. Throws InvalidArgument once
  /// the array object was destroyed, moved from or assigned to (see valid()).
  view_type& view() {
    check();
    return view_;
  }
  /// Local. The block as a read-only multi_array_ref with global index bases (throws as view()).
  const view_type& view() const {
    check();
    return view_;
  }
  /// Local. False once the array object this block came from was destroyed, moved from or
  /// assigned to: its memory may then belong to another array (the cache reuses windows) or
  /// be freed, so view() and data() throw InvalidArgument instead of handing it out.
  bool valid() const noexcept {
    // expired: the array object and every view of it are gone. Not lock(): view() runs in
    // users' element loops, and one thread at a time uses garray (semantics.md), so an
    // unexpired token stays alive while it is read.
    return !alive_.expired() && token_->alive;
  }
  /// Local. The owned block [lo, hi) in global indices (ghosts excluded).
  const Box<N>& box() const noexcept { return box_; }
  Index lo(std::size_t d) const noexcept { return box_.lo[d]; }  ///< Local. First owned global index in dim d.
  Index hi(std::size_t d) const noexcept { return box_.hi[d]; }  ///< Local. One past the last owned index in dim d.
  bool empty() const noexcept { return box_.empty(); }  ///< Local. True if this rank owns nothing.
  /// Local. Ghost width in dim d (0 for an empty block).
  Index ghost(std::size_t d) const noexcept { return ghost_[d]; }
  Index size() const noexcept { return box_.volume(); }  ///< Local. Number of owned elements.
  /// Local. Row-major pointer to the first element of the block's memory (ghosts included; may be
  /// null for an empty block).
  T* data() const {
    check();
    return const_cast<T*>(view_.data());
  }
  /// Local. Throws InvalidArgument unless valid().
  void check() const {
    if (!valid()) [[unlikely]]
      detail::raise<InvalidArgument>("garray::LocalBlock: ", detail::array_label(id_),
                                     " was destroyed, moved from or assigned to since access(): "
                                     "the block is no longer its memory");
  }

 private:
  template <Element U, std::size_t M>
  friend class GlobalArray;  // made by GlobalArray::access()
  // `data` is the block's window memory: row-major, extents of `box` plus `ghost` cells on
  // each side (an empty block has no memory and no ghosts).
  LocalBlock(T* data, const Box<N>& box, const Shape<N>& ghost, const detail::Window* win,
             const std::shared_ptr<const ArrayLiveness>& alive)
      : box_(box),
        ghost_(box.empty() ? Shape<N>{} : ghost),
        win_(win),
        alive_(alive),
        token_(alive.get()),
        id_(alive->id),
        view_(data, padded(box, ghost_)) {
    Shape<N> base{};
    for (std::size_t d = 0; d < N; ++d) base[d] = box.lo[d] - ghost_[d];
    view_.reindex(base);
    if (win_) win_->memory_sync();
  }

  static Shape<N> padded(const Box<N>& b, const Shape<N>& g) noexcept {
    Shape<N> e = b.extents();
    if (!b.empty())
      for (std::size_t d = 0; d < N; ++d) e[d] += 2 * g[d];
    return e;
  }
  Box<N> box_;
  Shape<N> ghost_;
  const detail::Window* win_;
  // The array's token, observed: holding it would hold the array's context, and the last
  // holder of a context runs its collective teardown (semantics.md "Destruction"), which a
  // local object must never do.
  std::weak_ptr<const ArrayLiveness> alive_;
  const ArrayLiveness* token_;  // what alive_ observes, read while it has not expired
  std::uint64_t id_;            // the array's id, for the error once alive_ expired
  view_type view_;
};

}  // namespace garray
