// The real kiln-worker process on the CPU device, over a socketpair: a
// kernel compiled from examples/elementwise/add.py through the frontend,
// codegen and the host compiler runs with correct outputs and validates;
// hand-written kernels cover scalars, timing, a kernel's own error (a launch
// failure: answer, then exit 3) and a segfault (the worker dies of SIGSEGV
// after saying so on stderr); bad requests and malformed frames get errors
// without killing the worker, except an oversize length (answer, exit 4).
#include <cmath>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/ir_util.h"
#include "compiler/toolchain/host_cc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/worker.pb.h"
#include "tests/support/example_loader.h"
#include "tests/support/worker_test_kernels.h"
#include "tuner/measure/frame_io.h"
#include "tuner/measure/kernel_launch.h"
#include "tuner/measure/tensor_data.h"
#include "tuner/measure/worker_session.h"
#include "util/child_process.h"
#include "util/subprocess.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kWorker[] = KILN_BINARY_DIR "/kiln-worker";

// A kiln-worker for `device` on one end of a socketpair.
class Worker {
 public:
  explicit Worker(const std::string& device = "cpu", const std::vector<std::string>& extra = {}) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    util::ChildProcessOptions options;
    options.inherit = {{sv[1], 3}};
    std::vector<std::string> argv = {kWorker, "--device", device, "--fd", "3"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    absl::StatusOr<std::unique_ptr<util::ChildProcess>> child =
        util::ChildProcess::Spawn(argv, options);
    close(sv[1]);
    EXPECT_TRUE(child.ok()) << child.status();
    if (child.ok()) child_ = *std::move(child);
    fd_ = sv[0];
  }
  ~Worker() { close(fd_); }

  int fd() const { return fd_; }
  util::ChildProcess& child() { return *child_; }

  absl::StatusOr<pb::WorkerResponse> Call(pb::WorkerRequest request) {
    request.set_request_id(++id_);
    FrameIoOptions io;
    io.deadline = absl::Now() + absl::Seconds(60);
    if (absl::Status s = WriteMessage(fd_, request, io); !s.ok()) return s;
    pb::WorkerResponse response;
    if (absl::Status s = ReadMessage(fd_, &response, io); !s.ok()) return s;
    EXPECT_EQ(response.request_id(), id_);
    return response;
  }

  // Everything the worker wrote, once it has exited.
  std::string Output() {
    EXPECT_TRUE(child_->Wait(std::chrono::seconds(10)));
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(child_->output_fd(), buf, sizeof(buf))) > 0;) {
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  std::unique_ptr<util::ChildProcess> child_;
  int fd_ = -1;
  uint64_t id_ = 0;
};

std::string TestKernels() {
  std::string error;
  std::string so = testing::CompileWorkerTestKernels(&error);
  EXPECT_FALSE(so.empty()) << error;
  return so;
}

TEST(KilnWorker, DescribesTheHostCpu) {
  Worker w;
  absl::StatusOr<pb::WorkerResponse> r = w.Call(testing::DescribeRequest());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->has_describe()) << r->DebugString();
  const pb::Device& d = r->describe().device();
  EXPECT_EQ(d.id(), "cpu");
  EXPECT_FALSE(d.model().empty());
  EXPECT_FALSE(d.arch().empty());
  EXPECT_GE(d.sm_count(), 1);
  EXPECT_GT(d.memory_bytes(), 0);
}

TEST(KilnWorker, AnExtraCpuWorkerDescribesItsIdAndRunsPinned) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  int core = 0;
  while (!CPU_ISSET(core, &mine)) ++core;
  Worker w("cpu:3", {"--cpu-core", absl::StrCat(core)});
  absl::StatusOr<pb::WorkerResponse> r = w.Call(testing::DescribeRequest());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->describe().device().id(), "cpu:3");
  cpu_set_t pinned;
  ASSERT_EQ(sched_getaffinity(w.child().pid(), sizeof(pinned), &pinned), 0);
  EXPECT_EQ(CPU_COUNT(&pinned), 1);
  EXPECT_TRUE(CPU_ISSET(core, &pinned));
}

