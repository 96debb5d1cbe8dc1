#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config_options.h"
#include "server/server_config.h"
#include "util/temp_dir.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Env = std::map<std::string, std::string>;

const Env kHome = {{"HOME", "/home/kiln"}};

absl::StatusOr<LoadedServerConfig> Load(const std::vector<std::string>& args,
                                        const Env& env = kHome) {
  std::vector<const char*> argv = {"kilnd"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return LoadServerConfig(static_cast<int>(argv.size()), argv.data(), env);
}

class ServerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-config-test");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<util::TempDir>(*std::move(dir));
  }
  // Writes `text` to a file in the temp dir and returns its path.
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_->path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::unique_ptr<util::TempDir> dir_;
};

TEST(ServerConfigDefaultsTest, EmbeddedDefaults) {
  absl::StatusOr<LoadedServerConfig> loaded = Load({});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ServerConfig expected;
  expected.cache_dir = "/home/kiln/.cache/kiln";
  expected.compile_threads = loaded->config.compile_threads;
  EXPECT_EQ(loaded->config, expected);
  EXPECT_GE(loaded->config.compile_threads, 1);
  EXPECT_EQ(loaded->config.listen_address, "127.0.0.1:7070");
  EXPECT_EQ(loaded->config.metrics_listen_address, ""); // off unless asked for
  EXPECT_EQ(loaded->action, ServerAction::kServe);
  EXPECT_TRUE(loaded->warnings.empty());
  EXPECT_EQ(loaded->sources.at("listen"), "default");
  EXPECT_EQ(loaded->sources.size(), ServerConfigOptions().size());
  // Without HOME the cache goes to /tmp, as ResolveCacheDir does.
  EXPECT_EQ(Load({}, {})->config.cache_dir, "/tmp/kiln-cache");
}

TEST(ServerConfigDefaultsTest, FlagSyntax) {
  struct Case {
    std::vector<std::string> args;
    std::string listen;
    std::string cache_dir;
    std::string metrics;
  };
  const Case cases[] = {
      {{"--listen=0.0.0.0:1"}, "0.0.0.0:1", "/home/kiln/.cache/kiln", ""},
      {{"--listen", "0.0.0.0:2"}, "0.0.0.0:2", "/home/kiln/.cache/kiln", ""},
      {{"--cache_dir=/var/x"}, "127.0.0.1:7070", "/var/x", ""}, // underscores are dashes
      {{"--cache-dir", "/var/y", "--metrics-listen", "127.0.0.1:0"},
       "127.0.0.1:7070",
       "/var/y",
       "127.0.0.1:0"},
      {{"--metrics_listen=[::1]:9090", "--metrics-listen="},
       "127.0.0.1:7070",
       "/home/kiln/.cache/kiln",
       ""}, // the last one wins; empty turns it off
      {{"--cache-dir=~/c"}, "127.0.0.1:7070", "/home/kiln/c", ""},
      {{"--listen=unix:/run/kiln.sock"}, "unix:/run/kiln.sock", "/home/kiln/.cache/kiln", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.args));
    absl::StatusOr<LoadedServerConfig> loaded = Load(c.args);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->config.listen_address, c.listen);
    EXPECT_EQ(loaded->config.cache_dir, c.cache_dir);
    EXPECT_EQ(loaded->config.metrics_listen_address, c.metrics);
  }
  // Booleans: bare, =false, =yes.
  EXPECT_TRUE(Load({"--fair-share-enabled"})->config.fair_share.enabled);
  EXPECT_FALSE(Load({"--fair-share-enabled=false"})->config.fair_share.enabled);
  EXPECT_FALSE(
      Load({"--fair-share-enabled=no", "--listen", "127.0.0.1:1"})->config.fair_share.enabled);
  // CPU-target workers: one unless asked.
  EXPECT_EQ(Load({})->config.cpu_workers, 1);
  EXPECT_EQ(Load({"--worker-cpu-workers=4"})->config.cpu_workers, 4);
  // Actions.
  EXPECT_EQ(Load({"--help"})->action, ServerAction::kHelp);
  EXPECT_EQ(Load({"--bogus", "-h"})->action, ServerAction::kHelp);
  EXPECT_EQ(Load({"--version"})->action, ServerAction::kVersion);
  EXPECT_EQ(Load({"--print-config", "--listen=127.0.0.1:9"})->action, ServerAction::kPrintConfig);
  EXPECT_EQ(Load({"--print-config", "--listen=127.0.0.1:9"})->config.listen_address, "127.0.0.1:9");
}

