#include <garray/runtime/window_cache.hpp>

#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/window.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <list>
#include <unordered_map>
#include <vector>
#include <limits>
#include <sstream>
#include <string_view>
#include <type_traits>

#include "env_values.hpp"

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

// splitmix64's finaliser: a full-avalanche 64-bit mix.
constexpr std::uint64_t fmix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

// The pool behind WindowCache (window_cache.hpp describes the rules).
struct WindowCache::Impl {
  Impl(MPI_Comm comm, Stats& stats);
  ~Impl();
  void set_depth(int depth);
  void set_byte_cap(std::size_t bytes) noexcept;
  void set_window_cap(std::size_t windows) noexcept;
  void set_idle_after(std::uint64_t creates) noexcept {
    idle_after_ = creates;
    ++version_;
    settings_dirty_ = true;
  }
  void clear();
  std::size_t windows_held() const noexcept { return lru_.size() + pending_.size(); }
  std::string describe() const;
  Plan plan(const Slot& slot, std::size_t bytes) const noexcept;
  std::unique_ptr<detail::Window> acquire(const Context& ctx, Slot& slot, std::size_t bytes);
  void release(const Slot& slot, std::unique_ptr<detail::Window> w) noexcept;
  struct Entry;
  using List = std::list<Entry>;
  using Iter = List::iterator;
  // A key the map knows: *active* (it has reusable windows) or *dormant* (none: a live array
  // took its last one; kept, in place in touch_order_, so that array's destroy does not
  // re-insert it, which makes a hit's create/destroy pair allocation- and rehash-free; the
  // idle sweep forgets dormant keys like any other, a destroy that pools nothing too).
  struct KeyInfo {
    std::uint64_t key = 0;
    std::deque<Iter> entries;             // reusable windows of the key, release order
    std::uint64_t touched = 0;            // creates done when last created or destroyed
    bool listed = false;                  // pos is valid (set while in the map)
    std::list<KeyInfo*>::iterator pos{};  // in touch_order_
  };
  struct Entry {
    Slot slot;
    std::size_t bytes = 0;
    std::uint64_t stamp = 0;  // release number, identical on every rank
    bool pending = false;
    std::unique_ptr<detail::Window> win;
  };
  using KeyMap = std::unordered_map<std::uint64_t, KeyInfo>;
  // What a create does: the entry it takes (or none) and the idle keys whose windows go.
  struct Decision {
    KeyInfo* key = nullptr;  // the requested key, if known
    Entry* take = nullptr;
    std::size_t idle_windows = 0;
    std::uint64_t idle_hash = 0;
  };
  // plan()'s decision, reused by acquire() when nothing changed in between.
  struct Memo {
    std::uint64_t version = ~std::uint64_t{0};
    std::uint64_t key = 0;
    std::size_t charge = 0, bytes = 0;
    Decision d;
  };
  Decision decide(const Slot& slot, std::size_t bytes) const noexcept;
  bool idle(const KeyInfo& k, std::uint64_t now) const noexcept {
    return idle_after_ > 0 && k.touched < now &&
           now - k.touched > idle_after_;  // no overflow: any idle_after_
  }
  static std::uint64_t entry_hash(const Entry& e) noexcept;
  std::uint64_t settings_hash() const noexcept;  // recomputed only after a change
  void to_pending(Iter it) noexcept;               // reusable -> pending (drops it from its key)
  void drop_from_key(const Entry& e) noexcept;     // e is the front or back of its key's list
  void unlist(KeyInfo& k) noexcept;                // out of touch_order_ (to the spares)
  void retire_key(KeyMap::iterator kit) noexcept;  // forget a key without windows
  void touch(KeyInfo& k) noexcept;                 // touched now: to the back of touch_order_
  void enforce_limits() noexcept;                  // caps: least recently released out
  void free_list(List& l) noexcept;                // frees every entry of l, in serial order
  void free_all() noexcept;
  void defer_all(std::uint64_t context_serial) noexcept {
    for (List* l : {&pending_, &lru_})
      for (Entry& e : *l)
        if (e.win) e.win->defer_free({context_serial, e.slot.serial});
  }
  void update_gauge() noexcept;

