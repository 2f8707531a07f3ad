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
    if (nd == 1 && stride[0] == 1 && count[0] <= INT_MAX) {
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
  static int checked(Index n) {
    if (n > INT_MAX)
      raise<InvalidArgument>("garray transfer: a strided dimension of ", n,
                             " elements exceeds what one MPI datatype can describe (", INT_MAX, ")");
    return static_cast<int>(n);
  }
  static MPI_Datatype hvector(Index count, Index stride_bytes, MPI_Datatype inner) {
    MPI_Datatype t;
    check_mpi(MPI_Type_create_hvector(checked(count), 1, static_cast<MPI_Aint>(stride_bytes), inner, &t),
              "MPI_Type_create_hvector");
    return t;
  }
  /// Contiguous run of n elements; beyond INT_MAX elements, chunks of 2^30 plus a remainder.
  static MPI_Datatype contiguous(MPI_Datatype base, std::size_t esize, Index n) {
    MPI_Datatype t;
    if (n <= INT_MAX) {
      check_mpi(MPI_Type_contiguous(static_cast<int>(n), base, &t), "MPI_Type_contiguous");
      return t;
    }
    constexpr Index chunk = Index{1} << 30;
    MPI_Datatype c, body;
    check_mpi(MPI_Type_contiguous(static_cast<int>(chunk), base, &c), "MPI_Type_contiguous");
    check_mpi(MPI_Type_contiguous(checked(n / chunk), c, &body), "MPI_Type_contiguous");
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
