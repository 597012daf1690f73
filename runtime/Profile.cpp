//===- Profile.cpp - per-step profile table and JSON -----------------------===//
#include "runtime/Profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace octet::rt {

namespace {

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string number(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

double mean(const std::vector<double> &values) {
  double sum = 0;
  for (double v : values)
    sum += v;
  return values.empty() ? 0 : sum / double(values.size());
}

} // namespace

PeakKind peakKindOf(const std::string &kind) {
  // bf16 kernels on AMX tiles ("attention.amx_bf16") are neither int8 nor vdpbf16ps.
  if (kind.find("bf16") != std::string::npos)
    return kind.find("amx") == std::string::npos ? PeakKind::Bf16 : PeakKind::Fp32;
  for (const char *tag : {"int8", "i8", "u8s8", "s8s8", "vnni", "amx"})
    if (kind.find(tag) != std::string::npos)
      return PeakKind::Int8;
  return PeakKind::Fp32;
}

double rooflineBound(const Ceilings &c, const std::string &kind, double ops, double bytes,
                     std::string *memory, std::string *compute) {
  const PeakKind held = peakKindOf(kind);
  const bool vdpbf16ps = held == PeakKind::Bf16 && c.bf16Gflops > 0;
  const bool int8 = held == PeakKind::Int8;
  const double peak = vdpbf16ps ? c.bf16Gflops : int8 && c.int8Gops > 0 ? c.int8Gops : c.fp32Gflops;
  const bool fitsL3 = c.l3CacheBytes > 0 && bytes <= double(c.l3CacheBytes);
  const double bandwidth = fitsL3 ? c.l3GBs : c.dramGBs;
  if (memory)
    *memory = fitsL3 ? "L3" : "DRAM";
  if (compute)
    *compute = vdpbf16ps ? "bf16" : int8 && c.int8Gops > 0 ? "int8" : "fp32";
  if (bytes <= 0)
    return peak;
  return std::min(peak, ops / bytes * bandwidth);
}

ProfileReport analyzeProfile(const Plan &plan, const std::vector<std::vector<double>> &stepSeconds,
                             const std::vector<Work> &work,
                             const std::vector<double> &endToEndSeconds, int threads,
                             const Ceilings *ceilings, const SampledPeaks *peaks) {
  ProfileReport report;
  report.endToEndSeconds = median(endToEndSeconds);
  report.endToEndMeanSeconds = mean(endToEndSeconds);
  report.threads = threads;
  report.haveCeilings = ceilings != nullptr;
  if (ceilings) {
    report.ceilings = *ceilings;
    if (peaks && peaks->samples > 0) {
      report.peakSamples = peaks->samples;
      report.cachedFp32Gflops = ceilings->fp32Gflops;
      report.cachedInt8Gops = ceilings->int8Gops;
      report.cachedBf16Gflops = ceilings->bf16Gflops;
      report.handoffNs = peaks->handoffNs;
      report.ceilings = peaks->apply(*ceilings);
    }
    ceilings = &report.ceilings;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    StepProfile s;
    s.index = i;
    s.kind = plan.steps[i]->kind();
    s.location = plan.steps[i]->location;
    if (i < stepSeconds.size()) {
      s.medianSeconds = median(stepSeconds[i]);
      s.meanSeconds = mean(stepSeconds[i]);
      report.repeats = std::max(report.repeats, int(stepSeconds[i].size()));
    }
    if (i < work.size()) {
      s.ops = work[i].ops;
      s.bytes = work[i].bytes;
      s.shapes = work[i].shapes;
    }
    if (s.medianSeconds > 0) {
      s.gops = s.ops / s.medianSeconds / 1e9;
      s.gbs = s.bytes / s.medianSeconds / 1e9;
    }
    s.intensity = s.bytes > 0 ? s.ops / s.bytes : 0;
    if (ceilings) {
      s.boundGops = rooflineBound(*ceilings, s.kind, s.ops, s.bytes, &s.memory, &s.compute);
      s.rooflineFraction = s.boundGops > 0 ? s.gops / s.boundGops : 0;
    }
    report.sumSeconds += s.medianSeconds;
    report.sumMeanSeconds += s.meanSeconds;
    report.steps.push_back(std::move(s));
  }
  for (StepProfile &s : report.steps)
    s.share = report.sumSeconds > 0 ? s.medianSeconds / report.sumSeconds : 0;

  // Classes: the bound of a class is its steps' bounds weighted by their ops
  // (steps of one kind and shapes have the same bound).
  std::map<std::pair<std::string, std::string>, size_t> at;
  std::vector<double> boundTime; // per class: sum of ops / bound
  for (const StepProfile &s : report.steps) {
    auto [it, added] = at.try_emplace({s.kind, s.shapes}, report.classes.size());
    if (added) {
      report.classes.push_back({s.kind, s.shapes});
      boundTime.push_back(0);
    }
    StepClassProfile &c = report.classes[it->second];
    c.steps += 1;
    c.medianSeconds += s.medianSeconds;
    c.ops += s.ops;
    c.bytes += s.bytes;
    if (s.boundGops > 0)
      boundTime[it->second] += s.ops / s.boundGops;
  }
  for (size_t i = 0; i < report.classes.size(); ++i) {
    StepClassProfile &c = report.classes[i];
    c.share = report.sumSeconds > 0 ? c.medianSeconds / report.sumSeconds : 0;
    c.gops = c.medianSeconds > 0 ? c.ops / c.medianSeconds / 1e9 : 0;
    if (boundTime[i] > 0 && c.medianSeconds > 0)
      c.rooflineFraction = boundTime[i] / (c.medianSeconds * 1e9);
  }
  std::stable_sort(report.classes.begin(), report.classes.end(),
                   [](const StepClassProfile &a, const StepClassProfile &b) {
                     return a.medianSeconds > b.medianSeconds;
                   });
  return report;
}

std::string profileTable(const ProfileReport &report, size_t limit) {
  std::ostringstream os;
  os << "profile: " << report.steps.size() << " steps, " << report.repeats << " repeat(s), "
     << report.threads << " thread(s); sum of step medians " << fixed(report.sumSeconds * 1e3, 3)
     << " ms, end to end " << fixed(report.endToEndSeconds * 1e3, 3) << " ms";
  if (report.endToEndMeanSeconds > 0)
    os << "; means: steps " << fixed(report.sumMeanSeconds * 1e3, 3) << " of "
       << fixed(report.endToEndMeanSeconds * 1e3, 3) << " ms ("
       << fixed(100 * report.sumMeanSeconds / report.endToEndMeanSeconds, 1) << "%)";
  os << "\n";
  if (report.haveCeilings) {
    const Ceilings &c = report.ceilings;
    if (report.peakSamples > 0) {
      os << "compute peaks measured in this run (" << c.threads << " threads, median of "
         << report.peakSamples << " samples between the runs): fp32 " << fixed(c.fp32Gflops, 1)
         << " GFLOP/s (" << c.fp32Isa << ")";
      if (c.int8Gops > 0)
        os << ", int8 " << fixed(c.int8Gops, 1) << " GOP/s (" << c.int8Isa << ")";
      if (c.bf16Gflops > 0)
        os << ", bf16 " << fixed(c.bf16Gflops, 1) << " GFLOP/s (avx512_bf16)";
      os << "; cached: fp32 " << fixed(report.cachedFp32Gflops, 1);
      if (report.cachedInt8Gops > 0)
        os << ", int8 " << fixed(report.cachedInt8Gops, 1);
      if (report.cachedBf16Gflops > 0)
        os << ", bf16 " << fixed(report.cachedBf16Gflops, 1);
      os << "\nbandwidths (cached ceilings):";
    } else {
      os << "ceilings (" << c.threads << " threads): fp32 " << fixed(c.fp32Gflops, 1)
         << " GFLOP/s (" << c.fp32Isa << ")";
      if (c.int8Gops > 0)
        os << ", int8 " << fixed(c.int8Gops, 1) << " GOP/s (" << c.int8Isa << ")";
      if (c.bf16Gflops > 0)
        os << ", bf16 " << fixed(c.bf16Gflops, 1) << " GFLOP/s (avx512_bf16)";
      os << ";";
    }
    os << " read L2 " << fixed(c.l2GBs, 1) << ", L3 " << fixed(c.l3GBs, 1) << ", DRAM "
       << fixed(c.dramGBs, 1) << " GB/s\n"
       << "roof = min(peak, intensity x bandwidth), bandwidth: L3 where the step's bytes fit "
       << "the " << (c.l3CacheBytes >> 20) << " MiB L3, else DRAM\n";
    if (report.handoffNs > 0) {
      os << "threads 0 and 1 hand a cache line over in " << fixed(report.handoffNs, 1)
         << " ns (median of the samples)";
      if (const std::string note = handoffNote(report.handoffNs); !note.empty())
        os << ": " << note;
      os << "\n";
    }
  }
  char line[512];
  std::snprintf(line, sizeof(line), "  %5s %10s %6s %9s %8s %6s  %s\n", "steps", "ms", "share",
                "MOP", "GOP/s", "roof%", "class: kind: shapes");
  os << "by class (steps of one kind on the same shapes, summed), slowest first:\n" << line;
  for (const StepClassProfile &c : report.classes) {
    std::snprintf(line, sizeof(line), "  %5zu %10.3f %5.1f%% %9.2f %8.1f ", c.steps,
                  c.medianSeconds * 1e3, 100 * c.share, c.ops / 1e6, c.gops);
    os << line;
    if (report.haveCeilings) {
      std::snprintf(line, sizeof(line), "%6.1f", std::min(c.rooflineFraction * 100, 999.9));
      os << line;
    } else {
      os << "     -";
    }
    os << "  " << c.kind << ": " << c.shapes << "\n";
  }
  os << "by step, slowest first:\n";
  std::vector<const StepProfile *> order;
  for (const StepProfile &s : report.steps)
    order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const StepProfile *a, const StepProfile *b) {
    return a->medianSeconds > b->medianSeconds;
  });
  if (limit && order.size() > limit)
    order.resize(limit);
  std::snprintf(line, sizeof(line), "  %4s %10s %6s %9s %9s %8s %7s %6s %4s %6s  %s\n", "step",
                "median ms", "share", "MOP", "MB", "GOP/s", "GB/s", "op/B", "mem", "roof%",
                "kind @ location: shapes");
  os << line;
  for (const StepProfile *s : order) {
    std::snprintf(line, sizeof(line), "  %4zu %10.3f %5.1f%% %9.2f %9.3f %8.1f %7.1f %6.1f %4s ",
                  s->index, s->medianSeconds * 1e3, 100 * s->share, s->ops / 1e6, s->bytes / 1e6,
                  s->gops, s->gbs, s->intensity, report.haveCeilings ? s->memory.c_str() : "-");
    os << line;
    if (report.haveCeilings) {
      std::snprintf(line, sizeof(line), "%6.1f", std::min(s->rooflineFraction * 100, 999.9));
      os << line;
    } else {
      os << "     -";
    }
    os << "  " << s->kind << (s->location.empty() ? "" : " @ " + s->location) << ": " << s->shapes
       << "\n";
  }
  return os.str();
}

