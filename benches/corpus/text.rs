//! Sentence banks for the synthetic corpus, in English, Spanish and Chinese.
//!
//! Every entry is `[en, es, zh]`; the three versions of a guide draw the same entries, so a
//! translation has the same structure as its source. Slots in braces (`{gpu}`, `{model}`, `{fw}`,
//! `{node}`, `{a}`, `{b}`, `{ticket}`) are filled per guide. No sentence types a memory figure,
//! so the computed corpus builds without lint warnings.

/// Section headings, in the order sections appear.
pub(crate) const HEADINGS: [[&str; 3]; 8] = [
    ["Summary", "Resumen", "摘要"],
    ["Environment", "Entorno", "环境"],
    ["Symptoms", "Síntomas", "症状"],
    ["Diagnosis", "Diagnóstico", "诊断过程"],
    ["Root cause", "Causa raíz", "根本原因"],
    ["Fix", "Solución", "解决方案"],
    ["Prevention", "Prevención", "预防措施"],
    ["Follow-up", "Seguimiento", "后续工作"],
];

/// Indexes into [`HEADINGS`] of the sections every guide has.
pub(crate) const MANDATORY: [usize; 4] = [0, 1, 3, 5];

/// Title patterns: `{symptom} on {gpu} with {model}`.
pub(crate) const TITLE: [&str; 3] = [
    "{symptom} on {gpu} with {model}",
    "{symptom} en {gpu} con {model}",
    "{gpu} 上运行 {model} 时{symptom}",
];

/// Symptoms named in titles.
pub(crate) const SYMPTOMS: [[&str; 3]; 6] = [
    [
        "Out of memory in the training step",
        "Falta de memoria en el paso de entrenamiento",
        "训练步显存不足",
    ],
    [
        "Out of memory during evaluation",
        "Falta de memoria durante la evaluación",
        "评估时显存不足",
    ],
    [
        "Allocator fragmentation",
        "Fragmentación del asignador",
        "分配器碎片化",
    ],
    [
        "Slow memory growth",
        "Crecimiento lento de la memoria",
        "显存缓慢增长",
    ],
    [
        "Logits that do not fit",
        "Logits que no caben",
        "logits 放不下",
    ],
    [
        "Unexpected usage in nvidia-smi",
        "Uso inesperado en nvidia-smi",
        "nvidia-smi 显示的用量异常",
    ],
];

