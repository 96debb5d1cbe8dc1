// kiln-worker: runs kernels for kilnd on one device, in its own process, so
// that a kernel's fault or hang kills a worker and not the daemon
// (ARCHITECTURE.md, decision 4; docs/design/worker.md).
//
//   kiln-worker --device cpu|cpu:N|cuda:N --fd N [--cpu-core K] [--max-frame-bytes N]
//   kiln-worker --compile --fd N [--warm-arch sm_XX] [--max-frame-bytes N]
//   kiln-worker --list
//
// --fd is an inherited stream socket (kilnd's end of a socketpair is the
// other) carrying framed WorkerRequest / WorkerResponse messages. The CUDA
// driver is loaded with dlopen ($KILN_CUDA_LIBRARY, default libcuda.so.1).
// --compile makes it a compile helper instead (tuner/measure/compile_helper.h):
// framed ToolchainCompileRequest messages built with NVRTC, no device opened.
// --cpu-core pins the process to logical CPU K (kilnd pins each of several CPU
// workers to its own core). --list prints "cuda N", the number of CUDA
// devices the driver sees (0, with the reason on stderr, where there is no
// driver), and exits 0.
//
// Exit status: 0 the stream ended; 2 usage; 3 after answering a launch
// failure; 4 a frame it cannot answer; 5 an I/O error on the socket; 6 the
// device cannot be opened. A kernel that crashes kills the process with its
// signal (after a line on stderr saying so).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tuner/arch/arch_model.h"
#include "tuner/measure/compile_helper.h"
#include "tuner/measure/cpu_backend.h"
#include "tuner/measure/crash_report.h"
#include "tuner/measure/cuda_backend.h"
#include "tuner/measure/cuda_driver.h"
#include "tuner/measure/worker_session.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 6;

constexpr char kUsage[] = R"(usage: kiln-worker --device cpu|cpu:N|cuda:N --fd N [--cpu-core K]
                   [--max-frame-bytes N]
       kiln-worker --compile --fd N [--warm-arch sm_XX] [--max-frame-bytes N]
       kiln-worker --list

Serves framed kiln.v1.WorkerRequest messages on the inherited socket --fd for
one device (the CPU target, or CUDA device N). Started by kilnd; see
docs/design/worker.md. cpu:N is one more CPU-target worker (N >= 1);
--cpu-core pins the process to logical CPU K before it serves. --compile
serves kiln.v1.ToolchainCompileRequest builds with NVRTC instead
(docs/design/toolchain.md); --warm-arch builds one small kernel for that arch
first. --list prints "cuda N", the number of CUDA devices.
environment: KILN_CUDA_LIBRARY (default libcuda.so.1), KILN_WORKER_TRACE=1 (a stderr
line per request with the wall time of its phases)
)";

int Usage(const std::string& message) {
  std::fprintf(stderr, "kiln-worker: %s\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

std::string CudaLibrary() {
  const char* env = std::getenv("KILN_CUDA_LIBRARY");
  return env != nullptr && env[0] != '\0' ? env : "libcuda.so.1";
}

int List() {
  absl::StatusOr<std::shared_ptr<kiln::measure::CudaDriver>> driver =
      kiln::measure::CudaDriver::Load(CudaLibrary());
  if (!driver.ok()) {
    std::fprintf(stderr, "kiln-worker: %s\n", absl::StrCat(driver.status().message()).c_str());
    std::printf("cuda 0\n");
    return 0;
  }
  std::printf("cuda %d\n", (*driver)->device_count());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::string device;
  int fd = -1;
  int cpu_core = -1;
  bool compile = false;
  kiln::measure::CompileHelperOptions compile_options;
  kiln::measure::WorkerSessionOptions options;
  if (const char* trace = std::getenv("KILN_WORKER_TRACE")) {
    options.trace = std::string(trace) == "1";
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0) return argv[i] + prefix.size();
      if (arg == flag && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (arg == "-h" || arg == "--help") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (arg == "--list") return List();
    if (arg == "--compile") {
      compile = true;
    } else if (const char* v = value("--warm-arch")) {
      compile_options.warm_arch = v;
    } else if (const char* v = value("--device")) {
      device = v;
    } else if (const char* v = value("--cpu-core")) {
      if (!absl::SimpleAtoi(v, &cpu_core) || cpu_core < 0 || cpu_core >= CPU_SETSIZE) {
        return Usage(absl::StrCat("--cpu-core needs a CPU number from 0 to ", CPU_SETSIZE - 1));
      }
    } else if (const char* v = value("--fd")) {
      if (!absl::SimpleAtoi(v, &fd) || fd < 0) return Usage("--fd needs a descriptor number");
    } else if (const char* v = value("--max-frame-bytes")) {
      if (!absl::SimpleAtoi(v, &options.max_frame_bytes) || options.max_frame_bytes == 0) {
        return Usage("--max-frame-bytes needs a positive number");
      }
    } else {
      return Usage("unknown argument '" + arg + "'");
    }
  }
  if (compile && !device.empty()) return Usage("--compile takes no --device");
  if (!compile && !compile_options.warm_arch.empty()) return Usage("--warm-arch needs --compile");
  if (!compile && device.empty()) return Usage("missing --device");
  if (compile && cpu_core >= 0) return Usage("--compile takes no --cpu-core");
  if (fd < 0) return Usage("missing --fd");
  if (fcntl(fd, F_GETFD) < 0) {
    return Usage(absl::StrCat("--fd ", fd, " is not an open descriptor"));
  }
  // Nothing this process might start inherits the socket.
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  // A crashing kernel leaves a report, not a core file per crash.
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  std::signal(SIGPIPE, SIG_IGN);
  kiln::measure::InstallCrashReporter(
      absl::StrCat("kiln-worker[", compile ? "compile" : device, "]"));
  if (compile) {
    compile_options.max_frame_bytes = options.max_frame_bytes;
    return kiln::measure::ServeCompiles(fd, compile_options);
  }

  if (cpu_core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu_core, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      std::fprintf(stderr, "kiln-worker: cannot pin %s to CPU %d: %s\n", device.c_str(), cpu_core,
                   std::strerror(errno));
      return kExitNoDevice;
    }
  }
  std::unique_ptr<kiln::measure::DeviceBackend> backend;
  if (kiln::arch::IsCpuDeviceId(device)) {
    backend = std::make_unique<kiln::measure::CpuBackend>(device);
  } else if (device.rfind("cuda:", 0) == 0) {
    int ordinal = -1;
    if (!absl::SimpleAtoi(device.substr(5), &ordinal) || ordinal < 0) {
      return Usage("--device cuda:N needs a device number N >= 0");
    }
    absl::StatusOr<std::unique_ptr<kiln::measure::CudaBackend>> cuda =
        kiln::measure::CudaBackend::Open(ordinal, CudaLibrary());
    if (!cuda.ok()) {
      std::fprintf(stderr, "kiln-worker: cannot open %s: %s\n", device.c_str(),
                   absl::StrCat(cuda.status().message()).c_str());
      return kExitNoDevice;
    }
    backend = *std::move(cuda);
  } else {
    return Usage("--device must be cpu, cpu:N (N >= 1) or cuda:N, got '" + device + "'");
  }
  kiln::measure::SetCrashContext("waiting for a request");
  kiln::measure::WorkerSession session(std::move(backend), options);
  const int rc = session.Serve(fd);
  if (rc == kiln::measure::kExitLaunchFailed) {
    // The device context is poisoned: tearing it down could block, and the
    // process's exit frees it anyway.
    std::fflush(nullptr);
    _exit(rc);
  }
  return rc;
}
