#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "clients/cpp/json_output.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.pb.h"

namespace kiln::cli {
namespace {

namespace pb = kiln::v1;

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}

TEST(MessageJson, SixtyFourBitIntegersAreNumbers) {
  pb::Device d;
  d.set_id("cuda:0");
  d.set_memory_bytes(int64_t{150} << 30);
  d.set_l2_bytes(int64_t{1} << 62); // beyond a double's 53 bits: must stay exact
  d.mutable_measured()->set_measured_unix_ms(1764950400123);
  pb::ValidationSpec v;
  v.set_seed(UINT64_C(18446744073709551615));

  const OrderedJson j = MessageJson(d);
  ASSERT_TRUE(j.at("memory_bytes").is_number_integer()) << Dump(j);
  EXPECT_EQ(j.at("memory_bytes").get<int64_t>(), int64_t{150} << 30);
  EXPECT_EQ(j.at("l2_bytes").get<int64_t>(), int64_t{1} << 62);
  EXPECT_EQ(j.at("measured").at("measured_unix_ms").get<int64_t>(), 1764950400123);
  const OrderedJson jv = MessageJson(v);
  ASSERT_TRUE(jv.at("seed").is_number_unsigned()) << Dump(jv);
  EXPECT_EQ(jv.at("seed").get<uint64_t>(), UINT64_C(18446744073709551615));
  // And in the text a reader parses: no quotes around the numbers.
  EXPECT_NE(Dump(j).find("\"l2_bytes\":4611686018427387904"), std::string::npos) << Dump(j);
}

TEST(MessageJson, ConfigsArePlainValuesSortedByName) {
  pb::Measurement m;
  (*m.mutable_config())["block_N"] = Int(64);
  (*m.mutable_config())["block_M"] = Int(128);
  (*m.mutable_config())["scale"].set_float_value(0.5);
  (*m.mutable_config())["flag"].set_bool_value(true);
  (*m.mutable_config())["mode"].set_string_value("fast");
  (*m.mutable_config())["unset"];
  m.set_status(pb::Measurement::STATUS_OK);
  m.set_median_us(12.5);
  m.set_unix_ms(1764950400123);

  const OrderedJson j = MessageJson(m);
  const OrderedJson& c = j.at("config");
  EXPECT_EQ(c.at("block_M"), 128);
  EXPECT_EQ(c.at("block_N"), 64);
  EXPECT_EQ(c.at("scale"), 0.5);
  EXPECT_EQ(c.at("flag"), true);
  EXPECT_EQ(c.at("mode"), "fast");
  EXPECT_TRUE(c.at("unset").is_null());
  EXPECT_EQ(c.begin().key(), "block_M"); // sorted, whatever the map's order
  EXPECT_EQ(j.at("status"), "STATUS_OK");
  EXPECT_EQ(j.at("unix_ms"), 1764950400123);
  // Fields at their default are printed (a stable shape); unset messages not.
  EXPECT_EQ(j.at("samples"), 0);
  EXPECT_EQ(j.at("error"), "");
  EXPECT_EQ(Dump(j).find("int_value"), std::string::npos) << Dump(j);

  // A value list of BindingValues (a tune space) flattens too.
  pb::TuneSpace space;
  *(*space.mutable_candidates())["block_M"].add_values() = Int(64);
  *(*space.mutable_candidates())["block_M"].add_values() = Int(128);
  EXPECT_EQ(MessageJson(space).at("candidates").at("block_M").at("values"),
            OrderedJson::parse("[64, 128]"));
}

TEST(MessageJson, NestedRepeatedEnumsBytesAndPresence) {
  pb::TuneResult r;
  pb::Measurement* a = r.add_measurements();
  (*a->mutable_config())["block_M"] = Int(16);
  a->set_status(pb::Measurement::STATUS_COMPILE_ERROR);
  r.mutable_best_artifact()->mutable_launch()->add_block(256);
  r.mutable_best_artifact()->mutable_launch()->set_dynamic_shared_bytes(49152);
  OrderedJson j = MessageJson(r);
  EXPECT_FALSE(j.contains("best")) << Dump(j); // a message field only when set
  ASSERT_EQ(j.at("measurements").size(), 1u);
  EXPECT_EQ(j.at("measurements")[0].at("status"), "STATUS_COMPILE_ERROR");
  EXPECT_EQ(j.at("best_artifact").at("launch").at("block"), OrderedJson::parse("[256]"));
  EXPECT_EQ(j.at("best_artifact").at("launch").at("dynamic_shared_bytes"), 49152);
  EXPECT_EQ(j.at("best_artifact").at("files"), OrderedJson::array());
  // Proto field order is kept.
  EXPECT_EQ(j.begin().key(), "measurements");

  pb::EchoResponse e;
  e.set_payload(std::string("\x00\xff", 2));
  EXPECT_EQ(MessageJson(e).at("payload"), "AP8=");

  pb::LatencyDistribution l;
  l.set_median_us(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(MessageJson(l).at("median_us").is_null());
}

TEST(ErrorJson, CodeMessageAndLocatedDiagnostics) {
  const absl::Status s =
      absl::InvalidArgumentError("tune: /tmp/k_bad.py:7:9: undefined name 'undefined_name'\n"
                                 "        A[0] = undefined_name\n"
                                 "               ^\n"
                                 "gemm.py:12:1: note: here");
  const OrderedJson j = ErrorJson(s);
  const OrderedJson& e = j.at("error");
  EXPECT_EQ(e.at("code"), "INVALID_ARGUMENT");
  EXPECT_EQ(e.at("message"), std::string(s.message()));
  ASSERT_EQ(e.at("diagnostics").size(), 2u) << Dump(j);
  EXPECT_EQ(e.at("diagnostics")[0].at("file"), "/tmp/k_bad.py");
  EXPECT_EQ(e.at("diagnostics")[0].at("line"), 7);
  EXPECT_EQ(e.at("diagnostics")[0].at("col"), 9);
  EXPECT_EQ(e.at("diagnostics")[0].at("message"), "undefined name 'undefined_name'");
  EXPECT_EQ(e.at("diagnostics")[1].at("file"), "gemm.py");
  EXPECT_EQ(e.at("diagnostics")[1].at("message"), "note: here");

  const OrderedJson none = ErrorJson(absl::UnavailableError("connection refused: 127.0.0.1:1"));
  EXPECT_EQ(none.at("error").at("code"), "UNAVAILABLE");
  EXPECT_EQ(none.at("error").at("diagnostics"), OrderedJson::array());

  // One parseable line, whatever bytes the message holds.
  const std::string line = ErrorJsonLine(absl::NotFoundError("no file 'a\xff.py'"));
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(nlohmann::json::parse(line).at("error").at("code"), "NOT_FOUND");
}

TEST(ErrorJson, LinesWithoutALocationAreNotDiagnostics) {
  for (const char* text :
       {"kiln: cannot get an answer from kilnd at 127.0.0.1:7070: refused", "time 12:30: late",
        "a.py:0:0: nothing", "a.py:7: no column", ":7:9: "}) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(ParseDiagnostics(text).empty());
  }
}

TEST(WantsJson, SeesTheFlagAnywhere) {
  EXPECT_TRUE(WantsJson({"f.py", "--json", "--bind"}));
  EXPECT_FALSE(WantsJson({"f.py", "--jsonx"}));
}

} // namespace
} // namespace kiln::cli
