#include "server/metrics/tenant_labels.h"

namespace kvd::server {

TenantLabels::TenantLabels(const std::vector<std::string>& configured)
    : configured_(configured.begin(), configured.end()), values_(configured_) {
  values_.insert(other_);
}

const std::string& TenantLabels::Of(const std::string& tenant) const {
  const auto it = configured_.find(tenant);
  return it == configured_.end() ? other_ : *it;
}

}  // namespace kvd::server
