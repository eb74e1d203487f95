# `vramdoc estimate --format table|markdown` 的文字。每个键在 en、es、zh 中都必须存在。
est-title = 显存估算
est-heading-scenario = 训练配置
est-heading-model = 模型
est-params-total = 参数量
est-params-total-value = { $total }（不含位置嵌入为 { $non_embedding }，即 nanoGPT 打印的数字）
est-params-total-value-model = { $total }（不含位置嵌入为 { $non_embedding }）
est-params-total-value-moe = { $total }，所有专家都常驻显存（每个 token 只运行 { $active }）
est-params-groups = 优化器参数组
est-params-groups-value = 权重衰减：{ $decay_tensors }个张量共 { $decay }个参数；不衰减：{ $no_decay_tensors }个张量共 { $no_decay }个参数
est-effective-batch = 有效批次
est-effective-batch-value = 每步 { $sequences }条序列，即 { $tokens }个 token
est-ddp = DDP（每块 GPU）
est-ddp-value = { $world }个进程，每个优化器步每个进程跑 { $accumulation }个微步；每块 GPU 另有 { $buckets } 的梯度桶
est-resume = 续训
est-resume-value = 加载检查点时峰值为 { $load }；其权重（{ $retained }）在整个训练过程中都被 train.py 的 state_dict 引用着
est-heading-memory = 训练峰值时的显存（{ $moment }）
est-moment-loss_forward = 前向传播末尾计算损失时
est-moment-loss_backward = 交叉熵反向传播
est-moment-head_backward = 输出头与最终归一化层的反向传播
est-moment-mlp_backward = 最后一个块的 MLP 反向传播
est-moment-backward_end = 反向传播结束时
est-moment-optimizer_step = 优化器更新步骤
est-moment-attention_backward = 注意力分数的反向传播
est-moment-block_recompute = 重算一个检查点块
est-moment-no_training = 没有训练步：eval_only 只评估一次就退出
est-col-component = 组成部分
est-col-memory = 显存
est-weights = 权重（{ $dtype }）
est-weights-nanochat = 权重（fp32 矩阵，bf16 嵌入）
est-gradients = 梯度
est-optimizer = 优化器状态（{ $optimizer }）
est-autocast = 权重的 16 位副本（autocast）
est-weight-casts-nanochat = 权重的 16 位副本（nanochat 的 Linear）
est-activations = 为反向传播保存的激活值
est-logits = logits 与损失（批次大小 × 上下文长度 × 词表）
est-train-peak = 训练步峰值
est-eval-peak = 评估峰值（estimate_loss）
est-peak = PyTorch 分配的峰值（{ $phase }）
est-phase-train = 训练
est-phase-eval = 评估
est-phase-load = 加载检查点
est-overhead = CUDA 上下文、cuBLAS 工作区、显存碎片
est-total = 合计（nvidia-smi 显示的数值）
est-logits-tensor = 单个 logits 张量 { $shape }：{ $bytes }
est-verdict-fits = { $gpu }（{ $capacity }）放得下：按开销的低端和高端计算，合计为 { $range }，即使取高端也还剩 { $spare }。
est-verdict-no-fit = { $gpu }（{ $capacity }）放不下：合计为 { $range }，即使取低端也还差 { $missing }。
est-warn-no-bf16 = { $gpu } 不支持 bf16：请改用 dtype=float16。
est-verdict-none = 未指定 GPU：加上 --gpu ID（例如 --gpu rtx-4070）即可得出结论。
est-heading-options = 可以怎么改（对训练影响最小的排在前面）
est-col-option = 方案
est-col-change = 改动
est-col-total = 合计
est-col-saving = 节省
est-opt-micro_batch = 减小微批次，有效批次不变
est-opt-max_micro_batch = 放得下的最大微批次，有效批次不变
est-opt-eval_batch = 减小评估批次（需修改 estimate_loss）
est-opt-block_size = 缩短上下文长度
est-opt-flash = 启用 Flash Attention
est-opt-grad_checkpoint = 梯度检查点（需打补丁；计算量约增加 { $pct }）
est-opt-dtype = 用 bf16 autocast 代替 float32
est-opt-dtype_fp16 = 用 float16 autocast 加 GradScaler（这张卡不支持 bf16）
est-opt-optimizer = 8 位 AdamW（bitsandbytes）
est-opt-bucket_view = 梯度作为 DDP 桶的视图（gradient_as_bucket_view=True）
est-opt-sharded_optimizer = 优化器状态分摊到各 GPU（ZeroRedundancyOptimizer）
est-opt-fsdp = 权重、梯度和优化器状态都分摊到各 GPU（FSDP）
est-opt-n_embd = 更窄的模型（{ $params }个参数）
est-opt-n_layer = 更浅的模型（{ $params }个参数）
est-changes-training = 会改变训练
est-no-options = 此配置没有可用的方案。
est-ignored = 已忽略（不影响显存）：{ $keys }
est-note = 以上均为估算：训练峰值依据对 nanoGPT 训练步的精确复现；PyTorch 分配器之外的部分（CUDA 上下文、碎片、torch.compile 的内核、cuBLAS 工作区）以有据可查的范围给出，结论说明该范围中哪一部分放得下。
est-verdict-tight = { $gpu }（{ $capacity }）紧张：合计为 { $range }；中间估计放得下，取高端放不下，能否放下取决于驱动的 CUDA 上下文大小和分配器缓存的碎片程度。
est-verdict-others = 其他程序占用了该卡的 { $other }，已计入上述结论。
est-total-range = 合计范围（上下文与碎片，低–高）
est-other-processes = 其他程序占用
est-col-share = 占峰值比例
est-col-effective-batch = 有效批次
est-batch-tokens = { $sequences }（{ $tokens }个 token）
est-saving-more = 不节省：多用 { $bytes }
est-needs-code = 不是 nanoGPT 的 train.py 读取的设置，需要修改代码。
est-needs-patch = 需要给模型代码打补丁，不是 Trainer 或 from_pretrained 的设置。
est-opt-freeze_embeddings = 冻结嵌入层（wte，也就是 lm_head 的权重，以及 wpe；只需改一行代码）
est-opt-lora = LoRA，秩 { $rank }，加在 { $targets } 上（需打补丁；预训练权重全部冻结）
est-opt-combination = 放得下的侵入性最小的组合
est-opt-combination_tight = 可能放得下的侵入性最小的组合
est-opt-combination_all = 以上改动全部一起用（仍然放不下）
est-opt-pure_bf16 = 以 bfloat16 加载权重（dtype=torch.bfloat16）并直接训练
est-opt-qlora = QLoRA：4 位权重，在 { $targets } 上加秩为 { $rank } 的 LoRA（BitsAndBytesConfig 与 peft；全部预训练权重冻结）
est-opt-fused_cross_entropy = 融合线性交叉熵，不生成完整 logits（打上 Liger Kernel 补丁）
est-opt-batch_layout = 改用填充到最长行的批次，不用无填充拼接（SFTConfig(padding_free=False, packing=False)）：序列相同，注意力掩码按行构建，而不是覆盖整个拼接后的批次
est-opt-flash_attention_2 = 无填充批次改用 flash-attn 的内核（attn_implementation="flash_attention_2"，需 pip install flash-attn）：拼接后的词元不再需要注意力掩码
est-opt-hf-flash = 用 SDPA 注意力代替 eager（attn_implementation="sdpa"）
est-opt-hf-grad_checkpoint = 梯度检查点（gradient_checkpointing=True；计算量约增加 { $pct }）
est-opt-hf-dtype = 用 bf16 autocast（bf16=True）代替 float32
est-opt-hf-optimizer = 8 位 AdamW（bitsandbytes；Trainer 的 optim）
est-opt-hf-optimizer-paged = 分页 8 位 AdamW（bitsandbytes；Trainer 的 optim；显存紧张时状态换页到 CPU 内存）
est-opt-hf-dtype_fp16 = 用 fp16 autocast（fp16=True；这张卡不支持 bf16）
est-opt-hf-lora = PEFT LoRA，秩 { $rank }，加在 { $targets } 上（预训练权重全部冻结）
est-trainable = 参与训练
est-trainable-frozen-value = { $total }个参数中的 { $trainable }个：嵌入层已冻结
est-trainable-lora-value = { $total }个参数中的 { $trainable }个：只训练 LoRA 适配器，秩 { $rank }，加在 { $targets } 上

