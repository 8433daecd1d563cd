// What the fuzz targets share: the input as text or as a file, properties whose failure is a
// crash to libFuzzer, and the bundled model (models/kvd-tiny) loaded once per process.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "engine/model_config.h"
#include "tests/support/source_dir.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace kvd::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Aborts, so that libFuzzer saves the input, when a property of the code under test fails.
inline void Require(bool condition, std::string_view what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz property failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

// As Require, for a status the harness itself needs (loading the bundled model).
inline void RequireOk(const absl::Status& status, std::string_view what) {
  if (status.ok()) return;
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(what.size()), what.data(),
               status.ToString().c_str());
  std::abort();
}

// A file in memory that code which opens paths can read: each Write replaces its contents, and
// path() opens it afresh (/proc/self/fd/N), so no input ever touches the disk.
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("kvd-fuzz", 0)), path_("/proc/self/fd/" + std::to_string(fd_)) {
    Require(fd_ >= 0, "memfd_create");
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { close(fd_); }

  const std::filesystem::path& Write(std::string_view bytes) {
    Require(ftruncate(fd_, 0) == 0, "ftruncate");
    Require(pwrite(fd_, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()),
            "pwrite");
    return path_;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  int fd_;
  std::filesystem::path path_;
};

// The part of `text` before the first `separator` and the part after it (empty when absent).
inline std::pair<std::string_view, std::string_view> SplitOnce(std::string_view text,
                                                               std::string_view separator) {
  const size_t at = text.find(separator);
  if (at == std::string_view::npos) return {text, {}};
  return {text.substr(0, at), text.substr(at + separator.size())};
}

// What every accepted model config promises: it validates, its bos and eos ids name tokens and
// its floating-point fields are finite.
inline void RequireConsistent(const engine::ModelConfig& config) {
  Require(config.Validate().ok(), "accepted config fails Validate");
  const engine::Llama3RopeScaling& scaling = config.llama3_rope_scaling;
  for (float value : {config.rms_norm_eps, config.rope_theta, scaling.factor,
                      scaling.low_freq_factor, scaling.high_freq_factor}) {
    Require(std::isfinite(value), "non-finite float field accepted");
  }
  Require(config.bos_token_id == -1 ||
              (config.bos_token_id >= 0 && config.bos_token_id < config.vocab_size),
          "bos_token_id outside the vocabulary accepted");
  for (int32_t id : config.eos_token_ids) {
    Require(id >= 0 && id < config.vocab_size, "eos_token_id outside the vocabulary accepted");
  }
}

struct BundledModel {
  engine::ModelConfig config;
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::unique_ptr<text::ChatTemplate> chat_template;
};

// models/kvd-tiny's config, tokenizer and chat template, as `kvd serve` loads them.
inline const BundledModel& Bundled() {
  static const BundledModel* model = [] {
    const std::filesystem::path dir =
        std::filesystem::path(kvd::test_support::SourceDir()) / "models/kvd-tiny";
    auto* loaded = new BundledModel;
    auto config = engine::LoadModelConfig(dir);
    RequireOk(config.status(), "bundled config.json");
    loaded->config = *config;
    auto tokenizer = text::Tokenizer::FromFile(dir / "tokenizer.json");
    RequireOk(tokenizer.status(), "bundled tokenizer.json");
    loaded->tokenizer = *std::move(tokenizer);
    auto chat_template = text::ChatTemplate::FromTokenizerConfig(dir);
    RequireOk(chat_template.status(), "bundled tokenizer_config.json");
    loaded->chat_template = *std::move(chat_template);
    return loaded;
  }();
  return *model;
}

}  // namespace kvd::fuzz
