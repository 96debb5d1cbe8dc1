// Frontend benchmarks: TileLang source -> specialized IR -> verify ->
// canonical form -> SHA-256 key, the work kilnd does on a cache miss before
// any code generation (and, without the memo, on every request).
//
//   build/bench/frontend_bench [--benchmark_repetitions=10]
//
// Each benchmark loads one example program with its default bindings (the
// `# kiln: bind` line of the file).
#include <string>

#include "benchmark/benchmark.h"
#include "compiler/frontend/frontend.h"
#include "compiler/frontend/parser.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "tests/support/example_loader.h"

namespace kiln {
namespace {

testing::ExampleFile LoadExample(const char* rel) {
  return testing::LoadExampleFile(KILN_SOURCE_DIR, rel);
}

const char* const kExamples[] = {
    "examples/attention/flash_attention_fwd.py",
    "examples/gemm/gemm.py",
    "examples/softmax/softmax.py",
};

void BM_Parse(benchmark::State& state) {
  const testing::ExampleFile ex = LoadExample(kExamples[state.range(0)]);
  state.SetLabel(ex.rel_path);
  for (auto _ : state) {
    auto module = frontend::ParseModule(ex.source, ex.rel_path);
    if (!module.ok()) state.SkipWithError(std::string(module.status().message()).c_str());
    benchmark::DoNotOptimize(module);
  }
}

void BM_FrontendVerifyHash(benchmark::State& state) {
  const testing::ExampleFile ex = LoadExample(kExamples[state.range(0)]);
  state.SetLabel(ex.rel_path);
  for (auto _ : state) {
    auto program = frontend::CompileSource(ex.source, ex.Options(false));
    if (!program.ok()) {
      state.SkipWithError(std::string(program.status().message()).c_str());
      break;
    }
    if (!ir::Verify(*program).ok()) {
      state.SkipWithError("verify failed");
      break;
    }
    std::string key = ir::ProgramKey(*program);
    benchmark::DoNotOptimize(key);
  }
}

void BM_PrintIr(benchmark::State& state) {
  const testing::ExampleFile ex = LoadExample(kExamples[state.range(0)]);
  auto program = frontend::CompileSource(ex.source, ex.Options(false));
  if (!program.ok()) {
    state.SkipWithError(std::string(program.status().message()).c_str());
    return;
  }
  state.SetLabel(ex.rel_path);
  for (auto _ : state) benchmark::DoNotOptimize(ir::PrintProgram(*program));
}

BENCHMARK(BM_Parse)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FrontendVerifyHash)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrintIr)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

} // namespace
} // namespace kiln

BENCHMARK_MAIN();
