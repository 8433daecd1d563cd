// The daemon's settings, as `kvd serve --config FILE` reads them (see config_loader.h and
// deploy/config/example.yaml). Every field has its default here; an empty file is a valid config.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "base/config_key.h"
#include "documents/documents_config.h"
#include "kernels/dtype.h"
#include "scheduler/config.h"
#include "scheduler/request.h"
#include "server/config/keepkv_config.h"

namespace kvd::server {

// The names the enumerated keys take.
inline constexpr std::string_view kBackendChoices[] = {"cpu", "cuda"};
inline constexpr std::string_view kToolParserChoices[] = {"auto", "none", "hermes", "llama3_json"};
inline constexpr std::string_view kAuthChoices[] = {"auto", "required", "disabled"};
inline constexpr std::string_view kLogLevelChoices[] = {"trace", "debug", "info",
                                                        "warn",  "error", "off"};
inline constexpr std::string_view kLogFormatChoices[] = {"text", "json"};

// Section `server`: where and how the HTTP (and gRPC) front end listens. Not reloadable.
struct ListenConfig {
  // Address the HTTP server binds: an IPv4 or IPv6 address or a host name. Default "0.0.0.0".
  std::string host = "0.0.0.0";
  // HTTP port, in [0, 65535]; 0 binds any free port (the log says which). Default 8000.
  int32_t port = 8000;
  // gRPC port, in [0, 65535]; 0 turns gRPC off. Must differ from `port`. Default 0.
  int32_t grpc_port = 0;
  // Threads that accept connections, parse requests and write responses, in [1, 256].
  // Default 2.
  int32_t io_threads = 2;
  // Largest request body accepted, in bytes (larger: 413), at least 1. Default 8 MiB.
  size_t max_body_bytes = size_t{8} << 20;
  // Largest request head (request line and headers) accepted, in bytes (larger: 431),
  // in [1, 4294967295]. Default 16 KiB.
  size_t max_header_bytes = size_t{16} << 10;
  // HTTP connections open at once, in [0, 1000000]; one more is answered 503 with Retry-After
  // and closed. 0: no limit. Default 1024.
  int64_t max_connections = 1024;
  // HTTP connections open at once from one client address, in [0, 1000000] (a proxy in front
  // counts as one client). 0: no limit. Default 256.
  int64_t max_connections_per_client = 256;
  // Seconds a client has to send a request's head and body, counted from its first byte; later
  // the connection gets 408 and is closed. In (0, 86400]. Default 30.
  double read_timeout_seconds = 30.0;
  // Seconds a connection may wait for the first byte of its next request (a new connection
  // too) before it is closed, in (0, 86400]. Default 75.
  double idle_timeout_seconds = 75.0;
  // Seconds without an event after which a streaming (SSE) response gets a comment line so that
  // proxies keep it open, in [0, 86400]; 0 sends none. Default 15.
  double keepalive_interval_seconds = 15.0;
  // Seconds that running requests get to finish after SIGTERM before they are cancelled,
  // in [0, 86400]. Default 30.
  double drain_timeout_seconds = 30.0;
  // Seconds the scheduler thread may have work without completing a step before GET /health
  // answers 503 `scheduler_stalled` (a wedged replica, for the liveness probe to restart), in
  // [0, 86400]; 0: never. Default 300: on a CPU one step of a long prompt chunk can take
  // minutes.
  double health_step_timeout_seconds = 300.0;

  bool operator==(const ListenConfig&) const = default;
};

// Section `model`: the checkpoint served and where it runs. Not reloadable.
struct ModelSection {
  // Directory of the Hugging Face checkpoint (config.json, safetensors, tokenizer).
  // Default "models/kvd-tiny".
  std::string path = "models/kvd-tiny";
  // Model id served in /v1/models and expected in requests' `model`; "" uses the last component
  // of `path`. At most 256 characters, no whitespace or control characters. Default "".
  std::string name;
  // Compute backend: "cpu" or "cuda". Default "cpu".
  std::string backend = "cpu";
  // The type weight matrices are kept in: "auto" (the checkpoint's own), "f32", "bf16", "f16",
  // or, on the CPU, "int8" / "int4" (quantized at load in blocks of 32); activations and vectors
  // (norms, biases) are f32 on every backend. Default "auto".
  std::string dtype = "auto";
  // CPU backend threads, in [0, 1024]; 0 uses all cores. Default 0.
  int32_t threads = 0;
  // How the model writes tool calls, for `tools`: "auto" (detected from the chat template; a
  // template that reads `tools` in a syntax kvd does not recognise stops start-up), "none"
  // (tools refused), "hermes" (<tool_call> tags: Qwen2.5/3, Hermes) or "llama3_json"
  // (Llama 3.1/3.2's JSON call). Default "auto".
  std::string tool_parser = "auto";

