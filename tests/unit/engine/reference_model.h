// The bundled model and its PyTorch reference fixtures (models/kvd-tiny/reference.json).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/source_dir.h"

namespace kvd::engine::testing {

// KVD_MODEL_DIR overrides the bundled model (used while a model is regenerated).
inline std::filesystem::path BundledModelDir() {
  if (const char* dir = std::getenv("KVD_MODEL_DIR")) return dir;
  return std::filesystem::path(kvd::test_support::SourceDir()) / "models" / "kvd-tiny";
}

struct ReferenceCase {
  std::string name;
  std::vector<int32_t> input_ids;
  std::vector<int32_t> greedy_ids;
  std::vector<std::vector<float>> logits;  // one row per position of input_ids + greedy_ids[:-1]
};

inline std::vector<ReferenceCase> LoadReferenceCases() {
  std::ifstream in(BundledModelDir() / "reference.json");
  std::stringstream text;
  text << in.rdbuf();
  const auto json = nlohmann::json::parse(text.str(), nullptr, false);
  std::vector<ReferenceCase> cases;
  if (json.is_discarded()) return cases;
  for (const auto& c : json["cases"]) {
    cases.push_back({c["name"].get<std::string>(), c["input_ids"].get<std::vector<int32_t>>(),
                     c["greedy_ids"].get<std::vector<int32_t>>(),
                     c["logits"].get<std::vector<std::vector<float>>>()});
  }
  return cases;
}

}  // namespace kvd::engine::testing
