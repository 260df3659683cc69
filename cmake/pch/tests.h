// Precompiled into every test binary (cmake/BenchmakeHelpers.cmake: bm_test): common.h and
// GoogleTest, which each test file would otherwise parse again.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common.h"  // beside this file