TEST(KilnWorker, ACoreOutsideTheAffinitySetCannotBePinned) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  int outside = CPU_SETSIZE - 1;
  while (outside > 0 && CPU_ISSET(outside, &mine)) --outside;
  Worker w("cpu:1", {"--cpu-core", absl::StrCat(outside)});
  const std::string output = w.Output();
  EXPECT_EQ(w.child().exit_code(), 6) << output;
  EXPECT_THAT(output, HasSubstr(absl::StrCat("cannot pin cpu:1 to CPU ", outside)));
}

TEST(KilnWorker, RunsTheAddExampleAndValidates) {
  // The CPU target of examples/elementwise/add.py at its test size, compiled
  // the way kiln-run compiles it.
  const testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
  absl::StatusOr<ir::Program> program = frontend::CompileSource(ex.source, ex.Options(true));
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<codegen::EmittedKernel> kernel = codegen::LowerAndEmit(*program, "cpu");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<std::array<int64_t, 3>> grid = EvalGrid(kernel->launch, {});
  ASSERT_TRUE(grid.ok()) << grid.status();
  toolchain::HostCompileInput in;
  in.source = kernel->source;
  absl::StatusOr<toolchain::HostCompileOutput> so = toolchain::HostCompile(in);
  ASSERT_TRUE(so.ok()) << so.status();

  Worker w;
  absl::StatusOr<pb::WorkerResponse> loaded =
      w.Call(testing::LoadRequest("add", so->shared_object, kernel->launch.symbol));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_load()) << loaded->DebugString();

  pb::LaunchSpec launch;
  launch.set_module_id("add");
  for (int64_t g : *grid) launch.add_grid(g);
  for (int64_t b : kernel->launch.block) launch.add_block(b);
  for (const ir::Param& p : program->params) {
    absl::StatusOr<std::vector<int64_t>> shape = tools::EvalShape(p.buffer.shape, {}, "shape");
    ASSERT_TRUE(shape.ok()) << shape.status();
    const bool out = p.buffer.name == "C";
    pb::TensorSpec* t = testing::AddTensor(
        &launch, p.buffer.name, DTypeToWire(p.buffer.dtype), *shape,
        out ? pb::TensorSpec::INIT_ZEROS : pb::TensorSpec::INIT_RANDOM_UNIFORM, out);
    t->set_seed(11);
  }
  ASSERT_EQ(launch.args_size(), 3);
  EXPECT_EQ(launch.args(0).shape(0), 77);
  EXPECT_EQ(launch.args(0).shape(1), 130);

  // The expected C: A + B, each sum rounded once to float16.
  absl::StatusOr<std::vector<tools::HostParam>> inputs = MakeHostParams(launch.args(), 1 << 24);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  tools::NpyArray want = (*inputs)[2].before;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    SetElement(want, i,
               static_cast<float>(GetElement((*inputs)[0].before, i)) +
                   static_cast<float>(GetElement((*inputs)[1].before, i)));
  }

  pb::WorkerRequest run;
  *run.mutable_run()->mutable_launch() = launch;
  run.mutable_run()->set_return_outputs(true);
  absl::StatusOr<pb::WorkerResponse> ran = w.Call(run);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->has_run()) << ran->DebugString();
  ASSERT_EQ(ran->run().outputs_size(), 1);
  EXPECT_EQ(ran->run().outputs(0), want.data);
  EXPECT_GT(ran->run().elapsed_us(), 0);

  pb::WorkerRequest validate;
  *validate.mutable_validate()->mutable_launch() = launch;
  validate.mutable_validate()->add_reference_outputs(want.data);
  absl::StatusOr<pb::WorkerResponse> valid = w.Call(validate);
  ASSERT_TRUE(valid.ok()) << valid.status();
  ASSERT_TRUE(valid->has_validate()) << valid->DebugString();
  EXPECT_TRUE(valid->validate().ok()) << valid->validate().first_mismatch();
  EXPECT_EQ(valid->validate().mismatches(), 0);

  // One wrong element in the reference: C[3, 5] is flat index 3 * 130 + 5.
  SetElement(want, 3 * 130 + 5, GetElement(want, 3 * 130 + 5) + 1.0);
  validate.mutable_validate()->set_reference_outputs(0, want.data);
  absl::StatusOr<pb::WorkerResponse> invalid = w.Call(validate);
  ASSERT_TRUE(invalid.ok()) << invalid.status();
  EXPECT_FALSE(invalid->validate().ok());
  EXPECT_EQ(invalid->validate().mismatches(), 1);
  EXPECT_THAT(invalid->validate().first_mismatch(), StartsWith("C[3, 5]: got "));
  EXPECT_NEAR(invalid->validate().max_abs_error(), 1.0, 1e-2);

  pb::WorkerRequest measure;
  *measure.mutable_measure()->mutable_launch() = launch;
  measure.mutable_measure()->set_warmup(1);
  measure.mutable_measure()->set_repeats(3);
  absl::StatusOr<pb::WorkerResponse> timed = w.Call(measure);
  ASSERT_TRUE(timed.ok()) << timed.status();
  ASSERT_EQ(timed->measure().samples_us_size(), 3) << timed->DebugString();
  for (double us : timed->measure().samples_us()) EXPECT_GT(us, 0);
}

