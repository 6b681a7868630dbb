// A read-only memory mapping of a whole file. Weights are views into these
// mappings, so a model's bytes are paged in by the OS, not copied.
#pragma once
#include <memory>
#include <string>

namespace strata::runtime {

class MappedFile {
 public:
  // Throws strata::Error naming the path when the file cannot be opened/mapped.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace strata::runtime
