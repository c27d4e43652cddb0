// GGUF reader and writer: files built byte by byte here from the format description (not with
// GgufWriter) are read back with every metadata type and tensor type; every malformed variant
// (each truncation length, targeted corruptions, random byte mutations) must be an ls::Error
// naming the file and the problem, never a crash; GgufWriter output reads back identically.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "convert/gguf_writer.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "test_util.h"

namespace ls {
namespace {

using test::scratch_dir;
using test::write_file;

// Little-endian byte builder following the GGUF spec.
struct Bytes {
  std::string b;
  template <typename T>
  Bytes& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<std::uint64_t>(s.size());
    b += s;
    return *this;
  }
  Bytes& key(const std::string& k, std::uint32_t type) {
    str(k);
    return put<std::uint32_t>(type);
  }
  void pad(std::size_t align) { b.append((align - b.size() % align) % align, '\0'); }
};

struct SmallTensor {
  std::string name;
  std::vector<std::uint64_t> ne;  // GGML order
  std::uint32_t type;
  std::string data;
};

// A complete small file: a metadata entry of every type, a nested array, then tensors.
std::string small_file(const std::vector<SmallTensor>& tensors, std::uint32_t alignment = 32,
                       bool trailing_pad = false) {
  Bytes h;
  h.b = "GGUF";
  h.put<std::uint32_t>(3).put<std::uint64_t>(tensors.size());
  const std::uint64_t n_kv = 16 + (alignment != 32 ? 1 : 0);
  h.put<std::uint64_t>(n_kv);
  h.key("t.u8", 0).put<std::uint8_t>(200);
  h.key("t.i8", 1).put<std::int8_t>(-100);
  h.key("t.u16", 2).put<std::uint16_t>(60000);
  h.key("t.i16", 3).put<std::int16_t>(-30000);
  h.key("t.u32", 4).put<std::uint32_t>(4000000000u);
  h.key("t.i32", 5).put<std::int32_t>(-2000000000);
  h.key("t.f32", 6).put<float>(0.1f);
  h.key("t.bool", 7).put<std::uint8_t>(1);
  h.key("t.str", 8).str("h\xC3\xA9llo");
  h.key("t.arr_i32", 9).put<std::uint32_t>(5).put<std::uint64_t>(3);
  h.put<std::int32_t>(1).put<std::int32_t>(-2).put<std::int32_t>(3);
  h.key("t.u64", 10).put<std::uint64_t>(1ull << 40);
  h.key("t.i64", 11).put<std::int64_t>(-(1ll << 40));
  h.key("t.f64", 12).put<double>(0.1);
  h.key("t.arr_str", 9).put<std::uint32_t>(8).put<std::uint64_t>(2).str("a").str("bc");
  h.key("t.nested", 9).put<std::uint32_t>(9).put<std::uint64_t>(2);
  h.put<std::uint32_t>(0).put<std::uint64_t>(2).put<std::uint8_t>(1).put<std::uint8_t>(2);
  h.put<std::uint32_t>(8).put<std::uint64_t>(1).str("x");
  h.key("general.architecture", 8).str("test");
  if (alignment != 32) h.key("general.alignment", 4).put<std::uint32_t>(alignment);
  std::uint64_t off = 0;
  for (const auto& t : tensors) {
    h.str(t.name).put<std::uint32_t>(static_cast<std::uint32_t>(t.ne.size()));
    for (auto d : t.ne) h.put<std::uint64_t>(d);
    h.put<std::uint32_t>(t.type).put<std::uint64_t>(off);
    off += (t.data.size() + alignment - 1) / alignment * alignment;
  }
  h.pad(alignment);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    h.b += tensors[i].data;
    if (i + 1 < tensors.size() || trailing_pad) h.pad(alignment);
  }
  return h.b;
}

std::string pattern(std::size_t n, int seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) & 0xff);
  return s;
}

