# vramdoc diagnose：解读 PyTorch 的 CUDA 显存不足报错。
diag-title = CUDA 显存不足报错诊断
diag-heading-message = 报错信息中的数字（PyTorch { $versions } 打印的格式）
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
diag-t-logits = 训练微步的 logits（批大小 × 块长 × 词表）
diag-t-logits_fp32 = 训练微步 logits 的 float32 副本（autocast 下 nll_loss 以 float32 计算，其反向传播还会写出同样大小的梯度）
diag-t-eval_logits = 评估时的 logits（estimate_loss，批大小 × 块长 × 词表）
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
diag-frag-cause = PyTorch 有 { $unalloc } 已预留但未分配；加上空闲的 { $free }，本可容纳这 { $size }：缓存已碎片化。
diag-frag-large = PyTorch 有 { $unalloc } 已预留但未分配，说明缓存碎片较多。任何设置都不会让这次申请本身变小。
diag-frag-none = 已预留但未分配的只有 { $unalloc }：问题不在碎片，显存确实被占用了。
diag-heading-estimate = 该场景在这张卡上
diag-gpu-from-message = 显卡取自报错信息所描述的那张（{ $capacity }）；目录中没有相符的显卡，因此不建议 bf16。
diag-estimate = 估算器给出 PyTorch 分配的峰值为 { $peak }，进程总占用为 { $range }。
diag-missing = 未提供场景，因此仅凭报错信息只能得出以上结论。提供以下键即可确定是哪个张量并给出排序后的方案：{ $keys }（--config 文件 或 --set 键=值）。
diag-phase-training_step = 训练微步（前向或反向传播）
diag-col-figure = 报错中的数值
diag-col-size = 大小
diag-gpu-candidates = 该卡的容量与报错信息所示相同（{ $capacity }），{ $cards } 都是这个容量；请用 --gpu ID 指明你的显卡。
diag-heading-message-mps = 报错信息中的数字（Apple MPS，PyTorch { $versions }）
diag-not-printed = 未打印
diag-private-pools = 其中在私有池中（CUDA 图）
diag-process-more = 另有 { $count } 个进程
diag-mps-allocated = PyTorch 的 MPS 分配器已分配
diag-mps-other = 本进程的其他分配（Metal）
diag-mps-limit = 允许的最大值（共享内存的高水位限制）
diag-mps-explain = Apple GPU 与 Mac 共用内存：不存在被占满的显卡，只有 PyTorch 给自己那份内存设的上限。加上这次申请，共需要 { $used }，而允许的是 { $limit }。PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 可以取消上限，但整个系统可能因此内存耗尽；减小 batch 或 block 才是稳妥的改法。
diag-frag-mps = MPS 的报错不打印缓存数字，无法据此判断碎片。
diag-heading-checks = 数字核对
diag-check-all-zero = 报错中的所有数字都是零：没有哪个分配器会这样打印，文本被编辑或截断了。不从这些数字得出任何结论。
diag-check-free-above-capacity = 空闲显存（{ $a }）超过了显卡总容量（{ $b }）：这不可能。不对其他程序占用或碎片下结论。
diag-check-allocated-above-reserved = 已分配（{ $a }）超过了 PyTorch 预留总量（{ $b }）：这不可能，张量就放在预留的显存里。不对碎片或其他程序占用下结论。
diag-check-reserved-above-process = PyTorch 的缓存（{ $a }）比本进程的全部占用（{ $b }）还大：这不可能。不对其他程序或本进程的 CUDA 上下文下结论。
diag-check-in-use-above-capacity = 空闲显存加上各进程占用（{ $a }）超过了显卡（{ $b }）：这不可能。不据此计算其他程序的占用。
diag-check-process-above-capacity = 进程 { $pid } 占用 { $a }，比整张卡（{ $b }）还多：这不可能。不据此计算其他程序的占用。
diag-check-request-above-capacity = 这一次申请（{ $a }）就比整张卡（{ $b }）还大：分配器设置、缓存或其他程序都解释不了。必须让这个张量本身变小（减小 batch 或 block，或分块计算）。
diag-check-several-messages = 文本中有 { $count } 条显存不足报错；本报告读取最后一条。
diag-check-scenario = 该场景的估算（含其他程序共 { $a }）放得进这张卡（{ $b }），而实际运行在占用 { $c } 时失败了：这个场景不可能就是那次运行。可能的差别：batch_size 或 block_size、dtype、卡上的其他程序，或者是另一个模型（n_layer、n_embd、vocab_size）。请传入那次运行自己的配置。
diag-cards-none = 目录中没有显卡显示 { $capacity }（容差 { $tolerance }，即不同驱动之间的差异）：按报错中的容量计算，并且不建议 bf16，因为这张卡可能不支持。
diag-cards-one = 报错中的容量（{ $capacity }）对应 { $card }。
diag-cards-many = 报错中的容量（{ $capacity }）与多张显卡相符：{ $cards }。请用 --gpu ID 指明你的显卡。
diag-variant-ecc-on = 开启 ECC
diag-variant-ecc-off = 关闭 ECC
diag-variant-windows = Windows
diag-frag-too-big = 不是碎片问题：这次申请比整张卡还大（见上文）。
diag-frag-unknown = 无法判断碎片：报错中的数字相互矛盾（见上文）。
diag-frag-no-free = PyTorch 有 { $unalloc } 已预留但未分配；报错没有打印空闲显存，因此无法知道它们能否容纳这 { $size }。
diag-set-expandable = 请设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True：分配器会扩展已有段，而不是保留许多段。
diag-set-expandable-suggested = 请设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True，正如报错信息本身所建议的：分配器会扩展已有段，而不是保留许多段。
diag-set-max-split = 该版本 PyTorch（{ $versions }）没有可扩展段：请改用 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128。
diag-set-max-split-suggested = 该版本 PyTorch（{ $versions }）没有可扩展段：请改用 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128，正如报错信息本身所建议的。
diag-set-on = 该日志中已经设置了 expandable_segments:True：分配器没有别的设置可用，只能降低峰值。
diag-set-none = 该版本 PyTorch（{ $versions }）没有任何针对碎片的分配器设置（max_split_size_mb 从 1.10 开始提供，expandable_segments 从 2.1 开始）；更新的 PyTorch 才有。
diag-other-line = 第 { $line } 行：{ $quoted }
diag-other-no-numbers = 这种错误不打印分配器的任何数字，因此无法指出是哪个张量。如果同一日志里出现了“CUDA out of memory. Tried to allocate …”报错，请传入那一条。
diag-other-cuda-error-title = CUDA error: out of memory（不是 PyTorch 缓存分配器的报错）
diag-other-cuda-error-meaning = PyTorch 缓存之外的某个 CUDA 调用没有拿到显存。最常见的是第一次使用 CUDA（model.to(device)、torch.cuda.set_device）时创建 CUDA 上下文，而显卡已被另一个进程占满。
diag-other-cuda-error-check = 用 nvidia-smi 查看卡上是否有其他进程（仍在运行的上一次训练、notebook 内核），CUDA_VISIBLE_DEVICES 是否指向一张忙碌的卡，以及是否有多个 rank 落在同一块 GPU 上（在任何 CUDA 操作之前调用 torch.cuda.set_device(local_rank)）。CUDA 的报错是异步的：设置 CUDA_LAUNCH_BLOCKING=1 可以看到真正失败的调用。
diag-other-cublas-title = CUBLAS_STATUS_ALLOC_FAILED：cuBLAS 无法分配工作空间
diag-other-cublas-meaning = cuBLAS 在第一次矩阵乘法时分配句柄和工作空间，位于 PyTorch 的张量之外。失败是因为此时显卡已满，通常被 PyTorch 自己的缓存或其他进程占用。
diag-other-cublas-check = 用 nvidia-smi 查看其他进程；减小 batch，让缓存留出空间；CUBLAS_WORKSPACE_CONFIG=:16:8 可以申请更小的工作空间。
diag-other-cudnn-title = cuDNN 无法获得工作空间
diag-other-cudnn-meaning = cuDNN 的算法需要在张量之外另有一块工作空间；这块空间分配失败，说明显卡几乎已满。
diag-other-cudnn-check = 减小 batch；设置 torch.backends.cudnn.benchmark = False（基准测试会尝试需要大工作空间的算法）；用 nvidia-smi 查看其他进程。
diag-other-nccl-title = NCCL 无法分配缓冲区
diag-other-nccl-meaning = NCCL 在创建或扩展通信器时，会在 PyTorch 缓存之外分配通信缓冲区；显卡上已没有空间容纳它们。
diag-other-nccl-check = 检查卡上是否有其他进程，以及是否有多个 rank 共用一块 GPU（在 init_process_group 之前为每个本地 rank 设置设备）；调低 NCCL_BUFFSIZE（默认 4 MiB）或减小 batch 以留出空间。
diag-cards-settled = 报错中的容量（{ $capacity }）对应 { $card }；考虑到不同驱动之间的差异，也可能是 { $cards }：如果是别的卡，请用 --gpu ID 指明。
diag-check-reserved-above-capacity = PyTorch 预留了 { $a }，比整张卡（{ $b }）还多：显卡上的显存不可能如此（改装驱动或统一内存才会打印这样的数字）。不对其他程序占用或碎片下结论。
