#include "server/cli/tokenize_command.h"

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "server/cli/exit_status.h"
#include "text/tokenizer.h"

namespace kvd::server {
namespace {

using Json = nlohmann::json;

struct TokenizeOptions {
  std::string tokenizer_path;
  bool no_special_tokens = false;    // tokenize: leave out the post-processor's BOS/EOS
  bool skip_special_tokens = false;  // detokenize: drop special added tokens
};

// Parses one input line; a JSON error becomes InvalidArgument naming the line.
absl::StatusOr<Json> ParseLine(const std::string& line, size_t line_number) {
  Json value = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": not valid JSON"));
  }
  return value;
}

void WriteLine(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  // A caller may feed one line and wait for its answer: never leave one in the buffer.
  std::fflush(stdout);
}

// Runs `handle` on every line of stdin, stopping at the first error.
template <typename Handle>
absl::Status ForEachLine(Handle handle) {
  std::string line;
  for (size_t line_number = 1; std::getline(std::cin, line); ++line_number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    absl::StatusOr<Json> value = ParseLine(line, line_number);
    if (!value.ok()) return value.status();
    if (absl::Status status = handle(*value, line_number); !status.ok()) return status;
  }
  if (std::cin.bad()) return absl::DataLossError("reading stdin failed");
  return absl::OkStatus();
}

absl::Status RunTokenize(const TokenizeOptions& options) {
  absl::StatusOr<std::unique_ptr<text::Tokenizer>> tokenizer =
      text::Tokenizer::FromFile(options.tokenizer_path);
  if (!tokenizer.ok()) return tokenizer.status();
  return ForEachLine([&](const Json& value, size_t line_number) -> absl::Status {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", line_number, ": expected a JSON string, found ", value.type_name()));
    }
    const std::vector<int32_t> ids =
        (*tokenizer)->Encode(value.get_ref<const std::string&>(), !options.no_special_tokens);
    WriteLine(Json(ids).dump());
    return absl::OkStatus();
  });
}

absl::Status RunDetokenize(const TokenizeOptions& options) {
  absl::StatusOr<std::unique_ptr<text::Tokenizer>> tokenizer =
      text::Tokenizer::FromFile(options.tokenizer_path);
  if (!tokenizer.ok()) return tokenizer.status();
  return ForEachLine([&](const Json& value, size_t line_number) -> absl::Status {
    auto error = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": ", what));
    };
    if (!value.is_array()) {
      return error(absl::StrCat("expected a JSON array of token ids, found ", value.type_name()));
    }
    std::vector<int32_t> ids;
    ids.reserve(value.size());
    for (const Json& id : value) {
      if (!id.is_number_integer() || id.get<int64_t>() < INT32_MIN ||
          id.get<int64_t>() > INT32_MAX) {
        return error(absl::StrCat("expected integer token ids, found ", id.dump()));
      }
      ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
    absl::StatusOr<std::string> text = (*tokenizer)->Decode(ids, options.skip_special_tokens);
    if (!text.ok()) return error(std::string(text.status().message()));
    WriteLine(Json(*text).dump(-1, ' ', false, Json::error_handler_t::replace));
    return absl::OkStatus();
  });
}

}  // namespace

void AddTokenizeCommands(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* tokenize = app.add_subcommand(
      "tokenize",
      "Encode text: one JSON string per stdin line, one JSON array of ids per line out");
  tokenize->add_option("--tokenizer", options->tokenizer_path, "Hugging Face tokenizer.json")
      ->required();
  tokenize->add_flag("--no-special-tokens", options->no_special_tokens,
                     "Do not add the post-processor's special tokens (BOS)");
  tokenize->callback([options] { ExitWith(RunTokenize(*options)); });

  CLI::App* detokenize = app.add_subcommand(
      "detokenize",
      "Decode ids: one JSON array of ids per stdin line, one JSON string per line out");
  detokenize->add_option("--tokenizer", options->tokenizer_path, "Hugging Face tokenizer.json")
      ->required();
  detokenize->add_flag("--skip-special-tokens", options->skip_special_tokens,
                       "Leave special tokens (BOS, EOS, chat markers) out of the text");
  detokenize->callback([options] { ExitWith(RunDetokenize(*options)); });
}

}  // namespace kvd::server