  // `name`, or the last component of `path` when `name` is empty.
  std::string ServedName() const;

  bool operator==(const ModelSection&) const = default;
};

// One entry of the list `tenants`: who may call the API, with which keys, and its share.
// Reloadable on SIGHUP (the whole list is replaced).
struct TenantConfig {
  // Name in logs, metrics and the scheduler; required, unique, [A-Za-z0-9._-]{1,64}.
  std::string id;
  // SHA-256 digests of the tenant's API keys, 64 hex digits each (lower case once loaded; YAML
  // may use either case). A key may belong to one tenant only. Default: none.
  std::vector<std::string> key_sha256;
  // Name of an environment variable holding a plaintext API key, read when the file is loaded
  // and kept only as its digest (`key_env_sha256`). "" reads none. Default "".
  std::string key_env;
  // SHA-256 digest of key_env's value, filled by the loader; not a YAML key.
  std::string key_env_sha256;
  // Share of the engine's tokens under contention, relative to other tenants, > 0. Default 1.
  double weight = 1.0;
  // Scheduling priority of the tenant's requests; lower values are served first. Default 0.
  int32_t priority = 0;
  // Requests in flight (queued or running) at once; more are refused (429). 0: unlimited.
  // Default 0.
  int32_t max_concurrent_requests = 0;
  // Requests waiting for admission at once; more are refused (429). 0: unlimited. Default 0.
  int32_t max_queued_requests = 0;
  // Sequences running at once; more wait in the queue. 0: unlimited. Default 0.
  int32_t max_running_sequences = 0;
  // Requests accepted per minute; more are refused (429). 0: unlimited. Default 0.
  int32_t requests_per_minute = 0;
  // Prompt and completion tokens per minute; requests over it are refused (429), and a request
  // charged more than all of it, which no wait would admit, is invalid (400). 0: unlimited.
  // Default 0.
  int64_t tokens_per_minute = 0;
  // Documents the tenant may store at once (more: 429); 0 uses
  // documents.max_documents_per_tenant. Default 0.
  int64_t max_documents = 0;
  // Bytes of compressed caches the tenant may store (more: 429); 0 uses
  // documents.max_stored_bytes_per_tenant. Default 0.
  size_t max_stored_bytes = 0;
  // YAML `prefix_cache: {share_with: NAME}`: the tenants that name the same NAME share cached
  // prompt prefixes (and so may learn from timing which prompts the others sent); empty, the
  // default, shares with no other tenant.
  std::string prefix_cache_share_with;
  // YAML `keepkv`: the section `keepkv` with the keys this tenant sets over it (filled by the
  // loader: a key the tenant omits takes the section's value). Default: KeepKvConfig{}.
  KeepKvConfig keepkv;

  // Every digest that authenticates this tenant: key_sha256, then key_env_sha256 if set.
  std::vector<std::string> KeyDigests() const;
  // The part of this tenant the scheduler enforces.
  scheduler::TenantPolicy Policy() const;

  bool operator==(const TenantConfig&) const = default;
};

// Keys `prefix_cache.kv_events_*`: the KV events in vLLM's own transport (ZeroMQ PUB, msgpack,
// replays on a ROUTER socket), beside GET /v1/kv_events. Not reloadable.
struct KvEventsZmqConfig {
  // PUB endpoint; "" publishes none. Bound when it holds a wildcard ("tcp://*:5557"), "::",
  // or is ipc:// or inproc://, else connected to a subscriber that binds (as vLLM decides).
  // Needs prefix_cache.kv_events. At most 256 characters. Default "".
  std::string endpoint;
  // ROUTER endpoint for replays, always bound ("tcp://*:5558"); "" for none. Needs `endpoint`.
  // At most 256 characters. Default "".
  std::string replay_endpoint;
  // The first frame of every message (llm-d reads "kv@POD_IP@MODEL"). At most 256 bytes.
  // Default "".
  std::string topic;

  bool operator==(const KvEventsZmqConfig&) const = default;
};

// Section `metrics`: Prometheus exposition. Not reloadable.
struct MetricsConfig {
  // Serve GET /metrics on the HTTP port. Default true.
  bool enabled = true;

  bool operator==(const MetricsConfig&) const = default;
};

// Section `responses`: the Responses API's stored responses. Not reloadable.
struct ResponsesConfig {
  // Keep responses a request asks to store (`store`, true unless it says false) for
  // `previous_response_id` and GET /v1/responses/{id}; false stores none. Default true.
  bool store = true;
  // Seconds a stored response is kept, in [60, 315360000]. Default 2592000 (30 days).
  int64_t ttl_seconds = 2592000;

