#include "text/internal/pipeline_json.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace kvd::text::internal {
namespace {

using Json = nlohmann::json;

// Replace's {"String": ...} or {"Regex": ...} pattern.
absl::Status ParsePattern(const JsonReader& r, const Json& component, const std::string& path,
                          std::string* pattern, bool* regex) {
  KVD_ASSIGN_OR_RETURN(const Json* value,
                       r.Required(component, "pattern", Json::value_t::object, path));
  if (const Json* text = JsonReader::Find(*value, "Regex"); text && text->is_string()) {
    *pattern = text->get<std::string>();
    *regex = true;
  } else if (const Json* literal = JsonReader::Find(*value, "String");
             literal && literal->is_string()) {
    *pattern = literal->get<std::string>();
    *regex = false;
  } else {
    return r.Invalid(path, "expected {\"Regex\": ...} or {\"String\": ...}");
  }
  return absl::OkStatus();
}

absl::Status ParseNormalizerStep(const JsonReader& r, const Json& component,
                                 const std::string& path, std::vector<NormalizerStep>* steps) {
  KVD_ASSIGN_OR_RETURN(const std::string type, r.Type(component, path));
  using Kind = NormalizerStep::Kind;
  NormalizerStep step;
  step.json_path = path;
  if (type == "Sequence") {
    KVD_ASSIGN_OR_RETURN(
        const Json* parts,
        r.Required(component, "normalizers", Json::value_t::array, path + ".normalizers"));
    for (size_t i = 0; i < parts->size(); ++i) {
      KVD_RETURN_IF_ERROR(
          ParseNormalizerStep(r, (*parts)[i], absl::StrCat(path, ".normalizers[", i, "]"), steps));
    }
    return absl::OkStatus();
  }
  static constexpr std::pair<std::string_view, Kind> kSimple[] = {
      {"NFC", Kind::kNfc},
      {"NFD", Kind::kNfd},
      {"NFKC", Kind::kNfkc},
      {"NFKD", Kind::kNfkd},
      {"Lowercase", Kind::kLowercase},
  };
  for (const auto& [name, kind] : kSimple) {
    if (type == name) {
      step.kind = kind;
      steps->push_back(std::move(step));
      return absl::OkStatus();
    }
  }
  if (type == "Strip") {
    step.kind = Kind::kStrip;
    KVD_ASSIGN_OR_RETURN(step.strip_left,
                         r.Bool(component, "strip_left", true, path + ".strip_left"));
    KVD_ASSIGN_OR_RETURN(step.strip_right,
                         r.Bool(component, "strip_right", true, path + ".strip_right"));
  } else if (type == "Prepend") {
    step.kind = Kind::kPrepend;
    KVD_ASSIGN_OR_RETURN(step.content, r.String(component, "prepend", path + ".prepend"));
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    KVD_RETURN_IF_ERROR(ParsePattern(r, component, path + ".pattern", &step.pattern, &step.regex));
    KVD_ASSIGN_OR_RETURN(step.content, r.String(component, "content", path + ".content"));
  } else {
    return r.Unsupported(path + ".type",
                         absl::StrCat("normalizer type \"", type,
                                      "\" is not supported (only NFC, NFD, NFKC, NFKD, "
                                      "Lowercase, Strip, Prepend, Replace and Sequence)"));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

absl::StatusOr<SplitBehavior> ParseSplitBehavior(const JsonReader& r, const Json& split,
                                                 const std::string& path) {
  KVD_ASSIGN_OR_RETURN(const std::string behavior,
                       r.String(split, "behavior", absl::StrCat(path, ".behavior")));
  static constexpr std::pair<std::string_view, SplitBehavior> kBehaviors[] = {
      {"Removed", SplitBehavior::kRemoved},
      {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext},
      {"Contiguous", SplitBehavior::kContiguous},
  };
  for (const auto& [name, value] : kBehaviors) {
    if (behavior == name) return value;
  }
  return r.Invalid(absl::StrCat(path, ".behavior"),
                   absl::StrCat("unknown split behavior \"", behavior, "\""));
}

// Metaspace's prepend_scheme, or the add_prefix_space of files that predate it.
absl::StatusOr<PreTokenizerStep::Prepend> ParsePrependScheme(const JsonReader& r,
                                                             const Json& component,
                                                             const std::string& path) {
  using Prepend = PreTokenizerStep::Prepend;
  if (const Json* scheme = JsonReader::Find(component, "prepend_scheme"); scheme != nullptr) {
    KVD_ASSIGN_OR_RETURN(const std::string name,
                         r.String(component, "prepend_scheme", path + ".prepend_scheme"));
    if (name == "always") return Prepend::kAlways;
    if (name == "first") return Prepend::kFirst;
    if (name == "never") return Prepend::kNever;
    return r.Invalid(path + ".prepend_scheme",
                     absl::StrCat("unknown prepend scheme \"", name, "\""));
  }
  KVD_ASSIGN_OR_RETURN(const bool add_prefix_space,
                       r.Bool(component, "add_prefix_space", true, path + ".add_prefix_space"));
  return add_prefix_space ? Prepend::kAlways : Prepend::kNever;
}

absl::Status ParsePreTokenizerStep(const JsonReader& r, const Json& component,
                                   const std::string& path, std::vector<PreTokenizerStep>* steps,
                                   bool* byte_level) {
  KVD_ASSIGN_OR_RETURN(const std::string type, r.Type(component, path));
  if (type == "Sequence") {
    KVD_ASSIGN_OR_RETURN(
        const Json* parts,
        r.Required(component, "pretokenizers", Json::value_t::array, path + ".pretokenizers"));
    for (size_t i = 0; i < parts->size(); ++i) {
      KVD_RETURN_IF_ERROR(ParsePreTokenizerStep(
          r, (*parts)[i], absl::StrCat(path, ".pretokenizers[", i, "]"), steps, byte_level));
    }
    return absl::OkStatus();
  }
  // ByteLevel maps the text to its byte alphabet, which the model does in kvd: nothing may
  // follow it.
  if (*byte_level) {
    return r.Unsupported(
        path, absl::StrCat("a ", type, " pre-tokenizer after ByteLevel is not supported"));
  }
  PreTokenizerStep step;
  step.json_path = path;
  if (type == "ByteLevel") {
    *byte_level = true;
    KVD_ASSIGN_OR_RETURN(const bool add_prefix_space,
                         r.Bool(component, "add_prefix_space", true, path + ".add_prefix_space"));
    KVD_ASSIGN_OR_RETURN(const bool use_regex,
                         r.Bool(component, "use_regex", true, path + ".use_regex"));
    if (add_prefix_space) {
      PreTokenizerStep prefix = step;
      prefix.kind = PreTokenizerStep::Kind::kPrefixSpace;
      steps->push_back(std::move(prefix));
    }
    if (use_regex) {
      step.pattern = std::string(kGpt2SplitPattern);
      steps->push_back(std::move(step));
    }
    return absl::OkStatus();
  }
  if (type == "Split") {
    step.json_path = path + ".pattern";
    bool regex = false;
    KVD_RETURN_IF_ERROR(ParsePattern(r, component, step.json_path, &step.pattern, &regex));
    step.literal = !regex;
    KVD_ASSIGN_OR_RETURN(step.behavior, ParseSplitBehavior(r, component, path));
    KVD_ASSIGN_OR_RETURN(step.invert, r.Bool(component, "invert", false, path + ".invert"));
  } else if (type == "Digits") {
    KVD_ASSIGN_OR_RETURN(const bool individual, r.Bool(component, "individual_digits", false,
                                                       path + ".individual_digits"));
    step.pattern = R"(\p{N})";  // Rust's char::is_numeric
    step.behavior = individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous;
  } else if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    KVD_ASSIGN_OR_RETURN(step.pattern, r.String(component, "replacement", path + ".replacement"));
    KVD_ASSIGN_OR_RETURN(step.prepend, ParsePrependScheme(r, component, path));
    KVD_ASSIGN_OR_RETURN(step.metaspace_split, r.Bool(component, "split", true, path + ".split"));
  } else {
    return r.Unsupported(path + ".type",
                         absl::StrCat("pre_tokenizer type \"", type,
                                      "\" is not supported (only ByteLevel, Split, Digits, "
                                      "Metaspace and Sequence)"));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

absl::Status ParseDecoderStep(const JsonReader& r, const Json& component, const std::string& path,
                              std::vector<DecoderStep>* steps) {
  KVD_ASSIGN_OR_RETURN(const std::string type, r.Type(component, path));
  using Kind = DecoderStep::Kind;
  if (type == "Sequence") {
    KVD_ASSIGN_OR_RETURN(const Json* parts, r.Required(component, "decoders", Json::value_t::array,
                                                       path + ".decoders"));
    for (size_t i = 0; i < parts->size(); ++i) {
      KVD_RETURN_IF_ERROR(
          ParseDecoderStep(r, (*parts)[i], absl::StrCat(path, ".decoders[", i, "]"), steps));
    }
    return absl::OkStatus();
  }
  DecoderStep step;
  step.json_path = path;
  if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
  } else if (type == "ByteFallback") {
    step.kind = Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::kFuse;
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    bool regex = false;
    KVD_RETURN_IF_ERROR(ParsePattern(r, component, path + ".pattern", &step.pattern, &regex));
    if (regex) return r.Unsupported(path + ".pattern", "a Replace decoder with a Regex pattern");
    if (step.pattern.empty()) return r.Invalid(path + ".pattern", "empty");
    KVD_ASSIGN_OR_RETURN(step.content, r.String(component, "content", path + ".content"));
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    KVD_ASSIGN_OR_RETURN(step.pattern, r.String(component, "replacement", path + ".replacement"));
    if (step.pattern.empty()) return r.Invalid(path + ".replacement", "empty");
    KVD_ASSIGN_OR_RETURN(const PreTokenizerStep::Prepend prepend,
                         ParsePrependScheme(r, component, path));
    step.metaspace_strips_first = prepend != PreTokenizerStep::Prepend::kNever;
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    KVD_ASSIGN_OR_RETURN(step.content, r.String(component, "content", path + ".content"));
    for (auto [key, field] : {std::pair{"start", &step.strip_start}, {"stop", &step.strip_stop}}) {
      const Json* value = JsonReader::Find(component, key);
      if (value == nullptr) continue;
      if (!value->is_number_unsigned() || value->get<uint64_t>() > 1024) {
        return r.Invalid(absl::StrCat(path, ".", key), "expected a small non-negative integer");
      }
      *field = static_cast<int>(value->get<uint64_t>());
    }
  } else {
    return r.Unsupported(path + ".type",
                         absl::StrCat("decoder type \"", type,
                                      "\" is not supported (only ByteLevel, Replace, Metaspace, "
                                      "ByteFallback, Fuse, Strip and Sequence)"));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseNormalizer(const JsonReader& r, const Json& root,
                             std::vector<NormalizerStep>* steps) {
  const Json* normalizer = JsonReader::Find(root, "normalizer");
  if (normalizer == nullptr) return absl::OkStatus();
  return ParseNormalizerStep(r, *normalizer, "normalizer", steps);
}

absl::Status ParsePreTokenizer(const JsonReader& r, const Json& root,
                               std::vector<PreTokenizerStep>* steps, bool* byte_level) {
  *byte_level = false;
  const Json* pre_tokenizer = JsonReader::Find(root, "pre_tokenizer");
  if (pre_tokenizer == nullptr) return absl::OkStatus();
  return ParsePreTokenizerStep(r, *pre_tokenizer, "pre_tokenizer", steps, byte_level);
}

absl::Status ParseDecoder(const JsonReader& r, const Json& root, std::vector<DecoderStep>* steps) {
  const Json* decoder = JsonReader::Find(root, "decoder");
  if (decoder == nullptr) {
    return r.Unsupported("decoder", "missing (decoding by joining tokens with spaces)");
  }
  return ParseDecoderStep(r, *decoder, "decoder", steps);
}

}  // namespace kvd::text::internal
