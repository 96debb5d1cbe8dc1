#include "clients/cpp/remote/server_commands.h"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cpp/bind_line.h"
#include "clients/cpp/client/client.h"
#include "clients/cpp/json_output.h"
#include "clients/cpp/remote/connection_flags.h"
#include "clients/cpp/remote/tune_progress.h"
#include "clients/cpp/remote/tune_report.h"
#include "clients/cpp/suggest.h"
#include "util/file_path.h"
#include "util/source_snippet.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Reads FILE into `program` (client::LoadProgram), keeping the bindings,
// entry and dynamic parameters already set; false after printing why not.
bool ReadProgram(const std::string& file, kiln::v1::ProgramSource* program, const char* command,
                 CommandIo io) {
  absl::StatusOr<kiln::v1::ProgramSource> loaded = client::LoadProgram(file);
  if (!loaded.ok()) {
    io.err << "kiln " << command << ": " << loaded.status().message() << "\n";
    return false;
  }
  kiln::v1::ProgramSource merged = *std::move(loaded);
  merged.mutable_bindings()->insert(program->bindings().begin(), program->bindings().end());
  if (!program->entry().empty()) merged.set_entry(program->entry());
  *merged.mutable_dynamic_params() = program->dynamic_params();
  *program = std::move(merged);
  return true;
}

// NAME=VALUE into `map`; false for anything else.
bool TakeBinding(const std::string& text,
                 google::protobuf::Map<std::string, kiln::v1::BindingValue>* map) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  (*map)[text.substr(0, eq)] = client::ParseBinding(text.substr(eq + 1));
  return true;
}

// Adds the entries of FILE's `# kiln: test-bind` line to `program`'s
// bindings, keeping those already there (--bind wins); false after printing
// why not.
bool AddTestBindings(kiln::v1::ProgramSource* program, const char* command, CommandIo io) {
  const std::string& text = program->source_case() == kiln::v1::ProgramSource::kIrText
                                ? program->ir_text()
                                : program->tilelang_source();
  absl::StatusOr<BindLineEntries> line = ReadBindLine(text, program->file_name(), "test-bind");
  if (!line.ok()) {
    io.err << "kiln " << command << ": --test-bind: " << line.status().message() << "\n";
    return false;
  }
  for (const auto& [name, value] : *line) {
    program->mutable_bindings()->insert({name, client::ParseBinding(value)});
  }
  return true;
}

// The shape symbols an artifact left dynamic (launch metadata), as a note
// for stderr: a symbol the user forgot to bind compiles, but into a kernel
// that is not specialized to one size.
std::string DynamicSymbolsNote(const google::protobuf::RepeatedPtrField<std::string>& symbols) {
  std::string names;
  for (const std::string& s : symbols)
    absl::StrAppend(&names, names.empty() ? "" : ", ", "'", s, "'");
  const bool one = symbols.size() == 1;
  return absl::StrCat("kiln compile: note: shape symbol", one ? " " : "s ", names,
                      one ? " was" : " were", " left unbound and ", one ? "is" : "are",
                      " dynamic: the kernel takes ", one ? "its value" : "their values",
                      " at launch (--bind ", one ? symbols[0] : "NAME", "=VALUE specializes ",
                      one ? "it" : "them", ")");
}

// --- compile -------------------------------------------------------------------

constexpr char kCompileUsage[] =
    "usage: kiln compile FILE [--bind NAME=VALUE]... [--config NAME=VALUE]... [--entry NAME]\n"
    "                    [--dynamic NAME]... [--target T] [--emit cubin|ptx|cuda|cpp|so|ir]\n"
    "                    [-o OUT]\n"
    "                    [--launch-json FILE]\n"
    "                    [--toolchain nvrtc|nvcc|cc] [--pass NAME=VALUE]...\n"
    "                    [--use-best DEVICE_MODEL] [--test-bind] [--async] [--json]\n";

const std::vector<std::string>& CompileFlags() {
  static const std::vector<std::string> kFlags = WithConnectionFlags(
      {"--bind", "--config", "--entry", "--dynamic", "--target", "--emit", "-o", "--launch-json",
       "--toolchain", "--pass", "--use-best", "--test-bind", "--async", "--help"});
  return kFlags;
}

