#include "server/server_config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

#include <sched.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "server/config_options.h"
#include "server/config_values.h"
#include "server/token_file.h"
#include "util/file_path.h"
#include "util/host_port.h"

extern char** environ;

namespace kiln::server {
namespace {

std::string S(std::string_view text) { return std::string(text); }

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// Cores this process may use: its affinity mask, bounded by a cgroup CPU
// quota (a container's CPU limit), at least 1.
int AvailableCpus() {
  int cpus = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  // cgroup v2: "max 100000" or "QUOTA PERIOD".
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  std::string quota_text;
  double period = 0;
  if (v2 >> quota_text >> period && quota_text != "max" && period > 0) {
    double quota = 0;
    if (absl::SimpleAtod(quota_text, &quota) && quota > 0) {
      cpus = std::min(cpus, std::max(1, static_cast<int>(std::ceil(quota / period))));
    }
  }
  return cpus;
}

std::string_view Section(std::string_view key) {
  const size_t dot = key.find('.');
  return dot == std::string_view::npos ? std::string_view() : key.substr(0, dot);
}

const ConfigOption* FindByKey(std::string_view key) {
  for (const ConfigOption& option : ServerConfigOptions()) {
    if (option.key == key) return &option;
  }
  return nullptr;
}

bool IsSection(std::string_view key) {
  for (const ConfigOption& option : ServerConfigOptions()) {
    if (Section(option.key) == key) return true;
  }
  return false;
}

// Levenshtein distance, for "did you mean" hints.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean X?)" for the closest candidate, or "".
std::string Suggestion(std::string_view wrong, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(3, wrong.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    size_t d = EditDistance(wrong, candidate);
    // One spelled as the start of the other (listen_address, --cache-dirr)
    // is a likely mix-up whatever the distance.
    if (std::min(wrong.size(), candidate.size()) >= 5 &&
        (absl::StartsWith(S(wrong), candidate) || absl::StartsWith(candidate, S(wrong)))) {
      d = std::min<size_t>(d, 1);
    }
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best.empty() ? "" : absl::StrCat(" (did you mean ", best, "?)");
}

std::vector<std::string> AllKeys() {
  std::vector<std::string> keys;
  for (const ConfigOption& option : ServerConfigOptions()) keys.emplace_back(option.key);
  return keys;
}

// The names accepted on the command line besides the options.
constexpr std::string_view kConfigFlag = "--config";
constexpr std::string_view kConfigEnv = "KILN_CONFIG";

std::vector<std::string> AllFlags() {
  std::vector<std::string> flags = {S(kConfigFlag), "--help", "--version", "--print-config"};
  for (const ConfigOption& option : ServerConfigOptions()) flags.push_back(option.flag());
  return flags;
}

// --- sources --------------------------------------------------------------------

using Sources = std::map<std::string, std::string>;

absl::Status ApplyValue(const ConfigOption& option, std::string_view text,
                        const std::string& source, const std::string& error_prefix,
                        ServerConfig& config, Sources& sources) {
  if (absl::Status s = option.parse(text, config); !s.ok()) {
    return Invalid(absl::StrCat(error_prefix, s.message()));
  }
  sources[S(option.key)] = source;
  return absl::OkStatus();
}

std::string YamlWhere(const std::string& file, const YAML::Mark& mark) {
  return mark.is_null() ? file : absl::StrCat(file, ":", mark.line + 1);
}

absl::Status ApplyYamlMap(const YAML::Node& map, const std::string& prefix, const std::string& file,
                          ServerConfig& config, Sources& sources) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    const YAML::Node& key_node = entry.first;
    const YAML::Node& value = entry.second;
    const std::string where = YamlWhere(file, key_node.Mark());
    if (!key_node.IsScalar()) return Invalid(absl::StrCat(where, ": a key must be a plain name"));
    const std::string name = key_node.Scalar();
    const std::string key = prefix.empty() ? name : absl::StrCat(prefix, ".", name);
    if (!seen.insert(name).second) {
      return Invalid(absl::StrCat(where, ": duplicate key '", key, "'"));
    }
    if (const ConfigOption* option = FindByKey(key); option != nullptr) {
      std::string text;
      if (value.IsScalar()) {
        text = value.Scalar();
      } else if (value.IsSequence() && key == "devices") {
        std::vector<std::string> items;
        for (const YAML::Node& item : value) {
          if (!item.IsScalar()) {
            return Invalid(absl::StrCat(where, ": devices: expected a list of ordinals"));
          }
          items.push_back(item.Scalar());
        }
        text = absl::StrJoin(items, ",");
        if (items.empty()) text = "none";
      } else if (value.IsNull()) {
        return Invalid(
            absl::StrCat(where, ": ", key, " has no value (write \"\" for an empty one)"));
      } else {
        return Invalid(absl::StrCat(where, ": ", key, ": expected a single value, found a ",
                                    value.IsMap() ? "mapping" : "list"));
      }
      if (absl::Status s = ApplyValue(*option, text, where, absl::StrCat(where, ": ", key, ": "),
                                      config, sources);
          !s.ok()) {
        return s;
      }
    } else if (IsSection(key)) {
      if (!value.IsMap()) {
        std::vector<std::string> members;
        for (const ConfigOption& o : ServerConfigOptions()) {
          if (Section(o.key) == key) members.emplace_back(o.key.substr(key.size() + 1));
        }
        return Invalid(absl::StrCat(where, ": '", key,
                                    "' is a section; expected a mapping of its keys (",
                                    absl::StrJoin(members, ", "), ")"));
      }
      if (absl::Status s = ApplyYamlMap(value, key, file, config, sources); !s.ok()) return s;
    } else {
      return Invalid(absl::StrCat(where, ": unknown key '", key, "'", Suggestion(key, AllKeys())));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyYamlFile(const std::string& file, ServerConfig& config, Sources& sources) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read config file ", file, ": ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return Invalid(absl::StrCat(file, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  if (!root.IsDefined() || root.IsNull()) return absl::OkStatus(); // an empty file
  if (!root.IsMap()) {
    return Invalid(absl::StrCat(YamlWhere(file, root.Mark()),
                                ": expected a mapping of keys (listen: ..., cache: {dir: ...})"));
  }
  try {
    return ApplyYamlMap(root, "", file, config, sources);
  } catch (const YAML::Exception& e) {
    return Invalid(absl::StrCat(file, ":", e.mark.line + 1, ": ", e.msg));
  }
}

// `env`'s HOME (not the process's: the environment is an input here).
std::string ExpandHome(const std::string& path, const std::map<std::string, std::string>& env) {
  auto home = env.find("HOME");
  return util::ExpandHome(path, home == env.end() ? std::string() : home->second);
}

std::string Where(const Sources& sources, std::string_view key) {
  auto it = sources.find(S(key));
  return absl::StrCat(S(key), " (", it == sources.end() ? "default" : it->second, ")");
}

absl::Status CheckReadable(const Sources& sources, std::string_view key, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  if (access(path.c_str(), R_OK) != 0) {
    return Invalid(
        absl::StrCat(Where(sources, key), ": cannot read ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status Validate(const ServerConfig& c, const Sources& sources) {
  if (!c.tls.key_file.empty() && c.tls.cert_file.empty()) {
    return Invalid(
        absl::StrCat(Where(sources, "tls.key_file"), " is set but tls.cert_file is not"));
  }
  if (!c.tls.cert_file.empty() && c.tls.key_file.empty()) {
    return Invalid(
        absl::StrCat(Where(sources, "tls.cert_file"), " is set but tls.key_file is not"));
  }
  if (!c.tls.client_ca_file.empty() && c.tls.cert_file.empty()) {
    return Invalid(absl::StrCat(Where(sources, "tls.client_ca_file"),
                                " needs TLS: set tls.cert_file and tls.key_file"));
  }
  const struct {
    std::string_view key;
    const std::string* path;
  } files[] = {{"tls.cert_file", &c.tls.cert_file},
               {"tls.key_file", &c.tls.key_file},
               {"tls.client_ca_file", &c.tls.client_ca_file}};
  for (const auto& file : files) {
    if (absl::Status s = CheckReadable(sources, file.key, *file.path); !s.ok()) return s;
  }
  if (c.auth.enabled()) {
    absl::StatusOr<std::vector<BearerToken>> tokens = LoadTokenFile(c.auth.tokens_file);
    if (!tokens.ok()) {
      return Invalid(
          absl::StrCat(Where(sources, "auth.tokens_file"), ": ", tokens.status().message()));
    }
  }
  if (!c.metrics_listen_address.empty() && c.metrics_listen_address == c.listen_address) {
    absl::StatusOr<util::HostPort> parsed = util::ParseHostPort(c.listen_address);
    if (parsed.ok() && parsed->port != 0) {
      return Invalid(absl::StrCat(Where(sources, "metrics.listen"), " is the gRPC address ",
                                  c.listen_address, "; give it a port of its own"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> Warnings(const ServerConfig& c) {
  std::vector<std::string> warnings;
  absl::StatusOr<util::HostPort> listen = util::ParseHostPort(c.listen_address);
  if (listen.ok() && !util::IsLoopbackHost(listen->host) && !c.tls.enabled() && !c.auth.enabled()) {
    warnings.push_back(absl::StrCat("listening on ", c.listen_address,
                                    " without TLS or tokens: anyone who can reach it can use "
                                    "this daemon (set tls.* and auth.tokens_file)"));
  }
  if (c.worker.hang != WorkerTimeouts().hang) {
    warnings.emplace_back(
        "worker.hang_timeout has no effect: workers send no heartbeat; a hung kernel or a stuck "
        "worker is killed and restarted after worker.request_timeout");
  }
  return warnings;
}

// --- output helpers -------------------------------------------------------------

// Appends the atoms separated by spaces, wrapped at `width` columns between
// atoms, each line indented by `indent`.
void AppendWrappedAtoms(std::string& out, const std::vector<std::string>& atoms, size_t indent,
                        size_t width) {
  size_t column = 0;
  for (const std::string& word : atoms) {
    if (column > 0 && column + 1 + word.size() > width) {
      out += '\n';
      column = 0;
    }
    if (column == 0) {
      out.append(indent, ' ');
      column = indent;
    } else {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  out += '\n';
}

// Appends `text` wrapped at `width` columns between words.
void AppendWrapped(std::string& out, std::string_view text, size_t indent, size_t width) {
  AppendWrappedAtoms(out, absl::StrSplit(S(text), ' ', absl::SkipEmpty()), indent, width);
}

// A YAML scalar that reads back as `text`: plain for numbers and booleans,
// double-quoted otherwise.
std::string YamlScalar(std::string_view text, bool is_bool) {
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
  if (digits || is_bool) return S(text);
  std::string out = "\"";
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      absl::StrAppend(&out, "\\x", std::string(1, kHex[c >> 4]), std::string(1, kHex[c & 0xF]));
    } else {
      out += ch;
    }
  }
  out += '"';
  return out;
}

} // namespace

std::string ResolveCacheDir(const ServerConfig& config) {
  if (!config.cache_dir.empty()) return config.cache_dir;
  if (const char* env = std::getenv("KILN_CACHE_DIR"); env != nullptr && *env != '\0') return env;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/kiln";
  }
  return "/tmp/kiln-cache";
}

std::string ResolveWorkerPath(const ServerConfig& config) {
  if (!config.worker_path.empty()) return config.worker_path;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "./kiln-worker";
  return (self.parent_path() / "kiln-worker").string();
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    const std::string_view entry(*p);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

absl::StatusOr<LoadedServerConfig> LoadServerConfig(int argc, const char* const* argv,
                                                    const std::map<std::string, std::string>& env) {
  LoadedServerConfig loaded;
  // 1. The command line: what to do, which file, and the flags in order.
  struct FlagValue {
    const ConfigOption* option;
    std::string value;
    std::string spelled; // "--cache-dir"
    bool from_bare_flag; // a boolean given without "=VALUE"
  };
  std::vector<FlagValue> flags;
  std::string config_file;
  std::string config_file_source;
  std::map<std::string, const ConfigOption*> by_flag;
  for (const ConfigOption& option : ServerConfigOptions()) by_flag[option.flag()] = &option;

  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      loaded.action = ServerAction::kHelp;
      return loaded;
    }
    if (arg == "--version") {
      loaded.action = ServerAction::kVersion;
      return loaded;
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!absl::StartsWith(arg, "--") || arg == "--") {
      std::string hint = "kilnd takes only --flags; see kilnd --help";
      if (!flags.empty() && flags.back().option->is_bool && flags.back().from_bare_flag) {
        hint =
            absl::StrCat("a boolean takes its value after '=': ", flags.back().spelled, "=", arg);
      }
      return Invalid(absl::StrCat("unexpected argument '", arg, "' (", hint, ")"));
    }
    const size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    std::replace(name.begin() + 2, name.end(), '_', '-');
    std::optional<std::string> value;
    if (eq != std::string::npos) value = arg.substr(eq + 1);

    if (name == "--print-config") {
      if (value.has_value()) return Invalid("--print-config takes no value");
      loaded.action = ServerAction::kPrintConfig;
      continue;
    }
    auto it = by_flag.find(name);
    const ConfigOption* option = it == by_flag.end() ? nullptr : it->second;
    if (option == nullptr && name != kConfigFlag) {
      return Invalid(
          absl::StrCat("unknown flag ", name, Suggestion(name, AllFlags()), "; see kilnd --help"));
    }
    const bool bare = !value.has_value();
    if (!value.has_value()) {
      if (option != nullptr && option->is_bool) {
        value = "true";
      } else if (i + 1 < argc && !absl::StartsWith(argv[i + 1], "--")) {
        value = argv[++i];
      } else {
        return Invalid(absl::StrCat(name, " needs a value",
                                    option != nullptr
                                        ? absl::StrCat(" (", S(option->value_name), ")")
                                        : std::string(" (FILE)")));
      }
    }
    if (option == nullptr) {
      config_file = *value;
      config_file_source = "flag --config";
      continue;
    }
    flags.push_back({option, *value, name, bare && option->is_bool});
  }
  if (config_file_source.empty()) {
    if (auto it = env.find(S(kConfigEnv)); it != env.end() && !it->second.empty()) {
      config_file = it->second;
      config_file_source = absl::StrCat("env ", S(kConfigEnv));
    }
  }

  // 2. Defaults, then the file, the environment and the flags.
  ServerConfig& config = loaded.config;
  Sources& sources = loaded.sources;
  for (const ConfigOption& option : ServerConfigOptions()) sources[S(option.key)] = "default";
  if (!config_file.empty()) {
    config_file = ExpandHome(config_file, env);
    if (absl::Status s = ApplyYamlFile(config_file, config, sources); !s.ok()) return s;
  }
  for (const ConfigOption& option : ServerConfigOptions()) {
    const std::string name = option.env();
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) continue;
    if (absl::Status s = ApplyValue(option, it->second, absl::StrCat("env ", name),
                                    absl::StrCat(name, ": "), config, sources);
        !s.ok()) {
      return s;
    }
  }
  for (const FlagValue& flag : flags) {
    const std::string flag_name = flag.option->flag();
    if (absl::Status s = ApplyValue(*flag.option, flag.value, absl::StrCat("flag ", flag_name),
                                    absl::StrCat(flag.spelled, ": "), config, sources);
        !s.ok()) {
      return s;
    }
  }

  // 3. Resolve what depends on the machine, then check the whole.
  for (std::string* path :
       {&config.cache_dir, &config.tls.cert_file, &config.tls.key_file, &config.tls.client_ca_file,
        &config.auth.tokens_file, &config.log.file, &config.worker_path}) {
    *path = ExpandHome(*path, env);
  }
  if (config.cache_dir.empty()) {
    auto home = env.find("HOME");
    config.cache_dir = home != env.end() && !home->second.empty() ? home->second + "/.cache/kiln"
                                                                  : std::string("/tmp/kiln-cache");
  }
  if (config.compile_threads == 0) {
    config.compile_threads = AvailableCpus();
    sources["compile.threads"] += ", 0: one per available core";
  }
  if (absl::Status s = Validate(config, sources); !s.ok()) return s;
  loaded.warnings = Warnings(config);
  loaded.config_file = config_file;
  return loaded;
}

std::string ServerConfigHelp() {
  std::string out = "kilnd: the Kiln compilation and autotuning daemon\n"
                    "\n"
                    "Usage: kilnd [--config FILE] [--OPTION=VALUE | --OPTION VALUE]...\n"
                    "       kilnd --help | --version | --print-config [options]\n"
                    "\n";
  AppendWrapped(out,
                "Every option below can be given as a flag, as an environment variable or as a "
                "key of the YAML file named by --config (or KILN_CONFIG): a flag beats the "
                "variable, which beats the file, which beats the built-in default. Dashes and "
                "underscores in flag names are alike (--cache-dir, --cache_dir). Sizes take "
                "units (512MiB, 10GiB, 1.5GB); durations too (500ms, 30s, 5m). "
                "docs/kilnd.example.yaml shows every key.",
                0, 79);
  out += "\n";
  auto add = [&out](std::string_view usage, std::string_view help,
                    const std::vector<std::string>& where) {
    absl::StrAppend(&out, "  ", S(usage), "\n");
    AppendWrapped(out, help, 6, 79);
    if (!where.empty()) AppendWrappedAtoms(out, where, 6, 79);
  };
  add("--config FILE", "Read options from this YAML file.", {"env KILN_CONFIG"});
  add("--print-config",
      "Print the effective configuration as YAML, with where each value came from, and exit.", {});
  add("--version", "Print the version and exit.", {});
  add("--help", "Print this help and exit.", {});

  static const std::map<std::string_view, std::string_view> kTitles = {{"", "Server"},
                                                                       {"metrics", "Metrics"},
                                                                       {"cache", "Cache"},
                                                                       {"compile", "Compiling"},
                                                                       {"queue", "Queues"},
                                                                       {"fair_share", "Fair share"},
                                                                       {"worker", "GPU workers"},
                                                                       {"tls", "TLS"},
                                                                       {"auth", "Authentication"},
                                                                       {"log", "Logging"}};
  const ServerConfig defaults;
  std::string_view section = "-";
  for (const ConfigOption& option : ServerConfigOptions()) {
    if (Section(option.key) != section) {
      section = Section(option.key);
      auto title = kTitles.find(section);
      absl::StrAppend(&out, "\n", title == kTitles.end() ? S(section) : S(title->second), "\n");
    }
    const std::string usage = option.is_bool
                                  ? absl::StrCat(option.flag(), "[=BOOL]")
                                  : absl::StrCat(option.flag(), " ", S(option.value_name));
    std::string default_text = S(option.default_text);
    if (default_text.empty()) {
      default_text = option.format(defaults);
      if (default_text.empty()) default_text = "\"\"";
    }
    add(usage, option.help,
        {absl::StrCat("default ", default_text, ","), absl::StrCat("env ", option.env(), ","),
         absl::StrCat("yaml ", S(option.key))});
  }
  return out;
}

std::string DumpConfigYaml(const ServerConfig& config,
                           const std::map<std::string, std::string>* sources) {
  std::string out =
      "# kilnd configuration. Precedence: flags > KILN_* environment > this file > defaults.\n";
  std::string_view section;
  for (const ConfigOption& option : ServerConfigOptions()) {
    const std::string_view option_section = Section(option.key);
    if (option_section != section) {
      section = option_section;
      absl::StrAppend(&out, S(section), ":\n");
    }
    const std::string_view name =
        section.empty() ? option.key : option.key.substr(section.size() + 1);
    absl::StrAppend(&out, section.empty() ? "" : "  ", S(name), ": ",
                    YamlScalar(option.format(config), option.is_bool));
    if (sources != nullptr) {
      if (auto it = sources->find(S(option.key)); it != sources->end()) {
        absl::StrAppend(&out, "  # ", it->second);
      }
    }
    out += '\n';
  }
  return out;
}

} // namespace kiln::server
