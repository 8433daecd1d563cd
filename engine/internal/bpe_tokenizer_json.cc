#include "engine/internal/bpe_tokenizer_json.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace kvd::engine::internal {
namespace {

using Json = nlohmann::json;

// Field access that turns every problem into a Status naming the file and the JSON path.
// nlohmann's accessors throw; these check types first so nothing here throws.
class Reader {
 public:
  explicit Reader(std::string_view source_name) : source_name_(source_name) {}

  absl::Status Invalid(const std::string& path, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_name_, ": ", path, ": ", what));
  }
  absl::Status Unsupported(const std::string& path, const std::string& what) const {
    return absl::UnimplementedError(absl::StrCat(source_name_, ": ", path, ": ", what));
  }

  // The member `key` of `object`, or null when absent (an explicit null reads the same).
  static const Json* Find(const Json& object, std::string_view key) {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }

  absl::StatusOr<const Json*> Required(const Json& object, std::string_view key, Json::value_t type,
                                       const std::string& path) const {
    const Json* value = Find(object, key);
    if (value == nullptr) return Invalid(path, "missing");
    if (value->type() != type && !(type == Json::value_t::number_integer &&
                                   value->type() == Json::value_t::number_unsigned)) {
      return Invalid(path,
                     absl::StrCat("expected ", TypeName(type), ", found ", value->type_name()));
    }
    return value;
  }

  absl::StatusOr<std::string> String(const Json& object, std::string_view key,
                                     const std::string& path) const {
    absl::StatusOr<const Json*> value = Required(object, key, Json::value_t::string, path);
    if (!value.ok()) return value.status();
    return (*value)->get<std::string>();
  }

  absl::StatusOr<bool> Bool(const Json& object, std::string_view key, bool default_value,
                            const std::string& path) const {
    const Json* value = Find(object, key);
    if (value == nullptr) return default_value;
    if (!value->is_boolean()) {
      return Invalid(path, absl::StrCat("expected a boolean, found ", value->type_name()));
    }
    return value->get<bool>();
  }

  // A token id: an integer in [0, 2^31).
  absl::StatusOr<int32_t> Id(const Json& value, const std::string& path) const {
    if (!value.is_number_integer()) {
      return Invalid(path, absl::StrCat("expected an integer id, found ", value.type_name(),
                                        value.is_primitive() ? " " + value.dump() : ""));
    }
    const int64_t id = value.is_number_unsigned()
                           ? static_cast<int64_t>(std::min<uint64_t>(
                                 value.get<uint64_t>(), std::numeric_limits<int64_t>::max()))
                           : value.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return Invalid(path, absl::StrCat("id ", value.dump(), " is out of range"));
    }
    return static_cast<int32_t>(id);
  }

  // The "type" member of a component object at `path`.
  absl::StatusOr<std::string> Type(const Json& component, const std::string& path) const {
    if (!component.is_object()) {
      return Invalid(path, absl::StrCat("expected an object, found ", component.type_name()));
    }
    return String(component, "type", absl::StrCat(path, ".type"));
  }

 private:
  static const char* TypeName(Json::value_t type) {
    switch (type) {
      case Json::value_t::object:
        return "an object";
      case Json::value_t::array:
        return "an array";
      case Json::value_t::string:
        return "a string";
      case Json::value_t::boolean:
        return "a boolean";
      case Json::value_t::number_integer:
        return "an integer";
      default:
        return "a number";
    }
  }

  std::string source_name_;  // std::string: Debian's Abseil StrCat takes no std::string_view
};

#define KVD_RETURN_IF_ERROR_(expr)            \
  do {                                        \
    if (absl::Status s_ = (expr); !s_.ok()) { \
      return s_;                              \
    }                                         \
  } while (0)

#define KVD_ASSIGN_OR_RETURN_(lhs, expr)               \
  auto KVD_CONCAT_(status_or_, __LINE__) = (expr);     \
  if (!KVD_CONCAT_(status_or_, __LINE__).ok()) {       \
    return KVD_CONCAT_(status_or_, __LINE__).status(); \
  }                                                    \
  lhs = *std::move(KVD_CONCAT_(status_or_, __LINE__))
#define KVD_CONCAT_INNER_(a, b) a##b
#define KVD_CONCAT_(a, b) KVD_CONCAT_INNER_(a, b)

