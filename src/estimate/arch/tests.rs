//! The description is general enough for the families issue 21 lists: parameter counts of
//! published models from their `config.json` values equal the counts their model cards and
//! `model.num_parameters()` give; families not computed are refused by name.

use super::*;
use crate::estimate::{estimate_model, GpuCatalog, Scenario};

/// A Llama-style decoder (`modeling_llama` and the models written like it).
#[allow(clippy::too_many_arguments)]
fn llama(
    family: Family,
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
    intermediate: u64,
    vocab_size: u64,
    tied: bool,
) -> Architecture {
    Architecture {
        family,
        name: "test".into(),
        vocab_size,
        hidden,
        layers,
        positions: Positions::rotary(10000.0, 131_072),
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
        mlp: Mlp::Dense(swiglu(intermediate)),
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: tied,
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    }
}

fn swiglu(intermediate: u64) -> FeedForward {
    FeedForward {
        intermediate,
        gated: true,
        fused_gate_up: false,
        activation: Activation::Silu,
        bias: false,
    }
}

#[test]
fn llama_mistral_qwen2_and_phi3_counts_are_the_published_ones() {
    // meta-llama/Llama-2-7b-hf: 6,738,415,616.
    let llama2 = llama(Family::Llama, 4096, 32, 32, 32, 128, 11008, 32000, false);
    assert_eq!(llama2.parameter_count(), 6_738_415_616);
    // mistralai/Mistral-7B-v0.1 (GQA, 8 key/value heads): 7,241,732,096.
    let mistral = llama(Family::Llama, 4096, 32, 32, 8, 128, 14336, 32000, false);
    assert_eq!(mistral.parameter_count(), 7_241_732_096);
    // Qwen/Qwen2-0.5B (q/k/v bias, tied head, 2 key/value heads): 494,032,768.
    let mut qwen2 = llama(Family::Llama, 896, 24, 14, 2, 64, 4864, 151936, true);
    qwen2.attention.qkv_bias = true;
    assert_eq!(qwen2.parameter_count(), 494_032_768);
    // microsoft/Phi-3-mini-4k-instruct (fused qkv_proj and gate_up_proj): 3,821,079,552.
    let mut phi3 = llama(Family::Llama, 3072, 32, 32, 32, 96, 8192, 32064, false);
    phi3.attention.fused_qkv = true;
    if let Mlp::Dense(f) = &mut phi3.mlp {
        f.fused_gate_up = true;
    }
    assert_eq!(phi3.parameter_count(), 3_821_079_552);
}

#[test]
fn gemma2_with_its_own_head_dim_and_four_norms_per_layer() {
    // google/gemma-2-2b: head_dim 256 with 8 heads over a 2304-wide stream, four norms per
    // layer, tied head: 2,614,341,888.
    let mut gemma = llama(Family::Gemma2, 2304, 26, 8, 4, 256, 9216, 256000, true);
    gemma.norm_placement = NormPlacement::Sandwich;
    gemma.embeddings.scaled_by_sqrt_hidden = true;
    gemma.embeddings.logit_softcap = Some(30.0);
    gemma.attention.softcap = Some(50.0);
    gemma.attention.sliding_window = Some(SlidingWindow {
        window: 4096,
        pattern: vec![Span::Local, Span::Global],
    });
    if let Mlp::Dense(f) = &mut gemma.mlp {
        f.activation = Activation::GeluTanh;
    }
    assert_eq!(gemma.parameter_count(), 2_614_341_888);
}

#[test]
fn mixture_of_experts_counts_every_expert_and_the_shared_one() {
    // mistralai/Mixtral-8x7B-v0.1: 8 experts, 2 per token: 46,702,792,704.
    let mut mixtral = llama(Family::Moe, 4096, 32, 32, 8, 128, 14336, 32000, false);
    mixtral.mlp = Mlp::Moe(MixtureOfExperts {
        experts: 8,
        experts_per_token: 2,
        expert: swiglu(14336),
        shared: None,
        shared_gate: false,
        router_bias: false,
    });
    assert_eq!(mixtral.parameter_count(), 46_702_792_704);
    // Qwen/Qwen1.5-MoE-A2.7B: 60 experts of 1408, 4 per token, a shared expert of 5632 with its
    // sigmoid gate, q/k/v bias: 14,315,784,192.
    let mut qwen_moe = llama(Family::Moe, 2048, 24, 16, 16, 128, 5632, 151936, false);
    qwen_moe.attention.qkv_bias = true;
    qwen_moe.mlp = Mlp::Moe(MixtureOfExperts {
        experts: 60,
        experts_per_token: 4,
        expert: swiglu(1408),
        shared: Some(swiglu(5632)),
        shared_gate: true,
        router_bias: false,
    });
    assert_eq!(qwen_moe.parameter_count(), 14_315_784_192);
}

