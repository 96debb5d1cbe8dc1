#include "tuner/measure/worker_session.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tuner/measure/output_compare.h"
#include "tuner/measure/tensor_data.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;

// With WorkerSessionOptions::trace, one stderr line per request with the
// wall time of its phases ("kiln-worker trace: validate 12 params=3.1ms
// run=40.2ms compare=8.0ms total=51.3ms"); kilnd logs the worker's stderr.
class Trace {
 public:
  Trace(bool on, const pb::WorkerRequest& request) : on_(on) {
    if (!on_) return;
    start_ = last_ = std::chrono::steady_clock::now();
    line_ =
        absl::StrCat("kiln-worker trace: ", RequestKindName(request), " ", request.request_id());
  }
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  ~Trace() {
    if (!on_) return;
    absl::StrAppendFormat(&line_, " total=%.1fms\n", MsSince(start_));
    std::fputs(line_.c_str(), stderr);
  }
  void Phase(const char* name) {
    if (!on_) return;
    absl::StrAppendFormat(&line_, " %s=%.1fms", name, MsSince(last_));
    last_ = std::chrono::steady_clock::now();
  }

 private:
  static double MsSince(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  }
  bool on_;
  std::chrono::steady_clock::time_point start_, last_;
  std::string line_;
};

pb::WorkerError::Code CodeFor(const absl::Status& status, pb::WorkerError::Code invalid) {
  if (IsLaunchFailure(status)) return pb::WorkerError::CODE_LAUNCH_FAILED;
  switch (status.code()) {
  case absl::StatusCode::kInvalidArgument:
  case absl::StatusCode::kNotFound:
  case absl::StatusCode::kFailedPrecondition:
  case absl::StatusCode::kOutOfRange:
  case absl::StatusCode::kUnimplemented:
    return invalid;
  case absl::StatusCode::kResourceExhausted:
    return pb::WorkerError::CODE_OUT_OF_MEMORY;
  case absl::StatusCode::kUnavailable:
    return pb::WorkerError::CODE_NO_DEVICE;
  case absl::StatusCode::kDeadlineExceeded:
    return pb::WorkerError::CODE_TIMEOUT;
  default:
    // Anything else from a device is not trusted to leave it usable.
    return pb::WorkerError::CODE_LAUNCH_FAILED;
  }
}

void SetError(pb::WorkerResponse* response, const absl::Status& status,
              pb::WorkerError::Code invalid = pb::WorkerError::CODE_INVALID_REQUEST) {
  response->clear_response();
  response->mutable_error()->set_code(CodeFor(status, invalid));
  response->mutable_error()->set_message(absl::StrCat(status.message()));
}

// The outputs of `params`, in argument order.
std::vector<const tools::HostParam*> Outputs(const std::vector<tools::HostParam>& params) {
  std::vector<const tools::HostParam*> out;
  for (const tools::HostParam& p : params) {
    if (p.is_output) out.push_back(&p);
  }
  return out;
}

} // namespace

const char* RequestKindName(const pb::WorkerRequest& request) {
  switch (request.request_case()) {
  case pb::WorkerRequest::kDescribe:
    return "describe";
  case pb::WorkerRequest::kLoad:
    return "load";
  case pb::WorkerRequest::kRun:
    return "run";
  case pb::WorkerRequest::kMeasure:
    return "measure";
  case pb::WorkerRequest::kValidate:
    return "validate";
  case pb::WorkerRequest::kUnload:
    return "unload";
  case pb::WorkerRequest::kPrepareInputs:
    return "prepare_inputs";
  case pb::WorkerRequest::REQUEST_NOT_SET:
    break;
  }
  return "empty";
}

WorkerSession::WorkerSession(std::unique_ptr<DeviceBackend> backend, WorkerSessionOptions options)
    : backend_(std::move(backend)), options_(options), inputs_(options.input_cache_bytes),
      references_(options.reference_cache_bytes) {}

