// CommandTable: dispatch, and the JSON error object that every command's
// failure gets under --json when the command printed none itself.
#include <sstream>
#include <string>
#include <vector>

#include "clients/cpp/command_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kiln::cli {
namespace {

CommandTable Table() {
  CommandTable t;
  // Fails like a usage error: a message on stderr, nothing on stdout.
  t.Add({"usage", "fails with a usage error", [](const std::vector<std::string>&, CommandIo io) {
           io.err << "kiln usage: unknown flag '--bnd'; did you mean '--bind'?\nusage: ...\n";
           return kExitUsage;
         }});
  // Fails after printing its own JSON error object.
  t.Add({"own", "prints its own error", [](const std::vector<std::string>&, CommandIo io) {
           io.out << "{\"error\": {\"code\": \"NOT_FOUND\"}}\n";
           io.err << "kiln own: not found\n";
           return kExitFailure;
         }});
  t.Add({"ok", "succeeds", [](const std::vector<std::string>&, CommandIo io) {
           io.out << "fine\n";
           return kExitOk;
         }});
  return t;
}

struct Outcome {
  int rc;
  std::string out, err;
};

Outcome Dispatch(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  std::vector<std::string> argv = {"kiln"};
  argv.insert(argv.end(), args.begin(), args.end());
  const int rc = Table().Dispatch(argv, {out, err});
  return {rc, out.str(), err.str()};
}

TEST(CommandTable, AFailureUnderJsonWithoutAnAnswerGetsTheErrorObject) {
  const Outcome r = Dispatch({"usage", "--json"});
  EXPECT_EQ(r.rc, kExitUsage);
  EXPECT_THAT(r.err, ::testing::HasSubstr("did you mean '--bind'")); // stderr unchanged
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["error"]["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(j["error"]["message"], "kiln usage: unknown flag '--bnd'; did you mean '--bind'?");
  EXPECT_EQ(j["error"]["exit_code"], kExitUsage);
  EXPECT_TRUE(j["error"]["diagnostics"].is_array());
}

TEST(CommandTable, ACommandsOwnAnswerIsNotRepeated) {
  const Outcome r = Dispatch({"own", "--json"});
  EXPECT_EQ(r.rc, kExitFailure);
  EXPECT_EQ(r.out, "{\"error\": {\"code\": \"NOT_FOUND\"}}\n");
}

TEST(CommandTable, WithoutJsonOrOnSuccessNothingIsAdded) {
  Outcome r = Dispatch({"usage"});
  EXPECT_EQ(r.rc, kExitUsage);
  EXPECT_EQ(r.out, "");
  r = Dispatch({"ok", "--json"});
  EXPECT_EQ(r.rc, kExitOk);
  EXPECT_EQ(r.out, "fine\n");
}

} // namespace
} // namespace kiln::cli
