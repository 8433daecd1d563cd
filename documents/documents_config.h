// The config sections of uploaded documents and of where they are stored, as the config file
// sets them (server/config reads and validates them; docs/operations.md documents them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/config_key.h"

namespace kvd::documents {

// Section `store.remote`: the shared document tier, a Redis that every replica reads and writes
// (docs/operations.md). Not reloadable.
struct RemoteTierConfig {
  // redis://[[USER][:PASSWORD]@]HOST[:PORT][/DB] or unix://PATH[?db=DB]; "" for none (each
  // replica keeps its own documents). Default "".
  std::string url;
  // ACL user, overriding the URL's; "" the URL's or Redis's default user. Default "".
  std::string user;
  // Name of an environment variable holding the password (a Kubernetes Secret), read at start;
  // overrides the URL's. "" reads none. Default "".
  std::string password_env;
  // The password read from password_env at start (never a key of the file). Default "".
  std::string password;
  // Seconds a connect or a round trip may take before the call fails (uploads then answer 503
  // with Retry-After), in (0, 60]. Default 2.
  double timeout_seconds = 2.0;
  // Largest compressed cache written to or read from the tier, in bytes, at least 1; a larger
  // upload is refused with 413 before anything is written. Default 256 MiB.
  size_t max_payload_bytes = size_t{256} << 20;
  // Prefix of every key, so that deployments can share one Redis. Default "kvd:".
  std::string key_prefix = "kvd:";
  // Seconds a processing document stays in the tier unless its compression ends: what a replica
  // that died while compressing leaves behind, at least 1. Default 3600.
  double processing_lease_seconds = 3600.0;

  bool operator==(const RemoteTierConfig&) const = default;
};

// Section `store`: where the daemon keeps its files. Not reloadable.
struct StoreConfig {
  // Directory for persistent state, created when missing; relative paths are relative to the
  // working directory. Non-empty. Default "data".
  std::string data_dir = "data";
  // This replica's name, carried in the ids of the documents it stores so that a gateway can
  // route questions to the replica that holds the document (deploy/k8s/README.md);
  // [A-Za-z0-9._-]{0,63}, "" for a single server. Default "".
  std::string replica;
  // Name of an environment variable holding the replica's name (a StatefulSet passes the pod
  // name), read at start into `replica` when that is empty. "" reads none. Default "".
  std::string replica_env;
  // Sync the document store's write-ahead log to disk before a write returns, so an upload
  // answered ready survives an OS crash or power loss, not only a process crash. Off trades
  // that for lower upload latency (docs/benchmarks.md). Default true.
  bool sync_writes = true;
  // The shared document tier; with one, any replica serves any document and ids need no routing.
  RemoteTierConfig remote;

  bool operator==(const StoreConfig&) const = default;
};

// Section `documents`: uploaded documents (POST /v1/documents), their compression and the
// memory tier that keeps hot ones loaded. The store lives in store.data_dir. Not reloadable.
struct DocumentsConfig {
  // Serve /v1/documents and `documents` in completions. Default true.
  bool enabled = true;
  // How a document's cache is framed: "chat" (in a turn of the model's chat template; chat
  // and completions use it), "plain" (BOS + the document, which completions continue; chat
  // refuses it) or "auto" (chat when the model has a chat template, else plain). Default
  // "auto".
  std::string framing = "auto";
  // The chat turn a document opens: "user" (KVzip's prompts; the bundled model's format; a
  // conversation with a document then has no system message) or "system". Default "user".
  std::string chat_role = "user";
  // KVzip's scoring prompts, which follow the document while the model reconstructs it: the
  // request to repeat it (first chunk), and to repeat it from a few quoted tokens (later
  // chunks). Part of a cache's identity: after a change, questions on documents stored before
  // it are refused with 400 "compressed for another tokenizer_digest" (upload again). Defaults: the
  // published method's wording (cache_store's kDefaultRepeatPrompt / kDefaultRepeatFromPrompt).
  std::optional<std::string> repeat_prompt;
  std::optional<std::string> repeat_from_prompt;
  // Text between a scoring request and the model's answer. Unset: with chat framing, the
  // template's end of turn and generation prompt; with plain framing, "\n\nAnswer: ". Part
  // of a cache's identity.
  std::optional<std::string> answer_prefix;
  // A KVzip head profile (`kvd kvzip-profile`'s output) of this model, which enables method
  // kvzip_heads; relative to the working directory. A profile of another model is a start-up
  // error; its digest is part of a kvzip_heads cache's identity. "" none. Default "".
  std::string head_profile;
  // Compression when an upload names none: "none", "kvzip", "kvzip_heads" (with a
  // head_profile), "h2o" or "streaming" ("snapkv" needs a query, so it is never a default).
  // Default "kvzip".
  std::string default_method = "kvzip";
  // Precision a stored cache keeps its keys and values in when an upload sets no
  // compression.kv_dtype: "f32", "bf16" or "int8" (cache_store/store/kv_storage.h). Default
  // "f32".
  std::string default_kv_dtype = "f32";
  // Fraction of document entries kept when an upload sets neither ratio nor budget_tokens,
  // in (0, 1]. Default 0.3.
  double default_ratio = 0.3;
  // Largest document text accepted, in bytes (larger: 413), at least 1. Default 1 MiB.
  size_t max_document_bytes = size_t{1} << 20;
  // Seconds an upload waits for its compression before answering 202 (processing) instead
  // of 201 (ready), in [0, 600]. Default 2.
  double upload_wait_seconds = 2.0;
  // Bytes of compressed caches kept loaded in memory, least recently used leaving first;
  // 0 keeps none (every question reads the store). Default 512 MiB.
  size_t memory_tier_bytes = size_t{512} << 20;
  // Lifetime of a document whose upload sets no ttl_seconds, in seconds; 0: forever.
  // Default 0.
  double default_ttl_seconds = 0.0;
  // Seconds between sweeps that delete expired documents, in (0, 86400]. Default 60.
  double expiry_sweep_seconds = 60.0;
  // Seconds a failed document (its compression ended in an error, was cut off by a stop, or
  // was left unfinished by a crash) stays listed with its reason before the expiry sweep
  // removes it, at least 0 (0: at the next sweep). Failed documents count against no quota.
  // Default 3600.
  double failed_retention_seconds = 3600.0;
  // Documents a tenant may store at once (more: 429); 0: unlimited. A tenant's
  // max_documents overrides it. Default 1000.
  int64_t max_documents_per_tenant = 1000;
  // Bytes of compressed caches a tenant may store (more: 429; one document alone over it:
  // 413); 0: unlimited. A tenant's max_stored_bytes overrides it. Default 4 GiB.
  size_t max_stored_bytes_per_tenant = size_t{4} << 30;

