#include <algorithm>
#include <string>

#include "compiler/passes/target.h"
#include "gtest/gtest.h"
#include "tuner/arch/arch_model.h"

namespace kiln::arch {
namespace {

TEST(ArchModel, FindsPresetsByLooseNames) {
  struct Case {
    const char* name;
    const char* key;
  };
  const Case cases[] = {
      {"h200", "h200"},
      {"H200", "h200"},
      {"NVIDIA H200", "h200"},
      {"nvidia-h200", "h200"},
      {"H200 SXM 141GB", "h200"},
      {"h100", "h100"},
      {"H100_SXM", "h100"},
      {"a100", "a100"},
      {"A100-SXM4-80GB", "a100"},
      {"MI250X", "mi250x"},
      {"mi250", "mi250x"},
      {"AMD Instinct MI300X", "mi300x"},
      {"cpu", "cpu"},
      {"host", "cpu"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ArchModel> m = FindPreset(c.name);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->name, c.key);
  }
}

TEST(ArchModel, UnknownNameListsTheKnownOnes) {
  absl::StatusOr<ArchModel> m = FindPreset("v100");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("h200"), std::string::npos);
  EXPECT_NE(m.status().message().find("mi300x"), std::string::npos);
  // A name that merely contains a key somewhere is not a preset name.
  EXPECT_FALSE(FindPreset("my-h200").ok());
}

TEST(ArchModel, PresetNumbersAreConsistent) {
  for (const std::string& name : PresetNames()) {
    SCOPED_TRACE(name);
    absl::StatusOr<ArchModel> m = FindPreset(name);
    ASSERT_TRUE(m.ok());
    EXPECT_GT(m->sm_count, 0);
    EXPECT_GT(m->dram_gbs, 0);
    EXPECT_GT(m->smem_gbs, 0);
    EXPECT_GT(m->fp32_tflops, 0);
    EXPECT_LE(m->shared_bytes_optin, m->shared_bytes_per_sm);
    EXPECT_GT(m->mma_efficiency, 0);
    EXPECT_LE(m->mma_efficiency, 1);
  }
  ArchModel h100 = *FindPreset("h100");
  ArchModel h200 = *FindPreset("h200");
  ArchModel a100 = *FindPreset("a100");
  // Same GH100 compute, more and faster HBM on the H200.
  EXPECT_EQ(h200.sm_count, 132);
  EXPECT_EQ(h100.fp16_tflops, h200.fp16_tflops);
  EXPECT_GT(h200.dram_gbs, h100.dram_gbs);
  EXPECT_GT(h200.memory_bytes, h100.memory_bytes);
  EXPECT_EQ(a100.sm_count, 108);
  EXPECT_EQ(FindPreset("mi250x")->tf32_tflops, 0); // no tf32 on CDNA 2
  EXPECT_EQ(FindPreset("mi300x")->warp_size, 64);
  // 32 banks x 4 bytes x 1980 MHz x 132 SMs.
  EXPECT_NEAR(h200.smem_gbs, 32.0 * 4 * 1980e6 * 132 / 1e9, 1);
}

TEST(ArchModel, SharedMemoryLimitsAgreeWithTheCompilersTargets) {
  for (const char* name : {"a100", "h100", "h200", "mi250x", "mi300x"}) {
    SCOPED_TRACE(name);
    ArchModel m = *FindPreset(name);
    absl::StatusOr<passes::Target> t = passes::ParseTarget(m.target);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(m.shared_bytes_optin, t->shared_bytes_optin);
    EXPECT_EQ(m.warp_size, t->warp_size);
  }
}

kiln::v1::DescribeDeviceResponse H100Pcie() {
  kiln::v1::DescribeDeviceResponse r;
  kiln::v1::Device* d = r.mutable_device();
  d->set_id("cuda:0");
  d->set_model("NVIDIA H100 PCIe");
  d->set_arch("sm_90");
  d->set_sm_count(114);
  d->set_shared_memory_per_block(48 * 1024);
  d->set_shared_memory_per_block_optin(232448);
  d->set_max_threads_per_block(1024);
  d->set_clock_mhz(1755);
  d->set_l2_bytes(50 * 1024 * 1024);
  d->set_memory_bytes(int64_t{80} << 30);
  r.set_compute_capability_major(9);
  r.set_compute_capability_minor(0);
  r.set_regs_per_block(65536);
  r.set_regs_per_sm(65536);
  r.set_shared_memory_per_sm(233472);
  r.set_max_threads_per_sm(2048);
  r.set_warp_size(32);
  r.set_memory_clock_mhz(1593);
  r.set_memory_bus_width(5120);
  return r;
}

TEST(ArchModel, FromDescribeTakesLimitsFromTheDeviceAndThroughputFromThePreset) {
  absl::StatusOr<ArchModel> m = FromDescribe(H100Pcie());
  ASSERT_TRUE(m.ok()) << m.status();
  const ArchModel h100 = *FindPreset("h100");
  EXPECT_EQ(m->sm_count, 114);
  EXPECT_EQ(m->sm_clock_mhz, 1755);
  EXPECT_EQ(m->target, "cuda:sm_90");
  EXPECT_EQ(m->model, "NVIDIA H100 PCIe");
  EXPECT_EQ(m->compute_capability_major, 9);
  // Throughput scales with SMs x clock; bandwidth stays the preset's.
  EXPECT_NEAR(m->fp16_tflops, h100.fp16_tflops * (114.0 * 1755) / (132.0 * 1980), 1e-6);
  EXPECT_EQ(m->dram_gbs, h100.dram_gbs);
  EXPECT_EQ(m->throughput_source, "preset");
}

TEST(ArchModel, FromDescribeOfAnUnknownDeviceEstimatesBandwidth) {
  kiln::v1::DescribeDeviceResponse r = H100Pcie();
  r.mutable_device()->set_model("NVIDIA RTX 9999");
  r.mutable_device()->set_arch("sm_89");
  absl::StatusOr<ArchModel> m = FromDescribe(r);
  ASSERT_TRUE(m.ok()) << m.status();
  // 2 transfers x 1593 MHz x 640 bytes.
  EXPECT_NEAR(m->dram_gbs, 2 * 1593e6 * 640 / 1e9, 1e-6);
  EXPECT_EQ(m->fp16_tflops, 0);
  EXPECT_EQ(m->throughput_source, "unknown");
  EXPECT_EQ(m->target, "cuda:sm_89");
}

TEST(ArchModel, FromDescribeRejectsEmptyAnswers) {
  EXPECT_FALSE(FromDescribe(kiln::v1::DescribeDeviceResponse()).ok());
  kiln::v1::DescribeDeviceResponse r = H100Pcie();
  r.mutable_device()->set_sm_count(0);
  EXPECT_EQ(FromDescribe(r).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArchModel, FromDescribeOfTheCpuWorker) {
  kiln::v1::DescribeDeviceResponse r;
  r.mutable_device()->set_id("cpu");
  r.mutable_device()->set_arch("x86_64");
  r.mutable_device()->set_sm_count(2);
  absl::StatusOr<ArchModel> m = FromDescribe(r);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name, "cpu");
  EXPECT_EQ(m->target, "cpu");
  EXPECT_EQ(m->sm_count, 2);
}

TEST(ArchModel, FromDeviceUsesTheDaemonsDeviceRecord) {
  absl::StatusOr<ArchModel> m = FromDevice(H100Pcie().device());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name, "h100");
  EXPECT_EQ(m->sm_count, 114);
  EXPECT_EQ(m->shared_bytes_optin, 232448);
  // Not in a Device record: the preset's.
  EXPECT_EQ(m->registers_per_sm, FindPreset("h100")->registers_per_sm);
  EXPECT_EQ(m->compute_capability_major, 9);
  kiln::v1::Device none;
  EXPECT_FALSE(FromDevice(none).ok());
}

