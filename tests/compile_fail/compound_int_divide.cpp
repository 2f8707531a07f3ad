// NumPy: int_array /= 2 raises UFuncTypeError (true division gives float64, and same_kind
// casting refuses float64 -> int64). Here it must not compile.
#include <garray/garray.hpp>
void f(garray::GlobalArray<std::int64_t, 1>& a) { a /= 2; }
