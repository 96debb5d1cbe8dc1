// The bindings a regress case ran with against those its baseline's runs
// recorded (in the daemon's spelling, server/best_config.cc): equal values
// match, a changed, added or removed binding does not, an entry of an older
// kilnd (no "bindings") is unknown and kept with a count.
#include "clients/cpp/regress/bindings_check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::regress {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

kiln::v1::BindingValue Int(int64_t v) {
  kiln::v1::BindingValue b;
  b.set_int_value(v);
  return b;
}
kiln::v1::BindingValue Float(double v) {
  kiln::v1::BindingValue b;
  b.set_float_value(v);
  return b;
}
kiln::v1::BindingValue Str(const std::string& v) {
  kiln::v1::BindingValue b;
  b.set_string_value(v);
  return b;
}
kiln::v1::BindingValue Bool(bool v) {
  kiln::v1::BindingValue b;
  b.set_bool_value(v);
  return b;
}

// As kilnd's Benchmark records M=256 N=1024 dtype=float16 scale=0.1 relu=true.
constexpr char kRecorded[] =
    R"({"artifact_key": "ab12", "config": {"block_M": 32}, "bindings": {"M": 256, "N": 1024, )"
    R"("dtype": "float16", "relu": true, "scale": 0.10000000000000001}})";

TEST(BindingsCheck, WhatWasSentEqualsWhatTheDaemonRecorded) {
  const Bindings sent = BindingsOf({{"M", Int(256)},
                                    {"N", Int(1024)},
                                    {"dtype", Str("float16")},
                                    {"scale", Float(0.1)},
                                    {"relu", Bool(true)}});
  const std::optional<Bindings> recorded = RecordedBindings(kRecorded);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(*recorded, sent);
  EXPECT_EQ(BindingsDiff(*recorded, sent), "");
  EXPECT_EQ(BindingsText(sent),
            "M=256 N=1024 dtype=\"float16\" relu=true scale=0.10000000000000001");
}

TEST(BindingsCheck, AnIntegerAndAFloatOfOneValueDiffer) {
  EXPECT_NE(BindingsOf({{"M", Int(256)}}), BindingsOf({{"M", Float(256)}}));
  EXPECT_EQ(BindingsOf({{"M", Float(256)}}), *RecordedBindings(R"({"bindings": {"M": 256.0}})"));
}

TEST(BindingsCheck, EntriesWithoutBindingsAreUnknown) {
  EXPECT_FALSE(RecordedBindings(R"({"artifact_key": "ab", "config": {"block_M": 32}})"));
  EXPECT_FALSE(RecordedBindings("not json"));
  EXPECT_FALSE(RecordedBindings(""));
  EXPECT_FALSE(RecordedBindings(R"({"bindings": 3})"));
  EXPECT_EQ(RecordedBindings(R"({"bindings": {}})"), Bindings{});
}

TEST(BindingsCheck, TheDiffNamesChangedAddedAndRemovedBindings) {
  const Bindings old_b = {{"M", "256"}, {"N", "1024"}, {"K", "64"}};
  const Bindings new_b = {{"M", "2048"}, {"N", "1024"}, {"dtype", "\"float16\""}};
  EXPECT_EQ(BindingsDiff(old_b, new_b), "K: 64 -> (unset), M: 256 -> 2048, dtype: (unset) -> "
                                        "\"float16\"");
  EXPECT_EQ(BindingsText({}), "(none)");
}

TEST(SelectBaseline, EveryRunOfOtherBindingsIsAMismatchNamingThem) {
  const Bindings current = {{"M", "2048"}, {"N", "1024"}};
  const Bindings old_b = {{"M", "256"}, {"N", "1024"}};
  const BaselineSelection s =
      SelectBaseline({{100, old_b}, {101, old_b}, {99, old_b}}, current, "sha-2");
  EXPECT_TRUE(s.samples_us.empty());
  EXPECT_EQ(s.left_out, 3);
  EXPECT_EQ(s.mismatch, "the bindings differ from baseline sha-2's (M: 256 -> 2048; baseline "
                        "M=256 N=1024, this run M=2048 N=1024)");
}

TEST(SelectBaseline, RunsOfTheSameBindingsOrUnknownOnesAreCompared) {
  const Bindings current = {{"M", "256"}};
  const Bindings other = {{"M", "512"}};
  // Same bindings: all kept, nothing to say.
  BaselineSelection s = SelectBaseline({{100, current}, {101, current}}, current, "a");
  EXPECT_THAT(s.samples_us, ElementsAre(100, 101));
  EXPECT_EQ(s.mismatch, "");
  EXPECT_EQ(s.left_out + s.unknown, 0);
  // A label re-run with other bindings: only the matching runs count.
  s = SelectBaseline({{200, other}, {100, current}, {101, current}}, current, "a");
  EXPECT_THAT(s.samples_us, ElementsAre(100, 101));
  EXPECT_EQ(s.mismatch, "");
  EXPECT_EQ(s.left_out, 1);
  EXPECT_THAT(s.difference, HasSubstr("M: 512 -> 256"));
  // Recorded by an older kilnd: compared, and counted as unchecked.
  s = SelectBaseline({{100, std::nullopt}, {101, std::nullopt}}, current, "a");
  EXPECT_THAT(s.samples_us, ElementsAre(100, 101));
  EXPECT_EQ(s.unknown, 2);
  EXPECT_EQ(s.mismatch, "");
  // No runs: no baseline, not a mismatch.
  EXPECT_EQ(SelectBaseline({}, current, "a").mismatch, "");
}

} // namespace
} // namespace kiln::regress
