#include "server/token_file.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "util/sha256.h"

namespace kiln::server {
namespace {

constexpr size_t kMinTokenLength = 16;
constexpr char kRolePrefix[] = "role=";

bool IsB64Token(std::string_view token) {
  size_t i = 0;
  for (; i < token.size(); ++i) {
    const char c = token[i];
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
          c == '~' || c == '+' || c == '/')) {
      break;
    }
  }
  if (i == 0) return false;
  for (; i < token.size(); ++i) {
    if (token[i] != '=') return false;
  }
  return true;
}

std::array<uint8_t, 32> Digest(std::string_view bytes) {
  util::Sha256 sha;
  sha.Update(bytes);
  return sha.Finish();
}

} // namespace

std::string_view RoleName(Role role) {
  switch (role) {
  case Role::kRead:
    return "read";
  case Role::kCompile:
    return "compile";
  case Role::kTune:
    return "tune";
  case Role::kAdmin:
    return "admin";
  }
  return "read";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (Role r : {Role::kRead, Role::kCompile, Role::kTune, Role::kAdmin}) {
    if (name == RoleName(r)) return r;
  }
  return std::nullopt;
}

absl::StatusOr<std::vector<BearerToken>> ParseTokenFile(std::string_view text,
                                                        std::string_view file_name) {
  std::vector<BearerToken> tokens;
  std::set<std::string> seen_tokens;
  std::set<std::string> seen_clients;
  int line_number = 0;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::vector<std::string> fields;
    std::istringstream words{std::string(line)};
    for (std::string word; words >> word;) fields.push_back(word);
    if (fields.empty()) continue;
    const std::string where = absl::StrCat(std::string(file_name), ":", line_number, ": ");
    // The role, where given, is the field that starts with "role=" (so a
    // line written before roles existed reads as it did).
    std::optional<std::string> role_name;
    if (fields.size() > 1 && absl::StartsWith(fields.back(), kRolePrefix)) {
      role_name = fields.back().substr(sizeof(kRolePrefix) - 1);
      fields.pop_back();
    }
    if (fields.size() > 2 || (fields.size() == 2 && absl::StartsWith(fields[1], kRolePrefix))) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected TOKEN [CLIENT_NAME] [role=ROLE], found ",
                       fields.size() + (role_name ? 1 : 0), " fields"));
    }
    BearerToken entry;
    entry.token = fields[0];
    if (role_name) {
      std::optional<Role> role = ParseRole(*role_name);
      if (!role) {
        return absl::InvalidArgumentError(absl::StrCat(where, "unknown role '", *role_name,
                                                       "' (roles: read, compile, tune, admin)"));
      }
      entry.role = *role;
    }
    if (!IsB64Token(entry.token)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "a token may only have the characters A-Z a-z 0-9 - . _ ~ + / "
                              "(and trailing =)"));
    }
    if (entry.token.size() < kMinTokenLength) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "the token is shorter than ", kMinTokenLength, " characters"));
    }
    entry.client = fields.size() == 2
                       ? fields[1]
                       : absl::StrCat("token-", util::Sha256Hex(entry.token).substr(0, 8));
    if (!seen_tokens.insert(entry.token).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the same token is listed twice"));
    }
    if (!seen_clients.insert(entry.client).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "client name '", entry.client, "' is listed twice"));
    }
    tokens.push_back(std::move(entry));
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(file_name), ": no tokens (every client would be refused)"));
  }
  return tokens;
}

absl::StatusOr<std::vector<BearerToken>> LoadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string message =
        absl::StrCat("cannot read token file ", path, ": ", std::strerror(err));
    if (err == EACCES) return absl::PermissionDeniedError(message);
    return absl::NotFoundError(message);
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseTokenFile(text.str(), path);
}

const BearerToken* FindBearerToken(const std::vector<BearerToken>& tokens,
                                   std::string_view presented) {
  const std::array<uint8_t, 32> want = Digest(presented);
  const BearerToken* found = nullptr;
  for (const BearerToken& entry : tokens) {
    const std::array<uint8_t, 32> have = Digest(entry.token);
    uint8_t diff = 0;
    for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<uint8_t>(want[i] ^ have[i]);
    if (diff == 0) found = &entry;
  }
  return found;
}

} // namespace kiln::server
