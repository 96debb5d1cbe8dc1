// kiln-run end to end (the real binary as a child process) and its library
// pieces (compiler/tools/reference_check): usage errors and their exit
// status 2, .npy inputs and outputs, the reference check's verdicts and
// reports. Reference-check cases skip where no Python with NumPy is
// installed; the others run examples/elementwise/add.py on the CPU.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/tools/npy.h"
#include "compiler/tools/reference_check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/subprocess.h"

namespace kiln::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

const std::string kAdd = std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py";

bool PythonWithNumpyExists() {
  std::vector<std::string> candidates;
  if (const char* env = getenv("KILN_PYTHON"); env != nullptr && env[0] != '\0') {
    candidates.push_back(env);
  } else {
    candidates = {"python3", "/usr/bin/python3"};
  }
  for (const std::string& python : candidates) {
    util::SubprocessOptions options;
    options.timeout = std::chrono::seconds(60);
    absl::StatusOr<util::SubprocessResult> run =
        util::RunSubprocess({python, "-c", "import numpy"}, options);
    if (run.ok() && run->success()) return true;
  }
  return false;
}

class KilnRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-run-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  util::SubprocessResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), std::string(KILN_BINARY_DIR) + "/kiln-run");
    util::SubprocessOptions options;
    options.timeout = std::chrono::seconds(300);
    absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(args, options);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : util::SubprocessResult{};
  }

  // A copy of add.py with `replacements` applied (to break its ref_program).
  std::string AddVariant(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& replacements) {
    std::ifstream in(kAdd);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& [from, to] : replacements) {
      EXPECT_THAT(text, HasSubstr(from));
      text = absl::StrReplaceAll(text, {{from, to}});
    }
    std::ofstream(Path(name)) << text;
    return Path(name);
  }

  void WriteArray(const std::string& name, ir::DType dtype, std::vector<int64_t> shape) {
    NpyArray a;
    a.dtype = dtype;
    a.shape = std::move(shape);
    a.data.assign(static_cast<size_t>(a.num_elements() * DTypeBytes(dtype)), '\0');
    ASSERT_TRUE(WriteNpyFile(Path(name), a).ok());
  }

  fs::path dir_;
};

// --- usage errors -------------------------------------------------------------------

TEST_F(KilnRunTest, HelpDocumentsFlagsAndExitStatus) {
  util::SubprocessResult run = Run({"--help"});
  EXPECT_EQ(run.exit_code, 0);
  for (const char* text : {"--target cpu|cuda[:N]", "--bind", "--test-bind", "--entry", "--arch",
                           "--seed", "--input", "--save", "--check", "--emit-dir", "--quiet",
                           "exit status:", "1  --check found a mismatch"}) {
    EXPECT_THAT(run.stdout_data, HasSubstr(text));
  }
}

