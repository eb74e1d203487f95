# Textos de la interfaz del sitio en español.
language-name = Español
nav-languages = Idiomas
footer-generated = Generado con vramdoc. Todas las cifras de memoria de este sitio se calculan a partir del escenario de cada guía.
markdown-edition = Edición en Markdown
machine-translated = Esta página se tradujo automáticamente y puede contener errores.
toc-title = Contenido
index-heading = Guías de memoria de GPU
index-intro = { $count ->
    [one] Una guía sobre adónde va la memoria de la GPU durante el entrenamiento y qué cambiar.
   *[other] { $count } guías sobre adónde va la memoria de la GPU durante el entrenamiento y qué cambiar.
}
date-format = { $day }/{ $month }/{ $year }
test-number = { NUMBER($value, minimumFractionDigits: 2) } GiB
index-description = Adónde va la memoria de la GPU al entrenar con nanoGPT, calculado para la tarjeta de cada guía, y qué cambiar cuando no cabe.
nav-breadcrumbs = Ruta de navegación
not-found-title = Página no encontrada
not-found-text = No hay nada publicado en esta dirección. Estas son las guías en este idioma:
not-found-languages = No hay nada publicado en esta dirección. Elige un idioma:
code-copy = Copiar
code-copied = Copiado
feed-title = Canal Atom
search-label = Buscar en las guías
search-placeholder = p. ej. memoria, acumulación
search-loading = Cargando el índice de búsqueda…
search-failed = No se pudo cargar el índice de búsqueda.
search-none = Ninguna guía contiene todas estas palabras.
# `%n` se sustituye por el número de resultados.
search-one = 1 guía encontrada
search-many = %n guías encontradas
nav-pager = Más guías
nav-previous = Guía anterior
nav-next = Guía siguiente
nav-guide-list = Todas las guías
nav-guide-list-link = La lista de todas las guías

# Maquetación (issue 23): enlace de salto, botón de esquema de color, copia fallida, aviso de desplazamiento.
skip-to-content = Saltar al contenido
theme-label = Esquema de color
theme-system = Sistema
theme-light = Claro
theme-dark = Oscuro
code-copy-failed = No se pudo copiar: selecciona el texto
scroll-hint = Desplázate hacia la derecha para ver más →

# Avisos de traducción; `$source` es el idioma del original, con su propio nombre.
translation-stale = Esta sección cambió en el original ({ $source }) después de traducirse.
translation-missing = Esta sección aún no está traducida; se muestra en el original ({ $source }).
translation-read-original = Leer el original
translation-status-title = Estado de la traducción
translation-status-intro = Las secciones de cada guía en este idioma: al día, cambiadas en el original después de traducirse (desactualizadas) o aún sin traducir (faltan).
translation-status-link = Estado de la traducción
translation-state-current = al día
translation-state-stale = desactualizada
translation-state-missing = falta
translation-state-untracked = sin registro
translation-status-complete = Todas las secciones de todas las guías están traducidas y al día.
