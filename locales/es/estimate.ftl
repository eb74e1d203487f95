# Etiquetas de `vramdoc estimate --format table|markdown`. Cada clave existe en en, es y zh.
est-title = Estimación de memoria de GPU
est-heading-scenario = Escenario
est-heading-model = Modelo
est-params-total = Parámetros
est-params-total-value = { $total } ({ $non_embedding } sin los embeddings de posición, como lo imprime nanoGPT)
est-params-total-value-model = { $total } ({ $non_embedding } sin los embeddings de posición)
est-params-total-value-moe = { $total }, todos los expertos en memoria ({ $active } por token)
est-params-groups = Grupos del optimizador
est-params-groups-value = { $decay } con decaimiento en { $decay_tensors } tensores; { $no_decay } sin decaimiento en { $no_decay_tensors }
est-effective-batch = Lote efectivo
est-effective-batch-value = { $sequences } secuencias = { $tokens } tokens por paso
est-ddp = DDP (por GPU)
est-ddp-value = { $world } procesos, { $accumulation } micropasos cada uno por paso del optimizador; cada GPU guarda además búferes de gradientes de { $buckets }
est-resume = Reanudación
est-resume-value = cargar el checkpoint llega a { $load }; sus pesos ({ $retained }) siguen referenciados por el state_dict de train.py durante todo el entrenamiento
est-heading-memory = Memoria en el pico del entrenamiento ({ $moment })
est-moment-loss_forward = la pérdida al final de la pasada hacia delante
est-moment-loss_backward = la pasada hacia atrás de la entropía cruzada
est-moment-head_backward = la pasada hacia atrás de la cabeza de salida y la norma final
est-moment-mlp_backward = backward del MLP del último bloque
est-moment-backward_end = el final de la pasada hacia atrás
est-moment-optimizer_step = el paso del optimizador
est-moment-attention_backward = la pasada hacia atrás de las puntuaciones de atención
est-moment-block_recompute = recálculo de un bloque con checkpointing
est-moment-no_training = sin paso de entrenamiento: eval_only evalúa una vez y termina
est-col-component = Componente
est-col-memory = Memoria
est-weights = Pesos ({ $dtype })
est-weights-nanochat = Pesos (matrices en fp32, embeddings en bf16)
est-gradients = Gradientes
est-optimizer = Estado del optimizador ({ $optimizer })
est-autocast = Copias de los pesos en 16 bits (autocast)
est-weight-casts-nanochat = Copias de los pesos en 16 bits (el Linear de nanochat)
est-activations = Activaciones guardadas para la pasada hacia atrás
est-logits = Logits y pérdida (lote × bloque × vocabulario)
est-train-peak = Pico del paso de entrenamiento
est-eval-peak = Pico de la evaluación (estimate_loss)
est-peak = Pico asignado por PyTorch ({ $phase })
est-phase-train = entrenamiento
est-phase-eval = evaluación
est-phase-load = la carga del checkpoint
est-overhead = Contexto CUDA, espacio de trabajo de cuBLAS, fragmentación
est-total = Total, tal como lo muestra nvidia-smi
est-logits-tensor = Un tensor de logits { $shape }: { $bytes }
est-verdict-fits = Cabe en la { $gpu } ({ $capacity }): con la sobrecarga en su extremo bajo y en el alto, el total es de { $range }, e incluso en el extremo alto sobran { $spare }.
est-verdict-no-fit = No cabe en la { $gpu } ({ $capacity }): el total es de { $range } y aun en el extremo bajo faltan { $missing }.
est-warn-no-bf16 = La { $gpu } no admite bf16: usa dtype=float16.
est-verdict-none = No se indicó ninguna GPU: añade --gpu ID (por ejemplo --gpu rtx-4070) para obtener un veredicto.
est-heading-options = Qué cambiar (primero lo que menos altera el entrenamiento)
est-col-option = Opción
est-col-change = Cambio
est-col-total = Total
est-col-saving = Ahorro
est-opt-micro_batch = Microlote más pequeño, mismo lote efectivo
est-opt-max_micro_batch = El mayor microlote que cabe, mismo lote efectivo
est-opt-eval_batch = Lote de evaluación más pequeño (un parche a estimate_loss)
est-opt-block_size = Contexto más corto
est-opt-flash = Flash attention
est-opt-grad_checkpoint = Gradient checkpointing (un parche; unos { $pct } más de cómputo)
est-opt-dtype = Autocast en bf16 en lugar de float32
est-opt-dtype_fp16 = Autocast en float16 con GradScaler (esta tarjeta no tiene bf16)
est-opt-optimizer = AdamW de 8 bits (bitsandbytes)
est-opt-bucket_view = Gradientes como vistas de los búferes de DDP (gradient_as_bucket_view=True)
est-opt-sharded_optimizer = Estado del optimizador repartido entre las GPU (ZeroRedundancyOptimizer)
est-opt-fsdp = Pesos, gradientes y estado del optimizador repartidos entre las GPU (FSDP)
est-opt-n_embd = Modelo más estrecho ({ $params } parámetros)
est-opt-n_layer = Modelo con menos capas ({ $params } parámetros)
est-changes-training = cambia el entrenamiento
est-no-options = Ninguna opción se aplica a este escenario.
est-ignored = Ignoradas, sin efecto en la memoria: { $keys }
est-note = Son estimaciones: el pico de entrenamiento sigue una reproducción exacta del paso de entrenamiento de nanoGPT; lo que queda fuera del asignador de PyTorch (contexto CUDA, fragmentación, kernels de torch.compile, espacio de trabajo de cuBLAS) se da como un rango documentado, y el veredicto dice qué parte de ese rango cabe.
est-verdict-tight = Va justo en la { $gpu } ({ $capacity }): el total es de { $range }; la estimación central cabe y el extremo alto no, así que depende del contexto CUDA del controlador y de cuánto se fragmente la caché del asignador.
est-verdict-others = Otros programas ocupan { $other } de la tarjeta, ya descontados.
est-total-range = Rango del total (contexto y fragmentación, mín.–máx.)
est-other-processes = Ocupado por otros programas en la tarjeta
est-col-share = Parte del pico
est-col-effective-batch = Lote efectivo
est-batch-tokens = { $sequences } ({ $tokens } tokens)
est-saving-more = ninguno: { $bytes } más
est-needs-code = no es un ajuste que lea train.py de nanoGPT, así que requiere cambiar el código.
est-needs-patch = un parche al código del modelo, no un ajuste de Trainer ni de from_pretrained.
est-opt-freeze_embeddings = Embeddings congelados (wte, que es también el peso de lm_head, y wpe; un parche de una línea)
est-opt-lora = LoRA de rango { $rank } en { $targets } (un parche; todos los pesos preentrenados congelados)
est-opt-combination = La combinación menos invasiva que cabe
est-opt-combination_tight = La combinación menos invasiva que podría caber
est-opt-combination_all = Todos estos cambios juntos (sigue sin caber)
est-opt-pure_bf16 = Pesos cargados en bfloat16 (dtype=torch.bfloat16) y entrenados tal cual
est-opt-qlora = QLoRA: pesos en 4 bits con LoRA de rango { $rank } en { $targets } (BitsAndBytesConfig y peft; todos los pesos preentrenados congelados)
est-opt-fused_cross_entropy = Entropía cruzada lineal fusionada, sin los logits completos (parche de Liger Kernel)
est-opt-batch_layout = Filas con relleno en lugar de sin relleno (SFTConfig(padding_free=False, packing=False)): las mismas secuencias, con una máscara por fila en vez de una sobre todo el lote aplanado
est-opt-flash_attention_2 = Los kernels de flash-attn para el lote sin relleno (attn_implementation="flash_attention_2", pip install flash-attn): sin máscara sobre los tokens aplanados
est-opt-hf-flash = Atención SDPA en lugar de eager (attn_implementation="sdpa")
est-opt-hf-grad_checkpoint = Gradient checkpointing (gradient_checkpointing=True; unos { $pct } más de cómputo)
est-opt-hf-dtype = Autocast en bf16 (bf16=True) en lugar de float32
est-opt-hf-optimizer = AdamW de 8 bits (bitsandbytes; el optim de Trainer)
est-opt-hf-optimizer-paged = AdamW de 8 bits paginado (bitsandbytes; el optim de Trainer; el estado pasa a la memoria de la CPU cuando falta)
est-opt-hf-dtype_fp16 = Autocast en fp16 (fp16=True; esta tarjeta no tiene bf16)
est-opt-hf-lora = LoRA de PEFT, rango { $rank } en { $targets } (todos los pesos preentrenados congelados)
est-trainable = Entrenados
est-trainable-frozen-value = { $trainable } de { $total } parámetros: los embeddings están congelados
est-trainable-lora-value = { $trainable } de { $total } parámetros: solo los adaptadores LoRA, de rango { $rank } en { $targets }

