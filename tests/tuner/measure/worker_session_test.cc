// The worker's request handling (tuner/measure/worker_session.h) in
// process, over a scripted backend: request ids are echoed, backend errors
// map to the documented WorkerError codes, a launch failure asks the loop to
// exit, and outputs, samples and validation come back in argument order.
#include <memory>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tuner/measure/tensor_data.h"
#include "tuner/measure/worker_session.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;

// Copies every input to the next output (+1 per element), or fails with
// `fail` when set.
class ScriptedBackend final : public DeviceBackend {
 public:
  absl::Status fail;
  absl::StatusOr<pb::DescribeDeviceResponse> Describe() override {
    if (!fail.ok()) return fail;
    pb::DescribeDeviceResponse r;
    r.mutable_device()->set_id("fake");
    return r;
  }
  absl::StatusOr<pb::LoadModuleResponse> Load(const pb::LoadModuleRequest& request) override {
    if (!fail.ok()) return fail;
    pb::LoadModuleResponse r;
    r.set_module_id(request.module_id());
    return r;
  }
  absl::Status Unload(const std::string&) override { return fail; }
  absl::StatusOr<double> Run(const pb::LaunchSpec& launch, std::vector<tools::HostParam>& params,
                             const std::vector<ArgOrigin>& /*origins*/) override {
    if (!fail.ok()) return fail;
    for (tools::HostParam& p : params) {
      p.after = p.before;
      if (!p.is_output) continue;
      for (int64_t i = 0; i < p.after.num_elements(); ++i) {
        SetElement(p.after, i, GetElement(p.before, i) + 1);
      }
    }
    return 12.5;
  }
  absl::StatusOr<std::vector<double>> Measure(const pb::LaunchSpec& launch,
                                              std::vector<tools::HostParam>& params,
                                              const std::vector<ArgOrigin>& /*origins*/,
                                              const TimingOptions& options) override {
    if (!fail.ok()) return fail;
    return std::vector<double>(static_cast<size_t>(options.repeats), 3.0);
  }
};

pb::WorkerRequest RunRequest() {
  pb::WorkerRequest r;
  r.set_request_id(9);
  pb::LaunchSpec* launch = r.mutable_run()->mutable_launch();
  launch->set_module_id("m");
  launch->add_grid(1);
  pb::TensorSpec* out = launch->add_args();
  out->set_name("C");
  out->set_dtype(pb::DTYPE_FLOAT32);
  out->add_shape(2);
  out->set_init(pb::TensorSpec::INIT_ARANGE);
  out->set_is_output(true);
  r.mutable_run()->set_return_outputs(true);
  return r;
}

TEST(WorkerSession, RunReturnsOutputsAndEchoesTheId) {
  WorkerSession session(std::make_unique<ScriptedBackend>());
  bool exit_after = true;
  pb::WorkerResponse r = session.Handle(RunRequest(), &exit_after);
  EXPECT_FALSE(exit_after);
  EXPECT_EQ(r.request_id(), 9u);
  ASSERT_TRUE(r.has_run()) << r.DebugString();
  EXPECT_EQ(r.run().elapsed_us(), 12.5);
  ASSERT_EQ(r.run().outputs_size(), 1);
  tools::NpyArray c{ir::DType::kFloat32, {2}, r.run().outputs(0)};
  EXPECT_EQ(GetElement(c, 0), 1.0);
  EXPECT_EQ(GetElement(c, 1), 2.0);
}

TEST(WorkerSession, RepeatedRequestsReuseGeneratedInputs) {
  WorkerSession session(std::make_unique<ScriptedBackend>());
  pb::WorkerRequest run = RunRequest();
  pb::TensorSpec* in = run.mutable_run()->mutable_launch()->add_args();
  in->set_name("A");
  in->set_dtype(pb::DTYPE_FLOAT32);
  in->add_shape(3);
  in->set_init(pb::TensorSpec::INIT_RANDOM_UNIFORM);
  in->set_seed(11);
  bool exit_after = false;
  pb::WorkerResponse first = session.Handle(run, &exit_after);
  pb::WorkerResponse second = session.Handle(run, &exit_after);
  ASSERT_TRUE(first.has_run() && second.has_run()) << first.DebugString();
  EXPECT_EQ(first.run().outputs(0), second.run().outputs(0));
  EXPECT_EQ(session.input_cache().entries(), 2u); // C (arange) and A
  EXPECT_EQ(session.input_cache().hits(), 2u);
}

