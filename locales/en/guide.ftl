# Computed tables and charts inside guides.
exact-bytes = { $bytes } bytes
verdict-fits = fits
verdict-no-fit = does not fit
verdict-unknown = no GPU set
component-capacity = { $gpu } capacity
table-param-group = Parameters
table-param-count = Count
table-param-tensors = Tensors
param-total = Total (lm_head tied to wte)
param-non-embedding = Non-embedding (what nanoGPT prints)
param-trainable = Trained (the rest frozen)
param-lora = In LoRA adapters (A and B)
param-decay = Weight-decayed (2-D tensors)
param-no-decay = Not decayed (biases, LayerNorm)
chart-breakdown-title = Where the memory goes
chart-breakdown-alt = Stacked bar of the memory components: { $total } in total, { $peak } at the allocator's peak.
chart-capacity = { $gpu }: { $size }
chart-sweep-title-batch-size = Total memory (as nvidia-smi shows it) against micro-batch size
chart-sweep-title-block-size = Total memory (as nvidia-smi shows it) against block size
chart-x-batch-size = micro-batch (batch_size)
chart-x-block-size = context length (block_size)
chart-y-memory = GiB
chart-series-total = estimated total (nvidia-smi)
chart-max-fit = largest whose high end fits: { $value }
chart-sweep-alt = { $title }, with its low–high range shaded, on linear axes; the largest value that fits is { $value }.
chart-segment = { $name }: { $size }
verdict-tight = tight
chart-series-range = range (context and fragmentation)
chart-capacity-others = { $gpu }: { $free } of { $size } beside other programs

# Four verdicts and their rule, under every table and chart that shows one (issue 23).
verdict-unlikely = likely does not fit
verdict-label = Verdict
verdict-rule = Verdicts compare the total nvidia-smi would show with the memory free for the run: "fits" when even the high end of the total's range fits, "tight" when the middle estimate fits and the high end does not, "likely does not fit" when only the low end fits, "does not fit" when even the low end does not.
verdict-free-all = This assumes the whole { $size } of the { $gpu } is free for the run (no other program on the card).
verdict-free-others = This assumes { $free } free for the run: the { $size } of the { $gpu } less the { $other } other programs hold.
chart-caption-sweep = The line is the middle estimate, its low–high range shaded. The marker is the largest value whose high end fits (verdict "fits"), { $value }, so the line itself crosses the capacity further right.
chart-caption-sweep-none = The line is the middle estimate, its low–high range shaded; no value fits with its high end, so nothing is marked.
chart-caption-sweep-no-gpu = The line is the middle estimate, its low–high range shaded.
chart-caption-block-64 = Block sizes are offered in multiples of 64.
chart-caption-breakdown = The bar is the middle estimate, { $total }; against the { $free } free, the verdict is: { $verdict }.

# The short answer under a guide's title (issue 23).
answer-title = Short answer
answer-verdict = On the { $gpu }: { $verdict }. The run needs about { $total } (the total nvidia-smi would show); the card gives PyTorch { $capacity }.
answer-change = The change that fits with the least change to training: { $option } ({ $total }).
answer-fits = It fits as configured: no change is needed.
answer-none = None of the options fits on its own; the table shows how close each comes.
answer-command-intro = Or on the command line:
answer-needs-code = This is not a setting train.py reads: it needs a code change.
answer-needs-patch = This is no Trainer or from_pretrained setting: it patches the model's code (Liger Kernel, pip install liger-kernel).
answer-to-table = All options
answer-to-charts = Charts

# A generate guide: the solvers' table and the context chart (issue 22).
solve-col-model = Model
solve-col-card = Card
solve-col-weights = Weights
solve-col-context = Longest context that fits
solve-cell-model-cache = { $model }, `kv_cache: { $cache }`
solve-col-batch = Sequences at once
solve-cell-context = { $tokens } tokens ({ $prompt } of prompt)
solve-cell-model-limit = (the model's own limit)
solve-cell-none = nothing fits
solve-cell-batch = { $batch } × { $tokens } tokens
solve-table-note = Each answer is the largest value whose verdict is "fits", with { $new } new tokens after each prompt; the sequences column keeps each row's own prompt.
chart-context-title = Memory against context length: { $model } on the { $gpu }
chart-x-context = context (prompt + new tokens)
chart-layer-weights = weights
chart-layer-kv = KV cache
chart-layer-step = the peak step's activations and logits (prefill or decoding)
chart-layer-overhead = CUDA context, cuBLAS workspace, fragmentation
chart-context-fit = longest context that fits: { $value } tokens
chart-context-alt = { $title }: stacked areas of the weights, the KV cache, the peak step's tensors and the overhead, against the card's capacity.
chart-caption-context = The top of the stack is the middle estimate of what nvidia-smi would show, with { $new } new tokens after each prompt. The vertical line is the longest context whose high end fits (verdict "fits"), { $value } tokens, so the stack itself crosses the capacity further right.
chart-caption-context-none = The top of the stack is the middle estimate of what nvidia-smi would show, with { $new } new tokens after each prompt; no context fits with its high end, so nothing is marked.
