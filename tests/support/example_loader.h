// Test and benchmark support: the example programs under examples/ and their
// machine-read header lines
//   # kiln: bind NAME=VALUE ...        (realistic GPU size)
//   # kiln: test-bind NAME=VALUE ...   (small, ragged; CPU emulation size)
// Header-only; no dependencies beyond the frontend's BindingValue.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/frontend/frontend.h"

namespace kiln::testing {

struct ExampleFile {
  std::string rel_path; // "examples/gemm/gemm.py"
  std::string source;
  std::vector<std::pair<std::string, frontend::BindingValue>> bind;
  std::vector<std::pair<std::string, frontend::BindingValue>> test_bind;

  frontend::FrontendOptions Options(bool test_size) const {
    frontend::FrontendOptions options;
    options.file_name = rel_path;
    options.bindings = test_size ? test_bind : bind;
    return options;
  }
};

inline std::vector<std::pair<std::string, frontend::BindingValue>>
ParseBindLine(const std::string& rest) {
  std::vector<std::pair<std::string, frontend::BindingValue>> out;
  std::istringstream words(rest);
  std::string word;
  while (words >> word) {
    size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out.emplace_back(word.substr(0, eq), frontend::ParseBindingText(word.substr(eq + 1)));
  }
  return out;
}

inline ExampleFile LoadExampleFile(const std::string& source_dir, const std::string& rel_path) {
  ExampleFile ex;
  ex.rel_path = rel_path;
  std::ifstream in(source_dir + "/" + rel_path, std::ios::binary);
  ex.source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::istringstream lines(ex.source);
  std::string line;
  const std::string bind_tag = "# kiln: bind ";
  const std::string test_tag = "# kiln: test-bind ";
  while (std::getline(lines, line)) {
    if (line.rfind(bind_tag, 0) == 0) ex.bind = ParseBindLine(line.substr(bind_tag.size()));
    if (line.rfind(test_tag, 0) == 0) ex.test_bind = ParseBindLine(line.substr(test_tag.size()));
  }
  return ex;
}

// Every examples/**/*.py, sorted by path.
inline std::vector<ExampleFile> LoadAllExamples(const std::string& source_dir) {
  std::vector<std::string> paths;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(source_dir + "/examples")) {
    if (entry.is_regular_file() && entry.path().extension() == ".py") {
      paths.push_back(std::filesystem::relative(entry.path(), source_dir).string());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<ExampleFile> out;
  for (const std::string& p : paths) out.push_back(LoadExampleFile(source_dir, p));
  return out;
}

} // namespace kiln::testing
