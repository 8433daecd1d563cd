#include "text/internal/bpe_tokenizer_json.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/bounded_json.h"
#include "text/internal/pipeline_json.h"
#include "text/internal/tokenizer_json_reader.h"

namespace kvd::text::internal {
namespace {

using Json = nlohmann::json;

absl::Status ParseModel(const JsonReader& r, const Json& root, TokenizerSpec& spec) {
  const Json* model = JsonReader::Find(root, "model");
  if (model == nullptr) return r.Invalid("model", "missing");
  if (!model->is_object()) {
    return r.Invalid("model", absl::StrCat("expected an object, found ", model->type_name()));
  }
  // Old files leave out the type of a BPE model.
  if (JsonReader::Find(*model, "type") != nullptr) {
    KVD_ASSIGN_OR_RETURN(const std::string type, r.Type(*model, "model"));
    if (type != "BPE") {
      return r.Unsupported("model.type",
                           absl::StrCat("model type \"", type, "\" is not supported (only BPE)"));
    }
  }
  KVD_ASSIGN_OR_RETURN(const Json* vocab,
                       r.Required(*model, "vocab", Json::value_t::object, "model.vocab"));
  KVD_ASSIGN_OR_RETURN(const Json* merges,
                       r.Required(*model, "merges", Json::value_t::array, "model.merges"));

  if (const Json* dropout = JsonReader::Find(*model, "dropout");
      dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return r.Unsupported("model.dropout", "BPE dropout is not supported");
  }
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* value = JsonReader::Find(*model, affix);
    if (value != nullptr && !(value->is_string() && value->get<std::string>().empty())) {
      return r.Unsupported(absl::StrCat("model.", affix), "a non-empty affix is not supported");
    }
  }
  KVD_ASSIGN_OR_RETURN(spec.model.ignore_merges,
                       r.Bool(*model, "ignore_merges", false, "model.ignore_merges"));
  KVD_ASSIGN_OR_RETURN(spec.model.byte_fallback,
                       r.Bool(*model, "byte_fallback", false, "model.byte_fallback"));
  KVD_ASSIGN_OR_RETURN(spec.model.fuse_unk, r.Bool(*model, "fuse_unk", false, "model.fuse_unk"));
  if (JsonReader::Find(*model, "unk_token") != nullptr) {
    KVD_ASSIGN_OR_RETURN(spec.model.unk_token, r.String(*model, "unk_token", "model.unk_token"));
  }