  MPI_Comm comm_;
  Stats* stats_;
  int depth_ = default_depth;
  std::size_t cap_ = default_byte_cap;
  std::size_t window_cap_ = default_window_cap;
  std::uint64_t idle_after_ = default_idle_after;
  List lru_;      // reusable windows in release order: front = least recently released
  List pending_;  // freed at the next collective point
  KeyMap keys_;                      // active and dormant keys
  std::list<KeyInfo*> touch_order_;  // those keys, least recently touched first
  // Recycled nodes, so a create/destroy pair of a cache hit allocates nothing.
  static constexpr std::size_t spares = 16;
  List spare_entries_;
  std::vector<KeyMap::node_type> spare_keys_;  // capacity `spares`
  std::list<KeyInfo*> spare_touch_;
  std::size_t charged_ = 0;     // sum of the charges of lru_
  std::uint64_t pool_hash_ = 0;  // sum of entry_hash over lru_ and pending_
  std::size_t bytes_held_ = 0;   // this rank's bytes in lru_ and pending_
  std::uint64_t allocations_ = 0;  // serial numbers of windows, identical on every rank
  std::uint64_t releases_ = 0;     // release numbers (stamps)
  std::uint64_t creates_ = 0;      // acquire() calls that succeeded: the idle clock
  std::int64_t live_ = 0;
  std::uint64_t version_ = 0;  // bumped by every change of the pool or the settings
  mutable Memo memo_;
  mutable std::uint64_t settings_hash_ = 0;
  mutable bool settings_dirty_ = true;
};

WindowCache::Impl::Impl(MPI_Comm comm, Stats& stats) : comm_(comm), stats_(&stats) {
  std::string problem;
  auto count = [&](const char* name, bool suffix, std::size_t max, const char* what, auto& out) {
    const char* e = std::getenv(name);
    if (!e || !*e) return;
    std::size_t v = 0;
    if (parse_size(e, suffix, v) && v <= max) out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    else problem = std::string(name) + "='" + e + "' is not " + what;
  };
  count("GARRAY_CACHE_DEPTH", false, static_cast<std::size_t>(std::numeric_limits<int>::max()),
        "a non-negative integer", depth_);
  count("GARRAY_CACHE_BYTES", true, std::numeric_limits<std::size_t>::max(),
        "a byte count (an integer with an optional K, M, G or T suffix)", cap_);
  count("GARRAY_CACHE_WINDOWS", false, std::numeric_limits<std::size_t>::max(), "a non-negative integer",
        window_cap_);
  count("GARRAY_CACHE_IDLE", false, std::numeric_limits<std::size_t>::max(), "a non-negative integer",
        idle_after_);
  spare_keys_.reserve(spares);
  // The environment may differ per rank: every rank throws if any rank cannot parse it.
  if (!detail::all_ok(comm_, problem.empty())) {
    // every rank is here: name each rank's problem (ranks without one: "")
    detail::raise<InvalidArgument>("garray::Context: a GARRAY_CACHE_* variable is malformed (",
                                   detail::values_by_rank(comm_, problem), ")");
  }
}

WindowCache::Impl::~Impl() { free_all(); }

std::uint64_t WindowCache::Impl::entry_hash(const Entry& e) noexcept {
  return fmix(fmix(e.slot.serial * 2 + (e.pending ? 1 : 0)) + e.stamp * 0x9e3779b97f4a7c15ULL);
}

std::uint64_t WindowCache::Impl::settings_hash() const noexcept {
  if (settings_dirty_) {
    std::uint64_t h = detail::hash_mix(0x636163686533ULL, static_cast<std::uint64_t>(depth_));
    h = detail::hash_mix(h, cap_);
    h = detail::hash_mix(h, window_cap_);
    settings_hash_ = detail::hash_mix(h, idle_after_);
    settings_dirty_ = false;
  }
  return settings_hash_;
}

void WindowCache::Impl::update_gauge() noexcept { stats_->cache_bytes = static_cast<std::int64_t>(bytes_held_); }

