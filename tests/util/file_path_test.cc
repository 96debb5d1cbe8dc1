#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/file_path.h"
#include "util/temp_dir.h"

namespace kiln::util {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The names in `dir`, to prove that no temporary file is left behind.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Restores an environment variable when it goes out of scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class FilePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TempDir> dir = TempDir::Create("kiln-file-path-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
  }
  std::string Path(const std::string& name) const { return dir_->path() + "/" + name; }

  std::optional<TempDir> dir_;
};

// Runs in `dir` for its lifetime, then goes back.
class ScopedCwd {
 public:
  explicit ScopedCwd(const std::string& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() { fs::current_path(old_); }

 private:
  fs::path old_;
};

TEST_F(FilePathTest, BareNameIsWrittenInTheCurrentFolder) {
  // The bug this file fixes: the parent of "gemm.cubin" is "", and creating
  // "" failed with "cannot create : Invalid argument".
  ScopedCwd cwd(dir_->path());
  ASSERT_TRUE(WriteFileAtomically("gemm.cubin", "bytes").ok());
  EXPECT_EQ(ReadFile(Path("gemm.cubin")), "bytes");
  EXPECT_THAT(Names(dir_->path()), ::testing::ElementsAre("gemm.cubin"));
}

TEST_F(FilePathTest, DotSlashNameIsWrittenInTheCurrentFolder) {
  ScopedCwd cwd(dir_->path());
  ASSERT_TRUE(WriteFileAtomically("./summary.md", "# ok\n").ok());
  EXPECT_EQ(ReadFile(Path("summary.md")), "# ok\n");
}

TEST_F(FilePathTest, MissingFoldersAreCreated) {
  ASSERT_TRUE(WriteFileAtomically(Path("sub/dir/g.cubin"), "x").ok());
  EXPECT_EQ(ReadFile(Path("sub/dir/g.cubin")), "x");
  ScopedCwd cwd(dir_->path());
  ASSERT_TRUE(WriteFileAtomically("rel/a/b.bin", "y").ok());
  EXPECT_EQ(ReadFile(Path("rel/a/b.bin")), "y");
}

TEST_F(FilePathTest, ExistingFileIsReplacedAtomically) {
  const std::string path = Path("out.bin");
  ASSERT_TRUE(WriteFileAtomically(path, "old content").ok());
  // A hard link to the old file keeps the old bytes: the new content went to
  // a new file renamed over the name, not into the old file in place (where
  // a reader, or a crash, could see a part).
  fs::create_hard_link(path, Path("old_link"));
  ASSERT_TRUE(WriteFileAtomically(path, "new").ok());
  EXPECT_EQ(ReadFile(path), "new");
  EXPECT_EQ(ReadFile(Path("old_link")), "old content");
  EXPECT_THAT(Names(dir_->path()), ::testing::ElementsAre("old_link", "out.bin"));
}

TEST_F(FilePathTest, EmptyContentIsAFile) {
  ASSERT_TRUE(WriteFileAtomically(Path("empty"), "").ok());
  EXPECT_TRUE(fs::is_regular_file(Path("empty")));
  EXPECT_EQ(fs::file_size(Path("empty")), 0u);
}

TEST_F(FilePathTest, FolderUnderARegularFileIsAnErrorNamingIt) {
  // Tests run as root, where permission bits do not stop a write; a path
  // through a regular file fails for everyone (ENOTDIR).
  std::ofstream(Path("somefile")) << "not a folder";
  const std::string path = Path("somefile/out.bin");
  absl::Status s = WriteFileAtomically(path, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "cannot write '" + path + "': '" + Path("somefile") + "' exists and is not a folder");
  // Deeper: the first component in the way is named.
  s = WriteFileAtomically(Path("somefile/a/b/out.bin"), "x");
  EXPECT_THAT(s.message(), HasSubstr("'" + Path("somefile") + "' exists and is not a folder"));
  EXPECT_EQ(ReadFile(Path("somefile")), "not a folder");
}

TEST_F(FilePathTest, UnwritableFolderIsAnErrorNamingIt) {
  // /sys refuses new files even to root (EACCES; EPERM for mkdir; EROFS
  // where it is mounted read-only), which permission bits on a temporary
  // folder would not do for root.
  absl::Status s = WriteFileAtomically("/sys/kiln-file-path-test.bin", "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), HasSubstr("cannot write '/sys/kiln-file-path-test.bin': folder "
                                     "'/sys' is not writable ("));
  s = WriteFileAtomically("/sys/kiln-file-path-test/out.bin", "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), HasSubstr("folder '/sys' is not writable ("));
  s = EnsureDirectory("/sys/kiln-file-path-test");
  EXPECT_THAT(s.message(), HasSubstr("cannot create folder '/sys/kiln-file-path-test': folder "
                                     "'/sys' is not writable ("));
}

TEST_F(FilePathTest, AFolderIsNotAFile) {
  fs::create_directory(Path("d"));
  absl::Status s = WriteFileAtomically(Path("d"), "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "cannot write '" + Path("d") + "': it is a folder");
  s = WriteFileAtomically(Path("e/"), "x");
  EXPECT_THAT(s.message(), HasSubstr("ends in '/'"));
  EXPECT_EQ(WriteFileAtomically("", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(fs::is_empty(Path("d")));
}

TEST_F(FilePathTest, EnsureDirectory) {
  EXPECT_TRUE(EnsureDirectory(Path("a/b/c")).ok());
  EXPECT_TRUE(fs::is_directory(Path("a/b/c")));
  EXPECT_TRUE(EnsureDirectory(Path("a/b/c/")).ok()); // exists: fine
  {
    ScopedCwd cwd(dir_->path());
    EXPECT_TRUE(EnsureDirectory("plots").ok());
    EXPECT_TRUE(EnsureDirectory("./plots2/x").ok());
    EXPECT_TRUE(EnsureDirectory(".").ok());
  }
  EXPECT_TRUE(fs::is_directory(Path("plots")));
  EXPECT_TRUE(fs::is_directory(Path("plots2/x")));
  std::ofstream(Path("f")) << "";
  absl::Status s = EnsureDirectory(Path("f"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "cannot create folder '" + Path("f") + "': '" + Path("f") +
                             "' exists and is not a folder");
  EXPECT_EQ(EnsureDirectory("").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(FilePathTest, PrepareOutputFileCreatesFoldersAndLeavesNoFile) {
  ASSERT_TRUE(PrepareOutputFile(Path("reports/junit.xml")).ok());
  EXPECT_TRUE(fs::is_directory(Path("reports")));
  EXPECT_TRUE(fs::is_empty(Path("reports")));
  std::ofstream(Path("reports/keep.md")) << "old";
  ASSERT_TRUE(PrepareOutputFile(Path("reports/keep.md")).ok());
  EXPECT_EQ(ReadFile(Path("reports/keep.md")), "old");
  {
    ScopedCwd cwd(dir_->path());
    EXPECT_TRUE(PrepareOutputFile("bare.xml").ok());
  }
  EXPECT_FALSE(fs::exists(Path("bare.xml")));
  absl::Status s = PrepareOutputFile(Path("reports/keep.md/x.xml"));
  EXPECT_THAT(s.message(),
              HasSubstr("'" + Path("reports/keep.md") + "' exists and is not a folder"));
  EXPECT_EQ(PrepareOutputFile("/sys/kiln-file-path-test.xml").code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(FilePathTest, ADeviceOrFifoIsWrittenInPlaceNotReplaced) {
  // `-o /dev/null` or a FIFO: renaming a temporary file over it would put a
  // regular file where the device was (a broken /dev/null for everyone).
  const std::string fifo = Path("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(PrepareOutputFile(fifo).ok());
  ASSERT_TRUE(WriteFileAtomically(fifo, "through the pipe").ok());
  char buf[64] = {0};
  EXPECT_EQ(::read(reader, buf, sizeof(buf) - 1), 16);
  ::close(reader);
  EXPECT_STREQ(buf, "through the pipe");
  struct stat st;
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(Names(dir_->path()), std::vector<std::string>{"pipe"}); // no temporary left
}

TEST(ExpandHomeTest, Table) {
  struct Case {
    std::string path, home, want;
  };
  const Case cases[] = {
      {"~", "/home/u", "/home/u"},
      {"~/", "/home/u", "/home/u/"},
      {"~/x.json", "/home/u", "/home/u/x.json"},
      {"~/a/b", "/home/u/", "/home/u/a/b"},
      {"~/x", "/", "/x"},
      {"~other/x", "/home/u", "~other/x"}, // another user's home: left as is
      {"a/~/b", "/home/u", "a/~/b"},
      {"./~", "/home/u", "./~"},
      {"x", "/home/u", "x"},
      {"", "/home/u", ""},
      {"~/x", "", "~/x"}, // no home known
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path + " with home " + c.home);
    EXPECT_EQ(ExpandHome(c.path, c.home), c.want);
  }
}

TEST(ExpandHomeTest, UsesHomeThenThePasswordDatabase) {
  {
    ScopedEnv home("HOME", "/tmp/kiln-home");
    EXPECT_EQ(HomeDirectory(), "/tmp/kiln-home");
    EXPECT_EQ(ExpandHome("~/x.json"), "/tmp/kiln-home/x.json");
    EXPECT_EQ(ExpandHome("~"), "/tmp/kiln-home");
    EXPECT_EQ(ExpandHome("rel/x"), "rel/x");
  }
  const struct passwd* pw = getpwuid(getuid());
  ASSERT_NE(pw, nullptr);
  for (const char* value : {static_cast<const char*>(nullptr), ""}) {
    ScopedEnv home("HOME", value);
    EXPECT_EQ(HomeDirectory(), pw->pw_dir);
    EXPECT_EQ(ExpandHome("~/x"), std::string(pw->pw_dir) + "/x");
  }
}

TEST(ParentFolderTest, Table) {
  const std::pair<std::string, std::string> cases[] = {
      {"gemm.cubin", "."}, {"./gemm.cubin", "."}, {"a/b/c", "a/b"}, {"a//b", "a"},  {"/x", "/"},
      {"/a/b/", "/a"},     {"a/b/", "a"},         {"..", "."},      {"../x", ".."},
  };
  for (const auto& [path, want] : cases) {
    SCOPED_TRACE(path);
    EXPECT_EQ(ParentFolder(path), want);
  }
}

} // namespace
} // namespace kiln::util
