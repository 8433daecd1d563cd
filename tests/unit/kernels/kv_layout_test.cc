#include "kernels/kv_layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvd::kernels {
namespace {

TEST(KvLayoutTest, EntrySlotsMatchEntrySlotAcrossBlocks) {
  const KvPool pool{.num_blocks = 16, .block_size = 4, .head_dim = 8};
  const std::vector<int32_t> table = {9, 2, 14, 0};
  for (const size_t count : {0, 1, 4, 5, 11, 16}) {
    std::vector<KvSlot> slots(count, -1);
    EntrySlots(pool, table.data(), slots);
    for (size_t i = 0; i < count; ++i) {
      EXPECT_EQ(slots[i], EntrySlot(pool, table.data(), static_cast<int32_t>(i)))
          << "entry " << i << " of " << count;
    }
  }
  std::vector<KvSlot> slots(6);
  EntrySlots(pool, table.data(), slots);
  EXPECT_EQ(slots, (std::vector<KvSlot>{36, 37, 38, 39, 8, 9}));
}

}  // namespace
}  // namespace kvd::kernels
