#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   mixtral-8x7b (32 layers, hidden 4096, 32 heads, 8 kv heads, 8 experts top-2)
#   cluster: dgx-h100-1 (1 node x 8 H100-SXM-80GB)
#   plan:    tp=2,pp=2,dp=2,ep=2,mbs=1,gbs=64,seq=4096,schedule=1f1b,sequence_parallel=true,zero_stage=1,offload_optimizer=true,precision=fp8
#   step:    32 microbatches of 1 x 4096 tokens per replica, 8 GPUs
# Run it from the root of a Megatron-LM checkout. Flags as megatron/training/arguments.py
# (NVIDIA/Megatron-LM) defines them.

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=1
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-29500}

DISTRIBUTED_ARGS=(
  --nproc_per_node "$GPUS_PER_NODE"
  --nnodes "$NUM_NODES"
  --node_rank "$NODE_RANK"
  --master_addr "$MASTER_ADDR"
  --master_port "$MASTER_PORT"
)

# Model shape (mixtral-8x7b).
MODEL_ARGS=(
  --num-layers 32
  --hidden-size 4096
  --ffn-hidden-size 14336
  --num-attention-heads 32
  --group-query-attention
  --num-query-groups 8
  --seq-length 4096
  --max-position-embeddings 32768
  --position-embedding-type rope
  --rotary-base 1e+06
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --swiglu
  --normalization RMSNorm
  --untie-embeddings-and-output-weights
  --disable-bias-linear
  --num-experts 8
  --moe-router-topk 2
  --moe-ffn-hidden-size 14336
  --moe-grouped-gemm
  --moe-router-load-balancing-type aux_loss
  --moe-aux-loss-coeff 1e-2
)

# Parallelism: tp 2 x pp 2 x cp 1 x dp 2 = 8 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 2
  --context-parallel-size 1
  --expert-model-parallel-size 2
  --moe-token-dispatcher-type alltoall
  --sequence-parallel
  --tp-comm-overlap
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 64
  --bf16
  --fp8-format hybrid
  --fp8-recipe delayed
  --fp8-amax-history-len 1024
  --fp8-amax-compute-algo max
  --use-distributed-optimizer
  --optimizer-cpu-offload
  --optimizer-offload-fraction 1
  --use-precision-aware-optimizer
  --overlap-cpu-optimizer-d2h-h2d
  --overlap-grad-reduce
  --overlap-param-gather
)

# Not part of the plan: mock data and a short run; replace for real training.
RUN_ARGS=(
  --mock-data
  --tokenizer-type NullTokenizer
  --vocab-size 32000
  --train-iters "${TRAIN_ITERS:-100}"
  --lr 1.0e-4
  --log-throughput
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
  "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${RUN_ARGS[@]}"
