#!/bin/bash
# Megatron-LM launch script written by `ppsim export --format megatron`.
#   model:   tiny-mla-moe (61 layers, hidden 1024, 16 heads, 64 experts top-8)
#   cluster: dgx-h100:8 (8 nodes x 8 H100-SXM-80GB)
#   plan:    tp=1,pp=8,dp=8,ep=8,etp=1,moe_a2a_overlap=true,mbs=1,gbs=256,schedule=interleaved-1f1b,vpp=4,recompute=selective,zero_stage=1,first_stage_layers=5,last_stage_layers=8
#   step:    32 microbatches of 1 x 4096 tokens per replica, 64 GPUs
# Run it from the root of a Megatron-LM checkout on each of the 8 nodes, with NODE_RANK set to the
# node's index (0..7) and MASTER_ADDR to node 0's address. Flags as megatron/training/arguments.py
# (NVIDIA/Megatron-LM) defines them.

set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=8
NODE_RANK=${NODE_RANK:?set NODE_RANK to the index of this node, 0..7}
MASTER_ADDR=${MASTER_ADDR:?set MASTER_ADDR to the address of node 0}
MASTER_PORT=${MASTER_PORT:-29500}

DISTRIBUTED_ARGS=(
  --nproc_per_node "$GPUS_PER_NODE"
  --nnodes "$NUM_NODES"
  --node_rank "$NODE_RANK"
  --master_addr "$MASTER_ADDR"
  --master_port "$MASTER_PORT"
)

# Model shape (tiny-mla-moe).
MODEL_ARGS=(
  --num-layers 61
  --hidden-size 1024
  --ffn-hidden-size 2816
  --num-attention-heads 16
  --multi-latent-attention
  --q-lora-rank 384
  --kv-lora-rank 128
  --qk-head-dim 64
  --qk-pos-emb-head-dim 32
  --v-head-dim 64
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
  --num-experts 64
  --moe-router-topk 8
  --moe-ffn-hidden-size 256
  --moe-layer-freq "([0]*3+[1]*58)"
  --moe-shared-expert-intermediate-size 256
  --moe-grouped-gemm
  --moe-router-load-balancing-type aux_loss
  --moe-aux-loss-coeff 1e-2
  --mtp-num-layers 1
)

# Parallelism: tp 1 x pp 8 x cp 1 x dp 8 = 64 GPUs; Megatron derives dp from the world size.
PARALLEL_ARGS=(
  --tensor-model-parallel-size 1
  --pipeline-model-parallel-size 8
  --context-parallel-size 1
  --expert-model-parallel-size 8
  --expert-tensor-parallel-size 1
  --moe-token-dispatcher-type alltoall
  --pipeline-model-parallel-layout "Et*2|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t|t*2|t*2|t*2|t*2|t*2|t*2|t*2|t|t*2|t*2|t*2|t*2|t*2|t*2|t*2,m,L"
  --overlap-moe-expert-parallel-comm
)

# Batch, recompute, precision, optimizer sharding and overlap.
TRAINING_ARGS=(
  --micro-batch-size 1
  --global-batch-size 256
  --recompute-granularity selective
  --bf16
  --use-distributed-optimizer
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
