#include "krysp/io/hdf5_result.hpp"

#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include "krysp/base/error.hpp"
#include "krysp/io/atomic_file.hpp"

namespace krysp::io {
namespace {

// ---------------------------------------------------------------------------------------------
// Handles and errors

constexpr hid_t kInvalidId = -1;  // H5I_INVALID_HID, which older 1.10 headers lack.

/// Owns one HDF5 identifier and closes it with `Close`, so every path out of a function (including
/// an exception) releases what it opened.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  explicit Handle(hid_t id = kInvalidId) : id_(id) {}
  Handle(Handle&& other) noexcept : id_(other.release()) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.release();
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  hid_t release() {
    const hid_t id = id_;
    id_ = kInvalidId;
    return id;
  }
  /// Closes now and reports the status, for the one close whose failure matters (the file's).
  herr_t close() {
    const hid_t id = release();
    return id >= 0 ? Close(id) : 0;
  }

 private:
  void reset() {
    if (id_ >= 0) Close(id_);  // A failure here cannot be reported from a destructor.
    id_ = kInvalidId;
  }
  hid_t id_;
};

using FileId = Handle<H5Fclose>;
using GroupId = Handle<H5Gclose>;
using DatasetId = Handle<H5Dclose>;
using SpaceId = Handle<H5Sclose>;
using TypeId = Handle<H5Tclose>;
using AttrId = Handle<H5Aclose>;
using PlistId = Handle<H5Pclose>;
using ObjectId = Handle<H5Oclose>;

/// Switches HDF5's automatic error printing off for its lifetime (we report errors as exceptions
/// instead) and restores whatever handler was installed before, so other HDF5 users in the
/// process keep their setting.
class QuietHdf5Errors {
 public:
  QuietHdf5Errors() {
    saved_ = H5Eget_auto2(H5E_DEFAULT, &func_, &data_) >= 0;
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;
  ~QuietHdf5Errors() {
    if (saved_) H5Eset_auto2(H5E_DEFAULT, func_, data_);
  }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
  bool saved_ = false;
};

herr_t keep_innermost(unsigned n, const H5E_error2_t* err, void* client) {
  if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(client) = err->desc;
  return 0;
}

/// The innermost message on HDF5's error stack, then clears the stack; empty if there is none.
/// The innermost one is usually the actual cause ("file signature not found", or the errno text
/// of a failed system call), the outer ones merely repeat "unable to create ...".
std::string take_hdf5_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, &detail);
  H5Eclear2(H5E_DEFAULT);
  std::replace(detail.begin(), detail.end(), '\n', ' ');  // Some contain a ctime() newline.
  return detail;
}

/// Where an error happened: the public function and the file it was working on.
struct Context {
  const char* op;
  const std::string& path;
};

/// Throws krysp::Error "<op>: <call> failed for <what> in '<path>' (HDF5: <detail>)".
[[noreturn]] void fail(const Context& ctx, const char* call, const std::string& what) {
  const std::string detail = take_hdf5_detail();
  KRYSP_THROW(Error, ctx.op, ": ", call, " failed", what.empty() ? "" : " for ", what, " in '",
              ctx.path, "'", detail.empty() ? "" : " (HDF5: ", detail, detail.empty() ? "" : ")");
}

/// Returns `id`, or throws if the call that produced it failed.
hid_t check_id(hid_t id, const Context& ctx, const char* call, const std::string& what) {
  if (id < 0) fail(ctx, call, what);
  return id;
}

/// Throws if an HDF5 call returned a negative status.
void check_status(herr_t status, const Context& ctx, const char* call, const std::string& what) {
  if (status < 0) fail(ctx, call, what);
}

// ---------------------------------------------------------------------------------------------
// Names and shapes

/// "x" -> "/x"; every name inside the file is handled in its absolute form.
std::string absolute_name(const std::string& name) {
  return !name.empty() && name.front() == '/' ? name : "/" + name;
}

