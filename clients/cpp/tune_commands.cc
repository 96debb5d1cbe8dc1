#include "clients/cpp/tune_commands.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "clients/cpp/json_output.h"
#include "clients/cpp/suggest.h"
#include "compiler/frontend/frontend.h"
#include "tuner/arch/arch_model.h"
#include "tuner/arch/microbench.h"
#include "tuner/roller/policy.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

constexpr char kUsage[] =
    R"(usage: kiln tune FILE [--bind NAME=VALUE]... [OPTIONS] [--dry-run] [--json]

Tunes a TileLang program: finds its tunable parameters and what they
control, proposes configs with the Roller policy (or a grid / random
strategy) and verifies each with the compiler. With --dry-run it prints them
ranked by predicted time, locally, without building or measuring anything;
without it a kilnd compiles and measures them on its devices, validates each
against a reference, prints progress and the best config, and stores it.

options:
  --bind NAME=VALUE      bind a parameter (problem sizes: M, N, K, ...); repeatable
  --strategy NAME        roller (default), grid or random
  --top-k N              roller: candidates to print (default 10)
  --budget N             grid / random: the most configs (grid default: all;
                         random default: --top-k)
  --seed N               random: generator seed (default 1)
  --space NAME=v1,v2,..  declare a tunable's domain; repeatable
  --arch NAME            --dry-run: hardware model: a100, h100, h200, mi250x,
                         mi300x, cpu (default: the --target's: cpu for cpu,
                         h200 for cuda:sm_90, ...; h200 without --target)
  --measured NAME=VALUE  --dry-run: a micro-benchmark result applied to the
                         model as kilnd applies a device's (dram_gbs, l2_gbs,
                         mma_f16_tflops; `kiln devices --json` shows them);
                         repeatable
  --target TARGET        verification target (default: the arch's, e.g. cuda:sm_90)
  --pass NAME=VALUE      a Kiln pass option of every build; repeatable.
                         on Hopper gemm=mma / pipeline=cp.async tune the
                         older code paths (docs/tuning.md)
  --entry NAME           the kernel function when the file has several
  --no-verify            skip compiler verification (model only)
  --dry-run              plan only, locally
  --json                 machine-readable output
  --server HOST:PORT     the kilnd (default $KILN_SERVER, else 127.0.0.1:7070)
  --device ID            measure only on this device; repeatable
  --remeasure            measure every config again, also those kilnd's history
                         holds for this device model
  --timeout SECONDS      give up after this long (default 3600)
  --progress WHEN        a progress bar on stderr: auto (on a terminal, the
                         default; plain lines otherwise), always, never
  --token T, --tls, --tls-ca F, --tls-cert F, --tls-key F, --tls-server-name N,
  --retries N            connection options (`kiln compile --help`)
)";

