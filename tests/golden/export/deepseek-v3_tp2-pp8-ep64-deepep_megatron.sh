#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   deepseek-v3 (61 layers, hidden 7168, 128 heads, 256 experts top-8)
#   cluster: dgx-h100:128 (128 nodes x 8 H100-SXM-80GB)
#   plan:    tp=2,pp=8,dp=64,ep=64,moe_dispatcher=deepep,mbs=1,gbs=8192,schedule=interleaved-1f1b,vpp=4,recompute=selective,sequence_parallel=true,zero_stage=1,precision=fp8
#   step:    128 microbatches of 1 x 4096 tokens per replica, 1024 GPUs
# Run it from the root of a Megatron-LM checkout on each of the 128 nodes, with NODE_RANK set to the
# node's index (0..127) and MASTER_ADDR to node 0's address. Flags as megatron/training/arguments.py
# (NVIDIA/Megatron-LM) defines them.

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=128
NODE_RANK=${NODE_RANK:?set NODE_RANK to the index of this node, 0..127}
MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}
MASTER_PORT=${MASTER_PORT:-29500}

DISTRIBUTED_ARGS=(
  --nproc_per_node "$GPUS_PER_NODE"
  --nnodes "$NUM_NODES"
  --node_rank "$NODE_RANK"
  --master_addr "$MASTER_ADDR"
  --master_port "$MASTER_PORT"
)

# Model shape (deepseek-v3).
MODEL_ARGS=(
  --num-layers 61
  --hidden-size 7168
  --ffn-hidden-size 18432
  --num-attention-heads 128
  --multi-latent-attention
  --q-lora-rank 1536
  --kv-lora-rank 512
  --qk-head-dim 128
  --qk-pos-emb-head-dim 64
  --v-head-dim 128
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
  --num-experts 256
  --moe-router-topk 8
  --moe-ffn-hidden-size 2048
  --moe-layer-freq "([0]*3+[1]*58)"
  --moe-shared-expert-intermediate-size 2048
  --moe-router-num-groups 8
  --moe-router-group-topk 4
  --moe-grouped-gemm
  --moe-router-load-balancing-type aux_loss
  --moe-aux-loss-coeff 1e-2
  --mtp-num-layers 1
)

# Parallelism: tp 2 x pp 8 x cp 1 x dp 64 = 1024 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 8
  --context-parallel-size 1
  --expert-model-parallel-size 64
  --moe-token-dispatcher-type flex
  --moe-flex-dispatcher-backend deepep
  --sequence-parallel
  --tp-comm-overlap
  --pipeline-model-parallel-layout "Et*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t,m,L"
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 8192
  --recompute-granularity selective
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
  --vocab-size 129280
  --train-iters "${TRAIN_ITERS:-100}"
  --lr 1.0e-4
  --log-throughput
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
  "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "${TRAINING_ARGS[@]}" "${RUN_ARGS[@]}"
