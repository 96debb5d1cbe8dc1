#include "clients/cpp/regress/suite.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "clients/cpp/client/client.h"

namespace kiln::regress {
namespace {

absl::Status Bad(const std::string& path, const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": ", where.empty() ? "" : where + ": ", what));
}

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// A scalar YAML value as a binding: the command line's rules (128, 1e-5,
// True, float16).
absl::StatusOr<std::map<std::string, kiln::v1::BindingValue>> Bindings(const YAML::Node& n) {
  std::map<std::string, kiln::v1::BindingValue> out;
  if (!n) return out;
  if (!n.IsMap()) return absl::InvalidArgumentError("must be a mapping NAME: VALUE");
  for (const auto& kv : n) {
    if (!kv.second.IsScalar()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", kv.first.as<std::string>(), "' must be a scalar"));
    }
    out[kv.first.as<std::string>()] = client::ParseBinding(kv.second.as<std::string>());
  }
  return out;
}

// Applies the fields of `n` (defaults or a kernel) onto `k`.
absl::Status Apply(const YAML::Node& n, SuiteKernel& k) {
  static const std::set<std::string> kKnown = {
      "name",       "file",   "entry",     "bindings",     "config",   "target",    "trials",
      "iterations", "warmup", "threshold", "significance", "flush_l2", "cuda_graph"};
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    if (!kKnown.count(key))
      return absl::InvalidArgumentError(absl::StrCat("unknown field '", key, "'"));
  }
  auto positive = [&](const char* field, int lo, int hi, int* out) -> absl::Status {
    if (!n[field]) return absl::OkStatus();
    int v = 0;
    if (!YAML::convert<int>::decode(n[field], v) || v < lo || v > hi) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " must be an integer in ", lo, "..", hi));
    }
    *out = v;
    return absl::OkStatus();
  };
  if (absl::Status s = positive("trials", 1, 1000, &k.trials); !s.ok()) return s;
  if (absl::Status s = positive("iterations", 1, 100000, &k.iterations); !s.ok()) return s;
  if (absl::Status s = positive("warmup", 0, 10000, &k.warmup); !s.ok()) return s;
  if (n["target"]) k.target = n["target"].as<std::string>();
  if (n["entry"]) k.entry = n["entry"].as<std::string>();
  for (const char* flag : {"flush_l2", "cuda_graph"}) {
    if (!n[flag]) continue;
    bool b = false;
    if (!YAML::convert<bool>::decode(n[flag], b)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, " must be true or false"));
    }
    (std::string(flag) == "flush_l2" ? k.flush_l2 : k.cuda_graph) = b;
  }
  if (n["threshold"]) {
    if (!ParseFraction(n["threshold"].as<std::string>(), &k.tolerance.threshold)) {
      return absl::InvalidArgumentError("threshold must be like 3% or 0.03");
    }
    k.has_threshold = true;
  }
  if (n["significance"]) {
    double p = 0;
    if (!YAML::convert<double>::decode(n["significance"], p) || p <= 0 || p >= 1) {
      return absl::InvalidArgumentError("significance must be a p-value in (0, 1)");
    }
    k.tolerance.significance = p;
    k.has_significance = true;
  }
  if (n["bindings"]) {
    absl::StatusOr<std::map<std::string, kiln::v1::BindingValue>> b = Bindings(n["bindings"]);
    if (!b.ok()) return absl::InvalidArgumentError(absl::StrCat("bindings ", b.status().message()));
    for (auto& [name, v] : *b) k.bindings[name] = v;
  }
  if (n["config"]) {
    if (n["config"].IsScalar()) {
      if (n["config"].as<std::string>() != "best") {
        return absl::InvalidArgumentError("config must be a mapping or the word best");
      }
      k.best_config = true;
      k.config.clear();
    } else {
      absl::StatusOr<std::map<std::string, kiln::v1::BindingValue>> c = Bindings(n["config"]);
      if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat("config ", c.status().message()));
      k.config = *c;
      k.best_config = false;
    }
  }
  return absl::OkStatus();
}

} // namespace

Tolerance ToleranceOf(const SuiteKernel& kernel, const Tolerance& flags) {
  return {kernel.has_threshold ? kernel.tolerance.threshold : flags.threshold,
          kernel.has_significance ? kernel.tolerance.significance : flags.significance};
}

absl::StatusOr<Suite> ParseSuite(const std::string& yaml_text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return Bad(path, "", absl::StrCat("not valid YAML: ", e.what()));
  }
  if (!root.IsMap()) return Bad(path, "", "a suite is a mapping with a 'kernels' list");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key != "defaults" && key != "kernels") {
      return Bad(path, "", absl::StrCat("unknown top-level field '", key, "'"));
    }
  }
  Suite suite;
  suite.path = path;
  SuiteKernel defaults;
  try {
    if (root["defaults"]) {
      const YAML::Node d = root["defaults"];
      if (!d.IsMap()) return Bad(path, "defaults", "must be a mapping");
      if (d["name"] || d["file"]) return Bad(path, "defaults", "name and file belong to a kernel");
      if (absl::Status s = Apply(d, defaults); !s.ok()) {
        return Bad(path, "defaults", absl::StrCat(s.message()));
      }
    }
    const YAML::Node kernels = root["kernels"];
    if (!kernels || !kernels.IsSequence() || kernels.size() == 0) {
      return Bad(path, "", "'kernels' must be a non-empty list");
    }
    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    std::set<std::string> names;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const YAML::Node n = kernels[i];
      const std::string where = absl::StrCat("kernels[", i, "]");
      if (!n.IsMap()) return Bad(path, where, "must be a mapping");
      SuiteKernel k = defaults;
      if (!n["name"] || !n["file"]) return Bad(path, where, "needs a name and a file");
      k.name = n["name"].as<std::string>();
      if (!ValidName(k.name)) {
        return Bad(path, where, absl::StrCat("name '", k.name, "' must be [A-Za-z0-9_.-]+"));
      }
      if (!names.insert(k.name).second) {
        return Bad(path, where, absl::StrCat("name '", k.name, "' is used twice"));
      }
      if (absl::Status s = Apply(n, k); !s.ok()) {
        return Bad(path, absl::StrCat(where, " (", k.name, ")"), absl::StrCat(s.message()));
      }
      const std::filesystem::path file(n["file"].as<std::string>());
      k.file = (file.is_absolute() ? file : base / file).lexically_normal().string();
      suite.kernels.push_back(std::move(k));
    }
  } catch (const YAML::Exception& e) {
    return Bad(path, "", e.what());
  }
  return suite;
}

absl::StatusOr<Suite> LoadSuite(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the suite '", path, "'"));
  return ParseSuite(
      std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), path);
}

} // namespace kiln::regress
