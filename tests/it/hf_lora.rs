//! PEFT's LoRA on Hugging Face's GPT-2 and the Llama family: the keys `lora_rank`,
//! `lora_targets` and `lora_dropout` read against each family's module names, refused at their
//! line where the model has no such module.

use crate::support::SiteTest;

#[test]
fn a_target_the_family_lacks_is_refused_at_its_line_listing_the_familys_names() {
    let t = SiteTest::new();
    t.file(
        "s.yaml",
        "model: llama-3.1-8b\nlora_rank: 16\nlora_targets: [q_proj, c_attn]\n",
    );
    let r = t.run(&["estimate", "s.yaml"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("s.yaml:3"), "{}", r.stderr);
    for name in [
        "attn.c_attn is no Linear module",
        "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj",
    ] {
        assert!(r.stderr.contains(name), "{name}: {}", r.stderr);
    }
    // GPT-2 has no Llama names; Phi-3 fuses q/k/v and gate/up.
    t.file(
        "g.yaml",
        "model: gpt2\nlora_rank: 8\nlora_targets: q_proj,v_proj\n",
    );
    let r = t.run(&["estimate", "g.yaml"]);
    assert!(
        r.stderr.contains("g.yaml:3") && r.stderr.contains("q_proj, v_proj are no Linear module"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj"),
        "{}",
        r.stderr
    );
    let r = t.run(&[
        "estimate",
        "--model=phi-3-mini-4k",
        "--lora_rank=8",
        "--lora_targets=q_proj",
    ]);
    assert!(
        r.stderr
            .contains("qkv_proj, o_proj, gate_up_proj, down_proj"),
        "{}",
        r.stderr
    );
    // A name no family has is refused as it is read.
    let r = t.run(&[
        "estimate",
        "--model=gpt2",
        "--lora_rank=8",
        "--lora_targets=qproj",
    ]);
    assert!(
        r.stderr.contains("unknown LoRA target `qproj`"),
        "{}",
        r.stderr
    );
}

#[test]
fn without_targets_a_model_gets_pefts_default_or_is_refused_where_peft_has_none() {
    let t = SiteTest::new();
    // Phi-3 has no entry in PEFT's default target_modules: get_peft_model raises.
    let r = t.run(&["estimate", "--model=phi-3-mini-4k", "--lora_rank=8"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("--lora_rank=8") && r.stderr.contains("Please specify `target_modules`"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("qkv_proj, o_proj, gate_up_proj, down_proj or all-linear"),
        "{}",
        r.stderr
    );
}

#[test]
fn nanogpts_lora_patch_keeps_its_own_names_and_has_no_dropout() {
    let t = SiteTest::new();
    let r = t.run(&["estimate", "--lora_rank=8", "--lora_targets=q_proj"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("q_proj is no Linear module of nanoGPT"),
        "{}",
        r.stderr
    );
    let r = t.run(&["estimate", "--lora_rank=8", "--lora_dropout=0.1"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("nanoGPT's LoRA patch has no dropout"),
        "{}",
        r.stderr
    );
    let r = t.run(&[
        "estimate",
        "--lora_rank=8",
        "--lora_targets=c_proj",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("\"lora_targets\": \"attn.c_proj,mlp.c_proj\""),
        "{}",
        r.stdout
    );
}
