#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "cache_store/keepkv/keepkv_fields.h"
#include "server/config/api_key.h"
#include "server/config/config_loader.h"
#include "server/config/server_config.h"
#include "tests/support/source_dir.h"
#include "tests/unit/server/config_test_support.h"

namespace kvd::server {
namespace {

using ::testing::HasSubstr;
using config_testing::ExpectKeepKvEq;
using config_testing::kDigestAbc;
using config_testing::kDigestEmpty;
using config_testing::ParseError;
using config_testing::ParseOk;

const std::string kExampleFile = kvd::test_support::SourceDir() + "/deploy/config/example.yaml";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void ExpectSchedulerEq(const scheduler::SchedulerConfig& a, const scheduler::SchedulerConfig& b) {
  EXPECT_EQ(a.max_num_seqs, b.max_num_seqs);
  EXPECT_EQ(a.max_num_batched_tokens, b.max_num_batched_tokens);
  EXPECT_EQ(a.block_size, b.block_size);
  EXPECT_EQ(a.kv_cache_bytes, b.kv_cache_bytes);
  EXPECT_EQ(a.kv_cache_memory_fraction, b.kv_cache_memory_fraction);
  EXPECT_EQ(a.admission_watermark, b.admission_watermark);
  EXPECT_EQ(a.max_queued_requests, b.max_queued_requests);
  EXPECT_EQ(a.max_n, b.max_n);
  EXPECT_EQ(a.compression_tokens_per_step, b.compression_tokens_per_step);
}

// Field by field, so that a failure names the field.
void ExpectSameExceptTenants(const ServerConfig& a, const ServerConfig& b) {
  EXPECT_EQ(a.server.host, b.server.host);
  EXPECT_EQ(a.server.port, b.server.port);
  EXPECT_EQ(a.server.grpc_port, b.server.grpc_port);
  EXPECT_EQ(a.server.io_threads, b.server.io_threads);
  EXPECT_EQ(a.server.max_body_bytes, b.server.max_body_bytes);
  EXPECT_EQ(a.server.max_header_bytes, b.server.max_header_bytes);
  EXPECT_EQ(a.server.read_timeout_seconds, b.server.read_timeout_seconds);
  EXPECT_EQ(a.server.idle_timeout_seconds, b.server.idle_timeout_seconds);
  EXPECT_EQ(a.server.keepalive_interval_seconds, b.server.keepalive_interval_seconds);
  EXPECT_EQ(a.server.drain_timeout_seconds, b.server.drain_timeout_seconds);
  EXPECT_EQ(a.server.health_step_timeout_seconds, b.server.health_step_timeout_seconds);
  EXPECT_TRUE(a.server == b.server);  // and nothing the lines above forgot
  EXPECT_EQ(a.model.path, b.model.path);
  EXPECT_EQ(a.model.name, b.model.name);
  EXPECT_EQ(a.model.backend, b.model.backend);
  EXPECT_EQ(a.model.dtype, b.model.dtype);
  EXPECT_EQ(a.model.tool_parser, b.model.tool_parser);
  EXPECT_EQ(a.model.threads, b.model.threads);
  EXPECT_TRUE(a.model == b.model);
  ExpectSchedulerEq(a.scheduler, b.scheduler);
  EXPECT_EQ(a.store.data_dir, b.store.data_dir);
  EXPECT_EQ(a.store.replica, b.store.replica);
  EXPECT_EQ(a.store.replica_env, b.store.replica_env);
  EXPECT_EQ(a.store.sync_writes, b.store.sync_writes);
  EXPECT_TRUE(a.store == b.store);
  EXPECT_EQ(a.documents.enabled, b.documents.enabled);
  EXPECT_EQ(a.documents.framing, b.documents.framing);
  EXPECT_EQ(a.documents.chat_role, b.documents.chat_role);
  EXPECT_EQ(a.documents.repeat_prompt, b.documents.repeat_prompt);
  EXPECT_EQ(a.documents.repeat_from_prompt, b.documents.repeat_from_prompt);
  EXPECT_EQ(a.documents.answer_prefix, b.documents.answer_prefix);
  EXPECT_EQ(a.documents.head_profile, b.documents.head_profile);
  EXPECT_EQ(a.documents.default_method, b.documents.default_method);
  EXPECT_EQ(a.documents.default_ratio, b.documents.default_ratio);
  EXPECT_EQ(a.documents.default_kv_dtype, b.documents.default_kv_dtype);
  EXPECT_EQ(a.documents.max_document_bytes, b.documents.max_document_bytes);
  EXPECT_EQ(a.documents.upload_wait_seconds, b.documents.upload_wait_seconds);
  EXPECT_EQ(a.documents.memory_tier_bytes, b.documents.memory_tier_bytes);
  EXPECT_EQ(a.documents.default_ttl_seconds, b.documents.default_ttl_seconds);
  EXPECT_EQ(a.documents.expiry_sweep_seconds, b.documents.expiry_sweep_seconds);
  EXPECT_EQ(a.documents.failed_retention_seconds, b.documents.failed_retention_seconds);
  EXPECT_EQ(a.documents.max_documents_per_tenant, b.documents.max_documents_per_tenant);
  EXPECT_EQ(a.documents.max_stored_bytes_per_tenant, b.documents.max_stored_bytes_per_tenant);
  EXPECT_TRUE(a.documents == b.documents);
  ExpectKeepKvEq(a.keepkv, b.keepkv);
  EXPECT_EQ(a.responses.store, b.responses.store);
  EXPECT_EQ(a.responses.ttl_seconds, b.responses.ttl_seconds);
  EXPECT_TRUE(a.responses == b.responses);
  EXPECT_EQ(a.metrics.enabled, b.metrics.enabled);
  EXPECT_TRUE(a.metrics == b.metrics);
  EXPECT_EQ(a.logging.level, b.logging.level);
  EXPECT_EQ(a.logging.format, b.logging.format);
  EXPECT_EQ(a.logging.requests, b.logging.requests);
  EXPECT_TRUE(a.logging == b.logging);
}

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, /*overwrite=*/1);
    }
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(ConfigLoaderTest, EmptyDocumentGivesDefaults) {
  for (const char* yaml : {"", "\n", "# nothing set\n", "---\n", "{}\n", "server:\nmodel: ~\n"}) {
    SCOPED_TRACE(yaml);
    const ServerConfig config = ParseOk(yaml);
    ExpectSameExceptTenants(config, ServerConfig{});
    EXPECT_TRUE(config.tenants.empty());
  }
  EXPECT_TRUE(ServerConfig{}.Validate().ok());
}