std::string ParseArgs(const std::vector<std::string>& args, TuneArgs& t) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::string value;
    bool has_value = false;
    if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    auto take = [&](std::string& out) {
      if (has_value) {
        out = value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      out = args[++i];
      return true;
    };
    if (a.rfind("--", 0) == 0) t.given.insert(a);
    std::string v;
    if (a == "--bind") {
      if (!take(v)) return "--bind needs NAME=VALUE";
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return "--bind '" + v + "' is not NAME=VALUE";
      t.bindings.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--space") {
      if (!take(v)) return "--space needs NAME=v1,v2,...";
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return "--space '" + v + "' is not NAME=v1,v2,...";
      std::vector<int64_t> values;
      for (absl::string_view part : absl::StrSplit(v.substr(eq + 1), ',')) {
        int64_t x = 0;
        if (!absl::SimpleAtoi(part, &x)) return "--space " + v + ": values must be integers";
        values.push_back(x);
      }
      t.space.emplace_back(v.substr(0, eq), std::move(values));
    } else if (a == "--strategy") {
      if (!take(t.strategy)) return "--strategy needs roller, grid or random";
    } else if (a == "--top-k") {
      if (!take(v) || !absl::SimpleAtoi(v, &t.top_k) || t.top_k < 1) {
        return "--top-k needs a positive number";
      }
    } else if (a == "--budget") {
      if (!take(v) || !absl::SimpleAtoi(v, &t.budget) || t.budget < 0) {
        return "--budget needs a number";
      }
    } else if (a == "--seed") {
      if (!take(v) || !absl::SimpleAtoi(v, &t.seed)) return "--seed needs a number";
    } else if (a == "--arch") {
      if (!take(t.arch)) return "--arch needs a name";
    } else if (a == "--measured") {
      const std::vector<std::string> known = {arch::kDramGbs, arch::kL2Gbs, arch::kMmaF16Tflops};
      double x = 0;
      const size_t eq = take(v) ? v.find('=') : std::string::npos;
      if (eq == std::string::npos || !absl::SimpleAtod(v.substr(eq + 1), &x) || x <= 0 ||
          std::find(known.begin(), known.end(), v.substr(0, eq)) == known.end()) {
        return "--measured needs NAME=VALUE with a positive VALUE and NAME one of dram_gbs, "
               "l2_gbs, mma_f16_tflops";
      }
      t.measured[v.substr(0, eq)] = x;
    } else if (a == "--target") {
      if (!take(t.target)) return "--target needs a target";
    } else if (a == "--pass") {
      if (!take(v) || v.find('=') == std::string::npos) return "--pass needs NAME=VALUE";
      t.pass_options.push_back(v);
    } else if (a == "--entry") {
      if (!take(t.entry)) return "--entry needs a function name";
    } else if (a == "--server") {
      if (!take(t.server)) return "--server needs HOST:PORT";
    } else if (a == "--timeout") {
      if (!take(v) || !absl::SimpleAtod(v, &t.timeout_s) || t.timeout_s <= 0) {
        return "--timeout needs a positive number of seconds";
      }
    } else if (a == "--device") {
      if (!take(v)) return "--device needs a device id";
      t.devices.push_back(v);
    } else if (a == "--token" || a == "--tls-ca" || a == "--tls-cert" || a == "--tls-key" ||
               a == "--tls-server-name" || a == "--retries") {
      if (!take(v)) return a + " needs a value";
      t.connection.push_back(a);
      t.connection.push_back(v);
    } else if (a == "--tls") {
      t.connection.push_back(a);
    } else if (a == "--progress") {
      if (!take(t.progress) ||
          (t.progress != "auto" && t.progress != "always" && t.progress != "never")) {
        return "--progress needs auto, always or never";
      }
    } else if (a == "--dry-run") {
      t.dry_run = true;
    } else if (a == "--json") {
      t.json = true;
    } else if (a == "--no-verify") {
      t.verify = false;
    } else if (a == "--remeasure") {
      t.remeasure = true;
    } else if (!a.empty() && a[0] != '-' && t.file.empty()) {
      t.file = a;
    } else if (!a.empty() && a[0] == '-') {
      return UnknownFlag(args[i], {"--bind",
                                   "--space",
                                   "--strategy",
                                   "--top-k",
                                   "--budget",
                                   "--seed",
                                   "--arch",
                                   "--measured",
                                   "--target",
                                   "--pass",
                                   "--entry",
                                   "--server",
                                   "--timeout",
                                   "--device",
                                   "--token",
                                   "--tls-ca",
                                   "--tls-cert",
                                   "--tls-key",
                                   "--tls-server-name",
                                   "--retries",
                                   "--tls",
                                   "--progress",
                                   "--dry-run",
                                   "--json",
                                   "--no-verify",
                                   "--remeasure",
                                   "--help"});
    } else {
      return "unknown argument '" + args[i] + "'";
    }
  }
  if (t.file.empty()) return "missing FILE";
  return "";
}

json ArchJson(const arch::ArchModel& m) {
  return {{"name", m.name},
          {"model", m.model},
          {"target", m.target},
          {"sm_count", m.sm_count},
          {"shared_bytes_optin", m.shared_bytes_optin},
          {"l2_bytes", m.l2_bytes},
          {"dram_gbs", m.dram_gbs},
          {"l2_gbs", m.l2_gbs},
          {"bandwidth_source", m.bandwidth_source},
          {"throughput_source", m.throughput_source},
          {"fp16_tflops", m.fp16_tflops},
          {"mma_efficiency", m.mma_efficiency},
          {"wgmma_tflops", m.wgmma_tflops}};
}