// A program of three kernels over two T.alloc_global workspaces
// (tests/programs/split_k_row_sums.py; docs/design/multi-kernel.md): the
// worker loads every entry point, runs the whole sequence with zeroed
// workspaces, and times it. Running the first kernel alone leaves `out` zero.
TEST(KilnWorker, RunsAProgramOfSeveralKernels) {
  const testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "tests/programs/split_k_row_sums.py");
  absl::StatusOr<ir::Program> program = frontend::CompileSource(ex.source, ex.Options(true));
  ASSERT_TRUE(program.ok()) << program.status();
  absl::StatusOr<codegen::EmittedKernel> kernel = codegen::LowerAndEmit(*program, "cpu");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  ASSERT_EQ(kernel->launch.next_kernels.size(), 2u);
  toolchain::HostCompileInput in;
  in.source = kernel->source;
  absl::StatusOr<toolchain::HostCompileOutput> so = toolchain::HostCompile(in);
  ASSERT_TRUE(so.ok()) << so.status();

  Worker w;
  pb::WorkerRequest load = testing::LoadRequest("rows", so->shared_object, kernel->launch.symbol);
  for (const codegen::KernelLaunch& k : kernel->launch.next_kernels) {
    load.mutable_load()->add_next_kernel_symbols(k.symbol);
    load.mutable_load()->add_next_dynamic_shared_bytes(k.dynamic_smem_bytes);
  }
  absl::StatusOr<pb::WorkerResponse> loaded = w.Call(load);
  ASSERT_TRUE(loaded.ok() && loaded->has_load()) << loaded.status();

  pb::LaunchSpec launch;
  launch.set_module_id("rows");
  std::vector<LaunchStep> steps;
  {
    absl::StatusOr<std::array<int64_t, 3>> grid = EvalGrid(kernel->launch, {});
    ASSERT_TRUE(grid.ok()) << grid.status();
    absl::StatusOr<std::vector<LaunchStep>> all = EvalSequence(kernel->launch, *grid, {});
    ASSERT_TRUE(all.ok()) << all.status();
    steps = *all;
  }
  for (int64_t g : steps[0].grid) launch.add_grid(g);
  for (int64_t b : steps[0].block) launch.add_block(b);
  for (size_t k = 1; k < steps.size(); ++k) {
    pb::KernelStep* step = launch.add_next_kernels();
    for (int64_t g : steps[k].grid) step->add_grid(g);
    for (int64_t b : steps[k].block) step->add_block(b);
  }
  absl::StatusOr<std::vector<size_t>> workspaces = WorkspaceBytes(kernel->launch, {});
  ASSERT_TRUE(workspaces.ok()) << workspaces.status();
  ASSERT_EQ(workspaces->size(), 2u);
  for (size_t bytes : *workspaces) launch.add_workspace_bytes(static_cast<int64_t>(bytes));
  for (const ir::Param& p : program->params) {
    absl::StatusOr<std::vector<int64_t>> shape = tools::EvalShape(p.buffer.shape, {}, "shape");
    ASSERT_TRUE(shape.ok()) << shape.status();
    const bool out = ir::UserName(p) == "out";
    pb::TensorSpec* t = testing::AddTensor(
        &launch, ir::UserName(p), DTypeToWire(p.buffer.dtype), *shape,
        out ? pb::TensorSpec::INIT_ZEROS : pb::TensorSpec::INIT_RANDOM_UNIFORM, out);
    t->set_seed(5);
  }
  ASSERT_EQ(launch.args_size(), 2);

  // out[i, j] = X[i, j] * (sum of row i of X).
  absl::StatusOr<std::vector<tools::HostParam>> inputs = MakeHostParams(launch.args(), 1 << 24);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  const tools::NpyArray& x = (*inputs)[0].before;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  std::vector<double> want(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += GetElement(x, i * cols + j);
    for (int64_t j = 0; j < cols; ++j) {
      want[static_cast<size_t>(i * cols + j)] = GetElement(x, i * cols + j) * sum;
    }
  }

  pb::WorkerRequest run;
  *run.mutable_run()->mutable_launch() = launch;
  run.mutable_run()->set_return_outputs(true);
  absl::StatusOr<pb::WorkerResponse> ran = w.Call(run);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->has_run()) << ran->DebugString();
  ASSERT_EQ(ran->run().outputs_size(), 1);
  tools::NpyArray got = (*inputs)[1].before;
  got.data = ran->run().outputs(0);
  ASSERT_EQ(got.data.size(), want.size() * sizeof(float));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::abs(GetElement(got, static_cast<int64_t>(i)) - want[i]) >
        1e-3 + 1e-3 * std::abs(want[i])) {
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << "of " << want.size();

  pb::WorkerRequest measure;
  *measure.mutable_measure()->mutable_launch() = launch;
  measure.mutable_measure()->set_warmup(1);
  measure.mutable_measure()->set_repeats(2);
  absl::StatusOr<pb::WorkerResponse> timed = w.Call(measure);
  ASSERT_TRUE(timed.ok()) << timed.status();
  ASSERT_EQ(timed->measure().samples_us_size(), 2) << timed->DebugString();

  // A launch that names fewer kernels than the module has is refused.
  launch.clear_next_kernels();
  *run.mutable_run()->mutable_launch() = launch;
  absl::StatusOr<pb::WorkerResponse> short_run = w.Call(run);
  ASSERT_TRUE(short_run.ok()) << short_run.status();
  EXPECT_THAT(short_run->DebugString(), HasSubstr("the launch has 1 kernels"));
}

