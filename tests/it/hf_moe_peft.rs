//! PEFT's LoRA and QLoRA and bitsandbytes' 8-bit AdamW on transformers' mixtures of experts
//! (Mixtral, Qwen1.5-MoE, Qwen3-MoE), held to the fake-tensor replay of their Trainer steps
//! (`tools/hf_replay/replay_moe_peft.py` → `tests/data/hf_moe_peft_replay.json`).

use serde::Deserialize;

use crate::hf_gpt2::within_one_percent;
use crate::hf_moe::{architecture, Model};
use vramdoc::estimate::{
    estimate_model, Architecture, Dtype, Estimate, GpuCatalog, LoraModule, LoraTargets, Optimizer,
    Scenario,
};

#[derive(Deserialize)]
pub(crate) struct Replay {
    torch: String,
    transformers: String,
    peft: String,
    pub(crate) runs: Vec<Entry>,
}

#[derive(Deserialize)]
pub(crate) struct Entry {
    pub(crate) run: Run,
    params: u64,
    pub(crate) trainable_params: u64,
    param_bytes: u64,
    model_bytes: u64,
    grad_bytes: u64,
    optimizer_bytes: u64,
    pub(crate) train_peak_bytes: u64,
    pub(crate) first_step_peak_bytes: u64,
    adapted_modules: Vec<String>,
}

#[derive(Deserialize)]
pub(crate) struct Run {
    pub(crate) name: String,
    model: Model,
    method: String,
    block_size: u64,
    batch_size: u64,
    accumulation: u64,
    weights: String,
    dtype: String,
    optim: String,
    lora_rank: u64,
    lora_targets: String,
    grad_checkpoint: bool,
    attn_implementation: String,
    double_quant: bool,
}

pub(crate) fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_moe_peft_replay.json"
    );
    let data: Replay = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(data.transformers, "5.24.0", "the pinned transformers");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    assert_eq!(data.peft, "0.21.2", "the pinned peft");
    data
}

/// The model and Trainer settings of a replayed run.
fn model_and_run(r: &Run) -> (Architecture, Scenario) {
    let bf16_weights = r.weights == "bfloat16";
    let qlora = r.method == "qlora";
    let run = Scenario {
        block_size: r.block_size,
        batch_size: r.batch_size,
        gradient_accumulation_steps: r.accumulation,
        dtype: if bf16_weights && !qlora {
            Dtype::Bfloat16
        } else {
            Dtype::parse(&r.dtype).unwrap()
        },
        pure_bf16: bf16_weights && !qlora,
        flash: r.attn_implementation == "sdpa",
        dropout: 0.0,
        grad_checkpoint: r.grad_checkpoint || qlora,
        compile: false,
        optimizer: Optimizer::parse(&r.optim).unwrap(),
        load_in_4bit: qlora,
        bnb_4bit_use_double_quant: r.double_quant,
        lora_rank: r.lora_rank,
        lora_targets: if r.lora_targets.is_empty() {
            LoraTargets::default()
        } else {
            LoraTargets::parse(&r.lora_targets).unwrap()
        },
        ..Scenario::default()
    };
    (architecture(&r.model), run)
}

fn estimate(e: &Entry) -> Result<Estimate, vramdoc::estimate::ScenarioError> {
    let (model, run) = model_and_run(&e.run);
    estimate_model(&model, &run, &GpuCatalog::builtin())
}

/// Each adapted module or parameter by its path in a block, as the replay lists them.
fn paths(modules: &[LoraModule]) -> Vec<String> {
    let mut out: Vec<String> = modules
        .iter()
        .map(|m| match m {
            LoraModule::Router => "mlp.gate.weight".to_owned(),
            LoraModule::ExpertsGateUp => "mlp.experts.gate_up_proj".to_owned(),
            LoraModule::ExpertsDown => "mlp.experts.down_proj".to_owned(),
            LoraModule::SharedExpertGate => "mlp.shared_expert_gate".to_owned(),
            LoraModule::GateProj | LoraModule::UpProj | LoraModule::DownProj => {
                format!("mlp.shared_expert.{}", m.as_str())
            }
            _ => format!("self_attn.{}", m.as_str()),
        })
        .collect();
    out.sort();
    out
}

/// The runs the estimator refuses (at `model`), with words of the reason: LoRA with small
/// vocabularies, where the experts' forward or the routing product's backward may set the
/// peak. QLoRA is estimated whichever moment leads.
const REFUSED: [(&str, &str); 4] = [
    (
        "lora-tiny-mixtral-v512-r8-q+k+v+o-s512-b4-acc1-bf16w-autocast-adamw-ckpt",
        "routing product",
    ),
    (
        "lora-tiny-qwen3-moe-v1024-r8-q+k+v+o-s1024-b2-acc2-bf16w-autocast-adamw",
        "routing product",
    ),
    (
        "lora-tiny-qwen2-moe-v512-r8-all-s512-b4-acc1-bf16w-autocast-adamw-ckpt",
        "routing product",
    ),
    (
        "lora-tiny-mixtral-v512-r8-all-s512-b4-acc1-bf16w-autocast-adamw",
        "routing product",
    ),
];

