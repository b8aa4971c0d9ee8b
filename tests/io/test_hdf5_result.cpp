// Tests for io/atomic_file and io/hdf5_result: round trips, the solve-result layout, error
// messages, and that no failure ever leaves a (partial) file behind.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/atomic_file.hpp"
#include "krysp/io/hdf5_result.hpp"

namespace fs = std::filesystem;
using krysp::io::AtomicOutput;
using krysp::io::Attribute;
using krysp::io::Hdf5Dataset;
using krysp::io::read_hdf5_attribute;
using krysp::io::read_hdf5_dataset;
using krysp::io::write_hdf5;

namespace {

/// A fresh, empty directory for one test, removed with everything in it afterwards.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("krysp_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  /// Names of the entries in the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

/// The what() of the krysp::Error that `f` throws, or "" if it throws none.
template <class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const krysp::Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace

TEST_CASE("HDF5 datasets and attributes round-trip exactly") {
  TempDir dir;
  const std::string path = dir.file("roundtrip.h5");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> vec = {1.0, -0.1, 1e-300, 4.9e-324, 1.7976931348623157e308, -0.0};
  const std::vector<double> mat = {11, 12, 21, 22, 31, 32};  // 3 x 2, row-major
  const std::vector<double> col = {0.5, 0.25, nan};
  const std::string utf8 = "Jacobi \xE2\x80\x93 M\xC3\xBCller";  // "Jacobi – Müller"

  write_hdf5(path,
             {{"/vec", {6}, vec},
              {"mat", {3, 2}, mat},  // no leading '/': stored as "/mat"
              {"/empty", {0}, {}},
              {"/history/col0", {3}, col},
              {"/scalar", {}, {42.5}}},
             {{"solver", std::string("cg")},
              {"note", utf8},
              {"blank", std::string()},
              {"iterations", std::int64_t{17}},
              {"big", std::numeric_limits<std::int64_t>::max()},
              {"small", std::numeric_limits<std::int64_t>::min()},
              {"rtol", 1e-8},
              {"neg", -2.5}});

  const Hdf5Dataset v = read_hdf5_dataset(path, "/vec");
  CHECK(v.name == "/vec");
  CHECK(v.shape == std::vector<std::size_t>{6});
  CHECK(v.data == vec);
  CHECK(std::signbit(v.data[5]));  // -0.0 == 0.0, so check the sign separately

  const Hdf5Dataset m = read_hdf5_dataset(path, "mat");
  CHECK(m.shape == std::vector<std::size_t>{3, 2});
  CHECK(m.data == mat);

  const Hdf5Dataset e = read_hdf5_dataset(path, "/empty");
  CHECK(e.shape == std::vector<std::size_t>{0});
  CHECK(e.data.empty());

  const Hdf5Dataset c = read_hdf5_dataset(path, "/history/col0");
  CHECK(c.shape == std::vector<std::size_t>{3});
  REQUIRE(c.data.size() == 3);
  CHECK(c.data[0] == 0.5);
  CHECK(c.data[1] == 0.25);
  CHECK(std::isnan(c.data[2]));

  const Hdf5Dataset s = read_hdf5_dataset(path, "/scalar");
  CHECK(s.shape.empty());
  CHECK(s.data == std::vector<double>{42.5});

  CHECK(std::get<std::string>(read_hdf5_attribute(path, "solver")) == "cg");
  CHECK(std::get<std::string>(read_hdf5_attribute(path, "note")) == utf8);
  CHECK(std::get<std::string>(read_hdf5_attribute(path, "blank")).empty());
  CHECK(std::get<std::int64_t>(read_hdf5_attribute(path, "iterations")) == 17);
  CHECK(std::get<std::int64_t>(read_hdf5_attribute(path, "big")) ==
        std::numeric_limits<std::int64_t>::max());
  CHECK(std::get<std::int64_t>(read_hdf5_attribute(path, "small")) ==
        std::numeric_limits<std::int64_t>::min());
  CHECK(std::get<double>(read_hdf5_attribute(path, "rtol")) == 1e-8);
  CHECK(std::get<double>(read_hdf5_attribute(path, "neg")) == -2.5);

  CHECK(dir.entries() == std::vector<std::string>{"roundtrip.h5"});  // no temp file left over
}

TEST_CASE("HDF5 solve result layout: x with several right-hand sides, empty history") {
  TempDir dir;
  const std::string path = dir.file("result.h5");
  const std::size_t n = 4, s = 2;
  std::vector<double> x(n * s);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1 * static_cast<double>(i) - 0.3;
  const std::vector<std::pair<std::string, Attribute>> attrs = {
      {"solver", std::string("cg")},
      {"preconditioner", std::string("jacobi")},
      {"iterations", std::int64_t{0}},
      {"converged", std::int64_t{1}},
      {"relative_residual", 3.25e-11},
      {"rtol", 1e-10},
      {"backend", std::string("cusparse")},
      {"device", std::string("NVIDIA H100 80GB HBM3")},
      {"matrix", std::string("bcsstk01.mtx")},
      {"n", std::int64_t{4}},
      {"nnz", std::int64_t{10}},
      {"elapsed_seconds", 0.00125}};

  write_hdf5(path, {{"/x", {n, s}, x}, {"/residual_history", {0}, {}}}, attrs);

  const Hdf5Dataset rx = read_hdf5_dataset(path, "/x");
  CHECK(rx.shape == std::vector<std::size_t>{n, s});
  CHECK(rx.data == x);
  const Hdf5Dataset rh = read_hdf5_dataset(path, "/residual_history");
  CHECK(rh.shape == std::vector<std::size_t>{0});
  CHECK(rh.data.empty());
  for (const auto& [name, value] : attrs) {
    CAPTURE(name);
    CHECK(read_hdf5_attribute(path, name) == value);  // same alternative and same value
  }
}

TEST_CASE("HDF5 writing into a nonexistent directory throws InputError and leaves nothing") {
  TempDir dir;
  const std::string missing = dir.file("no_such_dir");
  const std::string path = missing + "/out.h5";
  CHECK_THROWS_AS(write_hdf5(path, {{"/x", {1}, {1.0}}}, {}), krysp::InputError);
  const std::string message = error_message([&] { write_hdf5(path, {{"/x", {1}, {1.0}}}, {}); });
  CHECK(contains(message, "cannot write '" + path + "'"));
  CHECK(contains(message, "No such file or directory"));
  CHECK_FALSE(fs::exists(missing));
  CHECK(dir.entries().empty());
}

TEST_CASE("HDF5 overwriting an existing result replaces it") {
  TempDir dir;
  const std::string path = dir.file("out.h5");
  write_hdf5(path, {{"/x", {3}, {1, 2, 3}}, {"/old", {1}, {9}}}, {{"iterations", std::int64_t{5}}});
  write_hdf5(path, {{"/x", {2}, {7, 8}}}, {{"iterations", std::int64_t{6}}});

  const Hdf5Dataset x = read_hdf5_dataset(path, "/x");
  CHECK(x.shape == std::vector<std::size_t>{2});
  CHECK(x.data == std::vector<double>{7, 8});
  CHECK(std::get<std::int64_t>(read_hdf5_attribute(path, "iterations")) == 6);
  CHECK_THROWS_AS(read_hdf5_dataset(path, "/old"), krysp::InputError);  // replaced, not merged
  CHECK(dir.entries() == std::vector<std::string>{"out.h5"});
}

TEST_CASE("HDF5 a failing HDF5 call throws naming the call and leaves the old file intact") {
  TempDir dir;
  const std::string path = dir.file("out.h5");
  write_hdf5(path, {{"/x", {1}, {1.0}}}, {});
  // "/a" is a dataset, so HDF5 cannot create "/a/b" below it: H5Dcreate2 fails mid-write.
  const std::string message = error_message([&] {
    write_hdf5(path, {{"/x", {1}, {2.0}}, {"/a", {1}, {0}}, {"/a/b", {1}, {0}}}, {});
  });
  CHECK(contains(message, "write_hdf5: H5Dcreate2 failed for dataset '/a/b' in '" + path + "'"));
  CHECK_THROWS_AS(write_hdf5(path, {{"/x", {1}, {2.0}}, {"/a", {1}, {0}}, {"/a/b", {1}, {0}}}, {}),
                  krysp::Error);
  CHECK(read_hdf5_dataset(path, "/x").data == std::vector<double>{1.0});
  CHECK(dir.entries() == std::vector<std::string>{"out.h5"});  // temp file removed
}

TEST_CASE("HDF5 invalid arguments throw InputError before any file is written") {
  TempDir dir;
  const std::string path = dir.file("bad.h5");
  const std::string mismatch = error_message([&] {
    write_hdf5(path, {{"/x", {2, 2}, {1, 2, 3}}}, {});
  });
  CHECK(contains(mismatch, "'/x'"));
  CHECK(contains(mismatch, "4 elements but 3 values"));
  CHECK_THROWS_AS(write_hdf5(path, {{"/x", {2, 2}, {1, 2, 3}}}, {}), krysp::InputError);
  CHECK_THROWS_AS(write_hdf5(path, {{"/x", {1}, {1}}, {"x", {1}, {2}}}, {}), krysp::InputError);
  CHECK_THROWS_AS(write_hdf5(path, {{"/", {1}, {1}}}, {}), krysp::InputError);
  CHECK_THROWS_AS(write_hdf5(path, {{"/a//b", {1}, {1}}}, {}), krysp::InputError);
  CHECK_THROWS_AS(write_hdf5(path, {{"/a/", {1}, {1}}}, {}), krysp::InputError);
  CHECK_THROWS_AS(write_hdf5(path, {}, {{"k", std::int64_t{1}}, {"k", 2.0}}), krysp::InputError);
  CHECK_THROWS_AS(write_hdf5(path, {}, {{"", 1.0}}), krysp::InputError);
  CHECK_THROWS_AS(write_hdf5(path, {}, {{"s", std::string("a\0b", 3)}}), krysp::InputError);
  CHECK(dir.entries().empty());
}

TEST_CASE("HDF5 reading something missing throws InputError naming it") {
  TempDir dir;
  const std::string path = dir.file("out.h5");
  write_hdf5(path, {{"/history/col0", {1}, {1.0}}}, {{"solver", std::string("cg")}});

  for (const std::string name : {"/nope", "/history/nope", "/nope/deeper", "/history"}) {
    CAPTURE(name);  // "/history" exists, but is a group
    CHECK_THROWS_AS(read_hdf5_dataset(path, name), krysp::InputError);
    const std::string message = error_message([&] { read_hdf5_dataset(path, name); });
    CHECK(contains(message, "dataset '" + name + "'"));
    CHECK(contains(message, path));
  }
  const std::string attr = error_message([&] { read_hdf5_attribute(path, "precond"); });
  CHECK(contains(attr, "attribute 'precond'"));
  CHECK(contains(attr, path));
  CHECK_THROWS_AS(read_hdf5_attribute(path, "precond"), krysp::InputError);

  const std::string missing = dir.file("missing.h5");
  const std::string no_file = error_message([&] { read_hdf5_dataset(missing, "/x"); });
  CHECK(contains(no_file, missing));
  CHECK(contains(no_file, "No such file or directory"));
  CHECK_THROWS_AS(read_hdf5_attribute(missing, "solver"), krysp::InputError);

  const std::string text = dir.file("not_hdf5.h5");
  write_text(text, "this is not an HDF5 file\n");
  CHECK_THROWS_AS(read_hdf5_dataset(text, "/x"), krysp::InputError);
  CHECK(contains(error_message([&] { read_hdf5_dataset(text, "/x"); }), "H5Fopen failed"));
}

TEST_CASE("AtomicFile without commit leaves no file and no temp file") {
  TempDir dir;
  const std::string path = dir.file("result.h5");
  std::string temp;
  {
    AtomicOutput out(path);
    temp = out.temp_path();
    CHECK(fs::path(temp).parent_path() == fs::path(path).parent_path());  // same file system
    CHECK(temp.rfind(path + ".tmp." + std::to_string(::getpid()) + ".", 0) == 0);
    CHECK(fs::exists(temp));
    write_text(temp, "partial");
    CHECK_FALSE(fs::exists(path));
  }
  CHECK_FALSE(fs::exists(temp));
  CHECK_FALSE(fs::exists(path));
  CHECK(dir.entries().empty());
}

TEST_CASE("AtomicFile commit puts the data in place and removes the temp file") {
  TempDir dir;
  const std::string path = dir.file("result.txt");
  write_text(path, "old contents");
  std::string temp;
  {
    AtomicOutput out(path);
    temp = out.temp_path();
    write_text(temp, "new contents");
    CHECK(read_text(path) == "old contents");  // untouched until commit
    out.commit();
    CHECK(read_text(path) == "new contents");
    CHECK_THROWS_AS(out.commit(), krysp::Error);
  }
  CHECK(read_text(path) == "new contents");  // the destructor does not undo a commit
  CHECK_FALSE(fs::exists(temp));
  CHECK(dir.entries() == std::vector<std::string>{"result.txt"});
}

TEST_CASE("AtomicFile rejects a missing directory or a directory as target") {
  TempDir dir;
  const std::string path = dir.file("missing") + "/result.h5";
  const std::string message = error_message([&] { AtomicOutput out(path); });
  CHECK(contains(message, "cannot write '" + path + "': No such file or directory"));
  CHECK_THROWS_AS(AtomicOutput{path}, krysp::InputError);
  CHECK_THROWS_AS(AtomicOutput{dir.file("")}, krysp::InputError);  // the directory itself
  CHECK_THROWS_AS(AtomicOutput{std::string()}, krysp::InputError);
  CHECK(dir.entries().empty());
}

TEST_CASE("AtomicFile two outputs for one path use distinct temp files") {
  TempDir dir;
  const std::string path = dir.file("result.txt");
  AtomicOutput first(path);
  AtomicOutput second(path);
  CHECK(first.temp_path() != second.temp_path());
  write_text(first.temp_path(), "first");
  write_text(second.temp_path(), "second");
  second.commit();
  CHECK(read_text(path) == "second");
  CHECK(read_text(first.temp_path()) == "first");  // not clobbered by the other output
}
