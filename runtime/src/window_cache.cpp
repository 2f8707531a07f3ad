#include <garray/runtime/window_cache.hpp>

#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/window.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string_view>

namespace garray {

namespace {

// "3" -> 3; "256M" -> 256 << 20 (K, M, G, T: binary multiples, optional trailing B/iB).
// Returns false on anything else, including overflow.
bool parse_size(std::string_view text, bool allow_suffix, std::size_t& out) {
  std::size_t pos = 0, value = 0;
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    const auto digit = static_cast<std::size_t>(text[pos] - '0');
    if (value > (max - digit) / 10) return false;
    value = value * 10 + digit;
    ++pos;
  }
  if (pos == 0) return false;
  std::string unit;
  for (char c : text.substr(pos)) unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!allow_suffix && !unit.empty()) return false;
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else return false;
  if (shift > 0 && value > (max >> shift)) return false;
  out = value << shift;
  return true;
}

}  // namespace

WindowCache::WindowCache(MPI_Comm comm, Stats& stats) : comm_(comm), stats_(&stats) {
  std::string problem;
  if (const char* e = std::getenv("GARRAY_CACHE_DEPTH"); e && *e) {
    std::size_t d = 0;
    if (parse_size(e, false, d) && d <= static_cast<std::size_t>(std::numeric_limits<int>::max()))
      depth_ = static_cast<int>(d);
    else
      problem = "GARRAY_CACHE_DEPTH='" + std::string(e) + "' is not a non-negative integer";
  }
  if (const char* e = std::getenv("GARRAY_CACHE_BYTES"); e && *e) {
    std::size_t b = 0;
    if (parse_size(e, true, b))
      cap_ = b;
    else
      problem = "GARRAY_CACHE_BYTES='" + std::string(e) +
                "' is not a byte count (an integer with an optional K, M, G or T suffix)";
  }
  // The environment may differ per rank: every rank throws if any rank cannot parse it.
  if (!detail::all_ok(comm_, problem.empty())) {
    if (problem.empty()) problem = "GARRAY_CACHE_DEPTH or GARRAY_CACHE_BYTES is malformed on another rank";
    detail::raise<InvalidArgument>("garray::Context: ", problem);
  }
}

WindowCache::~WindowCache() { free_all(); }

void WindowCache::free_all() noexcept {
  // By serial, not by pool order: the serial names the same MPI window on every rank, so
  // ranks whose pools hold the same windows in a different order (destroyed in a different
  // order, an error reported at the next create) still free them consistently.
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.slot.serial < b.slot.serial; });
  evict_.assign(entries_.size(), 1);
  free_marked();
}

void WindowCache::set_depth(int depth) {
  if (depth < 0) detail::raise<InvalidArgument>("WindowCache::set_depth: negative depth ", depth);
  depth_ = depth;
}

std::string WindowCache::describe() const {
  std::ostringstream os;
  os << "cache depth=" << depth_ << " byte_cap=" << cap_ << " held=" << entries_.size()
     << " bytes=" << bytes_held_ << " live=" << live_;
  return os.str();
}

std::ptrdiff_t WindowCache::decide(const Slot& slot, std::size_t bytes) const noexcept {
  const std::size_t n = entries_.size();
  evict_.assign(n, 0);
  if (n == 0) return -1;
  // 1. Keep the newest `depth` windows of each key (what a destroy would have kept had it
  //    been allowed to free); poisoned windows and windows larger than the byte cap always
  //    go. Quadratic, but the pool is small.
  for (std::size_t i = n; i-- > 0;) {
    const std::uint64_t k = entries_[i].slot.key;
    if (k == 0 || entries_[i].slot.charge > cap_) {
      evict_[i] = 1;
      continue;
    }
    int newer = 0;
    for (std::size_t j = i + 1; j < n && newer < depth_; ++j) newer += entries_[j].slot.key == k ? 1 : 0;
    if (newer >= depth_) evict_[i] = 1;
  }
  // 2. Reuse the most recently released match (its memory is the likeliest to be warm).
  std::ptrdiff_t take = -1;
  for (std::size_t i = n; i-- > 0;) {
    const Entry& e = entries_[i];
    if (!evict_[i] && e.slot.key == slot.key && e.slot.charge == slot.charge && e.bytes == bytes) {
      take = static_cast<std::ptrdiff_t>(i);
      break;
    }
  }
  // 3. Least recently released first until the rest fits the byte cap. Charges are the
  //    same on every rank, so is this decision.
  std::size_t held = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!evict_[i] && static_cast<std::ptrdiff_t>(i) != take) held += entries_[i].slot.charge;
  for (std::size_t i = 0; i < n && held > cap_; ++i) {
    if (evict_[i] || static_cast<std::ptrdiff_t>(i) == take) continue;
    evict_[i] = 1;
    held -= entries_[i].slot.charge;
  }
  return take;
}

