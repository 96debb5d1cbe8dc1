#include "server/authenticator.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kiln::server {
namespace {

std::string PeerHost(const grpc::ServerContextBase& ctx) {
  std::string peer = ctx.peer(); // "ipv4:127.0.0.1:5555", "ipv6:[::1]:5555", "unix:..."
  const size_t colon = peer.rfind(':');
  if (absl::StartsWith(peer, "unix:") || colon == std::string::npos) return peer;
  return peer.substr(0, colon);
}

std::string Metadata(const grpc::ServerContextBase& ctx, const char* name) {
  const auto& md = ctx.client_metadata();
  auto it = md.find(name);
  return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

// The token named by an "authorization" value, or why there is none (absent,
// malformed, unknown).
absl::StatusOr<const BearerToken*> BearerOf(const std::vector<BearerToken>& tokens,
                                            std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size() ||
      absl::AsciiStrToLower(absl::string_view(header.data(), kScheme.size())) != kScheme) {
    return absl::UnauthenticatedError(
        "this kilnd requires a bearer token (metadata \"authorization: Bearer TOKEN\")");
  }
  const BearerToken* t = FindBearerToken(tokens, header.substr(kScheme.size()));
  if (t == nullptr) return absl::UnauthenticatedError("the bearer token is not accepted");
  return t;
}

} // namespace

absl::StatusOr<Caller> Authenticator::Authenticate(const grpc::ServerContextBase& ctx) const {
  Caller caller;
  const BearerToken* token = nullptr;
  if (!tokens_.empty()) {
    absl::StatusOr<const BearerToken*> t = BearerOf(tokens_, Metadata(ctx, "authorization"));
    if (!t.ok()) return t.status();
    token = *t;
    caller.identity = token->client;
    caller.role = token->role;
  }
  caller.client = FairShareClient(token, key_, PeerHost(ctx), Metadata(ctx, "x-kiln-client"));
  return caller;
}

absl::StatusOr<Caller> Authenticator::Authorize(const grpc::ServerContextBase& ctx, Role need,
                                                std::string_view rpc) const {
  absl::StatusOr<Caller> caller = Authenticate(ctx);
  if (!caller.ok() || caller->Allows(need)) return caller;
  return absl::PermissionDeniedError(absl::StrCat(
      std::string(rpc), " needs role ", std::string(RoleName(need)), " or above; client '",
      caller->identity, "' has role ", std::string(RoleName(caller->role)),
      " (the role= field of its line in the daemon's token file)"));
}

absl::Status Authenticator::CheckBearer(std::string_view authorization) const {
  if (tokens_.empty()) return absl::OkStatus();
  return BearerOf(tokens_, authorization).status();
}

absl::StatusOr<std::unique_ptr<Authenticator>>
Authenticator::Create(const AuthConfig& auth, const FairShareConfig& fair_share) {
  std::vector<BearerToken> tokens;
  if (auth.enabled()) {
    absl::StatusOr<std::vector<BearerToken>> loaded = LoadTokenFile(auth.tokens_file);
    if (!loaded.ok()) return loaded.status();
    tokens = *std::move(loaded);
  }
  return std::make_unique<Authenticator>(std::move(tokens), fair_share.client_key);
}

Authenticator::Authenticator(std::vector<BearerToken> tokens, FairShareConfig::ClientKey key)
    : tokens_(std::move(tokens)), key_(key) {}

absl::StatusOr<std::string> Authenticator::Check(const grpc::ServerContextBase& ctx) const {
  absl::StatusOr<Caller> caller = Authenticate(ctx);
  if (!caller.ok()) return caller.status();
  return std::move(caller->client);
}

std::string FairShareClient(const BearerToken* token, FairShareConfig::ClientKey key,
                            std::string_view peer_host, std::string_view metadata_client) {
  // A client-chosen name is taken only when short and non-empty.
  const bool has_metadata = !metadata_client.empty() && metadata_client.size() <= 128;
  if (token != nullptr) {
    // The identity always leads: clients behind one address (a NAT) get
    // queues of their own, and no caller can name itself into another's.
    if (key == FairShareConfig::ClientKey::kPeer) {
      return token->client + "@" + std::string(peer_host);
    }
    if (key == FairShareConfig::ClientKey::kMetadata && has_metadata) {
      return token->client + "/" + std::string(metadata_client);
    }
    return token->client;
  }
  if (key == FairShareConfig::ClientKey::kMetadata && has_metadata) {
    return std::string(metadata_client);
  }
  return std::string(peer_host);
}

} // namespace kiln::server