TEST(WorkerSession, ReferencesAreKeptByIdBetweenValidations) {
  WorkerSession session(std::make_unique<ScriptedBackend>());
  bool exit_after = false;
  tools::NpyArray want{ir::DType::kFloat32, {2}, std::string(8, '\0')};
  SetElement(want, 0, 1);
  SetElement(want, 1, 2); // what the kernel gives
  pb::WorkerRequest first;
  *first.mutable_validate()->mutable_launch() = RunRequest().run().launch();
  first.mutable_validate()->set_reference_id("job-1/reference");
  first.mutable_validate()->add_reference_outputs(want.data);
  pb::WorkerResponse a = session.Handle(first, &exit_after);
  ASSERT_TRUE(a.has_validate()) << a.DebugString();
  EXPECT_TRUE(a.validate().ok());

  pb::WorkerRequest by_id = first;
  by_id.mutable_validate()->clear_reference_outputs();
  pb::WorkerResponse b = session.Handle(by_id, &exit_after);
  ASSERT_TRUE(b.has_validate()) << b.DebugString();
  EXPECT_TRUE(b.validate().ok());
  EXPECT_EQ(b.validate().mismatches(), 0);

  by_id.mutable_validate()->set_reference_id("job-2/reference");
  pb::WorkerResponse missing = session.Handle(by_id, &exit_after);
  EXPECT_EQ(missing.error().code(), pb::WorkerError::CODE_REFERENCE_MISSING);
  EXPECT_THAT(missing.error().message(), ::testing::HasSubstr("job-2/reference"));
  EXPECT_FALSE(exit_after);
}

TEST(WorkerSession, PreparedInputsAreMadeOnceBeforeTheFirstRun) {
  WorkerSession session(std::make_unique<ScriptedBackend>());
  pb::WorkerRequest run = RunRequest();
  pb::TensorSpec* in = run.mutable_run()->mutable_launch()->add_args();
  in->set_name("A");
  in->set_dtype(pb::DTYPE_FLOAT16);
  in->add_shape(1000);
  in->set_init(pb::TensorSpec::INIT_RANDOM_NORMAL);
  in->set_seed(3);
  pb::WorkerRequest prepare;
  prepare.set_request_id(4);
  *prepare.mutable_prepare_inputs()->mutable_launch() = run.run().launch();
  bool exit_after = true;
  pb::WorkerResponse prepared = session.Handle(prepare, &exit_after);
  EXPECT_FALSE(exit_after);
  EXPECT_FALSE(prepared.has_error()) << prepared.DebugString();
  EXPECT_EQ(prepared.request_id(), 4u);
  EXPECT_EQ(session.input_cache().entries(), 2u); // C (arange) and A
  EXPECT_EQ(session.input_cache().hits(), 0u);
  pb::WorkerResponse ran = session.Handle(run, &exit_after);
  ASSERT_TRUE(ran.has_run()) << ran.DebugString();
  EXPECT_EQ(session.input_cache().hits(), 2u); // nothing made again
  EXPECT_EQ(RequestKindName(prepare), std::string("prepare_inputs"));

  // A spec it cannot make is an error with the argument's name, and the
  // session goes on.
  prepare.mutable_prepare_inputs()->mutable_launch()->mutable_args(1)->set_init(
      pb::TensorSpec::INIT_BYTES);
  pb::WorkerResponse bad = session.Handle(prepare, &exit_after);
  EXPECT_EQ(bad.error().code(), pb::WorkerError::CODE_INVALID_REQUEST);
  EXPECT_THAT(bad.error().message(), ::testing::HasSubstr("'A'"));
  EXPECT_FALSE(exit_after);
}

TEST(WorkerSession, ARunKeepsItsOutputsAsAReference) {
  WorkerSession session(std::make_unique<ScriptedBackend>());
  bool exit_after = false;
  pb::WorkerRequest run = RunRequest();
  run.mutable_run()->set_return_outputs(false);
  run.mutable_run()->set_keep_outputs_as("job-7/reference");
  pb::WorkerResponse ran = session.Handle(run, &exit_after);
  ASSERT_TRUE(ran.has_run()) << ran.DebugString();
  EXPECT_EQ(ran.run().outputs_size(), 0); // kept, not returned

  pb::WorkerRequest validate;
  *validate.mutable_validate()->mutable_launch() = run.run().launch();
  validate.mutable_validate()->set_reference_id("job-7/reference");
  pb::WorkerResponse same = session.Handle(validate, &exit_after);
  ASSERT_TRUE(same.has_validate()) << same.DebugString();
  EXPECT_TRUE(same.validate().ok());

  // The kept bytes are the run's outputs: a launch whose outputs differ
  // (its C starts at ones, not at 0, 1) mismatches.
  validate.mutable_validate()->mutable_launch()->mutable_args(0)->set_init(
      pb::TensorSpec::INIT_ONES);
  pb::WorkerResponse other = session.Handle(validate, &exit_after);
  ASSERT_TRUE(other.has_validate()) << other.DebugString();
  EXPECT_FALSE(other.validate().ok());
  EXPECT_EQ(other.validate().mismatches(), 1); // C[0]: got 2, want 1; C[1] matches
}

