// Where a walk over tokens in order of likelihood first passes a mass, found without sorting
// the vocabulary: a draw (and a top-p cut) walks the kept tokens most likely first, and sorting
// a 128,256-token row for it took 5-10 ms of the scheduler thread per draw. A quickselect that
// descends by the mass of each side finds the same token in expected linear time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace kvd::engine {

// A token a draw may take: its logit (the order), its id (ties) and its probability.
struct Candidate {
  float logit;
  int32_t id;
  double probability;
};

// The order a draw walks: higher logit first, the lower id first among equal logits.
inline bool MoreLikely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The walk subtracts each candidate's probability from `target`, most likely first, and stops
// at the first one after which `target` is below zero (at or below zero when `inclusive`), or at
// the least likely. Returns that candidate's index after reordering `candidates` so that the
// ones before it are exactly those more likely than it. Equal to sorting and walking, up to the
// rounding of the sums.
size_t SelectByMass(std::span<Candidate> candidates, double target, bool inclusive = false);

}  // namespace kvd::engine
