//! The training scenario: nanoGPT's `train.py` configuration keys plus the few this tool adds.

use serde::Serialize;

use super::error::ScenarioError;
use super::gpu::GpuCatalog;
use super::lora_targets::LoraTargets;
use crate::scenario::keys::{KeyValue, Kind, KEYS};

/// The autocast (mixed-precision) dtype of `train.py`'s `dtype` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// No autocast: everything in fp32 (`torch.autocast` refuses float32 on CUDA and disables itself).
    Float32,
    /// bf16 autocast (Ampere and newer).
    Bfloat16,
    /// fp16 autocast with a `GradScaler`.
    Float16,
}

impl Dtype {
    /// nanoGPT's spelling (`float32`, `bfloat16`, `float16`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Dtype::Float32 => "float32",
            Dtype::Bfloat16 => "bfloat16",
            Dtype::Float16 => "float16",
        }
    }

    /// Parses nanoGPT's spelling, plus the short forms `fp32`, `bf16`, `fp16`.
    pub fn parse(s: &str) -> Option<Dtype> {
        match s.trim().to_ascii_lowercase().as_str() {
            "float32" | "fp32" | "float" => Some(Dtype::Float32),
            "bfloat16" | "bf16" => Some(Dtype::Bfloat16),
            "float16" | "fp16" | "half" => Some(Dtype::Float16),
            _ => None,
        }
    }
}

/// The optimizer whose state sits in GPU memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// `torch.optim.AdamW` (nanoGPT's choice): two moments in the parameter dtype.
    Adamw,
    /// bitsandbytes `AdamW8bit`: two 8-bit moments with block-wise fp32 scales.
    Adamw8bit,
    /// bitsandbytes `PagedAdamW8bit` (Trainer's `paged_adamw_8bit`): `AdamW8bit`'s state, the
    /// moments of tensors of at least 100 000 elements in CUDA unified memory, outside
    /// PyTorch's allocator.
    #[serde(rename = "paged_adamw8bit")]
    PagedAdamw8bit,
    /// `torch.optim.SGD` with momentum: one buffer in the parameter dtype.
    Sgd,
}

impl Optimizer {
    /// The canonical spelling (`adamw`, `adamw8bit`, `paged_adamw8bit`, `sgd`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Optimizer::Adamw => "adamw",
            Optimizer::Adamw8bit => "adamw8bit",
            Optimizer::PagedAdamw8bit => "paged_adamw8bit",
            Optimizer::Sgd => "sgd",
        }
    }

    /// Parses the canonical spelling and common variants (`adam`, `adamw_8bit`, Trainer's
    /// `adamw_torch_fused`, `adamw_bnb_8bit` and `paged_adamw_8bit`, `sgd_momentum`).
    pub fn parse(s: &str) -> Option<Optimizer> {
        let norm: String = s
            .trim()
            .to_ascii_lowercase()
            .chars()
            .filter(|c| !matches!(c, '_' | '-' | ' '))
            .collect();
        match norm.as_str() {
            "adamw" | "adam" | "adamwtorchfused" => Some(Optimizer::Adamw),
            "adamw8bit" | "adam8bit" | "bnbadamw8bit" | "adamwbnb8bit" => {
                Some(Optimizer::Adamw8bit)
            }
            "pagedadamw8bit" | "pagedadam8bit" => Some(Optimizer::PagedAdamw8bit),
            "sgd" | "sgdmomentum" => Some(Optimizer::Sgd),
            _ => None,
        }
    }
}

/// bitsandbytes' 4-bit data type (`bnb_4bit_quant_type`); both store two values per byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QuantType {
    /// NormalFloat4, QLoRA's.
    Nf4,
    /// 4-bit floating point, BitsAndBytesConfig's default.
    Fp4,
}

impl QuantType {
    /// `nf4` or `fp4`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            QuantType::Nf4 => "nf4",
            QuantType::Fp4 => "fp4",
        }
    }

    /// `nf4` or `fp4`, in any case.
    pub fn parse(s: &str) -> Option<QuantType> {
        match s.trim().to_ascii_lowercase().as_str() {
            "nf4" => Some(QuantType::Nf4),
            "fp4" => Some(QuantType::Fp4),
            _ => None,
        }
    }
}

/// What a scenario describes: training with nanoGPT's `train.py` (the default) or generating
/// text with its `sample.py`. One definition, used by the scenario key `phase` and by the key
/// table's column of the phases each key applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Phase {
    /// A training run of `train.py` (its evaluations included).
    #[serde(rename = "train")]
    Train,
    /// Sampling with nanoGPT's `sample.py` (estimated by [`super::estimate_sampling`]).
    #[serde(rename = "generate")]
    Generate,
}