TEST(ServerConfigDefaultsTest, CommandLineErrorsSayWhatIsWrong) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"--cache-dirr=/x"}, "unknown flag --cache-dirr (did you mean --cache-dir?)"},
      {{"--metric-listen=:1"}, "(did you mean --metrics-listen?)"},
      {{"--frobnicate"}, "unknown flag --frobnicate; see kilnd --help"},
      {{"serve"}, "unexpected argument 'serve'"},
      {{"-listen=1"}, "unexpected argument '-listen=1'"},
      {{"--fair-share-enabled", "false"},
       "unexpected argument 'false' (a boolean takes its value after '=': "
       "--fair-share-enabled=false)"},
      {{"--listen"}, "--listen needs a value (HOST:PORT)"},
      {{"--listen", "--cache-dir=/x"}, "--listen needs a value"},
      {{"--config"}, "--config needs a value (FILE)"},
      {{"--print-config=yes"}, "--print-config takes no value"},
      {{"--listen=256.1.1.1:notaport"},
       "--listen: cannot listen: invalid address "
       "'256.1.1.1:notaport': the port is not a number"},
      {{"--listen="}, "--listen: cannot listen: invalid address '': expected HOST:PORT"},
      {{"--metrics-listen=unix:/x"}, "--metrics-listen: cannot listen"},
      {{"--cache-dir="}, "--cache-dir: must not be empty"},
      {{"--cache-max-size=ten"}, "--cache-max-size: 'ten' is not a size"},
      {{"--compile-threads=-1"}, "--compile-threads: -1 is out of range (0..4096)"},
      {{"--compile-threads=two"}, "--compile-threads: 'two' is not an integer"},
      {{"--queue-max-ci=0"}, "--queue-max-ci: 0 is out of range (1..1000000)"},
      {{"--worker-cpu-workers=0"}, "--worker-cpu-workers: 0 is out of range (1..1024)"},
      {{"--worker-hang-timeout=0s"}, "--worker-hang-timeout: 0s is below the minimum of 1ms"},
      {{"--worker-start-timeout=10"}, "'10' is not a duration"},
      {{"--grace-period=-5s"}, "'-5s' is not a duration"},
      {{"--max-message-size=100"}, "--max-message-size: 100 is out of range (1KiB.."},
      {{"--fair-share-enabled=maybe"}, "'maybe' is not a boolean"},
      {{"--fair-share-client-key=ip"}, "'ip' is not auto, peer or metadata"},
      {{"--log-format=xml"}, "--log-format: unknown log format 'xml'"},
      {{"--log-level=loud"}, "--log-level: unknown log level 'loud'"},
      {{"--devices=gpu0"}, "--devices: 'gpu0' is not a device selection"},
      {{"--devices=0,1,0"}, "--devices: device 0 is listed twice"},
      {{"--tls-key-file=/k"}, "tls.key_file (flag --tls-key-file) is set but tls.cert_file is not"},
      {{"--tls-client-ca-file=/ca"}, "tls.client_ca_file (flag --tls-client-ca-file) needs TLS"},
      {{"--tls-cert-file=/no/cert", "--tls-key-file=/no/key"},
       "tls.cert_file (flag --tls-cert-file): cannot read /no/cert: No such file"},
      {{"--auth-tokens-file=/no/tokens"},
       "auth.tokens_file (flag --auth-tokens-file): cannot "
       "read token file /no/tokens"},
      {{"--metrics-listen=127.0.0.1:7070"},
       "metrics.listen (flag --metrics-listen) is the gRPC "
       "address 127.0.0.1:7070"},
      {{"--config=/no/such.yaml"}, "cannot read config file /no/such.yaml"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.args));
    absl::StatusOr<LoadedServerConfig> loaded = Load(c.args);
    ASSERT_FALSE(loaded.ok());
    EXPECT_THAT(loaded.status().message(), HasSubstr(c.message));
  }
  EXPECT_EQ(Load({"--config=/no/such.yaml"}).status().code(), absl::StatusCode::kNotFound);
}