  spec.model.vocab.reserve(vocab->size());
  for (const auto& [token, id_json] : vocab->items()) {
    KVD_ASSIGN_OR_RETURN(const int32_t id,
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

absl::Status ParseAddedTokens(const JsonReader& r, const Json& root, TokenizerSpec& spec) {
  const Json* added = JsonReader::Find(root, "added_tokens");
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
    const Json* id = JsonReader::Find(entry, "id");
    if (id == nullptr) return r.Invalid(path + ".id", "missing");
    KVD_ASSIGN_OR_RETURN(token.id, r.Id(*id, path + ".id"));
    KVD_ASSIGN_OR_RETURN(token.content, r.String(entry, "content", path + ".content"));
    if (token.content.empty()) return r.Invalid(path + ".content", "empty");
    KVD_ASSIGN_OR_RETURN(token.single_word,
                         r.Bool(entry, "single_word", false, path + ".single_word"));
    KVD_ASSIGN_OR_RETURN(token.lstrip, r.Bool(entry, "lstrip", false, path + ".lstrip"));
    KVD_ASSIGN_OR_RETURN(token.rstrip, r.Bool(entry, "rstrip", false, path + ".rstrip"));
    KVD_ASSIGN_OR_RETURN(token.special, r.Bool(entry, "special", false, path + ".special"));
    KVD_ASSIGN_OR_RETURN(token.normalized,
                         r.Bool(entry, "normalized", !token.special, path + ".normalized"));
    spec.added_tokens.push_back(std::move(token));
  }
  return absl::OkStatus();
}

// TemplateProcessing's "single" template: special tokens around one Sequence "A".
absl::Status ParseTemplate(const JsonReader& r, const Json& processor, const std::string& path,
                           TokenizerSpec& spec) {
  KVD_ASSIGN_OR_RETURN(const Json* single,
                       r.Required(processor, "single", Json::value_t::array, path + ".single"));
  const Json* special_tokens = JsonReader::Find(processor, "special_tokens");
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const Json& piece = (*single)[i];
    const std::string piece_path = absl::StrCat(path, ".single[", i, "]");
    if (const Json* sequence = piece.is_object() ? JsonReader::Find(piece, "Sequence") : nullptr) {
      const Json* id = sequence->is_object() ? JsonReader::Find(*sequence, "id") : nullptr;
      if (id == nullptr || *id != "A" || seen_sequence) {
        return r.Unsupported(piece_path, "a single template must hold Sequence \"A\" once");
      }
      seen_sequence = true;
      continue;
    }
    const Json* special = piece.is_object() ? JsonReader::Find(piece, "SpecialToken") : nullptr;
    if (special == nullptr || !special->is_object()) {
      return r.Invalid(piece_path, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
    KVD_ASSIGN_OR_RETURN(const std::string name,
                         r.String(*special, "id", piece_path + ".SpecialToken.id"));
    const Json* entry = special_tokens && special_tokens->is_object()
                            ? JsonReader::Find(*special_tokens, name)
                            : nullptr;
    if (entry == nullptr || !entry->is_object()) {
      return r.Invalid(piece_path, absl::StrCat("special token \"", name, "\" is not in ", path,
                                                ".special_tokens"));
    }
    const std::string ids_path = absl::StrCat(path, ".special_tokens[\"", name, "\"].ids");
    KVD_ASSIGN_OR_RETURN(const Json* ids,
                         r.Required(*entry, "ids", Json::value_t::array, ids_path));
    for (size_t k = 0; k < ids->size(); ++k) {
      KVD_ASSIGN_OR_RETURN(const int32_t id, r.Id((*ids)[k], absl::StrCat(ids_path, "[", k, "]")));
      (seen_sequence ? suffix : prefix).push_back(id);
    }
  }
  if (!seen_sequence) return r.Unsupported(path + ".single", "no Sequence \"A\"");
  // Processors run in order, each wrapping the output of the previous one.
  spec.template_prefix.insert(spec.template_prefix.begin(), prefix.begin(), prefix.end());
  spec.template_suffix.insert(spec.template_suffix.end(), suffix.begin(), suffix.end());
  return absl::OkStatus();
}

absl::Status ParsePostProcessor(const JsonReader& r, const Json& processor, const std::string& path,
                                TokenizerSpec& spec) {
  KVD_ASSIGN_OR_RETURN(const std::string type, r.Type(processor, path));
  if (type == "ByteLevel") return absl::OkStatus();  // Only adjusts offsets.
  if (type == "TemplateProcessing") return ParseTemplate(r, processor, path, spec);
  if (type == "Sequence") {
    KVD_ASSIGN_OR_RETURN(const Json* parts, r.Required(processor, "processors",
                                                       Json::value_t::array, path + ".processors"));
    for (size_t i = 0; i < parts->size(); ++i) {
      KVD_RETURN_IF_ERROR(
          ParsePostProcessor(r, (*parts)[i], absl::StrCat(path, ".processors[", i, "]"), spec));
    }
    return absl::OkStatus();
  }
  return r.Unsupported(path + ".type",
                       absl::StrCat("post_processor type \"", type,
                                    "\" is not supported (only TemplateProcessing, ByteLevel "
                                    "and Sequence)"));
}

absl::StatusOr<TokenizerSpec> Parse(const JsonReader& r, const Json& root) {
  if (!root.is_object()) {
    return r.Invalid("(top level)", absl::StrCat("expected an object, found ", root.type_name()));
  }
  TokenizerSpec spec;
  KVD_RETURN_IF_ERROR(ParseModel(r, root, spec));
  KVD_RETURN_IF_ERROR(ParseAddedTokens(r, root, spec));
  KVD_RETURN_IF_ERROR(ParseNormalizer(r, root, &spec.normalizer));
  KVD_RETURN_IF_ERROR(ParsePreTokenizer(r, root, &spec.pre_tokenizer, &spec.model.byte_level));
  KVD_RETURN_IF_ERROR(ParseDecoder(r, root, &spec.decoder));
  if (const Json* processor = JsonReader::Find(root, "post_processor"); processor != nullptr) {
    KVD_RETURN_IF_ERROR(ParsePostProcessor(r, *processor, "post_processor", spec));
  }
  const size_t id_limit = spec.model.vocab.size() + spec.added_tokens.size();
  spec.model.id_limit =
      static_cast<int32_t>(std::min<size_t>(id_limit, std::numeric_limits<int32_t>::max()));
  return spec;
}

}  // namespace

absl::StatusOr<TokenizerSpec> ParseTokenizerJson(std::string_view json,
                                                 std::string_view source_name) {
  const JsonReader reader(source_name);
  absl::StatusOr<Json> parsed = ParseBoundedJson<Json>(json, std::string(source_name));
  if (!parsed.ok()) return parsed.status();
  const Json root = *std::move(parsed);
  // The reader checks types before every access, but a library that throws is wrapped at the
  // call site all the same.
  try {
    return Parse(reader, root);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source_name), ": malformed: ", e.what()));
  }
}

}  // namespace kvd::text::internal
