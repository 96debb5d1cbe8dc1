#include "clients/cpp/remote/server_commands.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/json_util.h"
#include "kiln/v1/service.grpc.pb.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Options every server command shares, and the leftover arguments.
struct Common {
  std::string server;
  double timeout_s = 600;
  bool json = false;
  std::vector<std::string> rest;
};

bool TakeValue(const std::vector<std::string>& args, size_t& i, const std::string& name,
               std::string* value) {
  const std::string& a = args[i];
  if (a == name) {
    if (i + 1 >= args.size()) return false;
    *value = args[++i];
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    *value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

std::optional<Common> ParseCommon(const std::vector<std::string>& args, CommandIo io) {
  Common c;
  const char* env = std::getenv("KILN_SERVER");
  c.server = env != nullptr && *env != '\0' ? env : "127.0.0.1:7070";
  for (size_t i = 0; i < args.size(); ++i) {
    std::string v;
    if (TakeValue(args, i, "--server", &v)) {
      c.server = v;
    } else if (TakeValue(args, i, "--timeout", &v)) {
      if (!absl::SimpleAtod(v, &c.timeout_s) || c.timeout_s <= 0) {
        io.err << "kiln: --timeout expects a positive number of seconds\n";
        return std::nullopt;
      }
    } else if (args[i] == "--json") {
      c.json = true;
    } else {
      c.rest.push_back(args[i]);
    }
  }
  return c;
}

std::unique_ptr<kiln::v1::Kiln::Stub> Connect(const Common& c) {
  grpc::ChannelArguments ch;
  ch.SetMaxReceiveMessageSize(64 << 20);
  return kiln::v1::Kiln::NewStub(
      grpc::CreateCustomChannel(c.server, grpc::InsecureChannelCredentials(), ch));
}

void SetDeadline(grpc::ClientContext* ctx, const Common& c) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(c.timeout_s * 1000)));
}

// Prints a failed call; returns the exit code for it.
int Report(const grpc::Status& s, const Common& c, CommandIo io) {
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
      s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    io.err << "kiln: cannot get an answer from kilnd at " << c.server << ": " << s.error_message()
           << "\n";
    return kExitUnavailable;
  }
  io.err << s.error_message() << "\n";
  return kExitFailure;
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

const char* OutcomeName(kiln::v1::CacheOutcome o) {
  switch (o) {
  case kiln::v1::CACHE_OUTCOME_HIT:
    return "hit";
  case kiln::v1::CACHE_OUTCOME_MISS:
    return "miss";
  case kiln::v1::CACHE_OUTCOME_JOINED:
    return "joined";
  default:
    return "unknown";
  }
}

kiln::v1::BindingValue BindingOf(const std::string& text) {
  kiln::v1::BindingValue v;
  int64_t i;
  double d;
  if (absl::SimpleAtoi(text, &i)) {
    v.set_int_value(i);
  } else if (text == "True" || text == "true" || text == "False" || text == "false") {
    v.set_bool_value(text[0] == 'T' || text[0] == 't');
  } else if (absl::SimpleAtod(text, &d) && text.find_first_of("0123456789") != std::string::npos) {
    v.set_float_value(d);
  } else {
    v.set_string_value(text);
  }
  return v;
}

// Reads FILE into `program` (textual IR when it starts with `program @name`
// after comments, else TileLang source); false after printing why not.
bool ReadProgram(const std::string& file, kiln::v1::ProgramSource* program, const char* command,
                 CommandIo io) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    io.err << "kiln " << command << ": cannot read '" << file << "'\n";
    return false;
  }
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t first = source.find_first_not_of(" \t\r\n");
  const bool ir_text = first != std::string::npos && source.compare(first, 8, "program ") == 0;
  if (ir_text) {
    program->set_ir_text(std::move(source));
  } else {
    program->set_tilelang_source(std::move(source));
  }
  program->set_file_name(file);
  return true;
}

// NAME=VALUE into `map`; false for anything else.
bool TakeBinding(const std::string& text,
                 google::protobuf::Map<std::string, kiln::v1::BindingValue>* map) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  (*map)[text.substr(0, eq)] = BindingOf(text.substr(eq + 1));
  return true;
}

