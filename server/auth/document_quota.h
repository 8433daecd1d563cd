// A tenant's document limits: its own max_documents / max_stored_bytes, else the configured
// defaults. Processing and ready documents count against them; failed ones do not.
#pragma once

#include <cstdint>

#include "documents/documents_config.h"
#include "documents/usage_ledger.h"
#include "server/auth/tenants.h"

namespace kvd::server {

inline documents::DocumentQuota DocumentQuotaOf(Tenant& tenant,
                                                const documents::DocumentsConfig& config) {
  const int64_t documents = tenant.max_documents();
  const int64_t bytes = tenant.max_stored_bytes();
  return {documents > 0 ? documents : config.max_documents_per_tenant,
          bytes > 0 ? bytes : static_cast<int64_t>(config.max_stored_bytes_per_tenant)};
}

}  // namespace kvd::server
