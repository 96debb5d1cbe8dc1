#include "tuner/measure/device_backend.h"

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace kiln::measure {
namespace {

constexpr char kLaunchFailurePayload[] = "kiln.dev/launch-failure";

} // namespace

absl::StatusOr<LaunchDims> GetLaunchDims(const kiln::v1::LaunchSpec& launch) {
  if (launch.grid_size() < 1 || launch.grid_size() > 3 || launch.block_size() > 3) {
    return absl::InvalidArgumentError(absl::StrCat("a launch needs 1 to 3 grid extents and 0 to 3 "
                                                   "block extents, got ",
                                                   launch.grid_size(), " and ",
                                                   launch.block_size()));
  }
  LaunchDims dims;
  for (int d = 0; d < launch.grid_size(); ++d) {
    if (launch.grid(d) <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("grid extent ", d, " is ", launch.grid(d)));
    }
    dims.grid[d] = launch.grid(d);
  }
  for (int d = 0; d < launch.block_size(); ++d) {
    if (launch.block(d) <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("block extent ", d, " is ", launch.block(d)));
    }
    dims.block[d] = launch.block(d);
  }
  return dims;
}

absl::Status MarkLaunchFailure(absl::Status status) {
  status.SetPayload(kLaunchFailurePayload, absl::Cord("1"));
  return status;
}

bool IsLaunchFailure(const absl::Status& status) {
  return status.GetPayload(kLaunchFailurePayload).has_value();
}

} // namespace kiln::measure
