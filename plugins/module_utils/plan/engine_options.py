# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Long option names of ``vllm serve`` per vLLM release, without dashes (generated; do not edit).

Read from each release's sdist on PyPI by ``scripts/matrix/capture-engine-options.py``
(its docstring says how).  The oldest release is listed in full, each later
one as the names it adds to and removes from the release before it.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

_FIRST = "0.7.3"
_FIRST_OPTIONS = """
    additional-config allow-credentials allowed-headers allowed-local-media-path allowed-methods allowed-origins
    api-key block-size calculate-kv-scales chat-template chat-template-content-format code-revision
    collect-detailed-traces compilation-config config config-format cpu-offload-gb device
    disable-async-output-proc disable-custom-all-reduce disable-fastapi-docs disable-frontend-multiprocessing
    disable-log-requests disable-log-stats disable-logprobs-during-spec-decoding disable-mm-preprocessor-cache
    disable-sliding-window distributed-executor-backend download-dir dtype enable-auto-tool-choice
    enable-chunked-prefill enable-lora enable-lora-bias enable-prefix-caching enable-prompt-adapter
    enable-prompt-tokens-details enable-reasoning enable-request-id-headers enable-sleep-mode enforce-eager
    fully-sharded-loras generation-config gpu-memory-utilization guided-decoding-backend hf-overrides host
    ignore-patterns kv-cache-dtype kv-transfer-config limit-mm-per-prompt load-format logits-processor-pattern
    long-lora-scaling-factors long-prefill-token-threshold lora-dtype lora-extra-vocab-size lora-modules
    max-cpu-loras max-log-len max-logprobs max-long-partial-prefills max-lora-rank max-loras max-model-len
    max-num-batched-tokens max-num-partial-prefills max-num-seqs max-parallel-loading-workers
    max-prompt-adapter-token max-prompt-adapters max-seq-len-to-capture middleware mm-processor-kwargs model
    model-impl model-loader-extra-config multi-step-stream-outputs ngram-prompt-lookup-max ngram-prompt-lookup-min
    num-gpu-blocks-override num-lookahead-slots num-scheduler-steps num-speculative-tokens otlp-traces-endpoint
    override-generation-config override-neuron-config override-pooler-config pipeline-parallel-size port
    preemption-mode prompt-adapters qlora-adapter-name-or-path quantization ray-workers-use-nsight
    reasoning-parser response-role return-tokens-as-token-ids revision root-path rope-scaling rope-theta
    scheduler-cls scheduler-delay-factor scheduling-policy seed served-model-name skip-tokenizer-init
    spec-decoding-acceptance-method speculative-disable-by-batch-size speculative-disable-mqa-scorer
    speculative-draft-tensor-parallel-size speculative-max-model-len speculative-model
    speculative-model-quantization ssl-ca-certs ssl-cert-reqs ssl-certfile ssl-keyfile swap-space task
    tensor-parallel-size tokenizer tokenizer-mode tokenizer-pool-extra-config tokenizer-pool-size
    tokenizer-pool-type tokenizer-revision tool-call-parser tool-parser-plugin trust-remote-code
    typical-acceptance-sampler-posterior-alpha typical-acceptance-sampler-posterior-threshold use-v2-block-manager
    uvicorn-log-level worker-cls
"""

