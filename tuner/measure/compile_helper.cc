#include "tuner/measure/compile_helper.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/kernel_spec.h"
#include "compiler/toolchain/kernel_compile.h"
#include "compiler/toolchain/nvrtc.h"
#include "compiler/toolchain/resource_usage.h"
#include "tuner/measure/crash_report.h"
#include "tuner/measure/worker_session.h"

namespace kiln::measure {

kiln::v1::ToolchainCompileRequest ToCompileRequest(const toolchain::CudaCompileInput& in) {
  kiln::v1::ToolchainCompileRequest r;
  r.set_source(in.source);
  r.set_program_name(in.program_name);
  r.set_arch(in.arch);
  for (const auto& [name, content] : in.headers) (*r.mutable_headers())[name] = content;
  r.set_opt_level(in.opt_level);
  r.set_fast_math(in.fast_math);
  r.set_line_info(in.line_info);
  for (const std::string& o : in.extra_options) r.add_extra_options(o);
  r.set_want_cubin(in.want_cubin);
  r.set_want_ptx(in.want_ptx);
  return r;
}

toolchain::CudaCompileInput FromCompileRequest(const kiln::v1::ToolchainCompileRequest& r) {
  toolchain::CudaCompileInput in;
  in.source = r.source();
  in.program_name = r.program_name();
  in.arch = r.arch();
  for (const auto& [name, content] : r.headers()) in.headers.emplace(name, content);
  in.opt_level = r.opt_level();
  in.fast_math = r.fast_math();
  in.line_info = r.line_info();
  in.extra_options.assign(r.extra_options().begin(), r.extra_options().end());
  in.want_cubin = r.want_cubin();
  in.want_ptx = r.want_ptx();
  return in;
}

kiln::v1::ToolchainCompileResponse
ToCompileResponse(const absl::StatusOr<toolchain::CompileOutput>& result) {
  kiln::v1::ToolchainCompileResponse r;
  if (!result.ok()) {
    r.set_status_code(static_cast<int32_t>(result.status().code()));
    r.set_status_message(absl::StrCat(result.status().message()));
    return r;
  }
  r.set_cubin(result->cubin);
  r.set_ptx(result->ptx);
  r.set_log(result->log);
  r.set_compile_ns(result->elapsed.count());
  return r;
}

absl::StatusOr<toolchain::CompileOutput>
FromCompileResponse(const kiln::v1::ToolchainCompileResponse& r) {
  if (r.status_code() != 0) {
    const int code = r.status_code();
    // A code this build does not know is still an error, never OK.
    const absl::StatusCode status_code =
        code > 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown;
    return absl::Status(status_code, r.status_message());
  }
  toolchain::CompileOutput out;
  out.cubin = r.cubin();
  out.ptx = r.ptx();
  out.log = r.log();
  if (!out.cubin.empty()) out.kernels = toolchain::ParsePtxasVerbose(out.log);
  out.elapsed = std::chrono::nanoseconds(r.compile_ns());
  return out;
}

namespace {

void Warm(const std::string& arch) {
  codegen::EmittedKernel kernel;
  kernel.arch = arch;
  kernel.source = "#include \"kiln/cuda/runtime.h\"\n";
  if (arch == "sm_90a") kernel.source += "#include \"kiln/cuda/wgmma.h\"\n";
  kernel.source += "extern \"C\" __global__ void kiln_warm(float* p) { p[threadIdx.x] = 1.0f; }\n";
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<toolchain::CompileOutput> out = toolchain::CompileCudaKernel(kernel);
  if (std::getenv("KILN_WORKER_TRACE") != nullptr) {
    std::fprintf(stderr, "kiln-worker[compile]: warm-up build for %s: %.1f ms\n", arch.c_str(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  if (!out.ok()) {
    // Not fatal: the requests get the same error, with their own context.
    std::fprintf(stderr, "kiln-worker[compile]: warm-up build for %s failed: %s\n", arch.c_str(),
                 absl::StrCat(out.status().message()).c_str());
  }
}

} // namespace

int ServeCompiles(int fd, const CompileHelperOptions& options) {
  if (!options.warm_arch.empty()) {
    SetCrashContext(absl::StrCat("warm-up build for ", options.warm_arch));
    Warm(options.warm_arch);
  }
  FrameIoOptions io;
  io.max_frame_bytes = options.max_frame_bytes;
  for (;;) {
    SetCrashContext("waiting for a request");
    kiln::v1::ToolchainCompileRequest request;
    if (absl::Status s = ReadMessage(fd, &request, io); !s.ok()) {
      if (absl::IsOutOfRange(s)) return kExitPeerClosed;
      std::fprintf(stderr, "kiln-worker[compile]: %s\n", absl::StrCat(s.message()).c_str());
      return absl::IsDataLoss(s) || absl::IsResourceExhausted(s) ? kExitBadStream : kExitIoError;
    }
    SetCrashContext(absl::StrCat("NVRTC build of '", request.program_name(), "' for ",
                                 request.arch(), " (request ", request.request_id(), ")"));
    kiln::v1::ToolchainCompileResponse response =
        ToCompileResponse(toolchain::NvrtcCompile(FromCompileRequest(request)));
    response.set_request_id(request.request_id());
    if (absl::Status s = WriteMessage(fd, response, io); !s.ok()) {
      std::fprintf(stderr, "kiln-worker[compile]: %s\n", absl::StrCat(s.message()).c_str());
      return kExitIoError;
    }
  }
}

} // namespace kiln::measure
