# Labels of `vramdoc estimate --format table|markdown`. Every key exists in en, es and zh.
est-title = GPU memory estimate
est-heading-scenario = Scenario
est-heading-model = Model
est-params-total = Parameters
est-params-total-value = { $total } ({ $non_embedding } without position embeddings, as nanoGPT prints it)
est-params-total-value-model = { $total } ({ $non_embedding } without position embeddings)
est-params-total-value-moe = { $total }, every expert resident ({ $active } run per token)
est-params-groups = Optimizer groups
est-params-groups-value = { $decay } decayed in { $decay_tensors } tensors; { $no_decay } not decayed in { $no_decay_tensors }
est-effective-batch = Effective batch
est-effective-batch-value = { $sequences } sequences = { $tokens } tokens per step
est-ddp = DDP (per GPU)
est-ddp-value = { $world } processes, { $accumulation } micro-steps each per optimizer step; each GPU also holds gradient buckets of { $buckets }
est-resume = Resuming
est-resume-value = loading the checkpoint peaks at { $load }; its weights ({ $retained }) stay referenced by train.py's state_dict for the whole run
est-heading-memory = Memory at the training peak ({ $moment })
est-moment-loss_forward = the loss at the end of the forward
est-moment-loss_backward = cross-entropy backward
est-moment-head_backward = the backward of the output head and final norm
est-moment-mlp_backward = backward of the last block's MLP
est-moment-backward_end = the end of backward
est-moment-optimizer_step = the optimizer step
est-moment-attention_backward = backward of the attention scores
est-moment-block_recompute = recomputing a checkpointed block
est-moment-no_training = no training step: eval_only runs one evaluation and exits
est-col-component = Component
est-col-memory = Memory
est-weights = Weights ({ $dtype })
est-weights-nanochat = Weights (fp32 matrices, bf16 embeddings)
est-gradients = Gradients
est-optimizer = Optimizer state ({ $optimizer })
est-autocast = 16-bit weight copies (autocast)
est-weight-casts-nanochat = 16-bit weight copies (nanochat's Linear)
est-activations = Activations saved for backward
est-logits = Logits and loss (batch × block × vocab)
est-train-peak = Training-step peak
est-eval-peak = Evaluation peak (estimate_loss)
est-peak = Peak allocated by PyTorch ({ $phase })
est-phase-train = training
est-phase-eval = evaluation
est-phase-load = loading the checkpoint
est-overhead = CUDA context, cuBLAS workspace, fragmentation
est-total = Total, as nvidia-smi shows it
est-logits-tensor = One logits tensor { $shape }: { $bytes }
est-verdict-fits = Fits on the { $gpu } ({ $capacity }): the total is { $range } with the overhead at its low and high ends, and even the high end leaves { $spare } to spare.
est-verdict-no-fit = Does not fit on the { $gpu } ({ $capacity }): the total is { $range }, and even the low end is { $missing } short.
est-warn-no-bf16 = The { $gpu } has no bf16: use dtype=float16.
est-verdict-none = No GPU given: add --gpu ID (for example --gpu rtx-4070) for a verdict.
est-heading-options = What to change (least change to training first)
est-col-option = Option
est-col-change = Change
est-col-total = Total
est-col-saving = Saving
est-opt-micro_batch = Smaller micro-batch, same effective batch
est-opt-max_micro_batch = Largest micro-batch that fits, same effective batch
est-opt-eval_batch = Smaller evaluation batch (a patch to estimate_loss)
est-opt-block_size = Shorter context
est-opt-flash = Flash attention
est-opt-grad_checkpoint = Gradient checkpointing (a patch; about { $pct } more compute)
est-opt-dtype = bf16 autocast instead of float32
est-opt-dtype_fp16 = float16 autocast with a GradScaler (this card has no bf16)
est-opt-optimizer = 8-bit AdamW (bitsandbytes)
est-opt-bucket_view = Gradients as views of DDP's buckets (gradient_as_bucket_view=True)
est-opt-sharded_optimizer = Optimizer state split among the GPUs (ZeroRedundancyOptimizer)
est-opt-fsdp = Weights, gradients and optimizer state split among the GPUs (FSDP)
est-opt-n_embd = Narrower model ({ $params } parameters)
est-opt-n_layer = Shallower model ({ $params } parameters)
est-changes-training = changes training
est-no-options = No option applies to this scenario.
est-ignored = Ignored, no effect on memory: { $keys }
est-note = Estimates: the training peak follows an exact replay of nanoGPT's training step; what lies outside PyTorch's allocator (CUDA context, fragmentation, torch.compile's kernels, cuBLAS workspace) is given as a documented range, and the verdict says which part of that range fits.
est-verdict-tight = Tight on the { $gpu } ({ $capacity }): the total is { $range }; the middle estimate fits and the high end does not, so it depends on the driver's CUDA context and on how fragmented the allocator's cache gets.
est-verdict-others = Other programs hold { $other } of the card, counted above.
est-total-range = Total range (context and fragmentation, low–high)
est-other-processes = Held by other programs on the card
est-col-share = Share of peak
est-col-effective-batch = Effective batch
est-batch-tokens = { $sequences } ({ $tokens } tokens)
est-saving-more = none: { $bytes } more
est-needs-code = not a setting nanoGPT's train.py reads, so it needs a code change.
est-needs-patch = a patch to the model's code, not a Trainer or from_pretrained setting.
est-opt-freeze_embeddings = Frozen embeddings (wte, which is also lm_head's weight, and wpe; a one-line patch)
est-opt-lora = LoRA, rank { $rank } on { $targets } (a patch; every pretrained weight frozen)
est-opt-combination = Least invasive combination that fits
est-opt-combination_tight = Least invasive combination that may fit
est-opt-combination_all = All of these together (still does not fit)
est-opt-pure_bf16 = Weights loaded in bfloat16 (dtype=torch.bfloat16) and trained as they are
est-opt-qlora = QLoRA: 4-bit weights with LoRA rank { $rank } on { $targets } (BitsAndBytesConfig and peft; every pretrained weight frozen)
est-opt-fused_cross_entropy = Fused linear cross-entropy, no full logits (Liger Kernel patched in)
est-opt-batch_layout = Padded rows instead of padding-free (SFTConfig(padding_free=False, packing=False)): the same sequences, a mask per row instead of one over the whole flattened batch
est-opt-flash_attention_2 = flash-attn's kernels for the padding-free batch (attn_implementation="flash_attention_2", pip install flash-attn): no mask over the flattened tokens
est-opt-hf-flash = SDPA attention instead of eager (attn_implementation="sdpa")
est-opt-hf-grad_checkpoint = Gradient checkpointing (gradient_checkpointing=True; about { $pct } more compute)
est-opt-hf-dtype = bf16 autocast (bf16=True) instead of float32
est-opt-hf-optimizer = 8-bit AdamW (bitsandbytes; Trainer's optim)
est-opt-hf-optimizer-paged = Paged 8-bit AdamW (bitsandbytes; Trainer's optim; state paged to CPU memory under pressure)
est-opt-hf-dtype_fp16 = fp16 autocast (fp16=True; this card has no bf16)
est-opt-hf-lora = PEFT LoRA, rank { $rank } on { $targets } (every pretrained weight frozen)
est-trainable = Trained
est-trainable-frozen-value = { $trainable } of { $total } parameters: the embeddings are frozen
est-trainable-lora-value = { $trainable } of { $total } parameters: the LoRA adapters only, rank { $rank } on { $targets }

# Four verdicts (issue 23).
est-col-verdict = Verdict
est-verdict-with-range = { $verdict } ({ $range })
est-verdict-unlikely = Likely does not fit on the { $gpu } ({ $capacity }): the total is { $range }; only the low end fits, so it would need a lean CUDA context and an allocator cache that barely fragments.
est-verdict-eager-bound = These are the figures of nanochat's eager step (compile=false): base_train.py and chat_sft.py compile the model with torch.compile, which keeps fewer tensors (leave compile at its default to estimate that), so the compiled run can need less. Try it, and lower --device-batch-size if it runs out of memory.
est-verdict-compiled = The training peak of { $peak } is nanochat's compiled step: what inductor's partition keeps for backward, plus a float32 copy of the softcapped logits that inductor's C++ backend writes in the loss's forward. CUDA's Triton kernels may not keep that copy; without it the peak is { $low }. The verdict uses the higher figure.
est-merged = “{ $label }” is also { $others }: the same change, listed once.
est-quoted = “{ $text }”
est-code-sharding = `sharding`: FSDP around the model, or ZeroRedundancyOptimizer around AdamW (a patch to train.py)
est-code-gradient_as_bucket_view = `gradient_as_bucket_view`: gradient_as_bucket_view=True in train.py's DDP(...) call (a one-argument patch)
est-code-grad_checkpoint = `grad_checkpoint`: each block's forward wrapped in torch.utils.checkpoint (a patch to model.py)
est-code-optimizer = `optimizer`: another optimizer in configure_optimizers (8-bit AdamW: install bitsandbytes and use its AdamW8bit)
est-code-eval_batch_size = `eval_batch_size`: a batch size of its own for estimate_loss() (a patch to train.py)
est-code-pure_bf16 = `pure_bf16`: the weights themselves in bfloat16, model.to(torch.bfloat16) (a patch to train.py)
est-code-weights_dtype = `weights_dtype`: from_pretrained(..., dtype=torch.bfloat16) or another dtype; left out, transformers 5 loads dtype="auto", the config.json's own dtype
est-code-flash = `flash`: PyTorch 2.0 or later, whose scaled_dot_product_attention nanoGPT then uses by itself
est-code-attn_implementation = `attn_implementation`: from_pretrained(..., attn_implementation="sdpa") (transformers' default), "eager", or "flash_attention_2" after pip install flash-attn
est-code-batch_layout = `batch_layout`: how the collator builds the batch: full rows (pre-chunked text, or TRL's SFTConfig(packing=True, packing_strategy="wrapped")), padded rows (TRL's default packing=False, DataCollatorWithPadding) or padding-free rows (SFTConfig(padding_free=True), or packing=True with its default "bfd")
est-code-freeze_embeddings = `freeze_embeddings`: requires_grad = False on wte and wpe (a one-line patch to train.py)
est-code-lora = `lora_rank`, `lora_targets`: LoRA adapters on those layers with the base weights frozen, for example with peft
est-code-bnb = `load_in_4bit`, `bnb_4bit_*`, `load_in_8bit`: from_pretrained(..., quantization_config=BitsAndBytesConfig(...)) with bitsandbytes installed; for QLoRA, then peft's prepare_model_for_kbit_training and a LoraConfig
est-code-fused_linear_cross_entropy = `fused_linear_cross_entropy`: pip install liger-kernel (0.8.5), then, after from_pretrained, liger_kernel.transformers._apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=True, rope=False, rms_norm=False, swiglu=False) (or apply_liger_kernel_to_<model_type>(...) before loading); Liger's other kernels, on by default, keep less than the estimate counts

## Sampling with nanoGPT's sample.py
sample-title = GPU memory estimate: sampling with nanoGPT's sample.py
sample-model = Model
sample-model-value = init_from={ $init_from }: { $layers } layers, { $heads } heads, { $width } wide, vocabulary { $vocab }, context { $block }; { $params } parameters
sample-precision = Precision
sample-generation = Generation
sample-generation-value = { $prompt_count ->
    [one] a prompt of 1 token
   *[other] a prompt of at most { $prompt } tokens
}, { $new } new tokens per sample, { $samples } samples, top_k { $top_k }; the longest context is { $context } tokens, recomputed for every new token (no KV cache)
sample-heading-memory = Memory at the peak ({ $moment })
sample-moment-forward = the forward over the longest context
sample-moment-next-token = picking the next token from the logits
sample-weights = Weights (float32, after model.to(device))
sample-checkpoint = Checkpoint kept on the GPU by sample.py
sample-activations = One forward's tensors ({ $context } tokens)
sample-logits = Logits, top-k mask and probabilities
sample-ids = Token ids and positions (int64)
sample-kv-cache = KV cache (none in nanoGPT)
sample-peak = Peak allocated by PyTorch
sample-heading-advice = Worth knowing
sample-advice-checkpoint = sample.py loads the checkpoint with map_location=device and keeps it ({ $bytes }, weights and optimizer state) until it exits; loading it with map_location='cpu' (a one-line patch) frees exactly that.
sample-advice-autocast = Autocast keeps a 16-bit copy of every Linear weight ({ $bytes }) for as long as sampling runs, because the weights still require grad.
sample-note = Estimates: the peak follows an exact replay of nanoGPT's sample.py and generate(); what lies outside PyTorch's allocator (CUDA context, fragmentation, cuBLAS workspace) is given as a documented range, and the verdict says which part of that range fits.
est-model-name = Model
est-model-name-value = { $name } ({ $family }, transformers { $version })
est-model-name-value-plain = { $name } ({ $family })
est-no-options-model = None of the what-ifs vramdoc computes for this model applies here: change --batch_size, --block_size, --dtype or --grad_checkpoint and compare the estimates.
est-note-model = Estimates: the training peak follows a replay of one Trainer step of Hugging Face transformers { $version }'s own code (forward with labels, backward, gradient clipping, fused AdamW, gradients set to None); what lies outside PyTorch's allocator (CUDA context, fragmentation, cuBLAS workspace) is given as a documented range, and the verdict says which part of that range fits.
est-note-trl = Estimates: the training peak follows a replay of one step of TRL { $trl }'s SFTTrainer on Hugging Face transformers { $version }'s own code (TRL's QLoRA preparation, forward with labels under bf16 autocast, compute_loss's metrics, backward, gradient clipping, the optimizer, gradients set to None); what lies outside PyTorch's allocator (CUDA context, fragmentation, cuBLAS workspace) is given as a documented range, and the verdict says which part of that range fits.
est-note-nanochat = Estimates: the training peak follows a replay of nanochat { $commit }'s own base_train.py step (its GPT compiled as the script compiles it, with what inductor's partition saves and its wrapper allocates, or run eagerly with compile=false; its Muon and AdamW optimizer run eagerly; attention through PyTorch's SDPA fallback, not FA3); what lies outside PyTorch's allocator (CUDA context, fragmentation, cuBLAS workspace) is given as a documented range, and the verdict says which part of that range fits.

## Solvers (--solve) for the generate phase
solve-max-context = Longest context whose verdict on { $gpu } is “fits”: { $tokens } tokens ({ $prompt } of prompt + { $new } new).
solve-max-context-none = Nothing fits on { $gpu }: not even a one-token prompt with { $new } new tokens.
solve-limit-block-size = The limit is sample.py’s crop, not the card: generate() crops the context to the last { $block } tokens (block_size), so a longer prompt also runs, costing only its token ids, and the model sees at most { $block } tokens.
solve-limit-positions = The limit is GPT-2’s { $positions } positions, not the card: generate cannot run past them.
solve-limit-rotary = The limit is nanochat’s rotary tables, not the card: they hold { $positions } positions (10 × sequence_len), and the model cannot run past them.
solve-max-batch = Largest batch whose verdict on { $gpu } is “fits”: { $batch } prompts at once.
solve-max-batch-none = Nothing fits on { $gpu }: not even one prompt.
solve-max-context-none-positions = No context fits the model's positions: { $new } new tokens alone pass its { $positions } positions ({ $source }).
solve-limit-rotary-positions = The limit is the model's { $positions } positions ({ $source }), not the card: transformers generates past them with one warning, but the model was never trained on longer sequences, so vramdoc does not count them as fitting (the longest context counted is { $context } tokens: the last new token is never fed back).
solve-memory-bound = On memory alone, { $gpu } would hold { $memory } tokens.
solve-memory-bound-table = Were its position table longer, { $gpu } would hold { $memory } tokens.
solve-positions-bound = The card binds first: the model's own positions would allow { $context } tokens ({ $positions } positions, { $source }).
solve-batch-past-positions = This context passes the model's { $positions } positions ({ $source }): transformers generates past them with one warning, but the model was never trained on such positions.
solve-source-n-positions = n_positions, its learned position table
solve-source-max-position-embeddings = max_position_embeddings in its config
solve-source-yarn = YaRN's factor × original_max_position_embeddings
solve-source-rotary-table = nanochat's rotary table, 10 × sequence_len

## Hugging Face generate with a model
gen-title = GPU memory estimate: Hugging Face generate
gen-title-nanochat = GPU memory estimate: nanochat’s Engine.generate
gen-model = Model
gen-model-value = { $name }: { $params } parameters, weights in { $dtype }
gen-model-value-moe = { $name }: { $params } parameters, every expert resident ({ $active } run per token), weights in { $dtype }
gen-quant = Quantized weights
gen-quant-4bit = the blocks' Linears in 4-bit { $format } (bitsandbytes); the head, embeddings and norms in { $dtype }; from 5 to 1,536 rows a call the GPU picks bitsandbytes' kernel, and vramdoc counts the dequantizing fallback, the larger
gen-quant-4bit-moe = the blocks' Linears in 4-bit { $format } (bitsandbytes); the experts, router, head, embeddings and norms in { $dtype } (transformers converts only nn.Linear modules); from 5 to 1,536 rows a call the GPU picks bitsandbytes' kernel, and vramdoc counts the dequantizing fallback, the larger
gen-quant-int8 = the blocks' Linears in int8 (bitsandbytes LLM.int8()); the head, embeddings and norms in { $dtype }; 64 outlier columns assumed in every call (the data decides; with none, one output fewer)
gen-quant-int8-moe = the blocks' Linears in int8 (bitsandbytes LLM.int8()); the experts, router, head, embeddings and norms in { $dtype } (transformers converts only nn.Linear modules); 64 outlier columns assumed in every call (the data decides; with none, one output fewer)
gen-call = Generation
gen-call-value = { $batch } × { $prompt }-token prompts, { $new } new tokens, { $sequences_count ->
    [one] one sequence
   *[other] { $sequences } sequences
} per prompt, { $cache } KV cache
gen-beams = Beam search
gen-beams-value = { $beams } beams per prompt (num_beams), greedy; computed as transformers' _beam_search runs when no end-of-sequence token stops a beam: no beam finishes early, every step keeps all { $beams } beams and their { $candidates } candidates to max_new_tokens, and the cache is reordered (one layer copied at a time) after each step
gen-call-value-nanochat = one { $prompt }-token prompt prefilled once, { $batch_count ->
    [one] one row
   *[other] { $batch } rows
} sampled from it (num_samples), { $new } new tokens each, nanochat’s KVCache preallocated to { $context } positions
gen-weights = Weights
gen-kv-cache = KV cache at its largest
gen-load-peak = Peak of loading the checkpoint (build_model)
gen-prefill-peak = Peak of the prefill (the whole prompt at once)
gen-decode-peak = Peak of the decoding steps
gen-moment-prefill = the prefill
gen-moment-decode = the decoding steps
gen-moment-load = loading the checkpoint
gen-note = Estimates: the peaks follow a replay of transformers' own generate on fake tensors (prefill and decoding, SDPA, eager); what lies outside PyTorch's allocator (CUDA context, fragmentation, cuBLAS workspace) is given as a documented range, and the verdict says which part of that range fits.
gen-beyond-positions = This context ({ $tokens } tokens) passes the model's { $positions } positions ({ $source }): transformers generates on, with one warning that the call "has exceeded the model's predefined maximum length", and the memory above is for the length asked, but the model was never trained on such positions, so what it writes there is not what it was built for.
gen-note-nanochat = Estimates: the peaks follow a replay of nanochat’s own build_model and Engine.generate on fake tensors (SDPA fallback, eager, sampling with a temperature and no top-k); what lies outside PyTorch’s allocator (CUDA context, fragmentation, cuBLAS workspace) is given as a documented range, and the verdict says which part of that range fits.
gen-heading-options = What to change (least change to the output first)
gen-opt-static-cache = Static cache (preallocated to the full length)
gen-opt-dynamic-cache = Dynamic cache (grows with the sequence)
gen-opt-dtype = Weights in { $dtype }
gen-opt-int8-weights = Linears in 8-bit (bitsandbytes LLM.int8(); outlier columns kept in 16 bits)
gen-opt-int8-cache = KV cache quantized to int8 (HQQ; the last 128 tokens in full precision)
gen-opt-fp8-cache = KV cache in float8 (transformers' fp8 backend; one scale per layer's keys and values)
gen-opt-quantized-cache = KV cache quantized to int4 (optimum-quanto; the last 128 tokens in full precision)
gen-opt-4bit-weights = Linears in 4-bit NF4 (bitsandbytes, double quantization, computing in { $dtype })
gen-opt-autocast = Autocast in { $dtype } (the weights stay float32)
gen-opt-fewer-sequences = Half the returned sequences
gen-opt-smaller-batch = Half the prompts per call
gen-opt-max-batch = Largest batch that fits
gen-opt-fewer-beams = Half the beams
gen-opt-no-beams = No beam search (num_beams=1)
gen-opt-fewer-new-tokens = Half the new tokens
gen-opt-max-context = Prompt cut to the longest context that fits
gen-opt-combination = Least change combined that fits
gen-no-options = No change to offer: the call is already at its smallest settings that vramdoc computes.
gen-options-not-computed = Not computed, so not listed: a quantized or fp8 cache on GPT-2 or beside sliding-window layers (transformers refuses the latter; the generate model does not replay the former).
gen-options-not-computed-beams = Not computed, so not listed: with beam search, a quantized or fp8 cache (beam search is replayed with the dynamic and static caches only).
gen-options-not-computed-nanochat = Not computed, so not listed: float16 (NANOCHAT_DTYPE=float16), FA3’s kernels and a compiled model (the replay runs nanochat’s SDPA fallback, eager).
sample-options-not-computed = Not computed, so not listed: a smaller block_size crop (sample.py crops the context to the model's own block_size; a shorter crop is a code change the sampling estimate does not model).
