// Variable scopes of one render: the globals, the template's top level, each loop iteration
// and macro call. Assignments land in the innermost scope, so they do not leak out of loops.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

class Scope {
 public:
  explicit Scope(std::shared_ptr<const Scope> parent) : parent_(std::move(parent)) {}

  // The innermost binding of `name`, or nullptr.
  const Value* Find(std::string_view name) const {
    for (const Scope* scope = this; scope != nullptr; scope = scope->parent_.get()) {
      const auto it = scope->variables_.find(absl::string_view(name.data(), name.size()));
      if (it != scope->variables_.end()) return &it->second;
    }
    return nullptr;
  }

  void Set(std::string_view name, Value value) {
    variables_.insert_or_assign(std::string(name), std::move(value));
  }

 private:
  std::shared_ptr<const Scope> parent_;
  absl::flat_hash_map<std::string, Value> variables_;
};

}  // namespace kvd::text::internal::jinja
