// Section `keepkv`, and a tenant's `keepkv`: the defaults of KeepKV, which keeps each decoding
// sequence's own KV under a budget by merging similar entries (cache_store/keepkv/).
#pragma once

#include "cache_store/keepkv/keepkv_params.h"

namespace kvd::server {

// The keys besides `enabled` are the rows of cache_store::kKeepKvFields the operator may set;
// a request's `keepkv` object overrides the rows a request may set and turns KeepKV on, and
// `"keepkv": null` turns it off (docs/api.md). Reloadable on SIGHUP, with the tenants.
struct KeepKvConfig {
  // Requests that do not mention `keepkv` get it. false: only requests that send a `keepkv`
  // object. Default false.
  bool enabled = false;
  // The parameters a request that takes these defaults runs with (protected_prefix 0).
  cache_store::KeepKvParams params;

  bool operator==(const KeepKvConfig&) const = default;
};

}  // namespace kvd::server