TEST(ConfigLoaderTest, ExampleFileEqualsDefaults) {
  absl::StatusOr<ServerConfig> config = LoadServerConfig(kExampleFile);
  ASSERT_TRUE(config.ok()) << config.status();
  ExpectSameExceptTenants(*config, ServerConfig{});
  EXPECT_TRUE(config->tenants.empty());
}

// Every key the loader accepts (as its unknown-key errors list them) appears in the example.
TEST(ConfigLoaderTest, ExampleFileDocumentsEveryKey) {
  const std::string example = ReadFile(kExampleFile);
  const std::string probes[] = {
      "unknown_key: 1\n",
      "server: {unknown_key: 1}\n",
      "model: {unknown_key: 1}\n",
      "scheduler: {unknown_key: 1}\n",
      "store: {unknown_key: 1}\n",
      "documents: {unknown_key: 1}\n",
      "keepkv: {unknown_key: 1}\n",
      "metrics: {unknown_key: 1}\n",
      "logging: {unknown_key: 1}\n",
      "tenants: [{id: a, key_sha256: [" + std::string(kDigestAbc) + "], unknown_key: 1}]\n",
      "tenants: [{id: a, key_sha256: [" + std::string(kDigestAbc) +
          "], keepkv: {unknown_key: 1}}]\n",
  };
  for (const std::string& probe : probes) {
    const std::string error = ParseError(probe);
    const size_t open = error.find("(expected one of ");
    ASSERT_NE(open, std::string::npos) << error;
    std::string list = error.substr(open + 17);
    list = list.substr(0, list.find(')'));
    std::stringstream keys(list);
    std::string key;
    int count = 0;
    while (std::getline(keys, key, ',')) {
      if (key.front() == ' ') key.erase(0, 1);
      EXPECT_THAT(example, HasSubstr(key + ":")) << "undocumented key " << key;
      ++count;
    }
    EXPECT_GT(count, 0);
  }
}

// The commented tenant in the example is a valid tenant once uncommented.
TEST(ConfigLoaderTest, ExampleTenantParses) {
  std::istringstream lines(ReadFile(kExampleFile));
  std::string yaml;
  bool in_tenants = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "tenants: []") {
      in_tenants = true;
      yaml += "tenants:\n";
      continue;
    }
    if (in_tenants && line.rfind("#  ", 0) == 0) {
      yaml += line.substr(1) + "\n";
      continue;
    }
    in_tenants = false;
    yaml += line + "\n";
  }
  ScopedEnv env("KVD_TEAM_A_KEY", "team-a-secret");
  const ServerConfig config = ParseOk(yaml);
  ASSERT_EQ(config.tenants.size(), 1u);
  const TenantConfig& tenant = config.tenants[0];
  EXPECT_EQ(tenant.id, "team-a");
  EXPECT_EQ(tenant.key_sha256, std::vector<std::string>{kDigestAbc});
  EXPECT_EQ(tenant.key_env, "KVD_TEAM_A_KEY");
  EXPECT_EQ(tenant.key_env_sha256, base::Sha256Hex("team-a-secret"));
  EXPECT_TRUE(tenant.keepkv.enabled);
  EXPECT_EQ(tenant.keepkv.params.budget.tokens, 512);
  EXPECT_TRUE(
      (tenant == TenantConfig{.id = "team-a",
                              .key_sha256 = {kDigestAbc},
                              .key_env = "KVD_TEAM_A_KEY",
                              .key_env_sha256 = base::Sha256Hex("team-a-secret"),
                              .keepkv = {.enabled = true, .params = {.budget = {.tokens = 512}}}}));
}

TEST(ConfigLoaderTest, ReadsTheKvEventsTransport) {
  const ServerConfig config = ParseOk(R"(
prefix_cache:
  kv_events: true
  kv_events_endpoint: "tcp://*:5557"
  kv_events_replay_endpoint: "tcp://*:5558"
  kv_events_topic: "kv@10.0.0.7@llama3"
)");
  EXPECT_EQ(config.kv_events_zmq.endpoint, "tcp://*:5557");
  EXPECT_EQ(config.kv_events_zmq.replay_endpoint, "tcp://*:5558");
  EXPECT_EQ(config.kv_events_zmq.topic, "kv@10.0.0.7@llama3");
  EXPECT_EQ(ParseOk("").kv_events_zmq, KvEventsZmqConfig{});
}

TEST(ConfigLoaderTest, ReadsEverySection) {
  const ServerConfig config = ParseOk(R"(
server:
  host: 127.0.0.1
  port: 0
  grpc_port: 9001
  io_threads: 4
  max_body_bytes: 1048576
  max_header_bytes: 8KiB
  read_timeout_seconds: 2.5
  idle_timeout_seconds: 10
  keepalive_interval_seconds: 0
  drain_timeout_seconds: 0
  health_step_timeout_seconds: 0
model:
  path: /srv/models/llama-3-8b/
  name: llama3
  backend: cuda
  dtype: bf16
  threads: 8
  tool_parser: hermes
scheduler:
  max_num_seqs: 64
  max_num_batched_tokens: 4096
  block_size: 32
  kv_cache_bytes: 512MiB
  kv_cache_memory_fraction: 0.9
  kv_cache_dtype: bf16
  admission_watermark: 0.05
  max_queued_requests: 100
  max_n: 4
prefix_cache:
  enabled: false
  max_pool_fraction: 0.5
  kv_events: true
speculative:
  method: ngram
  num_speculative_tokens: 6
  prompt_lookup_min: 1
  prompt_lookup_max: 3
  disable_by_batch_size: 32
store:
  data_dir: /var/lib/kvd
responses:
  store: false
  ttl_seconds: 3600
metrics:
  enabled: false
logging:
  level: debug
  format: json
  requests: False
)");
  EXPECT_EQ(config.server.host, "127.0.0.1");
  EXPECT_EQ(config.server.port, 0);
  EXPECT_EQ(config.server.grpc_port, 9001);
  EXPECT_EQ(config.server.io_threads, 4);
  EXPECT_EQ(config.server.max_body_bytes, 1048576u);
  EXPECT_EQ(config.server.max_header_bytes, 8192u);
  EXPECT_DOUBLE_EQ(config.server.read_timeout_seconds, 2.5);
  EXPECT_DOUBLE_EQ(config.server.idle_timeout_seconds, 10.0);
  EXPECT_DOUBLE_EQ(config.server.keepalive_interval_seconds, 0.0);
  EXPECT_DOUBLE_EQ(config.server.drain_timeout_seconds, 0.0);
  EXPECT_DOUBLE_EQ(config.server.health_step_timeout_seconds, 0.0);
  EXPECT_EQ(config.model.path, "/srv/models/llama-3-8b/");
  EXPECT_EQ(config.model.name, "llama3");
  EXPECT_EQ(config.model.ServedName(), "llama3");
  EXPECT_EQ(config.model.backend, "cuda");
  EXPECT_EQ(config.model.dtype, "bf16");
  EXPECT_EQ(config.model.threads, 8);
  EXPECT_EQ(config.model.tool_parser, "hermes");
  EXPECT_EQ(config.scheduler.max_num_seqs, 64);
  EXPECT_EQ(config.scheduler.max_num_batched_tokens, 4096);
  EXPECT_EQ(config.scheduler.block_size, 32);
  EXPECT_EQ(config.scheduler.kv_cache_bytes, size_t{512} << 20);
  EXPECT_DOUBLE_EQ(config.scheduler.kv_cache_memory_fraction, 0.9);
  EXPECT_EQ(config.scheduler.kv_cache_dtype, kernels::DType::kBF16);
  EXPECT_DOUBLE_EQ(config.scheduler.admission_watermark, 0.05);
  EXPECT_EQ(config.scheduler.max_queued_requests, 100);
  EXPECT_EQ(config.scheduler.max_n, 4);
  EXPECT_FALSE(config.scheduler.prefix_cache.enabled);
  EXPECT_DOUBLE_EQ(config.scheduler.prefix_cache.max_pool_fraction, 0.5);
  EXPECT_TRUE(config.scheduler.prefix_cache.kv_events);
  EXPECT_EQ(config.scheduler.speculative,
            (scheduler::SpeculativeConfig{.method = scheduler::SpeculativeMethod::kNgram,
                                          .num_speculative_tokens = 6,
                                          .prompt_lookup_min = 1,
                                          .prompt_lookup_max = 3,
                                          .disable_by_batch_size = 32}));
  EXPECT_EQ(config.store.data_dir, "/var/lib/kvd");
  EXPECT_FALSE(config.responses.store);
  EXPECT_EQ(config.responses.ttl_seconds, 3600);
  EXPECT_FALSE(config.metrics.enabled);
  EXPECT_EQ(config.logging.level, "debug");
  EXPECT_EQ(config.logging.format, "json");
  EXPECT_FALSE(config.logging.requests);
}