std::vector<SmallTensor> some_tensors() {
  return {
      {"w.f32", {4, 3}, 0, pattern(48, 1)},  // shape [3, 4]
      {"w.f16", {8, 2}, 1, pattern(32, 2)},  // [2, 8]
      {"w.bf16", {2, 2, 2}, 30, pattern(16, 3)},
      {"w.q8_0", {32, 2}, 8, pattern(68, 4)},  // 2 rows of one 34-byte block
      {"w.q4_0", {64}, 2, pattern(36, 5)},     // 2 blocks of 18 bytes
      {"w.q4_k", {256}, 12, pattern(144, 6)},
      {"w.q6_k", {256, 1}, 14, pattern(210, 7)},
      {"w.q4_1", {32}, 3, pattern(20, 8)},
      {"w.q5_0", {64}, 6, pattern(44, 9)},  // 2 blocks of 22 bytes
      {"w.q5_1", {32, 1}, 7, pattern(24, 10)},
      {"w.iq4_nl", {32}, 20, pattern(18, 11)},
      {"w.q5_k", {256}, 13, pattern(176, 12)},
      {"w.q3_k", {256}, 11, pattern(110, 13)},
      {"w.q2_k", {256, 1}, 10, pattern(84, 14)},
  };
}

std::string write_tmp(const std::string& dir, const std::string& name, const std::string& bytes) {
  const auto p = scratch_dir(dir) / name;
  write_file(p, bytes);
  return p.string();
}

TEST(Gguf, ReadsEveryMetadataTypeAndTensorType) {
  const auto ts = some_tensors();
  const std::string path = write_tmp("gguf_read", "small.gguf", small_file(ts));
  const formats::GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.require_int("t.u8"), 200);
  EXPECT_EQ(f.require_int("t.i8"), -100);
  EXPECT_EQ(f.require_int("t.u16"), 60000);
  EXPECT_EQ(f.require_int("t.i16"), -30000);
  EXPECT_EQ(f.require_int("t.u32"), 4000000000ll);
  EXPECT_EQ(f.require_int("t.i32"), -2000000000);
  EXPECT_EQ(f.require_int("t.u64"), 1ll << 40);
  EXPECT_EQ(f.require_int("t.i64"), -(1ll << 40));
  EXPECT_EQ(f.require_float("t.f32"), static_cast<double>(0.1f));
  EXPECT_EQ(f.require_float("t.f64"), 0.1);
  EXPECT_EQ(f.get_bool("t.bool"), true);
  EXPECT_EQ(f.require_string("t.str"), "h\xC3\xA9llo");
  EXPECT_EQ(*f.get_array("t.arr_i32", formats::GgufType::Int32), nlohmann::json({1, -2, 3}));
  EXPECT_EQ(*f.get_array("t.arr_str", formats::GgufType::String), nlohmann::json({"a", "bc"}));
  const formats::GgufKV* nested = f.find_kv("t.nested");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->elem_type, formats::GgufType::Array);
  EXPECT_EQ(nested->value, nlohmann::json::parse(R"([[1,2],["x"]])"));
  EXPECT_EQ(f.get_string("absent"), std::nullopt);
  LS_EXPECT_ERROR(f.require_int("absent"), "missing metadata 'absent'");
  LS_EXPECT_ERROR(f.get_string("t.u8"), "metadata 't.u8' must be a string, got uint8");
  LS_EXPECT_ERROR(f.get_array("t.arr_str", formats::GgufType::Int32),
                  "must be an array of integers");

  ASSERT_EQ(f.tensors().size(), ts.size());
  const std::vector<std::pair<DType, std::vector<std::int64_t>>> want = {
      {DType::F32, {3, 4}},    {DType::F16, {2, 8}},   {DType::BF16, {2, 2, 2}},
      {DType::Q8_0, {2, 32}},  {DType::Q4_0, {64}},    {DType::Q4_K, {256}},
      {DType::Q6_K, {1, 256}}, {DType::Q4_1, {32}},    {DType::Q5_0, {64}},
      {DType::Q5_1, {1, 32}},  {DType::IQ4_NL, {32}},  {DType::Q5_K, {256}},
      {DType::Q3_K, {256}},    {DType::Q2_K, {1, 256}}};
  std::size_t expect_off = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const TensorView* t = f.find(ts[i].name);
    ASSERT_NE(t, nullptr) << ts[i].name;
    EXPECT_EQ(t->dtype, want[i].first) << ts[i].name;
    EXPECT_EQ(t->shape, want[i].second) << ts[i].name;
    EXPECT_EQ(t->nbytes(), ts[i].data.size()) << ts[i].name;
    EXPECT_EQ(std::memcmp(t->data, ts[i].data.data(), ts[i].data.size()), 0) << ts[i].name;
    EXPECT_EQ(static_cast<std::size_t>(t->data - f.tensors()[0].data), expect_off);
    expect_off += (ts[i].data.size() + 31) / 32 * 32;
  }
  EXPECT_EQ(f.data_offset() % 32, 0u);
}

