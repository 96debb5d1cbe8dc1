// GPU test (label gpu): Hopper TMA tensor maps through the real launch paths
// of tuner/measure. A hand-written sm_90a kernel takes a CUtensorMap by value
// (`const __grid_constant__`, after its params), loads one 8 x 64 box of a
// 13 x 72 uint16 matrix into shared memory with cp.async.bulk.tensor on an
// mbarrier, waits on the barrier's phase and writes the shared tile out
// byte for byte. A 2 x 2 grid of blocks covers 16 x 128 elements: the blocks
// at the right and bottom edges read out of bounds, which must come back
// as zeros, and the 128-byte swizzle must put 16-byte chunk c of 128-byte
// row r at chunk c ^ (r % 8). The maps come from LaunchSpec::tensor_maps
// (RunOnCuda, kiln-run's path) and from the worker protocol's tensor_maps
// (CudaBackend through WorkerSession, kiln-worker's path). Skips without a
// GPU, and on a device other than compute capability 9.0 (sm_90a).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/codegen/kernel_spec.h"
#include "compiler/ir/builder.h"
#include "compiler/toolchain/nvrtc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/cuda_backend.h"
#include "tuner/measure/cuda_driver.h"
#include "tuner/measure/kernel_launch.h"
#include "tuner/measure/worker_session.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;

bool GpuAttached() { return access("/dev/nvidiactl", F_OK) == 0; }

constexpr char kKernel[] = R"(
struct alignas(64) TensorMap { unsigned long long v[16]; };

__device__ unsigned SharedAddress(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Block (x, y) loads the box at element (row 8y, column 64x) and writes the
// 1024 bytes of shared memory it landed in to out[block][0..511].
extern "C" __global__ void tma_tile(const unsigned short* in, unsigned short* out,
                                    const __grid_constant__ TensorMap map) {
  // The 128-byte swizzle follows address bits: the tile is 1024-byte aligned.
  __shared__ __align__(1024) unsigned short tile[512];
  __shared__ __align__(8) unsigned long long barrier;
  const unsigned bar = SharedAddress(&barrier);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"(1024) : "memory");
    const int column = blockIdx.x * 64, row = blockIdx.y * 8;
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(SharedAddress(tile)), "l"(&map), "r"(column), "r"(row), "r"(bar)
                 : "memory");
  }
  unsigned done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;"
                 " selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar), "r"(0) : "memory");
  } while (!done);
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  for (int i = threadIdx.x; i < 512; i += blockDim.x) out[block * 512 + i] = tile[i];
}
)";

constexpr int64_t kRows = 13, kCols = 72; // 144-byte rows: a multiple of 16
constexpr int64_t kBoxRows = 8, kBoxCols = 64;
constexpr int kGridX = 2, kGridY = 2;
constexpr int64_t kTileElems = kBoxRows * kBoxCols;

uint16_t InputAt(int64_t r, int64_t c) { return static_cast<uint16_t>(r * kCols + c + 1); }

std::string InputBytes() {
  std::vector<uint16_t> v;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) v.push_back(InputAt(r, c));
  }
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(uint16_t));
}

