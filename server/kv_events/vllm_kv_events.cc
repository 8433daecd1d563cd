#include "server/kv_events/vllm_kv_events.h"

#include "base/check.h"
#include "base/msgpack_writer.h"

namespace kvd::server {
namespace {

void WriteHashes(base::MsgpackWriter& out, const std::vector<std::string>& hashes) {
  out.Array(hashes.size());
  for (const std::string& hash : hashes) out.Uint(VllmBlockHash(hash));
}

void WriteEvent(base::MsgpackWriter& out, const scheduler::KvEvent& event, int32_t block_size,
                std::string_view medium) {
  switch (event.kind) {
    case scheduler::KvEvent::Kind::kBlockStored:
      out.Array(8);
      out.String("BlockStored");
      WriteHashes(out, event.block_hashes);
      if (event.parent_block_hash.empty()) {
        out.Nil();
      } else {
        out.Uint(VllmBlockHash(event.parent_block_hash));
      }
      out.Array(event.token_ids.size());
      for (const int32_t token : event.token_ids) out.Int(token);
      out.Int(block_size);
      out.Nil();  // lora_id
      out.String(medium);
      out.Nil();  // lora_name
      return;
    case scheduler::KvEvent::Kind::kBlockRemoved:
      out.Array(3);
      out.String("BlockRemoved");
      WriteHashes(out, event.block_hashes);
      out.String(medium);
      return;
    case scheduler::KvEvent::Kind::kAllBlocksCleared:
      out.Array(1);
      out.String("AllBlocksCleared");
      return;
  }
  KVD_CHECK(false);
}

}  // namespace

uint64_t VllmBlockHash(std::string_view hex_key) {
  KVD_CHECK(hex_key.size() == 64);
  uint64_t value = 0;
  for (const char digit : hex_key.substr(48)) {
    KVD_CHECK((digit >= '0' && digit <= '9') || (digit >= 'a' && digit <= 'f'));
    value = value << 4 | static_cast<uint64_t>(digit <= '9' ? digit - '0' : digit - 'a' + 10);
  }
  return value;
}

std::string EncodeVllmKvEventBatch(const scheduler::KvEventBatch& batch, int32_t block_size,
                                   std::string_view medium) {
  base::MsgpackWriter out;
  out.Array(2);
  out.Double(batch.timestamp);
  out.Array(batch.events.size());
  for (const scheduler::KvEvent& event : batch.events) WriteEvent(out, event, block_size, medium);
  return out.Take();
}

}  // namespace kvd::server
