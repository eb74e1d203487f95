//! One definition per scenario key: the table in `src/scenario/keys.rs` is what the JSON
//! `scenario` object, `estimate --help`, the README's key table, the setters and the Python
//! config reader all follow.

use vramdoc::estimate::{estimate_model, Architecture, Family, GpuCatalog, Literal, Scenario};
use vramdoc::scenario::keys::{self, Families, Kind, NanoGpt, KEYS};

use crate::support::SiteTest;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn the_readme_key_table_is_the_tables() {
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    let begin = "<!-- scenario keys: begin -->\n";
    let start = readme.find(begin).expect("README has the begin marker") + begin.len();
    let end = readme
        .find("<!-- scenario keys: end -->")
        .expect("end marker");
    let want = keys::markdown_table();
    assert_eq!(
        &readme[start..end],
        want,
        "README.md's scenario key table differs from src/scenario/keys.rs; put this between the markers:\n{want}"
    );
}

#[test]
fn the_json_scenario_object_has_every_key_of_the_table() {
    let run = SiteTest::new().run(&["estimate", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let object = v["scenario"].as_object().expect("a scenario object");
    // The CLI prints JSON objects with sorted keys; the set is the table's.
    let mut names: Vec<&str> = object.keys().map(String::as_str).collect();
    let mut table: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
    names.sort_unstable();
    table.sort_unstable();
    assert_eq!(names, table);
    // Resolved: an unset evaluation batch is the training micro-batch (12 by default).
    assert_eq!(v["scenario"]["eval_batch_size"], 12);
    assert_eq!(v["scenario"]["gpu"], serde_json::Value::Null);
}

#[test]
fn estimate_help_lists_every_key_with_what_it_accepts() {
    let run = SiteTest::new().run(&["estimate", "--help"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for k in KEYS {
        let line = run
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(k.name))
            .unwrap_or_else(|| panic!("{} missing from --help:\n{}", k.name, run.stdout));
        assert!(line.contains(k.kind.accepts()), "{line}");
    }
}

#[test]
fn every_key_is_set_by_yaml_python_and_overrides_alike() {
    // A value other than the default for each key, written as a Python literal.
    let changed = |name: &str| -> &'static str {
        match name {
            "dropout" => "0.1",
            "dtype" => "'float16'",
            "weights_dtype" => "'bfloat16'",
            "optimizer" => "'sgd'",
            "sharding" => "'zero1'",
            "init_from" => "'gpt2'",
            "phase" => "'generate'",
            "lora_targets" => "'mlp.c_fc'",
            "gpu" => "'rtx-4090'",
            "other_processes" => "1048576",
            "lora_rank" => "4",
            "lora_dropout" => "0.05",
            "model" => "'gpt2'",
            "bnb_4bit_quant_type" => "'nf4'",
            "bnb_4bit_compute_dtype" => "'bfloat16'",
            "trainer" => "'trl'",
            "attn_implementation" => "'eager'",
            "batch_layout" => "'padded'",
            _ => "2",
        }
    };
    for k in KEYS {
        let value = match k.kind {
            keys::Kind::Bool => {
                if k.value(&Scenario::default()).to_string() == "True" {
                    "False"
                } else {
                    "True"
                }
            }
            _ => changed(k.name),
        };
        let bare = value.trim_matches('\'');
        let mut s = Scenario::default();
        let lit = match value {
            "True" => Literal::Bool(true),
            "False" => Literal::Bool(false),
            v if v.starts_with('\'') => Literal::Str(bare.to_owned()),
            v if v.contains('.') => Literal::Float(v.parse().unwrap()),
            v => Literal::Int(v.parse().unwrap()),
        };
        s.set(k.name, lit).unwrap();
        let shown = k.value(&s).to_string();
        assert_ne!(
            shown,
            k.value(&Scenario::default()).to_string(),
            "{}",
            k.name
        );
        let t = SiteTest::new();
        t.file("c.py", &format!("{} = {value}\n", k.name));
        t.file("s.yaml", &format!("{}: {bare}\n", k.name));
        let mut readings = Vec::new();
        let runs = [
            t.run(&["estimate", "c.py", "--format", "json"]),
            t.run(&["estimate", "s.yaml", "--format", "json"]),
            t.run(&[
                "estimate",
                &format!("--{}={bare}", k.name),
                "--format",
                "json",
            ]),
            t.run(&[
                "estimate",
                "--set",
                &format!("{}={value}", k.name),
                "--format",
                "json",
            ]),
        ];
        for run in runs {
            // Some single changes are refused by the estimator (sharding without processes):
            // then every input must be refused alike, naming the key's problem.
            let v: Option<serde_json::Value> = serde_json::from_str(&run.stdout).ok();
            readings.push(v.map(|v| v["scenario"][k.name].clone()));
        }
        assert!(
            readings.windows(2).all(|w| w[0] == w[1]),
            "{}: {readings:?}",
            k.name
        );
    }
}

#[test]
fn code_keys_have_notes_in_every_language() {
    for k in KEYS {
        if let NanoGpt::Code(note) = k.nanogpt {
            for lang in ["en", "es", "zh"] {
                let ftl =
                    std::fs::read_to_string(format!("{ROOT}/locales/{lang}/estimate.ftl")).unwrap();
                assert!(
                    ftl.lines().any(|l| l.starts_with(&format!("{note} ="))),
                    "{lang} lacks {note} ({})",
                    k.name
                );
            }
        }
    }
}

#[test]
fn the_bucket_view_option_is_told_its_own_code_change() {
    // Its note was LoRA's (a fall-through in a list of keys) before the table named each note.
    let run = SiteTest::new().run(&[
        "estimate",
        "--gpu",
        "rtx-4070",
        "--nproc-per-node",
        "4",
        "--set",
        "sharding=zero1",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("--gradient_as_bucket_view=True"),
        "{}",
        run.stdout
    );
    let note = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with('‡'))
        .expect("a ‡ note");
    assert!(
        note.contains(
            "`gradient_as_bucket_view`: gradient_as_bucket_view=True in train.py's DDP(...) call"
        ),
        "{note}"
    );
    assert!(!note.contains("LoRA"), "no option here adds LoRA: {note}");
}

#[test]
fn a_key_error_is_located_where_the_yaml_parser_saw_the_key() {
    // A block string holding `n_head: 5` comes first: a search of the text for `n_head:` finds
    // that line; the parser's position is the key's own (line 4, column 3).
    let t = SiteTest::new();
    t.file("s.yaml", "note: |\n  n_head: 5\nscenario:\n  n_head: 0\n");
    let run = t.run(&["estimate", "s.yaml"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("s.yaml:4:3"), "{}", run.stderr);
    assert!(run.stderr.contains("n_head"), "{}", run.stderr);
}

/// Values of a kind to try in place of a key's default, for the families test.
fn other_values(kind: Kind) -> Vec<Literal> {
    let text = |t: &str| Literal::Str(t.to_owned());
    match kind {
        Kind::Count | Kind::CountOrNone | Kind::Whole => vec![Literal::Int(3), Literal::Int(8)],
        Kind::Bytes => vec![Literal::Int(1 << 30)],
        Kind::Bool => vec![Literal::Bool(true), Literal::Bool(false)],
        Kind::Probability => vec![Literal::Float(0.5)],
        Kind::Dtype => vec![text("float16"), text("float32")],
        Kind::WeightsDtype => vec![text("bfloat16"), text("float32")],
        Kind::Optimizer => vec![text("sgd")],
        Kind::QuantType => vec![text("nf4")],
        Kind::Sharding => vec![text("zero1")],
        Kind::Phase => vec![text("generate")],
        Kind::InitFrom => vec![text("resume"), text("gpt2")],
        Kind::Names => vec![text("c_attn"), text("c_fc,c_proj")],
        Kind::Gpu => vec![text("rtx-3090")],
        Kind::Model => vec![text("gpt2")],
        Kind::Trainer => vec![text("trl")],
        Kind::AttnImplementation => vec![text("eager"), text("sdpa")],
        Kind::BatchLayout => vec![text("padded"), text("padding_free")],
    }
}

/// The key table's `families` column against the estimator: every key whose column leaves out
/// Hugging Face's GPT-2, given a value other than its default, is refused by `estimate_model` for
/// that model or changes none of its figures (the model's own shape replaces nanoGPT's shape
/// keys; a Trainer step has no evaluation; train.py's settings and nanoGPT's patches are
/// refused). The refusal at the line a key was written waits for a scenario that names its model.
#[test]
fn a_key_outside_a_familys_column_changes_nothing_in_its_estimate() {
    let catalog = GpuCatalog::builtin();
    let model = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    let base = Scenario {
        compile: false,
        ..Scenario::default()
    };
    let want = estimate_model(&model, &base, &catalog).unwrap();
    let outside: Vec<_> = KEYS
        .iter()
        .filter(|k| !k.families.contains(Family::HfGpt2))
        .collect();
    let names: Vec<&str> = outside.iter().map(|k| k.name).collect();
    for shape in [
        "n_layer",
        "n_head",
        "n_embd",
        "vocab_size",
        "bias",
        "init_from",
    ] {
        assert!(names.contains(&shape), "{shape} is nanoGPT's: {names:?}");
    }
    for k in outside {
        assert!(
            [Families::NANOGPT, Families::LIGER].contains(&k.families),
            "{}",
            k.name
        );
        let changed = other_values(k.kind).into_iter().find_map(|v| {
            let mut s = base.clone();
            let set = s.set(k.name, v).is_ok() && k.value(&s) != k.value(&base);
            set.then_some(s)
        });
        let s = changed.unwrap_or_else(|| panic!("no other value of {} to try", k.name));
        if let Ok(e) = estimate_model(&model, &s, &catalog) {
            assert_eq!(
                (e.params, e.bytes),
                (want.params, want.bytes),
                "{} changes Hugging Face GPT-2's estimate but its families column is {}",
                k.name,
                k.families.names()
            );
        }
    }
    // The run around the model applies to every family.
    for name in [
        "batch_size",
        "block_size",
        "dtype",
        "gpu",
        "ddp_world_size",
        "phase",
    ] {
        let k = keys::get(name).unwrap();
        assert_eq!(k.families, Families::ALL, "{name}");
        assert!(k.families.contains(Family::Llama) && k.families.contains(Family::Nanochat));
    }
}

/// A YAML spelling of a literal.
fn yaml_text(v: &Literal) -> String {
    match v {
        Literal::Int(n) => n.to_string(),
        Literal::Float(x) => x.to_string(),
        Literal::Bool(b) => b.to_string(),
        Literal::Str(s) => format!("\"{s}\""),
        Literal::None => "null".to_owned(),
    }
}

/// The families column is what refuses a key given beside a model whose family it leaves out:
/// every such key at its own line, all at once, naming the key and the model's family.
#[test]
fn a_key_outside_the_models_family_is_refused_at_its_line() {
    let base = Scenario::default();
    let outside: Vec<_> = KEYS
        .iter()
        .filter(|k| !k.families.contains(Family::HfGpt2))
        .collect();
    let mut yaml = String::from("model: gpt2\n");
    for k in &outside {
        let v = other_values(k.kind)
            .into_iter()
            .find(|v| {
                let mut s = base.clone();
                s.set(k.name, v.clone()).is_ok() && k.value(&s) != k.value(&base)
            })
            .unwrap();
        yaml += &format!("{}: {}\n", k.name, yaml_text(&v));
    }
    let t = SiteTest::new();
    t.file("s.yaml", &yaml);
    let r = t.run(&["estimate", "s.yaml"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    for (i, k) in outside.iter().enumerate() {
        let at = format!("s.yaml:{}:1", i + 2);
        let says = if k.families == Families::NANOGPT {
            format!(
                "`{}` is a key of nanoGPT's train.py, and model = gpt2 is Hugging Face's GPT-2",
                k.name
            )
        } else {
            format!(
                "`{}` is computed for a Llama-family model, a Gemma 2 model, a Gemma 3 model, a \
                 mixture-of-experts model only, and model = gpt2 is Hugging Face's GPT-2",
                k.name
            )
        };
        assert!(
            r.stderr.contains(&at) && r.stderr.contains(&says),
            "{at} {says}:\n{}",
            r.stderr
        );
    }
}