TEST(KilnWorker, HandwrittenKernelWithAScalarAndMeasure) {
  Worker w;
  absl::StatusOr<pb::WorkerResponse> loaded =
      w.Call(testing::LoadRequest("k", TestKernels(), "kiln_add_one"));
  ASSERT_TRUE(loaded.ok() && loaded->has_load()) << loaded.status();
  absl::StatusOr<pb::WorkerResponse> ran = w.Call(testing::RunAddOne("k", 10));
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_EQ(ran->run().outputs_size(), 1) << ran->DebugString();
  tools::NpyArray y{ir::DType::kFloat32, {10}, ran->run().outputs(0)};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(GetElement(y, i), i + 1.0);

  pb::WorkerRequest measure;
  *measure.mutable_measure()->mutable_launch() = testing::RunAddOne("k", 1000).run().launch();
  measure.mutable_measure()->set_warmup(2);
  measure.mutable_measure()->set_repeats(25);
  absl::StatusOr<pb::WorkerResponse> timed = w.Call(measure);
  ASSERT_TRUE(timed.ok()) << timed.status();
  EXPECT_EQ(timed->measure().samples_us_size(), 25) << timed->DebugString();
  measure.mutable_measure()->set_repeats(2);
  measure.mutable_measure()->set_flush_l2(true); // a cache flush before each sample
  absl::StatusOr<pb::WorkerResponse> flushed = w.Call(measure);
  ASSERT_TRUE(flushed.ok()) << flushed.status();
  EXPECT_EQ(flushed->measure().samples_us_size(), 2) << flushed->DebugString();

  pb::WorkerRequest unload;
  unload.mutable_unload()->set_module_id("k");
  absl::StatusOr<pb::WorkerResponse> gone = w.Call(unload);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_error()) << gone->DebugString();
  absl::StatusOr<pb::WorkerResponse> after = w.Call(testing::RunAddOne("k", 10));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->error().code(), pb::WorkerError::CODE_INVALID_REQUEST);
  EXPECT_THAT(after->error().message(), HasSubstr("no module 'k' is loaded"));
}

