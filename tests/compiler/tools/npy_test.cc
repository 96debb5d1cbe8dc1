// .npy reading and writing: round trips of every dtype and of odd shapes,
// the header layout NumPy expects, versions 2.0 and 3.0, each malformed-file
// error, and files exchanged with real NumPy in both directions (skipped
// where no Python with NumPy is installed).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/ir/dtype.h"
#include "compiler/tools/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/subprocess.h"

namespace kiln::tools {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

NpyArray Iota(ir::DType dtype, std::vector<int64_t> shape) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.resize(static_cast<size_t>(a.num_elements() * DTypeBytes(dtype)));
  for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<char>(i * 7 + 1);
  return a;
}

// A .npy file with the given version and header text, then `data`.
std::string RawNpy(int major, const std::string& header, const std::string& data) {
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const uint32_t len = static_cast<uint32_t>(header.size());
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  return out + header + data;
}

TEST(Npy, RoundTripsEveryDType) {
  for (ir::DType dtype : ir::AllDTypes()) {
    SCOPED_TRACE(std::string(ir::DTypeName(dtype)));
    NpyArray a = Iota(dtype, {2, 3});
    absl::StatusOr<std::string> bytes = SerializeNpy(a);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<NpyArray> back = ParseNpy(*bytes, "t.npy");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape, a.shape);
    EXPECT_EQ(back->data, a.data);
    EXPECT_TRUE(DTypeCompatible(back->dtype, dtype));
    // NumPy has no bfloat16 / float8: they come back as their bit patterns.
    if (dtype == ir::DType::kBFloat16) {
      EXPECT_EQ(back->dtype, ir::DType::kUInt16);
    } else if (dtype == ir::DType::kFloat8E4M3 || dtype == ir::DType::kFloat8E5M2) {
      EXPECT_EQ(back->dtype, ir::DType::kUInt8);
    } else {
      EXPECT_EQ(back->dtype, dtype);
    }
  }
}

TEST(Npy, RoundTripsShapes) {
  const std::vector<std::vector<int64_t>> shapes = {{},        {0},       {5},
                                                    {2, 0, 3}, {2, 3, 4}, {1, 1, 1, 1, 7}};
  for (const auto& shape : shapes) {
    SCOPED_TRACE(FormatShape(shape));
    NpyArray a = Iota(ir::DType::kFloat32, shape);
    absl::StatusOr<std::string> bytes = SerializeNpy(a);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    absl::StatusOr<NpyArray> back = ParseNpy(*bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape, shape);
    EXPECT_EQ(back->data, a.data);
  }
}

TEST(Npy, WritesVersion1WithAnAlignedNewlineTerminatedHeader) {
  absl::StatusOr<std::string> bytes = SerializeNpy(Iota(ir::DType::kFloat16, {3, 4}));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len =
      static_cast<unsigned char>((*bytes)[8]) | static_cast<unsigned char>((*bytes)[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = bytes->substr(10, header_len);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_THAT(header, HasSubstr("{'descr': '<f2', 'fortran_order': False, 'shape': (3, 4), }"));
  EXPECT_EQ(bytes->size(), 10 + header_len + 3 * 4 * 2);
}

TEST(Npy, WritesVersion2WhenTheHeaderExceeds64KiB) {
  NpyArray a = Iota(ir::DType::kInt8, std::vector<int64_t>(25000, 1));
  absl::StatusOr<std::string> bytes = SerializeNpy(a);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ((*bytes)[6], 2);
  absl::StatusOr<NpyArray> back = ParseNpy(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape.size(), 25000u);
  EXPECT_EQ(back->data, a.data);
}

TEST(Npy, FormatsShapesLikeNumpy) {
  EXPECT_EQ(FormatShape({}), "()");
  EXPECT_EQ(FormatShape({5}), "(5,)");
  EXPECT_EQ(FormatShape({3, 4}), "(3, 4)");
}

TEST(Npy, ReadsVersions2And3AndPythonLiteralVariants) {
  const std::string data(2 * 4, '\x11');
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    // Double quotes, no trailing comma, keys in another order, a Python 2 long.
    absl::StatusOr<NpyArray> a = ParseNpy(
        RawNpy(major, "{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<i4\"}\n", data));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->dtype, ir::DType::kInt32);
    EXPECT_EQ(a->shape, std::vector<int64_t>{2});
    EXPECT_EQ(a->data, data);
  }
  // '|' and '=' byte orders where they mean the same thing.
  absl::StatusOr<NpyArray> b =
      ParseNpy(RawNpy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", "\x01"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->dtype, ir::DType::kBool);
  EXPECT_TRUE(b->shape.empty());
  absl::StatusOr<NpyArray> c = ParseNpy(
      RawNpy(1, "{'descr': '=f8', 'fortran_order': False, 'shape': (1,), }\n", std::string(8, 0)));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->dtype, ir::DType::kFloat64);
}