impl Phase {
    /// The key's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Train => "train",
            Phase::Generate => "generate",
        }
    }

    /// Parses the key's spelling.
    pub fn parse(s: &str) -> Option<Phase> {
        [Phase::Train, Phase::Generate]
            .into_iter()
            .find(|p| p.as_str() == s.trim())
    }
}

/// train.py's `init_from`: where the model's weights come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum InitFrom {
    /// A new model (nanoGPT's default).
    #[serde(rename = "scratch")]
    Scratch,
    /// `<out_dir>/ckpt.pt`: loaded onto the GPU with its optimizer state (see `memory::setup`).
    #[serde(rename = "resume")]
    Resume,
    /// OpenAI's GPT-2 124M weights (`GPT.from_pretrained('gpt2')`).
    #[serde(rename = "gpt2")]
    Gpt2,
    /// GPT-2 medium (350M).
    #[serde(rename = "gpt2-medium")]
    Gpt2Medium,
    /// GPT-2 large (774M).
    #[serde(rename = "gpt2-large")]
    Gpt2Large,
    /// GPT-2 XL (1.5B).
    #[serde(rename = "gpt2-xl")]
    Gpt2Xl,
}

impl InitFrom {
    /// The spelling train.py uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            InitFrom::Scratch => "scratch",
            InitFrom::Resume => "resume",
            InitFrom::Gpt2 => "gpt2",
            InitFrom::Gpt2Medium => "gpt2-medium",
            InitFrom::Gpt2Large => "gpt2-large",
            InitFrom::Gpt2Xl => "gpt2-xl",
        }
    }

    /// Parses train.py's spelling.
    pub fn parse(s: &str) -> Option<InitFrom> {
        [
            InitFrom::Scratch,
            InitFrom::Resume,
            InitFrom::Gpt2,
            InitFrom::Gpt2Medium,
            InitFrom::Gpt2Large,
            InitFrom::Gpt2Xl,
        ]
        .into_iter()
        .find(|i| i.as_str() == s.trim())
    }

    /// A GPT-2 checkpoint's `(n_layer, n_head, n_embd)`, as nanoGPT's `GPT.from_pretrained` sets
    /// them (with `vocab_size = 50257`, `block_size = 1024`, `bias = True`).
    pub(crate) fn pretrained_shape(self) -> Option<(u64, u64, u64)> {
        match self {
            InitFrom::Gpt2 => Some((12, 12, 768)),
            InitFrom::Gpt2Medium => Some((24, 16, 1024)),
            InitFrom::Gpt2Large => Some((36, 20, 1280)),
            InitFrom::Gpt2Xl => Some((48, 25, 1600)),
            InitFrom::Scratch | InitFrom::Resume => None,
        }
    }
}

/// How a DDP job splits its training state among the processes (a code change in nanoGPT, which
/// uses plain DDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Sharding {
    /// Plain DDP: every process holds everything.
    #[serde(rename = "none")]
    None,
    /// `torch.distributed.optim.ZeroRedundancyOptimizer` around AdamW (ZeRO stage 1): each
    /// process keeps the optimizer state of its share of the parameters.
    #[serde(rename = "zero1")]
    Optimizer,
    /// FSDP with `FULL_SHARD` (ZeRO stage 3), one unit per transformer block plus the root:
    /// parameters, gradients and optimizer state are all split; a unit's parameters are gathered
    /// while it computes.
    #[serde(rename = "fsdp")]
    Full,
}

impl Sharding {
    /// The scenario's spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Sharding::None => "none",
            Sharding::Optimizer => "zero1",
            Sharding::Full => "fsdp",
        }
    }

    /// Parses `none`, `zero1` or `fsdp`.
    pub(crate) fn parse(s: &str) -> Option<Sharding> {
        [Sharding::None, Sharding::Optimizer, Sharding::Full]
            .into_iter()
            .find(|x| x.as_str() == s.trim())
    }
}

/// GPT-2's vocabulary (a pretrained model keeps it; nanoGPT pads only new models to 50304).
pub const GPT2_VOCAB: u64 = 50257;
/// GPT-2's positions: a pretrained model's `block_size` can be cropped below, never raised above.
pub const GPT2_BLOCK: u64 = 1024;