TEST(KilnWorker, BadRequestsKeepTheWorkerAlive) {
  Worker w;
  struct Case {
    const char* name;
    pb::WorkerRequest request;
    pb::WorkerError::Code code;
    const char* message;
  };
  pb::WorkerRequest bad_image = testing::LoadRequest("x", "not an ELF file", "f");
  pb::WorkerRequest no_grid = testing::RunOneOutput("x");
  no_grid.mutable_run()->mutable_launch()->clear_grid();
  pb::WorkerRequest unload_unknown;
  unload_unknown.mutable_unload()->set_module_id("nope");
  const Case cases[] = {
      {"empty request", pb::WorkerRequest(), pb::WorkerError::CODE_INVALID_REQUEST, "no body"},
      {"unknown module", testing::RunOneOutput("nope"), pb::WorkerError::CODE_INVALID_REQUEST,
       "no module 'nope'"},
      {"not a shared object", bad_image, pb::WorkerError::CODE_LOAD_FAILED,
       "cannot load the kernel's shared object"},
      {"no grid", no_grid, pb::WorkerError::CODE_INVALID_REQUEST, "1 to 3 grid extents"},
      {"unload unknown", unload_unknown, pb::WorkerError::CODE_INVALID_REQUEST, "no module"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<pb::WorkerResponse> r = w.Call(c.request);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->error().code(), c.code) << r->DebugString();
    EXPECT_THAT(r->error().message(), HasSubstr(c.message));
  }
  // A frame that is not a WorkerRequest: answered, stream still in step.
  ASSERT_TRUE(WriteFrame(w.fd(), std::string("\xff\xff\xff", 3)).ok());
  pb::WorkerResponse garbage;
  ASSERT_TRUE(ReadMessage(w.fd(), &garbage).ok());
  EXPECT_EQ(garbage.error().code(), pb::WorkerError::CODE_INVALID_REQUEST);
  EXPECT_THAT(garbage.error().message(), HasSubstr("not a WorkerRequest"));

  absl::StatusOr<pb::WorkerResponse> still = w.Call(testing::DescribeRequest());
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_TRUE(still->has_describe());
}

