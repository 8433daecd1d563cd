// MsgpackWriter against the MessagePack spec's encodings: each family's boundaries, where the
// shortest form changes.
#include "base/msgpack_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

namespace kvd::base {
namespace {

std::string Encoded(const std::function<void(MsgpackWriter&)>& write) {
  MsgpackWriter writer;
  write(writer);
  return writer.Take();
}

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (const int byte : bytes) out.push_back(static_cast<char>(byte));
  return out;
}

TEST(MsgpackWriterTest, UnsignedIntegersTakeTheirShortestForm) {
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(0); }), Bytes({0x00}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(127); }), Bytes({0x7f}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(128); }), Bytes({0xcc, 0x80}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(255); }), Bytes({0xcc, 0xff}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(256); }), Bytes({0xcd, 0x01, 0x00}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(65535); }), Bytes({0xcd, 0xff, 0xff}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(0xffffffff); }), Bytes({0xce, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(65536); }), Bytes({0xce, 0x00, 0x01, 0x00, 0x00}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(uint64_t{1} << 32); }),
            Bytes({0xcf, 0, 0, 0, 0x01, 0, 0, 0, 0}));
  EXPECT_EQ(Encoded([](auto& w) { w.Uint(UINT64_MAX); }),
            Bytes({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
}

TEST(MsgpackWriterTest, SignedIntegersTakeTheirShortestForm) {
  EXPECT_EQ(Encoded([](auto& w) { w.Int(5); }), Bytes({0x05}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(-1); }), Bytes({0xff}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(-32); }), Bytes({0xe0}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(-33); }), Bytes({0xd0, 0xdf}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(-128); }), Bytes({0xd0, 0x80}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(-129); }), Bytes({0xd1, 0xff, 0x7f}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(-32768); }), Bytes({0xd1, 0x80, 0x00}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(-32769); }), Bytes({0xd2, 0xff, 0xff, 0x7f, 0xff}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(INT32_MIN); }), Bytes({0xd2, 0x80, 0, 0, 0}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(int64_t{INT32_MIN} - 1); }),
            Bytes({0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff}));
  EXPECT_EQ(Encoded([](auto& w) { w.Int(INT64_MIN); }),
            Bytes({0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(MsgpackWriterTest, OtherScalars) {
  EXPECT_EQ(Encoded([](auto& w) { w.Nil(); }), Bytes({0xc0}));
  EXPECT_EQ(Encoded([](auto& w) { w.Double(1.5); }),
            Bytes({0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}));
}

TEST(MsgpackWriterTest, StringsAndArraysCarryTheirSizes) {
  EXPECT_EQ(Encoded([](auto& w) { w.String(""); }), Bytes({0xa0}));
  EXPECT_EQ(Encoded([](auto& w) { w.String("GPU"); }), Bytes({0xa3, 'G', 'P', 'U'}));
  EXPECT_EQ(Encoded([](auto& w) { w.String(std::string(31, 'x')); }).substr(0, 1),
            Bytes({0xbf}));
  EXPECT_EQ(Encoded([](auto& w) { w.String(std::string(32, 'x')); }).substr(0, 2),
            Bytes({0xd9, 32}));
  EXPECT_EQ(Encoded([](auto& w) { w.String(std::string(256, 'x')); }).substr(0, 3),
            Bytes({0xda, 0x01, 0x00}));
  EXPECT_EQ(Encoded([](auto& w) { w.String(std::string(65536, 'x')); }).size(), 5u + 65536);
  EXPECT_EQ(Encoded([](auto& w) { w.Array(0); }), Bytes({0x90}));
  EXPECT_EQ(Encoded([](auto& w) { w.Array(15); }), Bytes({0x9f}));
  EXPECT_EQ(Encoded([](auto& w) { w.Array(16); }), Bytes({0xdc, 0x00, 0x10}));
  EXPECT_EQ(Encoded([](auto& w) { w.Array(70000); }), Bytes({0xdd, 0x00, 0x01, 0x11, 0x70}));
}

}  // namespace
}  // namespace kvd::base