// --- compile -------------------------------------------------------------------

constexpr char kCompileUsage[] =
    "usage: kiln compile FILE [--bind NAME=VALUE]... [--entry NAME] [--target T]\n"
    "                    [--emit cubin|ptx|cuda|cpp|so] [-o OUT] [--toolchain nvrtc|nvcc|cc]\n"
    "                    [--async] [--json] [--server HOST:PORT] [--timeout SECONDS]\n";

int RunCompile(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Common> c = ParseCommon(args, io);
  if (!c) return kExitUsage;
  kiln::v1::CompileRequest req;
  req.set_target("cpu");
  std::string file, out_path, emit;
  const std::vector<std::string>& a = c->rest;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    if (a[i] == "-h" || a[i] == "--help") {
      io.out << kCompileUsage;
      return kExitOk;
    } else if (TakeValue(a, i, "--bind", &v)) {
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        io.err << "kiln compile: --bind expects NAME=VALUE\n" << kCompileUsage;
        return kExitUsage;
      }
      (*req.mutable_program()->mutable_bindings())[v.substr(0, eq)] = BindingOf(v.substr(eq + 1));
    } else if (TakeValue(a, i, "--entry", &v)) {
      req.mutable_program()->set_entry(v);
    } else if (TakeValue(a, i, "--target", &v)) {
      req.set_target(v);
    } else if (TakeValue(a, i, "--toolchain", &v)) {
      req.mutable_options()->set_toolchain(v);
    } else if (TakeValue(a, i, "--emit", &v)) {
      emit = v;
    } else if (TakeValue(a, i, "-o", &v)) {
      out_path = v;
    } else if (a[i] == "--async") {
      req.set_async(true);
    } else if (!a[i].empty() && a[i][0] == '-') {
      io.err << "kiln compile: unknown option '" << a[i] << "'\n" << kCompileUsage;
      return kExitUsage;
    } else if (file.empty()) {
      file = a[i];
    } else {
      io.err << "kiln compile: more than one input file\n" << kCompileUsage;
      return kExitUsage;
    }
  }
  if (file.empty()) {
    io.err << "kiln compile: no input file\n" << kCompileUsage;
    return kExitUsage;
  }
  const bool cuda = req.target().rfind("cuda", 0) == 0;
  if (emit.empty()) emit = cuda ? "cubin" : "so";
  kiln::v1::ArtifactKind want;
  if (emit == "cubin" || emit == "so") {
    want = emit == "cubin" ? kiln::v1::ARTIFACT_KIND_CUBIN : kiln::v1::ARTIFACT_KIND_SHARED_OBJECT;
    if ((emit == "cubin") != cuda) {
      io.err << "kiln compile: --emit " << emit << " does not fit target " << req.target() << "\n";
      return kExitUsage;
    }
  } else if (emit == "ptx") {
    want = kiln::v1::ARTIFACT_KIND_PTX;
    req.mutable_options()->set_emit_ptx(true);
  } else if (emit == "cuda" || emit == "cpp") {
    want = kiln::v1::ARTIFACT_KIND_SOURCE;
    req.mutable_options()->set_emit_source(true);
  } else {
    io.err << "kiln compile: --emit must be cubin, ptx, cuda, cpp or so\n";
    return kExitUsage;
  }
  if (!ReadProgram(file, req.mutable_program(), "compile", io)) return kExitFailure;

  auto stub = Connect(*c);
  const Clock::time_point t0 = Clock::now();
  grpc::ClientContext ctx;
  SetDeadline(&ctx, *c);
  kiln::v1::CompileResponse resp;
  grpc::Status s = stub->Compile(&ctx, req, &resp);
  const double request_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!s.ok()) return Report(s, *c, io);

  if (!out_path.empty() && !req.async()) {
    grpc::ClientContext get_ctx;
    SetDeadline(&get_ctx, *c);
    kiln::v1::GetArtifactRequest get;
    get.set_key(resp.artifact().key());
    get.add_kinds(want);
    auto reader = stub->GetArtifact(&get_ctx, get);
    std::string bytes;
    kiln::v1::ArtifactChunk chunk;
    while (reader->Read(&chunk)) bytes += chunk.data();
    grpc::Status gs = reader->Finish();
    if (!gs.ok()) return Report(gs, *c, io);
    std::ofstream out(out_path, std::ios::binary);
    out << bytes;
    if (!out) {
      io.err << "kiln compile: cannot write '" << out_path << "'\n";
      return kExitFailure;
    }
  }
  const double compile_ms = resp.artifact().compile_seconds() * 1000;
  if (c->json) {
    io.out << "{\"key\": " << Quote(resp.artifact().key())
           << ", \"cache\": " << Quote(OutcomeName(resp.outcome()))
           << ", \"compile_ms\": " << absl::StrFormat("%.3f", compile_ms)
           << ", \"server_ms\": " << absl::StrFormat("%.3f", resp.server_seconds() * 1000)
           << ", \"request_ms\": " << absl::StrFormat("%.3f", request_ms)
           << ", \"job_id\": " << Quote(resp.job_id()) << ", \"target\": " << Quote(req.target());
    if (!out_path.empty()) io.out << ", \"output\": " << Quote(out_path);
    io.out << ", \"artifact\": " << (resp.has_artifact() ? Json(resp.artifact()) : "null") << "}\n";
  } else if (req.async()) {
    io.out << "queued job " << resp.job_id() << " (" << OutcomeName(resp.outcome()) << ")\n";
  } else {
    io.out << resp.artifact().key() << " " << OutcomeName(resp.outcome())
           << absl::StrFormat(" (compile %.1f ms, request %.1f ms)", compile_ms, request_ms);
    if (!out_path.empty()) io.out << " -> " << out_path;
    io.out << "\n";
  }
  return kExitOk;
}

