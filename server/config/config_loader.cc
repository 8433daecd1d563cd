#include "server/config/config_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/sha256.h"
#include "cache_store/keepkv/keepkv_fields.h"
#include "server/config/api_key.h"
#include "server/config/config_key_reader.h"
#include "server/config/server_config.h"
#include "server/config/yaml_reader.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace kvd::server {
namespace {

void ReadPrefixCache(YamlDocument& document, const YAML::Node& node,
                     scheduler::PrefixCacheConfig& c, KvEventsZmqConfig& zmq) {
  YamlMapReader r(document, node, "prefix_cache");
  ReadConfigKeys(r, scheduler::kPrefixCacheKeys, c);
  ReadConfigKeys(r, kKvEventsZmqKeys, zmq);
  r.Finish();
}

// A section read wholly by its table.
template <typename Section, size_t N>
void ReadSection(YamlDocument& document, const YAML::Node& node, std::string path,
                 const base::ConfigKey<Section> (&keys)[N], Section& section) {
  YamlMapReader r(document, node, std::move(path));
  ReadConfigKeys(r, keys, section);
  r.Finish();
}

// A KeepKV value of `field` as the YAML mapping `r` writes it, when it is there and well typed.
std::optional<cache_store::KeepKvValue> ReadKeepKvValue(YamlMapReader& r,
                                                        const cache_store::KeepKvField& field) {
  switch (cache_store::ValueTypeOf(field)) {
    case cache_store::KeepKvValueType::kBudget:
      if (std::variant<int64_t, double> number; r.Read(field.name, &number)) {
        return std::visit([](auto value) { return cache_store::KeepKvValue(value); }, number);
      }
      return std::nullopt;
    case cache_store::KeepKvValueType::kNumber:
      if (double number = 0; r.Read(field.name, &number)) return number;
      return std::nullopt;
    case cache_store::KeepKvValueType::kInteger:
      if (int64_t integer = 0; r.Read(field.name, &integer)) return integer;
      return std::nullopt;
    case cache_store::KeepKvValueType::kName:
      if (std::string name; r.Read(field.name, &name)) return name;
      return std::nullopt;
  }
  return std::nullopt;
}

// A KeepKV mapping at `path` over `c`: keys left out keep c's values, so a tenant's starts
// from the server's section.
void ReadKeepKv(YamlDocument& document, const YAML::Node& node, std::string path, KeepKvConfig& c) {
  YamlMapReader r(document, node, std::move(path));
  r.Read("enabled", &c.enabled);
  for (const cache_store::KeepKvField& field : cache_store::kKeepKvFields) {
    if (!cache_store::MaySet(cache_store::KeepKvScope::kOperator, field)) continue;
    const std::optional<cache_store::KeepKvValue> value = ReadKeepKvValue(r, field);
    if (!value) continue;
    if (auto violation = cache_store::SetKeepKvField(field, *value, c.params)) {
      document.FailAtPath(r.PathOf(field.name), violation->message);
    }
  }
  r.Finish();
}

// The value of the environment variable that key `key` of `r` names (read once, at load), or
// none, with an error at the key, when it is unset or empty; none without the key or when it is
// "". `name` receives the variable's name.
std::optional<std::string> ReadEnvVariable(YamlDocument& document, YamlMapReader& r,
                                           std::string_view key, std::string& name) {
  if (!r.Read(key, &name) || name.empty()) return std::nullopt;
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') {
    document.FailAtPath(r.PathOf(key), absl::StrCat("environment variable ", name,
                                                    value == nullptr ? " is not set" : " is empty"));
    return std::nullopt;
  }
  return std::string(value);
}