# 四种结论（issue 23）。
est-col-verdict = 结论
est-verdict-with-range = { $verdict }（{ $range }）
est-verdict-unlikely = { $gpu }（{ $capacity }）很可能放不下：合计为 { $range }；只有低端放得下，需要驱动的 CUDA 上下文很小、分配器缓存几乎没有碎片才行。
est-verdict-eager-bound = 这些是 nanochat 未编译（eager）训练步的数字（compile=false）：base_train.py 和 chat_sft.py 会用 torch.compile 编译模型，编译后保存的张量更少（保持 compile 的默认值即可估算编译后的情况），所以编译后的实际运行可能需要更少的显存。可以先运行试试，显存不足时再调小 --device-batch-size。
est-verdict-compiled = { $peak } 的训练峰值对应 nanochat 编译后的训练步：inductor 的图划分为反向传播保存的张量，再加上 inductor 的 C++ 后端在损失前向中写出的一份 float32 软截断 logits。CUDA 上的 Triton 内核可能不会保留这份副本；去掉它，峰值为 { $low }。结论按较高的数字给出。
est-merged = “{ $label }”也就是{ $others }：同一项改动，只列一行。
est-quoted = “{ $text }”
est-code-sharding = `sharding`：用 FSDP 包装模型，或用 ZeroRedundancyOptimizer 包装 AdamW（修改 train.py）
est-code-gradient_as_bucket_view = `gradient_as_bucket_view`：在 train.py 的 DDP(...) 调用中加上 gradient_as_bucket_view=True（只改一个参数的补丁）
est-code-grad_checkpoint = `grad_checkpoint`：用 torch.utils.checkpoint 包装每个块的前向（修改 model.py）
est-code-optimizer = `optimizer`：在 configure_optimizers 中换用其他优化器（8 位 AdamW：安装 bitsandbytes 并使用其 AdamW8bit）
est-code-eval_batch_size = `eval_batch_size`：为 estimate_loss() 单独设定批次大小（修改 train.py）
est-code-pure_bf16 = `pure_bf16`：权重本身以 bfloat16 存储，即 model.to(torch.bfloat16)（修改 train.py）
est-code-weights_dtype = `weights_dtype`：from_pretrained(..., dtype=torch.bfloat16) 或其他 dtype；不指定时，transformers 5 以 dtype="auto" 加载，即 config.json 自己写明的 dtype
est-code-flash = `flash`：需要 PyTorch 2.0 或更高版本，nanoGPT 会自动使用其中的 scaled_dot_product_attention
est-code-attn_implementation = `attn_implementation`：from_pretrained(..., attn_implementation="sdpa")（transformers 的默认值）、"eager"，或先 pip install flash-attn 再用 "flash_attention_2"
est-code-batch_layout = `batch_layout`：数据整理器（collator）如何组成批次：整行（预先切好的文本，或 TRL 的 SFTConfig(packing=True, packing_strategy="wrapped")）、填充到最长行的批次（TRL 默认的 packing=False，DataCollatorWithPadding），或无填充的拼接（SFTConfig(padding_free=True)，或 packing=True 配合默认的 "bfd" 策略）
est-code-freeze_embeddings = `freeze_embeddings`：对 wte 和 wpe 设置 requires_grad = False（只需修改 train.py 的一行）
est-code-lora = `lora_rank`、`lora_targets`：在这些层上加 LoRA 适配器并冻结基础权重，例如使用 peft
est-code-bnb = `load_in_4bit`、`bnb_4bit_*`、`load_in_8bit`：安装 bitsandbytes 后调用 from_pretrained(..., quantization_config=BitsAndBytesConfig(...))；若做 QLoRA，再调用 peft 的 prepare_model_for_kbit_training 并配置 LoraConfig
est-code-fused_linear_cross_entropy = `fused_linear_cross_entropy`：先 pip install liger-kernel（0.8.5），在 from_pretrained 之后调用 liger_kernel.transformers._apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=True, rope=False, rms_norm=False, swiglu=False)（或在加载模型之前调用 apply_liger_kernel_to_<model_type>(...)）；Liger 默认开启的其他内核保存的张量比本估算计入的少

