//! From a model's `config.json` facts to its [`Architecture`]: each modelled `model_type` is
//! read as its transformers configuration class reads it (the defaults of transformers 5.24's
//! `*Config` classes where a key is missing), and any value that would make the model save
//! other tensors than the family's description is refused at its line. A `model_type` not
//! modelled is an error listing the modelled ones: never another model's shape.

use std::borrow::Cow;

use super::facts::Facts;
use crate::estimate::arch::{
    Activation, Architecture, Attention, Embeddings, Family, FeedForward, MixtureOfExperts, Mlp,
    Norm, NormPlacement, Positions, SlidingWindow, Span,
};
use crate::estimate::Dtype;

/// The `model_type`s vramdoc reads, and the family each is: transformers' `model_type`, and
/// `nanochat` for nanochat's own `GPTConfig` (catalog entries).
pub(crate) const MODELLED: &[(&str, Family)] = &[
    ("gpt2", Family::HfGpt2),
    ("llama", Family::Llama),
    ("mistral", Family::Llama),
    ("qwen2", Family::Llama),
    ("qwen3", Family::Llama),
    ("phi3", Family::Llama),
    ("gemma2", Family::Gemma2),
    ("gemma3_text", Family::Gemma3),
    ("mixtral", Family::Moe),
    ("qwen2_moe", Family::Moe),
    ("qwen3_moe", Family::Moe),
    ("nanochat", Family::Nanochat),
];

