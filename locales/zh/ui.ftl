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
