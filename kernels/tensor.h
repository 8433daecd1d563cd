// A non-owning view of a 2-D tensor in some backend's memory: [rows, cols], row-major.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace kvd::kernels {

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;

  int64_t num_elements() const { return rows * cols; }
  size_t row_bytes() const { return RowBytes(dtype, cols); }
  size_t num_bytes() const { return static_cast<size_t>(rows) * row_bytes(); }
  float* f32() const { return static_cast<float*>(data); }
  // The view of rows [first, first + count).
  Tensor Rows(int64_t first, int64_t count) const {
    return Tensor{static_cast<char*>(data) + static_cast<size_t>(first) * row_bytes(), dtype, count,
                  cols};
  }
};

}  // namespace kvd::kernels