/// Prose sentences; paragraphs draw from this bank.
pub(crate) const SENTENCES: [[&str; 3]; 24] = [
    ["This note describes a run of {model} with {fw} on a single **{gpu}** in node `{node}`.",
     "Esta nota describe una ejecución de {model} con {fw} en una sola **{gpu}** del nodo `{node}`.",
     "本笔记记录了在节点 `{node}` 的单块 **{gpu}** 上使用 {fw} 运行 {model} 的过程。"],
    ["The job stopped after about {a} steps, roughly {b} minutes after the last checkpoint.",
     "El trabajo se detuvo tras unos {a} pasos, unos {b} minutos después del último checkpoint.",
     "作业在大约 {a} 步之后停止，距离上一个检查点约 {b} 分钟。"],
    ["The problem was first reported in ticket {ticket} and reproduced twice on the same hardware.",
     "El problema se reportó primero en el ticket {ticket} y se reprodujo dos veces en el mismo hardware.",
     "该问题最早在工单 {ticket} 中报告，并在相同硬件上复现了两次。"],
    ["Other jobs on the cluster were not affected, which pointed to the configuration rather than the card.",
     "Otros trabajos del clúster no se vieron afectados, lo que apuntaba a la configuración y no a la tarjeta.",
     "集群上的其他作业没有受到影响，这说明问题出在配置上，而不是显卡本身。"],
    ["The model fits, but only just, and any extra buffer pushes it over the limit.",
     "El modelo cabe, pero muy justo, y cualquier búfer adicional lo lleva por encima del límite.",
     "模型勉强放得下，任何额外的缓冲区都会让它超出上限。"],
    ["We used driver {a} with the standard training container and a fixed random seed.",
     "Usamos el driver {a} con el contenedor de entrenamiento estándar y una semilla aleatoria fija.",
     "我们使用 {a} 版驱动、标准训练容器和固定的随机种子。"],
    ["The node has {b} CPU cores, and the data set is streamed from local NVMe storage.",
     "El nodo tiene {b} núcleos de CPU y el conjunto de datos se lee en streaming desde un NVMe local.",
     "该节点有 {b} 个 CPU 核心，数据集从本地 NVMe 存储流式读取。"],
    ["Mixed precision was on, and the optimizer kept its moments in full precision.",
     "La precisión mixta estaba activada y el optimizador guardaba sus momentos en precisión completa.",
     "混合精度处于开启状态，优化器以全精度保存其动量。"],
    ["The first visible error appeared in the worker log while the process was in the backward pass.",
     "El primer error visible apareció en el registro del proceso durante la pasada hacia atrás.",
     "第一个可见的错误出现在工作进程日志中，当时进程正处于反向传播阶段。"],
    ["Throughput dropped by about {a} percent in the minutes before the failure.",
     "El rendimiento cayó alrededor de un {a} por ciento en los minutos previos al fallo.",
     "在失败前的几分钟里，吞吐量下降了大约百分之 {a}。"],
    ["Restarting the process cleared the problem for a few hours, after which it came back.",
     "Reiniciar el proceso eliminaba el problema durante unas horas, y después volvía.",
     "重启进程后问题会消失几个小时，之后又会再次出现。"],
    ["Utilisation stayed above {b} percent right up to the crash, so the device was not idle.",
     "La utilización se mantuvo por encima del {b} por ciento hasta el fallo, así que el dispositivo no estaba ocioso.",
     "直到崩溃前利用率都保持在百分之 {b} 以上，所以设备并没有空闲。"],
    ["We started by recording allocator snapshots on `{node}` with the commands below.",
     "Empezamos registrando instantáneas del asignador en `{node}` con los comandos de abajo.",
     "我们首先用下面的命令在 `{node}` 上记录分配器快照。"],
    ["Halving the micro-batch made the failure disappear, which confirmed that the limit was memory.",
     "Reducir el micro-lote a la mitad hizo desaparecer el fallo, lo que confirmó que el límite era la memoria.",
     "把微批次减半后故障消失了，这证实了瓶颈在于显存。"],
    ["The kernel log had no Xid events, so we ruled out a driver or hardware fault early.",
     "El registro del kernel no tenía eventos Xid, así que descartamos pronto un fallo del driver o del hardware.",
     "内核日志中没有 Xid 事件，因此我们很早就排除了驱动或硬件故障。"],
    ["A profiler trace of one step showed that activations, not weights, dominated the footprint.",
     "Una traza del perfilador de un paso mostró que las activaciones, y no los pesos, dominaban el consumo.",
     "单步的性能分析追踪显示，占用显存最多的是激活值，而不是权重。"],
    ["The caching allocator keeps freed blocks, so memory looked used after the tensors were gone.",
     "El asignador con caché conserva los bloques liberados, así que la memoria parecía ocupada aunque los tensores ya no existían.",
     "缓存分配器会保留已释放的块，所以即使张量已经释放，显存看起来仍被占用。"],
    ["Evaluation ran inside the training loop without `torch.no_grad()`, which kept extra activations alive.",
     "La evaluación se ejecutaba dentro del bucle de entrenamiento sin `torch.no_grad()`, lo que mantenía vivas activaciones adicionales.",
     "评估在训练循环内运行且没有使用 `torch.no_grad()`，导致额外的激活值一直被保留。"],
    ["The same configuration had worked for weeks with a smaller model, so nobody suspected memory.",
     "La misma configuración había funcionado durante semanas con un modelo más pequeño, así que nadie sospechó de la memoria.",
     "同样的配置在较小的模型上运行了好几周，所以一开始没人怀疑是显存问题。"],
    ["We applied the change below and reran the full job on `{node}`.",
     "Aplicamos el cambio de abajo y volvimos a lanzar el trabajo completo en `{node}`.",
     "我们应用了下面的修改，并在 `{node}` 上重新运行了完整作业。"],
    ["Throughput changed by less than {a} percent, so the fix has no meaningful cost.",
     "El rendimiento cambió menos de un {a} por ciento, así que la solución no tiene un coste apreciable.",
     "吞吐量的变化不到百分之 {a}，因此这个修复几乎没有代价。"],
    ["Keep the effective batch the same: halve the micro-batch and double the accumulation.",
     "Mantén el lote efectivo: reduce el micro-lote a la mitad y duplica la acumulación.",
     "保持有效批次不变：把微批次减半，同时把梯度累积步数加倍。"],
    ["Alert when reserved memory stays near the capacity for more than {b} minutes.",
     "Conviene alertar cuando la memoria reservada se mantiene cerca de la capacidad durante más de {b} minutos.",
     "当预留显存接近容量并持续超过 {b} 分钟时应发出告警。"],
    ["Document the memory budget next to the job definition, and review it when the model grows.",
     "Documenta el presupuesto de memoria junto a la definición del trabajo y revísalo cuando crezca el modelo.",
     "把显存预算写在作业定义旁边，并在模型变大时重新评估。"],
];

/// Column headers of the measurement table.
pub(crate) const TABLE_HEADER: [&str; 3] = [
    "| Micro-batch | Block size | Step time (ms) | Utilisation (%) | Result |",
    "| Micro-lote | Tamaño de bloque | Tiempo por paso (ms) | Utilización (%) | Resultado |",
    "| 微批次 | 块大小 | 每步耗时（毫秒） | 利用率（%） | 结果 |",
];

/// Table result cells: `[ok, failed]` per language.
pub(crate) const RESULT: [[&str; 2]; 3] =
    [["ok", "**OOM**"], ["ok", "**OOM**"], ["正常", "**OOM**"]];

/// Lead-in sentence for the code block.
pub(crate) const CODE_INTRO: [&str; 3] = [
    "The commands we ran:",
    "Los comandos que ejecutamos:",
    "我们运行的命令如下：",
];

/// Heading of the computed section appended in the computed corpus.
pub(crate) const ESTIMATE_HEADING: [&str; 3] = [
    "What the estimator says",
    "Lo que dice el estimador",
    "估算结果",
];

/// Lead-in for the computed section: `{peak}`, `{fits}`, `{params}` become expressions.
pub(crate) const ESTIMATE_INTRO: [&str; 3] = [
    "For this configuration ({params} parameters) the estimated peak is {peak}. Verdict for the card: {fits}.",
    "Para esta configuración ({params} parámetros) el pico estimado es {peak}. Veredicto para la tarjeta: {fits}.",
    "对于这个配置（{params} 个参数），估算峰值为 {peak}。对这张显卡的结论：{fits}。",
];

/// Label of the one variant every computed guide has.
pub(crate) const VARIANT_LABEL: [&str; 3] = [
    "Half the micro-batch",
    "La mitad del micro-lote",
    "微批次减半",
];
