#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   qwen3-30b-a3b-capacity (48 layers, hidden 2048, 32 heads, 4 kv heads, 128 experts top-8)
#   cluster: dgx-h100-4 (4 nodes x 8 H100-SXM-80GB)
#   plan:    tp=2,pp=4,dp=4,ep=8,etp=1,mbs=1,gbs=128,schedule=1f1b,sequence_parallel=true,zero_stage=1
#   step:    32 microbatches of 1 x 4096 tokens per replica, 32 GPUs
# Run it from the root of a Megatron-LM checkout on each of the 4 nodes, with NODE_RANK set to the
# node's index (0..3) and MASTER_ADDR to node 0's address. Flags as megatron/training/arguments.py
# (NVIDIA/Megatron-LM) defines them.

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=4
NODE_RANK=${NODE_RANK:?set NODE_RANK to the index of this node, 0..3}
MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}
MASTER_PORT=${MASTER_PORT:-29500}

DISTRIBUTED_ARGS=(
  --nproc_per_node "$GPUS_PER_NODE"
  --nnodes "$NUM_NODES"
  --node_rank "$NODE_RANK"
  --master_addr "$MASTER_ADDR"
  --master_port "$MASTER_PORT"
)

# Model shape (qwen3-30b-a3b-capacity).
MODEL_ARGS=(
  --num-layers 48
  --hidden-size 2048
  --ffn-hidden-size 6144
  --num-attention-heads 32
  --group-query-attention
  --num-query-groups 4
  --kv-channels 128
  --qk-layernorm
  --seq-length 4096
  --max-position-embeddings 4096
  --position-embedding-type rope
  --rotary-base 10000
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --swiglu
  --normalization RMSNorm
  --untie-embeddings-and-output-weights
  --disable-bias-linear
  --num-experts 128
  --moe-router-topk 8
  --moe-ffn-hidden-size 768
  --moe-grouped-gemm
  --moe-router-load-balancing-type aux_loss
  --moe-aux-loss-coeff 1e-2
  --moe-expert-capacity-factor 1.25
  --moe-pad-expert-input-to-capacity
)

# Parallelism: tp 2 x pp 4 x cp 1 x dp 4 = 32 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 4
  --context-parallel-size 1
  --expert-model-parallel-size 8
  --expert-tensor-parallel-size 1
  --moe-token-dispatcher-type alltoall
  --sequence-parallel
  --tp-comm-overlap
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 128
  --bf16
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
)

# Not part of the plan: mock data and a short run; replace for real training.
RUN_ARGS=(
  --mock-data
  --tokenizer-type NullTokenizer
  --vocab-size 151936
  --train-iters "${TRAIN_ITERS:-100}"
  --lr 1.0e-4
  --log-throughput
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
  "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${RUN_ARGS[@]}"
