#include "server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "util/utf8.h"

namespace kiln::server {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

std::string Quote(std::string_view text) { return absl::StrCat("'", std::string(text), "'"); }

// The sample names a family of `type` called `name` writes.
std::vector<std::string> SampleNames(std::string_view name, MetricType type) {
  const std::string base(name);
  if (type == MetricType::kHistogram) return {base + "_bucket", base + "_sum", base + "_count"};
  return {base};
}

} // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
  case MetricType::kCounter:
    return "counter";
  case MetricType::kGauge:
    return "gauge";
  case MetricType::kHistogram:
    return "histogram";
  }
  return "untyped";
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // As Go's strconv.FormatFloat(value, 'g', -1, 64), which client_golang
  // uses, so that le labels read as in other exporters (le="0.0005", not
  // "5e-04"): the shortest digits that read back as the same double, in
  // exponent notation when the decimal exponent is below -4 or at least 6.
  char buf[64];
  const auto sci = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  const std::string_view scientific(buf, sci.ptr - buf);
  const size_t e = scientific.find('e');
  int exponent = 0;
  const char* exponent_begin = scientific.data() + e + (scientific[e + 1] == '+' ? 2 : 1);
  std::from_chars(exponent_begin, scientific.data() + scientific.size(), exponent);
  if (exponent < -4 || exponent >= 6) return std::string(scientific);
  const auto fixed = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