# Cuatro veredictos (issue 23).
est-col-verdict = Veredicto
est-verdict-with-range = { $verdict } ({ $range })
est-verdict-unlikely = Probablemente no cabe en la { $gpu } ({ $capacity }): el total es de { $range }; solo cabe el extremo bajo, así que haría falta un contexto CUDA mínimo y una caché del asignador casi sin fragmentar.
est-verdict-eager-bound = Estas cifras son las del paso sin compilar de nanochat (compile=false): base_train.py y chat_sft.py compilan el modelo con torch.compile, que guarda menos tensores (deje compile en su valor por defecto para estimarlo), así que la ejecución compilada puede necesitar menos. Pruébela y baje --device-batch-size si se queda sin memoria.
est-verdict-compiled = El pico de entrenamiento de { $peak } es el del paso compilado de nanochat: lo que la partición de inductor guarda para la pasada hacia atrás, más una copia en float32 de los logits ya acotados que el backend de C++ de inductor escribe en la pasada hacia delante de la pérdida. Los kernels Triton de CUDA pueden no guardar esa copia; sin ella el pico es de { $low }. El veredicto usa la cifra más alta.
est-merged = «{ $label }» es también { $others }: el mismo cambio, en una sola fila.
est-quoted = «{ $text }»
est-code-sharding = `sharding`: FSDP alrededor del modelo, o ZeroRedundancyOptimizer alrededor de AdamW (un parche a train.py)
est-code-gradient_as_bucket_view = `gradient_as_bucket_view`: gradient_as_bucket_view=True en la llamada DDP(...) de train.py (un parche de un solo argumento)
est-code-grad_checkpoint = `grad_checkpoint`: la pasada hacia delante de cada bloque envuelta en torch.utils.checkpoint (un parche a model.py)
est-code-optimizer = `optimizer`: otro optimizador en configure_optimizers (AdamW de 8 bits: instala bitsandbytes y usa su AdamW8bit)
est-code-eval_batch_size = `eval_batch_size`: un tamaño de lote propio para estimate_loss() (un parche a train.py)
est-code-pure_bf16 = `pure_bf16`: los propios pesos en bfloat16, model.to(torch.bfloat16) (un parche a train.py)
est-code-weights_dtype = `weights_dtype`: from_pretrained(..., dtype=torch.bfloat16) u otro dtype; si se omite, transformers 5 carga con dtype="auto", el dtype que indica el propio config.json
est-code-flash = `flash`: PyTorch 2.0 o posterior, cuyo scaled_dot_product_attention nanoGPT usa entonces por sí solo
est-code-attn_implementation = `attn_implementation`: from_pretrained(..., attn_implementation="sdpa") (el valor por defecto de transformers), "eager", o "flash_attention_2" tras pip install flash-attn
est-code-batch_layout = `batch_layout`: cómo arma el lote el collator: filas completas (texto ya troceado, o SFTConfig(packing=True, packing_strategy="wrapped") de TRL), filas con relleno (packing=False, el valor por defecto de TRL, con DataCollatorWithPadding) o filas sin relleno (SFTConfig(padding_free=True), o packing=True con su estrategia por defecto "bfd")
est-code-freeze_embeddings = `freeze_embeddings`: requires_grad = False en wte y wpe (un parche de una línea a train.py)
est-code-lora = `lora_rank`, `lora_targets`: adaptadores LoRA en esas capas con los pesos base congelados, por ejemplo con peft
est-code-bnb = `load_in_4bit`, `bnb_4bit_*`, `load_in_8bit`: from_pretrained(..., quantization_config=BitsAndBytesConfig(...)) con bitsandbytes instalado; para QLoRA, después prepare_model_for_kbit_training de peft y un LoraConfig
est-code-fused_linear_cross_entropy = `fused_linear_cross_entropy`: pip install liger-kernel (0.8.5) y, después de from_pretrained, liger_kernel.transformers._apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=True, rope=False, rms_norm=False, swiglu=False) (o apply_liger_kernel_to_<model_type>(...) antes de cargar el modelo); los demás kernels de Liger, activos por defecto, guardan menos de lo que cuenta la estimación

