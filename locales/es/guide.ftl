# Tablas y gráficos calculados dentro de las guías.
exact-bytes = { $bytes } bytes
verdict-fits = cabe
verdict-no-fit = no cabe
verdict-unknown = sin GPU indicada
component-capacity = Capacidad de la { $gpu }
table-param-group = Parámetros
table-param-count = Cantidad
table-param-tensors = Tensores
param-total = Total (lm_head comparte pesos con wte)
param-non-embedding = Sin embeddings (lo que imprime nanoGPT)
param-trainable = Entrenados (el resto, congelados)
param-lora = En los adaptadores LoRA (A y B)
param-decay = Con decaimiento de pesos (tensores 2D)
param-no-decay = Sin decaimiento de pesos (sesgos, LayerNorm)
chart-breakdown-title = Adónde va la memoria
chart-breakdown-alt = Barra apilada con los componentes de la memoria: { $total } en total, { $peak } en el pico del asignador.
chart-capacity = { $gpu }: { $size }
chart-sweep-title-batch-size = Memoria total (la que muestra nvidia-smi) según el tamaño del microlote
chart-sweep-title-block-size = Memoria total (la que muestra nvidia-smi) según el tamaño de bloque
chart-x-batch-size = microlote (batch_size)
chart-x-block-size = longitud de contexto (block_size)
chart-y-memory = GiB
chart-series-total = total estimado (nvidia-smi)
chart-max-fit = el mayor que cabe con el extremo alto: { $value }
chart-sweep-alt = { $title }, con su rango bajo–alto sombreado, en ejes lineales; el mayor valor que cabe es { $value }.
chart-segment = { $name }: { $size }
verdict-tight = va justo
chart-series-range = rango (contexto y fragmentación)
chart-capacity-others = { $gpu }: { $free } de { $size } junto a otros programas

# Cuatro veredictos y su regla, bajo cada tabla y gráfico que muestra uno (issue 23).
verdict-unlikely = probablemente no cabe
verdict-label = Veredicto
verdict-rule = El veredicto compara el total que mostraría nvidia-smi con la memoria libre para la ejecución: «cabe» si cabe incluso el extremo alto del rango del total; «va justo» si cabe la estimación central pero no el extremo alto; «probablemente no cabe» si solo cabe el extremo bajo; «no cabe» si ni siquiera cabe el extremo bajo.
verdict-free-all = Se supone libre toda la memoria de la { $gpu } ({ $size }), sin otros programas en la tarjeta.
verdict-free-others = Se suponen libres { $free }: los { $size } de la { $gpu } menos los { $other } que ocupan otros programas.
chart-caption-sweep = La línea es la estimación central, con su rango bajo–alto sombreado. La marca señala el mayor valor cuyo extremo alto cabe (veredicto «cabe»), { $value }; por eso la línea cruza la capacidad más a la derecha.
chart-caption-sweep-none = La línea es la estimación central, con su rango bajo–alto sombreado; ningún valor cabe con su extremo alto, así que no hay marca.
chart-caption-sweep-no-gpu = La línea es la estimación central, con su rango bajo–alto sombreado.
chart-caption-block-64 = Los valores de block_size van en múltiplos de 64.
chart-caption-breakdown = La barra es la estimación central, { $total }; frente a los { $free } libres, el veredicto es: { $verdict }.

# La respuesta corta bajo el título de una guía (issue 23).
answer-title = Respuesta corta
answer-verdict = En la { $gpu }: { $verdict }. La ejecución necesita unos { $total } (el total que mostraría nvidia-smi); la tarjeta ofrece a PyTorch { $capacity }.
answer-change = El cambio que cabe alterando menos el entrenamiento: { $option } ({ $total }).
answer-fits = Cabe tal como está configurado: no hace falta ningún cambio.
answer-none = Ninguna opción cabe por sí sola; la tabla muestra cuánto se acerca cada una.
answer-command-intro = O en la línea de órdenes:
answer-needs-code = No es un ajuste que lea train.py: requiere cambiar el código.
answer-needs-patch = No es un ajuste de Trainer ni de from_pretrained: modifica el código del modelo (Liger Kernel, pip install liger-kernel).
answer-to-table = Todas las opciones
answer-to-charts = Gráficos

# Una guía de generate: la tabla de los solucionadores y el gráfico de contexto (issue 22).
solve-col-model = Modelo
solve-col-card = Tarjeta
solve-col-weights = Pesos
solve-col-context = Contexto más largo que cabe
solve-cell-model-cache = { $model }, `kv_cache: { $cache }`
solve-col-batch = Secuencias a la vez
solve-cell-context = { $tokens } tokens ({ $prompt } de prompt)
solve-cell-model-limit = (el límite del propio modelo)
solve-cell-none = no cabe nada
solve-cell-batch = { $batch } × { $tokens } tokens
solve-table-note = Cada respuesta es el mayor valor cuyo veredicto es «cabe», con { $new } tokens nuevos tras cada prompt; la columna de secuencias mantiene el prompt de cada fila.
chart-context-title = Memoria según la longitud de contexto: { $model } en la { $gpu }
chart-x-context = contexto (prompt + tokens nuevos)
chart-layer-weights = pesos
chart-layer-kv = caché KV
chart-layer-step = activaciones y logits del paso del pico (prellenado o decodificación)
chart-layer-overhead = contexto CUDA, espacio de trabajo de cuBLAS, fragmentación
chart-context-fit = contexto más largo que cabe: { $value } tokens
chart-context-alt = { $title }: áreas apiladas de los pesos, la caché KV, los tensores del paso del pico y la sobrecarga, frente a la capacidad de la tarjeta.
chart-caption-context = La parte de arriba de la pila es la estimación central de lo que mostraría nvidia-smi, con { $new } tokens nuevos tras cada prompt. La línea vertical es el contexto más largo cuyo extremo alto cabe (veredicto «cabe»), { $value } tokens, así que la pila cruza la capacidad algo más a la derecha.
chart-caption-context-none = La parte de arriba de la pila es la estimación central de lo que mostraría nvidia-smi, con { $new } tokens nuevos tras cada prompt; ningún contexto cabe con su extremo alto, así que no se marca nada.
