// The bounded set of values the `tenant` label of kvd's metrics takes: the configured tenant ids,
// plus "other" for any id outside them, so a client cannot grow the series count.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace kvd::server {

class TenantLabels {
 public:
  // The label value of every id outside `configured`; a configured tenant of that name shares its
  // series with them.
  static constexpr char kOther[] = "other";

  explicit TenantLabels(const std::vector<std::string>& configured);

  // `tenant` itself when configured, otherwise "other".
  const std::string& Of(const std::string& tenant) const;
  // Every value the label takes, "other" included, sorted.
  const std::set<std::string>& values() const { return values_; }

 private:
  std::set<std::string> configured_;
  std::set<std::string> values_;
  std::string other_ = kOther;
};

}  // namespace kvd::server
