//! The scenario keys: one row per key, and everything about a key derived from its row.
//!
//! A row names the key (nanoGPT's `train.py` spelling, used alike in YAML, Python configs,
//! `--key=value` and `--set`), its [`Kind`] (which also decides how a literal is read and whether
//! a Python config quotes it), its unit, a one-line description, what nanoGPT has for it
//! ([`NanoGpt`]), whether changing it changes training ([`TrainingEffect`]), the phases and model
//! families it applies to, and the [`crate::estimate::Scenario`] field it sets. From the table
//! come: [`Scenario::set`] and [`Scenario::from_yaml`], the key list of errors and of
//! `estimate --help` ([`help_list`]), the values a what-if's changes are shown with
//! ([`Scenario::display_values`]), the JSON `scenario` object (the `Serialize` impl below), the
//! code-change notes and training markers of `present`, and the README's key table
//! ([`markdown_table`], compared with the README by a test).

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::literal::{self, Literal};
use crate::estimate::{Scenario, ScenarioError};

/// What a key's value is; each kind has one reader of literals (in [`super::literal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number ≥ 1.
    Count,
    /// A whole number ≥ 1, or `None` (then another key's value is used).
    CountOrNone,
    /// A whole number ≥ 0 (0 turns the feature off).
    Whole,
    /// A byte count: a number of bytes or a size with its unit (`"2150 MiB"`).
    Bytes,
    /// `True` or `False`.
    Bool,
    /// A probability in [0, 1).
    Probability,
    /// An autocast dtype.
    Dtype,
    /// What a Hugging Face model's weights are loaded in: `auto` or a dtype.
    WeightsDtype,
    /// An optimizer.
    Optimizer,
    /// bitsandbytes' 4-bit data type.
    QuantType,
    /// How DDP processes split the training state.
    Sharding,
    /// The trainer of a Hugging Face model's step.
    Trainer,
    /// transformers' `attn_implementation`, or `None` (then `flash` says).
    AttnImplementation,
    /// The layout of a Hugging Face model's training batch.
    BatchLayout,
    /// What the scenario describes: `train` or `generate`.
    Phase,
    /// train.py's `init_from`.
    InitFrom,
    /// A list of layer names (LoRA's targets).
    Names,
    /// A GPU id of the catalog, or `None`.
    Gpu,
    /// A model: an id of the bundled model catalog or a path to a Hugging Face `config.json`,
    /// or `None` (nanoGPT's own model).
    Model,
}

impl Kind {
    /// The values it accepts, as the help and the README list them.
    pub fn accepts(self) -> &'static str {
        match self {
            Kind::Count => "whole number ≥ 1",
            Kind::CountOrNone => "whole number ≥ 1, or None",
            Kind::Whole => "whole number ≥ 0",
            Kind::Bytes => "bytes, or a size such as \"2150 MiB\"",
            Kind::Bool => "True | False",
            Kind::Probability => "number in [0, 1)",
            Kind::Dtype => "float32 | bfloat16 | float16",
            Kind::WeightsDtype => "auto | float32 | bfloat16 | float16",
            Kind::Optimizer => "adamw | adamw8bit | paged_adamw8bit | sgd",
            Kind::QuantType => "nf4 | fp4",
            Kind::Sharding => "none | zero1 | fsdp",
            Kind::Trainer => "transformers (Trainer) | trl (SFTTrainer)",
            Kind::AttnImplementation => "sdpa | eager | flash_attention_2, or None",
            Kind::BatchLayout => "full | padded | padding_free",
            Kind::Phase => "train | generate",
            Kind::InitFrom => "scratch | resume | gpt2 | gpt2-medium | gpt2-large | gpt2-xl",
            Kind::Names => "module names (GPT-2: attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj; Llama: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; Phi-3: qkv_proj, gate_up_proj) or all-linear",
            Kind::Gpu => "a catalog id such as rtx-4070, or None",
            Kind::Model => "a model catalog id such as gpt2, a config.json path, or None",
        }
    }

    /// Whether a Python config writes its values as strings (`dtype = 'float16'`).
    pub fn quoted(self) -> bool {
        matches!(
            self,
            Kind::Dtype
                | Kind::WeightsDtype
                | Kind::Phase
                | Kind::Optimizer
                | Kind::QuantType
                | Kind::Sharding
                | Kind::Trainer
                | Kind::AttnImplementation
                | Kind::BatchLayout
                | Kind::InitFrom
                | Kind::Names
                | Kind::Gpu
                | Kind::Model
        )
    }
}

