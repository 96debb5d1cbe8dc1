// "Did you mean" for the `kiln` command line: the known name closest to a
// mistyped command, subcommand or flag, by edit distance, so that every
// unknown-name error can offer the fix (`kiln compil` -> 'compile',
// `--bnd` -> '--bind'). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cli {

// The optimal-string-alignment distance between `a` and `b`: insertions,
// deletions, substitutions and swaps of two neighbours each cost one.
int EditDistance(std::string_view a, std::string_view b);

// The entry of `known` closest to `typed`, or nullopt when none is close
// enough to be a likely typo: within one edit for a typed name of up to
// four characters, two up to eight, three beyond (leading dashes not
// counted), and not replaced as a whole; or else the only entry that
// `typed` (at least three characters) begins. A flag (leading '-') is
// matched only with flags, a name only with names; a flag's "=VALUE" is
// ignored. Ties go to the earlier entry of `known`.
std::optional<std::string> Suggest(std::string_view typed, const std::vector<std::string>& known);

// "; did you mean 'X'?" for Suggest's answer, or "" when there is none: for
// the end of an "unknown ..." message.
std::string DidYouMean(std::string_view typed, const std::vector<std::string>& known);

// "unknown flag '--bnd'; did you mean '--bind'?" (the suggestion when
// there is one).
std::string UnknownFlag(std::string_view typed, const std::vector<std::string>& known);

} // namespace kiln::cli