TEST(ConfigLoaderTest, KeysLeftOutKeepTheirDefaults) {
  const ServerConfig config = ParseOk("server:\n  port: 9000\nscheduler:\n  max_n: 2\n");
  ServerConfig expected;
  expected.server.port = 9000;
  expected.scheduler.max_n = 2;
  ExpectSameExceptTenants(config, expected);
}

TEST(ConfigLoaderTest, ServedNameIsTheLastComponentOfPath) {
  EXPECT_EQ(ParseOk("").model.ServedName(), "kvd-tiny");
  EXPECT_EQ(ParseOk("model: {path: /m/Llama-3.2-1B/}").model.ServedName(), "Llama-3.2-1B");
  EXPECT_EQ(ParseOk("model: {path: tiny}").model.ServedName(), "tiny");
  EXPECT_EQ(ParseError("model: {path: /}"),
            "config.yaml:1: model.name: must be set: model.path \"/\" has no last component to "
            "name the model");
}

TEST(ConfigLoaderTest, ByteSizesTakeUnits) {
  const struct {
    const char* text;
    size_t bytes;
  } cases[] = {
      {"1073741824", size_t{1} << 30},
      {"\"1073741824\"", size_t{1} << 30},
      {"512MiB", size_t{512} << 20},
      {"1GiB", size_t{1} << 30},
      {"16KiB", size_t{16} << 10},
      {"1GB", 1000000000},
      {"100B", 100},
      {"\"2 MiB\"", size_t{2} << 20},
      {"3KB", 3000},
      {"1TiB", size_t{1} << 40},
      {"0", 0},
  };
  for (const auto& c : cases) {
    const ServerConfig config =
        ParseOk(std::string("scheduler:\n  kv_cache_memory_fraction: 0.5\n  kv_cache_bytes: ") +
                c.text + "\n");
    EXPECT_EQ(config.scheduler.kv_cache_bytes, c.bytes) << c.text;
  }
  EXPECT_EQ(ParseOk("server: {max_body_bytes: 1MB}").server.max_body_bytes, 1000000u);
  EXPECT_EQ(ParseError("\n\nscheduler:\n  kv_cache_bytes: 1.5GiB\n"),
            "config.yaml:4: scheduler.kv_cache_bytes: expected a byte size such as 1073741824, "
            "\"512MiB\" or \"1GB\" (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), got \"1.5GiB\"");
  EXPECT_THAT(ParseError("server:\n  max_header_bytes: [1]\n"),
              HasSubstr("config.yaml:2: server.max_header_bytes: must be a byte size"));
}

TEST(ConfigLoaderTest, WrongTypesNameKeyAndLine) {
  const struct {
    std::string yaml;
    std::string error;
  } cases[] = {
      {"server:\n  port: eighty\n",
       "config.yaml:2: server.port: must be an integer, got \"eighty\""},
      {"server:\n  port: \"8000\"\n",
       "config.yaml:2: server.port: must be an integer, got \"8000\""},
      {"server:\n  port: 80.5\n", "config.yaml:2: server.port: must be an integer, got \"80.5\""},
      {"server:\n  port:\n", "config.yaml:2: server.port: must be an integer, got null"},
      {"server:\n  io_threads: 99999999999\n",
       "config.yaml:2: server.io_threads: must be in [-2147483648, 2147483647], got 99999999999"},
      {"server:\n  host: [a, b]\n", "config.yaml:2: server.host: must be a string, got a list"},
      {"model:\n  name:\n",
       "config.yaml:2: model.name: must be a string, got null (write \"\" for an empty string)"},
      {"model:\n  path: {a: 1}\n", "config.yaml:2: model.path: must be a string, got a mapping"},
      {"metrics:\n  enabled: yes\n",
       "config.yaml:2: metrics.enabled: must be true or false, got \"yes\""},
      {"metrics:\n  enabled: \"true\"\n",
       "config.yaml:2: metrics.enabled: must be true or false, got \"true\""},
      {"scheduler:\n  admission_watermark: lots\n",
       "config.yaml:2: scheduler.admission_watermark: must be a finite number, got \"lots\""},
      {"scheduler:\n  admission_watermark: .nan\n",
       "config.yaml:2: scheduler.admission_watermark: must be a finite number, got \".nan\""},
      {"# header\nserver: 8000\n", "config.yaml:2: server: must be a mapping, got \"8000\""},
      {"logging: [a]\n", "config.yaml:1: logging: must be a mapping, got a list"},
      {"tenants: {id: a}\n", "config.yaml:1: tenants: must be a list, got a mapping"},
      {"tenants:\n  - just-a-string\n",
       "config.yaml:2: tenants[0]: must be a mapping, got \"just-a-string\""},
      {"tenants:\n  - id: a\n    key_sha256: {x: 1}\n",
       "config.yaml:3: tenants[0].key_sha256: must be a list of strings, got a mapping"},
      {"tenants:\n  - id: a\n    key_sha256:\n      - [x]\n",
       "config.yaml:4: tenants[0].key_sha256[0]: must be a string, got a list"},
      {"tenants:\n  - id: a\n    key_env: KVD_X\n    tokens_per_minute: 1e9\n",
       "config.yaml:4: tenants[0].tokens_per_minute: must be an integer, got \"1e9\""},
      {"- server\n", "config.yaml:1: the top level must be a mapping, got a list"},
      {"tenants:\n  -\n", "config.yaml:1: tenants[0]: missing required key id"},
      {"just text\n", "config.yaml:1: the top level must be a mapping, got \"just text\""},
      {"server:\n  [a]: 1\n", "config.yaml:2: server: keys must be strings, got a list"},
  };
  ScopedEnv env("KVD_X", "x");
  for (const auto& c : cases) EXPECT_EQ(ParseError(c.yaml), c.error) << c.yaml;
}

