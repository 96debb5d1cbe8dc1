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

} // namespace
} // namespace kiln::server