/// True for "/a" and "/a/b", false for "/", "//a", "/a/", "/a/./b" and names with a NUL: HDF5
/// would either reject those or silently store something other than what was asked for.
bool valid_object_name(const std::string& abs) {
  if (abs.size() < 2 || abs.back() == '/' || abs.find('\0') != std::string::npos) return false;
  std::size_t start = 1;
  while (start <= abs.size()) {
    std::size_t end = abs.find('/', start);
    if (end == std::string::npos) end = abs.size();
    const std::string part = abs.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

/// Product of the extents; throws on overflow so a bogus shape cannot wrap around to match.
std::size_t element_count(const std::vector<std::size_t>& shape, const std::string& path,
                          const std::string& name) {
  std::size_t count = 1;
  for (std::size_t extent : shape) {
    KRYSP_REQUIRE(extent == 0 || count <= std::numeric_limits<std::size_t>::max() / extent,
                  "write_hdf5: shape of dataset '", name, "' for '", path, "' overflows");
    count *= extent;
  }
  return count;
}

/// Rejects bad datasets before any file is touched.
void validate_datasets(const std::string& path, const std::vector<Hdf5Dataset>& datasets) {
  std::set<std::string> seen;
  for (const Hdf5Dataset& ds : datasets) {
    const std::string abs = absolute_name(ds.name);
    KRYSP_REQUIRE(valid_object_name(abs), "write_hdf5: invalid dataset name '", ds.name, "' for '",
                  path, "'");
    KRYSP_REQUIRE(seen.insert(abs).second, "write_hdf5: dataset '", abs, "' given twice for '",
                  path, "'");
    KRYSP_REQUIRE(ds.shape.size() <= static_cast<std::size_t>(H5S_MAX_RANK),
                  "write_hdf5: dataset '", abs, "' for '", path, "' has ", ds.shape.size(),
                  " dimensions (HDF5 allows ", H5S_MAX_RANK, ")");
    const std::size_t count = element_count(ds.shape, path, abs);
    KRYSP_REQUIRE(count == ds.data.size(), "write_hdf5: dataset '", abs, "' for '", path,
                  "' has shape with ", count, " elements but ", ds.data.size(), " values");
  }
}

/// Rejects bad attributes before any file is touched.
void validate_attributes(const std::string& path,
                         const std::vector<std::pair<std::string, Attribute>>& attributes) {
  std::set<std::string> seen;
  for (const auto& [name, value] : attributes) {
    KRYSP_REQUIRE(!name.empty() && name.find('\0') == std::string::npos,
                  "write_hdf5: invalid attribute name '", name, "' for '", path, "'");
    KRYSP_REQUIRE(seen.insert(name).second, "write_hdf5: attribute '", name, "' given twice for '",
                  path, "'");
    // A C string stops at the first NUL, so such a value would be stored truncated.
    const auto* text = std::get_if<std::string>(&value);
    KRYSP_REQUIRE(text == nullptr || text->find('\0') == std::string::npos,
                  "write_hdf5: value of attribute '", name, "' for '", path,
                  "' contains a NUL character");
  }
}

// ---------------------------------------------------------------------------------------------
// Writing

/// A variable-length UTF-8 string type: h5py reads it as `str` (a fixed-length one as `bytes`).
TypeId utf8_string_type(const Context& ctx, const std::string& what) {
  TypeId type(check_id(H5Tcopy(H5T_C_S1), ctx, "H5Tcopy", what));
  check_status(H5Tset_size(type.get(), H5T_VARIABLE), ctx, "H5Tset_size", what);
  check_status(H5Tset_cset(type.get(), H5T_CSET_UTF8), ctx, "H5Tset_cset", what);
  return type;
}

/// A scalar dataspace for shape {}, a simple one otherwise (zero extents allowed).
SpaceId make_space(const std::vector<std::size_t>& shape, const Context& ctx,
                   const std::string& what) {
  if (shape.empty()) return SpaceId(check_id(H5Screate(H5S_SCALAR), ctx, "H5Screate", what));
  const std::vector<hsize_t> dims(shape.begin(), shape.end());
  return SpaceId(check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                          ctx, "H5Screate_simple", what));
}

void write_dataset(hid_t file, const Hdf5Dataset& ds, const Context& ctx) {
  const std::string abs = absolute_name(ds.name);
  const std::string what = "dataset '" + abs + "'";
  SpaceId space = make_space(ds.shape, ctx, what);
  // Lets "/history/col0" create "/history" on the way.
  PlistId lcpl(check_id(H5Pcreate(H5P_LINK_CREATE), ctx, "H5Pcreate", what));
  check_status(H5Pset_create_intermediate_group(lcpl.get(), 1), ctx,
               "H5Pset_create_intermediate_group", what);
  // Little-endian IEEE in the file (the native layout on x86-64 and aarch64), so files are
  // byte-identical whichever machine wrote them.
  DatasetId dataset(check_id(H5Dcreate2(file, abs.c_str(), H5T_IEEE_F64LE, space.get(), lcpl.get(),
                                        H5P_DEFAULT, H5P_DEFAULT),
                             ctx, "H5Dcreate2", what));
  // Nothing to write for an empty dataset, and some HDF5 versions reject a null buffer.
  if (ds.data.empty()) return;
  check_status(
      H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ds.data.data()),
      ctx, "H5Dwrite", what);
}

