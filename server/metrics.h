// A small Prometheus client: a registry of metric families (counters,
// gauges, histograms, and counters or gauges computed by a callback at scrape
// time), each a set of series told apart by label values, exposed in the
// Prometheus text format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
//   MetricRegistry registry;
//   CounterFamily* requests = *registry.AddCounter(
//       "kiln_rpc_requests_total", "RPCs handled.", {"method", "code"});
//   Counter& ok = requests->WithLabels({"Compile", "OK"});  // look up once
//   ok.Increment();                                         // lock-free
//   std::string text = registry.Expose();
//
// Thread-safety: everything is thread-safe. Updating a series through a
// reference held by the caller is a few relaxed atomic operations (no lock);
// WithLabels takes the family's lock, so hot paths look a series up once and
// keep the reference, which stays valid as long as the registry. Families
// are never removed.
//
// Exposition: families sorted by name, each with one HELP line (none for an
// empty help text) and one TYPE line,
// series sorted by label values; label values and HELP text escaped as the
// format requires, invalid UTF-8 replaced by U+FFFD; values in Go's float
// syntax with +Inf, -Inf and NaN. A histogram series writes cumulative
// _bucket{le="..."} lines ending in le="+Inf", then _sum and _count, where
// _count always equals the +Inf bucket.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::server {

enum class MetricType { kCounter, kGauge, kHistogram };
// "counter", "gauge", "histogram".
std::string_view MetricTypeName(MetricType type);

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved by Prometheus).
bool IsValidLabelName(std::string_view name);
// A sample value as the format writes it: "+Inf", "-Inf", "NaN", or the
// shortest decimal that reads back as the same double, spelled as Go's
// FormatFloat(v, 'g', -1, 64) does ("1", "0.0005", "123456", "1e+06").
std::string FormatMetricValue(double value);
// Escapes backslash, double quote and newline (the inside of "...").
std::string EscapeLabelValue(std::string_view value);
// Escapes backslash and newline (HELP text).
std::string EscapeHelp(std::string_view help);

