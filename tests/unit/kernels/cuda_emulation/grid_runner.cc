#include "tests/unit/kernels/cuda_emulation/grid_runner.h"

#include <ucontext.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvd::kernels::cuda::emulation {
namespace {

constexpr size_t kStackBytes = 128 * 1024;
constexpr unsigned kWarpLanes = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned kMaxBlockThreads = 1024;
constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr unsigned kMaxGridYz = 65535;
// Bytes past a block's dynamic shared memory that must still hold the poison afterwards.
constexpr size_t kCanaryBytes = 4096;
// Every float made of these bytes is a NaN.
constexpr unsigned char kPoison = 0xff;

enum class Wait {
  kNone,          // runnable
  kBlockBarrier,  // in __syncthreads
  kWarp,          // in a warp operation
  kExited,
  kFailed,  // broke a rule of the emulation; never resumed
};

// The warp operations lanes meet in; all lanes of a rendezvous must be in the same one.
enum class WarpOp { kSync, kShuffleXor, kShuffleUp, kMatchAny };

const char* WarpOpName(WarpOp op) {
  switch (op) {
    case WarpOp::kSync:
      return "__syncwarp";
    case WarpOp::kShuffleXor:
      return "__shfl_xor_sync";
    case WarpOp::kShuffleUp:
      return "__shfl_up_sync";
    case WarpOp::kMatchAny:
      return "__match_any_sync";
  }
  return "a warp operation";
}

// The lane a shuffle of lane `lane` reads, as PTX's shfl picks it: the warp is split into
// segments of `width` lanes and the hardware takes the offset's low five bits. An xor may reach
// into an earlier segment but not a later one; an up shuffle stays in the lane's segment. Where
// the rule, or a partial warp, leaves no lane to read, the lane reads its own value.
unsigned ShuffleSource(WarpOp op, unsigned lane, unsigned offset, unsigned width, unsigned lanes) {
  offset %= kWarpLanes;
  const unsigned segment_first = lane / width * width;
  unsigned source = lane;
  if (op == WarpOp::kShuffleXor) {
    if ((lane ^ offset) < segment_first + width) source = lane ^ offset;
  } else if (lane >= segment_first + offset) {
    source = lane - offset;
  }
  return source < lanes ? source : lane;
}

struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  Dim3 thread_idx;
  Wait wait = Wait::kNone;
  uint64_t generation = 0;  // of the barrier or warp rendezvous it waits at
};

// Where a warp's lanes meet: each deposits a value, and once all have, each reads another's.
// Values alternate between two slots per lane by generation, so a lane that runs ahead to the
// next rendezvous cannot overwrite what a slower lane has yet to read.
struct WarpRendezvous {
  uint64_t generation = 0;
  unsigned arrived = 0;
  WarpOp op = WarpOp::kSync;  // what the arrived lanes are in
  uint64_t values[2][kWarpLanes] = {};
};

// One thread block at a time, its threads as fibers on the thread that called RunGrid. Each warp
// in turn runs as far as it can (until its threads wait at __syncthreads), its lanes taking
// turns between warp operations; the order of warps and lanes alternates up and down, so that
// a missing barrier or __syncwarp shows whichever side writes first.
class BlockRunner {
 public:
  BlockRunner(Dim3 block, const std::function<void()>& body)
      : body_(body),
        fibers_(static_cast<size_t>(block.x) * block.y * block.z),
        warps_((fibers_.size() + kWarpLanes - 1) / kWarpLanes) {
    for (size_t t = 0; t < fibers_.size(); ++t) {
      const auto i = static_cast<unsigned>(t);
      fibers_[t].stack.reset(new char[kStackBytes]);
      fibers_[t].thread_idx = Dim3(i % block.x, i / block.x % block.y, i / (block.x * block.y));
      getcontext(&fibers_[t].context);
    }
  }

