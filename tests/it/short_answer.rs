//! The short answer under a guide's title (issue 23), through the real binary: the verdict with
//! the total the breakdown table shows, the first option of the options table that fits as
//! config lines and `train.py` flags, links to the table and the first chart; nothing to change
//! when the scenario fits; no box without a GPU. Also the options table's one setting per line.

use crate::support::{table, SiteTest};

/// GPT-2 small at micro-batch 16 on a 12 GB card: it does not fit as configured.
const OOM: &str = "n_layer: 12\nn_head: 12\nn_embd: 768\nblock_size: 1024\nbatch_size: 16\ngradient_accumulation_steps: 32\ndtype: bfloat16\n";

fn guide(t: &SiteTest, lang: &str, scenario: &str) {
    let indented: String = scenario.lines().map(|l| format!("  {l}\n")).collect();
    t.file(
        &format!("content/g/{lang}.md"),
        &format!(
            "---\ntitle: G\nlang: {lang}\ndate: 2026-11-20\nscenario:\n{indented}---\n\n## Memory\n\n{{{{ breakdown_table() }}}}\n\n{{{{ chart(\"breakdown\") }}}}\n\n## Options\n\n{{{{ options_table() }}}}\n"
        ),
    );
}

/// The text between `start` and the next `end` after it.
fn between<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let from = html
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in {html}"))
        + start.len();
    &html[from..from + html[from..].find(end).unwrap()]
}

/// The text of an HTML fragment: tags dropped.
fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn the_answer_is_the_first_option_that_fits_with_its_config_and_links() {
    let t = SiteTest::new();
    guide(&t, "en", &format!("{OOM}gpu: rtx-3060-12gb\n"));
    t.build_ok();
    let html = t.output("en/g/index.html");
    let md = t.output("en/g/index.md");
    let answer = between(&html, "<section class=\"answer\"", "</section>");
    // The verdict names the card and quotes the total the breakdown table shows.
    let breakdown = table(&md, "| Component |");
    let total = &breakdown
        .iter()
        .find(|r| r[0] == "Total, as nvidia-smi shows it")
        .expect("a total row")[1];
    let verdict = text(between(answer, "<p class=\"answer-verdict\">", "</p>"));
    assert!(
        verdict.starts_with("On the NVIDIA GeForce RTX 3060 12GB: "),
        "{verdict}"
    );
    assert!(verdict.contains(&text(total)), "{verdict} / {total}");
    // The change: the first row of the options table whose verdict is "fits".
    let options = table(&md, "| Option |");
    let first_fit = options.iter().find(|r| r[5] == "fits").expect("a row fits");
    let settings: Vec<String> = first_fit[1]
        .split("<br>")
        .map(|c| c.trim_matches('`').to_string())
        .collect();
    assert!(settings.len() >= 2, "{first_fit:?}");
    let config = between(answer, "<code class=\"language-python\">", "</code>");
    assert_eq!(config.replace("&#39;", "'"), settings.join("\n"));
    let flags: Vec<String> = settings
        .iter()
        .map(|s| format!("--{}", s.replace(" = ", "=")))
        .collect();
    let command = between(answer, "<code class=\"language-bash\">", "</code>");
    assert_eq!(command, format!("python train.py {}", flags.join(" ")));
    assert!(answer.contains(
        &first_fit[0]
            .trim_end_matches(['†', '‡', ' '])
            .replace('\'', "&#39;")
    ));
    // Its links lead to the options table and the first chart.
    assert!(
        answer.contains("<a href=\"#options\">All options</a>"),
        "{answer}"
    );
    assert!(
        answer.contains("<a href=\"#charts\">Charts</a>"),
        "{answer}"
    );
    assert!(html.contains("<div class=\"table-wrap\" tabindex=\"0\" id=\"options\">\n<table><thead><tr><th style=\"text-align: left\">Option</th>"));
    assert!(html.contains("<picture id=\"charts\">"));
    // One setting per line in the table's Change cell.
    assert!(
        html.contains(
            "<code>batch_size = 8</code><br><code>gradient_accumulation_steps = 64</code>"
        ),
        "{html}"
    );
}

#[test]
fn a_scenario_that_fits_needs_no_change_and_one_without_a_card_has_no_box() {
    let t = SiteTest::new();
    guide(
        &t,
        "es",
        "n_layer: 6\nn_head: 6\nn_embd: 384\nblock_size: 256\nbatch_size: 8\ndtype: bfloat16\ngpu: a100-80gb\n",
    );
    t.build_ok();
    let html = t.output("es/g/index.html");
    let answer = between(&html, "<section class=\"answer\"", "</section>");
    assert!(
        answer.contains("Cabe tal como está configurado"),
        "{answer}"
    );
    assert!(!answer.contains("<pre"), "{answer}");

    let t = SiteTest::new();
    guide(&t, "en", OOM);
    t.build_ok();
    assert!(!t.output("en/g/index.html").contains("class=\"answer\""));
}

#[test]
fn a_quantized_model_answer_is_code_transformers_and_peft_accept() {
    // Llama 3.1 8B with LoRA on bf16 weights on a 16 GB card: the answer that fits is QLoRA at
    // a shorter sequence. transformers takes bitsandbytes' settings only inside a
    // BitsAndBytesConfig handed over as `quantization_config`, and PEFT's inside LoraConfig.
    let t = SiteTest::new();
    guide(
        &t,
        "en",
        "model: llama-3.1-8b\nbatch_size: 1\ngradient_accumulation_steps: 8\nblock_size: 2048\ndtype: bfloat16\npure_bf16: true\ngrad_checkpoint: true\nlora_rank: 16\nlora_targets: [all-linear]\ngpu: rtx-4060-ti-16gb\n",
    );
    t.build_ok();
    let html = t.output("en/g/index.html");
    let answer =
        text(between(&html, "<section class=\"answer\"", "</section>")).replace("&quot;", "\"");
    assert!(
        answer.contains("bnb = BitsAndBytesConfig(load_in_4bit=True")
            && answer.contains("from_pretrained(..., quantization_config=bnb)")
            && answer.contains("max_length=1024"),
        "{answer}"
    );
    assert!(
        !answer.contains("from_pretrained(..., load_in_4bit")
            && !answer.contains("SFTConfig(\n    LoraConfig"),
        "{answer}"
    );
}

#[test]
fn a_trl_answer_hands_its_settings_to_sfttrainer() {
    // Llama 3.1 8B QLoRA (rank 256, all-linear) as TRL's SFTTrainer runs it, micro-batch 4 of
    // 2,048 tokens on an L4: a smaller micro-batch fits, set in SFTConfig and handed to
    // SFTTrainer, which wraps the model with its own peft_config.
    let t = SiteTest::new();
    guide(
        &t,
        "en",
        "model: llama-3.1-8b\ntrainer: trl\ndtype: bfloat16\ngrad_checkpoint: true\nload_in_4bit: true\nbnb_4bit_quant_type: nf4\nbnb_4bit_use_double_quant: true\nbnb_4bit_compute_dtype: bfloat16\nlora_rank: 256\nlora_targets: [all-linear]\nblock_size: 2048\nbatch_size: 4\ngradient_accumulation_steps: 2\ngpu: l4\n",
    );
    t.build_ok();
    let html = t.output("en/g/index.html");
    let answer =
        text(between(&html, "<section class=\"answer\"", "</section>")).replace("&quot;", "\"");
    assert!(
        answer.contains("args = SFTConfig(\n    per_device_train_batch_size=1,")
            && answer.contains("trainer = SFTTrainer(model, args=args, train_dataset=...)"),
        "{answer}"
    );
}
