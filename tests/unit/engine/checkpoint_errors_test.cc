// Corrupt or incomplete checkpoints give clear errors naming the file and the tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/model.h"
#include "kernels/backend.h"
#include "test_checkpoint.h"

namespace kvd::engine {
namespace {

using testing::TempDir;
using testing::TinyShape;
using testing::TinyTensors;
using testing::WriteText;
using testing::WriteTinyModel;

class CheckpointErrorsTest : public ::testing::Test {
 protected:
  absl::Status Load() { return Model::Load(dir_.path(), *backend_).status(); }
  std::string safetensors() const { return (dir_.path() / "model.safetensors").string(); }
  void ExpectError(absl::StatusCode code, std::initializer_list<std::string> parts) {
    const absl::Status status = Load();
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), code) << status;
    for (const std::string& part : parts) {
      EXPECT_NE(status.message().find(part), std::string_view::npos)
          << "'" << part << "' not in: " << status;
    }
  }

  TempDir dir_;
  std::unique_ptr<kernels::Backend> backend_ = *kernels::CreateBackend("cpu", {.num_threads = 1});
};

TEST_F(CheckpointErrorsTest, ValidModelLoads) {
  WriteTinyModel(dir_.path());
  EXPECT_TRUE(Load().ok()) << Load();
}

TEST_F(CheckpointErrorsTest, MissingTensorIsNamed) {
  WriteText(dir_.path() / "config.json", testing::TinyConfig({}).dump());
  auto tensors = TinyTensors({}, 1);
  std::erase_if(tensors,
                [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  ASSERT_TRUE(WriteSafetensors(dir_.path() / "model.safetensors", tensors).ok());
  ExpectError(absl::StatusCode::kNotFound,
              {"model.layers.1.mlp.up_proj.weight", dir_.path().string()});
}

TEST_F(CheckpointErrorsTest, WrongShapeIsNamed) {
  WriteText(dir_.path() / "config.json", testing::TinyConfig({}).dump());
  auto tensors = TinyTensors({}, 1);
  std::mt19937 random(3);
  for (auto& t : tensors) {
    if (t.name == "model.layers.0.self_attn.k_proj.weight") {
      t = testing::RandomF32(t.name, {8, 32}, random);
    }
  }
  ASSERT_TRUE(WriteSafetensors(dir_.path() / "model.safetensors", tensors).ok());
  ExpectError(absl::StatusCode::kInvalidArgument,
              {safetensors(), "model.layers.0.self_attn.k_proj.weight", "[8, 32]", "[16, 32]"});
}

TEST_F(CheckpointErrorsTest, TruncatedFileIsDetected) {
  WriteTinyModel(dir_.path());
  std::filesystem::resize_file(safetensors(), std::filesystem::file_size(safetensors()) - 100);
  ExpectError(absl::StatusCode::kInvalidArgument, {safetensors(), "truncated"});
}

TEST_F(CheckpointErrorsTest, FileShorterThanItsHeaderLength) {
  WriteTinyModel(dir_.path());
  WriteText(safetensors(), std::string("\x05\x00\x00", 3));
  ExpectError(absl::StatusCode::kInvalidArgument, {safetensors(), "truncated"});
}

TEST_F(CheckpointErrorsTest, HeaderLengthBeyondFile) {
  WriteTinyModel(dir_.path());
  std::string bytes(16, ' ');
  bytes[0] = '\xff';
  bytes[1] = '\xff';
  bytes[2] = '\xff';
  WriteText(safetensors(), bytes);
  ExpectError(absl::StatusCode::kInvalidArgument, {safetensors(), "bad header"});
}

TEST_F(CheckpointErrorsTest, HeaderNotJson) {
  WriteTinyModel(dir_.path());
  WriteText(safetensors(), std::string("\x08\0\0\0\0\0\0\0{broken!", 16));
  ExpectError(absl::StatusCode::kInvalidArgument, {safetensors(), "not a JSON object"});
}

TEST_F(CheckpointErrorsTest, UnsupportedDtypeIsNamed) {
  WriteText(dir_.path() / "config.json", testing::TinyConfig({}).dump());
  auto tensors = TinyTensors({}, 1);
  for (auto& t : tensors) {
    if (t.name == "model.norm.weight") t.dtype = "I32";
  }
  ASSERT_TRUE(WriteSafetensors(dir_.path() / "model.safetensors", tensors).ok());
  ExpectError(absl::StatusCode::kInvalidArgument, {safetensors(), "model.norm.weight", "I32"});
}

TEST_F(CheckpointErrorsTest, UnsupportedArchitecture) {
  WriteTinyModel(dir_.path());
  auto config = testing::TinyConfig({});
  config["architectures"] = {"MixtralForCausalLM"};
  WriteText(dir_.path() / "config.json", config.dump());
  ExpectError(absl::StatusCode::kUnimplemented, {"config.json", "MixtralForCausalLM"});
}

TEST_F(CheckpointErrorsTest, MissingFiles) {
  ExpectError(absl::StatusCode::kNotFound, {"config.json"});
  WriteText(dir_.path() / "config.json", testing::TinyConfig({}).dump());
  ExpectError(absl::StatusCode::kNotFound, {"model.safetensors"});
}

TEST_F(CheckpointErrorsTest, ShardedCheckpointLoadsAndMissingShardIsNamed) {
  WriteText(dir_.path() / "config.json", testing::TinyConfig({}).dump());
  auto tensors = TinyTensors({}, 1);
  std::vector<TensorToWrite> first(tensors.begin(), tensors.begin() + 5);
  std::vector<TensorToWrite> second(tensors.begin() + 5, tensors.end());
  ASSERT_TRUE(WriteSafetensors(dir_.path() / "model-00001-of-00002.safetensors", first).ok());
  ASSERT_TRUE(WriteSafetensors(dir_.path() / "model-00002-of-00002.safetensors", second).ok());
  nlohmann::json index = {{"metadata", {{"total_size", 0}}},
                          {"weight_map", nlohmann::json::object()}};
  for (const auto& t : first) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  for (const auto& t : second) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  WriteText(dir_.path() / "model.safetensors.index.json", index.dump());
  EXPECT_TRUE(Load().ok()) << Load();

  std::filesystem::remove(dir_.path() / "model-00002-of-00002.safetensors");
  ExpectError(absl::StatusCode::kNotFound, {"model-00002-of-00002.safetensors"});
}

}  // namespace
}  // namespace kvd::engine
