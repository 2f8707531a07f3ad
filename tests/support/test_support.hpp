#pragma once
// Shared test helpers: seeded randomness agreed across ranks, random shapes/slices/
// distributions, and a serial reference (a boost::multi_array replicated on every rank)
// with an independent, brute-force implementation of numpy slicing.

#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <boost/multi_array.hpp>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <garray/array/detail/mpi_region.hpp>
#include <garray/garray.hpp>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace test {

using garray::Index;

/// A seed chosen by rank 0 (GARRAY_TEST_SEED overrides) and broadcast to every rank.
inline std::uint64_t shared_seed(MPI_Comm comm = MPI_COMM_WORLD) {
  std::uint64_t s = 0;
  int r = 0;
  MPI_Comm_rank(comm, &r);
  if (r == 0) {
    if (const char* e = std::getenv("GARRAY_TEST_SEED")) s = std::strtoull(e, nullptr, 10);
    else s = std::random_device{}() * 0x9e3779b97f4a7c15ULL ^ std::random_device{}();
  }
  MPI_Bcast(&s, 1, MPI_UINT64_T, 0, comm);
  return s;
}

/// True on every rank iff `ok` on every rank (use instead of REQUIRE between collectives).
inline bool all_ranks(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int in = ok ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, comm);
  return out != 0;
}

/// True on every rank iff all ranks of MPI_COMM_WORLD share one host (one
/// MPI_COMM_TYPE_SHARED group).
inline bool world_on_one_host() {
  int p = 0, host_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  MPI_Comm_size(host, &host_size);
  MPI_Comm_free(&host);
  return all_ranks(host_size == p);
}

/// garray's progress threads in this process (Linux: the entries of /proc/self/task named
/// "garray-progress"; the MPI library may start threads of its own at any time, so the
/// process's thread count says nothing).
inline std::size_t progress_threads() {
  std::size_t n = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    if (std::getline(comm, name) && name == "garray-progress") ++n;
  }
  return n;
}

/// A 1-d distribution of n elements whose last rank owns nothing (p == 1: one block).
inline garray::Distribution<1> last_rank_owns_nothing(garray::Index n, int p) {
  std::array<std::vector<garray::Index>, 1> starts{};
  const int blocks = std::max(1, p - 1);
  for (int r = 0; r < blocks; ++r) starts[0].push_back(n * r / blocks);
  return garray::Distribution<1>::irregular(starts);
}

/// Rows split over all ranks but the last, which owns nothing (p == 1: one block).
inline garray::Distribution<2> last_rank_owns_no_rows(garray::Index rows, int p) {
  std::array<std::vector<garray::Index>, 2> starts{};
  const int blocks = std::max(1, p - 1);
  for (int r = 0; r < blocks; ++r) starts[0].push_back(rows * r / blocks);
  starts[1].push_back(0);
  return garray::Distribution<2>::irregular(starts);
}