/// Creates the scalar attribute `name` of `file_type` on `root` and writes `value` to it.
void write_scalar_attribute(hid_t root, const std::string& name, hid_t file_type, hid_t mem_type,
                            const void* value, const Context& ctx) {
  const std::string what = "attribute '" + name + "'";
  SpaceId scalar(check_id(H5Screate(H5S_SCALAR), ctx, "H5Screate", what));
  AttrId attr(
      check_id(H5Acreate2(root, name.c_str(), file_type, scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
               ctx, "H5Acreate2", what));
  check_status(H5Awrite(attr.get(), mem_type, value), ctx, "H5Awrite", what);
}

void write_attribute(hid_t root, const std::string& name, const Attribute& value,
                     const Context& ctx) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    write_scalar_attribute(root, name, H5T_STD_I64LE, H5T_NATIVE_INT64, i, ctx);
  } else if (const auto* d = std::get_if<double>(&value)) {
    write_scalar_attribute(root, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, d, ctx);
  } else {
    const TypeId type = utf8_string_type(ctx, "attribute '" + name + "'");
    const char* text = std::get<std::string>(value).c_str();
    write_scalar_attribute(root, name, type.get(), type.get(), &text, ctx);  // Buffer: a char*.
  }
}

/// Builds the whole file in memory (HDF5's core driver, no backing store) and returns its image.
/// HDF5 itself then never writes to disk: a full disk or a file-size limit cannot fail inside
/// H5Fclose, which would leave the library holding a half-closed file that it crashes on at exit
/// (found by "Atomic writes: HDF5 result ..." under ASan). Disk errors happen in write_image().
std::vector<unsigned char> build_image(const std::string& temp_path, const std::vector<Hdf5Dataset>& datasets,
                                       const std::vector<std::pair<std::string, Attribute>>& attributes,
                                       const Context& ctx) {
  PlistId fapl(check_id(H5Pcreate(H5P_FILE_ACCESS), ctx, "H5Pcreate", ""));
  check_status(H5Pset_fapl_core(fapl.get(), std::size_t(1) << 20, 0), ctx, "H5Pset_fapl_core", "");
  check_status(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), ctx, "H5Pset_fclose_degree", "");
  FileId file(check_id(H5Fcreate(temp_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), ctx,
                       "H5Fcreate", ""));
  for (const Hdf5Dataset& ds : datasets) write_dataset(file.get(), ds, ctx);
  {
    GroupId root(check_id(H5Gopen2(file.get(), "/", H5P_DEFAULT), ctx, "H5Gopen2", "group '/'"));
    for (const auto& [name, value] : attributes) write_attribute(root.get(), name, value, ctx);
  }
  check_status(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), ctx, "H5Fflush", "");
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  if (size < 0) fail(ctx, "H5Fget_file_image", "");
  std::vector<unsigned char> image(static_cast<std::size_t>(size));
  if (H5Fget_file_image(file.get(), image.data(), image.size()) != size) fail(ctx, "H5Fget_file_image", "");
  check_status(file.close(), ctx, "H5Fclose", "");
  return image;
}

