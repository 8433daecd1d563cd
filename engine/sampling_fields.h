// The one table of the sampling parameters that are a number in a range: each member of
// SamplingParams with its name, range and documentation line. The HTTP and gRPC request readers,
// `kvd generate`'s flags, SamplingParams::Validate and the docs test all read it, so a new
// parameter is a member of SamplingParams, a row here, its effect in sampling.cc and a field of
// the proto's SamplingParams of the same name.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>

#include "absl/status/status.h"
#include "engine/sampling.h"

namespace kvd::engine {

// The values a parameter may take: [min, max], or (min, max] when min_open.
struct SamplingRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false;
  std::string_view note;  // said after the rule, "-1 or 0: every token"

  bool Contains(double value) const;
  // "in [0, 2]", "in (0, 1]", "in [-1, 2147483647] (-1 or 0: every token)".
  std::string Rule() const;
};

using SamplingMember = std::variant<float SamplingParams::*, int32_t SamplingParams::*>;

struct SamplingField {
  std::string_view name;  // the key in JSON, the proto's SamplingParams field, `--name` in the CLI
  SamplingMember member;
  SamplingRange range;
  std::string_view doc;  // the docs' line: what it does, without range or default
};

inline constexpr SamplingField kSamplingFields[] = {
    {"temperature",
     &SamplingParams::temperature,
     {.min = 0, .max = 2, .note = "0: greedy"},
     "divides the logits before sampling"},
    {"top_p",
     &SamplingParams::top_p,
     {.min = 0, .max = 1, .min_open = true},
     "samples from the most likely tokens whose probabilities add up to this (nucleus)"},
    {"top_k",
     &SamplingParams::top_k,
     {.min = -1, .max = std::numeric_limits<int32_t>::max(), .note = "-1 or 0: every token"},
     "samples from this many most likely tokens"},
    {"min_p",
     &SamplingParams::min_p,
     {.min = 0, .max = 1},
     "drops the tokens less likely than this times the most likely one"},
    {"presence_penalty",
     &SamplingParams::presence_penalty,
     {.min = -2, .max = 2},
     "subtracted from the logit of every token the output holds"},
    {"frequency_penalty",
     &SamplingParams::frequency_penalty,
     {.min = -2, .max = 2},
     "subtracted from a token's logit once for each time the output holds it"},
    {"repetition_penalty",
     &SamplingParams::repetition_penalty,
     {.min = 0.01, .max = 10},
     "divides the positive logits (multiplies the negative ones) of the tokens in the prompt "
     "and the output"},
};

// Whether the row's values are integers.
bool IsInteger(const SamplingField& field);

// Sets `field` of `params` to `value` when it keeps the field's rule (in range, an integer
// where the member is one, representable as the member's type); otherwise an InvalidArgument
// error naming the field, "'top_p' must be in (0, 1], got 0", and params unchanged.
absl::Status SetSamplingField(const SamplingField& field, double value, SamplingParams& params);

// OK when the field's value in `params` keeps its rule; otherwise the error SetSamplingField
// gives for that value.
absl::Status CheckSamplingField(const SamplingField& field, const SamplingParams& params);

// The field's value in `params`.
double SamplingFieldValue(const SamplingField& field, const SamplingParams& params);

// "<doc>; in (0, 1]": what the parameter does and the values it takes, for help texts.
std::string SamplingHelp(const SamplingField& field);

// "--top-p": the command-line flag of the row.
std::string SamplingFlag(const SamplingField& field);

// The row's line in docs/api.md's table of sampling parameters: "| `top_p` | <doc>; in (0, 1] |
// `1` |", the default taken from SamplingParams{}.
std::string SamplingDocRow(const SamplingField& field);

// The row named `name`, or null.
const SamplingField* FindSamplingField(std::string_view name);

}  // namespace kvd::engine
