// SeededRandom: a small random number generator whose draws are the same on every platform.
//
// The standard library's distributions (std::normal_distribution, ...) are implementation-
// defined, so the same seed could give different step times under another compiler; ppsim's
// output must be byte-identical for the same inputs and seed (STYLE rule 12). The generator is
// SplitMix64 (Steele, Lea and Flood 2014; the seeder of Java's SplittableRandom and of
// xoshiro), which passes BigCrush and is more than enough for Monte-Carlo step times; the
// distributions are written out here from their textbook formulas.
//
// Not thread-safe; one generator per thread or per iteration.
#pragma once

#include <cmath>
#include <cstdint>

namespace ppsim {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  // A generator for sub-stream `index` of `seed` (e.g. one per Monte-Carlo iteration), so an
  // iteration's draws do not depend on how many iterations run before it.
  static SeededRandom stream(uint64_t seed, uint64_t index) {
    SeededRandom mixer(seed ^ (0x9e3779b97f4a7c15ULL * (index + 1)));
    return SeededRandom(mixer.next());
  }

  // The next 64 random bits (SplitMix64).
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one of the pair; 1 - u keeps the log finite).
  double normal() {
    double u1 = 1.0 - uniform();
    double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  // Exponential with the given mean, by inversion.
  double exponential(double mean) { return -mean * std::log(1.0 - uniform()); }

 private:
  uint64_t state_;
};

}  // namespace ppsim
