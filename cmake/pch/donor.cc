// The one source of the targets that build a precompiled header for others to reuse
// (cmake/BenchmakeHelpers.cmake: _bm_pch_donor); the header itself is all they compile.