TEST(ConfigLoaderTest, InvalidValuesNameKeyAndLine) {
  const struct {
    std::string yaml;
    std::string error;
  } cases[] = {
      {"\n\n\n\n\n\n\n\n\n\n\nscheduler:\n  max_num_seqs: 0\n",
       "config.yaml:13: scheduler.max_num_seqs: must be at least 1, got 0"},
      {"scheduler:\n  max_num_seqs: 64\n  max_num_batched_tokens: 32\n",
       "config.yaml:3: scheduler.max_num_batched_tokens: max_num_batched_tokens (32) must be at "
       "least max_num_seqs (64) so that every running sequence decodes in every step"},
      {"scheduler:\n  block_size: 2048\n",
       "config.yaml:2: scheduler.block_size: must be in [1, 1024], got 2048"},
      {"scheduler:\n  kv_cache_memory_fraction: 1.5\n",
       "config.yaml:2: scheduler.kv_cache_memory_fraction: must be in [0, 1], got 1.5"},
      {"scheduler:\n  admission_watermark: 0.9\n",
       "config.yaml:2: scheduler.admission_watermark: must be in [0, 0.5], got 0.9"},
      {"prefix_cache:\n  max_pool_fraction: 0\n",
       "config.yaml:2: prefix_cache.max_pool_fraction: must be in (0, 1], got 0"},
      {"prefix_cache:\n  kv_events_endpoint: tcp://*:5557\n",
       "config.yaml:2: prefix_cache.kv_events_endpoint: needs prefix_cache.enabled and "
       "prefix_cache.kv_events"},
      {"prefix_cache:\n  kv_events: true\n  kv_events_replay_endpoint: tcp://*:5558\n",
       "config.yaml:3: prefix_cache.kv_events_replay_endpoint: needs "
       "prefix_cache.kv_events_endpoint"},
      {"prefix_cache:\n  kv_events: true\n  kv_events_endpoint: inproc://events\n",
       "config.yaml:3: prefix_cache.kv_events_endpoint: must be reachable from outside kvd "
       "(tcp:// or ipc://)"},
      {"prefix_cache:\n  kv_events: true\n  kv_events_endpoint: \"tcp://*:1 2\"\n",
       "config.yaml:3: prefix_cache.kv_events_endpoint: must not contain whitespace or control "
       "characters"},
      {"scheduler:\n  max_queued_requests: 0\n",
       "config.yaml:2: scheduler.max_queued_requests: must be at least 1, got 0"},
      {"scheduler:\n  max_n: 0\n", "config.yaml:2: scheduler.max_n: must be at least 1, got 0"},
      {"# kv\nscheduler:\n  kv_cache_bytes: 0\n",
       "config.yaml:2: scheduler: set kv_cache_bytes or kv_cache_memory_fraction"},
      {"server:\n  port: 70000\n", "config.yaml:2: server.port: must be in [0, 65535], got 70000"},
      {"responses:\n  ttl_seconds: 59\n",
       "config.yaml:2: responses.ttl_seconds: must be in [60, 315360000], got 59"},
      {"server:\n  port: -1\n", "config.yaml:2: server.port: must be in [0, 65535], got -1"},
      {"server:\n  grpc_port: 65536\n",
       "config.yaml:2: server.grpc_port: must be in [0, 65535], got 65536"},
      {"server:\n  port: 9000\n  grpc_port: 9000\n",
       "config.yaml:3: server.grpc_port: must differ from server.port (9000); 0 turns gRPC off"},
      {"server:\n  io_threads: 0\n",
       "config.yaml:2: server.io_threads: must be in [1, 256], got 0"},
      {"server:\n  io_threads: 257\n",
       "config.yaml:2: server.io_threads: must be in [1, 256], got 257"},
      {"server:\n  host: \"\"\n", "config.yaml:2: server.host: must not be empty"},
      {"server:\n  max_body_bytes: 0\n",
       "config.yaml:2: server.max_body_bytes: must be at least 1, got 0"},
      {"server:\n  max_header_bytes: 4GiB\n",
       "config.yaml:2: server.max_header_bytes: must be in [1, 4294967295], got 4294967296"},
      {"server:\n  read_timeout_seconds: 0\n",
       "config.yaml:2: server.read_timeout_seconds: must be in (0, 86400] seconds, got 0"},
      {"server:\n  idle_timeout_seconds: -1\n",
       "config.yaml:2: server.idle_timeout_seconds: must be in (0, 86400] seconds, got -1"},
      {"server:\n  keepalive_interval_seconds: -1\n",
       "config.yaml:2: server.keepalive_interval_seconds: must be in [0, 86400] seconds, got -1"},
      {"server:\n  drain_timeout_seconds: 90000\n",
       "config.yaml:2: server.drain_timeout_seconds: must be in [0, 86400] seconds, got 90000"},
      {"server:\n  health_step_timeout_seconds: -5\n",
       "config.yaml:2: server.health_step_timeout_seconds: must be in [0, 86400] seconds, got -5"},
      {"model:\n  path: \"\"\n", "config.yaml:2: model.path: must not be empty"},
      {"model:\n  name: \"my model\"\n",
       "config.yaml:2: model.name: must not contain whitespace or control characters"},
      {"model:\n  backend: tpu\n",
       "config.yaml:2: model.backend: must be one of cpu, cuda, got \"tpu\""},
      {"scheduler:\n  block_size: 8\n  kv_cache_dtype: f16\n",
       "config.yaml:3: scheduler.kv_cache_dtype: must be one of f32, bf16, got \"f16\""},
      {"model:\n  tool_parser: mistral\n",
       "config.yaml:2: model.tool_parser: must be one of auto, none, hermes, llama3_json, got "
       "\"mistral\""},
      {"model:\n  dtype: int3\n",
       "config.yaml:2: model.dtype: must be one of auto, f32, bf16, f16, int8, int4, got \"int3\""},
      {"model:\n  threads: -1\n", "config.yaml:2: model.threads: must be in [0, 1024], got -1"},
      {"store:\n  data_dir: \"\"\n", "config.yaml:2: store.data_dir: must not be empty"},
      {"documents:\n  failed_retention_seconds: -1\n",
       "config.yaml:2: documents.failed_retention_seconds: must be at least 0 (0: until the next "
       "sweep), got -1"},
      {"logging:\n  level: verbose\n",
       "config.yaml:2: logging.level: must be one of trace, debug, info, warn, error, off, got "
       "\"verbose\""},
      {"logging:\n  format: xml\n",
       "config.yaml:2: logging.format: must be one of text, json, got \"xml\""},
  };
  for (const auto& c : cases) EXPECT_EQ(ParseError(c.yaml), c.error) << c.yaml;
}