  absl::Status Run() {
    for (Fiber& fiber : fibers_) {
      fiber.context.uc_stack.ss_sp = fiber.stack.get();
      fiber.context.uc_stack.ss_size = kStackBytes;
      fiber.context.uc_link = &scheduler_;
      makecontext(&fiber.context, &FiberMain, 0);
      fiber.wait = Wait::kNone;
    }
    std::fill(warps_.begin(), warps_.end(), WarpRendezvous{});
    barrier_arrived_ = 0;
    live_ = fibers_.size();
    error_ = absl::OkStatus();
    for (bool ascending = true; live_ > 0; ascending = !ascending) {
      bool resumed = false;
      for (size_t k = 0; k < warps_.size(); ++k) {
        const size_t warp = ascending ? k : warps_.size() - 1 - k;
        const size_t first = warp * kWarpLanes;
        const size_t lanes = std::min<size_t>(kWarpLanes, fibers_.size() - first);
        // The warp runs on until its threads wait at __syncthreads or have exited.
        for (bool warp_resumed = true; warp_resumed;) {
          warp_resumed = false;
          for (size_t l = 0; l < lanes; ++l) {
            const size_t t = first + (ascending ? l : lanes - 1 - l);
            if (!Ready(fibers_[t])) continue;
            current_ = t;
            running_thread.thread_idx = fibers_[t].thread_idx;
            running_ = this;
            swapcontext(&scheduler_, &fibers_[t].context);
            running_ = nullptr;
            if (!error_.ok()) return error_;
            warp_resumed = resumed = true;
          }
        }
      }
      if (!resumed) return Stuck();
    }
    return absl::OkStatus();
  }

  static BlockRunner& Running() {
    if (running_ == nullptr) std::abort();  // a device function called outside a launch
    return *running_;
  }

  void SyncThreads() {
    Fiber& fiber = fibers_[current_];
    fiber.generation = barrier_generation_;
    if (++barrier_arrived_ < fibers_.size()) {
      Suspend(fiber, Wait::kBlockBarrier);
      return;
    }
    barrier_arrived_ = 0;
    ++barrier_generation_;
  }

  // A warp rendezvous of the running lane: what `op` gives it once every lane has deposited
  // `bits` (a shuffle's source value, or the value __match_any_sync compares).
  uint64_t WarpExchange(WarpOp op, unsigned mask, uint64_t bits, unsigned offset, int width) {
    Fiber& fiber = fibers_[current_];
    if (mask != kFullMask) Fail(fiber, "warp operations take the full mask only");
    if (width <= 0 || width > static_cast<int>(kWarpLanes) || (width & (width - 1)) != 0) {
      Fail(fiber, absl::StrCat("shuffle width ", width, " is not a power of two up to 32"));
    }
    const size_t warp = current_ / kWarpLanes;
    const auto lane = static_cast<unsigned>(current_ % kWarpLanes);
    const auto lanes =
        static_cast<unsigned>(std::min<size_t>(kWarpLanes, fibers_.size() - warp * kWarpLanes));
    WarpRendezvous& rendezvous = warps_[warp];
    if (rendezvous.arrived > 0 && rendezvous.op != op) {
      Fail(fiber, absl::StrCat("warp ", warp, ": lanes meet in ", WarpOpName(rendezvous.op),
                               " and ", WarpOpName(op)));
    }
    rendezvous.op = op;
    const uint64_t generation = rendezvous.generation;
    rendezvous.values[generation % 2][lane] = bits;
    if (++rendezvous.arrived < lanes) {
      fiber.generation = generation;
      Suspend(fiber, Wait::kWarp);
    } else {
      rendezvous.arrived = 0;
      ++rendezvous.generation;
    }
    const uint64_t* values = rendezvous.values[generation % 2];
    switch (op) {
      case WarpOp::kSync:
        return 0;
      case WarpOp::kMatchAny: {
        unsigned peers = 0;
        for (unsigned l = 0; l < lanes; ++l) peers |= values[l] == bits ? 1u << l : 0u;
        return peers;
      }
      default:
        return values[ShuffleSource(op, lane, offset, static_cast<unsigned>(width), lanes)];
    }
  }

 private:
  static void FiberMain() {
    BlockRunner& runner = Running();
    runner.body_();
    runner.fibers_[runner.current_].wait = Wait::kExited;
    --runner.live_;
  }  // returns to scheduler_ (uc_link)

  bool Ready(const Fiber& fiber) const {
    switch (fiber.wait) {
      case Wait::kNone:
        return true;
      case Wait::kBlockBarrier:
        return barrier_generation_ > fiber.generation;
      case Wait::kWarp:
        return warps_[static_cast<size_t>(&fiber - fibers_.data()) / kWarpLanes].generation >
               fiber.generation;
      default:
        return false;
    }
  }

  void Suspend(Fiber& fiber, Wait wait) {
    fiber.wait = wait;
    swapcontext(&fiber.context, &scheduler_);
    fiber.wait = Wait::kNone;
  }