/// What nanoGPT has for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NanoGpt {
    /// A global of `train.py`: a config file's `key = value` or a `--key=value` override.
    Setting,
    /// No setting, and no code change either: what the run has around it (the card, other
    /// programs' memory, torchrun's process count, the dataset's vocabulary).
    Surroundings,
    /// A code change (a patch to `train.py`, or a PyTorch version); the Fluent id of the note
    /// saying what it needs.
    Code(&'static str),
}

/// Whether changing a key changes what training computes (the † marker of an option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainingEffect {
    /// It does (a different model, precision, optimizer or run).
    Changes,
    /// It does not (memory only: evaluation batch, attention kernel, checkpointing, the card).
    Same,
    /// Only if the effective batch (`batch_size · gradient_accumulation_steps`) changes.
    EffectiveBatch,
}

/// What a scenario describes (the key `phase`'s values are the phases of the table's column).
pub use crate::estimate::Phase;

/// The model families a key applies to (the table's `families` column).
pub use super::families::Families;

use values::AsValue;
pub use values::KeyValue;

/// One scenario key: the row of the table.
pub struct Key {
    /// The key, as nanoGPT's `train.py` (or this tool, for its additions) spells it.
    pub name: &'static str,
    /// What its value is.
    pub kind: Kind,
    /// The unit of its value (empty when it has none).
    pub unit: &'static str,
    /// One line saying what it is.
    pub doc: &'static str,
    /// What nanoGPT has for it.
    pub nanogpt: NanoGpt,
    /// Whether changing it changes training.
    pub training: TrainingEffect,
    /// The phases it applies to.
    pub phases: &'static [Phase],
    /// The model families whose code reads it ([`Families`]).
    pub families: Families,
    /// Sets the field from a literal (the key's name for errors).
    set: fn(&mut Scenario, &str, &Literal) -> Result<(), ScenarioError>,
    /// The field's value as set.
    value: fn(&Scenario) -> KeyValue<'_>,
    /// The field's value as the JSON `scenario` object gives it (resolved defaults).
    json: fn(&Scenario) -> KeyValue<'_>,
}

impl Key {
    /// The key's value in `s`, as set (`None` for an unset optional key).
    pub fn value<'a>(&self, s: &'a Scenario) -> KeyValue<'a> {
        (self.value)(s)
    }

    /// The key's value as the JSON `scenario` object gives it, defaults resolved
    /// (`eval_batch_size`: the batch evaluation uses); what a guide's `scenario.<key>` reads.
    pub fn resolved<'a>(&self, s: &'a Scenario) -> KeyValue<'a> {
        (self.json)(s)
    }

    /// Whether changing it needs a code change, not a setting nanoGPT reads.
    pub fn needs_code(&self) -> bool {
        matches!(self.nanogpt, NanoGpt::Code(_))
    }
}