#[test]
fn moe_fine_tunes_are_within_one_percent_of_every_replayed_peak_and_their_bytes_exact() {
    let data = replay();
    let (mut worst, mut checked, mut refused) = (0.0f64, 0, 0);
    let mut moments = std::collections::BTreeSet::new();
    let (mut qlora_moments, mut qlora) = (std::collections::BTreeSet::new(), 0);
    let mut unexpected = Vec::new();
    for e in &data.runs {
        let name = &e.run.name;
        let (model, run) = model_and_run(&e.run);
        if let Some((_, words)) = REFUSED.iter().find(|(n, _)| n == name) {
            let err = estimate(e).unwrap_err();
            assert_eq!(err.key.as_deref(), Some("model"), "{name}: {}", err.message);
            assert!(err.message.contains(words), "{name}: {}", err.message);
            refused += 1;
            continue;
        }
        let est = match estimate(e) {
            Ok(est) => est,
            Err(err) => {
                unexpected.push(format!("{name}: {}", err.message));
                continue;
            }
        };
        let json = serde_json::to_value(&est).unwrap();
        assert_eq!(
            json["params"]["trainable"], e.trainable_params,
            "{name}: trainable"
        );
        assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
        assert_eq!(
            est.bytes.weights, e.model_bytes,
            "{name}: weights and buffers"
        );
        match e.run.method.as_str() {
            "full" => {
                let w = if e.run.weights == "bfloat16" { 2 } else { 4 };
                assert_eq!(est.params.total, e.params, "{name}: parameters");
                assert_eq!(e.params, e.trainable_params, "{name}: full training");
                assert_eq!(est.params.total * w, e.grad_bytes, "{name}: gradients");
            }
            method => {
                let modules = run.lora_targets.resolve(&model).unwrap();
                assert_eq!(paths(&modules), e.adapted_modules, "{name}: adapted");
                assert_eq!(
                    e.grad_bytes,
                    e.trainable_params * 4,
                    "{name}: float32 gradients"
                );
                // At the peak: every adapter's gradient when accumulating, else those made so
                // far (none at the loss).
                if e.run.accumulation > 1 {
                    assert_eq!(
                        est.bytes.gradients, e.grad_bytes,
                        "{name}: earlier gradients"
                    );
                } else {
                    assert!(
                        est.bytes.gradients < e.grad_bytes,
                        "{name}: gradients so far"
                    );
                }
                let total = if method == "qlora" {
                    model.parameter_count() + e.trainable_params
                } else {
                    e.params
                };
                assert_eq!(est.params.total, total, "{name}: parameters");
            }
        }
        let (err, first) =
            within_one_percent(name, &est, e.train_peak_bytes, e.first_step_peak_bytes);
        worst = worst.max(err.max(first));
        moments.insert(format!("{:?}", est.train_peak_moment));
        if e.run.method == "qlora" {
            qlora_moments.insert(format!("{:?}", est.train_peak_moment));
            qlora += 1;
        }
        checked += 1;
    }
    eprintln!(
        "worst: {:.4} % over {checked} runs, at {moments:?}",
        worst * 100.0
    );
    assert!(unexpected.is_empty(), "refused: {unexpected:#?}");
    assert_eq!(refused, REFUSED.len(), "every refused run is in the data");
    assert!(checked >= 14, "{checked}");
    // The adapted experts' backward and the loss both set peaks.
    assert!(moments.len() >= 3, "{moments:?}");
    // Every QLoRA run is estimated, led by the loss or by a recomputed block's float32 experts.
    assert_eq!(qlora, 19, "QLoRA runs estimated");
    assert_eq!(
        qlora_moments.into_iter().collect::<Vec<_>>(),
        ["BlockRecompute", "LossBackward"],
    );
}

#[derive(Deserialize)]
struct Counts {
    peft: String,
    models: Vec<CountedModel>,
}

#[derive(Deserialize)]
struct CountedModel {
    id: String,
    counts: Vec<Count>,
}

#[derive(Deserialize)]
struct Count {
    rank: u64,
    targets: String,
    params: u64,
    trainable: u64,
    adapted: Vec<String>,
}