TEST(ArchModel, WithMeasuredOverridesOnlyWhatWasMeasured) {
  const ArchModel base = *FindPreset("h200");
  Measured meas;
  meas.dram_gbs = 4100;
  meas.fp16_tflops = 700;
  ArchModel m = WithMeasured(base, meas);
  EXPECT_EQ(m.dram_gbs, 4100);
  EXPECT_EQ(m.fp16_tflops, 700);
  EXPECT_EQ(m.bf16_tflops, base.bf16_tflops);
  EXPECT_EQ(m.l2_gbs, base.l2_gbs);
  EXPECT_EQ(m.bandwidth_source, "measured");
  EXPECT_EQ(m.throughput_source, "measured");
  ArchModel same = WithMeasured(base, Measured{});
  EXPECT_EQ(same.bandwidth_source, "preset");
  EXPECT_EQ(same.dram_gbs, base.dram_gbs);
}

TEST(ArchModel, MeasuredMmaRateBecomesThePeakAndKeepsTheCalibratedRate) {
  const ArchModel base = *FindPreset("h200"); // 989.4 dense x 0.42
  const double calibrated = base.fp16_tflops * base.mma_efficiency;
  struct Case {
    double measured;
    double want_efficiency;
  };
  // Above the calibrated rate: the efficiency is re-expressed against the
  // measured peak. Below it: the device cannot sustain the preset's figure,
  // so the model takes what it measured (efficiency 1).
  for (const Case& c : {Case{660, calibrated / 660}, Case{300, 1.0}}) {
    SCOPED_TRACE(c.measured);
    Measured meas;
    meas.mma_f16_tflops = c.measured;
    const ArchModel m = WithMeasured(base, meas);
    EXPECT_DOUBLE_EQ(m.fp16_tflops, c.measured);
    EXPECT_DOUBLE_EQ(m.bf16_tflops, c.measured * base.bf16_tflops / base.fp16_tflops);
    EXPECT_DOUBLE_EQ(m.mma_efficiency, c.want_efficiency);
    EXPECT_DOUBLE_EQ(m.fp16_tflops * m.mma_efficiency, std::min(calibrated, c.measured));
    EXPECT_EQ(m.tf32_tflops, base.tf32_tflops);
    EXPECT_EQ(m.throughput_source, "measured");
    EXPECT_EQ(m.bandwidth_source, "preset");
  }
  // A model without tensor figures (no preset) takes the rate with its own
  // efficiency; an explicit efficiency wins over the re-expression.
  ArchModel bare = base;
  bare.fp16_tflops = bare.bf16_tflops = 0;
  bare.mma_efficiency = 0.8;
  Measured meas;
  meas.mma_f16_tflops = 500;
  ArchModel m = WithMeasured(bare, meas);
  EXPECT_EQ(m.fp16_tflops, 500);
  EXPECT_EQ(m.bf16_tflops, 500);
  EXPECT_EQ(m.mma_efficiency, 0.8);
  meas.mma_efficiency = 0.55;
  EXPECT_EQ(WithMeasured(base, meas).mma_efficiency, 0.55);
  // Zero or negative values are ignored.
  meas = Measured{};
  meas.mma_f16_tflops = 0;
  meas.dram_gbs = -1;
  m = WithMeasured(base, meas);
  EXPECT_EQ(m.fp16_tflops, base.fp16_tflops);
  EXPECT_EQ(m.dram_gbs, base.dram_gbs);
  EXPECT_EQ(m.throughput_source, "preset");
}

TEST(ArchModel, TensorThroughputByInputDtype) {
  const ArchModel m = *FindPreset("a100");
  EXPECT_EQ(TensorTflops(m, "float16"), 312);
  EXPECT_EQ(TensorTflops(m, "bfloat16"), 312);
  EXPECT_EQ(TensorTflops(m, "float32"), 156);
  EXPECT_EQ(TensorTflops(m, "int8"), 624);
  EXPECT_EQ(TensorTflops(m, "float8_e4m3"), 0);
}

} // namespace
} // namespace kiln::arch
