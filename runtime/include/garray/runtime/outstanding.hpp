#pragma once
// Outstanding: what a Window knows of a nonblocking request issued on it (the array
// layer's Request registers itself while it has something outstanding), so that a
// collective on the window completes it and giving up the window completes it first.

namespace garray::detail {

class Outstanding {
 public:
  /// Completes the request as its wait() would and detaches it from its window. Never
  /// throws (an MPI failure aborts, as in a Request's destructor).
  virtual void complete_now() noexcept = 0;

 protected:
  ~Outstanding() = default;
};

}  // namespace garray::detail