int RunCompile(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Connection> c = ParseConnection(args, io, "compile");
  if (!c) return kExitUsage;
  kiln::v1::CompileRequest req;
  req.set_target("cpu");
  std::string file, out_path, emit;
  std::string launch_json_path; // --launch-json: the artifact's launch metadata
  bool test_bind = false;
  const std::vector<std::string>& a = c->rest;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    if (a[i] == "-h" || a[i] == "--help") {
      io.out << kCompileUsage << kConnectionFlagsHelp;
      return kExitOk;
    } else if (TakeValue(a, i, "--bind", &v)) {
      if (!TakeBinding(v, req.mutable_program()->mutable_bindings())) {
        io.err << "kiln compile: --bind expects NAME=VALUE\n" << kCompileUsage;
        return kExitUsage;
      }
    } else if (TakeValue(a, i, "--config", &v)) {
      if (!TakeBinding(v, req.mutable_config())) {
        io.err << "kiln compile: --config expects NAME=VALUE\n" << kCompileUsage;
        return kExitUsage;
      }
    } else if (TakeValue(a, i, "--entry", &v)) {
      req.mutable_program()->set_entry(v);
    } else if (TakeValue(a, i, "--dynamic", &v)) {
      req.mutable_program()->add_dynamic_params(v);
    } else if (TakeValue(a, i, "--target", &v)) {
      req.set_target(v);
    } else if (TakeValue(a, i, "--toolchain", &v)) {
      req.mutable_options()->set_toolchain(v);
    } else if (TakeValue(a, i, "--pass", &v)) {
      req.mutable_options()->add_pass_options(v);
    } else if (TakeValue(a, i, "--use-best", &v)) {
      req.set_use_best_for_device(v);
    } else if (TakeValue(a, i, "--emit", &v)) {
      emit = v;
    } else if (TakeValue(a, i, "-o", &v)) {
      out_path = util::ExpandHome(v); // `-o=~/x`: no shell expands that ~
    } else if (TakeValue(a, i, "--launch-json", &v)) {
      launch_json_path = util::ExpandHome(v);
    } else if (a[i] == "--async") {
      req.set_async(true);
    } else if (a[i] == "--test-bind") {
      test_bind = true;
    } else if (!a[i].empty() && a[i][0] == '-') {
      io.err << "kiln compile: " << UnknownFlag(a[i], CompileFlags()) << "\n" << kCompileUsage;
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
    if (!cuda) {
      io.err << "kiln compile: --emit ptx needs a cuda target\n";
      return kExitUsage;
    }
    want = kiln::v1::ARTIFACT_KIND_PTX;
    req.mutable_options()->set_emit_ptx(true);
  } else if (emit == "cuda" || emit == "cpp") {
    want = kiln::v1::ARTIFACT_KIND_SOURCE;
    req.mutable_options()->set_emit_source(true);
  } else if (emit == "ir") {
    want = kiln::v1::ARTIFACT_KIND_IR_TEXT;
  } else {
    io.err << "kiln compile: --emit must be cubin, ptx, cuda, cpp, so or ir\n";
    return kExitUsage;
  }
  if (req.async() && (!out_path.empty() || !launch_json_path.empty())) {
    io.err << "kiln compile: " << (out_path.empty() ? "--launch-json" : "-o")
           << " needs the artifact, which --async does not wait for\n";
    return kExitUsage;
  }
  // An output that cannot be written fails before the compile, not after it.
  for (const std::string* path : {&out_path, &launch_json_path}) {
    if (path->empty()) continue;
    if (absl::Status s = util::PrepareOutputFile(*path); !s.ok()) {
      io.err << "kiln compile: " << s.message() << "\n";
      return kExitFailure;
    }
  }
  if (!ReadProgram(file, req.mutable_program(), "compile", io)) return kExitFailure;
  if (test_bind && !AddTestBindings(req.mutable_program(), "compile", io)) return kExitUsage;

  std::unique_ptr<client::Client> client = Connect(*c, io, "compile");
  if (!client) return kExitUsage;
  const Clock::time_point t0 = Clock::now();
  absl::StatusOr<client::CompileResult> r = client->Compile(req);
  const double request_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!r.ok()) {
    // A located error in the program: quote the line from the file sent.
    absl::Status s = r.status();
    if (s.code() == absl::StatusCode::kInvalidArgument && !c->json) {
      s = absl::Status(s.code(), util::WithSourceSnippets(absl::StrCat(s.message()),
                                                          req.program().file_name(),
                                                          req.program().tilelang_source()));
    }
    return ReportFailure(s, *c, io);
  }
  for (const kiln::v1::Diagnostic& d : r->diagnostics) {
    io.err << (d.rendered().empty() ? d.message() : d.rendered()) << "\n";
  }
  const auto& dynamic_symbols = r->metadata.launch().symbols();
  if (!dynamic_symbols.empty()) io.err << DynamicSymbolsNote(dynamic_symbols) << "\n";

  if (!out_path.empty()) {
    absl::StatusOr<std::string> bytes = client->FetchFile(r->key, want);
    if (!bytes.ok()) return ReportFailure(bytes.status(), *c, io);
    if (absl::Status w = util::WriteFileAtomically(out_path, *bytes); !w.ok()) {
      io.err << "kiln compile: " << w.message() << "\n";
      return kExitFailure;
    }
  }
  if (!launch_json_path.empty()) {
    if (absl::Status w =
            util::WriteFileAtomically(launch_json_path, Json(r->metadata.launch()) + "\n");
        !w.ok()) {
      io.err << "kiln compile: " << w.message() << "\n";
      return kExitFailure;
    }
  }
  if (c->json) {
    io.out << "{\"key\": " << Quote(r->key) << ", \"cache\": " << Quote(CacheStateName(r->cache))
           << ", \"compile_ms\": " << absl::StrFormat("%.3f", r->compile_ms)
           << ", \"server_ms\": " << absl::StrFormat("%.3f", r->server_ms)
           << ", \"request_ms\": " << absl::StrFormat("%.3f", request_ms)
           << ", \"job_id\": " << Quote(r->job_id) << ", \"target\": " << Quote(req.target());
    if (!out_path.empty()) io.out << ", \"output\": " << Quote(out_path);
    io.out << ", \"dynamic_symbols\": [";
    for (int i = 0; i < dynamic_symbols.size(); ++i) {
      io.out << (i == 0 ? "" : ", ") << Quote(dynamic_symbols[i]);
    }
    io.out << "]";
    io.out << ", \"artifact\": " << (r->key.empty() ? "null" : Json(r->metadata)) << "}\n";
  } else if (req.async()) {
    io.out << "queued job " << r->job_id << " (" << CacheStateName(r->cache) << ")\n";
  } else {
    io.out << r->key << " " << CacheStateName(r->cache)
           << absl::StrFormat(" (compile %.1f ms, request %.1f ms)", r->compile_ms, request_ms);
    if (!out_path.empty()) io.out << " -> " << out_path;
    io.out << "\n";
  }
  return kExitOk;
}

