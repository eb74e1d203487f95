//! The benchmark's corpora: a plain one (600–900-word notes with headings, a table and a fenced
//! code block, in en/es/zh) and a computed one (the same pages with a nanoGPT scenario, two
//! tables, two charts and inline figures).
//!
//! The plain corpus is either generated here (deterministic: guide `k` is the same whatever N is)
//! or read from `gen_site.py --format plain` output. The computed corpus is always derived from a
//! plain one by [`to_computed`], so both measure the same prose.

mod text;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The site's languages, in the order of the sentence banks.
pub(crate) const LANGS: [&str; 3] = ["en", "es", "zh"];

/// The `vramdoc.yaml` the benchmark sites use.
pub(crate) const SITE_CONFIG: &str = "title: \"GPU memory notes\"\nbase_url: https://example.org/\nlanguages: [en, es, zh]\ndefault_language: en\n";

/// Distinct nanoGPT scenarios cycled over the computed corpus: (front matter, batch size).
const SCENARIOS: [(&str, u32); 6] = [
    ("n_layer: 12\n  n_head: 12\n  n_embd: 768\n  block_size: 1024\n  batch_size: 16\n  gradient_accumulation_steps: 32\n  dtype: bfloat16\n  compile: true\n  gpu: rtx-3060-12gb", 16),
    ("n_layer: 6\n  n_head: 6\n  n_embd: 384\n  vocab_size: 65\n  block_size: 256\n  batch_size: 64\n  gradient_accumulation_steps: 1\n  dtype: float16\n  compile: true\n  gpu: rtx-4070", 64),
    ("n_layer: 24\n  n_head: 16\n  n_embd: 1024\n  block_size: 1024\n  batch_size: 8\n  gradient_accumulation_steps: 64\n  dtype: bfloat16\n  compile: true\n  gpu: a100-80gb", 8),
    ("n_layer: 36\n  n_head: 20\n  n_embd: 1280\n  block_size: 1024\n  batch_size: 4\n  gradient_accumulation_steps: 128\n  dtype: bfloat16\n  compile: true\n  gpu: h100-80gb", 4),
    ("n_layer: 12\n  n_head: 12\n  n_embd: 768\n  block_size: 1024\n  batch_size: 12\n  gradient_accumulation_steps: 40\n  dtype: float16\n  compile: false\n  gpu: t4", 12),
    ("n_layer: 12\n  n_head: 12\n  n_embd: 768\n  block_size: 2048\n  batch_size: 8\n  gradient_accumulation_steps: 60\n  dtype: bfloat16\n  compile: true\n  gpu: rtx-4090", 8),
];

const GPUS: [&str; 6] = [
    "RTX 3060 12 GB",
    "RTX 4070",
    "A100 80GB",
    "H100",
    "T4",
    "RTX 4090",
];
const MODELS: [&str; 5] = [
    "nanoGPT 124M",
    "a baby GPT",
    "GPT-2 medium",
    "GPT-2 large",
    "a 6-layer GPT",
];
const FRAMEWORKS: [&str; 4] = ["PyTorch 2.3", "PyTorch 2.4", "PyTorch 2.5", "PyTorch 2.6"];

/// A small deterministic generator (SplitMix64), seeded per guide.
struct Rng(u64);