// Opened for its tensors only (as a model is): scalars and tensors as before, arrays validated
// but not kept, and asking for one is an error rather than an empty answer.
TEST(Gguf, SkippingArraysKeepsScalarsAndTensors) {
  const auto ts = some_tensors();
  const std::string path = write_tmp("gguf_skip", "small.gguf", small_file(ts));
  const formats::GgufFile full(path);
  const formats::GgufFile f(path, formats::GgufArrays::Skip);
  EXPECT_EQ(f.require_int("t.u32"), 4000000000ll);
  EXPECT_EQ(f.require_string("t.str"), "h\xC3\xA9llo");
  EXPECT_EQ(f.metadata().size(), full.metadata().size());
  LS_EXPECT_ERROR(f.get_array("t.arr_str", formats::GgufType::String),
                  "metadata 't.arr_str' was not kept in memory");
  EXPECT_TRUE(f.find_kv("t.nested")->value.is_null());
  ASSERT_EQ(f.tensors().size(), full.tensors().size());
  for (std::size_t i = 0; i < ts.size(); ++i) {
    EXPECT_EQ(f.tensors()[i].name, full.tensors()[i].name);
    EXPECT_EQ(f.tensors()[i].data - f.tensors()[0].data,
              full.tensors()[i].data - full.tensors()[0].data);
  }
  // Skipping still validates every byte: each truncation is an error.
  const std::string bytes = small_file(ts);
  const std::string cut = write_tmp("gguf_skip_cut", "cut.gguf", bytes.substr(0, bytes.size() / 3));
  EXPECT_THROW(formats::GgufFile(cut, formats::GgufArrays::Skip), Error);
}

TEST(Gguf, CustomAlignmentAndVersion2) {
  std::string bytes = small_file(some_tensors(), 64);
  const formats::GgufFile f(write_tmp("gguf_align", "a.gguf", bytes));
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  for (const auto& t : f.tensors())
    EXPECT_EQ(static_cast<std::size_t>(t.data - f.tensors()[0].data) % 64, 0u);
  bytes[4] = 2;  // version 2 has the same layout
  EXPECT_EQ(formats::GgufFile(write_tmp("gguf_v2", "a.gguf", bytes)).version(), 2u);
}

// Every prefix of a valid file whose last tensor ends at the last byte is malformed.
TEST(Gguf, EveryTruncationIsAnError) {
  const std::string bytes = small_file(some_tensors());
  const auto dir = scratch_dir("gguf_trunc");
  const std::string path = (dir / "t.gguf").string();
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    write_file(path, bytes.substr(0, n));
    try {
      formats::GgufFile f(path);
      ADD_FAILURE() << "a file truncated to " << n << " of " << bytes.size() << " bytes loaded";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind(path, 0), 0u) << m;  // names the file
    }
  }
  write_file(path, bytes);
  EXPECT_NO_THROW(formats::GgufFile{path});
}

struct Corruption {
  const char* what;
  std::string bytes;
  const char* needle;
};

std::string with(std::string s, std::size_t at, const std::string& replacement) {
  s.replace(at, replacement.size(), replacement);
  return s;
}

template <typename T>
std::string le(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(T));
}

