#pragma once
// MPI descriptions of strided regions: a (datatype, count) pair for one side of an RMA
// call. Contiguous regions use the predefined type directly (no type creation, no heap);
// strided ones become nested hvectors, created per call and freed right after the call was
// issued (MPI keeps them alive until the operation completes).

#include <garray/array/box.hpp>
#include <garray/runtime/error.hpp>

#include <mpi.h>

#include <climits>
#include <cstddef>

namespace garray::detail {

/// The largest count one MPI call or datatype constructor takes: INT_MAX. Larger contiguous
/// runs become chunks of (limit + 1) / 2 elements (2^30) plus a remainder (below); a piece
/// with a larger strided dimension is split into several calls (RmaTransport::split), an
/// index list with more entries for one owner too (RmaTransport::list). Only tests change it
/// (lowered to as little as 3, so that these paths run at small sizes;
/// tests/array/count_limit.cpp): one process-wide value, never written while a transfer runs.
inline Index mpi_count_limit = INT_MAX;

class MpiRegion {
 public:
  MpiRegion() = default;
  /// `nd` dimensions, outermost first, with counts and positive element strides.
  MpiRegion(MPI_Datatype base, std::size_t esize, int nd, const Index* count, const Index* stride) {
    if (nd == 0) {
      type_ = base;
      count_ = 1;
      return;
    }
    if (nd == 1 && stride[0] == 1 && count[0] <= mpi_count_limit) {
      type_ = base;
      count_ = static_cast<int>(count[0]);
      return;
    }
    MPI_Datatype t = stride[nd - 1] == 1 ? contiguous(base, esize, count[nd - 1])
                                         : hvector(count[nd - 1], stride[nd - 1] * static_cast<Index>(esize), base);
    for (int d = nd - 2; d >= 0; --d) {
      MPI_Datatype outer = hvector(count[d], stride[d] * static_cast<Index>(esize), t);
      MPI_Type_free(&t);
      t = outer;
    }
    check_mpi(MPI_Type_commit(&t), "MPI_Type_commit");
    type_ = t;
    count_ = 1;
    owned_ = true;
  }
  ~MpiRegion() {
    if (owned_) MPI_Type_free(&type_);
  }
  MpiRegion(const MpiRegion&) = delete;
  MpiRegion& operator=(const MpiRegion&) = delete;
  MpiRegion(MpiRegion&& o) noexcept : type_(o.type_), count_(o.count_), owned_(o.owned_) { o.owned_ = false; }
  MpiRegion& operator=(MpiRegion&& o) noexcept {
    if (this != &o) {
      if (owned_) MPI_Type_free(&type_);
      type_ = o.type_;
      count_ = o.count_;
      owned_ = o.owned_;
      o.owned_ = false;
    }
    return *this;
  }

  MPI_Datatype type() const noexcept { return type_; }
  int count() const noexcept { return count_; }

 private:
  // Unreachable through RmaTransport (it splits such pieces first); kept as the last guard.
  static int checked(Index n) {
    if (n > mpi_count_limit)
      raise<InvalidArgument>("garray transfer: a strided dimension of ", n,
                             " elements exceeds what one MPI datatype can describe (", mpi_count_limit, ")");
    return static_cast<int>(n);
  }
  static MPI_Datatype hvector(Index count, Index stride_bytes, MPI_Datatype inner) {
    MPI_Datatype t;
    check_mpi(MPI_Type_create_hvector(checked(count), 1, static_cast<MPI_Aint>(stride_bytes), inner, &t),
              "MPI_Type_create_hvector");
    return t;
  }
  /// Contiguous run of n elements of `base` (extent `esize` bytes); beyond the limit
  /// (INT_MAX), chunks of (limit + 1) / 2 elements (2^30) plus a remainder, the chunks
  /// counted the same way (a count that still exceeds the limit chunks again).
  static MPI_Datatype contiguous(MPI_Datatype base, std::size_t esize, Index n) {
    MPI_Datatype t;
    if (n <= mpi_count_limit) {
      check_mpi(MPI_Type_contiguous(static_cast<int>(n), base, &t), "MPI_Type_contiguous");
      return t;
    }
    const Index chunk = (mpi_count_limit + 1) / 2;
    MPI_Datatype c = contiguous(base, esize, chunk);
    MPI_Datatype body = contiguous(c, esize * static_cast<std::size_t>(chunk), n / chunk);
    MPI_Type_free(&c);
    const Index rem = n % chunk;
    if (rem == 0) return body;
    int lens[2] = {1, static_cast<int>(rem)};
    MPI_Aint disps[2] = {0, static_cast<MPI_Aint>((n / chunk) * chunk * static_cast<Index>(esize))};
    MPI_Datatype types[2] = {body, base};
    check_mpi(MPI_Type_create_struct(2, lens, disps, types, &t), "MPI_Type_create_struct");
    MPI_Type_free(&body);
    return t;
  }

  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  int count_ = 0;
  bool owned_ = false;
};

}  // namespace garray::detail
