#include "profiler/cpu_executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <time.h>

#include "profiler/cpu_backend.h"
#include "profiler/cpu_kernels.h"
#include "profiler/memory_ledger.h"
#include "profiler/rendezvous_channel.h"
#include "profiler/thread_collectives.h"

namespace ppsim {
namespace {

using Clock = std::chrono::steady_clock;

// The bytes Adam keeps per parameter in the static block: fp32 master, gradient, m, v and the
// bf16 copy (4 + 4 + 4 + 4 + 2); it touches 34 per update (cpu_kernels.h).
constexpr double kAdamStoredBytes = 18;
constexpr double kAdamTouchedBytes = 34;

Collective collective_of(ExecCollectiveKind kind) {
  switch (kind) {
    case ExecCollectiveKind::kAllGather: return Collective::kAllGather;
    case ExecCollectiveKind::kReduceScatter: return Collective::kReduceScatter;
    default: return Collective::kAllReduce;
  }
}

// This thread's CPU time, seconds.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// A real allocation of `bytes`, left uninitialized (as cudaMalloc leaves device memory).
std::unique_ptr<char[]> allocate(double bytes) {
  return std::unique_ptr<char[]>(new char[std::max<size_t>(1, size_t(bytes))]);
}

// What the workers share.
struct Shared {
  const ExecutorProgram& program;
  const ExecutorOptions& options;
  RendezvousChannel channel;
  std::vector<std::vector<char>> payload;  // Per transfer task: the sender's tensor.
  std::map<std::vector<int32_t>, std::unique_ptr<ThreadCommunicator>> communicators;
  Clock::time_point origin;
  ExecutorResult result;

  Shared(const ExecutorProgram& p, const ExecutorOptions& o)
      : program(p), options(o), channel(p.tasks, o.timeout), payload(p.tasks) {}

  double now() const { return std::chrono::duration<double>(Clock::now() - origin).count(); }

  void abort_all(const std::string& reason) {
    channel.abort(reason);
    for (auto& [workers, communicator] : communicators) communicator->abort(reason);
  }
};

// One worker's state and its run of one iteration.
class Worker {
 public:
  Worker(Shared& shared, int32_t index) : shared_(shared), index_(index) {
    const ExecutorProgram& program = shared.program;
    double static_bytes = program.static_bytes.empty() ? 0 : program.static_bytes[index];
    size_t adam_parameters = 0;
    double collective_bytes = 0;
    for (const ExecInstruction& in : program.instructions[index]) {
      if (in.kind == ExecKind::kOptimizer) adam_parameters = size_t(in.bytes / kAdamTouchedBytes);
      for (int32_t c : in.collectives) {
        if (c >= 0) collective_bytes = std::max(collective_bytes, program.collectives[c].bytes);
      }
      if (in.kind == ExecKind::kRecv) receive_.resize(std::max(receive_.size(), size_t(in.bytes)));
    }
    // The static block holds the Adam arrays; a block too small for them grows (and says so in
    // the peak: the measured static memory is then larger than the model's).
    static_bytes = std::max(static_bytes, adam_parameters * kAdamStoredBytes);
    static_block_ = allocate(static_bytes);
    ledger_.allocate(static_bytes);
    adam_count_ = adam_parameters;
    if (adam_count_ > 0) {
      float* base = reinterpret_cast<float*>(static_block_.get());
      std::fill(base, base + 4 * adam_count_, 0.01f);  // p, g, m, v: never time zeros.
    }
    // Collective buffers: fp32, rounded up to whole floats per rank (ThreadCommunicator::run).
    size_t floats = size_t(collective_bytes / 4) + 64;
    collective_in_.assign(floats, 1.0f);
    collective_out_.assign(floats, 0.0f);
  }