  bool operator==(const DocumentsConfig&) const = default;
};

// The keys of `store.remote` read by table; `password_env` is read from the environment by the
// loader, and `url` is checked by the Redis URL parser.
inline constexpr base::ConfigKey<RemoteTierConfig> kRemoteTierKeys[] = {
    {.name = "url", .member = &RemoteTierConfig::url},
    {.name = "user", .member = &RemoteTierConfig::user},
    {.name = "timeout_seconds",
     .member = &RemoteTierConfig::timeout_seconds,
     .range = {.min = 0, .max = 60, .min_open = true}},
    {.name = "max_payload_bytes",
     .member = &RemoteTierConfig::max_payload_bytes,
     .range = {.min = 1}},
    {.name = "key_prefix", .member = &RemoteTierConfig::key_prefix, .text = {.max_bytes = 256}},
    {.name = "processing_lease_seconds",
     .member = &RemoteTierConfig::processing_lease_seconds,
     .range = {.min = 1, .max = 604800}},
};

// The keys of `store` read by table; `replica`/`replica_env` and `remote` are the loader's.
inline constexpr base::ConfigKey<StoreConfig> kStoreKeys[] = {
    {.name = "data_dir", .member = &StoreConfig::data_dir, .text = {.non_empty = true}},
    {.name = "sync_writes", .member = &StoreConfig::sync_writes},
};

inline constexpr std::string_view kFramingChoices[] = {"auto", "chat", "plain"};
inline constexpr std::string_view kChatRoleChoices[] = {"user", "system"};
inline constexpr std::string_view kMethodChoices[] = {"none", "kvzip", "kvzip_heads", "h2o",
                                                      "streaming"};
inline constexpr std::string_view kStoredTypeChoices[] = {"f32", "bf16", "int8"};
// A repeat prompt or answer prefix, at most.
inline constexpr size_t kMaxPromptBytes = 4096;

// The keys of the section `documents`.
inline constexpr base::ConfigKey<DocumentsConfig> kDocumentsKeys[] = {
    {.name = "enabled", .member = &DocumentsConfig::enabled},
    {.name = "framing", .member = &DocumentsConfig::framing, .text = {.choices = kFramingChoices}},
    {.name = "chat_role",
     .member = &DocumentsConfig::chat_role,
     .text = {.choices = kChatRoleChoices}},
    {.name = "repeat_prompt",
     .member = &DocumentsConfig::repeat_prompt,
     .text = {.non_empty = true, .max_bytes = kMaxPromptBytes}},
    {.name = "repeat_from_prompt",
     .member = &DocumentsConfig::repeat_from_prompt,
     .text = {.non_empty = true, .max_bytes = kMaxPromptBytes}},
    {.name = "answer_prefix",
     .member = &DocumentsConfig::answer_prefix,
     .text = {.max_bytes = kMaxPromptBytes}},
    {.name = "head_profile", .member = &DocumentsConfig::head_profile},
    {.name = "default_method",
     .member = &DocumentsConfig::default_method,
     .text = {.choices = kMethodChoices}},
    {.name = "default_ratio",
     .member = &DocumentsConfig::default_ratio,
     .range = {.min = 0, .max = 1, .min_open = true}},
    {.name = "default_kv_dtype",
     .member = &DocumentsConfig::default_kv_dtype,
     .text = {.choices = kStoredTypeChoices}},
    {.name = "max_document_bytes",
     .member = &DocumentsConfig::max_document_bytes,
     .range = {.min = 1}},
    {.name = "upload_wait_seconds",
     .member = &DocumentsConfig::upload_wait_seconds,
     .range = {.min = 0, .max = 600}},
    {.name = "memory_tier_bytes", .member = &DocumentsConfig::memory_tier_bytes},
    {.name = "default_ttl_seconds",
     .member = &DocumentsConfig::default_ttl_seconds,
     .range = {.min = 0, .zero_means = "forever"}},
    {.name = "expiry_sweep_seconds",
     .member = &DocumentsConfig::expiry_sweep_seconds,
     .range = {.min = 0, .max = 86400, .min_open = true}},
    {.name = "failed_retention_seconds",
     .member = &DocumentsConfig::failed_retention_seconds,
     .range = {.min = 0, .zero_means = "until the next sweep"}},
    {.name = "max_documents_per_tenant",
     .member = &DocumentsConfig::max_documents_per_tenant,
     .range = {.min = 0, .zero_means = "unlimited"}},
    {.name = "max_stored_bytes_per_tenant",
     .member = &DocumentsConfig::max_stored_bytes_per_tenant},
};

}  // namespace kvd::documents
