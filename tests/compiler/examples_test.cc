// Every example program: compiles through the frontend at both of its
// bindings, verifies, and round-trips through the textual IR (with and
// without locations) and through the wire proto; its key survives a reprint.
#include <string>

#include "compiler/ir/hash.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/proto_convert.h"
#include "compiler/ir/text_parser.h"
#include "compiler/ir/verifier.h"
#include "gtest/gtest.h"
#include "tests/support/example_loader.h"

namespace kiln {
namespace {

class ExamplesTest : public ::testing::TestWithParam<bool> {};

TEST_P(ExamplesTest, CompileVerifyRoundTrip) {
  const bool test_size = GetParam();
  std::vector<testing::ExampleFile> examples = testing::LoadAllExamples(KILN_SOURCE_DIR);
  ASSERT_GE(examples.size(), 12u);
  for (const testing::ExampleFile& ex : examples) {
    SCOPED_TRACE(ex.rel_path);
    ASSERT_FALSE((test_size ? ex.test_bind : ex.bind).empty()) << "missing '# kiln: bind' line";
    auto program = frontend::CompileSource(ex.source, ex.Options(test_size));
    ASSERT_TRUE(program.ok()) << program.status();
    ASSERT_TRUE(ir::Verify(*program).ok()) << ir::Verify(*program);

    // Text round trip with locations: exact.
    ir::PrintOptions with_locs;
    with_locs.locations = true;
    auto reparsed = ir::ParseProgramText(ir::PrintProgram(*program, with_locs), ex.rel_path);
    ASSERT_TRUE(reparsed.ok()) << reparsed.status();
    reparsed->source_name = program->source_name;
    EXPECT_TRUE(*reparsed == *program) << ir::PrintProgram(*reparsed);

    // Text round trip without locations: equal up to locations.
    auto plain = ir::ParseProgramText(ir::PrintProgram(*program), ex.rel_path);
    ASSERT_TRUE(plain.ok()) << plain.status();
    ir::Program stripped = *program;
    ir::StripLocations(&stripped);
    ir::StripLocations(&*plain);
    plain->source_name = stripped.source_name;
    EXPECT_TRUE(*plain == stripped);

    // Proto round trip: exact.
    kiln::v1::Program proto;
    ir::ToProto(*program, &proto);
    auto from_proto = ir::FromProto(proto);
    ASSERT_TRUE(from_proto.ok()) << from_proto.status();
    EXPECT_TRUE(*from_proto == *program);

    // The key does not depend on the trip.
    EXPECT_EQ(ir::ProgramKey(*plain), ir::ProgramKey(*program));
  }
}

INSTANTIATE_TEST_SUITE_P(Bindings, ExamplesTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "TestSize" : "GpuSize"; });

} // namespace
} // namespace kiln
