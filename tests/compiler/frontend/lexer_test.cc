#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/lexer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using ::testing::HasSubstr;

// One word per token: NAME:x KW:if INT:3 FLOAT:0.5 STR:'a' OP:( NL IND DED
// ERR:<message> END.
std::string Summary(const TokenStream& ts) {
  std::vector<std::string> parts;
  for (const Token& t : ts.tokens) {
    switch (t.kind) {
    case TokKind::kEnd:
      parts.push_back("END");
      break;
    case TokKind::kNewline:
      parts.push_back("NL");
      break;
    case TokKind::kIndent:
      parts.push_back("IND");
      break;
    case TokKind::kDedent:
      parts.push_back("DED");
      break;
    case TokKind::kName:
      parts.push_back(absl::StrCat("NAME:", std::string(t.text)));
      break;
    case TokKind::kKeyword:
      parts.push_back(absl::StrCat("KW:", std::string(t.text)));
      break;
    case TokKind::kInt:
      parts.push_back(absl::StrCat("INT:", t.ival));
      break;
    case TokKind::kFloat:
      parts.push_back(absl::StrCat("FLOAT:", t.fval));
      break;
    case TokKind::kString:
      parts.push_back(absl::StrCat("STR:", std::string(t.text)));
      break;
    case TokKind::kOp:
      parts.push_back(absl::StrCat("OP:", std::string(t.text)));
      break;
    case TokKind::kError:
      parts.push_back(absl::StrCat("ERR:", ts.errors[t.ival]));
      break;
    }
  }
  return absl::StrJoin(parts, " ");
}

std::string Lex(std::string_view src) {
  absl::StatusOr<TokenStream> ts = Tokenize(src, "t.py");
  if (!ts.ok()) return std::string(ts.status().message());
  return Summary(*ts);
}

struct Case {
  std::string src;
  std::string want;
};