/// A nanoGPT training configuration, as far as GPU memory is concerned.
///
/// Field names are nanoGPT's `train.py` names; `flash`, `grad_checkpoint`, `optimizer`,
/// `eval_batch_size`, `pure_bf16`, `gpu` and the fine-tuning patches (`freeze_embeddings`,
/// `lora_rank`, `lora_targets`) are this tool's additions. Fields are public for
/// convenience: call [`Scenario::validate`] (or [`super::estimate`], which does) after editing them.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// What the scenario describes: training (the default) or sampling with `sample.py`.
    pub phase: Phase,
    /// Transformer blocks.
    pub n_layer: u64,
    /// Attention heads per block.
    pub n_head: u64,
    /// Embedding width; a multiple of `n_head`.
    pub n_embd: u64,
    /// Vocabulary size (nanoGPT pads GPT-2's 50257 to 50304).
    pub vocab_size: u64,
    /// Sequence length of a training example.
    pub block_size: u64,
    /// Biases in Linear and LayerNorm layers.
    pub bias: bool,
    /// Dropout probability, in [0, 1).
    pub dropout: f64,
    /// Micro-batch size (sequences per forward pass).
    pub batch_size: u64,
    /// Micro-batches per optimizer step.
    pub gradient_accumulation_steps: u64,
    /// Autocast dtype.
    pub dtype: Dtype,
    /// `torch.compile` the model.
    pub compile: bool,
    /// Flash (scaled-dot-product) attention instead of the manual masked softmax.
    pub flash: bool,
    /// Per-block activation checkpointing (a common patch; not in nanoGPT).
    pub grad_checkpoint: bool,
    /// The optimizer.
    pub optimizer: Optimizer,
    /// Micro-batch of `estimate_loss`; `None` means `batch_size` (nanoGPT has no such key).
    pub eval_batch_size: Option<u64>,
    /// Keep parameters, gradients and optimizer state in bf16 (`model.to(torch.bfloat16)`)
    /// instead of nanoGPT's fp32 parameters with autocast. Needs `dtype = bfloat16`.
    pub pure_bf16: bool,
    /// What a Hugging Face model's weights are loaded in (`from_pretrained`'s `dtype`).
    pub weights_dtype: super::WeightsDtype,
    /// GPU id in the catalog, if the question is "does it fit on this card".
    pub gpu: Option<String>,
    /// Bytes of the card other programs hold (a desktop, another job): counted in the verdict.
    pub other_processes: u64,
    /// train.py's `eval_only`: one `estimate_loss()` at iteration 0, then exit (no gradients,
    /// no optimizer state).
    pub eval_only: bool,
    /// train.py's `init_from`. A GPT-2 checkpoint replaces `n_layer`, `n_head`, `n_embd`,
    /// `vocab_size` and `bias` with its own ([`Scenario::as_run`]).
    pub init_from: InitFrom,
    /// Processes of a `torchrun` DDP job (`--nproc_per_node` × `--nnodes`); the estimate is per
    /// GPU. train.py divides `gradient_accumulation_steps` by it.
    pub ddp_world_size: u64,
    /// How the DDP processes split the training state (a patch to train.py; see [`Sharding`]).
    pub sharding: Sharding,
    /// DDP's `gradient_as_bucket_view=True` (a one-argument patch to train.py's `DDP(...)`):
    /// the gradients are views into the reducer's buckets, so the buckets are no second copy.
    pub gradient_as_bucket_view: bool,
    /// `wte` (which is also `lm_head.weight`: nanoGPT ties them) and `wpe` frozen: no gradient,
    /// no optimizer state (a one-line patch; see `finetune.rs`).
    pub freeze_embeddings: bool,
    /// LoRA rank; 0 = no adapters. Nonzero freezes every base parameter and adds trainable
    /// adapters to `lora_targets` in every block (a patch; see `finetune.rs`).
    pub lora_rank: u64,
    /// The Linear layers LoRA adapts (used when `lora_rank > 0`).
    pub lora_targets: LoraTargets,
    /// PEFT's `lora_dropout`: > 0 keeps a dropout mask per adapter input (nanoGPT's LoRA has none).
    pub lora_dropout: f64,
    /// bitsandbytes 4-bit weights (`BitsAndBytesConfig(load_in_4bit=True)`).
    pub load_in_4bit: bool,
    /// The 4-bit data type (`bnb_4bit_quant_type`).
    pub bnb_4bit_quant_type: QuantType,
    /// Double quantization of the 4-bit absmax (`bnb_4bit_use_double_quant`).
    pub bnb_4bit_use_double_quant: bool,
    /// What a 4-bit layer computes in (`bnb_4bit_compute_dtype`).
    pub bnb_4bit_compute_dtype: Dtype,
    /// bitsandbytes LLM.int8() weights (`BitsAndBytesConfig(load_in_8bit=True)`).
    pub load_in_8bit: bool,
    /// Liger Kernel's fused linear cross-entropy patched in (`fused_ce.rs`): no full logits.
    pub fused_linear_cross_entropy: bool,
    /// A Hugging Face model (a catalog id or a `config.json` path) instead of nanoGPT's, resolved
    /// by the scenario layer for [`super::estimate_model`]; [`super::estimate`] refuses it.
    pub model: Option<String>,
    /// The trainer of a Hugging Face model's step: transformers' `Trainer` or TRL's `SFTTrainer`.
    pub trainer: super::HfTrainer,
    /// A Hugging Face model's `attn_implementation`; `None` follows `flash` ([`Scenario::attention`]).
    pub attn_implementation: Option<super::AttnImplementation>,
    /// How a Hugging Face model's training batch is laid out.
    pub batch_layout: super::BatchLayout,
}

