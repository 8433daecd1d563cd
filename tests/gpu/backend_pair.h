// What the GPU conformance tests share: a CUDA backend beside the CPU reference (the test is
// skipped without a device), fresh random inputs each run (the seed goes in failure messages),
// and moving values between the host and either backend.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "tests/support/kernel_test_values.h"

namespace kvd::kernels {

// One tensor on a backend, made from host values.
struct DeviceTensor {
  std::unique_ptr<DeviceBuffer> buffer;
  Tensor tensor;
};

class BackendPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cuda = CreateBackend("cuda", {});
    if (!cuda.ok()) GTEST_SKIP() << cuda.status();
    cuda_ = *std::move(cuda);
    cpu_ = *CreateBackend("cpu", {.num_threads = 2});
    seed_ = std::random_device{}();
    random_.seed(seed_);
  }
  void TearDown() override {
    if (cuda_ != nullptr) {
      EXPECT_TRUE(cuda_->TakeError().ok());
    }
  }

  std::vector<float> Random(size_t n, float scale = 1.0f) {
    return RandomNormals(random_, n, scale);
  }
  static DeviceTensor Put(Backend& backend, const std::vector<float>& values, int64_t rows,
                          int64_t cols) {
    DeviceTensor out;
    out.buffer = *backend.Allocate(values.size() * sizeof(float));
    out.tensor = Tensor{out.buffer->data(), DType::kF32, rows, cols};
    backend.CopyFromHost(values.data(), out.tensor);
    return out;
  }
  static std::vector<float> Get(Backend& backend, const Tensor& tensor) {
    std::vector<float> values(static_cast<size_t>(tensor.num_elements()));
    backend.CopyToHost(tensor, values.data());
    return values;
  }

  std::unique_ptr<Backend> cpu_, cuda_;
  uint32_t seed_ = 0;
  std::mt19937 random_;
};

}  // namespace kvd::kernels