json CandidateJson(int rank, const roller::Candidate& c) {
  json config = json::object();
  for (const auto& [k, v] : c.config) config[k] = v;
  const roller::Prediction& p = c.prediction;
  json out = {{"rank", rank},
              {"config", config},
              {"predicted_us", c.predicted_us},
              {"rationale", c.rationale},
              {"fits_model", p.fits},
              {"bound", p.bound},
              {"blocks", p.blocks},
              {"blocks_per_sm", p.blocks_per_sm},
              {"waves", p.waves},
              {"smem_bytes", p.smem_bytes},
              {"registers_estimate", p.registers},
              {"wgmma", p.wgmma},
              {"dram_bytes", p.dram_bytes},
              {"l2_bytes", p.l2_bytes},
              {"terms_us",
               {{"compute", p.compute_us},
                {"alu", p.alu_us},
                {"smem", p.smem_us},
                {"l2", p.l2_us},
                {"dram", p.dram_us},
                {"latency", p.latency_us},
                {"overhead", p.overhead_us}}}};
  if (!c.key.empty()) out["key"] = c.key;
  return out;
}

// The human message on stderr and, with --json, the error object on stdout.
int Fail(const TuneArgs& t, CommandIo io, const absl::Status& status, int code) {
  io.err << "kiln tune: " << status.message() << "\n";
  if (t.json) io.out << ErrorJsonLine(status);
  return code;
}

// The first "model name" of /proc/cpuinfo ("" when there is none).
std::string HostCpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos || !absl::StartsWith(line, "model name")) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    if (!value.empty()) return value;
  }
  return "";
}