## Muestreo con sample.py de nanoGPT
sample-title = Estimación de memoria de GPU: muestreo con sample.py de nanoGPT
sample-model = Modelo
sample-model-value = init_from={ $init_from }: { $layers } capas, { $heads } cabezas, ancho { $width }, vocabulario de { $vocab }, contexto de { $block }; { $params } parámetros
sample-precision = Precisión
sample-generation = Generación
sample-generation-value = { $prompt_count ->
    [one] prompt de 1 token
   *[other] prompt de { $prompt } tokens como máximo
}, { $new } tokens nuevos por muestra, { $samples } muestras, top_k { $top_k }; el contexto más largo es de { $context } tokens, que se recalcula para cada token nuevo (sin caché KV)
sample-heading-memory = Memoria en el pico ({ $moment })
sample-moment-forward = la pasada hacia delante sobre el contexto más largo
sample-moment-next-token = la elección del siguiente token a partir de los logits
sample-weights = Pesos (float32, tras model.to(device))
sample-checkpoint = Checkpoint que sample.py mantiene en la GPU
sample-activations = Tensores de una pasada hacia delante ({ $context } tokens)
sample-logits = Logits, máscara top-k y probabilidades
sample-ids = Identificadores de tokens y posiciones (int64)
sample-kv-cache = Caché KV (nanoGPT no tiene)
sample-peak = Pico reservado por PyTorch
sample-heading-advice = Conviene saber
sample-advice-checkpoint = sample.py carga el checkpoint con map_location=device y lo conserva ({ $bytes }, pesos y estado del optimizador) hasta terminar; cargarlo con map_location='cpu' (un cambio de una línea) libera exactamente esa cantidad.
sample-advice-autocast = Autocast conserva una copia de 16 bits de cada peso de las capas Linear ({ $bytes }) mientras dura el muestreo, porque los pesos siguen requiriendo gradiente.
sample-note = Estimaciones: el pico sigue una reproducción exacta de sample.py y generate() de nanoGPT; lo que queda fuera del asignador de PyTorch (contexto CUDA, fragmentación, espacio de trabajo de cuBLAS) se da como un rango documentado, y el veredicto dice qué parte de ese rango cabe.
est-model-name = Modelo
est-model-name-value = { $name } ({ $family }, transformers { $version })
est-model-name-value-plain = { $name } ({ $family })
est-no-options-model = Ninguna de las alternativas que vramdoc calcula para este modelo se aplica aquí: cambie --batch_size, --block_size, --dtype o --grad_checkpoint y compare las estimaciones.
est-note-model = Son estimaciones: el pico de entrenamiento sigue una reproducción de un paso de Trainer con el propio código de Hugging Face transformers { $version } (forward con etiquetas, backward, recorte de gradientes, AdamW fusionado, gradientes a None); lo que queda fuera del asignador de PyTorch (contexto CUDA, fragmentación, espacio de trabajo de cuBLAS) se da como un rango documentado, y el veredicto dice qué parte de ese rango cabe.
est-note-trl = Son estimaciones: el pico de entrenamiento sigue una reproducción de un paso del SFTTrainer de TRL { $trl } con el propio código de Hugging Face transformers { $version } (la preparación de QLoRA de TRL, forward con etiquetas bajo autocast bf16, las métricas de compute_loss, backward, recorte de gradientes, el optimizador, gradientes a None); lo que queda fuera del asignador de PyTorch (contexto CUDA, fragmentación, espacio de trabajo de cuBLAS) se da como un rango documentado, y el veredicto dice qué parte de ese rango cabe.
est-note-nanochat = Estimaciones: el pico del entrenamiento sigue una reproducción del propio paso de base_train.py de nanochat { $commit } (su GPT compilado como lo compila el script, con lo que guarda la partición de inductor y lo que reserva su código envoltorio, o sin compilar con compile=false; su optimizador Muon y AdamW se ejecuta sin compilar; la atención pasa por el SDPA de PyTorch, no por FA3); lo que queda fuera del asignador de PyTorch (contexto CUDA, fragmentación, espacio de trabajo de cuBLAS) se da como un intervalo documentado, y el veredicto dice qué parte de ese intervalo cabe.

