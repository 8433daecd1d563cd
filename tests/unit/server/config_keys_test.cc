// The config tables against the loader and the example file: every row's key is read by the
// loader under its section, and every row's key is documented in that section of
// deploy/config/example.yaml.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "documents/documents_config.h"
#include "scheduler/config.h"
#include "server/config/server_config.h"
#include "tests/support/source_dir.h"
#include "tests/unit/server/config_test_support.h"

namespace kvd::server {
namespace {

using config_testing::ParseError;
using ::testing::HasSubstr;

// A section of the config file and the names of its table's keys.
struct SectionKeys {
  std::string path;  // "store.remote"
  std::vector<std::string> keys;
};

template <typename Section, size_t N>
std::vector<std::string> NamesOf(const base::ConfigKey<Section> (&keys)[N]) {
  std::vector<std::string> names;
  for (const base::ConfigKey<Section>& key : keys) names.emplace_back(key.name);
  return names;
}

std::vector<SectionKeys> EveryTable() {
  std::vector<std::string> prefix_cache = NamesOf(scheduler::kPrefixCacheKeys);
  for (std::string& name : NamesOf(kKvEventsZmqKeys)) prefix_cache.push_back(name);
  return {
      {"", NamesOf(kTopLevelKeys)},
      {"server", NamesOf(kListenKeys)},
      {"model", NamesOf(kModelKeys)},
      {"scheduler", NamesOf(scheduler::kSchedulerKeys)},
      {"prefix_cache", prefix_cache},
      {"speculative", NamesOf(scheduler::kSpeculativeKeys)},
      {"tenants", NamesOf(kTenantKeys)},
      {"store", NamesOf(documents::kStoreKeys)},
      {"store.remote", NamesOf(documents::kRemoteTierKeys)},
      {"documents", NamesOf(documents::kDocumentsKeys)},
      {"responses", NamesOf(kResponsesKeys)},
      {"structured_outputs", NamesOf(kStructuredOutputsKeys)},
      {"metrics", NamesOf(kMetricsKeys)},
      {"logging", NamesOf(kLoggingKeys)},
  };
}

// A YAML file setting `key` of section `path` to `value`.
std::string FileSetting(const std::string& path, const std::string& key, const std::string& value) {
  if (path.empty()) return key + ": " + value + "\n";
  if (path == "tenants") {
    return "tenants:\n  - id: a\n    key_sha256: [" + std::string(config_testing::kDigestAbc) +
           "]\n    " + key + ": " + value + "\n";
  }
  if (path == "store.remote") return "store:\n  remote:\n    " + key + ": " + value + "\n";
  return path + ":\n  " + key + ": " + value + "\n";
}

TEST(ConfigKeysTest, TheLoaderReadsEveryRowAsItsSectionsKey) {
  for (const SectionKeys& section : EveryTable()) {
    for (const std::string& key : section.keys) {
      // A mapping is no value of any row's type: the loader names the key it read it for.
      const std::string path = section.path == "tenants"
                                   ? "tenants[0]." + key
                                   : (section.path.empty() ? key : section.path + "." + key);
      EXPECT_THAT(ParseError(FileSetting(section.path, key, "{a: 1}")),
                  HasSubstr(path + ": must be"))
          << path;
    }
  }
}

// The part of the example file that a section's keys are written in: from the section's line to
// the next top-level key (a tenant's keys are the commented example under `tenants`).
std::string SectionText(const std::string& example, const std::string& path) {
  if (path.empty()) return example;
  const size_t dot = path.find('.');
  const std::string top = path.substr(0, dot);
  std::istringstream lines(example);
  std::string line;
  std::string text;
  bool inside = false;
  while (std::getline(lines, line)) {
    const bool top_level = !line.empty() && line[0] != ' ' && line[0] != '#';
    if (top_level) inside = line.starts_with(top + ":");
    if (inside) text += line + "\n";
  }
  if (dot == std::string::npos) return text;
  const std::string nested = "\n  " + path.substr(dot + 1) + ":";
  const size_t start = text.find(nested);
  return start == std::string::npos ? "" : text.substr(start);
}

TEST(ConfigKeysTest, TheExampleFileDocumentsEveryRowInItsSection) {
  std::ifstream in(test_support::SourceDir() + "/deploy/config/example.yaml");
  std::stringstream example;
  example << in.rdbuf();
  ASSERT_FALSE(example.str().empty());
  for (const SectionKeys& section : EveryTable()) {
    const std::string text = SectionText(example.str(), section.path);
    ASSERT_FALSE(text.empty()) << "no section " << section.path;
    for (const std::string& key : section.keys) {
      const std::string indent = section.path.empty() ? "\n" : " ";
      EXPECT_THAT(text, HasSubstr(indent + key + ":"))
          << "deploy/config/example.yaml lacks " << section.path << "." << key;
    }
  }
}

}  // namespace
}  // namespace kvd::server
