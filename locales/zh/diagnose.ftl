# vramdoc diagnose：解读 PyTorch 的 CUDA 显存不足报错。
diag-title = CUDA 显存不足报错诊断
diag-heading-message = 报错信息中的数字（PyTorch { $version } 格式）
diag-requested = 申请失败的大小
diag-capacity = GPU { $gpu } 总容量
diag-free = 失败时的空闲显存
diag-process = 本进程占用（含 PyTorch 之外的部分）
diag-allocated = PyTorch 已分配（张量）
diag-reserved-unallocated = PyTorch 已预留但未分配
diag-reserved = PyTorch 预留总量
diag-process-line = 进程 { $pid }
diag-other = 其他程序占用（总容量 − 空闲 − 本进程）
diag-non-pytorch = 本进程在 PyTorch 缓存之外的部分（CUDA 上下文、库）
diag-outside = PyTorch 缓存之外：本进程的 CUDA 上下文加上其他程序（总容量 − 空闲 − 预留）
diag-heading-tensor = 申请失败的是什么
diag-tensor = 这 { $size } 是{ $tensor }：一个 { $shape } 的 { $dtype } 张量，共 { $bytes }。
diag-tensor-none = 该场景中没有大小为 { $size } 的大张量；最接近的是{ $tensor }（{ $shape }，{ $bytes }）。请核对运行时的 batch_size、block_size、vocab_size 和 dtype。
diag-t-logits = 训练微步的 logits（批次大小 × 上下文长度 × 词表）
diag-t-logits_fp32 = 训练微步 logits 的 float32 副本（autocast 下 nll_loss 以 float32 计算，其反向传播还会写出同样大小的梯度）
diag-t-eval_logits = 评估时的 logits（estimate_loss，批次大小 × 上下文长度 × 词表）
diag-t-eval_logits_fp32 = 评估 logits 的 float32 副本（autocast 下 nll_loss 以 float32 计算）
diag-t-wte_grad = 词嵌入的梯度（与 lm_head 共享权重）
diag-t-wte_moment = 词嵌入的一个 AdamW 动量，在第一次优化器步时创建
diag-t-attention_scores_fp32 = 某一层 float32 的注意力分数（未用 flash attention）
diag-t-attention_scores = 某一层 16 位的注意力分数（未用 flash attention）
diag-t-eval_attention_scores_fp32 = 评估时某一层 float32 的注意力分数（未用 flash attention）
diag-t-mlp_hidden = 某个块的 MLP 隐藏层
diag-t-qkv = 某个块的 query、key、value 投影
diag-t-residual = 某个块的残差流（float32）
diag-phase = 阶段：{ $phase }（{ $source }）。
diag-phase-evaluation = 评估，即 estimate_loss() 内
diag-phase-forward = 训练微步的前向传播
diag-phase-backward = 训练微步的反向传播
diag-phase-optimizer_step = 优化器步
diag-source-traceback = 依据 traceback
diag-source-memory = PyTorch 已占用的显存加上这次失败的申请，与估算器对该阶段给出的峰值最接近
diag-source-tensor = 只有这一阶段会分配该张量
diag-phase-unknown = 阶段：仅凭报错信息无法判断；请贴出完整的 traceback。
diag-first-step = 这是第 0 次迭代的评估：nanoGPT 在第一个训练步之前先评估，此时还没有梯度和优化器状态，光是评估本身就放不下。
diag-heading-fragmentation = 显存碎片
diag-frag-cause = PyTorch 有 { $unalloc } 已预留但未分配；加上空闲的 { $free }，本可容纳这 { $size }：缓存已碎片化。请设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True。
diag-frag-large = PyTorch 有 { $unalloc } 已预留但未分配，说明缓存碎片较多：PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True 让分配器扩展已有段，而不是保留许多段。它不会让这次申请变小。
diag-frag-none = 已预留但未分配的只有 { $unalloc }：问题不在碎片，显存确实被占用了。
diag-heading-estimate = 该场景在这张卡上
diag-gpu-from-message = 显卡取自报错信息所描述的那张（{ $capacity }）。
diag-estimate = 估算器给出 PyTorch 分配的峰值为 { $peak }，进程总占用为 { $range }。
diag-missing = 未提供场景，因此仅凭报错信息只能得出以上结论。提供以下键即可确定是哪个张量并给出排序后的方案：{ $keys }（--config 文件 或 --set 键=值）。
diag-phase-training_step = 训练微步（前向或反向传播）
diag-col-figure = 报错中的数值
diag-col-size = 大小
diag-frag-v1 = 该报错来自 PyTorch 1，其分配器没有可扩展段：请改用 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128，正如报错信息本身所建议的。
diag-gpu-candidates = 该卡的容量与报错信息所示相同（{ $capacity }），{ $cards } 都是这个容量；请用 --gpu ID 指明你的显卡。
