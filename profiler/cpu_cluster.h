// The cluster a CPU validation is predicted on: the user's cluster layout (node groups, GPUs per
// node: where each worker sits) with every GPU and link replaced by what a CPU profile
// (`ppsim profile --backend cpu`) measured on this machine, so the simulator predicts the CPU
// executor rather than the datasheet GPU. GEMM, attention and memory-bound times come from the
// profile itself (StepOptions::profile); this fills the figures the step builder reads from
// the cluster:
//   GPU peak FLOP/s    the fp32 GEMM fit's peak (only the roofline fallback reads it);
//   memory bandwidth   the largest "copy" measurement's achieved rate (DRAM: the optimizer's
//                      Adam bytes are charged at it);
//   links              intra-node and NIC: the 2-thread "sendrecv" fit's alpha and beta on the
//                      piece that covers `transfer_bytes` (a pipeline send's tensor).
// The GPU's memory capacity is kept (it only decides "does not fit" marks).
#pragma once

#include "simulator/cost/collective_cost.h"
#include "simulator/cost/profile_table.h"
#include "simulator/spec/cluster_spec.h"

namespace ppsim {

// Throws InputError (naming `profile_source`) when the profile is not a CPU profile or lacks
// the fp32 GEMM, copy or 2-rank sendrecv fits.
ClusterSpec cpu_validation_cluster(const ClusterSpec& cluster, const Profile& profile,
                                   const std::string& profile_source, double transfer_bytes);

// Link efficiencies for that cluster: 1 (the profile measured the achieved rates), and the
// sendrecv fit's alpha as every collective's base latency.
CollectiveEfficiency cpu_collective_efficiency(const Profile& profile, double transfer_bytes);

}  // namespace ppsim