/// The reader of each [`Kind`].
macro_rules! read {
    (Count, $k:expr, $v:expr) => {
        literal::count($k, $v)
    };
    (CountOrNone, $k:expr, $v:expr) => {
        literal::optional_count($k, $v)
    };
    (Whole, $k:expr, $v:expr) => {
        literal::whole($k, $v)
    };
    (Bytes, $k:expr, $v:expr) => {
        literal::byte_size($k, $v)
    };
    (Bool, $k:expr, $v:expr) => {
        literal::boolean($k, $v)
    };
    (Probability, $k:expr, $v:expr) => {
        literal::probability($k, $v)
    };
    (Dtype, $k:expr, $v:expr) => {
        literal::dtype($k, $v)
    };
    (WeightsDtype, $k:expr, $v:expr) => {
        literal::weights_dtype($k, $v)
    };
    (Optimizer, $k:expr, $v:expr) => {
        literal::optimizer($k, $v)
    };
    (QuantType, $k:expr, $v:expr) => {
        literal::quant_type($k, $v)
    };
    (Sharding, $k:expr, $v:expr) => {
        literal::sharding($k, $v)
    };
    (Trainer, $k:expr, $v:expr) => {
        literal::trainer($k, $v)
    };
    (AttnImplementation, $k:expr, $v:expr) => {
        literal::attn_implementation($k, $v)
    };
    (BatchLayout, $k:expr, $v:expr) => {
        literal::batch_layout($k, $v)
    };
    (Phase, $k:expr, $v:expr) => {
        literal::phase($k, $v)
    };
    (InitFrom, $k:expr, $v:expr) => {
        literal::init_from($k, $v)
    };
    (Names, $k:expr, $v:expr) => {
        literal::lora_targets($k, $v)
    };
    (Gpu, $k:expr, $v:expr) => {
        literal::gpu_id($k, $v)
    };
    (Model, $k:expr, $v:expr) => {
        literal::model($k, $v)
    };
}

/// The table: `name: Kind, "unit", "doc", nanoGPT, training, phases, families [, json getter]`;
/// the field of [`Scenario`] has the key's name.
macro_rules! keys {
    (@json $name:ident) => { |s| s.$name.as_value() };
    (@json $name:ident, $json:expr) => { $json };
    ($($name:ident: $kind:ident, $unit:literal, $doc:literal, $nanogpt:expr, $training:ident,
       $phases:expr, $families:expr $(, json = $json:expr)?;)*) => {
        /// Every key a scenario accepts, in display order (the order of the JSON `scenario`
        /// object, of a what-if's changes and of the README's table).
        pub static KEYS: &[Key] = &[$(Key {
            name: stringify!($name),
            kind: Kind::$kind,
            unit: $unit,
            doc: $doc,
            nanogpt: $nanogpt,
            training: TrainingEffect::$training,
            phases: $phases,
            families: $families,
            set: |s, key, v| {
                s.$name = read!($kind, key, v)?;
                Ok(())
            },
            value: |s| s.$name.as_value(),
            json: keys!(@json $name $(, $json)?),
        }),*];
    };
}

/// Training and sampling.
const BOTH: &[Phase] = &[Phase::Train, Phase::Generate];
/// Training only: given with `phase: generate`, the key is refused (sample.py does not read it).
const TRAINING: &[Phase] = &[Phase::Train];
/// Every model family: the run around the model (batch, sequence, precision, processes, card).
const ALL: Families = Families::ALL;
/// transformers' families only (bitsandbytes through `from_pretrained`).
const HF: Families = Families::HF;
/// nanoGPT's code only: its model's shape (a Hugging Face model's comes from its config), its
/// evaluation, train.py's own settings and its fine-tuning patches.
const NANOGPT: Families = Families::NANOGPT;
/// The families with LoRA: nanoGPT's own patch, and PEFT on the Hugging Face families that have
/// it (`Families::HF_LORA`).
const LORA: Families = Families::LORA;
/// PEFT's LoRA only (nanoGPT's patch has no dropout).
const HF_LORA: Families = Families::HF_LORA;

/// The families Liger Kernel patches (`estimate::fused_ce` computes the Llama family and
/// Mixtral/Qwen3-MoE, and refuses the rest by name).
const LIGER: Families = Families::LIGER;

