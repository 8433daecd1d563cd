// KeepKV's configuration: the section's keys and their defaults, a tenant's section starting
// from the server's, and every bad value named with its key path and line.
#include <gtest/gtest.h>

#include <string>

#include "base/sha256.h"
#include "cache_store/keepkv/keepkv_fields.h"
#include "server/config/server_config.h"
#include "tests/unit/server/config_test_support.h"

namespace kvd::server {
namespace {

using config_testing::ExpectKeepKvEq;
using config_testing::kDigestAbc;
using config_testing::kDigestEmpty;
using config_testing::ParseError;
using config_testing::ParseOk;

TEST(ConfigLoaderTest, ReadsKeepKv) {
  const ServerConfig config = ParseOk(R"(
keepkv:
  enabled: true
  budget: 256
  alpha: 0.5
  window: 4
  refresh_every: 32
  recent: 8
  sink: 2
  method: evict
  min_cosine: 0.6
  selection: similar_pairs
)");
  const cache_store::KeepKvParams params = config.keepkv.params;
  EXPECT_TRUE(config.keepkv.enabled);
  EXPECT_EQ(params.budget.tokens, 256);
  EXPECT_DOUBLE_EQ(params.alpha, 0.5);
  EXPECT_EQ(params.window, 4);
  EXPECT_EQ(params.refresh_every, 32);
  EXPECT_EQ(params.recent, 8);
  EXPECT_EQ(params.sink, 2);
  EXPECT_EQ(params.protected_prefix, 0);
  EXPECT_EQ(params.method, cache_store::MergeMethod::kEvict);
  EXPECT_FLOAT_EQ(params.min_cosine, 0.6f);
  EXPECT_EQ(params.selection, cache_store::MergeSelection::kSimilarPairs);

  // A number in (0, 1] is a fraction, 1 included (the whole prompt); a larger one a count.
  EXPECT_EQ(ParseOk("keepkv: {budget: 1}").keepkv.params.budget.tokens, 0);
  EXPECT_DOUBLE_EQ(ParseOk("keepkv: {budget: 1}").keepkv.params.budget.fraction, 1.0);
  EXPECT_EQ(ParseOk("keepkv: {budget: 2}").keepkv.params.budget.tokens, 2);
  const KeepKvConfig whole = ParseOk("keepkv: {budget: 1.0}").keepkv;
  EXPECT_EQ(whole.params.budget.tokens, 0);
  EXPECT_DOUBLE_EQ(whole.params.budget.fraction, 1.0);
  EXPECT_DOUBLE_EQ(ParseOk("keepkv: {budget: 0.25}").keepkv.params.budget.fraction, 0.25);
  EXPECT_FALSE(ParseOk("keepkv: {budget: 0.25}").keepkv.enabled);
  // The defaults.
  const cache_store::KeepKvParams defaults = KeepKvConfig{}.params;
  EXPECT_EQ(defaults.budget.tokens, 0);
  EXPECT_DOUBLE_EQ(defaults.budget.fraction, 0.5);
  EXPECT_DOUBLE_EQ(defaults.alpha, 0.9);
  EXPECT_EQ(defaults.window, 8);
  EXPECT_EQ(defaults.refresh_every, 0);
  EXPECT_EQ(defaults.recent, 16);
  EXPECT_EQ(defaults.sink, 4);
  EXPECT_EQ(defaults.method, cache_store::MergeMethod::kGroupMean);
  EXPECT_FLOAT_EQ(defaults.min_cosine, 0.5f);
  EXPECT_EQ(defaults.selection, cache_store::MergeSelection::kIntoSink);
  EXPECT_TRUE(defaults.Validate().ok());
}

// A tenant's keepkv starts from the section, wherever the section is in the file.
TEST(ConfigLoaderTest, TenantKeepKvOverridesTheSection) {
  const ServerConfig config = ParseOk(R"(
tenants:
  - id: a
    key_sha256: )" + std::string(kDigestAbc) +
                                      R"(
    keepkv:
      enabled: true
      budget: 0.25
  - id: b
    key_sha256: )" + std::string(kDigestEmpty) +
                                      R"(
    keepkv:
      method: convex
  - id: c
    key_sha256: )" + base::Sha256Hex("c-key") +
                                      R"(
keepkv:
  budget: 128
  alpha: 0.8
  method: group_mean
)");
  ASSERT_EQ(config.tenants.size(), 3u);
  KeepKvConfig section;
  section.params.budget.tokens = 128;
  section.params.alpha = 0.8;
  section.params.method = cache_store::MergeMethod::kGroupMean;
  ExpectKeepKvEq(config.keepkv, section);

  KeepKvConfig a = section;  // a fraction replaces the section's token count
  a.enabled = true;
  a.params.budget = {.tokens = 0, .fraction = 0.25};
  ExpectKeepKvEq(config.tenants[0].keepkv, a);
  KeepKvConfig b = section;
  b.params.method = cache_store::MergeMethod::kConvex;
  ExpectKeepKvEq(config.tenants[1].keepkv, b);
  ExpectKeepKvEq(config.tenants[2].keepkv, section);

  // Without a section, tenants start from the defaults.
  const ServerConfig alone = ParseOk(std::string("tenants:\n  - id: a\n    key_sha256: [") +
                                     kDigestAbc + "]\n    keepkv: {recent: 0}\n");
  ExpectKeepKvEq(alone.tenants[0].keepkv, KeepKvConfig{.params = {.recent = 0}});
}