  // Runs the worker's instructions once; `timed` records into iteration `slot`.
  void run(bool timed, int64_t slot) {
    Shared& s = shared_;
    const bool fold = s.options.fold;
    std::vector<std::string>* executed =
        timed && slot == 0 ? &s.result.executed[index_] : nullptr;
    auto record = [&](int32_t task, double start, double end) {
      if (!timed) return;
      s.result.start[slot][task] = start;
      s.result.end[slot][task] = end;
      s.result.measured[task] = 1;
    };
    for (const ExecInstruction& in : s.program.instructions[index_]) {
      if (executed) executed->push_back(in.label);
      switch (in.kind) {
        case ExecKind::kCompute: {
          double start = s.now(), cpu_start = thread_cpu_seconds();
          if (in.alloc_bytes > 0) stash(in);
          for (const KernelCall& call : in.kernels) run_kernel(call);
          if (in.free_bytes > 0) unstash(in);
          double end = s.now();
          record(in.tasks.front(), start, end);
          if (timed) {
            compute_wall_ += end - start;
            compute_cpu_ += thread_cpu_seconds() - cpu_start;
          }
          break;
        }
        case ExecKind::kSend:
          if (!fold) s.channel.post(in.transfer, s.now());
          break;
        case ExecKind::kRecv: {
          if (fold) break;
          double arrival = s.now();
          double posted = s.channel.take(in.transfer, index_, in.peer);
          double start = std::max(arrival, posted);
          std::memcpy(receive_.data(), s.payload[in.transfer].data(), size_t(in.bytes));
          record(in.transfer, start, s.now());
          break;
        }
        case ExecKind::kCollective:
          for (size_t i = 0; i < in.tasks.size(); ++i) run_collective(in, i, record);
          break;
        case ExecKind::kOptimizer: {
          double start = s.now();
          float* base = reinterpret_cast<float*>(static_block_.get());
          size_t n = adam_count_;
          CpuKernels::adam(base, base + n, base + 2 * n, base + 3 * n,
                           reinterpret_cast<unsigned short*>(base + 4 * n), n);
          record(in.tasks.front(), start, s.now());
          for (size_t i = 1; i < in.tasks.size(); ++i) run_collective(in, i, record);
          break;
        }
      }
    }
  }

  double peak() const { return ledger_.peak(); }
  double compute_wall() const { return compute_wall_; }
  double compute_cpu() const { return compute_cpu_; }

 private:
  template <typename Record>
  void run_collective(const ExecInstruction& in, size_t i, Record& record) {
    if (shared_.options.fold || in.collectives[i] < 0) return;
    const ExecCollective& call = shared_.program.collectives[in.collectives[i]];
    ThreadCommunicator& communicator = *shared_.communicators.at(call.workers);
    int rank = int(std::find(call.workers.begin(), call.workers.end(), index_) -
                   call.workers.begin());
    size_t unit = 4 * call.workers.size();
    size_t bytes = std::max(unit, (size_t(call.bytes) + unit - 1) / unit * unit);
    double start = shared_.now();
    communicator.run(rank, collective_of(call.kind), collective_in_.data(),
                     collective_out_.data(), bytes);
    record(in.tasks[i], start, shared_.now());
  }

  void run_kernel(const KernelCall& call) {
    switch (call.kind) {
      case KernelKind::kGemm: kernels_.gemm(call.m, call.n, call.k, call.batch); break;
      case KernelKind::kAttentionForward: kernels_.attention(call.m, call.n, call.k, false); break;
      case KernelKind::kAttentionBackward: kernels_.attention(call.m, call.n, call.k, true); break;
      case KernelKind::kNorm: kernels_.memory(MemoryKernel::kNorm, call.bytes); break;
      case KernelKind::kElementwise: kernels_.memory(MemoryKernel::kElementwise, call.bytes); break;
    }
  }

  // A forward's saved activations: what the input gradient frees, and what W frees after it.
  void stash(const ExecInstruction& in) {
    Saved& saved = saved_[{in.chunk, in.microbatch}];
    double kept = std::min(in.kept_for_weight_grad, in.alloc_bytes);
    saved.blocks.push_back({allocate(in.alloc_bytes - kept), in.alloc_bytes - kept});
    if (kept > 0) saved.blocks.push_back({allocate(kept), kept});
    ledger_.allocate(in.alloc_bytes);
  }

  // Frees blocks, oldest first, until free_bytes are released.
  void unstash(const ExecInstruction& in) {
    auto it = saved_.find({in.chunk, in.microbatch});
    if (it == saved_.end()) return;
    double left = in.free_bytes;
    auto& blocks = it->second.blocks;
    while (!blocks.empty() && left > 0.5) {
      left -= blocks.front().bytes;
      ledger_.release(blocks.front().bytes);
      blocks.erase(blocks.begin());
    }
    if (blocks.empty()) saved_.erase(it);
  }