/// The catalog's mixtures of experts (`data/models/moe.yaml`) as the replay describes them.
fn catalog_shape(id: &str) -> Model {
    let (model_type, layers, hidden, heads, kv_heads, experts, top_k, i, shared, head_dim) =
        match id {
            "mixtral-8x7b" => ("mixtral", 32, 4096, 32, 8, 8, 2, 14336, 0, 0),
            "qwen1.5-moe-a2.7b" => ("qwen2_moe", 24, 2048, 16, 16, 60, 4, 1408, 5632, 0),
            "qwen3-30b-a3b" => ("qwen3_moe", 48, 2048, 32, 4, 128, 8, 768, 0, 128),
            _ => panic!("{id}"),
        };
    let vocab_size = if model_type == "mixtral" {
        32000
    } else {
        151_936
    };
    Model {
        model_type: model_type.into(),
        layers,
        hidden,
        heads,
        kv_heads,
        experts,
        top_k,
        expert_intermediate: i,
        vocab_size,
        shared_intermediate: shared,
        head_dim,
    }
}

/// Every catalog mixture of experts, through the CLI: the trainable count and the parameters
/// with adapters equal PEFT's (`tools/hf_replay/peft_counts.py --moe`), the adapted modules and
/// parameters the same, for `all-linear`, the attention's projections, and the router with the
/// experts by their names of transformers 4 (Qwen1.5-MoE: the shared expert and its gate).
#[test]
fn moe_lora_counts_equal_pefts_for_every_catalog_mixture_of_experts() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/peft_moe_lora_counts.json"
    );
    let data: Counts = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(data.peft, "0.21.2");
    assert_eq!(data.models.len(), 3);
    let t = crate::support::SiteTest::new();
    for m in &data.models {
        let model = architecture(&catalog_shape(&m.id));
        for c in &m.counts {
            let what = format!("{} r{} {}", m.id, c.rank, c.targets);
            let v = crate::trainer_replay::cli_in(
                &t,
                &[
                    "--model",
                    &m.id,
                    &format!("--lora_rank={}", c.rank),
                    &format!("--lora_targets={}", c.targets),
                ],
            );
            assert_eq!(v["params"]["trainable"], c.trainable, "{what}: trainable");
            assert_eq!(v["params"]["total"], c.params, "{what}: with adapters");
            assert_eq!(
                c.params - c.trainable,
                model.parameter_count(),
                "{what}: base"
            );
            let targets = LoraTargets::parse(&c.targets).unwrap();
            let modules = targets.resolve(&model).unwrap();
            assert_eq!(paths(&modules), c.adapted, "{what}: adapted");
        }
    }
}

/// `vramdoc estimate --model ID ARGS` through the real CLI.
pub(crate) fn run(t: &crate::support::SiteTest, id: &str, args: &[&str]) -> crate::support::Run {
    let mut all = vec!["estimate", "--model", id];
    all.extend_from_slice(args);
    t.run(&all)
}