// --- best ----------------------------------------------------------------------

constexpr char kBestUsage[] =
    "usage: kiln best FILE [--bind NAME=VALUE]... [--entry NAME] [--target T]\n"
    "                 [--pass NAME=VALUE]... [--device-model MODEL] [--json]\n";

int RunBest(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Connection> c = ParseConnection(args, io, "best");
  if (!c) return kExitUsage;
  kiln::v1::LookupBestRequest req;
  req.set_target("cpu");
  std::string file;
  const std::vector<std::string>& a = c->rest;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    if (a[i] == "-h" || a[i] == "--help") {
      io.out << kBestUsage << kConnectionFlagsHelp;
      return kExitOk;
    } else if (TakeValue(a, i, "--bind", &v)) {
      if (!TakeBinding(v, req.mutable_program()->mutable_bindings())) {
        io.err << "kiln best: --bind expects NAME=VALUE\n" << kBestUsage;
        return kExitUsage;
      }
    } else if (TakeValue(a, i, "--entry", &v)) {
      req.mutable_program()->set_entry(v);
    } else if (TakeValue(a, i, "--target", &v)) {
      req.set_target(v);
    } else if (TakeValue(a, i, "--device-model", &v)) {
      req.set_device_model(v);
    } else if (TakeValue(a, i, "--pass", &v)) {
      req.mutable_options()->add_pass_options(v);
    } else if (!a[i].empty() && a[i][0] != '-' && file.empty()) {
      file = a[i];
    } else if (!a[i].empty() && a[i][0] == '-') {
      io.err << "kiln best: "
             << UnknownFlag(a[i], WithConnectionFlags({"--bind", "--entry", "--target",
                                                       "--device-model", "--pass", "--help"}))
             << "\n"
             << kBestUsage;
      return kExitUsage;
    } else {
      io.err << "kiln best: unexpected argument '" << a[i] << "'\n" << kBestUsage;
      return kExitUsage;
    }
  }
  if (file.empty()) {
    io.err << "kiln best: no input file\n" << kBestUsage;
    return kExitUsage;
  }
  if (!ReadProgram(file, req.mutable_program(), "best", io)) return kExitFailure;
  std::unique_ptr<client::Client> client = Connect(*c, io, "best");
  if (!client) return kExitUsage;
  absl::StatusOr<kiln::v1::LookupBestResponse> r = client->LookupBest(req);
  if (!r.ok()) return ReportFailure(r.status(), *c, io);
  if (c->json) {
    io.out << Json(*r) << "\n";
  } else if (r->found()) {
    const kiln::v1::Measurement& m = r->measurement();
    io.out << ConfigLine(r->config())
           << absl::StrFormat("  %.2f us on %s, artifact %s\n", m.median_us(),
                              m.device_model().empty() ? std::string("?") : m.device_model(),
                              m.key().substr(0, 12));
  } else {
    io.err << "kiln best: no best config stored for this program, shape and target"
           << (req.device_model().empty() ? "" : " on " + req.device_model())
           << " (run kiln tune)\n";
  }
  return r->found() ? kExitOk : kExitFailure;
}

