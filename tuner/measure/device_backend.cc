#include "tuner/measure/device_backend.h"

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "tuner/measure/kernel_launch.h"

namespace kiln::measure {
namespace {

constexpr char kLaunchFailurePayload[] = "kiln.dev/launch-failure";

} // namespace

namespace {

template <typename Launch>
absl::StatusOr<LaunchDims> DimsOf(const Launch& launch) {
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

} // namespace

absl::StatusOr<LaunchDims> GetLaunchDims(const kiln::v1::LaunchSpec& launch) {
  return DimsOf(launch);
}

absl::StatusOr<std::vector<LaunchDims>> GetSequenceDims(const kiln::v1::LaunchSpec& launch) {
  std::vector<LaunchDims> out;
  absl::StatusOr<LaunchDims> first = DimsOf(launch);
  if (!first.ok()) return first.status();
  out.push_back(*first);
  for (int k = 0; k < launch.next_kernels_size(); ++k) {
    absl::StatusOr<LaunchDims> dims = DimsOf(launch.next_kernels(k));
    if (!dims.ok()) {
      return absl::Status(dims.status().code(),
                          absl::StrCat("kernel ", k + 2, ": ", dims.status().message()));
    }
    out.push_back(*dims);
  }
  for (int64_t bytes : launch.workspace_bytes()) {
    if (bytes < 0 || bytes > kMaxWorkspaceBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a workspace of ", bytes, " bytes"));
    }
  }
  return out;
}

absl::Status MarkLaunchFailure(absl::Status status) {
  status.SetPayload(kLaunchFailurePayload, absl::Cord("1"));
  return status;
}

bool IsLaunchFailure(const absl::Status& status) {
  return status.GetPayload(kLaunchFailurePayload).has_value();
}

} // namespace kiln::measure