TEST(ConfigLoaderTest, UnknownKeysAtEveryLevel) {
  EXPECT_EQ(ParseError("server:\n  port: 1\n\n\n\n\n  prot: 80\n"),
            "config.yaml:7: server.prot: unknown key (expected one of host, port, grpc_port, "
            "io_threads, max_body_bytes, max_header_bytes, max_connections, "
            "max_connections_per_client, read_timeout_seconds, "
            "idle_timeout_seconds, keepalive_interval_seconds, drain_timeout_seconds, "
            "health_step_timeout_seconds)");
  EXPECT_EQ(ParseError("store: {}\nschedular:\n  max_n: 2\n"),
            "config.yaml:2: schedular: unknown key (expected one of server, model, scheduler, "
            "prefix_cache, speculative, auth, tenants, store, documents, keepkv, responses, "
            "structured_outputs, metrics, logging)");
  EXPECT_EQ(ParseError("model:\n  paht: x\n"),
            "config.yaml:2: model.paht: unknown key (expected one of path, name, backend, dtype, "
            "threads, tool_parser)");
  EXPECT_EQ(ParseError("scheduler:\n  max_seqs: 2\n"),
            "config.yaml:2: scheduler.max_seqs: unknown key (expected one of max_num_seqs, "
            "max_num_batched_tokens, block_size, kv_cache_bytes, kv_cache_memory_fraction, "
            "kv_cache_dtype, "
            "admission_watermark, max_queued_requests, max_n, compression_tokens_per_step, "
            "constraint_threads)");
  EXPECT_EQ(ParseError("store:\n  dir: x\n"),
            "config.yaml:2: store.dir: unknown key (expected one of data_dir, sync_writes, "
            "replica, replica_env, remote)");
  EXPECT_THAT(ParseError("store:\n  remote:\n    host: x\n"),
              HasSubstr("config.yaml:3: store.remote.host: unknown key"));
  EXPECT_THAT(ParseError("documents:\n  chat_role: assistant\n"),
              HasSubstr("config.yaml:2: documents.chat_role"));
  EXPECT_THAT(ParseError("documents:\n  default_kv_dtype: int4\n"),
              HasSubstr("config.yaml:2: documents.default_kv_dtype"));
  EXPECT_THAT(ParseError("documents:\n  framing: raw\n"),
              HasSubstr("config.yaml:2: documents.framing"));
  EXPECT_THAT(ParseError("documents:\n  default_method: kvzip_heads\n"),
              HasSubstr("documents.default_method: kvzip_heads needs documents.head_profile"));
  EXPECT_THAT(ParseError("documents:\n  repeat_prompt: \"\"\n"),
              HasSubstr("documents.repeat_prompt: must not be empty"));
  EXPECT_THAT(ParseError("documents:\n  repeat_from_prompt: \"" + std::string(5000, 'x') + "\"\n"),
              HasSubstr("documents.repeat_from_prompt: must be at most 4096 bytes"));
  EXPECT_THAT(ParseError("documents:\n  default_method: none\n"),
              HasSubstr("documents.default_ratio: must be 1"));
  EXPECT_THAT(ParseError("documents:\n  default_method: snapkv\n"),
              HasSubstr("documents.default_method"));
  EXPECT_THAT(ParseError("speculative:\n  method: eagle\n"),
              HasSubstr("config.yaml:2: speculative.method"));
  EXPECT_THAT(ParseError("speculative:\n  num_speculative_tokens: 33\n"),
              HasSubstr("speculative.num_speculative_tokens"));
  EXPECT_THAT(ParseError("speculative:\n  method: draft_model\n"),
              HasSubstr("speculative.model: a draft model directory goes with method "
                        "draft_model"));
  EXPECT_THAT(ParseError("speculative:\n  method: ngram\n  model: /models/draft\n"),
              HasSubstr("speculative.model"));
  EXPECT_THAT(ParseError("speculative:\n  dtype: int5\n"), HasSubstr("speculative.dtype"));
  EXPECT_THAT(ParseError("speculative:\n  disable_by_batch_size: -1\n"),
              HasSubstr("speculative.disable_by_batch_size"));
  EXPECT_THAT(ParseError("speculative:\n  prompt_lookup_min: 5\n  prompt_lookup_max: 3\n"),
              HasSubstr("speculative.prompt_lookup_min: prompt_lookup_min (5) must be at most "
                        "prompt_lookup_max (3)"));
  EXPECT_EQ(ParseError("metrics:\n  enable: true\n"),
            "config.yaml:2: metrics.enable: unknown key (expected one of enabled)");
  EXPECT_EQ(ParseError("logging:\n  lvl: info\n"),
            "config.yaml:2: logging.lvl: unknown key (expected one of level, format, requests)");
  EXPECT_EQ(ParseError(std::string("tenants:\n  - id: a\n    key_sha256: [") + kDigestAbc +
                       "]\n  - id: b\n    key_sha256: [" + kDigestEmpty + "]\n    wieght: 2\n"),
            "config.yaml:6: tenants[1].wieght: unknown key (expected one of id, key_sha256, "
            "key_env, weight, priority, max_concurrent_requests, max_queued_requests, "
            "max_running_sequences, requests_per_minute, tokens_per_minute, max_documents, "
            "max_stored_bytes, prefix_cache, keepkv)");
  EXPECT_EQ(ParseError("keepkv:\n  sinks: 4\n"),
            "config.yaml:2: keepkv.sinks: unknown key (expected one of enabled, " +
                cache_store::KeepKvKeys(cache_store::KeepKvScope::kOperator) + ")");
  // key_env_sha256 is filled by the loader, never read from the file.
  EXPECT_THAT(ParseError(std::string("tenants:\n  - id: a\n    key_env_sha256: ") + kDigestAbc),
              HasSubstr("config.yaml:3: tenants[0].key_env_sha256: unknown key"));
}

