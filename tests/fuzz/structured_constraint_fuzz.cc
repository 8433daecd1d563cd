// Fuzzes constraint compilation (JSON Schema, regular expression, choices, tool calls) and the
// matcher over the bundled model's vocabulary. The first byte picks the kind, the rest is the
// constraint's text. A compiled constraint is then walked for a few tokens, always taking an
// allowed one.
#include <algorithm>
#include <iterator>
#include <memory>

#include "fuzz_support.h"
#include "structured/constraint.h"
#include "structured/constraint_spec.h"

namespace {

const std::shared_ptr<const kvd::structured::TokenTrie>& Trie() {
  static const auto* trie = new std::shared_ptr<const kvd::structured::TokenTrie>([] {
    const kvd::fuzz::BundledModel& bundled = kvd::fuzz::Bundled();
    auto created =
        kvd::structured::TokenTrie::Create(*bundled.tokenizer, bundled.config.eos_token_ids);
    kvd::fuzz::RequireOk(created.status(), "the bundled vocabulary's trie");
    return *std::move(created);
  }());
  return *trie;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kvd::structured::ConstraintSpec;
  if (size == 0) return 0;
  static constexpr ConstraintSpec::Kind kKinds[] = {
      ConstraintSpec::Kind::kJsonSchema, ConstraintSpec::Kind::kRegex,
      ConstraintSpec::Kind::kChoice, ConstraintSpec::Kind::kJsonObject,
      ConstraintSpec::Kind::kToolCalls};
  // The first byte picks the kind, and past the kinds' count the whitespace too.
  const ConstraintSpec spec{.kind = kKinds[data[0] % std::size(kKinds)],
                            .text = std::string(kvd::fuzz::AsText(data + 1, size - 1)),
                            .whitespace = (data[0] / std::size(kKinds)) % 2 == 0
                                              ? kvd::structured::JsonWhitespace::kCompact
                                              : kvd::structured::JsonWhitespace::kAny};
  absl::StatusOr<kvd::structured::Grammar> grammar = kvd::structured::CompileConstraint(spec);
  if (!grammar.ok()) return 0;
  const auto constraint =
      std::make_shared<const kvd::structured::Constraint>(*std::move(grammar), Trie());
  kvd::structured::ConstraintMatcher matcher(constraint);
  // A token budget from the input: the walk takes the budgeted masks' tokens.
  const int32_t budget = 2 + data[size - 1] % 40;
  for (int step = 0; step < 24 && !matcher.ended(); ++step) {
    absl::StatusOr<std::shared_ptr<const kvd::structured::TokenMask>> mask = matcher.NextTokens();
    if (!mask.ok()) return 0;  // the constraint's state space is spent: a clean refusal
    absl::StatusOr<std::shared_ptr<const kvd::structured::TokenMask>> budgeted =
        matcher.NextTokens(std::max(1, budget - step));
    if (!budgeted.ok()) return 0;
    (*budgeted)->ForEach([&](int32_t token) {
      kvd::fuzz::Require((*mask)->allows(token), "a budgeted mask allows only allowed tokens");
    });
    // Some token that the mask excludes is refused, leaving the matcher where it was.
    int32_t excluded = -1;
    int32_t allowed = -1;
    int32_t budgeted_allowed = -1;
    (*budgeted)->ForEach([&](int32_t token) {
      if (budgeted_allowed < 0) budgeted_allowed = token;
    });
    const int32_t vocab = (*mask)->vocab_size();
    // Vary the pick with the input so that walks leave the first alternative.
    const int32_t start = static_cast<int32_t>((data[(step + 1) % size] * 131) % vocab);
    for (int32_t k = 0; k < vocab && (allowed < 0 || excluded < 0); ++k) {
      const int32_t token = (start + k) % vocab;
      if ((*mask)->allows(token)) {
        if (allowed < 0) allowed = token;
      } else if (excluded < 0) {
        excluded = token;
      }
    }
    if (excluded >= 0) {
      kvd::fuzz::Require(!matcher.Accept(excluded).ok(), "a token the mask excludes is refused");
    }
    if (allowed < 0) {
      kvd::fuzz::Require(!matcher.can_continue(), "a matcher that can continue allows a token");
      return 0;
    }
    kvd::fuzz::Require(budgeted_allowed >= 0, "a budgeted mask is never empty where one is not");
    // Every other step takes the budgeted mask's first token, so walks meet tight budgets.
    const int32_t take = step % 2 == 0 ? budgeted_allowed : allowed;
    kvd::fuzz::Require(matcher.Accept(take).ok(), "a token the mask allows is accepted");
  }
  return 0;
}
