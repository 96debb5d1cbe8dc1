// The did-you-mean helper of the kiln command line (clients/cpp/suggest.h).
#include <optional>
#include <string>
#include <vector>

#include "clients/cpp/suggest.h"
#include "gtest/gtest.h"

namespace kiln::cli {
namespace {

TEST(EditDistanceTest, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  struct Case {
    const char* a;
    const char* b;
    int distance;
  };
  for (const Case& c : std::vector<Case>{{"", "", 0},
                                         {"", "abc", 3},
                                         {"compile", "compile", 0},
                                         {"compil", "compile", 1},
                                         {"bnd", "bind", 1},
                                         {"tnue", "tune", 1}, // a swap is one edit
                                         {"kitten", "sitting", 3},
                                         {"abc", "xyz", 3}}) {
    SCOPED_TRACE(std::string(c.a) + " / " + c.b);
    EXPECT_EQ(EditDistance(c.a, c.b), c.distance);
    EXPECT_EQ(EditDistance(c.b, c.a), c.distance);
  }
}

TEST(SuggestTest, NamesTheClosestKnownCommandOrFlag) {
  const std::vector<std::string> commands = {"cache",  "tune",    "compile", "best",
                                             "bench",  "stats",   "devices", "jobs",
                                             "health", "regress", "version"};
  const std::vector<std::string> flags = {"--bind", "--config", "--entry",  "--target",
                                          "--emit", "--json",   "--server", "--timeout"};
  struct Case {
    const char* typed;
    const std::vector<std::string>* known;
    std::optional<std::string> want;
  };
  for (const Case& c :
       std::vector<Case>{{"compil", &commands, "compile"},
                         {"tnue", &commands, "tune"},
                         {"devics", &commands, "devices"},
                         {"regres", &commands, "regress"},
                         {"verison", &commands, "version"},
                         {"--bnd", &flags, "--bind"},
                         {"--bnd=M=1", &flags, "--bind"}, // the value does not count
                         {"--trget", &flags, "--target"},
                         {"--jsno", &flags, "--json"},
                         {"--serv", &flags, "--server"}, // the only flag it begins
                         {"--timout=5", &flags, "--timeout"},
                         {"frobnicate", &commands, std::nullopt},
                         {"--colour", &flags, std::nullopt},
                         {"x", &commands, std::nullopt},
                         {"--e", &flags, std::nullopt},          // too short to be a prefix
                         {"bind", &flags, std::nullopt},         // a name is not matched with flags
                         {"--compile", &commands, std::nullopt}, // nor a flag with names
                         {"--bind", &flags, std::nullopt}}) {    // a known flag is no typo
    SCOPED_TRACE(c.typed);
    EXPECT_EQ(Suggest(c.typed, *c.known), c.want);
  }
}

TEST(SuggestTest, TiesGoToTheEarlierEntry) {
  EXPECT_EQ(Suggest("bes", {"best", "bench"}), "best");
  EXPECT_EQ(Suggest("bes", {"bench", "best"}), "best"); // best is 1 edit, bench 2
  EXPECT_EQ(Suggest("--ab", {"--abc", "--abd"}), "--abc");
}

TEST(SuggestTest, MessagesEndWithTheSuggestionOrNothing) {
  EXPECT_EQ(DidYouMean("compil", {"compile"}), "; did you mean 'compile'?");
  EXPECT_EQ(DidYouMean("zzzzzz", {"compile"}), "");
  EXPECT_EQ(UnknownFlag("--bnd", {"--bind", "--entry"}),
            "unknown flag '--bnd'; did you mean '--bind'?");
  EXPECT_EQ(UnknownFlag("--zzz", {"--bind"}), "unknown flag '--zzz'");
}

} // namespace
} // namespace kiln::cli