// --- bench ---------------------------------------------------------------------

constexpr char kBenchUsage[] =
    "usage: kiln bench FILE [--bind NAME=VALUE]... [--config NAME=VALUE]... [--target T]\n"
    "                  [--toolchain nvrtc|nvcc|cc] [--pass NAME=VALUE]... [--entry NAME]\n"
    "       kiln bench --key ARTIFACT_KEY [--config NAME=VALUE]...\n"
    "   options: [--device ID]... [--trials N] [--warmup N] [--flush-l2] [--cuda-graph]\n"
    "            [--history NAME] [--compare] [--baseline-runs N] [--max-slowdown F]\n"
    "            [--significance P] [--label L] [--json]\n";

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
  std::optional<Connection> c = ParseConnection(args, io, "bench");
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
      io.out << kBenchUsage << kConnectionFlagsHelp;
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
    } else if (TakeValue(a, i, "--pass", &v)) {
      req.mutable_options()->add_pass_options(v);
    } else if (TakeValue(a, i, "--label", &v)) {
      req.set_label(v);
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
      io.err << "kiln bench: "
             << UnknownFlag(a[i],
                            WithConnectionFlags(
                                {"--bind", "--config", "--entry", "--target", "--toolchain",
                                 "--pass", "--label", "--key", "--device", "--trials", "--warmup",
                                 "--flush-l2", "--cuda-graph", "--history", "--compare",
                                 "--baseline-runs", "--max-slowdown", "--significance", "--help"}))
             << "\n"
             << kBenchUsage;
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

  std::unique_ptr<client::Client> client = Connect(*c, io, "bench");
  if (!client) return kExitUsage;
  absl::StatusOr<kiln::v1::BenchmarkResponse> reply = client->Benchmark(req);
  if (!reply.ok()) return ReportFailure(reply.status(), *c, io);
  const kiln::v1::BenchmarkResponse& resp = *reply;
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

int RunTuneRemote(const TuneArgs& t, CommandIo io) {
  std::optional<Connection> parsed = ParseConnection(t.connection, io, "tune");
  if (!parsed) return kExitUsage;
  Connection& c = *parsed;
  if (!t.server.empty()) c.options.address = t.server;
  c.options.stream_deadline = std::chrono::milliseconds(static_cast<int64_t>(t.timeout_s * 1000));
  c.json = t.json;
  kiln::v1::TuneRequest req;
  absl::StatusOr<kiln::v1::ProgramSource> program = client::LoadProgram(t.file);
  if (!program.ok()) {
    io.err << "kiln tune: " << program.status().message() << "\n";
    if (t.json) io.out << ErrorJsonLine(program.status());
    return kExitFailure;
  }
  *req.mutable_program() = *std::move(program);
  if (!t.entry.empty()) req.mutable_program()->set_entry(t.entry);
  for (const auto& [name, value] : t.bindings) {
    (*req.mutable_program()->mutable_bindings())[name] = client::ParseBinding(value);
  }
  req.set_target(t.target.empty() ? "cpu" : t.target);
  for (const std::string& p : t.pass_options) req.mutable_options()->add_pass_options(p);
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
    if (t.json) {
      io.out << ErrorJsonLine(
          absl::InvalidArgumentError("--strategy must be roller, grid or random"));
    }
    return kExitUsage;
  }
  req.mutable_validation()->set_seed(t.seed);
  for (const auto& [name, values] : t.space) {
    kiln::v1::ValueList& list = (*req.mutable_space()->mutable_candidates())[name];
    for (int64_t v : values) list.add_values()->set_int_value(v);
  }
  for (const std::string& d : t.devices) req.mutable_devices()->add_device_ids(d);
  req.set_remeasure(t.remeasure);

  std::unique_ptr<client::Client> client = Connect(c, io, "tune");
  if (!client) return kExitUsage;
  const bool bar = t.progress == "always" || (t.progress == "auto" && isatty(STDERR_FILENO) != 0);
  TuneProgressPrinter printer(io.err, bar, t.json);
  absl::StatusOr<client::TuneOutcome> outcome = client->Tune(
      req, [&](const std::string&, const kiln::v1::TuneProgress& p) { printer.Show(p); });
  printer.Finish();
  if (!outcome.ok()) return ReportFailure(outcome.status(), c, io);
  const kiln::v1::TuneResult& result = outcome->result;
  // Which results kilnd reused from its history: those older than the
  // sweep's job (both times on the daemon's clock).
  int64_t created_unix_ms = 0;
  if (absl::StatusOr<kiln::v1::Job> job = client->GetJob(outcome->job_id); job.ok()) {
    created_unix_ms = job->created_unix_ms();
  }
  const std::vector<bool> reused = ReusedFromHistory(result, created_unix_ms);
  if (t.json) {
    OrderedJson out = TuneResultJson(outcome->job_id, result, reused);
    if (!result.has_best()) {
      // Still a failure (exit 1): say so the way every --json failure does.
      out.update(ErrorJson(absl::NotFoundError(absl::StrCat(
          "no valid config: all ", result.measurements_size(), " candidates failed"))));
    }
    io.out << Dump(out) << "\n";
  } else {
    PrintTuneTable(result, reused, io.out);
  }
  return result.has_best() ? kExitOk : kExitFailure;
}