// Checks what the kernel wrote: for each block's tile, element e of 16-byte
// chunk c of row r sits at chunk c ^ (r % 8) and is the input element at
// (8y + r, 64x + 8c + e), or zero outside the matrix.
void ExpectSwizzledTiles(const std::string& out_bytes) {
  ASSERT_EQ(out_bytes.size(), size_t{kGridX * kGridY * kTileElems * 2});
  std::vector<uint16_t> out(out_bytes.size() / 2);
  std::memcpy(out.data(), out_bytes.data(), out_bytes.size());
  int zeros = 0, mismatches = 0;
  for (int y = 0; y < kGridY; ++y) {
    for (int x = 0; x < kGridX; ++x) {
      const int64_t block = y * kGridX + x;
      for (int64_t r = 0; r < kBoxRows; ++r) {
        for (int64_t c = 0; c < 8; ++c) {
          for (int64_t e = 0; e < 8; ++e) {
            const int64_t row = y * kBoxRows + r, col = x * kBoxCols + c * 8 + e;
            const uint16_t want = row < kRows && col < kCols ? InputAt(row, col) : 0;
            const uint16_t got = out[block * kTileElems + r * 64 + (c ^ (r % 8)) * 8 + e];
            zeros += want == 0;
            if (got != want && ++mismatches <= 10) {
              ADD_FAILURE() << "block (" << x << ", " << y << ") row " << r << " chunk " << c
                            << " element " << e << ": got " << got << ", want " << want;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  // The edges: 3 rows past the bottom, 56 columns past the right.
  EXPECT_EQ(zeros, 4 * 512 - kRows * kCols);
}

class TensorMapGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GpuAttached()) GTEST_SKIP() << "no GPU attached (/dev/nvidiactl missing)";
    absl::StatusOr<std::shared_ptr<CudaDriver>> driver = CudaDriver::Load();
    ASSERT_TRUE(driver.ok()) << driver.status();
    absl::StatusOr<std::shared_ptr<Device>> device = Device::Open(*driver, 0);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = *device;
    const DeviceProperties& p = device_->properties();
    if (!CubinRunsOn("sm_90a", p.cc_major, p.cc_minor)) {
      GTEST_SKIP() << "the TMA test kernel is sm_90a; device " << p.name << " is " << p.arch();
    }
    if (!(*driver)->has_tensor_maps()) {
      GTEST_SKIP() << "this CUDA driver has no cuTensorMapEncodeTiled";
    }
  }

  codegen::EmittedKernel Kernel(int64_t cols = kCols) const {
    codegen::EmittedKernel k;
    k.target = codegen::EmitTarget::kCuda;
    k.source = kKernel;
    k.arch = "sm_90a";
    k.launch.symbol = "tma_tile";
    k.launch.block = {128, 1, 1};
    codegen::KernelArg in;
    in.name = "in";
    in.dtype = ir::DType::kUInt16;
    in.shape = {ir::IntImm(kRows), ir::IntImm(cols)};
    codegen::KernelArg out;
    out.name = "out";
    out.dtype = ir::DType::kUInt16;
    out.is_output = true;
    out.shape = {ir::IntImm(kGridX * kGridY * kTileElems)};
    k.launch.args = {in, out};
    codegen::TensorMapSpec map;
    map.arg = 0;
    map.box = {kBoxRows, kBoxCols};
    map.swizzle_bytes = 128;
    k.launch.tensor_maps = {map};
    return k;
  }

  static std::vector<tools::HostParam> Params(int64_t cols = kCols) {
    tools::HostParam in;
    in.name = "in";
    in.dtype = ir::DType::kUInt16;
    in.before.dtype = in.dtype;
    in.before.shape = {kRows, cols};
    in.before.data = cols == kCols ? InputBytes() : std::string(kRows * cols * 2, '\1');
    tools::HostParam out;
    out.name = "out";
    out.dtype = ir::DType::kUInt16;
    out.is_output = true;
    out.before.dtype = out.dtype;
    out.before.shape = {kGridX * kGridY * kTileElems};
    out.before.data.assign(static_cast<size_t>(kGridX * kGridY * kTileElems * 2), '\xff');
    return {in, out};
  }

  std::shared_ptr<Device> device_;
};

// kiln-run's path: RunOnCuda compiles with NVRTC and encodes the spec's map.
TEST_F(TensorMapGpuTest, RunOnCudaLoadsASwizzledRaggedTile) {
  std::vector<tools::HostParam> params = Params();
  absl::StatusOr<RunResult> run = RunOnCuda(Kernel(), device_, params, {}, {kGridX, kGridY, 1});
  if (!run.ok() && absl::IsFailedPrecondition(run.status())) GTEST_SKIP() << run.status();
  ASSERT_TRUE(run.ok()) << run.status();
  ExpectSwizzledTiles(params[1].after.data);
}

// A row of 70 uint16 (140 bytes) is no multiple of 16: refused before the
// launch, naming the tensor.
TEST_F(TensorMapGpuTest, RunOnCudaRefusesAnUnalignedRowStride) {
  std::vector<tools::HostParam> params = Params(70);
  absl::StatusOr<RunResult> run = RunOnCuda(Kernel(70), device_, params, {}, {kGridX, kGridY, 1});
  if (!run.ok() && absl::IsFailedPrecondition(run.status())) GTEST_SKIP() << run.status();
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("tensor map for 'in'"));
  EXPECT_THAT(run.status().message(), HasSubstr("140 bytes, not a multiple of 16"));
}

// kiln-worker's path: the launch's tensor_maps by parameter name, encoded
// by CudaBackend at the working buffer's address.
TEST_F(TensorMapGpuTest, WorkerRunLoadsASwizzledRaggedTile) {
  toolchain::CudaCompileInput compile;
  compile.source = kKernel;
  compile.program_name = "tensor_map_test.cu";
  compile.arch = "sm_90a";
  absl::StatusOr<toolchain::CompileOutput> cubin = toolchain::NvrtcCompile(compile);
  if (!cubin.ok() && absl::IsFailedPrecondition(cubin.status())) GTEST_SKIP() << cubin.status();
  ASSERT_TRUE(cubin.ok()) << cubin.status();

  absl::StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::Open(0, "libcuda.so.1");
  ASSERT_TRUE(backend.ok()) << backend.status();
  WorkerSession session(*std::move(backend));
  bool exit_after = false;
  pb::WorkerRequest load;
  load.mutable_load()->set_module_id("tma");
  load.mutable_load()->set_kernel_symbol("tma_tile");
  load.mutable_load()->set_image(cubin->cubin);
  pb::WorkerResponse loaded = session.Handle(load, &exit_after);
  ASSERT_FALSE(loaded.has_error()) << loaded.error().message();

  pb::WorkerRequest run;
  pb::LaunchSpec* launch = run.mutable_run()->mutable_launch();
  launch->set_module_id("tma");
  launch->add_grid(kGridX);
  launch->add_grid(kGridY);
  launch->add_block(128);
  pb::TensorSpec* in = launch->add_args();
  in->set_name("in");
  in->set_dtype(pb::DTYPE_UINT16);
  in->add_shape(kRows);
  in->add_shape(kCols);
  in->set_init(pb::TensorSpec::INIT_BYTES);
  in->set_data(InputBytes());
  pb::TensorSpec* out = launch->add_args();
  out->set_name("out");
  out->set_dtype(pb::DTYPE_UINT16);
  out->add_shape(kGridX * kGridY * kTileElems);
  out->set_init(pb::TensorSpec::INIT_ZEROS);
  out->set_is_output(true);
  pb::TensorMap* map = launch->add_tensor_maps();
  map->set_param("in");
  map->add_box(kBoxRows);
  map->add_box(kBoxCols);
  map->set_swizzle_bytes(128);
  run.mutable_run()->set_return_outputs(true);
  pb::WorkerResponse r = session.Handle(run, &exit_after);
  ASSERT_FALSE(r.has_error()) << r.error().message();
  EXPECT_FALSE(exit_after);
  ASSERT_EQ(r.run().outputs_size(), 1);
  ExpectSwizzledTiles(r.run().outputs(0));

  // A map for a parameter the launch does not have is a clear error.
  launch->mutable_tensor_maps(0)->set_param("nope");
  pb::WorkerResponse bad = session.Handle(run, &exit_after);
  ASSERT_TRUE(bad.has_error());
  EXPECT_THAT(bad.error().message(), HasSubstr("tensor map for 'nope'"));
}

} // namespace
} // namespace kiln::measure