/// What PEFT does on a mixture of experts, said with its bytes: the experts' merged copies
/// (`lora.ParamWrapper`), `all-linear` leaving Qwen1.5-MoE's experts alone, and QLoRA's
/// float32 experts, whether the step is estimated or refused.
#[test]
fn the_cli_says_what_peft_and_bitsandbytes_do_to_the_experts() {
    let t = crate::support::SiteTest::new();
    let gib = |bytes: u64| bytes as f64 / f64::from(1u32 << 30);
    let r = run(
        &t,
        "mixtral-8x7b",
        &[
            "--lora_rank=16",
            "--lora_targets=all-linear",
            "--dtype=bfloat16",
            "--pure_bf16=True",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // gate_up_proj (8, 2·14336, 4096) and down_proj (8, 4096, 14336) merged in bf16.
    let per_layer = gib(8 * 4096 * 14336 * 3 * 2);
    assert!(r.stderr.contains("lora.ParamWrapper"), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("{per_layer:.2} GiB per layer")),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!("({:.2} GiB)", per_layer * 32.0)),
        "{}",
        r.stderr
    );
    let r = run(
        &t,
        "qwen1.5-moe-a2.7b",
        &[
            "--lora_rank=16",
            "--lora_targets=all-linear",
            "--load_in_4bit=True",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("the 60 experts"), "{}", r.stderr);
    // 60 experts of 3·1408·2048 in 24 layers, of the catalog's 14,315,784,192 parameters.
    let experts = 60u64 * 3 * 1408 * 2048 * 24;
    let share = experts as f64 / 14_315_784_192.0 * 100.0;
    assert!(
        r.stderr
            .contains(&format!("{share:.1} % of the parameters")),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains(&format!("{:.2} GiB of experts", gib(experts * 4))),
        "{}",
        r.stderr
    );
    // Mixtral's QLoRA: estimated, and on an A100 80GB it does not fit; the note says what
    // stays in float32, that no training setting changes it and what would.
    let r = run(
        &t,
        "mixtral-8x7b",
        &[
            "--lora_rank=16",
            "--lora_targets=q_proj,v_proj",
            "--load_in_4bit=True",
            "--gpu=a100-80gb",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Does not fit"), "{}", r.stdout);
    let experts = 8u64 * 3 * 14336 * 4096 * 32;
    assert!(
        r.stderr
            .contains(&format!("{:.2} GiB of experts", gib(experts * 4))),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("nn.Linear modules"), "{}", r.stderr);
    assert!(r.stderr.contains("transformers 4.x"), "{}", r.stderr);
}

/// What PEFT 0.21.2 itself refuses is refused at its key, saying why; users' spellings of the
/// names (`mlp.gate`, `w1`) are read.
#[test]
fn what_peft_refuses_on_a_mixture_of_experts_is_refused_at_its_key() {
    let t = crate::support::SiteTest::new();
    for (id, args, key, words) in [
        (
            "mixtral-8x7b",
            &["--lora_rank=16"][..],
            "lora_rank",
            "no default LoRA targets",
        ),
        (
            "qwen3-30b-a3b",
            &["--lora_rank=16"][..],
            "lora_rank",
            "no default LoRA targets",
        ),
        (
            "mixtral-8x7b",
            &["--lora_rank=8", "--lora_targets=w1,w2"][..],
            "lora_targets",
            "without w3",
        ),
        (
            "qwen3-30b-a3b",
            &["--lora_rank=8", "--lora_targets=up_proj"][..],
            "lora_targets",
            "without gate_proj",
        ),
        (
            "mixtral-8x7b",
            &["--lora_rank=8", "--lora_targets=gate_proj"][..],
            "lora_targets",
            "w1, w3, w2",
        ),
        (
            "qwen1.5-moe-a2.7b",
            &["--lora_rank=8", "--lora_targets=mlp.gate"][..],
            "lora_targets",
            "TopKRouter",
        ),
        (
            "qwen3-30b-a3b",
            &[
                "--lora_rank=8",
                "--lora_targets=all-linear",
                "--lora_dropout=0.05",
            ][..],
            "lora_dropout",
            "lora.ParamWrapper",
        ),
    ] {
        let r = run(&t, id, args);
        assert_eq!(r.code, 1, "{id} {args:?}: {}", r.stdout);
        assert!(r.stderr.contains(key), "{id} {args:?}: {}", r.stderr);
        assert!(r.stderr.contains(words), "{id} {args:?}: {}", r.stderr);
    }
    // Mixtral's router by its module path is a ParamWrapper too; the attention's Linears take
    // dropout.
    let r = run(
        &t,
        "mixtral-8x7b",
        &[
            "--lora_rank=8",
            "--lora_targets=mlp.gate,self_attn.o_proj",
            "--lora_dropout=0.05",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("lora_dropout"), "{}", r.stderr);
    let r = run(
        &t,
        "qwen3-30b-a3b",
        &[
            "--lora_rank=8",
            "--lora_targets=q_proj,v_proj",
            "--lora_dropout=0.05",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// The what-ifs of a mixture of experts' full fine-tune offer PEFT's LoRA (all-linear: PEFT has
/// no default), QLoRA and bitsandbytes' 8-bit AdamW, each with its verdict and each the CLI's
/// own estimate of its changes; a LoRA run on the experts is offered the attention's
/// projections, which leave the experts without merged copies.
#[test]
fn moe_what_ifs_offer_lora_qlora_and_eight_bit_adamw_with_their_verdicts() {
    let t = crate::support::SiteTest::new();
    let json = |args: &[&str]| {
        let r = run(
            &t,
            "qwen3-30b-a3b",
            &[args, &["--gpu", "h100-80gb", "--format", "json"]].concat(),
        );
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap()
    };
    let full = json(&[]);
    let options = full["what_if"].as_array().unwrap();
    for kind in ["lora", "qlora", "optimizer"] {
        let w = options
            .iter()
            .find(|w| w["kind"] == kind)
            .unwrap_or_else(|| panic!("{kind}"));
        assert!(w["verdict"].is_string(), "{kind}: {w}");
        let changes = crate::hf_lora_options::flags(w);
        let args: Vec<&str> = changes.iter().map(String::as_str).collect();
        let own = json(&args);
        assert_eq!(own["bytes"]["total"], w["total"], "{kind}: {changes:?}");
        assert_eq!(own["verdict"], w["verdict"], "{kind}: {changes:?}");
    }
    let lora = json(&[
        "--lora_rank=16",
        "--lora_targets=all-linear",
        "--dtype=bfloat16",
        "--pure_bf16=True",
    ]);
    let fewer = lora["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["changes"][0]["value"] == "q_proj,k_proj,v_proj,o_proj")
        .expect("the attention's projections");
    assert!(fewer["total"].as_u64() < lora["bytes"]["total"].as_u64());
}