TEST(Npy, MapsDescrs) {
  struct Case {
    const char* descr;
    ir::DType dtype;
  };
  for (const Case& c : {Case{"<f2", ir::DType::kFloat16}, Case{"<f4", ir::DType::kFloat32},
                        Case{"<f8", ir::DType::kFloat64}, Case{"|i1", ir::DType::kInt8},
                        Case{"<i2", ir::DType::kInt16}, Case{"<i4", ir::DType::kInt32},
                        Case{"<i8", ir::DType::kInt64}, Case{"|u1", ir::DType::kUInt8},
                        Case{"<u2", ir::DType::kUInt16}, Case{"<u4", ir::DType::kUInt32},
                        Case{"<u8", ir::DType::kUInt64}, Case{"|b1", ir::DType::kBool}}) {
    SCOPED_TRACE(c.descr);
    absl::StatusOr<ir::DType> d = DTypeFromDescr(c.descr);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(*d, c.dtype);
    EXPECT_EQ(NpyDescr(c.dtype), c.descr);
  }
  EXPECT_EQ(NpyDescr(ir::DType::kBFloat16), "<u2");
  EXPECT_EQ(NpyDescr(ir::DType::kFloat8E4M3), "|u1");
  EXPECT_EQ(NpyDescr(ir::DType::kFloat8E5M2), "|u1");
}

TEST(Npy, ReportsEachMalformedFile) {
  const std::string f4x2(8, '\0');
  struct Case {
    const char* name;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"bad magic", "\x93NUMPZ\x01\x00\x00\x00", "bad magic"},
      {"empty", "", "bad magic"},
      {"version", RawNpy(4, "{}", ""), "unsupported .npy format version 4.0"},
      {"fortran order",
       RawNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n", f4x2),
       "fortran_order is True"},
      {"complex", RawNpy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", f4x2),
       "unsupported dtype '<c8'"},
      {"big endian", RawNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", f4x2),
       "big-endian"},
      {"void", RawNpy(1, "{'descr': '<V2', 'fortran_order': False, 'shape': (4,), }\n", f4x2),
       "unsupported dtype '<V2'"},
      {"structured",
       RawNpy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n", f4x2),
       "structured dtypes are not supported"},
      {"truncated data",
       RawNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", f4x2),
       "truncated data: shape (3,) of <f4 needs 12 bytes, the file has 8"},
      {"trailing bytes",
       RawNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", f4x2),
       "4 unexpected bytes after the data"},
      {"truncated header", std::string("\x93NUMPY\x01\x00\x50\x00{'descr'", 18),
       "truncated .npy header"},
      {"missing key", RawNpy(1, "{'descr': '<f4', 'shape': (2,), }\n", f4x2),
       "needs the keys 'descr', 'fortran_order' and 'shape'"},
      {"unknown key",
       RawNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", f4x2),
       "unexpected key 'x'"},
      {"negative dim",
       RawNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }\n", f4x2),
       "non-negative integers"},
      {"not a dict", RawNpy(1, "[1, 2]\n", f4x2), "expected '{'"},
      {"huge shape",
       RawNpy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n",
              f4x2),
       "too large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<NpyArray> a = ParseNpy(c.bytes, "bad.npy");
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(a.status().message(), HasSubstr("bad.npy: "));
    EXPECT_THAT(a.status().message(), HasSubstr(c.message));
  }
}

TEST(Npy, SerializeRejectsDataOfTheWrongSize) {
  NpyArray a = Iota(ir::DType::kFloat32, {2, 2});
  a.data.pop_back();
  absl::StatusOr<std::string> bytes = SerializeNpy(a);
  ASSERT_FALSE(bytes.ok());
  EXPECT_THAT(bytes.status().message(), HasSubstr("needs 16 bytes, has 15"));
}

TEST(Npy, CheckMatchesNamesTheParameter) {
  NpyArray a = Iota(ir::DType::kFloat16, {3, 4});
  EXPECT_TRUE(CheckMatches(a, "A", ir::DType::kFloat16, {3, 4}).ok());
  absl::Status shape = CheckMatches(a, "A", ir::DType::kFloat16, {4, 3});
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shape.message(), "input 'A': shape (3, 4) does not match the parameter's shape (4, 3)");
  absl::Status dtype = CheckMatches(a, "B", ir::DType::kFloat32, {3, 4});
  EXPECT_THAT(dtype.message(), HasSubstr("input 'B': dtype <f2 (float16) does not match the "
                                         "parameter's dtype float32 (<f4)"));
  // Raw bits stand in for the types NumPy lacks.
  EXPECT_TRUE(CheckMatches(Iota(ir::DType::kUInt16, {2}), "X", ir::DType::kBFloat16, {2}).ok());
  EXPECT_TRUE(CheckMatches(Iota(ir::DType::kUInt8, {2}), "X", ir::DType::kFloat8E4M3, {2}).ok());
  EXPECT_FALSE(CheckMatches(Iota(ir::DType::kInt16, {2}), "X", ir::DType::kBFloat16, {2}).ok());
}

class NpyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-npy-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // An interpreter that can import NumPy, or empty.
  static std::string PythonWithNumpy() {
    std::vector<std::string> candidates;
    if (const char* env = getenv("KILN_PYTHON"); env != nullptr && env[0] != '\0') {
      candidates.push_back(env);
    }
    candidates.insert(candidates.end(), {"python3", "/usr/bin/python3"});
    for (const std::string& python : candidates) {
      util::SubprocessOptions options;
      options.timeout = std::chrono::seconds(60);
      absl::StatusOr<util::SubprocessResult> run =
          util::RunSubprocess({python, "-c", "import numpy"}, options);
      if (run.ok() && run->success()) return python;
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(NpyFileTest, FileRoundTripAndMissingFile) {
  NpyArray a = Iota(ir::DType::kInt64, {4, 5});
  ASSERT_TRUE(WriteNpyFile(Path("a.npy"), a).ok());
  absl::StatusOr<NpyArray> back = ReadNpyFile(Path("a.npy"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, a.data);
  absl::StatusOr<NpyArray> missing = ReadNpyFile(Path("missing.npy"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("missing.npy"));
  // Missing folders of an output are created (util::WriteFileAtomically);
  // a folder that is a file is an error naming the path.
  ASSERT_TRUE(WriteNpyFile(Path("no/such/dir/a.npy"), a).ok());
  EXPECT_TRUE(ReadNpyFile(Path("no/such/dir/a.npy")).ok());
  absl::Status unwritable = WriteNpyFile(Path("a.npy/b.npy"), a);
  EXPECT_EQ(unwritable.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(unwritable.message(), HasSubstr("a.npy/b.npy"));
}

TEST_F(NpyFileTest, ExchangesFilesWithNumpy) {
  const std::string python = PythonWithNumpy();
  if (python.empty()) GTEST_SKIP() << "no python3 with NumPy (apt-get install python3-numpy)";
  // NumPy writes; Kiln reads.
  const std::string script = R"(
import sys
import numpy as np
d = sys.argv[1]
np.save(d + "/f4.npy", np.arange(12, dtype=np.float32).reshape(3, 4) / 4)
np.save(d + "/f2.npy", np.array([[1.5, -2.0]], dtype=np.float16))
np.save(d + "/i8.npy", np.array([-3, 7], dtype=np.int64))
np.save(d + "/b1.npy", np.array([True, False, True]))
np.save(d + "/u1.npy", np.array(9, dtype=np.uint8))
a = np.load(d + "/kiln.npy")
print(a.dtype.str, a.shape, a.flags["C_CONTIGUOUS"], repr(a.tolist()))
)";
  NpyArray kiln_array;
  kiln_array.dtype = ir::DType::kInt16;
  kiln_array.shape = {2, 3};
  const int16_t values[] = {1, -2, 3, -4, 5, -32768};
  kiln_array.data.assign(reinterpret_cast<const char*>(values), sizeof(values));
  ASSERT_TRUE(WriteNpyFile(Path("kiln.npy"), kiln_array).ok());

  util::SubprocessOptions options;
  options.timeout = std::chrono::seconds(120);
  absl::StatusOr<util::SubprocessResult> run =
      util::RunSubprocess({python, "-c", script, dir_.string()}, options);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->success()) << run->stderr_data;
  // Kiln writes; NumPy reads.
  EXPECT_EQ(run->stdout_data, "<i2 (2, 3) True [[1, -2, 3], [-4, 5, -32768]]\n");

  absl::StatusOr<NpyArray> f4 = ReadNpyFile(Path("f4.npy"));
  ASSERT_TRUE(f4.ok()) << f4.status();
  EXPECT_EQ(f4->dtype, ir::DType::kFloat32);
  EXPECT_EQ(f4->shape, (std::vector<int64_t>{3, 4}));
  float f[12];
  std::memcpy(f, f4->data.data(), sizeof(f));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f[i], i / 4.0f);

  absl::StatusOr<NpyArray> f2 = ReadNpyFile(Path("f2.npy"));
  ASSERT_TRUE(f2.ok()) << f2.status();
  EXPECT_EQ(f2->dtype, ir::DType::kFloat16);
  EXPECT_EQ(f2->data, std::string("\x00\x3e\x00\xc0", 4)); // 1.5, -2.0 as IEEE half

  absl::StatusOr<NpyArray> i8 = ReadNpyFile(Path("i8.npy"));
  ASSERT_TRUE(i8.ok()) << i8.status();
  int64_t ints[2];
  std::memcpy(ints, i8->data.data(), sizeof(ints));
  EXPECT_EQ(ints[0], -3);
  EXPECT_EQ(ints[1], 7);

  absl::StatusOr<NpyArray> b1 = ReadNpyFile(Path("b1.npy"));
  ASSERT_TRUE(b1.ok()) << b1.status();
  EXPECT_EQ(b1->dtype, ir::DType::kBool);
  EXPECT_EQ(b1->data, std::string("\x01\x00\x01", 3));

  absl::StatusOr<NpyArray> u1 = ReadNpyFile(Path("u1.npy"));
  ASSERT_TRUE(u1.ok()) << u1.status();
  EXPECT_TRUE(u1->shape.empty());
  EXPECT_EQ(u1->data, "\x09");
}

} // namespace
} // namespace kiln::tools
