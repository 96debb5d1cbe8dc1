// `kiln cache stats | ls | gc | verify | rebuild`: a small command line over
// the cache library (usage text and exit codes in cache_commands.cc and
// docs/cache.md). Opens the cache without a background thread and without
// creating it: a directory that is not a cache is an error, not a new cache.
#pragma once

#include "clients/cpp/command_table.h"

namespace kiln::cli {

Command CacheCommand();

} // namespace kiln::cli