/// Writes the image to `temp_path` (created empty by AtomicOutput); a short write or a failing
/// close is an Error naming the file and the system's reason.
void write_image(const std::string& temp_path, const std::vector<unsigned char>& image, const Context& ctx) {
  std::FILE* f = std::fopen(temp_path.c_str(), "wb");
  if (!f) KRYSP_THROW(Error, ctx.op, ": cannot write '", ctx.path, "': ", std::strerror(errno));
  const bool wrote = std::fwrite(image.data(), 1, image.size(), f) == image.size();
  const int write_err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed)
    KRYSP_THROW(Error, ctx.op, ": cannot write '", ctx.path, "': ", std::strerror(wrote ? errno : write_err));
}

// ---------------------------------------------------------------------------------------------
// Reading

/// Opens `ctx.path` read-only. A missing, unreadable or non-HDF5 file is an InputError: it is
/// the caller's input that is wrong, not the library.
FileId open_for_reading(const Context& ctx) {
  struct stat st {};
  if (::stat(ctx.path.c_str(), &st) != 0) {
    const int err = errno;
    KRYSP_THROW(InputError, ctx.op, ": cannot open '", ctx.path, "': ", std::strerror(err));
  }
  const hid_t id = H5Fopen(ctx.path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) {
    const std::string detail = take_hdf5_detail();
    KRYSP_THROW(InputError, ctx.op, ": H5Fopen failed for '", ctx.path,
                "': not a readable HDF5 file", detail.empty() ? "" : " (HDF5: ", detail,
                detail.empty() ? "" : ")");
  }
  return FileId(id);
}

/// Whether `abs` names a dataset in `file`. H5Lexists fails (instead of answering "no") when a
/// group on the way is missing, so each prefix is tested in turn.
bool dataset_exists(hid_t file, const std::string& abs) {
  for (std::size_t slash = abs.find('/', 1); slash != std::string::npos;
       slash = abs.find('/', slash + 1)) {
    if (H5Lexists(file, abs.substr(0, slash).c_str(), H5P_DEFAULT) <= 0) return false;
  }
  if (H5Lexists(file, abs.c_str(), H5P_DEFAULT) <= 0) return false;
  // The link may dangle (a soft link) or lead to a group.
  ObjectId object(H5Oopen(file, abs.c_str(), H5P_DEFAULT));
  return object.get() >= 0 && H5Iget_type(object.get()) == H5I_DATASET;
}

/// The extents of a dataset's dataspace: {} for a scalar.
std::vector<std::size_t> read_shape(hid_t dataset, const Context& ctx, const std::string& what) {
  SpaceId space(check_id(H5Dget_space(dataset), ctx, "H5Dget_space", what));
  const H5S_class_t kind = H5Sget_simple_extent_type(space.get());
  KRYSP_REQUIRE(kind == H5S_SCALAR || kind == H5S_SIMPLE, ctx.op, ": ", what, " in '", ctx.path,
                "' has no data (null dataspace)");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(ctx, "H5Sget_simple_extent_ndims", what);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) {
    check_status(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), ctx,
                 "H5Sget_simple_extent_dims", what);
  }
  return std::vector<std::size_t>(dims.begin(), dims.end());
}

/// Frees a string HDF5 allocated for a variable-length read.
struct Hdf5Free {
  void operator()(char* p) const { H5free_memory(p); }
};

std::string read_string_attribute(hid_t attr, hid_t file_type, const Context& ctx,
                                  const std::string& what) {
  const htri_t variable = H5Tis_variable_str(file_type);
  if (variable < 0) fail(ctx, "H5Tis_variable_str", what);
  if (variable > 0) {
    TypeId mem(check_id(H5Tcopy(H5T_C_S1), ctx, "H5Tcopy", what));
    check_status(H5Tset_size(mem.get(), H5T_VARIABLE), ctx, "H5Tset_size", what);
    check_status(H5Tset_cset(mem.get(), H5Tget_cset(file_type)), ctx, "H5Tset_cset", what);
    char* raw = nullptr;
    check_status(H5Aread(attr, mem.get(), &raw), ctx, "H5Aread", what);
    const std::unique_ptr<char, Hdf5Free> owned(raw);
    return owned ? std::string(owned.get()) : std::string();
  }
  // Fixed length: read the raw bytes, then strip the padding the writer chose.
  const std::size_t size = H5Tget_size(file_type);
  if (size == 0) fail(ctx, "H5Tget_size", what);
  std::vector<char> buffer(size + 1, '\0');
  check_status(H5Aread(attr, file_type, buffer.data()), ctx, "H5Aread", what);
  std::string text(buffer.data(), ::strnlen(buffer.data(), size));
  if (H5Tget_strpad(file_type) == H5T_STR_SPACEPAD) {
    text.erase(text.find_last_not_of(' ') + 1);
  }
  return text;
}

}  // namespace