std::uint64_t WindowCache::state_hash(std::uint64_t h) const noexcept {
  h = detail::hash_mix(h, static_cast<std::uint64_t>(depth_));
  h = detail::hash_mix(h, static_cast<std::uint64_t>(cap_));
  h = detail::hash_mix(h, static_cast<std::uint64_t>(live_));
  h = detail::hash_mix(h, entries_.size());
  for (const Entry& e : entries_) h = detail::hash_mix(h, e.slot.serial);
  return h;
}

WindowCache::Plan WindowCache::plan(const Slot& slot, std::size_t bytes) const noexcept {
  const std::ptrdiff_t take = decide(slot, bytes);
  std::uint64_t h = state_hash(0x636163686531ULL);
  h = detail::hash_mix(h, static_cast<std::uint64_t>(take + 1));
  // Which windows get freed: with the pool in the hash, implied, but cheap to make explicit.
  for (std::size_t i = 0; i < evict_.size(); ++i)
    if (evict_[i]) h = detail::hash_mix(h, i + 1);
  return Plan{take >= 0, h};
}

void WindowCache::update_gauge() noexcept { stats_->cache_bytes = static_cast<std::int64_t>(bytes_held_); }

void WindowCache::free_marked() noexcept {
  // Oldest first, the same order on every rank: MPI_Win_free is collective and must be
  // called on the same windows in the same order everywhere.
  std::size_t out = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (evict_[i]) {
      if (entries_[i].win) {  // null: taken by acquire(), not an eviction
        bytes_held_ -= entries_[i].bytes;
        ++stats_->cache_evictions;
        entries_[i].win.reset();  // MPI_Win_free (or a counted leak while unwinding)
      }
      continue;
    }
    if (out != i) entries_[out] = std::move(entries_[i]);
    ++out;
  }
  entries_.resize(out);
  evict_.clear();
  update_gauge();
}

std::unique_ptr<detail::Window> WindowCache::acquire(const Context& ctx, Slot& slot, std::size_t bytes) {
  const std::ptrdiff_t take = decide(slot, bytes);
  std::unique_ptr<detail::Window> w;
  if (take >= 0) {
    Entry& e = entries_[static_cast<std::size_t>(take)];
    w = std::move(e.win);
    slot.serial = e.slot.serial;
    bytes_held_ -= e.bytes;
    evict_[static_cast<std::size_t>(take)] = 1;  // drop the entry (win is null: no eviction)
  }
  free_marked();  // before a new allocation, so the freed memory can be reused
  if (w) {
    ++stats_->cache_hits;
  } else {
    w = std::make_unique<detail::Window>(ctx, bytes);  // collective; throws on every rank
    slot.serial = ++allocations_;
    ++stats_->cache_misses;
  }
  ++live_;
  return w;
}

void WindowCache::release(const Slot& slot, std::unique_ptr<detail::Window> w) noexcept {
  if (!w) return;
  --live_;
  if (depth_ == 0) {
    w.reset();  // cache off: MPI_Win_free now, as without a cache (collective)
    return;
  }
  Slot s = slot;
  // Remote completion of everything this rank issued on the old array: after the next
  // create's signature allreduce, no rank has an operation on this memory in flight. Gets
  // are complete on return and waited requests locally complete; only puts/accumulates can
  // still be in flight, and the window tracks those (a flush_all costs microseconds with
  // osc/rdma even when there is nothing to flush).
  try {
    if (w->has_pending_writes()) w->complete_all();
    w->memory_sync();
  } catch (...) {
    s.key = 0;  // state unknown: never reuse; freed at the next collective point
  }
  try {
    entries_.reserve(entries_.size() + 1);  // the only step that can throw; w still ours
  } catch (...) {  // out of memory growing the pool: give the window up rather than throw
    ++stats_->leaked_windows;
    (void)w.release();
    return;
  }
  const std::size_t b = w->bytes();
  entries_.push_back(Entry{s, b, std::move(w)});
  bytes_held_ += b;
  update_gauge();
}

void WindowCache::clear() {
  // Every rank must free the same windows: agree on the set first (order-independent, so
  // clear() also repairs pools that only differ in order).
  std::uint64_t set = 0;
  for (const Entry& e : entries_) set += detail::hash_mix(0x636c656172ULL, e.slot.serial);
  std::uint64_t h = detail::hash_mix(detail::hash_string("WindowCache::clear"), set);
  h = detail::hash_mix(h, entries_.size());
  h = detail::hash_mix(h, static_cast<std::uint64_t>(live_));
  detail::agree_signature(comm_, h, "WindowCache::clear", describe());
  free_all();
}

}  // namespace garray