TEST(WorkerSession, MeasureAndValidate) {
  WorkerSession session(std::make_unique<ScriptedBackend>());
  bool exit_after = false;
  pb::WorkerRequest measure;
  *measure.mutable_measure()->mutable_launch() = RunRequest().run().launch();
  measure.mutable_measure()->set_repeats(4);
  pb::WorkerResponse m = session.Handle(measure, &exit_after);
  ASSERT_TRUE(m.has_measure()) << m.DebugString();
  EXPECT_EQ(m.measure().samples_us_size(), 4);

  pb::WorkerRequest validate;
  *validate.mutable_validate()->mutable_launch() = RunRequest().run().launch();
  tools::NpyArray want{ir::DType::kFloat32, {2}, std::string(8, '\0')};
  SetElement(want, 0, 1);
  SetElement(want, 1, 3); // the kernel gives 2
  validate.mutable_validate()->add_reference_outputs(want.data);
  pb::WorkerResponse v = session.Handle(validate, &exit_after);
  ASSERT_TRUE(v.has_validate()) << v.DebugString();
  EXPECT_FALSE(v.validate().ok());
  EXPECT_EQ(v.validate().mismatches(), 1);
  EXPECT_EQ(v.validate().first_mismatch(), "C[1]: got 2 want 3");

  validate.mutable_validate()->add_reference_outputs(want.data); // one too many
  pb::WorkerResponse bad = session.Handle(validate, &exit_after);
  EXPECT_EQ(bad.error().code(), pb::WorkerError::CODE_INVALID_REQUEST);
  EXPECT_THAT(bad.error().message(), ::testing::HasSubstr("2 reference outputs for 1 outputs"));
}

TEST(WorkerSession, ErrorsMapToWorkerCodes) {
  struct Case {
    const char* name;
    absl::Status status;
    bool load;
    pb::WorkerError::Code code;
    bool exit_after;
  };
  const Case cases[] = {
      {"invalid argument", absl::InvalidArgumentError("bad"), false,
       pb::WorkerError::CODE_INVALID_REQUEST, false},
      {"not found", absl::NotFoundError("no module"), false, pb::WorkerError::CODE_INVALID_REQUEST,
       false},
      {"out of memory", absl::ResourceExhaustedError("oom"), false,
       pb::WorkerError::CODE_OUT_OF_MEMORY, false},
      {"no device", absl::UnavailableError("gone"), false, pb::WorkerError::CODE_NO_DEVICE, false},
      {"marked launch failure", MarkLaunchFailure(absl::InternalError("illegal address")), false,
       pb::WorkerError::CODE_LAUNCH_FAILED, true},
      {"unknown device error", absl::InternalError("?"), false, pb::WorkerError::CODE_LAUNCH_FAILED,
       true},
      {"bad image", absl::InvalidArgumentError("not an ELF"), true,
       pb::WorkerError::CODE_LOAD_FAILED, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto backend = std::make_unique<ScriptedBackend>();
    backend->fail = c.status;
    WorkerSession session(std::move(backend));
    pb::WorkerRequest request = RunRequest();
    if (c.load) {
      request.mutable_load()->set_module_id("m");
      request.mutable_load()->set_kernel_symbol("k");
    }
    bool exit_after = false;
    pb::WorkerResponse r = session.Handle(request, &exit_after);
    EXPECT_EQ(r.request_id(), 9u);
    EXPECT_EQ(r.error().code(), c.code);
    EXPECT_EQ(r.error().message(), c.status.message());
    EXPECT_EQ(r.response_case(), pb::WorkerResponse::RESPONSE_NOT_SET);
    EXPECT_EQ(exit_after, c.exit_after);
  }
}

TEST(WorkerSession, EmptyRequestIsInvalid) {
  WorkerSession session(std::make_unique<ScriptedBackend>());
  bool exit_after = false;
  pb::WorkerResponse r = session.Handle(pb::WorkerRequest(), &exit_after);
  EXPECT_EQ(r.error().code(), pb::WorkerError::CODE_INVALID_REQUEST);
  EXPECT_FALSE(exit_after);
}

} // namespace
} // namespace kiln::measure
