#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/token_file.h"
#include "util/sha256.h"
#include "util/temp_dir.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

TEST(TokenFileTest, ParsesTokensAndNames) {
  absl::StatusOr<std::vector<BearerToken>> tokens =
      ParseTokenFile("# CI and the training cluster\n"
                     "\n"
                     "3q2+7w8AAbcdEFgh1234ijkl  ci-runners   # rotated monthly\n"
                     "  Zm9vYmFyYmF6cXV4cXV1eA==\n"
                     "a-b.c_d~e+f/g0123456789\ttrainer\r\n",
                     "tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ((*tokens)[0].token, "3q2+7w8AAbcdEFgh1234ijkl");
  EXPECT_EQ((*tokens)[0].client, "ci-runners");
  EXPECT_EQ((*tokens)[1].token, "Zm9vYmFyYmF6cXV4cXV1eA==");
  EXPECT_EQ((*tokens)[1].client,
            "token-" + util::Sha256Hex("Zm9vYmFyYmF6cXV4cXV1eA==").substr(0, 8));
  EXPECT_EQ((*tokens)[2].client, "trainer");
}

TEST(TokenFileTest, RefusesBadFilesWithTheLine) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"", "f: no tokens"},
      {"# only a comment\n\n", "f: no tokens"},
      {"short\n", "f:1: the token is shorter than 16 characters"},
      {"\n0123456789abcdef0123 a b\n",
       "f:2: expected TOKEN [CLIENT_NAME] [role=ROLE], found 3 fields"},
      {"0123456789abcdef0123 a b role=read\n",
       "f:1: expected TOKEN [CLIENT_NAME] [role=ROLE], found 4 fields"},
      {"0123456789abcdef0123 role=read a\n",
       "f:1: expected TOKEN [CLIENT_NAME] [role=ROLE], found 3 fields"},
      {"0123456789abcdef0123 a role=root\n", "f:1: unknown role 'root'"},
      {"0123456789abcdef0123 a role=\n", "f:1: unknown role ''"},
      {"0123456789abcdef!123\n", "f:1: a token may only have"},
      {"0123456789abcdef==12\n", "f:1: a token may only have"},
      {"0123456789abcdef0123 a\n0123456789abcdef0123 b\n", "f:2: the same token is listed twice"},
      {"0123456789abcdef0123 a\n0123456789abcdef0124 a\n", "f:2: client name 'a' is listed twice"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<std::vector<BearerToken>> tokens = ParseTokenFile(c.text, "f");
    ASSERT_FALSE(tokens.ok());
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(tokens.status().message(), HasSubstr(c.message));
  }
}

// Issue 27, item 5: a token's role says which RPCs it may call; a line
// written before roles existed gets the default role.
TEST(TokenFileTest, ReadsRolesWithADefault) {
  absl::StatusOr<std::vector<BearerToken>> tokens =
      ParseTokenFile("0123456789abcdef0001 reader role=read\n"
                     "0123456789abcdef0002 builder role=compile\n"
                     "0123456789abcdef0003 tuner role=tune\n"
                     "0123456789abcdef0004 role=admin # name derived\n"
                     "0123456789abcdef0005 old-style\n"
                     "0123456789abcdef0006\n",
                     "f");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 6u);
  EXPECT_EQ((*tokens)[0].role, Role::kRead);
  EXPECT_EQ((*tokens)[1].role, Role::kCompile);
  EXPECT_EQ((*tokens)[2].role, Role::kTune);
  EXPECT_EQ((*tokens)[3].role, Role::kAdmin);
  EXPECT_EQ((*tokens)[3].client, "token-" + util::Sha256Hex("0123456789abcdef0004").substr(0, 8));
  EXPECT_EQ((*tokens)[4].role, kDefaultRole);
  EXPECT_EQ((*tokens)[4].client, "old-style");
  EXPECT_EQ((*tokens)[5].role, kDefaultRole);
  EXPECT_EQ(kDefaultRole, Role::kTune);
  EXPECT_TRUE(RoleAllows(Role::kAdmin, Role::kRead));
  EXPECT_TRUE(RoleAllows(Role::kTune, Role::kCompile));
  EXPECT_FALSE(RoleAllows(Role::kRead, Role::kCompile));
  EXPECT_FALSE(RoleAllows(Role::kTune, Role::kAdmin));
  for (Role r : {Role::kRead, Role::kCompile, Role::kTune, Role::kAdmin}) {
    EXPECT_EQ(ParseRole(RoleName(r)), r);
  }
  EXPECT_EQ(ParseRole("Admin"), std::nullopt);
}

TEST(TokenFileTest, LoadsAFile) {
  absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-token-test");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/tokens";
  std::ofstream(path) << "0123456789abcdef0123 ops\n";
  absl::StatusOr<std::vector<BearerToken>> tokens = LoadTokenFile(path);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->at(0).client, "ops");
  absl::StatusOr<std::vector<BearerToken>> missing = LoadTokenFile(dir->path() + "/missing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir->path() + "/missing"));
}

TEST(TokenFileTest, FindsOnlyTheExactToken) {
  const std::vector<BearerToken> tokens = {{"0123456789abcdef0123", "a"},
                                           {"zyxwvutsrqponmlkjihg", "b"}};
  ASSERT_NE(FindBearerToken(tokens, "zyxwvutsrqponmlkjihg"), nullptr);
  EXPECT_EQ(FindBearerToken(tokens, "zyxwvutsrqponmlkjihg")->client, "b");
  for (const char* wrong : {"", "0123456789abcdef012", "0123456789abcdef01234",
                            "0123456789ABCDEF0123", " 0123456789abcdef0123"}) {
    EXPECT_EQ(FindBearerToken(tokens, wrong), nullptr) << wrong;
  }
  EXPECT_EQ(FindBearerToken({}, "anything"), nullptr);
}

} // namespace
} // namespace kiln::server
