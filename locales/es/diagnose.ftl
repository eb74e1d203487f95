# vramdoc diagnose: explicación de un mensaje de falta de memoria CUDA de PyTorch.
diag-title = Diagnóstico de un error de falta de memoria CUDA
diag-heading-message = Lo que dice el mensaje (el formato que imprime PyTorch { $versions })
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
diag-t-logits = los logits de un micro-paso de entrenamiento (lote × bloque × vocabulario)
diag-t-logits_fp32 = la copia en float32 de los logits de un micro-paso (nll_loss se ejecuta en float32 con autocast, y su backward escribe un gradiente del mismo tamaño)
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
diag-phase-forward = el pase forward de un micro-paso de entrenamiento
diag-phase-backward = el pase backward de un micro-paso de entrenamiento
diag-phase-optimizer_step = el paso del optimizador
diag-source-traceback = según el traceback
diag-source-memory = lo que tenía PyTorch más la reserva fallida es lo más cercano al pico que el estimador calcula para esta fase
diag-source-tensor = es la única fase que reserva este tensor
diag-phase-unknown = Fase: el mensaje por sí solo no basta para decidirla; pega el traceback completo.
diag-first-step = Es la evaluación de la iteración 0: nanoGPT evalúa antes del primer paso de entrenamiento, así que aún no hay gradientes ni estado del optimizador, y la evaluación por sí sola ya no cabe.
diag-heading-fragmentation = Fragmentación
diag-frag-cause = PyTorch tenía { $unalloc } reservados sin asignar; junto con los { $free } libres habrían bastado para los { $size }: la caché estaba fragmentada.
diag-frag-large = PyTorch tiene { $unalloc } reservados sin asignar, señal de una caché fragmentada. Ningún ajuste reduce el tamaño de la reserva.
diag-frag-none = Solo hay { $unalloc } reservados sin asignar: la fragmentación no es la causa; la memoria está realmente en uso.
diag-heading-estimate = Este escenario en esta tarjeta
diag-gpu-from-message = La tarjeta es la que describe el mensaje ({ $capacity }); ninguna tarjeta del catálogo coincide, así que ninguna opción propone bf16.
diag-estimate = El estimador sitúa el pico asignado por PyTorch en { $peak } y el total del proceso en { $range }.
diag-missing = No se indicó ningún escenario, así que el mensaje solo dice lo anterior. Estas claves permitirían identificar el tensor y ordenar las opciones: { $keys } (--config FICHERO o --set CLAVE=VALOR).
diag-phase-training_step = un micro-paso de entrenamiento (forward o backward)
diag-col-figure = Cifra del mensaje
diag-col-size = Tamaño
diag-gpu-candidates = La tarjeta tiene la capacidad que indica el mensaje ({ $capacity }), igual que { $cards }; indica la tuya con --gpu ID.
diag-heading-message-mps = Lo que dice el mensaje (Apple MPS, PyTorch { $versions })
diag-not-printed = no aparece
diag-private-pools = De ello, en pools privados (grafos CUDA)
diag-process-more = { $count } procesos más en la lista
diag-mps-allocated = Asignado por el asignador MPS de PyTorch
diag-mps-other = Otras reservas de este proceso (Metal)
diag-mps-limit = Máximo permitido (el límite sobre la memoria compartida)
diag-mps-explain = Las GPU de Apple comparten la memoria del Mac: no hay una tarjeta que se llene, sino el límite que PyTorch pone a su parte de la RAM. Con la petición se querían { $used } de { $limit } permitidos. PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 quita el límite, con el riesgo de que todo el sistema se quede sin memoria; reducir el lote o el bloque es el cambio seguro.
diag-frag-mps = El mensaje de MPS no da cifras de la caché: con él no se puede juzgar la fragmentación.
diag-heading-checks = Comprobación de las cifras
diag-check-all-zero = Todas las cifras del mensaje son cero: ningún asignador imprime eso, así que el texto se editó o se cortó. No se concluye nada de sus cifras.
diag-check-free-above-capacity = Lo libre ({ $a }) supera la capacidad de la tarjeta ({ $b }): imposible. No se saca ninguna conclusión sobre otros programas ni sobre la fragmentación.
diag-check-allocated-above-reserved = Lo asignado ({ $a }) supera lo que PyTorch reservó en total ({ $b }): imposible, porque los tensores viven dentro de la memoria reservada. No se saca ninguna conclusión sobre la fragmentación ni sobre otros programas.
diag-check-reserved-above-process = La caché de PyTorch ({ $a }) es mayor que todo lo que ocupa este proceso ({ $b }): imposible. No se saca ninguna conclusión sobre otros programas ni sobre el contexto CUDA del proceso.
diag-check-in-use-above-capacity = La memoria libre más lo que ocupan los procesos ({ $a }) supera la tarjeta ({ $b }): imposible. Con estas cifras no se calcula lo que ocupan otros programas.
diag-check-process-above-capacity = El proceso { $pid } ocupa { $a }, más que toda la tarjeta ({ $b }): imposible. Con estas cifras no se calcula lo que ocupan otros programas.
diag-check-request-above-capacity = Esta sola reserva ({ $a }) es mayor que toda la tarjeta ({ $b }): ningún ajuste del asignador, ni la caché, ni otro programa lo explican. Es ese tensor el que tiene que encoger (un lote o un bloque menor, o un cálculo por trozos).
diag-check-several-messages = El texto contiene { $count } mensajes de falta de memoria; este informe lee el último.
diag-check-scenario = La estimación del escenario ({ $a } con otros programas) cabe en esta tarjeta ({ $b }), pero la ejecución falló con { $c } ocupados: el escenario no puede ser la ejecución. Diferencias probables: batch_size o block_size, dtype, otros programas en la tarjeta u otro modelo (n_layer, n_embd, vocab_size). Pasa la configuración real de la ejecución.
diag-cards-none = Ninguna tarjeta del catálogo muestra { $capacity } (con un margen de { $tolerance }, la variación entre drivers): se toma la tarjeta tal como aparece, y ninguna opción propone bf16, que quizá no tenga.
diag-cards-one = La capacidad del mensaje ({ $capacity }) es la de una { $card }.
diag-cards-many = La capacidad del mensaje ({ $capacity }) encaja con varias tarjetas: { $cards }. Indica la tuya con --gpu ID.
diag-variant-ecc-on = ECC activado
diag-variant-ecc-off = ECC desactivado
diag-variant-windows = Windows
diag-frag-too-big = No es fragmentación: la reserva es mayor que toda la tarjeta (ver arriba).
diag-frag-unknown = No se concluye nada sobre la fragmentación: las cifras del mensaje se contradicen (ver arriba).
diag-frag-no-free = PyTorch tiene { $unalloc } reservados sin asignar; el mensaje no da la memoria libre, así que no se sabe si habrían bastado para los { $size }.
diag-set-expandable = Define PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: el asignador amplía entonces sus segmentos en lugar de acumular muchos.
diag-set-expandable-suggested = Define PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, como sugiere el propio mensaje: el asignador amplía entonces sus segmentos en lugar de acumular muchos.
diag-set-max-split = Este PyTorch ({ $versions }) no tiene segmentos expandibles: usa en su lugar PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128.
diag-set-max-split-suggested = Este PyTorch ({ $versions }) no tiene segmentos expandibles: usa en su lugar PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128, como sugiere el propio mensaje.
diag-set-on = expandable_segments:True ya está activado en este registro: el asignador no tiene otro ajuste, así que hay que bajar el pico.
diag-set-none = Este PyTorch ({ $versions }) no tiene ningún ajuste del asignador contra la fragmentación (max_split_size_mb llegó en la 1.10, expandable_segments en la 2.1); un PyTorch más reciente los tiene.
diag-other-line = Línea { $line }: { $quoted }
diag-other-no-numbers = Este error no da ninguna cifra del asignador, así que no se identifica ningún tensor. Si en el mismo registro aparece un mensaje «CUDA out of memory. Tried to allocate …», pasa ese.
diag-other-cuda-error-title = CUDA error: out of memory (no es el asignador con caché de PyTorch)
diag-other-cuda-error-meaning = Una llamada CUDA fuera de la caché de PyTorch no obtuvo memoria. Casi siempre es la creación del contexto CUDA en el primer uso de CUDA (model.to(device), torch.cuda.set_device) en una tarjeta que otro proceso ya llena.
diag-other-cuda-error-check = Mira en nvidia-smi si hay otros procesos en la tarjeta (una ejecución anterior que sigue viva, un kernel de notebook), si CUDA_VISIBLE_DEVICES apunta a una tarjeta ocupada y si varios rangos caen en la misma GPU (llama a torch.cuda.set_device(local_rank) antes de cualquier trabajo CUDA). CUDA informa de los errores con retraso: CUDA_LAUNCH_BLOCKING=1 muestra la llamada que falló.
diag-other-cublas-title = CUBLAS_STATUS_ALLOC_FAILED: cuBLAS no pudo reservar su espacio de trabajo
diag-other-cublas-meaning = cuBLAS reserva su handle y su espacio de trabajo en la primera multiplicación de matrices, fuera de los tensores de PyTorch. Falló porque la tarjeta ya estaba llena, normalmente por la propia caché de PyTorch o por otro proceso.
diag-other-cublas-check = Mira en nvidia-smi si hay otros procesos; baja el lote para que la caché deje sitio; CUBLAS_WORKSPACE_CONFIG=:16:8 pide un espacio de trabajo menor.
diag-other-cudnn-title = cuDNN no pudo obtener su espacio de trabajo
diag-other-cudnn-meaning = Los algoritmos de cuDNN necesitan un espacio de trabajo junto a los tensores; este no se pudo reservar, así que la tarjeta estaba casi llena.
diag-other-cudnn-check = Baja el lote; pon torch.backends.cudnn.benchmark = False (al medir prueba algoritmos con espacios de trabajo grandes); mira en nvidia-smi si hay otros procesos.
diag-other-nccl-title = NCCL no pudo reservar sus búferes
diag-other-nccl-meaning = NCCL reserva sus búferes de comunicación fuera de la caché de PyTorch al crear o ampliar un comunicador; en la tarjeta ya no quedaba sitio para ellos.
diag-other-nccl-check = Comprueba si hay otros procesos en la tarjeta y si varios rangos comparten una GPU (fija el dispositivo de cada rango local antes de init_process_group); baja NCCL_BUFFSIZE (4 MiB por defecto) o el lote para dejar sitio.
diag-cards-settled = La capacidad del mensaje ({ $capacity }) es la de una { $card }; con la variación entre drivers también podría ser { $cards }: si es otra, indícala con --gpu ID.
diag-check-reserved-above-capacity = PyTorch reservó { $a }, más que toda la tarjeta ({ $b }): imposible para memoria de la tarjeta (un driver modificado o la memoria unificada pueden imprimirlo). No se saca ninguna conclusión sobre otros programas ni sobre la fragmentación.
