// SpinUntil: the short busy wait that kvmesh's thread hand-offs use before
// they sleep (ThreadPool, LocalCommunicator's barrier, DeviceThread).
//
// A forward pass hands work between threads hundreds of times per token, each
// time for tens of microseconds, so a waiter first spins (with the CPU's
// pause hint) for about kSpinMicros and only then falls back to a sleep on a
// condition variable or futex, which costs a system call and a wake-up.
// Header-only; any thread may call it.
#pragma once

#include <chrono>
#include <thread>

namespace kvmesh {

inline constexpr int kSpinMicros = 100;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or about kSpinMicros have passed; returns done().
template <typename Done>
bool SpinUntil(const Done& done) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(kSpinMicros);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      CpuRelax();
    }
    if (Clock::now() >= deadline) return done();
  }
}

}  // namespace kvmesh