void WindowCache::Impl::touch(KeyInfo& k) noexcept {
  k.touched = creates_;
  touch_order_.splice(touch_order_.end(), touch_order_, k.pos);
}

void WindowCache::Impl::unlist(KeyInfo& k) noexcept {
  if (!k.listed) return;
  if (spare_touch_.size() < spares) spare_touch_.splice(spare_touch_.end(), touch_order_, k.pos);
  else touch_order_.erase(k.pos);
  k.listed = false;
}

void WindowCache::Impl::retire_key(KeyMap::iterator kit) noexcept {
  KeyInfo& k = kit->second;
  unlist(k);
  k.entries.clear();
  if (spare_keys_.size() < spare_keys_.capacity()) spare_keys_.push_back(keys_.extract(kit));  // no allocation
  else keys_.erase(kit);
}

void WindowCache::Impl::drop_from_key(const Entry& e) noexcept {
  const auto kit = keys_.find(e.slot.key);
  if (kit == keys_.end()) return;
  auto& q = kit->second.entries;
  if (!q.empty() && &*q.front() == &e) {
    q.pop_front();
  } else if (!q.empty() && &*q.back() == &e) {
    q.pop_back();
  } else {  // not reached: a key's entries leave from its oldest or newest end
    for (auto it = q.begin(); it != q.end(); ++it)
      if (&**it == &e) {
        q.erase(it);  // erasing one element of a deque does not allocate
        break;
      }
  }
  if (q.empty()) retire_key(kit);
}

void WindowCache::Impl::to_pending(Iter it) noexcept {
  drop_from_key(*it);
  charged_ -= it->slot.charge;
  pool_hash_ -= entry_hash(*it);
  it->pending = true;
  pool_hash_ += entry_hash(*it);
  pending_.splice(pending_.end(), lru_, it);
}

void WindowCache::Impl::enforce_limits() noexcept {
  while (!lru_.empty() && (lru_.size() > window_cap_ || charged_ > cap_)) to_pending(lru_.begin());
}

void WindowCache::Impl::set_depth(int depth) {
  if (depth < 0) detail::raise<InvalidArgument>("WindowCache::set_depth: negative depth ", depth);
  settings_dirty_ = true;
  ++version_;
  depth_ = depth;
  // Oldest first, so each window moved is the oldest of its key.
  for (auto it = lru_.begin(); it != lru_.end();) {
    const auto cur = it++;
    if (keys_.find(cur->slot.key)->second.entries.size() > static_cast<std::size_t>(depth_)) to_pending(cur);
  }
}

void WindowCache::Impl::set_byte_cap(std::size_t bytes) noexcept {
  settings_dirty_ = true;
  ++version_;
  cap_ = bytes;
  for (auto it = lru_.begin(); it != lru_.end();) {
    const auto cur = it++;
    if (cur->slot.charge > cap_) to_pending(cur);
  }
  enforce_limits();
}

void WindowCache::Impl::set_window_cap(std::size_t windows) noexcept {
  settings_dirty_ = true;
  ++version_;
  window_cap_ = windows;
  enforce_limits();
}

std::string WindowCache::Impl::describe() const {
  std::ostringstream os;
  os << "cache depth=" << depth_ << " byte_cap=" << cap_ << " window_cap=" << window_cap_
     << " idle_after=" << idle_after_ << " held=" << windows_held() << " pending=" << pending_.size()
     << " bytes=" << bytes_held_ << " live=" << live_ << " creates=" << creates_;
  return os.str();
}

