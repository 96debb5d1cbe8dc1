// The client name that fair share (per-client queue slots) counts a call
// against.
#include <string>

#include "gtest/gtest.h"
#include "server/authenticator.h"

namespace kiln::server {
namespace {

using Key = FairShareConfig::ClientKey;

// Issue 27, item 6: with tokens on and client_key peer, every client behind
// one NAT shared one queue share (the peer's address), and with metadata any
// caller could name itself into another tenant's share. With a token, the
// token's name always leads.
TEST(FairShareClientTest, TheTokensIdentityLeadsWhereThereIsOne) {
  const BearerToken alice{"token-a", "alice"};
  const BearerToken bob{"token-b", "bob"};
  struct Case {
    const BearerToken* token;
    Key key;
    std::string peer, metadata, want;
  };
  const Case cases[] = {
      {&alice, Key::kAuto, "ipv4:10.0.0.1", "", "alice"},
      {&alice, Key::kAuto, "ipv4:10.0.0.1", "bob", "alice"},
      {&alice, Key::kPeer, "ipv4:10.0.0.1", "", "alice@ipv4:10.0.0.1"},
      {&bob, Key::kPeer, "ipv4:10.0.0.1", "", "bob@ipv4:10.0.0.1"},
      {&alice, Key::kMetadata, "ipv4:10.0.0.1", "bob", "alice/bob"},
      {&alice, Key::kMetadata, "ipv4:10.0.0.1", "", "alice"},
      {&alice, Key::kMetadata, "ipv4:10.0.0.1", std::string(129, 'x'), "alice"},
      // Without tokens there is no identity: the peer, or trusted metadata.
      {nullptr, Key::kAuto, "ipv4:10.0.0.1", "bob", "ipv4:10.0.0.1"},
      {nullptr, Key::kPeer, "ipv6:[::1]", "", "ipv6:[::1]"},
      {nullptr, Key::kMetadata, "ipv4:10.0.0.1", "rank-7", "rank-7"},
      {nullptr, Key::kMetadata, "ipv4:10.0.0.1", "", "ipv4:10.0.0.1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(FairShareClient(c.token, c.key, c.peer, c.metadata), c.want);
  }
  // Two tenants behind one address never share a name.
  for (Key key : {Key::kAuto, Key::kPeer, Key::kMetadata}) {
    EXPECT_NE(FairShareClient(&alice, key, "ipv4:10.0.0.1", "x"),
              FairShareClient(&bob, key, "ipv4:10.0.0.1", "x"));
  }
}

// Issue 27, item 5: calls outside kiln.v1.Kiln (server reflection) are
// checked on their "authorization" value alone.
TEST(AuthenticatorTest, CheckBearerAcceptsOnlyATokenOfTheFile) {
  const Authenticator with({{"0123456789abcdef0123", "ci", Role::kRead}}, Key::kAuto);
  EXPECT_TRUE(with.CheckBearer("Bearer 0123456789abcdef0123").ok());
  EXPECT_TRUE(with.CheckBearer("bearer 0123456789abcdef0123").ok());
  for (const char* refused : {"", "Bearer ", "Bearer 0123456789abcdef0124",
                              "Basic 0123456789abcdef0123", "0123456789abcdef0123"}) {
    SCOPED_TRACE(refused);
    absl::Status s = with.CheckBearer(refused);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(std::string(s.message()).find("0123456789abcdef"), std::string::npos);
  }
  const Authenticator without({}, Key::kAuto);
  EXPECT_TRUE(without.CheckBearer("").ok()); // no tokens: everything is open
}

TEST(AuthenticatorTest, AnonymousCallersAreAdminsAndTokensCarryTheirRole) {
  const Caller anonymous;
  EXPECT_TRUE(anonymous.admin());
  EXPECT_EQ(anonymous.identity, "");
  const Caller reader{"viewer", Role::kRead, "viewer"};
  EXPECT_TRUE(reader.Allows(Role::kRead));
  EXPECT_FALSE(reader.Allows(Role::kCompile));
  EXPECT_FALSE(reader.admin());
  const Caller tuner{"ci", kDefaultRole, "ci"};
  EXPECT_TRUE(tuner.Allows(Role::kTune));
  EXPECT_FALSE(tuner.Allows(Role::kAdmin));
}

} // namespace
} // namespace kiln::server
