#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   llama3-70b (80 layers, hidden 8192, 64 heads, 8 kv heads)
#   cluster: dgx-h100-4 (4 nodes x 8 H100-SXM-80GB)
#   plan:    tp=8,pp=4,dp=1,mbs=1,gbs=64,schedule=interleaved-1f1b,vpp=2,recompute=selective,sequence_parallel=true,zero_stage=1
#   step:    64 microbatches of 1 x 8192 tokens per replica, 32 GPUs
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

# Model shape (llama3-70b).
MODEL_ARGS=(
  --num-layers 80
  --hidden-size 8192
  --ffn-hidden-size 28672
  --num-attention-heads 64
  --group-query-attention
  --num-query-groups 8
  --seq-length 8192
  --max-position-embeddings 8192
  --position-embedding-type rope
  --rotary-base 500000
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --swiglu
  --normalization RMSNorm
  --untie-embeddings-and-output-weights
  --disable-bias-linear
)

# Parallelism: tp 8 x pp 4 x cp 1 x dp 1 = 32 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 8
  --pipeline-model-parallel-size 4
  --context-parallel-size 1
  --sequence-parallel
  --tp-comm-overlap
  --num-layers-per-virtual-pipeline-stage 10
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 64
  --recompute-granularity selective
  --bf16
  --use-distributed-optimizer
)

# Not part of the plan: mock data and a short run; replace for real training.
RUN_ARGS=(
  --mock-data
  --tokenizer-type NullTokenizer
  --vocab-size 128256
  --train-iters "${TRAIN_ITERS:-100}"
  --lr 1.0e-4
  --log-throughput
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
  "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${RUN_ARGS[@]}"