TEST(KilnWorker, KernelErrorIsALaunchFailureThenExit) {
  Worker w;
  ASSERT_TRUE(w.Call(testing::LoadRequest("k", TestKernels(), "kiln_fail")).ok());
  absl::StatusOr<pb::WorkerResponse> r = w.Call(testing::RunOneOutput("k"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->error().code(), pb::WorkerError::CODE_LAUNCH_FAILED);
  EXPECT_THAT(r->error().message(), HasSubstr("barrier reached by 3 of 4 threads"));
  const std::string output = w.Output();
  EXPECT_TRUE(w.child().exited());
  EXPECT_EQ(w.child().exit_code(), kExitLaunchFailed);
  EXPECT_THAT(output, HasSubstr("exiting after a launch failure"));
}

TEST(KilnWorker, SegfaultKillsTheWorkerWithALastWord) {
  Worker w;
  ASSERT_TRUE(w.Call(testing::LoadRequest("oob", TestKernels(), "kiln_segv")).ok());
  absl::StatusOr<pb::WorkerResponse> r = w.Call(testing::RunOneOutput("oob"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << r.status(); // EOF
  const std::string output = w.Output();
  EXPECT_EQ(w.child().term_signal(), SIGSEGV) << w.child().DescribeExit();
  EXPECT_THAT(output, HasSubstr("kiln-worker[cpu]: fatal signal SIGSEGV"));
  EXPECT_THAT(output, HasSubstr("running module 'oob' (kiln_segv)"));
}

TEST(KilnWorker, OversizeFrameIsAnsweredThenTheWorkerExits) {
  Worker w;
  const std::string header = EncodeFrameHeader(0xfffffff0u);
  ASSERT_EQ(write(w.fd(), header.data(), header.size()), 4);
  pb::WorkerResponse r;
  ASSERT_TRUE(ReadMessage(w.fd(), &r).ok());
  EXPECT_EQ(r.error().code(), pb::WorkerError::CODE_INVALID_REQUEST);
  EXPECT_THAT(r.error().message(), HasSubstr("exceeds the limit"));
  w.Output();
  EXPECT_EQ(w.child().exit_code(), kExitBadStream);
}

TEST(KilnWorker, TruncatedFrameEndsTheWorker) {
  Worker w;
  const std::string partial = EncodeFrameHeader(100) + "abc";
  ASSERT_EQ(write(w.fd(), partial.data(), partial.size()), 7);
  shutdown(w.fd(), SHUT_WR);
  const std::string output = w.Output();
  EXPECT_EQ(w.child().exit_code(), kExitBadStream);
  EXPECT_THAT(output, HasSubstr("after 3 of 100 payload bytes"));
}

TEST(KilnWorker, EndOfStreamIsACleanExit) {
  Worker w;
  ASSERT_TRUE(w.Call(testing::DescribeRequest()).ok());
  shutdown(w.fd(), SHUT_WR);
  w.Output();
  EXPECT_EQ(w.child().exit_code(), kExitPeerClosed);
}

TEST(KilnWorker, ListPrintsTheCudaDeviceCount) {
  absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess({kWorker, "--list"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->success()) << r->DescribeTermination();
  EXPECT_THAT(r->stdout_data, ::testing::MatchesRegex("cuda [0-9]+\n"));
  if (access("/dev/nvidiactl", F_OK) != 0) {
    EXPECT_EQ(r->stdout_data, "cuda 0\n");
  }
}

TEST(KilnWorker, UsageErrors) {
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{kWorker},
        {kWorker, "--device", "cpu"},
        {kWorker, "--device", "tpu", "--fd", "0"},
        {kWorker, "--fd", "77", "--device", "cpu"},
        {kWorker, "--bogus"},
        {kWorker, "--device", "cpu:0", "--fd", "0"},
        {kWorker, "--device", "cpu:x", "--fd", "0"},
        {kWorker, "--device", "cpu", "--fd", "0", "--cpu-core", "-1"},
        {kWorker, "--compile", "--fd", "0", "--cpu-core", "0"}}) {
    SCOPED_TRACE(argv.back());
    absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(argv);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 2) << r->stderr_data;
  }
}

} // namespace
} // namespace kiln::measure
