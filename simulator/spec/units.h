// Unit constants and conversions: the only place unit factors appear.
//
// Code works in SI base units held in double: seconds, bytes, FLOP, bytes/s, FLOP/s.
// Conversion happens once, where a value enters (a JSON key or flag that spells its unit)
// or leaves (a printed column that spells its unit).
#pragma once

namespace ppsim {

inline constexpr double kKilo = 1e3;
inline constexpr double kMega = 1e6;
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kPeta = 1e15;

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * kKiB;
inline constexpr double kGiB = 1024.0 * kMiB;
inline constexpr double kTiB = 1024.0 * kGiB;

inline constexpr double kSecond = 1.0;
inline constexpr double kMillisecond = 1e-3;
inline constexpr double kMicrosecond = 1e-6;
inline constexpr double kHour = 3600.0;

// Physical bounds on link inputs (docs/limits.md): a latency above one second or a bandwidth
// outside [1 MB/s, 1 PB/s] is no interconnect, but a typo; refused at parse time, so that the
// simulated times stay far inside a double's exact range.
inline constexpr double kMaxLatencyUs = 1e6;
inline constexpr double kMinLinkGBps = 1e-3;
inline constexpr double kMaxLinkGBps = 1e6;
// Fabric oversubscription: 1 (non-blocking) up to 1000:1.
inline constexpr double kMaxOversubscription = 1e3;

// Bits to bytes: a NIC's "400 Gb/s" is 400e9 / 8 bytes/s.
inline constexpr double kBitsPerByte = 8.0;

// Conversions used at boundaries (JSON keys, flags, columns).
inline constexpr double gbps_to_bytes_per_s(double gigabits_per_s) {
  return gigabits_per_s * kGiga / kBitsPerByte;
}
inline constexpr double gBps_to_bytes_per_s(double gigabytes_per_s) {
  return gigabytes_per_s * kGiga;
}
inline constexpr double tflops_to_flops(double tflops) { return tflops * kTera; }
inline constexpr double us_to_s(double microseconds) { return microseconds * kMicrosecond; }
inline constexpr double gib_to_bytes(double gib) { return gib * kGiB; }

}  // namespace ppsim
