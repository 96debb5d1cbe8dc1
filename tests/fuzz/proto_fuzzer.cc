// Fuzz target: arbitrary bytes as a kiln.v1.Program wire message. FromProto
// must reject or accept without crashing; an accepted program must print,
// verify (or fail verification cleanly) and convert back to the same proto.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/verifier.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/stubs/logging.h"

namespace {

void IgnoreProtobufLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}

// Deterministic bytes (map fields in key order).
std::string Bytes(const kiln::v1::Program& m) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Invalid UTF-8 in string fields is logged by protobuf; it is expected here.
  static const bool quiet = (google::protobuf::SetLogHandler(&IgnoreProtobufLog), true);
  (void)quiet;
  kiln::v1::Program proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto program = kiln::ir::FromProto(proto);
  if (!program.ok()) return 0;
  (void)kiln::ir::Verify(*program);
  (void)kiln::ir::PrintProgram(*program);
  kiln::v1::Program again;
  kiln::ir::ToProto(*program, &again);
  auto round = kiln::ir::FromProto(again);
  if (!round.ok()) std::abort();
  // Compare wire bytes, not IR values: a NaN literal is unequal to itself.
  kiln::v1::Program twice;
  kiln::ir::ToProto(*round, &twice);
  if (Bytes(twice) != Bytes(again)) std::abort();
  return 0;
}