## 用 nanoGPT 的 sample.py 采样
sample-title = 显存估算：用 nanoGPT 的 sample.py 采样
sample-model = 模型
sample-model-value = init_from={ $init_from }：{ $layers }层，{ $heads }个注意力头，宽度 { $width }，词表 { $vocab }，上下文 { $block }；{ $params }个参数
sample-precision = 精度
sample-generation = 生成
sample-generation-value = { $prompt_count ->
    [one] 提示词 1个 token
   *[other] 提示词最多 { $prompt }个 token
}，每个样本生成 { $new }个新 token，共 { $samples }个样本，top_k 为 { $top_k }；最长上下文为 { $context }个 token，每生成一个新 token 都要重新计算（没有 KV 缓存）
sample-heading-memory = 峰值时的显存（{ $moment }）
sample-moment-forward = 对最长上下文做前向计算
sample-moment-next-token = 根据 logits 选出下一个 token
sample-weights = 权重（float32，model.to(device) 之后）
sample-checkpoint = sample.py 留在 GPU 上的检查点
sample-activations = 一次前向计算的张量（{ $context }个 token）
sample-logits = Logits、top-k 掩码与概率
sample-ids = token 编号与位置（int64）
sample-kv-cache = KV 缓存（nanoGPT 没有）
sample-peak = PyTorch 分配的峰值
sample-heading-advice = 值得了解
sample-advice-checkpoint = sample.py 用 map_location=device 加载检查点，并一直保留到退出（{ $bytes }，包括权重和优化器状态）；改为 map_location='cpu'（只需改一行）正好省下这部分。
sample-advice-autocast = 采样期间，autocast 会一直保留每个 Linear 权重的 16 位副本（{ $bytes }），因为这些权重仍然需要梯度。
sample-note = 说明：峰值依据对 nanoGPT 的 sample.py 和 generate() 的精确重放；PyTorch 分配器之外的部分（CUDA 上下文、碎片、cuBLAS 工作区）按有文档依据的范围给出，结论说明该范围中哪一部分放得下。
est-model-name = 模型
est-model-name-value = { $name }（{ $family }，transformers { $version }）
est-model-name-value-plain = { $name }（{ $family }）
est-no-options-model = vramdoc 为此模型计算的可选方案在这里都不适用：请修改 --batch_size、--block_size、--dtype 或 --grad_checkpoint，再比较估算结果。
est-note-model = 以上均为估算：训练峰值依据对 Hugging Face transformers { $version } 自身代码中一个 Trainer 训练步的复现（带标签的前向、反向、梯度裁剪、融合 AdamW、梯度置为 None）；PyTorch 分配器之外的部分（CUDA 上下文、碎片、cuBLAS 工作区）以有据可查的范围给出，结论说明该范围中哪一部分放得下。
est-note-trl = 以上均为估算：训练峰值依据对 TRL { $trl } 的 SFTTrainer 在 Hugging Face transformers { $version } 自身代码上一个训练步的复现（TRL 的 QLoRA 准备、bf16 autocast 下带标签的前向、compute_loss 的指标、反向、梯度裁剪、优化器、梯度置为 None）；PyTorch 分配器之外的部分（CUDA 上下文、碎片、cuBLAS 工作区）以有据可查的范围给出，结论说明该范围中哪一部分放得下。
est-note-nanochat = 估算说明：训练峰值依据对 nanochat { $commit } 自身 base_train.py 训练步骤的重放（其 GPT 按脚本的方式编译，计入 inductor 图划分保存的张量及其包装代码分配的缓冲区；compile=false 时则以非编译方式运行；Muon 与 AdamW 优化器以非编译方式运行；注意力走 PyTorch 的 SDPA 回退路径，而非 FA3）；PyTorch 分配器之外的部分（CUDA 上下文、碎片、cuBLAS 工作区）以有据可查的范围给出，结论说明该范围的哪一部分能放下。