TEST(ServerConfigDefaultsTest, ValuesParseAndPrintBack) {
  struct Case {
    std::string flag;
    std::string value;
    std::string printed; // the option's format() afterwards
  };
  const Case cases[] = {
      {"--cache-max-size", "10GiB", "10GiB"},
      {"--cache-max-size", "10gib", "10GiB"},
      {"--cache-max-size", "1.5GiB", "1536MiB"},
      {"--cache-max-size", "1.5GB", "1500000000"},
      {"--cache-max-size", "512Mi", "512MiB"},
      {"--cache-max-size", "4096", "4KiB"},
      {"--cache-max-size", "4097", "4097"},
      {"--cache-max-size", "0", "0"},
      {"--cache-max-size", " 2 TiB ", "2TiB"},
      {"--max-message-size", "1KiB", "1KiB"},
      {"--grace-period", "0", "0"},
      {"--grace-period", "90s", "1m30s"},
      {"--worker-request-timeout", "1.5h", "1h30m"},
      {"--worker-start-timeout", "250ms", "250ms"},
      {"--devices", "none", "none"},
      {"--devices", "AUTO", "auto"},
      {"--devices", "0, 2,cuda:3", "0,2,3"},
      {"--fair-share-client-key", "Metadata", "metadata"},
      {"--log-level", "WARNING", "warn"},
      {"--compile-threads", "8", "8"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flag + "=" + c.value);
    absl::StatusOr<LoadedServerConfig> loaded = Load({c.flag, c.value});
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const ConfigOption* option = nullptr;
    for (const ConfigOption& o : ServerConfigOptions()) {
      if (o.flag() == c.flag) option = &o;
    }
    ASSERT_NE(option, nullptr);
    EXPECT_EQ(option->format(loaded->config), c.printed);
    EXPECT_EQ(loaded->sources.at(std::string(option->key)), "flag " + c.flag);
  }
  EXPECT_EQ(Load({"--cache-max-size=1.5GiB"})->config.cache_max_bytes, uint64_t{3} << 29);
  EXPECT_EQ(Load({"--devices=1,0"})->config.devices.cuda_ordinals, (std::vector<int>{1, 0}));
}

