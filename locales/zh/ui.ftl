# 中文站点的界面文字。
language-name = 中文
nav-languages = 语言
footer-generated = 由 vramdoc 生成。本站所有显存数字均根据各指南的训练场景计算得出。
markdown-edition = Markdown 版本
machine-translated = 本页为机器翻译，可能存在错误。
toc-title = 目录
index-heading = GPU 显存指南
index-intro = 共 { $count } 篇指南：训练时显存都用在了哪里，以及应该如何调整。
date-format = { $year }年{ $month }月{ $day }日
test-number = { NUMBER($value, minimumFractionDigits: 2) } GiB
index-description = 用 nanoGPT 训练时显存都去了哪里：按每篇指南的显卡计算，并给出放不下时该怎么调整。
nav-breadcrumbs = 当前位置
not-found-title = 页面不存在
not-found-text = 这个地址下没有发布任何内容。以下是本语言的全部指南：
not-found-languages = 这个地址下没有发布任何内容。请选择语言：
code-copy = 复制
code-copied = 已复制
feed-title = Atom 订阅
search-label = 搜索指南
search-placeholder = 例如：显存、梯度累积
search-loading = 正在加载搜索索引…
search-failed = 无法加载搜索索引。
search-none = 没有同时包含这些词的指南。
# `%n` 会替换为结果数量。
search-one = 找到 1 篇指南
search-many = 找到 %n 篇指南
nav-pager = 更多指南
nav-previous = 上一篇
nav-next = 下一篇
nav-guide-list = 全部指南
nav-guide-list-link = 查看全部指南列表

# 版式（issue 23）：跳转链接、配色按钮、复制失败提示、横向滚动提示。
skip-to-content = 跳到正文
theme-label = 配色
theme-system = 跟随系统
theme-light = 浅色
theme-dark = 深色
code-copy-failed = 复制失败：请手动选择文本
scroll-hint = 左右滑动查看更多 →

# 翻译提示；`$source` 是原文的语言（以其自身名称书写）。
translation-stale = 本节译出后，原文（{ $source }）已有改动。
translation-missing = 本节尚未翻译，以下为原文（{ $source }）。
translation-read-original = 阅读原文
translation-status-title = 翻译状态
translation-status-intro = 本语言下每篇指南各节的状态：最新、译出后原文已改动（过期），或尚未翻译（缺失）。
translation-status-link = 翻译状态
translation-state-current = 最新
translation-state-stale = 过期
translation-state-missing = 缺失
translation-state-untracked = 未记录
translation-status-complete = 所有指南的所有章节均已翻译且为最新。
