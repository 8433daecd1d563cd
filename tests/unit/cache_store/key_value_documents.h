// Documents in the bundled model's training format (models/README.md): `key: VALUE` records
// mixed with filler sentences, generated from a seed the training never used.
#pragma once

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace kvd::cache_store::testing {

struct KeyValueDocument {
  std::string text;
  std::vector<std::pair<std::string, std::string>> records;  // key, value in document order
};

inline KeyValueDocument MakeKeyValueDocument(std::mt19937& random, size_t target_bytes) {
  static const std::vector<std::string> kKeys = {
      "bab", "bag", "bam", "bap", "beb", "beg", "bem", "bik", "bim", "bin", "bip", "bok",
      "bon", "boz", "bud", "buk", "bum", "dab", "dan", "dap", "dat", "deg", "dem", "dep",
      "did", "dig", "din", "dip", "dit", "dod", "dox", "doz", "duk", "fad", "fam", "fat",
      "lam", "lan", "lap", "lat", "mab", "mid", "miz", "mob", "nab", "nag", "nam", "nat",
      "pap", "pat", "pen", "pep", "rak", "rax", "rem", "ren", "sag", "sak", "sat", "seb",
      "tad", "tag", "tan", "tap", "vad", "vak", "vat", "vez", "zad", "zan", "zem", "zen"};
  static const std::vector<std::string> kDeterminers = {"the", "a", "this", "that", "every"};
  static const std::vector<std::string> kNouns = {"river",  "garden", "window", "stone",  "bridge",
                                                  "market", "letter", "lamp",   "forest", "road"};
  static const std::vector<std::string> kVerbs = {"watches", "follows", "carries", "finds",
                                                  "opens",   "crosses", "paints",  "reaches"};
  auto pick = [&](const std::vector<std::string>& words) {
    return words[std::uniform_int_distribution<size_t>(0, words.size() - 1)(random)];
  };
  KeyValueDocument document;
  std::vector<std::string> unused = kKeys;
  std::shuffle(unused.begin(), unused.end(), random);
  while (true) {
    std::string line;
    bool record = document.records.size() < 2 || std::bernoulli_distribution(0.4)(random);
    if (record && unused.empty()) record = false;
    if (record) {
      const int length = std::uniform_int_distribution<int>(3, 6)(random);
      std::string value;
      for (int i = 0; i < length; ++i) {
        value += static_cast<char>('A' + std::uniform_int_distribution<int>(0, 25)(random));
      }
      line = unused.back() + ": " + value;
    } else {
      line = pick(kDeterminers) + " " + pick(kNouns) + " " + pick(kVerbs) + " " +
             pick(kDeterminers) + " " + pick(kNouns) + ".";
    }
    const size_t added = line.size() + (document.text.empty() ? 0 : 1);
    if (document.text.size() + added > target_bytes && document.records.size() >= 2) break;
    if (!document.text.empty()) document.text += "\n";
    document.text += line;
    if (record) {
      document.records.emplace_back(unused.back(), line.substr(unused.back().size() + 2));
      unused.pop_back();
    }
  }
  return document;
}

}  // namespace kvd::cache_store::testing