TEST_F(ServerConfigTest, PrecedenceIsFlagsThenEnvironmentThenFileThenDefaults) {
  const std::string file = Write("kilnd.yaml", "listen: 127.0.0.1:1001\ncache:\n  dir: /from/file\n"
                                               "  max_size: 1GiB\nlog:\n  level: debug\n");
  struct Case {
    std::vector<std::string> args;
    Env env;
    std::string listen;
    std::string listen_source;
    std::string cache_dir;
  };
  const Case cases[] = {
      {{}, {}, "127.0.0.1:7070", "default", "/tmp/kiln-cache"},
      {{"--config", file}, {}, "127.0.0.1:1001", file + ":1", "/from/file"},
      {{}, {{"KILN_CONFIG", file}}, "127.0.0.1:1001", file + ":1", "/from/file"},
      {{"--config", file},
       {{"KILN_LISTEN", "127.0.0.1:1002"}, {"KILN_CACHE_DIR", "/from/env"}},
       "127.0.0.1:1002",
       "env KILN_LISTEN",
       "/from/env"},
      {{"--config", file, "--listen=127.0.0.1:1003"},
       {{"KILN_LISTEN", "127.0.0.1:1002"}},
       "127.0.0.1:1003",
       "flag --listen",
       "/from/file"},
      // An empty variable counts as unset.
      {{"--config", file}, {{"KILN_LISTEN", ""}}, "127.0.0.1:1001", file + ":1", "/from/file"},
      // --config beats KILN_CONFIG.
      {{"--config", file},
       {{"KILN_CONFIG", "/no/such/file"}},
       "127.0.0.1:1001",
       file + ":1",
       "/from/file"},
      // Variables that are not options (KILN_JOBS, KILN_PYTHON, ...) are ignored.
      {{},
       {{"KILN_JOBS", "2"}, {"KILN_LISTEN_TYPO", "x"}},
       "127.0.0.1:7070",
       "default",
       "/tmp/kiln-cache"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.args) + " " + testing::PrintToString(c.env));
    absl::StatusOr<LoadedServerConfig> loaded = Load(c.args, c.env);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->config.listen_address, c.listen);
    EXPECT_EQ(loaded->sources.at("listen"), c.listen_source);
    EXPECT_EQ(loaded->config.cache_dir, c.cache_dir);
  }
  absl::StatusOr<LoadedServerConfig> loaded = Load({"--config", file}, {});
  EXPECT_EQ(loaded->config.cache_max_bytes, uint64_t{1} << 30);
  EXPECT_EQ(loaded->config.log.level, util::LogLevel::kDebug);
  EXPECT_EQ(loaded->sources.at("log.level"), file + ":6");
  EXPECT_EQ(loaded->config_file, file);
  // Environment errors name the variable.
  absl::StatusOr<LoadedServerConfig> bad = Load({}, {{"KILN_QUEUE_MAX_CI", "lots"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("KILN_QUEUE_MAX_CI: 'lots' is not an integer"));
}

TEST_F(ServerConfigTest, YamlErrorsNameTheFileAndLine) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string message; // after "FILE:"
  };
  const Case cases[] = {
      {"unknown key", "listen: 127.0.0.1:1\ncache:\n  max_sise: 1GiB\n",
       "3: unknown key 'cache.max_sise' (did you mean cache.max_size?)"},
      {"unknown top-level key", "\n\nlisten_address: 127.0.0.1:1\n",
       "3: unknown key 'listen_address' (did you mean listen?)"},
      {"far from anything", "zzzzzzzzzz: 1\n", "1: unknown key 'zzzzzzzzzz'"},
      {"bad value", "queue:\n  max_ci: 0\n", "2: queue.max_ci: 0 is out of range (1..1000000)"},
      {"bad size", "cache:\n  max_size: big\n", "2: cache.max_size: 'big' is not a size"},
      {"bad address", "metrics:\n  listen: localhost\n",
       "2: metrics.listen: cannot listen: invalid address 'localhost': expected HOST:PORT"},
      {"duplicate key", "log:\n  level: info\n  level: debug\n", "3: duplicate key 'log.level'"},
      {"no value", "log:\n  file:\n", "2: log.file has no value (write \"\" for an empty one)"},
      {"section as a value", "tls: /etc/cert.pem\n",
       "1: 'tls' is a section; expected a mapping of its keys (cert_file, key_file, "
       "client_ca_file)"},
      {"value as a section", "listen:\n  host: x\n",
       "1: listen: expected a single value, found a mapping"},
      {"list where a value goes", "log:\n  level: [info]\n",
       "2: log.level: expected a single value, found a list"},
      {"not a mapping", "- listen\n", "1: expected a mapping of keys"},
      {"syntax error", "cache:\n  dir: [unclosed\n", ""},
      {"tab indentation", "cache:\n\tdir: /x\n", ""},
      {"devices list with a mapping", "devices: [{a: 1}]\n", "1: devices: expected a list"},
      {"bad device", "devices: [0, x]\n", "1: devices: '0,x' is not a device selection"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Write("bad.yaml", c.yaml);
    absl::StatusOr<LoadedServerConfig> loaded = Load({"--config=" + path});
    ASSERT_FALSE(loaded.ok()) << c.yaml;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(loaded.status().message(), HasSubstr(path + ":" + c.message));
  }
  // "zzzzzzzzzz" is too far from every key for a suggestion.
  const std::string path = Write("far.yaml", "zzzzzzzzzz: 1\n");
  EXPECT_THAT(Load({"--config=" + path}).status().message(), Not(HasSubstr("did you mean")));
  // A syntax error has a line and a column.
  const std::string syntax = Write("syntax.yaml", "cache:\n  dir: [unclosed\n");
  EXPECT_THAT(std::string(Load({"--config=" + syntax}).status().message()),
              ::testing::MatchesRegex(".*syntax\\.yaml:[0-9]+:[0-9]+: .*"));
}

