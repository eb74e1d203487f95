//! The bundled catalog against the published parameter counts, and the config.json reader's
//! refusals.

use super::*;
use crate::estimate::Dtype;

/// The catalog's entries, read.
fn all() -> Vec<(&'static catalog::ModelEntry, config::ReadModel)> {
    catalog::entries()
        .unwrap()
        .iter()
        .map(|e| (e, e.read().unwrap_or_else(|err| panic!("{}: {err}", e.id))))
        .collect()
}

/// The figure a model card prints (`7.61B`, `124M`) in parameters, and one unit of its last
/// digit.
fn figure(published: &str) -> (f64, f64) {
    let (number, scale) = match published.strip_suffix('B') {
        Some(n) => (n, 1e9),
        None => (published.strip_suffix('M').unwrap(), 1e6),
    };
    let decimals = number.split('.').nth(1).map_or(0, str::len);
    let unit = scale / 10f64.powi(decimals as i32);
    (number.parse::<f64>().unwrap() * scale, unit)
}

#[test]
fn the_catalog_has_thirty_models_across_the_families_each_with_its_source() {
    let models = all();
    assert!(models.len() >= 30, "{} models", models.len());
    for family in [
        Family::HfGpt2,
        Family::Llama,
        Family::Gemma2,
        Family::Gemma3,
        Family::Moe,
        Family::Nanochat,
    ] {
        assert!(
            models.iter().any(|(_, m)| m.architecture.family == family),
            "no {family:?} model"
        );
    }
    for t in [
        "llama",
        "mistral",
        "qwen2",
        "qwen3",
        "phi3",
        "mixtral",
        "qwen2_moe",
        "qwen3_moe",
    ] {
        assert!(models.iter().any(|(_, m)| m.model_type == t), "no {t}");
    }
    for (e, _) in &models {
        let s = &e.source;
        assert!(s.repo.contains('/'), "{}: repo {}", e.id, s.repo);
        assert!(
            !s.revision.is_empty() && s.taken.starts_with("20"),
            "{}",
            e.id
        );
        assert!(s.published_source.starts_with("https://"), "{}", e.id);
        assert_eq!(e.id, e.id.to_ascii_lowercase(), "ids are lower case");
    }
}

#[test]
fn every_catalog_model_has_its_published_parameter_count() {
    for (e, m) in all() {
        // Exact: what `model.num_parameters()` gives for the config (the counts in the catalog
        // were checked against the model cards' and safetensors' figures when transcribed).
        assert_eq!(
            m.architecture.parameter_count(),
            e.source.params,
            "{}",
            e.id
        );
        // And the model card's own rounded figure: within one unit of its last digit, or 2 %
        // (cards round and truncate: Meta's 70B is 68.98 billion, GPT-2 XL's 1.5B is 1.56).
        let (published, unit) = figure(&e.source.published);
        let off = (e.source.params as f64 - published).abs();
        assert!(
            off <= unit.max(published * 0.02),
            "{}: {} parameters against the card's {}",
            e.id,
            e.source.params,
            e.source.published
        );
    }
}

#[test]
fn the_gpt2_entries_are_hugging_faces_gpt2_with_its_dropout() {
    let models = all();
    let (_, gpt2) = models.iter().find(|(e, _)| e.id == "gpt2").unwrap();
    let mut expected = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    expected.name = "gpt2".into();
    assert_eq!(gpt2.architecture, expected);
    assert_eq!(gpt2.dropout, Some(0.1));
    assert!(Family::HfGpt2.computed());
}

#[test]
fn ids_and_repositories_find_an_entry_and_typos_get_a_suggestion() {
    for name in [
        "gpt2",
        "GPT2",
        "openai-community/gpt2",
        "meta-llama/Llama-3.1-8B",
        "Llama-3.1-8B",
    ] {
        assert!(catalog::find(name).unwrap().is_some(), "{name}");
    }
    assert_eq!(
        catalog::find("meta-llama/Llama-3.1-8B")
            .unwrap()
            .unwrap()
            .id,
        "llama-3.1-8b"
    );
    for (alias, id) in [
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("Qwen2.5-7B-Instruct", "qwen2.5-7b"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
    ] {
        assert_eq!(catalog::find(alias).unwrap().unwrap().id, id, "{alias}");
    }
    // Aliases are repositories, each named once in the whole catalog.
    let mut seen = std::collections::HashSet::new();
    for e in catalog::entries().unwrap() {
        for repo in std::iter::once(&e.source.repo).chain(&e.source.aliases) {
            assert!(seen.insert(repo.to_ascii_lowercase()), "{repo} twice");
        }
    }
    assert!(catalog::find("bert-base-uncased").unwrap().is_none());
    assert_eq!(catalog::closest("lama-3.1-8b")[0], "llama-3.1-8b");
    assert!(catalog::closest("qwen25-7b").contains(&"qwen2.5-7b"));
    assert!(catalog::closest("bert-base-uncased").is_empty());
}

/// Reads `json` as a config.json.
fn read_json(json: &str) -> Result<Model, Vec<Diagnostic>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(&path, json).unwrap();
    read_config_file(&path)
}

