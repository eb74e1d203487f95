# vramdoc diagnose: a PyTorch CUDA out-of-memory message explained.
diag-title = Diagnosis of a CUDA out-of-memory error
diag-heading-message = What the message says (the format PyTorch { $versions } prints)
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
diag-frag-cause = { $unalloc } were reserved by PyTorch but unallocated; with the { $free } free they would have held the { $size }: the cache was fragmented.
diag-frag-large = { $unalloc } are reserved by PyTorch but unallocated, a fragmented cache. No setting makes the allocation itself smaller.
diag-frag-none = Only { $unalloc } are reserved but unallocated: fragmentation is not the cause; the memory is really in use.
diag-heading-estimate = This scenario on this card
diag-gpu-from-message = The card is the one the message describes ({ $capacity }); no catalog card matches it, so no option proposes bf16.
diag-estimate = The estimator puts the peak allocated by PyTorch at { $peak } and the process at { $range }.
diag-missing = No scenario given, so the message alone says what is above. These keys would name the tensor and rank the options: { $keys } (--config FILE or --set KEY=VALUE).
diag-phase-training_step = a training micro-step (forward or backward)
diag-col-figure = Figure in the message
diag-col-size = Size
diag-gpu-candidates = The card has the capacity the message prints ({ $capacity }), as { $cards } do; name yours with --gpu ID.
diag-heading-message-mps = What the message says (Apple MPS, PyTorch { $versions })
diag-not-printed = not printed
diag-private-pools = Of which in private pools (CUDA graphs)
diag-process-more = { $count } more processes listed
diag-mps-allocated = Allocated by PyTorch's MPS allocator
diag-mps-other = Other allocations of this process (Metal)
diag-mps-limit = Max allowed (the high-watermark limit on the shared memory)
diag-mps-explain = Apple GPUs share the Mac's memory: there is no card to outgrow, only the limit PyTorch puts on its share of the RAM. With the request, { $used } were wanted of { $limit } allowed. PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 lifts the limit at the risk of the whole system running out of memory; a smaller batch or block is the safe change.
diag-frag-mps = The MPS message prints no cache figures: fragmentation cannot be judged from it.
diag-heading-checks = Checks of the numbers
diag-check-all-zero = Every figure of the message is zero: no allocator prints that, so the text was edited or cut. Nothing is concluded from its numbers.
diag-check-free-above-capacity = Free ({ $a }) is more than the card's capacity ({ $b }): impossible. No conclusion about other programs or fragmentation is drawn.
diag-check-allocated-above-reserved = Allocated ({ $a }) is more than PyTorch reserved in total ({ $b }): impossible, since tensors live inside the reserved memory. No conclusion about fragmentation or other programs is drawn.
diag-check-reserved-above-process = PyTorch's cache ({ $a }) is larger than everything this process holds ({ $b }): impossible. No conclusion about other programs or this process's CUDA context is drawn.
diag-check-in-use-above-capacity = Free memory plus what the processes hold ({ $a }) is more than the card ({ $b }): impossible. Other programs are not computed from these numbers.
diag-check-process-above-capacity = Process { $pid } holds { $a }, more than the whole card ({ $b }): impossible. Other programs are not computed from these numbers.
diag-check-request-above-capacity = This one allocation ({ $a }) is larger than the whole card ({ $b }): no allocator setting, cache or other program explains it. That tensor itself must get smaller (a smaller batch or block, or a computation in chunks).
diag-check-several-messages = The text holds { $count } out-of-memory messages; this report reads the last one.
diag-check-scenario = The scenario's estimate ({ $a } with other programs) fits this card ({ $b }), yet the run failed holding { $c }: the scenario cannot be the run. Likely differences: batch_size or block_size, dtype, other programs on the card, or another model (n_layer, n_embd, vocab_size). Pass the run's own config.
diag-cards-none = No catalog card prints { $capacity } (within { $tolerance }, the spread across drivers): the card is taken as printed, and no option proposes bf16, which it may lack.
diag-cards-one = The printed capacity ({ $capacity }) is the { $card }'s.
diag-cards-many = The printed capacity ({ $capacity }) fits several cards: { $cards }. Name yours with --gpu ID.
diag-variant-ecc-on = ECC on
diag-variant-ecc-off = ECC off
diag-variant-windows = Windows
diag-frag-too-big = Not fragmentation: the allocation is larger than the whole card (see above).
diag-frag-unknown = No conclusion about fragmentation: the message's numbers contradict each other (see above).
diag-frag-no-free = { $unalloc } are reserved by PyTorch but unallocated; the message does not print the free memory, so whether they would have held the { $size } is not known.
diag-set-expandable = Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the allocator then grows its segments instead of keeping many.
diag-set-expandable-suggested = Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, as the message itself suggests: the allocator then grows its segments instead of keeping many.
diag-set-max-split = This PyTorch ({ $versions }) has no expandable segments: set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 instead.
diag-set-max-split-suggested = This PyTorch ({ $versions }) has no expandable segments: set PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 instead, as the message itself suggests.
diag-set-on = expandable_segments:True is already set in this log: the allocator has no further setting, so the peak itself must come down.
diag-set-none = This PyTorch ({ $versions }) has no allocator setting against fragmentation (max_split_size_mb arrived in 1.10, expandable_segments in 2.1); a newer PyTorch has them.
diag-other-line = Line { $line }: { $quoted }
diag-other-no-numbers = This error prints none of the allocator's numbers, so no tensor is named. If a "CUDA out of memory. Tried to allocate …" message appears in the same log, pass that one.
diag-other-cuda-error-title = CUDA error: out of memory (not PyTorch's caching allocator)
diag-other-cuda-error-meaning = A CUDA call outside PyTorch's cache could not get memory. Most often it is the creation of the CUDA context at the first CUDA use (model.to(device), torch.cuda.set_device) on a card that another process already fills.
diag-other-cuda-error-check = Check nvidia-smi for other processes on the card (an earlier run still alive, a notebook kernel), CUDA_VISIBLE_DEVICES pointing at a busy card, and several ranks landing on one GPU (call torch.cuda.set_device(local_rank) before any CUDA work). CUDA reports errors late: CUDA_LAUNCH_BLOCKING=1 shows the call that failed.
diag-other-cublas-title = CUBLAS_STATUS_ALLOC_FAILED: cuBLAS could not allocate its workspace
diag-other-cublas-meaning = cuBLAS allocates its handle and workspace at the first matrix multiplication, outside PyTorch's tensors. It failed because the card was full by then, usually with PyTorch's own cache or another process.
diag-other-cublas-check = Check nvidia-smi for other processes; lower the batch so that the cache leaves room; CUBLAS_WORKSPACE_CONFIG=:16:8 asks for a smaller workspace.
diag-other-cudnn-title = cuDNN could not get its workspace
diag-other-cudnn-meaning = cuDNN's algorithms need a workspace beside the tensors; this one could not be allocated, so the card was all but full.
diag-other-cudnn-check = Lower the batch; set torch.backends.cudnn.benchmark = False (benchmarking tries algorithms with large workspaces); check nvidia-smi for other processes.
diag-other-nccl-title = NCCL could not allocate its buffers
diag-other-nccl-meaning = NCCL allocates its communication buffers outside PyTorch's cache when a communicator is created or grows; the card had no room left for them.
diag-other-nccl-check = Check for other processes on the card and for several ranks on one GPU (set the device for each local rank before init_process_group); lower NCCL_BUFFSIZE (4 MiB by default) or the batch to leave room.
diag-cards-settled = The printed capacity ({ $capacity }) is the { $card }'s; within the spread across drivers it could also be { $cards }: name yours with --gpu ID if it is another.
diag-check-reserved-above-capacity = PyTorch reserved { $a }, more than the whole card ({ $b }): impossible for memory on the card (a modified driver or unified memory can print it). No conclusion about other programs or fragmentation is drawn.
