#include "scheduler/request.h"

#include "base/enum_names.h"

namespace kvd::scheduler {

namespace {

constexpr auto kFinishReasonNames = base::MakeEnumNames<FinishReason>({
    {FinishReason::kStop, "stop"},
    {FinishReason::kLength, "length"},
    {FinishReason::kAbort, "abort"},
});

}  // namespace

std::string_view FinishReasonName(FinishReason reason) { return kFinishReasonNames.Name(reason); }

}  // namespace kvd::scheduler