TEST(Gguf, MalformedFilesGiveClearErrors) {
  const auto one = [](std::uint32_t type, std::vector<std::uint64_t> ne, std::size_t nbytes,
                      const std::string& name = "w") {
    return small_file({{name, std::move(ne), type, pattern(nbytes, 1)}});
  };
  const std::string good = one(0, {4, 2}, 32);
  const std::size_t n_off = 8, tinfo = good.find(std::string("\x01\0\0\0\0\0\0\0w", 9));
  ASSERT_NE(tinfo, std::string::npos);
  const std::size_t dims_at = tinfo + 9, type_at = dims_at + 4 + 16, off_at = type_at + 4;
  std::vector<Corruption> cases = {
      {"magic", with(good, 0, "GGML"), "not a GGUF file"},
      {"version 1", with(good, 4, le<std::uint32_t>(1)), "GGUF version 1 is not supported"},
      {"version 4", with(good, 4, le<std::uint32_t>(4)), "GGUF version 4 is not supported"},
      {"tensor count", with(good, n_off, le<std::uint64_t>(1ull << 40)), "tensor count"},
      {"kv count", with(good, 16, le<std::uint64_t>(5000)), "metadata entries"},
      {"type", with(good, type_at, le<std::uint32_t>(16)),
       "tensor 'w' has GGML type 16, which is not supported"},
      {"dims", with(good, dims_at, le<std::uint32_t>(5)), "tensor 'w' has 5 dimensions"},
      {"zero dim", with(good, dims_at + 4, le<std::uint64_t>(0)), "has dimension 0 = 0"},
      {"huge dim", with(good, dims_at + 4, le<std::uint64_t>(1ull << 62)), "has dimension 0"},
      {"misaligned", with(good, off_at, le<std::uint64_t>(4)), "offset 4, not a multiple of"},
      {"past end", with(good, off_at, le<std::uint64_t>(64)), "runs past the end of the file"},
      {"ragged q8_0", one(8, {48, 1}, 51), "rows of 48 elements, not a multiple of its block"},
      {"ragged q4_k", one(12, {128}, 72), "not a multiple of its block size 256"},
      {"short data", one(0, {4, 2}, 31), "runs past the end"},
      {"bad bool",
       [&] {
         std::string s = good;
         const auto at = s.find("t.bool") + 6 + 4;
         s[at] = 2;
         return s;
       }(),
       "metadata 't.bool' is a bool with byte value 2"},
      {"value type", with(good, good.find("t.u8") + 4, le<std::uint32_t>(13)),
       "metadata 't.u8' has unknown value type 13"},
      {"string length", with(good, good.find("t.str") + 9, le<std::uint64_t>(1ull << 50)),
       "metadata 't.str' is a string of"},
      {"array length", with(good, good.find("t.arr_i32") + 9 + 8, le<std::uint64_t>(1ull << 60)),
       "claims 1152921504606846976 elements"},
      {"duplicate key", with(good, good.find("t.i8"), "t.u8"), "metadata 't.u8' appears twice"},
  };
  // Two tensors: duplicate name; overlapping data.
  {
    std::string two = small_file({{"a", {8}, 0, pattern(32, 1)}, {"b", {8}, 0, pattern(32, 2)}});
    const std::size_t b_at = two.find(std::string("\x01\0\0\0\0\0\0\0b", 9));
    cases.push_back({"duplicate tensor", with(two, b_at + 8, "a"), "tensor 'a' appears twice"});
    cases.push_back({"overlap", with(two, b_at + 9 + 4 + 8 + 4, le<std::uint64_t>(0)),
                     "overlap in the data section"});
  }
  // Alignment that is not a power of two.
  {
    std::string a = small_file(some_tensors(), 64);
    const std::size_t at = a.find("general.alignment") + 17 + 4;
    cases.push_back({"alignment", with(a, at, le<std::uint32_t>(48)), "power of two"});
  }
  const auto dir = scratch_dir("gguf_bad");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string path = (dir / (std::string(c.what) + ".gguf")).string();
    write_file(path, c.bytes);
    LS_EXPECT_ERROR(formats::GgufFile{path}, c.needle);
    LS_EXPECT_ERROR(formats::GgufFile{path}, path);
  }
}

// Random byte mutations of a valid file: each either loads (and then every tensor byte is
// readable) or is an ls::Error; anything else (crash, other exception) fails the test. Run
// under ASan/UBSan to check the reads too.
TEST(Gguf, RandomMutationsNeverCrash) {
  const std::string good = small_file(some_tensors());
  const auto dir = scratch_dir("gguf_fuzz");
  const std::string path = (dir / "f.gguf").string();
  std::mt19937_64 rng(12345);
  int loaded = 0, rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s = good;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      const std::size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s[at] = static_cast<char>(rng());
          break;  // random byte
        case 1:
          s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8)));
          break;  // bit flip
        default:
          s[at] = static_cast<char>(0xff);
          break;
      }
    }
    write_file(path, s);
    try {
      formats::GgufFile f(path);
      unsigned sum = 0;
      for (const auto& t : f.tensors())
        for (std::size_t i = 0; i < t.nbytes(); ++i) sum += t.data[i];
      (void)sum;
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(loaded, 100);  // mutations of tensor bytes are still valid files
}

