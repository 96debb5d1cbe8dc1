// JUnit XML of a regress run (the schema CI systems read: Jenkins, GitLab,
// GitHub test reporters): <testsuites> with one <testsuite> for the suite
// and one <testcase> per kernel; a regression is a <failure
// type="regression">, an infrastructure problem an <error
// type="infrastructure">, each with a one-line message and the numbers in
// the body. Thread-safe (pure).
#pragma once

#include <string>

#include "clients/cpp/regress/runner.h"

namespace kiln::regress {

std::string JUnitXml(const RunReport& report);

// XML character data / attribute escaping (& < > " '; control characters
// other than tab, newline and carriage return become '?').
std::string XmlEscape(const std::string& text);

} // namespace kiln::regress
