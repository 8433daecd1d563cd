// The proto's SamplingParams against engine::kSamplingFields: each row is the optional field of
// the same name (a float, a double or an int32), read and written by reflection, so that a new
// row needs no code here (generate_request_test holds the message to the table).
#pragma once

#include <utility>
#include <vector>

#include "engine/sampling_fields.h"
#include "kvd/v1/inference.pb.h"

namespace kvd::server {

// The rows `sampling` sets, each with its value, in the table's order.
std::vector<std::pair<const engine::SamplingField*, double>> ReadSamplingProto(
    const v1::SamplingParams& sampling);

// Sets the row's field of `sampling` to `value` (converted to the field's type).
void WriteSamplingProto(const engine::SamplingField& field, double value,
                        v1::SamplingParams& sampling);

}  // namespace kvd::server
