#include "bench/constraint_mask_bench.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/statistics.h"
#include "structured/constraint.h"
#include "structured/json_schema_grammar.h"
#include "text/tokenizer.h"

namespace kvd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A tool-call-like object: a name, nested arguments, a list of records.
constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "email": {"type": "string", "format": "email"},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    "address": {"type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                               "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["street", "city", "zip"], "additionalProperties": false},
    "status": {"enum": ["active", "inactive", "pending"]},
    "score": {"anyOf": [{"type": "number"}, {"type": "null"}]}
  },
  "required": ["name", "age", "email", "tags", "address", "status", "score"],
  "additionalProperties": false})";

// Fifty properties of the common types, all required.
structured::JsonValue FiftyPropertySchema() {
  structured::JsonValue properties = structured::JsonValue::object();
  const char* types[] = {"string", "integer", "number", "boolean"};
  structured::JsonValue required = structured::JsonValue::array();
  for (int i = 0; i < 50; ++i) {
    const std::string name = absl::StrCat("field_", i);
    properties[name] = i % 5 == 4
                           ? structured::JsonValue{{"type", "array"},
                                                   {"items", {{"type", "string"}}}}
                           : structured::JsonValue{{"type", types[i % 4]}};
    required.push_back(name);
  }
  return {{"type", "object"},
          {"properties", properties},
          {"required", required},
          {"additionalProperties", false}};
}

}  // namespace

absl::StatusOr<ConstraintMaskBenchResult> MeasureConstraintMasks(
    const ConstraintMaskBenchOptions& options) {
  KVD_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                       text::Tokenizer::FromFile(options.tokenizer_path));
  ConstraintMaskBenchResult result;
  result.vocab_size = tokenizer->vocab_size();
  const Clock::time_point trie_start = Clock::now();
  KVD_ASSIGN_OR_RETURN(std::shared_ptr<const structured::TokenTrie> trie,
                       structured::TokenTrie::Create(*tokenizer, {}));
  result.trie_ms = MsSince(trie_start);
  result.trie_nodes = trie->node_count();

  struct Named {
    std::string name;
    structured::JsonValue schema;  // null: any JSON object
  };
  const std::vector<Named> constraints = {
      {"json_object", nullptr},
      {"person schema (7 properties, nested)", structured::JsonValue::parse(kPersonSchema)},
      {"50-property schema", FiftyPropertySchema()},
  };
  std::mt19937_64 random(options.seed);
  for (const Named& named : constraints) {
    ConstraintMaskBenchRow row;
    row.constraint = named.name;
    const auto compile = [&]() {
      constexpr auto kCompact = structured::JsonWhitespace::kCompact;
      return named.schema.is_null() ? structured::CompileAnyJsonObject(kCompact)
                                    : structured::CompileJsonSchema(named.schema, kCompact);
    };
    std::vector<double> compile_ms;
    for (int32_t r = 0; r < options.compile_repeats; ++r) {
      const Clock::time_point start = Clock::now();
      KVD_RETURN_IF_ERROR(compile().status());
      compile_ms.push_back(MsSince(start));
    }
    row.compile_ms = Median(compile_ms);
    KVD_ASSIGN_OR_RETURN(structured::Grammar grammar, compile());
    const auto constraint = std::make_shared<const structured::Constraint>(std::move(grammar), trie);

    std::vector<double> walk_ms;
    double all_steps_us = 0;
    double warm_steps_us = 0;
    int64_t warm_steps = 0;
    // The last walk repeats the first one's choices, every mask of it already remembered.
    const uint64_t first_walk_seed = random();
    for (int32_t walk = 0; walk <= options.walks; ++walk) {
      const bool warm = walk == options.walks;
      std::mt19937_64 choices(warm || walk == 0 ? first_walk_seed : random());
      structured::ConstraintMatcher matcher(constraint);
      std::vector<int32_t> allowed;
      for (int32_t step = 0; step < options.max_tokens && !matcher.ended(); ++step) {
        const uint64_t computed_before = constraint->mask_statistics().computed;
        const Clock::time_point start = Clock::now();
        KVD_ASSIGN_OR_RETURN(const std::shared_ptr<const structured::TokenMask> mask,
                             matcher.NextTokens());
        const double mask_ms = MsSince(start);
        allowed.clear();
        mask->ForEach([&](int32_t token) { allowed.push_back(token); });
        if (allowed.empty()) break;  // complete, nothing may follow, no end token to accept
        const int32_t token = allowed[choices() % allowed.size()];
        const Clock::time_point accept_start = Clock::now();
        KVD_RETURN_IF_ERROR(matcher.Accept(token));
        const double step_us = 1e3 * (mask_ms + MsSince(accept_start));
        if (constraint->mask_statistics().computed > computed_before) walk_ms.push_back(mask_ms);
        if (warm) {
          warm_steps_us += step_us;
          ++warm_steps;
        } else {
          all_steps_us += step_us;
          ++row.steps;
        }
        // Half the time the walk stops where the value is whole, as a model's end token would.
        if (matcher.complete() && choices() % 2 == 0) break;
      }
    }
    row.walked = static_cast<int64_t>(walk_ms.size());
    row.walk_ms_median = walk_ms.empty() ? 0 : Median(walk_ms);
    row.walk_ms_max = walk_ms.empty() ? 0 : *std::max_element(walk_ms.begin(), walk_ms.end());
    row.step_us_mean = row.steps == 0 ? 0 : all_steps_us / static_cast<double>(row.steps);
    row.warm_step_us_mean = warm_steps == 0 ? 0 : warm_steps_us / static_cast<double>(warm_steps);
    result.rows.push_back(row);
  }
  return result;
}

void PrintConstraintMaskTable(const ConstraintMaskBenchOptions& options,
                              const ConstraintMaskBenchResult& result) {
  std::printf(
      "Token masks over %s: %d tokens, trie of %zu nodes built in %.0f ms; %d random walks of "
      "up to %d tokens per constraint\n\n"
      "| constraint | compile ms | steps | masks walked | walk ms median | walk ms max | "
      "µs per step | µs per step, masks remembered |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n",
      options.tokenizer_path.c_str(), result.vocab_size, result.trie_nodes, result.trie_ms,
      options.walks, options.max_tokens);
  for (const ConstraintMaskBenchRow& row : result.rows) {
    std::printf("| %s | %.2f | %lld | %lld | %.2f | %.2f | %.1f | %.1f |\n", row.constraint.c_str(),
                row.compile_ms, static_cast<long long>(row.steps),
                static_cast<long long>(row.walked), row.walk_ms_median, row.walk_ms_max,
                row.step_us_mean, row.warm_step_us_mean);
  }
}

}  // namespace kvd::bench
