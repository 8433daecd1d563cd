#include "cache_store/store/document_meta.h"

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/enum_names.h"
#include "cache_store/store/kv_storage.h"
#include "text/bounded_json.h"

namespace kvd::cache_store {
namespace {

constexpr int kMetaFormatVersion = 1;

nlohmann::json TimeToJson(absl::Time time) {
  if (time == absl::InfiniteFuture()) return nullptr;
  return absl::ToUnixMicros(time);
}

// An integer member of `json`, refused unless stored as an int64: get<int64_t>() would truncate
// a float, and convert one out of range (1e300) with undefined behaviour.
absl::StatusOr<int64_t> IntegerAt(const nlohmann::json& json, const char* key) {
  const nlohmann::json& value = json.at(key);
  if (!value.is_number_integer() ||
      (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX})) {
    return absl::DataLossError(
        absl::StrCat("stored document meta has a ", key, " that is not an int64"));
  }
  return value.get<int64_t>();
}

// A time member: null for InfiniteFuture, else Unix microseconds.
absl::StatusOr<absl::Time> TimeAt(const nlohmann::json& json, const char* key) {
  if (json.at(key).is_null()) return absl::InfiniteFuture();
  absl::StatusOr<int64_t> micros = IntegerAt(json, key);
  if (!micros.ok()) return micros.status();
  return absl::FromUnixMicros(*micros);
}

constexpr auto kDocumentStatusNames = base::MakeEnumNames<DocumentStatus>({
    {DocumentStatus::kProcessing, "processing"},
    {DocumentStatus::kReady, "ready"},
    {DocumentStatus::kFailed, "failed"},
});

absl::StatusOr<DocumentStatus> StatusFromName(const std::string& name) {
  if (std::optional<DocumentStatus> status = kDocumentStatusNames.Find(name)) return *status;
  return absl::DataLossError(absl::StrCat("stored document meta has unknown status ", name));
}

constexpr auto kDocumentHomeNames = base::MakeEnumNames<DocumentHome>({
    {DocumentHome::kLocal, "local"},
    {DocumentHome::kShared, "shared"},
    {DocumentHome::kCopy, "copy"},
});

}  // namespace

std::string DocumentHomeName(DocumentHome home) {
  return std::string(kDocumentHomeNames.Name(home));
}

absl::Status CheckReusable(const DocumentMeta& meta, const CacheIdentity& expected) {
  if (meta.status != DocumentStatus::kReady) {
    return absl::FailedPreconditionError(absl::StrCat(
        "document ", meta.id, " is ", DocumentStatusName(meta.status), ", not ready"));
  }
  if (std::string field = meta.identity.FirstDifference(expected); !field.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("document ", meta.id, " was compressed for another ", field,
                     "; its cache cannot be reused (stored fingerprint ",
                     meta.identity.Fingerprint(), ", expected ", expected.Fingerprint(), ")"));
  }
  return absl::OkStatus();
}

std::string DocumentStatusName(DocumentStatus status) {
  return std::string(kDocumentStatusNames.Name(status));
}

absl::Status DocumentMeta::Validate() const {
  if (id.empty()) return absl::InvalidArgumentError("document id is empty");
  if (tenant.empty()) return absl::InvalidArgumentError("document tenant is empty");
  if (!metadata.is_object()) {
    return absl::InvalidArgumentError("document metadata must be a JSON object");
  }
  if (merge && identity.method != "kvzip" && identity.method != "kvzip_heads") {
    return absl::InvalidArgumentError("only kvzip and kvzip_heads caches fold their drops");
  }
  return absl::OkStatus();
}

std::string EncodeMeta(const DocumentMeta& meta) {
  nlohmann::json json = {
      {"format", kMetaFormatVersion},
      {"id", meta.id},
      {"tenant", meta.tenant},
      {"status", DocumentStatusName(meta.status)},
      {"failure_reason", meta.failure_reason},
      {"created_us", TimeToJson(meta.created)},
      {"expires_us", TimeToJson(meta.expires)},
      {"token_count", meta.token_count},
      {"kept_entries", meta.kept_entries},
      {"stored_bytes", meta.stored_bytes},
      {"kv_storage", KvStorageName(meta.storage)},
      // The identity's, repeated at the top for readers of the stored JSON; never read back.
      {"method", meta.identity.method},
      {"ratio", meta.identity.ratio},
      {"keep_full", meta.keep_full},
      {"merge", meta.merge},
      {"home", DocumentHomeName(meta.home)},
      {"metadata", meta.metadata},
      {"identity",
       {{"model_digest", meta.identity.model_digest},
        {"tokenizer_digest", meta.identity.tokenizer_digest},
        {"kv_dtype", meta.identity.kv_dtype},
        {"method", meta.identity.method},
        {"method_version", meta.identity.method_version},
        {"ratio", meta.identity.ratio}}},
  };
  return json.dump();
}

