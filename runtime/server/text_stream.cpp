#include "runtime/server/text_stream.h"

#include <algorithm>

namespace strata::runtime::server {

namespace {
constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD: an incomplete character decodes to it
bool endsIncomplete(const std::string& s) { return s.size() >= 3 && s.compare(s.size() - 3, 3, kReplacement) == 0; }
}  // namespace

TextStream::TextStream(DecodeFn decode, std::vector<std::string> stops, std::vector<int64_t> promptTail)
    : decode_(std::move(decode)), stops_(std::move(stops)), ids_(std::move(promptTail)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  read_ = ids_.size();
}

std::string TextStream::push(int64_t token) {
  if (stopped_) return "";
  ids_.push_back(token);
  std::string before = decode_(std::vector<int64_t>(ids_.begin() + prefix_, ids_.begin() + read_));
  std::string now = decode_(std::vector<int64_t>(ids_.begin() + prefix_, ids_.end()));
  if (endsIncomplete(now)) return "";  // wait for the rest of a character
  if (now.compare(0, before.size(), before) != 0) {
    // The decoder rewrote earlier text (rare): move the window on.
    prefix_ = read_;
    read_ = ids_.size();
    return "";
  }
  std::string delta = now.substr(before.size());
  prefix_ = read_;
  read_ = ids_.size();
  return release(std::move(delta));
}

std::string TextStream::release(std::string text) {
  pending_ += text;
  // A stop string anywhere in what is not shown yet ends the text there.
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) {
    // It may start inside the shown text's tail only if it was held back,
    // so searching pending_ is enough.
    size_t at = pending_.find(s);
    if (at != std::string::npos) cut = std::min(cut, at);
  }
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    shown_ += out;
    return out;
  }
  // Hold back the longest tail that starts some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > hold; --n)
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  shown_ += out;
  return out;
}

std::string TextStream::finish() {
  if (stopped_) return "";
  std::string out = std::move(pending_);
  pending_.clear();
  // Bytes still waiting for the rest of a character come out as they decode.
  if (read_ < ids_.size()) {
    std::string before = decode_(std::vector<int64_t>(ids_.begin() + prefix_, ids_.begin() + read_));
    std::string now = decode_(std::vector<int64_t>(ids_.begin() + prefix_, ids_.end()));
    if (now.size() > before.size() && now.compare(0, before.size(), before) == 0) out += now.substr(before.size());
    read_ = ids_.size();
  }
  shown_ += out;
  return out;
}

}  // namespace strata::runtime::server
