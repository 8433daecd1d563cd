// Shared by the merge-rule tests: random vectors, one (layer, kv head) of entries with
// log-votes, and its exact attention output and softmax denominator under a query, in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace kvd::cache_store::testing {

using Vec = std::vector<float>;

inline double Dot(const Vec& a, const Vec& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

inline double Scale(size_t head_dim) { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }

// q·k / sqrt(head_dim), without a log-vote.
inline double Logit(const Vec& q, const Vec& k) { return Scale(q.size()) * Dot(q, k); }

inline double LogAddExp(double a, double b) {
  return std::max(a, b) + std::log1p(std::exp(-std::abs(a - b)));
}

inline Vec RandomVec(std::mt19937& rng, size_t n, double sigma = 1.0) {
  std::normal_distribution<double> normal(0.0, sigma);
  Vec v(n);
  for (float& x : v) x = static_cast<float>(normal(rng));
  return v;
}

// The entries of one (layer, kv head), shared by every query head of its group.
struct KvHead {
  std::vector<Vec> keys;
  std::vector<Vec> values;
  std::vector<float> log_votes;
};

inline KvHead RandomKvHead(std::mt19937& rng, size_t entries, size_t head_dim) {
  KvHead head;
  std::uniform_real_distribution<double> log_vote(0.0, std::log(4.0));
  for (size_t i = 0; i < entries; ++i) {
    head.keys.push_back(RandomVec(rng, head_dim));
    head.values.push_back(RandomVec(rng, head_dim));
    head.log_votes.push_back(static_cast<float>(log_vote(rng)));
  }
  return head;
}

struct Attention {
  Vec output;
  double log_denominator = 0.0;  // ln sum_i p_i exp(logit_i)
};

inline Attention Attend(const Vec& q, const KvHead& head) {
  std::vector<double> logits;
  double hi = -INFINITY;
  for (size_t i = 0; i < head.keys.size(); ++i) {
    logits.push_back(Logit(q, head.keys[i]) + head.log_votes[i]);
    hi = std::max(hi, logits.back());
  }
  double denominator = 0.0;
  std::vector<double> out(head.values[0].size(), 0.0);
  for (size_t i = 0; i < logits.size(); ++i) {
    const double e = std::exp(logits[i] - hi);
    denominator += e;
    for (size_t j = 0; j < out.size(); ++j) out[j] += e * head.values[i][j];
  }
  Attention a;
  for (double x : out) a.output.push_back(static_cast<float>(x / denominator));
  a.log_denominator = hi + std::log(denominator);
  return a;
}

inline double RelativeError(const Vec& got, const Vec& want) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace kvd::cache_store::testing