/// A model read from its facts.
pub(crate) struct ReadModel {
    /// Its description.
    pub(crate) architecture: Architecture,
    /// The config's `model_type`.
    pub(crate) model_type: String,
    /// The dropout probability its config trains with, where the family's estimate reads one
    /// (GPT-2's `resid_pdrop`, `embd_pdrop` and `attn_pdrop`, which must agree).
    pub(crate) dropout: Option<f64>,
    /// The config's own dtype, which `from_pretrained(dtype="auto")` loads the weights in, and
    /// the key that gave it (`dtype`, or `torch_dtype` as configs before transformers 5 write it).
    pub(crate) torch_dtype: Option<(Dtype, &'static str)>,
}

/// Reads the model the facts describe, naming it `name`; `None` when any fact is wrong (the
/// errors are in `f.errors`).
pub(crate) fn read(f: &mut Facts<'_>, name: String) -> Option<ReadModel> {
    let model_type = model_type(f)?;
    let family = MODELLED
        .iter()
        .find(|(t, _)| *t == model_type)
        .map(|(_, fam)| *fam);
    let Some(family) = family else {
        let hint = if model_type == "gemma3" {
            " (the image-text Gemma 3; its text-only checkpoints, gemma-3-1b and gemma-3-270m, are gemma3_text)"
        } else {
            ""
        };
        f.error(
            Some("model_type"),
            format!(
                "model_type \"{}\" is not modelled{hint}: vramdoc models {}",
                crate::terminal::visible_line(&model_type),
                modelled_list()
            ),
            "estimating it with another model's tensors would be wrong, so it is refused; give one of those models",
        );
        return None;
    };
    let before = f.errors.len();
    let (mut architecture, dropout) = match model_type.as_str() {
        "gpt2" => gpt2(f),
        "gemma2" | "gemma3_text" => (gemma(f, family, &model_type), None),
        "mixtral" | "qwen2_moe" | "qwen3_moe" => (moe(f, &model_type), None),
        "nanochat" => (nanochat(f), None),
        _ => (llama(f, &model_type), None),
    };
    architecture.name = Cow::Owned(name);
    let torch_dtype = config_dtype(f);
    if f.errors.len() > before {
        return None;
    }
    if let Err(e) = architecture.validate() {
        let key = ["num_key_value_heads", "n_kv_head", "num_experts_per_tok"]
            .into_iter()
            .find(|k| f.has(k));
        f.error(key, e.message, "check the config's head counts and widths");
        return None;
    }
    Some(ReadModel {
        architecture,
        model_type,
        dropout,
        torch_dtype,
    })
}

/// The config's `dtype` (transformers 5's key, which `PreTrainedConfig` prefers) or
/// `torch_dtype`, with the key read; a dtype vramdoc does not model is refused at its line.
fn config_dtype(f: &mut Facts<'_>) -> Option<(Dtype, &'static str)> {
    let key = ["dtype", "torch_dtype"]
        .into_iter()
        .find(|k| f.get(k).is_some())?;
    let text = f.text_or(key, "");
    let dtype = Dtype::parse(text.strip_prefix("torch.").unwrap_or(&text));
    if dtype.is_none() && !text.is_empty() {
        f.error(
            Some(key),
            format!(
                "{key} \"{}\": vramdoc models weights loaded in float32, bfloat16 or float16",
                crate::terminal::visible_line(&text)
            ),
            "give the model's own config.json (its torch_dtype is float32, bfloat16 or float16)",
        );
    }
    dtype.map(|d| (d, key))
}

/// The modelled `model_type`s, comma-separated.
pub(crate) fn modelled_list() -> String {
    let names: Vec<&str> = MODELLED.iter().map(|(t, _)| *t).collect();
    names.join(", ")
}

/// The `model_type`, or an error naming what is missing.
fn model_type(f: &mut Facts<'_>) -> Option<String> {
    if f.get("model_type").is_none() {
        let also = if f.has("architectures") {
            " (it lists `architectures`, but transformers builds the model from `model_type`)"
        } else {
            ""
        };
        f.error(
            None,
            format!(
                "the config has no `model_type`{also}: vramdoc reads one of {}",
                modelled_list()
            ),
            "give the model's own config.json, which names its model_type",
        );
        return None;
    }
    let t = f.text_or("model_type", "");
    (!t.is_empty()).then_some(t)
}

/// transformers' `GPT2Config`: `n_layer`, `n_head`, `n_embd`, `vocab_size`, `n_positions`
/// (defaults 12, 12, 768, 50257, 1024), `gelu_new`, a 4h MLP (`n_inner` null), a tied head, and
/// the three dropouts (0.1 each), which the estimate reads as one.
fn gpt2(f: &mut Facts<'_>) -> (Architecture, Option<f64>) {
    let layers = f.count_or("n_layer", 12);
    let heads = f.count_or("n_head", 12);
    let hidden = f.count_or("n_embd", 768);
    let vocab = f.count_or("vocab_size", 50257);
    let positions = f.count_or("n_positions", 1024);
    if hidden % heads != 0 {
        f.error(
            Some("n_head"),
            format!("n_embd ({hidden}) must be divisible by n_head ({heads}): transformers' GPT2Attention refuses it"),
            "give the model's own config.json",
        );
    }
    f.expect_text("activation_function", "gelu_new", &["gelu_new"]);
    f.expect_empty(
        "n_inner",
        "the MLP is modelled 4·n_embd wide (n_inner null)",
    );
    let why = "Hugging Face's GPT-2 is modelled as every released GPT-2 is configured";
    f.expect_flag("tie_word_embeddings", true, true, why);
    f.expect_flag("add_cross_attention", false, false, why);
    f.expect_flag("scale_attn_by_inverse_layer_idx", false, false, why);
    f.expect_flag("reorder_and_upcast_attn", false, false, why);
    let keys = ["resid_pdrop", "embd_pdrop", "attn_pdrop"];
    let mut given = None;
    let mut values = Vec::new();
    for key in keys {
        let p = f.number(key).unwrap_or(0.1);
        if f.get(key).is_some() && given.is_none() {
            given = Some(key);
        }
        if !(0.0..1.0).contains(&p) {
            f.error(
                Some(key),
                format!("`{key}` = {p} is not a probability in [0, 1)"),
                "GPT-2's is 0.1",
            );
        }
        values.push(p);
    }
    if values.iter().any(|&p| p != values[0]) {
        let listed: Vec<String> = keys
            .iter()
            .zip(&values)
            .map(|(k, p)| format!("`{k}` = {p}"))
            .collect();
        f.error(
            given,
            format!(
                "{}: the estimate reads GPT-2's three dropouts as one probability (a missing one is 0.1)",
                listed.join(", ")
            ),
            "give the three the same value (GPT-2's are 0.1 each)",
        );
    }
    let dropout = values.first().copied();
    let a = Architecture::hf_gpt2(layers, heads, hidden, vocab, positions);
    (a, dropout)
}

/// The shape every Llama-written decoder shares: widths, heads (`num_key_value_heads` defaults
/// to the heads, `head_dim` to `hidden_size / num_attention_heads` unless the family's class
/// has its own default), vocabulary, RoPE, and the head tied or not.
struct ConfigShape {
    hidden: u64,
    layers: u64,
    attention: Attention,
    vocab: u64,
    positions: Positions,
    tied: bool,
}

fn shape(f: &mut Facts<'_>, head_dim_default: Option<u64>, tied_default: bool) -> ConfigShape {
    let hidden = f.count("hidden_size");
    let layers = f.count("num_hidden_layers");
    let heads = f.count("num_attention_heads");
    let kv_heads = f.count_or("num_key_value_heads", heads);
    let head_dim = f.count_or(
        "head_dim",
        head_dim_default.unwrap_or_else(|| (hidden / heads).max(1)),
    );
    let vocab = f.count("vocab_size");
    let model_type = f.text_or("model_type", "");
    let positions = super::rope::positions(f, &model_type);
    let tied = f.flag_or("tie_word_embeddings", tied_default);
    ConfigShape {
        hidden,
        layers,
        attention: Attention {
            heads,
            kv_heads,
            head_dim,
            fused_qkv: false,
            qkv_bias: false,
            out_bias: false,
            qk_norm: None,
            softcap: None,
            sliding_window: None,
        },
        vocab,
        positions,
        tied,
    }
}

/// A SwiGLU feed-forward network of `intermediate` (`hidden_act` must be SiLU).
fn swiglu(intermediate: u64, bias: bool) -> FeedForward {
    FeedForward {
        intermediate,
        gated: true,
        fused_gate_up: false,
        activation: Activation::Silu,
        bias,
    }
}

/// A decoder of the shape, RMSNorm before each sublayer, and `mlp`.
fn decoder(family: Family, s: ConfigShape, mlp: Mlp) -> Architecture {
    Architecture {
        family,
        name: Cow::Borrowed(""),
        vocab_size: s.vocab,
        hidden: s.hidden,
        layers: s.layers,
        positions: s.positions,
        attention: s.attention,
        mlp,
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: s.tied,
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    }
}

/// Mistral's, Mixtral's and Phi-3's `sliding_window` (null: every layer global).
fn window_every_layer(f: &mut Facts<'_>) -> Option<SlidingWindow> {
    f.get("sliding_window")?;
    let window = f.count("sliding_window");
    Some(SlidingWindow {
        window,
        pattern: vec![Span::Local],
    })
}

/// Qwen's `use_sliding_window` (false in every released Qwen2/Qwen3 config).
fn no_qwen_window(f: &mut Facts<'_>) {
    f.expect_flag(
        "use_sliding_window",
        false,
        false,
        "Qwen's sliding-window layers are not modelled (every released Qwen2 and Qwen3 config has false)",
    );
}

/// `llama`, `mistral`, `qwen2`, `qwen3`, `phi3`: transformers' `modeling_llama` and the models
/// written like it (`LlamaConfig`'s `attention_bias` and `mlp_bias`, Qwen2's q/k/v bias,
/// Qwen3's QK-norm and 128-wide heads, Phi-3's fused `qkv_proj` and `gate_up_proj`).
fn llama(f: &mut Facts<'_>, model_type: &str) -> Architecture {
    let head_dim = (model_type == "qwen3").then_some(128);
    let mut s = shape(f, head_dim, false);
    f.expect_text("hidden_act", "silu", &["silu"]);
    let intermediate = f.count("intermediate_size");
    let mut mlp = swiglu(intermediate, false);
    match model_type {
        "llama" => {
            let bias = f.flag_or("attention_bias", false);
            s.attention.qkv_bias = bias;
            s.attention.out_bias = bias;
            mlp.bias = f.flag_or("mlp_bias", false);
        }
        "mistral" => s.attention.sliding_window = window_every_layer(f),
        "qwen2" => {
            s.attention.qkv_bias = true;
            no_qwen_window(f);
        }
        "qwen3" => {
            let bias = f.flag_or("attention_bias", false);
            s.attention.qkv_bias = bias;
            s.attention.out_bias = bias;
            s.attention.qk_norm = Some(Norm::RmsNorm);
            no_qwen_window(f);
        }
        _ => {
            // phi3
            s.attention.fused_qkv = true;
            s.attention.sliding_window = window_every_layer(f);
            mlp.fused_gate_up = true;
        }
    }
    decoder(Family::Llama, s, Mlp::Dense(mlp))
}

/// `gemma2` and `gemma3_text`: `head_dim` (256 by default), four norms per layer, the embedding
/// scaled by √hidden, a tanh-GELU gated MLP, a tied head, sliding-window layers (Gemma 2:
/// every other layer; Gemma 3: `layer_types`, or five of every `sliding_window_pattern` = 6),
/// softcapping (Gemma 2: attention 50, logits 30 by default) and Gemma 3's QK-norm.
fn gemma(f: &mut Facts<'_>, family: Family, model_type: &str) -> Architecture {
    let mut s = shape(f, Some(256), true);
    let act_key = if f.has("hidden_activation") {
        "hidden_activation"
    } else {
        "hidden_act"
    };
    f.expect_text(act_key, "gelu_pytorch_tanh", &["gelu_pytorch_tanh"]);
    let intermediate = f.count("intermediate_size");
    let gemma2 = model_type == "gemma2";
    let window = f.count_or("sliding_window", if gemma2 { 4096 } else { 512 });
    let pattern = if gemma2 {
        vec![Span::Local, Span::Global]
    } else {
        gemma3_pattern(f)
    };
    s.attention.sliding_window = Some(SlidingWindow { window, pattern });
    let softcap = |f: &mut Facts<'_>, key: &str, default: f64| {
        if gemma2 && !f.has(key) {
            Some(default)
        } else {
            f.number(key)
        }
    };
    s.attention.softcap = softcap(f, "attn_logit_softcapping", 50.0);
    let final_cap = softcap(f, "final_logit_softcapping", 30.0);
    if !gemma2 {
        s.attention.qk_norm = Some(Norm::RmsNorm);
    }
    let mlp = FeedForward {
        activation: Activation::GeluTanh,
        ..swiglu(intermediate, false)
    };
    let mut a = decoder(family, s, Mlp::Dense(mlp));
    a.norm_placement = NormPlacement::Sandwich;
    a.embeddings.scaled_by_sqrt_hidden = true;
    a.embeddings.logit_softcap = final_cap;
    a
}