  struct Block {
    std::unique_ptr<char[]> data;
    double bytes = 0;
  };
  struct Saved {
    std::vector<Block> blocks;
  };

  Shared& shared_;
  int32_t index_;
  CpuKernels kernels_;
  MemoryLedger ledger_;
  std::unique_ptr<char[]> static_block_;
  size_t adam_count_ = 0;
  double compute_wall_ = 0, compute_cpu_ = 0;  // Timed compute actions: wall and CPU seconds.
  std::map<std::pair<int32_t, int32_t>, Saved> saved_;
  std::vector<char> receive_;
  std::vector<float> collective_in_, collective_out_;
};

}  // namespace

ExecutorResult run_step_on_cpu(const ExecutorProgram& program, const ExecutorOptions& options) {
  Shared shared(program, options);
  const int64_t iterations = options.iterations;
  ExecutorResult& result = shared.result;
  result.start.assign(iterations, std::vector<double>(program.tasks, 0.0));
  result.end = result.start;
  result.measured.assign(program.tasks, 0);
  result.executed.resize(program.workers);
  // The senders' tensors, filled once (the transfer copies them every iteration).
  for (const auto& list : program.instructions) {
    for (const ExecInstruction& in : list) {
      if (in.kind == ExecKind::kSend) shared.payload[in.transfer].assign(size_t(in.bytes), 1);
    }
  }
  for (const ExecCollective& call : program.collectives) {
    if (!shared.communicators.count(call.workers)) {
      shared.communicators.emplace(call.workers, std::make_unique<ThreadCommunicator>(
                                                     int(call.workers.size()), options.timeout));
    }
  }
  std::vector<std::unique_ptr<Worker>> workers;
  for (int32_t w = 0; w < program.workers; ++w) {
    workers.push_back(std::make_unique<Worker>(shared, w));
  }
  const int64_t total = options.warmup_iterations + iterations;
  if (options.fold) {
    // One thread, the workers one after another; each task keeps its own interval.
    for (int64_t i = 0; i < total; ++i) {
      shared.origin = Clock::now();
      for (auto& worker : workers) worker->run(i >= options.warmup_iterations, i - options.warmup_iterations);
    }
    result.device = fmt::format("1 CPU thread, {} workers folded ({})", program.workers, cpu_model_name());
  } else {
    auto next_iteration = [&shared]() noexcept {
      shared.channel.reset();
      shared.origin = Clock::now();
    };
    std::barrier sync(program.workers, next_iteration);
    std::mutex error_mutex;
    std::exception_ptr error;
    std::vector<std::thread> threads;
    for (int32_t w = 0; w < program.workers; ++w) {
      threads.emplace_back([&, w] {
        try {
          for (int64_t i = 0; i < total; ++i) {
            sync.arrive_and_wait();
            workers[w]->run(i >= options.warmup_iterations, i - options.warmup_iterations);
          }
        } catch (const std::exception& e) {
          {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (!error) error = std::current_exception();
          }
          shared.abort_all(fmt::format("worker {} failed: {}", w, e.what()));
          sync.arrive_and_drop();  // The others' barriers must not wait for this worker.
        }
      });
    }
    for (std::thread& t : threads) t.join();
    if (error) std::rethrow_exception(error);
    result.device = fmt::format("{} CPU threads ({})", program.workers, cpu_model_name());
  }
  for (int64_t i = 0; i < iterations; ++i) {
    double makespan = 0;
    for (int32_t t = 0; t < program.tasks; ++t) {
      if (result.measured[t]) makespan = std::max(makespan, result.end[i][t]);
    }
    result.makespan.push_back(makespan);
  }
  double wall = 0, cpu = 0;
  for (auto& worker : workers) {
    result.peak_bytes.push_back(worker->peak());
    wall += worker->compute_wall();
    cpu += worker->compute_cpu();
  }
  result.compute_cpu_share = wall > 0 ? std::min(1.0, cpu / wall) : 0;
  return result;
}

}  // namespace ppsim
