//! A Hugging Face model's changes as the `from_pretrained`, `BitsAndBytesConfig`,
//! `LoraConfig` and `TrainingArguments` arguments that make them.

use super::config_line;
use crate::estimate::Change;

/// A change of a Hugging Face model's run as the argument that makes it: `from_pretrained`'s
/// (transformers 5's `dtype=torch.bfloat16`, `attn_implementation="sdpa"`) or `TrainingArguments`'
/// (`per_device_train_batch_size=2`, `gradient_checkpointing=True`, `bf16=True`); the sequence
/// length as TRL's `SFTConfig(max_length=…)`. Other keys as config lines.
pub(crate) fn model_setting(c: &Change) -> String {
    let v = c.value.as_str();
    match c.key.as_str() {
        "pure_bf16" if v == "True" => "dtype=torch.bfloat16".to_owned(),
        "pure_bf16" => "dtype=torch.float32".to_owned(),
        "weights_dtype" if v == "auto" => "dtype=\"auto\"".to_owned(),
        "weights_dtype" => format!("dtype=torch.{v}"),
        "flash" if v == "True" => "attn_implementation=\"sdpa\"".to_owned(),
        "flash" => "attn_implementation=\"eager\"".to_owned(),
        "batch_size" => format!("per_device_train_batch_size={v}"),
        "gradient_accumulation_steps" => format!("gradient_accumulation_steps={v}"),
        "grad_checkpoint" => format!("gradient_checkpointing={v}"),
        "dtype" if v == "bfloat16" => "bf16=True".to_owned(),
        "dtype" if v == "float16" => "fp16=True".to_owned(),
        "dtype" => "bf16=False, fp16=False".to_owned(),
        "block_size" => format!("max_length={v}"),
        "optimizer" => format!(
            "optim=\"{}\"",
            match v {
                "adamw8bit" => "adamw_bnb_8bit",
                "paged_adamw8bit" => "paged_adamw_8bit",
                _ => "adamw_torch_fused",
            }
        ),
        "load_in_4bit" | "bnb_4bit_use_double_quant" | "load_in_8bit" => {
            format!("{}={v}", c.key)
        }
        "bnb_4bit_quant_type" => format!("bnb_4bit_quant_type=\"{v}\""),
        "bnb_4bit_compute_dtype" => format!("bnb_4bit_compute_dtype=torch.{v}"),
        "lora_rank" => format!("LoraConfig(r={v})"),
        "lora_targets" if v == "all-linear" => "target_modules=\"all-linear\"".to_owned(),
        "lora_targets" => {
            let names: Vec<String> = v.split(',').map(|n| format!("\"{n}\"")).collect();
            format!("target_modules=[{}]", names.join(", "))
        }
        "lora_dropout" => format!("lora_dropout={v}"),
        // Liger Kernel's patch, its loss alone (what vramdoc models), after from_pretrained.
        "fused_linear_cross_entropy" if v == "True" => {
            "_apply_liger_kernel_to_instance(model=model, \
             fused_linear_cross_entropy=True, rope=False, rms_norm=False, swiglu=False)"
                .to_owned()
        }
        _ => config_line(c),
    }
}

/// Whether a model's change is an argument of `from_pretrained` (not of `TrainingArguments`).
pub(crate) fn loads_model(c: &Change) -> bool {
    matches!(c.key.as_str(), "pure_bf16" | "weights_dtype" | "flash")
        || c.key.starts_with("bnb_4bit_")
        || c.key.starts_with("load_in_")
}
