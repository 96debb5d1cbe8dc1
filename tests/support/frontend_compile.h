// Compiling a TileLang source text in a test: the file is "t.py", bindings
// are text ("128", "float16"), and MustCompile also runs the IR verifier,
// failing the test (and returning an empty program) on either error.
#ifndef KILN_TESTS_SUPPORT_FRONTEND_COMPILE_H_
#define KILN_TESTS_SUPPORT_FRONTEND_COMPILE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "gtest/gtest.h"

namespace kiln::frontend::testing {

using Bindings = std::vector<std::pair<std::string, std::string>>;

inline absl::StatusOr<ir::Program> Compile(std::string_view src, const Bindings& binds = {},
                                           std::string entry = "") {
  FrontendOptions o;
  o.file_name = "t.py";
  o.entry = std::move(entry);
  for (const auto& [k, v] : binds) o.bindings.emplace_back(k, ParseBindingText(v));
  return CompileSource(src, o);
}

inline ir::Program MustCompile(std::string_view src, const Bindings& binds = {},
                               std::string entry = "") {
  absl::StatusOr<ir::Program> p = Compile(src, binds, std::move(entry));
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return ir::Program();
  absl::Status v = ir::Verify(*p);
  EXPECT_TRUE(v.ok()) << v << "\n" << ir::PrintProgram(*p);
  return *std::move(p);
}

} // namespace kiln::frontend::testing

#endif // KILN_TESTS_SUPPORT_FRONTEND_COMPILE_H_