TEST_F(KilnRunTest, UsageErrorsExitWith2) {
  WriteArray("a.npy", ir::DType::kFloat16, {77, 130});
  struct Case {
    const char* name;
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no file", {"--target", "cpu"}, "no input file"},
      {"missing file", {Path("nope.py"), "--target", "cpu"}, "cannot read '"},
      {"no target", {kAdd, "--test-bind"}, "missing --target"},
      {"bad target", {kAdd, "--target", "tpu"}, "--target must be cpu, cuda or cuda:N"},
      {"bad device", {kAdd, "--target", "cuda:x"}, "needs a device number"},
      {"arch on cpu", {kAdd, "--target", "cpu", "--arch", "sm_90"}, "--arch applies to"},
      {"bad arch", {kAdd, "--target", "cuda", "--arch", "sm_75"}, "sm_75 is not supported"},
      {"bad bind", {kAdd, "--target", "cpu", "--bind", "M"}, "--bind expects NAME=VALUE"},
      {"bind without value", {kAdd, "--target", "cpu", "--bind"}, "--bind needs NAME=VALUE"},
      {"unknown binding",
       {kAdd, "--test-bind", "--target", "cpu", "--bind", "Q=3"},
       "unknown binding 'Q'"},
      {"missing binding", {kAdd, "--target", "cpu"}, "has no binding"},
      {"bad seed", {kAdd, "--target", "cpu", "--seed", "-1"}, "--seed needs"},
      {"unknown option", {kAdd, "--target", "cpu", "--fast"}, "unknown option '--fast'"},
      {"bad save", {kAdd, "--target", "cpu", "--save", "C"}, "--save expects NAME=FILE.npy"},
      {"unknown save name",
       {kAdd, "--test-bind", "--target", "cpu", "--save", "D=" + Path("d.npy")},
       "--save D: 'D' is not a parameter of 'add'; parameters: A, B, C"},
      {"unknown input name",
       {kAdd, "--test-bind", "--target", "cpu", "--input", "X=" + Path("a.npy")},
       "'X' is not a parameter"},
      {"input twice",
       {kAdd, "--target", "cpu", "--input", "A=" + Path("a.npy"), "--input", "A=x.npy"},
       "--input A given twice"},
      {"input shape mismatch",
       {kAdd, "--test-bind", "--bind", "M=76", "--target", "cpu", "--input", "A=" + Path("a.npy")},
       "input 'A': shape (77, 130) does not match the parameter's shape (76, 130)"},
      {"input dtype mismatch",
       {kAdd, "--test-bind", "--bind", "dtype=float32", "--target", "cpu", "--input",
        "A=" + Path("a.npy")},
       "input 'A': dtype <f2 (float16) does not match the parameter's dtype float32"},
      {"input missing file",
       {kAdd, "--test-bind", "--target", "cpu", "--input", "B=" + Path("missing.npy")},
       "--input B: cannot open"},
      {"input not npy",
       {kAdd, "--test-bind", "--target", "cpu", "--input", "B=" + kAdd},
       "bad magic"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    util::SubprocessResult run = Run(c.args);
    EXPECT_TRUE(run.exited);
    EXPECT_EQ(run.exit_code, 2) << run.stderr_data;
    EXPECT_THAT(run.stderr_data, HasSubstr(c.message));
    EXPECT_TRUE(run.stdout_data.empty()) << run.stdout_data;
  }
}

TEST_F(KilnRunTest, TestBindNeedsTheLine) {
  std::string file = AddVariant("nobind.py", {{"# kiln: test-bind", "# test-bind"}});
  util::SubprocessResult run = Run({file, "--test-bind", "--target", "cpu"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.stderr_data, HasSubstr("has no '# kiln: test-bind' line"));
}

TEST_F(KilnRunTest, CudaWithoutAGpuIsAClearError) {
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "a GPU is attached";
  util::SubprocessResult run = Run({kAdd, "--test-bind", "--target", "cuda"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.stderr_data, HasSubstr("--target cuda: CUDA driver"));
}

// --- running on the CPU ------------------------------------------------------------

// Issue 27, item 3: the block swizzle computed panel_size * blocks along y in
// int, so panel 2**20 over 4096 rows of blocks wrapped to 0 and the kernel
// died of a division by zero (SIGFPE); larger grids mapped blocks wrongly.
TEST_F(KilnRunTest, SwizzledBlockIndicesDoNotOverflowInt) {
  const std::string loop = "as (bx, by):\n";
  std::string path =
      AddVariant("swizzle.py", {{loop, loop + "            T.use_swizzle(panel_size=2**20)\n"}});
  std::vector<std::string> args = {path,         "--bind",    "M=4096", "--bind",     "N=64",
                                   "--bind",     "block_M=1", "--bind", "block_N=32", "--bind",
                                   "threads=32", "--target",  "cpu"};
  if (PythonWithNumpyExists()) args.emplace_back("--check");
  util::SubprocessResult run = Run(args);
  EXPECT_EQ(run.exit_code, 0) << run.stderr_data;
  EXPECT_THAT(run.stderr_data + run.stdout_data, Not(HasSubstr("SIGFPE")));
}

// TileLang's rasterization (panels of rows, or of columns for order "column",
// every other panel backwards, the last one short) must still give every
// block of a ragged grid exactly one tile: --check compares all of C.
// (With every panel as tall as the first, blocks of the last fell off the
// grid and rows of C stayed unwritten.)
TEST_F(KilnRunTest, SwizzledBlocksCoverARaggedGridOnceInEitherOrder) {
  if (!PythonWithNumpyExists()) GTEST_SKIP() << "needs python3 with numpy for --check";
  const std::string loop = "as (bx, by):\n";
  for (const char* order : {"row", "column"}) {
    SCOPED_TRACE(order);
    std::string path =
        AddVariant(absl::StrCat("swizzle_", order, ".py"),
                   {{loop, absl::StrCat(loop, "            T.use_swizzle(panel_size=3, order=\"",
                                        order, "\")\n")}});
    util::SubprocessResult run =
        Run({path, "--bind", "M=77", "--bind", "N=130", "--bind", "block_M=4", "--bind",
             "block_N=32", "--bind", "threads=32", "--target", "cpu", "--check"});
    EXPECT_EQ(run.exit_code, 0) << run.stderr_data << run.stdout_data;
  }
}

TEST_F(KilnRunTest, SavesAndReadsBackNpy) {
  util::SubprocessResult first =
      Run({kAdd, "--test-bind", "--target", "cpu", "--seed", "7", "--save", "A=" + Path("a.npy"),
           "--save", "B=" + Path("b.npy"), "--save", "C=" + Path("c.npy"), "--emit-dir",
           Path("emitted")});
  ASSERT_EQ(first.exit_code, 0) << first.stderr_data;
  EXPECT_THAT(first.stdout_data, HasSubstr("on cpu"));
  EXPECT_THAT(first.stdout_data, HasSubstr("ms (wall clock"));
  EXPECT_TRUE(fs::exists(Path("emitted/add.cc")));

  absl::StatusOr<NpyArray> a = ReadNpyFile(Path("a.npy"));
  absl::StatusOr<NpyArray> c = ReadNpyFile(Path("c.npy"));
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_EQ(a->dtype, ir::DType::kFloat16);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{77, 130}));
  EXPECT_NE(c->data, std::string(c->data.size(), '\0')) << "C was not written";

  // The same seed gives the same inputs; given back as files they give the same C.
  util::SubprocessResult second =
      Run({kAdd, "--test-bind", "--target", "cpu", "--quiet", "--input", "A=" + Path("a.npy"),
           "--input", "B=" + Path("b.npy"), "--save", "C=" + Path("c2.npy"), "--save",
           "A=" + Path("a2.npy")});
  ASSERT_EQ(second.exit_code, 0) << second.stderr_data;
  EXPECT_TRUE(second.stdout_data.empty()) << second.stdout_data;
  absl::StatusOr<NpyArray> c2 = ReadNpyFile(Path("c2.npy"));
  absl::StatusOr<NpyArray> a2 = ReadNpyFile(Path("a2.npy"));
  ASSERT_TRUE(c2.ok() && a2.ok());
  EXPECT_EQ(c2->data, c->data);
  EXPECT_EQ(a2->data, a->data);

  // Another seed, other inputs.
  util::SubprocessResult third = Run({kAdd, "--test-bind", "--target", "cpu", "--seed", "8",
                                      "--quiet", "--save", "A=" + Path("a3.npy")});
  ASSERT_EQ(third.exit_code, 0) << third.stderr_data;
  absl::StatusOr<NpyArray> a3 = ReadNpyFile(Path("a3.npy"));
  ASSERT_TRUE(a3.ok());
  EXPECT_NE(a3->data, a->data);
}

// Output paths as users type them: a bare name in the working folder,
// missing folders created, `C=~/x.npy` (no shell expands a ~ after '='),
// and a path that cannot be written fails before the kernel runs.
TEST_F(KilnRunTest, SavePathsBareMissingFoldersAndHome) {
  fs::create_directory(Path("cwd"));
  fs::create_directory(Path("home"));
  auto run_in_cwd = [&](std::vector<std::string> args) {
    args.insert(args.begin(), std::string(KILN_BINARY_DIR) + "/kiln-run");
    util::SubprocessOptions options;
    options.timeout = std::chrono::seconds(300);
    options.working_dir = Path("cwd");
    options.extra_env = {{"HOME", Path("home")}};
    absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(args, options);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : util::SubprocessResult{};
  };
  util::SubprocessResult run =
      run_in_cwd({kAdd, "--test-bind", "--target", "cpu", "--quiet", "--save", "C=c.npy", "--save",
                  "A=out/sub/a.npy", "--save=B=~/saved/b.npy", "--emit-dir=~/src"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_data;
  for (const std::string& path :
       {Path("cwd/c.npy"), Path("cwd/out/sub/a.npy"), Path("home/saved/b.npy")}) {
    SCOPED_TRACE(path);
    absl::StatusOr<NpyArray> array = ReadNpyFile(path);
    ASSERT_TRUE(array.ok()) << array.status();
    EXPECT_EQ(array->shape, (std::vector<int64_t>{77, 130}));
  }
  EXPECT_TRUE(fs::exists(Path("home/src/add.cc")));
  EXPECT_FALSE(fs::exists(Path("cwd/~")));
  // --input takes ~ too.
  run = run_in_cwd({kAdd, "--test-bind", "--target", "cpu", "--quiet", "--input", "B=~/saved/b.npy",
                    "--save", "B=./b2.npy"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_data;
  EXPECT_EQ(ReadNpyFile(Path("cwd/b2.npy"))->data, ReadNpyFile(Path("home/saved/b.npy"))->data);

  // A regular file where a folder should be (tests run as root, where
  // permission bits do not stop a write): exit 2 before the run.
  std::ofstream(Path("cwd/somefile")) << "a file";
  run = run_in_cwd({kAdd, "--test-bind", "--target", "cpu", "--save", "C=somefile/c.npy"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.stderr_data, HasSubstr("--save C: cannot write 'somefile/c.npy': 'somefile' "
                                         "exists and is not a folder"));
  EXPECT_THAT(run.stdout_data, Not(HasSubstr("kernel:")));
  run = run_in_cwd({kAdd, "--test-bind", "--target", "cpu", "--emit-dir", "somefile/src"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.stderr_data, HasSubstr("--emit-dir: cannot create folder 'somefile/src': "
                                         "'somefile' exists and is not a folder"));
}

TEST_F(KilnRunTest, CheckPassesAndReportsMismatches) {
  if (!PythonWithNumpyExists()) GTEST_SKIP() << "no python3 with NumPy";
  util::SubprocessResult pass = Run({kAdd, "--test-bind", "--target", "cpu", "--check"});
  ASSERT_EQ(pass.exit_code, 0) << pass.stdout_data << pass.stderr_data;
  EXPECT_THAT(pass.stdout_data, HasSubstr("check:   PASS"));
  EXPECT_THAT(pass.stdout_data, HasSubstr("C (float16, shape (77, 130)): max abs err"));

  const std::string wrong =
      AddVariant("wrong.py", {{"A.astype(np.float32) + B.astype(np.float32)",
                               "A.astype(np.float32) - B.astype(np.float32)"}});
  util::SubprocessResult fail = Run({wrong, "--test-bind", "--target", "cpu", "--check"});
  EXPECT_EQ(fail.exit_code, 1) << fail.stderr_data;
  EXPECT_THAT(fail.stdout_data, HasSubstr("check:   FAIL"));
  EXPECT_THAT(fail.stdout_data, HasSubstr("first mismatch at (0, 0): kernel"));

  const std::string raising = AddVariant(
      "raising.py", {{"return (A.astype(np.float32) + B.astype(np.float32)).astype(np.float16)",
                      "return undefined_helper(A)"}});
  util::SubprocessResult error = Run({raising, "--test-bind", "--target", "cpu", "--check"});
  EXPECT_EQ(error.exit_code, 2);
  EXPECT_THAT(error.stderr_data, HasSubstr("Traceback (most recent call last)"));
  EXPECT_THAT(error.stderr_data, HasSubstr("NameError: name 'undefined_helper' is not defined"));
}

// Parameters named with words the tile IR reserves (`max`, `exp`, `out`, and
// the shape symbol `in`) are renamed inside the compiler only: --bind,
// --input, --save, the reports and the reference check use the user's names.
TEST_F(KilnRunTest, FlagsTakeTheUsersParameterNames) {
  const std::string program = Path("names.py");
  std::ofstream(program) << R"(import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def names(max, exp, block=32):
    n = T.const("in")
    max: T.Tensor((n,), "float32")
    exp: T.Tensor((n,), "float32")
    out = T.empty((n,), "float32")
    with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
        for i in T.Parallel(block):
            if bx * block + i < n:
                out[bx * block + i] = max[bx * block + i] * 2.0 + exp[bx * block + i]
    return out


def ref_program(max, exp):
    return max * 2 + exp
)";
  constexpr int kN = 100;
  NpyArray a, b;
  a.dtype = b.dtype = ir::DType::kFloat32;
  a.shape = b.shape = {kN};
  std::vector<float> av(kN), bv(kN);
  for (int i = 0; i < kN; ++i) {
    av[i] = static_cast<float>(i) - 40.0f;
    bv[i] = 0.25f * static_cast<float>(i % 7);
  }
  a.data.assign(reinterpret_cast<const char*>(av.data()), kN * sizeof(float));
  b.data.assign(reinterpret_cast<const char*>(bv.data()), kN * sizeof(float));
  ASSERT_TRUE(WriteNpyFile(Path("a.npy"), a).ok());
  ASSERT_TRUE(WriteNpyFile(Path("b.npy"), b).ok());

  util::SubprocessResult run = Run({program, "--bind", "in=100", "--target", "cpu", "--quiet",
                                    "--input", "max=" + Path("a.npy"), "--input",
                                    "exp=" + Path("b.npy"), "--save", "out=" + Path("c.npy")});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_data;
  absl::StatusOr<NpyArray> c = ReadNpyFile(Path("c.npy"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->shape, (std::vector<int64_t>{kN}));
  ASSERT_EQ(c->data.size(), kN * sizeof(float));
  std::vector<float> cv(kN);
  std::memcpy(cv.data(), c->data.data(), c->data.size());
  for (int i = 0; i < kN; ++i) EXPECT_EQ(cv[i], av[i] * 2.0f + bv[i]) << "at " << i;

  // A name the user never wrote is not one; the list shows the user's names.
  util::SubprocessResult internal =
      Run({program, "--bind", "in=100", "--target", "cpu", "--save", "out_=" + Path("x.npy")});
  EXPECT_EQ(internal.exit_code, 2);
  EXPECT_THAT(internal.stderr_data,
              HasSubstr("'out_' is not a parameter of 'names'; parameters: max, exp, out"));

  // The reference check hands NumPy the same arrays under the same names.
  if (!PythonWithNumpyExists()) GTEST_SKIP() << "no python3 with NumPy";
  util::SubprocessResult check =
      Run({program, "--bind", "in=100", "--target", "cpu", "--input", "max=" + Path("a.npy"),
           "--input", "exp=" + Path("b.npy"), "--check"});
  ASSERT_EQ(check.exit_code, 0) << check.stdout_data << check.stderr_data;
  EXPECT_THAT(check.stdout_data, HasSubstr("check:   PASS"));
  EXPECT_THAT(check.stdout_data, HasSubstr("out (float32, shape (100,)): max abs err 0"));
}

// --- the reference check on its own -------------------------------------------------

class ReferenceCheckTest : public KilnRunTest {
 protected:
  void SetUp() override {
    KilnRunTest::SetUp();
    if (!PythonWithNumpyExists()) GTEST_SKIP() << "no python3 with NumPy";
  }

  std::string Program(const std::string& name, const std::string& body) {
    std::ofstream(Path(name)) << "import numpy as np\nimport tilelang\n"
                                 "import tilelang.language as T\n\n\n"
                                 "@tilelang.jit(out_idx=[-1])\n"
                                 "def kernel(A, dtype=T.float16, n=T.ceildiv(3, 2) + 1):\n"
                                 "    return A\n\n\n"
                              << body;
    return Path(name);
  }

  static NpyArray Floats(ir::DType dtype, const std::vector<float>& values) {
    NpyArray a;
    a.dtype = dtype;
    a.shape = {static_cast<int64_t>(values.size())};
    if (dtype == ir::DType::kFloat32) {
      a.data.assign(reinterpret_cast<const char*>(values.data()), values.size() * 4);
    } else { // bfloat16: the top half of each float
      for (float v : values) {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t top = static_cast<uint16_t>(bits >> 16);
        a.data.append(reinterpret_cast<const char*>(&top), 2);
      }
    }
    return a;
  }
};

TEST_F(ReferenceCheckTest, PassesWithinTolerance) {
  ReferenceCheckRequest request;
  request.program_file = Program("p.py", "def ref_program(A):\n    return A * 2\n");
  request.inputs = {{"A", Floats(ir::DType::kFloat32, {1, 2, 3})}};
  request.outputs = {{"B", Floats(ir::DType::kFloat32, {2.001f, 4, 6})}};
  absl::StatusOr<ReferenceCheckResult> result = RunReferenceCheck(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->passed) << result->report;
  EXPECT_THAT(result->report, HasSubstr("B (float32, shape (3,)): max abs err 0.001"));
  EXPECT_THAT(result->report, HasSubstr("0 of 3 mismatch (rtol 0.001, atol 0.001): PASS"));
  EXPECT_FALSE(fs::exists(Path("__pycache__")));
}

TEST_F(ReferenceCheckTest, ReportsTheFirstMismatch) {
  ReferenceCheckRequest request;
  request.program_file =
      Program("p.py", "def ref_program(A):\n    return A * 2, A.astype(np.int32)\n");
  request.inputs = {{"A", Floats(ir::DType::kFloat32, {1, 2, 3, 4})}};
  NpyArray ints;
  ints.dtype = ir::DType::kInt32;
  ints.shape = {4};
  const int32_t iv[] = {1, 2, 3, 4};
  ints.data.assign(reinterpret_cast<const char*>(iv), sizeof(iv));
  request.outputs = {{"B", Floats(ir::DType::kFloat32, {2, 4, 7, 9})}, {"I", ints}};
  absl::StatusOr<ReferenceCheckResult> result = RunReferenceCheck(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->passed);
  EXPECT_THAT(result->report,
              HasSubstr("2 of 4 mismatch (rtol 0.001, atol 0.001): FAIL; first mismatch at (2,): "
                        "kernel 7.0, reference 6.0"));
  EXPECT_THAT(result->report, HasSubstr("I (int32, shape (4,)): max abs err 0, max rel err 0, "
                                        "0 of 4 mismatch (exact): PASS"));
}

TEST_F(ReferenceCheckTest, NanAndInfinityMustMatchByPosition) {
  const std::string nan_ref =
      Program("p.py", "def ref_program(A):\n    return np.array([np.nan, np.inf, -np.inf, 1.0], "
                      "dtype=np.float32)\n");
  ReferenceCheckRequest request;
  request.program_file = nan_ref;
  request.inputs = {{"A", Floats(ir::DType::kFloat32, {0})}};
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  request.outputs = {{"B", Floats(ir::DType::kFloat32, {nan, inf, -inf, 1})}};
  absl::StatusOr<ReferenceCheckResult> same = RunReferenceCheck(request);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(same->passed) << same->report;

  request.outputs = {{"B", Floats(ir::DType::kFloat32, {nan, -inf, -inf, 1})}};
  absl::StatusOr<ReferenceCheckResult> sign = RunReferenceCheck(request);
  ASSERT_TRUE(sign.ok()) << sign.status();
  EXPECT_FALSE(sign->passed);
  EXPECT_THAT(sign->report, HasSubstr("first mismatch at (1,): kernel -inf, reference inf"));

  request.outputs = {{"B", Floats(ir::DType::kFloat32, {0, inf, -inf, 1})}};
  absl::StatusOr<ReferenceCheckResult> lost = RunReferenceCheck(request);
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_FALSE(lost->passed);
  EXPECT_THAT(lost->report, HasSubstr("first mismatch at (0,): kernel 0.0, reference nan"));
}

TEST_F(ReferenceCheckTest, DecodesBfloat16Bits) {
  // The input arrives as float32 values, and the bfloat16 output is compared
  // as values with bfloat16's tolerance.
  ReferenceCheckRequest request;
  request.program_file =
      Program("p.py", "def ref_program(A):\n    assert A.dtype == np.float32, A.dtype\n"
                      "    return A + 1\n");
  request.inputs = {{"A", Floats(ir::DType::kBFloat16, {1, 2.5f})}};
  request.outputs = {{"B", Floats(ir::DType::kBFloat16, {2, 3.5f})}};
  absl::StatusOr<ReferenceCheckResult> result = RunReferenceCheck(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->passed) << result->report;
  EXPECT_THAT(result->report, HasSubstr("B (bfloat16, shape (2,))"));
  EXPECT_THAT(result->report, HasSubstr("rtol 0.03, atol 0.03"));
}

TEST_F(ReferenceCheckTest, PythonErrorsComeBackVerbatim) {
  ReferenceCheckRequest request;
  request.program_file = Program("p.py", "def ref_program(A):\n    raise ValueError('bad ref')\n");
  request.inputs = {{"A", Floats(ir::DType::kFloat32, {1})}};
  request.outputs = {{"B", Floats(ir::DType::kFloat32, {1})}};
  absl::StatusOr<ReferenceCheckResult> raised = RunReferenceCheck(request);
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(raised.status().message(), HasSubstr("Traceback (most recent call last)"));
  EXPECT_THAT(raised.status().message(), HasSubstr("ValueError: bad ref"));

  request.program_file = Program("q.py", "def ref_program(A):\n    return A, A\n");
  absl::StatusOr<ReferenceCheckResult> arity = RunReferenceCheck(request);
  EXPECT_THAT(arity.status().message(),
              HasSubstr("ref_program returned 2 array(s); the kernel has 1 output(s) (B)"));

  request.program_file = Program("r.py", "import torch_is_not_here\n");
  absl::StatusOr<ReferenceCheckResult> import = RunReferenceCheck(request);
  EXPECT_THAT(import.status().message(), HasSubstr("ModuleNotFoundError"));

  request.program_file = Program("s.py", "def ref_program(A):\n    return A[:0]\n");
  absl::StatusOr<ReferenceCheckResult> shape = RunReferenceCheck(request);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_FALSE(shape->passed);
  EXPECT_THAT(shape->report, HasSubstr("FAIL: ref_program returned shape (0,)"));
}

TEST(RefProgramArity, CountsPositionalParameters) {
  EXPECT_EQ(*RefProgramArity("def ref_program(Q, K, V):\n    pass\n", "a.py"), 3);
  EXPECT_EQ(*RefProgramArity("def ref_program(A, B, *, scale=1.0):\n    pass\n", "a.py"), 2);
  absl::StatusOr<int> none = RefProgramArity("def other(A):\n    pass\n", "a.py");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<int> varargs = RefProgramArity("def ref_program(*xs):\n    pass\n", "a.py");
  EXPECT_EQ(varargs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(varargs.status().message(), HasSubstr("a.py:1: ref_program takes *xs"));
}

TEST(ReferenceCheckScript, StubsTilelangAndExitsDistinctly) {
  const std::string script(ReferenceCheckScript());
  EXPECT_THAT(script, HasSubstr("_StubFinder"));
  EXPECT_THAT(script, HasSubstr("sys.exit(0 if ok else 11)"));
  EXPECT_THAT(script, Not(HasSubstr("import tilelang")));
}

} // namespace
} // namespace kiln::tools
