// KeepKV's defaults as the config file sets them (section `keepkv` and a tenant's `keepkv`), and
// the split of KeepKV's rule violations that lets the config loader and the request parser each
// name the offending key their own way ("tenants[0].keepkv.alpha", param "keepkv.alpha").
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "cache_store/keepkv/keepkv_params.h"

namespace kvd::server {

// Section `keepkv`, and a tenant's `keepkv`: the defaults of KeepKV, which keeps each decoding
// sequence's own KV under a budget by merging similar entries (cache_store/keepkv/). A request's
// `keepkv` object overrides budget, alpha, window, refresh_every, recent and method, and turns
// KeepKV on; `"keepkv": null` turns it off (docs/api.md). Reloadable on SIGHUP, with the tenants.
struct KeepKvConfig {
  // Requests that do not mention `keepkv` get it. false: only requests that send a `keepkv`
  // object. Default false.
  bool enabled = false;
  // YAML `budget` written as a positive integer: own KV entries kept per (layer, kv head).
  // 0: budget_fraction applies. Default 0.
  int32_t budget_tokens = 0;
  // YAML `budget` written as a fraction in (0, 1]: entries kept per (layer, kv head) as a
  // fraction of the prompt's own tokens, used when budget_tokens is 0. Default 0.5.
  double budget_fraction = 0.5;
  // Weight of the past in the moving average of each entry's attention, in [0, 1).
  // Default 0.9.
  double alpha = 0.9;
  // The prompt's last `window` queries score its entries, at least 1. Default 8.
  int32_t window = 8;
  // The prompt's scores are max-pooled over this many neighbouring positions, so that the tokens
  // next to an attended one rank with it. Odd, at least 1 (1: no pooling). Not settable per
  // request. Default 7.
  int32_t pool = 7;
  // Decode steps between refreshes, which rebuild merged entries from a full copy kept on the
  // host, at least 0; 0: never (no copy kept). Default 0.
  int32_t refresh_every = 0;
  // The most recent tokens, never merged, at least 0. Default 16.
  int32_t recent = 16;
  // The first tokens (attention sinks), never merged, at least 0. Not settable per request.
  // Default 4.
  int32_t sink = 4;
  // How two entries merge: "gqa_fit", "group_mean", "weighted_mean", "convex" or "evict"
  // (drop the lower-scored one). Default "group_mean".
  std::string method = "group_mean";
  // Two entries whose keys are less similar (cosine) than this are never merged; when no pair
  // is similar enough, the lowest-scored entries are evicted. In [-1, 1]. Not settable per
  // request. Default 0.5.
  double min_cosine = 0.5;
  // Which entries merge: "lowest_scores" (the entries eviction would drop, each into its most
  // similar remaining entry) or "similar_pairs" (disjoint pairs of the most similar keys,
  // whatever their scores). Not settable per request. Default "lowest_scores".
  std::string selection = "lowest_scores";

  // The parameters of a request that takes these defaults (protected_prefix 0). Call after
  // Validate passed: an unknown method reads as group_mean.
  cache_store::KeepKvParams Params() const;

  bool operator==(const KeepKvConfig&) const = default;
};

// A KeepKV rule a value breaks, out of a message of KeepKvParams::Validate or ParseMergeMethod
// ("keepkv.alpha must be in [0, 1)"): the field ("alpha") and the rule ("must be in [0, 1)").
// A message in another shape gives no field and the whole message as the rule.
struct KeepKvViolation {
  std::string field;
  std::string rule;
};
KeepKvViolation SplitKeepKvError(const absl::Status& status);

}  // namespace kvd::server