TEST(ConfigLoaderTest, DuplicateKeysAreErrors) {
  EXPECT_EQ(ParseError("server:\n  port: 1\n  port: 2\n"),
            "config.yaml:3: server.port: duplicate key (first on line 2)");
  EXPECT_EQ(ParseError("server: {}\nmodel: {}\nserver: {}\n"),
            "config.yaml:3: server: duplicate key (first on line 1)");
}

TEST(ConfigLoaderTest, SyntaxErrorsNameTheLine) {
  EXPECT_THAT(ParseError("server:\n  port: [1, 2\nmodel: {}\n"),
              testing::StartsWith("config.yaml:"));
  EXPECT_THAT(ParseError("server:\n  port: [1, 2\nmodel: {}\n"), HasSubstr("not valid YAML"));
  EXPECT_THAT(ParseError("server:\n  port: 1\n   host: x\n"),
              testing::StartsWith("config.yaml:3: not valid YAML"));
  EXPECT_EQ(ParseError("server: {}\n---\nmodel: {}\n"),
            "config.yaml:2: expected one YAML document, found 2");
  // yaml-cpp's own LoadAll never returns on these.
  for (const char* stuck : {",", ",a", ", x: 1"}) {
    EXPECT_THAT(ParseError(stuck), testing::HasSubstr("not valid YAML")) << stuck;
  }
  EXPECT_FALSE(ParseError("\n\n, x").empty());
}

TEST(ConfigLoaderTest, ReadsTenants) {
  const std::string upper_abc = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
  const ServerConfig config = ParseOk(R"(
tenants:
  - id: team.a_1-x
    key_sha256:
      - )" + upper_abc + R"(
      - )" + kDigestEmpty + R"(
    weight: 2.5
    priority: -1
    max_concurrent_requests: 8
    max_queued_requests: 16
    max_running_sequences: 4
    requests_per_minute: 600
    tokens_per_minute: 10000000000
    prefix_cache:
      share_with: support-bots
  - id: b
    key_sha256: )" + base::Sha256Hex("b-key") +
                                      R"(
)");
  ASSERT_EQ(config.tenants.size(), 2u);
  const TenantConfig& a = config.tenants[0];
  EXPECT_EQ(a.id, "team.a_1-x");
  EXPECT_EQ(a.key_sha256, (std::vector<std::string>{kDigestAbc, kDigestEmpty}));
  EXPECT_EQ(a.KeyDigests(), a.key_sha256);
  EXPECT_DOUBLE_EQ(a.weight, 2.5);
  EXPECT_EQ(a.priority, -1);
  EXPECT_EQ(a.max_concurrent_requests, 8);
  EXPECT_EQ(a.max_queued_requests, 16);
  EXPECT_EQ(a.max_running_sequences, 4);
  EXPECT_EQ(a.requests_per_minute, 600);
  EXPECT_EQ(a.tokens_per_minute, 10000000000);
  const scheduler::TenantPolicy policy = a.Policy();
  EXPECT_EQ(policy.id, "team.a_1-x");
  EXPECT_DOUBLE_EQ(policy.weight, 2.5);
  EXPECT_EQ(policy.max_running_sequences, 4);
  EXPECT_EQ(policy.max_queued_requests, 16);
  EXPECT_EQ(policy.prefix_cache_salt, "support-bots");
  EXPECT_EQ(config.tenants[1].Policy().prefix_cache_salt, "");

  const TenantConfig& b = config.tenants[1];  // one string reads as a list of one
  EXPECT_TRUE((b == TenantConfig{.id = "b", .key_sha256 = {base::Sha256Hex("b-key")}}));
}

TEST(ConfigLoaderTest, TenantErrors) {
  const std::string abc = kDigestAbc;
  const std::string empty = kDigestEmpty;
  const struct {
    std::string yaml;
    std::string error;
  } cases[] = {
      {"tenants:\n  - id: a\n    key_sha256: [" + abc + "]\n  - id: a\n    key_sha256: [" + empty +
           "]\n",
       "config.yaml:4: tenants[1].id: duplicate tenant id \"a\" (also tenants[0])"},
      {"tenants:\n  - id: a\n    key_sha256: [" + abc + "]\n  - id: b\n    key_sha256:\n      - " +
           empty + "\n      - " + abc + "\n",
       "config.yaml:7: tenants[1].key_sha256[1]: the same API key as tenants[0].key_sha256[0]; a "
       "key may belong to one tenant only"},
      // Digests are compared after lower-casing.
      {"tenants:\n  - {id: a, key_sha256: [" + abc + "]}\n  - {id: b, key_sha256: [BA" +
           abc.substr(2) + "]}\n",
       "config.yaml:3: tenants[1].key_sha256[0]: the same API key as tenants[0].key_sha256[0]; a "
       "key may belong to one tenant only"},
      {"tenants:\n  - key_sha256: [" + abc + "]\n",
       "config.yaml:2: tenants[0]: missing required key id"},
      {"tenants:\n  - id: \"has space\"\n    key_sha256: [" + abc + "]\n",
       "config.yaml:2: tenants[0].id: must match [A-Za-z0-9._-]{1,64}, got \"has space\""},
      {"tenants:\n  - id: " + std::string(65, 'x') + "\n    key_sha256: [" + abc + "]\n",
       "config.yaml:2: tenants[0].id: must match [A-Za-z0-9._-]{1,64}, got \"" +
           std::string(65, 'x') + "\""},
      {"tenants:\n  - id: a\n    key_sha256: [" + abc + "]\n    prefix_cache: {share_with: \"a b\"}\n",
       "config.yaml:4: tenants[0].prefix_cache.share_with: must match [A-Za-z0-9._-]{1,64}, got "
       "\"a b\""},
      {"tenants:\n  - id: a\n    weight: 2\n",
       "config.yaml:2: tenants[0]: tenant \"a\" needs at least one API key (key_sha256 or "
       "key_env)"},
      {"tenants:\n  - id: a\n    key_sha256: []\n",
       "config.yaml:2: tenants[0]: tenant \"a\" needs at least one API key (key_sha256 or "
       "key_env)"},
      {"tenants:\n  - id: a\n    key_sha256:\n      - abc\n",
       "config.yaml:4: tenants[0].key_sha256[0]: must be a SHA-256 digest: 64 lower-case hex "
       "digits"},
      {"tenants:\n  - id: a\n    key_sha256:\n      - " + std::string(64, 'g') + "\n",
       "config.yaml:4: tenants[0].key_sha256[0]: must be a SHA-256 digest: 64 lower-case hex "
       "digits"},
      {"tenants:\n  - id: a\n    key_sha256: [" + abc + "]\n    weight: 0\n",
       "config.yaml:4: tenants[0].weight: must be greater than 0, got 0"},
      {"tenants:\n  - id: a\n    key_sha256: [" + abc + "]\n    max_concurrent_requests: -1\n",
       "config.yaml:4: tenants[0].max_concurrent_requests: must be at least 0 (0: unlimited), got "
       "-1"},
      {"tenants:\n  - id: a\n    key_sha256: [" + abc + "]\n    tokens_per_minute: -5\n",
       "config.yaml:4: tenants[0].tokens_per_minute: must be at least 0 (0: unlimited), got -5"},
  };
  for (const auto& c : cases) EXPECT_EQ(ParseError(c.yaml), c.error) << c.yaml;
}