std::string EscapeLabelValue(std::string_view value) {
  const std::string valid = util::ToValidUtf8(value);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '"':
      out += "\\\"";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  const std::string valid = util::ToValidUtf8(help);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// --- Histogram ----------------------------------------------------------------

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bucket whose bound is >= value (le is inclusive); past the end
  // is the +Inf bucket.
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.cumulative_counts.resize(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative_counts[i] = running;
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
  return bounds;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  std::vector<double> bounds;
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

// --- Families -------------------------------------------------------------------

MetricFamilyBase::MetricFamilyBase(std::string name, std::string help, MetricType type,
                                   std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type),
      label_names_(std::move(label_names)) {}

void MetricFamilyBase::AppendHeader(std::string& out) const {
  // No HELP line for an empty help text (the format makes it optional).
  if (!help_.empty()) absl::StrAppend(&out, "# HELP ", name_, " ", EscapeHelp(help_), "\n");
  absl::StrAppend(&out, "# TYPE ", name_, " ", std::string(MetricTypeName(type_)), "\n");
}

void MetricFamilyBase::AppendSample(std::string& out, std::string_view suffix,
                                    const std::vector<std::string>& label_values,
                                    std::string_view extra_name, std::string_view extra_value,
                                    double value) const {
  out += name_;
  out += suffix;
  if (!label_names_.empty() || !extra_name.empty()) {
    out += '{';
    bool first = true;
    for (size_t i = 0; i < label_names_.size(); ++i) {
      if (!first) out += ',';
      first = false;
      absl::StrAppend(&out, label_names_[i], "=\"", EscapeLabelValue(label_values[i]), "\"");
    }
    if (!extra_name.empty()) {
      if (!first) out += ',';
      absl::StrAppend(&out, std::string(extra_name), "=\"", std::string(extra_value), "\"");
    }
    out += '}';
  }
  out += ' ';
  out += FormatMetricValue(value);
  out += '\n';
}

template <typename Series>
MetricFamily<Series>::MetricFamily(std::string name, std::string help, MetricType type,
                                   std::vector<std::string> label_names, std::vector<double> bounds)
    : MetricFamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(std::move(bounds)), detached_(NewSeries()) {
  // A family without labels has exactly one series; expose it from the start.
  if (this->label_names().empty()) series_.emplace(std::vector<std::string>{}, NewSeries());
}

template <typename Series>
std::unique_ptr<Series> MetricFamily<Series>::NewSeries() const {
  if constexpr (std::is_same_v<Series, Histogram>) {
    return std::make_unique<Histogram>(bounds_);
  } else {
    return std::make_unique<Series>();
  }
}

template <typename Series>
Series& MetricFamily<Series>::WithLabels(std::initializer_list<std::string_view> label_values) {
  std::vector<std::string> values;
  values.reserve(label_values.size());
  for (std::string_view v : label_values) values.emplace_back(v);
  return WithLabels(values);
}

template <typename Series>
Series& MetricFamily<Series>::WithLabels(const std::vector<std::string>& label_values) {
  if (label_values.size() != label_names().size()) {
    mismatched_.fetch_add(1, std::memory_order_relaxed);
    return *detached_;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(label_values);
  if (it == series_.end()) it = series_.emplace(label_values, NewSeries()).first;
  return *it->second;
}

template <typename Series>
void MetricFamily<Series>::Expose(std::string& out) const {
  AppendHeader(out);
  // Copy the (stable) series pointers, then read their atomics unlocked.
  std::vector<std::pair<const std::vector<std::string>*, const Series*>> series;
  {
    std::lock_guard<std::mutex> lock(mu_);
    series.reserve(series_.size());
    for (const auto& [labels, s] : series_) series.emplace_back(&labels, s.get());
  }
  for (const auto& [labels, s] : series) {
    if constexpr (std::is_same_v<Series, Histogram>) {
      const Histogram::Snapshot snap = s->snapshot();
      for (size_t i = 0; i < bounds_.size(); ++i) {
        AppendSample(out, "_bucket", *labels, "le", FormatMetricValue(bounds_[i]),
                     static_cast<double>(snap.cumulative_counts[i]));
      }
      AppendSample(out, "_bucket", *labels, "le", "+Inf", static_cast<double>(snap.count));
      AppendSample(out, "_sum", *labels, "", "", snap.sum);
      AppendSample(out, "_count", *labels, "", "", static_cast<double>(snap.count));
    } else {
      AppendSample(out, "", *labels, "", "", s->value());
    }
  }
}

template class MetricFamily<Counter>;
template class MetricFamily<Gauge>;
template class MetricFamily<Histogram>;

CallbackFamily::CallbackFamily(std::string name, std::string help, MetricType type,
                               std::vector<std::string> label_names, MetricCallback callback)
    : MetricFamilyBase(std::move(name), std::move(help), type, std::move(label_names)),
      callback_(std::move(callback)) {}

void CallbackFamily::SetCallback(MetricCallback callback) {
  MetricCallback old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = std::exchange(callback_, std::move(callback));
  }
  // `old` (and what it captured) is destroyed here, after any running call.
}

void CallbackFamily::Expose(std::string& out) const {
  AppendHeader(out);
  std::vector<CallbackSample> samples;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (callback_) samples = callback_();
  }
  std::erase_if(samples, [this](const CallbackSample& s) {
    return s.label_values.size() != label_names().size();
  });
  std::stable_sort(samples.begin(), samples.end(),
                   [](const CallbackSample& a, const CallbackSample& b) {
                     return a.label_values < b.label_values;
                   });
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i > 0 && samples[i].label_values == samples[i - 1].label_values) continue;
    AppendSample(out, "", samples[i].label_values, "", "", samples[i].value);
  }
}

// --- Registry -------------------------------------------------------------------

MetricRegistry::MetricRegistry() = default;
MetricRegistry::~MetricRegistry() = default;

absl::Status MetricRegistry::CheckNew(std::string_view name, MetricType type,
                                      const std::vector<std::string>& label_names) const {
  if (!IsValidMetricName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid metric name ", Quote(name), " (expected [a-zA-Z_:][a-zA-Z0-9_:]*)"));
  }
  std::set<std::string_view> seen;
  for (const std::string& label : label_names) {
    if (!IsValidLabelName(label)) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric ", Quote(name), ": invalid label name ", Quote(label),
                       " (expected [a-zA-Z_][a-zA-Z0-9_]*, not starting with __)"));
    }
    if (type == MetricType::kHistogram && label == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram ", Quote(name), ": the label name 'le' is reserved"));
    }
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric ", Quote(name), ": label ", Quote(label), " given twice"));
    }
  }
  if (families_.count(name) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("metric ", Quote(name), " already registered"));
  }
  for (const std::string& sample : SampleNames(name, type)) {
    if (auto it = sample_names_.find(sample); it != sample_names_.end()) {
      return absl::AlreadyExistsError(absl::StrCat("metric ", Quote(name), " would write ",
                                                   Quote(sample), ", which metric ",
                                                   Quote(it->second), " writes"));
    }
  }
  return absl::OkStatus();
}