// --- bench ---------------------------------------------------------------------

constexpr char kBenchUsage[] =
    "usage: kiln bench FILE [--bind NAME=VALUE]... [--config NAME=VALUE]... [--target T]\n"
    "                  [--toolchain nvrtc|nvcc|cc] [--entry NAME]\n"
    "       kiln bench --key ARTIFACT_KEY [--config NAME=VALUE]...\n"
    "   options: [--device ID]... [--trials N] [--warmup N] [--flush-l2] [--cuda-graph]\n"
    "            [--history NAME] [--compare] [--baseline-runs N] [--max-slowdown F]\n"
    "            [--significance P] [--json] [--server HOST:PORT] [--timeout SECONDS]\n";

const char* VerdictName(kiln::v1::BenchmarkResponse::Verdict v) {
  switch (v) {
  case kiln::v1::BenchmarkResponse::VERDICT_PASS:
    return "pass";
  case kiln::v1::BenchmarkResponse::VERDICT_REGRESSION:
    return "regression";
  case kiln::v1::BenchmarkResponse::VERDICT_IMPROVEMENT:
    return "improvement";
  case kiln::v1::BenchmarkResponse::VERDICT_NO_BASELINE:
    return "no_baseline";
  default:
    return "none";
  }
}

int RunBench(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Common> c = ParseCommon(args, io);
  if (!c) return kExitUsage;
  kiln::v1::BenchmarkRequest req;
  kiln::v1::ProgramSource program;
  std::string file, key, target = "cpu";
  bool compare = false;
  const std::vector<std::string>& a = c->rest;
  auto positive_int = [&](const std::string& v, const char* flag, int* out) {
    if (absl::SimpleAtoi(v, out) && *out >= 0) return true;
    io.err << "kiln bench: " << flag << " expects a non-negative integer\n";
    return false;
  };
  auto fraction = [&](const std::string& v, const char* flag, double* out) {
    if (absl::SimpleAtod(v, out) && *out > 0) return true;
    io.err << "kiln bench: " << flag << " expects a positive number\n";
    return false;
  };
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    int n = 0;
    double f = 0;
    if (a[i] == "-h" || a[i] == "--help") {
      io.out << kBenchUsage;
      return kExitOk;
    } else if (TakeValue(a, i, "--bind", &v)) {
      if (!TakeBinding(v, program.mutable_bindings())) {
        io.err << "kiln bench: --bind expects NAME=VALUE\n" << kBenchUsage;
        return kExitUsage;
      }
    } else if (TakeValue(a, i, "--config", &v)) {
      if (!TakeBinding(v, req.mutable_config())) {
        io.err << "kiln bench: --config expects NAME=VALUE\n" << kBenchUsage;
        return kExitUsage;
      }
    } else if (TakeValue(a, i, "--entry", &v)) {
      program.set_entry(v);
    } else if (TakeValue(a, i, "--target", &v)) {
      target = v;
    } else if (TakeValue(a, i, "--toolchain", &v)) {
      req.mutable_options()->set_toolchain(v);
    } else if (TakeValue(a, i, "--key", &v)) {
      key = v;
    } else if (TakeValue(a, i, "--device", &v)) {
      req.mutable_devices()->add_device_ids(v);
    } else if (TakeValue(a, i, "--trials", &v)) {
      if (!positive_int(v, "--trials", &n)) return kExitUsage;
      req.set_trials(n);
    } else if (TakeValue(a, i, "--warmup", &v)) {
      if (!positive_int(v, "--warmup", &n)) return kExitUsage;
      req.set_warmup(n);
    } else if (a[i] == "--flush-l2") {
      req.set_flush_l2(true);
    } else if (a[i] == "--cuda-graph") {
      req.set_use_cuda_graph(true);
    } else if (TakeValue(a, i, "--history", &v)) {
      req.set_history_name(v);
    } else if (a[i] == "--compare") {
      compare = true;
    } else if (TakeValue(a, i, "--baseline-runs", &v)) {
      if (!positive_int(v, "--baseline-runs", &n)) return kExitUsage;
      req.mutable_regression()->set_baseline_runs(n);
      compare = true;
    } else if (TakeValue(a, i, "--max-slowdown", &v)) {
      if (!fraction(v, "--max-slowdown", &f)) return kExitUsage;
      req.mutable_regression()->set_max_slowdown(f);
      compare = true;
    } else if (TakeValue(a, i, "--significance", &v)) {
      if (!fraction(v, "--significance", &f) || f >= 1) return kExitUsage;
      req.mutable_regression()->set_significance(f);
      compare = true;
    } else if (!a[i].empty() && a[i][0] == '-') {
      io.err << "kiln bench: unknown option '" << a[i] << "'\n" << kBenchUsage;
      return kExitUsage;
    } else if (file.empty()) {
      file = a[i];
    } else {
      io.err << "kiln bench: more than one input file\n" << kBenchUsage;
      return kExitUsage;
    }
  }
  if (file.empty() == key.empty()) {
    io.err << "kiln bench: give either FILE or --key ARTIFACT_KEY\n" << kBenchUsage;
    return kExitUsage;
  }
  if (compare) req.mutable_regression();
  if (!key.empty()) {
    req.set_artifact_key(key);
  } else {
    if (!ReadProgram(file, &program, "bench", io)) return kExitFailure;
    *req.mutable_program() = std::move(program);
    req.set_target(target);
  }

  auto stub = Connect(*c);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, *c);
  kiln::v1::BenchmarkResponse resp;
  grpc::Status s = stub->Benchmark(&ctx, req, &resp);
  if (!s.ok()) return Report(s, *c, io);
  const bool regression = resp.verdict() == kiln::v1::BenchmarkResponse::VERDICT_REGRESSION;
  if (c->json) {
    const kiln::v1::LatencyDistribution& l = resp.latency();
    io.out << "{\"key\": " << Quote(resp.artifact_key())
           << ", \"device\": " << Quote(resp.device_id())
           << ", \"device_model\": " << Quote(resp.device_model())
           << absl::StrFormat(", \"median_us\": %.4f, \"mean_us\": %.4f, \"stddev_us\": %.4f, "
                              "\"min_us\": %.4f, \"max_us\": %.4f, \"p10_us\": %.4f, "
                              "\"p90_us\": %.4f, \"trials\": %d",
                              l.median_us(), l.mean_us(), l.stddev_us(), l.min_us(), l.max_us(),
                              l.p10_us(), l.p90_us(), l.samples_us_size())
           << ", \"verdict\": " << Quote(VerdictName(resp.verdict()));
    if (req.has_regression()) {
      io.out << absl::StrFormat(
          ", \"baseline_median_us\": %.4f, \"relative_change\": %.6f, \"p_value\": %.6g",
          resp.baseline_median_us(), resp.relative_change(), resp.p_value());
    }
    io.out << ", \"latency\": " << Json(l) << "}\n";
  } else {
    const kiln::v1::LatencyDistribution& l = resp.latency();
    io.out << absl::StrFormat("%s on %s (%s): median %.2f us, mean %.2f us +- %.2f, min %.2f, "
                              "p90 %.2f, %d trials\n",
                              resp.artifact_key().substr(0, 12), resp.device_id(),
                              resp.device_model(), l.median_us(), l.mean_us(), l.stddev_us(),
                              l.min_us(), l.p90_us(), l.samples_us_size());
    if (req.has_regression()) {
      if (resp.verdict() == kiln::v1::BenchmarkResponse::VERDICT_NO_BASELINE) {
        io.out << "verdict: no_baseline (no earlier run in this history)\n";
      } else {
        io.out << absl::StrFormat("verdict: %s (baseline median %.2f us, change %+.1f%%, p=%.3g)\n",
                                  VerdictName(resp.verdict()), resp.baseline_median_us(),
                                  resp.relative_change() * 100, resp.p_value());
      }
    }
  }
  return regression ? kExitRegression : kExitOk;
}

