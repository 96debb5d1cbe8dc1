// The translation unit that builds tests/support/test_pch.h's precompiled
// header (the kiln_test_pch target); it defines nothing.