template <typename Family>
Family* MetricRegistry::Insert(std::unique_ptr<Family> family) {
  Family* raw = family.get();
  for (std::string& sample : SampleNames(raw->name(), raw->type())) {
    sample_names_.emplace(std::move(sample), raw->name());
  }
  families_.emplace(raw->name(), std::move(family));
  return raw;
}

absl::StatusOr<CounterFamily*> MetricRegistry::AddCounter(std::string_view name,
                                                          std::string_view help,
                                                          std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckNew(name, MetricType::kCounter, label_names); !s.ok()) return s;
  return Insert(std::make_unique<CounterFamily>(std::string(name), std::string(help),
                                                MetricType::kCounter, std::move(label_names),
                                                std::vector<double>{}));
}

absl::StatusOr<GaugeFamily*> MetricRegistry::AddGauge(std::string_view name, std::string_view help,
                                                      std::vector<std::string> label_names) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckNew(name, MetricType::kGauge, label_names); !s.ok()) return s;
  return Insert(std::make_unique<GaugeFamily>(std::string(name), std::string(help),
                                              MetricType::kGauge, std::move(label_names),
                                              std::vector<double>{}));
}

absl::StatusOr<HistogramFamily*> MetricRegistry::AddHistogram(std::string_view name,
                                                              std::string_view help,
                                                              std::vector<std::string> label_names,
                                                              std::vector<double> bucket_bounds) {
  if (!bucket_bounds.empty() && std::isinf(bucket_bounds.back()) && bucket_bounds.back() > 0) {
    bucket_bounds.pop_back(); // +Inf is always the last bucket
  }
  for (size_t i = 0; i < bucket_bounds.size(); ++i) {
    if (!std::isfinite(bucket_bounds[i])) {
      return absl::InvalidArgumentError(absl::StrCat("histogram ", Quote(name),
                                                     ": bucket bounds must be finite, got ",
                                                     FormatMetricValue(bucket_bounds[i])));
    }
    if (i > 0 && !(bucket_bounds[i] > bucket_bounds[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram ", Quote(name), ": bucket bounds must increase strictly, got ",
          FormatMetricValue(bucket_bounds[i - 1]), " then ", FormatMetricValue(bucket_bounds[i])));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckNew(name, MetricType::kHistogram, label_names); !s.ok()) return s;
  return Insert(std::make_unique<HistogramFamily>(std::string(name), std::string(help),
                                                  MetricType::kHistogram, std::move(label_names),
                                                  std::move(bucket_bounds)));
}

absl::StatusOr<CallbackFamily*>
MetricRegistry::AddCallbackCounter(std::string_view name, std::string_view help,
                                   std::vector<std::string> label_names, MetricCallback callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckNew(name, MetricType::kCounter, label_names); !s.ok()) return s;
  return Insert(std::make_unique<CallbackFamily>(std::string(name), std::string(help),
                                                 MetricType::kCounter, std::move(label_names),
                                                 std::move(callback)));
}

absl::StatusOr<CallbackFamily*>
MetricRegistry::AddCallbackGauge(std::string_view name, std::string_view help,
                                 std::vector<std::string> label_names, MetricCallback callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckNew(name, MetricType::kGauge, label_names); !s.ok()) return s;
  return Insert(std::make_unique<CallbackFamily>(std::string(name), std::string(help),
                                                 MetricType::kGauge, std::move(label_names),
                                                 std::move(callback)));
}

std::string MetricRegistry::Expose() const {
  std::vector<const MetricFamilyBase*> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    families.reserve(families_.size());
    for (const auto& [name, family] : families_) families.push_back(family.get());
  }
  std::string out;
  for (const MetricFamilyBase* family : families) family->Expose(out);
  return out;
}

} // namespace kiln::server