WindowCache::Impl::Decision WindowCache::Impl::decide(const Slot& slot, std::size_t bytes) const noexcept {
  if (memo_.version == version_ && memo_.key == slot.key && memo_.charge == slot.charge && memo_.bytes == bytes)
    return memo_.d;
  Decision d;
  // 1. Reuse the most recently released window of the key (its memory is the likeliest to
  //    be warm). Same key implies same charge and size; checked anyway (hash collisions).
  if (const auto kit = keys_.find(slot.key); kit != keys_.end()) {
    d.key = const_cast<KeyInfo*>(&kit->second);  // decide() is const; acquire() is not
    if (!d.key->entries.empty()) {
      Entry& e = *d.key->entries.back();
      if (e.slot.charge == slot.charge && e.bytes == bytes) d.take = &e;
    }
  }
  // 2. Keys idle at this create (number creates_ + 1), least recently touched first; the
  //    requested key is touched by this create, so it is never idle.
  const std::uint64_t now = creates_ + 1;
  for (const KeyInfo* k : touch_order_) {
    if (k->key == slot.key) continue;
    if (!idle(*k, now)) break;
    for (const Iter& it : k->entries) {
      ++d.idle_windows;
      d.idle_hash += fmix(it->slot.serial);
    }
  }
  memo_ = Memo{version_, slot.key, slot.charge, bytes, d};
  return d;
}

WindowCache::Plan WindowCache::Impl::plan(const Slot& slot, std::size_t bytes) const noexcept {
  const Decision d = decide(slot, bytes);
  // Five dependent mixes: this is on every create's path. The pool hash covers every
  // window (serial, release number, pending or not); the rest is counters and the decision.
  std::uint64_t h = detail::hash_mix(settings_hash(), pool_hash_);
  h = detail::hash_mix(h, (static_cast<std::uint64_t>(live_) << 32) ^ creates_);
  h = detail::hash_mix(h, (static_cast<std::uint64_t>(lru_.size()) << 32) ^ pending_.size());
  h = detail::hash_mix(h, d.take ? d.take->slot.serial : 0);
  h = detail::hash_mix(h, d.idle_hash + d.idle_windows);
  return Plan{d.take != nullptr, h};
}

void WindowCache::Impl::free_list(List& l) noexcept {
  // In allocation order, the same on every rank: MPI_Win_free is collective and must be
  // called on the same windows in the same order everywhere. (list::sort does not allocate.)
  l.sort([](const Entry& a, const Entry& b) { return a.slot.serial < b.slot.serial; });
  for (Entry& e : l) {
    if (!e.win) continue;
    bytes_held_ -= e.bytes;
    ++stats_->cache_evictions;
    e.win.reset();  // MPI_Win_free (or a counted leak while unwinding)
  }
  l.clear();
  update_gauge();
}

void WindowCache::Impl::free_all() noexcept {
  ++version_;
  List all;
  all.splice(all.end(), pending_);
  all.splice(all.end(), lru_);
  keys_.clear();
  touch_order_.clear();
  charged_ = 0;
  pool_hash_ = 0;
  free_list(all);
}

