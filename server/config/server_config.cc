#include "server/config/server_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <span>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "cache_store/store/redis_connection.h"
#include "kernels/dtype.h"

namespace kvd::server {
namespace {

constexpr char kKeyPathPayload[] = "type.kvd/config.key_path";
constexpr double kMaxSeconds = 86400.0;

// An InvalidArgument error about `path`, with the path as the payload.
absl::Status KeyError(const std::string& path, const std::string& message) {
  absl::Status status = absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
  status.SetPayload(kKeyPathPayload, absl::Cord(path));
  return status;
}

// Turns SchedulerConfig::Validate's "scheduler config: max_num_seqs must be ..." into an error
// about "scheduler.max_num_seqs", so that the loader can point at the key's line.
absl::Status SchedulerKeyError(const absl::Status& status) {
  static constexpr std::string_view kFields[] = {"max_num_seqs",
                                                 "max_num_batched_tokens",
                                                 "block_size",
                                                 "kv_cache_bytes",
                                                 "kv_cache_memory_fraction",
                                                 "kv_cache_dtype",
                                                 "admission_watermark",
                                                 "max_queued_requests",
                                                 "max_n",
                                                 "compression_tokens_per_step",
                                                 "prefix_cache.max_pool_fraction"};
  constexpr std::string_view kPrefix = "scheduler config: ";
  std::string_view message(status.message().data(), status.message().size());
  if (message.starts_with(kPrefix)) message.remove_prefix(kPrefix.size());
  for (std::string_view field : kFields) {
    if (!message.starts_with(field) || message.substr(field.size(), 1) != " ") continue;
    // "max_num_seqs must be at least 1" reads as "scheduler.max_num_seqs: must be at least 1";
    // a message about two fields keeps both names.
    const std::string_view rest = message.substr(field.size() + 1);
    const std::string_view text = rest.starts_with("must ") ? rest : message;
    // The section `prefix_cache` is the scheduler's too, beside `scheduler` in the file.
    const std::string path = field.starts_with("prefix_cache.")
                                 ? std::string(field)
                                 : absl::StrCat("scheduler.", std::string(field));
    return KeyError(path, std::string(text));
  }
  return KeyError("scheduler", std::string(message));
}

absl::Status CheckRange(const std::string& path, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return KeyError(path, absl::StrCat("must be in [", min, ", ", max, "], got ", value));
}

absl::Status CheckSeconds(const std::string& path, double value, bool zero_allowed) {
  if (std::isfinite(value) && (value > 0.0 || (zero_allowed && value == 0.0)) &&
      value <= kMaxSeconds) {
    return absl::OkStatus();
  }
  return KeyError(path, absl::StrCat("must be in ", zero_allowed ? "[" : "(", "0, ", kMaxSeconds,
                                     "] seconds, got ", value));
}

absl::Status CheckOneOf(const std::string& path, const std::string& value,
                        std::span<const std::string_view> choices) {
  for (std::string_view choice : choices) {
    if (value == choice) return absl::OkStatus();
  }
  std::string message = "must be one of ";
  for (std::string_view choice : choices) {
    if (message.back() != ' ') message += ", ";
    message += choice;
  }
  return KeyError(path, absl::StrCat(message, ", got \"", value, "\""));
}

absl::Status CheckOneOf(const std::string& path, const std::string& value,
                        std::initializer_list<std::string_view> choices) {
  return CheckOneOf(path, value,
                    std::span<const std::string_view>(choices.begin(), choices.size()));
}

bool IsTenantId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool IsLowerHexDigest(std::string_view digest) {
  if (digest.size() != 64) return false;
  for (char c : digest) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status ValidateListen(const ListenConfig& c) {
  if (c.host.empty()) return KeyError("server.host", "must not be empty");
  for (char ch : c.host) {
    if (static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f)
      return KeyError("server.host", "must not contain whitespace");
  }
  if (auto s = CheckRange("server.port", c.port, 0, 65535); !s.ok()) return s;
  if (auto s = CheckRange("server.grpc_port", c.grpc_port, 0, 65535); !s.ok()) return s;
  if (c.grpc_port != 0 && c.grpc_port == c.port) {
    return KeyError("server.grpc_port",
                    absl::StrCat("must differ from server.port (", c.port, "); 0 turns gRPC off"));
  }
  if (auto s = CheckRange("server.io_threads", c.io_threads, 1, 256); !s.ok()) return s;
  if (c.max_body_bytes < 1) return KeyError("server.max_body_bytes", "must be at least 1");
  if (c.max_header_bytes < 1 || c.max_header_bytes > 4294967295u) {
    return KeyError("server.max_header_bytes",
                    absl::StrCat("must be in [1, 4294967295], got ", c.max_header_bytes));
  }
  if (auto s = CheckRange("server.max_connections", c.max_connections, 0, 1000000); !s.ok()) {
    return s;
  }
  if (auto s =
          CheckRange("server.max_connections_per_client", c.max_connections_per_client, 0, 1000000);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckSeconds("server.read_timeout_seconds", c.read_timeout_seconds, false);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckSeconds("server.idle_timeout_seconds", c.idle_timeout_seconds, false);
      !s.ok()) {
    return s;
  }
  if (auto s =
          CheckSeconds("server.keepalive_interval_seconds", c.keepalive_interval_seconds, true);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckSeconds("server.drain_timeout_seconds", c.drain_timeout_seconds, true);
      !s.ok()) {
    return s;
  }
  return CheckSeconds("server.health_step_timeout_seconds", c.health_step_timeout_seconds, true);
}

absl::Status ValidateModel(const ModelSection& c) {
  if (c.path.empty()) return KeyError("model.path", "must not be empty");
  if (c.name.size() > 256) {
    return KeyError("model.name",
                    absl::StrCat("must be at most 256 characters, got ", c.name.size()));
  }
  for (char ch : c.name) {
    if (static_cast<unsigned char>(ch) <= ' ' || ch == 0x7f) {
      return KeyError("model.name", "must not contain whitespace or control characters");
    }
  }
  if (c.ServedName().empty()) {
    return KeyError("model.name", absl::StrCat("must be set: model.path \"", c.path,
                                               "\" has no last component to name the model"));
  }
  if (auto s = CheckOneOf("model.backend", c.backend, {"cpu", "cuda"}); !s.ok()) return s;
  if (auto s = CheckOneOf("model.dtype", c.dtype, kernels::kWeightTypeChoices); !s.ok()) {
    return s;
  }
  if (auto s =
          CheckOneOf("model.tool_parser", c.tool_parser, {"auto", "none", "hermes", "llama3_json"});
      !s.ok()) {
    return s;
  }
  return CheckRange("model.threads", c.threads, 0, 1024);
}

// A KeepKV section at `path` ("keepkv", "tenants[0].keepkv") against the rules of
// cache_store::kKeepKvFields: "<path>.alpha: must be in [0, 1), got 1.5".
absl::Status ValidateKeepKv(const std::string& path, const KeepKvConfig& c) {
  const std::optional<cache_store::KeepKvViolation> violation = c.params.Check();
  if (!violation) return absl::OkStatus();
  return KeyError(absl::StrCat(path, ".", std::string(violation->field)), violation->message);
}

absl::Status ValidateTenants(const std::vector<TenantConfig>& tenants) {
  absl::flat_hash_map<std::string, std::string> tenant_paths;  // id -> "tenants[i]"
  absl::flat_hash_map<std::string, std::string> digest_paths;  // digest -> its key path
  for (size_t i = 0; i < tenants.size(); ++i) {
    const TenantConfig& t = tenants[i];
    const std::string path = absl::StrCat("tenants[", i, "]");
    if (!IsTenantId(t.id)) {
      return KeyError(path + ".id",
                      absl::StrCat("must match [A-Za-z0-9._-]{1,64}, got \"", t.id, "\""));
    }
    if (!t.prefix_cache_share_with.empty() && !IsTenantId(t.prefix_cache_share_with)) {
      return KeyError(path + ".prefix_cache.share_with",
                      absl::StrCat("must match [A-Za-z0-9._-]{1,64}, got \"",
                                   t.prefix_cache_share_with, "\""));
    }
    if (auto [it, inserted] = tenant_paths.emplace(t.id, path); !inserted) {
      return KeyError(path + ".id",
                      absl::StrCat("duplicate tenant id \"", t.id, "\" (also ", it->second, ")"));
    }
    std::vector<std::pair<std::string, const std::string*>> digests;  // key path, digest
    for (size_t k = 0; k < t.key_sha256.size(); ++k) {
      digests.emplace_back(absl::StrCat(path, ".key_sha256[", k, "]"), &t.key_sha256[k]);
    }
    if (!t.key_env.empty()) {
      if (t.key_env_sha256.empty()) {
        return KeyError(path + ".key_env",
                        absl::StrCat("variable ", t.key_env, " has not been read"));
      }
      digests.emplace_back(path + ".key_env", &t.key_env_sha256);
    }
    if (digests.empty()) {
      return KeyError(path, absl::StrCat("tenant \"", t.id,
                                         "\" needs at least one API key (key_sha256 or key_env)"));
    }
    for (const auto& [key_path, digest] : digests) {
      if (!IsLowerHexDigest(*digest)) {
        return KeyError(key_path, "must be a SHA-256 digest: 64 lower-case hex digits");
      }
      if (auto [it, inserted] = digest_paths.emplace(*digest, key_path); !inserted) {
        return KeyError(key_path, absl::StrCat("the same API key as ", it->second,
                                               "; a key may belong to one tenant only"));
      }
    }
    if (!(std::isfinite(t.weight) && t.weight > 0.0)) {
      return KeyError(path + ".weight", absl::StrCat("must be greater than 0, got ", t.weight));
    }
    const std::pair<const char*, int64_t> limits[] = {
        {"max_concurrent_requests", t.max_concurrent_requests},
        {"max_queued_requests", t.max_queued_requests},
        {"max_running_sequences", t.max_running_sequences},
        {"requests_per_minute", t.requests_per_minute},
        {"tokens_per_minute", t.tokens_per_minute},
        {"max_documents", t.max_documents},
    };
    for (const auto& [name, value] : limits) {
      if (value < 0) {
        return KeyError(absl::StrCat(path, ".", name),
                        absl::StrCat("must be at least 0 (0: unlimited), got ", value));
      }
    }
    if (auto s = ValidateKeepKv(path + ".keepkv", t.keepkv); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ValidateRemoteTier(const documents::RemoteTierConfig& remote) {
  if (!remote.url.empty()) {
    if (auto endpoint = cache_store::ParseRedisUrl(remote.url); !endpoint.ok()) {
      return KeyError("store.remote.url", std::string(endpoint.status().message()));
    }
  }
  if (!(remote.timeout_seconds > 0 && remote.timeout_seconds <= 60)) {
    return KeyError("store.remote.timeout_seconds",
                    absl::StrCat("must be in (0, 60], got ", remote.timeout_seconds));
  }
  if (remote.max_payload_bytes < 1) {
    return KeyError("store.remote.max_payload_bytes", "must be at least 1");
  }
  if (remote.key_prefix.size() > 256) {
    return KeyError("store.remote.key_prefix", "must be at most 256 bytes");
  }
  if (!(remote.processing_lease_seconds >= 1 && remote.processing_lease_seconds <= 86400 * 7)) {
    return KeyError("store.remote.processing_lease_seconds",
                    absl::StrCat("must be in [1, 604800], got ", remote.processing_lease_seconds));
  }
  return absl::OkStatus();
}

absl::Status ValidateDocuments(const documents::DocumentsConfig& d) {
  if (auto s = CheckOneOf("documents.framing", d.framing, {"auto", "chat", "plain"}); !s.ok()) {
    return s;
  }
  if (auto s = CheckOneOf("documents.chat_role", d.chat_role, {"user", "system"}); !s.ok()) {
    return s;
  }
  constexpr size_t kMaxPromptBytes = 4096;
  const std::pair<const char*, const std::optional<std::string>*> prompts[] = {
      {"documents.repeat_prompt", &d.repeat_prompt},
      {"documents.repeat_from_prompt", &d.repeat_from_prompt},
      {"documents.answer_prefix", &d.answer_prefix}};
  for (const auto& [key, prompt] : prompts) {
    if (!prompt->has_value()) continue;
    if ((*prompt)->size() > kMaxPromptBytes) {
      return KeyError(key, absl::StrCat("must be at most ", kMaxPromptBytes, " bytes, got ",
                                        (*prompt)->size()));
    }
    if ((*prompt)->empty() && prompt != &d.answer_prefix) {
      return KeyError(key, "must not be empty: the model is asked to reconstruct the document");
    }
  }
  if (auto s = CheckOneOf("documents.default_method", d.default_method,
                          {"none", "kvzip", "kvzip_heads", "h2o", "streaming"});
      !s.ok()) {
    return s;
  }
  if (d.default_method == "kvzip_heads" && d.head_profile.empty()) {
    return KeyError("documents.default_method",
                    "kvzip_heads needs documents.head_profile (made by kvd kvzip-profile)");
  }
  if (auto s =
          CheckOneOf("documents.default_kv_dtype", d.default_kv_dtype, {"f32", "bf16", "int8"});
      !s.ok()) {
    return s;
  }
  if (!(d.default_ratio > 0.0 && d.default_ratio <= 1.0)) {
    return KeyError("documents.default_ratio",
                    absl::StrCat("must be in (0, 1], got ", d.default_ratio));
  }
  if (d.default_method == "none" && d.default_ratio != 1.0) {
    return KeyError("documents.default_ratio", "must be 1 when default_method is none");
  }
  if (d.max_document_bytes < 1) return KeyError("documents.max_document_bytes", "must be >= 1");
  if (!(d.upload_wait_seconds >= 0.0 && d.upload_wait_seconds <= 600.0)) {
    return KeyError("documents.upload_wait_seconds",
                    absl::StrCat("must be in [0, 600], got ", d.upload_wait_seconds));
  }
  if (!(d.default_ttl_seconds >= 0.0 && std::isfinite(d.default_ttl_seconds))) {
    return KeyError("documents.default_ttl_seconds",
                    absl::StrCat("must be at least 0 (0: forever), got ", d.default_ttl_seconds));
  }
  if (!(d.expiry_sweep_seconds > 0.0 && d.expiry_sweep_seconds <= 86400.0)) {
    return KeyError("documents.expiry_sweep_seconds",
                    absl::StrCat("must be in (0, 86400], got ", d.expiry_sweep_seconds));
  }
  if (!(d.failed_retention_seconds >= 0.0 && std::isfinite(d.failed_retention_seconds))) {
    return KeyError("documents.failed_retention_seconds",
                    absl::StrCat("must be at least 0 (0: until the next sweep), got ",
                                 d.failed_retention_seconds));
  }
  if (d.max_documents_per_tenant < 0) {
    return KeyError(
        "documents.max_documents_per_tenant",
        absl::StrCat("must be at least 0 (0: unlimited), got ", d.max_documents_per_tenant));
  }
  return absl::OkStatus();
}

absl::Status ValidateKvEventsZmq(const KvEventsZmqConfig& zmq,
                                 const scheduler::PrefixCacheConfig& cache) {
  constexpr size_t kMaxLength = 256;
  const std::pair<const char*, const std::string*> keys[] = {
      {"prefix_cache.kv_events_endpoint", &zmq.endpoint},
      {"prefix_cache.kv_events_replay_endpoint", &zmq.replay_endpoint},
      {"prefix_cache.kv_events_topic", &zmq.topic}};
  for (const auto& [key, value] : keys) {
    if (value->size() > kMaxLength) {
      return KeyError(key, absl::StrCat("must be at most ", kMaxLength, " bytes, got ",
                                        value->size()));
    }
    if (value == &zmq.topic) continue;
    if (std::any_of(value->begin(), value->end(), [](char c) {
          return std::iscntrl(static_cast<unsigned char>(c)) || c == ' ';
        })) {
      return KeyError(key, "must not hold spaces or control characters");
    }
    // An in-process endpoint is one nothing outside kvd can reach.
    if (value->starts_with("inproc://")) {
      return KeyError(key, "must be reachable from outside kvd (tcp:// or ipc://)");
    }
  }
  if (!zmq.endpoint.empty() && !(cache.enabled && cache.kv_events)) {
    return KeyError("prefix_cache.kv_events_endpoint",
                    "needs prefix_cache.enabled and prefix_cache.kv_events");
  }
  if (!zmq.replay_endpoint.empty() && zmq.endpoint.empty()) {
    return KeyError("prefix_cache.kv_events_replay_endpoint",
                    "needs prefix_cache.kv_events_endpoint");
  }
  return absl::OkStatus();
}

}  // namespace

std::string ModelSection::ServedName() const {
  if (!name.empty()) return name;
  std::string_view p = path;
  while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
  if (p == "/" || p == "." || p == "..") return "";
  const size_t slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

std::vector<std::string> TenantConfig::KeyDigests() const {
  std::vector<std::string> digests = key_sha256;
  if (!key_env_sha256.empty()) digests.push_back(key_env_sha256);
  return digests;
}

scheduler::TenantPolicy TenantConfig::Policy() const {
  scheduler::TenantPolicy policy;
  policy.id = id;
  policy.weight = weight;
  policy.max_running_sequences = max_running_sequences;
  policy.max_queued_requests = max_queued_requests;
  policy.prefix_cache_salt = prefix_cache_share_with;
  return policy;
}

absl::Status ServerConfig::Validate() const {
  if (auto s = ValidateListen(server); !s.ok()) return s;
  if (auto s = ValidateModel(model); !s.ok()) return s;
  if (auto s = scheduler.Validate(); !s.ok()) return SchedulerKeyError(s);
  if (auto s = ValidateKvEventsZmq(kv_events_zmq, scheduler.prefix_cache); !s.ok()) return s;
  // Before the tenants, which take their omitted keys from it.
  if (auto s = ValidateKeepKv("keepkv", keepkv); !s.ok()) return s;
  if (auto s = ValidateTenants(tenants); !s.ok()) return s;
  if (auto s = CheckOneOf("auth", auth, {"auto", "required", "disabled"}); !s.ok()) return s;
  if (auth == "required" && tenants.empty()) {
    return KeyError("auth", "is \"required\" but `tenants` lists none");
  }
  if (auth == "disabled" && !tenants.empty()) {
    return KeyError("auth", absl::StrCat("is \"disabled\" but `tenants` lists ", tenants.size()));
  }
  if (store.data_dir.empty()) return KeyError("store.data_dir", "must not be empty");
  if (store.replica.size() > 63 ||
      !std::all_of(store.replica.begin(), store.replica.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      })) {
    return KeyError(store.replica_env.empty() ? "store.replica" : "store.replica_env",
                    absl::StrCat("must match [A-Za-z0-9._-]{0,63}, got \"", store.replica, "\""));
  }
  if (auto s = ValidateRemoteTier(store.remote); !s.ok()) return s;
  if (auto s = ValidateDocuments(documents); !s.ok()) return s;
  constexpr int64_t kMaxResponseTtl = 315360000;  // ten years
  if (responses.ttl_seconds < 60 || responses.ttl_seconds > kMaxResponseTtl) {
    return KeyError("responses.ttl_seconds", absl::StrCat("must be in [60, ", kMaxResponseTtl,
                                                          "], got ", responses.ttl_seconds));
  }
  if (auto s = CheckOneOf("logging.level", logging.level,
                          {"trace", "debug", "info", "warn", "error", "off"});
      !s.ok()) {
    return s;
  }
  return CheckOneOf("logging.format", logging.format, {"text", "json"});
}

std::optional<std::string> ConfigErrorKeyPath(const absl::Status& status) {
  auto payload = status.GetPayload(kKeyPathPayload);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

}  // namespace kvd::server