TEST_F(ServerConfigTest, YamlAcceptsItsOwnForms) {
  const std::string empty = Write("empty.yaml", "");
  EXPECT_TRUE(Load({"--config", empty}).ok());
  const std::string comments = Write("comments.yaml", "# nothing but a comment\n");
  EXPECT_TRUE(Load({"--config", comments}).ok());
  const std::string forms = Write("forms.yaml", R"(devices: [1, 0]
fair_share: {enabled: off, client_key: peer}
metrics:
  listen: ""
log: {format: JSON}
cache:
  dir: "~/kiln cache"
grace_period: 1m
)");
  absl::StatusOr<LoadedServerConfig> loaded = Load({"--config", forms});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.devices.mode, DeviceSelection::Mode::kList);
  EXPECT_EQ(loaded->config.devices.cuda_ordinals, (std::vector<int>{1, 0}));
  EXPECT_FALSE(loaded->config.fair_share.enabled);
  EXPECT_EQ(loaded->config.fair_share.client_key, FairShareConfig::ClientKey::kPeer);
  EXPECT_EQ(loaded->config.log.format, util::LogFormat::kJson);
  EXPECT_EQ(loaded->config.cache_dir, "/home/kiln/kiln cache");
  EXPECT_EQ(loaded->config.grace_period, absl::Minutes(1));
  const std::string no_devices = Write("none.yaml", "devices: []\n");
  EXPECT_EQ(Load({"--config", no_devices})->config.devices.mode, DeviceSelection::Mode::kNone);
}

// Every path-taking option expands a leading ~ (a flag given as
// `--worker-path=~/x` or a YAML value is never expanded by a shell).
TEST_F(ServerConfigTest, PathOptionsExpandTilde) {
  const std::string yaml = Write("paths.yaml", R"(worker:
  path: ~/bin/kiln-worker
log:
  file: ~/logs/kilnd.log
)");
  absl::StatusOr<LoadedServerConfig> loaded = Load({"--config", yaml});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.worker_path, "/home/kiln/bin/kiln-worker");
  EXPECT_EQ(loaded->config.log.file, "/home/kiln/logs/kilnd.log");
  loaded = Load({"--worker-path=~/w", "--log-file=~/l.log", "--cache-dir=~"});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.worker_path, "/home/kiln/w");
  EXPECT_EQ(loaded->config.log.file, "/home/kiln/l.log");
  EXPECT_EQ(loaded->config.cache_dir, "/home/kiln");
  // Another user's home is not looked up; a bare relative name stays relative.
  loaded = Load({"--worker-path=~other/w", "--log-file=kilnd.log"});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->config.worker_path, "~other/w");
  EXPECT_EQ(loaded->config.log.file, "kilnd.log");
}

// The example deploy file loads, and says what it means.
TEST_F(ServerConfigTest, ExampleFileLoads) {
  const std::string example = std::string(KILN_SOURCE_DIR) + "/docs/kilnd.example.yaml";
  absl::StatusOr<LoadedServerConfig> loaded = Load({"--config", example});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const ServerConfig& c = loaded->config;
  EXPECT_EQ(c.listen_address, "0.0.0.0:7070");
  EXPECT_EQ(c.metrics_listen_address, "0.0.0.0:9090");
  EXPECT_EQ(c.cache_dir, "/var/cache/kiln");
  EXPECT_EQ(c.cache_max_bytes, uint64_t{200} << 30);
  EXPECT_EQ(c.log.format, util::LogFormat::kJson);
  EXPECT_EQ(c.grace_period, absl::Seconds(25));
  EXPECT_FALSE(c.tls.enabled());
  // Every option is in the file.
  for (const ConfigOption& option : ServerConfigOptions()) {
    EXPECT_THAT(loaded->sources.at(std::string(option.key)), HasSubstr(example + ":"))
        << option.key;
  }
  // 0.0.0.0 without TLS or tokens is allowed, with a warning.
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_THAT(loaded->warnings[0], HasSubstr("without TLS or tokens"));
}

