#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   llama3-8b (32 layers, hidden 4096, 32 heads, 8 kv heads)
#   cluster: dgx-h100-1 (1 node x 8 H100-SXM-80GB)
#   plan:    tp=1,pp=1,dp=8,mbs=1,gbs=64,schedule=1f1b,zero_stage=3,offload=0.5
#   step:    8 microbatches of 1 x 8192 tokens per replica, 8 GPUs
# Run it from the root of a Megatron-LM checkout. Flags as megatron/training/arguments.py
# (NVIDIA/Megatron-LM) defines them.

set -euo pipefail

# Megatron-FSDP (ZeRO-2/3) asserts CUDA_DEVICE_MAX_CONNECTIONS != 1 (arguments.py).
unset CUDA_DEVICE_MAX_CONNECTIONS

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
  --use-distributed-optimizer
  --use-megatron-fsdp
  --data-parallel-sharding-strategy optim_grads_params
  --ckpt-format fsdp_dtensor
  --optimizer-cpu-offload
  --optimizer-offload-fraction 0.5
  --use-precision-aware-optimizer
  --overlap-cpu-optimizer-d2h-h2d
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
