// The wire mapping of a build between kilnd and kiln-worker --compile
// (tuner/measure/compile_helper.h): every request field survives the trip,
// an error keeps its code and message (an unknown code is still an error),
// and a cubin's resource usage is parsed again from the log.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/compile_helper.h"

namespace kiln::measure {
namespace {

TEST(CompileHelperWire, RequestKeepsEveryField) {
  toolchain::CudaCompileInput in;
  in.source = "extern \"C\" __global__ void k() {}";
  in.program_name = "k.cu";
  in.arch = "sm_90a";
  in.headers = {{"a.h", "int a;"}, {"dir/b.h", "int b;"}};
  in.opt_level = 1;
  in.fast_math = true;
  in.line_info = true;
  in.extra_options = {"-DX=1", "-G"};
  in.want_cubin = false;
  in.want_ptx = true;
  kiln::v1::ToolchainCompileRequest wire;
  ASSERT_TRUE(wire.ParseFromString(ToCompileRequest(in).SerializeAsString()));
  const toolchain::CudaCompileInput back = FromCompileRequest(wire);
  EXPECT_EQ(back.source, in.source);
  EXPECT_EQ(back.program_name, in.program_name);
  EXPECT_EQ(back.arch, in.arch);
  EXPECT_EQ(back.headers, in.headers);
  EXPECT_EQ(back.opt_level, 1);
  EXPECT_TRUE(back.fast_math);
  EXPECT_TRUE(back.line_info);
  EXPECT_EQ(back.extra_options, in.extra_options);
  EXPECT_FALSE(back.want_cubin);
  EXPECT_TRUE(back.want_ptx);
}

TEST(CompileHelperWire, ErrorsKeepTheirCode) {
  const absl::Status error = absl::InvalidArgumentError("k.cu(3): error: expected a \";\"");
  absl::StatusOr<toolchain::CompileOutput> back =
      FromCompileResponse(ToCompileResponse(absl::StatusOr<toolchain::CompileOutput>(error)));
  EXPECT_EQ(back.status(), error);

  kiln::v1::ToolchainCompileResponse odd;
  odd.set_status_code(99);
  odd.set_status_message("from a newer helper");
  back = FromCompileResponse(odd);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(back.status().message(), "from a newer helper");
}

TEST(CompileHelperWire, OutputAndResourceUsageComeBack) {
  toolchain::CompileOutput out;
  out.cubin = std::string("\x7f"
                          "ELF\0\1",
                          6);
  out.ptx = ".version 8.0";
  out.log = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
            "ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem\n";
  out.elapsed = std::chrono::milliseconds(30);
  absl::StatusOr<toolchain::CompileOutput> back = FromCompileResponse(ToCompileResponse(out));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->cubin, out.cubin);
  EXPECT_EQ(back->ptx, out.ptx);
  EXPECT_EQ(back->log, out.log);
  EXPECT_EQ(back->elapsed, out.elapsed);
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].kernel, "k");
  EXPECT_EQ(back->kernels[0].registers, 40);
  EXPECT_EQ(back->kernels[0].shared_bytes, 4096);
}

} // namespace
} // namespace kiln::measure