TEST(ConfigLoaderTest, AuthModeMustAgreeWithTheTenants) {
  const std::string tenant =
      "tenants:\n  - id: a\n    key_sha256: [" + std::string(kDigestAbc) + "]\n";
  EXPECT_EQ(ParseOk("").auth, "auto");
  EXPECT_EQ(ParseOk("auth: required\n" + tenant).auth, "required");
  EXPECT_EQ(ParseOk("auth: disabled\n").auth, "disabled");
  EXPECT_EQ(ParseError("auth: required\n"),
            "config.yaml:1: auth: is \"required\" but `tenants` lists none");
  EXPECT_EQ(ParseError("auth: disabled\n" + tenant),
            "config.yaml:1: auth: is \"disabled\" but `tenants` lists 1");
  EXPECT_EQ(ParseError("auth: off\n"),
            "config.yaml:1: auth: must be one of auto, required, disabled, got \"off\"");
}

TEST(ConfigLoaderTest, ConnectionLimits) {
  const ServerConfig config =
      ParseOk("server:\n  max_connections: 10\n  max_connections_per_client: 0\n");
  EXPECT_EQ(config.server.max_connections, 10);
  EXPECT_EQ(config.server.max_connections_per_client, 0);
  EXPECT_EQ(ParseError("server:\n  max_connections: -1\n"),
            "config.yaml:2: server.max_connections: must be in [0, 1000000], got -1");
}

TEST(ConfigLoaderTest, KeyEnvIsReadFromTheEnvironment) {
  ScopedEnv env("KVD_CONFIG_TEST_KEY", "sk-test-123");
  const ServerConfig config = ParseOk(std::string("tenants:\n  - id: a\n    key_sha256: [") +
                                      kDigestAbc + "]\n    key_env: KVD_CONFIG_TEST_KEY\n");
  ASSERT_EQ(config.tenants.size(), 1u);
  EXPECT_EQ(config.tenants[0].key_env, "KVD_CONFIG_TEST_KEY");
  EXPECT_EQ(config.tenants[0].key_env_sha256, base::Sha256Hex("sk-test-123"));
  EXPECT_EQ(config.tenants[0].KeyDigests(),
            (std::vector<std::string>{kDigestAbc, base::Sha256Hex("sk-test-123")}));

  // A key from the environment counts on its own, and clashes like any other.
  EXPECT_EQ(ParseOk("tenants:\n  - id: a\n    key_env: KVD_CONFIG_TEST_KEY\n").tenants.size(), 1u);
  EXPECT_EQ(ParseError("tenants:\n  - id: a\n    key_env: KVD_CONFIG_TEST_KEY\n  - id: b\n"
                       "    key_sha256: [" +
                       base::Sha256Hex("sk-test-123") + "]\n"),
            "config.yaml:5: tenants[1].key_sha256[0]: the same API key as tenants[0].key_env; a "
            "key may belong to one tenant only");
}

TEST(ConfigLoaderTest, StoreRemoteIsReadWithItsPasswordFromTheEnvironmentAndChecked) {
  ScopedEnv env("KVD_CONFIG_TEST_REDIS", "s3cret");
  const ServerConfig config = ParseOk(
      "store:\n  remote:\n    url: redis://redis.kvd:6380/2\n    user: kvd\n"
      "    password_env: KVD_CONFIG_TEST_REDIS\n    timeout_seconds: 0.5\n"
      "    max_payload_bytes: 64MiB\n    key_prefix: \"prod:\"\n"
      "    processing_lease_seconds: 600\n");
  const documents::RemoteTierConfig& remote = config.store.remote;
  EXPECT_EQ(remote.url, "redis://redis.kvd:6380/2");
  EXPECT_EQ(remote.user, "kvd");
  EXPECT_EQ(remote.password, "s3cret");
  EXPECT_EQ(remote.timeout_seconds, 0.5);
  EXPECT_EQ(remote.max_payload_bytes, size_t{64} << 20);
  EXPECT_EQ(remote.key_prefix, "prod:");
  EXPECT_EQ(remote.processing_lease_seconds, 600);
  EXPECT_EQ(ParseOk("store: {}\n").store.remote.url, "");

  EXPECT_THAT(ParseError("store:\n  remote:\n    url: rediss://redis:6379\n"),
              HasSubstr("store.remote.url: Redis URL: rediss:// (TLS) is not supported"));
  EXPECT_THAT(ParseError("store:\n  remote:\n    url: redis://redis:99999\n"),
              HasSubstr("store.remote.url: Redis URL: the port must be"));
  EXPECT_THAT(ParseError("store:\n  remote:\n    timeout_seconds: 0\n"),
              HasSubstr("store.remote.timeout_seconds: must be in (0, 60]"));
  EXPECT_THAT(ParseError("store:\n  remote:\n    max_payload_bytes: 0\n"),
              HasSubstr("store.remote.max_payload_bytes"));
  EXPECT_THAT(ParseError("store:\n  remote:\n    processing_lease_seconds: 0\n"),
              HasSubstr("store.remote.processing_lease_seconds"));
  ScopedEnv missing("KVD_CONFIG_TEST_REDIS_MISSING", nullptr);
  EXPECT_EQ(ParseError("store:\n  remote:\n    password_env: KVD_CONFIG_TEST_REDIS_MISSING\n"),
            "config.yaml:3: store.remote.password_env: environment variable "
            "KVD_CONFIG_TEST_REDIS_MISSING is not set");
}

