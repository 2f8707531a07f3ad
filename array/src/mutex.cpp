// Mutexes (mutex.hpp): the ticket locks, compiled once into libgarray_array.
#include <garray/array/mutex.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace garray {

Mutexes::Mutexes(const Context& ctx, int n) : ctx_(ctx), n_(n) {
  ctx.check_valid("garray::Mutexes");
  const std::exception_ptr err =
      n < 0 ? std::make_exception_ptr(InvalidArgument(detail::message("garray::Mutexes: negative number of mutexes ", n)))
            : nullptr;
  // A rank with a bad n throws its error, the others CollectiveMismatch with its message.
  detail::agree_signature(ctx.comm(), detail::hash_mix(detail::hash_string("mutexes"), static_cast<std::uint64_t>(n)),
                          "garray::Mutexes", [&] { return "n = " + std::to_string(n); }, err);
  slots_ = 2 * ctx.size() + 1;
  words_.emplace(ctx, Shape<2>{n, 2 + slots_}, Distribution<2>::slab(0));
  {
    auto blk = words_->access();  // ticket 0 is served from the start: claim its slot
    for (Index i = blk.lo(0); i < blk.hi(0); ++i) blk.view()[i][2] = 2;
  }
  words_->sync();
  held_.assign(static_cast<std::size_t>(n), -1);
  pending_.assign(static_cast<std::size_t>(n), -1);
}

Mutexes::~Mutexes() {
  if (!words_) return;
  for (int i = 0; i < n_; ++i) {
    if (held_[static_cast<std::size_t>(i)] < 0) continue;
    std::fprintf(stderr, "garray: Mutexes destroyed while rank %d holds mutex %d: released\n", ctx_.rank(), i);
    try {
      unlock(i);
    } catch (const std::exception& e) {
      garray::abort(e.what());
    }
  }
}

bool Mutexes::held(int i) const {
  check(i, "held");
  return held_[static_cast<std::size_t>(i)] >= 0;
}

void Mutexes::lock(int i) {
  check(i, "lock");
  auto& h = held_[static_cast<std::size_t>(i)];
  if (h >= 0)
    detail::raise<InvalidArgument>("garray::Mutexes::lock: mutex ", i,
                                   " is already held by this rank (locking it again would deadlock)");
  const std::int64_t t = faa(i, kNext, 1);
  // Polling: yield the core between polls (ranks may outnumber cores); only a long wait
  // (thousands of polls, milliseconds) sleeps, because a sleep costs ~50 us of timer slack
  // and would add that to every hand-over of a busy mutex.
  for (unsigned spin = 0;; ++spin) {
    const std::int64_t s = faa(i, kServing, 0);
    if (spin == 0) max_ahead_ = std::max(max_ahead_, t - s);
    if (s == t) break;
    detail::backoff(spin);
  }
  h = t;
  pending_[static_cast<std::size_t>(i)] = -1;  // an abandoned ticket of mine was before t: resolved
}

bool Mutexes::try_lock(int i) {
  check(i, "try_lock");
  const auto u = static_cast<std::size_t>(i);
  if (held_[u] >= 0)
    detail::raise<InvalidArgument>("garray::Mutexes::try_lock: mutex ", i, " is already held by this rank");
  std::int64_t s = faa(i, kServing, 0);
  if (pending_[u] >= 0) {
    if (s <= pending_[u]) return false;  // my abandoned ticket is not passed: still busy
    pending_[u] = -1;
  }
  if (faa(i, kNext, 0) != s) return false;  // held or queued
  const std::int64_t t = faa(i, kNext, 1);
  s = faa(i, kServing, 0);
  if (s != t) {
    const std::int64_t old = faa(i, slot_col(t), 1);
    if (old == 0) {  // abandoned before it was served: the unlocker will skip it
      pending_[u] = t;
      return false;
    }
    if (old != 2) corrupt(i, "try_lock", old);
    faa(i, slot_col(t), -1);  // served meanwhile: it is mine (slot back to "claimed")
  }
  held_[u] = t;
  return true;
}

void Mutexes::unlock(int i) {
  check(i, "unlock");
  auto& h = held_[static_cast<std::size_t>(i)];
  if (h < 0) detail::raise<InvalidArgument>("garray::Mutexes::unlock: mutex ", i, " is not held by this rank");
  const std::int64_t t = h;
  faa(i, slot_col(t), -2);  // my slot: free again
  std::int64_t n = t + 1;
  for (;;) {  // claim the next ticket, skipping abandoned ones
    const std::int64_t old = faa(i, slot_col(n), 2);
    if (old == 0) break;
    if (old != 1) corrupt(i, "unlock", old);
    faa(i, slot_col(n), -3);
    ++n;
  }
  faa(i, kServing, n - t);
  h = -1;
}

void Mutexes::destroy() {
  // Destroyed already on this rank: an invalid call carried into the handshake (this rank
  // throws it, the others CollectiveMismatch with its message), not a throw before it.
  const std::exception_ptr err =
      words_ ? nullptr
             : std::make_exception_ptr(InvalidArgument(detail::message("garray::Mutexes::destroy: already destroyed")));
  const std::uint64_t id = words_ ? words_->id() : 0;
  detail::agree_signature(
      ctx_.comm(), detail::hash_mix(detail::hash_string("mutexes-destroy"), id), "garray::Mutexes::destroy",
      [&] { return "mutexes on " + detail::array_label(id); }, err);
  // The lowest (rank, mutex) still held, as one int64 key: rank * (n + 1) + mutex (n + 1
  // for none). int64: P * (n + 1) exceeds an int at a few thousand ranks with many mutexes.
  std::int64_t mine = n_;
  for (int i = 0; i < n_; ++i)
    if (held_[static_cast<std::size_t>(i)] >= 0) {
      mine = i;
      break;
    }
  const std::int64_t p = ctx_.size(), stride = std::int64_t{n_} + 1;
  std::int64_t key = mine < n_ ? ctx_.rank() * stride + mine : p * stride, low = 0;
  detail::check_mpi(MPI_Allreduce(&key, &low, 1, MPI_INT64_T, MPI_MIN, ctx_.comm()), "MPI_Allreduce");
  if (low < p * stride)
    detail::raise<InvalidArgument>("garray::Mutexes::destroy: rank ", low / stride, " still holds mutex ",
                                   low % stride, " (unlock it first)");
  words_.reset();
}

std::int64_t Mutexes::faa(int i, int col, std::int64_t inc) { return words_->read_inc(Shape<2>{i, col}, inc); }

void Mutexes::check(int i, const char* call) const {
  if (!words_) detail::raise<InvalidArgument>("garray::Mutexes::", call, ": the mutexes were destroyed");
  if (i < 0 || i >= n_)
    detail::raise<BoundsError>("garray::Mutexes::", call, ": mutex ", i, " out of range [0, ", n_, ")");
}

void Mutexes::corrupt(int i, const char* call, std::int64_t v) const {
  garray::abort("garray::Mutexes::" + std::string(call) + ": mutex " + std::to_string(i) +
                " has an inconsistent ticket slot (" + std::to_string(v) + ")");
}

}  // namespace garray