## 生成阶段的反向求解（--solve）
solve-max-context = 在 { $gpu } 上结论为“放得下”的最长上下文：{ $tokens }个 token（提示词 { $prompt }个 + 新生成 { $new }个）。
solve-max-context-none = { $gpu } 上什么都放不下：即使提示词只有 1个 token、生成 { $new }个新 token 也不行。
solve-limit-block-size = 限制来自 sample.py 的截断，而不是显卡：generate() 只保留上下文的最后 { $block }个 token（block_size），所以更长的提示词也能运行，只多占它的 token 编号，模型最多看到 { $block }个 token。
solve-limit-positions = 限制来自 GPT-2 的 { $positions }个位置，而不是显卡：generate 无法超出。
solve-limit-rotary = 限制来自 nanochat 的旋转位置表，而不是显卡：它们容纳 { $positions }个位置（10 × sequence_len），模型无法超出。
solve-max-batch = 在 { $gpu } 上结论为“放得下”的最大批次大小：一次 { $batch }个提示词。
solve-max-batch-none = { $gpu } 上什么都放不下：连一个提示词都不行。
solve-max-context-none-positions = 没有任何上下文落在模型的位置范围内：仅 { $new }个新 token 就已超过它的 { $positions }个位置（{ $source }）。
solve-limit-rotary-positions = 限制来自模型的 { $positions }个位置（{ $source }），而不是显卡：transformers 超出后会继续生成并给出一次警告，但模型从未在更长的序列上训练过，所以 vramdoc 不把它们算作放得下（计入的最长上下文为 { $context }个 token：最后一个新 token 不会再送入模型）。
solve-memory-bound = 只看显存，{ $gpu } 可以容纳 { $memory }个 token。
solve-memory-bound-table = 如果它的位置表更长，{ $gpu } 可以容纳 { $memory }个 token。
solve-positions-bound = 显卡先到上限：模型自身的位置最多允许 { $context }个 token（{ $positions }个位置，{ $source }）。
solve-batch-past-positions = 这个上下文超过了模型的 { $positions }个位置（{ $source }）：transformers 会继续生成并给出一次警告，但模型从未在这些位置上训练过。
solve-source-n-positions = n_positions，它学到的位置表
solve-source-max-position-embeddings = 配置中的 max_position_embeddings
solve-source-yarn = YaRN 的 factor × original_max_position_embeddings
solve-source-rotary-table = nanochat 的旋转位置表，10 × sequence_len

