// Fuzz target: arbitrary bytes as TileLang source. The frontend must return
// a program or a located error — never crash, hang or trip a sanitizer — and
// any program it returns must verify-or-fail cleanly and survive a round
// trip through the textual IR.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "compiler/frontend/frontend.h"
#include "compiler/ir/hash.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/text_parser.h"
#include "compiler/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string_view source(reinterpret_cast<const char*>(data), size);
  kiln::frontend::FrontendOptions options;
  options.file_name = "fuzz.py";
  // Common parameter names get bindings so that kernels reach lowering.
  for (const char* name : {"M", "N", "K", "block_M", "block_N", "block_K", "threads", "num_stages",
                           "batch", "heads", "seq_len", "dim", "blk_m", "blk_k"}) {
    options.bindings.emplace_back(name, kiln::frontend::ParseBindingText("64"));
  }
  auto program = kiln::frontend::CompileSource(source, options);
  if (!program.ok()) {
    // Errors must be located: "fuzz.py:" prefix.
    if (program.status().message().substr(0, 7) != "fuzz.py") std::abort();
    return 0;
  }
  if (!kiln::ir::Verify(*program).ok()) return 0;
  std::string text = kiln::ir::PrintProgram(*program);
  auto reparsed = kiln::ir::ParseProgramText(text, "printed.kir");
  if (!reparsed.ok()) std::abort();
  kiln::ir::StripLocations(&*program);
  kiln::ir::StripLocations(&*reparsed);
  if (kiln::ir::ProgramKey(*program) != kiln::ir::ProgramKey(*reparsed)) std::abort();
  return 0;
}