  [[noreturn]] void Fail(Fiber& fiber, const std::string& message) {
    const Dim3 thread = fiber.thread_idx;
    error_ = absl::FailedPreconditionError(absl::StrCat(BlockName(), " thread (", thread.x, ",",
                                                        thread.y, ",", thread.z, "): ", message));
    fiber.wait = Wait::kFailed;
    swapcontext(&fiber.context, &scheduler_);
    std::abort();  // a failed fiber is never resumed
  }

  // Every thread left waits for one that never comes: a barrier or warp operation in divergent
  // code, or after some thread's exit.
  absl::Status Stuck() const {
    size_t at_barrier = 0, at_warp = 0, exited = 0;
    for (const Fiber& fiber : fibers_) {
      at_barrier += fiber.wait == Wait::kBlockBarrier;
      at_warp += fiber.wait == Wait::kWarp;
      exited += fiber.wait == Wait::kExited;
    }
    return absl::FailedPreconditionError(absl::StrCat(
        BlockName(), " cannot progress: ", at_barrier, " threads wait at __syncthreads, ", at_warp,
        " at a warp operation, ", exited, " exited (divergent barrier or warp operation)"));
  }

  static std::string BlockName() {
    const Dim3 block = running_thread.block_idx;
    return absl::StrCat("block (", block.x, ",", block.y, ",", block.z, ")");
  }

  static inline BlockRunner* running_ = nullptr;

  const std::function<void()>& body_;
  std::vector<Fiber> fibers_;
  std::vector<WarpRendezvous> warps_;
  ucontext_t scheduler_;
  size_t current_ = 0;
  size_t live_ = 0;
  size_t barrier_arrived_ = 0;
  uint64_t barrier_generation_ = 0;
  absl::Status error_;
};

}  // namespace

absl::Status RunGrid(Dim3 grid, Dim3 block, size_t dynamic_shared_bytes,
                     const std::function<void()>& body) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > kMaxBlockThreads || block.z > 64) {
    return absl::InvalidArgumentError(absl::StrCat("invalid block of ", threads, " threads"));
  }
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > kMaxGridX || grid.y > kMaxGridYz ||
      grid.z > kMaxGridYz) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid grid (", grid.x, ",", grid.y, ",", grid.z, ")"));
  }
  if (dynamic_shared_bytes > kMaxDynamicSharedBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(dynamic_shared_bytes, " bytes of dynamic shared memory"));
  }
  const size_t poisoned = std::min(kMaxDynamicSharedBytes, dynamic_shared_bytes + kCanaryBytes);
  running_thread.block_dim = block;
  running_thread.grid_dim = grid;
  BlockRunner runner(block, body);
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        running_thread.block_idx = Dim3(x, y, z);
        if (dynamic_shared_bytes > 0) std::memset(dynamic_shared_memory, kPoison, poisoned);
        if (absl::Status status = runner.Run(); !status.ok()) return status;
        for (size_t i = dynamic_shared_bytes; dynamic_shared_bytes > 0 && i < poisoned; ++i) {
          if (dynamic_shared_memory[i] != kPoison) {
            return absl::FailedPreconditionError(
                absl::StrCat("block (", x, ",", y, ",", z, ") wrote byte ", i, " of ",
                             dynamic_shared_bytes, " of dynamic shared memory"));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

void SyncThreads() { BlockRunner::Running().SyncThreads(); }

void SyncWarp(unsigned mask) {
  BlockRunner::Running().WarpExchange(WarpOp::kSync, mask, 0, 0, kWarpLanes);
}

uint64_t ShuffleXor(unsigned mask, uint64_t bits, int lane_mask, int width) {
  return BlockRunner::Running().WarpExchange(WarpOp::kShuffleXor, mask, bits,
                                             static_cast<unsigned>(lane_mask), width);
}

uint64_t ShuffleUp(unsigned mask, uint64_t bits, unsigned delta, int width) {
  return BlockRunner::Running().WarpExchange(WarpOp::kShuffleUp, mask, bits, delta, width);
}

unsigned MatchAny(unsigned mask, uint64_t value) {
  return static_cast<unsigned>(
      BlockRunner::Running().WarpExchange(WarpOp::kMatchAny, mask, value, 0, kWarpLanes));
}

}  // namespace kvd::kernels::cuda::emulation