pb::WorkerResponse WorkerSession::Handle(const pb::WorkerRequest& request, bool* exit_after) {
  *exit_after = false;
  pb::WorkerResponse response;
  response.set_request_id(request.request_id());
  absl::Status status;
  LazyParams lazy;
  lazy.zeros = backend_->ZeroesOnDevice();
  lazy.resident = [this](const std::string& key) { return backend_->ResidentKey(key); };
  auto params_of = [&](const pb::LaunchSpec& launch) {
    return MakeHostParams(launch.args(), options_.max_argument_bytes, &inputs_, lazy);
  };
  auto origins_of = [](const pb::LaunchSpec& launch) {
    std::vector<ArgOrigin> origins(static_cast<size_t>(launch.args_size()));
    for (int i = 0; i < launch.args_size(); ++i) {
      origins[static_cast<size_t>(i)].key =
          InputCache::KeyFor(launch.args(i), static_cast<size_t>(i));
      origins[static_cast<size_t>(i)].zeros = IsZeroInit(launch.args(i));
    }
    return origins;
  };
  Trace trace(options_.trace, request);

  switch (request.request_case()) {
  case pb::WorkerRequest::kDescribe: {
    absl::StatusOr<pb::DescribeDeviceResponse> out = backend_->Describe();
    if (out.ok()) {
      *response.mutable_describe() = *std::move(out);
    } else {
      status = out.status();
    }
    break;
  }
  case pb::WorkerRequest::kLoad: {
    absl::StatusOr<pb::LoadModuleResponse> out = backend_->Load(request.load());
    if (out.ok()) {
      *response.mutable_load() = *std::move(out);
    } else {
      SetError(&response, out.status(), pb::WorkerError::CODE_LOAD_FAILED);
      *exit_after = IsLaunchFailure(out.status());
      return response;
    }
    break;
  }
  case pb::WorkerRequest::kUnload:
    status = backend_->Unload(request.unload().module_id());
    break;
  case pb::WorkerRequest::kPrepareInputs: {
    // Making the params fills the input cache, and the backend may keep a
    // device copy; the host params are then dropped (a later request takes
    // the bytes from the cache, or none where the device holds them).
    const pb::LaunchSpec& launch = request.prepare_inputs().launch();
    LazyParams moved = lazy;
    moved.leave_cache_to_caller = true;
    absl::StatusOr<std::vector<tools::HostParam>> params =
        MakeHostParams(launch.args(), options_.max_argument_bytes, &inputs_, moved);
    trace.Phase("params");
    if (!params.ok()) {
      status = params.status();
      break;
    }
    const std::vector<ArgOrigin> origins = origins_of(launch);
    status = backend_->Preload(*params, origins); // a device copy, where kept
    trace.Phase("upload");
    // What the device did not keep goes to the host cache, moved, not copied.
    for (size_t i = 0; i < params->size(); ++i) {
      std::string& bytes = (*params)[i].before.data;
      if (origins[i].key.empty() || origins[i].zeros || bytes.empty() ||
          backend_->ResidentKey(origins[i].key) || inputs_.Find(origins[i].key) != nullptr) {
        continue;
      }
      inputs_.Insert(origins[i].key, std::move(bytes));
    }
    break;
  }
  case pb::WorkerRequest::kRun: {
    const pb::RunRequest& run = request.run();
    absl::StatusOr<std::vector<tools::HostParam>> params = params_of(run.launch());
    if (!params.ok()) {
      status = params.status();
      break;
    }
    trace.Phase("params");
    absl::StatusOr<double> us = backend_->Run(run.launch(), *params, origins_of(run.launch()));
    trace.Phase("run");
    if (!us.ok()) {
      status = us.status();
      break;
    }
    pb::RunResponse* out = response.mutable_run();
    out->set_elapsed_us(*us);
    if (run.return_outputs()) {
      for (const tools::HostParam* p : Outputs(*params)) out->add_outputs(p->after.data);
    }
    if (!run.keep_outputs_as().empty()) {
      // Kept without a copy unless they were also returned.
      std::vector<std::string> kept;
      for (tools::HostParam& p : *params) {
        if (!p.is_output) continue;
        kept.push_back(run.return_outputs() ? p.after.data : std::move(p.after.data));
      }
      KeepReferences(run.keep_outputs_as(), std::move(kept));
    }
    break;
  }
  case pb::WorkerRequest::kMeasure: {
    const pb::MeasureRequest& measure = request.measure();
    TimingOptions timing;
    timing.warmup = measure.warmup();
    timing.repeats = measure.repeats() > 0 ? measure.repeats() : 10;
    timing.flush_l2 = measure.flush_l2();
    timing.use_cuda_graph = measure.use_cuda_graph();
    timing.copy_out = false; // samples only
    if (timing.warmup < 0) {
      status = absl::InvalidArgumentError("measure: negative warmup");
      break;
    }
    absl::StatusOr<std::vector<tools::HostParam>> params = params_of(measure.launch());
    if (!params.ok()) {
      status = params.status();
      break;
    }
    trace.Phase("params");
    absl::StatusOr<std::vector<double>> samples =
        backend_->Measure(measure.launch(), *params, origins_of(measure.launch()), timing);
    trace.Phase("measure");
    if (!samples.ok()) {
      status = samples.status();
      break;
    }
    for (double us : *samples) response.mutable_measure()->add_samples_us(us);
    break;
  }
  case pb::WorkerRequest::kValidate: {
    const pb::ValidateRequest& validate = request.validate();
    if (validate.rtol() < 0 || validate.atol() < 0) {
      status = absl::InvalidArgumentError("validate: negative rtol or atol");
      break;
    }
    absl::StatusOr<std::vector<tools::HostParam>> params = params_of(validate.launch());
    if (!params.ok()) {
      status = params.status();
      break;
    }
    trace.Phase("params");
    const std::vector<const tools::HostParam*> outputs = Outputs(*params);
    std::vector<const std::string*> references;
    for (const std::string& r : validate.reference_outputs()) references.push_back(&r);
    const std::string& id = validate.reference_id();
    if (!id.empty() && references.empty()) {
      references = KeptReferences(id);
      if (references.empty()) {
        response.mutable_error()->set_code(pb::WorkerError::CODE_REFERENCE_MISSING);
        response.mutable_error()->set_message(
            absl::StrCat("validate: no reference outputs are kept under '", id, "'"));
        return response;
      }
    } else if (!id.empty()) {
      KeepReferences(id,
                     {validate.reference_outputs().begin(), validate.reference_outputs().end()});
      trace.Phase("keep_reference"); // the trace shows which validations carried one
    }
    if (outputs.size() != references.size()) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "validate: ", references.size(), " reference outputs for ", outputs.size(), " outputs"));
      break;
    }
    absl::StatusOr<double> us =
        backend_->Run(validate.launch(), *params, origins_of(validate.launch()));
    if (!us.ok()) {
      status = us.status();
      break;
    }
    trace.Phase("run");
    pb::ValidateResponse out;
    out.set_ok(true);
    for (size_t i = 0; i < outputs.size() && status.ok(); ++i) {
      status = CompareOutput(outputs[i]->name, outputs[i]->after, *references[i], validate.rtol(),
                             validate.atol(), &out, options_.compare_threads);
    }
    trace.Phase("compare");
    if (status.ok()) *response.mutable_validate() = std::move(out);
    break;
  }
  case pb::WorkerRequest::REQUEST_NOT_SET:
    status = absl::InvalidArgumentError("the request has no body");
    break;
  }
  if (!status.ok()) {
    SetError(&response, status);
    *exit_after = response.error().code() == pb::WorkerError::CODE_LAUNCH_FAILED;
  }
  return response;
}