int Run(const TuneArgs& t, CommandIo io) {
  std::string preset = t.arch, why = "--arch";
  if (preset.empty()) {
    absl::StatusOr<std::string> chosen = ArchForTarget(t.target);
    if (!chosen.ok()) return Fail(t, io, chosen.status(), kExitUsage);
    preset = *chosen;
    why = t.target.empty() ? "the default without --target" : "from --target " + t.target;
  }
  absl::StatusOr<arch::ArchModel> model = arch::FindPreset(preset);
  if (!model.ok()) return Fail(t, io, model.status(), kExitUsage);
  if (model->vendor == arch::Vendor::kCpu) {
    // The CPU target runs where the planner does: name that CPU.
    if (std::string cpu = HostCpuModel(); !cpu.empty()) model->model = cpu;
  }
  if (t.arch.empty()) {
    io.err << "kiln tune: note: --dry-run models " << model->model << " (preset " << model->name
           << ", " << why << "); --arch NAME models another\n";
  }
  if (!t.measured.empty())
    *model = arch::WithMeasured(*model, arch::MeasuredFromValues(t.measured));
  absl::StatusOr<roller::Strategy> strategy = roller::ParseStrategy(t.strategy);
  if (!strategy.ok()) return Fail(t, io, strategy.status(), kExitUsage);
  std::ifstream f(t.file, std::ios::binary);
  if (!f) {
    return Fail(t, io, absl::NotFoundError("cannot read '" + t.file + "'"), kExitFailure);
  }
  std::stringstream text;
  text << f.rdbuf();

  driver::ProgramInput in;
  in.text = text.str();
  in.file_name = t.file;
  in.entry = t.entry;
  for (const auto& [name, value] : t.bindings) {
    in.bindings.emplace_back(name, frontend::ParseBindingText(value));
  }
  roller::PolicyOptions options;
  options.strategy = *strategy;
  options.top_k = t.top_k;
  options.budget = t.budget;
  options.seed = t.seed;
  options.target = t.target;
  options.pass_options = t.pass_options;
  options.verify = t.verify;
  for (const auto& [name, values] : t.space) options.space[name] = values;

  absl::StatusOr<roller::Proposal> proposal = roller::Propose(in, *model, options);
  if (!proposal.ok()) return Fail(t, io, proposal.status(), kExitFailure);
  const roller::ProgramAnalysis& a = proposal->analysis;
  if (t.json) {
    json tunables = json::array();
    for (const roller::Tunable& tu : a.tunables) {
      json j = {{"name", tu.name},
                {"role", std::string(roller::RoleName(tu.role))},
                {"default", tu.default_value}};
      if (tu.extent > 0) j["extent"] = tu.extent;
      if (!tu.dim.empty()) j["dim"] = tu.dim;
      if (auto it = proposal->space.find(tu.name); it != proposal->space.end()) {
        j["domain"] = it->second;
      }
      tunables.push_back(std::move(j));
    }
    json space = json::array();
    for (const roller::IterDim& d : a.iteration_space) {
      space.push_back({{"name", d.name},
                       {"extent", d.extent},
                       {"reduction", d.reduction},
                       {"tiled_by", d.tiled_by}});
    }
    json cands = json::array();
    for (size_t i = 0; i < proposal->candidates.size(); ++i) {
      cands.push_back(CandidateJson(static_cast<int>(i) + 1, proposal->candidates[i]));
    }
    json bind = json::object();
    for (const auto& [name, value] : t.bindings) {
      int64_t i = 0;
      if (absl::SimpleAtoi(value, &i)) {
        bind[name] = i;
      } else {
        bind[name] = value;
      }
    }
    json out = {{"file", t.file},
                {"bind", bind},
                {"entry", a.entry},
                {"strategy", t.strategy},
                {"arch", ArchJson(*model)},
                {"arch_from", t.arch.empty() ? (t.target.empty() ? "default" : "target") : "flag"},
                {"verify_target", t.target.empty() ? model->target : t.target},
                {"pass_options", t.pass_options},
                {"tunables", tunables},
                {"iteration_space", space},
                {"candidates", cands},
                {"considered", proposal->considered},
                {"model_rejected", proposal->model_rejected},
                {"compiler_rejected", proposal->compiler_rejected},
                {"seconds", proposal->seconds},
                {"notes", a.notes}};
    io.out << out.dump(2) << "\n";
    return kExitOk;
  }
  io.out << "kiln tune --dry-run: " << t.file << " (" << a.entry << ") on " << model->model
         << " (preset " << model->name << ", " << why << "), strategy " << t.strategy << "\n";
  for (const roller::Tunable& tu : a.tunables) {
    io.out << "  " << tu.name << ": " << roller::RoleName(tu.role) << ", default "
           << tu.default_value;
    if (tu.extent > 0) io.out << ", tiles " << (tu.dim.empty() ? "" : tu.dim + " = ") << tu.extent;
    io.out << "\n";
  }
  io.out << absl::StrFormat("%d configs evaluated, %d over a limit by the model, %d rejected by "
                            "the compiler, %.1f ms\n",
                            proposal->considered, proposal->model_rejected,
                            proposal->compiler_rejected, proposal->seconds * 1e3);
  for (size_t i = 0; i < proposal->candidates.size(); ++i) {
    const roller::Candidate& c = proposal->candidates[i];
    std::string config;
    for (const auto& [k, v] : c.config)
      absl::StrAppend(&config, config.empty() ? "" : " ", k, "=", v);
    io.out << absl::StrFormat("%3d  %10.1f us  %s\n       %s\n", i + 1, c.predicted_us, config,
                              c.rationale);
  }
  return kExitOk;
}

} // namespace