absl::StatusOr<DocumentMeta> DecodeMeta(const std::string& bytes) {
  // nlohmann::json throws on malformed input or a wrong type; contain it here.
  try {
    absl::StatusOr<nlohmann::json> parsed = text::ParseBoundedJson(bytes, "stored document meta");
    if (!parsed.ok()) return absl::DataLossError(parsed.status().message());
    const nlohmann::json& json = *parsed;
    const absl::StatusOr<int64_t> format = IntegerAt(json, "format");
    if (!format.ok()) return format.status();
    if (*format != kMetaFormatVersion) {
      return absl::DataLossError(
          absl::StrCat("stored document meta has unsupported format version ", *format));
    }
    DocumentMeta meta;
    meta.id = json.at("id").get<std::string>();
    meta.tenant = json.at("tenant").get<std::string>();
    absl::StatusOr<DocumentStatus> status = StatusFromName(json.at("status").get<std::string>());
    if (!status.ok()) return status.status();
    meta.status = *status;
    meta.failure_reason = json.at("failure_reason").get<std::string>();
    const absl::StatusOr<absl::Time> created = TimeAt(json, "created_us");
    const absl::StatusOr<absl::Time> expires = TimeAt(json, "expires_us");
    const absl::StatusOr<int64_t> token_count = IntegerAt(json, "token_count");
    const absl::StatusOr<int64_t> kept_entries = IntegerAt(json, "kept_entries");
    const absl::StatusOr<int64_t> stored_bytes = IntegerAt(json, "stored_bytes");
    for (const absl::Status& number : {created.status(), expires.status(), token_count.status(),
                                       kept_entries.status(), stored_bytes.status()}) {
      if (!number.ok()) return number;
    }
    meta.created = *created;
    meta.expires = *expires;
    meta.token_count = *token_count;
    meta.kept_entries = *kept_entries;
    meta.stored_bytes = *stored_bytes;
    meta.keep_full = json.value("keep_full", false);  // absent in metas written before it
    meta.merge = json.value("merge", false);          // absent in metas written before it
    // Absent in metas written before the shared tier: theirs were local.
    std::optional<DocumentHome> home =
        kDocumentHomeNames.Find(json.value("home", std::string("local")));
    if (!home) return absl::DataLossError("stored document meta has an unknown home");
    meta.home = *home;
    // Absent in metas written before compact storage: their payloads are f32.
    absl::StatusOr<KvStorage> storage =
        ParseKvStorage(json.value("kv_storage", std::string(KvStorageName(KvStorage::kF32))));
    if (!storage.ok()) return absl::DataLossError(storage.status().message());
    meta.storage = *storage;
    meta.metadata = json.at("metadata");
    const nlohmann::json& identity = json.at("identity");
    meta.identity.model_digest = identity.at("model_digest").get<std::string>();
    meta.identity.tokenizer_digest = identity.at("tokenizer_digest").get<std::string>();
    meta.identity.kv_dtype = identity.at("kv_dtype").get<std::string>();
    meta.identity.method = identity.at("method").get<std::string>();
    meta.identity.method_version = identity.at("method_version").get<std::string>();
    meta.identity.ratio = identity.at("ratio").get<double>();
    if (absl::Status valid = meta.Validate(); !valid.ok()) {
      return absl::DataLossError(
          absl::StrCat("stored document meta is invalid: ", std::string(valid.message())));
    }
    return meta;
  } catch (const std::exception& error) {
    return absl::DataLossError(
        absl::StrCat("stored document meta is corrupt: ", std::string(error.what())));
  }
}

}  // namespace kvd::cache_store
