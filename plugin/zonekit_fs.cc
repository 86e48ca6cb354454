// The zonekit:// FileSystem for RocksDB: a thin shim over the zoned file system's C ABI
// (crates/zonekit-capi). No file-system logic lives here: RocksDB's files go to the Rust core;
// directories, the LOCK file and the informational LOG stay on the host file system (the
// wrapped default). Loaded into Debian's stock db_bench with
//   LD_PRELOAD=libzonekit_rocksdb.so db_bench --fs_uri=zonekit://<device spec> ...
// where the device spec is an emulated image or /dev zoned device holding a zonekit file
// system (`zonekit fs mkfs`), or mem:<preset> for a fresh in-memory device.

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/io_status.h>
#include <rocksdb/utilities/object_registry.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

extern "C" {
struct ZkFs;
ZkFs* zk_fs_open(const char* spec, char* err, size_t err_len);
void zk_last_error(const ZkFs* fs, char* buf, size_t len);
int64_t zk_file_create(ZkFs* fs, const char* name, uint8_t lifetime);
int64_t zk_file_set_lifetime(ZkFs* fs, const char* name, uint8_t lifetime);
int64_t zk_file_append(ZkFs* fs, const char* name, const uint8_t* data, size_t len);
int64_t zk_file_sync(ZkFs* fs, const char* name);
int64_t zk_file_read(ZkFs* fs, const char* name, uint64_t offset, uint8_t* buf, size_t len);
int64_t zk_file_size(ZkFs* fs, const char* name);
int64_t zk_file_delete(ZkFs* fs, const char* name);
int64_t zk_file_rename(ZkFs* fs, const char* from, const char* to);
int64_t zk_list(ZkFs* fs, const char* prefix, void (*each)(void*, const char*), void* ctx);
uint64_t zk_device_bytes_written(ZkFs* fs);
void zk_report(ZkFs* fs, char* buf, size_t len);
}

namespace {

using namespace ROCKSDB_NAMESPACE;

constexpr int64_t kENOENT = -2;
constexpr int64_t kENOSPC = -28;

IOStatus ToStatus(ZkFs* fs, int64_t rc, const std::string& what) {
  if (rc >= 0) return IOStatus::OK();
  char msg[512];
  zk_last_error(fs, msg, sizeof msg);
  if (rc == kENOENT) return IOStatus::PathNotFound(what, msg);
  if (rc == kENOSPC) return IOStatus::NoSpace(what, msg);
  return IOStatus::IOError(what, msg);
}

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

class ZkWritableFile : public FSWritableFile {
 public:
  ZkWritableFile(ZkFs* fs, std::string name, uint64_t size) : fs_(fs), name_(std::move(name)), size_(size) {}
  IOStatus Append(const Slice& data, const IOOptions&, IODebugContext*) override {
    int64_t rc = zk_file_append(fs_, name_.c_str(), reinterpret_cast<const uint8_t*>(data.data()), data.size());
    if (rc >= 0) size_ += data.size();
    return ToStatus(fs_, rc, name_);
  }
  IOStatus Append(const Slice& data, const IOOptions& o, const DataVerificationInfo&, IODebugContext* d) override {
    return Append(data, o, d);
  }
  IOStatus Close(const IOOptions& o, IODebugContext* d) override { return Sync(o, d); }
  IOStatus Flush(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Sync(const IOOptions&, IODebugContext*) override { return ToStatus(fs_, zk_file_sync(fs_, name_.c_str()), name_); }
  IOStatus Fsync(const IOOptions& o, IODebugContext* d) override { return Sync(o, d); }
  bool IsSyncThreadSafe() const override { return true; }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override { return size_; }
  void SetWriteLifeTimeHint(Env::WriteLifeTimeHint hint) override {
    FSWritableFile::SetWriteLifeTimeHint(hint);
    zk_file_set_lifetime(fs_, name_.c_str(), static_cast<uint8_t>(hint));
  }

 private:
  ZkFs* fs_;
  std::string name_;
  uint64_t size_;
};

class ZkSequentialFile : public FSSequentialFile {
 public:
  ZkSequentialFile(ZkFs* fs, std::string name) : fs_(fs), name_(std::move(name)) {}
  IOStatus Read(size_t n, const IOOptions&, Slice* result, char* scratch, IODebugContext*) override {
    int64_t rc = zk_file_read(fs_, name_.c_str(), pos_, reinterpret_cast<uint8_t*>(scratch), n);
    if (rc < 0) return ToStatus(fs_, rc, name_);
    pos_ += static_cast<uint64_t>(rc);
    *result = Slice(scratch, static_cast<size_t>(rc));
    return IOStatus::OK();
  }
  IOStatus Skip(uint64_t n) override {
    pos_ += n;
    return IOStatus::OK();
  }

 private:
  ZkFs* fs_;
  std::string name_;
  uint64_t pos_ = 0;
};

class ZkRandomAccessFile : public FSRandomAccessFile {
 public:
  ZkRandomAccessFile(ZkFs* fs, std::string name) : fs_(fs), name_(std::move(name)) {}
  IOStatus Read(uint64_t offset, size_t n, const IOOptions&, Slice* result, char* scratch, IODebugContext*) const override {
    int64_t rc = zk_file_read(fs_, name_.c_str(), offset, reinterpret_cast<uint8_t*>(scratch), n);
    if (rc < 0) return ToStatus(fs_, rc, name_);
    *result = Slice(scratch, static_cast<size_t>(rc));
    return IOStatus::OK();
  }