TEST(ConfigLoaderTest, KeyEnvMustBeSetAndNonEmpty) {
  {
    ScopedEnv env("KVD_CONFIG_TEST_MISSING", nullptr);
    EXPECT_EQ(ParseError("tenants:\n  - id: a\n    key_env: KVD_CONFIG_TEST_MISSING\n"),
              "config.yaml:3: tenants[0].key_env: environment variable KVD_CONFIG_TEST_MISSING "
              "is not set");
  }
  {
    ScopedEnv env("KVD_CONFIG_TEST_EMPTY", "");
    EXPECT_EQ(ParseError("tenants:\n  - id: a\n    key_env: KVD_CONFIG_TEST_EMPTY\n"),
              "config.yaml:3: tenants[0].key_env: environment variable KVD_CONFIG_TEST_EMPTY is "
              "empty");
  }
}

TEST(ConfigLoaderTest, ReplicaComesFromTheFileOrTheEnvironment) {
  EXPECT_EQ(ParseOk("store:\n  replica: kvd-0\n").store.replica, "kvd-0");
  {
    ScopedEnv env("KVD_CONFIG_TEST_POD", "kvd-3");
    EXPECT_EQ(ParseOk("store:\n  replica_env: KVD_CONFIG_TEST_POD\n").store.replica, "kvd-3");
    // A literal name wins over the variable.
    EXPECT_EQ(ParseOk("store:\n  replica: a\n  replica_env: KVD_CONFIG_TEST_POD\n").store.replica,
              "a");
  }
  {
    ScopedEnv env("KVD_CONFIG_TEST_POD", nullptr);
    EXPECT_EQ(ParseError("store:\n  replica_env: KVD_CONFIG_TEST_POD\n"),
              "config.yaml:2: store.replica_env: environment variable KVD_CONFIG_TEST_POD is not "
              "set");
  }
  EXPECT_EQ(ParseError("store:\n  replica: \"kvd 0\"\n"),
            "config.yaml:2: store.replica: must match [A-Za-z0-9._-]{0,63}, got \"kvd 0\"");
}

TEST(ConfigLoaderTest, DocumentPromptsAreUnsetByDefaultAndTakenVerbatim) {
  const ServerConfig defaults = ParseOk("");
  EXPECT_EQ(defaults.documents.framing, "auto");
  EXPECT_FALSE(defaults.documents.repeat_prompt.has_value());
  EXPECT_FALSE(defaults.documents.answer_prefix.has_value());
  const ServerConfig set = ParseOk(
      "documents:\n  framing: plain\n  repeat_prompt: \"\\n\\nCopy it.\"\n"
      "  repeat_from_prompt: \"\\n\\nCopy from \"\n  answer_prefix: \"\"\n");
  EXPECT_EQ(set.documents.framing, "plain");
  EXPECT_EQ(set.documents.repeat_prompt, "\n\nCopy it.");
  EXPECT_EQ(set.documents.repeat_from_prompt, "\n\nCopy from ");
  EXPECT_EQ(set.documents.answer_prefix, "");  // set, and empty: nothing before the answer
}

TEST(ConfigLoaderTest, DocumentWritesAreSyncedAndFailedDocumentsKeptAnHourByDefault) {
  const ServerConfig defaults = ParseOk("");
  EXPECT_TRUE(defaults.store.sync_writes);
  EXPECT_DOUBLE_EQ(defaults.documents.failed_retention_seconds, 3600.0);
  const ServerConfig set =
      ParseOk("store:\n  sync_writes: false\ndocuments:\n  failed_retention_seconds: 0\n");
  EXPECT_FALSE(set.store.sync_writes);
  EXPECT_DOUBLE_EQ(set.documents.failed_retention_seconds, 0.0);
  EXPECT_EQ(ParseError("store:\n  sync_writes: sometimes\n"),
            "config.yaml:2: store.sync_writes: must be true or false, got \"sometimes\"");
}

TEST(ConfigLoaderTest, LoadNamesTheFile) {
  const std::filesystem::path dir = testing::TempDir();
  const std::filesystem::path file = dir / "kvd_config_test.yaml";
  {
    std::ofstream out(file);
    out << "# kvd\nserver:\n  port: 9100\n";
  }
  absl::StatusOr<ServerConfig> config = LoadServerConfig(file);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.port, 9100);
  {
    std::ofstream out(file);
    out << "# kvd\nserver:\n  port: 99999\n";
  }
  config = LoadServerConfig(file);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            file.string() + ":3: server.port: must be in [0, 65535], got 99999");
  std::filesystem::remove(file);

  config = LoadServerConfig(dir / "no_such_kvd_config.yaml");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound) << config.status();
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("no_such_kvd_config.yaml"));

  config = LoadServerConfig(dir);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << config.status();
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("is a directory"));
}

TEST(ServerConfigTest, ValidateNamesTheKeyPath) {
  ServerConfig config;
  config.tenants.push_back(TenantConfig{.id = "a", .key_sha256 = {kDigestAbc}});
  EXPECT_TRUE(config.Validate().ok());

  config.tenants[0].key_sha256[0][0] = 'B';  // digests are kept in lower case
  absl::Status status = config.Validate();
  EXPECT_EQ(status.message(),
            "tenants[0].key_sha256[0]: must be a SHA-256 digest: 64 lower-case hex digits");
  EXPECT_EQ(kvd::base::ConfigErrorKeyPath(status), "tenants[0].key_sha256[0]");

  config = ServerConfig{};
  config.tenants.push_back(TenantConfig{.id = "a", .key_env = "SOME_VAR"});
  status = config.Validate();
  EXPECT_EQ(status.message(), "tenants[0].key_env: variable SOME_VAR has not been read");

  config = ServerConfig{};
  config.keepkv.params.alpha = 1.0;
  status = config.Validate();
  EXPECT_EQ(status.message(), "keepkv.alpha: must be in [0, 1), got 1");
  EXPECT_EQ(kvd::base::ConfigErrorKeyPath(status), "keepkv.alpha");
  config = ServerConfig{};
  config.tenants.push_back(TenantConfig{
      .id = "a", .key_sha256 = {kDigestAbc}, .keepkv = {.params = {.budget = {.tokens = -1}}}});
  status = config.Validate();
  EXPECT_EQ(status.message(),
            "tenants[0].keepkv.budget: must be a positive token count or a fraction in (0, 1], "
            "got -1");
  EXPECT_EQ(kvd::base::ConfigErrorKeyPath(status), "tenants[0].keepkv.budget");

  config = ServerConfig{};
  config.scheduler.max_num_seqs = 0;
  status = config.Validate();
  EXPECT_EQ(status.message(), "scheduler.max_num_seqs: must be at least 1, got 0");
  EXPECT_EQ(kvd::base::ConfigErrorKeyPath(status), "scheduler.max_num_seqs");

  EXPECT_EQ(kvd::base::ConfigErrorKeyPath(absl::InvalidArgumentError("other")), std::nullopt);
}

}  // namespace
}  // namespace kvd::server
