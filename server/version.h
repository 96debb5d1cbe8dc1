// Version strings of this build.
#pragma once

namespace kiln::server {

inline constexpr char kKilnVersion[] = KILN_VERSION_STRING;
inline constexpr char kIrVersions[] = "1";

} // namespace kiln::server
