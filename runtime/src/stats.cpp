#include <garray/runtime/stats.hpp>

#include <garray/runtime/context.hpp>
#include <garray/runtime/error.hpp>

#include <cstdio>
#include <ostream>
#include <vector>

namespace garray {

std::string_view op_name(Op op) noexcept {
  switch (op) {
    case Op::get: return "get";
    case Op::put: return "put";
    case Op::acc: return "acc";
    case Op::gather: return "gather";
    case Op::scatter: return "scatter";
    case Op::scatter_acc: return "scatter_acc";
    case Op::read_inc: return "read_inc";
    default: return "?";
  }
}

namespace {
// Flattens the counters in a fixed order so they can be reduced in one call.
std::vector<std::int64_t> flatten(const Stats& s) {
  std::vector<std::int64_t> v{s.windows_allocated, s.windows_freed,    s.window_bytes, s.arrays_created,
                              s.arrays_destroyed,  s.leaked_windows,   s.cache_hits,   s.cache_misses,
                              s.cache_evictions,   s.cache_bytes,      s.syncs,        s.fences,
                              s.mpi_rma_calls,     s.ordering_flushes, s.replace_puts, s.temp_bytes_peak};
  for (const auto& o : s.ops) {
    v.insert(v.end(), {o.calls, o.local_pieces, o.remote_pieces, o.local_bytes, o.remote_bytes});
  }
  return v;
}
}  // namespace

void print_stats(const Context& ctx, std::ostream& os) {
  ctx.check_valid("garray::print_stats");
  detail::agree_signature(ctx.comm(), detail::hash_string("garray::print_stats"), "garray::print_stats", "print_stats");
  const auto mine = flatten(ctx.stats());
  std::vector<std::int64_t> sum(mine.size()), max(mine.size());
  const int n = static_cast<int>(mine.size());
  detail::check_mpi(MPI_Reduce(mine.data(), sum.data(), n, MPI_INT64_T, MPI_SUM, 0, ctx.comm()),
                    "MPI_Reduce");
  detail::check_mpi(MPI_Reduce(mine.data(), max.data(), n, MPI_INT64_T, MPI_MAX, 0, ctx.comm()),
                    "MPI_Reduce");
  if (ctx.rank() != 0) return;
  char line[256];
  auto row = [&](const char* name, int i) {
    std::snprintf(line, sizeof line, "  %-22s %16lld %16lld\n", name,
                  static_cast<long long>(sum[static_cast<std::size_t>(i)]),
                  static_cast<long long>(max[static_cast<std::size_t>(i)]));
    os << line;
  };
  os << "garray statistics over " << ctx.size() << " ranks\n";
  std::snprintf(line, sizeof line, "  %-22s %16s %16s\n", "counter", "sum", "max/rank");
  os << line;
  const char* names[] = {"windows_allocated", "windows_freed",    "window_bytes", "arrays_created",
                         "arrays_destroyed",  "leaked_windows",   "cache_hits",   "cache_misses",
                         "cache_evictions",   "cache_bytes",      "syncs",        "fences",
                         "mpi_rma_calls",     "ordering_flushes", "replace_puts", "temp_bytes_peak"};
  int i = 0;
  for (const char* nm : names) row(nm, i++);
  const char* fields[] = {"calls", "local_pieces", "remote_pieces", "local_bytes", "remote_bytes"};
  for (int o = 0; o < op_count; ++o) {
    for (const char* f : fields) {
      std::string nm = std::string(op_name(static_cast<Op>(o))) + "." + f;
      if (sum[static_cast<std::size_t>(i)] != 0) row(nm.c_str(), i);
      ++i;
    }
  }
}

}  // namespace garray
