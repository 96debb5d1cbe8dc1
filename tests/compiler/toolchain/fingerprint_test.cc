#include "compiler/toolchain/fingerprint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compiler/toolchain/cuda_test_util.h"

namespace kiln::toolchain {
namespace {

using ::testing::MatchesRegex;

// The version is spelled out: a change of kKilnCodegenVersion (every cached
// artifact's key) is made here on purpose too.
TEST(Fingerprint, Format) {
  EXPECT_EQ(FormatFingerprint(ToolchainKind::kNvrtc, "13.0"), "kiln-codegen=25;nvrtc=13.0");
  EXPECT_EQ(FormatFingerprint(ToolchainKind::kNvcc, "13.0.88"), "kiln-codegen=25;nvcc=13.0.88");
  EXPECT_NE(FormatFingerprint(ToolchainKind::kNvrtc, "13.0"),
            FormatFingerprint(ToolchainKind::kNvcc, "13.0"));
  static_assert(kKilnCodegenVersion >= 1);
}

TEST(Fingerprint, FromInstalledToolchains) {
  if (!testing::CudaToolkitPresent()) GTEST_SKIP() << testing::kNoToolkit;
  std::string nvrtc = ToolchainFingerprint(ToolchainKind::kNvrtc);
  EXPECT_THAT(nvrtc, MatchesRegex("kiln-codegen=[0-9]+;nvrtc=[0-9]+\\.[0-9]+"));
  std::string nvcc = ToolchainFingerprint(ToolchainKind::kNvcc);
  EXPECT_THAT(nvcc, MatchesRegex("kiln-codegen=[0-9]+;nvcc=[0-9]+\\.[0-9]+\\.[0-9]+"));
  // NVRTC and nvcc of one toolkit agree on major.minor.
  std::string nvrtc_version = nvrtc.substr(nvrtc.find("nvrtc=") + 6);
  std::string nvcc_version = nvcc.substr(nvcc.find("nvcc=") + 5);
  EXPECT_EQ(nvcc_version.rfind(nvrtc_version + ".", 0), 0u) << nvrtc << " vs " << nvcc;
  // Cached: the same string again.
  EXPECT_EQ(ToolchainFingerprint(ToolchainKind::kNvrtc), nvrtc);
  EXPECT_EQ(ToolchainFingerprint(ToolchainKind::kNvcc), nvcc);
}

TEST(Fingerprint, HostCompiler) {
  // The CPU target's compiler is always installed where Kiln builds.
  std::string cc = ToolchainFingerprint(ToolchainKind::kHostCc);
  EXPECT_THAT(cc, MatchesRegex("kiln-codegen=[0-9]+;cc=.*[0-9]+\\.[0-9]+.*"));
  EXPECT_EQ(cc.find("unavailable"), std::string::npos) << cc;
  EXPECT_EQ(ToolchainFingerprint(ToolchainKind::kHostCc), cc);
}

} // namespace
} // namespace kiln::toolchain