TEST(ConfigLoaderTest, KeepKvErrorsNameKeyAndLine) {
  const std::string tenant =
      std::string("tenants:\n  - id: a\n    key_sha256: [") + kDigestAbc + "]\n    keepkv:\n";
  const struct {
    std::string yaml;
    std::string error;
  } cases[] = {
      {"keepkv:\n  enabled: 1\n",
       "config.yaml:2: keepkv.enabled: must be true or false, got \"1\""},
      {"keepkv:\n  budget: half\n",
       "config.yaml:2: keepkv.budget: must be a finite number, got \"half\""},
      {"keepkv:\n  budget: 0\n",
       "config.yaml:2: keepkv.budget: must be a positive token count or a fraction in (0, 1], got "
       "0"},
      {"keepkv:\n  budget: -5\n",
       "config.yaml:2: keepkv.budget: must be a positive token count or a fraction in (0, 1], got "
       "-5"},
      {"keepkv:\n  budget: 3000000000\n",
       "config.yaml:2: keepkv.budget: must be at most 2147483647 tokens, got 3000000000"},
      {"keepkv:\n  budget: 1.5\n",
       "config.yaml:2: keepkv.budget: over 1 is a token count and must be an integer, got 1.5"},
      {"keepkv:\n  budget: 0.0\n",
       "config.yaml:2: keepkv.budget: must be a positive token count or a fraction in (0, 1], got "
       "0"},
      {"\nkeepkv:\n  alpha: 1\n", "config.yaml:3: keepkv.alpha: must be in [0, 1), got 1"},
      {"keepkv:\n  alpha: -0.1\n", "config.yaml:2: keepkv.alpha: must be in [0, 1), got -0.1"},
      {"keepkv:\n  window: 0\n", "config.yaml:2: keepkv.window: must be >= 1, got 0"},
      {"keepkv:\n  pool: 4\n", "config.yaml:2: keepkv.pool: must be odd and >= 1 (1: none), got 4"},
      {"keepkv:\n  window: 2.5\n", "config.yaml:2: keepkv.window: must be an integer, got \"2.5\""},
      {"keepkv:\n  refresh_every: -1\n",
       "config.yaml:2: keepkv.refresh_every: must be >= 0 (0: never), got -1"},
      {"keepkv:\n  recent: -1\n", "config.yaml:2: keepkv.recent: must be >= 0, got -1"},
      {"keepkv:\n  sink: -2\n", "config.yaml:2: keepkv.sink: must be >= 0, got -2"},
      {"keepkv:\n  min_cosine: 1.5\n",
       "config.yaml:2: keepkv.min_cosine: must be in [-1, 1], got 1.5"},
      {"keepkv:\n  selection: random\n",
       "config.yaml:2: keepkv.selection: must be one of lowest_scores, similar_pairs, into_sink; "
       "got \"random\""},
      {"keepkv:\n  method: average\n",
       "config.yaml:2: keepkv.method: must be one of gqa_fit, group_mean, weighted_mean, convex, "
       "evict; got \"average\""},
      {"keepkv: [1]\n", "config.yaml:1: keepkv: must be a mapping, got a list"},
      {tenant + "      alpha: 2\n",
       "config.yaml:5: tenants[0].keepkv.alpha: must be in [0, 1), got 2"},
      {tenant + "      budget: 0\n",
       "config.yaml:5: tenants[0].keepkv.budget: must be a positive token count or a fraction in "
       "(0, 1], got 0"},
      {tenant + "      method: x\n",
       "config.yaml:5: tenants[0].keepkv.method: must be one of gqa_fit, group_mean, "
       "weighted_mean, convex, evict; got \"x\""},
      {tenant + "      windows: 2\n",
       "config.yaml:5: tenants[0].keepkv.windows: unknown key (expected one of enabled, " +
           cache_store::KeepKvKeys(cache_store::KeepKvScope::kOperator) + ")"},
      // A bad section is reported there, not at the tenants that inherit it.
      {tenant + "      enabled: true\nkeepkv:\n  window: 0\n",
       "config.yaml:7: keepkv.window: must be >= 1, got 0"},
  };
  for (const auto& c : cases) EXPECT_EQ(ParseError(c.yaml), c.error) << c.yaml;
}

}  // namespace
}  // namespace kvd::server
