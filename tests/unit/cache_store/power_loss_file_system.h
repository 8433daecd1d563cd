// A RocksDB FileSystem over the local one that remembers how much of each file written through
// it was synced, so that a test can throw the rest away: what an OS crash or a power loss
// leaves of files written through the page cache. Names, renames and deletions are kept, as a
// journaling file system keeps its metadata; only unsynced data is lost.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace kvd::cache_store::testing {

class PowerLossFileSystem : public rocksdb::FileSystemWrapper {
 public:
  PowerLossFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

  static const char* kClassName() { return "PowerLossFileSystem"; }
  const char* Name() const override { return kClassName(); }

  // From now on every write fails, as if the machine had stopped: a store can still be closed,
  // but nothing it does reaches a file any more.
  void LosePower() {
    std::lock_guard lock(mu_);
    powered_ = false;
  }
  // Cuts every file written through this file system back to its synced length.
  void DropUnsyncedData() {
    std::lock_guard lock(mu_);
    for (const auto& [path, file] : files_) {
      std::error_code error;
      if (std::filesystem::exists(path, error)) {
        std::filesystem::resize_file(path, file->synced, error);
      }
    }
  }

  rocksdb::IOStatus NewWritableFile(const std::string& path, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* debug) override {
    return Track(
        path, /*existing=*/false,
        [&] { return target()->NewWritableFile(path, options, result, debug); }, result);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& path, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* debug) override {
    return Track(
        path, /*existing=*/true,
        [&] { return target()->ReopenWritableFile(path, options, result, debug); }, result);
  }
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* debug) override {
    if (!powered()) return PowerLost();
    rocksdb::IOStatus status = target()->RenameFile(from, to, options, debug);
    std::lock_guard lock(mu_);
    if (auto it = files_.find(from); status.ok() && it != files_.end()) {
      files_[to] = it->second;
      files_.erase(it);
    }
    return status;
  }
  rocksdb::IOStatus DeleteFile(const std::string& path, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* debug) override {
    if (!powered()) return PowerLost();
    rocksdb::IOStatus status = target()->DeleteFile(path, options, debug);
    std::lock_guard lock(mu_);
    if (status.ok()) files_.erase(path);
    return status;
  }

 private:
  // Bytes written and bytes synced of one file; shared by its handle and the table of files.
  struct FileState {
    uint64_t size = 0;
    uint64_t synced = 0;
  };

  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> file, PowerLossFileSystem* fs,
         std::shared_ptr<FileState> state)
        : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), state_(std::move(state)) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* debug) override {
      return Written(target()->Append(data, options, debug), state_->size + data.size());
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* debug) override {
      return Written(target()->Append(data, options, info, debug), state_->size + data.size());
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       rocksdb::IODebugContext* debug) override {
      return Written(target()->PositionedAppend(data, offset, options, debug),
                     std::max(state_->size, offset + data.size()));
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       const rocksdb::DataVerificationInfo& info,
                                       rocksdb::IODebugContext* debug) override {
      return Written(target()->PositionedAppend(data, offset, options, info, debug),
                     std::max(state_->size, offset + data.size()));
    }
    rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* debug) override {
      if (!fs_->powered()) return PowerLost();
      rocksdb::IOStatus status = target()->Truncate(size, options, debug);
      std::lock_guard lock(fs_->mu_);
      if (status.ok()) {
        state_->size = size;
        state_->synced = std::min(state_->synced, size);
      }
      return status;
    }
    rocksdb::IOStatus Flush(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* debug) override {
      if (!fs_->powered()) return PowerLost();
      return target()->Flush(options, debug);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* debug) override {
      return Synced(target()->Sync(options, debug));
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* debug) override {
      return Synced(target()->Fsync(options, debug));
    }
    rocksdb::IOStatus Close(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* debug) override {
      // Closing syncs nothing; after the power is gone the file just stops.
      return target()->Close(options, debug);
    }

   private:
    rocksdb::IOStatus Written(rocksdb::IOStatus status, uint64_t size) {
      std::lock_guard lock(fs_->mu_);
      if (status.ok()) state_->size = size;
      return status;
    }
    rocksdb::IOStatus Synced(rocksdb::IOStatus status) {
      std::lock_guard lock(fs_->mu_);
      if (!fs_->powered_) return PowerLost();
      if (status.ok()) state_->synced = state_->size;
      return status;
    }

    PowerLossFileSystem* fs_;
    std::shared_ptr<FileState> state_;
  };

  static rocksdb::IOStatus PowerLost() { return rocksdb::IOStatus::IOError("the power is off"); }
  bool powered() {
    std::lock_guard lock(mu_);
    return powered_;
  }

  template <typename Open>
  rocksdb::IOStatus Track(const std::string& path, bool existing, Open open,
                          std::unique_ptr<rocksdb::FSWritableFile>* result) {
    if (!powered()) return PowerLost();
    rocksdb::IOStatus status = open();
    if (!status.ok()) return status;
    auto state = std::make_shared<FileState>();
    if (existing) {
      // What was there before was synced, or this file system never saw it written.
      std::error_code error;
      state->size = state->synced = std::filesystem::file_size(path, error);
    }
    {
      std::lock_guard lock(mu_);
      files_[path] = state;
    }
    *result = std::make_unique<File>(std::move(*result), this, std::move(state));
    return status;
  }

  std::mutex mu_;
  bool powered_ = true;                                      // guarded by mu_
  std::map<std::string, std::shared_ptr<FileState>> files_;  // guarded by mu_; by path
};

}  // namespace kvd::cache_store::testing
