#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   nemotron-3-nano-30b-a3b (52 layers, hidden 2688, 32 heads, 2 kv heads, 128 experts top-6; hybrid: 23 Mamba, 6 attention, 0 MLP, 23 MoE layers)
#   cluster: dgx-h100:2 (2 nodes x 8 H100-SXM-80GB)
#   plan:    tp=1,pp=2,dp=8,ep=8,mbs=1,gbs=256,schedule=interleaved-1f1b,vpp=2,zero_stage=1,precision=fp8
#   step:    32 microbatches of 1 x 8192 tokens per replica, 16 GPUs
# Run it from the root of a Megatron-LM checkout on each of the 2 nodes, with NODE_RANK set to the
# node's index (0..1) and MASTER_ADDR to node 0's address. Flags as megatron/training/arguments.py
# (NVIDIA/Megatron-LM) defines them.

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=2
NODE_RANK=${NODE_RANK:?set NODE_RANK to the index of this node, 0..1}
MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}
MASTER_PORT=${MASTER_PORT:-29500}

DISTRIBUTED_ARGS=(
  --nproc_per_node "$GPUS_PER_NODE"
  --nnodes "$NUM_NODES"
  --node_rank "$NODE_RANK"
  --master_addr "$MASTER_ADDR"
  --master_port "$MASTER_PORT"
)

# Model shape (nemotron-3-nano-30b-a3b).
MODEL_ARGS=(
  --num-layers 52
  --hidden-size 2688
  --ffn-hidden-size 1856
  --num-attention-heads 32
  --hybrid-layer-pattern "MEMEM*EMEMEM*|EMEMEM*EMEMEM|*EMEMEM*EMEME|MEM*EMEMEMEME"
  --mamba-num-heads 64
  --mamba-head-dim 64
  --mamba-state-dim 128
  --mamba-num-groups 8
  --group-query-attention
  --num-query-groups 2
  --kv-channels 128
  --seq-length 8192
  --max-position-embeddings 8192
  --position-embedding-type none
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --squared-relu
  --normalization RMSNorm
  --untie-embeddings-and-output-weights
  --disable-bias-linear
  --num-experts 128
  --moe-router-topk 6
  --moe-ffn-hidden-size 1856
  --moe-shared-expert-intermediate-size 3712
  --moe-grouped-gemm
  --moe-router-load-balancing-type aux_loss
  --moe-aux-loss-coeff 1e-2
)

# Parallelism: tp 1 x pp 2 x cp 1 x dp 8 = 16 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 2
  --context-parallel-size 1
  --expert-model-parallel-size 8
  --moe-token-dispatcher-type alltoall
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 256
  --bf16
  --fp8-format hybrid
  --fp8-recipe delayed
  --fp8-amax-history-len 1024
  --fp8-amax-compute-algo max
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
)

# Not part of the plan: mock data and a short run; replace for real training.
RUN_ARGS=(
  --mock-data
  --tokenizer-type NullTokenizer
  --vocab-size 131072
  --train-iters "${TRAIN_ITERS:-100}"
  --lr 1.0e-4
  --log-throughput
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_hybrid.py \
  "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${RUN_ARGS[@]}"