// Reads one tenant but for its `keepkv`, which needs the server's section first: returned for
// the caller to read once that is.
std::optional<YAML::Node> ReadTenant(YamlDocument& document, const YAML::Node& node,
                                     std::string path, TenantConfig& t) {
  YamlMapReader r(document, node, std::move(path));
  r.Require("id");
  r.Read("id", &t.id);
  if (r.Read("key_sha256", &t.key_sha256)) {
    for (std::string& digest : t.key_sha256) absl::AsciiStrToLower(&digest);
  }
  // The plaintext key is not kept.
  if (auto key = ReadEnvVariable(document, r, "key_env", t.key_env)) {
    t.key_env_sha256 = base::Sha256Hex(*key);
  }
  ReadConfigKeys(r, kTenantKeys, t);
  if (auto prefix_cache = r.Find("prefix_cache")) {
    YamlMapReader cache(document, *prefix_cache, r.PathOf("prefix_cache"));
    cache.Read("share_with", &t.prefix_cache_share_with);
    cache.Finish();
  }
  std::optional<YAML::Node> keepkv = r.Find("keepkv");
  r.Finish();
  return keepkv;
}

void ReadRemoteTier(YamlDocument& document, const YAML::Node& node,
                    documents::RemoteTierConfig& c) {
  YamlMapReader r(document, node, "store.remote");
  ReadConfigKeys(r, documents::kRemoteTierKeys, c);
  if (auto password = ReadEnvVariable(document, r, "password_env", c.password_env)) {
    c.password = *std::move(password);
  }
  r.Finish();
}

void ReadStore(YamlDocument& document, const YAML::Node& node, documents::StoreConfig& c) {
  YamlMapReader r(document, node, "store");
  ReadConfigKeys(r, documents::kStoreKeys, c);
  r.Read("replica", &c.replica);
  if (!c.replica.empty()) {
    r.Read("replica_env", &c.replica_env);
  } else if (auto name = ReadEnvVariable(document, r, "replica_env", c.replica_env)) {
    // An unset variable is an error: a replica without its name would mint unroutable ids.
    c.replica = *std::move(name);
  }
  if (auto remote = r.Find("remote")) ReadRemoteTier(document, *remote, c.remote);
  r.Finish();
}

void ReadServerConfig(YamlDocument& document, const YAML::Node& node, ServerConfig& config) {
  YamlMapReader r(document, node, "");
  if (auto section = r.Find("server")) {
    ReadSection(document, *section, "server", kListenKeys, config.server);
  }
  if (auto section = r.Find("model")) {
    ReadSection(document, *section, "model", kModelKeys, config.model);
  }
  if (auto section = r.Find("scheduler")) {
    ReadSection(document, *section, "scheduler", scheduler::kSchedulerKeys, config.scheduler);
  }
  if (auto section = r.Find("prefix_cache")) {
    ReadPrefixCache(document, *section, config.scheduler.prefix_cache, config.kv_events_zmq);
  }
  if (auto section = r.Find("speculative")) {
    ReadSection(document, *section, "speculative", scheduler::kSpeculativeKeys,
                config.scheduler.speculative);
  }
  ReadConfigKeys(r, kTopLevelKeys, config);
  std::vector<std::optional<YAML::Node>> tenant_keepkv;
  if (auto list = r.Find("tenants")) {
    const std::vector<YAML::Node> elements = document.Elements(*list, "tenants");
    for (size_t i = 0; i < elements.size(); ++i) {
      tenant_keepkv.push_back(ReadTenant(document, elements[i], absl::StrCat("tenants[", i, "]"),
                                         config.tenants.emplace_back()));
    }
  }
  if (auto section = r.Find("store")) ReadStore(document, *section, config.store);
  if (auto section = r.Find("documents")) {
    ReadSection(document, *section, "documents", documents::kDocumentsKeys, config.documents);
  }
  if (auto section = r.Find("keepkv")) ReadKeepKv(document, *section, "keepkv", config.keepkv);
  for (size_t i = 0; i < tenant_keepkv.size() && i < config.tenants.size(); ++i) {
    TenantConfig& tenant = config.tenants[i];
    tenant.keepkv = config.keepkv;
    if (tenant_keepkv[i].has_value()) {
      ReadKeepKv(document, *tenant_keepkv[i], absl::StrCat("tenants[", i, "].keepkv"),
                 tenant.keepkv);
    }
  }
  if (auto section = r.Find("responses")) {
    ReadSection(document, *section, "responses", kResponsesKeys, config.responses);
  }
  if (auto section = r.Find("structured_outputs")) {
    ReadSection(document, *section, "structured_outputs", kStructuredOutputsKeys,
                config.structured_outputs);
  }
  if (auto section = r.Find("metrics")) {
    ReadSection(document, *section, "metrics", kMetricsKeys, config.metrics);
  }
  if (auto section = r.Find("logging")) {
    ReadSection(document, *section, "logging", kLoggingKeys, config.logging);
  }
  r.Finish();
}

