// The draft model the scheduler tests draft with: the bundled model's first two layers (with its
// embedding, final norm, LM head and tokenizer), written once per test binary.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/derived_model.h"
#include "tests/unit/engine/reference_model.h"

namespace kvd::scheduler::testing {

inline std::filesystem::path TinyDraftModelDir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path out =
        std::filesystem::path(::testing::TempDir()) / "kvd-tiny-first-2-layers";
    const absl::Status written =
        engine::WriteLayerPrefixModel(engine::testing::BundledModelDir(), out, 2);
    EXPECT_TRUE(written.ok()) << written;
    return out;
  }();
  return dir;
}

}  // namespace kvd::scheduler::testing