// A value that only goes up. Increments by a negative amount or NaN are
// ignored.
class Counter {
 public:
  void Increment(double amount = 1.0) {
    if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
  }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void Increment() { Add(1.0); }
  void Decrement() { Add(-1.0); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted in buckets with fixed upper bounds (inclusive, like
// Prometheus' le), plus their sum and count. NaN observations are ignored.
class Histogram {
 public:
  // `bounds`: strictly increasing, finite; owned by the family, outlives this.
  explicit Histogram(const std::vector<double>& bounds);

  void Observe(double value);

  struct Snapshot {
    std::vector<uint64_t> cumulative_counts; // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0; // == cumulative_counts.back()
  };
  Snapshot snapshot() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double>& bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_; // per bucket, not cumulative; last is +Inf
  std::atomic<double> sum_{0.0};
};

// Bucket bounds: start, start*factor, ... (count of them).
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// Bucket bounds: start, start+width, ... (count of them).
std::vector<double> LinearBuckets(double start, double width, int count);

// What a registry needs of every family.
class MetricFamilyBase {
 public:
  virtual ~MetricFamilyBase() = default;
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends the family's HELP, TYPE and sample lines.
  virtual void Expose(std::string& out) const = 0;

 protected:
  MetricFamilyBase(std::string name, std::string help, MetricType type,
                   std::vector<std::string> label_names);
  void AppendHeader(std::string& out) const;
  // name{l1="v1",...,extra_name="extra_value"} value\n
  void AppendSample(std::string& out, std::string_view suffix,
                    const std::vector<std::string>& label_values, std::string_view extra_name,
                    std::string_view extra_value, double value) const;

 private:
  std::string name_;
  std::string help_;
  MetricType type_;
  std::vector<std::string> label_names_;
};

// The series of one counter, gauge or histogram family.
template <typename Series>
class MetricFamily final : public MetricFamilyBase {
 public:
  MetricFamily(std::string name, std::string help, MetricType type,
               std::vector<std::string> label_names, std::vector<double> bounds);

  // The series with these label values (in the order of label_names()),
  // created at zero on first use. A wrong number of values gets a detached
  // series that is never exposed (so a programming error cannot break the
  // exposition) and counts in mismatched_label_calls().
  Series& WithLabels(std::initializer_list<std::string_view> label_values);
  Series& WithLabels(const std::vector<std::string>& label_values);
  // The single series of a family without labels (exposed from the start).
  Series& Get() { return WithLabels(std::vector<std::string>{}); }

  uint64_t mismatched_label_calls() const { return mismatched_.load(std::memory_order_relaxed); }
  void Expose(std::string& out) const override;

 private:
  std::unique_ptr<Series> NewSeries() const;

  const std::vector<double> bounds_; // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Series>> series_; // guarded by mu_
  std::unique_ptr<Series> detached_;
  std::atomic<uint64_t> mismatched_{0};
};

using CounterFamily = MetricFamily<Counter>;
using GaugeFamily = MetricFamily<Gauge>;
using HistogramFamily = MetricFamily<Histogram>;

// One sample returned by a callback family's callback.
struct CallbackSample {
  std::vector<std::string> label_values;
  double value = 0;
};
using MetricCallback = std::function<std::vector<CallbackSample>()>;

// A counter or gauge family whose samples a callback computes at each
// scrape (for values kept elsewhere: cache statistics, queue lengths).
// Samples with the wrong number of label values, and all but the first of
// samples with equal label values, are dropped.
class CallbackFamily final : public MetricFamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, MetricType type,
                 std::vector<std::string> label_names, MetricCallback callback);

  // Replaces the callback (an empty one exposes no samples). Waits for a
  // running call of the old callback to return, so that after
  // SetCallback(nullptr) whatever the old one captured may be destroyed. A
  // callback must not call SetCallback on its own family.
  void SetCallback(MetricCallback callback);
  void Expose(std::string& out) const override;

 private:
  mutable std::mutex mu_;   // held while the callback runs
  MetricCallback callback_; // guarded by mu_
};

class MetricRegistry {
 public:
  MetricRegistry();
  ~MetricRegistry();
  MetricRegistry(const MetricRegistry&) = delete;
  MetricRegistry& operator=(const MetricRegistry&) = delete;

  // The Content-Type of Expose()'s output.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

  // Registers a family. The returned pointer is valid as long as the
  // registry. Errors: InvalidArgument for an invalid metric or label name, a
  // repeated label name, a histogram label named "le", or bucket bounds that
  // are not strictly increasing and finite (a trailing +Inf is allowed and
  // implied anyway); AlreadyExists when the name, or one of the sample names
  // it writes (a histogram "x" writes x_bucket, x_sum, x_count), is taken.
  absl::StatusOr<CounterFamily*> AddCounter(std::string_view name, std::string_view help,
                                            std::vector<std::string> label_names = {});
  absl::StatusOr<GaugeFamily*> AddGauge(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names = {});
  absl::StatusOr<HistogramFamily*> AddHistogram(std::string_view name, std::string_view help,
                                                std::vector<std::string> label_names,
                                                std::vector<double> bucket_bounds);
  absl::StatusOr<CallbackFamily*> AddCallbackCounter(std::string_view name, std::string_view help,
                                                     std::vector<std::string> label_names,
                                                     MetricCallback callback);
  absl::StatusOr<CallbackFamily*> AddCallbackGauge(std::string_view name, std::string_view help,
                                                   std::vector<std::string> label_names,
                                                   MetricCallback callback);

  // Every family in the text format 0.0.4. Callbacks run on the calling
  // thread, outside the registry's lock.
  std::string Expose() const;

 private:
  absl::Status CheckNew(std::string_view name, MetricType type,
                        const std::vector<std::string>& label_names) const;
  template <typename Family>
  Family* Insert(std::unique_ptr<Family> family);

  mutable std::mutex mu_;
  // Ordered by name; entries are never removed. Guarded by mu_.
  std::map<std::string, std::unique_ptr<MetricFamilyBase>, std::less<>> families_;
  // Every sample name the families write, to refuse a clash. Guarded by mu_.
  std::map<std::string, std::string, std::less<>> sample_names_; // sample -> family
};

} // namespace kiln::server