/// Gemma 3's local/global pattern: `layer_types` (`sliding_attention` / `full_attention` per
/// layer) when given, else `sliding_window_pattern` − 1 local layers then a global one.
fn gemma3_pattern(f: &mut Facts<'_>) -> Vec<Span> {
    if let Some(types) = f.texts("layer_types") {
        let mut spans = Vec::with_capacity(types.len());
        for t in &types {
            match t.as_str() {
                "sliding_attention" => spans.push(Span::Local),
                "full_attention" => spans.push(Span::Global),
                other => {
                    f.error(
                        Some("layer_types"),
                        format!("layer type \"{}\" is not modelled: Gemma 3's are sliding_attention and full_attention", crate::terminal::visible_line(other)),
                        "give the model's own config.json",
                    );
                    return vec![Span::Global];
                }
            }
        }
        if !spans.is_empty() {
            return spans;
        }
    }
    let every = f.count_or("sliding_window_pattern", 6);
    let mut spans = vec![Span::Local; usize::try_from(every.saturating_sub(1)).unwrap_or(0)];
    spans.push(Span::Global);
    spans
}

/// `mixtral` (`num_local_experts` of `intermediate_size`), `qwen2_moe` (`num_experts` of
/// `moe_intermediate_size`, a shared expert of `shared_expert_intermediate_size` with its
/// sigmoid gate, q/k/v bias) and `qwen3_moe` (no shared expert, QK-norm); every layer sparse;
/// the router's auxiliary loss (`output_router_logits`) and Mixtral's router jitter refused.
fn moe(f: &mut Facts<'_>, model_type: &str) -> Architecture {
    let qwen3 = model_type == "qwen3_moe";
    let mut s = shape(f, qwen3.then_some(128), false);
    f.expect_text("hidden_act", "silu", &["silu"]);
    let mixtral = model_type == "mixtral";
    let (experts, expert) = if mixtral {
        s.attention.sliding_window = window_every_layer(f);
        (f.count("num_local_experts"), f.count("intermediate_size"))
    } else {
        no_qwen_window(f);
        let every = "every layer is modelled as a mixture of experts (decoder_sparse_step 1, mlp_only_layers [])";
        if f.count_or("decoder_sparse_step", 1) != 1 {
            f.error(
                Some("decoder_sparse_step"),
                format!("`decoder_sparse_step` other than 1 is not modelled: {every}"),
                "vramdoc would be wrong about this model: it is refused rather than estimated as another one",
            );
        }
        f.expect_empty("mlp_only_layers", every);
        (f.count("num_experts"), f.count("moe_intermediate_size"))
    };
    let per_token = f.count("num_experts_per_tok");
    f.expect_flag(
        "output_router_logits",
        false,
        false,
        "the router's auxiliary load-balancing loss (every layer's router logits stacked, a \
         one-hot mask of the chosen experts) is not replayed; the released configs leave it off",
    );
    if f.number("router_jitter_noise").is_some_and(|j| j > 0.0) {
        f.error(
            Some("router_jitter_noise"),
            "`router_jitter_noise` above 0 is not modelled: Mixtral then multiplies the hidden \
             states by a noise tensor in training, which is not replayed"
                .to_owned(),
            "vramdoc would be wrong about this model: it is refused rather than estimated as another one",
        );
    }
    let shared = (model_type == "qwen2_moe").then(|| {
        let width = f.count("shared_expert_intermediate_size");
        swiglu(width, false)
    });
    if model_type == "qwen2_moe" {
        s.attention.qkv_bias = true;
    }
    if qwen3 {
        let bias = f.flag_or("attention_bias", false);
        s.attention.qkv_bias = bias;
        s.attention.out_bias = bias;
        s.attention.qk_norm = Some(Norm::RmsNorm);
    }
    let mlp = Mlp::Moe(MixtureOfExperts {
        experts,
        experts_per_token: per_token,
        expert: swiglu(expert, false),
        shared_gate: shared.is_some(),
        shared,
        router_bias: false,
    });
    decoder(Family::Moe, s, mlp)
}

/// nanochat's `GPTConfig` (`n_layer`, `n_head`, `n_kv_head`, `n_embd`, `vocab_size`,
/// `sequence_len`, `window_pattern`) as the pinned commit's `gpt.py` builds it
/// (`estimate::nanochat::GptConfig`): value embeddings, rotary, QK-norm, ReLU², untied head, logit
/// softcap 15, sliding-window layers by the pattern (`SSSL` by default).
fn nanochat(f: &mut Facts<'_>) -> Architecture {
    let n_layer = f.count("n_layer");
    let n_head = f.count("n_head");
    let config = crate::estimate::nanochat::GptConfig {
        n_layer,
        n_head,
        n_kv_head: f.count_or("n_kv_head", n_head),
        n_embd: f.count("n_embd"),
        vocab_size: f.count_or("vocab_size", crate::estimate::nanochat::NANOCHAT_VOCAB),
        sequence_len: f.count_or("sequence_len", 2048),
        window_pattern: f.text_or("window_pattern", "SSSL"),
    };
    if let Some(message) = config.problem() {
        f.error(
            None,
            message,
            "give the GPTConfig nanochat's base_train.py builds",
        );
    }
    config.architecture("")
}
