// Frontend benchmarks: TileLang source -> specialized IR -> verify ->
// canonical form -> SHA-256 key, the work kilnd does on a cache miss before
// any code generation (and, without the memo, on every request).
//
//   build/bench/frontend_bench [--benchmark_repetitions=10]
//
// Each benchmark loads one example program with its default bindings (the
// `# kiln: bind` line of the file).
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "benchmark/benchmark.h"
#include "compiler/frontend/frontend.h"
#include "compiler/frontend/parser.h"
#include "compiler/ir/canonicalize.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace {

struct Example {
  std::string path;
  std::string source;
  kiln::frontend::FrontendOptions options;
};

Example LoadExample(const std::string& rel) {
  Example ex;
  ex.path = std::string(KILN_SOURCE_DIR) + "/" + rel;
  std::ifstream in(ex.path);
  ex.source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  ex.options.file_name = rel;
  std::istringstream lines(ex.source);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string tag = "# kiln: bind ";
    if (line.rfind(tag, 0) != 0) continue;
    std::istringstream words(line.substr(tag.size()));
    std::string word;
    while (words >> word) {
      size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      ex.options.bindings.emplace_back(word.substr(0, eq),
                                       kiln::frontend::ParseBindingText(word.substr(eq + 1)));
    }
    break;
  }
  return ex;
}

const char* const kExamples[] = {
    "examples/attention/flash_attention_fwd.py",
    "examples/gemm/gemm.py",
    "examples/softmax/softmax.py",
};

void BM_Parse(benchmark::State& state) {
  Example ex = LoadExample(kExamples[state.range(0)]);
  state.SetLabel(ex.options.file_name);
  for (auto _ : state) {
    auto module = kiln::frontend::ParseModule(ex.source, ex.options.file_name);
    if (!module.ok()) state.SkipWithError(std::string(module.status().message()).c_str());
    benchmark::DoNotOptimize(module);
  }
}

void BM_FrontendVerifyHash(benchmark::State& state) {
  Example ex = LoadExample(kExamples[state.range(0)]);
  state.SetLabel(ex.options.file_name);
  for (auto _ : state) {
    auto program = kiln::frontend::CompileSource(ex.source, ex.options);
    if (!program.ok()) {
      state.SkipWithError(std::string(program.status().message()).c_str());
      break;
    }
    if (!kiln::ir::Verify(*program).ok()) {
      state.SkipWithError("verify failed");
      break;
    }
    std::string key = kiln::ir::ProgramKey(*program);
    benchmark::DoNotOptimize(key);
  }
}

void BM_PrintIr(benchmark::State& state) {
  Example ex = LoadExample(kExamples[state.range(0)]);
  auto program = kiln::frontend::CompileSource(ex.source, ex.options);
  if (!program.ok()) {
    state.SkipWithError(std::string(program.status().message()).c_str());
    return;
  }
  state.SetLabel(ex.options.file_name);
  for (auto _ : state) benchmark::DoNotOptimize(kiln::ir::PrintProgram(*program));
}

BENCHMARK(BM_Parse)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FrontendVerifyHash)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrintIr)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