// The start of each document of a stream, and nothing else.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  std::vector<YAML::Mark> marks;
};

std::string Location(const std::string& source, const YAML::Mark& mark) {
  return mark.line >= 0 ? absl::StrCat(source, ":", mark.line + 1) : source;
}

}  // namespace

absl::StatusOr<ServerConfig> ParseServerConfig(std::string_view yaml,
                                               std::string_view source_name) {
  const std::string source(source_name);
  YAML::Node root;
  try {
    // The documents are counted first, and only up to three: yaml-cpp 0.7's LoadAll never returns
    // on a stream that starts with ',' (each document it reads there consumes nothing).
    std::istringstream stream{std::string(yaml)};
    YAML::Parser parser(stream);
    DocumentStarts starts;
    // A stuck parse starts its documents at one place again and again.
    while (starts.marks.size() < 3 && parser.HandleNextDocument(starts)) {
      const size_t count = starts.marks.size();
      if (count > 1 && starts.marks[count - 1].pos == starts.marks[count - 2].pos) {
        return absl::InvalidArgumentError(absl::StrCat(Location(source, starts.marks.back()),
                                                       ": not valid YAML: no document here"));
      }
    }
    if (starts.marks.size() > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(Location(source, starts.marks[1]), ": expected one YAML document, found ",
                       starts.marks.size() > 2 ? "more than 2" : "2"));
    }
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(Location(source, e.mark), ": not valid YAML: ", e.msg));
  }

  ServerConfig config;
  YamlDocument document(source);
  try {
    ReadServerConfig(document, root, config);
  } catch (const YAML::Exception& e) {
    // The reader only walks nodes it has checked; this is a backstop, not a path.
    return absl::InvalidArgumentError(
        absl::StrCat(Location(source, e.mark), ": cannot read the config: ", e.msg));
  }
  if (!document.ok()) return document.status();

  if (absl::Status status = config.Validate(); !status.ok()) {
    std::optional<int> line;
    if (std::optional<std::string> path = base::ConfigErrorKeyPath(status)) {
      line = document.LineOf(*path);
    }
    std::string text = source;
    if (line.has_value()) absl::StrAppend(&text, ":", *line);
    absl::StrAppend(&text, ": ", std::string(status.message()));
    return absl::InvalidArgumentError(text);
  }
  return config;
}

absl::StatusOr<ServerConfig> LoadServerConfig(const std::filesystem::path& file) {
  // A directory opens as an empty stream; it must not read as an empty (default) config.
  std::error_code error_code;
  if (std::filesystem::is_directory(file, error_code)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", file.string(), " is a directory"));
  }
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int error = errno;
    return absl::Status(error != 0 ? absl::ErrnoToStatusCode(error) : absl::StatusCode::kNotFound,
                        absl::StrCat("cannot read config file ", file.string(), ": ",
                                     error != 0 ? std::strerror(error) : "cannot open"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("error reading config file ", file.string()));
  }
  return ParseServerConfig(text.str(), file.string());
}

}  // namespace kvd::server
