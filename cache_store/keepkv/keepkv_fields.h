// The one table of KeepKV's parameters: each member of KeepKvParams with its key, who may set
// it, its range and its documentation line. The config reader, the JSON and gRPC request
// readers, KeepKvParams::Check and the docs test all read it, so a new parameter is a member of
// KeepKvParams, a row here, and (when requests may set it) a field of the proto's KeepKv.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "cache_store/keepkv/keepkv_params.h"

namespace kvd::cache_store {

// Who may set a parameter, narrowest last.
enum class KeepKvScope : uint8_t {
  kRequest,   // a request's `keepkv` object, and the config's `keepkv` sections
  kOperator,  // the config's sections only
  kServer,    // the server, for each sequence; no key anywhere
};

// The values a numeric parameter may take: [min, max], or [min, max) when max_open.
struct KeepKvRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;
  bool odd = false;       // odd integers only
  std::string_view note;  // said after the rule, "0: never"

  bool Contains(double value) const;
  // "in [0, 1)", ">= 1", "odd and >= 1", ">= 0 (0: never)": what a value must be.
  std::string Rule() const;
};

using KeepKvMember = std::variant<KeepKvBudget KeepKvParams::*, double KeepKvParams::*,
                                  float KeepKvParams::*, int32_t KeepKvParams::*,
                                  MergeMethod KeepKvParams::*, MergeSelection KeepKvParams::*>;

struct KeepKvField {
  std::string_view name;  // the key in YAML, JSON and the proto's KeepKv
  KeepKvMember member;
  KeepKvScope scope;
  KeepKvRange range;     // numeric members only
  std::string_view doc;  // the docs' line: what it does, without range or default
};

inline constexpr KeepKvField kKeepKvFields[] = {
    {"budget",
     &KeepKvParams::budget,
     KeepKvScope::kRequest,
     {},
     "own KV entries kept per (layer, kv head): a number in (0, 1] is a fraction of the "
     "prompt's own tokens, rounded up (`1` and `1.0` both mean the whole prompt); a larger one "
     "is a token count and must be an integer"},
    {"alpha",
     &KeepKvParams::alpha,
     KeepKvScope::kRequest,
     {.min = 0, .max = 1, .max_open = true},
     "weight of the past in each entry's moving average of attention"},
    {"window",
     &KeepKvParams::window,
     KeepKvScope::kRequest,
     {.min = 1},
     "the prompt's last queries whose attention scores its entries"},
    {"pool",
     &KeepKvParams::pool,
     KeepKvScope::kOperator,
     {.min = 1, .odd = true, .note = "1: none"},
     "the prompt's scores are max-pooled over this many neighbouring positions, so the tokens "
     "next to an attended one rank with it"},
    {"refresh_every",
     &KeepKvParams::refresh_every,
     KeepKvScope::kRequest,
     {.min = 0, .note = "0: never"},
     "decode steps between rebuilds of the merged entries from a full copy kept on the host "
     "(which costs host memory)"},
    {"recent",
     &KeepKvParams::recent,
     KeepKvScope::kRequest,
     {.min = 0},
     "the most recent tokens, never merged"},
    {"sink",
     &KeepKvParams::sink,
     KeepKvScope::kOperator,
     {.min = 0},
     "the first tokens (attention sinks), never merged away"},
    {"method",
     &KeepKvParams::method,
     KeepKvScope::kRequest,
     {},
     "how two entries merge (docs/keepkv.md; `evict` drops the lower-scored one instead)"},
    {"min_cosine",
     &KeepKvParams::min_cosine,
     KeepKvScope::kOperator,
     {.min = -1, .max = 1},
     "with `lowest_scores` and `similar_pairs`, keys less similar than this are never merged "
     "(the lowest-scored entries are evicted instead)"},
    {"min_value_cosine",
     &KeepKvParams::min_value_cosine,
     KeepKvScope::kOperator,
     {.min = -1, .max = 1},
     "with `lowest_scores`, nor those whose values are less similar than this (-1: values are "
     "not compared)"},
    {"selection",
     &KeepKvParams::selection,
     KeepKvScope::kOperator,
     {},
     "which entries merge into which: those eviction would drop, all into the first position's "
     "entry, the attention sink, so that no other entry changes (`into_sink`; a sequence whose "
     "sink lies in a shared block evicts them), each into its most similar remaining entry "
     "(`lowest_scores`), or disjoint pairs of the most similar keys, whatever their scores "
     "(`similar_pairs`)"},
    {"protected_prefix",
     &KeepKvParams::protected_prefix,
     KeepKvScope::kServer,
     {.min = 0},
     "leading prompt tokens never merged: a chat's system turn"},
};

// How a parameter's value is written in YAML, JSON and the proto.
enum class KeepKvValueType : uint8_t {
  kBudget,   // a number: an integer token count or a fraction (the proto: a oneof of both)
  kNumber,   // any number
  kInteger,  // an integer
  kName,     // a string, one of the enum's names
};
KeepKvValueType ValueTypeOf(const KeepKvField& field);

// A budget given as a token count where 1 is one token (the proto's budget_tokens), not the
// whole prompt as a bare integer 1 is.
struct KeepKvTokenCount {
  int64_t tokens = 0;
};

// A value as a client or the config wrote it: an integer, a number, a name, or a token count.
using KeepKvValue = std::variant<int64_t, double, std::string, KeepKvTokenCount>;

// Sets `field` of `params` to `value` when the value keeps the field's rule; else the
// violation, params unchanged.
std::optional<KeepKvViolation> SetKeepKvField(const KeepKvField& field, const KeepKvValue& value,
                                              KeepKvParams& params);

// The field's value in `params` as errors and the docs write it: "0.9", "8", "group_mean",
// "256" (a token budget), "0.5" (a fraction).
std::string KeepKvFieldText(const KeepKvField& field, const KeepKvParams& params);

// The row's line in the docs' tables of keys: "| `alpha` | <doc>, in [0, 1) | `0.9` |", the
// default taken from KeepKvParams{}; `with_scope` adds "; not settable per request" to the
// operator's rows.
std::string KeepKvDocRow(const KeepKvField& field, bool with_scope);

// The row named `name`, or null.
const KeepKvField* FindKeepKvField(std::string_view name);

// "budget, alpha, ...": the keys of the rows `scope` may set (kOperator: the config's), in the
// table's order.
std::string KeepKvKeys(KeepKvScope scope);

// Whether `scope` (a request, or the operator's config) may set `field`.
inline bool MaySet(KeepKvScope scope, const KeepKvField& field) {
  return field.scope != KeepKvScope::kServer && field.scope <= scope;
}

}  // namespace kvd::cache_store
