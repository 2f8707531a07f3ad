#include <garray/runtime/window_cache.hpp>

#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>
#include <garray/runtime/fault.hpp>
#include <garray/runtime/window.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string_view>
#include <type_traits>

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

WindowCache::WindowCache(MPI_Comm comm, Stats& stats) : comm_(comm), stats_(&stats) {
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
    if (problem.empty()) problem = "a GARRAY_CACHE_* variable is malformed on another rank";
    detail::raise<InvalidArgument>("garray::Context: ", problem);
  }
}

WindowCache::~WindowCache() { free_all(); }

std::uint64_t WindowCache::entry_hash(const Entry& e) noexcept {
  return fmix(fmix(e.slot.serial * 2 + (e.pending ? 1 : 0)) + e.stamp * 0x9e3779b97f4a7c15ULL);
}

std::uint64_t WindowCache::settings_hash() const noexcept {
  if (settings_dirty_) {
    std::uint64_t h = detail::hash_mix(0x636163686533ULL, static_cast<std::uint64_t>(depth_));
    h = detail::hash_mix(h, cap_);
    h = detail::hash_mix(h, window_cap_);
    settings_hash_ = detail::hash_mix(h, idle_after_);
    settings_dirty_ = false;
  }
  return settings_hash_;
}

void WindowCache::update_gauge() noexcept { stats_->cache_bytes = static_cast<std::int64_t>(bytes_held_); }

void WindowCache::touch(KeyInfo& k) noexcept {
  k.touched = creates_;
  touch_order_.splice(touch_order_.end(), touch_order_, k.pos);
}

void WindowCache::unlist(KeyInfo& k) noexcept {
  if (!k.listed) return;
  if (spare_touch_.size() < spares) spare_touch_.splice(spare_touch_.end(), touch_order_, k.pos);
  else touch_order_.erase(k.pos);
  k.listed = false;
}

void WindowCache::retire_key(KeyMap::iterator kit) noexcept {
  KeyInfo& k = kit->second;
  unlist(k);
  k.entries.clear();
  if (spare_keys_.size() < spare_keys_.capacity()) spare_keys_.push_back(keys_.extract(kit));  // no allocation
  else keys_.erase(kit);
}

void WindowCache::drop_from_key(const Entry& e) noexcept {
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

void WindowCache::to_pending(Iter it) noexcept {
  drop_from_key(*it);
  charged_ -= it->slot.charge;
  pool_hash_ -= entry_hash(*it);
  it->pending = true;
  pool_hash_ += entry_hash(*it);
  pending_.splice(pending_.end(), lru_, it);
}

void WindowCache::enforce_limits() noexcept {
  while (!lru_.empty() && (lru_.size() > window_cap_ || charged_ > cap_)) to_pending(lru_.begin());
}

void WindowCache::set_depth(int depth) {
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

void WindowCache::set_byte_cap(std::size_t bytes) noexcept {
  settings_dirty_ = true;
  ++version_;
  cap_ = bytes;
  for (auto it = lru_.begin(); it != lru_.end();) {
    const auto cur = it++;
    if (cur->slot.charge > cap_) to_pending(cur);
  }
  enforce_limits();
}

void WindowCache::set_window_cap(std::size_t windows) noexcept {
  settings_dirty_ = true;
  ++version_;
  window_cap_ = windows;
  enforce_limits();
}

std::string WindowCache::describe() const {
  std::ostringstream os;
  os << "cache depth=" << depth_ << " byte_cap=" << cap_ << " window_cap=" << window_cap_
     << " idle_after=" << idle_after_ << " held=" << windows_held() << " pending=" << pending_.size()
     << " bytes=" << bytes_held_ << " live=" << live_ << " creates=" << creates_;
  return os.str();
}

WindowCache::Decision WindowCache::decide(const Slot& slot, std::size_t bytes) const noexcept {
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

WindowCache::Plan WindowCache::plan(const Slot& slot, std::size_t bytes) const noexcept {
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

void WindowCache::free_list(List& l) noexcept {
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

void WindowCache::free_all() noexcept {
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

std::unique_ptr<detail::Window> WindowCache::acquire(const Context& ctx, Slot& slot, std::size_t bytes) {
  const Decision d = decide(slot, bytes);
  if (!d.take || !pending_.empty() || d.idle_windows > 0) {
    // Collective work follows (MPI_Win_free / MPI_Win_allocate): first make sure every rank
    // is ready for it, so a rank that failed locally cannot leave the others blocked in a
    // collective call (failure rule). A pure hit skips this: no MPI call at all.
    std::exception_ptr err;
    try {
      detail::fault_point("cache.acquire");
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
      if (spare_entries_.size() < spares) spare_entries_.splice(spare_entries_.end(), lru_, it);
      else lru_.erase(it);
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

void WindowCache::release(const Slot& slot, std::unique_ptr<detail::Window> w) noexcept {
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
      if (w->has_pending_writes()) w->complete_all();
      w->memory_sync();
    } catch (...) {
      reusable = false;  // poisoned: state unknown, never reused, freed at the next collective point
    }
  }
  // Bookkeeping that may allocate comes first, while nothing has changed yet. Nodes come
  // from the spares when there are some, and the key is usually known (dormant): a hit
  // loop's destroy allocates nothing.
  List node;
  KeyInfo* key = nullptr;
  try {
    if (!spare_entries_.empty()) node.splice(node.end(), spare_entries_, spare_entries_.begin());
    else node.emplace_back();
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
  } catch (...) {  // out of memory: give the window up rather than throw
    ++stats_->leaked_windows;
    (void)w.release();
    return;
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

void WindowCache::clear() {
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
