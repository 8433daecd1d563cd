// The decimal integers of a closed range as a grammar rule: JSON Schema's minimum and maximum
// (and their exclusive forms) on an integer, written exactly, never past the bounds.
#pragma once

#include <cstdint>

#include "structured/grammar.h"

namespace kvd::structured {

// The widest magnitude a range may name: 16 digits, as JsonRules::kMaxDigits.
inline constexpr int64_t kMaxIntegerMagnitude = 9'999'999'999'999'999;

// A rule matching exactly the integers in [low, high] written as JSON writes them (no leading
// zeros, no "-0"). Requires -kMaxIntegerMagnitude <= low <= high <= kMaxIntegerMagnitude.
int32_t AddIntegerRangeRule(GrammarBuilder& builder, int64_t low, int64_t high);

}  // namespace kvd::structured
