# Sources of the Prometheus exposition, part of kvd_server.
set(kvd_server_metrics_sources
  ${CMAKE_CURRENT_LIST_DIR}/document_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/metric_families.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics_exporter.cc
  ${CMAKE_CURRENT_LIST_DIR}/response_store_families.cc
  ${CMAKE_CURRENT_LIST_DIR}/scheduler_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/tenant_labels.cc)
