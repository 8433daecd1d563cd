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

namespace kvd::server {
namespace {

using base::ConfigKeyError;

// The keys of `section` against its table, under `prefix`.
template <typename Section, size_t N>
absl::Status CheckKeys(std::string_view prefix, const base::ConfigKey<Section> (&keys)[N],
                       const Section& section) {
  return base::CheckConfigKeys(prefix, base::KeysOf(keys), section);
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
  if (auto s = CheckKeys("server", kListenKeys, c); !s.ok()) return s;
  if (c.grpc_port != 0 && c.grpc_port == c.port) {
    return ConfigKeyError("server.grpc_port", absl::StrCat("must differ from server.port (", c.port,
                                                           "); 0 turns gRPC off"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModel(const ModelSection& c) {
  if (auto s = CheckKeys("model", kModelKeys, c); !s.ok()) return s;
  if (c.ServedName().empty()) {
    return ConfigKeyError("model.name", absl::StrCat("must be set: model.path \"", c.path,
                                                     "\" has no last component to name the model"));
  }
  return absl::OkStatus();
}

// A KeepKV section at `path` ("keepkv", "tenants[0].keepkv") against the rules of
// cache_store::kKeepKvFields: "<path>.alpha: must be in [0, 1), got 1.5".
absl::Status ValidateKeepKv(const std::string& path, const KeepKvConfig& c) {
  const std::optional<cache_store::KeepKvViolation> violation = c.params.Check();
  if (!violation) return absl::OkStatus();
  return ConfigKeyError(absl::StrCat(path, ".", std::string(violation->field)), violation->message);
}

absl::Status ValidateTenants(const std::vector<TenantConfig>& tenants) {
  absl::flat_hash_map<std::string, std::string> tenant_paths;  // id -> "tenants[i]"
  absl::flat_hash_map<std::string, std::string> digest_paths;  // digest -> its key path
  for (size_t i = 0; i < tenants.size(); ++i) {
    const TenantConfig& t = tenants[i];
    const std::string path = absl::StrCat("tenants[", i, "]");
    if (!IsTenantId(t.id)) {
      return ConfigKeyError(path + ".id",
                            absl::StrCat("must match [A-Za-z0-9._-]{1,64}, got \"", t.id, "\""));
    }
    if (!t.prefix_cache_share_with.empty() && !IsTenantId(t.prefix_cache_share_with)) {
      return ConfigKeyError(
          path + ".prefix_cache.share_with",
          absl::StrCat("must match [A-Za-z0-9._-]{1,64}, got \"", t.prefix_cache_share_with, "\""));
    }
    if (auto [it, inserted] = tenant_paths.emplace(t.id, path); !inserted) {
      return ConfigKeyError(
          path + ".id", absl::StrCat("duplicate tenant id \"", t.id, "\" (also ", it->second, ")"));
    }
    std::vector<std::pair<std::string, const std::string*>> digests;  // key path, digest
    for (size_t k = 0; k < t.key_sha256.size(); ++k) {
      digests.emplace_back(absl::StrCat(path, ".key_sha256[", k, "]"), &t.key_sha256[k]);
    }
    if (!t.key_env.empty()) {
      if (t.key_env_sha256.empty()) {
        return ConfigKeyError(path + ".key_env",
                              absl::StrCat("variable ", t.key_env, " has not been read"));
      }
      digests.emplace_back(path + ".key_env", &t.key_env_sha256);
    }
    if (digests.empty()) {
      return ConfigKeyError(
          path,
          absl::StrCat("tenant \"", t.id, "\" needs at least one API key (key_sha256 or key_env)"));
    }
    for (const auto& [key_path, digest] : digests) {
      if (!IsLowerHexDigest(*digest)) {
        return ConfigKeyError(key_path, "must be a SHA-256 digest: 64 lower-case hex digits");
      }
      if (auto [it, inserted] = digest_paths.emplace(*digest, key_path); !inserted) {
        return ConfigKeyError(key_path, absl::StrCat("the same API key as ", it->second,
                                                     "; a key may belong to one tenant only"));
      }
    }
    if (auto s = CheckKeys(path, kTenantKeys, t); !s.ok()) return s;
    if (auto s = ValidateKeepKv(path + ".keepkv", t.keepkv); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ValidateRemoteTier(const documents::RemoteTierConfig& remote) {
  if (auto s = CheckKeys("store.remote", documents::kRemoteTierKeys, remote); !s.ok()) return s;
  if (!remote.url.empty()) {
    if (auto endpoint = cache_store::ParseRedisUrl(remote.url); !endpoint.ok()) {
      return ConfigKeyError("store.remote.url", std::string(endpoint.status().message()));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateDocuments(const documents::DocumentsConfig& d) {
  if (auto s = CheckKeys("documents", documents::kDocumentsKeys, d); !s.ok()) return s;
  if (d.default_method == "kvzip_heads" && d.head_profile.empty()) {
    return ConfigKeyError("documents.default_method",
                          "kvzip_heads needs documents.head_profile (made by kvd kvzip-profile)");
  }
  if (d.default_method == "none" && d.default_ratio != 1.0) {
    return ConfigKeyError("documents.default_ratio", "must be 1 when default_method is none");
  }
  return absl::OkStatus();
}

absl::Status ValidateKvEventsZmq(const KvEventsZmqConfig& zmq,
                                 const scheduler::PrefixCacheConfig& cache) {
  if (auto s = CheckKeys("prefix_cache", kKvEventsZmqKeys, zmq); !s.ok()) return s;
  // An in-process endpoint is one nothing outside kvd can reach.
  for (const base::ConfigKey<KvEventsZmqConfig>& key : kKvEventsZmqKeys) {
    const auto* member = std::get_if<std::string KvEventsZmqConfig::*>(&key.member);
    if (member != nullptr && (zmq.*(*member)).starts_with("inproc://")) {
      return ConfigKeyError(base::ConfigKeyPath("prefix_cache", key.name),
                            "must be reachable from outside kvd (tcp:// or ipc://)");
    }
  }
  if (!zmq.endpoint.empty() && !(cache.enabled && cache.kv_events)) {
    return ConfigKeyError("prefix_cache.kv_events_endpoint",
                          "needs prefix_cache.enabled and prefix_cache.kv_events");
  }
  if (!zmq.replay_endpoint.empty() && zmq.endpoint.empty()) {
    return ConfigKeyError("prefix_cache.kv_events_replay_endpoint",
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
  if (auto s = scheduler.Validate(); !s.ok()) return s;
  if (auto s = ValidateKvEventsZmq(kv_events_zmq, scheduler.prefix_cache); !s.ok()) return s;
  // Before the tenants, which take their omitted keys from it.
  if (auto s = ValidateKeepKv("keepkv", keepkv); !s.ok()) return s;
  if (auto s = ValidateTenants(tenants); !s.ok()) return s;
  if (auto s = CheckKeys("", kTopLevelKeys, *this); !s.ok()) return s;
  if (auth == "required" && tenants.empty()) {
    return ConfigKeyError("auth", "is \"required\" but `tenants` lists none");
  }
  if (auth == "disabled" && !tenants.empty()) {
    return ConfigKeyError("auth",
                          absl::StrCat("is \"disabled\" but `tenants` lists ", tenants.size()));
  }
  if (auto s = CheckKeys("store", documents::kStoreKeys, store); !s.ok()) return s;
  if (store.replica.size() > 63 ||
      !std::all_of(store.replica.begin(), store.replica.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      })) {
    return ConfigKeyError(
        store.replica_env.empty() ? "store.replica" : "store.replica_env",
        absl::StrCat("must match [A-Za-z0-9._-]{0,63}, got \"", store.replica, "\""));
  }
  if (auto s = ValidateRemoteTier(store.remote); !s.ok()) return s;
  if (auto s = ValidateDocuments(documents); !s.ok()) return s;
  if (auto s = CheckKeys("responses", kResponsesKeys, responses); !s.ok()) return s;
  if (auto s = CheckKeys("structured_outputs", kStructuredOutputsKeys, structured_outputs);
      !s.ok()) {
    return s;
  }
  return CheckKeys("logging", kLoggingKeys, logging);
}

}  // namespace kvd::server
