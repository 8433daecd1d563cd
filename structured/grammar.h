// A context-free grammar over bytes: the compiled form of every constraint (JSON Schema, regex,
// choice, tool calls). Rules are alternatives of sequences of terminals (byte sets) and rule
// references; GrammarBuilder refuses grammars a stack matcher could loop on (left recursion,
// cycles of empty rules) and grammars past the size limit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "structured/byte_set.h"

namespace kvd::structured {

// One element of a sequence. Every sequence is stored followed by a kEnd symbol.
struct Symbol {
  enum class Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind = Kind::kEnd;
  int32_t index = 0;  // kBytes: the byte set's index; kRule: the rule's id

  static Symbol Rule(int32_t rule) { return {Kind::kRule, rule}; }
};

// Immutable; safe to share between threads.
class Grammar {
 public:
  int32_t root() const { return root_; }
  int32_t rule_count() const { return static_cast<int32_t>(rule_names_.size()); }
  const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }
  // The positions where each alternative of `rule` starts.
  std::span<const int32_t> alternatives(int32_t rule) const {
    return {alternative_starts_.data() + rule_first_alternative_[rule],
            alternative_starts_.data() + rule_first_alternative_[rule + 1]};
  }
  const Symbol& symbol(int32_t position) const { return symbols_[position]; }
  const ByteSet& byte_set(int32_t index) const { return byte_sets_[index]; }
  size_t symbol_count() const { return symbols_.size(); }
  // The grammar in a BNF-like notation, for tests and `kvd` diagnostics.
  std::string ToString() const;

 private:
  friend class GrammarBuilder;
  int32_t root_ = 0;
  std::vector<std::string> rule_names_;
  std::vector<int32_t> rule_first_alternative_;  // rule_count() + 1 offsets
  std::vector<int32_t> alternative_starts_;
  std::vector<Symbol> symbols_;
  std::vector<ByteSet> byte_sets_;
};

// Grammars are built rule by rule; a rule may be referenced before its alternatives are added.
class GrammarBuilder {
 public:
  // The most symbols a grammar may hold: bounds what a hostile schema or regex can make the
  // compiler build (a 64-byte token mask walk per symbol is the cost that matters).
  static constexpr size_t kMaxSymbols = 1 << 20;

  int32_t AddRule(std::string name);
  void AddAlternative(int32_t rule, std::span<const Symbol> sequence);
  Symbol Bytes(const ByteSet& set);
  // Appends one kBytes symbol per byte of `text`.
  void AppendLiteral(std::string_view text, std::vector<Symbol>& sequence);
  // A rule whose one alternative is `text`.
  int32_t AddLiteralRule(std::string name, std::string_view text);
  // Symbols added so far, for callers that bound their own expansions.
  size_t symbol_count() const { return symbol_count_; }

  // InvalidArgument naming the rule when one has no alternative, can reach itself without
  // consuming a byte, or the grammar exceeds kMaxSymbols.
  [[nodiscard]] absl::StatusOr<Grammar> Build(int32_t root) &&;

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<std::vector<Symbol>>> alternatives_;  // by rule
  std::vector<ByteSet> byte_sets_;
  absl::flat_hash_map<ByteSet, int32_t> byte_set_ids_;
  size_t symbol_count_ = 0;
};

}  // namespace kvd::structured