std::unique_ptr<detail::Window> WindowCache::Impl::acquire(const Context& ctx, Slot& slot, std::size_t bytes) {
  const Decision d = decide(slot, bytes);
  if (!d.take || !pending_.empty() || d.idle_windows > 0) {
    // Collective work follows (MPI_Win_free / MPI_Win_allocate): first make sure every rank
    // is ready for it, so a rank that failed locally cannot leave the others blocked in a
    // collective call (failure rule). A pure hit skips this: no MPI call at all.
    std::exception_ptr err;
    try {
      detail::fault_point("cache.acquire");
      // the list node this window's release() will need, allocated now (inside the failure
      // rule): a release never allocates one, so it never has to give a window up
      if (!d.take) spare_entries_.emplace_back();
    } catch (...) {
      err = std::current_exception();
    }
    detail::conclude(comm_, err, "WindowCache::acquire");
  }
  // From here on nothing throws until the allocation (which throws on every rank).
  ++version_;
  ++creates_;
  std::unique_ptr<detail::Window> w;
  if (d.key) {
    KeyInfo& k = *d.key;
    if (d.take) {
      const Iter it = k.entries.back();
      w = std::move(it->win);
      slot.serial = it->slot.serial;
      bytes_held_ -= it->bytes;
      charged_ -= it->slot.charge;
      pool_hash_ -= entry_hash(*it);
      // kept as the node this window's release() will need (spares: one per live window)
      if (spare_entries_.size() < spares + static_cast<std::size_t>(live_) + 1)
        spare_entries_.splice(spare_entries_.end(), lru_, it);
      else
        lru_.erase(it);
      k.entries.pop_back();
    }
    // Empty now (dormant): it stays in the map and in touch_order_, untouched, so this
    // array's destroy finds it; if it goes idle first, the idle sweep below forgets it.
    if (!k.entries.empty()) touch(k);
  }
  // The windows to free: pending ones, and those of keys idle now.
  List dying;
  dying.splice(dying.end(), pending_);
  while (!touch_order_.empty() && idle(*touch_order_.front(), creates_)) {
    KeyInfo* k = touch_order_.front();
    for (const Iter& it : k->entries) {
      charged_ -= it->slot.charge;
      dying.splice(dying.end(), lru_, it);
    }
    retire_key(keys_.find(k->key));
  }
  for (const Entry& e : dying) pool_hash_ -= entry_hash(e);
  free_list(dying);  // before a new allocation, so the freed memory can be reused
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

void WindowCache::Impl::release(const Slot& slot, std::unique_ptr<detail::Window> w) noexcept {
  if (!w) return;
  ++version_;
  --live_;
  bool reusable = depth_ > 0 && window_cap_ > 0 && slot.charge <= cap_;
  if (reusable) {
    // Remote completion of everything this rank issued on the old array: after the next
    // create's signature allreduce, no rank has an operation on this memory in flight. Gets
    // are complete on return and waited requests locally complete; only puts/accumulates
    // can still be in flight, and the window tracks those (a flush_all costs microseconds
    // with osc/rdma even when there is nothing to flush). A window that is only going to be
    // freed needs none of this: MPI_Win_unlock_all before MPI_Win_free completes everything.
    try {
      detail::fault_point("cache.release");
      if (w->has_pending_writes()) w->complete_all();
      w->memory_sync();
    } catch (...) {
      reusable = false;  // poisoned: state unknown, never reused, freed at the next collective point
    }
  }
  // Bookkeeping that may allocate comes first, while nothing has changed yet. The node comes
  // from the spares (acquire keeps one per live window), and the key is usually known
  // (dormant): a hit loop's destroy allocates nothing.
  List node;
  KeyInfo* key = nullptr;
  try {
    if (!spare_entries_.empty()) node.splice(node.end(), spare_entries_, spare_entries_.begin());
    else node.emplace_back();  // (not reached: acquire reserved one)
    detail::fault_point("cache.release.bookkeeping");  // stands for an allocation failing below
    auto kit = keys_.find(slot.key);
    if (!reusable) {
      if (kit != keys_.end() && kit->second.entries.empty()) retire_key(kit);  // dormant, stays empty
    } else {
      const bool inserted = kit == keys_.end();
      if (inserted) {
        if (!spare_keys_.empty()) {
          KeyMap::node_type nh = std::move(spare_keys_.back());
          spare_keys_.pop_back();
          nh.key() = slot.key;
          kit = keys_.insert(std::move(nh)).position;  // may throw (rehash): nh frees the node
        } else {
          kit = keys_.try_emplace(slot.key).first;
        }
        kit->second.key = slot.key;
        kit->second.entries.clear();
        kit->second.listed = false;
      }
      KeyInfo& k = kit->second;
      try {
        if (!k.listed) {
          if (!spare_touch_.empty()) {
            k.pos = spare_touch_.begin();
            touch_order_.splice(touch_order_.end(), spare_touch_, k.pos);
            *k.pos = &k;
          } else {
            k.pos = touch_order_.insert(touch_order_.end(), &k);
          }
          k.listed = true;
        }
        k.entries.push_back(node.begin());  // strong guarantee: unchanged if it throws
      } catch (...) {
        if (k.entries.empty()) retire_key(kit);
        throw;
      }
      key = &k;
    }
  } catch (...) {
    // Out of memory for the pool's bookkeeping (release() cannot throw): the window is not
    // pooled but kept as pending, freed at the next collective point like a poisoned one.
    // Giving it up instead (it used to be leaked here) left it in the other ranks' pools
    // only: their collective MPI_Win_free of it would wait for this rank forever. Until
    // then this rank's pool differs from theirs, so creates that depend on it throw
    // CollectiveMismatch on every rank, and clear() repairs it (semantics.md "Array cache").
    reusable = false;
    key = nullptr;
    if (auto kit = keys_.find(slot.key); kit != keys_.end() && kit->second.entries.empty()) retire_key(kit);
    if (node.empty()) {  // no node at all (not reached, see acquire): the last resort
      ++stats_->leaked_windows;
      (void)w.release();
      return;
    }
  }
  Entry& e = node.front();  // a recycled node: every field is set here
  e.slot = slot;
  e.bytes = w->bytes();
  e.stamp = ++releases_;
  e.pending = !reusable;
  e.win = std::move(w);
  pool_hash_ += entry_hash(e);
  bytes_held_ += e.bytes;
  if (reusable) {
    charged_ += e.slot.charge;
    lru_.splice(lru_.end(), node);  // the iterator in key->entries stays valid
    touch(*key);
    while (key->entries.size() > static_cast<std::size_t>(depth_)) to_pending(key->entries.front());
    enforce_limits();
  } else {
    pending_.splice(pending_.end(), node);
  }
  update_gauge();
}

void WindowCache::Impl::clear() {
  // Every rank must free the same windows: agree on the set first (order-independent, so
  // clear() also repairs pools that only differ in order).
  std::uint64_t set = 0;
  for (const List* l : {&lru_, &pending_})
    for (const Entry& e : *l) set += detail::hash_mix(0x636c656172ULL, e.slot.serial);
  std::uint64_t h = detail::hash_mix(detail::hash_string("WindowCache::clear"), set);
  h = detail::hash_mix(h, windows_held());
  h = detail::hash_mix(h, static_cast<std::uint64_t>(live_));
  detail::agree_signature(comm_, h, "WindowCache::clear", describe());
  free_all();
}

}  // namespace garray