use NanoGpt::{Code, Setting, Surroundings};

keys! {
    phase: Phase, "", "What is estimated: train (train.py) or generate (sampling with sample.py; a sample.py file implies it).", Surroundings, Changes, BOTH, ALL;
    n_layer: Count, "blocks", "Transformer blocks.", Setting, Changes, BOTH, NANOGPT;
    n_head: Count, "heads", "Attention heads per block.", Setting, Changes, BOTH, NANOGPT;
    n_embd: Count, "channels", "Embedding width; a multiple of n_head.", Setting, Changes, BOTH, NANOGPT;
    vocab_size: Count, "tokens", "Vocabulary size (nanoGPT pads GPT-2's 50257 to 50304; a dataset's meta.pkl sets it).", Surroundings, Changes, BOTH, NANOGPT;
    block_size: Count, "tokens", "Sequence length of a training example.", Setting, Changes, BOTH, ALL;
    bias: Bool, "", "Biases in Linear and LayerNorm layers.", Setting, Changes, BOTH, NANOGPT;
    dropout: Probability, "", "Dropout probability.", Setting, Changes, TRAINING, ALL;
    batch_size: Count, "sequences", "Micro-batch size (sequences per forward pass); generating with a model, the prompts decoded at once (sample.py has no batch).", Setting, EffectiveBatch, BOTH, ALL;
    gradient_accumulation_steps: Count, "micro-batches", "Micro-batches per optimizer step, for the whole job.", Setting, EffectiveBatch, TRAINING, ALL;
    dtype: Dtype, "", "Autocast dtype.", Setting, Changes, BOTH, ALL;
    compile: Bool, "", "torch.compile the model.", Setting, Same, BOTH, ALL;
    flash: Bool, "", "Flash (scaled-dot-product) attention instead of the manual masked softmax.", Code("est-code-flash"), Same, BOTH, ALL;
    attn_implementation: AttnImplementation, "", "A Hugging Face model's attention (from_pretrained's attn_implementation; flash = True is sdpa, False eager; flash_attention_2 for the Llama family's and mixtures of experts' full fine-tuning, full or padding-free rows).", Code("est-code-attn_implementation"), Same, BOTH, HF,
        json = |s| KeyValue::Text(Cow::Borrowed(s.attention().as_str()));
    batch_layout: BatchLayout, "", "A Hugging Face model's training batch: full rows, padded rows with a mask (block_size the longest row), or padding-free rows flattened into one.", Code("est-code-batch_layout"), Changes, TRAINING, HF;
    grad_checkpoint: Bool, "", "Per-block activation checkpointing.", Code("est-code-grad_checkpoint"), Same, TRAINING, ALL;
    optimizer: Optimizer, "", "The optimizer.", Code("est-code-optimizer"), Changes, TRAINING, ALL;
    eval_batch_size: CountOrNone, "sequences", "Micro-batch of estimate_loss; None means batch_size.", Code("est-code-eval_batch_size"), Same, TRAINING, NANOGPT,
        json = |s| KeyValue::Whole(s.eval_batch());
    pure_bf16: Bool, "", "Parameters, gradients and optimizer state in bf16 (nanoGPT: needs dtype = bfloat16; a Hugging Face model: weights_dtype = bfloat16).", Code("est-code-pure_bf16"), Changes, TRAINING, ALL;
    weights_dtype: WeightsDtype, "", "What a Hugging Face model's weights are loaded in and trained as (from_pretrained's dtype); auto, its default, reads the config.json's dtype or torch_dtype.", Code("est-code-weights_dtype"), Changes, BOTH, HF;
    gpu: Gpu, "", "The card to check the estimate against.", Surroundings, Same, BOTH, ALL;
    other_processes: Bytes, "bytes", "Memory other programs hold on the card (counted in the verdict).", Surroundings, Same, BOTH, ALL;
    eval_only: Bool, "", "One estimate_loss at iteration 0, then exit.", Setting, Changes, TRAINING, NANOGPT;
    init_from: InitFrom, "", "Where the model starts: scratch, a resumed ckpt.pt or a GPT-2 checkpoint.", Setting, Changes, BOTH, NANOGPT;
    ddp_world_size: Count, "processes", "Processes of a torchrun DDP job (the estimate is per GPU).", Surroundings, Changes, TRAINING, ALL;
    sharding: Sharding, "", "How the DDP processes split the training state.", Code("est-code-sharding"), Changes, TRAINING, ALL;
    gradient_as_bucket_view: Bool, "", "DDP's gradient_as_bucket_view=True.", Code("est-code-gradient_as_bucket_view"), Changes, TRAINING, ALL;
    freeze_embeddings: Bool, "", "wte (tied to lm_head) and wpe frozen.", Code("est-code-freeze_embeddings"), Changes, TRAINING, NANOGPT;
    lora_rank: Whole, "", "LoRA rank; 0 means no adapters (a Hugging Face model: PEFT's get_peft_model).", Code("est-code-lora"), Changes, TRAINING, LORA;
    lora_targets: Names, "", "The Linear layers LoRA adapts (a Hugging Face model without it: PEFT's default for its model_type).", Code("est-code-lora"), Changes, TRAINING, LORA;
    lora_dropout: Probability, "", "PEFT's lora_dropout: > 0 keeps a dropout mask per adapter input.", Code("est-code-lora"), Changes, TRAINING, HF_LORA;
    load_in_4bit: Bool, "", "Linear weights in bitsandbytes 4-bit (BitsAndBytesConfig(load_in_4bit=True); with lora_rank, QLoRA; in generate, every transformers family: a mixture's experts stay unquantized).", Code("est-code-bnb"), Changes, BOTH, HF;
    bnb_4bit_quant_type: QuantType, "", "The 4-bit data type (BitsAndBytesConfig's default fp4; QLoRA's nf4).", Code("est-code-bnb"), Changes, BOTH, HF;
    bnb_4bit_use_double_quant: Bool, "", "Quantize the 4-bit absmax again (8-bit, per 256 blocks).", Code("est-code-bnb"), Changes, BOTH, HF;
    bnb_4bit_compute_dtype: Dtype, "", "What a 4-bit layer dequantizes to and multiplies in (BitsAndBytesConfig's default float32).", Code("est-code-bnb"), Changes, BOTH, HF;
    load_in_8bit: Bool, "", "Linear weights in bitsandbytes LLM.int8() (BitsAndBytesConfig(load_in_8bit=True); generate only: its training is refused).", Code("est-code-bnb"), Changes, BOTH, HF;
    fused_linear_cross_entropy: Bool, "", "Liger Kernel's fused linear cross-entropy patched in (_apply_liger_kernel_to_instance(model, fused_linear_cross_entropy=True), its other kernels off): the head and loss in chunks, no full logits.", Code("est-code-fused_linear_cross_entropy"), Same, TRAINING, LIGER;
    model: Model, "", "A Hugging Face model to train (or, with phase generate, to generate with) instead of nanoGPT's: an id of vramdoc's model catalog (data/models) or a config.json path.", Surroundings, Changes, BOTH, ALL;
    trainer: Trainer, "", "What runs a Hugging Face model's step: transformers' Trainer, or TRL 0.29.1's SFTTrainer with its SFTConfig defaults (modelled for QLoRA).", Surroundings, Changes, TRAINING, HF;
}