## Cálculos inversos (--solve) de la fase de generación
solve-max-context = Contexto más largo cuyo veredicto en { $gpu } es «cabe»: { $tokens } tokens ({ $prompt } de prompt + { $new } nuevos).
solve-max-context-none = Nada cabe en { $gpu }: ni siquiera un prompt de un token con { $new } tokens nuevos.
solve-limit-block-size = El límite es el recorte de sample.py, no la tarjeta: generate() recorta el contexto a sus últimos { $block } tokens (block_size), así que un prompt más largo también funciona, con el único coste de sus identificadores de tokens, y el modelo ve como máximo { $block } tokens.
solve-limit-positions = El límite son las { $positions } posiciones de GPT-2, no la tarjeta: generate no puede ir más allá.
solve-limit-rotary = El límite son las tablas rotatorias de nanochat, no la tarjeta: guardan { $positions } posiciones (10 × sequence_len) y el modelo no puede ir más allá.
solve-max-batch = Lote más grande cuyo veredicto en { $gpu } es «cabe»: { $batch } prompts a la vez.
solve-max-batch-none = Nada cabe en { $gpu }: ni siquiera un solo prompt.
solve-max-context-none-positions = Ningún contexto cabe en las posiciones del modelo: solo los { $new } tokens nuevos ya superan sus { $positions } posiciones ({ $source }).
solve-limit-rotary-positions = El límite son las { $positions } posiciones del modelo ({ $source }), no la tarjeta: transformers genera más allá con un aviso, pero el modelo nunca se entrenó con secuencias más largas, así que vramdoc no las cuenta como que caben (el contexto más largo que cuenta es de { $context } tokens: el último token nuevo nunca vuelve a entrar en el modelo).
solve-memory-bound = Solo por memoria, { $gpu } admitiría { $memory } tokens.
solve-memory-bound-table = Si su tabla de posiciones fuera más larga, { $gpu } admitiría { $memory } tokens.
solve-positions-bound = La tarjeta limita antes: las posiciones del propio modelo permitirían { $context } tokens ({ $positions } posiciones, { $source }).
solve-batch-past-positions = Este contexto supera las { $positions } posiciones del modelo ({ $source }): transformers genera más allá con un aviso, pero el modelo nunca se entrenó con esas posiciones.
solve-source-n-positions = n_positions, su tabla de posiciones aprendida
solve-source-max-position-embeddings = max_position_embeddings de su configuración
solve-source-yarn = factor × original_max_position_embeddings de YaRN
solve-source-rotary-table = la tabla rotatoria de nanochat, 10 × sequence_len

