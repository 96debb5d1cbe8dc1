#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config_values.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

TEST(ConfigValuesTest, ByteSizes) {
  struct Case {
    std::string text;
    bool ok;
    uint64_t bytes;
  };
  const Case cases[] = {
      {"0", true, 0},
      {"1B", true, 1},
      {"1kb", true, 1000},
      {"1KiB", true, 1024},
      {"0.5KiB", true, 512},
      {"16EiB", false, 0},
      {"18446744073709551615", true, UINT64_MAX},
      {"18446744073709551616", false, 0},
      {"17179869184GiB", false, 0}, // 2^64 bytes
      {"0.3B", false, 0},
      {"1.", false, 0},
      {".5GiB", false, 0},
      {"1..5GiB", false, 0},
      {"1 G", false, 0}, // ambiguous: GB or GiB?
      {"-1", false, 0},
      {"", false, 0},
      {"GiB", false, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<uint64_t> bytes = ParseByteSize(c.text);
    ASSERT_EQ(bytes.ok(), c.ok) << bytes.status();
    if (c.ok) {
      EXPECT_EQ(*bytes, c.bytes);
      EXPECT_EQ(*ParseByteSize(FormatByteSize(c.bytes)), c.bytes);
    }
  }
}

TEST(ConfigValuesTest, FormatByteSizePicksTheLargestExactUnit) {
  EXPECT_EQ(FormatByteSize(0), "0");
  EXPECT_EQ(FormatByteSize(1), "1");
  EXPECT_EQ(FormatByteSize(1024), "1KiB");
  EXPECT_EQ(FormatByteSize(uint64_t{3} << 29), "1536MiB");
  EXPECT_EQ(FormatByteSize(uint64_t{20} << 30), "20GiB");
  EXPECT_EQ(FormatByteSize(uint64_t{5} << 40), "5TiB");
  EXPECT_EQ(FormatByteSize(1000), "1000");
}

TEST(ConfigValuesTest, Durations) {
  struct Case {
    std::string text;
    bool ok;
    absl::Duration value;
  };
  const Case cases[] = {
      {"0", true, absl::ZeroDuration()},
      {"30s", true, absl::Seconds(30)},
      {" 5m ", true, absl::Minutes(5)},
      {"1h30m", true, absl::Minutes(90)},
      {"1.5s", true, absl::Milliseconds(1500)},
      {"250ms", true, absl::Milliseconds(250)},
      {"30", false, {}},
      {"-1s", false, {}},
      {"inf", false, {}},
      {"soon", false, {}},
      {"", false, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<absl::Duration> d = ParseConfigDuration(c.text);
    ASSERT_EQ(d.ok(), c.ok);
    if (c.ok) {
      EXPECT_EQ(*d, c.value);
      EXPECT_EQ(*ParseConfigDuration(absl::FormatDuration(*d)), *d);
    } else {
      EXPECT_THAT(d.status().message(), HasSubstr("is not a duration"));
    }
  }
}

TEST(ConfigValuesTest, IntegersAndBooleans) {
  EXPECT_EQ(*ParseConfigInteger("42", 0, 100), 42);
  EXPECT_EQ(*ParseConfigInteger("-3", -5, 5), -3);
  EXPECT_THAT(ParseConfigInteger("101", 0, 100).status().message(),
              HasSubstr("101 is out of range (0..100)"));
  for (const char* bad : {"", "4.5", "0x10", "ten", "99999999999999999999"}) {
    EXPECT_FALSE(ParseConfigInteger(bad, 0, 100).ok()) << bad;
  }
  for (const char* yes : {"true", "TRUE", "yes", "on", "1"}) EXPECT_TRUE(*ParseConfigBool(yes));
  for (const char* no : {"false", "No", "off", "0"}) EXPECT_FALSE(*ParseConfigBool(no));
  EXPECT_THAT(ParseConfigBool("maybe").status().message(), HasSubstr("is not a boolean"));
}

TEST(ConfigValuesTest, DevicesAndClientKeys) {
  struct Case {
    std::string text;
    bool ok;
    std::string formatted;
  };
  const Case cases[] = {
      {"auto", true, "auto"},
      {"None", true, "none"},
      {"0", true, "0"},
      {"3,1", true, "3,1"},
      {"cuda:0, cuda:2", true, "0,2"},
      {"", false, ""},
      {"0,", false, ""},
      {"-1", false, ""},
      {"1024", false, ""},
      {"gpu", false, ""},
      {"1,1", false, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<DeviceSelection> devices = ParseDevices(c.text);
    ASSERT_EQ(devices.ok(), c.ok) << devices.status();
    if (c.ok) {
      EXPECT_EQ(FormatDevices(*devices), c.formatted);
      EXPECT_EQ(*ParseDevices(FormatDevices(*devices)), *devices);
    }
  }
  for (auto key : {FairShareConfig::ClientKey::kAuto, FairShareConfig::ClientKey::kPeer,
                   FairShareConfig::ClientKey::kMetadata}) {
    EXPECT_EQ(*ParseClientKey(FormatClientKey(key)), key);
  }
  EXPECT_FALSE(ParseClientKey("token").ok());
}

TEST(ConfigValuesTest, ListenAddresses) {
  for (const char* ok : {"127.0.0.1:7070", "[::1]:0", ":9090", "localhost:1"}) {
    EXPECT_TRUE(ValidateListenAddress(ok, false).ok()) << ok;
  }
  EXPECT_TRUE(ValidateListenAddress("unix:/run/kiln.sock", true).ok());
  EXPECT_FALSE(ValidateListenAddress("unix:/run/kiln.sock", false).ok());
  EXPECT_THAT(ValidateListenAddress("unix:", true).message(), HasSubstr("socket path is missing"));
  EXPECT_THAT(ValidateListenAddress("host", false).message(),
              HasSubstr("cannot listen: invalid address 'host': expected HOST:PORT"));
}

} // namespace
} // namespace kiln::server
