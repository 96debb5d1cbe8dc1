// The API's view of a compiled kernel (kiln.v1.ArtifactMetadata): built from
// what the compile driver returns, stored beside the binary as one small
// file (so a cache hit reads only it), and mapped to the wire's enums.
// Thread-safe (pure functions).
#pragma once

#include <string>

#include "cache/records.h"
#include "compiler/driver/compile_driver.h"
#include "kiln/v1/service.pb.h"

namespace kiln::server {

// ArtifactKind of a driver/cache file kind; UNSPECIFIED for others.
kiln::v1::ArtifactKind ArtifactKindOf(const std::string& file_kind);
// The cache file kind of an ArtifactKind ("" for UNSPECIFIED). SOURCE maps
// to the CUDA source for CUDA targets and the C++ source for the CPU.
std::string FileKindOf(kiln::v1::ArtifactKind kind, const std::string& target);

// The launch metadata of a kernel emitted from `prepared`: symbol, grid and
// block, and its params (outputs are the marked ones, or the buffers the
// program writes when none is marked). Params, symbols and the extents over
// them carry the user's names (codegen/kernel_spec.h), never the IR's.
kiln::v1::LaunchInfo MakeLaunchInfo(const codegen::LaunchSpec& launch,
                                    const driver::Prepared& prepared);

// The metadata of `built` under `key` (file digests computed here).
kiln::v1::ArtifactMetadata MakeArtifactMetadata(const std::string& key,
                                                const driver::BuildOptions& options,
                                                const driver::Prepared& prepared,
                                                const driver::Built& built);

// The cache record for `built`: its files plus the serialized metadata
// (kMetadataKind), the launch JSON and the timings.
cache::Artifact MakeCacheArtifact(const kiln::v1::ArtifactMetadata& metadata,
                                  const driver::Built& built);

} // namespace kiln::server
