// MemberCount<T>(): how many members the aggregate T has, so that a test can hold a table of a
// struct's members to the struct (a member added without its row fails it).
#pragma once

#include <cstddef>

namespace kvd::test_support {

// Converts to any member's type.
struct AnyMember {
  template <typename T>
  operator T() const {
    return T{};
  }
};

// The most initializers T{...} takes.
template <typename T, typename... Initializers>
constexpr size_t MemberCount() {
  if constexpr (requires { T{Initializers{}..., AnyMember{}}; }) {
    return MemberCount<T, Initializers..., AnyMember>();
  } else {
    return sizeof...(Initializers);
  }
}

}  // namespace kvd::test_support
