#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config_options.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<LoadedServerConfig> Load(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"kilnd"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return LoadServerConfig(static_cast<int>(argv.size()), argv.data(), {{"HOME", "/home/kiln"}});
}

// The table drives flags, variables, YAML keys and help: names must be
// unique, derived consistently, and every default must read back.
TEST(ConfigOptionsTest, TableIsConsistent) {
  std::set<std::string> flags = {"--config", "--help", "--version", "--print-config"};
  std::set<std::string> envs = {"KILN_CONFIG"};
  std::set<std::string> keys;
  std::set<std::string> closed_sections;
  std::string section = "-";
  const std::string help = ServerConfigHelp();
  const ServerConfig defaults = Load({})->config;
  for (const ConfigOption& option : ServerConfigOptions()) {
    const std::string key(option.key);
    SCOPED_TRACE(key);
    EXPECT_TRUE(flags.insert(option.flag()).second);
    EXPECT_TRUE(envs.insert(option.env()).second);
    EXPECT_TRUE(keys.insert(key).second);
    EXPECT_FALSE(option.help.empty());
    EXPECT_FALSE(option.value_name.empty());
    // Sections are contiguous (the dump writes each once).
    const std::string s = key.find('.') == std::string::npos ? "" : key.substr(0, key.find('.'));
    if (s != section) {
      EXPECT_EQ(closed_sections.count(s), 0u) << "section " << s << " is split";
      closed_sections.insert(section);
      section = s;
    }
    // The formatted default (as loaded) parses back to the same value.
    ServerConfig parsed;
    ASSERT_TRUE(option.parse(option.format(defaults), parsed).ok()) << option.format(defaults);
    EXPECT_EQ(option.format(parsed), option.format(defaults));
    // --help names the flag, the variable and the key.
    EXPECT_THAT(help, HasSubstr("\n  " + option.flag() +
                                (option.is_bool ? std::string("[=BOOL]")
                                                : " " + std::string(option.value_name)) +
                                "\n"));
    EXPECT_THAT(help, HasSubstr("env " + option.env() + ","));
    EXPECT_THAT(help, HasSubstr("yaml " + key + "\n"));
  }
  EXPECT_EQ(ServerConfigOptions().front().flag(), "--listen");
  for (const char* fixed : {"--listen", "--cache-dir", "--metrics-listen"}) {
    EXPECT_EQ(flags.count(fixed), 1u) << fixed; // fixed by issue 5
  }
  EXPECT_THAT(help, HasSubstr("--listen HOST:PORT\n"));
  EXPECT_THAT(help, HasSubstr("default 127.0.0.1:7070, env KILN_LISTEN, yaml listen\n"));
  EXPECT_THAT(help, HasSubstr("default ~/.cache/kiln, env KILN_CACHE_DIR, yaml cache.dir\n"));
  EXPECT_THAT(help, HasSubstr("--fair-share-enabled[=BOOL]"));
  for (absl::string_view line : absl::StrSplit(help, '\n')) EXPECT_LE(line.size(), 80u) << line;
}

TEST(ConfigOptionsTest, NamesDeriveFromTheKey) {
  struct Case {
    std::string key;
    std::string flag;
    std::string env;
  };
  const Case cases[] = {
      {"listen", "--listen", "KILN_LISTEN"},
      {"cache.dir", "--cache-dir", "KILN_CACHE_DIR"},
      {"metrics.listen", "--metrics-listen", "KILN_METRICS_LISTEN"},
      {"max_message_size", "--max-message-size", "KILN_MAX_MESSAGE_SIZE"},
      {"fair_share.max_queued_per_client", "--fair-share-max-queued-per-client",
       "KILN_FAIR_SHARE_MAX_QUEUED_PER_CLIENT"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    const ConfigOption* found = nullptr;
    for (const ConfigOption& option : ServerConfigOptions()) {
      if (option.key == c.key) found = &option;
    }
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->flag(), c.flag);
    EXPECT_EQ(found->env(), c.env);
  }
}

} // namespace
} // namespace kiln::server
