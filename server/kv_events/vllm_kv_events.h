// KV event batches in vLLM's wire form (msgspec's array-like tagged structs, in MessagePack), so
// that a router built for vLLM's KV events reads kvd's:
//   batch:  [ts, [event, ...]]                    ts: seconds since the Unix epoch (float 64)
//   ["BlockStored", [hash], parent_hash | nil, [token_id, ...], block_size, nil, medium, nil]
//   ["BlockRemoved", [hash, ...], medium]
//   ["AllBlocksCleared"]
// (the nils: lora_id and lora_name; kvd serves no LoRA). A decoder of the older form without
// lora_name ignores the trailing field. Hashes take vLLM's default integer form: the last 8
// bytes of the block's SHA-256 key, read big-endian, an unsigned 64-bit integer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "scheduler/kv_events.h"

namespace kvd::server {

// The integer form of a lowercase hex SHA-256 block key.
uint64_t VllmBlockHash(std::string_view hex_key);

// `batch` as vLLM's KVEventBatch; `medium`: where the blocks live ("CPU" or "GPU").
std::string EncodeVllmKvEventBatch(const scheduler::KvEventBatch& batch, int32_t block_size,
                                   std::string_view medium);

}  // namespace kvd::server