  bool operator==(const ResponsesConfig&) const = default;
};

// Section `structured_outputs`: compiling output constraints (JSON Schemas, regular expressions,
// choices, tool calls) on threads of their own, off the HTTP and gRPC threads. Not reloadable.
struct StructuredOutputsConfig {
  // Threads that compile constraints, at a lower CPU priority, in [1, 64]. Default 1.
  int32_t compile_threads = 1;
  // Compiles one tenant may have queued or running at once, in [1, 1024]; a request past it is
  // refused 429 with Retry-After. Default 4.
  int32_t max_compiles_per_tenant = 4;
  // Seconds a compile may take, in (0, 3600]: a constraint that takes longer is refused 400 and
  // not kept; a request whose compile waits longer for a thread is refused 429. Default 10.
  double compile_timeout_seconds = 10;

  bool operator==(const StructuredOutputsConfig&) const = default;
};

// Section `logging`. Not reloadable.
struct LoggingConfig {
  // Least severe level logged: "trace", "debug", "info", "warn", "error" or "off".
  // Default "info".
  std::string level = "info";
  // Line format: "text" (human-readable) or "json" (one object per line). Default "text".
  std::string format = "text";
  // Log one line per finished request (tenant, status, tokens, latency). Default true.
  bool requests = true;

  bool operator==(const LoggingConfig&) const = default;
};

struct ServerConfig {
  ListenConfig server;                   // section `server`; not reloadable
  ModelSection model;                    // section `model`; not reloadable
  scheduler::SchedulerConfig scheduler;  // section `scheduler`; not reloadable
  KvEventsZmqConfig kv_events_zmq;       // keys prefix_cache.kv_events_*; not reloadable
  // Key `auth`: "auto" authenticates requests when `tenants` lists any; "required" insists that
  // it does; "disabled" insists that it does not. A SIGHUP reload that would turn
  // authentication off is refused unless the file says "disabled". Reloadable. Default "auto".
  std::string auth = "auto";
  // Section `tenants`; reloadable on SIGHUP (with `auth` and `keepkv`, the only reloadable
  // parts). Empty: requests are not authenticated. Default: none.
  std::vector<TenantConfig> tenants;
  documents::StoreConfig store;          // section `store`; not reloadable
  documents::DocumentsConfig documents;  // section `documents`; not reloadable
  // Section `keepkv`: the defaults of every tenant (and of the one default tenant when there
  // are none); reloadable on SIGHUP with the tenants.
  KeepKvConfig keepkv;
  ResponsesConfig responses;  // section `responses`; not reloadable
  StructuredOutputsConfig structured_outputs;  // section `structured_outputs`; not reloadable
  MetricsConfig metrics;      // section `metrics`; not reloadable
  LoggingConfig logging;      // section `logging`; not reloadable

