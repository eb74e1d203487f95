# 指南中自动计算的表格与图表。
exact-bytes = { $bytes } 字节
verdict-fits = 放得下
verdict-no-fit = 放不下
verdict-unknown = 未指定 GPU
component-capacity = { $gpu } 容量
table-param-group = 参数
table-param-count = 数量
table-param-tensors = 张量数
param-total = 总数（lm_head 与 wte 共享权重）
param-non-embedding = 不含嵌入（nanoGPT 打印的数字）
param-trainable = 参与训练（其余冻结）
param-lora = LoRA 适配器（A 和 B）
param-decay = 权重衰减组（二维张量）
param-no-decay = 不衰减组（偏置、LayerNorm）
chart-breakdown-title = 显存都用在了哪里
chart-breakdown-alt = 显存组成的堆叠柱状图：总计 { $total }，分配器峰值 { $peak }。
chart-capacity = { $gpu }：{ $size }
chart-sweep-title-batch-size = 总显存（nvidia-smi 显示值）随微批次大小的变化
chart-sweep-title-block-size = 总显存（nvidia-smi 显示值）随上下文长度的变化
chart-x-batch-size = 微批次（batch_size）
chart-x-block-size = 上下文长度（block_size）
chart-y-memory = GiB
chart-series-total = 估算总量（nvidia-smi）
chart-max-fit = 高端也放得下的最大值：{ $value }
chart-sweep-alt = { $title }，阴影为其低–高范围，坐标轴为线性；放得下的最大值为 { $value }。
chart-segment = { $name }：{ $size }
verdict-tight = 紧张
chart-series-range = 范围（上下文与碎片）
chart-capacity-others = { $gpu }：除其他程序外可用 { $free }（共 { $size }）

# 四种结论及其规则，写在每个给出结论的表格和图表下方（issue 23）。
verdict-unlikely = 很可能放不下
verdict-label = 结论
verdict-rule = 结论把 nvidia-smi 会显示的合计与本次运行可用的空闲显存相比：合计范围的高端也放得下，为“放得下”；中间估计放得下而高端放不下，为“紧张”；只有低端放得下，为“很可能放不下”；连低端都放不下，为“放不下”。
verdict-free-all = 这里假设 { $gpu } 的 { $size } 全部空闲（卡上没有其他程序）。
verdict-free-others = 这里假设本次运行可用 { $free }：{ $gpu } 的 { $size } 减去其他程序占用的 { $other }。
chart-caption-sweep = 折线为中间估计，阴影为低端到高端的范围。标记处是高端也放得下（结论“放得下”）的最大值 { $value }，所以折线本身越过容量线的位置更靠右。
chart-caption-sweep-none = 折线为中间估计，阴影为低端到高端的范围；没有哪个取值连高端也放得下，因此没有标记。
chart-caption-sweep-no-gpu = 折线为中间估计，阴影为低端到高端的范围。
chart-caption-block-64 = block_size 按 64 的倍数取值。
chart-caption-breakdown = 柱条为中间估计 { $total }；对照 { $free } 空闲显存，结论为：{ $verdict }。

# 指南标题下的简短回答（issue 23）。
answer-title = 简短回答
answer-verdict = 在 { $gpu } 上：{ $verdict }。这次训练约需 { $total }（nvidia-smi 显示的总量），而这张卡给 PyTorch 的是 { $capacity }。
answer-change = 对训练改动最小且能放下的改法：{ $option }（{ $total }）。
answer-fits = 按当前配置就能放下，无需改动。
answer-none = 没有哪一项单独就能放下；表格列出了每一项差多少。
answer-command-intro = 或者在命令行中：
answer-needs-code = 这不是 train.py 读取的设置，需要改代码。
answer-needs-patch = 这不是 Trainer 或 from_pretrained 的设置：它会修改模型的代码（Liger Kernel，pip install liger-kernel）。
answer-to-table = 全部选项
answer-to-charts = 图表

# generate 指南：求解结果表和上下文图（issue 22）。
solve-col-model = 模型
solve-col-card = 显卡
solve-col-weights = 权重
solve-col-context = 放得下的最长上下文
solve-cell-model-cache = { $model }，`kv_cache: { $cache }`
solve-col-batch = 同时生成的序列
solve-cell-context = { $tokens }个 token（提示词 { $prompt }个）
solve-cell-model-limit = （模型自身的上限）
solve-cell-none = 什么都放不下
solve-cell-batch = { $batch } × { $tokens }个 token
solve-table-note = 每个答案都是结论为“放得下”的最大值，每个提示词之后生成 { $new }个新 token；序列一列沿用每行自己的提示词长度。
chart-context-title = 显存随上下文长度的变化：{ $model } 在 { $gpu } 上
chart-x-context = 上下文（提示词 + 新 token）
chart-layer-weights = 权重
chart-layer-kv = KV 缓存
chart-layer-step = 峰值那一步的激活和 logits（预填充或解码）
chart-layer-overhead = CUDA 上下文、cuBLAS 工作区、碎片
chart-context-fit = 放得下的最长上下文：{ $value }个 token
chart-context-alt = { $title }：权重、KV 缓存、峰值那一步的张量和开销的堆叠面积图，与显卡容量对比。
chart-caption-context = 堆叠的顶端是 nvidia-smi 显示值的中间估计，每个提示词之后生成 { $new }个新 token。竖线是高端也放得下（结论“放得下”）的最长上下文，{ $value }个 token，所以堆叠本身要再往右一些才越过容量线。
chart-caption-context-none = 堆叠的顶端是 nvidia-smi 显示值的中间估计，每个提示词之后生成 { $new }个新 token；没有哪个上下文在高端也放得下，所以没有标记。
