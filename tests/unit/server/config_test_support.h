// What the server configuration tests share: parsing a YAML text that must succeed or fail,
// two tenants' key digests, and comparing KeepKV sections field by field.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "absl/status/statusor.h"
#include "cache_store/keepkv/keepkv_fields.h"
#include "server/config/config_loader.h"
#include "server/config/server_config.h"

namespace kvd::server::config_testing {

// SHA-256 of "abc" and of "".
constexpr char kDigestAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kDigestEmpty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

inline ServerConfig ParseOk(const std::string& yaml) {
  absl::StatusOr<ServerConfig> config = ParseServerConfig(yaml, "config.yaml");
  EXPECT_TRUE(config.ok()) << config.status() << "\n" << yaml;
  return config.ok() ? *config : ServerConfig{};
}

// The message of the InvalidArgument error that `yaml` must give.
inline std::string ParseError(const std::string& yaml) {
  absl::StatusOr<ServerConfig> config = ParseServerConfig(yaml, "config.yaml");
  if (config.ok()) {
    ADD_FAILURE() << "parsed without an error:\n" << yaml;
    return "";
  }
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  return std::string(config.status().message());
}

inline void ExpectKeepKvEq(const KeepKvConfig& a, const KeepKvConfig& b) {
  EXPECT_EQ(a.enabled, b.enabled);
  for (const cache_store::KeepKvField& field : cache_store::kKeepKvFields) {
    EXPECT_EQ(cache_store::KeepKvFieldText(field, a.params),
              cache_store::KeepKvFieldText(field, b.params))
        << field.name;
  }
  EXPECT_TRUE(a == b);
}

}  // namespace kvd::server::config_testing
