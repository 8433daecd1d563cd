// The keys of the server's own config sections and their rules, one table per section (see
// base/config_key.h). Keys whose reading or checking needs more than a rule (tenant ids and
// keys, environment variables, nested sections) are the loader's and Validate's own code.
#pragma once

#include <string_view>

#include "base/config_key.h"
#include "kernels/dtype.h"
#include "server/config/server_config.h"

namespace kvd::server {

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