TEST_F(ServerConfigTest, DumpReadsBackToTheSameConfig) {
  const std::string cert = Write("tls.crt", "cert");
  const std::string key = Write("tls.key", "key");
  const std::string ca = Write("ca.crt", "ca");
  const std::string tokens = Write("tokens", "0123456789abcdefXYZ ci\n");
  absl::StatusOr<LoadedServerConfig> loaded = Load({
      "--listen=[::1]:7171",
      "--metrics-listen=127.0.0.1:0",
      "--cache-dir=/var/cache/kiln with \"quotes\" and \\",
      "--cache-max-size=4097",
      "--compile-threads=3",
      "--queue-max-interactive=10",
      "--queue-max-ci=11",
      "--queue-max-tuning=12",
      "--fair-share-enabled=false",
      "--fair-share-client-key=metadata",
      "--fair-share-max-queued-per-client=0",
      "--worker-start-timeout=1s",
      "--worker-request-timeout=2m",
      "--worker-hang-timeout=500ms",
      "--max-message-size=8MiB",
      "--grace-period=0",
      "--tls-cert-file=" + cert,
      "--tls-key-file=" + key,
      "--tls-client-ca-file=" + ca,
      "--auth-tokens-file=" + tokens,
      "--log-format=json",
      "--log-level=error",
      "--log-file=/var/log/kilnd.log",
      "--devices=3,1",
  });
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->config.tls.mutual());
  // worker.hang_timeout is deprecated: setting it is said to do nothing.
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_THAT(loaded->warnings[0], HasSubstr("worker.hang_timeout has no effect"));
  const std::string yaml = DumpConfigYaml(loaded->config, &loaded->sources);
  EXPECT_THAT(yaml, HasSubstr("listen: \"[::1]:7171\"  # flag --listen\n"));
  EXPECT_THAT(yaml, HasSubstr("\nlog:\n  format: \"json\"  # flag --log-format\n"));
  EXPECT_THAT(yaml, HasSubstr("  enabled: false  # flag --fair-share-enabled\n"));
  const std::string path = Write("dumped.yaml", yaml);
  absl::StatusOr<LoadedServerConfig> again = Load({"--config", path});
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << yaml;
  EXPECT_EQ(again->config, loaded->config) << yaml;
  // And the defaults, dumped without sources, too.
  absl::StatusOr<LoadedServerConfig> defaults = Load({});
  const std::string plain = DumpConfigYaml(defaults->config);
  EXPECT_THAT(plain, Not(HasSubstr("  #")));
  EXPECT_EQ(Load({"--config", Write("plain.yaml", plain)})->config, defaults->config);
}

TEST_F(ServerConfigTest, SecuritySettings) {
  const std::string cert = Write("tls.crt", "cert");
  const std::string key = Write("tls.key", "key");
  absl::StatusOr<LoadedServerConfig> tls =
      Load({"--listen=0.0.0.0:7070", "--tls-cert-file", cert, "--tls-key-file", key});
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(tls->config.tls.enabled());
  EXPECT_FALSE(tls->config.tls.mutual());
  EXPECT_TRUE(tls->warnings.empty());

  const std::string tokens = Write("tokens", "# comment\n0123456789abcdef0123\n");
  absl::StatusOr<LoadedServerConfig> auth =
      Load({"--listen=0.0.0.0:7070", "--auth-tokens-file", tokens});
  ASSERT_TRUE(auth.ok()) << auth.status();
  EXPECT_TRUE(auth->config.auth.enabled());
  EXPECT_TRUE(auth->warnings.empty());

  const std::string bad_tokens = Write("bad_tokens", "short\n");
  absl::StatusOr<LoadedServerConfig> bad = Load({"--auth-tokens-file", bad_tokens});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(bad_tokens + ":1: the token is shorter"));

  for (const char* listen : {"0.0.0.0:7070", ":7070", "[::]:7070", "10.1.2.3:7070"}) {
    absl::StatusOr<LoadedServerConfig> open = Load({"--listen", listen});
    ASSERT_TRUE(open.ok());
    EXPECT_EQ(open->warnings.size(), 1u) << listen;
  }
  for (const char* listen : {"127.0.0.1:7070", "localhost:0", "[::1]:1", "unix:/run/k.sock"}) {
    EXPECT_TRUE(Load({"--listen", listen})->warnings.empty()) << listen;
  }
}

} // namespace
} // namespace kiln::server