impl Default for Scenario {
    /// nanoGPT's `train.py` defaults (GPT-2 124M on OpenWebText, one GPU).
    fn default() -> Self {
        Scenario {
            phase: Phase::Train,
            n_layer: 12,
            n_head: 12,
            n_embd: 768,
            vocab_size: 50304,
            block_size: 1024,
            bias: false,
            dropout: 0.0,
            batch_size: 12,
            gradient_accumulation_steps: 5 * 8,
            dtype: Dtype::Bfloat16,
            compile: true,
            flash: true,
            grad_checkpoint: false,
            optimizer: Optimizer::Adamw,
            eval_batch_size: None,
            pure_bf16: false,
            weights_dtype: super::WeightsDtype::Auto,
            gpu: None,
            other_processes: 0,
            eval_only: false,
            init_from: InitFrom::Scratch,
            ddp_world_size: 1,
            sharding: Sharding::None,
            gradient_as_bucket_view: false,
            freeze_embeddings: false,
            lora_rank: 0,
            lora_targets: LoraTargets::default(),
            lora_dropout: 0.0,
            // BitsAndBytesConfig's defaults (transformers 5.24).
            load_in_4bit: false,
            bnb_4bit_quant_type: QuantType::Fp4,
            bnb_4bit_use_double_quant: false,
            bnb_4bit_compute_dtype: Dtype::Float32,
            load_in_8bit: false,
            fused_linear_cross_entropy: false,
            model: None,
            trainer: Default::default(),
            attn_implementation: None,
            batch_layout: Default::default(),
        }
    }
}

impl Scenario {
    /// The run train.py does: a GPT-2 checkpoint's shape in place of the configured one (nanoGPT
    /// takes only `dropout` from the config then). Accumulation stays the configured (global)
    /// one; [`Scenario::per_process`] divides it.
    pub(crate) fn as_run(&self) -> Scenario {
        let mut run = self.clone();
        if let Some((layers, heads, width)) = self.init_from.pretrained_shape() {
            run.n_layer = layers;
            run.n_head = heads;
            run.n_embd = width;
            run.vocab_size = GPT2_VOCAB;
            run.bias = true;
        }
        run
    }

    /// One DDP process's view: train.py's `gradient_accumulation_steps //= ddp_world_size`.
    pub(crate) fn per_process(&self) -> Scenario {
        let mut one = self.clone();
        one.gradient_accumulation_steps =
            (self.gradient_accumulation_steps / self.ddp_world_size.max(1)).max(1);
        one
    }

    /// The evaluation micro-batch: `eval_batch_size`, or `batch_size` when unset.
    pub fn eval_batch(&self) -> u64 {
        self.eval_batch_size.unwrap_or(self.batch_size)
    }

    /// Checks every key and the relations between keys; `gpu` must be in `catalog`. The first
    /// problem found is the error.
    pub(crate) fn validate(&self, catalog: &GpuCatalog) -> Result<(), ScenarioError> {
        self.check_counts()?;
        self.check_ddp()?;
        self.check_model()?;
        self.check_gpu(catalog)
    }

    /// Sizes, batches and the process count are at least 1: every key of the key table that
    /// holds a count ([`Kind::Count`], and [`Kind::CountOrNone`] when set), in the table's order.
    fn check_counts(&self) -> Result<(), ScenarioError> {
        let counts = KEYS
            .iter()
            .filter(|k| matches!(k.kind, Kind::Count | Kind::CountOrNone));
        for key in counts {
            if matches!(key.value(self), KeyValue::Whole(0)) {
                return Err(ScenarioError::key(key.name, "must be at least 1"));
            }
        }
        Ok(())
    }