/// The message of the `E` that f() throws; "WRONG TYPE: ..." for another exception,
/// "NO THROW" if none.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    // a failure by itself: a caller that checks only a part of the message would pass
    FAIL_CHECK("expected " << std::string(typeid(E).name()) << ", got: " << std::string(e.what()));
    return std::string("WRONG TYPE: ") + e.what();
  }
  return "NO THROW";
}
/// Sets an environment variable (nullopt or nullptr: unsets it) for one scope and restores
/// what it was after, also when a check throws. Each rank sets its own value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    set(value);
  }
  ScopedEnv(const char* name, const char* value)
      : ScopedEnv(name, value ? std::optional<std::string>(value) : std::nullopt) {}
  ~ScopedEnv() { set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void set(const std::optional<std::string>& v) {
    if (v) setenv(name_, v->c_str(), 1);
    else unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

/// Lowers the largest count garray passes to one MPI call (detail::mpi_count_limit, INT_MAX)
/// for one scope on this process, so that the paths for runs and lists beyond INT_MAX
/// (chunked datatypes, split pieces, several calls per list) run at small sizes. Set it on
/// every rank alike.
class CountLimit {
 public:
  explicit CountLimit(garray::Index n) : old_(garray::detail::mpi_count_limit) {
    REQUIRE(n >= 3);  // chunks of (n + 1) / 2 >= 2 elements, a struct of 2 blocks
    garray::detail::mpi_count_limit = n;
  }
  ~CountLimit() { garray::detail::mpi_count_limit = old_; }
  CountLimit(const CountLimit&) = delete;
  CountLimit& operator=(const CountLimit&) = delete;

 private:
  garray::Index old_;
};

/// True if `s` contains `part`.
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Stops the current test on every rank if `ok` is false on any rank.
#define GARRAY_TEST_REQUIRE_ALL(cond) REQUIRE(::test::all_ranks(static_cast<bool>(cond)))

using Rng = std::mt19937_64;

inline Index uniform(Rng& g, Index lo, Index hi) {  // inclusive
  return std::uniform_int_distribution<Index>(lo, hi)(g);
}

/// Random shape with extents in [1, max_extent]; sometimes tiny (smaller than the rank count).
template <std::size_t N>
garray::Shape<N> random_shape(Rng& g, Index max_extent) {
  garray::Shape<N> s{};
  for (auto& e : s) e = uniform(g, 1, max_extent);
  return s;
}

/// A random distribution of every kind for `shape` over `nranks` ranks.
template <std::size_t N>
garray::Distribution<N> random_distribution(Rng& g, const garray::Shape<N>& shape, int nranks) {
  switch (uniform(g, 0, 3)) {
    case 0: return garray::Distribution<N>::blocked();
    case 1: return garray::Distribution<N>::slab(static_cast<std::size_t>(uniform(g, 0, N - 1)));
    case 2: {  // a random grid using up to nranks ranks
      std::array<int, N> p{};
      p.fill(1);
      int left = nranks;
      for (std::size_t d = 0; d < N; ++d) {
        p[d] = static_cast<int>(uniform(g, 1, left));
        left /= p[d];
        if (left < 1) left = 1;
      }
      return garray::Distribution<N>::grid(p);
    }
    default: {  // irregular: random sorted cut points, repeats allowed (empty blocks)
      std::array<std::vector<Index>, N> starts;
      int left = nranks;
      for (std::size_t d = 0; d < N; ++d) {
        const int nb = static_cast<int>(uniform(g, 1, std::max(1, left)));
        left = std::max(1, left / nb);
        starts[d].push_back(0);
        for (int b = 1; b < nb; ++b) starts[d].push_back(uniform(g, 0, shape[d]));
        std::sort(starts[d].begin(), starts[d].end());
      }
      return garray::Distribution<N>::irregular(starts);
    }
  }
}

/// random_distribution, or one time in five a replicated one: for tests whose operations
/// are all defined on replicated arrays too (one-sided put/get/accumulate, collectives; not
/// writes through access(), which change only the calling rank's copy).
template <std::size_t N>
garray::Distribution<N> random_distribution_or_replicated(Rng& g, const garray::Shape<N>& shape, int nranks) {
  if (uniform(g, 0, 4) == 0) return garray::Distribution<N>::replicated();
  return random_distribution<N>(g, shape, nranks);
}

/// A value of type T from a small integer, exact under addition for every T.
template <class T>
T make_value(Index v) {
  if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
    return T(static_cast<typename T::value_type>(v), static_cast<typename T::value_type>(-v / 2));
  else
    return static_cast<T>(v);
}

// ---- independent numpy slicing reference (brute force filter, no formula) ---------------

/// A random numpy slice item for an extent `len`: a range with random (possibly omitted,
/// negative, out-of-range) bounds and a nonzero step in [-4, 4], or an in-range integer.
struct RefItem {
  bool is_index = false;
  Index value = 0;
  std::optional<Index> start, stop;
  Index step = 1;
};

inline RefItem random_item(Rng& g, Index len, bool allow_index) {
  RefItem it;
  if (allow_index && uniform(g, 0, 4) == 0) {
    it.is_index = true;
    it.value = uniform(g, -len, len - 1);
    return it;
  }
  auto bound = [&]() -> std::optional<Index> {
    if (uniform(g, 0, 3) == 0) return std::nullopt;
    return uniform(g, -len - 2, len + 2);
  };
  it.start = bound();
  it.stop = bound();
  do it.step = uniform(g, -4, 4);
  while (it.step == 0);
  if (uniform(g, 0, 2) == 0) it.step = 1;
  return it;
}

/// The base indices numpy selects, by filtering every candidate 0..len-1 (independent of the
/// library's closed-form normalisation).
inline std::vector<Index> ref_indices(const RefItem& it, Index len) {
  if (it.is_index) return {it.value < 0 ? it.value + len : it.value};
  std::vector<Index> out;
  const Index step = it.step;
  // numpy: negative bounds count from the end once; then positions compare as integers.
  auto resolve = [&](std::optional<Index> b, bool is_start) -> std::optional<Index> {
    if (!b) return std::nullopt;
    (void)is_start;
    return *b < 0 ? *b + len : *b;
  };
  const auto s = resolve(it.start, true), e = resolve(it.stop, false);
  if (step > 0) {
    const Index first = s ? std::max<Index>(*s, 0) : 0;
    for (Index i = 0; i < len; ++i) {
      if (i < first) continue;
      if (e && i >= *e) continue;
      if ((i - first) % step != 0) continue;
      out.push_back(i);
    }
  } else {
    const Index first = s ? std::min<Index>(*s, len - 1) : len - 1;
    for (Index i = len - 1; i >= 0; --i) {
      if (i > first) continue;
      if (e && i <= *e) continue;
      if ((first - i) % (-step) != 0) continue;
      out.push_back(i);
    }
  }
  return out;
}

/// The library slice item equal to a RefItem.
inline garray::SliceItem to_item(const RefItem& it) {
  garray::SliceItem s;
  s.is_index = it.is_index;
  s.value = it.value;
  if (!it.is_index) {
    s.r = garray::range(it.start ? garray::Bound(*it.start) : garray::Bound(garray::_),
                        it.stop ? garray::Bound(*it.stop) : garray::Bound(garray::_), it.step);
  }
  return s;
}

/// A random full slice over a shape: per dimension an item and its reference index list.
template <std::size_t N>
struct RandomSlice {
  garray::Slice<N, N> slice;  // runtime items; dropped dims are marked by is_index
  std::array<std::vector<Index>, N> ref;
};

template <std::size_t N>
RandomSlice<N> random_slice(Rng& g, const garray::Shape<N>& shape, bool allow_index = true) {
  RandomSlice<N> r;
  for (std::size_t d = 0; d < N; ++d) {
    const RefItem it = random_item(g, shape[d], allow_index);
    r.slice.items[d] = to_item(it);
    r.ref[d] = ref_indices(it, shape[d]);
  }
  return r;
}

/// Visits every selected element in row-major selection order: f(base index, position).
template <std::size_t N, class F>
void for_each_selected(const std::array<std::vector<Index>, N>& ref, F&& f) {
  for (const auto& v : ref)
    if (v.empty()) return;
  std::array<std::size_t, N> k{};
  Index pos = 0;
  while (true) {
    garray::Shape<N> i{};
    for (std::size_t d = 0; d < N; ++d) i[d] = ref[d][k[d]];
    f(i, pos++);
    std::size_t d = N;
    while (d > 0) {
      --d;
      if (++k[d] < ref[d].size()) break;
      k[d] = 0;
      if (d == 0) return;
    }
  }
}

template <std::size_t N>
Index selected_count(const std::array<std::vector<Index>, N>& ref) {
  Index n = 1;
  for (const auto& v : ref) n *= static_cast<Index>(v.size());
  return n;
}

/// The serial reference: the whole array on every rank.
template <class T, std::size_t N>
struct Reference {
  boost::multi_array<T, N> a;
  explicit Reference(const garray::Shape<N>& shape) : a(shape) { std::fill_n(a.data(), a.num_elements(), T{}); }
  T& at(const garray::Shape<N>& i) { return a(i); }
};

/// Every rank compares its own block (through access()) and a full get() with the reference.
/// Collective; true on every rank iff all matched everywhere.
template <class T, std::size_t N>
bool equal_on_all_ranks(garray::GlobalArray<T, N>& ga, Reference<T, N>& ref) {
  bool ok = true;
  {
    auto blk = ga.access();
    const auto& b = blk.box();
    if (!b.empty()) {
      std::array<std::vector<Index>, N> ids;
      for (std::size_t d = 0; d < N; ++d)
        for (Index i = b.lo[d]; i < b.hi[d]; ++i) ids[d].push_back(i);
      for_each_selected<N>(ids, [&](const garray::Shape<N>& i, Index) { ok = ok && blk.view()(i) == ref.at(i); });
    }
  }
  std::vector<T> all(static_cast<std::size_t>(ga.size()));
  ga.get_section(garray::Section<N>::full(ga.shape()), all);
  ok = ok && std::equal(all.begin(), all.end(), ref.a.data());
  return all_ranks(ok, ga.context().comm());
}

/// The whole array, row-major, on every rank (one-sided get).
template <class T, std::size_t N>
std::vector<T> whole_array(const garray::GlobalArray<T, N>& a) {
  std::vector<T> v(static_cast<std::size_t>(a.size()));
  if (!v.empty()) a.get_section(garray::Section<N>::full(a.shape()), std::span<T>(v));
  return v;
}

}  // namespace test
