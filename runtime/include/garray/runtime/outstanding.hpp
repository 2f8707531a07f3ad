#pragma once
// Outstanding: what a Window knows of a nonblocking request issued on it. The array layer's
// Request links itself into its window's list while it has something outstanding, so that
// a collective on the window completes it first and giving the window up completes it too.

namespace garray::detail {

class Window;

class Outstanding {
 public:
  /// Completes the request as its wait() does, which unlinks it from its window. Throws
  /// MpiError if MPI fails (the request then stays linked).
  virtual void complete() = 0;

 protected:
  Outstanding() = default;
  Outstanding(const Outstanding&) noexcept {}  // links are never copied
  Outstanding& operator=(const Outstanding&) noexcept { return *this; }
  ~Outstanding() = default;

 private:
  friend class Window;  // the window's intrusive list: O(1) link and unlink, no allocation
  Outstanding* prev_ = nullptr;
  Outstanding* next_ = nullptr;
};

}  // namespace garray::detail