namespace garray {

WindowCache::WindowCache(MPI_Comm comm, Stats& stats) : impl_(std::make_unique<Impl>(comm, stats)) {}
WindowCache::~WindowCache() = default;
void WindowCache::set_depth(int depth) { impl_->set_depth(depth); }
int WindowCache::depth() const noexcept { return impl_->depth_; }
void WindowCache::set_byte_cap(std::size_t bytes) noexcept { impl_->set_byte_cap(bytes); }
std::size_t WindowCache::byte_cap() const noexcept { return impl_->cap_; }
void WindowCache::set_window_cap(std::size_t windows) noexcept { impl_->set_window_cap(windows); }
std::size_t WindowCache::window_cap() const noexcept { return impl_->window_cap_; }
void WindowCache::set_idle_after(std::uint64_t creates) noexcept { impl_->set_idle_after(creates); }
std::uint64_t WindowCache::idle_after() const noexcept { return impl_->idle_after_; }
void WindowCache::clear() { impl_->clear(); }
void WindowCache::defer_all(std::uint64_t context_serial) noexcept { impl_->defer_all(context_serial); }
std::size_t WindowCache::windows_held() const noexcept { return impl_->windows_held(); }
std::size_t WindowCache::windows_pending() const noexcept { return impl_->pending_.size(); }
std::size_t WindowCache::bytes_held() const noexcept { return impl_->bytes_held_; }
std::int64_t WindowCache::live_windows() const noexcept { return impl_->live_; }
std::string WindowCache::describe() const { return impl_->describe(); }
WindowCache::Plan WindowCache::plan(const Slot& slot, std::size_t bytes) const noexcept {
  return impl_->plan(slot, bytes);
}
std::unique_ptr<detail::Window> WindowCache::acquire(const Context& ctx, Slot& slot, std::size_t bytes) {
  return impl_->acquire(ctx, slot, bytes);
}
void WindowCache::release(const Slot& slot, std::unique_ptr<detail::Window> w) noexcept {
  impl_->release(slot, std::move(w));
}

}  // namespace garray