## generate de Hugging Face con un modelo
gen-title = Estimación de memoria de GPU: generate de Hugging Face
gen-title-nanochat = Estimación de memoria de GPU: Engine.generate de nanochat
gen-model = Modelo
gen-model-value = { $name }: { $params } parámetros, pesos en { $dtype }
gen-model-value-moe = { $name }: { $params } parámetros, todos los expertos en memoria ({ $active } por token), pesos en { $dtype }
gen-quant = Pesos cuantizados
gen-quant-4bit = las capas lineales de los bloques en { $format } de 4 bits (bitsandbytes); la cabeza, los embeddings y las normas en { $dtype }; entre 5 y 1536 filas por llamada la GPU elige el kernel de bitsandbytes, y vramdoc cuenta la alternativa que descuantiza, la mayor
gen-quant-4bit-moe = las capas lineales de los bloques en { $format } de 4 bits (bitsandbytes); los expertos, el enrutador, la cabeza, los embeddings y las normas en { $dtype } (transformers solo convierte módulos nn.Linear); entre 5 y 1536 filas por llamada la GPU elige el kernel de bitsandbytes, y vramdoc cuenta la alternativa que descuantiza, la mayor
gen-quant-int8 = las capas lineales de los bloques en int8 (LLM.int8() de bitsandbytes); la cabeza, los embeddings y las normas en { $dtype }; se suponen 64 columnas atípicas en cada llamada (lo deciden los datos; sin ninguna, una salida menos)
gen-quant-int8-moe = las capas lineales de los bloques en int8 (LLM.int8() de bitsandbytes); los expertos, el enrutador, la cabeza, los embeddings y las normas en { $dtype } (transformers solo convierte módulos nn.Linear); se suponen 64 columnas atípicas en cada llamada (lo deciden los datos; sin ninguna, una salida menos)
gen-call = Generación
gen-call-value = { $batch } × prompts de { $prompt } tokens, { $new } tokens nuevos, { $sequences_count ->
    [one] una secuencia
   *[other] { $sequences } secuencias
} por prompt, caché KV { $cache }
gen-beams = Búsqueda por haces
gen-beams-value = { $beams } haces por prompt (num_beams), voraz; calculada como corre _beam_search de transformers cuando ningún token de fin de secuencia detiene un haz: ningún haz termina antes, cada paso conserva los { $beams } haces y sus { $candidates } candidatos hasta max_new_tokens, y la caché se reordena (copiando una capa cada vez) tras cada paso
gen-call-value-nanochat = un prompt de { $prompt } tokens prellenado una vez, { $batch_count ->
    [one] una fila muestreada
   *[other] { $batch } filas muestreadas
} de él (num_samples), { $new } tokens nuevos cada una, KVCache de nanochat reservada para { $context } posiciones
gen-weights = Pesos
gen-kv-cache = Caché KV en su tamaño máximo
gen-load-peak = Pico de la carga del checkpoint (build_model)
gen-prefill-peak = Pico del prellenado (todo el prompt de una vez)
gen-decode-peak = Pico de los pasos de decodificación
gen-moment-prefill = el prellenado
gen-moment-decode = los pasos de decodificación
gen-moment-load = la carga del checkpoint
gen-note = Estimaciones: los picos siguen una reproducción de generate de transformers con tensores falsos (prellenado y decodificación, SDPA, ejecución inmediata); lo que queda fuera del asignador de PyTorch (contexto CUDA, fragmentación, espacio de trabajo de cuBLAS) se da como un rango documentado, y el veredicto dice qué parte de ese rango cabe.
gen-beyond-positions = Este contexto ({ $tokens } tokens) supera las { $positions } posiciones del modelo ({ $source }): transformers sigue generando, con un único aviso de que la llamada «has exceeded the model's predefined maximum length», y la memoria de arriba es la de la longitud pedida, pero el modelo nunca se entrenó con esas posiciones, así que lo que escriba ahí no es aquello para lo que se construyó.
gen-note-nanochat = Estimaciones: los picos siguen una reproducción de build_model y Engine.generate del propio nanochat con tensores falsos (SDPA de respaldo, ejecución inmediata, muestreo con temperatura y sin top-k); lo que queda fuera del asignador de PyTorch (contexto CUDA, fragmentación, espacio de trabajo de cuBLAS) se da como un rango documentado, y el veredicto dice qué parte de ese rango cabe.
gen-heading-options = Qué cambiar (primero lo que menos altera la salida)
gen-opt-static-cache = Caché estática (reservada de antemano para toda la longitud)
gen-opt-dynamic-cache = Caché dinámica (crece con la secuencia)
gen-opt-dtype = Pesos en { $dtype }
gen-opt-int8-weights = Capas lineales en 8 bits (LLM.int8() de bitsandbytes; las columnas atípicas siguen en 16 bits)
gen-opt-int8-cache = Caché KV cuantizada a int8 (HQQ; los últimos 128 tokens en precisión completa)
gen-opt-fp8-cache = Caché KV en float8 (el backend fp8 de transformers; una escala por las claves y los valores de cada capa)
gen-opt-quantized-cache = Caché KV cuantizada a int4 (optimum-quanto; los últimos 128 tokens en precisión completa)
gen-opt-4bit-weights = Capas lineales en NF4 de 4 bits (bitsandbytes, doble cuantización, cálculo en { $dtype })
gen-opt-autocast = Autocast en { $dtype } (los pesos siguen en float32)
gen-opt-fewer-sequences = La mitad de secuencias devueltas
gen-opt-smaller-batch = La mitad de prompts por llamada
gen-opt-max-batch = El lote más grande que cabe
gen-opt-fewer-beams = La mitad de haces
gen-opt-no-beams = Sin búsqueda por haces (num_beams=1)
gen-opt-fewer-new-tokens = La mitad de tokens nuevos
gen-opt-max-context = Prompt recortado al contexto más largo que cabe
gen-opt-combination = El menor cambio combinado que cabe
gen-no-options = No hay cambios que proponer: la llamada ya usa los ajustes más pequeños que vramdoc calcula.
gen-options-not-computed = Sin calcular, por eso no aparecen: una caché cuantizada o fp8 en GPT-2 o junto a capas de ventana deslizante (transformers rechaza lo segundo; el modelo de generate no reproduce lo primero).
gen-options-not-computed-beams = Sin calcular, por eso no aparecen: con búsqueda por haces, una caché cuantizada o fp8 (la búsqueda por haces solo se reproduce con las cachés dinámica y estática).
gen-options-not-computed-nanochat = Sin calcular, por eso no aparecen: float16 (NANOCHAT_DTYPE=float16), los kernels de FA3 y un modelo compilado (la reproducción ejecuta el SDPA de respaldo de nanochat, sin compilar).
sample-options-not-computed = Sin calcular, por eso no aparece: un recorte block_size más pequeño (sample.py recorta el contexto al block_size del propio modelo; un recorte más corto es un cambio de código que la estimación del muestreo no modela).
