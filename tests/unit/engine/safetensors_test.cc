#include "engine/safetensors.h"

#include <gtest/gtest.h>

#include "engine/safetensors_writer.h"
#include "test_checkpoint.h"

namespace kvd::engine {
namespace {

TEST(SafetensorsTest, WrittenTensorsReadBackWithShapeDtypeAndBytes) {
  testing::TempDir dir;
  const std::vector<TensorToWrite> tensors = {{"b", "F32", {2, 3}, std::vector<uint8_t>(24, 7)},
                                              {"a", "BF16", {5}, std::vector<uint8_t>(10, 9)},
                                              {"empty", "F16", {0, 4}, {}}};
  ASSERT_TRUE(WriteSafetensors(dir.path() / "x.safetensors", tensors).ok());
  auto file = SafetensorsFile::Open(dir.path() / "x.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ((*file)->tensors().size(), 3u);
  const TensorInfo& b = (*file)->tensors().at("b");
  EXPECT_EQ(b.dtype, "F32");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.num_bytes, 24u);
  EXPECT_EQ(static_cast<const uint8_t*>(b.data)[23], 7);
  const TensorInfo& a = (*file)->tensors().at("a");  // first in name order
  EXPECT_EQ(a.dtype, "BF16");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 8, 0u);  // the header is padded to 8 bytes
  EXPECT_EQ((*file)->tensors().at("empty").num_bytes, 0u);
}

TEST(SafetensorsTest, CheckpointGetChecksShapeAndFoldsLeadingDimensions) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteSafetensors(dir.path() / "model.safetensors",
                               {{"w", "F32", {2, 3, 4}, std::vector<uint8_t>(96, 0)}})
                  .ok());
  auto checkpoint = Checkpoint::Open(dir.path());
  ASSERT_TRUE(checkpoint.ok());
  auto tensor = (*checkpoint)->Get("w", {2, 3, 4});
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->rows, 6);
  EXPECT_EQ(tensor->cols, 4);
  EXPECT_EQ((*checkpoint)->Get("w", {6, 4}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*checkpoint)->Get("v", {1}).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvd::engine
