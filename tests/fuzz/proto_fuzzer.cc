// Fuzz target: arbitrary bytes as a kiln.v1.Program wire message. FromProto
// must reject or accept without crashing; an accepted program must print,
// verify (or fail verification cleanly) and convert back to the same proto.
#include <cstdint>
#include <cstdlib>

#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::v1::Program proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto program = kiln::ir::FromProto(proto);
  if (!program.ok()) return 0;
  (void)kiln::ir::Verify(*program);
  (void)kiln::ir::PrintProgram(*program);
  kiln::v1::Program again;
  kiln::ir::ToProto(*program, &again);
  auto round = kiln::ir::FromProto(again);
  if (!round.ok() || !(*round == *program)) std::abort();
  return 0;
}