absl::Status ParseModel(const Reader& r, const Json& root, TokenizerSpec& spec) {
  const Json* model = Reader::Find(root, "model");
  if (model == nullptr) return r.Invalid("model", "missing");
  if (!model->is_object()) {
    return r.Invalid("model", absl::StrCat("expected an object, found ", model->type_name()));
  }
  // Old files leave out the type of a BPE model.
  if (Reader::Find(*model, "type") != nullptr) {
    KVD_ASSIGN_OR_RETURN_(const std::string type, r.Type(*model, "model"));
    if (type != "BPE") {
      return r.Unsupported("model.type",
                           absl::StrCat("model type \"", type, "\" is not supported (only BPE)"));
    }
  }
  KVD_ASSIGN_OR_RETURN_(const Json* vocab,
                        r.Required(*model, "vocab", Json::value_t::object, "model.vocab"));
  KVD_ASSIGN_OR_RETURN_(const Json* merges,
                        r.Required(*model, "merges", Json::value_t::array, "model.merges"));

  if (const Json* dropout = Reader::Find(*model, "dropout");
      dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return r.Unsupported("model.dropout", "BPE dropout is not supported");
  }
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* value = Reader::Find(*model, affix);
    if (value != nullptr && !(value->is_string() && value->get<std::string>().empty())) {
      return r.Unsupported(absl::StrCat("model.", affix), "is not supported in a byte-level BPE");
    }
  }
  KVD_ASSIGN_OR_RETURN_(spec.model.ignore_merges,
                        r.Bool(*model, "ignore_merges", false, "model.ignore_merges"));

  spec.model.vocab.reserve(vocab->size());
  for (const auto& [token, id_json] : vocab->items()) {
    KVD_ASSIGN_OR_RETURN_(const int32_t id,
                          r.Id(id_json, absl::StrCat("model.vocab[\"", token, "\"]")));
    spec.model.vocab.emplace_back(token, id);
  }

  spec.model.merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const Json& merge = (*merges)[i];
    if (merge.is_string()) {
      const std::string& line = merge.get_ref<const std::string&>();
      std::vector<std::string> parts = absl::StrSplit(line, ' ');
      if (parts.size() != 2) {
        return r.Invalid(absl::StrCat("model.merges[", i, "]"),
                         absl::StrCat("\"", line, "\" is not two tokens separated by a space"));
      }
      spec.model.merges.emplace_back(std::move(parts[0]), std::move(parts[1]));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      spec.model.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      return r.Invalid(
          absl::StrCat("model.merges[", i, "]"),
          absl::StrCat("expected \"left right\" or [\"left\", \"right\"], found ", merge.dump()));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseAddedTokens(const Reader& r, const Json& root, TokenizerSpec& spec) {
  const Json* added = Reader::Find(root, "added_tokens");
  if (added == nullptr) return absl::OkStatus();
  if (!added->is_array()) {
    return r.Invalid("added_tokens", absl::StrCat("expected an array, found ", added->type_name()));
  }
  for (size_t i = 0; i < added->size(); ++i) {
    const Json& entry = (*added)[i];
    const std::string path = absl::StrCat("added_tokens[", i, "]");
    if (!entry.is_object()) {
      return r.Invalid(path, absl::StrCat("expected an object, found ", entry.type_name()));
    }
    AddedToken token;
    const Json* id = Reader::Find(entry, "id");
    if (id == nullptr) return r.Invalid(path + ".id", "missing");
    KVD_ASSIGN_OR_RETURN_(token.id, r.Id(*id, path + ".id"));
    KVD_ASSIGN_OR_RETURN_(token.content, r.String(entry, "content", path + ".content"));
    if (token.content.empty()) return r.Invalid(path + ".content", "empty");
    KVD_ASSIGN_OR_RETURN_(token.single_word,
                          r.Bool(entry, "single_word", false, path + ".single_word"));
    KVD_ASSIGN_OR_RETURN_(token.lstrip, r.Bool(entry, "lstrip", false, path + ".lstrip"));
    KVD_ASSIGN_OR_RETURN_(token.rstrip, r.Bool(entry, "rstrip", false, path + ".rstrip"));
    KVD_ASSIGN_OR_RETURN_(token.special, r.Bool(entry, "special", false, path + ".special"));
    KVD_ASSIGN_OR_RETURN_(token.normalized,
                          r.Bool(entry, "normalized", !token.special, path + ".normalized"));
    spec.added_tokens.push_back(std::move(token));
  }
  return absl::OkStatus();
}

absl::Status ParseNormalizer(const Reader& r, const Json& root) {
  const Json* normalizer = Reader::Find(root, "normalizer");
  if (normalizer == nullptr) return absl::OkStatus();
  const absl::StatusOr<std::string> type = r.Type(*normalizer, "normalizer");
  if (!type.ok()) return type.status();
  if (*type == "Sequence") {
    const Json* parts = Reader::Find(*normalizer, "normalizers");
    if (parts == nullptr || (parts->is_array() && parts->empty())) return absl::OkStatus();
  }
  return r.Unsupported("normalizer.type",
                       absl::StrCat("normalizer type \"", *type,
                                    "\" is not supported (only none, for byte-level BPE)"));
}

absl::StatusOr<SplitBehavior> ParseSplitBehavior(const Reader& r, const Json& split,
                                                 const std::string& path) {
  KVD_ASSIGN_OR_RETURN_(const std::string behavior,
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

absl::Status ParsePreTokenizer(const Reader& r, const Json& component, const std::string& path,
                               TokenizerSpec& spec, bool& has_byte_level) {
  KVD_ASSIGN_OR_RETURN_(const std::string type, r.Type(component, path));
  if (type == "Sequence") {
    KVD_ASSIGN_OR_RETURN_(
        const Json* parts,
        r.Required(component, "pretokenizers", Json::value_t::array, path + ".pretokenizers"));
    for (size_t i = 0; i < parts->size(); ++i) {
      KVD_RETURN_IF_ERROR_(ParsePreTokenizer(
          r, (*parts)[i], absl::StrCat(path, ".pretokenizers[", i, "]"), spec, has_byte_level));
    }
    return absl::OkStatus();
  }
  if (has_byte_level) {
    return r.Unsupported(
        path, absl::StrCat("a ", type, " pre-tokenizer after ByteLevel is not supported"));
  }
  if (type == "ByteLevel") {
    has_byte_level = true;
    KVD_ASSIGN_OR_RETURN_(const bool add_prefix_space,
                          r.Bool(component, "add_prefix_space", true, path + ".add_prefix_space"));
    KVD_ASSIGN_OR_RETURN_(const bool use_regex,
                          r.Bool(component, "use_regex", true, path + ".use_regex"));
    if (add_prefix_space) {
      PreTokenizerStep step;
      step.kind = PreTokenizerStep::Kind::kPrefixSpace;
      step.json_path = path;
      spec.pre_tokenizer.push_back(std::move(step));
    }
    if (use_regex) {
      PreTokenizerStep step;
      step.pattern = std::string(kGpt2SplitPattern);
      step.json_path = path;
      spec.pre_tokenizer.push_back(std::move(step));
    }
    return absl::OkStatus();
  }
  if (type == "Split") {
    PreTokenizerStep step;
    step.json_path = path + ".pattern";
    KVD_ASSIGN_OR_RETURN_(const Json* pattern,
                          r.Required(component, "pattern", Json::value_t::object, step.json_path));
    if (const Json* regex = Reader::Find(*pattern, "Regex"); regex && regex->is_string()) {
      step.pattern = regex->get<std::string>();
    } else if (const Json* literal = Reader::Find(*pattern, "String");
               literal && literal->is_string()) {
      step.pattern = literal->get<std::string>();
      step.literal = true;
    } else {
      return r.Invalid(step.json_path, "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    KVD_ASSIGN_OR_RETURN_(step.behavior, ParseSplitBehavior(r, component, path));
    KVD_ASSIGN_OR_RETURN_(step.invert, r.Bool(component, "invert", false, path + ".invert"));
    spec.pre_tokenizer.push_back(std::move(step));
    return absl::OkStatus();
  }
  return r.Unsupported(path + ".type",
                       absl::StrCat("pre_tokenizer type \"", type,
                                    "\" is not supported (only ByteLevel, Split and Sequence)"));
}

absl::Status ParsePreTokenizers(const Reader& r, const Json& root, TokenizerSpec& spec) {
  const Json* pre_tokenizer = Reader::Find(root, "pre_tokenizer");
  bool has_byte_level = false;
  if (pre_tokenizer != nullptr) {
    KVD_RETURN_IF_ERROR_(
        ParsePreTokenizer(r, *pre_tokenizer, "pre_tokenizer", spec, has_byte_level));
  }
  if (!has_byte_level) {
    return r.Unsupported("pre_tokenizer",
                         "no ByteLevel pre-tokenizer; only byte-level BPE is supported");
  }
  return absl::OkStatus();
}

absl::Status ParseDecoder(const Reader& r, const Json& root) {
  const Json* decoder = Reader::Find(root, "decoder");
  if (decoder == nullptr) {
    return r.Unsupported("decoder", "missing; only the ByteLevel decoder is supported");
  }
  KVD_ASSIGN_OR_RETURN_(const std::string type, r.Type(*decoder, "decoder"));
  if (type != "ByteLevel") {
    return r.Unsupported("decoder.type", absl::StrCat("decoder type \"", type,
                                                      "\" is not supported (only ByteLevel)"));
  }
  return absl::OkStatus();
}

// TemplateProcessing's "single" template: special tokens around one Sequence "A".
absl::Status ParseTemplate(const Reader& r, const Json& processor, const std::string& path,
                           TokenizerSpec& spec) {
  KVD_ASSIGN_OR_RETURN_(const Json* single,
                        r.Required(processor, "single", Json::value_t::array, path + ".single"));
  const Json* special_tokens = Reader::Find(processor, "special_tokens");
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const Json& piece = (*single)[i];
    const std::string piece_path = absl::StrCat(path, ".single[", i, "]");
    if (const Json* sequence = piece.is_object() ? Reader::Find(piece, "Sequence") : nullptr) {
      const Json* id = sequence->is_object() ? Reader::Find(*sequence, "id") : nullptr;
      if (id == nullptr || *id != "A" || seen_sequence) {
        return r.Unsupported(piece_path, "a single template must hold Sequence \"A\" once");
      }
      seen_sequence = true;
      continue;
    }
    const Json* special = piece.is_object() ? Reader::Find(piece, "SpecialToken") : nullptr;
    if (special == nullptr || !special->is_object()) {
      return r.Invalid(piece_path, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
    KVD_ASSIGN_OR_RETURN_(const std::string name,
                          r.String(*special, "id", piece_path + ".SpecialToken.id"));
    const Json* entry = special_tokens && special_tokens->is_object()
                            ? Reader::Find(*special_tokens, name)
                            : nullptr;
    if (entry == nullptr || !entry->is_object()) {
      return r.Invalid(piece_path, absl::StrCat("special token \"", name, "\" is not in ", path,
                                                ".special_tokens"));
    }
    const std::string ids_path = absl::StrCat(path, ".special_tokens[\"", name, "\"].ids");
    KVD_ASSIGN_OR_RETURN_(const Json* ids,
                          r.Required(*entry, "ids", Json::value_t::array, ids_path));
    for (size_t k = 0; k < ids->size(); ++k) {
      KVD_ASSIGN_OR_RETURN_(const int32_t id, r.Id((*ids)[k], absl::StrCat(ids_path, "[", k, "]")));
      (seen_sequence ? suffix : prefix).push_back(id);
    }
  }
  if (!seen_sequence) return r.Unsupported(path + ".single", "no Sequence \"A\"");
  // Processors run in order, each wrapping the output of the previous one.
  spec.template_prefix.insert(spec.template_prefix.begin(), prefix.begin(), prefix.end());
  spec.template_suffix.insert(spec.template_suffix.end(), suffix.begin(), suffix.end());
  return absl::OkStatus();
}

absl::Status ParsePostProcessor(const Reader& r, const Json& processor, const std::string& path,
                                TokenizerSpec& spec) {
  KVD_ASSIGN_OR_RETURN_(const std::string type, r.Type(processor, path));
  if (type == "ByteLevel") return absl::OkStatus();  // Only adjusts offsets.
  if (type == "TemplateProcessing") return ParseTemplate(r, processor, path, spec);
  if (type == "Sequence") {
    KVD_ASSIGN_OR_RETURN_(
        const Json* parts,
        r.Required(processor, "processors", Json::value_t::array, path + ".processors"));
    for (size_t i = 0; i < parts->size(); ++i) {
      KVD_RETURN_IF_ERROR_(
          ParsePostProcessor(r, (*parts)[i], absl::StrCat(path, ".processors[", i, "]"), spec));
    }
    return absl::OkStatus();
  }
  return r.Unsupported(path + ".type",
                       absl::StrCat("post_processor type \"", type,
                                    "\" is not supported (only TemplateProcessing, ByteLevel "
                                    "and Sequence)"));
}

absl::StatusOr<TokenizerSpec> Parse(const Reader& r, const Json& root) {
  if (!root.is_object()) {
    return r.Invalid("(top level)", absl::StrCat("expected an object, found ", root.type_name()));
  }
  TokenizerSpec spec;
  KVD_RETURN_IF_ERROR_(ParseModel(r, root, spec));
  KVD_RETURN_IF_ERROR_(ParseAddedTokens(r, root, spec));
  KVD_RETURN_IF_ERROR_(ParseNormalizer(r, root));
  KVD_RETURN_IF_ERROR_(ParsePreTokenizers(r, root, spec));
  KVD_RETURN_IF_ERROR_(ParseDecoder(r, root));
  if (const Json* processor = Reader::Find(root, "post_processor"); processor != nullptr) {
    KVD_RETURN_IF_ERROR_(ParsePostProcessor(r, *processor, "post_processor", spec));
  }
  const size_t id_limit = spec.model.vocab.size() + spec.added_tokens.size();
  spec.model.id_limit =
      static_cast<int32_t>(std::min<size_t>(id_limit, std::numeric_limits<int32_t>::max()));
  return spec;
}

}  // namespace

absl::StatusOr<TokenizerSpec> ParseTokenizerJson(std::string_view json,
                                                 std::string_view source_name) {
  const Reader reader(source_name);
  Json root;
  try {
    root = Json::parse(json);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source_name), ": not valid JSON: ", e.what()));
  }
  // The reader checks types before every access, but a library that throws is wrapped at the
  // call site all the same.
  try {
    return Parse(reader, root);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source_name), ": malformed: ", e.what()));
  }
}

}  // namespace kvd::engine::internal
