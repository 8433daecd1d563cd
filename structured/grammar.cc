#include "structured/grammar.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/check.h"

namespace kvd::structured {
namespace {

std::string ByteSetToString(const ByteSet& set) {
  int count = 0;
  int only = 0;
  for (int b = 0; b < 256; ++b) {
    if (set.Has(static_cast<uint8_t>(b))) {
      ++count;
      only = b;
    }
  }
  const auto byte_text = [](int b) {
    return b >= 0x21 && b < 0x7f && b != '\\' && b != ']' && b != '-' && b != '"'
               ? std::string(1, static_cast<char>(b))
               : absl::StrFormat("\\x%02X", b);
  };
  if (count == 1) {
    const bool plain = only >= 0x20 && only < 0x7f && only != '"' && only != '\\';
    return absl::StrCat("\"", plain ? std::string(1, static_cast<char>(only)) : byte_text(only),
                        "\"");
  }
  std::string text = "[";
  for (int b = 0; b < 256;) {
    if (!set.Has(static_cast<uint8_t>(b))) {
      ++b;
      continue;
    }
    int last = b;
    while (last + 1 < 256 && set.Has(static_cast<uint8_t>(last + 1))) ++last;
    absl::StrAppend(&text, byte_text(b));
    if (last > b) absl::StrAppend(&text, "-", byte_text(last));
    b = last + 1;
  }
  return text + "]";
}

}  // namespace

std::string Grammar::ToString() const {
  std::string text;
  for (int32_t rule = 0; rule < rule_count(); ++rule) {
    absl::StrAppend(&text, rule_names_[rule], " ::=");
    bool first = true;
    for (int32_t position : alternatives(rule)) {
      absl::StrAppend(&text, first ? " " : " | ");
      first = false;
      bool empty = true;
      for (; symbols_[position].kind != Symbol::Kind::kEnd; ++position) {
        const Symbol& symbol = symbols_[position];
        absl::StrAppend(&text, empty ? "" : " ",
                        symbol.kind == Symbol::Kind::kRule
                            ? rule_names_[symbol.index]
                            : ByteSetToString(byte_sets_[symbol.index]));
        empty = false;
      }
      if (empty) absl::StrAppend(&text, "\"\"");
    }
    absl::StrAppend(&text, "\n");
  }
  return text;
}

int32_t GrammarBuilder::AddRule(std::string name) {
  names_.push_back(std::move(name));
  alternatives_.emplace_back();
  return static_cast<int32_t>(names_.size() - 1);
}

void GrammarBuilder::AddAlternative(int32_t rule, std::span<const Symbol> sequence) {
  KVD_CHECK(rule >= 0 && static_cast<size_t>(rule) < alternatives_.size());
  alternatives_[rule].emplace_back(sequence.begin(), sequence.end());
  symbol_count_ += sequence.size() + 1;
}

Symbol GrammarBuilder::Bytes(const ByteSet& set) {
  const auto [it, inserted] =
      byte_set_ids_.try_emplace(set, static_cast<int32_t>(byte_sets_.size()));
  if (inserted) byte_sets_.push_back(set);
  return {Symbol::Kind::kBytes, it->second};
}

void GrammarBuilder::AppendLiteral(std::string_view text, std::vector<Symbol>& sequence) {
  for (char c : text) sequence.push_back(Bytes(ByteSet::Of(static_cast<uint8_t>(c))));
}

int32_t GrammarBuilder::AddLiteralRule(std::string name, std::string_view text) {
  const int32_t rule = AddRule(std::move(name));
  std::vector<Symbol> sequence;
  AppendLiteral(text, sequence);
  AddAlternative(rule, sequence);
  return rule;
}

absl::StatusOr<Grammar> GrammarBuilder::Build(int32_t root) && {
  KVD_CHECK(root >= 0 && static_cast<size_t>(root) < alternatives_.size());
  if (symbol_count_ > kMaxSymbols) {
    return absl::InvalidArgumentError(
        absl::StrCat("the constraint is too large: its grammar needs ", symbol_count_,
                     " symbols, more than the limit of ", kMaxSymbols));
  }
  const size_t rules = alternatives_.size();
  for (size_t rule = 0; rule < rules; ++rule) {
    if (alternatives_[rule].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("grammar rule '", names_[rule], "' can match nothing"));
    }
  }
  // Which rules can match the empty string, to a fixed point.
  std::vector<bool> nullable(rules, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t rule = 0; rule < rules; ++rule) {
      if (nullable[rule]) continue;
      for (const std::vector<Symbol>& sequence : alternatives_[rule]) {
        bool all = true;
        for (const Symbol& symbol : sequence) {
          if (symbol.kind != Symbol::Kind::kRule || !nullable[symbol.index]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[rule] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // A rule may not reach itself through rules that start its alternatives after empty-able
  // prefixes: the matcher would expand it forever.
  std::vector<std::vector<int32_t>> leads(rules);
  for (size_t rule = 0; rule < rules; ++rule) {
    for (const std::vector<Symbol>& sequence : alternatives_[rule]) {
      for (const Symbol& symbol : sequence) {
        if (symbol.kind != Symbol::Kind::kRule) break;
        leads[rule].push_back(symbol.index);
        if (!nullable[symbol.index]) break;
      }
    }
  }
  enum class Mark : uint8_t { kNew, kOpen, kDone };
  std::vector<Mark> marks(rules, Mark::kNew);
  for (size_t start = 0; start < rules; ++start) {
    if (marks[start] != Mark::kNew) continue;
    std::vector<std::pair<int32_t, size_t>> path = {{static_cast<int32_t>(start), 0}};
    marks[start] = Mark::kOpen;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      if (next == leads[rule].size()) {
        marks[rule] = Mark::kDone;
        path.pop_back();
        continue;
      }
      const int32_t target = leads[rule][next++];
      if (marks[target] == Mark::kOpen) {
        return absl::InvalidArgumentError(absl::StrCat(
            "grammar rule '", names_[target], "' can reach itself without matching a byte"));
      }
      if (marks[target] == Mark::kNew) {
        marks[target] = Mark::kOpen;
        path.emplace_back(target, 0);
      }
    }
  }

  Grammar grammar;
  grammar.root_ = root;
  grammar.rule_names_ = std::move(names_);
  grammar.byte_sets_ = std::move(byte_sets_);
  grammar.symbols_.reserve(symbol_count_);
  grammar.rule_first_alternative_.push_back(0);
  for (const auto& rule_alternatives : alternatives_) {
    for (const std::vector<Symbol>& sequence : rule_alternatives) {
      grammar.alternative_starts_.push_back(static_cast<int32_t>(grammar.symbols_.size()));
      grammar.symbols_.insert(grammar.symbols_.end(), sequence.begin(), sequence.end());
      grammar.symbols_.push_back(Symbol{});
    }
    grammar.rule_first_alternative_.push_back(
        static_cast<int32_t>(grammar.alternative_starts_.size()));
  }
  return grammar;
}

}  // namespace kvd::structured