  // Checks every key against its row of the tables below and the relations between
  // keys. An error is a base::ConfigKeyError: its message starts with the key path
  // ("server.port: must be in [0, 65535], got 70000"), which base::ConfigErrorKeyPath returns.
  [[nodiscard]] absl::Status Validate() const;
};

// The keys of each section as a table (base/config_key.h): the loader reads by these rows and
// Validate checks by them. Keys whose reading or checking needs more than a rule (tenant ids and
// keys, environment variables, nested sections) are the loader's and Validate's own code.
inline constexpr base::ConfigKey<ServerConfig> kTopLevelKeys[] = {
    {.name = "auth",
     .member = &ServerConfig::auth,
     .text = {.choices = std::span<const std::string_view>(kAuthChoices)}},
};

// Seconds a server timeout may be set to, at most: a day.
inline constexpr double kMaxTimeoutSeconds = 86400;

inline constexpr base::ConfigKey<ListenConfig> kListenKeys[] = {
    {.name = "host", .member = &ListenConfig::host, .text = {.non_empty = true, .printable = true}},
    {.name = "port", .member = &ListenConfig::port, .range = {.min = 0, .max = 65535}},
    {.name = "grpc_port", .member = &ListenConfig::grpc_port, .range = {.min = 0, .max = 65535}},
    {.name = "io_threads", .member = &ListenConfig::io_threads, .range = {.min = 1, .max = 256}},
    {.name = "max_body_bytes", .member = &ListenConfig::max_body_bytes, .range = {.min = 1}},
    {.name = "max_header_bytes",
     .member = &ListenConfig::max_header_bytes,
     .range = {.min = 1, .max = 4294967295.0}},
    {.name = "max_connections",
     .member = &ListenConfig::max_connections,
     .range = {.min = 0, .max = 1000000}},
    {.name = "max_connections_per_client",
     .member = &ListenConfig::max_connections_per_client,
     .range = {.min = 0, .max = 1000000}},
    {.name = "read_timeout_seconds",
     .member = &ListenConfig::read_timeout_seconds,
     .range = {.min = 0, .max = kMaxTimeoutSeconds, .min_open = true, .unit = "seconds"}},
    {.name = "idle_timeout_seconds",
     .member = &ListenConfig::idle_timeout_seconds,
     .range = {.min = 0, .max = kMaxTimeoutSeconds, .min_open = true, .unit = "seconds"}},
    {.name = "keepalive_interval_seconds",
     .member = &ListenConfig::keepalive_interval_seconds,
     .range = {.min = 0, .max = kMaxTimeoutSeconds, .unit = "seconds"}},
    {.name = "drain_timeout_seconds",
     .member = &ListenConfig::drain_timeout_seconds,
     .range = {.min = 0, .max = kMaxTimeoutSeconds, .unit = "seconds"}},
    {.name = "health_step_timeout_seconds",
     .member = &ListenConfig::health_step_timeout_seconds,
     .range = {.min = 0, .max = kMaxTimeoutSeconds, .unit = "seconds"}},
};

inline constexpr base::ConfigKey<ModelSection> kModelKeys[] = {
    {.name = "path", .member = &ModelSection::path, .text = {.non_empty = true}},
    {.name = "name", .member = &ModelSection::name, .text = {.max_bytes = 256, .printable = true}},
    {.name = "backend",
     .member = &ModelSection::backend,
     .text = {.choices = std::span<const std::string_view>(kBackendChoices)}},
    {.name = "dtype",
     .member = &ModelSection::dtype,
     .text = {.choices = kernels::kWeightTypeChoices}},
    {.name = "threads", .member = &ModelSection::threads, .range = {.min = 0, .max = 1024}},
    {.name = "tool_parser",
     .member = &ModelSection::tool_parser,
     .text = {.choices = std::span<const std::string_view>(kToolParserChoices)}},
};

// The keys of `prefix_cache` that are the front end's (the rest: scheduler::kPrefixCacheKeys).
inline constexpr base::ConfigKey<KvEventsZmqConfig> kKvEventsZmqKeys[] = {
    {.name = "kv_events_endpoint",
     .member = &KvEventsZmqConfig::endpoint,
     .text = {.max_bytes = 256, .printable = true}},
    {.name = "kv_events_replay_endpoint",
     .member = &KvEventsZmqConfig::replay_endpoint,
     .text = {.max_bytes = 256, .printable = true}},
    {.name = "kv_events_topic", .member = &KvEventsZmqConfig::topic, .text = {.max_bytes = 256}},
};

// A tenant's keys that are plain values (`id`, keys, `prefix_cache` and `keepkv` are the
// loader's own).
inline constexpr base::ConfigKey<TenantConfig> kTenantKeys[] = {
    {.name = "weight", .member = &TenantConfig::weight, .range = {.min = 0, .min_open = true}},
    {.name = "priority", .member = &TenantConfig::priority},
    {.name = "max_concurrent_requests",
     .member = &TenantConfig::max_concurrent_requests,
     .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "max_queued_requests",
     .member = &TenantConfig::max_queued_requests,
     .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "max_running_sequences",
     .member = &TenantConfig::max_running_sequences,
     .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "requests_per_minute",
     .member = &TenantConfig::requests_per_minute,
     .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "tokens_per_minute",
     .member = &TenantConfig::tokens_per_minute,
     .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "max_documents",
     .member = &TenantConfig::max_documents,
     .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "max_stored_bytes", .member = &TenantConfig::max_stored_bytes},
};

inline constexpr base::ConfigKey<ResponsesConfig> kResponsesKeys[] = {
    {.name = "store", .member = &ResponsesConfig::store},
    {.name = "ttl_seconds",
     .member = &ResponsesConfig::ttl_seconds,
     .range = {.min = 60, .max = 315360000}},
};

inline constexpr base::ConfigKey<StructuredOutputsConfig> kStructuredOutputsKeys[] = {
    {.name = "compile_threads",
     .member = &StructuredOutputsConfig::compile_threads,
     .range = {.min = 1, .max = 64}},
    {.name = "max_compiles_per_tenant",
     .member = &StructuredOutputsConfig::max_compiles_per_tenant,
     .range = {.min = 1, .max = 1024}},
    {.name = "compile_timeout_seconds",
     .member = &StructuredOutputsConfig::compile_timeout_seconds,
     .range = {.min = 0, .max = 3600, .min_open = true}},
};

inline constexpr base::ConfigKey<MetricsConfig> kMetricsKeys[] = {
    {.name = "enabled", .member = &MetricsConfig::enabled},
};

inline constexpr base::ConfigKey<LoggingConfig> kLoggingKeys[] = {
    {.name = "level",
     .member = &LoggingConfig::level,
     .text = {.choices = std::span<const std::string_view>(kLogLevelChoices)}},
    {.name = "format",
     .member = &LoggingConfig::format,
     .text = {.choices = std::span<const std::string_view>(kLogFormatChoices)}},
    {.name = "requests", .member = &LoggingConfig::requests},
};

}  // namespace kvd::server