std::string profileJson(const ProfileReport &report) {
  std::ostringstream os;
  os << "{\n  \"threads\": " << report.threads << ",\n  \"repeats\": " << report.repeats
     << ",\n  \"sum_seconds\": " << number(report.sumSeconds)
     << ",\n  \"end_to_end_seconds\": " << number(report.endToEndSeconds)
     << ",\n  \"sum_mean_seconds\": " << number(report.sumMeanSeconds)
     << ",\n  \"end_to_end_mean_seconds\": " << number(report.endToEndMeanSeconds) << ",\n";
  if (report.haveCeilings) {
    const Ceilings &c = report.ceilings;
    os << "  \"ceilings\": {\"threads\": " << c.threads
       << ", \"fp32_isa\": " << jsonString(c.fp32Isa)
       << ", \"fp32_gflops\": " << number(c.fp32Gflops)
       << ", \"int8_isa\": " << jsonString(c.int8Isa) << ", \"int8_gops\": " << number(c.int8Gops)
       << ", \"bf16_gflops\": " << number(c.bf16Gflops)
       << ", \"amx_int8_gops\": " << number(c.amxInt8Gops)
       << ", \"amx_note\": " << jsonString(c.amxNote) << ", \"l2_gbs\": " << number(c.l2GBs)
       << ", \"l3_gbs\": " << number(c.l3GBs) << ", \"dram_gbs\": " << number(c.dramGBs)
       << ", \"l3_cache_bytes\": " << c.l3CacheBytes << ", \"cpu\": " << jsonString(c.cpu)
       << ", \"peak_samples\": " << report.peakSamples
       << ", \"cached_fp32_gflops\": " << number(report.cachedFp32Gflops)
       << ", \"cached_int8_gops\": " << number(report.cachedInt8Gops)
       << ", \"cached_bf16_gflops\": " << number(report.cachedBf16Gflops)
       << ", \"handoff_ns\": " << number(report.handoffNs) << "},\n";
  } else {
    os << "  \"ceilings\": null,\n";
  }
  os << "  \"classes\": [";
  for (size_t i = 0; i < report.classes.size(); ++i) {
    const StepClassProfile &c = report.classes[i];
    os << (i ? ",\n" : "\n") << "    {\"kind\": " << jsonString(c.kind)
       << ", \"shapes\": " << jsonString(c.shapes) << ", \"steps\": " << c.steps
       << ", \"median_seconds\": " << number(c.medianSeconds) << ", \"share\": " << number(c.share)
       << ", \"ops\": " << number(c.ops) << ", \"bytes\": " << number(c.bytes)
       << ", \"gops\": " << number(c.gops);
    if (report.haveCeilings)
      os << ", \"roofline_fraction\": " << number(c.rooflineFraction);
    os << "}";
  }
  os << "\n  ],\n  \"steps\": [";
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const StepProfile &s = report.steps[i];
    os << (i ? ",\n" : "\n") << "    {\"index\": " << s.index
       << ", \"kind\": " << jsonString(s.kind) << ", \"location\": " << jsonString(s.location)
       << ", \"shapes\": " << jsonString(s.shapes)
       << ", \"median_seconds\": " << number(s.medianSeconds)
       << ", \"mean_seconds\": " << number(s.meanSeconds) << ", \"share\": " << number(s.share)
       << ", \"ops\": " << number(s.ops) << ", \"bytes\": " << number(s.bytes)
       << ", \"gops\": " << number(s.gops) << ", \"gbs\": " << number(s.gbs)
       << ", \"intensity\": " << number(s.intensity);
    if (report.haveCeilings)
      os << ", \"memory\": " << jsonString(s.memory) << ", \"compute\": " << jsonString(s.compute)
         << ", \"bound_gops\": " << number(s.boundGops)
         << ", \"roofline_fraction\": " << number(s.rooflineFraction);
    os << "}";
  }
  os << "\n  ]\n}\n";
  return os.str();
}

} // namespace octet::rt
