// server/request_convert.h: a list binding on the wire (BindingValue.int_list)
// becomes the frontend's kIntList, and one past the bound is InvalidArgument
// naming the binding before anything is copied; tuning knobs ("kiln:split_k")
// in the bindings or the config are pass options, never bindings.
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/request_convert.h"

namespace kiln::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BindingFromProto, IntListAndTuple) {
  kiln::v1::BindingValue v;
  v.mutable_int_list()->add_values(37);
  v.mutable_int_list()->add_values(64);
  absl::StatusOr<frontend::BindingValue> b = BindingFromProto("sizes", v);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->kind, frontend::BindingValue::Kind::kIntList);
  EXPECT_THAT(b->ivals, ElementsAre(37, 64));
  EXPECT_FALSE(b->tuple);
  v.mutable_int_list()->set_tuple(true);
  b = BindingFromProto("sizes", v);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->tuple);
}

TEST(BindingFromProto, ListPastTheBound) {
  kiln::v1::BindingValue v;
  for (size_t i = 0; i <= frontend::kMaxBindingListItems; ++i) v.mutable_int_list()->add_values(1);
  absl::StatusOr<frontend::BindingValue> b = BindingFromProto("sizes", v);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(absl::StrCat(b.status().message()), HasSubstr("binding 'sizes': a list of 4097"));
}

kiln::v1::BindingValue IntValue(int64_t v) {
  kiln::v1::BindingValue b;
  b.set_int_value(v);
  return b;
}

TEST(Knobs, AreThePassOptionsOfTheBuildNotBindings) {
  kiln::v1::ProgramSource source;
  source.set_tilelang_source("x = 1\n");
  (*source.mutable_bindings())["M"] = IntValue(16);
  (*source.mutable_bindings())["kiln:split_k"] = IntValue(2);
  google::protobuf::Map<std::string, kiln::v1::BindingValue> config;
  config["block_M"] = IntValue(64);
  config["kiln:split_k"] = IntValue(8);
  absl::StatusOr<driver::ProgramInput> in = ProgramFromProto(source, config);
  ASSERT_TRUE(in.ok()) << in.status();
  std::vector<std::string> names;
  for (const auto& [name, value] : in->bindings) names.push_back(name);
  EXPECT_THAT(names, ElementsAre("M", "block_M"));
  driver::BuildOptions options = OptionsFromProto("cuda:sm_90", kiln::v1::CompileOptions());
  options.pass_options = {"split-k=4"};
  ASSERT_TRUE(AddKnobs(source, config, &options).ok());
  // The request's own option, the program's knob, the config's (last wins).
  EXPECT_THAT(options.pass_options, ElementsAre("split-k=4", "split-k=2", "split-k=8"));
  EXPECT_EQ(driver::SplitKParts(options), 8);
  config["kiln:split_k"] = IntValue(1); // 1 asks for no split (not even Kiln's own)
  driver::BuildOptions one;
  ASSERT_TRUE(AddKnobs(kiln::v1::ProgramSource(), config, &one).ok());
  EXPECT_THAT(one.pass_options, ElementsAre("split-k=1"));

  for (const auto& [name, value, message] :
       std::vector<std::tuple<std::string, kiln::v1::BindingValue, std::string>>{
           {"kiln:split_k", IntValue(65), "kiln:split_k = 65: the splits must be in 1..64"},
           {"kiln:split", IntValue(2), "unknown tuning knob 'kiln:split'"}}) {
    google::protobuf::Map<std::string, kiln::v1::BindingValue> bad;
    bad[name] = value;
    driver::BuildOptions o;
    const absl::Status st = AddKnobs(kiln::v1::ProgramSource(), bad, &o);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(absl::StrCat(st.message()), HasSubstr("config entry '" + name + "': " + message));
  }
  google::protobuf::Map<std::string, kiln::v1::BindingValue> text;
  text["kiln:split_k"].set_string_value("4");
  driver::BuildOptions o;
  EXPECT_THAT(absl::StrCat(AddKnobs(kiln::v1::ProgramSource(), text, &o).message()),
              HasSubstr("a tuning knob takes an integer"));
}

} // namespace
} // namespace kiln::server