    /// Sharding needs processes to share with, and the accumulation divides among them.
    fn check_ddp(&self) -> Result<(), ScenarioError> {
        if self.sharding != Sharding::None && self.ddp_world_size < 2 {
            return Err(ScenarioError::key(
                "sharding",
                format!(
                    "sharding = '{}' splits the training state among DDP processes: set ddp_world_size (or --nproc-per-node) to 2 or more",
                    self.sharding.as_str()
                ),
            ));
        }
        if self.gradient_accumulation_steps % self.ddp_world_size != 0 {
            return Err(ScenarioError::key(
                "gradient_accumulation_steps",
                format!(
                    "gradient_accumulation_steps ({}) must be a multiple of the {} DDP processes: train.py asserts it before dividing",
                    self.gradient_accumulation_steps, self.ddp_world_size
                ),
            ));
        }
        Ok(())
    }

    /// The model nanoGPT can build: a GPT-2 checkpoint's context, whole heads, a dropout
    /// probability, a LoRA rank within the width.
    fn check_model(&self) -> Result<(), ScenarioError> {
        if self.init_from.pretrained_shape().is_some() && self.block_size > GPT2_BLOCK {
            return Err(ScenarioError::key(
                "block_size",
                format!(
                    "block_size = {} with init_from = '{}': GPT-2 checkpoints have {GPT2_BLOCK} positions, and nanoGPT fails (`assert t <= self.config.block_size`) on longer sequences",
                    self.block_size,
                    self.init_from.as_str()
                ),
            ));
        }
        if self.n_embd % self.n_head != 0 {
            return Err(ScenarioError::key(
                "n_embd",
                format!(
                    "n_embd ({}) must be divisible by n_head ({}): each head gets n_embd / n_head channels",
                    self.n_embd, self.n_head
                ),
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(ScenarioError::key(
                "dropout",
                format!("must be at least 0 and below 1, got {}", self.dropout),
            ));
        }
        let width = self.as_run().n_embd;
        if self.lora_rank > width {
            return Err(ScenarioError::key(
                "lora_rank",
                format!(
                    "lora_rank = {} is above the model's width ({width}): a LoRA update B·A has rank at most min(in, out), and an adapter wider than that is no low-rank update",
                    self.lora_rank
                ),
            ));
        }
        Ok(())
    }

    /// nanoGPT's LoRA patch (`finetune.rs`): adapters on its own four block Linears, without
    /// dropout.
    pub(crate) fn check_nanogpt_lora(&self) -> Result<(), ScenarioError> {
        let nanogpt = super::arch::Architecture::nanogpt(&self.as_run());
        self.lora_targets
            .resolve(&nanogpt)
            .map_err(|m| ScenarioError::key("lora_targets", m))?;
        if self.lora_dropout > 0.0 {
            return Err(ScenarioError::key(
                "lora_dropout",
                format!(
                    "lora_dropout = {}: nanoGPT's LoRA patch has no dropout (PEFT's lora_dropout is modelled for Hugging Face models, given with `model`); set it to 0",
                    self.lora_dropout
                ),
            ));
        }
        Ok(())
    }

    /// Pure bf16 training only with `dtype = bfloat16`.
    /// (nanoGPT's patch; a Hugging Face model's `pure_bf16` is its weights loaded in bfloat16,
    /// trained under bf16 autocast with `dtype = bfloat16` or without with `dtype = float32`.)
    pub(crate) fn check_precision(&self) -> Result<(), ScenarioError> {
        self.nanogpt_has_no_weights_dtype()?;
        self.nanogpt_has_no_attn_implementation()?;
        self.layout_not_replayed("nanoGPT's train.py, whose get_batch takes full rows")?;
        if self.pure_bf16 && self.dtype != Dtype::Bfloat16 {
            return Err(ScenarioError::key(
                "pure_bf16",
                format!(
                    "pure bf16 training needs dtype = bfloat16 (dtype is {})",
                    self.dtype.as_str()
                ),
            ));
        }
        Ok(())
    }

    /// The GPU, if one is named, is in `catalog`.
    fn check_gpu(&self, catalog: &GpuCatalog) -> Result<(), ScenarioError> {
        if let Some(id) = &self.gpu {
            if catalog.get(id).is_none() {
                return Err(ScenarioError::key("gpu", catalog.unknown_card(id)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