absl::StatusOr<std::string> ArchForTarget(const std::string& target) {
  if (target.empty()) return std::string("h200");
  // "cuda:sm_90a" is an sm_90 device; the presets name the base target.
  std::string base = target;
  if (absl::StartsWith(base, "cuda:sm_") && absl::EndsWith(base, "a")) base.pop_back();
  int cc = 0;
  const bool cuda = absl::StartsWith(base, "cuda:sm_") && absl::SimpleAtoi(base.substr(8), &cc);
  std::string exact, newest;
  int newest_cc = 0;
  for (const std::string& name : arch::PresetNames()) {
    absl::StatusOr<arch::ArchModel> m = arch::FindPreset(name);
    if (!m.ok()) continue;
    if (m->target == base) {
      // Several presets of one target (h100, h200 for sm_90): the default's.
      if (exact.empty() || name == "h200") exact = name;
      continue;
    }
    // A CUDA device without a preset of its own (sm_86, sm_89): the newest
    // preset it can run, as its compiler target is a superset of that one's.
    const int m_cc = m->compute_capability_major * 10 + m->compute_capability_minor;
    if (cuda && m->vendor == arch::Vendor::kNvidia && m_cc <= cc &&
        (m_cc > newest_cc || (m_cc == newest_cc && name == "h200"))) {
      newest = name;
      newest_cc = m_cc;
    }
  }
  const std::string best = exact.empty() ? newest : exact;
  if (best.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no hardware model for --target ", target,
                                                   "; name one with --arch (",
                                                   absl::StrJoin(arch::PresetNames(), ", "), ")"));
  }
  return best;
}

std::vector<std::string> IgnoredFlagNotes(const TuneArgs& t) {
  std::vector<std::string> notes;
  auto given = [&](const char* flag) { return t.given.count(flag) > 0; };
  if (given("--top-k") && t.strategy == "grid") {
    notes.emplace_back("--top-k is ignored with --strategy grid (--budget caps a grid)");
  } else if (given("--top-k") && t.strategy == "random" && t.budget > 0) {
    notes.emplace_back("--top-k is ignored with --strategy random and --budget (--budget is the "
                       "number of configs drawn)");
  }
  if (given("--budget") && t.strategy == "roller") {
    notes.emplace_back("--budget is ignored with --strategy roller (--top-k is the number of "
                       "candidates)");
  }
  if (t.dry_run) {
    if (given("--seed") && t.strategy != "random") {
      notes.emplace_back("--seed is ignored by a --dry-run with --strategy " + t.strategy +
                         " (it draws the random strategy's configs; kilnd also seeds its "
                         "validation inputs with it)");
    }
    std::vector<std::string> daemon_only;
    for (const char* flag :
         {"--server", "--device", "--remeasure", "--timeout", "--progress", "--token", "--tls",
          "--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name", "--retries"}) {
      if (given(flag)) daemon_only.emplace_back(flag);
    }
    if (!daemon_only.empty()) {
      notes.emplace_back(
          absl::StrCat(absl::StrJoin(daemon_only, ", "), daemon_only.size() == 1 ? " is" : " are",
                       " ignored with --dry-run (it plans locally, without a kilnd)"));
    }
  } else {
    if (given("--arch")) {
      notes.emplace_back(
          "--arch is ignored without --dry-run: kilnd measures on its own devices and "
          "models each from what it reports (--device picks one)");
    }
    if (given("--measured")) {
      notes.emplace_back("--measured is ignored without --dry-run: kilnd applies its devices' own "
                         "micro-benchmark results");
    }
    if (given("--no-verify")) {
      notes.emplace_back("--no-verify is ignored without --dry-run: kilnd compiles every candidate "
                         "it measures");
    }
  }
  return notes;
}

Command TuneCommand(const TuneRemoteFn& remote) {
  Command c;
  c.name = "tune";
  c.summary = "plan a tuning sweep (--dry-run: ranked candidates with predicted times)";
  c.run = [remote](const std::vector<std::string>& args, CommandIo io) {
    for (const std::string& a : args) {
      if (a == "--help" || a == "-h") {
        io.out << kUsage;
        return kExitOk;
      }
    }
    TuneArgs t;
    if (std::string error = ParseArgs(args, t); !error.empty()) {
      io.err << "kiln tune: " << error << "\n" << kUsage;
      if (WantsJson(args)) io.out << ErrorJsonLine(absl::InvalidArgumentError(error));
      return kExitUsage;
    }
    for (const std::string& note : IgnoredFlagNotes(t))
      io.err << "kiln tune: note: " << note << "\n";
    if (!t.dry_run) {
      if (remote) return remote(t, io);
      return Fail(t, io,
                  absl::UnimplementedError("sending the sweep to a kilnd is not wired into this "
                                           "command yet; use --dry-run to plan it locally"),
                  kExitFailure);
    }
    return Run(t, io);
  };
  return c;
}

} // namespace kiln::cli