# version: (added, removed)
_CHANGES = [
    ("0.9.1", """
        api-server-count cuda-graph-sizes data-parallel-address data-parallel-backend data-parallel-rpc-port
        data-parallel-size data-parallel-size-local data-parallel-start-rank disable-cascade-attn
        disable-chunked-mm-input disable-hybrid-kv-cache-manager disable-uvicorn-access-log enable-expert-parallel
        enable-multimodal-encoder-data-parallel enable-prompt-embeds enable-server-load-tracking enable-ssl-refresh
        guided-decoding-disable-additional-properties guided-decoding-disable-any-whitespace
        guided-decoding-disable-fallback headless hf-config-path hf-token kv-events-config log-config-file
        prefix-caching-hash-algo pt-load-map-location show-hidden-metrics-for-version speculative-config
        use-tqdm-on-load worker-extension-cls
    """, """
        disable-logprobs-during-spec-decoding ngram-prompt-lookup-max ngram-prompt-lookup-min num-speculative-tokens
        spec-decoding-acceptance-method speculative-disable-by-batch-size speculative-disable-mqa-scorer
        speculative-draft-tensor-parallel-size speculative-max-model-len speculative-model
        speculative-model-quantization typical-acceptance-sampler-posterior-alpha
        typical-acceptance-sampler-posterior-threshold
    """),
    ("0.11.0", """
        allowed-media-domains async-scheduling convert data-parallel-hybrid-lb data-parallel-rank
        dbo-decode-token-threshold dbo-prefill-token-threshold decode-context-parallel-size default-mm-loras
        enable-dbo enable-eplb enable-force-include-usage enable-log-outputs enable-log-requests
        enable-tokenizer-info-endpoint eplb-config eplb-log-balancedness eplb-step-interval eplb-window-size
        exclude-tools-when-tool-choice-none expert-placement-strategy h11-max-header-count
        h11-max-incomplete-event-size interleave-mm-strings io-processor-plugin kv-cache-memory-bytes
        kv-sharing-fast-prefill log-error-stack logits-processors logprobs-mode mamba-cache-dtype
        mamba-ssm-cache-dtype media-io-kwargs mm-encoder-tp-mode mm-processor-cache-gb mm-processor-cache-type
        mm-shm-cache-max-object-size-mb num-redundant-experts override-attention-dtype pooler-config runner
        safetensors-load-strategy skip-mm-profiling structured-outputs-config tool-server trust-request-chat-template
        uds video-pruning-rate
    """, """
        device disable-async-output-proc enable-prompt-adapter enable-reasoning guided-decoding-backend
        guided-decoding-disable-additional-properties guided-decoding-disable-any-whitespace
        guided-decoding-disable-fallback long-lora-scaling-factors max-prompt-adapter-token max-prompt-adapters
        max-seq-len-to-capture multi-step-stream-outputs num-scheduler-steps override-neuron-config preemption-mode
        prompt-adapters qlora-adapter-name-or-path scheduler-delay-factor tokenizer-pool-extra-config
        tokenizer-pool-size tokenizer-pool-type use-v2-block-manager
    """),
    ("0.13.0", """
        aggregate-engine-logging all2all-backend attention-backend attention-config cp-kv-cache-interleave-size
        cudagraph-capture-sizes cudagraph-metrics data-parallel-external-lb dcp-kv-cache-interleave-size
        disable-nccl-for-dp-synchronization ec-transfer-config enable-layerwise-nvtx-tracing enable-mm-embeds
        kv-cache-metrics kv-cache-metrics-sample kv-offloading-backend kv-offloading-size mamba-block-size master-addr
        master-port max-cudagraph-capture-size mm-encoder-attn-backend nnodes node-rank optimization-level
        prefill-context-parallel-size profiler-config reasoning-parser-plugin stream-interval tokens-only
    """, """
        cuda-graph-sizes disable-mm-preprocessor-cache enable-lora-bias enable-multimodal-encoder-data-parallel
        eplb-log-balancedness eplb-step-interval eplb-window-size lora-extra-vocab-size num-lookahead-slots
        num-redundant-experts override-pooler-config rope-scaling rope-theta task
    """),
    ("0.18.0", """
        allow-deprecated-quantization cpu-offload-params dcp-comm-backend default-chat-template-kwargs
        disable-access-log-for-endpoints distributed-timeout-seconds enable-elastic-ep enable-ep-weight-filter
        enable-flashinfer-autotune enable-log-deltas enable-logging-iteration-details enable-mfu-metrics
        enable-offline-docs enable-return-routed-experts enable-tower-connector-lora fail-on-environ-validation
        gdn-prefill-backend grpc kernel-config language-model-only mamba-cache-mode mm-encoder-only moe-backend
        offload-backend offload-group-size offload-num-in-group offload-params offload-prefetch-step performance-mode
        shutdown-timeout specialize-active-lora ssl-ciphers ubatch-size weight-transfer-config
    """, """
        disable-log-requests logits-processor-pattern swap-space
    """),
    ("0.19.1", """
        kv-cache-dtype-skip-layers lora-target-modules mm-tensor-ipc reasoning-config renderer-num-workers
        scheduler-reserve-full-isl
    """, """
        disable-frontend-multiprocessing
    """),
    ("0.22.0", """
        cpu-distributed-timeout-seconds data-parallel-multi-port-external-lb data-parallel-supervisor-port
        dp-supervisor-probe-failure-threshold dp-supervisor-probe-interval-s dp-supervisor-probe-timeout-s
        enable-cumem-allocator enable-flash-late-interaction enable-mamba-cache-stochastic-rounding
        enable-mixed-moe-lora-format fingerprint-mode fingerprint-value ir-op-priority linear-backend mamba-backend
        mamba-cache-philox-rounds mm-encoder-attn-dtype mm-encoder-fp8-scale-path mm-encoder-fp8-scale-save-margin
        mm-encoder-fp8-scale-save-path numa-bind numa-bind-cpus numa-bind-nodes quantization-config
        safetensors-prefetch-block-size safetensors-prefetch-num-threads spec-method spec-model spec-tokens
        use-fp64-gumbel
    """, """
    """),
    ("0.23.0", """
    """, """
    """),
    ("0.26.0", """
        device-ids diffusion-config enable-bf16x3-router-gemm enable-moe-shared-loras enable-per-request-metrics
        jit-monitor-mode jit-monitor-verbose max-num-scheduled-tokens mm-ipc-gpu-memory-gb model-class-overrides
        prefill-schedule-interval prefix-match-unit watermark
    """, """
    """),
    ("0.28.0", """
        cohere-format cohere-is-reasoning-model ec-manager-config enable-fault-tolerance fault-tolerance-config
        kda-prefill-backend mamba-ssu-algorithm mm-device-do-normalize mm-hasher-algorithm mm-processor-device
        replayssm-buffer-len return-sampling-mask use-replayssm video-pruning-method
    """, """
        calculate-kv-scales max-long-partial-prefills max-num-partial-prefills override-attention-dtype
    """),
    ("0.30.0", """
        dcp-q-replicate dp-sync-interval elastic-ep-max-dp-size enable-batch-sharded-sampling
        enable-mamba-fine-grained-prefix-cache enable-nccl-comm-suspend enable-scale-out enable-trace-replay
        engram-config kda-decode-backend max-num-queued-reqs max-num-queued-tokens per-request-spec-decode-metrics
        prefix-cache-retention-interval sparse-indexer-topk-backend sse-keep-alive-interval watermark-config
    """, """
        enable-bf16x3-router-gemm
    """),
    ("0.31.0", """
        anthropic-disabled-thinking-effort aux-output-config device-memory-utilization
        enable-mamba-shared-prefix-checkpoint log-level logging-config long-prefill-token-threshold-adaptive
        max-lora-cls-labels max-num-active-seqs sleep-preserve-parameter-names swa-bounded-replay tool-strict-level
        trust-request-mm-kwargs
    """, """
        enable-mamba-fine-grained-prefix-cache
    """),
    ("0.32.0", """
        custom-histogram-buckets enable-hc-sp enable-shm-tensor-arena grpc-port sleep-mode-offload-cudagraph
    """, """
    """),
    ("0.33.0", """
        monokernel reasoning-effort-map sleep-mode-backend watchdog-config
    """, """
    """),
]


def _releases():
    current = frozenset(_FIRST_OPTIONS.split())
    releases = {_FIRST: current}
    for version, added, removed in _CHANGES:
        current = (current | frozenset(added.split())) - frozenset(removed.split())
        releases[version] = current
    return releases


OPTIONS_BY_RELEASE = _releases()
