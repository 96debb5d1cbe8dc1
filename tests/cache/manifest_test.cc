#include "cache/manifest.h"
#include "gtest/gtest.h"

namespace kiln::cache {
namespace {

TEST(ManifestTest, ArtifactManifestRoundTrips) {
  Artifact a;
  a.target = "cuda:sm_90";
  a.toolchain_fingerprint = "nvrtc 13.0";
  a.launch_json = R"({"grid": [1, 2, 3]})";
  a.timings = {{"nvrtc", 0.25}};
  a.created_unix_ms = 1234;
  a.files.push_back({"cubin", "", std::string(64, 'a'), 100});
  a.files.push_back({"ptx", "", std::string(64, 'b'), 50});
  absl::StatusOr<std::variant<ArtifactManifest, BestConfigRecord>> r =
      DecodeRecord(EncodeArtifactManifest("key1", a));
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& m = std::get<ArtifactManifest>(*r);
  EXPECT_EQ(m.key, "key1");
  EXPECT_EQ(m.artifact.launch_json, a.launch_json);
  EXPECT_EQ(m.artifact.timings, a.timings);
  EXPECT_EQ(m.artifact.created_unix_ms, 1234);
  ASSERT_EQ(m.artifact.files.size(), 2U);
  EXPECT_EQ(m.artifact.files[1].kind, "ptx");
  EXPECT_EQ(m.artifact.files[1].digest, std::string(64, 'b'));
  EXPECT_EQ(m.artifact.files[1].raw_size, 50U);
}

TEST(ManifestTest, BestConfigRecordRoundTrips) {
  BestConfigKey k{"prog", "M=1024", "cuda:sm_90", "NVIDIA H200"};
  BestConfig v;
  v.config_json = R"({"block_M": 128})";
  v.latency = {1, 2, 3, 4, 0.5, 100};
  v.tuning_record_id = "tune-7";
  v.artifact_key = "art";
  v.updated_unix_ms = 99;
  absl::StatusOr<std::variant<ArtifactManifest, BestConfigRecord>> r =
      DecodeRecord(EncodeBestConfigRecord(k, v));
  ASSERT_TRUE(r.ok());
  const auto& b = std::get<BestConfigRecord>(*r);
  EXPECT_EQ(b.key.device_model, "NVIDIA H200");
  EXPECT_EQ(b.value.config_json, v.config_json);
  EXPECT_EQ(b.value.latency.p90_us, 4);
  EXPECT_EQ(b.value.latency.samples, 100);
  EXPECT_EQ(b.value.updated_unix_ms, 99);
}

TEST(ManifestTest, MalformedRecordsAreCorrupt) {
  const char* cases[] = {
      "",
      "[]",
      "{\"kiln_record\": \"artifact\"}",
      "{\"kiln_record\": \"other\", \"version\": 1}",
      "{\"kiln_record\": \"artifact\", \"version\": 2}",
      "{\"kiln_record\": \"artifact\", \"version\": 1, \"key\": 5}",
      "\x7f\x45\x4c\x46 binary",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    EXPECT_EQ(DecodeRecord(c).status().code(), absl::StatusCode::kDataLoss);
  }
}

} // namespace
} // namespace kiln::cache