TEST(Gguf, WriterOutputReadsBack) {
  const auto dir = scratch_dir("gguf_writer");
  const std::string path = (dir / "w.gguf").string();
  convert::GgufWriter w;
  w.add_string("general.architecture", "test");
  w.add_uint32("k.u32", 7);
  w.add_int32("k.i32", -7);
  w.add_float32("k.f32", 1e-6f);
  w.add_bool("k.bool", true);
  w.add_string_array("k.strs", {"x", "", "z z"});
  w.add_int32_array("k.ints", {1, 2, 3});
  w.add_tensor("a", DType::F32, {3, 5});  // 60 bytes: padded to 64
  w.add_tensor("b", DType::BF16, {7});
  w.add_tensor("c", DType::Q8_0, {2, 64});
  LS_EXPECT_ERROR(w.add_tensor("a", DType::F32, {1}), "tensor 'a' added twice");
  LS_EXPECT_ERROR(w.add_tensor("d", DType::Q4_K, {2, 64}), "not a multiple of the Q4_K block");
  LS_EXPECT_ERROR(w.add_uint32("k.u32", 1), "'k.u32' added twice");
  const std::vector<std::string> data = {pattern(60, 1), pattern(14, 2), pattern(2 * 2 * 34, 3)};
  w.write(path, [&](std::size_t i, const convert::ByteSink& sink) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(data[i].data());
    sink({p, 5});  // in two pieces
    sink({p + 5, data[i].size() - 5});
  });
  const formats::GgufFile f(path);
  EXPECT_EQ(f.require_string("general.architecture"), "test");
  EXPECT_EQ(f.require_int("k.u32"), 7);
  EXPECT_EQ(f.find_kv("k.u32")->type, formats::GgufType::UInt32);
  EXPECT_EQ(f.require_int("k.i32"), -7);
  EXPECT_EQ(f.require_float("k.f32"), static_cast<double>(1e-6f));
  EXPECT_EQ(f.get_bool("k.bool"), true);
  EXPECT_EQ(*f.get_array("k.strs", formats::GgufType::String), nlohmann::json({"x", "", "z z"}));
  EXPECT_EQ(*f.get_array("k.ints", formats::GgufType::Int32), nlohmann::json({1, 2, 3}));
  ASSERT_EQ(f.tensors().size(), 3u);
  const std::vector<std::vector<std::int64_t>> shapes = {{3, 5}, {7}, {2, 64}};
  for (std::size_t i = 0; i < 3; ++i) {
    const TensorView& t = f.tensors()[i];
    EXPECT_EQ(t.shape, shapes[i]);
    ASSERT_EQ(t.nbytes(), data[i].size());
    EXPECT_EQ(std::memcmp(t.data, data[i].data(), data[i].size()), 0);
  }
  // A fill that gives the wrong size leaves no file behind.
  const std::string bad = (dir / "bad.gguf").string();
  LS_EXPECT_ERROR(w.write(bad,
                          [&](std::size_t, const convert::ByteSink& sink) {
                            sink({reinterpret_cast<const std::uint8_t*>(data[0].data()), 3});
                          }),
                  "was given 3 bytes, expected 60");
  EXPECT_FALSE(std::filesystem::exists(bad));
  EXPECT_FALSE(std::filesystem::exists(bad + ".partial"));
}

TEST(Gguf, NotAFile) {
  LS_EXPECT_ERROR(formats::GgufFile{"/nonexistent/x.gguf"}, "/nonexistent/x.gguf: cannot open");
  const std::string p = write_tmp("gguf_empty", "e.gguf", "");
  LS_EXPECT_ERROR(formats::GgufFile{p}, "not a GGUF file");
}

}  // namespace
}  // namespace ls
