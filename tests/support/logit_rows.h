// Rows of logits for the top-logits tests, of the five kinds that stress a top-k selection, and
// the check that a backend's selection matches the reference's.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace kvd::kernels {

// Where a row's planted ties and ±0 entries go.
struct LogitRowLayout {
  // Entries set to the row's value at place k − k / 4 (from 1), at ids 7, 7 + tie_spacing, ...
  int64_t planted_ties;
  int64_t tie_spacing;
  // Ids between the ±0 entries of the second kind, from id 1.
  int64_t zero_spacing;
};

// rows × vocab logits, normal with standard deviation 3, row r of kind r % 5: random with ties
// planted across the k-th place (a quarter of k of them inside, the rest outside); the same with
// every third entry -inf and some ±0; ten finite entries and -inf elsewhere; one value
// throughout; all -inf.
std::vector<float> MakeLogitRows(std::mt19937& random, int64_t rows, int64_t vocab, int32_t k,
                                 const LogitRowLayout& layout);

// 2, 1, 0.5, 2, ...: one inverse temperature per row.
std::vector<float> CycledInverseTemperatures(int64_t rows);

// What TopLogits writes for rows × k places.
struct TopResults {
  std::vector<float> values;
  std::vector<int32_t> ids;
  std::vector<float> log_normalizers;
};

// Ids and values (their bits, -0 included) must match exactly, finite normalizers to 1e-5 of
// their size (absolute within 1 of 0), infinite ones exactly.
void ExpectSameTopResults(const TopResults& actual, const TopResults& expected, int64_t rows,
                          int32_t k);

}  // namespace kvd::kernels