// --- tune ----------------------------------------------------------------------

const char* MeasurementStatusName(kiln::v1::Measurement::Status s) {
  switch (s) {
  case kiln::v1::Measurement::STATUS_OK:
    return "ok";
  case kiln::v1::Measurement::STATUS_COMPILE_ERROR:
    return "compile_error";
  case kiln::v1::Measurement::STATUS_LAUNCH_ERROR:
    return "launch_error";
  case kiln::v1::Measurement::STATUS_TIMEOUT:
    return "timeout";
  case kiln::v1::Measurement::STATUS_WRONG_RESULT:
    return "wrong_result";
  case kiln::v1::Measurement::STATUS_RESOURCE_LIMIT:
    return "resource_limit";
  default:
    return "unknown";
  }
}

std::string ConfigLine(const google::protobuf::Map<std::string, kiln::v1::BindingValue>& config) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : config) {
    sorted[k] = v.value_case() == kiln::v1::BindingValue::kIntValue ? std::to_string(v.int_value())
                                                                    : v.ShortDebugString();
  }
  std::string out;
  for (const auto& [k, v] : sorted) absl::StrAppend(&out, out.empty() ? "" : " ", k, "=", v);
  return out;
}

int RunTuneRemote(const TuneArgs& t, CommandIo io) {
  Common c;
  const char* env = std::getenv("KILN_SERVER");
  c.server = !t.server.empty()                  ? t.server
             : (env != nullptr && *env != '\0') ? env
                                                : "127.0.0.1:7070";
  c.timeout_s = t.timeout_s;
  c.json = t.json;
  kiln::v1::TuneRequest req;
  if (!ReadProgram(t.file, req.mutable_program(), "tune", io)) return kExitFailure;
  if (!t.entry.empty()) req.mutable_program()->set_entry(t.entry);
  for (const auto& [name, value] : t.bindings) {
    (*req.mutable_program()->mutable_bindings())[name] = BindingOf(value);
  }
  req.set_target(t.target.empty() ? "cpu" : t.target);
  if (t.strategy == "grid") {
    req.set_strategy(kiln::v1::TUNE_STRATEGY_EXHAUSTIVE);
    req.mutable_budget()->set_max_candidates(t.budget);
  } else if (t.strategy == "random") {
    req.set_strategy(kiln::v1::TUNE_STRATEGY_RANDOM);
    req.mutable_budget()->set_max_candidates(t.budget > 0 ? t.budget : t.top_k);
  } else if (t.strategy == "roller") {
    req.set_strategy(kiln::v1::TUNE_STRATEGY_ROLLER);
    req.mutable_budget()->set_max_candidates(t.top_k);
  } else {
    io.err << "kiln tune: --strategy must be roller, grid or random\n";
    return kExitUsage;
  }
  req.mutable_validation()->set_seed(t.seed);
  for (const auto& [name, values] : t.space) {
    kiln::v1::ValueList& list = (*req.mutable_space()->mutable_candidates())[name];
    for (int64_t v : values) list.add_values()->set_int_value(v);
  }
  for (const std::string& d : t.devices) req.mutable_devices()->add_device_ids(d);

  auto stub = Connect(c);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, c);
  auto reader = stub->Tune(&ctx, req);
  kiln::v1::TuneEvent event;
  std::optional<kiln::v1::TuneResult> result;
  std::string job_id;
  int last_done = -1;
  while (reader->Read(&event)) {
    job_id = event.job_id();
    if (event.has_result()) {
      result = event.result();
      continue;
    }
    const kiln::v1::TuneProgress& p = event.progress();
    const int done = p.candidates_measured() + p.candidates_failed();
    if (t.json || p.candidates_total() == 0 || done == last_done) continue;
    last_done = done;
    io.err << absl::StrFormat("[%6.1fs] %d/%d compiled, %d measured, %d failed",
                              p.elapsed_seconds(), p.candidates_compiled(), p.candidates_total(),
                              p.candidates_measured(), p.candidates_failed());
    if (p.has_best_so_far() && p.best_so_far().median_us() > 0) {
      io.err << absl::StrFormat(", best %.2f us (%s)", p.best_so_far().median_us(),
                                ConfigLine(p.best_so_far().config()));
    }
    io.err << "\n";
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Report(s, c, io);
  if (!result) {
    io.err << "kiln tune: the stream ended without a result\n";
    return kExitFailure;
  }
  if (t.json) {
    io.out << "{\"job_id\": " << Quote(job_id) << ", \"result\": " << Json(*result) << "}\n";
  } else {
    for (const kiln::v1::Measurement& m : result->measurements()) {
      io.out << absl::StrFormat(
          "%-14s %10.2f us  predicted %8.2f us  %s%s\n", MeasurementStatusName(m.status()),
          m.median_us(), m.predicted_us(), ConfigLine(m.config()),
          m.error().empty() ? "" : absl::StrCat("  (", m.error().substr(0, 120), ")"));
    }
    if (result->has_best()) {
      io.out << absl::StrFormat("best: %s  %.2f us on %s (%s), artifact %s\n",
                                ConfigLine(result->best().config()), result->best().median_us(),
                                result->best().device_id(), result->best().device_model(),
                                result->best().key().substr(0, 12));
    } else {
      io.out << "no valid config\n";
    }
  }
  return result->has_best() ? kExitOk : kExitFailure;
}

