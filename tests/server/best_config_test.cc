// Best-config keys and config JSON (server/best_config.h).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/best_config.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}
pb::BindingValue Str(const std::string& s) {
  pb::BindingValue b;
  b.set_string_value(s);
  return b;
}

TEST(BestKeyFor, ShapeIsTheBindingsInOrderAndTheFileNameDoesNotCount) {
  pb::ProgramSource a;
  a.set_tilelang_source("def k(M, N): ...");
  a.set_file_name("a.py");
  (*a.mutable_bindings())["N"] = Int(64);
  (*a.mutable_bindings())["M"] = Int(128);
  (*a.mutable_bindings())["dtype"] = Str("float16");
  cache::BestConfigKey k = BestKeyFor(a, "cuda:sm_90", "NVIDIA H200");
  EXPECT_EQ(k.shape, "M=128;N=64;dtype=float16");
  EXPECT_EQ(k.target, "cuda:sm_90");
  EXPECT_EQ(k.device_model, "NVIDIA H200");
  EXPECT_EQ(k.program_key.size(), 64u);

  pb::ProgramSource b = a;
  b.set_file_name("elsewhere/b.py");
  (*b.mutable_bindings())["M"] = Int(256);
  EXPECT_EQ(BestKeyFor(b, "cuda:sm_90", "x").program_key, k.program_key);
  EXPECT_NE(BestKeyFor(b, "cuda:sm_90", "x").shape, k.shape);

  pb::ProgramSource c = a;
  c.set_entry("other");
  EXPECT_NE(BestKeyFor(c, "cuda:sm_90", "x").program_key, k.program_key);
  pb::ProgramSource d = a;
  d.set_tilelang_source("def k(M, N): pass");
  EXPECT_NE(BestKeyFor(d, "cuda:sm_90", "x").program_key, k.program_key);
  pb::ProgramSource e;
  e.set_ir_text(a.tilelang_source()); // same text, other kind
  EXPECT_NE(BestKeyFor(e, "", "x").program_key, k.program_key);
  EXPECT_EQ(BestKeyFor(e, "", "x").target, "cpu");
}

TEST(BestKeyFor, OptionsThatChangeTheKernelAreInTheTarget) {
  pb::ProgramSource a;
  a.set_tilelang_source("def k(M, N): ...");
  (*a.mutable_bindings())["M"] = Int(128);
  const cache::BestConfigKey plain = BestKeyFor(a, "cuda:sm_90a", "NVIDIA H200");
  pb::CompileOptions o;
  // Defaults and what does not change the kernel add nothing.
  o.set_toolchain("nvrtc");
  o.set_opt_level(3);
  o.set_emit_source(true);
  o.set_emit_ptx(true);
  EXPECT_EQ(BestKeyFor(a, "cuda:sm_90a", "NVIDIA H200", o).target, "cuda:sm_90a");
  // Hopper's defaults (wgmma, TMA + warp specialization) add nothing either;
  // the older paths are variants.
  o.add_pass_options("gemm=wgmma");
  o.add_pass_options("pipeline=tma-ws");
  EXPECT_EQ(BestKeyFor(a, "cuda:sm_90a", "NVIDIA H200", o).target, "cuda:sm_90a");
  EXPECT_EQ(BestKeyFor(a, "cuda:sm_90", "NVIDIA H200", o).target, "cuda:sm_90");
  o.add_pass_options("pipeline=cp.async");
  EXPECT_EQ(BestKeyFor(a, "cuda:sm_90", "NVIDIA H200", o).target, "cuda:sm_90;pipeline=cp.async");
  o.add_pass_options("gemm=mma");
  const cache::BestConfigKey mma = BestKeyFor(a, "cuda:sm_90a", "NVIDIA H200", o);
  EXPECT_EQ(mma.target, "cuda:sm_90a;gemm=mma");
  EXPECT_EQ(mma.program_key, plain.program_key);
  EXPECT_EQ(mma.shape, plain.shape);
  // Below Hopper neither option changes the kernel.
  EXPECT_EQ(BestKeyFor(a, "cuda:sm_80", "NVIDIA A100", o).target, "cuda:sm_80");
  pb::CompileOptions other;
  other.set_toolchain("nvcc");
  other.set_opt_level(2);
  other.set_fast_math(true);
  EXPECT_EQ(BestKeyFor(a, "cuda:sm_80", "x", other).target,
            "cuda:sm_80;toolchain=nvcc;opt=2;fast_math=1");
}

TEST(ConfigJson, RoundTripsEveryKind) {
  ConfigMap config;
  config["block_M"] = Int(128);
  config["neg"] = Int(-3);
  pb::BindingValue f;
  f.set_float_value(0.25);
  config["scale"] = f;
  pb::BindingValue whole;
  whole.set_float_value(2);
  config["two"] = whole;
  pb::BindingValue t;
  t.set_bool_value(true);
  config["swizzle"] = t;
  config["policy"] = Str("full \"row\"\n");
  const std::string json = ConfigToJson(config);
  EXPECT_THAT(json, HasSubstr("\"block_M\": 128"));
  EXPECT_THAT(json, HasSubstr("\"two\": 2.0"));
  absl::StatusOr<ConfigMap> back = ConfigFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status() << " " << json;
  ASSERT_EQ(back->size(), config.size());
  for (const auto& [k, v] : config) {
    ASSERT_TRUE(back->count(k)) << k;
    EXPECT_EQ(back->at(k).SerializeAsString(), v.SerializeAsString()) << k;
  }
  EXPECT_TRUE(ConfigFromJson(" { } ")->empty());
}

TEST(ConfigJson, MalformedInputNamesTheOffset) {
  EXPECT_THAT(ConfigFromJson("").status().message(), HasSubstr("offset 0: expected '{'"));
  EXPECT_THAT(ConfigFromJson("{\"a\" 1}").status().message(), HasSubstr("expected ':'"));
  EXPECT_THAT(ConfigFromJson("{\"a\": [1]}").status().message(), HasSubstr("expected a number"));
  EXPECT_THAT(ConfigFromJson("{\"a\": 1} x").status().message(), HasSubstr("text after"));
  EXPECT_THAT(ConfigFromJson("{\"a\": \"x").status().message(), HasSubstr("unterminated"));
}

} // namespace
} // namespace kiln::server