void WorkerSession::KeepReferences(const std::string& id, std::vector<std::string> outputs) {
  const size_t n = outputs.size();
  for (size_t i = 0; i < n; ++i)
    references_.Insert(absl::StrCat(id, "#", i), std::move(outputs[i]));
  references_.Insert(absl::StrCat(id, "#n"), absl::StrCat(n));
}

std::vector<const std::string*> WorkerSession::KeptReferences(const std::string& id) {
  const std::string* count = references_.Find(absl::StrCat(id, "#n"));
  int n = 0;
  if (count == nullptr || !absl::SimpleAtoi(*count, &n) || n < 0) return {};
  std::vector<const std::string*> out;
  for (int i = 0; i < n; ++i) {
    const std::string* part = references_.Find(absl::StrCat(id, "#", i));
    if (part == nullptr) return {}; // partly evicted: ask for all of them again
    out.push_back(part);
  }
  return out;
}

int WorkerSession::Serve(int fd) {
  FrameIoOptions io;
  io.max_frame_bytes = options_.max_frame_bytes;
  for (;;) {
    absl::StatusOr<std::string> frame = ReadFrame(fd, io);
    if (absl::IsOutOfRange(frame.status())) return kExitPeerClosed;
    if (!frame.ok()) {
      const absl::Status& read = frame.status();
      std::fprintf(stderr, "kiln-worker: %s\n", absl::StrCat(read.message()).c_str());
      if (absl::IsResourceExhausted(read)) {
        // Say why before going: the next frame cannot be found.
        pb::WorkerResponse response;
        SetError(&response, absl::InvalidArgumentError(read.message()));
        (void)WriteMessage(fd, response, io);
      }
      return absl::IsInternal(read) || absl::IsUnavailable(read) ? kExitIoError : kExitBadStream;
    }
    bool exit_after = false;
    pb::WorkerResponse response;
    pb::WorkerRequest request;
    if (request.ParseFromString(*frame)) {
      response = Handle(request, &exit_after);
    } else {
      // The frame was read whole, so the stream is still in step.
      SetError(&response, absl::InvalidArgumentError(absl::StrCat(
                              "a frame of ", frame->size(), " bytes is not a WorkerRequest")));
    }
    absl::Status sent = WriteMessage(fd, response, io);
    if (!sent.ok()) {
      std::fprintf(stderr, "kiln-worker: cannot answer: %s\n",
                   absl::StrCat(sent.message()).c_str());
      return kExitIoError;
    }
    if (exit_after) {
      std::fprintf(stderr, "kiln-worker: exiting after a launch failure: %s\n",
                   response.error().message().c_str());
      return kExitLaunchFailed;
    }
  }
}

} // namespace kiln::measure
