// A document as the API reports it: its stored meta, and how far its compression has come.
#pragma once

#include <string>
#include <vector>

#include "cache_store/store/document_meta.h"

namespace kvd::documents {

struct DocumentView {
  cache_store::DocumentMeta meta;
  double progress = 1.0;  // while processing: the fraction of the compression done
};

struct DocumentViewPage {
  std::vector<DocumentView> documents;
  std::string next_page_token;  // empty on the last page
};

}  // namespace kvd::documents