 private:
  ZkFs* fs_;
  std::string name_;
};

class ZkFileSystem : public FileSystemWrapper {
 public:
  explicit ZkFileSystem(ZkFs* fs) : FileSystemWrapper(FileSystem::Default()), fs_(fs) {}
  // Write amplification and space at exit, for experiments (stderr, one line).
  ~ZkFileSystem() override {
    char line[512];
    zk_report(fs_, line, sizeof line);
    std::fprintf(stderr, "%s\n", line);
  }
  const char* Name() const override { return "ZonekitFileSystem"; }

  bool Exists(const std::string& f) const { return zk_file_size(fs_, f.c_str()) >= 0; }

  IOStatus NewWritableFile(const std::string& f, const FileOptions&, std::unique_ptr<FSWritableFile>* r, IODebugContext*) override {
    // The WAL gets no hint from RocksDB; it is short-lived (RocksDB's kWLTHShort = 2).
    uint8_t lifetime = EndsWith(f, ".log") ? 2 : 0;
    int64_t rc = zk_file_create(fs_, f.c_str(), lifetime);
    if (rc < 0) return ToStatus(fs_, rc, f);
    r->reset(new ZkWritableFile(fs_, f, 0));
    return IOStatus::OK();
  }
  IOStatus ReopenWritableFile(const std::string& f, const FileOptions& o, std::unique_ptr<FSWritableFile>* r, IODebugContext* d) override {
    int64_t size = zk_file_size(fs_, f.c_str());
    if (size < 0) return NewWritableFile(f, o, r, d);
    r->reset(new ZkWritableFile(fs_, f, static_cast<uint64_t>(size)));
    return IOStatus::OK();
  }
  IOStatus NewSequentialFile(const std::string& f, const FileOptions&, std::unique_ptr<FSSequentialFile>* r, IODebugContext*) override {
    if (!Exists(f)) return IOStatus::PathNotFound(f);
    r->reset(new ZkSequentialFile(fs_, f));
    return IOStatus::OK();
  }
  IOStatus NewRandomAccessFile(const std::string& f, const FileOptions&, std::unique_ptr<FSRandomAccessFile>* r, IODebugContext*) override {
    if (!Exists(f)) return IOStatus::PathNotFound(f);
    r->reset(new ZkRandomAccessFile(fs_, f));
    return IOStatus::OK();
  }
  IOStatus FileExists(const std::string& f, const IOOptions& o, IODebugContext* d) override {
    return Exists(f) ? IOStatus::OK() : target()->FileExists(f, o, d);
  }
  IOStatus GetChildren(const std::string& dir, const IOOptions& o, std::vector<std::string>* r, IODebugContext* d) override {
    r->clear();
    IOStatus s = target()->GetChildren(dir, o, r, d);
    if (!s.ok() && !s.IsNotFound()) return s;
    struct Ctx {
      std::vector<std::string>* out;
      size_t skip;
    } ctx{r, dir.size() + 1};
    std::string prefix = dir + "/";
    zk_list(fs_, prefix.c_str(), [](void* c, const char* name) {
      auto* ctx = static_cast<Ctx*>(c);
      std::string rest(name + ctx->skip);
      if (rest.find('/') == std::string::npos) ctx->out->push_back(rest);
    }, &ctx);
    return IOStatus::OK();
  }
  IOStatus DeleteFile(const std::string& f, const IOOptions& o, IODebugContext* d) override {
    if (Exists(f)) return ToStatus(fs_, zk_file_delete(fs_, f.c_str()), f);
    return target()->DeleteFile(f, o, d);
  }
  IOStatus RenameFile(const std::string& src, const std::string& dst, const IOOptions& o, IODebugContext* d) override {
    if (Exists(src)) return ToStatus(fs_, zk_file_rename(fs_, src.c_str(), dst.c_str()), src);
    return target()->RenameFile(src, dst, o, d);
  }
  IOStatus GetFileSize(const std::string& f, const IOOptions& o, uint64_t* size, IODebugContext* d) override {
    int64_t rc = zk_file_size(fs_, f.c_str());
    if (rc >= 0) {
      *size = static_cast<uint64_t>(rc);
      return IOStatus::OK();
    }
    return target()->GetFileSize(f, o, size, d);
  }
  IOStatus GetFileModificationTime(const std::string& f, const IOOptions& o, uint64_t* t, IODebugContext* d) override {
    if (!Exists(f)) return target()->GetFileModificationTime(f, o, t, d);
    // Not tracked by the file system: report now.
    *t = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
    return IOStatus::OK();
  }
  IOStatus LinkFile(const std::string& src, const std::string& dst, const IOOptions& o, IODebugContext* d) override {
    if (Exists(src)) return IOStatus::NotSupported("zonekit: hard links are not supported");
    return target()->LinkFile(src, dst, o, d);
  }
  IOStatus AreFilesSame(const std::string& a, const std::string& b, const IOOptions& o, bool* same, IODebugContext* d) override {
    if (Exists(a) || Exists(b)) {
      *same = a == b;
      return IOStatus::OK();
    }
    return target()->AreFilesSame(a, b, o, same, d);
  }

 private:
  ZkFs* fs_;
};

// Registers zonekit:// when the library is loaded (LD_PRELOAD into db_bench).
const bool kRegistered = [] {
  ObjectLibrary::Default()->AddFactory<FileSystem>(
      ObjectLibrary::PatternEntry("zonekit", false).AddSeparator("://"),
      [](const std::string& uri, std::unique_ptr<FileSystem>* guard, std::string* errmsg) -> FileSystem* {
        std::string spec = uri.substr(std::strlen("zonekit://"));
        char err[512] = {0};
        ZkFs* fs = zk_fs_open(spec.c_str(), err, sizeof err);
        if (fs == nullptr) {
          *errmsg = std::string("zonekit: ") + err;
          return nullptr;
        }
        guard->reset(new ZkFileSystem(fs));
        return guard->get();
      });
  return true;
}();

}  // namespace