#[test]
fn an_unmodelled_model_type_is_an_error_at_its_line_listing_the_modelled_ones() {
    let e = read_json(
        "{\n  \"architectures\": [\"BertForMaskedLM\"],\n  \"model_type\": \"bert\"\n}\n",
    )
    .unwrap_err();
    assert_eq!(e[0].line, Some(3), "{e:?}");
    for t in [
        "\"bert\" is not modelled",
        "gpt2",
        "llama",
        "qwen3_moe",
        "gemma3_text",
    ] {
        assert!(e[0].message.contains(t), "{t}: {}", e[0].message);
    }
    let none =
        read_json("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 8}").unwrap_err();
    assert!(
        none[0].message.contains("no `model_type`"),
        "{}",
        none[0].message
    );
}

#[test]
fn values_that_change_the_tensors_are_refused_each_at_its_line() {
    let e = read_json(
        "{\n\"model_type\": \"gpt2\",\n\"activation_function\": \"relu\",\n\"n_inner\": 1000,\n\"resid_pdrop\": 0.0\n}\n",
    )
    .unwrap_err();
    let lines: Vec<Option<usize>> = e.iter().map(|d| d.line).collect();
    assert_eq!(lines, [Some(3), Some(4), Some(5)], "{e:?}");
    let llama =
        read_json("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2}")
            .unwrap_err();
    assert!(
        llama
            .iter()
            .any(|d| d.message.contains("no `num_attention_heads`")),
        "{llama:?}"
    );
}

#[test]
fn a_config_json_gives_the_same_model_as_the_catalog() {
    let json = r#"{
  "activation_function": "gelu_new",
  "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1, "embd_pdrop": 0.1, "resid_pdrop": 0.1,
  "model_type": "gpt2",
  "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
  "vocab_size": 50257
}"#;
    let m = read_json(json).unwrap();
    let mut expected = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    expected.name = m.architecture.name.clone();
    assert_eq!(m.architecture, expected);
    assert_eq!(m.info.model_type, "gpt2");
    assert!(m.info.source.is_none() && m.info.path.is_some());
    // A Qwen2.5 config.json as the Hub has it (rope, window and token keys the shape ignores).
    let qwen = r#"{"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
      "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896,
      "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 32768,
      "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
      "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
      "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true,
      "use_sliding_window": false, "vocab_size": 151936}"#;
    let m = read_json(qwen).unwrap();
    assert_eq!(m.architecture.parameter_count(), 494_032_768);
    assert_eq!(m.info.family, Family::Llama);
}

#[test]
fn shapes_transformers_refuses_are_refused_at_their_key() {
    let e = read_json("{\"model_type\": \"gpt2\",\n\"n_embd\": 768,\n\"n_head\": 7}").unwrap_err();
    assert_eq!(e[0].line, Some(3), "{e:?}");
    let e = read_json(
        "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n\"num_attention_heads\": 8,\n\"num_key_value_heads\": 3, \"intermediate_size\": 128, \"vocab_size\": 100}",
    )
    .unwrap_err();
    assert_eq!(e[0].line, Some(3), "{e:?}");
    assert!(
        e[0].message.contains("cannot be grouped"),
        "{}",
        e[0].message
    );
}

#[test]
fn a_folder_without_config_json_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("my-model");
    std::fs::create_dir(&folder).unwrap();
    let e = resolve(folder.to_str().unwrap(), None).unwrap_err();
    assert!(
        e[0].message.contains("has no config.json"),
        "{}",
        e[0].message
    );
}

#[test]
fn a_json_mistake_is_worded_as_json_at_its_line() {
    let e =
        read_json("{\"model_type\": \"gpt2\",\n \"n_layer\": 12\n \"n_head\": 12}").unwrap_err();
    assert!(e[0].message.starts_with("invalid JSON"), "{}", e[0].message);
    assert_eq!(e[0].line, Some(3), "{e:?}");
}

#[test]
fn hostile_values_are_refused_not_wrapped() {
    for (json, want) in [
        ("{\"model_type\": \"gpt2\", \"n_layer\": -1}", "whole number of at least 1"),
        ("{\"model_type\": \"gpt2\", \"n_layer\": 1e30}", "whole number of at least 1"),
        ("{\"model_type\": \"gpt2\", \"n_layer\": \"12\"}", "whole number of at least 1"),
        ("{\"model_type\": 7}", "must be a string"),
        ("{\"model_type\": \"gpt2\", \"tie_word_embeddings\": \"yes\"}", "true or false"),
        ("{\"model_type\": \"gpt2\", \"attn_pdrop\": 1.5, \"resid_pdrop\": 1.5, \"embd_pdrop\": 1.5}", "not a probability"),
    ] {
        let e = read_json(json).unwrap_err();
        assert!(e.iter().any(|d| d.message.contains(want)), "{json}: {e:?}");
    }
    // A shape beyond any GPU still reads; its count saturates instead of wrapping.
    let m = read_json(
        "{\"model_type\": \"llama\", \"hidden_size\": 4294967296, \"num_hidden_layers\": 4294967296, \"num_attention_heads\": 1, \"intermediate_size\": 4294967296, \"vocab_size\": 4294967296}",
    )
    .unwrap();
    assert_eq!(m.architecture.parameter_count(), u64::MAX);
}