## 用模型运行 Hugging Face 的 generate
gen-title = 显存估算：Hugging Face 的 generate
gen-title-nanochat = 显存估算：nanochat 的 Engine.generate
gen-model = 模型
gen-model-value = { $name }：{ $params }个参数，权重为 { $dtype }
gen-model-value-moe = { $name }：{ $params }个参数，所有专家都常驻显存（每个 token 只运行 { $active }），权重为 { $dtype }
gen-quant = 量化权重
gen-quant-4bit = 各块的线性层为 4 位 { $format }（bitsandbytes）；输出头、嵌入和归一化层为 { $dtype }；每次调用 5 到 1536 行时由 GPU 选择 bitsandbytes 的内核，vramdoc 按占用更大的反量化回退路径计算
gen-quant-4bit-moe = 各块的线性层为 4 位 { $format }（bitsandbytes）；专家、路由器、输出头、嵌入和归一化层为 { $dtype }（transformers 只转换 nn.Linear 模块）；每次调用 5 到 1536 行时由 GPU 选择 bitsandbytes 的内核，vramdoc 按占用更大的反量化回退路径计算
gen-quant-int8 = 各块的线性层为 int8（bitsandbytes 的 LLM.int8()）；输出头、嵌入和归一化层为 { $dtype }；假定每次调用有 64 个离群列（实际由数据决定；没有离群列时少一个输出）
gen-quant-int8-moe = 各块的线性层为 int8（bitsandbytes 的 LLM.int8()）；专家、路由器、输出头、嵌入和归一化层为 { $dtype }（transformers 只转换 nn.Linear 模块）；假定每次调用有 64 个离群列（实际由数据决定；没有离群列时少一个输出）
gen-call = 生成
gen-call-value = { $batch } × { $prompt }个 token 的提示词，新生成 { $new }个 token，每个提示词 { $sequences }条序列，{ $cache } KV 缓存
gen-beams = 束搜索
gen-beams-value = 每个提示词 { $beams } 条束（num_beams），贪心；按 transformers 的 _beam_search 在没有结束符令任何一束提前停止时的运行方式计算：没有束提前结束，每一步都保留全部 { $beams } 条束及其 { $candidates } 个候选，直到 max_new_tokens，并在每步之后重排缓存（每次复制一层）
gen-call-value-nanochat = 一个 { $prompt }个 token 的提示词只预填充一次，从中采样 { $batch }行（num_samples），每行新生成 { $new }个 token，nanochat 的 KVCache 预分配 { $context }个位置
gen-weights = 权重
gen-kv-cache = KV 缓存的最大值
gen-load-peak = 加载检查点的峰值（build_model）
gen-prefill-peak = 预填充的峰值（一次处理整个提示词）
gen-decode-peak = 解码步骤的峰值
gen-moment-prefill = 预填充
gen-moment-decode = 解码步骤
gen-moment-load = 加载检查点
gen-note = 说明：峰值依据在伪张量上对 transformers 自带 generate 的重放（预填充与解码，SDPA，即时执行）；PyTorch 分配器之外的部分（CUDA 上下文、碎片、cuBLAS 工作区）按有文档依据的范围给出，结论说明该范围中哪一部分放得下。
gen-beyond-positions = 这个上下文（{ $tokens }个 token）超过了模型的 { $positions }个位置（{ $source }）：transformers 会继续生成，只给出一次警告（“has exceeded the model's predefined maximum length”），上面的显存也是按所要求的长度估算的，但模型从未在这些位置上训练过，它在那里生成的内容并不是它被设计来处理的。
gen-note-nanochat = 说明：峰值依据在伪张量上对 nanochat 自带 build_model 与 Engine.generate 的重放（SDPA 回退路径，即时执行，带温度、不用 top-k 的采样）；PyTorch 分配器之外的部分（CUDA 上下文、碎片、cuBLAS 工作区）按有文档依据的范围给出，结论说明该范围中哪一部分放得下。
gen-heading-options = 可以怎么改（对输出影响最小的排在前面）
gen-opt-static-cache = 静态缓存（按完整长度预先分配）
gen-opt-dynamic-cache = 动态缓存（随序列增长）
gen-opt-dtype = 权重改为 { $dtype }
gen-opt-int8-weights = 线性层改为 8 位（bitsandbytes 的 LLM.int8()；离群列保持 16 位）
gen-opt-int8-cache = KV 缓存量化为 int8（HQQ；最近 128个 token 保持全精度）
gen-opt-fp8-cache = KV 缓存改为 float8（transformers 的 fp8 后端；每层的键和值各一个缩放系数）
gen-opt-quantized-cache = KV 缓存量化为 int4（optimum-quanto；最近 128个 token 保持全精度）
gen-opt-4bit-weights = 线性层改为 4 位 NF4（bitsandbytes，双重量化，以 { $dtype } 计算）
gen-opt-autocast = 使用 { $dtype } autocast（权重仍为 float32）
gen-opt-fewer-sequences = 返回的序列减半
gen-opt-smaller-batch = 每次调用的提示词减半
gen-opt-max-batch = 放得下的最大批次大小
gen-opt-fewer-beams = 束数减半
gen-opt-no-beams = 不用束搜索（num_beams=1）
gen-opt-fewer-new-tokens = 新 token 数减半
gen-opt-max-context = 提示词截短到放得下的最长上下文
gen-opt-combination = 能放下的最小组合改动
gen-no-options = 没有可建议的改动：这次调用已经是 vramdoc 能计算的最小设置。
gen-options-not-computed = 未计算，因此不列出：GPT-2 上或与滑动窗口层同用的量化缓存或 fp8 缓存（后者 transformers 会拒绝；前者 generate 模型不重放）。
gen-options-not-computed-beams = 未计算，因此不列出：束搜索下的量化缓存或 fp8 缓存（束搜索只在动态缓存和静态缓存下重放）。
gen-options-not-computed-nanochat = 未计算，因此未列出：float16（NANOCHAT_DTYPE=float16）、FA3 的内核以及编译后的模型（重放运行的是 nanochat 的 SDPA 回退路径，即时执行）。
sample-options-not-computed = 未计算，因此不列出：更小的 block_size 截断（sample.py 按模型自身的 block_size 截断上下文；更短的截断需要改代码，采样估算不对它建模）。