/// The row of `name`.
pub fn get(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// Whether `name` is a scenario key.
pub fn is_key(name: &str) -> bool {
    get(name).is_some()
}

/// The keys' names, comma-separated (for errors that list them).
pub fn names() -> String {
    KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

/// The keys as `estimate --help` lists them: one line each, name, accepted values, description.
pub fn help_list() -> String {
    let width = KEYS.iter().map(|k| k.name.len()).max().unwrap_or(0);
    let mut out =
        String::from("Scenario keys (in a FILE, as --KEY=VALUE or with --set KEY=VALUE):\n");
    for k in KEYS {
        out.push_str(&format!(
            "  {:width$}  {} ({})\n",
            k.name,
            k.doc,
            k.kind.accepts()
        ));
    }
    let hf = super::nanogpt::HF_GENERATE_SETTINGS;
    let sample: Vec<&str> = super::nanogpt::SAMPLE_SETTINGS
        .iter()
        .filter(|k| !hf.contains(k))
        .copied()
        .collect();
    out.push_str(&format!(
        "With phase = generate, also sample.py's own settings: {}.\n",
        sample.join(", ")
    ));
    out.push_str(&format!(
        "With phase = generate and a model (Hugging Face generate): {}, max_new_tokens and batch_size.\n",
        hf.join(", ")
    ));
    out
}

/// The README's key table: key, values, default, unit, what it is, and what nanoGPT has for it.
pub fn markdown_table() -> String {
    let defaults = Scenario::default();
    let mut out = String::from(
        "| key | values | default | unit | what it is | in nanoGPT |\n|---|---|---|---|---|---|\n",
    );
    for k in KEYS {
        let nanogpt = match k.nanogpt {
            Setting => "a train.py setting",
            Surroundings => "not a setting",
            Code(_) => "a code change",
        };
        let phases = if k.phases.contains(&Phase::Generate) {
            ""
        } else {
            " (training only)"
        };
        out.push_str(&format!(
            "| `{}` | {} | `{}` | {} | {}{phases} | {nanogpt} |\n",
            k.name,
            k.kind.accepts().replace('|', "\\|"),
            k.value(&defaults),
            k.unit,
            k.doc,
        ));
    }
    out
}

impl Scenario {
    /// Sets one key from a literal; the error names the key and says what it accepts.
    pub fn set(&mut self, key: &str, value: Literal) -> Result<(), ScenarioError> {
        match get(key) {
            Some(k) => (k.set)(self, key, &value),
            None => Err(ScenarioError::key(
                key,
                format!(
                    "unknown scenario key; {}known keys: {}",
                    super::key_synonyms::hint(key),
                    names()
                ),
            )),
        }
    }

    /// Builds a scenario from a YAML mapping of keys (the rest keep nanoGPT's defaults).
    pub fn from_yaml(v: &yaml_serde::Value) -> Result<Scenario, ScenarioError> {
        use yaml_serde::Value as Yaml;
        let map = match v {
            Yaml::Mapping(map) => map,
            Yaml::Null => return Ok(Scenario::default()),
            _ => {
                return Err(ScenarioError::general(
                    "a scenario must be a mapping of keys such as `n_layer: 6`",
                ))
            }
        };
        let mut scenario = Scenario::default();
        for (k, val) in map {
            let Some(key) = k.as_str() else {
                return Err(ScenarioError::general(format!(
                    "scenario keys must be strings, got {k:?}"
                )));
            };
            let literal = literal::yaml_literal(key, val)?;
            scenario.set(key, literal)?;
        }
        Ok(scenario)
    }

    /// Every key with its value as nanoGPT's config files write it (`True`, `bfloat16`, `None`),
    /// in [`KEYS`] order.
    pub(crate) fn display_values(&self) -> Vec<(&'static str, String)> {
        KEYS.iter()
            .map(|k| (k.name, k.value(self).to_string()))
            .collect()
    }
}

impl Serialize for Scenario {
    /// Every key with its resolved value (`eval_batch_size`: the batch it uses), in [`KEYS`]
    /// order.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Scenario", KEYS.len())?;
        for k in KEYS {
            out.serialize_field(k.name, &k.resolved(self))?;
        }
        out.end()
    }
}

#[cfg(test)]
mod tests;
mod values;