#[test]
fn nanochat_has_no_norm_weights_and_an_untied_head() {
    // nanochat's d20 at the pinned commit: 20 layers of width 1280, 10 heads of 128, ReLU² MLP
    // of 4·1280, no biases, parameter-free RMSNorm and QK-norm, an untied head over 32,768
    // tokens, 10 value embeddings of 32,768 × 1280 with gates of 10 × 12, 2·20 + 26 scalars:
    // 2·32768·1280 + 10·(32768·1280 + 120) + 20·12·1280² + 66 = 896,533,746 (the total
    // base_train.py prints for --depth=20).
    let mut chat = llama(Family::Nanochat, 1280, 20, 10, 10, 128, 5120, 32768, false);
    chat.norm = Norm::RmsNormNoWeight;
    chat.attention.qk_norm = Some(Norm::RmsNormNoWeight);
    chat.embeddings.logit_softcap = Some(15.0);
    chat.mlp = Mlp::Dense(FeedForward {
        intermediate: 5120,
        gated: false,
        fused_gate_up: false,
        activation: Activation::ReluSquared,
        bias: false,
    });
    assert_eq!(chat.parameter_count(), 896_533_746);
    // The vocabulary padded to a multiple of 64: 32,769 tokens make 32,832 rows in wte, lm_head
    // and each value embedding.
    chat.vocab_size = 32769;
    assert_eq!(chat.parameter_count(), 896_533_746 + 12 * 64 * 1280);
}

#[test]
fn gpt2_is_the_same_model_in_both_code_bases() {
    let s = Scenario {
        n_layer: 12,
        n_head: 12,
        n_embd: 768,
        vocab_size: 50257,
        block_size: 1024,
        bias: true,
        ..Scenario::default()
    };
    let nano = Architecture::nanogpt(&s);
    let hf = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    // openai-community/gpt2: 124,439,808.
    assert_eq!(nano.parameter_count(), 124_439_808);
    assert_eq!(hf.parameter_count(), 124_439_808);
    // Same tensors, different code: the activation is what differs.
    assert_eq!(nano.parameters(), hf.parameters());
    assert_ne!(nano.mlp, hf.mlp);
}

#[test]
fn every_family_is_computed_and_another_models_nanogpt_shape_is_refused() {
    let catalog = GpuCatalog::builtin();
    // Every described family has its own step today; a family added later is refused by name
    // (`Architecture::computed`) until it has one, never estimated as nanoGPT.
    for family in [
        Family::NanoGpt,
        Family::HfGpt2,
        Family::Llama,
        Family::Gemma2,
        Family::Gemma3,
        Family::Moe,
        Family::Nanochat,
    ] {
        assert!(family.computed(), "{}", family.as_str());
    }
    // A nanoGPT description that is not the scenario's own model.
    let other = Architecture::nanogpt(&Scenario {
        n_layer: 2,
        ..Scenario::default()
    });
    let e = estimate_model(&other, &Scenario::default(), &catalog).unwrap_err();
    assert!(
        e.message.contains("not the one the scenario"),
        "{}",
        e.message
    );
}

#[test]
fn hugging_face_settings_the_replay_does_not_cover_are_refused_all_at_once() {
    let catalog = GpuCatalog::builtin();
    let hf = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    // nanoGPT's defaults compile; and a sequence beyond n_positions.
    // nanoGPT's own patch to freeze the embeddings is no Trainer setting (PEFT's LoRA is).
    let s = Scenario {
        block_size: 2048,
        freeze_embeddings: true,
        ..Scenario::default()
    };
    let e = estimate_model(&hf, &s, &catalog).unwrap_err();
    for key in [
        "`compile`",
        "`freeze_embeddings`",
        "`block_size`",
        "transformers 5.24.0",
    ] {
        assert!(e.message.contains(key), "{key}: {}", e.message);
    }
    assert_eq!(e.key.as_deref(), Some("compile"));
    // Checkpointing is replayed with eager attention only.
    let ckpt = Scenario {
        compile: false,
        grad_checkpoint: true,
        ..Scenario::default()
    };
    let e = estimate_model(&hf, &ckpt, &catalog).unwrap_err();
    assert!(e.message.contains("`grad_checkpoint`"), "{}", e.message);
    let eager = Scenario {
        flash: false,
        ..ckpt
    };
    assert!(estimate_model(&hf, &eager, &catalog).is_ok());
}

#[test]
fn shapes_beyond_any_gpu_saturate_instead_of_overflowing() {
    let huge = Architecture::hf_gpt2(u64::MAX, 1, u64::MAX, u64::MAX, u64::MAX);
    assert_eq!(huge.parameter_count(), u64::MAX);
    let e = estimate_model(&huge, &Scenario::default(), &GpuCatalog::builtin());
    assert!(e.is_err());
}

#[test]
fn the_large_tensor_list_of_hugging_faces_gpt2_has_its_fp32_loss_and_no_evaluation() {
    let hf = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    let s = Scenario {
        batch_size: 4,
        flash: false,
        ..Scenario::default()
    };
    let list = large_tensors(&hf, &s);
    let names: Vec<&str> = list.iter().map(|t| t.name).collect();
    assert!(names.contains(&"logits_fp32") && !names.contains(&"eval_logits"));
    let scores = list
        .iter()
        .find(|t| t.name == "attention_scores_fp32")
        .unwrap();
    assert_eq!(scores.shape_text(), "(4, 12, 1024, 1024)");
    assert_eq!(scores.bytes(), 4 * 12 * 1024 * 1024 * 4);
    // In float32 the loss's `logits.float()` is the logits themselves.
    let fp32 = Scenario {
        dtype: crate::estimate::Dtype::Float32,
        ..s
    };
    assert!(!large_tensors(&hf, &fp32)
        .iter()
        .any(|t| t.name == "logits_fp32"));
}