// --- devices -------------------------------------------------------------------

int RunDevices(const std::vector<std::string>& args, CommandIo io) {
  std::optional<Connection> c = ParseConnection(args, io, "devices");
  if (!c) return kExitUsage;
  if (c->rest.size() == 1 && (c->rest[0] == "-h" || c->rest[0] == "--help")) {
    io.out << "usage: kiln devices [--json]\n" << kConnectionFlagsHelp;
    return kExitOk;
  }
  if (!c->rest.empty()) {
    const std::string& first = c->rest.front();
    if (!first.empty() && first[0] == '-') {
      io.err << "kiln devices: " << UnknownFlag(first, WithConnectionFlags({"--help"})) << "\n";
    } else {
      io.err << "kiln devices: unexpected argument '" << first << "'\n";
    }
    io.err << "usage: kiln devices [--json] [--server HOST:PORT]\n";
    return kExitUsage;
  }
  std::unique_ptr<client::Client> client = Connect(*c, io, "devices");
  if (!client) return kExitUsage;
  absl::StatusOr<std::vector<kiln::v1::Device>> devices = client->ListDevices();
  if (!devices.ok()) return ReportFailure(devices.status(), *c, io);
  kiln::v1::ListDevicesResponse resp;
  for (const kiln::v1::Device& d : *devices) *resp.add_devices() = d;
  if (c->json) {
    io.out << Json(resp) << "\n";
    return kExitOk;
  }
  io.out << absl::StrFormat("%-8s %-28s %-8s %5s %10s %-10s %9s %10s\n", "ID", "MODEL", "ARCH",
                            "SMS", "MEMORY", "WORKER", "DRAM_GB/S", "MMA_TFLOPS");
  // Micro-benchmark results (docs/tuning.md): "-" until a roller tune
  // measured the device model.
  auto value = [](double v) { return v > 0 ? absl::StrFormat("%.0f", v) : std::string("-"); };
  for (const kiln::v1::Device& d : resp.devices()) {
    io.out << absl::StrFormat("%-8s %-28s %-8s %5d %8.1fG %-10s %9s %10s%s\n", d.id(), d.model(),
                              d.arch(), d.sm_count(), d.memory_bytes() / 1e9, d.worker_state(),
                              value(d.measured().dram_gbs()), value(d.measured().mma_f16_tflops()),
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
  std::optional<Connection> c = ParseConnection(args, io, "jobs");
  if (!c) return kExitUsage;
  std::string id;
  bool watch = false, cancel = false;
  int limit = 50;
  const std::vector<std::string>& a = c->rest;
  for (size_t i = 0; i < a.size(); ++i) {
    std::string v;
    if (a[i] == "-h" || a[i] == "--help") {
      io.out << "usage: kiln jobs [JOB_ID] [--watch] [--cancel] [--limit N] [--json]\n"
             << kConnectionFlagsHelp;
      return kExitOk;
    } else if (a[i] == "--watch") {
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
      if (!a[i].empty() && a[i][0] == '-') {
        io.err << "kiln jobs: "
               << UnknownFlag(a[i],
                              WithConnectionFlags({"--watch", "--cancel", "--limit", "--help"}))
               << "\n";
      } else {
        io.err << "kiln jobs: unexpected argument '" << a[i] << "'\n";
      }
      io.err << "usage: kiln jobs [JOB_ID] [--watch] [--cancel] [--limit N] [--json]\n"
             << kConnectionFlagsHelp;
      return kExitUsage;
    }
  }
  if ((watch || cancel) && id.empty()) {
    io.err << "kiln jobs: --watch and --cancel need a JOB_ID\n";
    return kExitUsage;
  }
  std::unique_ptr<client::Client> client = Connect(*c, io, "jobs");
  if (!client) return kExitUsage;
  if (id.empty()) {
    absl::StatusOr<std::vector<kiln::v1::Job>> jobs = client->ListJobs(limit);
    if (!jobs.ok()) return ReportFailure(jobs.status(), *c, io);
    kiln::v1::ListJobsResponse resp;
    for (const kiln::v1::Job& j : *jobs) *resp.add_jobs() = j;
    if (c->json) {
      io.out << Json(resp) << "\n";
      return kExitOk;
    }
    for (const kiln::v1::Job& j : resp.jobs()) PrintJob(j, false, io);
    return kExitOk;
  }
  if (cancel) {
    absl::StatusOr<kiln::v1::Job> job = client->CancelJob(id);
    if (!job.ok()) return ReportFailure(job.status(), *c, io);
    PrintJob(*job, c->json, io);
    return kExitOk;
  }
  if (watch) {
    absl::StatusOr<kiln::v1::Job> last =
        client->WatchJob(id, [&](const kiln::v1::Job& j) { PrintJob(j, c->json, io); });
    if (!last.ok()) return ReportFailure(last.status(), *c, io);
    return last->state() == kiln::v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitFailure;
  }
  absl::StatusOr<kiln::v1::Job> job = client->GetJob(id);
  if (!job.ok()) return ReportFailure(job.status(), *c, io);
  PrintJob(*job, c->json, io);
  return kExitOk;
}

} // namespace

Command CompileCommand() {
  return {"compile", "compile a tile program on a kilnd (cache hit, miss or joined)", RunCompile};
}
Command BestCommand() {
  return {"best", "the best tuned config a kilnd stores for a program and shape", RunBest};
}
Command BenchCommand() {
  return {"bench", "time a kernel on a kilnd's device (and compare with its history)", RunBench};
}
TuneRemoteFn TuneRemote() { return RunTuneRemote; }
Command DevicesCommand() { return {"devices", "list the devices a kilnd measures on", RunDevices}; }
Command JobsCommand() { return {"jobs", "list, show, watch or cancel a kilnd's jobs", RunJobs}; }

} // namespace kiln::cli
