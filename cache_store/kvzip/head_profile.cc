#include "cache_store/kvzip/head_profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/sha256.h"
#include "text/bounded_json.h"

namespace kvd::cache_store {
namespace {

constexpr char kFormat[] = "kvd-kvzip-head-profile/1";
// Far beyond any model's layers × kv heads (Llama 3 405B: 126 × 8); bounds what a hostile file
// may make the decoder hold.
constexpr int64_t kMaxHeads = int64_t{1} << 16;
constexpr const char* kMembers[] = {"format",        "model_digest", "tokenizer_digest",
                                    "num_layers",    "num_kv_heads", "samples",
                                    "sample_tokens", "importance"};

absl::Status Malformed(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("KVzip head profile: ", why));
}

absl::StatusOr<int64_t> IntegerAt(const nlohmann::json& json, const char* key) {
  const auto member = json.find(key);
  if (member == json.end() || !member->is_number_integer() ||
      (member->is_number_unsigned() &&
       member->get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})) {
    return Malformed(absl::StrCat("'", key, "' must be an integer"));
  }
  return member->get<int64_t>();
}

absl::StatusOr<int32_t> Int32At(const nlohmann::json& json, const char* key) {
  absl::StatusOr<int64_t> value = IntegerAt(json, key);
  if (!value.ok()) return value.status();
  if (*value < std::numeric_limits<int32_t>::min() ||
      *value > std::numeric_limits<int32_t>::max()) {
    return Malformed(absl::StrCat("'", key, "' is out of range"));
  }
  return static_cast<int32_t>(*value);
}

}  // namespace

absl::Status HeadProfile::Validate() const {
  if (samples < 1) return Malformed("it averages no samples");
  if (sample_tokens < samples) return Malformed("its samples have fewer tokens than samples");
  if (num_layers < 1 || num_kv_heads < 1 || int64_t{num_layers} * num_kv_heads > kMaxHeads) {
    return Malformed(absl::StrCat("a model of ", num_layers, " layers and ", num_kv_heads,
                                  " kv heads cannot be profiled"));
  }
  if (importance.size() != static_cast<size_t>(num_layers) * num_kv_heads) {
    return Malformed(absl::StrCat("it has ", importance.size(), " importances for ",
                                  int64_t{num_layers} * num_kv_heads, " heads"));
  }
  for (float value : importance) {
    if (!(value >= 0.0f && value <= 1.0f)) return Malformed("an importance is not in [0, 1]");
  }
  return absl::OkStatus();
}

std::string HeadProfile::Digest() const { return base::Sha256Hex(EncodeHeadProfile(*this)); }

std::vector<float> MaxScorePerHead(const DocumentPayload& payload) {
  std::vector<float> maxima;
  maxima.reserve(payload.heads.size());
  for (const HeadKv& head : payload.heads) {
    float highest = 0.0f;
    for (float score : head.scores) {
      if (std::isfinite(score)) highest = std::max(highest, score);
    }
    maxima.push_back(highest);
  }
  return maxima;
}

absl::StatusOr<HeadProfile> AverageHeadMaxima(std::string model_digest,
                                              std::string tokenizer_digest, int32_t num_layers,
                                              int32_t num_kv_heads,
                                              const std::vector<std::vector<float>>& per_sample,
                                              int64_t sample_tokens) {
  if (per_sample.empty()) return Malformed("no sample was scored");
  const size_t heads = static_cast<size_t>(num_layers) * num_kv_heads;
  std::vector<double> sums(heads, 0.0);
  for (const std::vector<float>& maxima : per_sample) {
    if (maxima.size() != heads) {
      return Malformed(absl::StrCat("a sample scored ", maxima.size(), " heads, not ", heads));
    }
    for (size_t h = 0; h < heads; ++h) sums[h] += maxima[h];
  }
  HeadProfile profile{.model_digest = std::move(model_digest),
                      .tokenizer_digest = std::move(tokenizer_digest),
                      .num_layers = num_layers,
                      .num_kv_heads = num_kv_heads,
                      .samples = static_cast<int32_t>(per_sample.size()),
                      .sample_tokens = sample_tokens};
  for (double sum : sums) {
    profile.importance.push_back(static_cast<float>(sum / static_cast<double>(per_sample.size())));
  }
  if (auto status = profile.Validate(); !status.ok()) return status;
  return profile;
}

std::string EncodeHeadProfile(const HeadProfile& profile) {
  nlohmann::ordered_json json;
  json["format"] = kFormat;
  json["model_digest"] = profile.model_digest;
  json["tokenizer_digest"] = profile.tokenizer_digest;
  json["num_layers"] = profile.num_layers;
  json["num_kv_heads"] = profile.num_kv_heads;
  json["samples"] = profile.samples;
  json["sample_tokens"] = profile.sample_tokens;
  // A float widened to double prints in the fewest digits that read back to the same float.
  nlohmann::ordered_json importance = nlohmann::ordered_json::array();
  for (float value : profile.importance) importance.push_back(static_cast<double>(value));
  json["importance"] = std::move(importance);
  return json.dump() + "\n";
}

absl::StatusOr<HeadProfile> DecodeHeadProfile(std::string_view text) {
  absl::StatusOr<nlohmann::json> parsed = text::ParseBoundedJson(text, "KVzip head profile");
  if (!parsed.ok()) return Malformed(parsed.status().message());
  const nlohmann::json& json = *parsed;
  if (!json.is_object()) return Malformed("it is not a JSON object");
  for (const auto& [name, value] : json.items()) {
    if (std::find(std::begin(kMembers), std::end(kMembers), name) == std::end(kMembers)) {
      return Malformed(absl::StrCat("unknown member '", name, "'"));
    }
  }
  const auto format = json.find("format");
  if (format == json.end() || !format->is_string() || format->get<std::string>() != kFormat) {
    return Malformed(absl::StrCat("its format is not ", kFormat));
  }
  HeadProfile profile;
  for (const auto& [key, digest] : {std::pair{"model_digest", &profile.model_digest},
                                    std::pair{"tokenizer_digest", &profile.tokenizer_digest}}) {
    const auto member = json.find(key);
    if (member == json.end() || !member->is_string()) {
      return Malformed(absl::StrCat("'", key, "' must be a string"));
    }
    *digest = member->get<std::string>();
  }
  absl::StatusOr<int32_t> layers = Int32At(json, "num_layers");
  absl::StatusOr<int32_t> kv_heads = Int32At(json, "num_kv_heads");
  absl::StatusOr<int32_t> samples = Int32At(json, "samples");
  absl::StatusOr<int64_t> tokens = IntegerAt(json, "sample_tokens");
  for (const absl::Status& status :
       {layers.status(), kv_heads.status(), samples.status(), tokens.status()}) {
    if (!status.ok()) return status;
  }
  profile.num_layers = *layers;
  profile.num_kv_heads = *kv_heads;
  profile.samples = *samples;
  profile.sample_tokens = *tokens;
  const auto importance = json.find("importance");
  if (importance == json.end() || !importance->is_array() ||
      importance->size() > static_cast<size_t>(kMaxHeads)) {
    return Malformed("'importance' must be an array of one number per head");
  }
  for (const nlohmann::json& value : *importance) {
    if (!value.is_number()) return Malformed("an importance is not a number");
    const double number = value.get<double>();
    if (!(std::abs(number) <= std::numeric_limits<float>::max())) {
      return Malformed("an importance is out of range");
    }
    profile.importance.push_back(static_cast<float>(number));
  }
  if (auto status = profile.Validate(); !status.ok()) return status;
  return profile;
}

}  // namespace kvd::cache_store
