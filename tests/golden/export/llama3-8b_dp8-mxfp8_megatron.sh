#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   llama3-8b (32 layers, hidden 4096, 32 heads, 8 kv heads)
#   cluster: dgx-b200:1 (1 node x 8 B200)
#   plan:    tp=1,pp=1,dp=8,mbs=1,gbs=64,schedule=1f1b,zero_stage=1,precision=fp8,fp8_recipe=mxfp8
#   step:    8 microbatches of 1 x 8192 tokens per replica, 8 GPUs
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

# Model shape (llama3-8b).
MODEL_ARGS=(
  --num-layers 32
  --hidden-size 4096
  --ffn-hidden-size 14336
  --num-attention-heads 32
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

# Parallelism: tp 1 x pp 1 x cp 1 x dp 8 = 8 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 1
  --context-parallel-size 1
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 64
  --bf16
  --fp8-format e4m3
  --fp8-recipe mxfp8
  --use-distributed-optimizer
  --overlap-grad-reduce
  --overlap-param-gather
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
