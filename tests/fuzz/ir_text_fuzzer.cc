// Fuzz target: arbitrary bytes as textual IR. The parser must return a
// program or a located error; a parsed program must print and parse back to
// an equal program.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/text_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto program = kiln::ir::ParseProgramText(text, "fuzz.kir");
  if (!program.ok()) return 0;
  kiln::ir::PrintOptions options;
  options.locations = true;
  auto again = kiln::ir::ParseProgramText(kiln::ir::PrintProgram(*program, options), "p.kir");
  if (!again.ok()) std::abort();
  kiln::ir::StripLocations(&*program);
  kiln::ir::StripLocations(&*again);
  // NaN literals compare unequal to themselves; compare printed forms.
  if (kiln::ir::PrintProgram(*program) != kiln::ir::PrintProgram(*again)) std::abort();
  return 0;
}
