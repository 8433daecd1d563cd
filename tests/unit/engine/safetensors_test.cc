#include "engine/safetensors.h"

#include <gtest/gtest.h>

#include <string>

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

// A file of the 8-byte header length, `header` and `data_bytes` zero bytes.
std::string SafetensorsBytes(const std::string& header, size_t data_bytes = 0) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + std::string(data_bytes, '\0');
}

TEST(SafetensorsTest, RefusesShapesWhoseByteCountOverflows) {
  testing::TempDir dir;
  const auto path = dir.path() / "x.safetensors";
  // 2^62 x 4 F32 elements: 2^66 bytes, which wraps to 0 and so matched an empty extent.
  testing::WriteText(path, SafetensorsBytes(R"({"t": {"dtype": "F32",
      "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})"));
  auto file = SafetensorsFile::Open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(file.status().message().find("tensor 't'"), std::string_view::npos) << file.status();

  // 2^32 x 2^32 BF16: the element count itself wraps to 0.
  testing::WriteText(path, SafetensorsBytes(R"({"t": {"dtype": "BF16",
      "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})"));
  EXPECT_EQ(SafetensorsFile::Open(path).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SafetensorsTest, RefusesDimensionsBeyondInt64) {
  testing::TempDir dir;
  const auto path = dir.path() / "x.safetensors";
  // An empty tensor, but its second dimension would read back as -1.
  testing::WriteText(path, SafetensorsBytes(R"({"t": {"dtype": "F32",
      "shape": [0, 18446744073709551615], "data_offsets": [0, 0]}})"));
  EXPECT_EQ(SafetensorsFile::Open(path).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvd::engine