void write_hdf5(const std::string& path, const std::vector<Hdf5Dataset>& datasets,
                const std::vector<std::pair<std::string, Attribute>>& attributes) {
  validate_datasets(path, datasets);
  validate_attributes(path, attributes);
  const Context ctx{"write_hdf5", path};
  AtomicOutput output(path);  // Removes the temporary file again if anything below throws.
  std::vector<unsigned char> image;
  {
    const QuietHdf5Errors quiet;
    image = build_image(output.temp_path(), datasets, attributes, ctx);
  }
  write_image(output.temp_path(), image, ctx);
  output.commit();
}

Hdf5Dataset read_hdf5_dataset(const std::string& path, const std::string& name) {
  const Context ctx{"read_hdf5_dataset", path};
  const std::string abs = absolute_name(name);
  const std::string what = "dataset '" + abs + "'";
  const QuietHdf5Errors quiet;
  const FileId file = open_for_reading(ctx);
  if (!valid_object_name(abs) || !dataset_exists(file.get(), abs)) {
    H5Eclear2(H5E_DEFAULT);
    KRYSP_THROW(InputError, ctx.op, ": no ", what, " in '", path, "'");
  }
  DatasetId dataset(
      check_id(H5Dopen2(file.get(), abs.c_str(), H5P_DEFAULT), ctx, "H5Dopen2", what));
  TypeId type(check_id(H5Dget_type(dataset.get()), ctx, "H5Dget_type", what));
  const H5T_class_t type_class = H5Tget_class(type.get());
  KRYSP_REQUIRE(type_class == H5T_FLOAT || type_class == H5T_INTEGER, ctx.op, ": ", what, " in '",
                path, "' is not numeric");

  Hdf5Dataset result;
  result.name = abs;
  result.shape = read_shape(dataset.get(), ctx, what);
  std::size_t count = 1;
  for (std::size_t extent : result.shape) count *= extent;
  result.data.resize(count);
  if (count > 0) {  // HDF5 converts integers and float32 to double on the way.
    check_status(H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                         result.data.data()),
                 ctx, "H5Dread", what);
  }
  return result;
}

Attribute read_hdf5_attribute(const std::string& path, const std::string& name) {
  const Context ctx{"read_hdf5_attribute", path};
  const std::string what = "attribute '" + name + "'";
  const QuietHdf5Errors quiet;
  const FileId file = open_for_reading(ctx);
  const htri_t exists = name.empty() ? 0 : H5Aexists(file.get(), name.c_str());
  if (exists < 0) fail(ctx, "H5Aexists", what);
  KRYSP_REQUIRE(exists > 0, ctx.op, ": no ", what, " on the root group of '", path, "'");

  AttrId attr(check_id(H5Aopen(file.get(), name.c_str(), H5P_DEFAULT), ctx, "H5Aopen", what));
  {
    SpaceId space(check_id(H5Aget_space(attr.get()), ctx, "H5Aget_space", what));
    // Scalars, and also {1} arrays as MATLAB and some other writers store single values.
    KRYSP_REQUIRE(H5Sget_simple_extent_npoints(space.get()) == 1, ctx.op, ": ", what, " in '", path,
                  "' is not a single value");
  }
  TypeId type(check_id(H5Aget_type(attr.get()), ctx, "H5Aget_type", what));
  switch (H5Tget_class(type.get())) {
    case H5T_INTEGER: {
      std::int64_t value = 0;
      check_status(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), ctx, "H5Aread", what);
      return value;
    }
    case H5T_FLOAT: {
      double value = 0;
      check_status(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value), ctx, "H5Aread", what);
      return value;
    }
    case H5T_STRING:
      return read_string_attribute(attr.get(), type.get(), ctx, what);
    default:
      KRYSP_THROW(InputError, ctx.op, ": ", what, " in '", path,
                  "' is not an integer, a float or a string");
  }
}

}  // namespace krysp::io