TEST(LexerTest, TokenTable) {
  const Case cases[] = {
      {"", "END"},
      {"\n\n# only a comment\n   \n", "END"},
      {"x = 1", "NAME:x OP:= INT:1 NL END"},
      {"if x:\n  y\n", "KW:if NAME:x OP:: NL IND NAME:y NL DED END"},
      {"a\n  b\n    c\nd\n", "NAME:a NL IND NAME:b NL IND NAME:c NL DED DED NAME:d NL END"},
      {"f(a,\n  b)\n", "NAME:f OP:( NAME:a OP:, NAME:b OP:) NL END"},
      {"x = [1,\n# comment\n\n 2]\n", "NAME:x OP:= OP:[ INT:1 OP:, INT:2 OP:] NL END"},
      {"x = 1 + \\\n    2\n", "NAME:x OP:= INT:1 OP:+ INT:2 NL END"},
      {"x  # trailing\ny", "NAME:x NL NAME:y NL END"},
      {"a:=b->c", "NAME:a OP::= NAME:b OP:-> NAME:c NL END"},
      {"a**=b//=c>>=d<<=e",
       "NAME:a OP:**= NAME:b OP://= NAME:c OP:>>= NAME:d OP:<<= NAME:e NL END"},
      {"a@b@=c", "NAME:a OP:@ NAME:b OP:@= NAME:c NL END"},
      {"x[...]", "NAME:x OP:[ OP:... OP:] NL END"},
      {"a!=b<=c>=d==e", "NAME:a OP:!= NAME:b OP:<= NAME:c OP:>= NAME:d OP:== NAME:e NL END"},
      {"a%=b&=c|=d^=e-=f+=g*=h/=i", "NAME:a OP:%= NAME:b OP:&= NAME:c OP:|= NAME:d OP:^= NAME:e "
                                    "OP:-= NAME:f OP:+= NAME:g OP:*= NAME:h OP:/= NAME:i NL END"},
      {"~a;b,c.d{}", "OP:~ NAME:a OP:; NAME:b OP:, NAME:c OP:. NAME:d OP:{ OP:} NL END"},
      {"not None True False lambda match",
       "KW:not KW:None KW:True KW:False KW:lambda NAME:match NL END"},
      {"_x1 Ünï", "NAME:_x1 NAME:Ünï NL END"},
      // Numbers.
      {"0 7 1_000 0x_ff 0XFF 0o17 0b1010 0_0",
       "INT:0 INT:7 INT:1000 INT:255 INT:255 INT:15 INT:10 INT:0 NL END"},
      {"1. .5 1e3 1.5e-3 1_0.2_5 2E+2",
       "FLOAT:1 FLOAT:0.5 FLOAT:1000 FLOAT:0.0015 FLOAT:10.25 FLOAT:200 NL END"},
      {"9223372036854775807", "INT:9223372036854775807 NL END"},
      {"x.y", "NAME:x OP:. NAME:y NL END"},
      // Strings keep their raw text.
      {"'a' \"b\" r'\\n' b'x' f'{y}' rb'z' Rb'z' BR'z' Fr'q' u'w'",
       "STR:'a' STR:\"b\" STR:r'\\n' STR:b'x' STR:f'{y}' STR:rb'z' STR:Rb'z' STR:BR'z' "
       "STR:Fr'q' STR:u'w' NL END"},
      {"'''a\nb''' x", "STR:'''a\nb''' NAME:x NL END"},
      {"'a\\'b'", "STR:'a\\'b' NL END"},
      {"'a\\\nb'", "STR:'a\\\nb' NL END"},
      {"ub'x'", "NAME:ub STR:'x' NL END"},
      // Tabs count to the next multiple of 8, consistently.
      {"if x:\n\ty\n\tz\n", "KW:if NAME:x OP:: NL IND NAME:y NL NAME:z NL DED END"},
      {"a\r\nb\rc", "NAME:a NL NAME:b NL NAME:c NL END"},
      {"\ta\n", "IND NAME:a NL DED END"},
      {"\xEF\xBB\xBFx", "NAME:x NL END"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    EXPECT_EQ(Lex(c.src), c.want);
  }
}

TEST(LexerTest, LocalErrorsBecomeErrorTokens) {
  const Case cases[] = {
      {"a $ b", "NAME:a ERR:invalid character '$' NAME:b NL END"},
      {"a ! b", "NAME:a ERR:invalid character '!' NAME:b NL END"},
      {std::string("a \x01"), "NAME:a ERR:invalid character byte 0x1 NL END"},
      {"x = 'abc\ny", "NAME:x OP:= ERR:unterminated string literal NL NAME:y NL END"},
      {"x = 'abc", "NAME:x OP:= ERR:unterminated string literal NL END"},
      {"1_", "ERR:invalid decimal literal NL END"},
      {"1__0", "ERR:invalid decimal literal NL END"},
      {"0x", "ERR:invalid hexadecimal literal NL END"},
      {"0b102", "ERR:invalid binary literal NL END"},
      {"0o8", "ERR:invalid octal literal NL END"},
      {"012", "ERR:leading zeros in decimal integer literals are not permitted NL END"},
      {"1abc", "ERR:invalid decimal literal NL END"},
      {"1e", "ERR:invalid decimal literal NL END"},
      {"3j", "ERR:imaginary literals are not supported NL END"},
      {"9223372036854775808", "ERR:integer literal too large for int64 NL END"},
      {"0xffffffffffffffff", "ERR:integer literal too large for int64 NL END"},
      {"a)", "NAME:a ERR:unmatched ')' NL END"},
      {"(a]", "OP:( NAME:a ERR:closing parenthesis ']' does not match opening parenthesis '(' on "
              "line 1 NL END"},
      {"a \\ b", "NAME:a ERR:unexpected character after line continuation character NAME:b NL END"},
      {"if x:\n    a\n  b\n",
       "KW:if NAME:x OP:: NL IND NAME:a NL DED ERR:unindent does not match any outer indentation "
       "level NAME:b NL END"},
      {"if x:\n        a\n\tb\n",
       "KW:if NAME:x OP:: NL IND NAME:a NL ERR:inconsistent use of tabs and spaces in "
       "indentation NAME:b NL DED END"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    EXPECT_EQ(Lex(c.src), c.want);
  }
}

TEST(LexerTest, FatalErrorsAreLocated) {
  const Case cases[] = {
      {"x = 1\ny = '''abc\n\n", "t.py:2:5: unterminated triple-quoted string literal"},
      {"x = (1,\n  2\n\ny = 3\n", "t.py:1:5: '(' was never closed"},
      {"f(a, [b\n", "t.py:1:6: '[' was never closed"},
      {std::string(201, '['), "t.py:1:201: nesting too deep"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    absl::StatusOr<TokenStream> ts = Tokenize(c.src, "t.py");
    ASSERT_FALSE(ts.ok());
    EXPECT_EQ(ts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(ts.status().message(), c.want);
  }
}

TEST(LexerTest, DeepBracketsFailWithoutCrashing) {
  std::string src(100000, '(');
  absl::StatusOr<TokenStream> ts = Tokenize(src, "t.py");
  ASSERT_FALSE(ts.ok());
  EXPECT_THAT(ts.status().message(), HasSubstr("nesting too deep"));
}

TEST(LexerTest, Locations) {
  absl::StatusOr<TokenStream> ts = Tokenize("def f(a,\n      b):\n    return a+b  # c\n", "t.py");
  ASSERT_TRUE(ts.ok());
  struct Want {
    std::string text;
    int line, col;
    bool line_start;
  };
  const Want want[] = {{"def", 1, 1, true}, {"f", 1, 5, false},     {"(", 1, 6, false},
                       {"a", 1, 7, false},  {",", 1, 8, false},     {"b", 2, 7, false},
                       {")", 2, 8, false},  {":", 2, 9, false},     {"", 2, 10, false},
                       {"", 3, 5, false},   {"return", 3, 5, true}, {"a", 3, 12, false},
                       {"+", 3, 13, false}, {"b", 3, 14, false}};
  ASSERT_GE(ts->tokens.size(), std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    SCOPED_TRACE(i);
    const Token& t = ts->tokens[i];
    EXPECT_EQ(std::string(t.text), want[i].text);
    EXPECT_EQ(t.loc.line, want[i].line);
    EXPECT_EQ(t.loc.col, want[i].col);
    EXPECT_EQ(t.line_start, want[i].line_start);
  }
}

TEST(LexerTest, ContinuationLinesAreNotLineStarts) {
  absl::StatusOr<TokenStream> ts = Tokenize("x = \\\ny\nz = (\n1)\n", "t.py");
  ASSERT_TRUE(ts.ok());
  std::vector<std::string> starts;
  for (const Token& t : ts->tokens)
    if (t.line_start) starts.push_back(absl::StrCat(std::string(t.text), "@", t.loc.line));
  EXPECT_EQ(absl::StrJoin(starts, ","), "x@1,z@3");
}

TEST(LexerTest, DecodeStrings) {
  const Case cases[] = {
      {"'abc'", "abc"},
      {"\"a'b\"", "a'b"},
      {"''", ""},
      {"''''''", ""},
      {"'''a\"\"b'''", "a\"\"b"},
      {"'\\n\\t\\\\\\'\\\"'", "\n\t\\'\""},
      {"'\\x41\\101\\0'", std::string("AA\0", 3)},
      {"'\\u00e9\\U0001F600'", "\xc3\xa9\xf0\x9f\x98\x80"},
      {"'\\q\\d'", "\\q\\d"},
      {"r'\\n\\x'", "\\n\\x"},
      {"R\"a\\\"b\"", "a\\\"b"},
      {"b'\\xff\\u1234'", "\xff\\u1234"},
      {"'a\\\nb'", "ab"},
      {"u'x'", "x"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.src);
    std::string out, error;
    size_t offset = 0;
    ASSERT_TRUE(DecodeStringLiteral(c.src, &out, &error, &offset)) << error;
    EXPECT_EQ(out, c.want);
  }
}

TEST(LexerTest, DecodeStringErrors) {
  struct ErrCase {
    std::string src;
    std::string error;
    size_t offset;
  };
  const ErrCase cases[] = {
      {"'ab\\x4'", "truncated \\xXX escape", 3},
      {"'\\u12'", "truncated \\uXXXX escape", 1},
      {"'\\U00110000'", "illegal Unicode character in \\U escape", 1},
      {"'\\N{DASH}'", "\\N{...} escapes are not supported", 1},
  };
  for (const ErrCase& c : cases) {
    SCOPED_TRACE(c.src);
    std::string out, error;
    size_t offset = 0;
    EXPECT_FALSE(DecodeStringLiteral(c.src, &out, &error, &offset));
    EXPECT_EQ(error, c.error);
    EXPECT_EQ(offset, c.offset);
  }
}

TEST(LexerTest, ClassifyPrefixes) {
  StringLiteralInfo i = ClassifyStringLiteral("Rb'''x'''");
  EXPECT_TRUE(i.is_raw);
  EXPECT_TRUE(i.is_bytes);
  EXPECT_FALSE(i.is_fstring);
  EXPECT_EQ(i.prefix_len, 2u);
  EXPECT_EQ(i.quote_len, 3u);
  i = ClassifyStringLiteral("f\"\"");
  EXPECT_TRUE(i.is_fstring);
  EXPECT_EQ(i.quote_len, 1u);
}

TEST(LexerTest, Keywords) {
  for (const char* kw :
       {"False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
        "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
        "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
        "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"}) {
    EXPECT_TRUE(IsPythonKeyword(kw)) << kw;
  }
  for (const char* w : {"match", "case", "type", "_", "true", "none", "Def", "x", "iff", ""})
    EXPECT_FALSE(IsPythonKeyword(w)) << w;
}

TEST(LexerTest, ArbitraryBytesNeverCrash) {
  // A cheap deterministic stand-in for the fuzzer.
  uint64_t state = 88172645463325252ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const std::string alphabet = " \t\n\\'\"#()[]{}:=.,0123456789abcxyz_+-*/%<>!@eEjJ\r\f\x80\xff";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string src;
    size_t n = next() % 64;
    for (size_t i = 0; i < n; ++i) {
      src.push_back((next() % 4 == 0) ? static_cast<char>(next() & 0xff)
                                      : alphabet[next() % alphabet.size()]);
    }
    absl::StatusOr<TokenStream> ts = Tokenize(src, "f.py");
    if (ts.ok()) {
      ASSERT_FALSE(ts->tokens.empty());
      EXPECT_EQ(ts->tokens.back().kind, TokKind::kEnd);
    }
  }
}

} // namespace
} // namespace kiln::frontend
