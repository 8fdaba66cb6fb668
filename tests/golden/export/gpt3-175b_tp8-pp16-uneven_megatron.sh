#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   gpt3-175b (96 layers, hidden 12288, 96 heads)
#   cluster: dgx-a100:16 (16 nodes x 8 A100-SXM-80GB)
#   plan:    tp=8,pp=16,dp=1,mbs=1,gbs=1536,schedule=1f1b,recompute=full,precision=fp16,stage_layers=5:6:6:6:6:6:6:6:6:6:6:6:6:6:6:7
#   step:    1536 microbatches of 1 x 2048 tokens per replica, 128 GPUs
# Run it from the root of a Megatron-LM checkout on each of the 16 nodes, with NODE_RANK set to the
# node's index (0..15) and MASTER_ADDR to node 0's address. Flags as megatron/training/arguments.py
# (NVIDIA/Megatron-LM) defines them.

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=16
NODE_RANK=${NODE_RANK:?set NODE_RANK to the index of this node, 0..15}
MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}
MASTER_PORT=${MASTER_PORT:-29500}

DISTRIBUTED_ARGS=(
  --nproc_per_node "$GPUS_PER_NODE"
  --nnodes "$NUM_NODES"
  --node_rank "$NODE_RANK"
  --master_addr "$MASTER_ADDR"
  --master_port "$MASTER_PORT"
)

# Model shape (gpt3-175b).
MODEL_ARGS=(
  --num-layers 96
  --hidden-size 12288
  --ffn-hidden-size 49152
  --num-attention-heads 96
  --seq-length 2048
  --max-position-embeddings 2048
  --position-embedding-type learned_absolute
  --attention-dropout 0.0
  --hidden-dropout 0.0
  --normalization LayerNorm
)

# Parallelism: tp 8 x pp 16 x cp 1 x dp 1 = 128 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 8
  --pipeline-model-parallel-size 16
  --context-parallel-size 1
  --decoder-first-pipeline-num-layers 5
  --decoder-last-pipeline-num-layers 7
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 1536
  --recompute-granularity full
  --recompute-method uniform
  --recompute-num-layers 1
  --fp16
)

# Not part of the plan: mock data and a short run; replace for real training.
RUN_ARGS=(
  --mock-data
  --tokenizer-type NullTokenizer
  --vocab-size 50257
  --train-iters "${TRAIN_ITERS:-100}"
  --lr 1.0e-4
  --log-throughput
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
  "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${RUN_ARGS[@]}"