impl Rng {
    fn new(index: usize) -> Self {
        Rng(0x5EED_0000_0000_0000 ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `lo..hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }
}

/// One guide's plan, shared by its three language versions.
struct Plan {
    index: usize,
    slots: [(&'static str, String); 7],
    symptom: usize,
    sections: Vec<(usize, Vec<Vec<usize>>)>,
    rows: Vec<[u32; 4]>,
    python: bool,
}

/// The slug of guide `index`.
pub(crate) fn slug(index: usize) -> String {
    format!("note-{index:05}")
}

fn plan(index: usize) -> Plan {
    let mut rng = Rng::new(index);
    let gpu = index % GPUS.len();
    let slots = [
        ("{gpu}", GPUS[gpu].to_string()),
        ("{model}", MODELS[rng.range(0, MODELS.len())].to_string()),
        (
            "{fw}",
            FRAMEWORKS[rng.range(0, FRAMEWORKS.len())].to_string(),
        ),
        ("{node}", format!("gpu-node-{:02}", rng.range(1, 64))),
        ("{ticket}", format!("OPS-{}", rng.range(1000, 9999))),
        ("{a}", rng.range(2, 90).to_string()),
        ("{b}", rng.range(8, 97).to_string()),
    ];
    let mut chosen: Vec<usize> = (0..text::HEADINGS.len())
        .filter(|h| text::MANDATORY.contains(h) || rng.range(0, 2) == 0)
        .collect();
    chosen.truncate(6);
    let mut sections: Vec<(usize, Vec<Vec<usize>>)> =
        chosen.into_iter().map(|h| (h, Vec::new())).collect();
    let target = rng.range(520, 800); // prose words; the table and code add the rest
    let mut words = 0;
    'fill: loop {
        for (_, paragraphs) in sections.iter_mut() {
            let para: Vec<usize> = (0..rng.range(3, 5))
                .map(|_| rng.range(0, text::SENTENCES.len()))
                .collect();
            words += para
                .iter()
                .map(|&s| text::SENTENCES[s][0].split_whitespace().count())
                .sum::<usize>();
            paragraphs.push(para);
            if words >= target {
                break 'fill;
            }
        }
    }
    let rows = (0..rng.range(4, 7))
        .map(|r| {
            let batch = 2u32 << r;
            [
                batch,
                256 << rng.range(0, 3),
                rng.range(80, 900) as u32,
                rng.range(40, 99) as u32,
            ]
        })
        .collect();
    Plan {
        index,
        slots,
        symptom: rng.range(0, text::SYMPTOMS.len()),
        sections,
        rows,
        python: rng.range(0, 2) == 0,
    }
}

fn fill(template: &str, slots: &[(&str, String)]) -> String {
    slots
        .iter()
        .fold(template.to_string(), |s, (k, v)| s.replace(k, v))
}

fn code_block(plan: &Plan) -> String {
    let code = if plan.python {
        "```python\nimport torch\n\ntorch.cuda.memory._record_memory_history(max_entries=100_000)\nfor step, (x, y) in enumerate(loader):\n    logits, loss = model(x, y)\n    loss.backward()\n    if step == {a}:\n        torch.cuda.memory._dump_snapshot(\"{node}.pickle\")\n        break\nprint(torch.cuda.memory_summary(abbreviated=True))\n```\n"
    } else {
        "```bash\n# allocator settings used after the fix\nexport PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\ntorchrun --standalone --nproc_per_node=1 train.py --batch_size={a} --compile=True\nnvidia-smi --query-gpu=memory.used,memory.total --format=csv -l 5 > {node}.csv\n```\n"
    };
    fill(code, &plan.slots)
}

fn table(plan: &Plan, lang: usize) -> String {
    let mut t = format!("{}\n|---:|---:|---:|---:|:---|\n", text::TABLE_HEADER[lang]);
    let last = plan.rows.len() - 1;
    for (i, [batch, block, ms, util]) in plan.rows.iter().enumerate() {
        let result = text::RESULT[lang][usize::from(i == last)];
        t.push_str(&format!(
            "| {batch} | {block} | {ms} | {util} | {result} |\n"
        ));
    }
    t
}

/// The plain page (front matter and body) of guide `index` in language `lang` (0 en, 1 es, 2 zh).
pub(crate) fn plain_page(index: usize, lang: usize) -> String {
    let plan = plan(index);
    let title = fill(
        &text::TITLE[lang].replace("{symptom}", text::SYMPTOMS[plan.symptom][lang]),
        &plan.slots,
    );
    let day = plan.index % 336;
    let gpu = &plan.slots[0].1;
    let mut page = format!(
        "---\nlang: {}\ntitle: \"{title}\"\ntranslated: {}\ntype: note\nlayout: post\ndate: {}-{:02}-{:02}\ntags: [memory, \"{gpu}\"]\ngpu: \"{gpu}\"\n---\n\n",
        LANGS[lang],
        lang != 0,
        2024 + plan.index / 336,
        day / 28 + 1,
        day % 28 + 1,
    );
    for (heading, paragraphs) in &plan.sections {
        page.push_str(&format!("## {}\n\n", text::HEADINGS[*heading][lang]));
        for para in paragraphs {
            let sep = if lang == 2 { "" } else { " " };
            let sentences: Vec<String> = para
                .iter()
                .map(|&s| fill(text::SENTENCES[s][lang], &plan.slots))
                .collect();
            page.push_str(&sentences.join(sep));
            page.push_str("\n\n");
        }
        match heading {
            1 => page.push_str(&(table(&plan, lang) + "\n")),
            3 => page.push_str(&format!(
                "{}\n\n{}\n",
                text::CODE_INTRO[lang],
                code_block(&plan)
            )),
            _ => {}
        }
    }
    page
}

/// Turns a plain page into a computed one: a `scenario:` (cycled over [`SCENARIOS`] by `index`)
/// and one variant in the front matter; hand-typed memory figures quoted as code (as a computed
/// guide quotes measurements); and a section with inline figures, the breakdown and options
/// tables and two charts appended. `None` when `page` has no front matter.
pub(crate) fn to_computed(page: &str, index: usize) -> Option<String> {
    let lang = page
        .lines()
        .find_map(|l| l.strip_prefix("lang:"))
        .map(|l| l.trim().trim_matches('"'))
        .and_then(|l| LANGS.iter().position(|x| *x == l))
        .unwrap_or(0);
    let rest = page.strip_prefix("---\n")?;
    let close = rest.find("\n---\n")?;
    let (yaml, body) = (&rest[..close + 1], &rest[close + 5..]);
    let (scenario, batch) = SCENARIOS[index % SCENARIOS.len()];
    let mut out = format!(
        "---\n{yaml}scenario:\n  {scenario}\nvariants:\n  - id: half\n    label: \"{}\"\n    set: {{ batch_size: {} }}\n---\n",
        text::VARIANT_LABEL[lang],
        (batch / 2).max(1)
    );
    let mut body = body.to_string();
    for (range, _) in vramdoc::expand::lint::typed_memory_figures(&body)
        .into_iter()
        .rev()
    {
        body.insert(range.end, '`');
        body.insert(range.start, '`');
    }
    out.push_str(&body);
    let intro = text::ESTIMATE_INTRO[lang]
        .replace("{params}", "{{ params.non_embedding | count }}")
        .replace("{peak}", "{{ bytes.peak | bytes }}")
        .replace("{fits}", "{{ fits | verdict }}");
    out.push_str(&format!(
        "## {}\n\n{intro}\n\n{{{{ breakdown_table() }}}}\n\n{{{{ chart(\"breakdown\") }}}}\n\n{{{{ options_table() }}}}\n\n{{{{ chart(\"sweep\", over=\"batch_size\") }}}}\n",
        text::ESTIMATE_HEADING[lang]
    ));
    Some(out)
}

/// Writes guides `0..n` of the generated plain corpus under `root/content/`, plus `vramdoc.yaml`.
pub(crate) fn write_generated(root: &Path, n: usize, computed: bool) -> io::Result<()> {
    fs::create_dir_all(root)?;
    fs::write(root.join("vramdoc.yaml"), SITE_CONFIG)?;
    for index in 0..n {
        let dir = root.join("content").join(slug(index));
        fs::create_dir_all(&dir)?;
        for (lang, code) in LANGS.iter().enumerate() {
            let plain = plain_page(index, lang);
            let page = if computed {
                to_computed(&plain, index).unwrap_or(plain)
            } else {
                plain
            };
            fs::write(dir.join(format!("{code}.md")), page)?;
        }
    }
    Ok(())
}

/// The guide folders of an existing corpus (`DIR/content/<slug>/`), sorted.
pub(crate) fn guide_dirs(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("content"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Copies a plain corpus's guides into `dest` as computed pages, plus `vramdoc.yaml`.
pub(crate) fn write_computed_from(src: &Path, dest: &Path) -> io::Result<usize> {
    fs::create_dir_all(dest)?;
    fs::write(dest.join("vramdoc.yaml"), SITE_CONFIG)?;
    let dirs = guide_dirs(src)?;
    for (index, dir) in dirs.iter().enumerate() {
        let out = dest
            .join("content")
            .join(dir.file_name().unwrap_or_default());
        fs::create_dir_all(&out)?;
        for entry in fs::read_dir(dir)?.filter_map(Result::ok) {
            let text = fs::read_to_string(entry.path())?;
            let page = to_computed(&text, index).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} has no front matter", entry.path().display()),
                )
            })?;
            fs::write(out.join(entry.file_name()), page)?;
        }
    }
    Ok(dirs.len())
}

/// Changes one sentence of `file`: appends a clause to the first prose line after the front
/// matter. `k` makes every edit different, so repeated edits always change the bytes.
pub(crate) fn edit_sentence(file: &Path, k: usize) -> io::Result<()> {
    let text = fs::read_to_string(file)?;
    let body_start = text
        .strip_prefix("---\n")
        .and_then(|rest| rest.find("\n---\n").map(|i| i + 9))
        .unwrap_or(0);
    let mut offset = body_start;
    for line in text[body_start..].split_inclusive('\n') {
        if line.chars().next().is_some_and(char::is_alphabetic) {
            let end = offset + line.trim_end().len();
            let edited = format!("{} (revised, edit {k}){}", &text[..end], &text[end..]);
            return fs::write(file, edited);
        }
        offset += line.len();
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{} has no prose line to edit", file.display()),
    ))
}
