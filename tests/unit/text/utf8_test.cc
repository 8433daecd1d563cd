// IsValidUtf8 accepts every well-formed character and refuses what JSON's parsers refuse.
#include "text/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace kvd::text {
namespace {

TEST(Utf8Test, AcceptsWellFormedText) {
  for (const std::string text : {"", "plain ascii\n", "caf\xc3\xa9", "\xe2\x82\xac 20",
                                 "\xf0\x9f\x99\x82", "\xf4\x8f\xbf\xbf", "\xef\xbb\xbf"}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
  }
}

TEST(Utf8Test, RefusesMalformedBytes) {
  for (const std::string text : {
           "\xff",              // never a UTF-8 byte
           "\x80",              // a continuation without a lead
           "caf\xc3",           // a character cut at the end
           "\xc3(",             // a lead without its continuation
           "\xc0\x80",          // an overlong NUL
           "\xe0\x80\xaf",      // an overlong '/'
           "\xed\xa0\x80",      // a UTF-16 surrogate
           "\xf4\x90\x80\x80",  // past U+10FFFF
       }) {
    EXPECT_FALSE(IsValidUtf8(text)) << testing::PrintToString(text);
  }
}

}  // namespace
}  // namespace kvd::text