/// Every `torch_dtype` of the catalog (and checkpoint dtype, for a config naming none) says
/// where it was read, and only those do; an alias's own dtype is the one a name of that alias
/// loads.
#[test]
fn every_catalog_torch_dtype_has_its_source() {
    for (e, read) in all() {
        assert_eq!(
            read.torch_dtype.is_some()
                || !e.alias_dtypes.is_empty()
                || e.checkpoint_dtype.is_some(),
            e.source.dtype_source.is_some(),
            "{}: a torch_dtype (the repository's or an alias's) or checkpoint_dtype and \
             dtype_source go together",
            e.id
        );
        assert!(
            read.torch_dtype.is_none() || e.checkpoint_dtype.is_none(),
            "{}: the checkpoint's dtype is recorded only where the config.json names none",
            e.id
        );
        if let Some((_, key)) = read.torch_dtype {
            assert_eq!(key, "torch_dtype", "{}", e.id);
        }
    }
    let gpt2 = from_catalog("openai-community/gpt2").expect("gpt2");
    let checkpoint = gpt2.loaded.expect("sourced");
    assert_eq!(checkpoint.dtype, Dtype::Float32);
    assert!(checkpoint
        .why
        .contains("openai-community/gpt2's checkpoint tensors"));
    let gemma = from_catalog("gemma-2-9b").expect("gemma-2-9b");
    let base = gemma.loaded.expect("sourced");
    assert_eq!(base.dtype, Dtype::Float32);
    assert!(base
        .why
        .contains("google/gemma-2-9b's config.json's torch_dtype"));
    let it = from_catalog("google/gemma-2-9b-it").expect("alias");
    assert_eq!(it.loaded.expect("alias").dtype, Dtype::Bfloat16);
    let llama2 = from_catalog("meta-llama/Llama-2-7b-chat-hf").expect("alias");
    assert_eq!(llama2.loaded.expect("sourced").dtype, Dtype::Float16);
    for id in ["gpt2-medium", "gpt2-large", "gpt2-xl", "distilgpt2"] {
        let sourced = from_catalog(id).expect("gpt2").loaded.expect("sourced");
        assert_eq!(sourced.dtype, Dtype::Float32, "{id}");
        assert!(
            sourced.why.contains("checkpoint tensors"),
            "{id}: {}",
            sourced.why
        );
    }
    // Only the alias's config was sourced: the base repository's dtype stays unknown.
    for (base, alias) in [
        ("smollm2-135m", "HuggingFaceTB/SmolLM2-135M-Instruct"),
        ("gemma-2-27b", "google/gemma-2-27b-it"),
        ("llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"),
        ("llama-3.1-70b", "Meta-Llama-3.1-70B-Instruct"),
        ("smollm2-1.7b", "HuggingFaceTB/SmolLM2-1.7B-Instruct"),
    ] {
        assert!(from_catalog(base).expect("base").loaded.is_none(), "{base}");
        let instruct = from_catalog(alias).expect("alias").loaded.expect("alias");
        assert_eq!(instruct.dtype, Dtype::Bfloat16, "{alias}");
        assert!(
            instruct
                .why
                .ends_with(&format!("{alias}'s config.json's torch_dtype")),
            "{alias}: {}",
            instruct.why
        );
    }
    // The base name of a renamed repository is not its Instruct alias.
    assert!(from_catalog("meta-llama/Meta-Llama-3.1-70B")
        .expect("alias")
        .loaded
        .is_none());
    // The repositories whose own torch_dtype is not sourced (their names say they assumed
    // float32; nanochat has no config.json). GPT-2's configs name no dtype at all: their
    // checkpoints' dtype is sourced instead.
    let unsourced = Vec::from_iter(
        all()
            .into_iter()
            .filter(|(e, read)| {
                read.torch_dtype.is_none()
                    && e.checkpoint_dtype.is_none()
                    && !e.id.starts_with("nanochat-")
            })
            .map(|(e, _)| e.id.as_str()),
    );
    assert_eq!(
        unsourced,
        [
            "gemma-2-27b",
            "gemma-3-1b",
            "gemma-3-270m",
            "llama-3.1-70b",
            "smollm2-135m",
            "smollm2-1.7b",
            "mistral-7b-v0.3",
            "qwen1.5-moe-a2.7b",
        ]
    );
}