// --- devices -------------------------------------------------------------------

int RunDevices(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Common> c = ParseCommon(args, io);
  if (!c) return kExitUsage;
  if (!c->rest.empty()) {
    io.err << "usage: kiln devices [--json] [--server HOST:PORT]\n";
    return kExitUsage;
  }
  auto stub = Connect(*c);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, *c);
  kiln::v1::ListDevicesResponse resp;
  grpc::Status s = stub->ListDevices(&ctx, {}, &resp);
  if (!s.ok()) return Report(s, *c, io);
  if (c->json) {
    io.out << Json(resp) << "\n";
    return kExitOk;
  }
  io.out << absl::StrFormat("%-8s %-28s %-8s %5s %10s %s\n", "ID", "MODEL", "ARCH", "SMS", "MEMORY",
                            "WORKER");
  for (const kiln::v1::Device& d : resp.devices()) {
    io.out << absl::StrFormat("%-8s %-28s %-8s %5d %8.1fG %s%s\n", d.id(), d.model(), d.arch(),
                              d.sm_count(), d.memory_bytes() / 1e9, d.worker_state(),
                              d.busy() ? " (busy)" : "");
  }
  return kExitOk;
}

// --- jobs ----------------------------------------------------------------------

const char* StateName(kiln::v1::JobState s) {
  switch (s) {
  case kiln::v1::JOB_STATE_QUEUED:
    return "queued";
  case kiln::v1::JOB_STATE_RUNNING:
    return "running";
  case kiln::v1::JOB_STATE_SUCCEEDED:
    return "succeeded";
  case kiln::v1::JOB_STATE_FAILED:
    return "failed";
  case kiln::v1::JOB_STATE_CANCELLED:
    return "cancelled";
  default:
    return "unknown";
  }
}

