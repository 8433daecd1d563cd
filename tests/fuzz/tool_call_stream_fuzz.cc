// Fuzzes the streaming tool-call parser on model output: the first byte picks the syntax and the
// size of the pieces the rest arrives in. Whatever the text, the parse in pieces equals the parse
// of the whole, and every call fragment belongs to the call begun last.
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "structured/tool_call_syntax.h"

namespace {

struct Parse {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

Parse Run(kvd::structured::ToolCallSyntax syntax, std::string_view text, size_t piece) {
  kvd::structured::ToolCallStream stream(syntax);
  Parse parse;
  auto add = [&](const kvd::structured::ParsedOutput& out) {
    parse.content += out.content;
    for (const kvd::structured::ToolCallFragment& fragment : out.calls) {
      if (!fragment.name.empty()) {
        kvd::fuzz::Require(fragment.index == static_cast<int32_t>(parse.calls.size()),
                           "a new call takes the next index");
        parse.calls.emplace_back(fragment.name, "");
      }
      kvd::fuzz::Require(fragment.index + 1 == static_cast<int32_t>(parse.calls.size()),
                         "a fragment belongs to the call begun last");
      parse.calls.back().second += fragment.arguments;
    }
  };
  for (size_t at = 0; at < text.size(); at += piece) add(stream.Feed(text.substr(at, piece)));
  add(stream.Finish());
  kvd::fuzz::Require(stream.calls() == static_cast<int32_t>(parse.calls.size()),
                     "calls() counts the calls");
  return parse;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto syntax = data[0] % 2 == 0 ? kvd::structured::ToolCallSyntax::kHermes
                                       : kvd::structured::ToolCallSyntax::kLlama3Json;
  const size_t piece = 1 + (data[0] >> 1) % 16;
  const std::string_view text = kvd::fuzz::AsText(data + 1, size - 1);
  const Parse whole = Run(syntax, text, text.size() + 1);
  const Parse pieces = Run(syntax, text, piece);
  kvd::fuzz::Require(whole.content == pieces.content, "content does not depend on the pieces");
  kvd::fuzz::Require(whole.calls == pieces.calls, "calls do not depend on the pieces");
  return 0;
}
