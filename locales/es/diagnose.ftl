# vramdoc diagnose: explicación de un mensaje de falta de memoria CUDA de PyTorch.
diag-title = Diagnóstico de un error de falta de memoria CUDA
diag-heading-message = Lo que dice el mensaje (formato de PyTorch { $version })
diag-requested = Reserva que falló
diag-capacity = Capacidad total de la GPU { $gpu }
diag-free = Libre en el momento del fallo
diag-process = En uso por este proceso (de PyTorch y ajeno)
diag-allocated = Asignado por PyTorch (tensores)
diag-reserved-unallocated = Reservado por PyTorch pero sin asignar
diag-reserved = Reservado por PyTorch en total
diag-process-line = Proceso { $pid }
diag-other = Ocupado por otros programas (capacidad − libre − este proceso)
diag-non-pytorch = Este proceso fuera de la caché de PyTorch (contexto CUDA, bibliotecas)
diag-outside = Fuera de la caché de PyTorch: el contexto CUDA de este proceso más otros programas (capacidad − libre − reservado)
diag-heading-tensor = La reserva que falló
diag-tensor = Los { $size } son { $tensor }: un tensor { $shape } en { $dtype } de { $bytes }.
diag-tensor-none = Ningún tensor grande de este escenario ocupa { $size }; el más cercano es { $tensor } ({ $shape }, { $bytes }). Comprueba batch_size, block_size, vocab_size y dtype con los de la ejecución.
diag-t-logits = los logits de un micropaso de entrenamiento (lote × bloque × vocabulario)
diag-t-logits_fp32 = la copia en float32 de los logits de un micropaso (nll_loss se ejecuta en float32 con autocast, y su backward escribe un gradiente del mismo tamaño)
diag-t-eval_logits = los logits de la evaluación (estimate_loss, lote × bloque × vocabulario)
diag-t-eval_logits_fp32 = la copia en float32 de los logits de la evaluación (nll_loss se ejecuta en float32 con autocast)
diag-t-wte_grad = el gradiente del embedding de tokens (compartido con lm_head)
diag-t-wte_moment = un momento de AdamW del embedding de tokens, creado en el primer paso del optimizador
diag-t-attention_scores_fp32 = las puntuaciones de atención de una capa en float32 (sin flash attention)
diag-t-attention_scores = las puntuaciones de atención de una capa en 16 bits (sin flash attention)
diag-t-eval_attention_scores_fp32 = las puntuaciones de atención de una capa durante la evaluación, en float32 (sin flash attention)
diag-t-mlp_hidden = la capa oculta del MLP de un bloque
diag-t-qkv = la proyección de consulta, clave y valor de un bloque
diag-t-residual = el flujo residual de un bloque (float32)
diag-phase = Fase: { $phase } ({ $source }).
diag-phase-evaluation = la evaluación, dentro de estimate_loss()
diag-phase-forward = la pasada hacia delante de un micropaso de entrenamiento
diag-phase-backward = la pasada hacia atrás de un micropaso de entrenamiento
diag-phase-optimizer_step = el paso del optimizador
diag-source-traceback = según el traceback
diag-source-memory = lo que tenía PyTorch más la reserva fallida es lo más cercano al pico que el estimador calcula para esta fase
diag-source-tensor = es la única fase que reserva este tensor
diag-phase-unknown = Fase: el mensaje por sí solo no basta para decidirla; pega el traceback completo.
diag-first-step = Es la evaluación de la iteración 0: nanoGPT evalúa antes del primer paso de entrenamiento, así que aún no hay gradientes ni estado del optimizador, y la evaluación por sí sola ya no cabe.
diag-heading-fragmentation = Fragmentación
diag-frag-cause = PyTorch tenía { $unalloc } reservados sin asignar; junto con los { $free } libres habrían bastado para los { $size }: la caché estaba fragmentada. Define PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
diag-frag-large = PyTorch tiene { $unalloc } reservados sin asignar, señal de una caché fragmentada: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True deja que el asignador amplíe sus segmentos en lugar de acumular muchos. No reduce el tamaño de la reserva.
diag-frag-none = Solo hay { $unalloc } reservados sin asignar: la fragmentación no es la causa; la memoria está realmente en uso.
diag-heading-estimate = Este escenario en esta tarjeta
diag-gpu-from-message = La tarjeta es la que describe el mensaje ({ $capacity }).
diag-estimate = El estimador sitúa el pico asignado por PyTorch en { $peak } y el total del proceso en { $range }.
diag-missing = No se indicó ningún escenario, así que el mensaje solo dice lo anterior. Estas claves permitirían identificar el tensor y ordenar las opciones: { $keys } (--config FICHERO o --set CLAVE=VALOR).
diag-phase-training_step = un micropaso de entrenamiento (forward o backward)
diag-col-figure = Cifra del mensaje
diag-col-size = Tamaño
diag-frag-v1 = Este mensaje es de PyTorch 1, cuyo asignador no tiene segmentos expandibles: ahí usa en su lugar PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128, como sugiere el propio mensaje.
diag-gpu-candidates = La tarjeta tiene la capacidad que indica el mensaje ({ $capacity }), igual que { $cards }; indica la tuya con --gpu ID.