const char* KindName(kiln::v1::JobKind k) {
  switch (k) {
  case kiln::v1::JOB_KIND_COMPILE:
    return "compile";
  case kiln::v1::JOB_KIND_TUNE:
    return "tune";
  case kiln::v1::JOB_KIND_BENCHMARK:
    return "benchmark";
  default:
    return "unknown";
  }
}

void PrintJob(const kiln::v1::Job& j, bool json, CommandIo io) {
  if (json) {
    io.out << Json(j) << "\n";
    return;
  }
  io.out << absl::StrFormat("%-18s %-9s %-9s %3.0f%% %.12s  %s\n", j.id(), KindName(j.kind()),
                            StateName(j.state()), j.progress() * 100, j.key(), j.message());
}

int RunJobs(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Common> c = ParseCommon(args, io);
  if (!c) return kExitUsage;
  std::string id;
  bool watch = false, cancel = false;
  int limit = 50;
  const std::vector<std::string>& a = c->rest;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    if (a[i] == "--watch") {
      watch = true;
    } else if (a[i] == "--cancel") {
      cancel = true;
    } else if (TakeValue(a, i, "--limit", &v)) {
      if (!absl::SimpleAtoi(v, &limit) || limit <= 0) {
        io.err << "kiln jobs: --limit expects a positive number\n";
        return kExitUsage;
      }
    } else if (!a[i].empty() && a[i][0] != '-' && id.empty()) {
      id = a[i];
    } else {
      io.err << "usage: kiln jobs [JOB_ID] [--watch] [--cancel] [--limit N] [--json]\n";
      return kExitUsage;
    }
  }
  if ((watch || cancel) && id.empty()) {
    io.err << "kiln jobs: --watch and --cancel need a JOB_ID\n";
    return kExitUsage;
  }
  auto stub = Connect(*c);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, *c);
  if (id.empty()) {
    kiln::v1::ListJobsRequest req;
    req.set_limit(limit);
    kiln::v1::ListJobsResponse resp;
    grpc::Status s = stub->ListJobs(&ctx, req, &resp);
    if (!s.ok()) return Report(s, *c, io);
    if (c->json) {
      io.out << Json(resp) << "\n";
      return kExitOk;
    }
    for (const kiln::v1::Job& j : resp.jobs()) PrintJob(j, false, io);
    return kExitOk;
  }
  if (cancel) {
    kiln::v1::CancelJobRequest req;
    req.set_job_id(id);
    kiln::v1::CancelJobResponse resp;
    grpc::Status s = stub->CancelJob(&ctx, req, &resp);
    if (!s.ok()) return Report(s, *c, io);
    PrintJob(resp.job(), c->json, io);
    return kExitOk;
  }
  if (watch) {
    kiln::v1::WatchJobRequest req;
    req.set_job_id(id);
    auto reader = stub->WatchJob(&ctx, req);
    kiln::v1::Job j;
    kiln::v1::JobState last = kiln::v1::JOB_STATE_UNSPECIFIED;
    while (reader->Read(&j)) {
      PrintJob(j, c->json, io);
      last = j.state();
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) return Report(s, *c, io);
    return last == kiln::v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitFailure;
  }
  kiln::v1::GetJobRequest req;
  req.set_job_id(id);
  kiln::v1::Job j;
  grpc::Status s = stub->GetJob(&ctx, req, &j);
  if (!s.ok()) return Report(s, *c, io);
  PrintJob(j, c->json, io);
  return kExitOk;
}

} // namespace

Command CompileCommand() {
  return {"compile", "compile a tile program on a kilnd (cache hit, miss or joined)", RunCompile};
}
Command BenchCommand() {
  return {"bench", "time a kernel on a kilnd's device (and compare with its history)", RunBench};
}
TuneRemoteFn TuneRemote() { return RunTuneRemote; }
Command DevicesCommand() { return {"devices", "list the devices a kilnd measures on", RunDevices}; }
Command JobsCommand() { return {"jobs", "list, show, watch or cancel a kilnd's jobs", RunJobs}; }

} // namespace kiln::cli
