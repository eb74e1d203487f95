# vramdoc diagnose: a PyTorch CUDA out-of-memory message explained.
diag-title = Diagnosis of a CUDA out-of-memory error
diag-heading-message = What the message says (PyTorch { $version } format)
diag-requested = Failed allocation
diag-capacity = GPU { $gpu } total capacity
diag-free = Free when it failed
diag-process = In use by this process (PyTorch's and not)
diag-allocated = Allocated by PyTorch (tensors)
diag-reserved-unallocated = Reserved by PyTorch but unallocated
diag-reserved = Reserved by PyTorch in total
diag-process-line = Process { $pid }
diag-other = Held by other programs (capacity − free − this process)
diag-non-pytorch = This process outside PyTorch's cache (CUDA context, libraries)
diag-outside = Outside PyTorch's cache: this process's CUDA context plus other programs (capacity − free − reserved)
diag-heading-tensor = The failed allocation
diag-tensor = The { $size } are { $tensor }: a { $shape } { $dtype } tensor of { $bytes }.
diag-tensor-none = No large tensor of this scenario takes { $size }; the nearest is { $tensor } ({ $shape }, { $bytes }). Check batch_size, block_size, vocab_size and dtype against the run.
diag-t-logits = the logits of a training micro-step (batch × block × vocab)
diag-t-logits_fp32 = the float32 copy of a training micro-step's logits (nll_loss runs in float32 under autocast, and its backward writes a gradient of the same size)
diag-t-eval_logits = the evaluation logits (estimate_loss, batch × block × vocab)
diag-t-eval_logits_fp32 = the float32 copy of the evaluation logits (nll_loss runs in float32 under autocast)
diag-t-wte_grad = the gradient of the token embedding (tied to lm_head)
diag-t-wte_moment = an AdamW moment of the token embedding, created at the first optimizer step
diag-t-attention_scores_fp32 = one layer's attention scores in float32 (no flash attention)
diag-t-attention_scores = one layer's attention scores in 16 bits (no flash attention)
diag-t-eval_attention_scores_fp32 = one layer's evaluation attention scores in float32 (no flash attention)
diag-t-mlp_hidden = one block's MLP hidden layer
diag-t-qkv = one block's query, key and value projection
diag-t-residual = one block's residual stream (float32)
diag-phase = Phase: { $phase } ({ $source }).
diag-phase-evaluation = evaluation, in estimate_loss()
diag-phase-forward = the forward pass of a training micro-step
diag-phase-backward = the backward pass of a training micro-step
diag-phase-optimizer_step = the optimizer step
diag-source-traceback = from the traceback
diag-source-memory = what PyTorch held plus the failed allocation is closest to the estimator's peak for this phase
diag-source-tensor = the only phase that allocates this tensor
diag-phase-unknown = Phase: not decided from the message alone; paste the whole traceback to name it.
diag-first-step = This is the evaluation at iteration 0: nanoGPT evaluates before the first training step, so no gradients or optimizer state exist yet, and the evaluation alone is too large.
diag-heading-fragmentation = Fragmentation
diag-frag-cause = { $unalloc } were reserved by PyTorch but unallocated; with the { $free } free they would have held the { $size }: the cache was fragmented. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
diag-frag-large = { $unalloc } are reserved by PyTorch but unallocated, a fragmented cache: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets the allocator grow its segments instead of keeping many. It does not make the allocation smaller.
diag-frag-none = Only { $unalloc } are reserved but unallocated: fragmentation is not the cause; the memory is really in use.
diag-heading-estimate = This scenario on this card
diag-gpu-from-message = The card is the one the message describes ({ $capacity }).
diag-estimate = The estimator puts the peak allocated by PyTorch at { $peak } and the process at { $range }.
diag-missing = No scenario given, so the message alone says what is above. These keys would name the tensor and rank the options: { $keys } (--config FILE or --set KEY=VALUE).
diag-phase-training_step = a training micro-step (forward or backward)
diag-col-figure = Figure in the message
diag-col-size = Size
diag-frag-v1 = This message comes from PyTorch 1, whose allocator has no expandable segments: set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 there instead, as the message itself suggests.
diag-gpu-candidates = The card has the capacity the message prints ({ $capacity }), as { $cards } do; name yours with --gpu ID.
